/*
 * test_array_ops.c - the array, linear-algebra and reduction blocks of blocks/array_ops/
 * (MatMul, BiasAdd, BiasAddGrad, Reshape, Transpose, Cast, OneHot, ArgMax, Fill, ZerosLike,
 * OnesLike, Shape, ExpandDims, Squeeze, BroadcastTo, Tile, and the reductions Sum, Mean, Max,
 * Min, Prod), driven through the public API only: one block on Placeholders fed with tensors
 * built here (a fed Placeholder's value is known at check time, as a Const's is), results
 * read back with a decoder written here and compared with float64 (long double for sums)
 * references computed here from the definitions, on random non-zero data.
 *
 * Tolerances, per element:
 *   copies and index moves (Reshape, Transpose, Tile, ...), Max, Min, ArgMax, integers: exact;
 *   elementwise (BiasAdd): one rounding of the dtype, rtol 2^-52 / 2^-23 / 2^-10 / 2^-7
 *     (float64 / float32 / float16 / bfloat16);
 *   MatMul: |got - ref| <= (k + 2) * u * sum_t |a_it * b_tj| + ulp * |ref|, u the unit
 *     roundoff of the type it accumulates in (float32 for float32, float16 and bfloat16;
 *     float64 for float64): the classical bound of a k-term dot product, plus the final
 *     rounding of the half types;
 *   Sum, Mean, BiasAddGrad: ulp * |ref| + 4 * 2^-53 * sum |x| in float64 (compensated),
 *     ulp * |ref| + n * 2^-53 * sum |x| in the others (plain double accumulation of n terms);
 *     Prod: (ulp + n * 2^-52) * |ref|.
 * Inputs for float16/bfloat16 are k/256 with 26 <= |k| <= 256, exactly representable in both.
 *
 * Error cases assert status, code, block id, port or attr and pointer, with TF's words.
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

static bf_session *open_json(bf_context *ctx, const char *body) {
    size_t n = strlen(body) + sizeof(HEAD) + 1;
    char *json = malloc(n);
    snprintf(json, n, HEAD "%s", body);
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "g.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s\n%s", e.code, e.message, json);
    free(json);
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

static const bf_tensor *run_ok(bf_session *s, const char *id) {
    bf_error e = {0};
    if (run_fetch(s, id, &e)) ck_abort_msg("run of %s: %s %s", id, e.code, e.message);
    const bf_tensor *t = bf_session_output(s, id, NULL);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void feed_ok(bf_session *s, const char *id, const bf_tensor *t) {
    bf_error e = {0};
    if (bf_session_feed(s, id, t, &e)) ck_abort_msg("feed %s: %s %s", id, e.code, e.message);
}

/* Assert every field an error case is about. port/attr "" means "must be empty"; a NULL
 * pointer is not checked. `words` must appear in the message. */
static void expect_error(const bf_error *e, bf_status status, const char *code, const char *block,
                         const char *port, const char *attr, const char *pointer,
                         const char *words) {
    ck_assert_msg(e->status == status, "status %s, want %s (%s)", bf_status_name(e->status),
                  bf_status_name(status), e->message);
    ck_assert_str_eq(e->code, code);
    ck_assert_str_eq(e->block_id, block);
    ck_assert_str_eq(e->port, port);
    ck_assert_str_eq(e->attr, attr);
    if (pointer) ck_assert_str_eq(e->pointer, pointer);
    ck_assert_msg(strstr(e->message, words), "message \"%s\" lacks \"%s\"", e->message, words);
}

/*
 * One block "op" of `type` with attributes `attrs` (JSON object text or NULL) whose inputs
 * `ports[k]` are Placeholders "in0", "in1", ... fed with feeds[k] (a NULL feed leaves the
 * port unconnected). The Placeholders come first, so "op" is block n.
 */
static bf_session *block_session(bf_context *ctx, const char *type, const char *attrs, int n,
                                 const char *const *ports, bf_tensor *const *feeds) {
    char body[4096];
    size_t len = 0;
    for (int k = 0; k < n; k++)
        len += (size_t)snprintf(body + len, sizeof(body) - len,
                                "{\"id\":\"in%d\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":"
                                "\"%s\"}},",
                                k, feeds[k] ? bf_dtype_name(bf_tensor_dtype(feeds[k])) : "float32");
    len += (size_t)snprintf(body + len, sizeof(body) - len,
                            "{\"id\":\"op\",\"type\":\"%s\",\"attrs\":%s,\"inputs\":{", type,
                            attrs ? attrs : "{}");
    bool first = true;
    for (int k = 0; k < n; k++) {
        if (!feeds[k]) continue;
        len += (size_t)snprintf(body + len, sizeof(body) - len, "%s\"%s\":\"in%d\"",
                                first ? "" : ",", ports[k], k);
        first = false;
    }
    snprintf(body + len, sizeof(body) - len, "}}]}");
    bf_session *s = open_json(ctx, body);
    for (int k = 0; k < n; k++) {
        char id[16];
        snprintf(id, sizeof(id), "in%d", k);
        if (feeds[k]) feed_ok(s, id, feeds[k]);
    }
    return s;
}

/* The check's error for the block session above (asserting that it fails with `status`). */
static bf_error check_error(bf_context *ctx, const char *type, const char *attrs, int n,
                            const char *const *ports, bf_tensor *const *feeds, bf_status status) {
    bf_session *s = block_session(ctx, type, attrs, n, ports, feeds);
    bf_error e = {0};
    bf_status st = bf_session_check(s, NULL, &e);
    if (st != status)
        ck_abort_msg("%s: check gave %s (%s), want %s", type, bf_status_name(st), e.message,
                     bf_status_name(status));
    bf_session_free(s);
    return e;
}

/* The run's error (the check may pass: shapes known only when running). */
static bf_error run_error(bf_context *ctx, const char *type, const char *attrs, int n,
                          const char *const *ports, bf_tensor *const *feeds, bf_status status) {
    bf_session *s = block_session(ctx, type, attrs, n, ports, feeds);
    bf_error e = {0};
    bf_status st = run_fetch(s, "op", &e);
    if (st != status)
        ck_abort_msg("%s: run gave %s (%s), want %s", type, bf_status_name(st), e.message,
                     bf_status_name(status));
    bf_session_free(s);
    return e;
}

/* ---- dtypes: encoding and decoding written here ------------------------------------------ */

static const bf_dtype all_dtypes[6] = {BF_DTYPE_F16, BF_DTYPE_BF16, BF_DTYPE_F32,
                                       BF_DTYPE_F64, BF_DTYPE_I32,  BF_DTYPE_I64};

static double ulp_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F16: return ldexp(1, -10);
    case BF_DTYPE_BF16: return ldexp(1, -7);
    case BF_DTYPE_F32: return ldexp(1, -23);
    case BF_DTYPE_F64: return ldexp(1, -52);
    default: return 0;
    }
}

static bool is_int(bf_dtype dt) { return dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64; }

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
    double v = exp == 0    ? ldexp(man, -24)
               : exp == 31 ? (man ? NAN : INFINITY)
                           : ldexp(1024 + man, exp - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t enc_bf16(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (!((double)f == v && (u & 0xffffu) == 0)) ck_abort_msg("%g is not a bfloat16", v);
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
    case BF_DTYPE_F16: ((uint16_t *)d)[i] = enc_f16(v); break;
    case BF_DTYPE_BF16: ((uint16_t *)d)[i] = enc_bf16(v); break;
    case BF_DTYPE_F32: ((float *)d)[i] = (float)v; break;
    case BF_DTYPE_F64: ((double *)d)[i] = v; break;
    case BF_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)v; break;
    case BF_DTYPE_I64: ((int64_t *)d)[i] = (int64_t)v; break;
    default: ck_abort_msg("bad dtype");
    }
}

/* A random non-zero value representable in dt: f16/bf16 k/256, ints in +-[1, imax]. */
static double random_value(bf_rng *r, bf_dtype dt, int64_t imax) {
    if (is_int(dt)) {
        int64_t k = bf_rng_int(r, 1, imax);
        return (double)((bf_rng_next(r) & 1) ? k : -k);
    }
    if (dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16) {
        int64_t k = bf_rng_int(r, 26, 256);
        return (double)((bf_rng_next(r) & 1) ? k : -k) / 256;
    }
    double v = bf_rng_nonzero(r);
    return dt == BF_DTYPE_F32 ? (double)(float)v : v;
}

static bf_tensor *new_tensor(bf_dtype dt, int rank, const int64_t *dims) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    return t;
}

/* Random non-zero values (integers up to 1000); ref (numel doubles, may be NULL) gets them. */
static bf_tensor *random_tensor(bf_dtype dt, int rank, const int64_t *dims, bf_rng *r,
                                double *ref) {
    bf_tensor *t = new_tensor(dt, rank, dims);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        double v = random_value(r, dt, 1000);
        set_elem(t, i, v);
        if (ref) ref[i] = v;
    }
    return t;
}

/* A tensor holding the given values. */
static bf_tensor *values_tensor(bf_dtype dt, int rank, const int64_t *dims, const double *v) {
    bf_tensor *t = new_tensor(dt, rank, dims);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) set_elem(t, i, v[i]);
    return t;
}

/* An int32 (or int64) vector of n values; n < 0: a scalar of v[0]. */
static bf_tensor *ints(bf_dtype dt, int n, const int64_t *v) {
    int64_t d[1] = {n};
    bf_tensor *t = new_tensor(dt, n < 0 ? 0 : 1, d);
    for (int i = 0; i < (n < 0 ? 1 : n); i++) set_elem(t, i, (double)v[i]);
    return t;
}
#define I32V(...)                                                                                  \
    ints(BF_DTYPE_I32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                  \
         (int64_t[]){__VA_ARGS__})
