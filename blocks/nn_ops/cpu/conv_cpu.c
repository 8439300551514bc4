/*
 * conv_cpu.c - the CPU convolution dispatcher behind bf_conv_cpu_workspace / _f32 / _f64.
 *
 * It picks the instruction set at run time (AVX-512 > AVX2+FMA > portable C, by
 * __builtin_cpu_supports), plans the workspace, and runs the NHWC kernels of that ISA
 * (conv_gemm_impl.h, instantiated in conv_gemm_*.c). NCHW activations are transposed into
 * NHWC copies in the workspace first (and the NCHW output transposed back), so every fast
 * path only ever sees NHWC; the copies are counted in bf_conv_cpu_workspace.
 *
 * Workspace layout (64-byte aligned pieces):
 *   [NHWC copy of a (NCHW only)] [NHWC copy of b (NCHW BWD_FILTER only)]
 *   [NHWC output (NCHW FWD / BWD_INPUT only)] [kernel scratch of the ISA]
 * When the caller gives less workspace than planned (or the plan overflowed), a direct loop
 * over the definition that needs no workspace computes the result instead: slow, but correct.
 */
#include "conv_cpu_internal.h"

#include <string.h>

static const bf_conv_isa_impl *const isa_impls[BF_CONV_ISA_COUNT] = {
    &bf_conv_isa_generic_impl, &bf_conv_isa_avx2_impl, &bf_conv_isa_avx512_impl};

bool bf_conv_cpu_isa_supported(bf_conv_isa isa) {
    switch (isa) {
    case BF_CONV_ISA_GENERIC: return true;
#if defined(__x86_64__) || defined(__i386__)
    case BF_CONV_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case BF_CONV_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("fma");
#endif
    default: return false;
    }
}

bf_conv_isa bf_conv_cpu_best_isa(void) {
    if (bf_conv_cpu_isa_supported(BF_CONV_ISA_AVX512)) return BF_CONV_ISA_AVX512;
    if (bf_conv_cpu_isa_supported(BF_CONV_ISA_AVX2)) return BF_CONV_ISA_AVX2;
    return BF_CONV_ISA_GENERIC;
}

const char *bf_conv_cpu_isa_name(bf_conv_isa isa) {
    return isa >= 0 && isa < BF_CONV_ISA_COUNT ? isa_impls[isa]->name : "?";
}

/* ---- NCHW <-> NHWC ------------------------------------------------------------------------ */

typedef struct layout_arg {
    const void *src;
    void *dst;
    int64_t n, c, h, w;
    size_t es; /* element size */
} layout_arg;

/* Task (n, h): dst[n,h,:,:] = src[n,:,h,:] ([N,C,H,W] -> [N,H,W,C]). */
static void to_nhwc_task(void *arg, int64_t i, int slot) {
    const layout_arg *l = arg;
    int64_t n = i / l->h, h = i % l->h;
    for (int64_t c = 0; c < l->c; c++)
        for (int64_t w = 0; w < l->w; w++) {
            size_t s = (size_t)(((n * l->c + c) * l->h + h) * l->w + w);
            size_t d = (size_t)(((n * l->h + h) * l->w + w) * l->c + c);
            if (l->es == 4) ((float *)l->dst)[d] = ((const float *)l->src)[s];
            else ((double *)l->dst)[d] = ((const double *)l->src)[s];
        }
}

/* Task (n, c): dst[n,c,:,:] = src[n,:,:,c] ([N,H,W,C] -> [N,C,H,W]). */
static void to_nchw_task(void *arg, int64_t i, int slot) {
    const layout_arg *l = arg;
    int64_t n = i / l->c, c = i % l->c;
    for (int64_t h = 0; h < l->h; h++)
        for (int64_t w = 0; w < l->w; w++) {
            size_t d = (size_t)(((n * l->c + c) * l->h + h) * l->w + w);
            size_t s = (size_t)(((n * l->h + h) * l->w + w) * l->c + c);
            if (l->es == 4) ((float *)l->dst)[d] = ((const float *)l->src)[s];
            else ((double *)l->dst)[d] = ((const double *)l->src)[s];
        }
}

static void relayout(const bf_exec *ex, bool to_nhwc, const void *src, void *dst, int64_t n,
                     int64_t c, int64_t h, int64_t w, size_t es) {
    layout_arg l = {.src = src, .dst = dst, .n = n, .c = c, .h = h, .w = w, .es = es};
    if (to_nhwc) bf_parallel_for(ex, n * h, to_nhwc_task, &l);
    else bf_parallel_for(ex, n * c, to_nchw_task, &l);
}

/* ---- planning ----------------------------------------------------------------------------- */

/* Element counts of the activations: x [N,H,W,C], y [N,OH,OW,O]. */
static size_t x_count(const bf_conv_geom *g) {
    return bf_cc_mad(bf_cc_mad(bf_cc_mad((size_t)g->n, (size_t)g->in_h, 0), (size_t)g->in_w, 0),
                     (size_t)g->in_c, 0);
}
static size_t y_count(const bf_conv_geom *g) {
    return bf_cc_mad(bf_cc_mad(bf_cc_mad((size_t)g->n, (size_t)g->out_h, 0), (size_t)g->out_w,
                               0),
                     (size_t)g->out_c, 0);
}
static size_t align64(size_t b) { return b > SIZE_MAX - 64 ? SIZE_MAX : (b + 63) & ~(size_t)63; }

