/*
 * test_conv_vectors.c - every TensorFlow vector of shared/conformance/tf_vectors.json (81
 * literal + 71 derived) through the six convolution blocks, in float32 and float64, and also
 * in NCHW (inputs transposed, results transposed back) for the cases TF ran in NCHW.
 * SeparableConv2D_composite runs DepthwiseConv2dNative, then a 1x1 Conv2D with VALID.
 *
 * The file is read at test time from $BF_SHARED_DIR/conformance, falling back to the copy
 * in tests/data. One loop-test iteration per case (tcase_add_loop_test).
 */
#include "conv_harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *g_doc;     /* the parsed vector file (read before Check forks) */
static cJSON *g_cases[256];
static int g_n_cases;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static void load_vectors(void) {
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
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(g_doc, lists[l])) {
            if (g_n_cases < 256) g_cases[g_n_cases++] = c;
        }
    }
}

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

/* The operand values per its generator, in logical (NHWC / HWIO) order. */
static double *gen(const cJSON *c, const char *operand, const int64_t *dims) {
    int64_t n = numel4(dims);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "generators"), operand);
    const char *rule = g ? g->valuestring : "sequential_from_1";
    if (!strcmp(rule, "literal")) {
        char key[64];
        snprintf(key, sizeof(key), "%s_values", operand);
        const cJSON *a = cJSON_GetObjectItem(c, key);
        for (int64_t i = 0; i < n; i++) v[i] = cJSON_GetArrayItem(a, (int)i)->valuedouble;
    } else {
        double scale = !strcmp(rule, "half_sequential_from_1") ? 0.5 : 1.0;
        for (int64_t i = 0; i < n; i++) v[i] = (double)(i + 1) * scale;
    }
    return v;
}

