/*
 * test_pool_loss.c - the pooling and loss blocks of blocks/nn_ops/ (MaxPool, MaxPoolGrad,
 * AvgPool, AvgPoolGrad, Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits,
 * SparseSoftmaxCrossEntropyWithLogits, L2Loss), driven through the public API only: small
 * pages as JSON strings, Placeholders fed with tensors built here, results read back with a
 * decoder written here and compared with float64 references written here from the
 * definitions (naive loops; the window geometry recomputed here from TF's formulas), on
 * seeded random data, in NHWC and NCHW.
 *
 * What is checked:
 * - pooling against the references on odd sizes with SAME (5x5 with 2x2 s2, 3x3 s2, windows
 *   larger than the input), VALID, ksize 3 s1, EXPLICIT (MaxPool), more than 64 channels,
 *   float32/float64 and float16/bfloat16; TF's literal vectors from pooling_ops_test.py
 *   (MaxPool, AvgPool, depthwise MaxPool, MaxPoolGradDirect with its ties and NaN);
 *   the tie rule on constant inputs (each window's gradient to its first real element);
 *   AvgPool's SAME counts (a mean of ones is one); both gradient blocks against central
 *   differences of their forward block in float64;
 * - cross entropy with random logits and random soft labels, TF's broadcasting of [1, C],
 *   [C], [B, 1] and scalar operands, huge logits (no overflow), backprop against central
 *   differences of the loss; sparse labels int32 and int64, TF's out-of-range error; Softmax,
 *   LogSoftmax and L2Loss against the references;
 * - every validation rule at check time (the run refuses the same way), in TF's words, with
 *   status, code, block, port or attribute and JSON pointer.
 *
 * Tolerances, relative to the scale of the terms (|got - ref| <= atol + rtol * |ref|):
 *   float64 1e-13, float32 2^-23 times (window size + 2) for sums, 4 ulp for the softmax
 *   family (exp and log of float are within 1 ulp; the sums are in double); float16 2^-10 and
 *   bfloat16 2^-7 (inputs are exact in the dtype; the blocks compute in float and round once)
 *   plus the float32 error. A max is exact in every dtype.
 */
#include "bf_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- pages and sessions ------------------------------------------------------------------ */

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

static bf_context *new_ctx(int threads) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = threads;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

/* A session on the page HEAD + body (printf), asserting that the page loads. */
static bf_session *open_page(bf_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bf_session *open_page(bf_context *ctx, const char *fmt, ...) {
    static char body[16384], json[16500];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof(body));
    snprintf(json, sizeof(json), HEAD "%s]}", body);
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "g.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s\n%s", e.code, e.message, json);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

static bf_status run_fetch(bf_session *s, const char *id, bf_error *e) {
    const char *f[1] = {id};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    return bf_session_run(s, &o, NULL, e);
}

/* Run, fetch block `id`, assert success, return output `port` (NULL: the first; borrowed). */
static const bf_tensor *run_ok(bf_session *s, const char *id, const char *port) {
    bf_error e = {0};
    if (run_fetch(s, id, &e)) ck_abort_msg("run of %s: %s %s", id, e.code, e.message);
    const bf_tensor *t = bf_session_output(s, id, port);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void feed_ok(bf_session *s, const char *id, const bf_tensor *t) {
    bf_error e = {0};
    if (bf_session_feed(s, id, t, &e)) ck_abort_msg("feed %s: %s %s", id, e.code, e.message);
}

/* Assert every field an error case is about. port/attr "" means "must be empty". */
static void expect_error(const bf_error *e, bf_status status, const char *code,
                         const char *block, const char *port, const char *attr,
                         const char *pointer, const char *words) {
    ck_assert_msg(e->status == status, "status %s, want %s (%s)", bf_status_name(e->status),
                  bf_status_name(status), e->message);
    ck_assert_str_eq(e->code, code);
    ck_assert_str_eq(e->block_id, block);
    ck_assert_str_eq(e->port, port);
    ck_assert_str_eq(e->attr, attr);
    ck_assert_str_eq(e->pointer, pointer);
    ck_assert_msg(strstr(e->message, words), "message \"%s\" lacks \"%s\"", e->message, words);
}

/* ---- dtypes: encoding and decoding written here ------------------------------------------- */

static uint16_t enc_f16(double v) {
    if (v == 0) return signbit(v) ? 0x8000u : 0;
    int e;
    double m = frexp(fabs(v), &e);
    double frac = (m * 2 - 1) * 1024;
    if (!(frac == floor(frac) && e - 1 + 15 > 0 && e - 1 + 15 < 31))
        ck_abort_msg("%g is not a normal float16", v);
    return (uint16_t)((v < 0 ? 0x8000u : 0) | (unsigned)(e - 1 + 15) << 10 | (unsigned)frac);
}

static double dec_f16(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY)
                                                       : ldexp(1024 + man, exp - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t enc_bf16(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (!((double)f == v && (u & 0xffffu) == 0) && !isnan(v)) ck_abort_msg("%g is not a bfloat16", v);
    return (uint16_t)(u >> 16);
}

static double dec_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double elem(const bf_tensor *t, int64_t i) {
    const void *d = bf_tensor_cdata(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F16: return dec_f16(((const uint16_t *)d)[i]);
    case BF_DTYPE_BF16: return dec_bf16(((const uint16_t *)d)[i]);
    case BF_DTYPE_F32: return ((const float *)d)[i];
    case BF_DTYPE_F64: return ((const double *)d)[i];
    case BF_DTYPE_I32: return ((const int32_t *)d)[i];
    case BF_DTYPE_I64: return (double)((const int64_t *)d)[i];
    default: ck_abort_msg("bad dtype"); return 0;
    }
}

static void set_elem(bf_tensor *t, int64_t i, double v) {
    void *d = bf_tensor_data(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F16: ((uint16_t *)d)[i] = isnan(v) ? 0x7e00u : enc_f16(v); break;
    case BF_DTYPE_BF16: ((uint16_t *)d)[i] = enc_bf16(v); break;
    case BF_DTYPE_F32: ((float *)d)[i] = (float)v; break;
    case BF_DTYPE_F64: ((double *)d)[i] = v; break;
    case BF_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)v; break;
    case BF_DTYPE_I64: ((int64_t *)d)[i] = (int64_t)v; break;
    default: ck_abort_msg("bad dtype");
    }
}

/* A tensor of dtype dt and shape dims holding v[0..numel) (each exact in dt). */
static bf_tensor *make_tensor(bf_dtype dt, int rank, const int64_t *dims, const double *v) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) set_elem(t, i, v[i]);
    return t;
}

static bool is_half(bf_dtype dt) { return dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16; }

/* One unit in the last place, relative. */
static double eps_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F16: return ldexp(1, -10);
    case BF_DTYPE_BF16: return ldexp(1, -7);
    case BF_DTYPE_F32: return ldexp(1, -23);
    default: return 1e-13;
    }
}

/* A random value exact in dt: halves k/256 with 26 <= |k| <= 256, else nonzero in [-1, 1]
 * times `scale` (float32 rounded). */
static double rnd(bf_rng *r, bf_dtype dt, double scale) {
    if (is_half(dt)) {
        int64_t k = bf_rng_int(r, 26, 256);
        return (double)((bf_rng_next(r) & 1) ? k : -k) / 256 * (scale >= 4 ? 4 : 1);
    }
    double v = bf_rng_nonzero(r) * scale;
    return dt == BF_DTYPE_F32 ? (double)(float)v : v;
}

/* got (decoded from t) against ref within atol + rtol*|ref|, naming the first bad element. */
static void expect_close(const bf_tensor *t, const double *ref, int64_t n, double atol,
                         double rtol, const char *what) {
    ck_assert_msg(bf_tensor_numel(t) == n, "%s: %lld elements, want %lld", what,
                  (long long)bf_tensor_numel(t), (long long)n);
    for (int64_t i = 0; i < n; i++) {
        double got = elem(t, i);
        bool ok = isnan(ref[i]) ? isnan(got) : fabs(got - ref[i]) <= atol + rtol * fabs(ref[i]);
        if (!ok)
            ck_abort_msg("%s (%s): element %lld is %.17g, want %.17g (atol %g rtol %g)", what,
                         bf_dtype_name(bf_tensor_dtype(t)), (long long)i, got, ref[i], atol,
                         rtol);
    }
}

static void expect_dims(const bf_tensor *t, int rank, const int64_t *dims, const char *what) {
    ck_assert_msg(bf_tensor_rank(t) == rank, "%s: rank %d, want %d", what, bf_tensor_rank(t),
                  rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(bf_tensor_dims(t)[i] == dims[i], "%s: dim %d is %lld, want %lld", what, i,
                      (long long)bf_tensor_dims(t)[i], (long long)dims[i]);
}

static double max_abs(const double *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* ---- pooling: geometry and references, from TF's definitions ------------------------------ */

/* One pooling problem, in logical NHWC; pads used only with EXPLICIT (t, b, l, r). */
typedef struct pcase {
    int64_t n, h, w, c;
    int64_t kh, kw, sh, sw;
    const char *padding;
    int64_t pads[4];
} pcase;

typedef struct pgeo {
    int64_t oh, ow, pt, pl;
} pgeo;

/* TF's GetWindowedOutputSizeVerbose (dilation 1), per dimension. */
static void out_dim(int64_t in, int64_t k, int64_t s, const char *padding, int64_t pb, int64_t pa,
                    int64_t *out, int64_t *before) {
    if (!strcmp(padding, "VALID")) {
        *out = (in - k + s) / s;
        *before = 0;
    } else if (!strcmp(padding, "SAME")) {
        *out = (in + s - 1) / s;
        int64_t need = (*out - 1) * s + k - in;
        if (need < 0) need = 0;
        *before = need / 2; /* the odd pixel goes after */
    } else {
        *out = (in + pb + pa - k + s) / s;
        *before = pb;
    }
}

static pgeo geo_of(const pcase *c) {
    pgeo g;
    out_dim(c->h, c->kh, c->sh, c->padding, c->pads[0], c->pads[1], &g.oh, &g.pt);
    out_dim(c->w, c->kw, c->sw, c->padding, c->pads[2], c->pads[3], &g.ow, &g.pl);
    return g;
}

/* Index of logical (n, h, w, c) in a tensor of logical dims d[4], in NHWC or NCHW. */
static int64_t at(const int64_t *d, int nchw, int64_t n, int64_t h, int64_t w, int64_t c) {
    return nchw ? ((n * d[3] + c) * d[1] + h) * d[2] + w : ((n * d[1] + h) * d[2] + w) * d[3] + c;
}

/* Dims of logical NHWC d in the layout. */
static void layout_dims(const int64_t *d, int nchw, int64_t *o) {
    if (nchw) o[0] = d[0], o[1] = d[3], o[2] = d[1], o[3] = d[2];
    else memcpy(o, d, 4 * sizeof(int64_t));
}

/* Window of output (oh, ow) clipped to the data: rows [*h0, *h1), cols [*w0, *w1). */
static void window(const pcase *c, const pgeo *g, int64_t oh, int64_t ow, int64_t *h0,
                   int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t hs = oh * c->sh - g->pt, ws = ow * c->sw - g->pl;
    *h0 = hs < 0 ? 0 : hs, *h1 = hs + c->kh < c->h ? hs + c->kh : c->h;
    *w0 = ws < 0 ? 0 : ws, *w1 = ws + c->kw < c->w ? ws + c->kw : c->w;
}

/*
 * The references, on tensors in the layout `nchw` (x and dx of the input's shape, y and dy of
 * the output's). max: the largest real element; avg: the mean of the real elements;
 * max_grad: each window's dy to its first maximum in row-major order (a later element wins
 * only when strictly greater, TF's rule); avg_grad: dy / count to each real element.
 */
static void ref_pool(const pcase *c, int nchw, int op, const double *x, const double *dy,
                     double *out) {
    pgeo g = geo_of(c);
    const int64_t xd[4] = {c->n, c->h, c->w, c->c}, yd[4] = {c->n, g.oh, g.ow, c->c};
    if (op >= 2) memset(out, 0, sizeof(double) * (size_t)(c->n * c->h * c->w * c->c));
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t oh = 0; oh < g.oh; oh++)
            for (int64_t ow = 0; ow < g.ow; ow++)
                for (int64_t ch = 0; ch < c->c; ch++) {
                    int64_t h0, h1, w0, w1;
                    window(c, &g, oh, ow, &h0, &h1, &w0, &w1);
                    const int64_t yi = at(yd, nchw, n, oh, ow, ch);
                    double best = 0, sum = 0;
                    int64_t arg = -1, count = (h1 - h0) * (w1 - w0);
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) {
                            double v = x ? x[at(xd, nchw, n, h, w, ch)] : 0;
                            if (arg < 0 || best < v) best = v, arg = at(xd, nchw, n, h, w, ch);
                            sum += v;
                        }
                    if (op == 0) out[yi] = best;
                    if (op == 1) out[yi] = sum / (double)count;
                    if (op == 2 && arg >= 0) out[arg] += dy[yi];
                    if (op == 3)
                        for (int64_t h = h0; h < h1; h++)
                            for (int64_t w = w0; w < w1; w++)
                                out[at(xd, nchw, n, h, w, ch)] += dy[yi] / (double)count;
                }
}

