/*
 * test_train_ops_gpu.c - the GPU kernels of the training blocks (MatMul on cuBLAS; MaxPool,
 * MaxPoolGrad, AvgPool, AvgPoolGrad on cuDNN or our own kernels; Relu, Sigmoid, Tanh and their
 * gradients on our own kernels) through the public API: each page runs twice, once with every
 * block on the CPU (bf_run_options.device = BF_DEVICE_CPU) and once on the GPU
 * (BF_DEVICE_GPU), on the same random non-zero data, and the fetched results are compared.
 * The run report (bf_session_block_stats) must say where each block ran and which kernel did
 * it: device "gpu:0" and the kernel's note ("cublasSgemm ...", "cudnn maxpool (NHWC)",
 * "own maxpool grad kernel (TF's first-maximum rule)"), or device "cpu" and the note
 * "CPU fallback: <reason>" for what the GPU does not take (integers).
 *
 * Running just the GPU tests, from the build directory:
 *
 *     ctest -L gpu --output-on-failure
 *
 * Without a GPU, or in a build without CUDA, the program exits 77 at once and ctest reports it
 * as Not Run, never passed. main() probes in a child process, so that CUDA is never
 * initialised before Check forks.
 *
 * What is checked:
 *  - MatMul 37x53 by 53x29, every transpose_a / transpose_b, float32 and float64; float16 and
 *    bfloat16 (GemmEx); an empty sum (k = 0) gives zeros; int32 falls back with its reason;
 *  - the four pooling blocks in NHWC and NCHW, float32 and float64, on VALID, symmetric SAME
 *    (cuDNN) and asymmetric SAME (TF's odd pixel after: our kernels) geometries, windows larger
 *    than the input, non-square windows and strides, data full of ties (a Relu's zeros) for
 *    MaxPoolGrad's first-maximum rule; EXPLICIT pads (symmetric: cuDNN; asymmetric: ours);
 *    MaxPool over depth; float16 and bfloat16; int32 MaxPool falls back with its reason;
 *  - Relu, Sigmoid, Tanh, ReluGrad, SigmoidGrad, TanhGrad in the four float dtypes, with zeros
 *    and -0 among the inputs; int32 Relu falls back with its reason;
 *  - whole training steps on the GPU against the CPU: examples/train/learn_a_filter.json
 *    stepped 50 times, and a small CNN written here (Conv2D, BiasAdd, Relu, MaxPool, AvgPool,
 *    Tanh, Reshape, MatMul, Sigmoid, a mean squared error) whose backward pass and SGD updates
 *    bf_session_build_gradients builds, stepped 50 times; the loss comes down on both devices
 *    and agrees within 1e-4 relative (or 1e-6 of the first loss: learn_a_filter converges to
 *    1e-14) after the first and the last step, every Variable agrees
 *    within 1e-4 relative (|gpu - cpu| <= 1e-4 * max(|cpu|, 0.01 * max|cpu| of that
 *    Variable)), and every block of those types in the CNN ran on the GPU.
 *
 * Tolerances, |gpu - cpu| <= atol + rtol * |cpu| with K the reduction length (MatMul's k, the
 * window size of an average, 1 elementwise):
 *     float64  atol 1e-12 K  rtol 1e-12
 *     float32  atol 2e-6 K   rtol 1e-5     (cuBLAS in pedantic math: no TF32)
 *     float16  atol 1e-4 K   rtol 2e-3     (float accumulation, one rounding to 11 bits)
 *     bfloat16 atol 1e-3 K   rtol 1.6e-2   (float accumulation, one rounding to 8 bits)
 * and bitwise equality where our own kernels do the CPU's operations in the CPU's order: every
 * max (cuDNN's too), our pooling kernels, Relu and the three gradients. Sigmoid and Tanh differ
 * by the device maths library's last bits (expf, tanhf), cuDNN's averages and cuBLAS by the
 * order of their sums.
 */
#include "bf_test.h"
#include "conv_harness.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

/* ---- contexts, pages, tensors -------------------------------------------------------------- */

static bf_context *new_ctx(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    bf_error e = {0};
    if (bf_context_new(&cfg, &ctx, &e)) ck_abort_msg("context: %s", e.message);
    ck_assert_msg(bf_context_has_gpu(ctx), "no GPU in the context: %s", bf_context_devices(ctx));
    return ctx;
}

static bf_session *open_json(bf_context *ctx, const char *json) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "g.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s\n%s", e.code, e.message, json);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

static double tol_atol(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12;
    case BF_DTYPE_F32: return 2e-6;
    case BF_DTYPE_F16: return 1e-4;
    default: return 1e-3;
    }
}
static double tol_rtol(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12;
    case BF_DTYPE_F32: return 1e-5;
    case BF_DTYPE_F16: return 2e-3;
    default: return 1.6e-2;
    }
}

