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

/* ---- MaxPool ---------------------------------------------------------------------------- */

typedef struct PK_FN(pk_max_job) {
    const bf_pool_geom *g;
    const PK_T *x; /* [N, H, W, C] or [N, C, H, W] */
    PK_T *y;       /* [N, OH, OW, C] or [N, C, OH, OW]; NHWC [N, H, W, C / kd] over depth */
    PK_T lowest;
    int64_t units, tasks;
} PK_FN(pk_max_job);

/* NHWC: output rows (n, oh), channels innermost. TF: y = max(lowest, window), NaN ignored. */
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
            PK_T *restrict o = yrow + ow * C;
            for (int64_t c = 0; c < C; c++) o[c] = j->lowest;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) {
                    const PK_T *restrict xp = xn + (ih * W + iw) * C;
                    for (int64_t c = 0; c < C; c++) o[c] = xp[c] > o[c] ? xp[c] : o[c];
                }
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
 * Tasks own disjoint parts of dx: whole images, or output rows when windows do not overlap
 * across rows (kh <= sh). dx is zeroed before.
 */
typedef struct PK_FN(pk_maxg_job) {
    const bf_pool_geom *g;
    const PK_T *x, *dy; /* x like the input, dy like the output */
    PK_T *dx;           /* like the input */
    int64_t units, tasks, rows_per_unit; /* units: images, or (n, oh) rows */
} PK_FN(pk_maxg_job);

#define PK_CHUNK 64 /* channels whose argmax one pass tracks (on the stack) */

static void PK_FN(pk_maxg_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_maxg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    PK_T best[PK_CHUNK];
    int64_t at[PK_CHUNK];
    for (int64_t u = u0; u < u1; u++) {
        for (int64_t r = 0; r < j->rows_per_unit; r++) {
            const int64_t row = u * j->rows_per_unit + r; /* (n, oh) */
            const int64_t n = row / g->oh, oh = row % g->oh;
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            const PK_T *xn = j->x + n * H * W * C;
            PK_T *dxn = j->dx + n * H * W * C;
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue; /* only padding: no candidate */
                const PK_T *dyp = j->dy + (row * g->ow + ow) * C;
                for (int64_t c0 = 0; c0 < C; c0 += PK_CHUNK) {
                    const int64_t nc = BF_MIN(PK_CHUNK, C - c0);
                    const PK_T *x0 = xn + (h0 * W + w0) * C + c0;
                    for (int64_t c = 0; c < nc; c++) best[c] = x0[c], at[c] = h0 * W + w0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
                            const int64_t s = ih * W + iw;
                            const PK_T *restrict xp = xn + s * C + c0;
                            for (int64_t c = 0; c < nc; c++) {
                                bool gt = best[c] < xp[c];
                                best[c] = gt ? xp[c] : best[c];
                                at[c] = gt ? s : at[c];
                            }
                        }
                    for (int64_t c = 0; c < nc; c++) dxn[at[c] * C + c0 + c] += dyp[c0 + c];
                }
            }
        }
    }
}

