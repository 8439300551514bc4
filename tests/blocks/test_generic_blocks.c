/*
 * test_generic_blocks.c - the generic blocks of blocks/ (Add, Sub, Mul, Sum, RelativeError,
 * Identity, Const, Placeholder, RandomNormal, RandomUniform), driven through the public API
 * only: small pages as JSON strings, Placeholders fed with tensors built here, results read
 * back with a decoder written here (not bf_tensor_get_f64), compared with a float64 reference
 * computed here on random non-zero data.
 *
 * Tolerances, per element, |got - ref| <= rtol * |ref| (ref exact in float64):
 *   float64 2^-52, float32 2^-23, float16 2^-10, bfloat16 2^-7 (one unit in the last place of
 *   a correctly rounded result), int32 and int64 0 (exact).
 * Inputs for float16/bfloat16 are k/256 with 26 <= |k| <= 256, exactly representable in both,
 * so the reference sees exactly what the block sees. Sum also allows 4 * 2^-53 * sum|x| for
 * the reference's own accumulation (long double here, compensated double in the block).
 * Random blocks: statistics on 2^20 samples (2^16 for the half types) within 5 standard errors
 * (a false failure about once in 3.5 million runs), plus the dtype's rounding.
 *
 * Error cases assert status, code, block_id, port or attr, and the JSON pointer, as the code
 * of each block fills them (math_ops/cwise.c, relative_error.c, const.c, placeholder.c,
 * random_fill.c). Their catalogue entries (graph_schemas/block_catalog.json) state: Add, Sub,
 * Mul take every dtype, same dtype on x and y, shapes that broadcast (TensorFlow's rules;
 * tests/blocks/test_math_ops.c checks broadcasting itself); RandomNormal and
 * RandomUniform make floating dtypes only; Const takes exactly one of value and file.
 */
#include "bf_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Load the page (HEAD + `fmt` ...) from a string; `dir` resolves "file" attributes. */
static bf_status try_load(bf_context *ctx, const char *dir, bf_page **page, bf_error *e,
                          const char *fmt, ...) {
    char body[4096], json[4200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof(body));
    snprintf(json, sizeof(json), HEAD "%s", body);
    return bf_page_load_string(ctx, json, strlen(json), "g.json", dir, page, NULL, e);
}

/* A session on the page HEAD + body, asserting that the page loads. */
static bf_session *open_page(bf_context *ctx, const char *body) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (try_load(ctx, NULL, &page, &e, "%s", body))
        ck_abort_msg("page does not load: %s %s", e.code, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

/* Run the page, fetching block `id`. */
static bf_status run_fetch(bf_session *s, const char *id, bf_error *e) {
    const char *f[1] = {id};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    return bf_session_run(s, &o, NULL, e);
}

/* Run, fetch `id`, assert success, return its (borrowed) first output. */
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

/* Assert every field an error case is about. port/attr "" means "must be empty". */
static void expect_error(const bf_error *e, bf_status status, const char *code,
                         const char *block, const char *port, const char *attr,
                         const char *pointer) {
    ck_assert_msg(e->status == status, "status %s, want %s (%s)", bf_status_name(e->status),
                  bf_status_name(status), e->message);
    ck_assert_str_eq(e->code, code);
    ck_assert_str_eq(e->block_id, block);
    ck_assert_str_eq(e->port, port);
    ck_assert_str_eq(e->attr, attr);
    ck_assert_str_eq(e->pointer, pointer);
    ck_assert_msg(e->message[0] != '\0', "an error has a message");
}

/* ---- dtypes: encoding and decoding written here, independent of the library ------------- */

static const bf_dtype all_dtypes[6] = {BF_DTYPE_F16, BF_DTYPE_BF16, BF_DTYPE_F32,
                                       BF_DTYPE_F64, BF_DTYPE_I32,  BF_DTYPE_I64};
static const bf_dtype float_dtypes[4] = {BF_DTYPE_F16, BF_DTYPE_BF16, BF_DTYPE_F32,
                                         BF_DTYPE_F64};

/* One unit in the last place, relative: the stated tolerance of each dtype. */
static double ulp_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F16: return ldexp(1, -10);
    case BF_DTYPE_BF16: return ldexp(1, -7);
    case BF_DTYPE_F32: return ldexp(1, -23);
    case BF_DTYPE_F64: return ldexp(1, -52);
    default: return 0; /* integers: exact */
    }
}

static bool is_int(bf_dtype dt) { return dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64; }

/* binary16 of a value that is exactly representable and normal (asserted). */
static uint16_t enc_f16(double v) {
    if (v == 0) return signbit(v) ? 0x8000u : 0;
    int e;
    double m = frexp(fabs(v), &e); /* v = m * 2^e, m in [0.5, 1) */
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

/* bfloat16: the top 16 bits of a float32 (v exactly representable, asserted). */
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

/* Element i of t, decoded here. */
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

/* Store v (exactly representable in the dtype) as element i. */
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

/* A random non-zero value representable in dt: f16/bf16 k/256, ints in +-[1, 1000]. */
static double random_value(bf_rng *r, bf_dtype dt) {
    if (is_int(dt)) {
        int64_t k = bf_rng_int(r, 1, 1000);
        return (double)((bf_rng_next(r) & 1) ? k : -k);
    }
    if (dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16) {
        int64_t k = bf_rng_int(r, 26, 256);
        return (double)((bf_rng_next(r) & 1) ? k : -k) / 256;
    }
    double v = bf_rng_nonzero(r);
    return dt == BF_DTYPE_F32 ? (double)(float)v : v;
}

/* A tensor of random non-zero values; ref (numel doubles, may be NULL) gets them exactly. */
static bf_tensor *random_tensor(bf_dtype dt, int rank, const int64_t *dims, bf_rng *r,
                                double *ref) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        double v = random_value(r, dt);
        set_elem(t, i, v);
        if (ref) ref[i] = v;
    }
    return t;
}

static void expect_shape(const bf_tensor *t, bf_dtype dt, int rank, const int64_t *dims) {
    ck_assert_msg(bf_tensor_dtype(t) == dt, "dtype %s, want %s", bf_dtype_name(bf_tensor_dtype(t)),
                  bf_dtype_name(dt));
    ck_assert_int_eq(bf_tensor_rank(t), rank);
    for (int i = 0; i < rank; i++) ck_assert_int_eq(bf_tensor_dims(t)[i], dims[i]);
}

/* |got[i] - ref[i]| <= rtol * |ref[i]| for every element. Loops over elements test with a
 * plain `if` and abort on failure: a passing ck_assert writes to Check's pipe (a mark point),
 * which costs seconds over a million elements. */