/* Store v at element i of t (rounded to t's dtype). */
static void put(bf_tensor *t, int64_t i, double v) {
    void *p = bf_tensor_data(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F64: ((double *)p)[i] = v; break;
    case BF_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case BF_DTYPE_F16: ((uint16_t *)p)[i] = bf_f32_to_f16((float)v); break;
    case BF_DTYPE_BF16: ((uint16_t *)p)[i] = bf_f32_to_bf16((float)v); break;
    case BF_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Data kinds: uniform non-zero in [-1,-0.1] U [0.1,1]; a Relu's output (many exact zeros and
 * repeated values: ties); uniform in [-4, 4] with zeros and -0; uniform in (0, 1). */
enum { D_NONZERO, D_TIES, D_ACT, D_UNIT };

static bf_tensor *tensor(bf_context *ctx, bf_dtype dt, int rank, const int64_t *dims, int kind,
                         uint64_t seed) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    if (bf_tensor_new(ctx, dt, rank, dims, &t, &e)) ck_abort_msg("tensor: %s", e.message);
    bf_rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
    static const double few[] = {0.0, 0.0, 0.25, 0.5, 1.0};
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        double v;
        switch (kind) {
        case D_TIES: v = few[bf_rng_next(&r) % 5]; break;
        case D_ACT:
            v = bf_rng_uniform(&r, -4, 4);
            if (i % 11 == 0) v = 0.0;
            if (i % 13 == 0) v = -0.0;
            break;
        case D_UNIT: v = bf_rng_uniform(&r, 0.01, 0.99); break;
        default: v = bf_tensor_dtype(t) == BF_DTYPE_I32 ? (double)bf_rng_int(&r, -9, 9)
                                                        : bf_rng_nonzero(&r);
        }
        put(t, i, v);
    }
    return t;
}

/* ---- running a page on both devices --------------------------------------------------------- */

enum { MAX_FETCH = 8 };

typedef struct result {
    bf_tensor *out[MAX_FETCH];       /* copies of the fetched outputs */
    char device[MAX_FETCH][16];      /* where each fetched block ran */
    char note[MAX_FETCH][96];        /* and its note */
} result;

/*
 * Run page HEAD + body on `dev` with the feeds (ids[i] <- feeds[i]) and fetch the blocks
 * `fetch` (first output each); *r gets copies of the outputs and the blocks' reports.
 */
static void run_on(bf_context *ctx, const char *body, const char *const *ids,
                   bf_tensor *const *feeds, int n_feeds, const char *const *fetch, int n_fetch,
                   bf_device_kind dev, result *r) {
    static char json[32768];
    int n = snprintf(json, sizeof json, HEAD "%s]}", body);
    ck_assert_int_lt(n, (int)sizeof json);
    bf_session *s = open_json(ctx, json);
    bf_error e = {0};
    for (int i = 0; i < n_feeds; i++)
        if (bf_session_feed(s, ids[i], feeds[i], &e))
            ck_abort_msg("feed %s: %s %s", ids[i], e.code, e.message);
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetch;
    o.n_fetches = n_fetch;
    o.device = dev;
    if (bf_session_run(s, &o, NULL, &e))
        ck_abort_msg("run on the %s: %s %s (block %s)", dev == BF_DEVICE_GPU ? "GPU" : "CPU",
                     e.code, e.message, e.block_id);
    memset(r, 0, sizeof *r);
    for (int i = 0; i < n_fetch; i++) {
        const bf_tensor *t = bf_session_output(s, fetch[i], NULL);
        ck_assert_msg(t != NULL, "no output for %s", fetch[i]);
        ck_assert_int_eq(bf_tensor_copy(t, &r->out[i], &e), BF_OK);
        int b = bf_page_find_block(bf_session_page(s), fetch[i]);
        ck_assert_int_ge(b, 0);
        const bf_block_stats *st = bf_session_block_stats(s, b);
        bf_strlcpy(r->device[i], st->device, sizeof r->device[i]);
        bf_strlcpy(r->note[i], st->note, sizeof r->note[i]);
    }
    bf_session_free(s);
}

static void result_free(result *r) {
    for (int i = 0; i < MAX_FETCH; i++) bf_tensor_free(r->out[i]);
}

/*
 * Compare fetched output i of the GPU run with the CPU run's: within the dtype's tolerance
 * scaled by K, and bitwise when `exact`. `what` names the case in failures.
 */
static void compare(const result *gpu, const result *cpu, int i, double k, bool exact,
                    const char *what) {
    const bf_tensor *g = gpu->out[i], *c = cpu->out[i];
    ck_assert_msg(bf_tensor_dtype(g) == bf_tensor_dtype(c), "%s: dtype", what);
    ck_assert_int_eq(bf_tensor_rank(g), bf_tensor_rank(c));
    for (int d = 0; d < bf_tensor_rank(g); d++)
        ck_assert_int_eq(bf_tensor_dims(g)[d], bf_tensor_dims(c)[d]);
    bf_dtype dt = bf_tensor_dtype(g);
    if (exact && bf_tensor_nbytes(g) &&
        memcmp(bf_tensor_cdata(g), bf_tensor_cdata(c), bf_tensor_nbytes(g)) != 0) {
        for (int64_t j = 0; j < bf_tensor_numel(g); j++) {
            double a = bf_tensor_get_f64(g, j), b = bf_tensor_get_f64(c, j);
            if (memcmp(&a, &b, sizeof a) != 0)
                ck_abort_msg("%s (%s, %s): not bitwise the CPU's: element %lld gpu %.17g cpu "
                             "%.17g",
                             what, bf_dtype_name(dt), gpu->note[i], (long long)j, a, b);
        }
    }
    double atol = tol_atol(dt) * (k < 1 ? 1 : k), rtol = tol_rtol(dt);
    for (int64_t j = 0; j < bf_tensor_numel(g); j++) {
        double a = bf_tensor_get_f64(g, j), b = bf_tensor_get_f64(c, j);
        if (isnan(a) && isnan(b)) continue;
        ck_assert_msg(fabs(a - b) <= atol + rtol * fabs(b),
                      "%s (%s, %s): element %lld gpu %.10g cpu %.10g (tolerance %g + %g |cpu|)",
                      what, bf_dtype_name(dt), gpu->note[i], (long long)j, a, b, atol, rtol);
    }
}

