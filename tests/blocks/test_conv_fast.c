/*
 * test_conv_fast.c - the fast CPU convolution kernels (blocks/nn_ops/cpu/conv_cpu.c and the
 * conv_gemm_* instantiations) against the independent float64 reference of
 * tests/support/conv_ref64.c.
 *
 * Random non-zero data; random shapes, strides, dilations, asymmetric paddings, groups and
 * depthwise multipliers 1-3, NHWC and NCHW, channel counts that hit every vector tail; f32
 * and f64; 1 thread and a 3-thread pool; every ISA this CPU supports (generic, AVX2,
 * AVX-512), plus the no-workspace fallback. Outputs are filled with NaN first, so an element
 * the kernel forgets to write fails the comparison.
 *
 * Tolerances, with R the length of the reduction behind one output element (FWD: KH*KW*Cg,
 * BWD_INPUT: KH*KW*O/groups, BWD_FILTER: N*OH*OW) and |values| <= 1:
 *   f32: |got - want| <= 4e-6 * R + 1e-4 * |want|   (float accumulation error grows ~ R*eps)
 *   f64: |got - want| <= 1e-12 * R + 1e-10 * |want|
 */
#include "bf_test.h"
#include "conv_ref64.h"
#include "exec.h"
#include "nn_ops/cpu/conv_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- one comparison ----------------------------------------------------------------------- */

typedef struct sizes {
    int64_t x, y, w;
} sizes;

static sizes sizes_of(const bf_conv_geom *g) {
    return (sizes){g->n * g->in_h * g->in_w * g->in_c, g->n * g->out_h * g->out_w * g->out_c,
                   g->k_h * g->k_w * g->k_in_c * g->out_c};
}

static void fill(bf_rng *r, double *p, int64_t n, bool f32) {
    for (int64_t i = 0; i < n; i++) {
        double v = bf_rng_nonzero(r);
        p[i] = f32 ? (double)(float)v : v;
    }
}

/* Run op on (isa, dtype, pool or not, workspace or not) and compare with the reference. */
static void check_one(bf_conv_op op, const bf_conv_geom *g, bf_conv_isa isa, bool f32,
                      bf_pool *pool, bool with_ws, uint64_t seed, const char *what) {
    sizes s = sizes_of(g);
    int64_t na = op == BF_CONV_BWD_INPUT ? s.y : s.x;
    int64_t nb = op == BF_CONV_BWD_FILTER ? s.y : s.w;
    int64_t no = op == BF_CONV_FWD ? s.y : op == BF_CONV_BWD_FILTER ? s.w : s.x;
    bf_rng r = {seed};
    double *a = malloc((size_t)(na + 1) * 8), *b = malloc((size_t)(nb + 1) * 8);
    double *want = malloc((size_t)(no + 1) * 8), *got = malloc((size_t)(no + 1) * 8);
    ck_assert(a && b && want && got);
    fill(&r, a, na, f32);
    fill(&r, b, nb, f32);
    bf_test_conv_ref64(op, g, a, b, want, no);
    int nt = pool ? bf_pool_threads(pool) : 1;
    size_t wsz = bf_conv_cpu_workspace_isa(isa, op, g, f32 ? BF_DTYPE_F32 : BF_DTYPE_F64, nt);
    ck_assert_uint_ne(wsz, SIZE_MAX);
    void *ws = with_ws ? bf_aligned_alloc(wsz ? wsz : 1, false) : NULL;
    ck_assert(!with_ws || ws);
    bf_exec ex = {.pool = pool, .n_threads = nt, .workspace = ws,
                  .workspace_size = with_ws ? wsz : 0};
    if (f32) {
        float *fa = malloc((size_t)(na + 1) * 4), *fb = malloc((size_t)(nb + 1) * 4);
        /* output 64-byte aligned for odd seeds (the streaming-store paths), off by one
           float for even ones */
        float *fo_base = bf_aligned_alloc((size_t)(no + 2) * 4, false);
        float *fo = fo_base ? fo_base + (seed & 1 ? 0 : 1) : NULL;
        ck_assert(fa && fb && fo);
        for (int64_t i = 0; i < na; i++) fa[i] = (float)a[i];
        for (int64_t i = 0; i < nb; i++) fb[i] = (float)b[i];
        for (int64_t i = 0; i < no; i++) fo[i] = NAN;
        bf_conv_cpu_f32_isa(isa, op, g, fa, fb, fo, &ex);
        for (int64_t i = 0; i < no; i++) got[i] = fo[i];
        free(fa), free(fb), bf_aligned_free(fo_base);
    } else {
        for (int64_t i = 0; i < no; i++) got[i] = NAN;
        bf_conv_cpu_f64_isa(isa, op, g, a, b, got, &ex);
    }
    int64_t red = op == BF_CONV_FWD       ? g->k_h * g->k_w * g->k_in_c
                  : op == BF_CONV_BWD_INPUT ? g->k_h * g->k_w * (g->out_c / g->groups)
                                          : g->n * g->out_h * g->out_w;
    double atol = (f32 ? 4e-6 : 1e-12) * (double)BF_MAX(red, 1), rtol = f32 ? 1e-4 : 1e-10;
    double ex_ = bf_test_rel_excess(got, want, no, atol, rtol);
    if (!(ex_ <= 1.0)) {
        int64_t bad = -1;
        for (int64_t i = 0; i < no && bad < 0; i++)
            if (!(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]))) bad = i;
        ck_abort_msg("%s: op %d isa %s %s threads %d ws %d: n%lld h%lld w%lld c%lld k%lldx%lld "
                     "kc%lld o%lld out%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld "
                     "g%lld nchw%d: element %lld got %g want %g (excess %g)",
                     what, (int)op, bf_conv_cpu_isa_name(isa), f32 ? "f32" : "f64", nt,
                     (int)with_ws, (long long)g->n, (long long)g->in_h, (long long)g->in_w,
                     (long long)g->in_c, (long long)g->k_h, (long long)g->k_w,
                     (long long)g->k_in_c, (long long)g->out_c, (long long)g->out_h,
                     (long long)g->out_w, (long long)g->stride_h, (long long)g->stride_w,
                     (long long)g->dil_h, (long long)g->dil_w, (long long)g->pad_top,
                     (long long)g->pad_bottom, (long long)g->pad_left, (long long)g->pad_right,
                     (long long)g->groups, g->nchw, (long long)bad, bad >= 0 ? got[bad] : 0.0,
                     bad >= 0 ? want[bad] : 0.0, ex_);
    }
    bf_aligned_free(ws);
    free(a), free(b), free(want), free(got);
}