#define I32S(x) ints(BF_DTYPE_I32, -1, (int64_t[]){x})

static void expect_shape(const bf_tensor *t, bf_dtype dt, int rank, const int64_t *dims) {
    ck_assert_msg(bf_tensor_dtype(t) == dt, "dtype %s, want %s", bf_dtype_name(bf_tensor_dtype(t)),
                  bf_dtype_name(dt));
    ck_assert_int_eq(bf_tensor_rank(t), rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(bf_tensor_dims(t)[i] == dims[i], "dim %d is %lld, want %lld", i,
                      (long long)bf_tensor_dims(t)[i], (long long)dims[i]);
}

/* |got[i] - ref[i]| <= atol[i] (or atol0 when atol is NULL) + rtol * |ref[i]|; NaN == NaN. */
static void expect_close(const bf_tensor *t, const double *ref, int64_t n, double rtol,
                         const double *atol, double atol0, const char *what) {
    ck_assert_int_eq(bf_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = elem(t, i), tol = (atol ? atol[i] : atol0) + rtol * fabs(ref[i]);
        if (isnan(ref[i]) && isnan(got)) continue;
        if (got == ref[i]) continue; /* infinities */
        if (!(fabs(got - ref[i]) <= tol))
            ck_abort_msg("%s (%s): element %ld is %.17g, want %.17g (tol %g)", what,
                         bf_dtype_name(bf_tensor_dtype(t)), (long)i, got, ref[i], tol);
    }
}

static void expect_exact(const bf_tensor *t, const double *ref, int64_t n, const char *what) {
    expect_close(t, ref, n, 0, NULL, 0, what);
}

static void free_all(bf_tensor **t, int n) {
    for (int k = 0; k < n; k++) bf_tensor_free(t[k]);
}

/* Row-major strides. */
static void strides_of(int rank, const int64_t *dims, int64_t *st) {
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) st[k] = s, s *= dims[k];
}

/* ---- MatMul ------------------------------------------------------------------------------ */

static const char *const mm_ports[2] = {"a", "b"};

typedef struct mm_case {
    int64_t m, k, n;
} mm_case;
static const mm_case mm_cases[] = {{1, 1, 1},    {7, 13, 5}, {128, 1152, 10}, {128, 10, 1152},
                                   {33, 65, 17}, {3, 0, 4},  {0, 3, 4}};
enum { MM_CASES = sizeof(mm_cases) / sizeof(mm_cases[0]) };

/* Loop index: dtype (6) x transposes (4) x case. The big cases run in float32/float64 only. */
START_TEST(matmul_matches_reference) {
    bf_dtype dt = all_dtypes[_i % 6];
    int tr = (_i / 6) % 4;
    const mm_case *c = &mm_cases[_i / 24];
    bool ta = tr & 1, tb = tr & 2;
    if (c->m * c->k * c->n > 100000 && dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64) return;
    bf_rng r = {1000 + (uint64_t)_i};
    int64_t ad[2] = {ta ? c->k : c->m, ta ? c->m : c->k},
            bd[2] = {tb ? c->n : c->k, tb ? c->k : c->n};
    double *ar = malloc(sizeof(double) * (size_t)(c->m * c->k + 1));
    double *br = malloc(sizeof(double) * (size_t)(c->k * c->n + 1));
    double *want = malloc(sizeof(double) * (size_t)(c->m * c->n + 1));
    double *atol = malloc(sizeof(double) * (size_t)(c->m * c->n + 1));
    bf_tensor *in[2] = {random_tensor(dt, 2, ad, &r, ar), random_tensor(dt, 2, bd, &r, br)};
    double u = dt == BF_DTYPE_F64 ? ldexp(1, -53) : is_int(dt) ? 0 : ldexp(1, -24);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            long double acc = 0, mag = 0;
            for (int64_t t = 0; t < c->k; t++) {
                long double x = ar[ta ? t * c->m + i : i * c->k + t];
                long double y = br[tb ? j * c->k + t : t * c->n + j];
                acc += x * y, mag += fabsl(x * y);
            }
            want[i * c->n + j] = (double)acc;
            atol[i * c->n + j] = (double)(c->k + 2) * u * (double)mag;
        }
    char attrs[96];
    snprintf(attrs, sizeof(attrs), "{\"transpose_a\":%s,\"transpose_b\":%s}", ta ? "true" : "false",
             tb ? "true" : "false");
    bf_context *ctx = new_ctx(2);
    bf_session *s = block_session(ctx, "MatMul", attrs, 2, mm_ports, in);
    const bf_tensor *p = run_ok(s, "op");
    int64_t pd[2] = {c->m, c->n};
    expect_shape(p, dt, 2, pd);
    expect_close(p, want, c->m * c->n, ulp_of(dt), atol, 0, "MatMul");
    bf_session_free(s);
    bf_context_free(ctx);
    free_all(in, 2);
    free(ar), free(br), free(want), free(atol);
}
END_TEST

/* Hand-checked: the synopsis' example, so that the reference's orientation is checked too. */
START_TEST(matmul_example) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_json(
        ctx, "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2,3],[4,5,6]]}},"
             "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,0],[0,1],[1,1]]}},"
             "{\"id\":\"p\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"}},"
             "{\"id\":\"q\",\"type\":\"MatMul\",\"attrs\":{\"transpose_a\":true,"
             "\"transpose_b\":true},\"inputs\":{\"a\":\"b\",\"b\":\"a\"}}]}");
    const double want[4] = {4, 5, 10, 11}, want_t[4] = {4, 10, 5, 11};
    const int64_t d22[2] = {2, 2};
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "p", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.rank, 2);
    ck_assert_int_eq(ps.dims[0], 2);
    ck_assert_int_eq(ps.dims[1], 2);
    const bf_tensor *p = run_ok(s, "p");
    expect_shape(p, BF_DTYPE_F32, 2, d22);
    expect_exact(p, want, 4, "MatMul example");
    expect_exact(run_ok(s, "q"), want_t, 4, "MatMul example, both transposed");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(matmul_errors) {
    bf_context *ctx = new_ctx(1);
    const int64_t d23[2] = {2, 3}, d45[2] = {4, 5}, d3[1] = {3}, d234[3] = {2, 3, 4};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d23), new_tensor(BF_DTYPE_F32, 2, d45)};
    bf_error e = check_error(ctx, "MatMul", NULL, 2, mm_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "b", "", "/blocks/2/inputs/b",
                 "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]");
    /* transpose_a makes a [3,2] of a: still incompatible; transpose_b of [5,4]... */
    e = check_error(ctx, "MatMul", "{\"transpose_a\":true}", 2, mm_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "b", "", NULL,
                 "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]");
    bf_tensor_free(in[1]);
    in[1] = new_tensor(BF_DTYPE_F32, 1, d3);
    e = check_error(ctx, "MatMul", NULL, 2, mm_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "b", "", NULL,
                 "In[0] and In[1] has different ndims: [2,3] vs. [3]");
    bf_tensor_free(in[0]), bf_tensor_free(in[1]);
    in[0] = new_tensor(BF_DTYPE_F32, 3, d234), in[1] = new_tensor(BF_DTYPE_F32, 3, d234);
    e = check_error(ctx, "MatMul", NULL, 2, mm_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "a", "", NULL,
                 "In[0] and In[1] ndims must be == 2: 3");
    bf_tensor_free(in[1]);
    in[1] = new_tensor(BF_DTYPE_F64, 3, d234);
    e = check_error(ctx, "MatMul", NULL, 2, mm_ports, in, BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "op", "b", "", NULL,
                 "Input 'b' of 'MatMul' Op has type float64 that does not match type float32");
    free_all(in, 2);
    /* int32: a product beyond int32 is an error, not a wrapped value */
    const int64_t d11[2] = {1, 1};
    const double big = 65536;
    in[0] = values_tensor(BF_DTYPE_I32, 2, d11, &big),
    in[1] = values_tensor(BF_DTYPE_I32, 2, d11, &big);
    e = run_error(ctx, "MatMul", NULL, 2, mm_ports, in, BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "op", "product", "", NULL, "overflows int32");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- BiasAdd and BiasAddGrad ---------------------------------------------------------------- */

static const char *const bias_ports[2] = {"value", "bias"};

typedef struct bias_case {
    bool nchw;
    int rank;
    int64_t dims[5];
} bias_case;
static const bias_case bias_cases[] = {
    {false, 2, {6, 5}},          {false, 3, {2, 3, 4}},      {false, 4, {2, 3, 4, 5}},
    {false, 5, {2, 1, 3, 2, 3}}, {true, 2, {6, 5}},          {true, 3, {2, 3, 4}},
    {true, 4, {2, 3, 4, 5}},     {true, 5, {2, 3, 2, 1, 3}}, {false, 2, {70000, 3}},
    {true, 4, {3, 2, 150, 100}},
};
enum { BIAS_CASES = sizeof(bias_cases) / sizeof(bias_cases[0]) };

