/*
 * conv_ref.c - the reference convolution kernels: direct loops over the definition of each op
 * (conv_kernels.h), for any geometry (groups and depthwise, NHWC and NCHW, stride, dilation,
 * asymmetric pads). They are the yardstick the fast kernels are tested against, so they are
 * written to be obviously right, not fast.
 *
 * Threading: each op is split over slices of its output (bf_parallel_for), and every task
 * computes its slice completely, so no two tasks write the same element and no atomics are
 * needed. The input gradient gathers: for each input position it finds the output positions
 * whose window covers it, instead of scattering from output positions (which would race).
 *
 * Accumulation is in the element type (float for f32, double for f64); the type-generic body
 * is written once as a macro and instantiated twice.
 */
#include "nn_ops/conv_kernels.h"

/* Flat index of activation element (n, h, w, c) of a [N,H,W,C] or [N,C,H,W] tensor. */
static inline int64_t act_index(int nchw, int64_t H, int64_t W, int64_t C, int64_t n, int64_t h,
                                int64_t w, int64_t c) {
    return nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

/* Flat index of filter element [kh, kw, ci, co] of an HWIO filter [KH, KW, Cg, O]. */
static inline int64_t flt_index(const bf_conv_geom *g, int64_t kh, int64_t kw, int64_t ci,
                                int64_t co) {
    return ((kh * g->k_w + kw) * g->k_in_c + ci) * g->out_c + co;
}

/* Output channels per group (0 for a degenerate geometry with no groups). */
static inline int64_t out_per_group(const bf_conv_geom *g) {
    return g->groups > 0 ? g->out_c / g->groups : 0;
}

typedef struct ref_job {
    bf_conv_op op;
    const bf_conv_geom *g;
    const void *a, *b;
    void *out;
    const bf_exec *ex;
} ref_job;

#define BF_CONV_REF_BODIES(T, SUFFIX)                                                           \
    /* Forward, task = (n, oh): y[n, oh, :, :] for every ow and co. */                         \
    static void fwd_##SUFFIX(void *arg, int64_t t, int slot) {                                  \
        (void)slot;                                                                             \
        const ref_job *j = arg;                                                                 \
        const bf_conv_geom *g = j->g;                                                           \
        if (bf_exec_cancelled(j->ex)) return;                                                   \
        const T *x = j->a;  /* [N, H, W, C] or [N, C, H, W] */                                  \
        const T *w = j->b;  /* [KH, KW, Cg, O] */                                               \
        T *y = j->out;      /* [N, OH, OW, O] or [N, O, OH, OW] */                              \
        const int64_t n = t / g->out_h, oh = t % g->out_h, og = out_per_group(g);               \
        for (int64_t ow = 0; ow < g->out_w; ow++) {                                             \
            for (int64_t co = 0; co < g->out_c; co++) {                                         \
                const int64_t c0 = (co / og) * g->k_in_c; /* first input channel of group */    \
                T acc = 0;                                                                      \
                for (int64_t kh = 0; kh < g->k_h; kh++) {                                       \
                    int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;                 \
                    if (ih < 0 || ih >= g->in_h) continue;                                      \
                    for (int64_t kw = 0; kw < g->k_w; kw++) {                                   \
                        int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;            \
                        if (iw < 0 || iw >= g->in_w) continue;                                  \
                        for (int64_t ci = 0; ci < g->k_in_c; ci++)                              \
                            acc += x[act_index(g->nchw, g->in_h, g->in_w, g->in_c, n, ih, iw,   \
                                               c0 + ci)] *                                      \
                                   w[flt_index(g, kh, kw, ci, co)];                             \
                    }                                                                           \
                }                                                                               \
                y[act_index(g->nchw, g->out_h, g->out_w, g->out_c, n, oh, ow, co)] = acc;       \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    /* Filter gradient, task = (kh, kw, ci): dw[kh, kw, ci, :] for every co. */                \
    static void bwd_filter_##SUFFIX(void *arg, int64_t t, int slot) {                           \
        (void)slot;                                                                             \
        const ref_job *j = arg;                                                                 \
        const bf_conv_geom *g = j->g;                                                           \
        if (bf_exec_cancelled(j->ex)) return;                                                   \
        const T *x = j->a;  /* [N, H, W, C] or [N, C, H, W] */                                  \
        const T *dy = j->b; /* [N, OH, OW, O] or [N, O, OH, OW] */                              \
        T *dw = j->out;     /* [KH, KW, Cg, O] */                                               \
        const int64_t ci = t % g->k_in_c, kw = (t / g->k_in_c) % g->k_w;                        \
        const int64_t kh = t / (g->k_in_c * g->k_w), og = out_per_group(g);                     \
        for (int64_t co = 0; co < g->out_c; co++) {                                             \
            const int64_t c = (co / og) * g->k_in_c + ci;                                       \
            T acc = 0;                                                                          \
            for (int64_t n = 0; n < g->n; n++) {                                                \
                for (int64_t oh = 0; oh < g->out_h; oh++) {                                     \
                    int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;                 \
                    if (ih < 0 || ih >= g->in_h) continue;                                      \
                    for (int64_t ow = 0; ow < g->out_w; ow++) {                                 \
                        int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;            \
                        if (iw < 0 || iw >= g->in_w) continue;                                  \
                        acc += x[act_index(g->nchw, g->in_h, g->in_w, g->in_c, n, ih, iw, c)] * \
                               dy[act_index(g->nchw, g->out_h, g->out_w, g->out_c, n, oh, ow,   \
                                            co)];                                               \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
            dw[flt_index(g, kh, kw, ci, co)] = acc;                                             \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    /* Input gradient, task = (n, ih): dx[n, ih, :, :], gathered from the windows over it. */   \
    static void bwd_input_##SUFFIX(void *arg, int64_t t, int slot) {                            \
        (void)slot;                                                                             \
        const ref_job *j = arg;                                                                 \
        const bf_conv_geom *g = j->g;                                                           \
        if (bf_exec_cancelled(j->ex)) return;                                                   \
        const T *dy = j->a; /* [N, OH, OW, O] or [N, O, OH, OW] */                              \
        const T *w = j->b;  /* [KH, KW, Cg, O] */                                               \
        T *dx = j->out;     /* [N, H, W, C] or [N, C, H, W] */                                  \
        const int64_t n = t / g->in_h, ih = t % g->in_h, og = out_per_group(g);                 \
        for (int64_t iw = 0; iw < g->in_w; iw++) {                                              \
            for (int64_t c = 0; c < g->in_c; c++) {                                             \
                const int64_t grp = c / g->k_in_c, ci = c % g->k_in_c;                          \
                T acc = 0;                                                                      \
                for (int64_t kh = 0; kh < g->k_h; kh++) {                                       \
                    /* oh * stride_h = ih + pad_top - kh * dil_h must hold exactly */           \
                    int64_t ph = ih + g->pad_top - kh * g->dil_h;                               \
                    if (ph < 0 || ph % g->stride_h) continue;                                   \
                    int64_t oh = ph / g->stride_h;                                              \
                    if (oh >= g->out_h) continue;                                               \
                    for (int64_t kw = 0; kw < g->k_w; kw++) {                                   \
                        int64_t pw = iw + g->pad_left - kw * g->dil_w;                          \
                        if (pw < 0 || pw % g->stride_w) continue;                               \
                        int64_t ow = pw / g->stride_w;                                          \
                        if (ow >= g->out_w) continue;                                           \
                        for (int64_t co = grp * og; co < (grp + 1) * og; co++)                  \
                            acc += w[flt_index(g, kh, kw, ci, co)] *                            \
                                   dy[act_index(g->nchw, g->out_h, g->out_w, g->out_c, n, oh,   \
                                                ow, co)];                                       \
                    }                                                                           \
                }                                                                               \
                dx[act_index(g->nchw, g->in_h, g->in_w, g->in_c, n, ih, iw, c)] = acc;          \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    void bf_conv_ref_##SUFFIX(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *b,     \
                              T *out, const bf_exec *ex) {                                      \
        ref_job j = {op, g, a, b, out, ex};                                                     \
        bf_exec one = {.n_threads = 1};                                                         \
        if (!ex) ex = &one;                                                                     \
        switch (op) {                                                                           \
        case BF_CONV_FWD:                                                                       \
            if (out_per_group(g) > 0)                                                           \
                bf_parallel_for(ex, g->n * g->out_h, fwd_##SUFFIX, &j);                         \
            break;                                                                              \
        case BF_CONV_BWD_FILTER:                                                                \
            if (out_per_group(g) > 0)                                                           \
                bf_parallel_for(ex, g->k_h * g->k_w * g->k_in_c, bwd_filter_##SUFFIX, &j);      \
            break;                                                                              \
        case BF_CONV_BWD_INPUT:                                                                 \
            if (g->in_c > 0 && g->k_in_c > 0)                                                   \
                bf_parallel_for(ex, g->n * g->in_h, bwd_input_##SUFFIX, &j);                    \
            break;                                                                              \
        }                                                                                       \
    }

BF_CONV_REF_BODIES(float, f32)
BF_CONV_REF_BODIES(double, f64)

double bf_conv_macs(const bf_conv_geom *g) {
    return (double)g->n * (double)g->out_h * (double)g->out_w * (double)g->out_c *
           (double)g->k_h * (double)g->k_w * (double)g->k_in_c;
}