static void expect_values(const bf_tensor *t, const double *ref, int64_t n, double rtol,
                          const char *what) {
    ck_assert_int_eq(bf_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = elem(t, i);
        if (!(fabs(got - ref[i]) <= rtol * fabs(ref[i])))
            ck_abort_msg("%s (%s): element %ld is %.17g, want %.17g (rtol %g)", what,
                         bf_dtype_name(bf_tensor_dtype(t)), (long)i, got, ref[i], rtol);
    }
}

/* ---- Add, Sub, Mul ------------------------------------------------------------------------ */

static const char *const binop_types[3] = {"Add", "Sub", "Mul"};

static double binop_ref(int op, double a, double b) {
    return op == 0 ? a + b : op == 1 ? a - b : a * b;
}

/* The shapes of x and y: equal shapes, x a scalar, y a scalar, both scalars. */
typedef struct bcase {
    int xr, yr;
    int64_t xd[3], yd[3];
} bcase;
static const bcase bcases[4] = {
    {3, 3, {2, 3, 5}, {2, 3, 5}},
    {0, 3, {0}, {2, 3, 5}},
    {3, 0, {2, 3, 5}, {0}},
    {0, 0, {0}, {0}},
};

/* Loop index i: op = i % 3, dtype = (i / 3) % 6, shape case = i / 18. */
START_TEST(binary_matches_reference) {
    int op = _i % 3;
    bf_dtype dt = all_dtypes[(_i / 3) % 6];
    const bcase *c = &bcases[_i / 18];
    bf_rng r = {(uint64_t)_i + 1};
    double xr[30], yr[30], want[30];
    bf_tensor *x = random_tensor(dt, c->xr, c->xd, &r, xr);
    bf_tensor *y = random_tensor(dt, c->yr, c->yd, &r, yr);
    int64_t nx = bf_tensor_numel(x), ny = bf_tensor_numel(y), n = nx > ny ? nx : ny;
    for (int64_t i = 0; i < n; i++)
        want[i] = binop_ref(op, xr[nx == 1 ? 0 : i], yr[ny == 1 ? 0 : i]);

    bf_context *ctx = new_ctx(2);
    char page[512];
    snprintf(page, sizeof(page),
             "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"z\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
             bf_dtype_name(dt), bf_dtype_name(dt), binop_types[op]);
    bf_session *s = open_page(ctx, page);
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    const bf_tensor *z = run_ok(s, "z");
    const bcase *big = c->xr ? c : NULL;
    if (big) expect_shape(z, dt, c->xr, c->xd);
    else expect_shape(z, dt, c->yr, c->yd);
    ck_assert_ptr_eq(bf_session_output(s, "z", "z"), z); /* the port is named "z" */
    expect_values(z, want, n, ulp_of(dt), binop_types[op]);
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(x);
    bf_tensor_free(y);
}
END_TEST

/* Hand-checked values, so that the reference itself is checked: operand order and the
 * scalar on either side (5 - [1,2] is [4,3], [1,2] - 5 is [-4,-3]). */
START_TEST(binary_scalar_sides) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"v\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
             "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":5}},"
             "{\"id\":\"a\",\"type\":\"Sub\",\"inputs\":{\"x\":\"k\",\"y\":\"v\"}},"
             "{\"id\":\"b\",\"type\":\"Sub\",\"inputs\":{\"x\":\"v\",\"y\":\"k\"}},"
             "{\"id\":\"c\",\"type\":\"Mul\",\"inputs\":{\"x\":\"v\",\"y\":\"k\"}},"
             "{\"id\":\"d\",\"type\":\"Add\",\"inputs\":{\"x\":\"k\",\"y\":\"k\"}}]}");
    static const char *const ids[3] = {"a", "b", "c"};
    static const double want[3][2] = {{4, 3}, {-4, -3}, {5, 10}};
    const int64_t two[1] = {2};
    for (int k = 0; k < 3; k++) {
        const bf_tensor *t = run_ok(s, ids[k]);
        expect_shape(t, BF_DTYPE_F32, 1, two);
        expect_values(t, want[k], 2, 0, ids[k]);
    }
    const bf_tensor *d = run_ok(s, "d");
    expect_shape(d, BF_DTYPE_F32, 0, NULL);
    ck_assert_double_eq(elem(d, 0), 10);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* int64 is exact beyond 2^53, where a double loses the low bits (TensorFlow's int64 Add,
 * Sub and Mul are exact). */
START_TEST(binary_int64_exact) {
    const int64_t big = ((int64_t)1 << 53) + 1, dims[1] = {3};
    const int64_t xs[3] = {big, -big, (int64_t)3037000499}; /* 3037000499^2 < 2^63 */
    const int64_t ys[3] = {2, -2, (int64_t)3037000499};
    bf_tensor *x = NULL, *y = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_I64, 1, dims, &x, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_I64, 1, dims, &y, NULL), BF_OK);
    memcpy(bf_tensor_data(x), xs, sizeof(xs));
    memcpy(bf_tensor_data(y), ys, sizeof(ys));
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int64\"}},"
             "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int64\"}},"
             "{\"id\":\"add\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
             "{\"id\":\"sub\",\"type\":\"Sub\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
             "{\"id\":\"mul\",\"type\":\"Mul\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}");
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    static const char *const ids[3] = {"add", "sub", "mul"};
    for (int k = 0; k < 3; k++) {
        const int64_t *z = bf_tensor_cdata(run_ok(s, ids[k]));
        for (int i = 0; i < 3; i++) {
            int64_t want = k == 0 ? xs[i] + ys[i] : k == 1 ? xs[i] - ys[i] : xs[i] * ys[i];
            ck_assert_msg(z[i] == want, "%s[%d] = %lld, want %lld", ids[k], i, (long long)z[i],
                          (long long)want);
        }
    }
    bf_session_free(s);
    bf_tensor_free(x);
    bf_tensor_free(y);

    /* A result that overflows the dtype is an error naming the output, not a wrapped value. */
    s = open_page(ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
                       "\"value\":[1,2147483647]}},"
                       "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
                       "\"value\":1}},"
                       "{\"id\":\"z\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"k\"}}]}");
    bf_error e = {0};
    ck_assert_int_eq(run_fetch(s, "z", &e), BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "z", "", "/blocks/2");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(binary_dtype_mismatch) {
    bf_context *ctx = new_ctx(1);
    for (int op = 0; op < 3; op++) {
        char page[512];
        snprintf(page, sizeof(page),
                 "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
                 "{\"id\":\"y\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2],"
                 "\"dtype\":\"float64\"}},"
                 "{\"id\":\"z\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
                 binop_types[op]);
        bf_session *s = open_page(ctx, page);
        bf_error e = {0};
        ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
        expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "y", "", "/blocks/2/inputs/y");
        ck_assert_ptr_nonnull(strstr(e.message, "float32"));
        ck_assert_ptr_nonnull(strstr(e.message, "float64"));
        bf_error_clear(&e);
        ck_assert_int_eq(run_fetch(s, "z", &e), BF_EDTYPE); /* the run refuses the same way */
        expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "y", "", "/blocks/2/inputs/y");
        ck_assert_ptr_null(bf_session_output(s, "z", NULL));
        bf_session_free(s);
    }
    /* A scalar does not relax the dtype rule: int32 scalar + float32 tensor. */
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[1.5,2]}},"
             "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":2,\"dtype\":\"int32\"}},"
             "{\"id\":\"z\",\"type\":\"Mul\",\"inputs\":{\"x\":\"k\",\"y\":\"x\"}}]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "z", "y", "", "/blocks/2/inputs/y");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Shapes that do not broadcast (TensorFlow's rules: trailing dims aligned, equal or 1). */
