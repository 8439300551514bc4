/*
 * test_state_ops.c - the update blocks of blocks/state_ops/ (Assign, AssignAdd, AssignSub,
 * ApplyGradientDescent, ApplyMomentum, ApplyAdam), driven through the public API only: pages
 * of Variables wired to an update block, bf_session_step, and the Variables read back with
 * bf_session_read_state after every step.
 *
 * Formulas. Each block runs 5 steps on random non-zero data (Variables set with
 * bf_session_write_state, the operand and the scalars fed to Placeholders, new values each
 * step) and every Variable it updates is compared after each step with a float64 reference
 * written here from TensorFlow's definitions (training_ops.cc), in the textbook order of
 * operations rather than the kernel's. For float64 the reference runs its own trajectory over
 * the 5 steps; for the other dtypes each step starts from the values read back (the dtype's
 * rounding between steps is the block's business, not the formula's).
 * Tolerance per element: |got - ref| <= ulp * |ref| + 2^-46 * scale, where ulp is the dtype's
 * unit in the last place (float32 2^-23, float16 2^-10, bfloat16 2^-7: one rounding of the
 * float64 result, float16/bfloat16 going through float32) and 2^-46 (64 float64 ulps) covers
 * the two float64 evaluations' different orders, relative to `scale`, the sum of the
 * magnitudes of the element's old value and its change (cancellation cannot hide behind a
 * relative bound). float64: 2^-44 * scale over the 5 steps of its own trajectory.
 * Operands and scalars are k/256 (exact in every dtype), the scalars in (0.1, 1).
 *
 * Steps. Every read in a step sees the start-of-step values: a block reading a Variable that
 * an Assign overwrites in the same step reads the old value, and an update whose value is
 * computed from its own Variable (w <- w + w) doubles once per step. A plain run computes the
 * next value without committing it.
 *
 * Errors, at check time, in TensorFlow's words with the block, the port and the code: scalars
 * that are not ("alpha is not a scalar: [2]", ApplyAdam's "lr is not a scalar : [2]"), shapes
 * that differ ("var and delta do not have the same shape[3] [4]", Assign's and AssignAdd's
 * messages), dtypes that differ, validate_shape=false with another shape, and a ref input
 * wired to something that is not a Variable (each ref port, accum/m/v included).
 */
#include "bf_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define D64 ",\"dtype\":\"float64\"}},"
#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

static bf_context *new_ctx(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

/* A session on the page HEAD + body (body ends with "]}" and the outputs, if any). */
static bf_session *open_page(bf_context *ctx, const char *body) {
    char json[8192];
    int n = snprintf(json, sizeof(json), HEAD "%s", body);
    ck_assert_int_lt(n, (int)sizeof(json));
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "s.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s", e.code, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

/* A growable page body. */
typedef struct text {
    char buf[8192];
    size_t n;
} text;

static void add(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->buf + t->n, sizeof(t->buf) - t->n, fmt, ap);
    va_end(ap);
    ck_assert(k >= 0 && (size_t)k < sizeof(t->buf) - t->n);
    t->n += (size_t)k;
}

/* ---- dtypes: encoding and decoding written here ------------------------------------------- */

static const bf_dtype float_dtypes[4] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16,
                                         BF_DTYPE_BF16};

static double ulp_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F16: return ldexp(1, -10);
    case BF_DTYPE_BF16: return ldexp(1, -7);
    case BF_DTYPE_F32: return ldexp(1, -23);
    default: return 0; /* float64: the scale term alone */
    }
}

static double dec_f16(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY)
                                                      : ldexp(1024 + man, exp - 25);
    return (h & 0x8000u) ? -v : v;
}

/* binary16 of an exactly representable normal value (asserted). */
static uint16_t enc_f16(double v) {
    if (v == 0) return 0;
    int e;
    double m = frexp(fabs(v), &e), frac = (m * 2 - 1) * 1024;
    ck_assert_msg(frac == floor(frac) && e + 14 > 0 && e + 14 < 31, "%g is not a float16", v);
    return (uint16_t)((v < 0 ? 0x8000u : 0) | (unsigned)(e + 14) << 10 | (unsigned)frac);
}

