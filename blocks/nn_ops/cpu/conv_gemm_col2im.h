/*
 * conv_gemm_col2im.h - bf_ci_*: dense BWD_INPUT with few input channels (Cg < NR/2), a GEMM
 * into columns followed by col2im. Part of the kernel template (conv_gemm_impl.h; no include
 * guard); uses BF_CG_MC, BF_CG_KC and bf_cg_copy_run of conv_gemm_rows.h.
 *
 * dcol = dy x W^T has taps*Cg columns, which fills the vector lanes where dx's Cg columns
 * would not: dcol[p, (tap, ci)] = sum_co dy[p, co] * w[tap, ci, co] is computed MC dy pixels
 * at a time (A packed as in conv_gemm_rows.h, then UKRB) and scattered (col2im) into dx. One
 * task per image, so no two tasks add into the same dx pixel.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_ci_plan        BF_KFN(bf_ci_plan)
#define bf_ci_wanted      BF_KFN(bf_ci_wanted)
#define bf_ci_pack_b_task BF_KFN(bf_ci_pack_b_task)
#define bf_ci_task        BF_KFN(bf_ci_task)
#define bf_ci_ws          BF_KFN(bf_ci_ws)
#define bf_ci_run         BF_KFN(bf_ci_run)

typedef struct bf_ci_plan {
    const bf_conv_geom *g;
    const T *dy;    /* [N, OH, OW, O] */
    const T *w;     /* [KH, KW, Cg, O] */
    T *dx;          /* [N, H, W, C] */
    T *bpack;       /* [group][panel of NR (tap, ci) columns][og][NR] */
    T *scratch;     /* per thread: A [MC x KC] then dcol [MC][ncol_pad] */
    int64_t og, ncol, npad, scratch_per, kc;
    const bf_exec *ex;
} bf_ci_plan;

static bool bf_ci_wanted(const bf_conv_geom *g, int n_threads) {
    return g->k_in_c < NR / 2 && g->k_h * g->k_w * g->k_in_c >= NR && g->n >= n_threads &&
           g->groups == 1;
}

static void bf_ci_pack_b_task(void *arg, int64_t jp, int slot) {
    const bf_ci_plan *p = arg;
    const bf_conv_geom *g = p->g;
    T *panel = p->bpack + jp * p->og * NR; /* [og][NR] */
    for (int64_t co = 0; co < p->og; co++)
        for (int64_t j = 0; j < NR; j++) {
            int64_t col = jp * NR + j; /* (tap, ci) */
            panel[co * NR + j] = col < p->ncol ? p->w[col * g->out_c + co] : 0;
        }
}