static const char *const bad_shapes[][2] = {
    {"[2,3]", "[3,2]"}, {"[2,3]", "[2]"}, {"[3]", "[4]"}, {"[2,1,3]", "[4,2]"}, {"[5]", "[2,3]"},
};

START_TEST(binary_shape_mismatch) {
    bf_context *ctx = new_ctx(1);
    for (int op = 0; op < 3; op++) {
        char page[512];
        snprintf(page, sizeof(page),
                 "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":%s}},"
                 "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":%s}},"
                 "{\"id\":\"sum_xy\",\"type\":\"%s\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}]}",
                 bad_shapes[_i][0], bad_shapes[_i][1], binop_types[op]);
        bf_session *s = open_page(ctx, page);
        bf_error e = {0};
        ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_ESHAPE);
        expect_error(&e, BF_ESHAPE, "shape_mismatch", "sum_xy", "y", "",
                     "/blocks/2/inputs/y");
        bf_session_free(s);
    }
    bf_context_free(ctx);
}
END_TEST

/* Unknown dims at check time: known ones fill each other in, and the run, with both fed,
 * checks again (a [4,3] feed against a [2,3] one). */
START_TEST(binary_partial_shapes) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,3]}},"
             "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[2,-1]}},"
             "{\"id\":\"u\",\"type\":\"Placeholder\"},"
             "{\"id\":\"z\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}},"
             "{\"id\":\"w\",\"type\":\"Mul\",\"inputs\":{\"x\":\"u\",\"y\":\"y\"}}]}");
    bf_port_shape p;
    ck_assert_int_eq(bf_session_port_shape(s, "z", "z", 1, &p, NULL), BF_OK);
    ck_assert_int_eq(p.dtype, BF_DTYPE_F32);
    ck_assert_int_eq(p.rank, 2);
    ck_assert_int_eq(p.dims[0], 2);
    ck_assert_int_eq(p.dims[1], 3);
    ck_assert_int_eq(bf_session_port_shape(s, "w", NULL, 1, &p, NULL), BF_OK);
    ck_assert_int_eq(p.rank, -1); /* u of unknown rank: broadcasting may add dims */

    bf_rng r = {7};
    const int64_t d43[2] = {4, 3}, d23[2] = {2, 3};
    bf_tensor *x = random_tensor(BF_DTYPE_F32, 2, d43, &r, NULL);
    bf_tensor *y = random_tensor(BF_DTYPE_F32, 2, d23, &r, NULL);
    feed_ok(s, "x", x);
    feed_ok(s, "y", y);
    bf_error e = {0};
    ck_assert_int_eq(run_fetch(s, "z", &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "z", "y", "", "/blocks/3/inputs/y");
    ck_assert_str_eq(e.message, "Incompatible shapes: [4,3] vs. [2,3]");
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(x);
    bf_tensor_free(y);
}
END_TEST

/* ---- Sum ---------------------------------------------------------------------------------- */

START_TEST(sum_matches_reference) {
    bf_dtype dt = all_dtypes[_i];
    bf_rng r = {100 + (uint64_t)_i};
    static double xr[1000];
    const int64_t dims[3] = {10, 10, 10};
    bf_tensor *x = random_tensor(dt, 3, dims, &r, xr);
    long double acc = 0, mag = 0;
    for (int i = 0; i < 1000; i++) acc += xr[i], mag += fabs(xr[i]);
    bf_context *ctx = new_ctx(2);
    char page[256];
    snprintf(page, sizeof(page),
             "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"s\",\"type\":\"Sum\",\"inputs\":{\"input\":\"x\"}}]}",
             bf_dtype_name(dt));
    bf_session *s = open_page(ctx, page);
    feed_ok(s, "x", x);
    const bf_tensor *t = run_ok(s, "s");
    expect_shape(t, dt, 0, NULL);
    double want = (double)acc, got = elem(t, 0);
    double tol = ulp_of(dt) * fabs(want) + (is_int(dt) ? 0 : 4 * ldexp(1, -53) * (double)mag);
    ck_assert_msg(fabs(got - want) <= tol, "%s: sum %.17g, want %.17g (tol %g)",
                  bf_dtype_name(dt), got, want, tol);
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(x);
}
END_TEST

/* The accumulation is compensated, as sum.c says: 1e16 + 1 - 1e16 + 1 is 2 in float64, where
 * a plain double loop gives 0 (1e16 + 1 rounds to 1e16); a scalar sums to itself. */
START_TEST(sum_compensated_and_scalar) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"v\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\","
             "\"value\":[1e16,1,-1e16,1]}},"
             "{\"id\":\"s\",\"type\":\"Sum\",\"inputs\":{\"input\":\"v\"}},"
             "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":-2.5,\"dtype\":\"bfloat16\"}},"
             "{\"id\":\"t\",\"type\":\"Sum\",\"inputs\":{\"input\":\"k\"}}]}");
    const bf_tensor *t = run_ok(s, "s");
    expect_shape(t, BF_DTYPE_F64, 0, NULL);
    ck_assert_double_eq(elem(t, 0), 2);
    t = run_ok(s, "t");
    expect_shape(t, BF_DTYPE_BF16, 0, NULL);
    ck_assert_double_eq(elem(t, 0), -2.5);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- RelativeError ------------------------------------------------------------------------ */