static double elem(const bf_tensor *t, int64_t i) {
    const void *d = bf_tensor_cdata(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F16: return dec_f16(((const uint16_t *)d)[i]);
    case BF_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)d)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case BF_DTYPE_F32: return ((const float *)d)[i];
    case BF_DTYPE_F64: return ((const double *)d)[i];
    default: ck_abort_msg("bad dtype"); return 0;
    }
}

/* Store v, exactly representable in the dtype (asserted), as element i. */
static void set_elem(bf_tensor *t, int64_t i, double v) {
    void *d = bf_tensor_data(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F16: ((uint16_t *)d)[i] = enc_f16(v); break;
    case BF_DTYPE_BF16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ck_assert_msg((double)f == v && (u & 0xffffu) == 0, "%g is not a bfloat16", v);
        ((uint16_t *)d)[i] = (uint16_t)(u >> 16);
        break;
    }
    case BF_DTYPE_F32: ((float *)d)[i] = (float)v; break;
    case BF_DTYPE_F64: ((double *)d)[i] = v; break;
    default: ck_abort_msg("bad dtype");
    }
    ck_assert_msg(elem(t, i) == v, "%g is not exact in %s", v, bf_dtype_name(bf_tensor_dtype(t)));
}

/* k/256 with lo <= k <= hi, of either sign when `sign`: exact in every float dtype. */
static double k256(bf_rng *r, int lo, int hi, bool sign) {
    double v = (double)bf_rng_int(r, lo, hi) / 256;
    return sign && (bf_rng_next(r) & 1) ? -v : v;
}

static bf_tensor *tensor_of(bf_dtype dt, int rank, const int64_t *dims, const double *v) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) set_elem(t, i, v[i]);
    return t;
}

static void feed(bf_session *s, const char *id, bf_dtype dt, int rank, const int64_t *dims,
                 const double *v) {
    bf_tensor *t = tensor_of(dt, rank, dims, v);
    bf_error e = {0};
    if (bf_session_feed(s, id, t, &e)) ck_abort_msg("feed %s: %s", id, e.message);
    bf_tensor_free(t);
}

static void write_state(bf_session *s, const char *id, bf_dtype dt, int rank,
                        const int64_t *dims, const double *v) {
    bf_tensor *t = tensor_of(dt, rank, dims, v);
    bf_error e = {0};
    if (bf_session_write_state(s, id, t, &e)) ck_abort_msg("write %s: %s", id, e.message);
    bf_tensor_free(t);
}

/* Variable `id` read back into v[n] (asserting dtype and element count). */
static void read_state(bf_session *s, const char *id, bf_dtype dt, int64_t n, double *v) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    if (bf_session_read_state(s, id, &t, &e)) ck_abort_msg("read %s: %s", id, e.message);
    ck_assert_int_eq(bf_tensor_dtype(t), dt);
    ck_assert_int_eq(bf_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) v[i] = elem(t, i);
    bf_tensor_free(t);
}

static void step_ok(bf_session *s, const char *const *fetches, int n_fetches) {
    bf_step_options o;
    bf_step_options_init(&o);
    o.fetches = fetches;
    o.n_fetches = n_fetches;
    bf_error e = {0};
    if (bf_session_step(s, 1, &o, NULL, &e))
        ck_abort_msg("step: %s %s %s", e.block_id, e.code, e.message);
}

/* ---- the formulas ------------------------------------------------------------------------ */

enum { MAXN = 60 };

typedef struct opdef {
    const char *type;
    int n_refs;
    const char *refs[3];      /* ref input ports (Variables r0, r1, r2) */
    int n_scalars;
    const char *scalars[6];   /* scalar input ports (Placeholders s0..s5) */
    const char *operand;      /* the elementwise input (Placeholder g) */
    const char *attrs;        /* JSON object */
    bool nesterov;
} opdef;

