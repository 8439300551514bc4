/*
 * conv_gemm_rows.h - bf_cg_*: the packed GEMM behind dense FWD and BWD_INPUT (any groups
 * except depthwise), and its variant that reads A in place (UKRI). Part of the kernel
 * template: conv_gemm_impl.h includes it once per ISA and element type (no include guard).
 *
 * Dense convolutions are packed GEMMs (Goto/BLIS blocking). FWD and BWD_INPUT are an implicit
 * GEMM over "sub-problems" (see bf_conv_sub). Rows are output pixels, columns output channels
 * of one group, the reduction runs over (tap, source channel). B (the filter, transposed per
 * tap for BWD_INPUT) is packed once per call into workspace as
 * [group][sub][panel of NR columns][k][NR] (one task per panel). Work is split into tasks of
 * MC rows; a task packs its rows of im2col, KC reduction steps at a time, into per-thread
 * scratch as [MR-row block][k / AKB][MR][AKB] (zeros for padding; AKB = one vector, so a run
 * of channels is copied with full-vector moves and the microkernel still broadcasts from
 * constant offsets), then runs the microkernel over every column panel, so a packed A block
 * stays in L2 while B's KC x NR panels stream through L1. When the channels are whole vectors
 * the packing walks a per-task table of tap offsets (no divisions); for small C (a 3-channel
 * stem) consecutive kw taps are merged into one contiguous run. BWD_INPUT with stride s
 * splits dx into s_h*s_w phases; each phase only sees the taps that reach it, so no multiply
 * is spent on the zeros a dilated-dy formulation would insert.
 *
 * The in-place GEMM: where the ISA file defines UKRI, FWD and BWD_INPUT with at least AKB
 * reduction channels per tap skip packing A: each (row, tap) run is an input pixel's
 * channels, addressed through a table of row pointers. It is the `#ifdef UKRI` part of
 * bf_cg_rows_task, since it shares that task's row geometry and packed B.
 *
 * Used by later families: BF_CG_MC, BF_CG_KC and bf_cg_copy_run (conv_gemm_col2im.h).
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_cg_plan        BF_KFN(bf_cg_plan)
#define bf_cg_bofs        BF_KFN(bf_cg_bofs)
#define bf_cg_pack_b_task BF_KFN(bf_cg_pack_b_task)
#define bf_cg_copy_run    BF_KFN(bf_cg_copy_run)
#define bf_cg_rows_task   BF_KFN(bf_cg_rows_task)
#define bf_cg_rows_ws     BF_KFN(bf_cg_rows_ws)
#define bf_cg_rows_run    BF_KFN(bf_cg_rows_run)

#define BF_CG_MC (MR * 8)               /* rows per FWD/BWD_INPUT task */
#define BF_CG_TAPS_MAX 256              /* taps of the whole-tap packing fast path */
#define BF_CG_KC ((int64_t)(32768 / (NR * (int)sizeof(T)))) /* a KC x NR panel of B is 32 KiB */
#define BF_CG_KCI (2 * BF_CG_KC) /* reduction block of the in-place (UKRI) path */
/* Outputs of at least this many bytes are written with streaming stores (UKRI, acc 2; the
   direct FWD too): a quarter of this machine's 32 MiB L3, so an output that the next block
   could still find in cache is written the ordinary way. rn50 1x1 BWD_INPUT (51 MB dx),
   interleaved A/B, 2 threads: 13.4 -> 9.0 ms; the read for ownership of every output line was
   a third of its traffic. Lowered from 16 MiB: the 12.8 MB outputs of the 1x1 FWD (its 51 MB
   x streams through L3 meanwhile) 0.93x at 1 and 2 threads, 3x3/s2/256 BWD_INPUT 0.97x and
   0.95x; the 12.8 MB rn50 3x3/64 rows unchanged. */
#define BF_CG_STREAM_BYTES (8.0 * 1048576)

