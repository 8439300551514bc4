/*
 * conv_gemm_direct_filter.h - bf_sf_*: the direct dense BWD_FILTER, dW tiles in registers,
 * taken before the GEMM of conv_gemm_filter.h for <= 4 input channels or >= 48-pixel rows
 * (bf_sf_wanted). Part of the kernel template (conv_gemm_impl.h; no include guard); uses
 * conv_gemm_vec.h and bf_partials_run of conv_gemm_filter.h.
 *
 * dW[k, o] = sum_p x_im2col[p, k] * dy[p, o], k = (kh, kw, c). Per output row (n, oh) the
 * k_h input rows it reads are made zero-padded (in place when the row needs no padding, a
 * per-thread zero row for kh outside the image), then for each tile of SF_RB k values x SF_NV
 * output-channel vectors the sum over the row's pixels is kept in registers (SF_NV dy loads,
 * SF_RB broadcasts of x, SF_RB*SF_NV FMAs per pixel) and added to the thread's partial dW.
 * No packing at all, which is what a 3-channel stem (147 short k rows) needs.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_sf_plan   BF_KFN(bf_sf_plan)
#define bf_sf_wanted BF_KFN(bf_sf_wanted)
#define bf_sf_prw    BF_KFN(bf_sf_prw)
#define bf_sf_task   BF_KFN(bf_sf_task)
#define bf_sf_ws     BF_KFN(bf_sf_ws)
#define bf_sf_run    BF_KFN(bf_sf_run)

#if BF_VEC_BYTES >= 64
#define SF_NV 4
#else
#define SF_NV 2
#endif
#define SF_RB 6

typedef struct bf_sf_plan {
    const bf_conv_geom *g;
    const T *x, *dy;
    T *out, *partials;
    T *rows;        /* per thread: (k_h + 1) padded rows of prw*C (the last is all zeros) */
    int64_t prw, rows_per, nel, rows_per_task;
    const bf_exec *ex;
} bf_sf_plan;

/* Few input channels (the packed GEMM's k rows are too short), or rows long enough that
   the per-row read-modify-write of each dW tile is amortised (measured: 56-pixel rows win,
   a 14-pixel stride-2 row loses to the packed GEMM). */
static bool bf_sf_wanted(const bf_conv_geom *g) {
    return g->groups == 1 && g->out_c % (SF_NV * BF_VL) == 0 && g->k_h <= 64 &&
           g->out_w > 0 && (g->in_c <= 4 || g->out_w >= 48);
}

static int64_t bf_sf_prw(const bf_conv_geom *g) {
    return (BF_MAX(g->out_w, 1) - 1) * g->stride_w + (g->k_w - 1) * g->dil_w + 1;
}

