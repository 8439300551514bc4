/*
 * test_math_ops.c - the elementwise math blocks of blocks/math_ops/ (Add, AddV2, Sub, Mul,
 * Div, RealDiv, Maximum, Minimum, SquaredDifference, Equal, GreaterEqual, AddN, Neg, Square,
 * Sqrt, Rsqrt, Exp, Log, Reciprocal, Abs, Sign, Relu, Relu6, Sigmoid, Tanh, Softplus and the
 * gradient blocks ReluGrad, Relu6Grad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad,
 * ReciprocalGrad), driven through the public API only: small pages as JSON strings,
 * Placeholders fed with tensors built here, results read back with a decoder written here,
 * compared with a float64 reference computed here from each op's definition, on random
 * non-zero data. Broadcasting is checked by an index mapping written here (each output
 * index's operand indices, from numpy's rule), on equal shapes, scalars on either side,
 * rank 0 against rank 4, [2,3] + [3], [2,1,4] * [3,1], both sides stretched, empty dims, and
 * sizes past the kernels' 64k-element parallel threshold (whole rows per task, pieces of one
 * long row, one flat run, a short operand repeated or stretched along a long run), run on a
 * 4-thread context.
 *
 * Tolerances, per element, |got - ref| <= k * ulp * scale, where ulp is one unit in the last
 * place of the dtype (float64 2^-52, float32 2^-23, float16 2^-10, bfloat16 2^-7) and scale
 * is |ref| unless said otherwise:
 *   k = 1: Add, Sub, Mul, Div, RealDiv, Neg, Square, Abs, Reciprocal, Sqrt (one rounding,
 *          and for the halves one more from float32 to the half: still within one ulp);
 *   k = 2: SquaredDifference, Rsqrt (two roundings);
 *   k = 8: Exp, Log, Tanh, Sigmoid, Softplus (libm's few ulp, composed);
 *   k = 4: the gradient blocks, with scale the sum of the magnitudes of the terms (TanhGrad's
 *          1 - y*y cancels near |y| = 1, as TensorFlow's does);
 *   exact: Maximum, Minimum, Equal, GreaterEqual, Sign, Relu, Relu6, ReluGrad, Relu6Grad,
 *          and every integer result.
 * Float16 and bfloat16 inputs are k/256 (exactly representable in both), so the reference
 * sees exactly what the block sees.
 *
 * Error cases assert status, code, block id, port and the exact TensorFlow message where
 * TensorFlow has one ("Incompatible shapes: [2,3] vs. [4]", "Integer division by zero",
 * "Inputs to operation ... must have the same size and shape.  Input 0: ... != input 1: ...").
 */
#include "bf_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- pages and sessions ---------------------------------------------------------------------- */

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

static bf_context *new_ctx(int threads) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = threads;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

/* A session on the page HEAD + body (printf-style), asserting that the page loads. */
static bf_session *open_page(bf_context *ctx, const char *fmt, ...) {
    char body[8192], json[8300];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof(body));
    snprintf(json, sizeof(json), HEAD "%s", body);
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "m.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s", e.code, e.message);
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

/* Assert every field an error case is about. port "" means "must be empty". */
static void expect_error(const bf_error *e, bf_status status, const char *code,
                         const char *block, const char *port) {
    ck_assert_msg(e->status == status, "status %s, want %s (%s)", bf_status_name(e->status),
                  bf_status_name(status), e->message);
    ck_assert_str_eq(e->code, code);
    ck_assert_str_eq(e->block_id, block);
    ck_assert_str_eq(e->port, port);
    ck_assert_msg(e->message[0] != '\0', "an error has a message");
}

/* ---- dtypes: encoding and decoding written here ---------------------------------------------- */

static const bf_dtype all_dtypes[6] = {BF_DTYPE_F16, BF_DTYPE_BF16, BF_DTYPE_F32,
                                       BF_DTYPE_F64, BF_DTYPE_I32,  BF_DTYPE_I64};
#define FLOATS 0x0f /* bits of all_dtypes: the four float dtypes */
#define ALL    0x3f

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
static bool is_half(bf_dtype dt) { return dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16; }

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
    if (!((double)f == v && (u & 0xffffu) == 0) && !isnan(v))
        ck_abort_msg("%g is not a bfloat16", v);
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

/* How random values are drawn. */
typedef enum { V_ANY, V_POS, V_SMALL, V_WIDE } vkind;

/*
 * A random non-zero value representable in dt:
 * V_ANY: float16/bfloat16 k/256 with 26 <= |k| <= 256, float32/float64 in +-[0.1, 1],
 *        integers in +-[1, 1000]; V_POS the same, positive; V_SMALL +-{0.5, 1, 1.5} (ints
 *        +-{1, 2, 3}), so that comparisons meet ties; V_WIDE V_ANY times 8 (ints unchanged).
 */
static double random_value(bf_rng *r, bf_dtype dt, vkind kind) {
    bool neg = kind != V_POS && (bf_rng_next(r) & 1);
    double v;
    if (kind == V_SMALL) {
        v = (double)bf_rng_int(r, 1, 3);
        if (!is_int(dt)) v /= 2;
    } else if (is_int(dt)) {
        v = (double)bf_rng_int(r, 1, 1000);
    } else if (is_half(dt)) {
        v = (double)bf_rng_int(r, 26, 256) / 256;
    } else {
        v = fabs(bf_rng_nonzero(r));
        if (dt == BF_DTYPE_F32) v = (double)(float)v;
    }
    if (kind == V_WIDE && !is_int(dt)) v *= 8;
    return neg ? -v : v;
}

static bf_tensor *random_tensor(bf_dtype dt, int rank, const int64_t *dims, bf_rng *r,
                                vkind kind, double **ref) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    int64_t n = bf_tensor_numel(t);
    *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double v = random_value(r, dt, kind);
        set_elem(t, i, v);
        (*ref)[i] = v;
    }
    return t;
}

static bf_tensor *tensor_of(bf_dtype dt, int rank, const int64_t *dims, const double *v) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) set_elem(t, i, v[i]);
    return t;
}

static void expect_shape(const bf_tensor *t, bf_dtype dt, int rank, const int64_t *dims) {
    ck_assert_msg(bf_tensor_dtype(t) == dt, "dtype %s, want %s", bf_dtype_name(bf_tensor_dtype(t)),
                  bf_dtype_name(dt));
    ck_assert_int_eq(bf_tensor_rank(t), rank);
    for (int i = 0; i < rank; i++) ck_assert_int_eq(bf_tensor_dims(t)[i], dims[i]);
}

/* got within tol * scale of ref; nan must be nan, an infinity itself. */
static bool close_to(double got, double ref, double tol, double scale) {
    if (isnan(ref)) return isnan(got);
    if (isinf(ref)) return got == ref;
    return fabs(got - ref) <= tol * scale;
}

/* close_to(got, ref, tol, scale or |ref|) for every element. Plain `if`s in the loop: a
 * passing ck_assert costs a write to Check's pipe. */
static void expect_values(const bf_tensor *t, const double *ref, const double *scale,
                          int64_t n, double tol, const char *what) {
    ck_assert_int_eq(bf_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = elem(t, i), s = scale ? scale[i] : fabs(ref[i]);
        if (!close_to(got, ref[i], tol, s))
            ck_abort_msg("%s (%s): element %ld is %.17g, want %.17g (tol %g)", what,
                         bf_dtype_name(bf_tensor_dtype(t)), (long)i, got, ref[i], tol * s);
    }
}

static int64_t numel_of(int rank, const int64_t *d) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* numpy's rule, written out: the flat index in an operand of shape (rank, d) that output
 * element `i` of shape (orank, od) reads (a dim of 1 is read at 0, missing dims lead). */
static int64_t operand_index(int orank, const int64_t *od, int rank, const int64_t *d, int64_t i) {
    int64_t coord[8];
    for (int k = orank - 1; k >= 0; k--) {
        coord[k] = i % od[k];
        i /= od[k];
    }
    int64_t f = 0;
    for (int j = 0; j < rank; j++) f = f * d[j] + (d[j] == 1 ? 0 : coord[j + orank - rank]);
    return f;
}

/* ---- binary ops ------------------------------------------------------------------------------ */

enum { ADD, ADDV2, SUB, MUL, DIV, REALDIV, MAX, MIN, SQDIFF, EQ, GE, N_BINOPS };