/* Per-op view of the operands: src is the activation read (x or dy), dst the one written. */
typedef struct bf_cg_plan {
    bf_conv_op op;
    const bf_conv_geom *g;
    const T *src;   /* [N, SH, SW, SC] */
    const T *w;     /* [KH, KW, Cg, O] */
    T *dst;         /* [N, DH, DW, DC] */
    T *bpack;       /* packed B for all groups and subs */
    T *ascratch;    /* per-thread [MC x KC] */
    int64_t sh, sw, sc, dh, dw, dc;
    int64_t kin, nout, npad, nsubs, ntasks_sub_max, kc;
    bool stream;    /* UKRI: final blocks of C with streaming stores (output >> cache) */
    const bf_exec *ex;
} bf_cg_plan;

/* Offset (elements) of sub-problem s of group grp in bpack. */
static int64_t bf_cg_bofs(const bf_cg_plan *p, int64_t grp, int64_t s) {
    int64_t taps_before = 0;
    for (int64_t t = 0; t < s; t++) {
        bf_conv_sub sp;
        bf_conv_sub_make(p->op, p->g, t, &sp);
        taps_before += sp.nkh * sp.nkw;
    }
    return (grp * p->g->k_h * p->g->k_w + taps_before) * p->kin * p->npad;
}

/* Pack B of (group, sub) as [panel][k][NR]; k = tap*kin + c. One task per (grp, sub, panel). */
static void bf_cg_pack_b_task(void *arg, int64_t i, int slot) {
    const bf_cg_plan *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t npan = p->npad / NR, jp0 = i % npan;
    int64_t grp = i / npan / p->nsubs, s = i / npan % p->nsubs;
    bf_conv_sub sp;
    bf_conv_sub_make(p->op, g, s, &sp);
    int64_t ksub = sp.nkh * sp.nkw * p->kin, cg = g->k_in_c, og = g->out_c / g->groups;
    T *bp = p->bpack + bf_cg_bofs(p, grp, s);
    for (int64_t jp = jp0; jp == jp0; jp++) {
        T *panel = bp + jp * ksub * NR; /* [ksub][NR] */
        for (int64_t ih = 0; ih < sp.nkh; ih++)
            for (int64_t iw = 0; iw < sp.nkw; iw++) {
                int64_t kh = sp.kh0 + ih * sp.khs, kw = sp.kw0 + iw * sp.kws;
                const T *wt = p->w + (kh * g->k_w + kw) * cg * g->out_c; /* [Cg][O] */
                T *restrict dstp = panel + (ih * sp.nkw + iw) * p->kin * NR;
                int64_t n0 = jp * NR, nn = BF_MIN((int64_t)NR, p->nout - n0);
                if (p->op == BF_CONV_FWD) {
                    /* FWD: row c of the panel is W[kh][kw][c][n0 ..], contiguous */
                    for (int64_t c = 0; c < p->kin; c++) {
                        memcpy(dstp + c * NR, wt + c * g->out_c + grp * og + n0,
                               (size_t)nn * sizeof(T));
                        memset(dstp + c * NR + nn, 0, (size_t)(NR - nn) * sizeof(T));
                    }
                } else {
                    /* BWD_INPUT: the transpose; read along W's rows (contiguous in c), write
                       down the panel's columns, which stay in L1 (kin x NR values) */
                    for (int64_t j = 0; j < nn; j++) {
                        const T *restrict src = wt + (n0 + j) * g->out_c + grp * og;
                        for (int64_t c = 0; c < p->kin; c++) dstp[c * NR + j] = src[c];
                    }
                    for (int64_t j = nn; j < NR; j++)
                        for (int64_t c = 0; c < p->kin; c++) dstp[c * NR + j] = 0;
                }
            }
    }
}

/* Copy len values from sv (zeros when sv is NULL) to packed-A row i, reduction index kk on:
   element kk of row i lives at ap[(kk / AKB) * MR * AKB + i * AKB + kk % AKB]. */
