/*
 * tf_vectors.c - building, running and judging TensorFlow's conformance vectors (see
 * tf_vectors.h). Operand values come from each case's generators ("literal" lists,
 * "sequential_from_1", "half_sequential_from_1") in TF's logical NHWC / HWIO order; NCHW
 * transposes the activations and permutes strides, dilations, explicit paddings and the
 * input_sizes argument, as TF's own NCHW runs of the same tests do.
 */
#include "tf_vectors.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { TV_MAX_CASES = 256 };

static cJSON *g_doc; /* the parsed vector file (read before Check forks) */
static const cJSON *g_cases[TV_MAX_CASES];
static int g_n_cases;

/* ---- loading --------------------------------------------------------------------------- */

/* The whole file at `path`, NUL-terminated (malloc'd), or NULL. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1))) {
        if (fread(s, 1, (size_t)n, f) == (size_t)n) {
            s[n] = 0;
        } else {
            free(s);
            s = NULL;
        }
    }
    fclose(f);
    return s;
}

void tv_load(void) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/conformance/tf_vectors.json", bf_test_shared_dir());
    char *text = slurp(path);
    if (!text) {
        snprintf(path, sizeof(path), "%s/tests/data/tf_vectors.json", bf_test_source_dir());
        text = slurp(path);
    }
    if (!text) return;
    g_doc = cJSON_Parse(text);
    free(text);
    const char *lists[2] = {"cases", "derived_cases"};
    for (int l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(g_doc, lists[l])) {
            if (g_n_cases < TV_MAX_CASES) g_cases[g_n_cases++] = c;
        }
    }
}

int tv_count(void) { return g_n_cases; }

bool tv_all_loaded(char *msg, size_t msg_size) {
    int literal = cJSON_GetArraySize(cJSON_GetObjectItem(g_doc, "cases"));
    int derived = cJSON_GetArraySize(cJSON_GetObjectItem(g_doc, "derived_cases"));
    if (g_doc && literal == 81 && derived == 71 && g_n_cases == 152) return true;
    snprintf(msg, msg_size, "tf_vectors.json %s: %d literal (81 expected), %d derived (71 "
             "expected), %d loaded (152 expected)", g_doc ? "loaded" : "not found or not JSON",
             literal, derived, g_n_cases);
    return false;
}

const char *tv_id(int i) { return cJSON_GetObjectItem(g_cases[i], "id")->valuestring; }

/* True for the three depthwise blocks, which have no use_cudnn_on_gpu attribute. */
static bool depthwise(const bf_block_desc *d) {
    return d == &bf_block_depthwise_conv2d_native ||
           d == &bf_block_depthwise_conv2d_native_backprop_filter ||
           d == &bf_block_depthwise_conv2d_native_backprop_input;
}

bool tv_has_conv2d(int i) {
    const char *op = cJSON_GetObjectItem(g_cases[i], "op")->valuestring;
    const bf_block_desc *d = ct_desc(op);
    return d ? !depthwise(d) : !strcmp(op, "SeparableConv2D_composite");
}

bool tv_nchw_tested(int i) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(g_cases[i], "also_tested_formats")) {
        if (cJSON_IsString(e) && strstr(e->valuestring, "NCHW")) return true;
    }
    return false;
}

const char *tv_target_str(const tv_target *t, char *buf, size_t size) {
    const char *path = t->path == TV_GPU_CUDNN ? ", GPU cuDNN"
                       : t->path == TV_GPU_OWN ? ", GPU own kernels"
                                               : "";
    snprintf(buf, size, "%s, %s%s", bf_dtype_name(t->dtype), t->nchw ? "NCHW" : "NHWC", path);
    return buf;
}

/* ---- building a case ------------------------------------------------------------------- */

/* Read a JSON int array into v (at most 8); returns the count, -1 when absent. */
static int ints(const cJSON *c, const char *key, int64_t *v) {
    const cJSON *a = cJSON_GetObjectItem(c, key);
    if (!cJSON_IsArray(a)) return -1;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (n < 8) v[n] = (int64_t)e->valuedouble;
        n++;
    }
    return n;
}

static int64_t numel4(const int64_t *d) { return d[0] * d[1] * d[2] * d[3]; }

/* A malloc'd array of n doubles (at least one, so that n == 0 is not NULL), or NULL. */
static double *doubles(int64_t n) { return malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); }

/* The operand values per its generator, in logical (NHWC / HWIO) order; NULL when out of
 * memory or when a literal list is shorter than the shape. */