static const struct binop {
    const char *type;
    unsigned dtypes; /* bits of all_dtypes */
    double k;        /* tolerance in ulps; 0 exact */
    vkind values;
} binops[N_BINOPS] = {
    [ADD] = {"Add", ALL, 1, V_ANY},       [ADDV2] = {"AddV2", ALL, 1, V_ANY},
    [SUB] = {"Sub", ALL, 1, V_ANY},       [MUL] = {"Mul", ALL, 1, V_ANY},
    [DIV] = {"Div", ALL, 1, V_ANY},       [REALDIV] = {"RealDiv", FLOATS, 1, V_ANY},
    [MAX] = {"Maximum", ALL, 0, V_SMALL}, [MIN] = {"Minimum", ALL, 0, V_SMALL},
    [SQDIFF] = {"SquaredDifference", ALL, 2, V_ANY},
    [EQ] = {"Equal", ALL, 0, V_SMALL},    [GE] = {"GreaterEqual", ALL, 0, V_SMALL},
};

static double binop_ref(int op, double a, double b, bf_dtype dt) {
    switch (op) {
    case ADD: case ADDV2: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case DIV: return is_int(dt) ? (double)((int64_t)a / (int64_t)b) : a / b;
    case REALDIV: return a / b;
    case MAX: return a > b ? a : b;
    case MIN: return a < b ? a : b;
    case SQDIFF: return (a - b) * (a - b);
    case EQ: return a == b;
    case GE: return a >= b;
    }
    return NAN;
}

/* Shapes of x and y, and the broadcast result's. */
typedef struct bcase {
    int xr, yr, zr;
    int64_t xd[4], yd[4], zd[4];
} bcase;
static const bcase bcases[] = {
    {3, 3, 3, {2, 3, 5}, {2, 3, 5}, {2, 3, 5}},
    {2, 1, 2, {2, 3}, {3}, {2, 3}},
    {1, 2, 2, {3}, {2, 3}, {2, 3}},
    {3, 2, 3, {2, 1, 4}, {3, 1}, {2, 3, 4}},
    {0, 2, 2, {0}, {2, 3}, {2, 3}},
    {2, 0, 2, {2, 3}, {0}, {2, 3}},
    {0, 4, 4, {0}, {2, 1, 3, 2}, {2, 1, 3, 2}},
    {4, 0, 4, {2, 1, 3, 2}, {0}, {2, 1, 3, 2}},
    {0, 0, 0, {0}, {0}, {0}},
    {2, 2, 2, {4, 1}, {1, 5}, {4, 5}},
    {3, 3, 3, {3, 1, 5}, {1, 4, 1}, {3, 4, 5}},
    {1, 3, 3, {1}, {1, 1, 1}, {1, 1, 1}},
    {2, 1, 2, {0, 3}, {3}, {0, 3}},
    {2, 2, 2, {2, 0}, {2, 1}, {2, 0}},
    {1, 2, 2, {3}, {0, 1}, {0, 3}},
    /* past the parallel threshold (64k elements): */
    {2, 2, 2, {300, 257}, {300, 257}, {300, 257}}, /* one flat run */
    {2, 1, 2, {300, 257}, {257}, {300, 257}},      /* rows of runs */
    {2, 2, 2, {2, 40000}, {2, 1}, {2, 40000}},     /* pieces of long rows */
    {0, 1, 1, {0}, {70001}, {70001}},              /* x a scalar */
    {3, 3, 3, {17, 1, 61}, {1, 67, 61}, {17, 67, 61}},
    {2, 1, 2, {3000, 25}, {25}, {3000, 25}},           /* a short repeating y, split */
    {1, 2, 2, {25}, {3000, 25}, {3000, 25}},           /* a short repeating x, split */
    {3, 3, 3, {70, 40, 30}, {70, 1, 30}, {70, 40, 30}}, /* repeating within rows */
    {2, 2, 2, {6, 5}, {6, 1}, {6, 5}},                  /* a stretched y */
    {2, 2, 2, {6, 1}, {6, 5}, {6, 5}},                  /* a stretched x */
    {2, 2, 2, {40000, 2}, {40000, 1}, {40000, 2}},      /* a stretched y, split */
    {4, 4, 4, {2, 70, 20, 1}, {1, 70, 20, 30}, {2, 70, 20, 30}}, /* stretched within rows */
};
#define N_BCASES ((int)(sizeof(bcases) / sizeof(bcases[0])))

/* One test per (op, dtype): every shape case, on a 4-thread context. */
START_TEST(binary_matches_reference) {
    int op = _i / 6;
    bf_dtype dt = all_dtypes[_i % 6];
    const struct binop *b = &binops[op];
    if (!(b->dtypes & (1u << (_i % 6)))) return;
    bf_context *ctx = new_ctx(4);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"z\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
        bf_dtype_name(dt), bf_dtype_name(dt), b->type);
    bf_dtype zdt = op == EQ || op == GE ? BF_DTYPE_I32 : dt;
    for (int c = 0; c < N_BCASES; c++) {
        const bcase *k = &bcases[c];
        bf_rng r = {(uint64_t)(_i * 100 + c + 1)};
        double *xr, *yr;
        bf_tensor *x = random_tensor(dt, k->xr, k->xd, &r, b->values, &xr);
        bf_tensor *y = random_tensor(dt, k->yr, k->yd, &r, b->values, &yr);
        int64_t n = numel_of(k->zr, k->zd);
        double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++)
            want[i] = binop_ref(op, xr[operand_index(k->zr, k->zd, k->xr, k->xd, i)],
                                yr[operand_index(k->zr, k->zd, k->yr, k->yd, i)], dt);
        feed_ok(s, "x", x);
        feed_ok(s, "y", y);
        const bf_tensor *z = run_ok(s, "z");
        expect_shape(z, zdt, k->zr, k->zd);
        char what[64];
        snprintf(what, sizeof(what), "%s case %d", b->type, c);
        expect_values(z, want, NULL, n, b->k * ulp_of(dt), what);
        bf_tensor_free(x);
        bf_tensor_free(y);
        free(xr), free(yr), free(want);
    }
    ck_assert_ptr_nonnull(bf_session_output(s, "z", "z")); /* the port is named "z" */
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* The examples of the block headers, by hand: operand order and both broadcast sides. */
START_TEST(binary_hand_checked) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"m\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2,3],[4,5,6]]}},"
        "{\"id\":\"v\",\"type\":\"Const\",\"attrs\":{\"value\":[10,20,30]}},"
        "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[10],[100]]}},"
        "{\"id\":\"h\",\"type\":\"Const\",\"attrs\":{\"value\":[[2],[5]]}},"
        "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
        "{\"id\":\"a\",\"type\":\"Add\",\"inputs\":{\"x\":\"m\",\"y\":\"v\"}},"
        "{\"id\":\"b\",\"type\":\"Sub\",\"inputs\":{\"x\":\"v\",\"y\":\"m\"}},"
        "{\"id\":\"d\",\"type\":\"Mul\",\"inputs\":{\"x\":\"c\",\"y\":\"v\"}},"
        "{\"id\":\"e\",\"type\":\"RealDiv\",\"inputs\":{\"x\":\"k\",\"y\":\"c\"}},"
        "{\"id\":\"f\",\"type\":\"GreaterEqual\",\"inputs\":{\"x\":\"m\",\"y\":\"h\"}},"
        "{\"id\":\"g\",\"type\":\"SquaredDifference\",\"inputs\":{\"x\":\"v\",\"y\":\"k\"}}]}");
    const int64_t d23[2] = {2, 3}, d3[1] = {3}, d21[2] = {2, 1};
    static const double a[6] = {11, 22, 33, 14, 25, 36}, b[6] = {9, 18, 27, 6, 15, 24},
                        d[6] = {100, 200, 300, 1000, 2000, 3000}, e[2] = {0.1, 0.01},
                        f[6] = {0, 1, 1, 0, 1, 1}, g[3] = {81, 361, 841};
    const bf_tensor *t = run_ok(s, "a");
    expect_shape(t, BF_DTYPE_F32, 2, d23);
    expect_values(t, a, NULL, 6, 0, "Add");
    expect_values(run_ok(s, "b"), b, NULL, 6, 0, "Sub");
    expect_values(run_ok(s, "d"), d, NULL, 6, 0, "Mul");
    t = run_ok(s, "e");
    expect_shape(t, BF_DTYPE_F32, 2, d21);
    expect_values(t, e, NULL, 2, ldexp(1, -23), "RealDiv");
    t = run_ok(s, "f");
    expect_shape(t, BF_DTYPE_I32, 2, d23);
    expect_values(t, f, NULL, 6, 0, "GreaterEqual");
    t = run_ok(s, "g");
    expect_shape(t, BF_DTYPE_F32, 1, d3);
    expect_values(t, g, NULL, 3, 0, "SquaredDifference");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* nan: Maximum and Minimum propagate it from either side, Equal is false for it (itself
 * included), GreaterEqual too; inf and signed results of IEEE division. */