enum { OP_MAX = 0, OP_AVG = 1, OP_MAX_GRAD = 2, OP_AVG_GRAD = 3 };

/* The attributes of a case in layout nchw, as JSON members. */
static void pool_attrs(const pcase *c, int nchw, char *buf, size_t size) {
    if (nchw)
        snprintf(buf, size,
                 "\"ksize\":[1,1,%lld,%lld],\"strides\":[1,1,%lld,%lld],\"padding\":\"%s\","
                 "\"data_format\":\"NCHW\"",
                 (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                 c->padding);
    else
        snprintf(buf, size,
                 "\"ksize\":[1,%lld,%lld,1],\"strides\":[1,%lld,%lld,1],\"padding\":\"%s\"",
                 (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                 c->padding);
    if (!strcmp(c->padding, "EXPLICIT")) {
        size_t k = strlen(buf);
        if (nchw)
            snprintf(buf + k, size - k, ",\"explicit_paddings\":[0,0,0,0,%lld,%lld,%lld,%lld]",
                     (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2],
                     (long long)c->pads[3]);
        else
            snprintf(buf + k, size - k, ",\"explicit_paddings\":[0,0,%lld,%lld,%lld,%lld,0,0]",
                     (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2],
                     (long long)c->pads[3]);
    }
}

/* A page with x and dy Placeholders (dtype dt) and the four pooling blocks (MaxPool and
 * MaxPoolGrad only for EXPLICIT): mp, ap, mg, ag. */
static bf_session *pool_page(bf_context *ctx, const pcase *c, int nchw, bf_dtype dt) {
    char a[512];
    pool_attrs(c, nchw, a, sizeof(a));
    const int64_t xd[4] = {c->n, c->h, c->w, c->c};
    int64_t sd[4];
    layout_dims(xd, nchw, sd);
    const char *d = bf_dtype_name(dt);
    if (!strcmp(c->padding, "EXPLICIT"))
        return open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
            "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
            "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
            "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
            "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}}",
            d, d, a, a);
    return open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{%s},\"inputs\":{\"value\":\"x\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}},"
        "{\"id\":\"sh\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
        "\"value\":[%lld,%lld,%lld,%lld]}},"
        "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{%s},\"inputs\":{"
        "\"orig_input_shape\":\"sh\",\"grad\":\"dy\"}}",
        d, d, a, a, a, (long long)sd[0], (long long)sd[1], (long long)sd[2], (long long)sd[3],
        a);
}

static const pcase pool_cases[] = {
    {2, 5, 5, 3, 2, 2, 2, 2, "SAME", {0}},     /* odd size, 2x2 s2: pad after only */
    {1, 7, 6, 2, 3, 3, 2, 2, "SAME", {0}},     /* 3x3 s2 */
    {2, 5, 5, 3, 3, 3, 2, 2, "SAME", {0}},     /* 3x3 s2 on 5x5: pads 1 and 1 */
    {1, 6, 7, 4, 3, 3, 1, 1, "VALID", {0}},    /* ksize 3 s1 */
    {1, 5, 6, 2, 3, 3, 1, 1, "SAME", {0}},     /* ksize 3 s1, SAME */
    {2, 4, 4, 5, 2, 2, 2, 2, "VALID", {0}},    /* the CNN case */
    {1, 5, 5, 2, 6, 6, 1, 1, "SAME", {0}},     /* windows larger than the input */
    {1, 3, 9, 70, 2, 3, 1, 2, "SAME", {0}},    /* > 64 channels, non-square */
    {1, 5, 4, 3, 4, 2, 3, 1, "VALID", {0}},    /* kh > sh with rows left over */
    {3, 1, 1, 2, 1, 1, 1, 1, "VALID", {0}},    /* 1x1 */
    {1, 6, 6, 2, 3, 3, 2, 2, "EXPLICIT", {1, 2, 2, 1}},
    {2, 4, 5, 3, 3, 2, 2, 1, "EXPLICIT", {2, 0, 0, 1}},
};
#define N_POOL_CASES ((int)(sizeof(pool_cases) / sizeof(pool_cases[0])))

static const bf_dtype pool_dtypes[4] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16, BF_DTYPE_BF16};

/* Loop index: case = i / 8, layout = (i / 4) % 2, dtype = i % 4. */
START_TEST(pool_matches_reference) {
    const pcase *c = &pool_cases[_i / 8];
    const int nchw = (_i / 4) % 2;
    const bf_dtype dt = pool_dtypes[_i % 4];
    const bool explicit_ = !strcmp(c->padding, "EXPLICIT");
    pgeo g = geo_of(c);
    const int64_t xl[4] = {c->n, c->h, c->w, c->c}, yl[4] = {c->n, g.oh, g.ow, c->c};
    int64_t xd[4], yd[4];
    layout_dims(xl, nchw, xd);
    layout_dims(yl, nchw, yd);
    const int64_t nx = c->n * c->h * c->w * c->c, ny = c->n * g.oh * g.ow * c->c;
    double *x = malloc(sizeof(double) * (size_t)nx), *dy = malloc(sizeof(double) * (size_t)ny);
    double *want = calloc((size_t)(nx > ny ? nx : ny), sizeof(double));
    bf_rng r = {(uint64_t)_i * 7919 + 1};
    for (int64_t i = 0; i < nx; i++) x[i] = rnd(&r, dt, 1);
    for (int64_t i = 0; i < ny; i++) dy[i] = rnd(&r, dt, 1);
    bf_tensor *tx = make_tensor(dt, 4, xd, x), *tdy = make_tensor(dt, 4, yd, dy);

    bf_context *ctx = new_ctx(_i % 3 == 0 ? 1 : 2);
    bf_session *s = pool_page(ctx, c, nchw, dt);
    feed_ok(s, "x", tx);
    feed_ok(s, "dy", tdy);
    const double e = eps_of(dt), kk = (double)(c->kh * c->kw + 2);
    const double f32 = ldexp(1, -23) * kk, mx = max_abs(x, nx), mdy = max_abs(dy, ny);

    ref_pool(c, nchw, OP_MAX, x, NULL, want);
    const bf_tensor *t = run_ok(s, "mp", NULL);
    expect_dims(t, 4, yd, "MaxPool");
    expect_close(t, want, ny, 0, 0, "MaxPool"); /* exact: a max is an element */

    ref_pool(c, nchw, OP_MAX_GRAD, x, dy, want);
    t = run_ok(s, "mg", NULL);
    expect_dims(t, 4, xd, "MaxPoolGrad");
    double n_win = (double)((c->kh + c->sh - 1) / c->sh * ((c->kw + c->sw - 1) / c->sw) + 1);
    expect_close(t, want, nx, (is_half(dt) ? ldexp(1, -23) : e) * n_win * mdy,
                 is_half(dt) ? e : 0, "MaxPoolGrad");
    if (!explicit_) {
        ref_pool(c, nchw, OP_AVG, x, NULL, want);
        t = run_ok(s, "ap", NULL);
        expect_dims(t, 4, yd, "AvgPool");
        expect_close(t, want, ny, (is_half(dt) ? f32 : e * kk) * mx, is_half(dt) ? e : 0,
                     "AvgPool");
        ref_pool(c, nchw, OP_AVG_GRAD, NULL, dy, want);
        t = run_ok(s, "ag", NULL);
        expect_dims(t, 4, xd, "AvgPoolGrad");
        expect_close(t, want, nx, (is_half(dt) ? f32 : e * kk) * n_win * mdy,
                     is_half(dt) ? e : 0, "AvgPoolGrad");
    }
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(tx);
    bf_tensor_free(tdy);
    free(x), free(dy), free(want);
}
END_TEST

/* ---- TensorFlow's literal vectors (python/kernel_tests/nn_ops/pooling_ops_test.py) ------- */

/* TF's input: element f of the NHWC tensor is ((f + 128) % 255) - 127, negated on request. */
static void tf_input(int64_t n, double *x, int negative) {
    for (int64_t f = 0; f < n; f++) x[f] = (double)(((f + 128) % 255) - 127) * (negative ? -1 : 1);
}

typedef struct tfvec {
    const char *type; /* MaxPool or AvgPool */
    int64_t in[4];    /* NHWC */
    int64_t k[2], s[2];
    const char *padding;
    int64_t pads[4];  /* t, b, l, r for EXPLICIT */
    int negative;
    int n_out;
    double out[32];   /* NHWC */
} tfvec;

static const tfvec tf_vectors[] = {
    {"AvgPool", {1, 3, 3, 3}, {2, 2}, {2, 2}, "VALID", {0}, 0, 3, {7, 8, 9}},
    {"AvgPool", {1, 2, 4, 3}, {2, 2}, {2, 2}, "SAME", {0}, 0, 6, {8.5, 9.5, 10.5, 14.5, 15.5, 16.5}},
    {"AvgPool", {1, 2, 2, 1}, {1, 2}, {1, 1}, "SAME", {0}, 0, 4, {1.5, 2, 3.5, 4}},
    {"AvgPool", {1, 2, 2, 1}, {2, 1}, {1, 1}, "SAME", {0}, 0, 4, {2, 3, 3, 4}},
    {"AvgPool", {2, 2, 2, 2}, {1, 2}, {1, 1}, "SAME", {0}, 0, 16,
     {2, 3, 3, 4, 6, 7, 7, 8, 10, 11, 11, 12, 14, 15, 15, 16}},
    {"AvgPool", {2, 2, 2, 2}, {2, 1}, {1, 1}, "SAME", {0}, 0, 16,
     {3, 4, 5, 6, 5, 6, 7, 8, 11, 12, 13, 14, 13, 14, 15, 16}},
    {"AvgPool", {1, 3, 3, 3}, {2, 2}, {1, 2}, "VALID", {0}, 0, 6, {7, 8, 9, 16, 17, 18}},
    {"AvgPool", {1, 3, 3, 3}, {2, 2}, {2, 1}, "VALID", {0}, 0, 6, {7, 8, 9, 10, 11, 12}},
    {"AvgPool", {1, 4, 4, 4}, {2, 2}, {2, 2}, "SAME", {0}, 0, 16,
     {11, 12, 13, 14, 19, 20, 21, 22, 43, 44, 45, 46, 51, 52, 53, 54}},
    {"AvgPool", {1, 4, 4, 4}, {3, 3}, {2, 2}, "SAME", {0}, 0, 16,
     {21, 22, 23, 24, 27, 28, 29, 30, 45, 46, 47, 48, 51, 52, 53, 54}},
    {"MaxPool", {1, 3, 3, 3}, {2, 2}, {2, 2}, "VALID", {0}, 0, 3, {13, 14, 15}},
    {"MaxPool", {1, 2, 3, 3}, {2, 2}, {2, 2}, "SAME", {0}, 0, 6, {13, 14, 15, 16, 17, 18}},
    {"MaxPool", {1, 3, 3, 1}, {3, 3}, {2, 2}, "EXPLICIT", {0, 0, 0, 0}, 0, 1, {9}},
    {"MaxPool", {1, 3, 3, 1}, {3, 3}, {2, 2}, "EXPLICIT", {2, 1, 2, 1}, 1, 4, {-1, -1, -1, -1}},
    {"MaxPool", {1, 3, 3, 1}, {3, 3}, {2, 2}, "EXPLICIT", {0, 2, 0, 1}, 0, 2, {9, 9}},
    {"MaxPool", {1, 6, 6, 1}, {3, 3}, {2, 2}, "EXPLICIT", {1, 2, 2, 1}, 0, 16,
     {7, 9, 11, 12, 19, 21, 23, 24, 31, 33, 35, 36, 31, 33, 35, 36}},
    {"MaxPool", {1, 6, 6, 1}, {3, 3}, {2, 2}, "EXPLICIT", {1, 2, 2, 1}, 1, 16,
     {-1, -1, -3, -5, -7, -7, -9, -11, -19, -19, -21, -23, -31, -31, -33, -35}},
};
#define N_TF_VECTORS ((int)(sizeof(tf_vectors) / sizeof(tf_vectors[0])))