static double *gen(const cJSON *c, const char *operand, const int64_t *dims) {
    int64_t n = numel4(dims);
    double *v = doubles(n);
    if (!v) return NULL;
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "generators"), operand);
    const char *rule = g ? g->valuestring : "sequential_from_1";
    if (!strcmp(rule, "literal")) {
        char key[64];
        snprintf(key, sizeof(key), "%s_values", operand);
        const cJSON *a = cJSON_GetObjectItem(c, key);
        if (cJSON_GetArraySize(a) < n) {
            free(v);
            return NULL;
        }
        int64_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, a) {
            if (i < n) v[i++] = e->valuedouble;
        }
    } else {
        double scale = !strcmp(rule, "half_sequential_from_1") ? 0.5 : 1.0;
        for (int64_t i = 0; i < n; i++) v[i] = (double)(i + 1) * scale;
    }
    return v;
}

/* NHWC values of shape d -> NCHW (to_nchw=1) or back (to_nchw=0, d is then the NHWC shape
 * too). NULL when out of memory. */
static double *transpose(const double *v, const int64_t *d, int to_nchw) {
    int64_t N = d[0], H = d[1], W = d[2], C = d[3];
    double *o = doubles(numel4(d));
    if (!o) return NULL;
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++)
                for (int64_t c = 0; c < C; c++) {
                    int64_t a = ((n * H + h) * W + w) * C + c, b = ((n * C + c) * H + h) * W + w;
                    if (to_nchw)
                        o[b] = v[a];
                    else
                        o[a] = v[b];
                }
    return o;
}

static void perm_nchw(const int64_t *nhwc, int64_t *nchw) {
    nchw[0] = nhwc[0], nchw[1] = nhwc[3], nchw[2] = nhwc[1], nchw[3] = nhwc[2];
}

/* The attribute member that picks block d's GPU path on path p, with its leading comma; "" on
 * the CPU and for the depthwise blocks. */
static const char *cudnn_member(const bf_block_desc *d, tv_path p) {
    if (p == TV_CPU || depthwise(d)) return "";
    return p == TV_GPU_CUDNN ? ",\"use_cudnn_on_gpu\":true" : ",\"use_cudnn_on_gpu\":false";
}

/* Attribute JSON for case c in the given format; `extra` (cudnn_member) goes in as is. */
static void attrs_json(const cJSON *c, int nchw, const char *extra, char *buf, size_t size) {
    int64_t s[8], d[8] = {1, 1, 1, 1}, p[8];
    ints(c, "strides", s);
    if (ints(c, "dilations", d) < 0) d[0] = d[1] = d[2] = d[3] = 1;
    int np = ints(c, "explicit_paddings", p);
    const char *pad = cJSON_GetObjectItem(c, "padding")->valuestring;
    int64_t S[4], D[4], P[8];
    if (nchw) {
        perm_nchw(s, S), perm_nchw(d, D);
        if (np == 8) {
            int64_t pairs_nhwc[4][2] = {{p[0], p[1]}, {p[2], p[3]}, {p[4], p[5]}, {p[6], p[7]}};
            int order[4] = {0, 3, 1, 2};
            for (int i = 0; i < 4; i++) P[2 * i] = pairs_nhwc[order[i]][0],
                                        P[2 * i + 1] = pairs_nhwc[order[i]][1];
        }
    } else {
        memcpy(S, s, sizeof(S)), memcpy(D, d, sizeof(D));
        if (np == 8) memcpy(P, p, sizeof(P));
    }
    int n = snprintf(buf, size,
                     "{\"strides\":[%ld,%ld,%ld,%ld],\"padding\":\"%s\",\"dilations\":[%ld,%ld,"
                     "%ld,%ld],\"data_format\":\"%s\"",
                     (long)S[0], (long)S[1], (long)S[2], (long)S[3], pad, (long)D[0],
                     (long)D[1], (long)D[2], (long)D[3], nchw ? "NCHW" : "NHWC");
    if (np == 8)
        n += snprintf(buf + n, size - (size_t)n,
                      ",\"explicit_paddings\":[%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld]", (long)P[0],
                      (long)P[1], (long)P[2], (long)P[3], (long)P[4], (long)P[5], (long)P[6],
                      (long)P[7]);
    snprintf(buf + n, size - (size_t)n, "%s}", extra);
}

/* An activation tensor (NHWC values v of NHWC shape d) in the requested format; NULL when v is
 * NULL or out of memory. */
static bf_tensor *act(bf_dtype dt, const int64_t *d, const double *v, int nchw) {
    if (!v) return NULL;
    if (!nchw) return ct_tensor(dt, 4, d, v);
    int64_t dn[4];
    perm_nchw(d, dn);
    double *t = transpose(v, d, 1);
    bf_tensor *r = t ? ct_tensor(dt, 4, dn, t) : NULL;
    free(t);
    return r;
}