START_TEST(binary_special_values) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"max\",\"type\":\"Maximum\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
        "{\"id\":\"min\",\"type\":\"Minimum\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
        "{\"id\":\"eq\",\"type\":\"Equal\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
        "{\"id\":\"ge\",\"type\":\"GreaterEqual\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
        "{\"id\":\"div\",\"type\":\"Div\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
        bf_dtype_name(all_dtypes[_i]), bf_dtype_name(all_dtypes[_i]));
    bf_dtype dt = all_dtypes[_i];
    const int64_t d5[1] = {5};
    const double xs[5] = {NAN, 1, NAN, 2, -2}, ys[5] = {1, NAN, NAN, 0, 0};
    bf_tensor *x = tensor_of(dt, 1, d5, xs), *y = tensor_of(dt, 1, d5, ys);
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    const double mx[5] = {NAN, NAN, NAN, 2, 0}, mn[5] = {NAN, NAN, NAN, 0, -2},
                 eq[5] = {0, 0, 0, 0, 0}, ge[5] = {0, 0, 0, 1, 0},
                 dv[5] = {NAN, NAN, NAN, INFINITY, -INFINITY};
    expect_values(run_ok(s, "max"), mx, NULL, 5, 0, "Maximum");
    expect_values(run_ok(s, "min"), mn, NULL, 5, 0, "Minimum");
    expect_values(run_ok(s, "eq"), eq, NULL, 5, 0, "Equal");
    expect_values(run_ok(s, "ge"), ge, NULL, 5, 0, "GreaterEqual");
    expect_values(run_ok(s, "div"), dv, NULL, 5, 0, "Div");
    bf_tensor_free(x);
    bf_tensor_free(y);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Integers: exact where float64 is not (int64 beyond 2^53), Div truncates toward zero, and
 * results without a value in the dtype are errors naming the output. */
START_TEST(binary_integers) {
    bf_context *ctx = new_ctx(1);
    const int64_t big = ((int64_t)1 << 53) + 1, d4[1] = {4};
    const int64_t xs[4] = {big, -big, -7, 7}, ys[4] = {2, -1, 2, -2};
    bf_tensor *x = NULL, *y = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_I64, 1, d4, &x, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_I64, 1, d4, &y, NULL), BF_OK);
    memcpy(bf_tensor_data(x), xs, sizeof(xs));
    memcpy(bf_tensor_data(y), ys, sizeof(ys));
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int64\"}},"
             "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int64\"}},"
             "{\"id\":\"add\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
             "{\"id\":\"div\",\"type\":\"Div\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
             "{\"id\":\"sqd\",\"type\":\"SquaredDifference\",\"inputs\":{\"x\":\"y\",\"y\":\"y\"}},"
             "{\"id\":\"max\",\"type\":\"Maximum\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}");
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    const int64_t *z = bf_tensor_cdata(run_ok(s, "add"));
    for (int i = 0; i < 4; i++) ck_assert(z[i] == xs[i] + ys[i]);
    z = bf_tensor_cdata(run_ok(s, "div"));
    const int64_t dv[4] = {big / 2, big, -3, -3}; /* toward zero, as C and TensorFlow */
    for (int i = 0; i < 4; i++) ck_assert_msg(z[i] == dv[i], "div[%d] = %lld", i, (long long)z[i]);
    z = bf_tensor_cdata(run_ok(s, "max"));
    for (int i = 0; i < 4; i++) ck_assert(z[i] == (xs[i] > ys[i] ? xs[i] : ys[i]));
    z = bf_tensor_cdata(run_ok(s, "sqd"));
    for (int i = 0; i < 4; i++) ck_assert(z[i] == 0);
    bf_session_free(s);
    bf_tensor_free(x);
    bf_tensor_free(y);

    /* Errors: (type, dtype, x, y, status, code, message part) */
    static const struct {
        const char *type, *dtype, *x, *y;
        bf_status st;
        const char *code, *msg;
    } bad[] = {
        {"Add", "int32", "[1,2147483647]", "1", BF_EDTYPE, "dtype_mismatch",
         "element 1: Add of 2147483647 and 1 overflows int32"},
        {"Sub", "int64", "[-9223372036854775807]", "[2]", BF_EDTYPE, "dtype_mismatch",
         "overflows int64"},
        {"Mul", "int32", "[[65536],[1]]", "[65536,2]", BF_EDTYPE, "dtype_mismatch",
         "element 0: Mul of 65536 and 65536 overflows int32"},
        {"Div", "int32", "[1,2,3]", "[1,0,1]", BF_EINVAL, "division_by_zero",
         "Integer division by zero"},
        {"Div", "int32", "[-2147483648]", "-1", BF_EDTYPE, "dtype_mismatch", "overflows int32"},
        {"SquaredDifference", "int32", "[50000]", "[-50000]", BF_EDTYPE, "dtype_mismatch",
         "overflows int32"},
        {"Add", "int32", "[[1,2],[3,2147483647]]", "[0,1]", BF_EDTYPE, "dtype_mismatch",
         "element 3: Add of 2147483647 and 1 overflows int32"},
        {"Sub", "int32", "[1,-2147483648]", "[[0,0],[0,1]]", BF_EDTYPE, "dtype_mismatch",
         "element 3: Sub of -2147483648 and 1 overflows int32"},
        {"Mul", "int32", "[[1,2],[65536,1]]", "[[1],[65536]]", BF_EDTYPE, "dtype_mismatch",
         "element 2: Mul of 65536 and 65536 overflows int32"},
        {"Mul", "int64", "[[1],[4294967296]]", "[[1,2],[3,4294967296]]", BF_EDTYPE,
         "dtype_mismatch", "element 3: Mul of 4294967296 and 4294967296 overflows int64"},
    };
    for (int k = 0; k < (int)(sizeof(bad) / sizeof(bad[0])); k++) {
        s = open_page(ctx,
                      "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"value\":%s}},"
                      "{\"id\":\"y\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"value\":%s}},"
                      "{\"id\":\"z\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
                      bad[k].dtype, bad[k].x, bad[k].dtype, bad[k].y, bad[k].type);
        bf_error e = {0};
        ck_assert_int_eq(run_fetch(s, "z", &e), bad[k].st);
        expect_error(&e, bad[k].st, bad[k].code, "z", "z");
        ck_assert_msg(strstr(e.message, bad[k].msg), "%s: \"%s\" lacks \"%s\"", bad[k].type,
                      e.message, bad[k].msg);
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* Shapes that do not broadcast: TensorFlow's message, at check time, at input y. */
static const struct {
    const char *x, *y, *msg;
} bad_shapes[] = {
    {"[2,3]", "[4]", "Incompatible shapes: [2,3] vs. [4]"},
    {"[2,3]", "[3,2]", "Incompatible shapes: [2,3] vs. [3,2]"},
    {"[5]", "[2,3]", "Incompatible shapes: [5] vs. [2,3]"},
    {"[2,1,3]", "[4,2]", "Incompatible shapes: [2,1,3] vs. [4,2]"},
    {"[0]", "[2]", "Incompatible shapes: [0] vs. [2]"},
    {"[-1,3]", "[4]", "Incompatible shapes: [?,3] vs. [4]"},
    {"[2,-1,3]", "[2,1,4]", "Incompatible shapes: [2,?,3] vs. [2,1,4]"},
};

START_TEST(binary_incompatible_shapes) {
    bf_context *ctx = new_ctx(1);
    for (int op = 0; op < N_BINOPS; op++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":%s}},"
            "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":%s}},"
            "{\"id\":\"op_xy\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
            bad_shapes[_i].x, bad_shapes[_i].y, binops[op].type);
        bf_error e = {0};
        ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_ESHAPE);
        expect_error(&e, BF_ESHAPE, "shape_mismatch", "op_xy", "y");
        ck_assert_str_eq(e.message, bad_shapes[_i].msg);
        ck_assert_str_eq(e.pointer, "/blocks/2/inputs/y");
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* What the check infers with unknown dims (TensorFlow's shape function), and the run's
 * check once the feeds are known. */
START_TEST(binary_partial_shapes) {
    static const struct {
        const char *x, *y; /* Placeholder shapes; NULL: no shape (unknown rank) */
        int rank;
        int64_t dims[3];
    } cases[] = {
        {"[-1,3]", "[2,1]", 2, {2, 3}},  {"[-1]", "[1]", 1, {-1}},
        {"[-1]", "[-1]", 1, {-1}},       {"[5,-1]", "[3]", 2, {5, 3}},
        {"[1,-1]", "[4,1]", 2, {4, -1}}, {NULL, "[2,3]", -1, {0}},
        {"[0]", "[-1]", 1, {-1}},        {"[-1,1,4]", "[3,1]", 3, {-1, 3, 4}},
    };
    bf_context *ctx = new_ctx(1);
    for (int k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
        char xa[64], ya[64];
        if (cases[k].x) snprintf(xa, sizeof(xa), "{\"shape\":%s}", cases[k].x);
        else snprintf(xa, sizeof(xa), "{}");
        snprintf(ya, sizeof(ya), "{\"shape\":%s}", cases[k].y);
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":%s},"
            "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":%s},"
            "{\"id\":\"z\",\"type\":\"Mul\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
            "{\"id\":\"e\",\"type\":\"Equal\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
            xa, ya);
        bf_port_shape p;
        ck_assert_int_eq(bf_session_port_shape(s, "z", "z", 1, &p, NULL), BF_OK);
        ck_assert_int_eq(p.dtype, BF_DTYPE_F32);
        ck_assert_msg(p.rank == cases[k].rank, "case %d: rank %d", k, p.rank);
        for (int i = 0; i < p.rank; i++)
            ck_assert_msg(p.dims[i] == cases[k].dims[i], "case %d: dim %d is %lld", k, i,
                          (long long)p.dims[i]);
        ck_assert_int_eq(bf_session_port_shape(s, "e", "z", 1, &p, NULL), BF_OK);
        ck_assert_int_eq(p.dtype, BF_DTYPE_I32);
        bf_session_free(s);
    }
    /* [-1] against [4] passes the check; a [3] fed is refused by the run, in the same words. */
    bf_session *s =
        open_page(ctx, "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1]}},"
                       "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[4]}},"
                       "{\"id\":\"z\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}");
    ck_assert_int_eq(bf_session_check(s, NULL, NULL), BF_OK);
    bf_rng r = {3};
    double *xr, *yr;
    const int64_t d3[1] = {3}, d4[1] = {4};
    bf_tensor *x = random_tensor(BF_DTYPE_F32, 1, d3, &r, V_ANY, &xr);
    bf_tensor *y = random_tensor(BF_DTYPE_F32, 1, d4, &r, V_ANY, &yr);
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    bf_error e = {0};
    ck_assert_int_eq(run_fetch(s, "z", &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "z", "y");
    ck_assert_str_eq(e.message, "Incompatible shapes: [3] vs. [4]");
    bf_session_free(s);
    bf_tensor_free(x);
    bf_tensor_free(y);
    free(xr), free(yr);
    bf_context_free(ctx);
}
END_TEST

