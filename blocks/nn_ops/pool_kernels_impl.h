/*
 * pool_kernels_impl.h - the pooling kernels for one element type, included by pool_kernels.c
 * once per type with
 *   PK_T     the element type (float, double, int32_t, int64_t),
 *   PK_S     the suffix of the function names (f32, f64, i32, i64),
 *   PK_FLOAT 1 for the float types (which also get the average and gradient kernels).
 *
 * NHWC kernels run over output rows (or input rows) with the channels innermost, contiguous,
 * so the compiler vectorises every inner loop over channels; NCHW kernels run over channel
 * planes. Every kernel follows TF's CPU order of operations (pooling_ops_common.h,
 * maxpooling_op.cc, avgpooling_op.cc): the terms of a window are combined in row-major window
 * order, a gradient element receives its contributions in row-major output order, and an
 * average divides the window's sum by its real-element count.
 */

#define PK_CAT2(a, b) a##_##b
#define PK_CAT(a, b)  PK_CAT2(a, b)
#define PK_FN(name)   PK_CAT(name, PK_S)

/*
 * Whole blocks of PK_VB channels go through 16-byte vectors (GCC/Clang vector extensions:
 * SSE2 on x86-64, NEON on ARM), held in registers across a window; the rest of the channels
 * through the scalar loops. Both compute the same operations in the same order.
 */
#define PK_L  ((int)(16 / sizeof(PK_T))) /* lanes of a vector */
#define PK_NV (PK_VB / PK_L)              /* vectors of a block */
typedef PK_T PK_FN(pk_vec) __attribute__((vector_size(16)));
typedef PK_MASK PK_FN(pk_mvec) __attribute__((vector_size(16)));
#define PK_V PK_FN(pk_vec)
#define PK_M PK_FN(pk_mvec)

static inline PK_V PK_FN(pk_ld)(const PK_T *p) {
    PK_V v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline void PK_FN(pk_st)(PK_T *p, PK_V v) { memcpy(p, &v, sizeof(v)); }
static inline PK_V PK_FN(pk_splat)(PK_T s) {
    PK_V v;
    for (int i = 0; i < PK_L; i++) v[i] = s;
    return v;
}
/* a > m ? a : m per lane (m kept on ties and against NaN, as the scalar loops) */
static inline PK_V PK_FN(pk_vmax)(PK_V a, PK_V m) {
    PK_M gt = (PK_M)(a > m);
    return (PK_V)(((PK_M)a & gt) | ((PK_M)m & ~gt));
}

/* ---- MaxPool ---------------------------------------------------------------------------- */

typedef struct PK_FN(pk_max_job) {
    const bf_pool_geom *g;
    const PK_T *x; /* [N, H, W, C] or [N, C, H, W] */
    PK_T *y;       /* [N, OH, OW, C] or [N, C, OH, OW]; NHWC [N, H, W, C / kd] over depth */
    PK_T lowest;
    int64_t units, tasks;
} PK_FN(pk_max_job);

/*
 * One output pixel's channels [c0, c0 + nc) over the window rows [h0, h1) x cols [w0, w1):
 * inlined with nc the constant PK_VB (the loops unroll into whole vectors held in registers
 * across the window) and once more with the remainder. TF: y = max(lowest, window), NaN
 * ignored.
 */
static inline __attribute__((always_inline)) void PK_FN(pk_max_px)(
    const PK_T *xn, PK_T *restrict o, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, PK_T lowest, const int64_t nc) {
    PK_T m[PK_VB];
    for (int64_t c = 0; c < nc; c++) m[c] = lowest;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *restrict xp = xn + (ih * W + iw) * C;
            for (int64_t c = 0; c < nc; c++) m[c] = xp[c] > m[c] ? xp[c] : m[c];
        }
    for (int64_t c = 0; c < nc; c++) o[c] = m[c];
}