/* The block ran on the GPU and its note says `note` (a prefix). */
static void expect_gpu(const result *r, int i, const char *note, const char *what) {
    ck_assert_msg(strncmp(r->device[i], "gpu", 3) == 0, "%s ran on \"%s\" (note: %s)", what,
                  r->device[i], r->note[i]);
    ck_assert_msg(strncmp(r->note[i], note, strlen(note)) == 0, "%s: note \"%s\", want \"%s...\"",
                  what, r->note[i], note);
}

/* The block fell back to the CPU with this reason. */
static void expect_fallback(const result *r, int i, const char *reason, const char *what) {
    char want[128];
    snprintf(want, sizeof want, "CPU fallback: %s", reason);
    ck_assert_msg(strcmp(r->device[i], "cpu") == 0, "%s ran on \"%s\"", what, r->device[i]);
    ck_assert_msg(strstr(r->note[i], want) != NULL, "%s: note \"%s\", want \"%s\"", what,
                  r->note[i], want);
}

/* Run on both devices and hand back the two results. */
static void run_both(bf_context *ctx, const char *body, const char *const *ids,
                     bf_tensor *const *feeds, int n_feeds, const char *const *fetch, int n_fetch,
                     result *gpu, result *cpu) {
    run_on(ctx, body, ids, feeds, n_feeds, fetch, n_fetch, BF_DEVICE_CPU, cpu);
    run_on(ctx, body, ids, feeds, n_feeds, fetch, n_fetch, BF_DEVICE_GPU, gpu);
    for (int i = 0; i < n_fetch; i++)
        printf("  %-4s %-6s %s\n", fetch[i], gpu->device[i], gpu->note[i]);
}

/* ---- MatMul ------------------------------------------------------------------------------------ */

static const bf_dtype float_dts[] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16, BF_DTYPE_BF16};

/* c = MatMul(a, b) with the transposes of _i (0..3), float32 and float64, then float16 and
 * bfloat16 without transposes (_i 4, 5). */
START_TEST(matmul_matches_cpu) {
    bf_context *ctx = new_ctx();
    const int64_t M = 37, K = 53, N = 29;
    bool ta = _i < 4 && (_i & 1), tb = _i < 4 && (_i & 2);
    int n_dt = _i < 4 ? 2 : 1;
    for (int d = 0; d < n_dt; d++) {
        bf_dtype dt = _i < 4 ? float_dts[d] : float_dts[_i - 2];
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
        bf_tensor *feeds[2] = {tensor(ctx, dt, 2, ad, D_NONZERO, 1 + (uint64_t)_i),
                               tensor(ctx, dt, 2, bd, D_NONZERO, 11 + (uint64_t)_i)};
        const char *ids[2] = {"a", "b"}, *fetch[1] = {"c"};
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
                 "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
                 "{\"id\":\"c\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"},"
                 "\"attrs\":{\"transpose_a\":%s,\"transpose_b\":%s}}",
                 bf_dtype_name(dt), bf_dtype_name(dt), ta ? "true" : "false",
                 tb ? "true" : "false");
        result gpu, cpu;
        printf("MatMul %s ta=%d tb=%d\n", bf_dtype_name(dt), ta, tb);
        run_both(ctx, body, ids, feeds, 2, fetch, 1, &gpu, &cpu);
        const char *note = dt == BF_DTYPE_F32   ? "cublasSgemm"
                           : dt == BF_DTYPE_F64 ? "cublasDgemm"
                                                : "cublasGemmEx";
        expect_gpu(&gpu, 0, note, "MatMul");
        compare(&gpu, &cpu, 0, (double)K, false, "MatMul");
        result_free(&gpu), result_free(&cpu);
        bf_tensor_free(feeds[0]), bf_tensor_free(feeds[1]);
    }
    bf_context_free(ctx);
}
END_TEST

/* An empty sum (k = 0) gives zeros on the GPU; int32 stays on the CPU and says why. */
START_TEST(matmul_empty_sum_and_integer_fallback) {
    bf_context *ctx = new_ctx();
    const char *ids[2] = {"a", "b"}, *fetch[1] = {"c"};
    for (int pass = 0; pass < 2; pass++) {
        bf_dtype dt = pass ? BF_DTYPE_I32 : BF_DTYPE_F32;
        int64_t ad[2] = {3, pass ? 5 : 0}, bd[2] = {pass ? 5 : 0, 4};
        bf_tensor *feeds[2] = {tensor(ctx, dt, 2, ad, D_NONZERO, 5),
                               tensor(ctx, dt, 2, bd, D_NONZERO, 6)};
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"id\":\"a\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
                 "{\"id\":\"b\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
                 "{\"id\":\"c\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"a\",\"b\":\"b\"}}",
                 bf_dtype_name(dt), bf_dtype_name(dt));
        result gpu, cpu;
        run_both(ctx, body, ids, feeds, 2, fetch, 1, &gpu, &cpu);
        if (pass) {
            expect_fallback(&gpu, 0, "integer MatMul on the CPU", "int32 MatMul");
        } else {
            expect_gpu(&gpu, 0, "empty sum: zeros", "MatMul with k = 0");
            for (int64_t j = 0; j < 12; j++) ck_assert(bf_tensor_get_f64(gpu.out[0], j) == 0.0);
        }
        compare(&gpu, &cpu, 0, 5, true, "MatMul");
        result_free(&gpu), result_free(&cpu);
        bf_tensor_free(feeds[0]), bf_tensor_free(feeds[1]);
    }
    bf_context_free(ctx);
}
END_TEST