START_TEST(binary_dtype_mismatch) {
    bf_context *ctx = new_ctx(1);
    for (int op = 0; op < N_BINOPS; op++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
            "{\"id\":\"y\",\"type\":\"Const\",\"attrs\":{\"value\":2,\"dtype\":\"float64\"}},"
            "{\"id\":\"z\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
            binops[op].type);
        bf_error e = {0};
        ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
        expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "y");
        char want[200];
        snprintf(want, sizeof(want),
                 "cannot compute %s as input #1(zero-based) was expected to be a float32 "
                 "tensor but is a float64 tensor",
                 binops[op].type);
        ck_assert_str_eq(e.message, want);
        bf_session_free(s);
    }
    /* RealDiv takes floats only: the port's dtype mask refuses int32. */
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2],\"dtype\":\"int32\"}},"
             "{\"id\":\"z\",\"type\":\"RealDiv\",\"inputs\":{\"x\":\"x\",\"y\":\"x\"}}]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "x");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- unary ops ------------------------------------------------------------------------------- */

enum { NEG, SQUARE, SQRT, RSQRT, EXP, LOG, RECIP, ABS, SIGN, RELU, RELU6, SIGMOID, TANH,
       SOFTPLUS, N_UNOPS };

static const struct unop {
    const char *type, *in, *out; /* port names */
    unsigned dtypes;
    double k;
    vkind values;
} unops[N_UNOPS] = {
    [NEG] = {"Neg", "x", "y", ALL, 1, V_ANY},
    [SQUARE] = {"Square", "x", "y", ALL, 1, V_ANY},
    [SQRT] = {"Sqrt", "x", "y", FLOATS, 1, V_POS},
    [RSQRT] = {"Rsqrt", "x", "y", FLOATS, 2, V_POS},
    [EXP] = {"Exp", "x", "y", FLOATS, 8, V_WIDE},
    [LOG] = {"Log", "x", "y", FLOATS, 8, V_POS},
    [RECIP] = {"Reciprocal", "x", "y", FLOATS, 1, V_ANY},
    [ABS] = {"Abs", "x", "y", ALL, 1, V_ANY},
    [SIGN] = {"Sign", "x", "y", ALL, 0, V_ANY},
    [RELU] = {"Relu", "features", "activations", ALL, 0, V_ANY},
    [RELU6] = {"Relu6", "features", "activations", ALL, 0, V_WIDE},
    [SIGMOID] = {"Sigmoid", "x", "y", FLOATS, 8, V_WIDE},
    [TANH] = {"Tanh", "x", "y", FLOATS, 8, V_WIDE},
    [SOFTPLUS] = {"Softplus", "features", "activations", FLOATS, 8, V_WIDE},
};

static double unop_ref(int op, double x) {
    switch (op) {
    case NEG: return -x;
    case SQUARE: return x * x;
    case SQRT: return sqrt(x);
    case RSQRT: return 1 / sqrt(x);
    case EXP: return exp(x);
    case LOG: return log(x);
    case RECIP: return 1 / x;
    case ABS: return fabs(x);
    case SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case RELU: return x > 0 ? x : 0;
    case RELU6: return x < 0 ? 0 : x > 6 ? 6 : x;
    case SIGMOID: return 1 / (1 + exp(-x));
    case TANH: return tanh(x);
    case SOFTPLUS: return log1p(exp(x));
    }
    return NAN;
}

START_TEST(unary_matches_reference) {
    int op = _i / 6;
    bf_dtype dt = all_dtypes[_i % 6];
    const struct unop *u = &unops[op];
    if (!(u->dtypes & (1u << (_i % 6)))) return;
    bf_context *ctx = new_ctx(4);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"y\",\"type\":\"%s\",\"inputs\":{\"%s\":\"x\"}}]}",
        bf_dtype_name(dt), u->type, u->in);
    static const struct {
        int rank;
        int64_t dims[3];
    } shapes[] = {{0, {0}}, {3, {3, 7, 5}}, {2, {0, 4}}, {1, {70001}}};
    for (int c = 0; c < 4; c++) {
        bf_rng r = {(uint64_t)(_i * 10 + c + 1)};
        double *xr;
        bf_tensor *x = random_tensor(dt, shapes[c].rank, shapes[c].dims, &r, u->values, &xr);
        int64_t n = bf_tensor_numel(x);
        double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) want[i] = unop_ref(op, xr[i]);
        feed_ok(s, "x", x);
        const bf_tensor *y = run_ok(s, "y");
        expect_shape(y, dt, shapes[c].rank, shapes[c].dims);
        char what[64];
        snprintf(what, sizeof(what), "%s case %d", u->type, c);
        expect_values(y, want, NULL, n, u->k * ulp_of(dt), what);
        ck_assert_ptr_eq(bf_session_output(s, "y", u->out), y);
        bf_tensor_free(x);
        free(xr), free(want);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Limits and special values, float32 and float64: Softplus keeps x past TensorFlow's
 * threshold where e^x overflows, Sigmoid reaches 0 and 1, nan stays nan through Relu,
 * Sign of nan is 0 (Eigen's (x > 0) - (x < 0)). */
START_TEST(unary_special_values) {
    bf_dtype dt = _i ? BF_DTYPE_F64 : BF_DTYPE_F32;
    bf_context *ctx = new_ctx(1);
    static const struct {
        const char *type, *port;
        double x, want;
    } cases[] = {
        {"Softplus", "features", 100, 100},   {"Softplus", "features", 1000, 1000},
        {"Softplus", "features", -1000, 0},   {"Softplus", "features", 0, 0.69314718055994531},
        {"Sigmoid", "x", 1000, 1},            {"Sigmoid", "x", -1000, 0},
        {"Sigmoid", "x", 0, 0.5},             {"Relu", "features", NAN, NAN},
        {"Relu6", "features", NAN, NAN},      {"Relu6", "features", INFINITY, 6},
        {"Sign", "x", NAN, 0},                {"Sqrt", "x", -1, NAN},
        {"Log", "x", 0, -INFINITY},           {"Rsqrt", "x", 0, INFINITY},
        {"Reciprocal", "x", -0.0, -INFINITY}, {"Exp", "x", -1000, 0},
        {"Tanh", "x", 1000, 1},               {"Abs", "x", -INFINITY, INFINITY},
    };
    for (int k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
            "{\"id\":\"y\",\"type\":\"%s\",\"inputs\":{\"%s\":\"x\"}}]}",
            bf_dtype_name(dt), cases[k].type, cases[k].port);
        bf_tensor *x = tensor_of(dt, 0, NULL, &cases[k].x);
        feed_ok(s, "x", x);
        double got = elem(run_ok(s, "y"), 0), want = cases[k].want;
        ck_assert_msg(close_to(got, want, 4 * ulp_of(dt), fabs(want)), "%s(%g) = %.17g, want %.17g",
                      cases[k].type, cases[k].x, got, want);
        bf_tensor_free(x);
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* Integer unary results without a value in the dtype are errors naming the output. */
START_TEST(unary_integer_overflow) {
    static const struct {
        const char *type, *dtype, *x, *port, *msg;
    } bad[] = {
        {"Neg", "int32", "[1,-2147483648]", "y", "element 1: Neg of -2147483648 overflows int32"},
        {"Abs", "int64", "[-9223372036854775808]", "y", "overflows int64"},
        {"Square", "int32", "[46341]", "y", "element 0: Square of 46341 overflows int32"},
        {"Square", "int64", "[3037000500]", "y", "overflows int64"},
    };
    bf_context *ctx = new_ctx(1);
    for (int k = 0; k < (int)(sizeof(bad) / sizeof(bad[0])); k++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"value\":%s}},"
            "{\"id\":\"u\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\"}}]}",
            bad[k].dtype, bad[k].x, bad[k].type);
        bf_error e = {0};
        ck_assert_int_eq(run_fetch(s, "u", &e), BF_EDTYPE);
        expect_error(&e, BF_EDTYPE, "dtype_mismatch", "u", bad[k].port);
        ck_assert_msg(strstr(e.message, bad[k].msg), "\"%s\" lacks \"%s\"", e.message,
                      bad[k].msg);
        bf_session_free(s);
    }
    /* Float-only blocks refuse integers at the port. */
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[4]}},"
             "{\"id\":\"u\",\"type\":\"Sqrt\",\"inputs\":{\"x\":\"x\"}}]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "u", "x");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- gradient blocks ------------------------------------------------------------------------- */