/* The same for a whole block of PK_VB channels, in vectors. */
static inline __attribute__((always_inline)) void PK_FN(pk_max_vb)(
    const PK_T *xn, PK_T *o, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, PK_T lowest) {
    PK_V m[PK_NV];
    for (int k = 0; k < PK_NV; k++) m[k] = PK_FN(pk_splat)(lowest);
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *xp = xn + (ih * W + iw) * C;
            for (int k = 0; k < PK_NV; k++) m[k] = PK_FN(pk_vmax)(PK_FN(pk_ld)(xp + k * PK_L), m[k]);
        }
    for (int k = 0; k < PK_NV; k++) PK_FN(pk_st)(o + k * PK_L, m[k]);
}

/* NHWC: output rows (n, oh), channels innermost. */
static void PK_FN(pk_max_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_max_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t n = u / g->oh, oh = u % g->oh;
        int64_t h0, h1;
        pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
        const PK_T *xn = j->x + n * H * W * C;
        PK_T *yrow = j->y + u * g->ow * C;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t w0, w1;
            pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
            int64_t c0 = 0;
            for (; c0 + PK_VB <= C; c0 += PK_VB)
                PK_FN(pk_max_vb)(xn + c0, yrow + ow * C + c0, W, C, h0, h1, w0, w1, j->lowest);
            if (c0 < C)
                PK_FN(pk_max_px)(xn + c0, yrow + ow * C + c0, W, C, h0, h1, w0, w1, j->lowest,
                                 C - c0);
        }
    }
}

/* NCHW: planes (n, c). */
static void PK_FN(pk_max_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_max_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const PK_T *xp = j->x + u * H * W;
        PK_T *yp = j->y + u * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                PK_T m = j->lowest;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        PK_T v = xp[ih * W + iw];
                        m = v > m ? v : m;
                    }
                yp[oh * g->ow + ow] = m;
            }
        }
    }
}

/* Over depth (NHWC, TF's DepthwiseMaxPool): each group of kd channels, from its first. */
static void PK_FN(pk_max_depth_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_max_job) *j = arg;
    const bf_pool_geom *g = j->g;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const PK_T *xp = j->x + u * g->kd;
        PK_T m = xp[0];
        for (int64_t q = 1; q < g->kd; q++) m = m < xp[q] ? xp[q] : m;
        j->y[u] = m;
    }
}

void PK_FN(bf_pool_max)(const bf_pool_geom *g, const PK_T *x, PK_T *y,
#if PK_FLOAT
                        PK_T lowest,
#endif
                        const bf_exec *ex) {
    PK_FN(pk_max_job) j = {.g = g, .x = x, .y = y};
#if PK_FLOAT
    j.lowest = lowest;
#else
    j.lowest = PK_LOWEST;
#endif
    bf_task_fn fn;
    if (g->kd > 1) {
        j.units = g->n * g->h * g->w * g->oc;
        j.tasks = pk_tasks(ex, j.units, g->kd);
        fn = PK_FN(pk_max_depth_task);
    } else if (!g->nchw) {
        j.units = g->n * g->oh;
        j.tasks = pk_tasks(ex, j.units, g->ow * g->kh * g->kw * g->c);
        fn = PK_FN(pk_max_nhwc_task);
    } else {
        j.units = g->n * g->c;
        j.tasks = pk_tasks(ex, j.units, g->oh * g->ow * g->kh * g->kw);
        fn = PK_FN(pk_max_nchw_task);
    }
    pk_run(ex, j.tasks, fn, &j);
}

#if PK_FLOAT

/* ---- MaxPoolGrad ------------------------------------------------------------------------ */

/*
 * TF's CPU MaxPoolGrad recomputes the argmax of every window from orig_input (it never reads
 * orig_output's values): the first element of the window in row-major order, replaced by a
 * later one only when that one is strictly greater. Then dx[argmax] += dy, in output order.
 *
 * The NHWC kernel finds that argmax without indices, vectorised over channels: first the max
 * m = max(v, m) from the first element (that comparison keeps m on ties and never takes a
 * NaN, exactly TF's rule), then the first element equal to m, in row-major order, gets dy:
 * under "replace only when strictly greater" the argmax is the first element of the maximal
 * value, and when the first element is NaN (m is NaN, equal to nothing) it is the first.
 *
 * Tasks own disjoint parts of dx and zero them before adding: an output row's band of sh
 * input rows when windows do not overlap across rows (kh <= sh), else whole images.
 */