/* A filter tensor (HWIO in every format); NULL when v is NULL or out of memory. */
static bf_tensor *filt(bf_dtype dt, const int64_t *d, const double *v) {
    return v ? ct_tensor(dt, 4, d, v) : NULL;
}

/* ---- running and judging ------------------------------------------------------------- */

/*
 * Run block d on t's path (see ct_run / ct_run_gpu). On the GPU the kernel's note is appended
 * to note, after "label: " when label is not NULL and after "; " when note is not empty.
 */
static bf_status run_block(const tv_target *t, const char *label, const bf_block_desc *d,
                           const char *attrs, bf_tensor *const *in, bf_tensor **out, char *note,
                           size_t note_size, bf_error *err) {
    if (t->path == TV_CPU) return ct_run(d, attrs, in, 2, out, err);
    char kn[256];
    bf_status st = ct_run_gpu(t->gpu, d, attrs, in, out, kn, sizeof(kn), err);
    size_t len = note_size ? strlen(note) : 0;
    if (note_size > len && (kn[0] || label))
        snprintf(note + len, note_size - len, "%s%s%s%s", len ? "; " : "", label ? label : "",
                 label ? ": " : "", kn[0] ? kn : "(no note)");
    return st;
}

/* Print "id (target): what" into msg and return false. */
static bool failed(char *msg, size_t size, const char *id, const tv_target *t, const char *fmt,
                   ...) BF_PRINTF(5, 6);