enum { G_RELU, G_RELU6, G_SIGMOID, G_TANH, G_SQRT, G_RSQRT, G_RECIP, N_GRADOPS };

static const struct gradop {
    const char *type, *a, *b, *out; /* ports: first input, second input, output */
    double k;                       /* ulps of scale; 0: exact */
    vkind av, bv;                   /* values of the two inputs */
} gradops[N_GRADOPS] = {
    [G_RELU] = {"ReluGrad", "gradients", "features", "backprops", 0, V_ANY, V_ANY},
    [G_RELU6] = {"Relu6Grad", "gradients", "features", "backprops", 0, V_ANY, V_WIDE},
    [G_SIGMOID] = {"SigmoidGrad", "y", "dy", "z", 4, V_ANY, V_ANY},
    [G_TANH] = {"TanhGrad", "y", "dy", "z", 4, V_ANY, V_ANY},
    [G_SQRT] = {"SqrtGrad", "y", "dy", "z", 4, V_POS, V_ANY},
    [G_RSQRT] = {"RsqrtGrad", "y", "dy", "z", 4, V_POS, V_ANY},
    [G_RECIP] = {"ReciprocalGrad", "y", "dy", "z", 4, V_ANY, V_ANY},
};

/* The definition (TensorFlow's cwise_ops_gradients.h and relu_op_functor.h), and the scale
 * of its rounding error: the sum of the magnitudes of the terms. */
static double gradop_ref(int op, double a, double b, double *scale) {
    switch (op) {
    case G_RELU: *scale = 0; return b > 0 ? a : 0;
    case G_RELU6: *scale = 0; return b > 0 && b < 6 ? a : 0;
    case G_SIGMOID: *scale = fabs(b * a) * (1 + fabs(a)); return b * a * (1 - a);
    case G_TANH: *scale = fabs(b) * (1 + a * a); return b * (1 - a * a);
    case G_SQRT: *scale = fabs(0.5 * b / a); return 0.5 * b / a;
    case G_RSQRT: *scale = fabs(0.5 * b * a * a * a); return -0.5 * b * a * a * a;
    case G_RECIP: *scale = fabs(b * a * a); return -b * a * a;
    }
    return NAN;
}

START_TEST(grad_ops_match_definition) {
    int op = _i / 4;
    bf_dtype dt = all_dtypes[_i % 4];
    const struct gradop *g = &gradops[op];
    bf_context *ctx = new_ctx(4);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
        "{\"id\":\"g\",\"type\":\"%s\",\"inputs\":{\"%s\":\"a\",\"%s\":\"b\"}}]}",
        bf_dtype_name(dt), bf_dtype_name(dt), g->type, g->a, g->b);
    static const struct {
        int rank;
        int64_t dims[2];
    } shapes[] = {{0, {0}}, {2, {6, 7}}, {1, {0}}, {2, {2, 40000}}};
    for (int c = 0; c < 4; c++) {
        bf_rng r = {(uint64_t)(_i * 10 + c + 7)};
        double *ar, *br;
        bf_tensor *a = random_tensor(dt, shapes[c].rank, shapes[c].dims, &r, g->av, &ar);
        bf_tensor *b = random_tensor(dt, shapes[c].rank, shapes[c].dims, &r, g->bv, &br);
        int64_t n = bf_tensor_numel(a);
        double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
        double *scale = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) want[i] = gradop_ref(op, ar[i], br[i], &scale[i]);
        feed_ok(s, "a", a);
        feed_ok(s, "b", b);
        const bf_tensor *z = run_ok(s, "g");
        expect_shape(z, dt, shapes[c].rank, shapes[c].dims);
        ck_assert_ptr_eq(bf_session_output(s, "g", g->out), z);
        char what[64];
        snprintf(what, sizeof(what), "%s case %d", g->type, c);
        expect_values(z, want, scale, n, g->k * ulp_of(dt), what);
        bf_tensor_free(a);
        bf_tensor_free(b);
        free(ar), free(br), free(want), free(scale);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* No broadcasting for the gradient blocks: TensorFlow's message, at the second input. */
START_TEST(grad_ops_same_shape) {
    bf_context *ctx = new_ctx(1);
    for (int op = 0; op < N_GRADOPS; op++) {
        const struct gradop *g = &gradops[op];
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[2,3]}},"
            "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[3]}},"
            "{\"id\":\"c\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,3]}},"
            "{\"id\":\"g\",\"type\":\"%s\",\"inputs\":{\"%s\":\"a\",\"%s\":\"b\"}},"
            "{\"id\":\"h\",\"type\":\"%s\",\"inputs\":{\"%s\":\"c\",\"%s\":\"a\"}}]}",
            g->type, g->a, g->b, g->type, g->a, g->b);
        bf_diags *d = bf_diags_new();
        ck_assert_int_eq(bf_session_check(s, d, NULL), BF_ESHAPE);
        ck_assert_uint_eq(bf_diags_errors(d), 1);
        const bf_error *e = bf_diags_at(d, 0);
        expect_error(e, BF_ESHAPE, "shape_mismatch", "g", g->b);
        char want[200];
        snprintf(want, sizeof(want),
                 "Inputs to operation g of type %s must have the same size and shape.  "
                 "Input 0: [2,3] != input 1: [3]",
                 g->type);
        ck_assert_str_eq(e->message, want);
        bf_port_shape p; /* h: [?,3] and [2,3] merge into [2,3] */
        ck_assert_int_eq(bf_session_port_shape(s, "h", g->out, 1, &p, NULL), BF_OK);
        ck_assert_int_eq(p.rank, 2);
        ck_assert_int_eq(p.dims[0], 2);
        ck_assert_int_eq(p.dims[1], 3);
        bf_diags_free(d);
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* ---- AddN ------------------------------------------------------------------------------------ */

/* Every port wired (inputs_0 .. inputs_15, some sources used twice), per dtype, left to right:
 * float32 and float64 in their own dtype, so the reference accumulates in the dtype too. */