/* All ops x ISAs x dtypes x {1 thread, pool} on one geometry. */
static void check_geom(const bf_conv_geom *g, uint64_t seed, const char *what, bool all_isas) {
    bf_pool *pool = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_pool_new(3, &pool, &err), BF_OK);
    for (int op = 0; op < 3; op++)
        for (int isa = 0; isa < BF_CONV_ISA_COUNT; isa++) {
            if (!bf_conv_cpu_isa_supported((bf_conv_isa)isa)) continue;
            if (!all_isas && isa != (int)bf_conv_cpu_best_isa()) continue;
            for (int f = 0; f < 2; f++)
                for (int t = 0; t < 2; t++)
                    check_one((bf_conv_op)op, g, (bf_conv_isa)isa, f == 0, t ? pool : NULL,
                              true, seed + (uint64_t)(op * 16 + isa * 4 + f * 2 + t), what);
        }
    bf_pool_free(pool);
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
    int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
    return span < 0 ? 0 : span / s + 1;
}

static bf_conv_geom make_geom(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh,
                              int64_t kw, int64_t o, int64_t groups, int64_t sh, int64_t sw,
                              int64_t dh, int64_t dw, int64_t pt, int64_t pb, int64_t pl,
                              int64_t pr, int nchw) {
    bf_conv_geom g = {.n = n, .in_h = h, .in_w = w, .in_c = c, .k_h = kh, .k_w = kw,
                      .k_in_c = c / groups, .out_c = o, .stride_h = sh, .stride_w = sw,
                      .dil_h = dh, .dil_w = dw, .pad_top = pt, .pad_bottom = pb,
                      .pad_left = pl, .pad_right = pr, .groups = groups, .nchw = nchw};
    g.out_h = out_size(h, kh, sh, dh, pt, pb);
    g.out_w = out_size(w, kw, sw, dw, pl, pr);
    return g;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* Random geometries; loop index i picks the seed. */
START_TEST(random_geometries) {
    bf_rng r = {0x5eed0000u + (uint64_t)_i};
    static const int64_t chans[] = {1, 2, 3, 5, 8, 15, 16, 17, 33};
    for (int rep = 0; rep < 6; rep++) {
        int kind = (int)bf_rng_int(&r, 0, 3); /* 0,1 dense, 2 grouped, 3 depthwise */
        int64_t groups = 1, cg = chans[bf_rng_int(&r, 0, 8)], og = chans[bf_rng_int(&r, 0, 8)];
        if (kind == 2) groups = bf_rng_int(&r, 2, 3);
        if (kind == 3) groups = bf_rng_int(&r, 2, 20), cg = 1, og = bf_rng_int(&r, 1, 3);
        int64_t kh = bf_rng_int(&r, 1, 4), kw = bf_rng_int(&r, 1, 4);
        bf_conv_geom g = make_geom(
            bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 11), bf_rng_int(&r, 1, 11), groups * cg,
            kh, kw, groups * og, groups, bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 3),
            bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 3), bf_rng_int(&r, 0, 3),
            bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3),
            (int)bf_rng_int(&r, 0, 1));
        check_geom(&g, r.s, "random", true);
    }
}
END_TEST