static void bf_sf_task(void *arg, int64_t task, int slot) {
    const bf_sf_plan *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    const int64_t C = g->in_c, O = g->out_c, nvl = SF_NV * BF_VL;
    const int64_t K = g->k_h * g->k_w * C, ps = g->stride_w * C, OW = g->out_w;
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    T *rows = p->rows + (int64_t)slot * p->rows_per;
    T *zrow = rows + g->k_h * p->prw * C;
    memset(zrow, 0, (size_t)(p->prw * C) * sizeof(T));
    int64_t nrows = g->n * g->out_h;
    for (int64_t row = task * p->rows_per_task;
         row < BF_MIN(nrows, (task + 1) * p->rows_per_task); row++) {
        int64_t n = row / g->out_h, oh = row % g->out_h;
        const T *prow[64];
        int64_t iw0 = -g->pad_left;
        bool inside = iw0 >= 0 && iw0 + p->prw <= g->in_w;
        for (int64_t kh = 0; kh < g->k_h; kh++) {
            int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
            if (ih < 0 || ih >= g->in_h) {
                prow[kh] = zrow;
                continue;
            }
            const T *src = p->x + (n * g->in_h + ih) * g->in_w * C;
            if (inside) {
                prow[kh] = src + iw0 * C;
                continue;
            }
            T *d = rows + kh * p->prw * C;
            int64_t lo = BF_MIN(BF_MAX(-iw0, 0), p->prw);
            int64_t hi = BF_MAX(BF_MIN(g->in_w - iw0, p->prw), lo);
            memset(d, 0, (size_t)(lo * C) * sizeof(T));
            memcpy(d + lo * C, src + (iw0 + lo) * C, (size_t)((hi - lo) * C) * sizeof(T));
            memset(d + hi * C, 0, (size_t)((p->prw - hi) * C) * sizeof(T));
            prow[kh] = d;
        }
        const T *dyr = p->dy + row * OW * O;
        /* what the next row of this task reads and this one does not (its dy row and the
           input rows below ours), prefetched in address order, a slice per tile: the tiles
           read x one line per pixel, in_c apart, an order the hardware does not run ahead of */
        const T *pfx = NULL, *pfy = NULL;
        int64_t npfx = 0, npfy = 0, pass = 0;
        int64_t npass = bf_cc_ceil_div(O, nvl) * bf_cc_ceil_div(K, SF_RB);
        if (row + 1 < BF_MIN(nrows, (task + 1) * p->rows_per_task)) {
            int64_t n2 = (row + 1) / g->out_h, oh2 = (row + 1) % g->out_h;
            int64_t span = (g->k_h - 1) * g->dil_h;
            int64_t lo = oh2 * g->stride_h - g->pad_top, hi = lo + span + 1;
            if (n2 == n) lo = BF_MAX(lo, oh * g->stride_h - g->pad_top + span + 1);
            lo = BF_MAX(lo, 0), hi = BF_MIN(hi, g->in_h);
            if (lo < hi)
                pfx = p->x + (n2 * g->in_h + lo) * g->in_w * C, npfx = (hi - lo) * g->in_w * C;
            pfy = dyr + OW * O, npfy = OW * O;
        }
        for (int64_t o0 = 0; o0 < O; o0 += nvl) {
            for (int64_t k0 = 0; k0 < K; k0 += SF_RB, pass++) {
                if (pfx) bf_pf_part(pfx, npfx, pass, npass);
                if (pfy) bf_pf_part(pfy, npfy, pass, npass);
                const T *xk[SF_RB];
#pragma GCC unroll 32
                for (int i = 0; i < SF_RB; i++) {
                    int64_t k = BF_MIN(k0 + i, K - 1), t = k / C, c = k % C;
                    xk[i] = prow[t / g->k_w] + t % g->k_w * g->dil_w * C + c;
                }
                bf_vec acc[SF_RB][SF_NV];
#pragma GCC unroll 32
                for (int i = 0; i < SF_RB; i++)
#pragma GCC unroll 8
                    for (int v = 0; v < SF_NV; v++) acc[i][v] = (bf_vec){0};
                const T *restrict dp = dyr + o0;
                for (int64_t ow = 0; ow < OW; ow++) {
                    bf_vec dv[SF_NV];
#pragma GCC unroll 8
                    for (int v = 0; v < SF_NV; v++) dv[v] = bf_ldv(dp + ow * O + v * BF_VL);
#pragma GCC unroll 32
                    for (int i = 0; i < SF_RB; i++) {
                        bf_vec xv = bf_vsplat(xk[i][ow * ps]);
#pragma GCC unroll 8
                        for (int v = 0; v < SF_NV; v++)
                            acc[i][v] = BF_VFMA_(xv, dv[v], acc[i][v]);
                    }
                }
#pragma GCC unroll 32
                for (int i = 0; i < SF_RB; i++) {
                    if (k0 + i >= K) break;
                    T *pv = part + (k0 + i) * O + o0;
#pragma GCC unroll 8
                    for (int v = 0; v < SF_NV; v++)
                        bf_stv(pv + v * BF_VL, bf_ldv(pv + v * BF_VL) + acc[i][v]);
                }
            }
        }
    }
}

static size_t bf_sf_ws(const bf_conv_geom *g, int n_threads) {
    size_t nel = bf_cc_mad(bf_cc_mad((size_t)(g->k_h * g->k_w), (size_t)g->in_c, 0),
                           (size_t)g->out_c, 0);
    /* the same rounded pieces bf_sf_run lays out: round_up(x + 16, 16) <= x + 31 */
    size_t parts = bf_cc_mad(nel, (size_t)(n_threads - 1), 32);
    size_t per = bf_cc_mad(bf_cc_mad((size_t)bf_sf_prw(g), (size_t)g->in_c, 0),
                           (size_t)(g->k_h + 1), 32);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, parts), sizeof(T), 64);
}

static void bf_sf_run(const bf_conv_geom *g, const T *x, const T *dy, T *out,
                      const bf_exec *ex) {
    bf_sf_plan p = {.g = g, .x = x, .dy = dy, .out = out, .ex = ex,
                    .prw = bf_sf_prw(g)};
    p.nel = g->k_h * g->k_w * g->in_c * g->out_c;
    p.partials = ex->workspace;
    p.rows = p.partials + bf_cc_round_up(p.nel * (ex->n_threads - 1) + 16, 16);
    p.rows_per = bf_cc_round_up(p.prw * g->in_c * (g->k_h + 1) + 16, 16);
    int64_t nrows = g->n * g->out_h;
    p.rows_per_task = BF_MAX(1, nrows / (8 * ex->n_threads));
    bf_partials_run(out, p.partials, p.nel, ex->n_threads,
                    bf_cc_ceil_div(nrows, p.rows_per_task), bf_sf_task, &p, ex);
}

#undef SF_NV
#undef SF_RB