START_TEST(add_n_matches_reference) {
    bf_dtype dt = all_dtypes[_i];
    bf_context *ctx = new_ctx(4);
    char body[6000];
    size_t m = 0;
    for (int k = 0; k < 5; k++)
        m += (size_t)snprintf(body + m, sizeof(body) - m,
                              "{\"id\":\"p%d\",\"type\":\"Placeholder\","
                              "\"attrs\":{\"dtype\":\"%s\"}},",
                              k, bf_dtype_name(dt));
    m += (size_t)snprintf(body + m, sizeof(body) - m,
                          "{\"id\":\"s\",\"type\":\"AddN\",\"inputs\":{");
    for (int k = 0; k < 16; k++)
        m += (size_t)snprintf(body + m, sizeof(body) - m, "%s\"inputs_%d\":\"p%d\"", k ? "," : "",
                              k, k % 5);
    snprintf(body + m, sizeof(body) - m, "}}]}");
    bf_session *s = open_page(ctx, "%s", body);
    static const struct {
        int rank;
        int64_t dims[2];
    } shapes[] = {{0, {0}}, {2, {3, 5}}, {2, {0, 2}}, {1, {70001}}};
    for (int c = 0; c < 4; c++) {
        bf_rng r = {(uint64_t)(_i * 10 + c + 1)};
        double *v[5];
        bf_tensor *t[5];
        for (int k = 0; k < 5; k++)
            t[k] = random_tensor(dt, shapes[c].rank, shapes[c].dims, &r, V_ANY, &v[k]);
        int64_t n = bf_tensor_numel(t[0]);
        double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) {
            double acc = 0;
            float accf = 0;
            for (int k = 0; k < 16; k++) {
                acc += v[k % 5][i];
                accf += (float)v[k % 5][i];
            }
            want[i] = dt == BF_DTYPE_F32 ? (double)accf : acc;
        }
        for (int k = 0; k < 5; k++) {
            char id[8];
            snprintf(id, sizeof(id), "p%d", k);
            feed_ok(s, id, t[k]);
        }
        const bf_tensor *z = run_ok(s, "s");
        expect_shape(z, dt, shapes[c].rank, shapes[c].dims);
        ck_assert_ptr_eq(bf_session_output(s, "s", "sum"), z);
        /* halves: one rounding of a float32 sum of 16 exact terms (exact: 16 * 9 bits) */
        expect_values(z, want, NULL, n, is_half(dt) ? ulp_of(dt) : 0, "AddN");
        for (int k = 0; k < 5; k++) {
            bf_tensor_free(t[k]);
            free(v[k]);
        }
        free(want);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(add_n_errors) {
    bf_context *ctx = new_ctx(1);
    char wires[1000];
    size_t m = 0;
    for (int k = 2; k < 16; k++)
        m += (size_t)snprintf(wires + m, sizeof(wires) - m, ",\"inputs_%d\":\"a\"", k);
    /* shapes: inputs_3 differs */
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[2,-1]}},"
        "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,3]}},"
        "{\"id\":\"c\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[3]}},"
        "{\"id\":\"ok\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\",\"inputs_1\":\"b\"%s}},"
        "{\"id\":\"bad\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\",\"inputs_1\":\"b\","
        "\"inputs_2\":\"a\",\"inputs_3\":\"c\",\"inputs_4\":\"a\",\"inputs_5\":\"a\","
        "\"inputs_6\":\"a\",\"inputs_7\":\"a\",\"inputs_8\":\"a\",\"inputs_9\":\"a\","
        "\"inputs_10\":\"a\",\"inputs_11\":\"a\",\"inputs_12\":\"a\",\"inputs_13\":\"a\","
        "\"inputs_14\":\"a\",\"inputs_15\":\"a\"}}]}",
        wires);
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_check(s, d, NULL), BF_ESHAPE);
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    const bf_error *e = bf_diags_at(d, 0);
    expect_error(e, BF_ESHAPE, "shape_mismatch", "bad", "inputs_3");
    ck_assert_str_eq(e->message, "Inputs to operation bad of type AddN must have the same size "
                                 "and shape.  Input 0: [2,3] != input 3: [3]");
    bf_port_shape p; /* [2,?] and [?,3] merge */
    ck_assert_int_eq(bf_session_port_shape(s, "ok", "sum", 1, &p, NULL), BF_OK);
    ck_assert_int_eq(p.rank, 2);
    ck_assert_int_eq(p.dims[0], 2);
    ck_assert_int_eq(p.dims[1], 3);
    bf_diags_free(d);
    bf_session_free(s);

    /* dtypes */
    s = open_page(ctx,
                  "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
                  "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2],"
                  "\"dtype\":\"float64\"}},"
                  "{\"id\":\"s\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\","
                  "\"inputs_1\":\"b\"%s}}]}",
                  wires);
    bf_error e1 = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e1), BF_EDTYPE);
    expect_error(&e1, BF_EDTYPE, "dtype_mismatch", "s", "inputs_1");
    ck_assert_str_eq(e1.message, "cannot compute AddN as input #1(zero-based) was expected to "
                                 "be a float32 tensor but is a float64 tensor");
    bf_session_free(s);

    /* integer overflow: 16 * 2^27 = 2^31 */
    s = open_page(ctx,
                  "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1,134217728],"
                  "\"dtype\":\"int32\"}},"
                  "{\"id\":\"s\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\","
                  "\"inputs_1\":\"a\"%s}}]}",
                  wires);
    bf_error e2 = {0};
    ck_assert_int_eq(run_fetch(s, "s", &e2), BF_EDTYPE);
    expect_error(&e2, BF_EDTYPE, "dtype_mismatch", "s", "sum");
    ck_assert_ptr_nonnull(strstr(e2.message, "element 1"));
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Optional ports: two, three, and a gap (inputs_0, inputs_1, inputs_9); the unconnected ones
 * are left out of the sum. */
START_TEST(add_n_optional_ports) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
        "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"value\":[10,20]}},"
        "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[100,200]}},"
        "{\"id\":\"two\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\",\"inputs_1\":\"b\"}},"
        "{\"id\":\"three\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\",\"inputs_1\":\"b\","
        "\"inputs_2\":\"c\"}},"
        "{\"id\":\"gap\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"c\",\"inputs_1\":\"a\","
        "\"inputs_9\":\"c\"}}]}");
    const double two[2] = {11, 22}, three[2] = {111, 222}, gap[2] = {201, 402};
    const int64_t d2[1] = {2};
    const bf_tensor *t = run_ok(s, "two");
    expect_shape(t, BF_DTYPE_F32, 1, d2);
    expect_values(t, two, NULL, 2, 0, "AddN of 2");
    expect_values(run_ok(s, "three"), three, NULL, 2, 0, "AddN of 3");
    expect_values(run_ok(s, "gap"), gap, NULL, 2, 0, "AddN with a gap");
    bf_session_free(s);
    /* inputs_1 is required: the page does not load */
    static const char json[] =
        HEAD "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
        "{\"id\":\"s\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"a\",\"inputs_2\":\"a\"}}]}";
    bf_page *page = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_page_load_string(ctx, json, strlen(json), "m.json", NULL, &page, NULL, &e),
                     BF_ESCHEMA);
    expect_error(&e, BF_ESCHEMA, "missing_input", "s", "inputs_1");
    bf_context_free(ctx);
}
END_TEST

/* ---- gradients against finite differences ---------------------------------------------------- */

/*
 * Each case is a page of Variables a (and b) of the given shapes, the forward block f on them
 * and the loss L = f * c, c a Const of f's shape (random), built into a backward pass by
 * bf_session_build_gradients; the gradient of each Variable is fetched and compared with
 * central differences of sum(L), each from two runs of the same page with one element of a
 * Variable moved by +-h (bf_session_write_state), all in float64: |fd - an| <= 1e-6 *
 * max(1, |an|). Values stay 1/32 or more from every kink (0 for Relu and Abs, 6 for Relu6,
 * the ties of Maximum and Minimum), so h = 1e-5 never crosses one. The same page in float32
 * must give the float64 gradient within 1e-5 (relative to max(1, |an|)).
 */
typedef enum { G_ANY, G_POS, G_ODD, G_EVEN, G_WIDE } gkind;