static const opdef ops[] = {
    {"Assign", 1, {"ref"}, 0, {0}, "value", "{}", false},
    {"AssignAdd", 1, {"ref"}, 0, {0}, "value", "{}", false},
    {"AssignSub", 1, {"ref"}, 0, {0}, "value", "{}", false},
    {"ApplyGradientDescent", 1, {"var"}, 1, {"alpha"}, "delta", "{}", false},
    {"ApplyMomentum", 2, {"var", "accum"}, 2, {"lr", "momentum"}, "grad", "{}", false},
    {"ApplyMomentum", 2, {"var", "accum"}, 2, {"lr", "momentum"}, "grad",
     "{\"use_nesterov\":true}", true},
    {"ApplyAdam", 3, {"var", "m", "v"}, 6,
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"}, "grad", "{}", false},
    {"ApplyAdam", 3, {"var", "m", "v"}, 6,
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"}, "grad",
     "{\"use_nesterov\":true}", true},
};
enum { N_OPS = sizeof(ops) / sizeof(ops[0]) };

/*
 * The reference, element i: r[j] are the refs' start-of-step values and receive the next
 * ones, sc the scalars in the order of ops[].scalars, g the operand. Written from the
 * definitions (tf.raw_ops docs, training_ops.cc), not the kernel's operation order.
 */
static void reference(const opdef *op, double *r, const double *sc, double g) {
    if (!strcmp(op->type, "Assign")) {
        r[0] = g;
    } else if (!strcmp(op->type, "AssignAdd")) {
        r[0] = r[0] + g;
    } else if (!strcmp(op->type, "AssignSub")) {
        r[0] = r[0] - g;
    } else if (!strcmp(op->type, "ApplyGradientDescent")) {
        r[0] = r[0] - sc[0] * g;
    } else if (!strcmp(op->type, "ApplyMomentum")) {
        double lr = sc[0], mu = sc[1];
        r[1] = mu * r[1] + g;
        r[0] = op->nesterov ? r[0] - lr * (g + mu * r[1]) : r[0] - lr * r[1];
    } else { /* ApplyAdam */
        double b1p = sc[0], b2p = sc[1], lr = sc[2], b1 = sc[3], b2 = sc[4], eps = sc[5];
        double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
        r[1] = b1 * r[1] + (1 - b1) * g;
        r[2] = b2 * r[2] + (1 - b2) * g * g;
        double m_hat = op->nesterov ? b1 * r[1] + (1 - b1) * g : r[1];
        r[0] = r[0] - lr_t * m_hat / (sqrt(r[2]) + eps);
    }
}

/* The page: Variables r0.. of shape dims, Placeholders s0.. (scalars) and g, the block u. */
static bf_session *op_page(bf_context *ctx, const opdef *op, bf_dtype dt, int rank,
                           const int64_t *dims) {
    text t = {.n = 0};
    char shape[64] = "[";
    for (int i = 0; i < rank; i++)
        snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "%s%lld", i ? "," : "",
                 (long long)dims[i]);
    strcat(shape, "]");
    const char *dn = bf_dtype_name(dt);
    for (int j = 0; j < op->n_refs; j++)
        add(&t, "{\"id\":\"r%d\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"%s\","
                "\"shape\":%s}},", j, dn, shape);
    for (int k = 0; k < op->n_scalars; k++)
        add(&t, "{\"id\":\"s%d\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\","
                "\"shape\":[]}},", k, dn);
    add(&t, "{\"id\":\"g\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\",\"shape\":%s}},",
        dn, shape);
    add(&t, "{\"id\":\"u\",\"type\":\"%s\",\"attrs\":%s,\"inputs\":{", op->type, op->attrs);
    for (int j = 0; j < op->n_refs; j++) add(&t, "\"%s\":\"r%d\",", op->refs[j], j);
    for (int k = 0; k < op->n_scalars; k++) add(&t, "\"%s\":\"s%d\",", op->scalars[k], k);
    add(&t, "\"%s\":\"g\"}}]}", op->operand);
    return open_page(ctx, t.buf);
}