/* Loop: dtype (6) x case. */
START_TEST(bias_add_matches_reference) {
    bf_dtype dt = all_dtypes[_i % 6];
    const bias_case *c = &bias_cases[_i / 6];
    bf_rng r = {2000 + (uint64_t)_i};
    int cdim = c->nchw ? 1 : c->rank - 1;
    int64_t n = 1, ch = c->dims[cdim], st[5];
    for (int k = 0; k < c->rank; k++) n *= c->dims[k];
    strides_of(c->rank, c->dims, st);
    double *xr = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    double br[16];
    bf_tensor *in[2] = {random_tensor(dt, c->rank, c->dims, &r, xr),
                        random_tensor(dt, 1, &ch, &r, br)};
    for (int64_t i = 0; i < n; i++) want[i] = xr[i] + br[(i / st[cdim]) % ch];
    bf_context *ctx = new_ctx(2);
    bf_session *s = block_session(ctx, "BiasAdd", c->nchw ? "{\"data_format\":\"NCHW\"}" : NULL, 2,
                                  bias_ports, in);
    const bf_tensor *y = run_ok(s, "op");
    expect_shape(y, dt, c->rank, c->dims);
    expect_close(y, want, n, ulp_of(dt), NULL, 0, "BiasAdd");
    bf_session_free(s);

    /* BiasAddGrad of the same tensor: the sum over every dim but the channel dim */
    long double acc[16] = {0}, mag[16] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (i / st[cdim]) % ch;
        acc[k] += xr[i], mag[k] += fabs(xr[i]);
    }
    double gw[16], ga[16];
    for (int k = 0; k < ch; k++)
        gw[k] = (double)acc[k], ga[k] = is_int(dt) ? 0
                                                   : (dt == BF_DTYPE_F64 ? 4 : (double)(n / ch)) *
                                                         ldexp(1, -53) * (double)mag[k];
    const char *gp[1] = {"out_backprop"};
    s = block_session(ctx, "BiasAddGrad", c->nchw ? "{\"data_format\":\"NCHW\"}" : NULL, 1, gp, in);
    const bf_tensor *g = run_ok(s, "op");
    expect_shape(g, dt, 1, &ch);
    expect_close(g, gw, ch, ulp_of(dt), ga, 0, "BiasAddGrad");
    bf_session_free(s);
    bf_context_free(ctx);
    free_all(in, 2);
    free(xr), free(want);
}
END_TEST

START_TEST(bias_add_errors) {
    bf_context *ctx = new_ctx(1);
    const int64_t d24[2] = {2, 4}, d3[1] = {3}, d23[2] = {2, 3}, d2345[4] = {2, 3, 4, 5};
    const int64_t d4[1] = {4}, d6[6] = {1, 1, 1, 1, 1, 4};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d24), new_tensor(BF_DTYPE_F32, 1, d3)};
    bf_error e = check_error(ctx, "BiasAdd", NULL, 2, bias_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "bias", "", "/blocks/2/inputs/bias",
                 "Must provide as many biases as the last dimension of the input tensor: [3] "
                 "vs. [2,4]");
    bf_tensor_free(in[1]);
    in[1] = new_tensor(BF_DTYPE_F32, 2, d23);
    e = check_error(ctx, "BiasAdd", NULL, 2, bias_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "bias", "", NULL, "Biases must be 1D: [2,3]");
    bf_tensor_free(in[0]), bf_tensor_free(in[1]);
    in[0] = new_tensor(BF_DTYPE_F32, 1, d3), in[1] = new_tensor(BF_DTYPE_F32, 1, d3);
    e = check_error(ctx, "BiasAdd", NULL, 2, bias_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "value", "", NULL,
                 "Input tensor must be at least 2D: [3]");
    const char *gp[1] = {"out_backprop"};
    e = check_error(ctx, "BiasAddGrad", NULL, 1, gp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "out_backprop", "", NULL,
                 "Input tensor must be at least 2D: [3]");
    bf_tensor_free(in[0]), bf_tensor_free(in[1]);
    /* NCHW: the channel dim is 1, so [2,3,4,5] takes 3 biases, not 5 */
    in[0] = new_tensor(BF_DTYPE_F32, 4, d2345), in[1] = new_tensor(BF_DTYPE_F32, 1, d4);
    e = check_error(ctx, "BiasAdd", "{\"data_format\":\"NCHW\"}", 2, bias_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "bias", "", NULL, "[4] vs. [2,3,4,5]");
    bf_tensor_free(in[0]);
    in[0] = new_tensor(BF_DTYPE_F32, 6, d6);
    e = check_error(ctx, "BiasAdd", NULL, 2, bias_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "value", "", NULL,
                 "Only ranks up to 5 supported: [1,1,1,1,1,4]");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- Reshape, ExpandDims, Squeeze, Shape ---------------------------------------------------- */

static const char *const reshape_ports[2] = {"tensor", "shape"};

START_TEST(reshape_cases) {
    bf_context *ctx = new_ctx(1);
    bf_rng r = {3000};
    const int64_t d234[3] = {2, 3, 4};
    for (int k = 0; k < 6; k++) {
        bf_dtype dt = all_dtypes[k];
        double xr[24];
        bf_tensor *in[2] = {random_tensor(dt, 3, d234, &r, xr), NULL};
        static const int64_t shapes[4][3] = {{4, -1, 2}, {-1, 0, 0}, {24, 0, 0}, {6, 4, 0}};
        static const int ranks[4] = {3, 1, 1, 2};
        static const int64_t want_dims[4][3] = {{4, 3, 2}, {24}, {24}, {6, 4}};
        for (int c = 0; c < 4; c++) {
            in[1] = ints(k % 2 ? BF_DTYPE_I64 : BF_DTYPE_I32, ranks[c], shapes[c]);
            bf_session *s = block_session(ctx, "Reshape", NULL, 2, reshape_ports, in);
            bf_port_shape ps; /* known at check time: the shape's value is */
            ck_assert_int_eq(bf_session_port_shape(s, "op", NULL, 1, &ps, NULL), BF_OK);
            ck_assert_int_eq(ps.rank, ranks[c]);
            for (int i = 0; i < ranks[c]; i++) ck_assert_int_eq(ps.dims[i], want_dims[c][i]);
            const bf_tensor *y = run_ok(s, "op");
            expect_shape(y, dt, ranks[c], want_dims[c]);
            expect_exact(y, xr, 24, "Reshape");
            bf_session_free(s);
            bf_tensor_free(in[1]);
        }
        bf_tensor_free(in[0]);
    }
    /* an empty tensor: [0, 3] to [-1, 0]... TF infers the -1 from the non-zero dims */
    const int64_t d03[2] = {0, 3};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d03), I32V(3, -1, 0)};
    bf_session *s = block_session(ctx, "Reshape", NULL, 2, reshape_ports, in);
    const int64_t want[3] = {3, 1, 0};
    expect_shape(run_ok(s, "op"), BF_DTYPE_F32, 3, want);
    bf_session_free(s);
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

START_TEST(reshape_errors) {
    bf_context *ctx = new_ctx(1);
    const int64_t d23[2] = {2, 3}, d7[1] = {7};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d23), I32V(-1, -1)};
    bf_error e = check_error(ctx, "Reshape", NULL, 2, reshape_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "shape", "", "/blocks/2/inputs/shape",
                 "Only one input size may be -1, not both 0 and 1");
    bf_tensor_free(in[1]);
    in[1] = I32V(3, -2);
    e = check_error(ctx, "Reshape", NULL, 2, reshape_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "shape", "", NULL,
                 "Size 1 must be non-negative, not -2");
    bf_tensor_free(in[1]);
    in[1] = I32V(2, 2);
    e = check_error(ctx, "Reshape", NULL, 2, reshape_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "shape", "", NULL,
                 "Input to reshape is a tensor with 6 values, but the requested shape has 4");
    bf_tensor_free(in[0]), bf_tensor_free(in[1]);
    in[0] = new_tensor(BF_DTYPE_F32, 1, d7), in[1] = I32V(2, -1);
    e = check_error(ctx, "Reshape", NULL, 2, reshape_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "shape", "", NULL,
                 "Input to reshape is a tensor with 7 values, but the requested shape "
                 "requires a multiple of 2");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