/* ---- pooling ---------------------------------------------------------------------------------- */

typedef struct pcase {
    int64_t h, w, c, kh, kw, sh, sw;
    const char *padding; /* "VALID" / "SAME" */
} pcase;

static const pcase pool_cases[] = {
    {8, 8, 3, 2, 2, 2, 2, "VALID"}, /* the CNN's pool: cuDNN */
    {7, 7, 5, 3, 3, 1, 1, "SAME"},  /* pads 1/1: cuDNN */
    {7, 6, 4, 2, 2, 2, 2, "SAME"},  /* rows pad 0/1: ours */
    {8, 8, 2, 3, 3, 2, 2, "SAME"},  /* pads 0/1 both ways: ours */
    {5, 9, 3, 3, 2, 1, 3, "VALID"}, /* non-square window and strides: cuDNN */
    {3, 3, 2, 4, 4, 1, 1, "SAME"},  /* a window larger than the input, pads 1/2: ours */
    {6, 6, 3, 3, 3, 3, 3, "SAME"},  /* no pad needed: cuDNN */
};

/* TF's SAME pads of one dimension are symmetric (VALID: always). */
static bool symmetric(const pcase *c) {
    if (strcmp(c->padding, "VALID") == 0) return true;
    int64_t oh = (c->h + c->sh - 1) / c->sh, ow = (c->w + c->sw - 1) / c->sw;
    int64_t nh = (oh - 1) * c->sh + c->kh - c->h, nw = (ow - 1) * c->sw + c->kw - c->w;
    return (nh < 0 || nh % 2 == 0) && (nw < 0 || nw % 2 == 0);
}

static int64_t out_dim(const char *padding, int64_t in, int64_t k, int64_t s) {
    return strcmp(padding, "VALID") == 0 ? (in - k + s) / s : (in + s - 1) / s;
}

