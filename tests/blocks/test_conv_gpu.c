/*
 * test_conv_gpu.c - the CUDA convolution kernels (cuDNN path and our own kernels) against an
 * independent float64 reference written here, on random geometries.
 *
 * Running just the GPU tests, from the build directory:
 *
 *     ctest -L gpu --output-on-failure
 *
 * (ctest labels every test whose name ends in _gpu with "gpu".) Without a GPU, or in a build
 * without CUDA, this program exits 77 at once and ctest reports it as Not Run, never passed.
 *
 * What is checked, for all three ops (FWD, BWD_FILTER, BWD_INPUT), use_cudnn 0 and 1, and
 * float32 / float64 / float16 / bfloat16:
 *  - depthwise NHWC geometries for the fast depthwise kernels (channel tails, multipliers,
 *    3/5/7 filters, many filter-gradient splits);
 *  - random geometries: NHWC and NCHW, N 1..3, strides 1..3, dilations 1..2, VALID, TF SAME
 *    (odd totals give asymmetric pads) and random asymmetric EXPLICIT pads, groups, and
 *    depthwise with channel multipliers 1..3; every fifth case is larger, to cover several
 *    tiles and split reductions;
 *  - every output element is written (outputs are pre-filled with NaN bytes);
 *  - our own kernels are bitwise deterministic (run twice, compare bytes);
 *  - empty reductions give zeros; autotune mode (BF_CUDNN_AUTOTUNE=1) runs and is noted.
 * Inputs are rounded to the dtype first and the reference uses the rounded values, so only
 * accumulation and output rounding differ. Tolerances, with K the reduction length
 * (FWD: KH*KW*Cg, BWD_INPUT: KH*KW*Og, BWD_FILTER: N*OH*OW) and |err| <= atol + rtol*|ref|:
 *     float64  atol 1e-12*K  rtol 1e-12
 *     float32  atol 2e-6*K   rtol 1e-5     (TF32 is off: CUDNN_FMA_MATH)
 *     float16  atol 5e-4*K   rtol 4e-3     (float accumulation, output rounded to 11 bits)
 *     bfloat16 atol 4e-3*K   rtol 1.6e-2   (float accumulation, output rounded to 8 bits)
 *
 * The CUDA runtime must not be initialised before Check forks each test, so main() probes the
 * GPU in a child process and each test probes again for itself.
 */
#include "conv_harness.h"
#include "exec.h"
#include "half.h"
#include "conv_ref64.h"
#include "nn_ops/conv_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- geometry ---------------------------------------------------------------------------- */

/* 0 VALID, 1 SAME (TF: smaller half before), 2 EXPLICIT random. Returns the output size or
 * -1 when the window does not fit. */
static int64_t pads_for(int mode, int64_t in, int64_t k, int64_t s, int64_t d, bf_rng *r,
                        int64_t *before, int64_t *after) {
    int64_t eff = (k - 1) * d + 1;
    if (mode == 1) {
        int64_t out = (in + s - 1) / s;
        int64_t total = BF_MAX((out - 1) * s + eff - in, 0);
        *before = total / 2, *after = total - *before;
        return out;
    }
    *before = mode == 2 ? bf_rng_int(r, 0, 3) : 0;
    *after = mode == 2 ? bf_rng_int(r, 0, 3) : 0;
    int64_t span = in + *before + *after;
    return span < eff ? -1 : (span - eff) / s + 1;
}