static void bf_ci_task(void *arg, int64_t n, int slot) {
    const bf_ci_plan *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    T *apack = p->scratch + (int64_t)slot * p->scratch_per;
    T *dcol = apack + BF_CG_MC * p->kc;
    T *dx = p->dx + n * g->in_h * g->in_w * g->in_c; /* [H, W, C] */
    int64_t cg = g->k_in_c, npix = g->out_h * g->out_w;
    for (int64_t e = 0; e < g->in_h * g->in_w * g->in_c; e++) dx[e] = 0;
    T *crow[BF_CG_MC];
    for (int64_t r = 0; r < BF_CG_MC; r++) crow[r] = dcol + r * p->npad;
    for (int64_t m0 = 0; m0 < npix; m0 += BF_CG_MC) {
        int64_t mc = BF_MIN((int64_t)BF_CG_MC, npix - m0), nmb = bf_cc_ceil_div(mc, MR);
        const T *dyc = p->dy + (n * npix + m0) * g->out_c;
#ifdef UKRI
        if (p->og >= AKB && p->og <= BF_CG_KCI) {
            /* A read in place: the MC dy pixels are consecutive rows of og values (one run
               per row; rows past mc read zeros from the scratch that packing would use) */
            const T *tab[BF_CG_MC];
            T *zero = apack;
            memset(zero, 0, (size_t)p->og * sizeof(T));
            for (int64_t r = 0; r < nmb * MR; r++) tab[r] = r < mc ? dyc + r * g->out_c : zero;
            for (int64_t jp = 0; jp < p->npad / NR; jp++) {
                int nr = (int)BF_MIN((int64_t)NR, p->ncol - jp * NR);
                for (int64_t mb = 0; mb < nmb; mb++) {
                    int mr = (int)BF_MIN((int64_t)MR, mc - mb * MR);
                    const T *const *next = jp == 0 && mb + 1 < nmb ? tab + (mb + 1) * MR : NULL;
                    UKRI(p->og, p->og, tab + mb * MR, next, p->bpack + jp * p->og * NR,
                         crow + mb * MR, jp * NR, mr, nr, 0);
                }
            }
        } else
#endif
        {
            int64_t kc0 = 0; /* og == 0 runs once with kc = 0: dcol all zeros */
            do {
                int64_t kc = BF_MIN(p->kc, p->og - kc0), kcp = bf_cc_round_up(kc, AKB);
                for (int64_t mb = 0; mb < nmb && kc > 0; mb++)
                    for (int64_t i = 0; i < MR; i++) {
                        int64_t r = mb * MR + i;
                        bf_cg_copy_run(apack + mb * kcp * MR, i, 0,
                                       r < mc ? dyc + r * g->out_c + kc0 : NULL, kc);
                    }
                for (int64_t jp = 0; jp < p->npad / NR; jp++) {
                    int nr = (int)BF_MIN((int64_t)NR, p->ncol - jp * NR);
                    for (int64_t mb = 0; mb < nmb; mb++) {
                        int mr = (int)BF_MIN((int64_t)MR, mc - mb * MR);
                        UKRB(kc, apack + mb * kcp * MR, p->bpack + (jp * p->og + kc0) * NR,
                             crow + mb * MR, jp * NR, mr, nr, kc0 > 0);
                    }
                }
                kc0 += kc;
            } while (kc0 < p->og);
        }
        /* col2im: add each row's taps into dx */
        for (int64_t r = 0; r < mc; r++) {
            int64_t oh = (m0 + r) / g->out_w, ow = (m0 + r) % g->out_w;
            const T *dc = dcol + r * p->npad;
            int64_t iw0 = ow * g->stride_w - g->pad_left;
            /* with dil_w == 1 the kw taps of one kh cover consecutive dx pixels, and their
               columns are consecutive in dcol: one contiguous add of nkw * cg values */
            int64_t kwlo = BF_MAX(0, -iw0), kwhi = BF_MIN(g->k_w, g->in_w - iw0);
            for (int64_t kh = 0; kh < g->k_h; kh++) {
                int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                if (ih < 0 || ih >= g->in_h) continue;
                if (g->dil_w == 1) {
                    if (kwhi <= kwlo) continue;
                    T *restrict d = dx + (ih * g->in_w + iw0 + kwlo) * g->in_c;
                    const T *restrict v = dc + (kh * g->k_w + kwlo) * cg;
#ifdef BF_ADD_SHORT
                    BF_ADD_SHORT(d, v, (kwhi - kwlo) * cg);
#else
                    for (int64_t j = 0; j < (kwhi - kwlo) * cg; j++) d[j] += v[j];
#endif
                    continue;
                }
                for (int64_t kw = 0; kw < g->k_w; kw++) {
                    int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;
                    if (iw < 0 || iw >= g->in_w) continue;
                    T *restrict d = dx + (ih * g->in_w + iw) * g->in_c;
                    const T *restrict v = dc + (kh * g->k_w + kw) * cg;
                    for (int64_t c = 0; c < cg; c++) d[c] += v[c];
                }
            }
        }
    }
}

static size_t bf_ci_ws(const bf_conv_geom *g, int n_threads) {
    int64_t og = g->out_c, npad = bf_cc_round_up(g->k_h * g->k_w * g->k_in_c, NR);
    size_t b = bf_cc_mad((size_t)og, (size_t)npad, 16);
    size_t per = bf_cc_mad((size_t)BF_CG_MC, (size_t)(BF_CG_KC + npad), 16);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, b), sizeof(T), 64);
}

static void bf_ci_run(const bf_conv_geom *g, const T *dy, const T *w, T *dx,
                      const bf_exec *ex) {
    bf_ci_plan p = {.g = g, .dy = dy, .w = w, .dx = dx, .ex = ex, .kc = BF_CG_KC,
                    .og = g->out_c, .ncol = g->k_h * g->k_w * g->k_in_c};
    p.npad = bf_cc_round_up(p.ncol, NR);
    p.bpack = ex->workspace;
    p.scratch = p.bpack + bf_cc_round_up(p.og * p.npad, 16);
    p.scratch_per = bf_cc_round_up(BF_CG_MC * (BF_CG_KC + p.npad), 16);
    bf_parallel_for(ex, p.npad / NR, bf_ci_pack_b_task, &p);
    bf_parallel_for(ex, g->n, bf_ci_task, &p);
}