typedef struct PK_FN(pk_grad_job) {
    const bf_pool_geom *g;
    const PK_T *x, *dy; /* x like the input (MaxPoolGrad), dy like the output */
    PK_T *dx;           /* like the input */
    int64_t units, tasks;
    int bands;          /* 1: units are output rows (n, oh) owning bands of input rows */
    int tiles;          /* 1: the windows tile the input (each element in exactly one):
                           dx is written once per element, with no zeroing and no adding */
} PK_FN(pk_grad_job);


/* v where m is all ones, +0.0 where m is zero (a bitwise select the compiler vectorises). */
static inline PK_T PK_FN(pk_masked)(PK_T v, PK_MASK m) {
    PK_MASK u;
    memcpy(&u, &v, sizeof(u));
    u &= m;
    memcpy(&v, &u, sizeof(v));
    return v;
}

/* For unit u (NHWC): the output rows [*r0, *r1) it handles and the input rows [*z0, *z1) of
 * image *n it owns (and zeroes). */
static void PK_FN(pk_grad_unit)(const PK_FN(pk_grad_job) *j, int64_t u, int64_t *n,
                                int64_t *r0, int64_t *r1, int64_t *z0, int64_t *z1) {
    const bf_pool_geom *g = j->g;
    if (!j->bands) {
        *n = u, *r0 = 0, *r1 = g->oh, *z0 = 0, *z1 = g->h;
        return;
    }
    *n = u / g->oh;
    const int64_t oh = u % g->oh;
    *r0 = oh, *r1 = oh + 1;
    *z0 = oh == 0 ? 0 : oh * g->sh - g->pt;
    *z1 = oh == g->oh - 1 ? g->h : (oh + 1) * g->sh - g->pt;
    *z0 = BF_MAX(0, BF_MIN(*z0, g->h));
    *z1 = BF_MAX(*z0, BF_MIN(*z1, g->h));
}

/* One output pixel's gradient for channels [c0, c0 + nc) (inlined like pk_max_px). */
static inline __attribute__((always_inline)) void PK_FN(pk_maxg_px)(
    const PK_T *xn, PK_T *dxn, const PK_T *restrict d, int64_t W, int64_t C, int64_t h0,
    int64_t h1, int64_t w0, int64_t w1, int tiles, const int64_t nc) {
    PK_T best[PK_VB];
    PK_MASK done[PK_VB];
    const PK_T *restrict x0 = xn + (h0 * W + w0) * C;
    for (int64_t c = 0; c < nc; c++) best[c] = x0[c];
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
            const PK_T *restrict xp = xn + (ih * W + iw) * C;
            for (int64_t c = 0; c < nc; c++) best[c] = xp[c] > best[c] ? xp[c] : best[c];
        }
    /* the first element equal to the max (or the first, when the max is NaN) gets dy: dy
     * masked to +0.0 elsewhere, and adding +0.0 changes no sum that starts from +0.0 */
    for (int64_t c = 0; c < nc; c++) done[c] = -(PK_MASK)(best[c] != best[c]);
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *restrict xp = xn + (ih * W + iw) * C;
            PK_T *restrict o = dxn + (ih * W + iw) * C;
            const bool first = ih == h0 && iw == w0;
            for (int64_t c = 0; c < nc; c++) {
                PK_MASK eq = -(PK_MASK)(xp[c] == best[c]);
                PK_MASK m = first ? eq | done[c] : eq & ~done[c];
                done[c] |= m;
                o[c] = (tiles ? 0 : o[c]) + PK_FN(pk_masked)(d[c], m);
            }
        }
}