typedef struct ws_plan {
    size_t a_bytes, b_bytes, out_bytes, kernel_bytes, total;
} ws_plan;

static ws_plan plan_ws(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g, size_t es,
                       int n_threads) {
    ws_plan p = {0};
    bf_conv_geom h = *g;
    h.nchw = 0;
    if (n_threads < 1) n_threads = 1;
    const bf_conv_isa_impl *impl = isa_impls[isa];
    p.kernel_bytes = es == 4 ? impl->workspace_f32(op, &h, n_threads)
                             : impl->workspace_f64(op, &h, n_threads);
    if (g->nchw) {
        size_t xs = align64(bf_cc_mad(x_count(g), es, 0));
        size_t ys = align64(bf_cc_mad(y_count(g), es, 0));
        p.a_bytes = op == BF_CONV_BWD_INPUT ? ys : xs;
        p.b_bytes = op == BF_CONV_BWD_FILTER ? ys : 0;
        p.out_bytes = op == BF_CONV_FWD ? ys : op == BF_CONV_BWD_INPUT ? xs : 0;
    }
    size_t t = p.kernel_bytes;
    if (!bf_size_add(t, p.a_bytes, &t) || !bf_size_add(t, p.b_bytes, &t) ||
        !bf_size_add(t, p.out_bytes, &t))
        t = SIZE_MAX;
    p.total = t;
    return p;
}

size_t bf_conv_cpu_workspace_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g,
                                 bf_dtype dt, int n_threads) {
    size_t es = dt == BF_DTYPE_F64 ? 8 : 4;
    return plan_ws(isa, op, g, es, n_threads).total;
}

size_t bf_conv_cpu_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int n_threads) {
    return bf_conv_cpu_workspace_isa(bf_conv_cpu_best_isa(), op, g, dt, n_threads);
}

/* ---- the direct fallback (no workspace) ------------------------------------------------- */

typedef struct direct_arg {
    bf_conv_op op;
    const bf_conv_geom *g;
    const void *a, *b;
    void *out;
    size_t es;
    const bf_exec *ex;
} direct_arg;

static int64_t act_index(const bf_conv_geom *g, int64_t n, int64_t h, int64_t w, int64_t c,
                         int64_t H, int64_t W, int64_t C) {
    return g->nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

static double ld(const void *p, int64_t i, size_t es) {
    return es == 4 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/*
 * Task i computes one "row" of the output with a double accumulator: FWD/BWD_INPUT one output
 * pixel row (n, h), BWD_FILTER one (kh, kw) tap. Positions follow conv_kernels.h's rule.
 */
static void direct_task(void *arg, int64_t i, int slot) {
    const direct_arg *d = arg;
    const bf_conv_geom *g = d->g;
    if (bf_exec_cancelled(d->ex)) return;
    int64_t og = g->out_c / g->groups, cg = g->k_in_c;
    if (d->op == BF_CONV_BWD_FILTER) {
        int64_t kh = i / g->k_w, kw = i % g->k_w;
        for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t co = 0; co < g->out_c; co++) {
                int64_t c = co / og * cg + ci;
                double s = 0;
                for (int64_t n = 0; n < g->n; n++)
                    for (int64_t oh = 0; oh < g->out_h; oh++)
                        for (int64_t ow = 0; ow < g->out_w; ow++) {
                            int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                            int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;
                            if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) continue;
                            s += ld(d->a, act_index(g, n, ih, iw, c, g->in_h, g->in_w, g->in_c),
                                    d->es) *
                                 ld(d->b,
                                    act_index(g, n, oh, ow, co, g->out_h, g->out_w, g->out_c),
                                    d->es);
                        }
                int64_t o = ((kh * g->k_w + kw) * cg + ci) * g->out_c + co;
                if (d->es == 4) ((float *)d->out)[o] = (float)s;
                else ((double *)d->out)[o] = s;
            }
        return;
    }
    bool fwd = d->op == BF_CONV_FWD;
    int64_t H = fwd ? g->out_h : g->in_h, W = fwd ? g->out_w : g->in_w;
    int64_t C = fwd ? g->out_c : g->in_c;
    int64_t n = i / H, h = i % H;
    for (int64_t w = 0; w < W; w++)
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t kh = 0; kh < g->k_h; kh++)
                for (int64_t kw = 0; kw < g->k_w; kw++) {
                    if (fwd) {
                        int64_t ih = h * g->stride_h - g->pad_top + kh * g->dil_h;
                        int64_t iw = w * g->stride_w - g->pad_left + kw * g->dil_w;
                        if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) continue;
                        int64_t grp = c / og;
                        for (int64_t ci = 0; ci < cg; ci++)
                            s += ld(d->a,
                                    act_index(g, n, ih, iw, grp * cg + ci, g->in_h, g->in_w,
                                              g->in_c),
                                    d->es) *
                                 ld(d->b, ((kh * g->k_w + kw) * cg + ci) * g->out_c + c, d->es);
                    } else {
                        int64_t th = h + g->pad_top - kh * g->dil_h;
                        int64_t tw = w + g->pad_left - kw * g->dil_w;
                        if (th < 0 || tw < 0 || th % g->stride_h || tw % g->stride_w) continue;
                        int64_t oh = th / g->stride_h, ow = tw / g->stride_w;
                        if (oh >= g->out_h || ow >= g->out_w) continue;
                        int64_t grp = c / cg, ci = c % cg;
                        for (int64_t q = 0; q < og; q++)
                            s += ld(d->a,
                                    act_index(g, n, oh, ow, grp * og + q, g->out_h, g->out_w,
                                              g->out_c),
                                    d->es) *
                                 ld(d->b, ((kh * g->k_w + kw) * cg + ci) * g->out_c + grp * og + q,
                                    d->es);
                    }
                }
            int64_t o = act_index(g, n, h, w, c, H, W, C);
            if (d->es == 4) ((float *)d->out)[o] = (float)s;
            else ((double *)d->out)[o] = s;
        }
}