/* Every vector tail of the channel loops: dense 1x1 / 3x3 and depthwise, C and O odd. */
START_TEST(channel_tails) {
    static const int64_t chans[] = {1, 3, 15, 17, 31, 33, 47, 65};
    int64_t c = chans[_i % 8], o = chans[(_i * 3 + 1) % 8];
    bf_conv_geom g1 = make_geom(2, 5, 6, c, 1, 1, o, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    check_geom(&g1, 11 + (uint64_t)_i, "1x1", true);
    bf_conv_geom g3 = make_geom(1, 7, 5, c, 3, 3, o, 1, 1, 2, 1, 1, 1, 1, 0, 1, _i & 1);
    check_geom(&g3, 21 + (uint64_t)_i, "3x3", true);
    bf_conv_geom dw = make_geom(2, 9, 8, c + 1, 3, 3, (c + 1) * (1 + _i % 3), c + 1, 2, 2, 1, 1,
                                0, 1, 1, 1, _i & 1);
    check_geom(&dw, 31 + (uint64_t)_i, "depthwise", true);
}
END_TEST

/* Reductions longer than one KC block and more rows than one task (multi-panel, multi-task). */
START_TEST(larger_blocks) {
    bf_conv_geom g = make_geom(2, 13, 11, 70, 3, 3, 70, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    check_geom(&g, 99, "larger", false);
    bf_conv_geom s2 = make_geom(2, 14, 14, 40, 3, 3, 36, 1, 2, 2, 1, 1, 0, 1, 0, 1, 0);
    check_geom(&s2, 98, "stride2", false);
    bf_conv_geom stem = make_geom(1, 23, 23, 3, 7, 7, 20, 1, 2, 2, 1, 1, 2, 3, 2, 3, 0);
    check_geom(&stem, 97, "stem", false);
    /* channel counts that are whole vectors: the whole-tap packing path of FWD / BWD_INPUT */
    bf_conv_geom wt = make_geom(2, 9, 10, 64, 3, 3, 32, 1, 1, 2, 2, 1, 2, 1, 1, 2, 0);
    check_geom(&wt, 96, "whole-taps", true);
    bf_conv_geom wt2 = make_geom(2, 8, 7, 32, 3, 2, 64, 2, 2, 1, 1, 1, 1, 1, 0, 1, 1);
    check_geom(&wt2, 95, "whole-taps-grouped", true);
    /* 1x1 layers: 300 channels (two KC blocks when packed), rows in whole MR blocks
       (2x6x12 = 144) and with a partial last block (2x7x7 = 98) */
    bf_conv_geom p1 = make_geom(2, 6, 12, 300, 1, 1, 40, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    check_geom(&p1, 94, "1x1-in-place", true);
    bf_conv_geom p2 = make_geom(2, 7, 7, 300, 1, 1, 70, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    check_geom(&p2, 93, "1x1-in-place-tail", true);
    /* A read in place (AVX-512 f32): more than 512 channels per tap, so a tap's run is
       split into even chunks (FWD 600 = 2 x 300, BWD_INPUT 530 = 2 x 265), with padding */
    bf_conv_geom ch = make_geom(1, 5, 6, 600, 3, 3, 530, 1, 1, 1, 1, 1, 1, 1, 0, 2, 0);
    check_geom(&ch, 92, "in-place-chunks", false);
    /* ... and taps that read only padding in whole MR-row blocks (skipped): dilation 2 and
       padding 2 on 13-wide rows, so the first 26 output pixels see only zeros through kh 0 */
    bf_conv_geom sk = make_geom(2, 6, 13, 160, 3, 3, 144, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0);
    check_geom(&sk, 91, "in-place-padding-skip", false);
}
END_TEST

/* FWD with few input channels (the direct small-C kernel): random geometries with out_c
   around the vector blocks, borders on both sides, stride and dilation, every ISA. */
START_TEST(small_c_forward) {
    bf_rng r = {0x57e30000u + (uint64_t)_i};
    static const int64_t outs[] = {4, 8, 16, 20, 32, 33, 64, 70, 96};
    for (int rep = 0; rep < 3; rep++) {
        int64_t c = bf_rng_int(&r, 1, 4), o = outs[bf_rng_int(&r, 0, 8)];
        int64_t kh = bf_rng_int(&r, 1, 7), kw = bf_rng_int(&r, 1, 7);
        bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 20),
                                   bf_rng_int(&r, 1, 30), c, kh, kw, o, 1, bf_rng_int(&r, 1, 3),
                                   bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 2),
                                   bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 3),
                                   bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3),
                                   bf_rng_int(&r, 0, 3), (int)bf_rng_int(&r, 0, 1));
        check_geom(&g, r.s, "small-c", true);
    }
    /* the same kernel for stride-1 spatial filters over up to 256 channels */
    int64_t c = bf_rng_int(&r, 5, 260), o = outs[bf_rng_int(&r, 0, 8)];
    bf_conv_geom g = make_geom(1, bf_rng_int(&r, 2, 9), bf_rng_int(&r, 2, 20), c,
                               bf_rng_int(&r, 2, 3), bf_rng_int(&r, 1, 3), o, 1, 1, 1,
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               (int)bf_rng_int(&r, 0, 1));
    check_geom(&g, r.s, "direct-fwd", true);
}
END_TEST

