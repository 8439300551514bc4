/*
 * conv_cpu_internal.h - private interface between the CPU convolution dispatcher (conv_cpu.c)
 * and its instruction-set specific kernels (conv_gemm_avx512.c, conv_gemm_avx2.c,
 * conv_gemm_generic.c). Not part of conv_kernels.h: only the dispatcher and the tests use it.
 *
 * Every ISA file instantiates the same template (conv_gemm_impl.h) with its own microkernel
 * and register blocking and exports one bf_conv_isa_impl table. The tables work on NHWC
 * activations only; conv_cpu.c transposes NCHW into workspace around them.
 *
 * There is no global "forced ISA" switch: the ISA is an argument of the internal entry points
 * below, and the public bf_conv_cpu_* pick the best one the CPU supports.
 */
#ifndef BF_CONV_CPU_INTERNAL_H
#define BF_CONV_CPU_INTERNAL_H

#include "nn_ops/conv_kernels.h"

typedef enum bf_conv_isa {
    BF_CONV_ISA_GENERIC = 0, /* portable C, auto-vectorised for the baseline target */
    BF_CONV_ISA_AVX2 = 1,    /* AVX2 + FMA */
    BF_CONV_ISA_AVX512 = 2,  /* AVX-512 F/BW/VL/DQ + FMA */
    BF_CONV_ISA_COUNT
} bf_conv_isa;

/* One instantiation of the kernels for one ISA. Geometries are NHWC (g->nchw ignored). */
typedef struct bf_conv_isa_impl {
    const char *name;
    size_t (*workspace_f32)(bf_conv_op op, const bf_conv_geom *g, int n_threads);
    size_t (*workspace_f64)(bf_conv_op op, const bf_conv_geom *g, int n_threads);
    void (*run_f32)(bf_conv_op op, const bf_conv_geom *g, const float *a, const float *b,
                    float *out, const bf_exec *ex);
    void (*run_f64)(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                    double *out, const bf_exec *ex);
} bf_conv_isa_impl;

extern const bf_conv_isa_impl bf_conv_isa_generic_impl;
extern const bf_conv_isa_impl bf_conv_isa_avx2_impl;
extern const bf_conv_isa_impl bf_conv_isa_avx512_impl;

/* The best ISA this CPU runs (by __builtin_cpu_supports), and whether `isa` runs here. */
bf_conv_isa bf_conv_cpu_best_isa(void);
bool bf_conv_cpu_isa_supported(bf_conv_isa isa);
const char *bf_conv_cpu_isa_name(bf_conv_isa isa);

/*
 * The public entry points with an explicit ISA (which must be supported). The workspace size
 * depends on the ISA: plan it with bf_conv_cpu_workspace_isa for the same ISA. With less
 * workspace than planned the kernels fall back to a slow direct loop that needs none.
 */
size_t bf_conv_cpu_workspace_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g,
                                 bf_dtype dt, int n_threads);
void bf_conv_cpu_f32_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g, const float *a,
                         const float *b, float *out, const bf_exec *ex);
void bf_conv_cpu_f64_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g,
                         const double *a, const double *b, double *out, const bf_exec *ex);

/* ---- helpers shared by the template instantiations (type independent) ------------------ */

static inline int64_t bf_cc_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t bf_cc_round_up(int64_t a, int64_t b) { return bf_cc_ceil_div(a, b) * b; }

/* a*b + c in size_t with overflow going to SIZE_MAX (sizes are checked, never wrap). */
static inline size_t bf_cc_mad(size_t a, size_t b, size_t c) {
    size_t m, s;
    if (!bf_size_mul(a, b, &m) || !bf_size_add(m, c, &s)) return SIZE_MAX;
    return s;
}