static void random_geom(int seed, bf_conv_geom *g) {
    bf_rng r = {0x9e3779b97f4a7c15ull * (uint64_t)(seed + 1)};
    bool big = seed % 5 == 4;
    for (;;) {
        memset(g, 0, sizeof *g);
        g->nchw = (int)bf_rng_int(&r, 0, 1);
        g->n = bf_rng_int(&r, 1, big ? 2 : 3);
        int kind = (int)bf_rng_int(&r, 0, 2); /* plain, grouped, depthwise */
        if (kind == 0) {
            g->groups = 1;
            g->in_c = bf_rng_int(&r, 1, big ? 40 : 7);
            g->out_c = bf_rng_int(&r, 1, big ? 70 : 9);
        } else if (kind == 1) {
            g->groups = bf_rng_int(&r, 2, 3);
            g->in_c = g->groups * bf_rng_int(&r, 1, big ? 12 : 4);
            g->out_c = g->groups * bf_rng_int(&r, 1, big ? 24 : 4);
        } else {
            g->in_c = bf_rng_int(&r, 2, big ? 24 : 6);
            g->groups = g->in_c;
            g->out_c = g->in_c * bf_rng_int(&r, 1, 3);
        }
        g->k_in_c = g->in_c / g->groups;
        g->in_h = bf_rng_int(&r, 1, big ? 24 : 12);
        g->in_w = bf_rng_int(&r, 1, big ? 24 : 12);
        g->k_h = bf_rng_int(&r, 1, 4);
        g->k_w = bf_rng_int(&r, 1, 4);
        g->stride_h = bf_rng_int(&r, 1, 3);
        g->stride_w = bf_rng_int(&r, 1, 3);
        g->dil_h = bf_rng_int(&r, 1, 2);
        g->dil_w = bf_rng_int(&r, 1, 2);
        int mode = (int)bf_rng_int(&r, 0, 2);
        g->out_h =
            pads_for(mode, g->in_h, g->k_h, g->stride_h, g->dil_h, &r, &g->pad_top, &g->pad_bottom);
        g->out_w =
            pads_for(mode, g->in_w, g->k_w, g->stride_w, g->dil_w, &r, &g->pad_left, &g->pad_right);
        if (g->out_h > 0 && g->out_w > 0) return;
    }
}

/* ---- running on the GPU ------------------------------------------------------------------ */

/* Open the first GPU in this (forked) test process, or fail the test. */
static void gpu_open(ct_gpu *G) {
    bf_error err = {0};
    ck_assert_msg(ct_gpu_open(G, &err) == BF_OK, "opening the GPU: %s", err.message);
}

static double tol_atol(bf_dtype dt, double k) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12 * k;
    case BF_DTYPE_F32: return 2e-6 * k;
    case BF_DTYPE_F16: return 5e-4 * k;
    default: return 4e-3 * k;
    }
}
static double tol_rtol(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12;
    case BF_DTYPE_F32: return 1e-5;
    case BF_DTYPE_F16: return 4e-3;
    default: return 1.6e-2;
    }
}