/* BWD_FILTER's direct path (dense, out_c a multiple of the oc block, rows of >= 48 pixels
   or few channels): random channels, kernels, padding, stride and dilation, every ISA. */
START_TEST(direct_filter_grad) {
    bf_rng r = {0xf11e0000u + (uint64_t)_i};
    static const int64_t outs[] = {16, 32, 64, 128};
    int64_t c = bf_rng_int(&r, 1, 40), o = outs[bf_rng_int(&r, 0, 3)];
    int64_t kh = bf_rng_int(&r, 1, 4), kw = bf_rng_int(&r, 1, 4);
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 6),
                               bf_rng_int(&r, 48, 60), c, kh, kw, o, 1, bf_rng_int(&r, 1, 2), 1,
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), (int)bf_rng_int(&r, 0, 1));
    check_geom(&g, r.s, "direct-filter", true);
}
END_TEST

/* Depthwise with a multiplier over enough rows that a task gets several of them (the
   forward's expanded-row cache is reused across rows): strides, dilations, padding. */
START_TEST(depthwise_multiplier_rows) {
    bf_rng r = {0xd3e70000u + (uint64_t)_i};
    int64_t c = bf_rng_int(&r, 1, 20), m = bf_rng_int(&r, 2, 3);
    bf_conv_geom g = make_geom(2, bf_rng_int(&r, 30, 60), bf_rng_int(&r, 3, 9), c,
                               bf_rng_int(&r, 1, 4), bf_rng_int(&r, 1, 3), c * m, c,
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 3),
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               (int)bf_rng_int(&r, 0, 1));
    check_geom(&g, r.s, "dw-mult-rows", true);
}
END_TEST

/* Depthwise forward with filters of <= 9 taps over small rows of many channels (the
   register-tap row kernel, border columns included): several channel vectors plus a tail,
   widths from 1, multipliers 1-2, strides, dilations and padding on both sides; check_one
   runs each op with aligned and misaligned outputs. */
START_TEST(depthwise_small_rows) {
    bf_rng r = {0xd5a10000u + (uint64_t)_i};
    /* whole vectors of channels for even _i (with an aligned output: streaming stores) */
    int64_t c = _i % 2 ? bf_rng_int(&r, 16, 70) : 16 * bf_rng_int(&r, 1, 4);
    int64_t m = bf_rng_int(&r, 1, 2);
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 9), bf_rng_int(&r, 1, 9),
                               c, bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 3), c * m, c,
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2),
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               (int)bf_rng_int(&r, 0, 1));
    check_geom(&g, r.s, "dw-small-rows", true);
}
END_TEST