/* The same for a whole block of PK_VB channels, in vectors. */
static inline __attribute__((always_inline)) void PK_FN(pk_maxg_vb)(
    const PK_T *xn, PK_T *dxn, const PK_T *d, int64_t W, int64_t C, int64_t h0, int64_t h1,
    int64_t w0, int64_t w1, int tiles) {
    PK_V best[PK_NV];
    PK_M done[PK_NV];
    const PK_T *x0 = xn + (h0 * W + w0) * C;
    for (int k = 0; k < PK_NV; k++) best[k] = PK_FN(pk_ld)(x0 + k * PK_L);
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
            const PK_T *xp = xn + (ih * W + iw) * C;
            for (int k = 0; k < PK_NV; k++)
                best[k] = PK_FN(pk_vmax)(PK_FN(pk_ld)(xp + k * PK_L), best[k]);
        }
    for (int k = 0; k < PK_NV; k++) done[k] = (PK_M)(best[k] != best[k]);
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *xp = xn + (ih * W + iw) * C;
            PK_T *o = dxn + (ih * W + iw) * C;
            const bool first = ih == h0 && iw == w0;
            for (int k = 0; k < PK_NV; k++) {
                PK_M eq = (PK_M)(PK_FN(pk_ld)(xp + k * PK_L) == best[k]);
                PK_M m = first ? eq | done[k] : eq & ~done[k];
                done[k] |= m;
                PK_V dv = (PK_V)((PK_M)PK_FN(pk_ld)(d + k * PK_L) & m);
                PK_FN(pk_st)(o + k * PK_L, tiles ? dv : PK_FN(pk_ld)(o + k * PK_L) + dv);
            }
        }
}

static void PK_FN(pk_maxg_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_grad_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t n, r0, r1, z0, z1;
        PK_FN(pk_grad_unit)(j, u, &n, &r0, &r1, &z0, &z1);
        const PK_T *xn = j->x + n * H * W * C;
        PK_T *dxn = j->dx + n * H * W * C;
        if (!j->tiles) memset(dxn + z0 * W * C, 0, sizeof(PK_T) * (size_t)((z1 - z0) * W * C));
        for (int64_t oh = r0; oh < r1; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue; /* only padding: no candidate */
                const PK_T *dyp = j->dy + ((n * g->oh + oh) * g->ow + ow) * C;
                int64_t c0 = 0;
                for (; c0 + PK_VB <= C; c0 += PK_VB)
                    PK_FN(pk_maxg_vb)(xn + c0, dxn + c0, dyp + c0, W, C, h0, h1, w0, w1,
                                      j->tiles);
                if (c0 < C)
                    PK_FN(pk_maxg_px)(xn + c0, dxn + c0, dyp + c0, W, C, h0, h1, w0, w1,
                                      j->tiles, C - c0);
            }
        }
    }
}

static void PK_FN(pk_maxg_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_grad_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) { /* planes (n, c) */
        const PK_T *xp = j->x + u * H * W;
        const PK_T *dyp = j->dy + u * g->oh * g->ow;
        PK_T *dxp = j->dx + u * H * W;
        memset(dxp, 0, sizeof(PK_T) * (size_t)(H * W));
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue;
                int64_t at = h0 * W + w0;
                PK_T best = xp[at];
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++)
                        if (best < xp[ih * W + iw]) best = xp[ih * W + iw], at = ih * W + iw;
                dxp[at] += dyp[oh * g->ow + ow];
            }
        }
    }
}

/* The task split of a gradient kernel (units and tasks of j), or 0 when the output is empty
 * and dx is simply zero. */
static int PK_FN(pk_grad_plan)(const bf_pool_geom *g, const bf_exec *ex,
                               PK_FN(pk_grad_job) * j) {
    if (g->oh == 0 || g->ow == 0) {
        pk_zero(ex, j->dx, g->n * g->h * g->w * g->c * (int64_t)sizeof(PK_T));
        return 0;
    }
    if (g->nchw) {
        j->units = g->n * g->c;
        j->tasks = pk_tasks(ex, j->units, g->oh * g->ow * g->kh * g->kw + g->h * g->w);
    } else {
        j->bands = g->kh <= g->sh;
        j->tiles = g->kh == g->sh && g->kw == g->sw && g->pt == 0 && g->pl == 0 &&
                   g->oh * g->sh >= g->h && g->ow * g->sw >= g->w;
        j->units = j->bands ? g->n * g->oh : g->n;
        const int64_t rows = j->bands ? 1 : g->oh;
        j->tasks = pk_tasks(ex, j->units, rows * g->ow * (2 * g->kh * g->kw + 1) * g->c);
    }
    return 1;
}