/*
 * One implicit-GEMM sub-problem of FWD or BWD_INPUT. Its output rows are the pixels
 * (n, oh0 + osh*a, ow0 + osw*b) for a < ah, b < aw; its reduction runs over the taps
 * kh = kh0 + khs*i (i < nkh) times kw = kw0 + kws*j (j < nkw), and for each tap over `kin`
 * source channels. The source pixel of output position a for tap kh is
 *   sh = a*mh + (kh*ch + eh) / qh          (exact division by construction)
 * FWD has one sub-problem (all taps, mh = stride, ch = dil, eh = -pad, qh = 1). BWD_INPUT has
 * one per stride phase (ph, pw): dx rows ih = ph + s*a, taps with (ph + pad - kh*dil) % s == 0,
 * source dy row oh = a + (ph + pad - kh*dil) / s.
 */
typedef struct bf_conv_sub {
    int64_t oh0, osh, ah, ow0, osw, aw;
    int64_t kh0, khs, nkh, kw0, kws, nkw;
    int64_t mh, ch, eh, qh, mw, cw, ew, qw;
} bf_conv_sub;

/* a / q where q divides a exactly (q == 1 is the common case and costs no division). */
static inline int64_t bf_cc_exact_div(int64_t a, int64_t q) { return q == 1 ? a : a / q; }

static inline int64_t bf_cc_mod(int64_t a, int64_t m) {
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* Output positions o in [*lo, *hi) (of out) whose input position o*s + off lies in [0, in). */
static inline void bf_cc_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t *lo,
                               int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = in - 1 - off < 0 ? 0 : (in - 1 - off) / s + 1;
    *lo = BF_MIN(l, out), *hi = BF_MAX(BF_MIN(h, out), *lo);
}

/*
 * The order in which the GEMM rows visit the nimg x ah x aw output positions of a batch: first
 * every image's interior (every tap reads inside the source), then the eight border
 * rectangles (top rows, left columns, ...) of all images in turn, so that consecutive rows read
 * padding through the same taps and a block of them can skip those taps whole. With
 * ntaps == 0 it is plain row-major order. Position (a, b) reads source row a * mh + hoff[t]
 * and column b * mw + woff[t] through tap t.
 */
typedef struct bf_cg_order {
    int n;                                           /* non-empty rectangles */
    int64_t start[9], area[9], a0[9], b0[9], w[9];   /* first row, size, top-left, width */
} bf_cg_order;

static inline void bf_cg_order_make(bf_cg_order *o, int64_t nimg, int64_t ah, int64_t aw,
                                    int64_t ntaps, const int64_t *hoff, const int64_t *woff,
                                    int64_t mh, int64_t mw, int64_t sh, int64_t sw) {
    int64_t hr[4] = {0, 0, ah, ah}, wr[4] = {0, 0, aw, aw};
    if (ntaps > 0) {
        int64_t hmin = hoff[0], hmax = hoff[0], wmin = woff[0], wmax = woff[0];
        for (int64_t t = 1; t < ntaps; t++) {
            hmin = BF_MIN(hmin, hoff[t]), hmax = BF_MAX(hmax, hoff[t]);
            wmin = BF_MIN(wmin, woff[t]), wmax = BF_MAX(wmax, woff[t]);
        }
        /* interior: the rows (columns) where both the lowest and the highest offset land
           inside the source */
        int64_t l2, h2;
        bf_cc_range(hmin, mh, sh, ah, &hr[1], &hr[2]);
        bf_cc_range(hmax, mh, sh, ah, &l2, &h2);
        hr[1] = BF_MAX(hr[1], l2), hr[2] = BF_MAX(BF_MIN(hr[2], h2), hr[1]);
        bf_cc_range(wmin, mw, sw, aw, &wr[1], &wr[2]);
        bf_cc_range(wmax, mw, sw, aw, &l2, &h2);
        wr[1] = BF_MAX(wr[1], l2), wr[2] = BF_MAX(BF_MIN(wr[2], h2), wr[1]);
    }
    static const int order[9] = {4, 0, 1, 2, 3, 5, 6, 7, 8}; /* interior (1, 1) first */
    int64_t start = 0;
    o->n = 0;
    for (int k = 0; k < 9; k++) {
        int hi = order[k] / 3, wi = order[k] % 3;
        int64_t h = hr[hi + 1] - hr[hi], w = wr[wi + 1] - wr[wi];
        if (h <= 0 || w <= 0) continue;
        o->start[o->n] = start, o->area[o->n] = h * w;
        o->a0[o->n] = hr[hi], o->b0[o->n] = wr[wi], o->w[o->n] = w;
        o->n++, start += nimg * h * w;
    }
}