START_TEST(relative_error_matches_reference) {
    bf_dtype dt = all_dtypes[_i];
    bf_rng r = {200 + (uint64_t)_i};
    double ar[24], br[24];
    const int64_t dims[3] = {2, 3, 4};
    bf_tensor *a = random_tensor(dt, 3, dims, &r, ar);
    bf_tensor *b = random_tensor(dt, 3, dims, &r, br);
    double diff = 0, scale = 0;
    for (int i = 0; i < 24; i++) {
        diff = fmax(diff, fabs(ar[i] - br[i]));
        scale = fmax(scale, fmax(fabs(ar[i]), fabs(br[i])));
    }
    bf_context *ctx = new_ctx(1);
    char page[512];
    snprintf(page, sizeof(page),
             "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"e\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"}},"
             "{\"id\":\"same\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"a\",\"b\":\"a\"}}"
             "]}",
             bf_dtype_name(dt), bf_dtype_name(dt));
    bf_session *s = open_page(ctx, page);
    feed_ok(s, "a", a);
    feed_ok(s, "b", b);
    const bf_tensor *t = run_ok(s, "e");
    expect_shape(t, BF_DTYPE_F64, 0, NULL); /* float64 whatever the inputs */
    double want = diff / scale;
    expect_values(t, &want, 1, ldexp(1, -52), "RelativeError");
    ck_assert_double_gt(elem(t, 0), 0.05); /* independent random data: far from 0 */
    ck_assert_double_eq(elem(run_ok(s, "same"), 0), 0);
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(a);
    bf_tensor_free(b);
}
END_TEST

/* The synopsis' example, a NaN that must not hide, two zeros, and mixed dtypes. */
START_TEST(relative_error_cases) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1.0,2.0],"
             "\"dtype\":\"float64\"}},"
             "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"value\":[1.0,2.002],"
             "\"dtype\":\"float64\"}},"
             "{\"id\":\"e\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"}},"
             "{\"id\":\"z\",\"type\":\"Const\",\"attrs\":{\"value\":0,\"shape\":[3]}},"
             "{\"id\":\"ez\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"z\",\"b\":\"z\"}},"
             "{\"id\":\"i\",\"type\":\"Const\",\"attrs\":{\"value\":[1,4],\"dtype\":\"int32\"}},"
             "{\"id\":\"f\",\"type\":\"Const\",\"attrs\":{\"value\":[1,3]}},"
             "{\"id\":\"em\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"i\",\"b\":\"f\"}},"
             "{\"id\":\"n\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[3]}},"
             "{\"id\":\"en\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"n\",\"b\":\"z\"}}]}");
    double want = (2.002 - 2.0) / 2.002;
    expect_values(run_ok(s, "e"), &want, 1, 1e-15, "synopsis example");
    ck_assert_double_eq(elem(run_ok(s, "ez"), 0), 0);
    ck_assert_double_eq(elem(run_ok(s, "em"), 0), 0.25);
    const int64_t d3[1] = {3};
    bf_tensor *nan_t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d3, &nan_t, NULL), BF_OK);
    ((float *)bf_tensor_data(nan_t))[0] = 5;
    ((float *)bf_tensor_data(nan_t))[1] = NAN;
    feed_ok(s, "n", nan_t);
    ck_assert(isnan(elem(run_ok(s, "en"), 0)));
    bf_tensor_free(nan_t);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(relative_error_shape_mismatch) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2],[3,4]]}},"
             "{\"id\":\"b\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3,4]}},"
             "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
             "{\"id\":\"e\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"}},"
             "{\"id\":\"f\",\"type\":\"RelativeError\",\"inputs\":{\"a\":\"a\",\"b\":\"c\"}}]}");
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "e", "b", "", "/blocks/3/inputs/b");
    ck_assert_uint_eq(bf_diags_errors(d), 2); /* no scalar broadcasting either */
    expect_error(bf_diags_at(d, 1), BF_ESHAPE, "shape_mismatch", "f", "b", "",
                 "/blocks/4/inputs/b");
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- Identity and Placeholder ------------------------------------------------------------- */

/* Every dtype passes through a Placeholder and an Identity bit for bit. */
START_TEST(identity_and_placeholder_every_dtype) {
    bf_dtype dt = all_dtypes[_i];
    bf_rng r = {300 + (uint64_t)_i};
    const int64_t dims[4] = {1, 2, 3, 2};
    bf_tensor *x = random_tensor(dt, 4, dims, &r, NULL);
    bf_context *ctx = new_ctx(1);
    char page[256];
    snprintf(page, sizeof(page),
             "{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\","
             "\"shape\":[1,-1,3,-1]}},"
             "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"p\"}}]}",
             bf_dtype_name(dt));
    bf_session *s = open_page(ctx, page);
    feed_ok(s, "p", x);
    static const char *const ids[2] = {"i", "p"};
    for (int k = 0; k < 2; k++) {
        const bf_tensor *t = run_ok(s, ids[k]);
        expect_shape(t, dt, 4, dims);
        ck_assert_int_eq(bf_tensor_nbytes(t), bf_tensor_nbytes(x));
        ck_assert(!memcmp(bf_tensor_cdata(t), bf_tensor_cdata(x), bf_tensor_nbytes(x)));
    }
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(x);
}
END_TEST

START_TEST(placeholder_errors) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
             "{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\","
             "\"shape\":[2,-1]}},"
             "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"p\"}}]}");
    bf_error e = {0};
    /* unfed: the check knows the declared shape; the run names the placeholder */
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "i", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.dtype, BF_DTYPE_I32);
    ck_assert_int_eq(ps.rank, 2);
    ck_assert_int_eq(ps.dims[0], 2);
    ck_assert_int_eq(ps.dims[1], -1);
    ck_assert_int_eq(run_fetch(s, "i", &e), BF_EINVAL);
    expect_error(&e, BF_EINVAL, "missing_feed", "p", "", "", "/blocks/1");
    ck_assert_ptr_nonnull(strstr(e.message, "\"p\""));

    bf_rng r = {11};
    const int64_t d23[2] = {2, 3}, d33[2] = {3, 3}, d2[1] = {2};
    bf_tensor *wrong_dt = random_tensor(BF_DTYPE_I64, 2, d23, &r, NULL);
    bf_tensor *wrong_dim = random_tensor(BF_DTYPE_I32, 2, d33, &r, NULL);
    bf_tensor *wrong_rank = random_tensor(BF_DTYPE_I32, 1, d2, &r, NULL);
    bf_tensor *good = random_tensor(BF_DTYPE_I32, 2, d23, &r, NULL);
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_feed(s, "p", wrong_dt, &e), BF_EDTYPE);
    expect_error(&e, BF_EDTYPE, "dtype_mismatch", "p", "output", "dtype",
                 "/blocks/1/attrs/dtype");
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_feed(s, "p", wrong_dim, &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "p", "output", "shape",
                 "/blocks/1/attrs/shape");
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_feed(s, "p", wrong_rank, &e), BF_ESHAPE);
    expect_error(&e, BF_ESHAPE, "shape_mismatch", "p", "output", "shape",
                 "/blocks/1/attrs/shape");
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_feed(s, "c", good, &e), BF_EINVAL); /* a Const is no input */
    ck_assert_str_eq(e.code, "not_feedable");
    ck_assert_str_eq(e.block_id, "c");
    /* refused feeds left it unfed; a good one runs */
    ck_assert_int_eq(run_fetch(s, "i", &e), BF_EINVAL);
    feed_ok(s, "p", good);
    const bf_tensor *t = run_ok(s, "i");
    ck_assert(!memcmp(bf_tensor_cdata(t), bf_tensor_cdata(good), bf_tensor_nbytes(good)));
    bf_tensor_free(wrong_dt);
    bf_tensor_free(wrong_dim);
    bf_tensor_free(wrong_rank);
    bf_tensor_free(good);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* No "shape": any rank, a scalar included; the dtype defaults to float32. */