static const struct gcase {
    const char *type, *pa, *pb; /* the ports of a and b (pb NULL: one input) */
    int ar, br;
    int64_t ad[3], bd[3];
    gkind ak, bk;
    const char *extra; /* more wiring of f */
} gcases[] = {
    {"Add", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"Add", "x", "y", 2, 1, {2, 3}, {3}, G_ANY, G_ANY, NULL},
    {"AddV2", "x", "y", 3, 2, {2, 1, 4}, {3, 1}, G_ANY, G_ANY, NULL},
    {"Sub", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"Sub", "x", "y", 1, 2, {3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"Mul", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"Mul", "x", "y", 2, 2, {2, 1}, {1, 3}, G_ANY, G_ANY, NULL},
    {"Div", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"RealDiv", "x", "y", 2, 0, {2, 3}, {0}, G_ANY, G_ANY, NULL},
    {"Maximum", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ODD, G_EVEN, NULL},
    {"Maximum", "x", "y", 2, 1, {2, 3}, {3}, G_ODD, G_EVEN, NULL},
    {"Minimum", "x", "y", 2, 2, {2, 3}, {2, 3}, G_EVEN, G_ODD, NULL},
    {"Minimum", "x", "y", 1, 2, {3}, {2, 3}, G_ODD, G_EVEN, NULL},
    {"SquaredDifference", "x", "y", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, NULL},
    {"SquaredDifference", "x", "y", 2, 0, {2, 3}, {0}, G_ANY, G_ANY, NULL},
    {"AddN", "inputs_0", "inputs_1", 2, 2, {2, 3}, {2, 3}, G_ANY, G_ANY, ",\"inputs_5\":\"a\""},
    {"Mul", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, ",\"y\":\"a\""}, /* a fan-out: AddN sums */
    {"Neg", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Square", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Sqrt", "x", NULL, 2, 0, {2, 3}, {0}, G_POS, 0, NULL},
    {"Rsqrt", "x", NULL, 2, 0, {2, 3}, {0}, G_POS, 0, NULL},
    {"Exp", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Log", "x", NULL, 2, 0, {2, 3}, {0}, G_POS, 0, NULL},
    {"Reciprocal", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Abs", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Sign", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Relu", "features", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Relu6", "features", NULL, 2, 0, {3, 4}, {0}, G_WIDE, 0, NULL},
    {"Sigmoid", "x", NULL, 2, 0, {2, 3}, {0}, G_WIDE, 0, NULL},
    {"Tanh", "x", NULL, 2, 0, {2, 3}, {0}, G_ANY, 0, NULL},
    {"Softplus", "features", NULL, 2, 0, {2, 3}, {0}, G_WIDE, 0, NULL},
};
#define N_GCASES ((int)(sizeof(gcases) / sizeof(gcases[0])))

/* Values exactly representable in float32, at least 1/32 from 0, 6 and each other's grid. */
static double gvalue(bf_rng *r, gkind k) {
    double sign = (bf_rng_next(r) & 1) ? 1 : -1;
    switch (k) {
    case G_POS: return (double)bf_rng_int(r, 7, 64) / 64;
    case G_ODD: return sign * (double)(2 * bf_rng_int(r, 0, 15) + 1) / 32;
    case G_EVEN: return sign * (double)(2 * bf_rng_int(r, 1, 15)) / 32;
    case G_WIDE: {
        int64_t v = bf_rng_int(r, 1, 62);
        return sign * (double)(v >= 48 ? v + 1 : v) / 8; /* never 6 */
    }
    default: return sign * (double)bf_rng_int(r, 7, 64) / 64;
    }
}

/* sum(L) with the Variables as they are now. */
static double loss_sum(bf_session *s) {
    const bf_tensor *t = run_ok(s, "L");
    long double acc = 0;
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) acc += elem(t, i);
    return (double)acc;
}

/* The tensor a ref ("block" or "block:port") names, after a run. */
static const bf_tensor *fetch_ref(bf_session *s, const char *ref) {
    char block[96];
    snprintf(block, sizeof(block), "%s", ref);
    char *colon = strchr(block, ':');
    if (colon) *colon = '\0';
    run_ok(s, ref);
    const bf_tensor *t = bf_session_output(s, block, colon ? colon + 1 : NULL);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* "[2,3]" in buf (64 bytes). */
static void json_shape(char *buf, int rank, const int64_t *d) {
    int n = snprintf(buf, 64, "[");
    for (int i = 0; i < rank; i++)
        n += snprintf(buf + n, 64 - (size_t)n, "%s%lld", i ? "," : "", (long long)d[i]);
    snprintf(buf + n, 64 - (size_t)n, "]");
}

/* The page of case k in dtype dt, its gradients built; grads[v] gets each Variable's
 * gradient (float64 copies). */
static bf_session *grad_page(bf_context *ctx, const struct gcase *k, bf_dtype dt,
                             const double *cv, int zr, const int64_t *zd, bf_tensor *const *vals,
                             double **grads) {
    char shape_a[64], shape_b[64], shape_z[64], cvals[2000];
    json_shape(shape_a, k->ar, k->ad);
    json_shape(shape_b, k->br, k->bd);
    json_shape(shape_z, zr, zd);
    int n = snprintf(cvals, sizeof(cvals), "[");
    for (int64_t i = 0; i < numel_of(zr, zd); i++)
        n += snprintf(cvals + n, sizeof(cvals) - (size_t)n, "%s%.17g", i ? "," : "", cv[i]);
    snprintf(cvals + n, sizeof(cvals) - (size_t)n, "]");
    const char *dn = bf_dtype_name(dt);
    char b_block[200] = "", b_wire[64] = "";
    if (k->pb) {
        snprintf(b_block, sizeof(b_block),
                 "{\"id\":\"b\",\"type\":\"Variable\",\"attrs\":{\"shape\":%s,\"dtype\":\"%s\"}},",
                 shape_b, dn);
        snprintf(b_wire, sizeof(b_wire), ",\"%s\":\"b\"", k->pb);
    }
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"shape\":%s,\"dtype\":\"%s\"}},%s"
        "{\"id\":\"f\",\"type\":\"%s\",\"inputs\":{\"%s\":\"a\"%s%s}},"
        "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"shape\":%s,\"value\":%s}},"
        "{\"id\":\"L\",\"type\":\"Mul\",\"inputs\":{\"x\":\"f\",\"y\":\"c\"}}]}",
        shape_a, dn, b_block, k->type, k->pa, b_wire, k->extra ? k->extra : "", dn, shape_z,
        cvals);
    bf_error e = {0};
    for (int v = 0; v < (k->pb ? 2 : 1); v++) {
        bf_tensor *t = NULL;
        ck_assert_int_eq(bf_tensor_new(NULL, dt, bf_tensor_rank(vals[v]), bf_tensor_dims(vals[v]),
                                       &t, NULL), BF_OK);
        for (int64_t i = 0; i < bf_tensor_numel(t); i++) set_elem(t, i, elem(vals[v], i));
        if (bf_session_write_state(s, v ? "b" : "a", t, &e))
            ck_abort_msg("write_state: %s", e.message);
        bf_tensor_free(t);
    }
    char *created = NULL;
    if (bf_session_build_gradients(s, "L", NULL, 0, NULL, &created, &e))
        ck_abort_msg("%s: build_gradients: %s %s (%s)", k->type, e.code, e.message, e.block_id);
    cJSON *j = cJSON_Parse(created), *g = cJSON_GetObjectItemCaseSensitive(j, "gradients");
    for (int v = 0; v < (k->pb ? 2 : 1); v++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(g, v ? "b" : "a");
        ck_assert_msg(cJSON_IsString(r), "%s: no gradient for %s in %s", k->type, v ? "b" : "a",
                      created);
        const bf_tensor *t = fetch_ref(s, r->valuestring);
        int64_t nv = bf_tensor_numel(vals[v]);
        ck_assert_int_eq(bf_tensor_numel(t), nv);
        ck_assert_int_eq(bf_tensor_rank(t), bf_tensor_rank(vals[v]));
        grads[v] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
        for (int64_t i = 0; i < nv; i++) grads[v][i] = elem(t, i);
    }
    cJSON_Delete(j);
    bf_string_free(created);
    return s;
}

START_TEST(gradients_match_finite_differences) {
    const struct gcase *k = &gcases[_i];
    bf_rng r = {(uint64_t)_i + 11};
    int nvar = k->pb ? 2 : 1, zr = k->ar;
    int64_t zd[4];
    if (k->pb) { /* numpy's rule */
        zr = k->ar > k->br ? k->ar : k->br;
        for (int i = 0; i < zr; i++) {
            int64_t a = i < zr - k->ar ? 1 : k->ad[i - (zr - k->ar)];
            int64_t b = i < zr - k->br ? 1 : k->bd[i - (zr - k->br)];
            zd[i] = a == 1 ? b : a;
        }
    } else {
        memcpy(zd, k->ad, sizeof(k->ad));
    }
    bf_tensor *vals[2] = {NULL, NULL};
    for (int v = 0; v < nvar; v++) {
        ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F64, v ? k->br : k->ar, v ? k->bd : k->ad,
                                       &vals[v], NULL), BF_OK);
        for (int64_t i = 0; i < bf_tensor_numel(vals[v]); i++)
            set_elem(vals[v], i, gvalue(&r, v ? k->bk : k->ak));
    }
    double cv[64];
    for (int64_t i = 0; i < numel_of(zr, zd); i++) cv[i] = gvalue(&r, G_ANY);

    bf_context *ctx = new_ctx(1);
    double *g64[2] = {NULL, NULL}, *g32[2] = {NULL, NULL};
    bf_session *s = grad_page(ctx, k, BF_DTYPE_F64, cv, zr, zd, vals, g64);
    const double h = 1e-5;
    for (int v = 0; v < nvar; v++) {
        const char *id = v ? "b" : "a";
        bf_tensor *t = NULL;
        ck_assert_int_eq(bf_tensor_copy(vals[v], &t, NULL), BF_OK);
        for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
            double x0 = elem(vals[v], i), lp, lm;
            set_elem(t, i, x0 + h);
            ck_assert_int_eq(bf_session_write_state(s, id, t, NULL), BF_OK);
            lp = loss_sum(s);
            set_elem(t, i, x0 - h);
            ck_assert_int_eq(bf_session_write_state(s, id, t, NULL), BF_OK);
            lm = loss_sum(s);
            set_elem(t, i, x0);
            double fd = (lp - lm) / (2 * h), an = g64[v][i];
            if (!(fabs(fd - an) <= 1e-6 * fmax(1, fabs(an))))
                ck_abort_msg("%s case %d: d sum(L) / d %s[%ld] is %.12g, finite differences "
                             "give %.12g",
                             k->type, _i, id, (long)i, an, fd);
        }
        ck_assert_int_eq(bf_session_write_state(s, id, t, NULL), BF_OK);
        bf_tensor_free(t);
    }
    bf_session_free(s);

    /* float32: the same gradient, rounded */
    s = grad_page(ctx, k, BF_DTYPE_F32, cv, zr, zd, vals, g32);
    for (int v = 0; v < nvar; v++)
        for (int64_t i = 0; i < bf_tensor_numel(vals[v]); i++)
            if (!(fabs(g32[v][i] - g64[v][i]) <= 1e-5 * fmax(1, fabs(g64[v][i]))))
                ck_abort_msg("%s case %d: float32 gradient %.9g, float64 %.12g", k->type, _i,
                             g32[v][i], g64[v][i]);
    bf_session_free(s);
    for (int v = 0; v < nvar; v++) {
        bf_tensor_free(vals[v]);
        free(g64[v]);
        free(g32[v]);
    }
    bf_context_free(ctx);
}
END_TEST