/* Loop index: vector = i / 6, layout = (i / 3) % 2, dtype float32/float64/float16 = i % 3. */
START_TEST(pool_tf_vectors) {
    const tfvec *v = &tf_vectors[_i / 6];
    const int nchw = (_i / 3) % 2;
    const bf_dtype dt = (bf_dtype[3]){BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16}[_i % 3];
    pcase c = {v->in[0], v->in[1], v->in[2], v->in[3], v->k[0], v->k[1], v->s[0], v->s[1],
               v->padding, {v->pads[0], v->pads[1], v->pads[2], v->pads[3]}};
    pgeo g = geo_of(&c);
    const int64_t ny = c.n * g.oh * g.ow * c.c, nx = c.n * c.h * c.w * c.c;
    ck_assert_int_eq(ny, v->n_out);
    double x_nhwc[512], x[512], want[32];
    tf_input(nx, x_nhwc, v->negative);
    const int64_t xl[4] = {c.n, c.h, c.w, c.c}, yl[4] = {c.n, g.oh, g.ow, c.c};
    int64_t xd[4];
    layout_dims(xl, nchw, xd);
    for (int64_t n = 0; n < c.n; n++) /* TF's NHWC values into this layout */
        for (int64_t h = 0; h < c.h; h++)
            for (int64_t w = 0; w < c.w; w++)
                for (int64_t ch = 0; ch < c.c; ch++)
                    x[at(xl, nchw, n, h, w, ch)] = x_nhwc[at(xl, 0, n, h, w, ch)];
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t h = 0; h < g.oh; h++)
            for (int64_t w = 0; w < g.ow; w++)
                for (int64_t ch = 0; ch < c.c; ch++)
                    want[at(yl, nchw, n, h, w, ch)] = v->out[at(yl, 0, n, h, w, ch)];
    char a[512];
    pool_attrs(&c, nchw, a, sizeof(a));
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"p\",\"type\":\"%s\",\"attrs\":{%s},\"inputs\":{\"%s\":\"x\"}}",
        bf_dtype_name(dt), v->type, a, !strcmp(v->type, "MaxPool") ? "input" : "value");
    bf_tensor *tx = make_tensor(dt, 4, xd, x);
    feed_ok(s, "x", tx);
    expect_close(run_ok(s, "p", NULL), want, ny, 0, dt == BF_DTYPE_F16 ? ldexp(1, -11) : 0,
                 v->type);
    bf_tensor_free(tx);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* TF's depthwise max pooling tests: [1,1,1,10] by 2 and [1,2,2,6] by 3, input 1, 2, 3, ... */
START_TEST(max_pool_over_depth) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,1,1,10],"
        "\"value\":[1,2,3,4,5,6,7,8,9,10]}},"
        "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,2,2,6],\"value\":"
        "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24]}},"
        "{\"id\":\"pa\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,1,1,2],\"strides\":[1,1,1,2],"
        "\"padding\":\"SAME\"},\"inputs\":{\"input\":\"a\"}},"
        "{\"id\":\"pb\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,1,1,3],\"strides\":[1,1,1,3],"
        "\"padding\":\"VALID\"},\"inputs\":{\"input\":\"b\"}}");
    const double wa[5] = {2, 4, 6, 8, 10}, wb[8] = {3, 6, 9, 12, 15, 18, 21, 24};
    const int64_t da[4] = {1, 1, 1, 5}, db[4] = {1, 2, 2, 2};
    const bf_tensor *t = run_ok(s, "pa", NULL);
    expect_dims(t, 4, da, "depth 2");
    expect_close(t, wa, 5, 0, 0, "depth 2");
    t = run_ok(s, "pb", NULL);
    expect_dims(t, 4, db, "depth 3");
    expect_close(t, wb, 8, 0, 0, "depth 3");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* TF's _testMaxPoolGradDirect* and *ExplicitPadding*: 4x4x1 inputs, literal dy and dx,
 * with ties between equal elements and all-NaN inputs (TF's CPU kernel sends each window's
 * gradient to its first element). */
typedef struct tfgrad {
    double x[16];
    int64_t oh, ow, k, s;
    const char *padding;
    int64_t pads[4];
    double dy[16], dx[16];
} tfgrad;

#define TF_Q 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1
static const tfgrad tf_grads[] = {
    {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 3, 3, 2, 1, "VALID", {0},
     {11, 12, 13, 15, 16, 17, 19, 20, 21},
     {11, 12, 13, 0, 15, 16, 17, 0, 19, 20, 21, 0, 0, 0, 0, 0}},
    {{TF_Q}, 3, 3, 2, 1, "VALID", {0}, {11, 12, 13, 15, 16, 17, 19, 20, 21},
     {11, 0, 25, 0, 0, 31, 0, 17, 19, 0, 41, 0, 0, 0, 0, 0}},
    {{TF_Q}, 4, 4, 3, 1, "SAME", {0},
     {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26},
     {54, 0, 62, 0, 0, 60, 0, 22, 47, 0, 51, 0, 0, 0, 0, 0}},
    {{TF_Q}, 3, 3, 2, 1, "EXPLICIT", {0, 0, 0, 0}, {11, 12, 13, 15, 16, 17, 19, 20, 21},
     {11, 0, 25, 0, 0, 31, 0, 17, 19, 0, 41, 0, 0, 0, 0, 0}},
    {{TF_Q}, 3, 4, 2, 1, "EXPLICIT", {0, 0, 0, 1},
     {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22},
     {11, 0, 25, 0, 0, 31, 0, 49, 19, 0, 41, 0, 0, 0, 0, 22}},
    {{TF_Q}, 3, 3, 3, 2, "EXPLICIT", {2, 1, 2, 1}, {11, 12, 13, 15, 16, 17, 19, 20, 21},
     {54, 0, 30, 0, 0, 0, 0, 0, 39, 0, 21, 0, 0, 0, 0, 0}},
    {{-1, -5, -1, -5, -5, -1, -5, -1, -1, -5, -1, -5, -5, -1, -5, -1}, 3, 4, 2, 1, "EXPLICIT",
     {0, 0, 0, 1}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22},
     {11, 0, 25, 0, 0, 31, 0, 49, 19, 0, 41, 0, 0, 0, 0, 22}},
    {{NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN}, 3, 3, 2,
     1, "VALID", {0}, {11, 12, 13, 15, 16, 17, 19, 20, 21},
     {11, 12, 13, 0, 15, 16, 17, 0, 19, 20, 21, 0, 0, 0, 0, 0}},
    {{NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN}, 3, 3, 2,
     1, "VALID", {0}, {NAN, 12, 13, 15, NAN, 17, 19, 20, NAN},
     {NAN, 12, 13, 0, 15, NAN, 17, 0, 19, 20, NAN, 0, 0, 0, 0, 0}},
};
#define N_TF_GRADS ((int)(sizeof(tf_grads) / sizeof(tf_grads[0])))

/* Loop index: vector = i / 4, layout = (i / 2) % 2, float32 / float64 = i % 2. C = 1, so the
 * data is the same in both layouts; only the attributes move. */
START_TEST(max_pool_grad_tf_vectors) {
    const tfgrad *v = &tf_grads[_i / 4];
    const int nchw = (_i / 2) % 2;
    const bf_dtype dt = _i % 2 ? BF_DTYPE_F64 : BF_DTYPE_F32;
    pcase c = {1, 4, 4, 1, v->k, v->k, v->s, v->s, v->padding,
               {v->pads[0], v->pads[1], v->pads[2], v->pads[3]}};
    pgeo g = geo_of(&c);
    ck_assert_int_eq(g.oh, v->oh);
    ck_assert_int_eq(g.ow, v->ow);
    const int64_t xl[4] = {1, 4, 4, 1}, yl[4] = {1, v->oh, v->ow, 1};
    int64_t xd[4], yd[4];
    layout_dims(xl, nchw, xd);
    layout_dims(yl, nchw, yd);
    char a[512];
    pool_attrs(&c, nchw, a, sizeof(a));
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}}",
        bf_dtype_name(dt), bf_dtype_name(dt), a, a);
    bf_tensor *tx = make_tensor(dt, 4, xd, v->x), *tdy = make_tensor(dt, 4, yd, v->dy);
    feed_ok(s, "x", tx);
    feed_ok(s, "dy", tdy);
    expect_close(run_ok(s, "mg", NULL), v->dx, 16, 0, 0, "MaxPoolGrad");
    bf_tensor_free(tx);
    bf_tensor_free(tdy);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST


/* The same vectors side by side in 17 and 19 channels of one tensor (channel c holds vector
 * c % 9; x, dy and dx NHWC), so that the kernels' vector blocks see the ties and the NaN too. */
START_TEST(max_pool_grad_tf_vectors_wide) {
    const bf_dtype dt = _i ? BF_DTYPE_F64 : BF_DTYPE_F32;
    const int64_t C = _i ? 19 : 17;
    /* vectors with the same geometry: the VALID 2x2 s1 ones (0, 1, 7, 8) */
    static const int pick[4] = {0, 1, 7, 8};
    double x[16 * 19], dy[9 * 19], want[16 * 19];
    for (int64_t c = 0; c < C; c++) {
        const tfgrad *v = &tf_grads[pick[c % 4]];
        for (int i = 0; i < 16; i++) x[i * C + c] = v->x[i], want[i * C + c] = v->dx[i];
        for (int i = 0; i < 9; i++) dy[i * C + c] = v->dy[i];
    }
    const int64_t xd[4] = {1, 4, 4, C}, yd[4] = {1, 3, 3, C};
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,2,2,1],\"strides\":[1,1,1,1],"
        "\"padding\":\"VALID\"},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{\"ksize\":[1,2,2,1],"
        "\"strides\":[1,1,1,1],\"padding\":\"VALID\"},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}}",
        bf_dtype_name(dt), bf_dtype_name(dt));
    bf_tensor *tx = make_tensor(dt, 4, xd, x), *tdy = make_tensor(dt, 4, yd, dy);
    feed_ok(s, "x", tx);
    feed_ok(s, "dy", tdy);
    expect_close(run_ok(s, "mg", NULL), want, 16 * C, 0, 0, "MaxPoolGrad, wide");
    bf_tensor_free(tx);
    bf_tensor_free(tdy);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- ties, counts, and gradients against finite differences ------------------------------- */

/* A constant input: every element of a window ties, so each window's dy goes to its first
 * real element (row-major), in both layouts, overlapping windows (3x3 s1 SAME) and not. */