/* Depthwise FWD and BWD_INPUT at unit column stride through the two-vector passes of the
   row kernel (bf_dw_row_pair, where a vector is half a line: AVX2): rows wide enough for
   several four-position interior blocks, borders on both sides, dilations, row strides; an
   even number of channel vectors, an odd one (the last vector takes the one-vector pass) and
   scalar tails; multipliers 1-2; aligned and misaligned outputs (the pair pass streams aligned
   whole lines). */
START_TEST(depthwise_row_pairs) {
    bf_rng r = {0xd9a1e000u + (uint64_t)_i};
    int64_t c = _i % 3 == 0   ? 16 * bf_rng_int(&r, 1, 4)
                : _i % 3 == 1 ? 16 * bf_rng_int(&r, 1, 3) + 8
                              : bf_rng_int(&r, 17, 60);
    int64_t m = _i % 4 == 3 ? 2 : 1, kh = bf_rng_int(&r, 1, 3), kw = bf_rng_int(&r, 1, 3);
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 2), bf_rng_int(&r, 3, 12),
                               bf_rng_int(&r, 9, 40), c, kh, kw, c * m, c,
                               bf_rng_int(&r, 1, 2), 1, bf_rng_int(&r, 1, 2),
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2), 0);
    check_geom(&g, r.s, "dw-row-pairs", true);
}
END_TEST

/* Depthwise without a multiplier over many rows and up to 150 channels: the filter
   gradient's pixel-order kernel (unit stride, >= 8 channel vectors) and the per-tap loops,
   channel vectors plus a scalar tail, borders, strides, dilations. */
START_TEST(depthwise_filter_rows) {
    bf_rng r = {0xd33f0000u + (uint64_t)_i};
    int64_t c = _i % 2 ? bf_rng_int(&r, 1, 150) : 16 * bf_rng_int(&r, 1, 9);
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 3), bf_rng_int(&r, 8, 30), bf_rng_int(&r, 1, 16),
                               c, bf_rng_int(&r, 1, 4), bf_rng_int(&r, 1, 4), c, c,
                               bf_rng_int(&r, 1, 2), _i % 3 ? 1 : 2, bf_rng_int(&r, 1, 2),
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2),
                               bf_rng_int(&r, 0, 2), bf_rng_int(&r, 0, 2), 0);
    check_geom(&g, r.s, "dw-filter-rows", true);
}
END_TEST

/* Depthwise 3x3 filter gradient (the nine-register band kernel): tall images so an image
   spans several bands, widths from 1 (no interior column), pads up to 4 (bands or columns
   that read only padding), multipliers 1-3, row strides, dilations, channel vectors plus
   tails; column stride 2 with a multiplier and without. */
START_TEST(depthwise_3x3_filter_bands) {
    bf_rng r = {0xd3b30000u + (uint64_t)_i};
    int64_t c = _i % 2 ? bf_rng_int(&r, 1, 70) : 16 * bf_rng_int(&r, 1, 6);
    int64_t m = _i % 4 == 3 ? bf_rng_int(&r, 2, 3) : 1;
    int64_t w = _i % 5 == 4 ? bf_rng_int(&r, 1, 3) : bf_rng_int(&r, 4, 40);
    int64_t sw = _i % 4 == 1 || _i % 8 == 7 ? 2 : 1;
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 3), bf_rng_int(&r, 30, 120), w, c, 3, 3,
                               c * m, c, bf_rng_int(&r, 1, 2), sw,
                               bf_rng_int(&r, 1, 2), bf_rng_int(&r, 1, 2), bf_rng_int(&r, 0, 4),
                               bf_rng_int(&r, 0, 4), bf_rng_int(&r, 0, 4), bf_rng_int(&r, 0, 4),
                               (int)bf_rng_int(&r, 0, 1));
    check_geom(&g, r.s, "dw-3x3-bands", true);
}
END_TEST

/* Depthwise 3x3 filter gradient over many small images (MobileNet's late layers: 7x7 to 14x14
   with hundreds of channels): a strip of bands runs on from one image into the next, and each
   band prefetches the next one, of its own image or of the next image; one band per image
   (short images) and several; multipliers 1 and 2 (expanded x rows); column strides 1 and 2.
   The first three have two channel vectors of floats or of doubles (32 or 16 channels), which
   AVX-512 does in one pass. */