/* Round v to dtype dt, store it at p[i], and return the rounded value. */
static double put(bf_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case BF_DTYPE_F64: ((double *)p)[i] = v; return v;
    case BF_DTYPE_F32: ((float *)p)[i] = (float)v; return (float)v;
    case BF_DTYPE_F16:
        ((uint16_t *)p)[i] = bf_f32_to_f16((float)v);
        return bf_f16_to_f32(((uint16_t *)p)[i]);
    default:
        ((uint16_t *)p)[i] = bf_f32_to_bf16((float)v);
        return bf_bf16_to_f32(((uint16_t *)p)[i]);
    }
}
static double get(bf_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case BF_DTYPE_F64: return ((const double *)p)[i];
    case BF_DTYPE_F32: return ((const float *)p)[i];
    case BF_DTYPE_F16: return bf_f16_to_f32(((const uint16_t *)p)[i]);
    default: return bf_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

static void *dev_alloc(ct_gpu *G, size_t bytes) {
    bf_error err = {0};
    void *p = G->dev.ops->alloc(&G->dev, bytes, &err);
    ck_assert_msg(p != NULL, "alloc %zu: %s", bytes, err.message);
    return p;
}

static void sizes(bf_conv_op op, const bf_conv_geom *g, int64_t *na, int64_t *nb, int64_t *no,
                  double *k) {
    int64_t nx = g->n * g->in_h * g->in_w * g->in_c, ny = g->n * g->out_h * g->out_w * g->out_c;
    int64_t nw = g->k_h * g->k_w * g->k_in_c * g->out_c;
    switch (op) {
    case BF_CONV_FWD:
        *na = nx, *nb = nw, *no = ny, *k = (double)(g->k_h * g->k_w * g->k_in_c);
        break;
    case BF_CONV_BWD_FILTER:
        *na = nx, *nb = ny, *no = nw, *k = (double)(g->n * g->out_h * g->out_w);
        break;
    default:
        *na = ny, *nb = nw, *no = nx, *k = (double)(g->k_h * g->k_w * (g->out_c / g->groups));
        break;
    }
    if (*k < 1) *k = 1;
}

/*
 * Run op on the GPU for one geometry/dtype/path and compare with the reference. Returns the
 * worst tolerance excess (<= 1 passes) and leaves the kernel's note in `note`.
 */
static double run_case(ct_gpu *G, bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                       int seed, char *note, size_t note_size) {
    int64_t na, nb, no;
    double k;
    sizes(op, g, &na, &nb, &no, &k);
    size_t es = bf_dtype_size(dt);
    void *ha = malloc((size_t)BF_MAX(na, 1) * es), *hb = malloc((size_t)BF_MAX(nb, 1) * es);
    void *ho = malloc((size_t)BF_MAX(no, 1) * es), *ho2 = malloc((size_t)BF_MAX(no, 1) * es);
    double *da = malloc((size_t)BF_MAX(na, 1) * 8), *db = malloc((size_t)BF_MAX(nb, 1) * 8);
    double *ref = malloc((size_t)BF_MAX(no, 1) * 8), *got = malloc((size_t)BF_MAX(no, 1) * 8);
    ck_assert(ha && hb && ho && ho2 && da && db && ref && got);
    bf_rng r = {(uint64_t)seed * 7919u + (uint64_t)op * 31u + (uint64_t)dt};
    for (int64_t i = 0; i < na; i++)
        da[i] = put(dt, ha, i, bf_rng_uniform(&r, -1, 1));
    for (int64_t i = 0; i < nb; i++)
        db[i] = put(dt, hb, i, bf_rng_uniform(&r, -1, 1));
    bf_test_conv_ref64(op, g, da, db, ref, no);

    ck_assert_msg(bf_conv_cuda_unsupported(op, g, dt, use_cudnn) == NULL, "unsupported: %s",
                  bf_conv_cuda_unsupported(op, g, dt, use_cudnn));
    bf_exec ex = {.pool = NULL,
                  .n_threads = 1,
                  .device = &G->dev,
                  .stream = G->stream,
                  .device_ctx = G->ctx,
                  .note = note,
                  .note_size = note_size};
    ex.workspace_size = bf_conv_cuda_workspace(op, g, dt, use_cudnn, &ex);
    void *ws = ex.workspace_size ? dev_alloc(G, ex.workspace_size) : NULL;
    ex.workspace = ws;
    void *a = dev_alloc(G, (size_t)na * es), *b = dev_alloc(G, (size_t)nb * es);
    void *o = dev_alloc(G, (size_t)no * es);
    bf_error err = {0};
    const bf_device_ops *ops = G->dev.ops;
    ck_assert(ops->upload(&G->dev, a, ha, (size_t)na * es, G->stream, &err) == BF_OK);
    ck_assert(ops->upload(&G->dev, b, hb, (size_t)nb * es, G->stream, &err) == BF_OK);
    memset(ho, 0xff, (size_t)no * es); /* NaN in every float format: unwritten output fails */
    ck_assert(ops->upload(&G->dev, o, ho, (size_t)no * es, G->stream, &err) == BF_OK);
    note[0] = '\0';
    bf_status st = bf_conv_cuda(op, g, dt, use_cudnn, a, b, o, &ex, &err);
    ck_assert_msg(st == BF_OK, "bf_conv_cuda: %s", err.message);
    ck_assert_msg(ops->download(&G->dev, ho, o, (size_t)no * es, G->stream, &err) == BF_OK,
                  "download: %s", err.message);
    for (int64_t i = 0; i < no; i++)
        got[i] = get(dt, ho, i);
    double excess = bf_test_rel_excess(got, ref, no, tol_atol(dt, k), tol_rtol(dt));
    if (!use_cudnn && no > 0) { /* our kernels are deterministic: a second run is identical */
        ck_assert(bf_conv_cuda(op, g, dt, 0, a, b, o, &ex, &err) == BF_OK);
        ck_assert(ops->download(&G->dev, ho2, o, (size_t)no * es, G->stream, &err) == BF_OK);
        ck_assert_msg(memcmp(ho, ho2, (size_t)no * es) == 0, "own kernel not deterministic (%s)",
                      note);
    }
    ops->free(&G->dev, a), ops->free(&G->dev, b), ops->free(&G->dev, o), ops->free(&G->dev, ws);
    free(ha), free(hb), free(ho), free(ho2), free(da), free(db), free(ref), free(got);
    return excess;
}

static const bf_dtype dtypes[] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16, BF_DTYPE_BF16};
static const char *const op_names[] = {"fwd", "bwd_filter", "bwd_input"};