START_TEST(max_pool_grad_ties_to_first) {
    static const pcase cases[3] = {{2, 5, 5, 3, 3, 3, 1, 1, "SAME", {0}},
                                   {1, 5, 4, 2, 2, 2, 2, 2, "SAME", {0}},
                                   {1, 4, 3, 21, 2, 2, 1, 2, "SAME", {0}}};
    for (int k = 0; k < 6; k++) {
        const pcase *c = &cases[k / 2];
        const int nchw = k % 2;
        pgeo g = geo_of(c);
        const int64_t xl[4] = {c->n, c->h, c->w, c->c}, yl[4] = {c->n, g.oh, g.ow, c->c};
        int64_t xd[4], yd[4];
        layout_dims(xl, nchw, xd);
        layout_dims(yl, nchw, yd);
        const int64_t nx = c->n * c->h * c->w * c->c, ny = c->n * g.oh * g.ow * c->c;
        double x[300], dy[300], want[300];
        for (int64_t i = 0; i < nx; i++) x[i] = 0.5;
        for (int64_t i = 0; i < ny; i++) dy[i] = (double)(i + 1);
        /* written from the rule itself: the first element of each clipped window */
        memset(want, 0, sizeof(want));
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++)
                    for (int64_t ch = 0; ch < c->c; ch++) {
                        int64_t h0, h1, w0, w1;
                        window(c, &g, oh, ow, &h0, &h1, &w0, &w1);
                        want[at(xl, nchw, n, h0, w0, ch)] += dy[at(yl, nchw, n, oh, ow, ch)];
                    }
        bf_context *ctx = new_ctx(2);
        bf_session *s = pool_page(ctx, c, nchw, BF_DTYPE_F32);
        bf_tensor *tx = make_tensor(BF_DTYPE_F32, 4, xd, x), *tdy = make_tensor(BF_DTYPE_F32, 4, yd, dy);
        feed_ok(s, "x", tx);
        feed_ok(s, "dy", tdy);
        expect_close(run_ok(s, "mg", NULL), want, nx, 0, 0, "ties");
        bf_tensor_free(tx);
        bf_tensor_free(tdy);
        bf_session_free(s);
        bf_context_free(ctx);
    }
}
END_TEST

/* AvgPool with SAME averages the real elements only: the mean of ones is 1 everywhere, and
 * AvgPoolGrad of ones gives each element sum over its windows of 1 / count; a padded zero
 * counted in would show as a mean below 1. Hand-checked values on 5x5, 3x3 s2 SAME. */
START_TEST(avg_pool_same_counts) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,5,5,1],\"value\":1}},"
        "{\"id\":\"v\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,5,5,1],\"value\":"
        "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]}},"
        "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{\"ksize\":[1,3,3,1],"
        "\"strides\":[1,2,2,1],\"padding\":\"SAME\"},\"inputs\":{\"value\":\"x\"}},"
        "{\"id\":\"av\",\"type\":\"AvgPool\",\"attrs\":{\"ksize\":[1,2,2,1],"
        "\"strides\":[1,2,2,1],\"padding\":\"SAME\"},\"inputs\":{\"value\":\"v\"}},"
        "{\"id\":\"sh\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[1,5,5,1]}},"
        "{\"id\":\"dy\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,3,3,1],\"value\":1}},"
        "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{\"ksize\":[1,3,3,1],"
        "\"strides\":[1,2,2,1],\"padding\":\"SAME\"},\"inputs\":{\"orig_input_shape\":\"sh\","
        "\"grad\":\"dy\"}}");
    const double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    expect_close(run_ok(s, "ap", NULL), ones, 9, 0, 0, "mean of ones");
    /* 2x2 s2 SAME on 5x5: rows {0,1},{2,3},{4}: out[0][2] = (5+10)/2, out[2][2] = 25 */
    const double av[9] = {4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25};
    expect_close(run_ok(s, "av", NULL), av, 9, 0, 0, "2x2 s2 SAME");
    /* 3x3 s2 SAME on 5x5: pads 1 and 1, windows rows {0,1},{1,2,3},{3,4}: counts 2*2=4 at the
     * corners, 2*3=6 on the edges, 9 in the middle; dx = sum of 1/count over the windows */
    double want[25];
    const double r[5][3] = {{1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 1, 1}, {0, 0, 1}};
    const double cnt[3] = {2, 3, 2};
    for (int h = 0; h < 5; h++)
        for (int w = 0; w < 5; w++) {
            want[h * 5 + w] = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    want[h * 5 + w] += r[h][i] * r[w][j] / (cnt[i] * cnt[j]);
        }
    expect_close(run_ok(s, "ag", NULL), want, 25, 1e-7, 1e-6, "AvgPoolGrad counts");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/*
 * MaxPoolGrad and AvgPoolGrad against central differences of their forward block: with
 * L(x) = sum(forward(x) * dy) in float64, dL/dx_i = (L(x + h e_i) - L(x - h e_i)) / 2h. The
 * forward ops are piecewise linear, so with distinct inputs (gaps far above h) the
 * difference is exact up to rounding.
 */
static double pool_loss(bf_session *s, const char *id, const bf_tensor *x, const double *dy,
                        int64_t ny) {
    feed_ok(s, "x", x);
    const bf_tensor *y = run_ok(s, id, NULL);
    double l = 0;
    for (int64_t i = 0; i < ny; i++) l += elem(y, i) * dy[i];
    return l;
}

START_TEST(pool_grads_match_finite_differences) {
    static const pcase cases[4] = {{1, 5, 5, 2, 2, 2, 2, 2, "SAME", {0}},
                                   {1, 5, 4, 2, 3, 3, 2, 1, "SAME", {0}},
                                   {2, 4, 5, 1, 3, 2, 1, 2, "VALID", {0}},
                                   {1, 4, 4, 2, 3, 3, 2, 2, "EXPLICIT", {1, 1, 2, 0}}};
    const pcase *c = &cases[_i / 2];
    const int nchw = _i % 2;
    const bool explicit_ = !strcmp(c->padding, "EXPLICIT");
    pgeo g = geo_of(c);
    const int64_t xl[4] = {c->n, c->h, c->w, c->c}, yl[4] = {c->n, g.oh, g.ow, c->c};
    int64_t xd[4], yd[4];
    layout_dims(xl, nchw, xd);
    layout_dims(yl, nchw, yd);
    const int64_t nx = c->n * c->h * c->w * c->c, ny = c->n * g.oh * g.ow * c->c;
    double x[128], dy[128];
    bf_rng r = {(uint64_t)_i + 99};
    for (int64_t i = 0; i < nx; i++) x[i] = (double)(i * 37 % nx) / (double)nx + 0.01; /* distinct */
    for (int64_t i = 0; i < ny; i++) dy[i] = bf_rng_nonzero(&r);
    bf_context *ctx = new_ctx(1);
    bf_session *s = pool_page(ctx, c, nchw, BF_DTYPE_F64);
    bf_tensor *tx = make_tensor(BF_DTYPE_F64, 4, xd, x), *tdy = make_tensor(BF_DTYPE_F64, 4, yd, dy);
    feed_ok(s, "x", tx);
    feed_ok(s, "dy", tdy);
    double an[2][128];
    const bf_tensor *t = run_ok(s, "mg", NULL);
    for (int64_t i = 0; i < nx; i++) an[0][i] = elem(t, i);
    if (!explicit_) {
        t = run_ok(s, "ag", NULL);
        for (int64_t i = 0; i < nx; i++) an[1][i] = elem(t, i);
    }
    const double h = 1e-6;
    for (int op = 0; op < (explicit_ ? 1 : 2); op++) {
        for (int64_t i = 0; i < nx; i++) {
            double *p = bf_tensor_data(tx);
            p[i] = x[i] + h;
            double lp = pool_loss(s, op ? "ap" : "mp", tx, dy, ny);
            p[i] = x[i] - h;
            double lm = pool_loss(s, op ? "ap" : "mp", tx, dy, ny);
            p[i] = x[i];
            double fd = (lp - lm) / (2 * h);
            ck_assert_msg(fabs(fd - an[op][i]) <= 1e-8 * (1 + fabs(fd)),
                          "%s case %d: d/dx[%lld] is %.12g, finite differences %.12g",
                          op ? "AvgPoolGrad" : "MaxPoolGrad", _i, (long long)i, an[op][i], fd);
        }
    }
    bf_tensor_free(tx);
    bf_tensor_free(tdy);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- softmax, cross entropy, L2Loss: references --------------------------------------------- */

/* log(sum_j exp(x_j)) of one row, stably, in long double. */
static double ref_lse(const double *x, int64_t n, int64_t stride) {
    long double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; j++) m = x[j * stride] > m ? x[j * stride] : m;
    for (int64_t j = 0; j < n; j++) s += expl((long double)x[j * stride] - m);
    return (double)(m + logl(s));
}

/* A broadcast operand: element (r, j) of an operand of rank <= 2 seen as [rows, cols]. */
typedef struct bview {
    const double *v;
    int rank;
    int64_t d[2];
} bview;

static double bget(const bview *b, int64_t r, int64_t j) {
    int64_t dr = b->rank == 2 ? b->d[0] : 1, dc = b->rank >= 1 ? b->d[b->rank - 1] : 1;
    return b->v[(dr == 1 ? 0 : r) * dc + (dc == 1 ? 0 : j)];
}

/* Dense cross entropy from the definition: loss = -sum labels * log softmax(f),
 * backprop = softmax(f) - labels. */
static void ref_xent(const bview *f, const bview *l, int64_t rows, int64_t cols, double *loss,
                     double *bp) {
    double row[256];
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < cols; j++) row[j] = bget(f, r, j);
        double lse = ref_lse(row, cols, 1);
        long double s = 0;
        for (int64_t j = 0; j < cols; j++) {
            double lab = bget(l, r, j), logp = row[j] - lse;
            s += -(long double)lab * logp;
            bp[r * cols + j] = exp(logp) - lab;
        }
        loss[r] = (double)s;
    }
}

START_TEST(softmax_and_log_softmax_match_reference) {
    /* loop index: dtype = i % 4, shape = i / 4 */
    static const int64_t shapes[3][3] = {{2, 3, 5}, {7, 0, 0}, {4, 33, 0}};
    static const int ranks[3] = {3, 1, 2};
    const bf_dtype dt = pool_dtypes[_i % 4];
    const int rank = ranks[_i / 4];
    const int64_t *dims = shapes[_i / 4];
    int64_t n = 1;
    for (int k = 0; k < rank; k++) n *= dims[k];
    const int64_t cols = dims[rank - 1];
    double x[256], sm[256], ls[256];
    bf_rng r = {(uint64_t)_i + 5};
    for (int64_t i = 0; i < n; i++) x[i] = rnd(&r, dt, 4) + (i % cols == 0 && !is_half(dt) ? 30 : 0);
    for (int64_t i = 0; i < n; i += cols) {
        double lse = ref_lse(x + i, cols, 1);
        for (int64_t j = 0; j < cols; j++) ls[i + j] = x[i + j] - lse, sm[i + j] = exp(ls[i + j]);
    }
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"x\"}},"
        "{\"id\":\"ls\",\"type\":\"LogSoftmax\",\"inputs\":{\"logits\":\"x\"}}",
        bf_dtype_name(dt));
    bf_tensor *tx = make_tensor(dt, rank, dims, x);
    feed_ok(s, "x", tx);
    const double e = eps_of(dt), f32 = 4 * ldexp(1, -23);
    const bf_tensor *t = run_ok(s, "sm", NULL);
    expect_dims(t, rank, dims, "Softmax");
    /* x - max rounds to the dtype (as in TF): exp's relative error grows with |x - max| */
    expect_close(t, sm, n, is_half(dt) ? f32 : 1e-300, is_half(dt) ? e : 24 * e, "Softmax");
    t = run_ok(s, "ls", "logsoftmax");
    expect_dims(t, rank, dims, "LogSoftmax");
    /* |log p| reaches ~40 here: its error scales with the shift, not with log p alone */
    expect_close(t, ls, n, (is_half(dt) ? e : 4 * e) * 40, is_half(dt) ? e : 4 * e,
                 "LogSoftmax");
    bf_tensor_free(tx);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Huge logits: the shift by the row max keeps exp finite (a naive softmax overflows). */