void PK_FN(bf_pool_max_grad)(const bf_pool_geom *g, const PK_T *x, const PK_T *dy, PK_T *dx,
                             const bf_exec *ex) {
    PK_FN(pk_grad_job) j = {.g = g, .x = x, .dy = dy, .dx = dx};
    if (!PK_FN(pk_grad_plan)(g, ex, &j)) return;
    pk_run(ex, j.tasks, g->nchw ? PK_FN(pk_maxg_nchw_task) : PK_FN(pk_maxg_nhwc_task), &j);
}

/* ---- AvgPool ------------------------------------------------------------------------------- */

typedef struct PK_FN(pk_avg_job) {
    const bf_pool_geom *g;
    const PK_T *x; /* like the input */
    PK_T *y;       /* like the output */
    int64_t units, tasks;
} PK_FN(pk_avg_job);

/* One output pixel's mean for channels [c0, c0 + nc) (inlined like pk_max_px): the sum of
 * the real elements of the window in row-major order, divided by their count (TF). */
static inline __attribute__((always_inline)) void PK_FN(pk_avg_px)(
    const PK_T *xn, PK_T *restrict o, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, const int64_t nc) {
    PK_T s[PK_VB];
    for (int64_t c = 0; c < nc; c++) s[c] = 0;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *restrict xp = xn + (ih * W + iw) * C;
            for (int64_t c = 0; c < nc; c++) s[c] += xp[c];
        }
    const PK_T count = (PK_T)((h1 - h0) * (w1 - w0));
    for (int64_t c = 0; c < nc; c++) o[c] = s[c] / count;
}

/* The same for a whole block of PK_VB channels, in vectors. */
static inline __attribute__((always_inline)) void PK_FN(pk_avg_vb)(
    const PK_T *xn, PK_T *o, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1) {
    PK_V s[PK_NV];
    for (int k = 0; k < PK_NV; k++) s[k] = PK_FN(pk_splat)(0);
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            const PK_T *xp = xn + (ih * W + iw) * C;
            for (int k = 0; k < PK_NV; k++) s[k] += PK_FN(pk_ld)(xp + k * PK_L);
        }
    const PK_V count = PK_FN(pk_splat)((PK_T)((h1 - h0) * (w1 - w0)));
    for (int k = 0; k < PK_NV; k++) PK_FN(pk_st)(o + k * PK_L, s[k] / count);
}

static void PK_FN(pk_avg_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_avg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t n = u / g->oh, oh = u % g->oh;
        int64_t h0, h1;
        pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
        const PK_T *xn = j->x + n * H * W * C;
        PK_T *yrow = j->y + u * g->ow * C;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t w0, w1;
            pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
            int64_t c0 = 0;
            for (; c0 + PK_VB <= C; c0 += PK_VB)
                PK_FN(pk_avg_vb)(xn + c0, yrow + ow * C + c0, W, C, h0, h1, w0, w1);
            if (c0 < C) PK_FN(pk_avg_px)(xn + c0, yrow + ow * C + c0, W, C, h0, h1, w0, w1, C - c0);
        }
    }
}

static void PK_FN(pk_avg_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_avg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const PK_T *xp = j->x + u * H * W;
        PK_T *yp = j->y + u * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                PK_T s = 0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * W + iw];
                yp[oh * g->ow + ow] = s / (PK_T)((h1 - h0) * (w1 - w0));
            }
        }
    }
}

void PK_FN(bf_pool_avg)(const bf_pool_geom *g, const PK_T *x, PK_T *y, const bf_exec *ex) {
    PK_FN(pk_avg_job) j = {.g = g, .x = x, .y = y};
    if (!g->nchw) {
        j.units = g->n * g->oh;
        j.tasks = pk_tasks(ex, j.units, g->ow * g->kh * g->kw * g->c);
        pk_run(ex, j.tasks, PK_FN(pk_avg_nhwc_task), &j);
    } else {
        j.units = g->n * g->c;
        j.tasks = pk_tasks(ex, j.units, g->oh * g->ow * g->kh * g->kw);
        pk_run(ex, j.tasks, PK_FN(pk_avg_nchw_task), &j);
    }
}