START_TEST(depthwise_3x3_filter_strips) {
    bf_rng r = {0xd3b5e000u + (uint64_t)_i};
    int64_t c = _i == 0   ? 32
                : _i <= 2 ? 16
                          : 16 * bf_rng_int(&r, 8, 24) + (_i % 2 ? bf_rng_int(&r, 1, 15) : 0);
    int64_t m = _i % 3 == 2 ? 2 : 1;
    bf_conv_geom g = make_geom(bf_rng_int(&r, 9, 16), bf_rng_int(&r, 5, 16),
                               bf_rng_int(&r, 5, 16), c, 3, 3, c * m, c, 1, _i % 4 == 1 ? 2 : 1,
                               1, 1, 1, 1, 1, 1, 0);
    check_geom(&g, r.s, "dw-3x3-strips", false);
}
END_TEST

/* BWD_INPUT with few input channels and many taps (the GEMM into columns, then col2im; a
   3-channel stem): dilation 1 (each kh's taps one contiguous add) and 2 (tap by tap), strides
   1-3, pads up to 3 so rows and columns of taps fall off every border; n >= 3 so the pooled
   run takes this path too. */
START_TEST(col2im_bwd_input) {
    bf_rng r = {0xc021e000u + (uint64_t)_i};
    int64_t k = bf_rng_int(&r, 5, 7), c = bf_rng_int(&r, 1, 5);
    bf_conv_geom g = make_geom(3, bf_rng_int(&r, 5, 20), bf_rng_int(&r, 5, 20), c, k,
                               bf_rng_int(&r, 5, 7), bf_rng_int(&r, 8, 40), 1,
                               bf_rng_int(&r, 1, 3), bf_rng_int(&r, 1, 3), 1 + _i % 2,
                               1 + _i % 2, bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3),
                               bf_rng_int(&r, 0, 3), bf_rng_int(&r, 0, 3), 0);
    if (g.out_h < 1 || g.out_w < 1) return;
    check_geom(&g, r.s, "col2im", true);
}
END_TEST

/* BWD_FILTER of 1x1 filters: stride 1 without padding, which reads x in place where the ISA
   has UKRS (bf_f1, conv_gemm_filter_1x1.h), over several pixel chunks (so a task's
   next-chunk prefetch and the partial dW across chunks are used), with input channels off
   the MR block (its last block read shifted back) and on it, output channels off the NR
   panel; and stride 2 with padding, which must keep to the other paths. Every ISA, f32 and
   f64, 1 thread and a pool. */
START_TEST(filter_1x1_chunks) {
    bf_rng r = {0xf1100000u + (uint64_t)_i};
    static const int64_t chans[] = {64, 67, 70, 96, 131, 200}; /* bf_f1 wants >= 64 */
    int64_t c = chans[_i % 6], o = bf_rng_int(&r, 1, 70);
    bool packed = _i >= 6; /* stride 2 and padding: not read in place */
    int64_t s = packed ? 2 : 1, pt = packed ? bf_rng_int(&r, 1, 2) : 0;
    int64_t pb = packed ? bf_rng_int(&r, 0, 2) : 0, pr = packed ? bf_rng_int(&r, 0, 2) : 0;
    bf_conv_geom g = make_geom(bf_rng_int(&r, 1, 2), bf_rng_int(&r, 30, 40),
                               bf_rng_int(&r, 30, 40), c, 1, 1, o, 1, s, s, 1, 1, pt, pb, pt,
                               pr, (int)bf_rng_int(&r, 0, 1));
    bf_pool *pool = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_pool_new(3, &pool, &err), BF_OK);
    for (int isa = 0; isa < BF_CONV_ISA_COUNT; isa++) {
        if (!bf_conv_cpu_isa_supported((bf_conv_isa)isa)) continue;
        for (int f = 0; f < 2; f++)
            for (int t = 0; t < 2; t++)
                check_one(BF_CONV_BWD_FILTER, &g, (bf_conv_isa)isa, f == 0, t ? pool : NULL,
                          true, r.s + (uint64_t)(isa * 4 + f * 2 + t), "filter-1x1");
    }
    bf_pool_free(pool);
}
END_TEST

/* A GEMM output past the streaming threshold (BF_CG_STREAM_BYTES, 8 MiB): 1x1 BWD_INPUT
   whose dx is 19 MB, written with streaming stores where a block is whole and aligned; a
   partial last column panel (272 = 8.5 x 32 channels) and a partial last row block take the
   masked stores. Aligned and misaligned outputs (check_one offsets even seeds by a float). */