START_TEST(expand_squeeze_shape) {
    bf_context *ctx = new_ctx(1);
    bf_rng r = {3100};
    const int64_t d23[2] = {2, 3};
    double xr[6];
    const char *ep[2] = {"input", "dim"};
    static const int64_t dims_for[5] = {0, 1, 2, -1, -3};
    static const int64_t want[5][3] = {{1, 2, 3}, {2, 1, 3}, {2, 3, 1}, {2, 3, 1}, {1, 2, 3}};
    for (int c = 0; c < 5; c++) {
        bf_tensor *in[2] = {random_tensor(BF_DTYPE_F64, 2, d23, &r, xr), I32S(dims_for[c])};
        bf_session *s = block_session(ctx, "ExpandDims", NULL, 2, ep, in);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, BF_DTYPE_F64, 3, want[c]);
        expect_exact(y, xr, 6, "ExpandDims");
        bf_session_free(s);
        free_all(in, 2);
    }
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d23), I32S(3)};
    bf_error e = check_error(ctx, "ExpandDims", NULL, 2, ep, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "dim", "", "/blocks/2/inputs/dim",
                 "Tried to expand dim index 3 for tensor with 2 dimensions.");
    bf_tensor_free(in[1]);
    in[1] = I32V(0, 1);
    e = check_error(ctx, "ExpandDims", NULL, 2, ep, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "dim", "", NULL,
                 "'dim' must be a tensor with a single value");
    free_all(in, 2);

    /* Squeeze: every 1, listed dims, errors */
    const int64_t d1213[4] = {1, 2, 1, 3};
    const char *sp[1] = {"input"};
    bf_tensor *x = random_tensor(BF_DTYPE_I32, 4, d1213, &r, xr);
    static const char *const sattrs[3] = {NULL, "{\"squeeze_dims\":[2]}",
                                          "{\"squeeze_dims\":[-4, 2]}"};
    static const int sranks[3] = {2, 3, 2};
    static const int64_t swant[3][3] = {{2, 3}, {1, 2, 3}, {2, 3}};
    for (int c = 0; c < 3; c++) {
        bf_session *s = block_session(ctx, "Squeeze", sattrs[c], 1, sp, &x);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, BF_DTYPE_I32, sranks[c], swant[c]);
        expect_exact(y, xr, 6, "Squeeze");
        bf_session_free(s);
    }
    e = check_error(ctx, "Squeeze", "{\"squeeze_dims\":[1]}", 1, sp, &x, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "input", "squeeze_dims", NULL,
                 "Can not squeeze dim[1], expected a dimension of 1, got 2");
    e = check_error(ctx, "Squeeze", "{\"squeeze_dims\":[4]}", 1, sp, &x, BF_EATTR);
    expect_error(&e, BF_EATTR, "bad_attr", "op", "", "squeeze_dims", NULL,
                 "Tried to squeeze dim index 4 for tensor with 4 dimensions.");

    /* Shape: int32 by default, int64 on request; a scalar's shape is empty */
    bf_session *s = block_session(ctx, "Shape", NULL, 1, sp, &x);
    const bf_tensor *y = run_ok(s, "op");
    const int64_t four = 4;
    const double dw[4] = {1, 2, 1, 3};
    expect_shape(y, BF_DTYPE_I32, 1, &four);
    expect_exact(y, dw, 4, "Shape");
    bf_session_free(s);
    s = block_session(ctx, "Shape", "{\"out_type\":\"int64\"}", 1, sp, &x);
    y = run_ok(s, "op");
    expect_shape(y, BF_DTYPE_I64, 1, &four);
    expect_exact(y, dw, 4, "Shape int64");
    bf_session_free(s);
    bf_tensor_free(x);
    x = new_tensor(BF_DTYPE_F16, 0, NULL);
    s = block_session(ctx, "Shape", NULL, 1, sp, &x);
    const int64_t zero = 0;
    expect_shape(run_ok(s, "op"), BF_DTYPE_I32, 1, &zero);
    bf_session_free(s);
    e = check_error(ctx, "Shape", "{\"out_type\":\"float32\"}", 1, sp, &x, BF_EATTR);
    expect_error(&e, BF_EATTR, "bad_attr", "op", "", "out_type", NULL, "not in the list");
    bf_tensor_free(x);
    bf_context_free(ctx);
}
END_TEST

/* ---- Transpose --------------------------------------------------------------------------- */

static const char *const transpose_ports[2] = {"x", "perm"};

/* Loop: dtype (6) x case; random permutations of shapes with 1s and tiles' edges. */
START_TEST(transpose_matches_reference) {
    bf_dtype dt = all_dtypes[_i % 6];
    static const int ranks[] = {1, 2, 2, 3, 4, 5, 3, 4};
    static const int64_t shapes[][5] = {{7},         {37, 45},       {1, 9},
                                        {3, 1, 40},  {2, 33, 5, 34}, {2, 3, 1, 4, 5},
                                        {65, 2, 70}, {2, 1, 1, 3}};
    int c = _i / 6, rank = ranks[c];
    const int64_t *dims = shapes[c];
    bf_rng r = {4000 + (uint64_t)_i};
    int64_t n = 1, ist[5], ost[5], od[5];
    for (int k = 0; k < rank; k++) n *= dims[k];
    double *xr = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    bf_tensor *in[2] = {random_tensor(dt, rank, dims, &r, xr), NULL};
    for (int trial = 0; trial < 3; trial++) {
        int64_t perm[5] = {0, 0, 0, 0, 0};
        for (int k = 0; k < rank; k++) perm[k] = k;
        for (int k = rank - 1; k > 0; k--) { /* Fisher-Yates */
            int j = (int)bf_rng_int(&r, 0, k);
            int64_t t = perm[k];
            perm[k] = perm[j], perm[j] = t;
        }
        if (trial == 2) perm[0] -= rank; /* a negative entry counts from the end */
        for (int k = 0; k < rank; k++) od[k] = dims[(perm[k] + rank) % rank];
        strides_of(rank, dims, ist);
        strides_of(rank, od, ost);
        for (int64_t o = 0; o < n; o++) {
            int64_t src = 0;
            for (int k = 0; k < rank; k++)
                src += (o / ost[k]) % od[k] * ist[(perm[k] + rank) % rank];
            want[o] = xr[src];
        }
        in[1] = ints(BF_DTYPE_I32, rank, perm);
        bf_context *ctx = new_ctx(2);
        bf_session *s = block_session(ctx, "Transpose", NULL, 2, transpose_ports, in);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, dt, rank, od);
        expect_exact(y, want, n, "Transpose");
        bf_session_free(s);
        bf_context_free(ctx);
        bf_tensor_free(in[1]);
    }
    bf_tensor_free(in[0]);
    free(xr), free(want);
}
END_TEST

START_TEST(transpose_errors) {
    bf_context *ctx = new_ctx(1);
    const int64_t d234[3] = {2, 3, 4};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 3, d234), I32V(0, 1)};
    bf_error e = check_error(ctx, "Transpose", NULL, 2, transpose_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "perm", "", "/blocks/2/inputs/perm",
                 "transpose expects a vector of size 3. But input(1) is a vector of size 2");
    bf_tensor_free(in[1]);
    in[1] = I32V(0, 5, 1);
    e = check_error(ctx, "Transpose", NULL, 2, transpose_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "perm", "", NULL, "5 is out of range [0 .. 3)");
    bf_tensor_free(in[1]);
    in[1] = I32V(0, 0, 2);
    e = check_error(ctx, "Transpose", NULL, 2, transpose_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "perm", "", NULL, "1 is missing from {0,0,2}.");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- Cast ---------------------------------------------------------------------------------- */

START_TEST(cast_cases) {
    bf_context *ctx = new_ctx(1);
    const char *cp[1] = {"x"};
    const int64_t d4[1] = {4};
    /* float -> int truncates toward zero */
    const double fv[4] = {1.75, -1.75, 2.5, -0.5}, iw[4] = {1, -1, 2, 0};
    bf_tensor *x = values_tensor(BF_DTYPE_F32, 1, d4, fv);
    for (int k = 4; k < 6; k++) {
        char attrs[64];
        snprintf(attrs, sizeof(attrs), "{\"DstT\":\"%s\"}", bf_dtype_name(all_dtypes[k]));
        bf_session *s = block_session(ctx, "Cast", attrs, 1, cp, &x);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, all_dtypes[k], 1, d4);
        expect_exact(y, iw, 4, "Cast to int");
        bf_session_free(s);
    }
    bf_tensor_free(x);
    /* every pair of dtypes on values every dtype holds exactly: the values unchanged */
    const double exact[4] = {1, -2, 96, -0.5};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            double v[4];
            for (int i = 0; i < 4; i++) v[i] = is_int(all_dtypes[a]) ? trunc(exact[i]) : exact[i];
            double w[4];
            for (int i = 0; i < 4; i++) w[i] = is_int(all_dtypes[b]) ? trunc(v[i]) : v[i];
            x = values_tensor(all_dtypes[a], 1, d4, v);
            char attrs[96];
            snprintf(attrs, sizeof(attrs), "{\"SrcT\":\"%s\",\"DstT\":\"%s\"}",
                     bf_dtype_name(all_dtypes[a]), bf_dtype_name(all_dtypes[b]));
            bf_session *s = block_session(ctx, "Cast", attrs, 1, cp, &x);
            expect_exact(run_ok(s, "op"), w, 4, "Cast");
            bf_session_free(s);
            bf_tensor_free(x);
        }
    /* float64 -> float32 rounds to nearest even; with Truncate toward zero */
    const double third[2] = {1.0 / 3, -2.0 / 3};
    const int64_t d2[1] = {2};
    x = values_tensor(BF_DTYPE_F64, 1, d2, third);
    bf_session *s = block_session(ctx, "Cast", "{\"DstT\":\"float32\"}", 1, cp, &x);
    const double rn[2] = {(float)(1.0 / 3), (float)(-2.0 / 3)};
    expect_exact(run_ok(s, "op"), rn, 2, "Cast f64->f32");
    bf_session_free(s);
    s = block_session(ctx, "Cast", "{\"DstT\":\"float32\",\"Truncate\":true}", 1, cp, &x);
    const bf_tensor *y = run_ok(s, "op");
    for (int i = 0; i < 2; i++) {
        double g = elem(y, i);
        ck_assert_msg(fabs(g) <= fabs(third[i]) && fabs(third[i]) - fabs(g) < ldexp(1, -24),
                      "Truncate: %.17g from %.17g", g, third[i]);
    }
    ck_assert(elem(y, 0) != rn[0] || elem(y, 1) != rn[1]); /* 1/3 rounds up in float32 */
    bf_session_free(s);
    s = block_session(ctx, "Cast", "{\"DstT\":\"bfloat16\",\"Truncate\":true}", 1, cp, &x);
    y = run_ok(s, "op");
    ck_assert_double_eq(elem(y, 0), 0.33203125); /* 0x3EAA: toward zero */
    ck_assert_double_eq(elem(y, 1), -0.6640625); /* 0xBF2A */
    bf_session_free(s);
    bf_tensor_free(x);
    /* errors: SrcT not x's dtype, no DstT, NaN to int */
    x = values_tensor(BF_DTYPE_F32, 1, d4, fv);
    bf_error e =
        check_error(ctx, "Cast", "{\"SrcT\":\"float64\",\"DstT\":\"int32\"}", 1, cp, &x, BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "op", "x", "SrcT", NULL,
                 "Input 'x' of 'Cast' Op has type float32 that does not match type float64");
    bf_tensor_free(x);
    const double nan4[4] = {1, NAN, 2, 3};
    x = new_tensor(BF_DTYPE_F32, 1, d4);
    for (int i = 0; i < 4; i++) ((float *)bf_tensor_data(x))[i] = (float)nan4[i];
    e = run_error(ctx, "Cast", "{\"DstT\":\"int32\"}", 1, cp, &x, BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "op", "x", "DstT", NULL, "int32");
    bf_tensor_free(x);
    bf_context_free(ctx);
}
END_TEST