/* Loop index: op = i % N_OPS, dtype = i / N_OPS. */
START_TEST(update_matches_reference) {
    const opdef *op = &ops[_i % N_OPS];
    bf_dtype dt = float_dtypes[_i / N_OPS];
    const int64_t dims[3] = {3, 4, 5};
    const int64_t n = 60;
    bf_rng rng = {(uint64_t)_i * 7919 + 5};
    bf_context *ctx = new_ctx();
    bf_session *s = op_page(ctx, op, dt, 3, dims);

    double ref[3][MAXN], got[3][MAXN], old[3][MAXN], g[MAXN], sc[6];
    for (int j = 0; j < op->n_refs; j++) {
        for (int64_t i = 0; i < n; i++) /* Adam's v is a mean of squares: positive */
            ref[j][i] = k256(&rng, 26, 256, !(op->n_refs == 3 && j == 2));
        char id[16];
        snprintf(id, sizeof(id), "r%d", j);
        write_state(s, id, dt, 3, dims, ref[j]);
    }
    const char *const fetch[1] = {"u"};
    for (int step = 1; step <= 5; step++) {
        for (int64_t i = 0; i < n; i++) g[i] = k256(&rng, 26, 256, true);
        feed(s, "g", dt, 3, dims, g);
        for (int k = 0; k < op->n_scalars; k++) {
            sc[k] = k256(&rng, 26, 250, false); /* in (0.1, 1): learning rates, betas, powers */
            char id[16];
            snprintf(id, sizeof(id), "s%d", k);
            feed(s, id, dt, 0, NULL, &sc[k]);
        }
        memcpy(old, ref, sizeof(old));
        for (int64_t i = 0; i < n; i++) {
            double r[3];
            for (int j = 0; j < op->n_refs; j++) r[j] = ref[j][i];
            reference(op, r, sc, g[i]);
            for (int j = 0; j < op->n_refs; j++) ref[j][i] = r[j];
        }
        step_ok(s, fetch, 1);
        ck_assert_int_eq(bf_session_step_count(s), step);
        for (int j = 0; j < op->n_refs; j++) {
            char id[16];
            snprintf(id, sizeof(id), "r%d", j);
            read_state(s, id, dt, n, got[j]);
            for (int64_t i = 0; i < n; i++) {
                double scale = fabs(old[j][i]) + fabs(ref[j][i] - old[j][i]);
                double tol = dt == BF_DTYPE_F64 ? ldexp(scale, -44)
                                                : ulp_of(dt) * fabs(ref[j][i]) + ldexp(scale, -46);
                if (!(fabs(got[j][i] - ref[j][i]) <= tol))
                    ck_abort_msg("%s %s (%s), step %d, %s[%lld] = %.17g, want %.17g (tol %g)",
                                 op->type, op->attrs, bf_dtype_name(dt), step, op->refs[j],
                                 (long long)i, got[j][i], ref[j][i], tol);
            }
            /* Each step of the others starts from what the Variable holds. */
            if (dt != BF_DTYPE_F64) memcpy(ref[j], got[j], sizeof(got[j]));
        }
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Hand-computed values, so that the reference itself is checked: the examples of the block
 * files' headers. */
START_TEST(update_hand_values) {
    bf_context *ctx = new_ctx();
    bf_session *s = open_page(
        ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,2]" D64
             "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":0.1" D64
             "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[10,-10]" D64
             "{\"id\":\"sgd\",\"type\":\"ApplyGradientDescent\","
             "\"inputs\":{\"var\":\"w\",\"alpha\":\"a\",\"delta\":\"d\"}},"
             "{\"id\":\"x\",\"type\":\"Variable\",\"attrs\":{\"value\":[1]" D64
             "{\"id\":\"acc\",\"type\":\"Variable\",\"attrs\":{\"value\":[0.5]" D64
             "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":0.1" D64
             "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[2]" D64
             "{\"id\":\"mu\",\"type\":\"Const\",\"attrs\":{\"value\":0.9" D64
             "{\"id\":\"mom\",\"type\":\"ApplyMomentum\","
             "\"inputs\":{\"var\":\"x\",\"accum\":\"acc\",\"lr\":\"lr\",\"grad\":\"g\","
             "\"momentum\":\"mu\"}}]}");
    step_ok(s, NULL, 0);
    double w[2], x[1], acc[1];
    read_state(s, "w", BF_DTYPE_F64, 2, w);
    read_state(s, "x", BF_DTYPE_F64, 1, x);
    read_state(s, "acc", BF_DTYPE_F64, 1, acc);
    ck_assert_double_eq_tol(w[0], 0, 1e-15);
    ck_assert_double_eq_tol(w[1], 3, 1e-15);
    ck_assert_double_eq_tol(acc[0], 2.45, 1e-15);
    ck_assert_double_eq_tol(x[0], 0.755, 1e-15);
    /* The block's outputs are the values committed. */
    ck_assert_double_eq_tol(elem(bf_session_output(s, "mom", "accum"), 0), 2.45, 1e-15);
    ck_assert_double_eq_tol(elem(bf_session_output(s, "mom", "out"), 0), 0.755, 1e-15);
    bf_session_free(s);

    /* The first Adam step moves a weight by about lr: 1 - 0.001 = 0.999. */
    s = open_page(
        ctx, "{\"id\":\"var\",\"type\":\"Variable\",\"attrs\":{\"value\":[1]" D64
             "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[1]" D64
             "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[1]" D64
             "{\"id\":\"b1p\",\"type\":\"Const\",\"attrs\":{\"value\":0.9" D64
             "{\"id\":\"b2p\",\"type\":\"Const\",\"attrs\":{\"value\":0.999" D64
             "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":0.001" D64
             "{\"id\":\"b1\",\"type\":\"Const\",\"attrs\":{\"value\":0.9" D64
             "{\"id\":\"b2\",\"type\":\"Const\",\"attrs\":{\"value\":0.999" D64
             "{\"id\":\"eps\",\"type\":\"Const\",\"attrs\":{\"value\":1e-8" D64
             "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[0.5]" D64
             "{\"id\":\"adam\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"var\",\"m\":\"m\","
             "\"v\":\"v\",\"beta1_power\":\"b1p\",\"beta2_power\":\"b2p\",\"lr\":\"lr\","
             "\"beta1\":\"b1\",\"beta2\":\"b2\",\"epsilon\":\"eps\",\"grad\":\"g\"}}]}");
    step_ok(s, NULL, 0);
    double var[1], m[1], v[1];
    read_state(s, "var", BF_DTYPE_F64, 1, var);
    read_state(s, "m", BF_DTYPE_F64, 1, m);
    read_state(s, "v", BF_DTYPE_F64, 1, v);
    ck_assert_double_eq_tol(m[0], 0.05, 1e-15);
    ck_assert_double_eq_tol(v[0], 0.00025, 1e-15);
    /* lr_t * m = 0.001 * sqrt(0.001) / 0.1 * 0.05 = 0.001 * sqrt(0.00025) */
    ck_assert_double_eq_tol(var[0], 1 - 0.001 * sqrt(0.00025) / (sqrt(0.00025) + 1e-8), 1e-15);
    ck_assert_double_eq_tol(var[0], 0.999, 1e-9);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- steps: start-of-step values, no commit without a step -------------------------------- */

START_TEST(reads_see_start_of_step) {
    bf_context *ctx = new_ctx();
    /* w is overwritten by an Assign and read by Identity and Mul in the same step; x is
     * updated from itself (x <- x + x) and its descent's delta reads x too. */
    bf_session *s = open_page(
        ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,2,3]}},"
             "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[7,8,9]}},"
             "{\"id\":\"set\",\"type\":\"Assign\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}},"
             "{\"id\":\"seen\",\"type\":\"Identity\",\"inputs\":{\"input\":\"w\"}},"
             "{\"id\":\"twice\",\"type\":\"Mul\",\"inputs\":{\"x\":\"w\",\"y\":\"set\"}},"
             "{\"id\":\"x\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,-2]}},"
             "{\"id\":\"dbl\",\"type\":\"AssignAdd\",\"inputs\":{\"ref\":\"x\",\"value\":\"x\"}}"
             "]}");
    const char *const fetches[2] = {"seen", "twice"};
    double w[3], x[2];
    for (int step = 1; step <= 3; step++) {
        step_ok(s, fetches, 2);
        const bf_tensor *seen = bf_session_output(s, "seen", NULL);
        const bf_tensor *twice = bf_session_output(s, "twice", NULL);
        ck_assert_ptr_nonnull(seen);
        ck_assert_ptr_nonnull(twice);
        for (int i = 0; i < 3; i++) {
            /* Step 1 reads the initial [1,2,3]; later steps read what step 1 assigned. */
            double start = step == 1 ? i + 1 : i + 7;
            ck_assert_double_eq(elem(seen, i), start);
            ck_assert_double_eq(elem(twice, i), start * (i + 7));
        }
        read_state(s, "w", BF_DTYPE_F32, 3, w);
        read_state(s, "x", BF_DTYPE_F32, 2, x);
        for (int i = 0; i < 3; i++) ck_assert_double_eq(w[i], i + 7);
        ck_assert_double_eq(x[0], ldexp(1, step));
        ck_assert_double_eq(x[1], -ldexp(2, step));
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(run_does_not_commit) {
    bf_context *ctx = new_ctx();
    bf_session *s = open_page(
        ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,2]}},"
             "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
             "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[2,2]}},"
             "{\"id\":\"sgd\",\"type\":\"ApplyGradientDescent\","
             "\"inputs\":{\"var\":\"w\",\"alpha\":\"a\",\"delta\":\"d\"}}]}");
    const char *const f[1] = {"sgd"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    bf_error e = {0};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
        const bf_tensor *out = bf_session_output(s, "sgd", NULL);
        ck_assert_double_eq(elem(out, 0), 0);
        ck_assert_double_eq(elem(out, 1), 1);
        double w[2];
        read_state(s, "w", BF_DTYPE_F32, 2, w);
        ck_assert_double_eq(w[0], 1);
        ck_assert_double_eq(w[1], 2);
    }
    ck_assert_int_eq(bf_session_step_count(s), 0);
    step_ok(s, f, 1);
    double w[2];
    read_state(s, "w", BF_DTYPE_F32, 2, w);
    ck_assert_double_eq(w[0], 0);
    ck_assert_double_eq(w[1], 1);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* A larger Variable, split over the kernel's threaded tasks (16384 elements each) and their
 * chunks, with an odd tail: every element updated, none twice. */