START_TEST(placeholder_any_shape) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(ctx, "{\"id\":\"p\",\"type\":\"Placeholder\"}]}");
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "p", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.dtype, BF_DTYPE_F32);
    ck_assert_int_eq(ps.rank, -1);
    bf_rng r = {12};
    const int64_t d5[5] = {1, 2, 1, 2, 1};
    for (int rank = 0; rank <= 5; rank += 5) {
        bf_tensor *x = random_tensor(BF_DTYPE_F32, rank, d5, &r, NULL);
        feed_ok(s, "p", x);
        const bf_tensor *t = run_ok(s, "p");
        expect_shape(t, BF_DTYPE_F32, rank, d5);
        ck_assert(!memcmp(bf_tensor_cdata(t), bf_tensor_cdata(x), bf_tensor_nbytes(x)));
        bf_tensor_free(x);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- Const -------------------------------------------------------------------------------- */

/* Inline values in every dtype: a flat list with a shape, rounded to the dtype (1 ulp). */
START_TEST(const_inline_every_dtype) {
    bf_dtype dt = all_dtypes[_i];
    bf_rng r = {400 + (uint64_t)_i};
    double want[6];
    char list[512];
    size_t n = 0;
    for (int i = 0; i < 6; i++) {
        /* any double for the floats (the block rounds), integers for the int dtypes */
        want[i] = is_int(dt) ? random_value(&r, dt) : bf_rng_nonzero(&r) * 100;
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%.17g", i ? "," : "", want[i]);
    }
    bf_context *ctx = new_ctx(1);
    char page[1024];
    snprintf(page, sizeof(page),
             "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"%s\",\"shape\":[3,1,2],"
             "\"value\":[%s]}}]}",
             bf_dtype_name(dt), list);
    bf_session *s = open_page(ctx, page);
    const int64_t dims[3] = {3, 1, 2};
    const bf_tensor *t = run_ok(s, "c");
    expect_shape(t, dt, 3, dims);
    expect_values(t, want, 6, ulp_of(dt), "Const");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Defaults: nesting gives the shape, float32; a bare number is a scalar; one number with a
 * shape fills it (tf.fill); an int64 fill; a nested value reshaped by "shape". */
START_TEST(const_shapes_and_fill) {
    bf_context *ctx = new_ctx(1);
    bf_session *s = open_page(
        ctx, "{\"id\":\"m\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2,3],[4,5,6.5]]}},"
             "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":-0.25}},"
             "{\"id\":\"f\",\"type\":\"Const\",\"attrs\":{\"value\":0.1,\"shape\":[2,2,2],"
             "\"dtype\":\"float16\"}},"
             "{\"id\":\"fi\",\"type\":\"Const\",\"attrs\":{\"value\":-7,\"shape\":[4],"
             "\"dtype\":\"int64\"}},"
             "{\"id\":\"r\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2],[3,4],[5,6]],"
             "\"shape\":[2,3],\"dtype\":\"float64\"}}]}");
    const int64_t d23[2] = {2, 3}, d222[3] = {2, 2, 2}, d4[1] = {4};
    const double m[6] = {1, 2, 3, 4, 5, 6.5}, k[1] = {-0.25}, fi[4] = {-7, -7, -7, -7};
    const double f[8] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, rr[6] = {1, 2, 3, 4, 5, 6};
    const bf_tensor *t = run_ok(s, "m");
    expect_shape(t, BF_DTYPE_F32, 2, d23);
    expect_values(t, m, 6, 0, "nested");
    t = run_ok(s, "k");
    expect_shape(t, BF_DTYPE_F32, 0, NULL);
    expect_values(t, k, 1, 0, "scalar");
    t = run_ok(s, "f");
    expect_shape(t, BF_DTYPE_F16, 3, d222);
    expect_values(t, f, 8, ulp_of(BF_DTYPE_F16), "fill");
    t = run_ok(s, "fi");
    expect_shape(t, BF_DTYPE_I64, 1, d4);
    expect_values(t, fi, 4, 0, "int fill");
    t = run_ok(s, "r");
    expect_shape(t, BF_DTYPE_F64, 2, d23);
    expect_values(t, rr, 6, 0, "reshaped");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Each attribute error of Const, found when the session is made (Const's init builds its
 * tensor there, const.c), naming the block and the attribute. */
typedef struct const_error {
    const char *attrs;
    bf_status status;
    const char *code, *attr;
} const_error;
static const const_error const_errors[] = {
    {"{\"dtype\":\"int32\",\"value\":[1,2.5]}", BF_EDTYPE, "dtype_mismatch", "value"},
    {"{\"dtype\":\"int64\",\"value\":[[1],[-0.5]]}", BF_EDTYPE, "dtype_mismatch", "value"},
    {"{\"dtype\":\"int32\",\"value\":0.5,\"shape\":[3]}", BF_EDTYPE, "dtype_mismatch", "value"},
    {"{\"dtype\":\"int32\",\"value\":[3e9]}", BF_EDTYPE, "dtype_mismatch", "value"},
    {"{\"value\":[1,2,3],\"shape\":[2,2]}", BF_ESHAPE, "shape_mismatch", "value"},
    {"{\"value\":[],\"shape\":[1]}", BF_ESHAPE, "shape_mismatch", "value"},
    {"{\"value\":[1,2],\"shape\":[2,-1]}", BF_EATTR, "bad_attr", "shape"},
    {"{\"dtype\":\"float32\"}", BF_EATTR, "missing_attr", "value"},
    {"{\"value\":[1],\"file\":\"x.npy\"}", BF_EATTR, "bad_attr", "file"},
};

START_TEST(const_attr_errors) {
    const const_error *c = &const_errors[_i];
    char dir[] = "/tmp/bf_test_generic.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/x.npy", dir);
    bf_tensor *one = NULL;
    const int64_t d1[1] = {1};
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d1, &one, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_save_npy(one, path, NULL), BF_OK);
    bf_tensor_free(one);

    bf_context *ctx = new_ctx(1);
    bf_page *page = NULL;
    bf_error e = {0};
    bf_status st = try_load(ctx, dir, &page, &e,
                            "{\"id\":\"ok\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
                            "{\"id\":\"bad\",\"type\":\"Const\",\"attrs\":%s}]}",
                            c->attrs);
    ck_assert_msg(st == BF_OK, "%s: %s", c->attrs, e.message);
    bf_session *s = NULL;
    st = bf_session_new(ctx, page, &s, &e); /* frees the page on failure */
    ck_assert_msg(st == c->status, "%s: %s (%s)", c->attrs, bf_status_name(st), e.message);
    ck_assert_ptr_null(s);
    char pointer[64];
    snprintf(pointer, sizeof(pointer), "/blocks/1/attrs/%s", c->attr);
    expect_error(&e, c->status, c->code, "bad", "", c->attr, pointer);
    unlink(path);
    rmdir(dir);
    bf_context_free(ctx);
}
END_TEST