static void run_direct(bf_conv_op op, const bf_conv_geom *g, const void *a, const void *b,
                       void *out, size_t es, const bf_exec *ex) {
    direct_arg d = {.op = op, .g = g, .a = a, .b = b, .out = out, .es = es, .ex = ex};
    int64_t rows = op == BF_CONV_BWD_FILTER ? g->k_h * g->k_w
                   : op == BF_CONV_FWD      ? g->n * g->out_h
                                            : g->n * g->in_h;
    bf_parallel_for(ex, rows, direct_task, &d);
}

/* ---- entry points --------------------------------------------------------------------------- */

static void run_any(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g, const void *a,
                    const void *b, void *out, size_t es, const bf_exec *ex) {
    bf_exec one = {.n_threads = 1};
    if (!ex) ex = &one;
    BF_ASSERT(isa >= 0 && isa < BF_CONV_ISA_COUNT && bf_conv_cpu_isa_supported(isa));
    ws_plan p = plan_ws(isa, op, g, es, ex->n_threads);
    if (p.total == SIZE_MAX || !ex->workspace || ex->workspace_size < p.total) {
        run_direct(op, g, a, b, out, es, ex);
        return;
    }
    char *ws = ex->workspace;
    bf_exec kex = *ex;
    kex.n_threads = BF_MAX(ex->n_threads, 1);
    kex.workspace = ws + p.a_bytes + p.b_bytes + p.out_bytes;
    kex.workspace_size = p.kernel_bytes;
    bf_conv_geom h = *g;
    h.nchw = 0;
    const void *ka = a, *kb = b;
    void *kout = out;
    if (g->nchw) {
        bool a_is_x = op != BF_CONV_BWD_INPUT;
        ka = ws;
        if (a_is_x) relayout(ex, true, a, ws, g->n, g->in_c, g->in_h, g->in_w, es);
        else relayout(ex, true, a, ws, g->n, g->out_c, g->out_h, g->out_w, es);
        if (op == BF_CONV_BWD_FILTER) {
            kb = ws + p.a_bytes;
            relayout(ex, true, b, ws + p.a_bytes, g->n, g->out_c, g->out_h, g->out_w, es);
        }
        if (p.out_bytes) kout = ws + p.a_bytes + p.b_bytes;
    }
    const bf_conv_isa_impl *impl = isa_impls[isa];
    if (es == 4) impl->run_f32(op, &h, ka, kb, kout, &kex);
    else impl->run_f64(op, &h, ka, kb, kout, &kex);
    if (g->nchw && p.out_bytes && !bf_exec_cancelled(ex)) {
        if (op == BF_CONV_FWD)
            relayout(ex, false, kout, out, g->n, g->out_c, g->out_h, g->out_w, es);
        else relayout(ex, false, kout, out, g->n, g->in_c, g->in_h, g->in_w, es);
    }
    if (ex->note && ex->note_size)
        bf_strlcpy(ex->note, bf_conv_is_depthwise(g) ? "cpu-depthwise" : "cpu-packed-gemm",
                   ex->note_size);
}

void bf_conv_cpu_f32_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g, const float *a,
                         const float *b, float *out, const bf_exec *ex) {
    run_any(isa, op, g, a, b, out, 4, ex);
}

void bf_conv_cpu_f64_isa(bf_conv_isa isa, bf_conv_op op, const bf_conv_geom *g,
                         const double *a, const double *b, double *out, const bf_exec *ex) {
    run_any(isa, op, g, a, b, out, 8, ex);
}

void bf_conv_cpu_f32(bf_conv_op op, const bf_conv_geom *g, const float *a, const float *b,
                     float *out, const bf_exec *ex) {
    run_any(bf_conv_cpu_best_isa(), op, g, a, b, out, 4, ex);
}

void bf_conv_cpu_f64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                     double *out, const bf_exec *ex) {
    run_any(bf_conv_cpu_best_isa(), op, g, a, b, out, 8, ex);
}