static bool failed(char *msg, size_t size, const char *id, const tv_target *t, const char *fmt,
                   ...) {
    char where[64];
    int n = snprintf(msg, size, "%s (%s): ", id, tv_target_str(t, where, sizeof(where)));
    if (n < 0 || (size_t)n >= size) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, size - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/*
 * Run vector c in t: build its inputs, run its op (two blocks for the separable composite).
 * On BF_OK *out is the output tensor (caller frees); otherwise err says why. *out_is_act is set
 * when the output is an activation (in t's layout) rather than a filter gradient (HWIO).
 */
static bf_status run_vector(const cJSON *c, const tv_target *t, bf_tensor **out,
                            int *out_is_act, char *note, size_t note_size, bf_error *err) {
    const char *op = cJSON_GetObjectItem(c, "op")->valuestring;
    const bf_dtype dt = t->dtype;
    const int nchw = t->nchw;
    int64_t xs[8], fs[8], ys[8], args[8], pws[8];
    ints(c, "input_shape", xs);
    ints(c, "filter_shape", fs);
    int has_dy = ints(c, "out_backprop_shape", ys) == 4;
    bf_tensor *in[3] = {NULL, NULL, NULL};
    double *v[3] = {NULL, NULL, NULL};
    bf_status st = BF_OK;
    *out = NULL;
    *out_is_act = 1;

    const bf_block_desc *d = ct_desc(op);
    bool separable = !strcmp(op, "SeparableConv2D_composite");
    if (!d && !separable) return bf_err(err, BF_EINVAL, "unknown_op", "unknown op %s", op);
    char attrs[512];
    attrs_json(c, nchw, cudnn_member(separable ? &bf_block_depthwise_conv2d_native : d, t->path),
               attrs, sizeof(attrs));
    if (!has_dy && d && d != &bf_block_conv2d && d != &bf_block_depthwise_conv2d_native)
        return bf_err(err, BF_EINVAL, "no_out_backprop", "no out_backprop_shape");
    if (separable || d == &bf_block_conv2d || d == &bf_block_depthwise_conv2d_native) {
        v[0] = gen(c, "input", xs), v[1] = gen(c, "filter", fs);
        in[0] = act(dt, xs, v[0], nchw);
        in[1] = filt(dt, fs, v[1]);
    } else if (d == &bf_block_conv2d_backprop_filter ||
               d == &bf_block_depthwise_conv2d_native_backprop_filter) {
        v[0] = gen(c, "input", xs), v[2] = gen(c, "out_backprop", ys);
        int n = ints(c, "filter_sizes_arg", args);
        if (n < 0) memcpy(args, fs, sizeof(int64_t) * 4), n = 4;
        in[0] = act(dt, xs, v[0], nchw);
        in[1] = ct_i32(n, args);
        in[2] = act(dt, ys, v[2], nchw);
        *out_is_act = 0;
    } else {
        v[1] = gen(c, "filter", fs), v[2] = gen(c, "out_backprop", ys);
        int n = ints(c, "input_sizes_arg", args);
        if (n < 0) memcpy(args, xs, sizeof(int64_t) * 4), n = 4;
        int64_t a2[4];
        if (nchw && n == 4) perm_nchw(args, a2), memcpy(args, a2, sizeof(a2));
        in[0] = ct_i32(n, args);
        in[1] = filt(dt, fs, v[1]);
        in[2] = act(dt, ys, v[2], nchw);
    }
    int n_in = separable ? 2 : d->n_inputs;
    for (int i = 0; i < n_in; i++)
        if (!in[i]) {
            st = bf_err(err, BF_ENOMEM, "out_of_memory", "cannot build input %d (out of memory, or "
                        "fewer literal values than the shape needs)", i);
            goto done;
        }

    if (separable) {
        /* depthwise, then the pointwise filter as a 1x1 Conv2D with VALID */
        ints(c, "pointwise_filter_shape", pws);
        double *pv = gen(c, "pointwise_filter", pws);
        bf_tensor *pw = filt(dt, pws, pv), *mid = NULL;
        free(pv);
        if (!pw) {
            st = bf_err(err, BF_ENOMEM, "out_of_memory", "cannot build the pointwise filter");
            goto done;
        }
        st = run_block(t, "depthwise", &bf_block_depthwise_conv2d_native, attrs, in, &mid,
                       note, note_size, err);
        if (st == BF_OK) {
            bf_tensor *in2[2] = {mid, pw};
            char a2[160];
            snprintf(a2, sizeof(a2), "{\"strides\":[1,1,1,1],\"padding\":\"VALID\","
                     "\"data_format\":\"%s\"%s}", nchw ? "NCHW" : "NHWC",
                     cudnn_member(&bf_block_conv2d, t->path));
            st = run_block(t, "pointwise", &bf_block_conv2d, a2, in2, out, note, note_size, err);
        }
        bf_tensor_free(mid);
        bf_tensor_free(pw);
    } else {
        st = run_block(t, NULL, d, attrs, in, out, note, note_size, err);
    }
done:
    for (int i = 0; i < 3; i++) bf_tensor_free(in[i]), free(v[i]);
    return st;
}

bool tv_check(int i, const tv_target *t, char *msg, size_t msg_size, char *note,
              size_t note_size) {
    const cJSON *c = g_cases[i];
    const char *id = tv_id(i);
    bf_error err = {0};
    bf_tensor *out = NULL;
    int out_is_act = 1;
    if (note_size) note[0] = '\0';
    bf_status st = run_vector(c, t, &out, &out_is_act, note, note_size, &err);
    if (st != BF_OK) return failed(msg, msg_size, id, t, "status %d: %s", st, err.message);

    bool ok = false;
    double *got = NULL, *ev = NULL;
    int64_t es[8], want[4];
    ints(c, "expected_shape", es);
    if (t->nchw && out_is_act)
        perm_nchw(es, want);
    else
        memcpy(want, es, sizeof(want));
    const cJSON *exp = cJSON_GetObjectItem(c, "expected");
    int64_t n = numel4(es);
    if (out->rank != 4) {
        failed(msg, msg_size, id, t, "output rank %d, expected 4", out->rank);
        goto done;
    }
    for (int k = 0; k < 4; k++)
        if (out->dims[k] != want[k]) {
            failed(msg, msg_size, id, t, "dim %d is %ld, expected %ld", k, (long)out->dims[k],
                 (long)want[k]);
            goto done;
        }
    if (cJSON_GetArraySize(exp) != n) {
        failed(msg, msg_size, id, t, "%d expected values for %ld elements",
             cJSON_GetArraySize(exp), (long)n);
        goto done;
    }
    got = ct_values(out);
    if (got && t->nchw && out_is_act) {
        double *tr = transpose(got, es, 0);
        free(got);
        got = tr;
    }
    ev = doubles(n);
    if (!got || !ev) {
        failed(msg, msg_size, id, t, "out of memory");
        goto done;
    }
    int64_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, exp) ev[k++] = e->valuedouble;
    /* TF's tolerance for float32 (1e-5 relative on values up to ~1e5); exact-ish in f64. */
    double rtol = t->dtype == BF_DTYPE_F64 ? 1e-12 : 1e-5;
    double atol = t->dtype == BF_DTYPE_F64 ? 1e-9 : 1e-4;
    double ex = bf_test_rel_excess(got, ev, n, atol, rtol);
    ok = ex <= 1.0;
    if (!ok) failed(msg, msg_size, id, t, "values differ from TF (excess %g)", ex);
done:
    free(got), free(ev);
    bf_tensor_free(out);
    return ok;
}