START_TEST(update_large_tensor) {
    bf_context *ctx = new_ctx();
    bf_session *s = open_page(
        ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[40001],"
             "\"initializer\":\"ones\"}},"
             "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
             "{\"id\":\"d\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[40001],\"seed\":3}},"
             "{\"id\":\"sgd\",\"type\":\"ApplyGradientDescent\","
             "\"inputs\":{\"var\":\"w\",\"alpha\":\"a\",\"delta\":\"d\"}}]}");
    const char *const f[2] = {"sgd", "d"};
    step_ok(s, f, 2);
    const bf_tensor *d = bf_session_output(s, "d", NULL);
    ck_assert_ptr_nonnull(d);
    double *w = malloc(40001 * sizeof(double));
    read_state(s, "w", BF_DTYPE_F32, 40001, w);
    for (int64_t i = 0; i < 40001; i++) {
        double want = (double)(float)(1 - 0.5 * elem(d, i));
        if (w[i] != want) ck_abort_msg("w[%lld] = %.9g, want %.9g", (long long)i, w[i], want);
    }
    free(w);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

typedef struct err_case {
    const char *body;     /* the page after HEAD */
    bf_status status;
    const char *code, *port, *attr, *message;
} err_case;

#define F64 "\"dtype\":\"float64\""
static const err_case err_cases[] = {
    /* ApplyGradientDescent: the scalar, then the shapes, in TF's words. */
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
     "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3,4]}},"
     "{\"id\":\"u\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\",\"alpha\":\"a\","
     "\"delta\":\"d\"}}]}",
     BF_ESHAPE, "shape_mismatch", "alpha", "", "alpha is not a scalar: [2]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3,4]}},"
     "{\"id\":\"u\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\",\"alpha\":\"a\","
     "\"delta\":\"d\"}}]}",
     BF_ESHAPE, "shape_mismatch", "delta", "", "var and delta do not have the same shape[3] [4]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2,3]}},"
     "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2],[3,4],[5,6]]}},"
     "{\"id\":\"u\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\",\"alpha\":\"a\","
     "\"delta\":\"d\"}}]}",
     BF_ESHAPE, "shape_mismatch", "delta", "",
     "var and delta do not have the same shape[2,3] [3,2]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"a\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"d\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]," F64 "}},"
     "{\"id\":\"u\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\",\"alpha\":\"a\","
     "\"delta\":\"d\"}}]}",
     BF_EDTYPE, "dtype_mismatch", "delta", "",
     "Input 'delta' of 'ApplyGradientDescent' Op has type float64 that does not match type "
     "float32 of argument 'var'."},
    /* ApplyMomentum: lr, accum's and grad's shapes, momentum, in that order. */
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"acc\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2]}},"
     "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"mu\",\"type\":\"Const\",\"attrs\":{\"value\":[0.9]}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyMomentum\",\"inputs\":{\"var\":\"w\",\"accum\":\"acc\","
     "\"lr\":\"lr\",\"grad\":\"g\",\"momentum\":\"mu\"}}]}",
     BF_ESHAPE, "shape_mismatch", "accum", "", "var and accum do not have the same shape[3] [2]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"acc\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"mu\",\"type\":\"Const\",\"attrs\":{\"value\":[0.9]}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyMomentum\",\"inputs\":{\"var\":\"w\",\"accum\":\"acc\","
     "\"lr\":\"lr\",\"grad\":\"g\",\"momentum\":\"mu\"}}]}",
     BF_ESHAPE, "shape_mismatch", "momentum", "", "momentum is not a scalar: [1]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"acc\",\"type\":\"Const\",\"attrs\":{\"value\":[0,0,0]}},"
     "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
     "{\"id\":\"mu\",\"type\":\"Const\",\"attrs\":{\"value\":0.9}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyMomentum\",\"inputs\":{\"var\":\"w\",\"accum\":\"acc\","
     "\"lr\":\"lr\",\"grad\":\"g\",\"momentum\":\"mu\"}}]}",
     BF_ESCHEMA, "ref_not_variable", "accum", "", NULL},
    /* ApplyAdam: TF's kernel puts a space before lr's colon. */
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
     "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2]}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"w\",\"m\":\"m\",\"v\":\"v\","
     "\"beta1_power\":\"k\",\"beta2_power\":\"k\",\"lr\":\"lr\",\"beta1\":\"k\",\"beta2\":\"k\","
     "\"epsilon\":\"k\",\"grad\":\"g\"}}]}",
     BF_ESHAPE, "shape_mismatch", "lr", "", "lr is not a scalar : [2]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
     "{\"id\":\"b2p\",\"type\":\"Const\",\"attrs\":{\"value\":[[0.5]]}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"w\",\"m\":\"m\",\"v\":\"v\","
     "\"beta1_power\":\"k\",\"beta2_power\":\"b2p\",\"lr\":\"k\",\"beta1\":\"k\",\"beta2\":\"k\","
     "\"epsilon\":\"k\",\"grad\":\"g\"}}]}",
     BF_ESHAPE, "shape_mismatch", "beta2_power", "", "beta2_power is not a scalar: [1,1]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,1]}},"
     "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"w\",\"m\":\"m\",\"v\":\"v\","
     "\"beta1_power\":\"k\",\"beta2_power\":\"k\",\"lr\":\"k\",\"beta1\":\"k\",\"beta2\":\"k\","
     "\"epsilon\":\"k\",\"grad\":\"g\"}}]}",
     BF_ESHAPE, "shape_mismatch", "v", "", "var and v do not have the same shape[3] [3,1]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"v\",\"type\":\"Identity\",\"inputs\":{\"input\":\"m\"}},"
     "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"w\",\"m\":\"m\",\"v\":\"v\","
     "\"beta1_power\":\"k\",\"beta2_power\":\"k\",\"lr\":\"k\",\"beta1\":\"k\",\"beta2\":\"k\","
     "\"epsilon\":\"k\",\"grad\":\"g\"}}]}",
     BF_ESCHEMA, "ref_not_variable", "v", "", NULL},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]," F64 "}},"
     "{\"id\":\"m\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]," F64 "}},"
     "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]," F64 "}},"
     "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":0.5," F64 "}},"
     "{\"id\":\"e\",\"type\":\"Const\",\"attrs\":{\"value\":0.5}},"
     "{\"id\":\"g\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]," F64 "}},"
     "{\"id\":\"u\",\"type\":\"ApplyAdam\",\"inputs\":{\"var\":\"w\",\"m\":\"m\",\"v\":\"v\","
     "\"beta1_power\":\"k\",\"beta2_power\":\"k\",\"lr\":\"k\",\"beta1\":\"k\",\"beta2\":\"k\","
     "\"epsilon\":\"e\",\"grad\":\"g\"}}]}",
     BF_EDTYPE, "dtype_mismatch", "epsilon", "",
     "Input 'epsilon' of 'ApplyAdam' Op has type float32 that does not match type float64 of "
     "argument 'var'."},
    /* Assign, AssignAdd, AssignSub. */
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3,4]}},"
     "{\"id\":\"u\",\"type\":\"Assign\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}}]}",
     BF_ESHAPE, "shape_mismatch", "value", "",
     "Assign requires shapes of both tensors to match. lhs shape= [3] rhs shape= [4]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3,4]}},"
     "{\"id\":\"u\",\"type\":\"Assign\",\"attrs\":{\"validate_shape\":false},"
     "\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}}]}",
     BF_ESHAPE, "shape_mismatch", "value", "validate_shape",
     "validate_shape=false would give ref the shape of value, [4], but a Variable keeps its "
     "declared shape [3]"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2,3]]}},"
     "{\"id\":\"u\",\"type\":\"AssignAdd\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}}]}",
     BF_ESHAPE, "shape_mismatch", "value", "",
     "Parameters and update must be the same size (ref [3], value [1,3])"},
    {"{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3]}},"
     "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]," F64 "}},"
     "{\"id\":\"u\",\"type\":\"AssignSub\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}}]}",
     BF_EDTYPE, "dtype_mismatch", "value", "",
     "Input 'value' of 'AssignSub' Op has type float64 that does not match type float32 of "
     "argument 'ref'."},
    {"{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2,3]}},"
     "{\"id\":\"u\",\"type\":\"Assign\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}}]}",
     BF_ESCHEMA, "ref_not_variable", "ref", "", NULL},
};