static void check_geom(ct_gpu *G, const bf_conv_geom *g, int seed) {
    for (int op = 0; op < 3; op++)
        for (int d = 0; d < BF_COUNT(dtypes); d++)
            for (int use_cudnn = 0; use_cudnn <= 1; use_cudnn++) {
                char note[256];
                double e =
                    run_case(G, (bf_conv_op)op, g, dtypes[d], use_cudnn, seed, note, sizeof note);
                ck_assert_msg(
                    e <= 1.0,
                    "case %d %s %s %s: error %.3g x tolerance; geometry n%lld h%lld "
                    "w%lld c%lld k%lldx%lld cg%lld o%lld out%lldx%lld s%lld,%lld "
                    "d%lld,%lld pads t%lld b%lld l%lld r%lld groups %lld %s; note: %s",
                    seed, op_names[op], bf_dtype_name(dtypes[d]), use_cudnn ? "cudnn" : "own", e,
                    (long long)g->n, (long long)g->in_h, (long long)g->in_w, (long long)g->in_c,
                    (long long)g->k_h, (long long)g->k_w, (long long)g->k_in_c, (long long)g->out_c,
                    (long long)g->out_h, (long long)g->out_w, (long long)g->stride_h,
                    (long long)g->stride_w, (long long)g->dil_h, (long long)g->dil_w,
                    (long long)g->pad_top, (long long)g->pad_bottom, (long long)g->pad_left,
                    (long long)g->pad_right, (long long)g->groups, g->nchw ? "NCHW" : "NHWC", note);
                ck_assert_msg(note[0] != '\0', "no kernel note");
            }
}

/* ---- tests ------------------------------------------------------------------------------- */

enum { N_RANDOM = 60 };

START_TEST(random_geometries_match_reference) {
    ct_gpu G;
    gpu_open(&G);
    bf_conv_geom g;
    random_geom(_i, &g);
    check_geom(&G, &g, _i);
    ct_gpu_close(&G);
}
END_TEST

/* Depthwise NHWC, the layout of the fast depthwise kernels: channel counts around the
 * 32-channel tiles (multiples of 4 in every other case, for the 4-channel vector kernels),
 * multiplier 1 in two cases of three and 2..3 in the third, square 3/5/7 filters (the
 * specialised filter gradients) and other sizes, strides 1..3, dilations; every fourth case
 * has enough rows for many splits. */
START_TEST(depthwise_nhwc_match_reference) {
    bf_rng r = {0x5eed0000ull + (uint64_t)_i};
    bf_conv_geom g;
    bool big = _i % 4 == 3;
    do {
        memset(&g, 0, sizeof g);
        g.n = bf_rng_int(&r, 1, big ? 4 : 2);
        g.in_c = bf_rng_int(&r, 1, 70);
        if (_i % 2 == 0) g.in_c = (g.in_c + 3) / 4 * 4; /* the 4-channel vector kernels */
        g.groups = g.in_c, g.k_in_c = 1;
        g.out_c = g.in_c * (_i % 3 == 2 ? bf_rng_int(&r, 2, 3) : 1);
        g.in_h = bf_rng_int(&r, 1, big ? 40 : 12);
        g.in_w = bf_rng_int(&r, 1, big ? 40 : 12);
        static const int64_t ks[] = {3, 3, 5, 7, 1, 2, 4};
        g.k_h = ks[bf_rng_int(&r, 0, 6)];
        g.k_w = bf_rng_int(&r, 0, 3) ? g.k_h : bf_rng_int(&r, 1, 4);
        g.stride_h = bf_rng_int(&r, 1, 3), g.stride_w = bf_rng_int(&r, 1, 3);
        g.dil_h = bf_rng_int(&r, 1, 2), g.dil_w = bf_rng_int(&r, 1, 2);
        if (_i % 4 == 1) /* the filter gradient's sliding-window path */
            g.k_h = g.k_w = 3, g.stride_w = 1, g.dil_w = 1;
        int mode = (int)bf_rng_int(&r, 0, 2);
        g.out_h = pads_for(mode, g.in_h, g.k_h, g.stride_h, g.dil_h, &r, &g.pad_top,
                           &g.pad_bottom);
        g.out_w = pads_for(mode, g.in_w, g.k_w, g.stride_w, g.dil_w, &r, &g.pad_left,
                           &g.pad_right);
    } while (g.out_h <= 0 || g.out_w <= 0);
    ct_gpu G;
    gpu_open(&G);
    check_geom(&G, &g, 2000 + _i);
    ct_gpu_close(&G);
}
END_TEST