/* ---- OneHot, ArgMax ------------------------------------------------------------------------ */

START_TEST(one_hot_cases) {
    bf_context *ctx = new_ctx(1);
    const char *op[4] = {"indices", "depth", "on_value", "off_value"};
    const int64_t d23[2] = {2, 3};
    const double iv[6] = {0, 2, -1, 3, 1, 1}; /* -1 and 3: outside [0, 3), all off */
    for (int dt = 0; dt < 6; dt++)
        for (int axis = -1; axis <= 2; axis++) {
            bf_tensor *in[4] = {values_tensor(dt % 2 ? BF_DTYPE_I64 : BF_DTYPE_I32, 2, d23, iv),
                                I32S(3), values_tensor(all_dtypes[dt], 0, NULL, (double[]){5}),
                                values_tensor(all_dtypes[dt], 0, NULL, (double[]){-1})};
            char attrs[32];
            snprintf(attrs, sizeof(attrs), "{\"axis\":%d}", axis);
            bf_session *s = block_session(ctx, "OneHot", attrs, 4, op, in);
            int ax = axis < 0 ? 2 : axis;
            int64_t od[3], ost[3];
            for (int k = 0, j = 0; k < 3; k++) od[k] = k == ax ? 3 : d23[j++];
            bf_port_shape ps;
            ck_assert_int_eq(bf_session_port_shape(s, "op", NULL, 1, &ps, NULL), BF_OK);
            for (int k = 0; k < 3; k++) ck_assert_int_eq(ps.dims[k], od[k]);
            strides_of(3, od, ost);
            double want[18];
            for (int64_t o = 0; o < 18; o++) {
                int64_t c[3], ii[2], m = 0;
                for (int k = 0; k < 3; k++) c[k] = (o / ost[k]) % od[k];
                for (int k = 0; k < 3; k++)
                    if (k != ax) ii[m++] = c[k];
                want[o] = iv[ii[0] * 3 + ii[1]] == (double)c[ax] ? 5 : -1;
            }
            const bf_tensor *y = run_ok(s, "op");
            expect_shape(y, all_dtypes[dt], 3, od);
            expect_exact(y, want, 18, "OneHot");
            bf_session_free(s);
            free_all(in, 4);
        }
    bf_tensor *in[4] = {values_tensor(BF_DTYPE_I32, 2, d23, iv), I32S(3),
                        values_tensor(BF_DTYPE_F32, 0, NULL, (double[]){1}),
                        values_tensor(BF_DTYPE_F32, 0, NULL, (double[]){0})};
    bf_error e = check_error(ctx, "OneHot", "{\"axis\":5}", 4, op, in, BF_EATTR);
    expect_error(&e, BF_EATTR, "bad_attr", "op", "", "axis", "/blocks/4/attrs/axis",
                 "Expected axis to be -1 or between [0, 3).  But received: 5");
    bf_tensor_free(in[1]);
    in[1] = I32S(-2);
    e = check_error(ctx, "OneHot", NULL, 4, op, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "depth", "", NULL,
                 "depth must be non-negative, got: -2");
    bf_tensor_free(in[1]);
    in[1] = I32V(3, 3);
    e = check_error(ctx, "OneHot", NULL, 4, op, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "depth", "", NULL,
                 "depth must be a scalar, but got: [2]");
    free_all(in, 4);
    bf_context_free(ctx);
}
END_TEST

START_TEST(arg_max_cases) {
    bf_context *ctx = new_ctx(2);
    const char *ap[2] = {"input", "dimension"};
    bf_rng r = {5000};
    const int64_t d345[3] = {3, 4, 5};
    for (int dt = 0; dt < 6; dt++) {
        double xr[60];
        bf_tensor *in[2] = {random_tensor(all_dtypes[dt], 3, d345, &r, xr), NULL};
        xr[7] = xr[2]; /* a tie along axis 1 (stride 5): the first index wins */
        set_elem(in[0], 7, xr[7]);
        for (int dim = -3; dim < 3; dim++) {
            int ax = dim < 0 ? dim + 3 : dim;
            in[1] = I32S(dim);
            bf_session *s = block_session(ctx, "ArgMax",
                                          dt % 2 ? "{\"output_type\":\"int32\"}" : NULL, 2, ap, in);
            int64_t od[2], st[3], n = 1;
            for (int k = 0, j = 0; k < 3; k++)
                if (k != ax) od[j++] = d345[k], n *= d345[k];
            strides_of(3, d345, st);
            double want[20];
            for (int64_t o = 0; o < n; o++) {
                int64_t outer = o / (st[ax]), inner = o % st[ax];
                int64_t base = outer * d345[ax] * st[ax] + inner, best = 0;
                for (int64_t k = 1; k < d345[ax]; k++)
                    if (xr[base + k * st[ax]] > xr[base + best * st[ax]]) best = k;
                want[o] = (double)best;
            }
            const bf_tensor *y = run_ok(s, "op");
            expect_shape(y, dt % 2 ? BF_DTYPE_I32 : BF_DTYPE_I64, 2, od);
            expect_exact(y, want, n, "ArgMax");
            bf_session_free(s);
            bf_tensor_free(in[1]);
        }
        bf_tensor_free(in[0]);
    }
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 3, d345), I32S(3)};
    bf_error e = check_error(ctx, "ArgMax", NULL, 2, ap, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "dimension", "", "/blocks/2/inputs/dimension",
                 "Expected dimension in the range [-3, 3), but got 3");
    bf_tensor_free(in[1]);
    in[1] = I32V(0, 1);
    e = check_error(ctx, "ArgMax", NULL, 2, ap, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "dimension", "", NULL,
                 "dim must be a scalar, but received tensor of shape: [2]");
    free_all(in, 2);
    const int64_t d20[2] = {2, 0};
    in[0] = new_tensor(BF_DTYPE_F32, 2, d20), in[1] = I32S(1);
    e = check_error(ctx, "ArgMax", NULL, 2, ap, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "input", "", NULL,
                 "Reduction axis 1 is empty in shape [2,0]");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- Fill, ZerosLike, OnesLike, BroadcastTo, Tile -----------------------------------------------
 */

START_TEST(fill_and_likes) {
    bf_context *ctx = new_ctx(1);
    const char *fp[2] = {"dims", "value"}, *lp[1] = {"x"};
    bf_rng r = {6000};
    const int64_t d234[3] = {2, 3, 4};
    for (int dt = 0; dt < 6; dt++) {
        double v = random_value(&r, all_dtypes[dt], 1000), want[24], zeros[24], ones[24];
        for (int i = 0; i < 24; i++) want[i] = v, zeros[i] = 0, ones[i] = 1;
        bf_tensor *in[2] = {I32V(2, 3, 4), values_tensor(all_dtypes[dt], 0, NULL, &v)};
        bf_session *s = block_session(ctx, "Fill", NULL, 2, fp, in);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, all_dtypes[dt], 3, d234);
        expect_exact(y, want, 24, "Fill");
        bf_session_free(s);
        bf_tensor *x = random_tensor(all_dtypes[dt], 3, d234, &r, NULL);
        s = block_session(ctx, "ZerosLike", NULL, 1, lp, &x);
        y = run_ok(s, "op");
        expect_shape(y, all_dtypes[dt], 3, d234);
        expect_exact(y, zeros, 24, "ZerosLike");
        bf_session_free(s);
        s = block_session(ctx, "OnesLike", NULL, 1, lp, &x);
        y = run_ok(s, "op");
        expect_shape(y, all_dtypes[dt], 3, d234);
        expect_exact(y, ones, 24, "OnesLike");
        bf_session_free(s);
        bf_tensor_free(x);
        free_all(in, 2);
    }
    bf_tensor *in[2] = {I32V(2, -1), values_tensor(BF_DTYPE_F32, 0, NULL, (double[]){1})};
    bf_error e = check_error(ctx, "Fill", NULL, 2, fp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "dims", "", "/blocks/2/inputs/dims",
                 "Dimension -1 must be >= 0");
    bf_tensor_free(in[1]);
    in[1] = values_tensor(BF_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1, 2});
    e = check_error(ctx, "Fill", NULL, 2, fp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "value", "", NULL,
                 "value must be a scalar, got shape [2]");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* BroadcastTo and Tile against the index formula src coordinate = out coordinate mod in dim. */
static void tile_reference(int rank, const int64_t *in_dims, const int64_t *out_dims,
                           const double *x, double *want) {
    int64_t ist[8], ost[8], n = 1;
    for (int k = 0; k < rank; k++) n *= out_dims[k];
    strides_of(rank, in_dims, ist);
    strides_of(rank, out_dims, ost);
    for (int64_t o = 0; o < n; o++) {
        int64_t src = 0;
        for (int k = 0; k < rank; k++) src += ((o / ost[k]) % out_dims[k]) % in_dims[k] * ist[k];
        want[o] = x[src];
    }
}