static inline void bf_cg_copy_run(T *restrict ap, int64_t i, int64_t kk,
                                  const T *restrict sv, int64_t len) {
    while (len > 0) {
        int64_t off = kk % AKB, seg = BF_MIN(len, (int64_t)AKB - off);
        T *restrict o = ap + (kk / AKB) * MR * AKB + i * AKB + off;
        if (seg == AKB) {
            if (sv)
                for (int q = 0; q < AKB; q++) o[q] = sv[q];
            else
                for (int q = 0; q < AKB; q++) o[q] = 0;
        } else {
#ifdef BF_COPY_SHORT
            BF_COPY_SHORT(o, sv, seg); /* ISA hook: masked vector copy of seg < AKB values */
#else
            if (sv)
                for (int64_t q = 0; q < seg; q++) o[q] = sv[q];
            else
                for (int64_t q = 0; q < seg; q++) o[q] = 0;
#endif
        }
        kk += seg, len -= seg;
        if (sv) sv += seg;
    }
}

/* One task: MC output rows of one (group, sub). */
static void bf_cg_rows_task(void *arg, int64_t task, int slot) {
    const bf_cg_plan *p = arg;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t per = p->ntasks_sub_max;
    int64_t grp = task / (p->nsubs * per), s = task / per % p->nsubs, mt = task % per;
    bf_conv_sub sp;
    bf_conv_sub_make(p->op, p->g, s, &sp);
    int64_t m = p->g->n * sp.ah * sp.aw, m0 = mt * BF_CG_MC;
    if (m0 >= m) return;
    int64_t mc = BF_MIN((int64_t)BF_CG_MC, m - m0), nmb = bf_cc_ceil_div(mc, MR);
    int64_t ksub = sp.nkh * sp.nkw * p->kin;
    const T *bp = p->bpack + bf_cg_bofs(p, grp, s);
    T *apack = p->ascratch + (int64_t)slot * BF_CG_MC * p->kc; /* [mb][kc][MR] */
    int64_t src_cofs = grp * p->kin, dst_cofs = grp * p->nout;

    /* per tap of the sub: source row/column offsets, for the whole-tap paths */
    int64_t ntaps = sp.nkh * sp.nkw, hoff[BF_CG_TAPS_MAX], woff[BF_CG_TAPS_MAX];
    bool whole_taps = p->kin > 0 && p->kin % AKB == 0 && p->kc % p->kin == 0 &&
                      ntaps <= BF_CG_TAPS_MAX;
#ifdef UKRI
    bool indirect = p->kin >= AKB && ntaps <= BF_CG_TAPS_MAX;
#else
    bool indirect = false;
#endif
    for (int64_t t = 0; (whole_taps || indirect) && t < ntaps; t++) {
        int64_t kh = sp.kh0 + t / sp.nkw * sp.khs, kw = sp.kw0 + t % sp.nkw * sp.kws;
        hoff[t] = bf_cc_exact_div(kh * sp.ch + sp.eh, sp.qh);
        woff[t] = bf_cc_exact_div(kw * sp.cw + sp.ew, sp.qw);
    }

    /* Row geometry of the chunk: output pointer and source base position per row. The in-place
       path orders the batch's positions border class by border class (see bf_cg_order), so
       that MR-row blocks share their padding and skip whole taps. */
    bf_cg_order ord;
    bf_cg_order_make(&ord, p->g->n, sp.ah, sp.aw, indirect ? ntaps : 0, hoff, woff, sp.mh,
                     sp.mw, p->sh, p->sw);
    T *crow[BF_CG_MC];
    int64_t rn[BF_CG_MC], ra[BF_CG_MC], rb[BF_CG_MC];
    for (int64_t r = 0; r < nmb * MR; r++) {
        int64_t n, a, b;
        bf_cg_order_pixel(&ord, m0 + BF_MIN(r, mc - 1), &n, &a, &b);
        rn[r] = n, ra[r] = a, rb[r] = b;
        crow[r] = p->dst + ((n * p->dh + sp.oh0 + sp.osh * a) * p->dw + sp.ow0 + sp.osw * b) *
                               p->dc + dst_cofs;
    }
#ifdef UKRI
    /* No packing: the microkernel reads each (row, tap) run of channels in place through a
       table of MR row pointers per tap (a row of zeros for padding and for rows past mc).
       A reduction block is tpb whole taps when kin <= KCI, else one even chunk of one tap.
       Rows must be prefetched, or the first column panel waits on memory in the FMA loop:
       building the table prefetches the first MR rows, and during the first panel each
       microkernel call prefetches the next block's rows between its multiply-adds.
       (Interleaved A/B, 2 threads: without prefetching, this path took 1.08-1.13x the time of
       the previous in-place 1x1 kernel and 0.95-0.96x that of the packed GEMM on 3x3/s2/256;
       with every row prefetched while building the table, 0.91x and 0.91x; spreading the
       prefetches over the calls then gave the 1x1 another 0.93x, 0.88x on 1 thread.) */
    if (indirect) {
        _Static_assert(BF_CG_MC * (BF_CG_KCI / AKB) * sizeof(void *) + BF_CG_KCI * sizeof(T) <=
                           BF_CG_MC * BF_CG_KC * sizeof(T),
                       "the row table and the zero row fit in the A scratch");
        int64_t nch = bf_cc_ceil_div(p->kin, BF_CG_KCI), run = bf_cc_ceil_div(p->kin, nch);
        int64_t tpb = nch == 1 ? BF_CG_KCI / p->kin : 1;
        const T **tab = (const T **)(void *)apack; /* [mb][tap of the block][MR] */
        T *zero = (T *)(void *)(tab + nmb * tpb * MR);
        memset(zero, 0, (size_t)run * sizeof(T));
        int64_t t0 = 0, c0 = 0; /* a sub that no tap reaches runs once with kc = 0 (zeros) */
        do {
            int64_t nt = BF_MIN(tpb, ntaps - t0), len = BF_MIN(run, p->kin - c0);
            int64_t kc0 = t0 * p->kin + c0, kc = nch == 1 ? nt * p->kin : nt * len;
            for (int64_t r = 0; r < nmb * MR; r++) {
                const T **tr = tab + r / MR * tpb * MR + r % MR;
                const T *base = p->src + rn[r] * p->sh * p->sw * p->sc + src_cofs + c0;
                for (int64_t t = 0; t < nt; t++) {
                    int64_t hh = ra[r] * sp.mh + hoff[t0 + t];
                    int64_t ww = rb[r] * sp.mw + woff[t0 + t];
                    bool in = r < mc && hh >= 0 && hh < p->sh && ww >= 0 && ww < p->sw;
                    tr[t * MR] = in ? base + (hh * p->sw + ww) * p->sc : zero;
                    for (int64_t q = 0; in && r < MR && q < len; q += 64 / (int64_t)sizeof(T))
                        __builtin_prefetch(tr[t * MR] + q, 0, 2); /* read, into L2 */
                }
            }
            /* a tap that only reads padding in all MR rows of a block is skipped */
            for (int64_t mb = 0; mb < nmb; mb++)
                for (int64_t t = 0; t < nt; t++) {
                    const T **tr = tab + (mb * tpb + t) * MR;
                    int64_t z = 0;
                    while (z < MR && tr[z] == zero) z++;
                    if (z == MR) tr[0] = NULL;
                }
            for (int64_t jp = 0; jp < p->npad / NR; jp++) {
                const T *bpp = bp + jp * ksub * NR + kc0 * NR;
                int nr = (int)BF_MIN((int64_t)NR, p->nout - jp * NR);
                for (int64_t mb = 0; mb < nmb; mb++) {
                    int mr = (int)BF_MIN((int64_t)MR, mc - mb * MR);
                    const T *const *next = jp == 0 && mb + 1 < nmb ? tab + (mb + 1) * tpb * MR
                                                                   : NULL;
                    UKRI(kc, len, tab + mb * tpb * MR, next, bpp, crow + mb * MR, jp * NR, mr,
                         nr, kc0 > 0 ? 1 : p->stream && kc == ksub ? 2 : 0);
                }
            }
            c0 += len;
            if (c0 == p->kin) c0 = 0, t0 += nt;
        } while (t0 < ntaps);
#ifdef BF_VSTREAM_FENCE
        if (p->stream) BF_VSTREAM_FENCE(); /* drain the streaming stores before the join */
#endif
        return;
    }
#endif
    int64_t kc0 = 0;
    do {
        int64_t kc = BF_MIN(p->kc, ksub - kc0), kcp = bf_cc_round_up(kc, AKB);
        /* pack A: rows of im2col for k in [kc0, kc0 + kc), as [mb][k / AKB][MR][AKB] */
        if (whole_taps && kc > 0) {
            /* fast path: the block is whole taps of kin (a multiple of AKB) channels, so each
               (row, tap) is kin / AKB full-vector copies */
            int64_t t0 = kc0 / p->kin, t1 = (kc0 + kc) / p->kin, nv = p->kin / AKB;
            for (int64_t mb = 0; mb < nmb; mb++) {
                T *ap = apack + mb * kcp * MR;
                for (int64_t i = 0; i < MR; i++) {
                    int64_t r = mb * MR + i;
                    const T *base = r < mc ? p->src + rn[r] * p->sh * p->sw * p->sc + src_cofs
                                           : NULL;
                    int64_t h0 = ra[r] * sp.mh, w0 = rb[r] * sp.mw;
                    for (int64_t t = t0; t < t1; t++) {
                        int64_t hh = h0 + hoff[t], ww = w0 + woff[t];
                        T *restrict o = ap + (t - t0) * nv * MR * AKB + i * AKB;
                        if (base && hh >= 0 && hh < p->sh && ww >= 0 && ww < p->sw) {
                            const T *restrict sv = base + (hh * p->sw + ww) * p->sc;
                            for (int64_t v = 0; v < nv; v++)
                                memcpy(o + v * MR * AKB, sv + v * AKB, AKB * sizeof(T));
                        } else {
                            for (int64_t v = 0; v < nv; v++)
                                memset(o + v * MR * AKB, 0, AKB * sizeof(T));
                        }
                    }
                }
            }
        }
        for (int64_t mb = 0; mb < nmb && kc > 0 && !whole_taps; mb++) {
            T *ap = apack + mb * kcp * MR;
            for (int64_t i = 0; i < MR; i++) {
                int64_t r = mb * MR + i;
                const T *base = r < mc ? p->src + rn[r] * p->sh * p->sw * p->sc + src_cofs
                                       : NULL;
                int64_t k = kc0, t = kc0 / p->kin, c = kc0 % p->kin;
                int64_t ikh = t / sp.nkw, ikw = t % sp.nkw;
                while (k < kc0 + kc) {
                    int64_t kh = sp.kh0 + ikh * sp.khs, kw = sp.kw0 + ikw * sp.kws;
                    int64_t hh = ra[r] * sp.mh + bf_cc_exact_div(kh * sp.ch + sp.eh, sp.qh);
                    int64_t ww = rb[r] * sp.mw + bf_cc_exact_div(kw * sp.cw + sp.ew, sp.qw);
                    bool valid = base && hh >= 0 && hh < p->sh && ww >= 0 && ww < p->sw;
                    int64_t len = BF_MIN(p->kin - c, kc0 + kc - k);
                    const T *sv = valid ? base + (hh * p->sw + ww) * p->sc + c : NULL;
                    int64_t adv = 1; /* taps this run covers */
                    /* FWD with unit dilation and all channels: the next kw taps continue the
                       run in memory (small-C layers such as a 7x7 stem) */
                    if (valid && p->op == BF_CONV_FWD && sp.cw == 1 && p->kin == p->sc &&
                        c + len == p->kin) {
                        int64_t lim = BF_MIN(sp.nkw - ikw - 1, p->sw - 1 - ww);
                        int64_t room = kc0 + kc - k - len;
                        if (lim > 0 && lim * p->kin <= room) len += lim * p->kin, adv += lim;
                        else if (lim > 0 && room > 0) len += room; /* ends the block */
                    }
                    bf_cg_copy_run(ap, i, k - kc0, sv, len);
                    k += len;
                    c = 0;
                    ikw += adv;
                    if (ikw == sp.nkw) ikw = 0, ikh++;
                }
            }
        }
        for (int64_t jp = 0; jp < p->npad / NR; jp++) {
            const T *bpp = bp + jp * ksub * NR + kc0 * NR;
            int nr = (int)BF_MIN((int64_t)NR, p->nout - jp * NR);
            for (int64_t mb = 0; mb < nmb; mb++) {
                int mr = (int)BF_MIN((int64_t)MR, mc - mb * MR);
                UKRB(kc, apack + mb * kcp * MR, bpp, crow + mb * MR, jp * NR, mr, nr, kc0 > 0);
            }
        }
        kc0 += kc;
    } while (kc0 < ksub);
}