/* Write a version 1.0 .npy of n float64 or int64 values, byte by byte (not the library). */
static void write_npy(const char *path, const char *descr, const char *shape, const void *data,
                      size_t nbytes) {
    char header[128];
    int len = snprintf(header, sizeof(header),
                       "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    int total = (10 + len + 1 + 63) / 64 * 64; /* data 64-byte aligned */
    memset(header + len, ' ', (size_t)(total - 10 - len - 1));
    header[total - 10 - 1] = '\n';
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)((total - 10) & 0xff),
                             (unsigned char)((total - 10) >> 8)};
    ck_assert_int_eq(fwrite(pre, 1, 10, f), 10);
    ck_assert_int_eq(fwrite(header, 1, (size_t)(total - 10), f), (size_t)(total - 10));
    ck_assert_int_eq(fwrite(data, 1, nbytes, f), nbytes);
    ck_assert_int_eq(fclose(f), 0);
}

/* A .npy file next to the page: its dtype and shape, converted to "dtype", reshaped by
 * "shape"; a shape of the wrong size and a missing file are errors naming the attribute. */
START_TEST(const_file) {
    char dir[] = "/tmp/bf_test_generic.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char fpath[256], ipath[256], hpath[256];
    snprintf(fpath, sizeof(fpath), "%s/f.npy", dir);
    snprintf(ipath, sizeof(ipath), "%s/i.npy", dir);
    snprintf(hpath, sizeof(hpath), "%s/h.npy", dir);
    bf_rng r = {500};
    double fv[6];
    for (int i = 0; i < 6; i++) fv[i] = bf_rng_nonzero(&r) * 1000;
    const int64_t iv[4] = {-3, 1000000007, 4, -((int64_t)1 << 40)};
    const double hv[2] = {1.5, -2};
    write_npy(fpath, "<f8", "(2, 3)", fv, sizeof(fv));
    write_npy(ipath, "<i8", "(4,)", iv, sizeof(iv));
    write_npy(hpath, "<f8", "(2,)", hv, sizeof(hv));

    bf_context *ctx = new_ctx(1);
    bf_page *page = NULL;
    bf_error e = {0};
    bf_status st = try_load(
        ctx, dir, &page, &e,
        "{\"id\":\"f\",\"type\":\"Const\",\"attrs\":{\"file\":\"f.npy\"}},"
        "{\"id\":\"f32\",\"type\":\"Const\",\"attrs\":{\"file\":\"f.npy\",\"dtype\":\"float32\","
        "\"shape\":[3,2]}},"
        "{\"id\":\"fb\",\"type\":\"Const\",\"attrs\":{\"file\":\"f.npy\",\"dtype\":\"bfloat16\"}},"
        "{\"id\":\"i\",\"type\":\"Const\",\"attrs\":{\"file\":\"i.npy\",\"shape\":[2,1,2]}},"
        "{\"id\":\"i2f\",\"type\":\"Const\",\"attrs\":{\"file\":\"i.npy\",\"dtype\":\"float64\"}},"
        "{\"id\":\"h\",\"type\":\"Const\",\"attrs\":{\"file\":\"h.npy\",\"dtype\":\"float16\"}}]}");
    ck_assert_msg(st == BF_OK, "%s %s", e.code, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d212[3] = {2, 1, 2}, d4[1] = {4};
    const bf_tensor *t = run_ok(s, "f");
    expect_shape(t, BF_DTYPE_F64, 2, d23);
    expect_values(t, fv, 6, 0, "file");
    t = run_ok(s, "f32");
    expect_shape(t, BF_DTYPE_F32, 2, d32);
    expect_values(t, fv, 6, ulp_of(BF_DTYPE_F32), "file as float32");
    t = run_ok(s, "fb");
    expect_shape(t, BF_DTYPE_BF16, 2, d23);
    expect_values(t, fv, 6, ulp_of(BF_DTYPE_BF16), "file as bfloat16");
    t = run_ok(s, "i");
    expect_shape(t, BF_DTYPE_I64, 3, d212);
    ck_assert(!memcmp(bf_tensor_cdata(t), iv, sizeof(iv))); /* int64 bits, not via double */
    const double ivd[4] = {-3, 1000000007, 4, -1099511627776.0};
    t = run_ok(s, "i2f");
    expect_shape(t, BF_DTYPE_F64, 1, d4);
    expect_values(t, ivd, 4, 0, "int64 file as float64");
    t = run_ok(s, "h");
    expect_values(t, hv, 2, 0, "file as float16");
    bf_session_free(s);

    /* errors, each naming the block and the attribute */
    static const struct {
        const char *attrs;
        bf_status status;
        const char *code, *attr;
    } bad[] = {
        {"{\"file\":\"f.npy\",\"shape\":[7]}", BF_ESHAPE, "shape_mismatch", "shape"},
        {"{\"file\":\"i.npy\",\"dtype\":\"int32\"}", BF_EDTYPE, "dtype_mismatch", "file"},
        {"{\"file\":\"h.npy\",\"dtype\":\"int32\"}", BF_EDTYPE, "dtype_mismatch", "file"},
        {"{\"file\":\"h.npy\",\"dtype\":\"int64\"}", BF_EDTYPE, "dtype_mismatch", "file"},
        {"{\"file\":\"nothing_here.npy\"}", BF_EIO, NULL, "file"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        bf_error_clear(&e);
        page = NULL;
        st = try_load(ctx, dir, &page, &e, "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":%s}]}",
                      bad[k].attrs);
        if (st == BF_OK) { /* the file was read; Const converts it in bf_session_new */
            s = NULL;
            st = bf_session_new(ctx, page, &s, &e);
            ck_assert_msg(s == NULL, "%s: accepted", bad[k].attrs);
        }
        ck_assert_msg(st == bad[k].status, "%s: %s (%s)", bad[k].attrs, bf_status_name(st),
                      e.message);
        ck_assert_str_eq(e.block_id, "c");
        ck_assert_str_eq(e.attr, bad[k].attr);
        char pointer[64];
        snprintf(pointer, sizeof(pointer), "/blocks/0/attrs/%s", bad[k].attr);
        ck_assert_str_eq(e.pointer, pointer);
        if (bad[k].code) ck_assert_str_eq(e.code, bad[k].code);
    }
    unlink(fpath);
    unlink(ipath);
    unlink(hpath);
    rmdir(dir);
    bf_context_free(ctx);
}
END_TEST