START_TEST(broadcast_to_and_tile) {
    bf_context *ctx = new_ctx(2);
    bf_rng r = {7000};
    const char *bp[2] = {"input", "shape"}, *tp[2] = {"input", "multiples"};
    typedef struct {
        int in_rank, out_rank;
        int64_t in[4], out[4];
    } bc;
    static const bc bcs[] = {{1, 2, {3}, {2, 3}},    {2, 2, {2, 1}, {2, 300}},
                             {0, 3, {0}, {2, 2, 2}}, {3, 4, {4, 1, 3}, {2, 4, 5, 3}},
                             {2, 2, {2, 3}, {2, 3}}, {2, 3, {1, 1}, {3, 0, 2}}};
    for (int dt = 0; dt < 6; dt++)
        for (size_t c = 0; c < sizeof(bcs) / sizeof(bcs[0]); c++) {
            const bc *b = &bcs[c];
            double xr[64], want[2048];
            int64_t aligned[4], n = 1;
            for (int k = 0; k < b->out_rank; k++) {
                int lead = b->out_rank - b->in_rank;
                aligned[k] = k < lead ? 1 : b->in[k - lead];
                n *= b->out[k];
            }
            bf_tensor *in[2] = {random_tensor(all_dtypes[dt], b->in_rank, b->in, &r, xr),
                                ints(BF_DTYPE_I64, b->out_rank, b->out)};
            tile_reference(b->out_rank, aligned, b->out, xr, want);
            bf_session *s = block_session(ctx, "BroadcastTo", NULL, 2, bp, in);
            const bf_tensor *y = run_ok(s, "op");
            expect_shape(y, all_dtypes[dt], b->out_rank, b->out);
            expect_exact(y, want, n, "BroadcastTo");
            bf_session_free(s);
            free_all(in, 2);
        }
    const int64_t d2x3[2] = {2, 3}, d33[2] = {3, 3}, d31[2] = {3, 1};
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d2x3), ints(BF_DTYPE_I32, 2, d33)};
    bf_error e = check_error(ctx, "BroadcastTo", NULL, 2, bp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "shape", "", "/blocks/2/inputs/shape",
                 "Incompatible shapes: [2,3] vs. [3,3]");
    free_all(in, 2);
    in[0] = new_tensor(BF_DTYPE_F32, 2, d31), in[1] = I32V(1, 3);
    e = check_error(ctx, "BroadcastTo", NULL, 2, bp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "shape", "", NULL,
                 "Unable to broadcast tensor of shape [3,1] to tensor of shape [1,3]");
    bf_tensor_free(in[1]);
    in[1] = I32V(3);
    e = check_error(ctx, "BroadcastTo", NULL, 2, bp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "shape", "", NULL,
                 "Rank of input (2) must be no greater than rank of output shape (1).");
    free_all(in, 2);

    /* Tile */
    static const int64_t tin[3] = {2, 3, 4}, tmul[3][3] = {{1, 2, 1}, {3, 1, 2}, {2, 0, 1}};
    for (int dt = 0; dt < 6; dt++)
        for (int c = 0; c < 3; c++) {
            double xr[24], want[24 * 6];
            int64_t od[3], n = 1;
            for (int k = 0; k < 3; k++) od[k] = tin[k] * tmul[c][k], n *= od[k];
            bf_tensor *ti[2] = {random_tensor(all_dtypes[dt], 3, tin, &r, xr),
                                ints(c % 2 ? BF_DTYPE_I64 : BF_DTYPE_I32, 3, tmul[c])};
            tile_reference(3, tin, od, xr, want);
            bf_session *s = block_session(ctx, "Tile", NULL, 2, tp, ti);
            const bf_tensor *y = run_ok(s, "op");
            expect_shape(y, all_dtypes[dt], 3, od);
            expect_exact(y, want, n, "Tile");
            bf_session_free(s);
            free_all(ti, 2);
        }
    in[0] = new_tensor(BF_DTYPE_F32, 3, tin), in[1] = I32V(1, 2);
    e = check_error(ctx, "Tile", NULL, 2, tp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "op", "multiples", "", NULL,
                 "Expected multiples argument to be a vector of length 3 but got length 2");
    bf_tensor_free(in[1]);
    in[1] = I32V(1, -1, 1);
    e = check_error(ctx, "Tile", NULL, 2, tp, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "multiples", "", NULL,
                 "Expected multiples[1] >= 0, but got -1");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- reductions ---------------------------------------------------------------------------- */

static const char *const red_types[5] = {"Sum", "Mean", "Max", "Min", "Prod"};
static const char *const red_ports[2] = {"input", "reduction_indices"};

/* The float64 reference of a reduction of x (rank, dims) over mask; want/atol per output
 * (every input element accumulated into its output, in long double). Returns the count. */
static int64_t reduce_reference(int kind, bf_dtype dt, int rank, const int64_t *dims,
                                const bool *mask, const double *x, double *want, double *atol) {
    int64_t st[8], n = 1, outs = 1, cnt = 1, kd[8], ks[8];
    int nk = 0;
    strides_of(rank, dims, st);
    for (int k = 0; k < rank; k++) {
        n *= dims[k];
        if (mask[k])
            cnt *= dims[k];
        else
            kd[nk++] = dims[k], outs *= dims[k];
    }
    strides_of(nk, kd, ks);
    long double *s = calloc((size_t)outs + 1, sizeof(long double));
    long double *mag = calloc((size_t)outs + 1, sizeof(long double));
    long double *p = malloc(((size_t)outs + 1) * sizeof(long double));
    for (int64_t o = 0; o < outs; o++) {
        p[o] = 1;
        if (kind == 2)
            want[o] = dt == BF_DTYPE_I32 ? INT32_MIN : is_int(dt) ? (double)INT64_MIN : -INFINITY;
        if (kind == 3)
            want[o] = dt == BF_DTYPE_I32 ? INT32_MAX : is_int(dt) ? (double)INT64_MAX : INFINITY;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t o = 0, m = 0;
        for (int k = 0; k < rank; k++)
            if (!mask[k]) o += (i / st[k]) % dims[k] * ks[m++];
        s[o] += x[i], mag[o] += fabs(x[i]), p[o] *= x[i];
        if (kind == 2) want[o] = fmax(want[o], x[i]);
        if (kind == 3) want[o] = fmin(want[o], x[i]);
    }
    double tiny = is_int(dt) ? 0 : (dt == BF_DTYPE_F64 ? 4 : (double)cnt) * ldexp(1, -53);
    for (int64_t o = 0; o < outs; o++) {
        switch (kind) {
        case 0: want[o] = (double)s[o], atol[o] = tiny * (double)mag[o]; break;
        case 1:
            want[o] = is_int(dt) ? (double)((int64_t)s[o] / cnt) : (double)(s[o] / cnt);
            atol[o] = tiny * (double)mag[o] / (double)cnt;
            break;
        case 4:
            want[o] = (double)p[o], atol[o] = (double)cnt * ldexp(1, -52) * fabs(want[o]);
            break;
        default: atol[o] = 0; break;
        }
    }
    free(s), free(mag), free(p);
    return outs;
}

typedef struct red_case {
    int rank;
    int64_t dims[4];
    int n_axes; /* -1: unconnected */
    int64_t axes[4];
} red_case;
static const red_case red_cases[] = {
    {3, {3, 4, 5}, 1, {1}},
    {3, {3, 4, 5}, 2, {0, 2}},
    {3, {3, 4, 5}, 1, {-1}},
    {3, {3, 4, 5}, 2, {-3, 1}},
    {3, {3, 4, 5}, -1, {0}},
    {3, {3, 4, 5}, 0, {0}},
    {4, {2, 1, 3, 4}, 2, {1, 3}},
    {4, {2, 1, 3, 4}, 2, {0, 2}},
    {3, {3, 4, 5}, 3, {2, 0, 1}},
    {2, {4, 300}, 1, {0}},
    {1, {7}, 1, {0}},
    {0, {0}, -1, {0}},
};
enum { RED_CASES = sizeof(red_cases) / sizeof(red_cases[0]) };

/* Loop: kind (5) x dtype (6) x case, with and without keep_dims. */
START_TEST(reductions_match_reference) {
    int kind = _i % 5;
    bf_dtype dt = all_dtypes[(_i / 5) % 6];
    const red_case *c = &red_cases[_i / 30];
    bf_rng r = {8000 + (uint64_t)_i};
    int64_t n = 1;
    for (int k = 0; k < c->rank; k++) n *= c->dims[k];
    double xr[1200], want[1200], atol[1200];
    bf_tensor *x = new_tensor(dt, c->rank, c->dims);
    for (int64_t i = 0; i < n; i++) {
        /* Prod: +-1 mostly, and some 2 and 1/2 (a few 2s for integers), so that every
           partial product is exact in every dtype and in range */
        double v = random_value(&r, dt, 1000);
        if (kind == 4) {
            int64_t k = bf_rng_int(&r, 0, 7);
            v = (bf_rng_next(&r) & 1 ? 1 : -1) * (is_int(dt) ? (i < 3 ? 2 : 1)
                                                  : k == 0   ? 2
                                                  : k == 1   ? 0.5
                                                             : 1);
        }
        set_elem(x, i, v);
        xr[i] = v;
    }
    bool mask[4] = {false, false, false, false};
    if (c->n_axes < 0)
        for (int k = 0; k < c->rank; k++) mask[k] = true;
    for (int a = 0; a < c->n_axes; a++) mask[(c->axes[a] + c->rank) % c->rank] = true;
    int64_t outs = reduce_reference(kind, dt, c->rank, c->dims, mask, xr, want, atol);
    bf_context *ctx = new_ctx(2);
    for (int keep = 0; keep < 2; keep++) {
        bf_tensor *in[2] = {
            x, c->n_axes < 0 ? NULL
                             : ints((_i & 1) ? BF_DTYPE_I64 : BF_DTYPE_I32, c->n_axes, c->axes)};
        bf_session *s = block_session(ctx, red_types[kind], keep ? "{\"keep_dims\":true}" : NULL, 2,
                                      red_ports, in);
        int64_t od[4];
        int orank = 0;
        for (int k = 0; k < c->rank; k++)
            if (!mask[k])
                od[orank++] = c->dims[k];
            else if (keep)
                od[orank++] = 1;
        bf_port_shape ps; /* known at check time */
        ck_assert_int_eq(bf_session_port_shape(s, "op", NULL, 1, &ps, NULL), BF_OK);
        ck_assert_int_eq(ps.rank, orank);
        for (int k = 0; k < orank; k++) ck_assert_int_eq(ps.dims[k], od[k]);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, dt, orank, od);
        expect_close(y, want, outs, ulp_of(dt), atol, 0, red_types[kind]);
        bf_session_free(s);
        bf_tensor_free(in[1]);
    }
    bf_context_free(ctx);
    bf_tensor_free(x);
}
END_TEST