START_TEST(softmax_family_stable_on_huge_logits) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[[1000,1000],[0,-1000]]}},"
        "{\"id\":\"l\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,0],[0.5,0.5]]}},"
        "{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"x\"}},"
        "{\"id\":\"ls\",\"type\":\"LogSoftmax\",\"inputs\":{\"logits\":\"x\"}},"
        "{\"id\":\"xe\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"x\",\"labels\":\"l\"}}");
    const double sm[4] = {0.5, 0.5, 1, 0}, ls[4] = {-log(2.0), -log(2.0), 0, -1000};
    const double loss[2] = {log(2.0), 500}, bp[4] = {-0.5, 0.5, 0.5, -0.5};
    expect_close(run_ok(s, "sm", NULL), sm, 4, 0, 1e-7, "Softmax");
    expect_close(run_ok(s, "ls", NULL), ls, 4, 0, 1e-7, "LogSoftmax");
    expect_close(run_ok(s, "xe", "loss"), loss, 2, 0, 1e-7, "loss");
    expect_close(run_ok(s, "xe", "backprop"), bp, 4, 0, 1e-7, "backprop");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Shapes of features and labels: equal, and each broadcast TF's BCast allows to [B, C]. */
typedef struct xshape {
    int fr, lr;
    int64_t fd[2], ld[2], rows, cols;
} xshape;
static const xshape xshapes[] = {
    {2, 2, {7, 10}, {7, 10}, 7, 10}, {2, 2, {1, 10}, {7, 10}, 7, 10},
    {2, 2, {7, 10}, {1, 10}, 7, 10}, {1, 2, {10}, {7, 10}, 7, 10},
    {2, 1, {7, 10}, {10}, 7, 10},    {2, 0, {7, 10}, {0}, 7, 10},
    {2, 2, {7, 1}, {7, 10}, 7, 10},  {2, 2, {3, 130}, {3, 130}, 3, 130},
};
#define N_XSHAPES ((int)(sizeof(xshapes) / sizeof(xshapes[0])))

/* Loop index: shape = i / 4, dtype = i % 4. Random logits (scale 3) and random soft labels
 * (non-negative, rows summing to about 1; TF does not require it). */
START_TEST(xent_matches_reference) {
    const xshape *x = &xshapes[_i / 4];
    const bf_dtype dt = pool_dtypes[_i % 4];
    double f[512], l[512], loss[16], bp[512];
    bf_rng r = {(uint64_t)_i + 11};
    int64_t nf = 1, nl = 1;
    for (int k = 0; k < x->fr; k++) nf *= x->fd[k];
    for (int k = 0; k < x->lr; k++) nl *= x->ld[k];
    for (int64_t i = 0; i < nf; i++) f[i] = rnd(&r, dt, 3);
    int64_t lc = x->lr ? x->ld[x->lr - 1] : 1;
    for (int64_t i = 0; i < nl; i++) {
        double u = is_half(dt) ? (double)bf_rng_int(&r, 0, 64) / 256 : bf_rng_uniform(&r, 0, 1);
        l[i] = is_half(dt) ? u : u * 2 / (double)lc;
        if (dt == BF_DTYPE_F32) l[i] = (double)(float)l[i];
    }
    bview fv = {f, x->fr, {x->fd[0], x->fd[1]}}, lv = {l, x->lr, {x->ld[0], x->ld[1]}};
    ref_xent(&fv, &lv, x->rows, x->cols, loss, bp);
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"f\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"l\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"xe\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"l\"}}",
        bf_dtype_name(dt), bf_dtype_name(dt));
    bf_tensor *tf_ = make_tensor(dt, x->fr, x->fd, f), *tl = make_tensor(dt, x->lr, x->ld, l);
    feed_ok(s, "f", tf_);
    feed_ok(s, "l", tl);
    const double e = eps_of(dt), f32 = 8 * ldexp(1, -23);
    const int64_t dl[1] = {x->rows}, db[2] = {x->rows, x->cols};
    const bf_tensor *t = run_ok(s, "xe", "loss");
    expect_dims(t, 1, dl, "loss");
    /* the loss sums |labels * log p| terms: its error scales with that sum (~ 3 * 2 * 3) */
    expect_close(t, loss, x->rows, (is_half(dt) ? f32 : 8 * e) * 20, is_half(dt) ? e : 8 * e,
                 "loss");
    t = run_ok(s, "xe", "backprop");
    expect_dims(t, 2, db, "backprop");
    expect_close(t, bp, x->rows * x->cols, is_half(dt) ? e + f32 : 8 * e, is_half(dt) ? e : 0,
                 "backprop");
    bf_tensor_free(tf_);
    bf_tensor_free(tl);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Loop index: dtype = i % 3 (f32, f64, f16), labels int32 / int64 = i / 3. */
START_TEST(sparse_xent_matches_reference) {
    const bf_dtype dt = (bf_dtype[3]){BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16}[_i % 3];
    const bf_dtype lt = _i / 3 ? BF_DTYPE_I64 : BF_DTYPE_I32;
    const int64_t B = 9, C = 10, fd[2] = {B, C}, ld[1] = {B};
    double f[90], lab[9], loss[9], bp[90], onehot[90] = {0};
    bf_rng r = {(uint64_t)_i + 21};
    for (int64_t i = 0; i < B * C; i++) f[i] = rnd(&r, dt, 3);
    for (int64_t b = 0; b < B; b++) lab[b] = (double)((b * 7 + _i) % C), onehot[b * C + (int64_t)lab[b]] = 1;
    bview fv = {f, 2, {B, C}}, lv = {onehot, 2, {B, C}};
    ref_xent(&fv, &lv, B, C, loss, bp);
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"f\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"l\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"xe\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"l\"}}",
        bf_dtype_name(dt), bf_dtype_name(lt));
    bf_tensor *tf_ = make_tensor(dt, 2, fd, f), *tl = make_tensor(lt, 1, ld, lab);
    feed_ok(s, "f", tf_);
    feed_ok(s, "l", tl);
    const double e = eps_of(dt), f32 = 8 * ldexp(1, -23);
    expect_close(run_ok(s, "xe", "loss"), loss, B, (is_half(dt) ? f32 : 8 * e) * 10,
                 is_half(dt) ? e : 8 * e, "loss");
    expect_close(run_ok(s, "xe", "backprop"), bp, B * C, is_half(dt) ? e + f32 : 8 * e,
                 is_half(dt) ? e : 0, "backprop");
    bf_tensor_free(tf_);
    bf_tensor_free(tl);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* backprop is d loss / d features: central differences of sum(loss) through the block, in
 * float64, for the dense (with a broadcast labels row) and the sparse cross entropy. (TF's
 * backprop, softmax - labels, is that derivative when each labels row sums to 1, as here.) */
START_TEST(xent_backprop_matches_finite_differences) {
    const int sparse = _i;
    const int64_t B = 4, C = 5, fd[2] = {B, C}, ld_dense[2] = {1, C}, ld_sparse[1] = {B};
    double f[20], l[5] = {0.1, 0.4, 0.2, 0.05, 0.25}, lab[4] = {4, 0, 2, 2};
    bf_rng r = {77};
    for (int i = 0; i < 20; i++) f[i] = bf_rng_nonzero(&r) * 3;
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"f\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float64\"}},"
        "{\"id\":\"l\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"xe\",\"type\":\"%sSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"l\"}}",
        sparse ? "int64" : "float64", sparse ? "Sparse" : "");
    bf_tensor *tf_ = make_tensor(BF_DTYPE_F64, 2, fd, f);
    bf_tensor *tl = sparse ? make_tensor(BF_DTYPE_I64, 1, ld_sparse, lab)
                           : make_tensor(BF_DTYPE_F64, 2, ld_dense, l);
    feed_ok(s, "f", tf_);
    feed_ok(s, "l", tl);
    double an[20];
    const bf_tensor *t = run_ok(s, "xe", "backprop");
    for (int i = 0; i < 20; i++) an[i] = elem(t, i);
    const double h = 1e-5;
    for (int i = 0; i < 20; i++) {
        double *p = bf_tensor_data(tf_), side[2];
        for (int k = 0; k < 2; k++) {
            p[i] = f[i] + (k ? -h : h);
            feed_ok(s, "f", tf_);
            t = run_ok(s, "xe", "loss");
            side[k] = 0;
            for (int b = 0; b < B; b++) side[k] += elem(t, b);
        }
        p[i] = f[i];
        double fd_ = (side[0] - side[1]) / (2 * h);
        ck_assert_msg(fabs(fd_ - an[i]) <= 1e-7, "backprop[%d] = %.12g, finite differences %.12g",
                      i, an[i], fd_);
    }
    bf_tensor_free(tf_);
    bf_tensor_free(tl);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* A label outside [0, classes) is an error at run time, in TF's words, naming the labels:
 * the largest when none is negative, else the smallest. */
START_TEST(sparse_xent_label_out_of_range) {
    bf_context *ctx = new_ctx(1);
    for (int k = 0; k < 2; k++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"f\",\"type\":\"Const\",\"attrs\":{\"shape\":[3,10],\"value\":0.5}},"
            "{\"id\":\"l\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"value\":%s}},"
            "{\"id\":\"xent\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
            "\"features\":\"f\",\"labels\":\"l\"}}",
            k ? "int64" : "int32", k ? "[3,-1,12]" : "[1,10,3]");
        bf_error e = {0};
        ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
        ck_assert_int_eq(run_fetch(s, "xent", &e), BF_EINVAL);
        expect_error(&e, BF_EINVAL, "bad_label", "xent", "labels", "", "/blocks/2/inputs/labels",
                     k ? "Received a label value of -1 which is outside the valid range of "
                         "[0, 10).  Label values: 3 -1 12"
                       : "Received a label value of 10 which is outside the valid range of "
                         "[0, 10).  Label values: 1 10 3");
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

START_TEST(l2_loss_matches_reference) {
    const bf_dtype dt = pool_dtypes[_i % 4];
    static const int64_t dims[3] = {3, 70, 41};
    const int rank = _i / 4 ? 3 : 1;
    const int64_t n = rank == 3 ? 3 * 70 * 41 : 3;
    double *x = malloc(sizeof(double) * (size_t)n);
    bf_rng r = {(uint64_t)_i + 3};
    long double s = 0;
    for (int64_t i = 0; i < n; i++) x[i] = rnd(&r, dt, 2), s += (long double)x[i] * x[i];
    const double want = (double)(s / 2);
    bf_context *ctx = new_ctx(2);
    bf_session *ss = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"l2\",\"type\":\"L2Loss\",\"inputs\":{\"t\":\"x\"}}",
        bf_dtype_name(dt));
    bf_tensor *tx = make_tensor(dt, rank, rank == 3 ? dims : (const int64_t[1]){3}, x);
    feed_ok(ss, "x", tx);
    const bf_tensor *t = run_ok(ss, "l2", NULL);
    expect_dims(t, 0, NULL, "L2Loss");
    /* summed in double, rounded once: within half an ulp of the dtype (1e-13 for float64) */
    expect_close(t, &want, 1, 0, is_half(dt) ? eps_of(dt) : dt == BF_DTYPE_F32 ? ldexp(1, -24) : 1e-12,
                 "L2Loss");
    bf_tensor_free(tx);
    bf_session_free(ss);
    bf_context_free(ctx);
    free(x);
}
END_TEST

/* ---- validation at check time, in TF's words -------------------------------------------- */

typedef struct bad_case {
    const char *page;   /* blocks after the inputs: the block under test is "b" */
    bf_status status;
    const char *code, *port, *attr, *pointer, *words;
} bad_case;

/* Inputs every case may use: x [1,4,4,2] f32, y [1,2,2,2] f32, z [1,3,3,2] f32, d [1,2,2,2]
 * f64, s3 int32 [3], s4 int32 [1,4,4,2], f [2,3] f32, g [2,4] f32, r3 [1,2,3] f32,
 * li [2] int32, lj [3] int32, lm [2,1] int32, e0 [2,0] f32, sc a float32 scalar. */
#define BAD_INPUTS                                                                              \
    "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[1,4,4,2]}}," \
    "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[1,2,2,2]}}," \
    "{\"id\":\"z\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[1,3,3,2]}}," \
    "{\"id\":\"d\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float64\",\"shape\":[1,2,2,2]}}," \
    "{\"id\":\"s3\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[1,4,4]}},"        \
    "{\"id\":\"s4\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[1,4,4,2]}},"      \
    "{\"id\":\"f\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[2,3]}},"    \
    "{\"id\":\"g\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[2,4]}},"    \
    "{\"id\":\"r3\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[1,2,3]}}," \
    "{\"id\":\"li\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\",\"shape\":[2]}},"       \
    "{\"id\":\"lj\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\",\"shape\":[3]}},"       \
    "{\"id\":\"lm\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\",\"shape\":[2,1]}},"     \
    "{\"id\":\"e0\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[2,0]}},"   \
    "{\"id\":\"sc\",\"type\":\"Const\",\"attrs\":{\"value\":1.5}},"