START_TEST(gemm_streaming_output) {
    bf_pool *pool = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_pool_new(2, &pool, &err), BF_OK);
    bf_conv_geom g = make_geom(1, 128, 136, 272, 1, 1, 48, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    ck_assert(g.n * g.in_h * g.in_w * g.in_c * 4 >= 16 * 1048576);
    for (uint64_t seed = 1; seed <= 2; seed++)
        check_one(BF_CONV_BWD_INPUT, &g, bf_conv_cpu_best_isa(), true, pool, true,
                  0x57e40000u + seed, "gemm-stream");
    bf_pool_free(pool);
}
END_TEST

/* The same threshold in the direct FWD (bf_sd): a 3-channel 5x5 stride-2 FWD whose y is
   17 MB, and a stride-1 2x2 BackpropInput run as a direct FWD of dy whose dx is 17 MB; with a
   partial last block in each row (130 = 21 x 6 + 4, 182 = 30 x 6 + 2) and padded borders. Aligned
   outputs (odd seeds) take the streaming stores, misaligned ones (even) the plain stores. */
START_TEST(direct_streaming_output) {
    bf_pool *pool = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_pool_new(2, &pool, &err), BF_OK);
    bf_conv_geom fwd = make_geom(1, 259, 259, 3, 5, 5, 256, 1, 2, 2, 1, 1, 2, 2, 2, 2, 0);
    bf_conv_geom bwd = make_geom(1, 182, 182, 128, 2, 2, 16, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0);
    ck_assert(fwd.n * fwd.out_h * fwd.out_w * fwd.out_c * 4 >= 16 * 1048576);
    ck_assert(bwd.n * bwd.in_h * bwd.in_w * bwd.in_c * 4 >= 16 * 1048576);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        check_one(BF_CONV_FWD, &fwd, bf_conv_cpu_best_isa(), true, pool, true,
                  0x5d500000u + seed, "direct-stream");
        check_one(BF_CONV_BWD_INPUT, &bwd, bf_conv_cpu_best_isa(), true, pool, true,
                  0x5d510000u + seed, "direct-stream-bwd");
    }
    bf_pool_free(pool);
}
END_TEST

/* No workspace: the direct fallback, and degenerate sizes (empty output, no taps reach). */
START_TEST(fallback_and_degenerate) {
    bf_pool *pool = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_pool_new(2, &pool, &err), BF_OK);
    bf_conv_geom g = make_geom(2, 6, 5, 6, 3, 2, 4, 2, 2, 1, 1, 2, 1, 0, 2, 1, 1);
    bf_conv_geom empty = make_geom(1, 2, 2, 3, 5, 5, 4, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    bf_conv_geom far = make_geom(1, 5, 5, 3, 2, 2, 4, 1, 4, 4, 1, 1, 0, 0, 0, 0, 0);
    for (int op = 0; op < 3; op++)
        for (int f = 0; f < 2; f++) {
            check_one((bf_conv_op)op, &g, bf_conv_cpu_best_isa(), f, pool, false, 5, "no-ws");
            check_one((bf_conv_op)op, &empty, bf_conv_cpu_best_isa(), f, pool, true, 6,
                      "empty");
            check_one((bf_conv_op)op, &far, bf_conv_cpu_best_isa(), f, pool, true, 7, "far");
        }
    bf_pool_free(pool);
}
END_TEST

/* The border-class row order of the in-place GEMM visits every position of every image once,
   the interior positions (every tap reads inside the source; counted by brute force) first. */