/* NHWC values of shape d -> NCHW (nchw=1) or back (nchw=0, d is then the NHWC shape too). */
static double *transpose(const double *v, const int64_t *d, int to_nchw) {
    int64_t N = d[0], H = d[1], W = d[2], C = d[3];
    double *o = malloc(sizeof(double) * (size_t)(numel4(d) ? numel4(d) : 1));
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

/* Attribute JSON for case c in the given format. */
static void attrs_json(const cJSON *c, int nchw, int depthwise_only_strides, char *buf,
                       size_t size) {
    (void)depthwise_only_strides;
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
    snprintf(buf + n, size - (size_t)n, "}");
}

/* An activation tensor (NHWC values v of NHWC shape d) in the requested format. */
static bf_tensor *act(bf_dtype dt, const int64_t *d, const double *v, int nchw) {
    if (!nchw) return ct_tensor(dt, 4, d, v);
    int64_t dn[4];
    perm_nchw(d, dn);
    double *t = transpose(v, d, 1);
    bf_tensor *r = ct_tensor(dt, 4, dn, t);
    free(t);
    return r;
}

/* Run case c in (dt, format); compare; returns a failure message or NULL. */
static void run_case(const cJSON *c, bf_dtype dt, int nchw) {
    const char *id = cJSON_GetObjectItem(c, "id")->valuestring;
    const char *op = cJSON_GetObjectItem(c, "op")->valuestring;
    int64_t xs[8], fs[8], ys[8], es[8], args[8], pws[8];
    ints(c, "input_shape", xs);
    ints(c, "filter_shape", fs);
    int has_dy = ints(c, "out_backprop_shape", ys) == 4;
    ints(c, "expected_shape", es);
    char attrs[512];
    attrs_json(c, nchw, 0, attrs, sizeof(attrs));
    bf_error err = {0};
    bf_tensor *in[3] = {NULL, NULL, NULL}, *out = NULL;
    bf_status st = BF_OK;
    int out_is_act = 1;
    const bf_block_desc *d = NULL;

    if (!strcmp(op, "SeparableConv2D_composite")) {
        ints(c, "pointwise_filter_shape", pws);
        double *xv = gen(c, "input", xs), *fv = gen(c, "filter", fs);
        double *pv = gen(c, "pointwise_filter", pws);
        in[0] = act(dt, xs, xv, nchw);
        in[1] = ct_tensor(dt, 4, fs, fv);
        bf_tensor *mid = NULL;
        st = ct_run(&bf_block_depthwise_conv2d_native, attrs, in, 2, &mid, &err);
        if (st == BF_OK) {
            bf_tensor *in2[2] = {mid, ct_tensor(dt, 4, pws, pv)};
            char a2[128];
            snprintf(a2, sizeof(a2), "{\"strides\":[1,1,1,1],\"padding\":\"VALID\","
                                     "\"data_format\":\"%s\"}", nchw ? "NCHW" : "NHWC");
            st = ct_run(&bf_block_conv2d, a2, in2, 2, &out, &err);
            bf_tensor_free(in2[1]);
        }
        bf_tensor_free(mid);
        free(xv), free(fv), free(pv);
    } else {
        d = ct_desc(op);
        ck_assert_msg(d != NULL, "%s: unknown op %s", id, op);
        if (d == &bf_block_conv2d || d == &bf_block_depthwise_conv2d_native) {
            double *xv = gen(c, "input", xs), *fv = gen(c, "filter", fs);
            in[0] = act(dt, xs, xv, nchw);
            in[1] = ct_tensor(dt, 4, fs, fv);
            free(xv), free(fv);
        } else if (d == &bf_block_conv2d_backprop_filter ||
                   d == &bf_block_depthwise_conv2d_native_backprop_filter) {
            ck_assert(has_dy);
            double *xv = gen(c, "input", xs), *yv = gen(c, "out_backprop", ys);
            int n = ints(c, "filter_sizes_arg", args);
            if (n < 0) memcpy(args, fs, sizeof(int64_t) * 4), n = 4;
            in[0] = act(dt, xs, xv, nchw);
            in[1] = ct_i32(n, args);
            in[2] = act(dt, ys, yv, nchw);
            out_is_act = 0;
            free(xv), free(yv);
        } else {
            ck_assert(has_dy);
            double *fv = gen(c, "filter", fs), *yv = gen(c, "out_backprop", ys);
            int n = ints(c, "input_sizes_arg", args);
            if (n < 0) memcpy(args, xs, sizeof(int64_t) * 4), n = 4;
            int64_t a2[4];
            if (nchw && n == 4) perm_nchw(args, a2), memcpy(args, a2, sizeof(a2));
            in[0] = ct_i32(n, args);
            in[1] = ct_tensor(dt, 4, fs, fv);
            in[2] = act(dt, ys, yv, nchw);
            free(fv), free(yv);
        }
        st = ct_run(d, attrs, in, 2, &out, &err);
    }
    ck_assert_msg(st == BF_OK, "%s (%s, %s): status %d: %s", id, bf_dtype_name(dt),
                  nchw ? "NCHW" : "NHWC", st, err.message);
    /* shape */
    int64_t want[4];
    if (nchw && out_is_act)
        perm_nchw(es, want);
    else
        memcpy(want, es, sizeof(want));
    ck_assert_int_eq(out->rank, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(out->dims[i] == want[i], "%s: dim %d is %ld, expected %ld", id, i,
                      (long)out->dims[i], (long)want[i]);
    /* values */
    double *got = ct_values(out);
    if (nchw && out_is_act) {
        double *t = transpose(got, es, 0);
        free(got);
        got = t;
    }
    const cJSON *exp = cJSON_GetObjectItem(c, "expected");
    int64_t n = numel4(es);
    ck_assert_int_eq(cJSON_GetArraySize(exp), n);
    double *ev = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) ev[i] = cJSON_GetArrayItem(exp, (int)i)->valuedouble;
    /* TF's tolerance for float32 (1e-5 relative on values up to ~1e5); exact-ish in f64. */
    double rtol = dt == BF_DTYPE_F64 ? 1e-12 : 1e-5, atol = dt == BF_DTYPE_F64 ? 1e-9 : 1e-4;
    double ex = bf_test_rel_excess(got, ev, n, atol, rtol);
    ck_assert_msg(ex <= 1.0, "%s (%s, %s): values differ from TF (excess %g)", id,
                  bf_dtype_name(dt), nchw ? "NCHW" : "NHWC", ex);
    free(got), free(ev);
    for (int i = 0; i < 3; i++) bf_tensor_free(in[i]);
    bf_tensor_free(out);
}

static int nchw_tested(const cJSON *c) {
    const cJSON *f = cJSON_GetObjectItem(c, "also_tested_formats"), *e;
    cJSON_ArrayForEach(e, f) {
        if (cJSON_IsString(e) && strstr(e->valuestring, "NCHW")) return 1;
    }
    return 0;
}

START_TEST(vector_nhwc_f32) { run_case(g_cases[_i], BF_DTYPE_F32, 0); }
END_TEST
START_TEST(vector_nhwc_f64) { run_case(g_cases[_i], BF_DTYPE_F64, 0); }
END_TEST
START_TEST(vector_nchw) {
    if (!nchw_tested(g_cases[_i])) return;
    run_case(g_cases[_i], BF_DTYPE_F32, 1);
    run_case(g_cases[_i], BF_DTYPE_F64, 1);
}
END_TEST

START_TEST(all_vectors_loaded) {
    ck_assert_msg(g_doc != NULL, "tf_vectors.json not found");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g_doc, "cases")), 81);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g_doc, "derived_cases")), 71);
    ck_assert_int_eq(g_n_cases, 152);
}
END_TEST

static Suite *suite(void) {
    load_vectors();
    Suite *s = suite_create("conv_vectors");
    TCase *tc = tcase_create("tf");
    tcase_add_test(tc, all_vectors_loaded);
    tcase_add_loop_test(tc, vector_nhwc_f32, 0, g_n_cases);
    tcase_add_loop_test(tc, vector_nhwc_f64, 0, g_n_cases);
    tcase_add_loop_test(tc, vector_nchw, 0, g_n_cases);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