/* One pooling case in layout nchw and dtype dt: the four blocks at once. */
static void pool_case(bf_context *ctx, const pcase *c, int nchw, bf_dtype dt, int kind,
                      uint64_t seed) {
    const int64_t n = 2, oh = out_dim(c->padding, c->h, c->kh, c->sh),
                  ow = out_dim(c->padding, c->w, c->kw, c->sw);
    int64_t xd[4] = {n, c->h, c->w, c->c}, yd[4] = {n, oh, ow, c->c};
    if (nchw) {
        xd[1] = c->c, xd[2] = c->h, xd[3] = c->w;
        yd[1] = c->c, yd[2] = oh, yd[3] = ow;
    }
    char win[160], body[4096];
    if (nchw)
        snprintf(win, sizeof win,
                 "\"ksize\":[1,1,%lld,%lld],\"strides\":[1,1,%lld,%lld],\"padding\":\"%s\","
                 "\"data_format\":\"NCHW\"",
                 (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                 c->padding);
    else
        snprintf(win, sizeof win,
                 "\"ksize\":[1,%lld,%lld,1],\"strides\":[1,%lld,%lld,1],\"padding\":\"%s\"",
                 (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                 c->padding);
    snprintf(body, sizeof body,
             "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"xs\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
             "\"value\":[%lld,%lld,%lld,%lld]}},"
             "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
             "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
             "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}},"
             "{\"id\":\"ap\",\"type\":\"AvgPool\",\"attrs\":{%s},\"inputs\":{\"value\":\"x\"}},"
             "{\"id\":\"ag\",\"type\":\"AvgPoolGrad\",\"attrs\":{%s},\"inputs\":{"
             "\"orig_input_shape\":\"xs\",\"grad\":\"dy\"}}",
             bf_dtype_name(dt), bf_dtype_name(dt), (long long)xd[0], (long long)xd[1],
             (long long)xd[2], (long long)xd[3], win, win, win, win);
    bf_tensor *feeds[2] = {tensor(ctx, dt, 4, xd, kind, seed),
                           tensor(ctx, dt, 4, yd, D_NONZERO, seed + 100)};
    const char *ids[2] = {"x", "dy"}, *fetch[4] = {"mp", "mg", "ap", "ag"};
    char what[4][160];
    const char *names[4] = {"MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad"};
    for (int i = 0; i < 4; i++)
        snprintf(what[i], sizeof what[i], "%s %s %lldx%lld k%lldx%lld s%lldx%lld %s%s",
                 names[i], nchw ? "NCHW" : "NHWC", (long long)c->h, (long long)c->w,
                 (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                 c->padding, kind == D_TIES ? " (ties)" : "");
    printf("%s %s\n", what[0] + 8, bf_dtype_name(dt));
    result gpu, cpu;
    run_both(ctx, body, ids, feeds, 2, fetch, 4, &gpu, &cpu);
    bool cudnn = symmetric(c) && (dt == BF_DTYPE_F32 || dt == BF_DTYPE_F64);
    const char *layout = nchw ? "(NCHW)" : "(NHWC)";
    char want[64];
    snprintf(want, sizeof want, "cudnn maxpool %s", layout);
    expect_gpu(&gpu, 0, cudnn ? want : "own maxpool kernel", what[0]);
    expect_gpu(&gpu, 1, "own maxpool grad kernel (TF's first-maximum rule)", what[1]);
    snprintf(want, sizeof want, "cudnn avgpool %s", layout);
    expect_gpu(&gpu, 2, cudnn ? want : "own avgpool kernel", what[2]);
    snprintf(want, sizeof want, "cudnn avgpool grad %s", layout);
    expect_gpu(&gpu, 3, cudnn ? want : "own avgpool grad kernel", what[3]);
    if (!cudnn && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        ck_assert_msg(strstr(gpu.note[0], "asymmetric padding"), "note: %s", gpu.note[0]);
    double k = (double)(c->kh * c->kw);
    compare(&gpu, &cpu, 0, 1, true, what[0]);
    compare(&gpu, &cpu, 1, 1, true, what[1]);
    compare(&gpu, &cpu, 2, k, !cudnn, what[2]);
    compare(&gpu, &cpu, 3, k, !cudnn, what[3]);
    result_free(&gpu), result_free(&cpu);
    bf_tensor_free(feeds[0]), bf_tensor_free(feeds[1]);
}

/* Case _i of pool_cases, NHWC and NCHW, float32 and float64, uniform data and ties. */
START_TEST(pooling_matches_cpu) {
    bf_context *ctx = new_ctx();
    for (int nchw = 0; nchw < 2; nchw++)
        for (int d = 0; d < 2; d++)
            pool_case(ctx, &pool_cases[_i], nchw, float_dts[d], (nchw + d) % 2 ? D_TIES : D_NONZERO,
                      (uint64_t)(_i * 10 + nchw * 2 + d));
    bf_context_free(ctx);
}
END_TEST

/* float16 and bfloat16 pool in our kernels (in float, one rounding): bitwise the CPU's. */
START_TEST(pooling_half_precision) {
    bf_context *ctx = new_ctx();
    for (int d = 2; d < 4; d++) {
        pool_case(ctx, &pool_cases[0], 0, float_dts[d], D_TIES, 70 + (uint64_t)d);
        pool_case(ctx, &pool_cases[2], 1, float_dts[d], D_NONZERO, 80 + (uint64_t)d);
    }
    bf_context_free(ctx);
}
END_TEST

/* MaxPool/MaxPoolGrad with EXPLICIT pads (symmetric: cuDNN; asymmetric: ours), MaxPool over
 * depth (ours), and int32 MaxPool (the CPU, with the reason). */
START_TEST(pooling_explicit_depth_and_integer) {
    bf_context *ctx = new_ctx();
    static const struct {
        const char *pads;
        const char *note;
    } ex[] = {{"[0,0,1,1,1,1,0,0]", "cudnn maxpool (NHWC)"},
              {"[0,0,0,2,1,0,0,0]", "own maxpool kernel (asymmetric padding)"}};
    for (int i = 0; i < 2; i++) {
        int64_t xd[4] = {2, 7, 7, 3};
        int64_t oh = (7 + (i ? 2 : 2) - 3) / 2 + 1, ow = (7 + (i ? 1 : 2) - 3) / 2 + 1;
        int64_t yd[4] = {2, oh, ow, 3};
        char body[2048], win[160];
        snprintf(win, sizeof win,
                 "\"ksize\":[1,3,3,1],\"strides\":[1,2,2,1],\"padding\":\"EXPLICIT\","
                 "\"explicit_paddings\":%s",
                 ex[i].pads);
        snprintf(body, sizeof body,
                 "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
                 "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
                 "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{%s},\"inputs\":{\"input\":\"x\"}},"
                 "{\"id\":\"mg\",\"type\":\"MaxPoolGrad\",\"attrs\":{%s},\"inputs\":{"
                 "\"orig_input\":\"x\",\"orig_output\":\"mp\",\"grad\":\"dy\"}}",
                 win, win);
        bf_tensor *feeds[2] = {tensor(ctx, BF_DTYPE_F32, 4, xd, D_NONZERO, 90 + (uint64_t)i),
                               tensor(ctx, BF_DTYPE_F32, 4, yd, D_NONZERO, 95 + (uint64_t)i)};
        const char *ids[2] = {"x", "dy"}, *fetch[2] = {"mp", "mg"};
        result gpu, cpu;
        printf("MaxPool EXPLICIT %s\n", ex[i].pads);
        run_both(ctx, body, ids, feeds, 2, fetch, 2, &gpu, &cpu);
        expect_gpu(&gpu, 0, ex[i].note, "MaxPool EXPLICIT");
        expect_gpu(&gpu, 1, "own maxpool grad kernel", "MaxPoolGrad EXPLICIT");
        compare(&gpu, &cpu, 0, 1, true, "MaxPool EXPLICIT");
        compare(&gpu, &cpu, 1, 1, true, "MaxPoolGrad EXPLICIT");
        result_free(&gpu), result_free(&cpu);
        bf_tensor_free(feeds[0]), bf_tensor_free(feeds[1]);
    }
    for (int i = 0; i < 2; i++) { /* over depth (float32), then int32 */
        bf_dtype dt = i ? BF_DTYPE_I32 : BF_DTYPE_F32;
        int64_t xd[4] = {2, 4, 4, 6};
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
                 "{\"id\":\"mp\",\"type\":\"MaxPool\",\"attrs\":{\"ksize\":%s,\"strides\":%s,"
                 "\"padding\":\"VALID\"},\"inputs\":{\"input\":\"x\"}}",
                 bf_dtype_name(dt), i ? "[1,2,2,1]" : "[1,1,1,3]", i ? "[1,2,2,1]" : "[1,1,1,3]");
        bf_tensor *feeds[1] = {tensor(ctx, dt, 4, xd, D_NONZERO, 99)};
        const char *ids[1] = {"x"}, *fetch[1] = {"mp"};
        result gpu, cpu;
        printf("MaxPool %s\n", i ? "int32" : "over depth");
        run_both(ctx, body, ids, feeds, 1, fetch, 1, &gpu, &cpu);
        if (i)
            expect_fallback(&gpu, 0, "integer MaxPool on the CPU", "int32 MaxPool");
        else
            expect_gpu(&gpu, 0, "own maxpool kernel (pooling over depth)", "MaxPool over depth");
        compare(&gpu, &cpu, 0, 1, true, "MaxPool");
        result_free(&gpu), result_free(&cpu);
        bf_tensor_free(feeds[0]);
    }
    bf_context_free(ctx);
}
END_TEST

/* ---- activations --------------------------------------------------------------------------- */

/* Relu, Sigmoid, Tanh of x, and ReluGrad(dy, x), SigmoidGrad(y, dy), TanhGrad(y, dy), in
 * dtype float_dts[_i]; then int32 Relu. */
START_TEST(activations_match_cpu) {
    bf_context *ctx = new_ctx();
    bf_dtype dt = float_dts[_i];
    int64_t dims[2] = {37, 101};
    char body[2048];
    snprintf(body, sizeof body,
             "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"y\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"%s\"}},"
             "{\"id\":\"r\",\"type\":\"Relu\",\"inputs\":{\"features\":\"x\"}},"
             "{\"id\":\"s\",\"type\":\"Sigmoid\",\"inputs\":{\"x\":\"x\"}},"
             "{\"id\":\"t\",\"type\":\"Tanh\",\"inputs\":{\"x\":\"x\"}},"
             "{\"id\":\"rg\",\"type\":\"ReluGrad\",\"inputs\":{\"gradients\":\"dy\","
             "\"features\":\"x\"}},"
             "{\"id\":\"sg\",\"type\":\"SigmoidGrad\",\"inputs\":{\"y\":\"y\",\"dy\":\"dy\"}},"
             "{\"id\":\"tg\",\"type\":\"TanhGrad\",\"inputs\":{\"y\":\"y\",\"dy\":\"dy\"}}",
             bf_dtype_name(dt), bf_dtype_name(dt), bf_dtype_name(dt));
    bf_tensor *feeds[3] = {tensor(ctx, dt, 2, dims, D_ACT, 200 + (uint64_t)_i),
                           tensor(ctx, dt, 2, dims, D_UNIT, 210 + (uint64_t)_i),
                           tensor(ctx, dt, 2, dims, D_NONZERO, 220 + (uint64_t)_i)};
    const char *ids[3] = {"x", "y", "dy"}, *fetch[6] = {"r", "s", "t", "rg", "sg", "tg"};
    static const char *const notes[6] = {"own relu kernel",      "own sigmoid kernel",
                                         "own tanh kernel",      "own relu_grad kernel",
                                         "own sigmoid_grad kernel", "own tanh_grad kernel"};
    result gpu, cpu;
    printf("activations %s\n", bf_dtype_name(dt));
    run_both(ctx, body, ids, feeds, 3, fetch, 6, &gpu, &cpu);
    for (int i = 0; i < 6; i++) {
        expect_gpu(&gpu, i, notes[i], fetch[i]);
        compare(&gpu, &cpu, i, 1, i != 1 && i != 2, notes[i] + 4);
    }
    result_free(&gpu), result_free(&cpu);
    for (int i = 0; i < 3; i++) bf_tensor_free(feeds[i]);

    /* int32 Relu stays on the CPU */
    bf_tensor *xi = tensor(ctx, BF_DTYPE_I32, 2, dims, D_NONZERO, 230);
    const char *ids1[1] = {"x"}, *fetch1[1] = {"r"};
    run_both(ctx,
             "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"int32\"}},"
             "{\"id\":\"r\",\"type\":\"Relu\",\"inputs\":{\"features\":\"x\"}}",
             ids1, &xi, 1, fetch1, 1, &gpu, &cpu);
    expect_fallback(&gpu, 0, "integer Relu on the CPU", "int32 Relu");
    compare(&gpu, &cpu, 0, 1, true, "int32 Relu");
    result_free(&gpu), result_free(&cpu);
    bf_tensor_free(xi);
    bf_context_free(ctx);
}
END_TEST

/* ---- training steps --------------------------------------------------------------------------- */

/* The loss after the first and after the last step. */
typedef struct losses {
    double first, last;
} losses;

static int on_step(int64_t k, const double *metrics, int n_metrics, void *user) {
    losses *l = user;
    ck_assert_int_ge(n_metrics, 1);
    if (k == 1) l->first = metrics[0];
    l->last = metrics[0];
    return 0;
}

/* Step session s n times on dev (fail with the error otherwise); the page's first output is
 * its loss, which must have come down. */
static losses step(bf_session *s, int n, bf_device_kind dev) {
    bf_step_options o;
    bf_step_options_init(&o);
    losses l = {NAN, NAN};
    o.device = dev;
    o.on_step = on_step;
    o.user = &l;
    bf_error e = {0};
    if (bf_session_step(s, n, &o, NULL, &e))
        ck_abort_msg("step on the %s: %s %s (block %s)", dev == BF_DEVICE_GPU ? "GPU" : "CPU",
                     e.code, e.message, e.block_id);
    printf("  %s: loss %.6g after the first step, %.6g after step %d\n",
           dev == BF_DEVICE_GPU ? "GPU" : "CPU", l.first, l.last, n);
    ck_assert_msg(l.last < l.first, "the loss did not come down: %g -> %g", l.first, l.last);
    return l;
}

/* The two runs' losses agree within 1e-4 relative, or 1e-6 of the first loss (a page that
 * converges to a loss of 1e-14 keeps only rounding noise there). */
static void compare_losses(losses g, losses c) {
    double floor = 1e-6 * fabs(c.first);
    ck_assert_msg(fabs(g.first - c.first) <= 1e-4 * fabs(c.first),
                  "first loss: gpu %.9g cpu %.9g", g.first, c.first);
    ck_assert_msg(fabs(g.last - c.last) <= 1e-4 * fabs(c.last) + floor,
                  "last loss: gpu %.9g cpu %.9g", g.last, c.last);
}

/* Every Variable of the two sessions agrees within 1e-4 relative. */
static void compare_state(bf_session *gpu, bf_session *cpu, const char *what) {
    int n = bf_session_state_count(cpu), vars = 0;
    ck_assert_int_eq(n, bf_session_state_count(gpu));
    for (int i = 0; i < n; i++) {
        const char *id = bf_session_state_id(cpu, i);
        bf_tensor *g = NULL, *c = NULL;
        bf_error e = {0};
        if (bf_session_read_state(cpu, id, &c, &e) || bf_session_read_state(gpu, id, &g, &e))
            ck_abort_msg("%s: reading %s: %s", what, id, e.message);
        ck_assert_int_eq(bf_tensor_numel(g), bf_tensor_numel(c));
        double big = 0;
        for (int64_t j = 0; j < bf_tensor_numel(c); j++)
            big = fmax(big, fabs(bf_tensor_get_f64(c, j)));
        double worst = 0;
        for (int64_t j = 0; j < bf_tensor_numel(c); j++) {
            double a = bf_tensor_get_f64(g, j), b = bf_tensor_get_f64(c, j);
            double rel = fabs(a - b) / fmax(fmax(fabs(b), 0.01 * big), 1e-30);
            worst = fmax(worst, rel);
            ck_assert_msg(rel <= 1e-4, "%s: %s[%lld] gpu %.9g cpu %.9g (relative %.3g)", what, id,
                          (long long)j, a, b, rel);
        }
        printf("  %s: %s, %lld elements, worst relative difference %.3g\n", what, id,
               (long long)bf_tensor_numel(c), worst);
        vars++;
        bf_tensor_free(g), bf_tensor_free(c);
    }
    ck_assert_int_gt(vars, 0);
}

/* examples/train/learn_a_filter.json, 50 steps on each device. */
START_TEST(learn_a_filter_steps_on_gpu) {
    bf_context *ctx = new_ctx();
    char path[1024];
    bf_test_path(path, sizeof path, bf_test_source_dir(), "examples/train/learn_a_filter.json");
    bf_session *s[2];
    losses l[2];
    for (int d = 0; d < 2; d++) {
        bf_page *page = NULL;
        bf_error e = {0};
        if (bf_page_load_file(ctx, path, &page, NULL, &e)) ck_abort_msg("%s: %s", path, e.message);
        ck_assert_int_eq(bf_session_new(ctx, page, &s[d], &e), BF_OK);
        l[d] = step(s[d], 50, d ? BF_DEVICE_GPU : BF_DEVICE_CPU);
    }
    compare_losses(l[1], l[0]);
    compare_state(s[1], s[0], "learn_a_filter, 50 steps");
    bf_session_free(s[0]), bf_session_free(s[1]);
    bf_context_free(ctx);
}
END_TEST

/* A small CNN using every block of this family, its backward pass and SGD updates built by
 * bf_session_build_gradients. */
static const char *const cnn_page =
    HEAD
    "{\"id\":\"images\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[8,8,8,1],\"seed\":3,"
    "\"minval\":-1,\"maxval\":1}},"
    "{\"id\":\"targets\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[8,4],\"seed\":4,"
    "\"minval\":0.1,\"maxval\":0.9}},"
    "{\"id\":\"conv_w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,1,4],"
    "\"initializer\":\"glorot_uniform\",\"seed\":1}},"
    "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"images\",\"filter\":\"conv_w\"},"
    "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
    "{\"id\":\"conv_b\",\"type\":\"Variable\",\"attrs\":{\"shape\":[4],\"value\":0.01}},"
    "{\"id\":\"bias\",\"type\":\"BiasAdd\",\"inputs\":{\"value\":\"conv\",\"bias\":\"conv_b\"}},"
    "{\"id\":\"relu\",\"type\":\"Relu\",\"inputs\":{\"features\":\"bias\"}},"
    "{\"id\":\"pool\",\"type\":\"MaxPool\",\"inputs\":{\"input\":\"relu\"},"
    "\"attrs\":{\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"VALID\"}},"
    "{\"id\":\"avg\",\"type\":\"AvgPool\",\"inputs\":{\"value\":\"pool\"},"
    "\"attrs\":{\"ksize\":[1,3,3,1],\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
    "{\"id\":\"squash\",\"type\":\"Tanh\",\"inputs\":{\"x\":\"avg\"}},"
    "{\"id\":\"flat_shape\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[8,64]}},"
    "{\"id\":\"flat\",\"type\":\"Reshape\",\"inputs\":{\"tensor\":\"squash\","
    "\"shape\":\"flat_shape\"}},"
    "{\"id\":\"fc_w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[64,4],"
    "\"initializer\":\"glorot_uniform\",\"seed\":2}},"
    "{\"id\":\"fc\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"flat\",\"b\":\"fc_w\"}},"
    "{\"id\":\"prob\",\"type\":\"Sigmoid\",\"inputs\":{\"x\":\"fc\"}},"
    "{\"id\":\"diff\",\"type\":\"Sub\",\"inputs\":{\"x\":\"prob\",\"y\":\"targets\"}},"
    "{\"id\":\"sq\",\"type\":\"Square\",\"inputs\":{\"x\":\"diff\"}},"
    "{\"id\":\"axes\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[0,1]}},"
    "{\"id\":\"loss\",\"type\":\"Mean\",\"inputs\":{\"input\":\"sq\","
    "\"reduction_indices\":\"axes\"}}"
    "],\"outputs\":[\"loss\"]}";

START_TEST(cnn_steps_on_gpu) {
    bf_context *ctx = new_ctx();
    bf_session *s[2];
    losses l[2];
    for (int d = 0; d < 2; d++) {
        s[d] = open_json(ctx, cnn_page);
        char *created = NULL;
        bf_error e = {0};
        if (bf_session_build_gradients(s[d], "loss", NULL, 0, "sgd:0.5", &created, &e))
            ck_abort_msg("building the gradients: %s %s (block %s)", e.code, e.message,
                         e.block_id);
        bf_string_free(created);
        l[d] = step(s[d], 50, d ? BF_DEVICE_GPU : BF_DEVICE_CPU);
    }
    compare_losses(l[1], l[0]);
    compare_state(s[1], s[0], "CNN, 50 steps");
    /* every block of this family ran on the GPU in the last step */
    static const char *const types[] = {"MatMul",      "MaxPool",  "MaxPoolGrad", "AvgPool",
                                        "AvgPoolGrad", "Relu",     "ReluGrad",    "Sigmoid",
                                        "SigmoidGrad", "Tanh",     "TanhGrad"};
    bool seen[BF_COUNT(types)] = {0};
    const bf_page *page = bf_session_page(s[1]);
    for (int b = 0; b < bf_page_block_count(page); b++) {
        const bf_block_stats *st = bf_session_block_stats(s[1], b);
        printf("  %-24s %-12s %-6s %s\n", st->id, st->type, st->ran ? st->device : "-", st->note);
        for (int t = 0; t < BF_COUNT(types); t++) {
            if (strcmp(st->type, types[t]) != 0 || !st->ran) continue;
            seen[t] = true;
            ck_assert_msg(strncmp(st->device, "gpu", 3) == 0, "%s (%s) ran on %s: %s", st->id,
                          st->type, st->device, st->note);
        }
    }
    for (int t = 0; t < BF_COUNT(types); t++)
        ck_assert_msg(seen[t], "no %s ran in the CNN's last step", types[t]);
    bf_session_free(s[0]), bf_session_free(s[1]);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("train_ops_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, matmul_matches_cpu, 0, 6);
    tcase_add_test(tc, matmul_empty_sum_and_integer_fallback);
    tcase_add_loop_test(tc, pooling_matches_cpu, 0, BF_COUNT(pool_cases));
    tcase_add_test(tc, pooling_half_precision);
    tcase_add_test(tc, pooling_explicit_depth_and_integer);
    tcase_add_loop_test(tc, activations_match_cpu, 0, 4);
    tcase_add_test(tc, learn_a_filter_steps_on_gpu);
    tcase_add_test(tc, cnn_steps_on_gpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char why[256];
    if (!ct_gpu_present(why, sizeof why)) {
        printf("test_train_ops_gpu: skipped, no GPU (%s)\n", why);
        return BF_TEST_SKIP;
    }
    printf("test_train_ops_gpu: running on %s\n", why);
    return bf_test_main(suite());
}