#define B_AT "/blocks/14"
#define MP(attrs) "{\"id\":\"b\",\"type\":\"MaxPool\",\"attrs\":{" attrs "},\"inputs\":{\"input\":\"x\"}}"
#define AP(attrs) "{\"id\":\"b\",\"type\":\"AvgPool\",\"attrs\":{" attrs "},\"inputs\":{\"value\":\"x\"}}"
#define MG(attrs, in, out, dy)                                                                  \
    "{\"id\":\"b\",\"type\":\"MaxPoolGrad\",\"attrs\":{" attrs "},\"inputs\":{\"orig_input\":\"" in \
    "\",\"orig_output\":\"" out "\",\"grad\":\"" dy "\"}}"
#define AG(attrs, sh, dy)                                                                       \
    "{\"id\":\"b\",\"type\":\"AvgPoolGrad\",\"attrs\":{" attrs "},\"inputs\":{"                 \
    "\"orig_input_shape\":\"" sh "\",\"grad\":\"" dy "\"}}"
#define K22 "\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"VALID\""

static const bad_case bad_cases[] = {
    {MP("\"ksize\":[1,2,2],\"strides\":[1,2,2,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr", "",
     "ksize", B_AT "/attrs/ksize", "Sliding window ksize field must specify 4 dimensions"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1,1],\"padding\":\"VALID\""), BF_EATTR,
     "bad_attr", "", "strides", B_AT "/attrs/strides",
     "Sliding window stride field must specify 4 dimensions"},
    {MG("\"ksize\":[1,2,2,1],\"strides\":[1,2,2],\"padding\":\"VALID\"", "x", "y", "y"),
     BF_EATTR, "bad_attr", "", "strides", B_AT "/attrs/strides",
     "Sliding window strides field must specify 4 dimensions"},
    {MP("\"ksize\":[1,0,2,1],\"strides\":[1,2,2,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "ksize", B_AT "/attrs/ksize", "Sliding window ksize for dimension 1 was zero."},
    {AP("\"ksize\":[1,2,0,1],\"strides\":[1,2,2,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "ksize", B_AT "/attrs/ksize", "ksize must be a positive int32 value, got:0"},
    {MP("\"ksize\":[2,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "ksize", B_AT "/attrs/ksize", "Pooling is not yet supported on the batch dimension."},
    {AP("\"ksize\":[1,2,2,1],\"strides\":[2,2,2,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "strides", B_AT "/attrs/strides", "Pooling is not yet supported on the batch dimension."},
    {MG("\"ksize\":[1,2,2,2],\"strides\":[1,2,2,1],\"padding\":\"VALID\"", "x", "y", "y"),
     BF_EATTR, "bad_attr", "", "ksize", B_AT "/attrs/ksize",
     "MaxPoolingGrad is not yet supported on the depth dimension."},
    {MP("\"ksize\":[1,2,2,2],\"strides\":[1,2,2,2],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "ksize", B_AT "/attrs/ksize",
     "MaxPooling supports exactly one of pooling across depth or pooling across width/height."},
    {AP("\"ksize\":[1,1,1,2],\"strides\":[1,1,1,2],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "ksize", B_AT "/attrs/ksize", "Non-spatial pooling is not yet supported. Volunteers? :)"},
    {MP("\"ksize\":[1,1,1,3],\"strides\":[1,1,1,3],\"padding\":\"VALID\""), BF_ESHAPE,
     "shape_mismatch", "input", "", B_AT "/inputs/input",
     "Depthwise max pooling requires the depth window to evenly divide the input depth"},
    {MP("\"ksize\":[1,1,1,2],\"strides\":[1,1,1,1],\"padding\":\"VALID\""), BF_EATTR, "bad_attr",
     "", "strides", B_AT "/attrs/strides",
     "Depthwise max pooling requires the depth window to equal the depth stride"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"EXPLICIT\","
        "\"explicit_paddings\":[0,0,2,0,0,0,0,0]"),
     BF_EATTR, "bad_attr", "", "explicit_paddings", B_AT "/attrs/explicit_paddings",
     "Top padding 2 needs to be smaller than the window size 2"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"EXPLICIT\","
        "\"explicit_paddings\":[0,0,1,0]"),
     BF_EATTR, "bad_attr", "", "explicit_paddings", B_AT "/attrs/explicit_paddings",
     "explicit_paddings attribute must contain 8 values, but got: 4"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"EXPLICIT\","
        "\"explicit_paddings\":[0,0,1,0,0,-1,0,0]"),
     BF_EATTR, "bad_attr", "", "explicit_paddings", B_AT "/attrs/explicit_paddings",
     "All elements of explicit_paddings must be nonnegative"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"EXPLICIT\","
        "\"explicit_paddings\":[0,0,1,0,0,1,1,0]"),
     BF_EATTR, "bad_attr", "", "explicit_paddings", B_AT "/attrs/explicit_paddings",
     "Nonzero explicit padding in the batch or depth dimensions is not supported"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"SAME\","
        "\"explicit_paddings\":[0,0,1,0,0,1,0,0]"),
     BF_EATTR, "bad_attr", "", "explicit_paddings", B_AT "/attrs/explicit_paddings",
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"},
    {MP("\"ksize\":[1,2,2,1],\"strides\":[1,0,2,1],\"padding\":\"SAME\""), BF_ESHAPE,
     "bad_shape", "", "strides", B_AT "/attrs/strides", "Stride must be > 0, but got 0"},
    {MP("\"ksize\":[1,6,2,1],\"strides\":[1,1,1,1],\"padding\":\"VALID\""), BF_ESHAPE,
     "bad_shape", "input", "", B_AT "/inputs/input",
     "Computed output size would be negative: -1 [input_size: 4, effective_filter_size: 6, "
     "stride: 1]"},
    {"{\"id\":\"b\",\"type\":\"MaxPool\",\"attrs\":{" K22 "},\"inputs\":{\"input\":\"r3\"}}",
     BF_ESHAPE, "bad_shape", "input", "", B_AT "/inputs/input",
     "Shape must be rank 4 but is rank 3"},
    {"{\"id\":\"b\",\"type\":\"AvgPool\",\"attrs\":{" K22 "},\"inputs\":{\"value\":\"r3\"}}",
     BF_ESHAPE, "bad_shape", "value", "", B_AT "/inputs/value",
     "Shape must be rank 4 but is rank 3"},
    {MG(K22, "r3", "y", "y"), BF_ESHAPE, "bad_shape", "orig_input", "", B_AT "/inputs/orig_input",
     "tensor_in must be 4-dimensional"},
    {MG(K22, "x", "r3", "y"), BF_ESHAPE, "bad_shape", "orig_output", "",
     B_AT "/inputs/orig_output", "tensor_out must be 4-dimensional"},
    {MG(K22, "x", "y", "r3"), BF_ESHAPE, "bad_shape", "grad", "", B_AT "/inputs/grad",
     "out_backprop must be 4-dimensional"},
    {MG(K22, "x", "z", "y"), BF_ESHAPE, "shape_mismatch", "orig_output", "",
     B_AT "/inputs/orig_output", "Expected orig_output shape to be [1,2,2,2], but got [1,3,3,2]"},
    {MG(K22, "x", "y", "z"), BF_ESHAPE, "shape_mismatch", "grad", "", B_AT "/inputs/grad",
     "Expected grad shape to be [1,2,2,2], but got [1,3,3,2]"},
    {MG(K22, "x", "y", "d"), BF_EDTYPE, "dtype_mismatch", "grad", "", B_AT "/inputs/grad",
     "grad has dtype float64 but orig_output has dtype float32"},
    {AG(K22, "s3", "y"), BF_ESHAPE, "bad_shape", "orig_input_shape", "",
     B_AT "/inputs/orig_input_shape", "out_backprop must be 1-dimensional and 4 elements"},
    {AG(K22, "s4", "r3"), BF_ESHAPE, "bad_shape", "grad", "", B_AT "/inputs/grad",
     "out_backprop must be 4-dimensional"},
    {AG(K22, "s4", "z"), BF_ESHAPE, "shape_mismatch", "grad", "", B_AT "/inputs/grad",
     "Expected grad shape to be [1,2,2,2], but got [1,3,3,2]"},
    {"{\"id\":\"b\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{\"features\":\"f\","
     "\"labels\":\"g\"}}",
     BF_ESHAPE, "shape_mismatch", "labels", "", B_AT "/inputs/labels",
     "logits and labels must be broadcastable: logits_size=[2,3] labels_size=[2,4]"},
    {"{\"id\":\"b\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{\"features\":\"r3\","
     "\"labels\":\"r3\"}}",
     BF_ESHAPE, "bad_shape", "features", "", B_AT "/inputs/features",
     "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional"},
    {"{\"id\":\"b\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{\"features\":\"f\","
     "\"labels\":\"d\"}}",
     BF_EDTYPE, "dtype_mismatch", "labels", "", B_AT "/inputs/labels",
     "labels has dtype float64 but features has dtype float32"},
    {"{\"id\":\"b\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
     "\"features\":\"r3\",\"labels\":\"li\"}}",
     BF_ESHAPE, "bad_shape", "features", "", B_AT "/inputs/features",
     "logits must be 2-D, but got shape [1,2,3]"},
    {"{\"id\":\"b\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
     "\"features\":\"f\",\"labels\":\"lm\"}}",
     BF_ESHAPE, "bad_shape", "labels", "", B_AT "/inputs/labels",
     "labels must be 1-D, but got shape [2,1]"},
    {"{\"id\":\"b\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
     "\"features\":\"f\",\"labels\":\"lj\"}}",
     BF_ESHAPE, "shape_mismatch", "labels", "", B_AT "/inputs/labels",
     "logits and labels must have the same first dimension, got logits shape [2,3] and labels "
     "shape [3]"},
    {"{\"id\":\"b\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
     "\"features\":\"e0\",\"labels\":\"li\"}}",
     BF_ESHAPE, "bad_shape", "features", "", B_AT "/inputs/features",
     "Must have at least one class, but got logits shape [2,0]"},
    {"{\"id\":\"b\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"sc\"}}", BF_ESHAPE,
     "bad_shape", "logits", "", B_AT "/inputs/logits", "logits must have >= 1 dimension, got []"},
    {"{\"id\":\"b\",\"type\":\"LogSoftmax\",\"inputs\":{\"logits\":\"sc\"}}", BF_ESHAPE,
     "bad_shape", "logits", "", B_AT "/inputs/logits", "logits must have >= 1 dimension, got []"},
};
#define N_BAD ((int)(sizeof(bad_cases) / sizeof(bad_cases[0])))

START_TEST(validation_in_tf_words) {
    const bad_case *c = &bad_cases[_i];
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(ctx, BAD_INPUTS "%s", c->page);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), c->status);
    expect_error(&e, c->status, c->code, "b", c->port, c->attr, c->pointer, c->words);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* With shapes unknown at check time (Placeholders without a shape) the check passes and
 * leaves the dims unknown; a run with fed tensors refuses in the same words. */
START_TEST(validation_when_fed) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
        "{\"id\":\"o\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{" K22 "},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"o\",\"grad\":\"o\"}}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
    const int64_t xd[4] = {1, 4, 4, 1}, od[4] = {1, 3, 2, 1};
    double v[16] = {0};
    bf_tensor *tx = make_tensor(BF_DTYPE_F32, 4, xd, v), *to = make_tensor(BF_DTYPE_F32, 4, od, v);
    feed_ok(s, "x", tx);
    feed_ok(s, "o", to);
    ck_assert_int_eq(run_fetch(s, "mg", &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "mg", "orig_output", "", "/blocks/2/inputs/orig_output",
                 "Expected orig_output shape to be [1,2,2,1], but got [1,3,2,1]");
    bf_tensor_free(tx);
    bf_tensor_free(to);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Empty tensors: empty batches, channels or classes give empty outputs (and zero losses for
 * no classes), never a crash; windows over padding alone give MaxPool's lowest value. */
START_TEST(empty_tensors) {
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[0,4,4,3],\"value\":1}},"
        "{\"id\":\"c0\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,4,4,0],\"value\":1}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{" K22 "},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{" K22 "},\"inputs\":{\"value\":\"c0\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{" K22 "},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"mp\"}},"
        "{\"id\":\"sh\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[1,4,4,0]}},"
        "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{" K22 "},\"inputs\":{"
        "\"orig_input_shape\":\"sh\",\"grad\":\"ap\"}},"
        "{\"id\":\"f\",\"type\":\"Const\",\"attrs\":{\"shape\":[3,0],\"value\":1}},"
        "{\"id\":\"xe\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"f\"}},"
        "{\"id\":\"fb\",\"type\":\"Const\",\"attrs\":{\"shape\":[0,5],\"value\":1}},"
        "{\"id\":\"lb\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int64\",\"shape\":[0],"
        "\"value\":1}},"
        "{\"id\":\"sx\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"fb\",\"labels\":\"lb\"}},"
        "{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"f\"}},"
        "{\"id\":\"l2\",\"type\":\"L2Loss\",\"inputs\":{\"t\":\"x\"}},"
        "{\"id\":\"h0\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,0,3,2],\"value\":1}},"
        "{\"id\":\"pad\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,2,2,1],"
        "\"strides\":[1,1,1,1],\"padding\":\"EXPLICIT\",\"explicit_paddings\":[0,0,1,1,0,0,0,0]},"
        "\"inputs\":{\"input\":\"h0\"}}");
    const int64_t d_mp[4] = {0, 2, 2, 3}, d_ap[4] = {1, 2, 2, 0}, d_x[4] = {0, 4, 4, 3};
    const int64_t d_c0[4] = {1, 4, 4, 0}, d3[1] = {3}, d0[1] = {0};
    expect_dims(run_ok(s, "mp", NULL), 4, d_mp, "MaxPool");
    expect_dims(run_ok(s, "ap", NULL), 4, d_ap, "AvgPool");
    expect_dims(run_ok(s, "mg", NULL), 4, d_x, "MaxPoolGrad");
    expect_dims(run_ok(s, "ag", NULL), 4, d_c0, "AvgPoolGrad");
    const double zeros[3] = {0, 0, 0};
    const bf_tensor *t = run_ok(s, "xe", "loss");
    expect_dims(t, 1, d3, "loss");
    expect_close(t, zeros, 3, 0, 0, "loss of no classes");
    expect_dims(run_ok(s, "sx", "loss"), 1, d0, "sparse loss");
    run_ok(s, "sm", NULL);
    expect_close(run_ok(s, "l2", NULL), zeros, 1, 0, 0, "L2Loss");
    /* windows of padding alone (EXPLICIT pads around an empty H): TF's lowest float32 */
    const int64_t d_pad[4] = {1, 1, 2, 2};
    const double lowest[4] = {-3.4028234663852886e38, -3.4028234663852886e38,
                              -3.4028234663852886e38, -3.4028234663852886e38};
    t = run_ok(s, "pad", NULL);
    expect_dims(t, 4, d_pad, "MaxPool of padding");
    expect_close(t, lowest, 4, 0, 0, "MaxPool of padding");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST



/* ---- whole-page gradients: each block's `gradient`, built and checked end to end -------- */

/* Whether this build's Mul broadcasts numpy-style ([3,1] * [3,5]) and has Exp: the gradients
 * of Softmax, LogSoftmax and the cross entropies need the math helpers' blocks. */
static bool have_math_ops(void) {
    bool exp_ = false;
    for (int i = 0; i < bf_block_type_count(); i++) exp_ |= !strcmp(bf_block_type_name(i), "Exp");
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"shape\":[3,1],\"value\":1}},"
             "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"shape\":[3,5],\"value\":1}},"
             "{\"id\":\"m\",\"type\":\"Mul\",\"inputs\":{\"x\":\"a\",\"y\":\"b\"}}");
    bool bcast = bf_session_check(s, NULL, NULL) == BF_OK;
    bf_session_free(s);
    bf_context_free(ctx);
    if (!exp_ || !bcast)
        fprintf(stderr, "test_pool_loss: no broadcasting Mul or no Exp in this build (the math "
                        "ops): gradient check skipped\n");
    return exp_ && bcast;
}

/*
 * The page `fwd` (float64 Variables among its blocks, and an output `out` of n_out elements)
 * gets loss = Sum(MatMul(Reshape(out, [1, -1]), W)) with W a random Const [n_out, 1], so that
 * the gradient arriving at `out` is not uniform. The gradient of the loss with respect to
 * each Variable vars[k], built by bf_session_build_gradients from the blocks' own `gradient`
 * functions, must match central differences of the loss computed here in float64:
 * |g - fd| <= 1e-6 * (|fd| + max |fd|).
 */
static void grad_check(const char *fwd, const char *out, int64_t n_out, int nvars,
                       const char *const *vars, uint64_t seed) {
    bf_rng r = {seed};
    size_t cap = strlen(fwd) + 32 * (size_t)n_out + 1024, len = 0;
    char *body = malloc(cap);
    len += (size_t)snprintf(body + len, cap - len,
                            "%s,{\"id\":\"flat_shape\",\"type\":\"Const\",\"attrs\":{\"dtype\":"
                            "\"int32\",\"value\":[1,-1]}},"
                            "{\"id\":\"flat\",\"type\":\"Reshape\",\"inputs\":{\"tensor\":\"%s\","
                            "\"shape\":\"flat_shape\"}},"
                            "{\"id\":\"wt\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\","
                            "\"shape\":[%lld,1],\"value\":[",
                            fwd, out, (long long)n_out);
    for (int64_t i = 0; i < n_out; i++)
        len += (size_t)snprintf(body + len, cap - len, "%s%.17g", i ? "," : "",
                                bf_rng_nonzero(&r));
    snprintf(body + len, cap - len,
             "]}},{\"id\":\"mm\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"flat\",\"b\":\"wt\"}},"
             "{\"id\":\"loss\",\"type\":\"Sum\",\"inputs\":{\"input\":\"mm\"}}");
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_page(ctx, "%s", body);
    free(body);
    char *created = NULL;
    bf_error e = {0};
    if (bf_session_build_gradients(s, "loss", NULL, 0, NULL, &created, &e))
        ck_abort_msg("build_gradients: %s %s (block %s)", e.code, e.message, e.block_id);
    for (int v = 0; v < nvars; v++) {
        char key[64], ref[128];
        snprintf(key, sizeof(key), "\"%s\":\"", vars[v]);
        const char *at = strstr(strstr(created, "\"gradients\""), key);
        ck_assert_msg(at != NULL, "no gradient for %s in %s", vars[v], created);
        at += strlen(key);
        size_t n = strcspn(at, "\"");
        ck_assert_uint_lt(n, sizeof(ref));
        memcpy(ref, at, n), ref[n] = 0;
        bf_tensor *g = NULL, *x = NULL;
        char id[128];
        snprintf(id, sizeof(id), "%.*s", (int)strcspn(ref, ":"), ref);
        const char *port = strchr(ref, ':') ? strchr(ref, ':') + 1 : NULL;
        ck_assert_int_eq(bf_tensor_copy(run_ok(s, id, port), &g, NULL), BF_OK);
        ck_assert_int_eq(bf_session_read_state(s, vars[v], &x, NULL), BF_OK);
        ck_assert_int_eq(bf_tensor_numel(g), bf_tensor_numel(x));
        double *fd = malloc(sizeof(double) * (size_t)bf_tensor_numel(x)), scale = 0;
        for (int64_t i = 0; i < bf_tensor_numel(x); i++) {
            double x0 = elem(x, i), h = 1e-6 * fmax(1, fabs(x0)), l[2];
            for (int side = 0; side < 2; side++) {
                set_elem(x, i, x0 + (side ? -h : h));
                ck_assert_int_eq(bf_session_write_state(s, vars[v], x, NULL), BF_OK);
                l[side] = elem(run_ok(s, "loss", NULL), 0);
            }
            set_elem(x, i, x0);
            fd[i] = (l[0] - l[1]) / (2 * h);
            scale = fmax(scale, fabs(fd[i]));
        }
        ck_assert_int_eq(bf_session_write_state(s, vars[v], x, NULL), BF_OK);
        for (int64_t i = 0; i < bf_tensor_numel(x); i++)
            if (!(fabs(elem(g, i) - fd[i]) <= 1e-6 * (fabs(fd[i]) + scale)))
                ck_abort_msg("d loss / d %s[%lld]: gradient %.12g, finite differences %.12g "
                             "(%s)",
                             vars[v], (long long)i, elem(g, i), fd[i], ref);
        free(fd);
        bf_tensor_free(g), bf_tensor_free(x);
    }
    bf_string_free(created);
    bf_session_free(s);
    bf_context_free(ctx);
}

#define VAR64(id, shape, seed)                                                                  \
    "{\"id\":\"" id "\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"float64\",\"shape\":" shape \
    ",\"initializer\":\"random_normal\",\"seed\":" #seed "}}"

static const char *const v_a[1] = {"va"}, *const v_ab[2] = {"va", "vb"};

/* MaxPool -> MaxPoolGrad and AvgPool -> Const shape + AvgPoolGrad, in both layouts, SAME on
 * odd sizes and VALID with overlapping windows. */
START_TEST(gradient_pooling) {
    static const char *const attrs[4] = {
        "\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"SAME\"",
        "\"ksize\":[1,1,3,3],\"strides\":[1,1,2,1],\"padding\":\"VALID\",\"data_format\":\"NCHW\"",
        "\"ksize\":[1,3,3,1],\"strides\":[1,2,2,1],\"padding\":\"SAME\"",
        "\"ksize\":[1,3,2,1],\"strides\":[1,1,2,1],\"padding\":\"EXPLICIT\","
        "\"explicit_paddings\":[0,0,1,2,1,0,0,0]"};
    static const char *const shapes[4] = {"[2,5,5,2]", "[1,2,5,5]", "[1,5,6,3]", "[1,4,5,2]"};
    static const int64_t n_out[4] = {2 * 3 * 3 * 2, 2 * 2 * 3, 3 * 3 * 3, 5 * 3 * 2};
    const int max = _i % 2 == 0, k = _i / 2;
    if (!max && k == 3) return; /* AvgPool has no EXPLICIT padding */
    char page[1024];
    snprintf(page, sizeof(page),
             VAR64("va", "%s", 7) ",{\"id\":\"op\",\"type\":\"%s\",\"attrs\":{%s},\"inputs\":{"
                                  "\"%s\":\"va\"}}",
             shapes[k], max ? "MaxPool" : "AvgPool", attrs[k], max ? "input" : "value");
    grad_check(page, "op", n_out[k], 1, v_a, 300 + (uint64_t)_i);
}
END_TEST

START_TEST(gradient_l2_loss) {
    grad_check(VAR64("va", "[3,4]", 8) ",{\"id\":\"op\",\"type\":\"L2Loss\",\"inputs\":{"
                                       "\"t\":\"va\"}}",
               "op", 1, 1, v_a, 400);
}
END_TEST

START_TEST(gradient_softmax_family) {
    if (!have_math_ops()) return;
    char page[512];
    snprintf(page, sizeof(page),
             VAR64("va", "[3,2,5]", 9) ",{\"id\":\"op\",\"type\":\"%s\",\"inputs\":{"
                                       "\"logits\":\"va\"}}",
             _i ? "LogSoftmax" : "Softmax");
    grad_check(page, "op", 30, 1, v_a, 500 + (uint64_t)_i);
}
END_TEST

/*
 * The cross entropies: features (and the dense labels) as Variables, the loss through `loss`
 * (loop 0, 2), and through `backprop` too (loop 1, 3: TF's second-order term, the softmax
 * gradient of what arrives at backprop). Loop 4: features [1, 5] broadcast against labels
 * [3, 5] (the gradient summed back to [1, 5]). The labels' gradient is checked through the
 * loss only: TF's formula leaves out what arrives at backprop.
 */
START_TEST(gradient_cross_entropy) {
    if (!have_math_ops()) return;
    char page[1024];
    if (_i < 2 || _i == 4) {
        /* labels from a Softmax: rows summing to 1, as TF's backprop assumes; through
         * backprop, labels' own Variable is not differentiated (TF gives it zeros) */
        snprintf(page, sizeof(page),
                 VAR64("va", "%s", 10) ",%s"
                 ",{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"vb\"}},"
                 "{\"id\":\"op\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
                 "\"features\":\"va\",\"labels\":\"sm\"}}",
                 _i == 4 ? "[1,5]" : "[3,5]",
                 _i == 1 ? "{\"id\":\"vb\",\"type\":\"Variable\",\"attrs\":{\"dtype\":"
                           "\"float64\",\"shape\":[3,5],\"initializer\":\"random_normal\","
                           "\"seed\":11,\"trainable\":false}}"
                         : VAR64("vb", "[3,5]", 11));
        if (_i == 1) grad_check(page, "op:backprop", 15, 1, v_a, 600);
        else grad_check(page, "op:loss", 3, 2, v_ab, 601 + (uint64_t)_i);
    } else {
        snprintf(page, sizeof(page),
                 VAR64("va", "[4,5]", 12)
                 ",{\"id\":\"l\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\","
                 "\"value\":[4,0,2,2]}},"
                 "{\"id\":\"op\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
                 "\"features\":\"va\",\"labels\":\"l\"}}",
                 _i == 2 ? "int32" : "int64");
        if (_i == 3) grad_check(page, "op:backprop", 20, 1, v_a, 602);
        else grad_check(page, "op:loss", 4, 1, v_a, 603);
    }
}
END_TEST

/* What the check infers from partial knowledge: known dims flow through, the rest stay "?". */
static void expect_port(bf_session *s, const char *id, const char *port, const char *want) {
    bf_port_shape ps;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_port_shape(s, id, port, 1, &ps, &e), BF_OK);
    char buf[128];
    bf_port_shape_format(&ps, buf, sizeof(buf));
    ck_assert_msg(!strcmp(buf, want), "%s:%s is %s, want %s", id, port ? port : "", buf, want);
}

START_TEST(partial_shapes_at_check_time) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\","
        "\"shape\":[-1,7,-1,3]}},"
        "{\"id\":\"xc\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float64\","
        "\"shape\":[2,3,-1,5]}},"
        "{\"id\":\"sh\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\",\"shape\":[4]}},"
        "{\"id\":\"f\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\","
        "\"shape\":[-1,10]}},"
        "{\"id\":\"l\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\",\"shape\":[10]}},"
        "{\"id\":\"u\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
        "{\"id\":\"li\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int64\",\"shape\":[8]}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],"
        "\"padding\":\"SAME\"},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{\"ksize\":[1,1,3,3],\"strides\":[1,1,2,2],"
        "\"padding\":\"VALID\",\"data_format\":\"NCHW\"},\"inputs\":{\"value\":\"xc\"}},"
        "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{\"ksize\":[1,2,2,1],"
        "\"strides\":[1,2,2,1],\"padding\":\"SAME\"},\"inputs\":{\"orig_input_shape\":\"sh\","
        "\"grad\":\"mp\"}},"
        "{\"id\":\"xe\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"l\"}},"
        "{\"id\":\"xu\",\"type\":\"SoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"u\",\"labels\":\"l\"}},"
        "{\"id\":\"sx\",\"type\":\"SparseSoftmaxCrossEntropyWithLogits\",\"inputs\":{"
        "\"features\":\"f\",\"labels\":\"li\"}},"
        "{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"u\"}},"
        "{\"id\":\"l2\",\"type\":\"L2Loss\",\"inputs\":{\"t\":\"u\"}}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
    expect_port(s, "mp", NULL, "float32[?,4,?,3]");
    expect_port(s, "ap", NULL, "float64[2,3,?,2]");
    expect_port(s, "ag", NULL, "float32[?,?,?,?]");
    expect_port(s, "xe", "loss", "float32[?]");
    expect_port(s, "xe", "backprop", "float32[?,10]");
    expect_port(s, "xu", "backprop", "float32[?,?]");
    expect_port(s, "sx", "loss", "float32[8]");
    expect_port(s, "sx", "backprop", "float32[8,10]");
    expect_port(s, "sm", NULL, "float32[...]");
    expect_port(s, "l2", NULL, "float32[]");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* MaxPool on integers (TF registers it for every real type): int32 and int64, exact. */
START_TEST(max_pool_integers) {
    const bf_dtype dt = _i ? BF_DTYPE_I64 : BF_DTYPE_I32;
    const pcase c = {2, 5, 4, 3, 3, 2, 2, 2, "SAME", {0}};
    pgeo g = geo_of(&c);
    const int64_t xd[4] = {2, 5, 4, 3}, nx = 120, ny = 2 * g.oh * g.ow * 3;
    double x[120], want[120];
    bf_rng r = {(uint64_t)_i + 8};
    for (int64_t i = 0; i < nx; i++) x[i] = (double)bf_rng_int(&r, -1000000, 1000000);
    ref_pool(&c, 0, OP_MAX, x, NULL, want);
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":[1,3,2,1],\"strides\":[1,2,2,1],"
        "\"padding\":\"SAME\"},\"inputs\":{\"input\":\"x\"}}",
        bf_dtype_name(dt));
    bf_tensor *tx = make_tensor(dt, 4, xd, x);
    feed_ok(s, "x", tx);
    const bf_tensor *t = run_ok(s, "mp", NULL);
    ck_assert_int_eq(bf_tensor_dtype(t), dt);
    expect_close(t, want, ny, 0, 0, "integer MaxPool");
    bf_tensor_free(tx);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Problems big enough to be split over 4 threads (rows, images or planes per task), against
 * the references: NHWC and NCHW, windows overlapping across rows (kh > sh: the gradients own
 * whole images) or not, the softmax family over many rows, and AvgPoolGrad's shape fed at run
 * time (unknown at check time). */
START_TEST(threaded_problems_match_reference) {
    static const pcase cases[2] = {{16, 16, 16, 32, 2, 2, 2, 2, "SAME", {0}},
                                   {8, 17, 15, 24, 3, 3, 2, 2, "SAME", {0}}};
    const pcase *c = &cases[_i / 2];
    const int nchw = _i % 2;
    pgeo g = geo_of(c);
    const int64_t xl[4] = {c->n, c->h, c->w, c->c}, yl[4] = {c->n, g.oh, g.ow, c->c};
    int64_t xd[4], yd[4];
    layout_dims(xl, nchw, xd);
    layout_dims(yl, nchw, yd);
    const int64_t nx = c->n * c->h * c->w * c->c, ny = c->n * g.oh * g.ow * c->c;
    double *x = malloc(sizeof(double) * (size_t)nx), *dy = malloc(sizeof(double) * (size_t)ny);
    double *want = calloc((size_t)nx, sizeof(double));
    bf_rng r = {(uint64_t)_i + 1000};
    for (int64_t i = 0; i < nx; i++) x[i] = rnd(&r, BF_DTYPE_F32, 1);
    for (int64_t i = 0; i < ny; i++) dy[i] = rnd(&r, BF_DTYPE_F32, 1);
    char a[512];
    pool_attrs(c, nchw, a, sizeof(a));
    bf_context *ctx = new_ctx(4);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
        "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
        "{\"id\":\"sh\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\"}},"
        "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
        "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{%s},\"inputs\":{\"value\":\"x\"}},"
        "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
        "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}},"
        "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{%s},\"inputs\":{"
        "\"orig_input_shape\":\"sh\",\"grad\":\"dy\"}},"
        "{\"id\":\"sm\",\"type\":\"Softmax\",\"inputs\":{\"logits\":\"x\"}},"
        "{\"id\":\"l2\",\"type\":\"L2Loss\",\"inputs\":{\"t\":\"x\"}}",
        a, a, a, a);
    bf_tensor *tx = make_tensor(BF_DTYPE_F32, 4, xd, x), *tdy = make_tensor(BF_DTYPE_F32, 4, yd, dy);
    const int64_t four[1] = {4};
    const double shv[4] = {(double)xd[0], (double)xd[1], (double)xd[2], (double)xd[3]};
    bf_tensor *tsh = make_tensor(BF_DTYPE_I32, 1, four, shv);
    feed_ok(s, "x", tx);
    feed_ok(s, "dy", tdy);
    feed_ok(s, "sh", tsh);
    const double tol = ldexp(1, -23) * 12;
    ref_pool(c, nchw, OP_MAX, x, NULL, want);
    expect_close(run_ok(s, "mp", NULL), want, ny, 0, 0, "MaxPool");
    ref_pool(c, nchw, OP_AVG, x, NULL, want);
    expect_close(run_ok(s, "ap", NULL), want, ny, tol, 0, "AvgPool");
    ref_pool(c, nchw, OP_MAX_GRAD, x, dy, want);
    expect_close(run_ok(s, "mg", NULL), want, nx, tol * 4, 0, "MaxPoolGrad");
    ref_pool(c, nchw, OP_AVG_GRAD, NULL, dy, want);
    expect_close(run_ok(s, "ag", NULL), want, nx, tol * 4, 0, "AvgPoolGrad");
    const int64_t cols = xd[3];
    long double sq = 0;
    for (int64_t i = 0; i < nx; i += cols) {
        double lse = ref_lse(x + i, cols, 1);
        for (int64_t j = 0; j < cols; j++) want[i + j] = exp(x[i + j] - lse), sq += (long double)x[i + j] * x[i + j];
    }
    expect_close(run_ok(s, "sm", NULL), want, nx, 1e-30, 8 * ldexp(1, -23), "Softmax");
    const double l2 = (double)(sq / 2);
    expect_close(run_ok(s, "l2", NULL), &l2, 1, 0, ldexp(1, -24), "L2Loss");
    bf_tensor_free(tx);
    bf_tensor_free(tdy);
    bf_tensor_free(tsh);
    bf_session_free(s);
    bf_context_free(ctx);
    free(x), free(dy), free(want);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("pool_loss");
    TCase *tc = tcase_create("pooling");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, pool_matches_reference, 0, N_POOL_CASES * 8);
    tcase_add_loop_test(tc, pool_tf_vectors, 0, N_TF_VECTORS * 6);
    tcase_add_test(tc, max_pool_over_depth);
    tcase_add_loop_test(tc, max_pool_grad_tf_vectors, 0, N_TF_GRADS * 4);
    tcase_add_loop_test(tc, max_pool_grad_tf_vectors_wide, 0, 2);
    tcase_add_test(tc, max_pool_grad_ties_to_first);
    tcase_add_test(tc, avg_pool_same_counts);
    tcase_add_loop_test(tc, pool_grads_match_finite_differences, 0, 8);
    tcase_add_loop_test(tc, max_pool_integers, 0, 2);
    tcase_add_loop_test(tc, threaded_problems_match_reference, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("losses");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, softmax_and_log_softmax_match_reference, 0, 12);
    tcase_add_test(tc, softmax_family_stable_on_huge_logits);
    tcase_add_loop_test(tc, xent_matches_reference, 0, N_XSHAPES * 4);
    tcase_add_loop_test(tc, sparse_xent_matches_reference, 0, 6);
    tcase_add_loop_test(tc, xent_backprop_matches_finite_differences, 0, 2);
    tcase_add_test(tc, sparse_xent_label_out_of_range);
    tcase_add_loop_test(tc, l2_loss_matches_reference, 0, 8);
    suite_add_tcase(s, tc);

    tc = tcase_create("gradients");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, gradient_pooling, 0, 8);
    tcase_add_test(tc, gradient_l2_loss);
    tcase_add_loop_test(tc, gradient_softmax_family, 0, 2);
    tcase_add_loop_test(tc, gradient_cross_entropy, 0, 5);
    suite_add_tcase(s, tc);

    tc = tcase_create("validation");
    tcase_add_loop_test(tc, validation_in_tf_words, 0, N_BAD);
    tcase_add_test(tc, validation_when_fed);
    tcase_add_test(tc, partial_shapes_at_check_time);
    tcase_add_test(tc, empty_tensors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