static size_t bf_cg_rows_ws(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    int64_t kin = op == BF_CONV_FWD ? g->k_in_c : g->out_c / g->groups;
    int64_t nout = op == BF_CONV_FWD ? g->out_c / g->groups : g->k_in_c;
    size_t b = bf_cc_mad((size_t)(g->groups * g->k_h * g->k_w), (size_t)kin,
                         0); /* taps x kin per group */
    b = bf_cc_mad(b, (size_t)bf_cc_round_up(BF_MAX(nout, 1), NR), 0);
    size_t a = bf_cc_mad((size_t)BF_CG_MC * BF_CG_KC, (size_t)n_threads, 0);
    size_t tot = bf_cc_mad(b + 16, 1, a);
    return bf_cc_mad(tot, sizeof(T), 64);
}

static void bf_cg_rows_run(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *w,
                                T *out, const bf_exec *ex) {
    bf_cg_plan p = {.op = op, .g = g, .w = w, .dst = out, .ex = ex, .kc = BF_CG_KC};
    p.src = a;
    if (op == BF_CONV_FWD) {
        p.sh = g->in_h, p.sw = g->in_w, p.sc = g->in_c;
        p.dh = g->out_h, p.dw = g->out_w, p.dc = g->out_c;
        p.kin = g->k_in_c, p.nout = g->out_c / g->groups;
    } else {
        p.sh = g->out_h, p.sw = g->out_w, p.sc = g->out_c;
        p.dh = g->in_h, p.dw = g->in_w, p.dc = g->in_c;
        p.kin = g->out_c / g->groups, p.nout = g->k_in_c;
    }
    p.npad = bf_cc_round_up(BF_MAX(p.nout, 1), NR);
    p.nsubs = bf_conv_n_subs(op, g);
    int64_t msub = 0;
    for (int64_t s = 0; s < p.nsubs; s++) {
        bf_conv_sub sp;
        bf_conv_sub_make(op, g, s, &sp);
        msub = BF_MAX(msub, g->n * sp.ah * sp.aw);
    }
    p.ntasks_sub_max = bf_cc_ceil_div(msub, BF_CG_MC);
    p.bpack = ex->workspace;
    p.ascratch = p.bpack + bf_cc_round_up(g->groups * g->k_h * g->k_w * p.kin * p.npad, 16);
    if (p.nout == 0 || msub == 0) return;
#ifdef UKRI
    {
        double bytes = (double)g->n * (double)p.dh * (double)p.dw * (double)p.dc * sizeof(T);
        p.stream = bytes >= BF_CG_STREAM_BYTES;
    }
#endif
    bf_parallel_for(ex, g->groups * p.nsubs * (p.npad / NR), bf_cg_pack_b_task, &p);
    bf_parallel_for(ex, g->groups * p.nsubs * p.ntasks_sub_max, bf_cg_rows_task, &p);
}