/* ---- RandomNormal and RandomUniform ------------------------------------------------------- */

/* Run one random block of 2^log2n elements and return a copy (caller frees). */
static bf_tensor *random_run(const char *type, bf_dtype dt, int log2n, long long seed,
                             const char *params, int threads) {
    bf_context *ctx = new_ctx(threads);
    char page[512];
    snprintf(page, sizeof(page),
             "{\"id\":\"r\",\"type\":\"%s\",\"attrs\":{\"shape\":[%d,%d],\"dtype\":\"%s\","
             "\"seed\":%lld%s}}]}",
             type, 1 << (log2n / 2), 1 << (log2n - log2n / 2), bf_dtype_name(dt), seed, params);
    bf_session *s = open_page(ctx, page);
    const bf_tensor *t = run_ok(s, "r");
    const int64_t dims[2] = {1 << (log2n / 2), 1 << (log2n - log2n / 2)};
    expect_shape(t, dt, 2, dims);
    bf_tensor *copy = NULL;
    ck_assert_int_eq(bf_tensor_copy(t, &copy, NULL), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
    return copy;
}

static const char *const random_types[2] = {"RandomNormal", "RandomUniform"};

/* Loop index i: type = i / 4, dtype = float_dtypes[i % 4]. The same seed gives the same bits
 * in another session with another thread count; seeds 1 and 2 share almost no element. */
START_TEST(random_deterministic) {
    const char *type = random_types[_i / 4];
    bf_dtype dt = float_dtypes[_i % 4];
    bf_tensor *a = random_run(type, dt, 16, 1, "", 1);
    bf_tensor *b = random_run(type, dt, 16, 1, "", 2);
    bf_tensor *c = random_run(type, dt, 16, 2, "", 2);
    ck_assert(!memcmp(bf_tensor_cdata(a), bf_tensor_cdata(b), bf_tensor_nbytes(a)));
    int64_t n = bf_tensor_numel(a), equal = 0;
    for (int64_t i = 0; i < n; i++) equal += elem(a, i) == elem(c, i);
    /* independent draws coincide when they round to the same value: at most a few percent
     * for the 8-bit bfloat16, essentially never for float64 */
    ck_assert_msg(equal < n / 20, "%s %s: %ld of %ld equal across seeds", type,
                  bf_dtype_name(dt), (long)equal, (long)n);
    bf_tensor_free(a);
    bf_tensor_free(b);
    bf_tensor_free(c);
}
END_TEST

/* The lower-precision dtypes are the float64 values rounded once (1 ulp). */
START_TEST(random_dtypes_round_float64) {
    const char *type = random_types[_i / 3];
    bf_dtype dt = float_dtypes[_i % 3];
    const char *params = _i / 3 ? ",\"minval\":-3,\"maxval\":5" : ",\"mean\":1,\"stddev\":3";
    bf_tensor *ref = random_run(type, BF_DTYPE_F64, 12, 77, params, 1);
    bf_tensor *t = random_run(type, dt, 12, 77, params, 1);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        double want = elem(ref, i), got = elem(t, i);
        /* half types: below 2^-14 f16 is subnormal, so allow its absolute step there */
        double atol = dt == BF_DTYPE_F16 ? ldexp(1, -24) : 0;
        if (!(fabs(got - want) <= ulp_of(dt) * fabs(want) + atol))
            ck_abort_msg("%s %s element %ld: %.9g vs float64 %.17g", type, bf_dtype_name(dt),
                         (long)i, got, want);
    }
    bf_tensor_free(ref);
    bf_tensor_free(t);
}
END_TEST

typedef struct moments {
    double mean, sd, min, max;
} moments;

static moments moments_of(const bf_tensor *t) {
    moments m = {0, 0, INFINITY, -INFINITY};
    int64_t n = bf_tensor_numel(t);
    long double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = elem(t, i);
        if (!isfinite(v)) ck_abort_msg("element %ld is %g", (long)i, v);
        s += v;
        m.min = fmin(m.min, v);
        m.max = fmax(m.max, v);
    }
    m.mean = (double)(s / n);
    for (int64_t i = 0; i < n; i++)
        s2 += ((long double)elem(t, i) - m.mean) * (elem(t, i) - m.mean);
    m.sd = sqrt((double)(s2 / (n - 1)));
    return m;
}

/* Within 5 standard errors: mean sigma/sqrt(n), sd sigma/sqrt(2n) (normal) or
 * sigma*sqrt(0.8/(4n)) for a uniform (kurtosis 1.8), a fraction p within sqrt(p(1-p)/n);
 * plus the dtype's rounding, half an ulp at the largest magnitude, for the half types. */
START_TEST(random_normal_statistics) {
    bf_dtype dt = float_dtypes[_i];
    int log2n = dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16 ? 16 : 20;
    const double mu = 3, sigma = 2, n = ldexp(1, log2n);
    bf_tensor *t = random_run("RandomNormal", dt, log2n, 12345, ",\"mean\":3,\"stddev\":2", 2);
    moments m = moments_of(t);
    double q = ulp_of(dt) * (fabs(mu) + 6 * sigma); /* rounding allowance */
    ck_assert_msg(fabs(m.mean - mu) <= 5 * sigma / sqrt(n) + q, "mean %g", m.mean);
    ck_assert_msg(fabs(m.sd - sigma) <= 5 * sigma / sqrt(2 * n) + q, "sd %g", m.sd);
    /* the shape: 68.27% within one sigma, 95.45% within two (a uniform or a wrong scale fails) */
    static const double p_in[2] = {0.682689492137086, 0.954499736103642};
    for (int k = 1; k <= 2; k++) {
        int64_t in = 0;
        for (int64_t i = 0; i < bf_tensor_numel(t); i++) in += fabs(elem(t, i) - mu) < k * sigma;
        double p = p_in[k - 1], frac = (double)in / n;
        ck_assert_msg(fabs(frac - p) <= 5 * sqrt(p * (1 - p) / n) + 2 * q / sigma,
                      "%d sigma: %g of the samples, want %g", k, frac, p);
    }
    bf_tensor_free(t);
    /* the defaults are mean 0, stddev 1 */
    t = random_run("RandomNormal", dt, log2n, 9, "", 2);
    m = moments_of(t);
    ck_assert_msg(fabs(m.mean) <= 5 / sqrt(n) + 6 * ulp_of(dt), "default mean %g", m.mean);
    ck_assert_msg(fabs(m.sd - 1) <= 5 / sqrt(2 * n) + 6 * ulp_of(dt), "default sd %g", m.sd);
    bf_tensor_free(t);
}
END_TEST