/* ---- AvgPoolGrad -------------------------------------------------------------------------- */

/*
 * dx[window] += dy * (T)(1.0 / count) for every output in row-major order, count being the
 * window's real elements: TF's CPU AvgPoolGrad (divide_coeff), with the window clipped to the
 * data exactly as the forward pool clips it. Task ownership and zeroing as in MaxPoolGrad.
 */
/* One output pixel's dy * coeff added (or, tiling, written) to its window's real elements,
 * channels [c0, c0 + nc) (inlined like pk_max_px). */
static inline __attribute__((always_inline)) void PK_FN(pk_avgg_px)(
    PK_T *dxn, const PK_T *restrict d, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, int tiles, const int64_t nc) {
    const PK_T coeff = (PK_T)(1.0 / (double)((h1 - h0) * (w1 - w0)));
    PK_T v[PK_VB];
    for (int64_t c = 0; c < nc; c++) v[c] = d[c] * coeff;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            PK_T *restrict o = dxn + (ih * W + iw) * C;
            for (int64_t c = 0; c < nc; c++) o[c] = (tiles ? 0 : o[c]) + v[c];
        }
}

/* The same for a whole block of PK_VB channels, in vectors. */
static inline __attribute__((always_inline)) void PK_FN(pk_avgg_vb)(
    PK_T *dxn, const PK_T *d, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, int tiles) {
    const PK_V coeff = PK_FN(pk_splat)((PK_T)(1.0 / (double)((h1 - h0) * (w1 - w0))));
    PK_V v[PK_NV];
    for (int k = 0; k < PK_NV; k++) v[k] = PK_FN(pk_ld)(d + k * PK_L) * coeff;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            PK_T *o = dxn + (ih * W + iw) * C;
            for (int k = 0; k < PK_NV; k++)
                PK_FN(pk_st)(o + k * PK_L, tiles ? v[k] : PK_FN(pk_ld)(o + k * PK_L) + v[k]);
        }
}

static void PK_FN(pk_avgg_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_grad_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t n, r0, r1, z0, z1;
        PK_FN(pk_grad_unit)(j, u, &n, &r0, &r1, &z0, &z1);
        PK_T *dxn = j->dx + n * H * W * C;
        if (!j->tiles) memset(dxn + z0 * W * C, 0, sizeof(PK_T) * (size_t)((z1 - z0) * W * C));
        for (int64_t oh = r0; oh < r1; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue;
                const PK_T *dyp = j->dy + ((n * g->oh + oh) * g->ow + ow) * C;
                int64_t c0 = 0;
                for (; c0 + PK_VB <= C; c0 += PK_VB)
                    PK_FN(pk_avgg_vb)(dxn + c0, dyp + c0, W, C, h0, h1, w0, w1, j->tiles);
                if (c0 < C)
                    PK_FN(pk_avgg_px)(dxn + c0, dyp + c0, W, C, h0, h1, w0, w1, j->tiles, C - c0);
            }
        }
    }
}

static void PK_FN(pk_avgg_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_grad_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const PK_T *dyp = j->dy + u * g->oh * g->ow;
        PK_T *dxp = j->dx + u * H * W;
        memset(dxp, 0, sizeof(PK_T) * (size_t)(H * W));
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue;
                const PK_T v = dyp[oh * g->ow + ow] * (PK_T)(1.0 / (double)((h1 - h0) * (w1 - w0)));
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) dxp[ih * W + iw] += v;
            }
        }
    }
}

void PK_FN(bf_pool_avg_grad)(const bf_pool_geom *g, const PK_T *dy, PK_T *dx,
                             const bf_exec *ex) {
    PK_FN(pk_grad_job) j = {.g = g, .dy = dy, .dx = dx};
    if (!PK_FN(pk_grad_plan)(g, ex, &j)) return;
    pk_run(ex, j.tasks, g->nchw ? PK_FN(pk_avgg_nchw_task) : PK_FN(pk_avgg_nhwc_task), &j);
}

#endif /* PK_FLOAT */

#undef PK_V
#undef PK_M
#undef PK_L
#undef PK_NV
#undef PK_FN
#undef PK_CAT
#undef PK_CAT2