START_TEST(update_errors) {
    const err_case *c = &err_cases[_i];
    bf_context *ctx = new_ctx();
    bf_session *s = open_page(ctx, c->body);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), c->status);
    ck_assert_msg(e.status == c->status, "status %s (%s)", bf_status_name(e.status), e.message);
    ck_assert_str_eq(e.code, c->code);
    ck_assert_str_eq(e.block_id, "u");
    ck_assert_str_eq(e.port, c->port);
    ck_assert_str_eq(e.attr, c->attr);
    if (c->message) ck_assert_str_eq(e.message, c->message);
    /* A step refuses in the same words and commits nothing. */
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_step(s, 1, NULL, NULL, &e), c->status);
    ck_assert_str_eq(e.block_id, "u");
    ck_assert_str_eq(e.port, c->port);
    ck_assert_int_eq(bf_session_step_count(s), 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("state_ops");
    TCase *tc = tcase_create("formulas");
    tcase_add_loop_test(tc, update_matches_reference, 0, N_OPS * 4);
    tcase_add_test(tc, update_hand_values);
    tcase_add_test(tc, update_large_tensor);
    suite_add_tcase(s, tc);
    tc = tcase_create("steps");
    tcase_add_test(tc, reads_see_start_of_step);
    tcase_add_test(tc, run_does_not_commit);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_loop_test(tc, update_errors, 0, (int)(sizeof(err_cases) / sizeof(err_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