static void PK_FN(pk_maxg_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_maxg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) { /* planes (n, c) */
        const PK_T *xp = j->x + u * H * W;
        const PK_T *dyp = j->dy + u * g->oh * g->ow;
        PK_T *dxp = j->dx + u * H * W;
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

void PK_FN(bf_pool_max_grad)(const bf_pool_geom *g, const PK_T *x, const PK_T *dy, PK_T *dx,
                             const bf_exec *ex) {
    pk_zero(ex, dx, g->n * g->h * g->w * g->c * (int64_t)sizeof(PK_T));
    PK_FN(pk_maxg_job) j = {.g = g, .x = x, .dy = dy, .dx = dx, .rows_per_unit = 1};
    if (g->nchw) {
        j.units = g->n * g->c;
        j.tasks = pk_tasks(ex, j.units, g->oh * g->ow * g->kh * g->kw);
        pk_run(ex, j.tasks, PK_FN(pk_maxg_nchw_task), &j);
        return;
    }
    /* Rows of outputs write disjoint input rows when the windows do not overlap in H. */
    if (g->kh <= g->sh) {
        j.units = g->n * g->oh;
    } else {
        j.units = g->n;
        j.rows_per_unit = g->oh;
    }
    j.tasks = pk_tasks(ex, j.units, j.rows_per_unit * g->ow * g->kh * g->kw * g->c);
    pk_run(ex, j.tasks, PK_FN(pk_maxg_nhwc_task), &j);
}

/* ---- AvgPool ------------------------------------------------------------------------------- */

typedef struct PK_FN(pk_avg_job) {
    const bf_pool_geom *g;
    const PK_T *x; /* like the input */
    PK_T *y;       /* like the output */
    int64_t units, tasks;
} PK_FN(pk_avg_job);

/* NHWC: y = (sum of the real elements of the window, row-major) / their count (TF). */
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
            PK_T *restrict o = yrow + ow * C;
            for (int64_t c = 0; c < C; c++) o[c] = 0;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) {
                    const PK_T *restrict xp = xn + (ih * W + iw) * C;
                    for (int64_t c = 0; c < C; c++) o[c] += xp[c];
                }
            const PK_T count = (PK_T)((h1 - h0) * (w1 - w0));
            for (int64_t c = 0; c < C; c++) o[c] /= count;
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
 * data exactly as the forward pool clips it. Task ownership as in MaxPoolGrad.
 */
typedef struct PK_FN(pk_avgg_job) {
    const bf_pool_geom *g;
    const PK_T *dy; /* like the output */
    PK_T *dx;       /* like the input */
    int64_t units, tasks, rows_per_unit;
} PK_FN(pk_avgg_job);

static void PK_FN(pk_avgg_nhwc_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_avgg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t C = g->c, W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        for (int64_t r = 0; r < j->rows_per_unit; r++) {
            const int64_t row = u * j->rows_per_unit + r;
            const int64_t n = row / g->oh, oh = row % g->oh;
            int64_t h0, h1;
            pk_clip(oh * g->sh - g->pt, g->kh, H, &h0, &h1);
            PK_T *dxn = j->dx + n * H * W * C;
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0, w1;
                pk_clip(ow * g->sw - g->pl, g->kw, W, &w0, &w1);
                if (h0 >= h1 || w0 >= w1) continue;
                const PK_T coeff = (PK_T)(1.0 / (double)((h1 - h0) * (w1 - w0)));
                const PK_T *restrict d = j->dy + (row * g->ow + ow) * C;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        PK_T *restrict o = dxn + (ih * W + iw) * C;
                        for (int64_t c = 0; c < C; c++) o[c] += d[c] * coeff;
                    }
            }
        }
    }
}

static void PK_FN(pk_avgg_nchw_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const PK_FN(pk_avgg_job) *j = arg;
    const bf_pool_geom *g = j->g;
    const int64_t W = g->w, H = g->h;
    int64_t u0, u1;
    pk_range(j->units, j->tasks, t, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const PK_T *dyp = j->dy + u * g->oh * g->ow;
        PK_T *dxp = j->dx + u * H * W;
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
    pk_zero(ex, dx, g->n * g->h * g->w * g->c * (int64_t)sizeof(PK_T));
    PK_FN(pk_avgg_job) j = {.g = g, .dy = dy, .dx = dx, .rows_per_unit = 1};
    if (g->nchw) {
        j.units = g->n * g->c;
        j.tasks = pk_tasks(ex, j.units, g->oh * g->ow * g->kh * g->kw);
        pk_run(ex, j.tasks, PK_FN(pk_avgg_nchw_task), &j);
        return;
    }
    if (g->kh <= g->sh) {
        j.units = g->n * g->oh;
    } else {
        j.units = g->n;
        j.rows_per_unit = g->oh;
    }
    j.tasks = pk_tasks(ex, j.units, j.rows_per_unit * g->ow * g->kh * g->kw * g->c);
    pk_run(ex, j.tasks, PK_FN(pk_avgg_nhwc_task), &j);
}

#undef PK_CHUNK
#endif /* PK_FLOAT */

#undef PK_FN
#undef PK_CAT
#undef PK_CAT2