/* A fixed TF SAME case with an odd pad total (top 0, bottom 1): the asymmetric path. */
START_TEST(asymmetric_same_both_layouts) {
    ct_gpu G;
    gpu_open(&G);
    for (int nchw = 0; nchw <= 1; nchw++) {
        bf_conv_geom g = {.n = 2,
                          .in_h = 6,
                          .in_w = 7,
                          .in_c = 3,
                          .k_h = 3,
                          .k_w = 2,
                          .k_in_c = 3,
                          .out_c = 5,
                          .out_h = 3,
                          .out_w = 4,
                          .stride_h = 2,
                          .stride_w = 2,
                          .dil_h = 1,
                          .dil_w = 1,
                          .pad_top = 0,
                          .pad_bottom = 1,
                          .pad_left = 0,
                          .pad_right = 1,
                          .groups = 1,
                          .nchw = nchw};
        check_geom(&G, &g, 1000 + nchw);
    }
    ct_gpu_close(&G);
}
END_TEST

/* N = 0: the filter gradient is all zeros; it must still be written. */
START_TEST(empty_batch_gives_zero_filter_gradient) {
    ct_gpu G;
    gpu_open(&G);
    bf_conv_geom g = {.n = 0,
                      .in_h = 5,
                      .in_w = 5,
                      .in_c = 2,
                      .k_h = 3,
                      .k_w = 3,
                      .k_in_c = 2,
                      .out_c = 4,
                      .out_h = 3,
                      .out_w = 3,
                      .stride_h = 1,
                      .stride_w = 1,
                      .dil_h = 1,
                      .dil_w = 1,
                      .groups = 1};
    for (int use_cudnn = 0; use_cudnn <= 1; use_cudnn++) {
        char note[256];
        double e =
            run_case(&G, BF_CONV_BWD_FILTER, &g, BF_DTYPE_F32, use_cudnn, 7, note, sizeof note);
        ck_assert_msg(e <= 1.0, "empty batch: %g (%s)", e, note);
    }
    ct_gpu_close(&G);
}
END_TEST

/* BF_CUDNN_AUTOTUNE=1 at session_init: benchmarked algorithms, same results, noted; loop
 * iteration 1 also sets BF_CUDNN_DETERMINISTIC=0 (atomics allowed: still within tolerance). */
START_TEST(autotune_matches_reference) {
    setenv("BF_CUDNN_AUTOTUNE", "1", 1);
    if (_i == 1) setenv("BF_CUDNN_DETERMINISTIC", "0", 1);
    ct_gpu G;
    gpu_open(&G);
    bf_conv_geom g;
    random_geom(4, &g);
    for (int op = 0; op < 3; op++) {
        char note[256];
        double e = run_case(&G, (bf_conv_op)op, &g, BF_DTYPE_F32, 1, 4, note, sizeof note);
        ck_assert_msg(e <= 1.0, "autotuned %s: %g (%s)", op_names[op], e, note);
        if (!bf_conv_is_depthwise(&g) && strstr(note, "cudnn ") == note)
            ck_assert_msg(strstr(note, "autotuned") != NULL, "note: %s", note);
    }
    ct_gpu_close(&G);
    unsetenv("BF_CUDNN_AUTOTUNE");
    unsetenv("BF_CUDNN_DETERMINISTIC");
}
END_TEST

static Suite *conv_gpu_suite(void) {
    Suite *s = suite_create("conv_gpu");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 600);
    /* BF_GPU_TEST_CASES=N runs fewer random geometries (a quick run under compute-sanitizer). */
    const char *env = getenv("BF_GPU_TEST_CASES");
    int n_random = env ? BF_MAX(1, BF_MIN(atoi(env), N_RANDOM)) : N_RANDOM;
    tcase_add_loop_test(tc, random_geometries_match_reference, 0, n_random);
    tcase_add_loop_test(tc, depthwise_nhwc_match_reference, 0, env ? 4 : 40);
    tcase_add_test(tc, asymmetric_same_both_layouts);
    tcase_add_test(tc, empty_batch_gives_zero_filter_gradient);
    tcase_add_loop_test(tc, autotune_matches_reference, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char why[256];
    if (!ct_gpu_present(why, sizeof why)) {
        printf("test_conv_gpu: skipped, no GPU (%s)\n", why);
        return BF_TEST_SKIP;
    }
    printf("test_conv_gpu: running on %s\n", why);
    return bf_test_main(conv_gpu_suite());
}