START_TEST(random_uniform_statistics) {
    bf_dtype dt = float_dtypes[_i];
    int log2n = dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16 ? 16 : 20;
    const double lo = -2, hi = 3, n = ldexp(1, log2n);
    const double sigma = (hi - lo) / sqrt(12);
    bf_tensor *t = random_run("RandomUniform", dt, log2n, 54321, ",\"minval\":-2,\"maxval\":3", 2);
    moments m = moments_of(t);
    double q = ulp_of(dt) * 3;
    ck_assert_msg(fabs(m.mean - (lo + hi) / 2) <= 5 * sigma / sqrt(n) + q, "mean %g", m.mean);
    ck_assert_msg(fabs(m.sd - sigma) <= 5 * sigma * sqrt(0.8 / (4 * n)) + q, "sd %g", m.sd);
    /* range: within [minval, maxval], and reaching close to both ends */
    ck_assert_msg(m.min >= lo && m.max <= hi, "range [%g, %g]", m.min, m.max);
    ck_assert_msg(m.min < lo + 1e-3 * (hi - lo) + 2 * q, "min %g", m.min);
    ck_assert_msg(m.max > hi - 1e-3 * (hi - lo) - 2 * q, "max %g", m.max);
    /* flat: 10 equal bins each hold n/10 within 5 standard errors */
    int64_t bins[10] = {0};
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        int b = (int)((elem(t, i) - lo) / (hi - lo) * 10);
        bins[b < 0 ? 0 : b > 9 ? 9 : b]++;
    }
    for (int b = 0; b < 10; b++)
        ck_assert_msg(fabs((double)bins[b] / n - 0.1) <= 5 * sqrt(0.09 / n) + 2 * q,
                      "bin %d holds %ld of %g", b, (long)bins[b], n);
    bf_tensor_free(t);
    /* the defaults are [0, 1) */
    t = random_run("RandomUniform", dt, log2n, 9, "", 2);
    m = moments_of(t);
    ck_assert_msg(m.min >= 0 && m.max <= 1, "default range [%g, %g]", m.min, m.max);
    ck_assert_msg(fabs(m.mean - 0.5) <= 5 / sqrt(12 * n) + ulp_of(dt), "mean %g", m.mean);
    bf_tensor_free(t);
}
END_TEST

/* TensorFlow's RandomUniform excludes maxval: [minval, maxval). 2^20 draws of each dtype
 * never reach it (rounding to float16 or bfloat16 used to reach 1.0 in 1 draw of 4500 or 500). */
START_TEST(random_uniform_excludes_maxval) {
    bf_dtype dt = float_dtypes[_i];
    bf_tensor *t = random_run("RandomUniform", dt, 20, 3, "", 2);
    int64_t at_max = 0;
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) at_max += elem(t, i) >= 1;
    ck_assert_msg(at_max == 0, "%s: %ld of 2^20 values are maxval", bf_dtype_name(dt),
                  (long)at_max);
    bf_tensor_free(t);
}
END_TEST

/* Integer dtypes and unknown dims are refused at check time, naming the attribute. */
START_TEST(random_attr_errors) {
    const char *type = random_types[_i / 3];
    static const char *const attrs[3] = {"\"shape\":[2],\"dtype\":\"int32\"",
                                         "\"shape\":[2],\"dtype\":\"int64\"",
                                         "\"shape\":[2,-1]"};
    static const char *const bad[3] = {"dtype", "dtype", "shape"};
    bf_context *ctx = new_ctx(1);
    char page[256];
    snprintf(page, sizeof(page), "{\"id\":\"r\",\"type\":\"%s\",\"attrs\":{%s}}]}", type,
             attrs[_i % 3]);
    bf_session *s = open_page(ctx, page);
    bf_error e = {0};
    char pointer[64];
    snprintf(pointer, sizeof(pointer), "/blocks/0/attrs/%s", bad[_i % 3]);
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EATTR);
    expect_error(&e, BF_EATTR, "bad_attr", "r", "", bad[_i % 3], pointer);
    bf_error_clear(&e);
    ck_assert_int_eq(run_fetch(s, "r", &e), BF_EATTR);
    expect_error(&e, BF_EATTR, "bad_attr", "r", "", bad[_i % 3], pointer);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("generic_blocks");
    TCase *tc = tcase_create("elementwise");
    tcase_add_loop_test(tc, binary_matches_reference, 0, 72);
    tcase_add_test(tc, binary_scalar_sides);
    tcase_add_test(tc, binary_int64_exact);
    tcase_add_test(tc, binary_dtype_mismatch);
    tcase_add_loop_test(tc, binary_shape_mismatch, 0,
                        (int)(sizeof(bad_shapes) / sizeof(bad_shapes[0])));
    tcase_add_test(tc, binary_partial_shapes);
    suite_add_tcase(s, tc);

    tc = tcase_create("reductions");
    tcase_add_loop_test(tc, sum_matches_reference, 0, 6);
    tcase_add_test(tc, sum_compensated_and_scalar);
    tcase_add_loop_test(tc, relative_error_matches_reference, 0, 6);
    tcase_add_test(tc, relative_error_cases);
    tcase_add_test(tc, relative_error_shape_mismatch);
    suite_add_tcase(s, tc);

    tc = tcase_create("sources");
    tcase_add_loop_test(tc, identity_and_placeholder_every_dtype, 0, 6);
    tcase_add_test(tc, placeholder_errors);
    tcase_add_test(tc, placeholder_any_shape);
    tcase_add_loop_test(tc, const_inline_every_dtype, 0, 6);
    tcase_add_test(tc, const_shapes_and_fill);
    tcase_add_loop_test(tc, const_attr_errors, 0,
                        (int)(sizeof(const_errors) / sizeof(const_errors[0])));
    tcase_add_test(tc, const_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("random");
    tcase_add_loop_test(tc, random_deterministic, 0, 8);
    tcase_add_loop_test(tc, random_dtypes_round_float64, 0, 6);
    tcase_add_loop_test(tc, random_normal_statistics, 0, 4);
    tcase_add_loop_test(tc, random_uniform_statistics, 0, 4);
    tcase_add_loop_test(tc, random_uniform_excludes_maxval, 0, 4);
    tcase_add_loop_test(tc, random_attr_errors, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