/* Big reductions take the split paths (few outputs: chunks of the reduced range on several
 * threads, combined in order): the result must not depend on the thread count, bit for bit,
 * and must match the reference. */
START_TEST(reductions_split_deterministic) {
    typedef struct {
        int rank;
        int64_t dims[3];
        int64_t axis;
    } sc;
    static const sc cases[] = {{2, {3, 70000}, 1},
                               {2, {70000, 3}, 0},
                               {2, {1000, 600}, 0},
                               {3, {4, 3000, 37}, 1},
                               {1, {100000}, 0}};
    const sc *c = &cases[_i % 5];
    int kind = _i / 5; /* Sum, Mean, Max */
    bf_dtype dt = kind == 1 ? BF_DTYPE_F64 : BF_DTYPE_F32;
    bf_rng r = {9000 + (uint64_t)_i};
    int64_t n = 1;
    for (int k = 0; k < c->rank; k++) n *= c->dims[k];
    double *xr = malloc(sizeof(double) * (size_t)n);
    bf_tensor *in[2] = {random_tensor(dt, c->rank, c->dims, &r, xr),
                        ints(BF_DTYPE_I32, 1, &c->axis)};
    bool mask[3] = {false, false, false};
    mask[c->axis] = true;
    double *want = malloc(sizeof(double) * 70000), *atol = malloc(sizeof(double) * 70000);
    int64_t outs = reduce_reference(kind, dt, c->rank, c->dims, mask, xr, want, atol);
    bf_tensor *first = NULL;
    for (int threads = 1; threads <= 2; threads++) {
        bf_context *ctx = new_ctx(threads);
        bf_session *s = block_session(ctx, red_types[kind], NULL, 2, red_ports, in);
        const bf_tensor *y = run_ok(s, "op");
        expect_close(y, want, outs, ulp_of(dt), atol, 0, red_types[kind]);
        if (!first)
            bf_tensor_copy(y, &first, NULL);
        else
            ck_assert_int_eq(
                memcmp(bf_tensor_cdata(first), bf_tensor_cdata(y), bf_tensor_nbytes(y)), 0);
        bf_session_free(s);
        bf_context_free(ctx);
    }
    bf_tensor_free(first);
    free_all(in, 2);
    free(xr), free(want), free(atol);
}
END_TEST

/* Empty reductions: TF's identities; Sum keeps the one-input page meaning. */
START_TEST(reductions_empty_and_compat) {
    bf_context *ctx = new_ctx(1);
    const int64_t d03[2] = {0, 3}, three = 3;
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 2, d03), I32V(0)};
    const double ident[5] = {0, NAN, -INFINITY, INFINITY, 1};
    for (int kind = 0; kind < 5; kind++) {
        bf_session *s = block_session(ctx, red_types[kind], NULL, 2, red_ports, in);
        const bf_tensor *y = run_ok(s, "op");
        expect_shape(y, BF_DTYPE_F32, 1, &three);
        double want[3] = {ident[kind], ident[kind], ident[kind]};
        expect_exact(y, want, 3, red_types[kind]);
        bf_session_free(s);
    }
    bf_tensor_free(in[0]);
    in[0] = new_tensor(BF_DTYPE_I32, 2, d03);
    bf_session *s = block_session(ctx, "Max", NULL, 2, red_ports, in);
    double lowest[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    expect_exact(run_ok(s, "op"), lowest, 3, "Max of nothing, int32");
    bf_session_free(s);
    bf_error e = run_error(ctx, "Mean", NULL, 2, red_ports, in, BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "bad_shape", "op", "output", "", NULL, "divides by zero");
    free_all(in, 2);
    /* the former Sum: one input, a scalar out, with a Const's shape known at check time */
    s = open_json(ctx, "{\"id\":\"v\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2],[3,4]]}},"
                       "{\"id\":\"s\",\"type\":\"Sum\",\"inputs\":{\"input\":\"v\"}},"
                       "{\"id\":\"k\",\"type\":\"Sum\",\"attrs\":{\"keep_dims\":true},"
                       "\"inputs\":{\"input\":\"v\"}}]}");
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "s", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.rank, 0);
    const bf_tensor *y = run_ok(s, "s");
    expect_shape(y, BF_DTYPE_F32, 0, NULL);
    ck_assert_double_eq(elem(y, 0), 10);
    const int64_t d11[2] = {1, 1};
    y = run_ok(s, "k");
    expect_shape(y, BF_DTYPE_F32, 2, d11);
    ck_assert_double_eq(elem(y, 0), 10);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Compensation survives the chunks: 1e16, then 69998 ones, then -1e16 sum to 69998 exactly
 * in float64 (a plain double loop loses every one of them: 1e16 + 1 rounds to 1e16), over
 * chunks of the reduced range merged on one thread or two. */
START_TEST(reductions_compensated_across_chunks) {
    const int64_t n = 70000;
    bf_tensor *in[2] = {new_tensor(BF_DTYPE_F64, 1, &n), I32V(0)};
    double *x = bf_tensor_data(in[0]);
    for (int64_t i = 0; i < n; i++) x[i] = 1;
    x[0] = 1e16, x[n - 1] = -1e16;
    for (int threads = 1; threads <= 2; threads++) {
        bf_context *ctx = new_ctx(threads);
        bf_session *s = block_session(ctx, "Sum", NULL, 2, red_ports, in);
        ck_assert_double_eq(elem(run_ok(s, "op"), 0), (double)(n - 2));
        bf_session_free(s);
        bf_context_free(ctx);
    }
    free_all(in, 2);
}
END_TEST

START_TEST(reductions_errors) {
    bf_context *ctx = new_ctx(1);
    const int64_t d345[3] = {3, 4, 5};
    for (int kind = 0; kind < 5; kind++) {
        bf_tensor *in[2] = {new_tensor(BF_DTYPE_F32, 3, d345), I32V(0, 3)};
        bf_error e = check_error(ctx, red_types[kind], NULL, 2, red_ports, in, BF_ESHAPE);
        expect_error(&e, BF_ESHAPE, "bad_shape", "op", "reduction_indices", "",
                     "/blocks/2/inputs/reduction_indices",
                     "Invalid reduction dimension (3 for input with 3 dimension(s)");
        bf_tensor_free(in[1]);
        in[1] = I32V(1, -2);
        e = check_error(ctx, red_types[kind], NULL, 2, red_ports, in, BF_ESHAPE);
        expect_error(&e, BF_ESHAPE, "bad_shape", "op", "reduction_indices", "", NULL,
                     "Invalid reduction arguments: Axes contains duplicate dimension: 1");
        bf_tensor_free(in[1]);
        in[1] = new_tensor(BF_DTYPE_I32, 2, (int64_t[]){1, 2});
        e = check_error(ctx, red_types[kind], NULL, 2, red_ports, in, BF_ESHAPE);
        expect_error(&e, BF_ESHAPE, "bad_shape", "op", "reduction_indices", "", NULL,
                     "Shape must be at most rank 1 but is rank 2");
        free_all(in, 2);
    }
    /* integer Sum beyond int32: an error, not a wrapped value */
    const int64_t d2[1] = {2};
    const double big[2] = {2147483647, 1};
    bf_tensor *in[2] = {values_tensor(BF_DTYPE_I32, 1, d2, big), I32V(0)};
    bf_error e = run_error(ctx, "Sum", NULL, 2, red_ports, in, BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "op", "output", "", NULL, "overflows int32");
    free_all(in, 2);
    bf_context_free(ctx);
}
END_TEST

/* ---- gradients: built by bf_session_build_gradients, checked by finite differences ------ */

/*
 * The page `fwd` (blocks without the closing "]}", float64 Variables among them, and a block
 * "op" with n_out outputs elements) gets loss = Sum(MatMul(Reshape(op, [1, -1]), W)) with W a
 * random Const [n_out, 1], so that dy is not uniform. The gradient of the loss with respect to
 * each Variable vars[k], built by bf_session_build_gradients, must match central differences
 * of the loss computed here in float64: |g - fd| <= 1e-6 * (|fd| + max |fd|).
 */