/* Image n and output position (a, b) of row `row` (< nimg * ah * aw) in order o. */
static inline void bf_cg_order_pixel(const bf_cg_order *o, int64_t row, int64_t *n,
                                     int64_t *a, int64_t *b) {
    int k = 0;
    while (k + 1 < o->n && row >= o->start[k + 1]) k++;
    int64_t q = row - o->start[k], r = q % o->area[k];
    *n = q / o->area[k], *a = o->a0[k] + r / o->w[k], *b = o->b0[k] + r % o->w[k];
}

/* Number of sub-problems of op (FWD: 1, BWD_INPUT: stride_h * stride_w). */
static inline int64_t bf_conv_n_subs(bf_conv_op op, const bf_conv_geom *g) {
    return op == BF_CONV_FWD ? 1 : g->stride_h * g->stride_w;
}

/* Fill sub-problem `s` of op (FWD or BWD_INPUT) for geometry g. */
static inline void bf_conv_sub_make(bf_conv_op op, const bf_conv_geom *g, int64_t s,
                                    bf_conv_sub *sp) {
    if (op == BF_CONV_FWD) {
        *sp = (bf_conv_sub){.oh0 = 0, .osh = 1, .ah = g->out_h, .ow0 = 0, .osw = 1,
                            .aw = g->out_w, .kh0 = 0, .khs = 1, .nkh = g->k_h, .kw0 = 0,
                            .kws = 1, .nkw = g->k_w, .mh = g->stride_h, .ch = g->dil_h,
                            .eh = -g->pad_top, .qh = 1, .mw = g->stride_w, .cw = g->dil_w,
                            .ew = -g->pad_left, .qw = 1};
        return;
    }
    int64_t ph = s / g->stride_w, pw = s % g->stride_w;
    int64_t dims[2][6] = {{ph, g->stride_h, g->in_h, g->k_h, g->dil_h, g->pad_top},
                          {pw, g->stride_w, g->in_w, g->k_w, g->dil_w, g->pad_left}};
    int64_t r[2][5]; /* a-count, k0, kstep, nk */
    for (int d = 0; d < 2; d++) {
        int64_t p = dims[d][0], st = dims[d][1], in = dims[d][2], k = dims[d][3];
        int64_t dl = dims[d][4], pad = dims[d][5];
        r[d][0] = in > p ? bf_cc_ceil_div(in - p, st) : 0;
        /* taps with (p + pad - kh*dl) % st == 0: a residue class mod st/gcd(dl, st) */
        int64_t k0 = -1, period = st;
        for (int64_t kk = 0; kk < st && kk < k; kk++)
            if (bf_cc_mod(p + pad - kk * dl, st) == 0) { k0 = kk; break; }
        for (int64_t kk = 1; kk <= st; kk++)
            if (bf_cc_mod(kk * dl, st) == 0) { period = kk; break; }
        r[d][1] = k0 < 0 ? 0 : k0;
        r[d][2] = period;
        r[d][3] = k0 < 0 ? 0 : bf_cc_ceil_div(k - k0, period);
    }
    *sp = (bf_conv_sub){.oh0 = ph, .osh = g->stride_h, .ah = r[0][0], .ow0 = pw,
                        .osw = g->stride_w, .aw = r[1][0], .kh0 = r[0][1], .khs = r[0][2],
                        .nkh = r[0][3], .kw0 = r[1][1], .kws = r[1][2], .nkw = r[1][3],
                        .mh = 1, .ch = -g->dil_h, .eh = ph + g->pad_top, .qh = g->stride_h,
                        .mw = 1, .cw = -g->dil_w, .ew = pw + g->pad_left, .qw = g->stride_w};
}

#endif /* BF_CONV_CPU_INTERNAL_H */