/* A small network of these blocks trained by SGD as built by bf_session_build_gradients, and
 * the runtime's own check of the backward pass (finite differences in a float64 re-run of the
 * page, where Maximum's Cast and SquaredDifference's constant turn float64 too) passes. */
START_TEST(gradients_whole_page_check) {
    bf_context *ctx = new_ctx(2);
    bf_session *s = open_page(
        ctx,
        "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[[0.5,-1,2],[1.5,0.25,-0.75]]}},"
        "{\"id\":\"y\",\"type\":\"Const\",\"attrs\":{\"value\":[[0.1,0.9,0.4],[0.6,0.2,0.8]]}},"
        "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"value\":[0.3,-0.2,0.5]}},"
        "{\"id\":\"b\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2,3],"
        "\"initializer\":\"random_uniform\",\"minval\":-0.5,\"maxval\":0.5,\"seed\":5}},"
        "{\"id\":\"m\",\"type\":\"Mul\",\"inputs\":{\"x\":\"x\",\"y\":\"a\"}},"
        "{\"id\":\"d\",\"type\":\"Sub\",\"inputs\":{\"x\":\"m\",\"y\":\"b\"}},"
        "{\"id\":\"e\",\"type\":\"Exp\",\"inputs\":{\"x\":\"d\"}},"
        "{\"id\":\"ne\",\"type\":\"Neg\",\"inputs\":{\"x\":\"e\"}},"
        "{\"id\":\"mx\",\"type\":\"Maximum\",\"inputs\":{\"x\":\"ne\",\"y\":\"e\"}},"
        "{\"id\":\"t\",\"type\":\"Tanh\",\"inputs\":{\"x\":\"d\"}},"
        "{\"id\":\"n\",\"type\":\"AddN\",\"inputs\":{\"inputs_0\":\"mx\",\"inputs_1\":\"t\"}},"
        "{\"id\":\"q\",\"type\":\"Sigmoid\",\"inputs\":{\"x\":\"n\"}},"
        "{\"id\":\"L\",\"type\":\"SquaredDifference\",\"inputs\":{\"x\":\"q\",\"y\":\"y\"}}],"
        "\"outputs\":[\"L\"]}");
    char *created = NULL;
    bf_error e = {0};
    if (bf_session_build_gradients(s, "L", NULL, 0, "sgd:0.5", &created, &e))
        ck_abort_msg("build_gradients: %s %s", e.code, e.message);
    bf_string_free(created);
    double before = loss_sum(s);
    bf_step_options o;
    bf_step_options_init(&o);
    if (bf_session_step(s, 20, &o, NULL, &e)) ck_abort_msg("step: %s %s", e.code, e.message);
    double after = loss_sum(s);
    ck_assert_msg(after < before, "the loss went from %g to %g", before, after);
    char *json = NULL;
    ck_assert_int_eq(bf_session_check_gradients(s, "L", NULL, &json, &e), BF_OK);
    ck_assert_msg(strstr(json, "\"pass\":true") && !strstr(json, "\"pass\":false"), "%s", json);
    bf_string_free(json);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* The gradient blocks have no gradient of their own here (no second derivatives): a loss
 * that depends on a Variable through one is refused, naming it. (Equal and GreaterEqual have
 * none either, as in TensorFlow, but their int32 output already cuts the path: the builder
 * never asks them.) */
START_TEST(gradients_missing) {
    static const char *const types[][3] = {
        {"ReluGrad", "gradients", "features"},
        {"SigmoidGrad", "y", "dy"},
        {"TanhGrad", "y", "dy"},
    };
    bf_context *ctx = new_ctx(1);
    for (int k = 0; k < 3; k++) {
        bf_session *s = open_page(
            ctx,
            "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
            "{\"id\":\"f\",\"type\":\"%s\",\"inputs\":{\"%s\":\"a\",\"%s\":\"a\"}},"
            "{\"id\":\"L\",\"type\":\"Mul\",\"inputs\":{\"x\":\"f\",\"y\":\"f\"}}]}",
            types[k][0], types[k][1], types[k][2]);
        char *created = NULL;
        bf_error e = {0};
        ck_assert_int_eq(bf_session_build_gradients(s, "L", NULL, 0, NULL, &created, &e),
                         BF_EUNSUPPORTED);
        ck_assert_str_eq(e.code, "no_gradient");
        ck_assert_str_eq(e.block_id, "f");
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* ---- suite ----------------------------------------------------------------------------------- */

static Suite *suite(void) {
    Suite *s = suite_create("math_ops");
    TCase *tc = tcase_create("binary");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, binary_matches_reference, 0, N_BINOPS * 6);
    tcase_add_test(tc, binary_hand_checked);
    tcase_add_loop_test(tc, binary_special_values, 0, 4);
    tcase_add_test(tc, binary_integers);
    tcase_add_loop_test(tc, binary_incompatible_shapes, 0,
                        (int)(sizeof(bad_shapes) / sizeof(bad_shapes[0])));
    tcase_add_test(tc, binary_partial_shapes);
    tcase_add_test(tc, binary_dtype_mismatch);
    suite_add_tcase(s, tc);

    tc = tcase_create("unary");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, unary_matches_reference, 0, N_UNOPS * 6);
    tcase_add_loop_test(tc, unary_special_values, 0, 2);
    tcase_add_test(tc, unary_integer_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("gradient_blocks");
    tcase_add_loop_test(tc, grad_ops_match_definition, 0, N_GRADOPS * 4);
    tcase_add_test(tc, grad_ops_same_shape);
    suite_add_tcase(s, tc);

    tc = tcase_create("add_n");
    tcase_add_loop_test(tc, add_n_matches_reference, 0, 6);
    tcase_add_test(tc, add_n_errors);
    tcase_add_test(tc, add_n_optional_ports);
    suite_add_tcase(s, tc);

    tc = tcase_create("gradients");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, gradients_match_finite_differences, 0, N_GCASES);
    tcase_add_test(tc, gradients_whole_page_check);
    tcase_add_test(tc, gradients_missing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