static void grad_check(const char *fwd, int64_t n_out, int nvars, const char *const *vars,
                       uint64_t seed) {
    bf_rng r = {seed};
    size_t cap = strlen(fwd) + 64 * (size_t)n_out + 1024, len = 0;
    char *body = malloc(cap);
    len += (size_t)snprintf(body + len, cap - len,
                            "%s,{\"id\":\"flat_shape\",\"type\":\"Const\",\"attrs\":{\"dtype\":"
                            "\"int32\",\"value\":[1,-1]}},"
                            "{\"id\":\"flat\",\"type\":\"Reshape\",\"inputs\":{\"tensor\":\"op\","
                            "\"shape\":\"flat_shape\"}},"
                            "{\"id\":\"wt\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\","
                            "\"shape\":[%lld,1],\"value\":[",
                            fwd, (long long)n_out);
    for (int64_t i = 0; i < n_out; i++)
        len += (size_t)snprintf(body + len, cap - len, "%s%.17g", i ? "," : "", bf_rng_nonzero(&r));
    snprintf(body + len, cap - len,
             "]}},{\"id\":\"mm\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"flat\",\"b\":\"wt\"}},"
             "{\"id\":\"loss\",\"type\":\"Sum\",\"inputs\":{\"input\":\"mm\"}}]}");
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_json(ctx, body);
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
        ck_assert_int_eq(bf_tensor_copy(run_ok(s, ref), &g, NULL), BF_OK);
        ck_assert_int_eq(bf_session_read_state(s, vars[v], &x, NULL), BF_OK);
        ck_assert_int_eq(bf_tensor_numel(g), bf_tensor_numel(x));
        double *fd = malloc(sizeof(double) * (size_t)bf_tensor_numel(x)), scale = 0;
        /* float64: a small step; float32 Variables only feed linear blocks here (Cast), where
           a step exact in float32 gives exact differences */
        double rel = bf_tensor_dtype(x) == BF_DTYPE_F64 ? 1e-6 : 0.125;
        for (int64_t i = 0; i < bf_tensor_numel(x); i++) {
            double x0 = elem(x, i), h = rel * fmax(1, fabs(x0)), l[2];
            for (int side = 0; side < 2; side++) {
                set_elem(x, i, x0 + (side ? -h : h));
                ck_assert_int_eq(bf_session_write_state(s, vars[v], x, NULL), BF_OK);
                l[side] = elem(run_ok(s, "loss"), 0);
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

/* A float64 Variable `id` of shape `shape` (JSON) with seeded random normal values. */
#define VAR(id, shape, seed)                                                                       \
    "{\"id\":\"" id "\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"float64\",\"shape\":" shape   \
    ",\"initializer\":\"random_normal\",\"seed\":" #seed "}}"
#define CONST_I32(id, value)                                                                       \
    "{\"id\":\"" id "\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":" value "}}"

static const char *const va[1] = {"va"}, *const vab[2] = {"va", "vb"};

START_TEST(gradient_matmul) {
    static const char *const attrs[4] = {"{}", "{\"transpose_b\":true}", "{\"transpose_a\":true}",
                                         "{\"transpose_a\":true,\"transpose_b\":true}"};
    static const char *const shapes[4][2] = {
        {"[3,4]", "[4,5]"}, {"[3,4]", "[5,4]"}, {"[4,3]", "[4,5]"}, {"[4,3]", "[5,4]"}};
    char page[1024];
    snprintf(page, sizeof(page),
             "{\"id\":\"va\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"float64\",\"shape\":%s,"
             "\"initializer\":\"random_normal\",\"seed\":3}},"
             "{\"id\":\"vb\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"float64\",\"shape\":%s,"
             "\"initializer\":\"random_normal\",\"seed\":4}},"
             "{\"id\":\"op\",\"type\":\"MatMul\",\"attrs\":%s,\"inputs\":{\"a\":\"va\","
             "\"b\":\"vb\"}}",
             shapes[_i][0], shapes[_i][1], attrs[_i]);
    grad_check(page, 15, 2, vab, 100 + (uint64_t)_i);
}
END_TEST

START_TEST(gradient_bias_add) {
    grad_check(VAR("va", "[2,3,4]", 5) "," VAR("vb", "[4]",
                                               6) ",{\"id\":\"op\",\"type\":\"BiasAdd\",\"inputs\":"
                                                  "{\"value\":\"va\",\"bias\":\"vb\"}}",
               24, 2, vab, 200);
    grad_check(VAR("va", "[2,3,4]", 5) "," VAR(
                   "vb", "[3]",
                   6) ",{\"id\":\"op\",\"type\":\"BiasAdd\",\"attrs\":{\"data_format\":\"NCHW\"},"
                      "\"inputs\":{\"value\":\"va\",\"bias\":\"vb\"}}",
               24, 2, vab, 201);
}
END_TEST

START_TEST(gradient_shapes) {
    grad_check(VAR("va", "[2,3,4]",
                   7) "," CONST_I32("sh", "[4,-1]") ",{\"id\":\"op\",\"type\":\"Reshape\","
                                                    "\"inputs\":{\"tensor\":\"va\",\"shape\":"
                                                    "\"sh\"}}",
               24, 1, va, 300);
    grad_check(VAR("va", "[2,3,4]",
                   8) "," CONST_I32("pm", "[2,0,1]") ",{\"id\":\"op\",\"type\":\"Transpose\","
                                                     "\"inputs\":{\"x\":\"va\",\"perm\":\"pm\"}}",
               24, 1, va, 301);
    grad_check(
        VAR("va", "[2,3]", 9) "," CONST_I32(
            "d",
            "1") ",{\"id\":\"op\",\"type\":\"ExpandDims\",\"inputs\":{\"input\":\"va\",\"dim\":"
                 "\"d\"}}",
        6, 1, va, 302);
    grad_check(VAR("va", "[2,1,3]",
                   10) ",{\"id\":\"op\",\"type\":\"Squeeze\",\"inputs\":{\"input\":\"va\"}}",
               6, 1, va, 303);
    grad_check(VAR("va", "[3,1]",
                   11) "," CONST_I32("sh", "[2,3,4]") ",{\"id\":\"op\",\"type\":\"BroadcastTo\","
                                                      "\"inputs\":{\"input\":\"va\",\"shape\":"
                                                      "\"sh\"}}",
               24, 1, va, 304);
    grad_check(
        VAR("va", "[2,3]", 12) "," CONST_I32(
            "m",
            "[2,1]") ",{\"id\":\"op\",\"type\":\"Tile\",\"inputs\":{\"input\":\"va\",\"multiples\":"
                     "\"m\"}}",
        12, 1, va, 305);
    grad_check(VAR("va", "[]",
                   13) "," CONST_I32("d", "[2,3]") ",{\"id\":\"op\",\"type\":\"Fill\",\"inputs\":{"
                                                   "\"dims\":\"d\",\"value\":\"va\"}}",
               6, 1, va, 306);
    /* Cast float32 -> float64: the gradient is cast back (perturbations exact in float32) */
    grad_check("{\"id\":\"va\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2,3],\"value\":"
               "[1,2,3,4,5,6]}},"
               "{\"id\":\"op\",\"type\":\"Cast\",\"attrs\":{\"DstT\":\"float64\"},\"inputs\":{"
               "\"x\":\"va\"}}",
               6, 1, va, 307);
}
END_TEST

START_TEST(gradient_reductions) {
    static const char *const types[2] = {"Sum", "Mean"};
    for (int t = 0; t < 2; t++) {
        char page[1024];
        /* axes [0, 2] with and without keep_dims, a negative axis, none connected */
        snprintf(page, sizeof(page),
                 VAR("va", "[2,3,4]", 14) "," CONST_I32(
                     "ax", "[0,-1]") ",{\"id\":\"op\",\"type\":\"%s\",\"inputs\":{\"input\":\"va\","
                                     "\"reduction_indices\":\"ax\"}}",
                 types[t]);
        grad_check(page, 3, 1, va, 400 + (uint64_t)t);
        snprintf(
            page, sizeof(page),
            VAR("va", "[2,3,4]", 15) "," CONST_I32(
                "ax",
                "1") ",{\"id\":\"op\",\"type\":\"%s\",\"attrs\":{\"keep_dims\":true},\"inputs\":{"
                     "\"input\":\"va\",\"reduction_indices\":\"ax\"}}",
            types[t]);
        grad_check(page, 8, 1, va, 410 + (uint64_t)t);
        snprintf(page, sizeof(page),
                 VAR("va", "[2,3]", 16) ",{\"id\":\"op\",\"type\":\"%s\",\"inputs\":{"
                                        "\"input\":\"va\"}}",
                 types[t]);
        grad_check(page, 1, 1, va, 420 + (uint64_t)t);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("array_ops");
    TCase *tc = tcase_create("matmul");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, matmul_matches_reference, 0, 24 * MM_CASES);
    tcase_add_test(tc, matmul_example);
    tcase_add_test(tc, matmul_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("bias");
    tcase_add_loop_test(tc, bias_add_matches_reference, 0, 6 * BIAS_CASES);
    tcase_add_test(tc, bias_add_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("shapes");
    tcase_add_test(tc, reshape_cases);
    tcase_add_test(tc, reshape_errors);
    tcase_add_test(tc, expand_squeeze_shape);
    tcase_add_loop_test(tc, transpose_matches_reference, 0, 6 * 8);
    tcase_add_test(tc, transpose_errors);
    tcase_add_test(tc, fill_and_likes);
    tcase_add_test(tc, broadcast_to_and_tile);
    suite_add_tcase(s, tc);

    tc = tcase_create("values");
    tcase_add_test(tc, cast_cases);
    tcase_add_test(tc, one_hot_cases);
    tcase_add_test(tc, arg_max_cases);
    suite_add_tcase(s, tc);

    tc = tcase_create("reductions");
    tcase_add_loop_test(tc, reductions_match_reference, 0, 30 * RED_CASES);
    tcase_add_loop_test(tc, reductions_split_deterministic, 0, 15);
    tcase_add_test(tc, reductions_empty_and_compat);
    tcase_add_test(tc, reductions_compensated_across_chunks);
    tcase_add_test(tc, reductions_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("gradients");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, gradient_matmul, 0, 4);
    tcase_add_test(tc, gradient_bias_add);
    tcase_add_test(tc, gradient_shapes);
    tcase_add_test(tc, gradient_reductions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