START_TEST(row_order) {
    bf_rng r = {0x0dde7000u + (uint64_t)_i};
    for (int rep = 0; rep < 50; rep++) {
        int64_t nimg = bf_rng_int(&r, 1, 3);
        int64_t ah = bf_rng_int(&r, 1, 12), aw = bf_rng_int(&r, 1, 12);
        int64_t mh = bf_rng_int(&r, 1, 3), mw = bf_rng_int(&r, 1, 3);
        int64_t sh = bf_rng_int(&r, 1, 30), sw = bf_rng_int(&r, 1, 30);
        int64_t ntaps = bf_rng_int(&r, 0, 9), hoff[9], woff[9];
        for (int64_t t = 0; t < ntaps; t++)
            hoff[t] = bf_rng_int(&r, -4, 4), woff[t] = bf_rng_int(&r, -4, 4);
        int64_t n_interior = 0;
        for (int64_t a = 0; a < ah; a++)
            for (int64_t b = 0; b < aw; b++) {
                bool in = ntaps > 0;
                for (int64_t t = 0; t < ntaps; t++) {
                    int64_t hh = a * mh + hoff[t], ww = b * mw + woff[t];
                    in = in && hh >= 0 && hh < sh && ww >= 0 && ww < sw;
                }
                n_interior += in;
            }
        bf_cg_order o;
        bf_cg_order_make(&o, nimg, ah, aw, ntaps, hoff, woff, mh, mw, sh, sw);
        bool seen[3 * 144] = {false};
        for (int64_t row = 0; row < nimg * ah * aw; row++) {
            int64_t n = -1, a = -1, b = -1;
            bf_cg_order_pixel(&o, row, &n, &a, &b);
            ck_assert(n >= 0 && n < nimg && a >= 0 && a < ah && b >= 0 && b < aw);
            int64_t at = (n * ah + a) * aw + b;
            ck_assert_msg(!seen[at], "(%lld, %lld, %lld) visited twice", (long long)n,
                          (long long)a, (long long)b);
            seen[at] = true;
            if (ntaps == 0) ck_assert(at == row); /* plain row-major */
            bool in = ntaps > 0;
            for (int64_t t = 0; t < ntaps; t++) {
                int64_t hh = a * mh + hoff[t], ww = b * mw + woff[t];
                in = in && hh >= 0 && hh < sh && ww >= 0 && ww < sw;
            }
            ck_assert_msg(in == (row < nimg * n_interior), "row %lld: interior %d, %lld interior",
                          (long long)row, (int)in, (long long)(nimg * n_interior));
        }
    }
}
END_TEST

/* The public entry points plan and run the best ISA. */
START_TEST(public_entry_points) {
    bf_conv_geom g = make_geom(1, 8, 8, 16, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    size_t ws = bf_conv_cpu_workspace(BF_CONV_FWD, &g, BF_DTYPE_F32, 1);
    ck_assert_uint_eq(ws, bf_conv_cpu_workspace_isa(bf_conv_cpu_best_isa(), BF_CONV_FWD, &g,
                                                    BF_DTYPE_F32, 1));
    float *x = calloc(8 * 8 * 16, 4), *w = calloc(9 * 16 * 32, 4), *y = calloc(8 * 8 * 32, 4);
    void *buf = bf_aligned_alloc(ws, false);
    ck_assert(x && w && y && buf);
    x[0] = 2.0f, w[(1 * 3 + 1) * 16 * 32] = 3.0f; /* centre tap, ci 0 -> co 0 */
    bf_exec ex = {.n_threads = 1, .workspace = buf, .workspace_size = ws};
    bf_conv_cpu_f32(BF_CONV_FWD, &g, x, w, y, &ex);
    ck_assert_float_eq(y[0], 6.0f);
    ck_assert_float_eq(y[1], 0.0f);
    bf_aligned_free(buf);
    free(x), free(w), free(y);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("conv_fast");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600); /* ASan + UBSan on a busy 2-core machine took over 120 s */
    tcase_add_loop_test(tc, random_geometries, 0, 40);
    tcase_add_loop_test(tc, channel_tails, 0, 8);
    tcase_add_test(tc, larger_blocks);
    tcase_add_loop_test(tc, small_c_forward, 0, 12);
    tcase_add_loop_test(tc, direct_filter_grad, 0, 8);
    tcase_add_loop_test(tc, depthwise_multiplier_rows, 0, 6);
    tcase_add_loop_test(tc, depthwise_small_rows, 0, 12);
    tcase_add_loop_test(tc, depthwise_row_pairs, 0, 12);
    tcase_add_loop_test(tc, depthwise_filter_rows, 0, 12);
    tcase_add_loop_test(tc, depthwise_3x3_filter_bands, 0, 16);
    tcase_add_loop_test(tc, depthwise_3x3_filter_strips, 0, 6);
    tcase_add_loop_test(tc, filter_1x1_chunks, 0, 12);
    tcase_add_test(tc, gemm_streaming_output);
    tcase_add_loop_test(tc, col2im_bwd_input, 0, 8);
    tcase_add_test(tc, direct_streaming_output);
    tcase_add_test(tc, fallback_and_degenerate);
    tcase_add_loop_test(tc, row_order, 0, 4);
    tcase_add_test(tc, public_entry_points);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
