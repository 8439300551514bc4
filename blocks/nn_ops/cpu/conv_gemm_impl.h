/*
 * conv_gemm_impl.h - the CPU convolution kernels, written once and instantiated per ISA and
 * element type. Include it after defining:
 *   T        element type (float or double)
 *   MR, NR   register block of the microkernel: MR output rows x NR output columns
 *   UKR      static microkernel, A as [k][MR] (see below)
 *   UKRB     the same microkernel with A as [k / AKB][MR][AKB]
 *   AKB      the A block width of UKRB (one vector of T)
 *   BF_VEC_BYTES  vector width of the depthwise loops
 *   FN(x)    name mangling, e.g. x##_avx512_f32
 * The file that includes it is compiled with that ISA's flags (CMake: *_avx512.c, *_avx2.c),
 * so the packing and depthwise loops below are auto-vectorised for the same ISA.
 *
 * Dense convolutions (any groups except depthwise) are packed GEMMs (Goto/BLIS blocking):
 *
 *   FWD and BWD_INPUT: implicit GEMM over "sub-problems" (see bf_conv_sub). Rows are output
 *   pixels, columns output channels of one group, the reduction runs over (tap, source
 *   channel). B (the filter, transposed per tap for BWD_INPUT) is packed once per call into
 *   workspace as [group][sub][panel of NR columns][k][NR] (one task per panel). Work is split
 *   into tasks of MC rows; a task packs its rows of im2col, KC reduction steps at a time, into
 *   per-thread scratch as [MR-row block][k / AKB][MR][AKB] (zeros for padding; AKB = one
 *   vector, so a run of channels is copied with full-vector moves and the microkernel still
 *   broadcasts from constant offsets), then runs the microkernel over every column panel, so
 *   a packed A block stays in L2 while B's KC x NR panels stream through L1. When the channels
 *   are whole vectors the packing walks a per-task table of tap offsets (no divisions); for
 *   small C (a 3-channel stem) consecutive kw taps are merged into one contiguous run.
 *   BWD_INPUT with stride s splits dx into s_h*s_w phases; each phase only sees the taps that
 *   reach it, so no multiply is spent on the zeros a dilated-dy formulation would insert.
 *
 *   BWD_INPUT with few input channels (Cg < NR/2): dcol = dy x W^T has taps*Cg columns, which
 *   fills the vector lanes where dx's Cg columns would not; it is computed MC dy pixels at a
 *   time and scattered (col2im) into dx, one task per image so no two tasks touch one pixel.
 *
 *   BWD_FILTER: dW[(tap, ci), co] = sum_p im2col(x)[p, (tap, ci)] * dy[p, co], a GEMM whose
 *   reduction runs over all N*OH*OW pixels. Tasks are chunks of PC pixels (sized so the packed
 *   chunk stays in L2); a task packs its dy chunk as [panel][p][NR] and, for each MR rows of
 *   dW, the matching x values as [p][MR] (runs of consecutive channels of one tap are
 *   contiguous in NHWC, so this is a copy per pixel and run), then accumulates into the
 *   thread's partial dW (slot 0 writes `out` itself, the other slots use workspace), and a
 *   final pass sums the partials.
 *
 * Direct paths taken before the GEMMs (no packing of the activations; see each section):
 *   bf_sd_*: FWD with <= 4 input channels (a 3-channel stem) or a stride-1 spatial filter over
 *   <= SD_C_MAX channels, and stride-1 BWD_INPUT as a FWD of dy with the flipped, transposed
 *   filter: SD_RB output pixels x SD_NV channel vectors in registers, a broadcast of x per tap.
 *   bf_sf_*: BWD_FILTER with <= 4 input channels or >= 48-pixel rows: SF_RB dW rows x SF_NV
 *   vectors in registers, summed over a row's pixels into the thread's partial dW.
 *
 * Depthwise (groups == in_c, k_in_c == 1, multiplier M = out_c / in_c) is memory bound and
 * is done with channel-vector loops over NHWC rows (GCC vector extensions of BF_VEC_BYTES):
 * FWD and BWD_INPUT gather every tap of an output (input) pixel into a register, four pixels
 * at a time in the interior, in tasks of consecutive rows; BWD_FILTER sums each tap over a
 * row in four registers into a per-thread partial dW. With M > 1 each input row is first
 * expanded to out_c channels (x[.., c] repeated M times) in scratch so the inner loop is the
 * same unit-stride multiply-add over out_c channels.
 *
 * Microkernel contract: UKR(kc, a, b, crow, coff, mr, nr, acc) computes the MR x NR block
 * sum_k a[k*MR + i] * b[k*NR + j] and, for i < mr and j < nr, stores it to crow[i][coff + j]
 * (acc == 0) or adds it there (acc != 0). kc may be 0 (stores zeros). UKRB is the same with
 * A in AKB-wide k blocks: a[(k / AKB) * MR * AKB + i * AKB + k % AKB].
 * Optional UKRI(kc, run, rows, next, b, crow, coff, mr, nr, acc): the same with A read in
 * place: the reduction is kc / run runs of run values, row i of run t at rows[t * MR + i]; a
 * run whose rows[t * MR] is NULL is all zeros and skipped. next (or NULL) is the table of the
 * block the caller runs next, whose runs the microkernel prefetches as it goes. With it,
 * FWD and BWD_INPUT with at least AKB reduction channels per tap skip packing A: each
 * (row, tap) run is an input pixel's channels, addressed through a table of row pointers.
 * Optional ISA hooks: BF_COPY_SHORT(dst, src, n) copies n values (zeros when src is NULL);
 * BF_VFMA(a, b, c) fused a * b + c and BF_VSPLAT(s) broadcast on the vectors of the direct and
 * depthwise loops (ISO C mode does not contract a * b + c by itself).
 */

#define BF_CG_MC (MR * 8)               /* rows per FWD/BWD_INPUT task */
#define BF_CF_PC_MAX 1024               /* most pixels per BWD_FILTER task */
#define BF_CG_TAPS_MAX 256              /* taps of the whole-tap packing fast path */
#define BF_CG_KC ((int64_t)(32768 / (NR * (int)sizeof(T)))) /* a KC x NR panel of B is 32 KiB */
#define BF_CG_KCI (2 * BF_CG_KC) /* reduction block of the in-place (UKRI) path */

/* ---- dense FWD / BWD_INPUT ------------------------------------------------------------- */

/* Per-op view of the operands: src is the activation read (x or dy), dst the one written. */
typedef struct FN(bf_cg_plan) {
    bf_conv_op op;
    const bf_conv_geom *g;
    const T *src;   /* [N, SH, SW, SC] */
    const T *w;     /* [KH, KW, Cg, O] */
    T *dst;         /* [N, DH, DW, DC] */
    T *bpack;       /* packed B for all groups and subs */
    T *ascratch;    /* per-thread [MC x KC] */
    int64_t sh, sw, sc, dh, dw, dc;
    int64_t kin, nout, npad, nsubs, ntasks_sub_max, kc;
    const bf_exec *ex;
} FN(bf_cg_plan);

/* Offset (elements) of sub-problem s of group grp in bpack. */
static int64_t FN(bf_cg_bofs)(const FN(bf_cg_plan) *p, int64_t grp, int64_t s) {
    int64_t taps_before = 0;
    for (int64_t t = 0; t < s; t++) {
        bf_conv_sub sp;
        bf_conv_sub_make(p->op, p->g, t, &sp);
        taps_before += sp.nkh * sp.nkw;
    }
    return (grp * p->g->k_h * p->g->k_w + taps_before) * p->kin * p->npad;
}

/* Pack B of (group, sub) as [panel][k][NR]; k = tap*kin + c. One task per (grp, sub, panel). */
static void FN(bf_cg_pack_b_task)(void *arg, int64_t i, int slot) {
    const FN(bf_cg_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t npan = p->npad / NR, jp0 = i % npan;
    int64_t grp = i / npan / p->nsubs, s = i / npan % p->nsubs;
    bf_conv_sub sp;
    bf_conv_sub_make(p->op, g, s, &sp);
    int64_t ksub = sp.nkh * sp.nkw * p->kin, cg = g->k_in_c, og = g->out_c / g->groups;
    T *bp = p->bpack + FN(bf_cg_bofs)(p, grp, s);
    for (int64_t jp = jp0; jp == jp0; jp++) {
        T *panel = bp + jp * ksub * NR; /* [ksub][NR] */
        for (int64_t ih = 0; ih < sp.nkh; ih++)
            for (int64_t iw = 0; iw < sp.nkw; iw++) {
                int64_t kh = sp.kh0 + ih * sp.khs, kw = sp.kw0 + iw * sp.kws;
                const T *wt = p->w + (kh * g->k_w + kw) * cg * g->out_c; /* [Cg][O] */
                T *dstp = panel + (ih * sp.nkw + iw) * p->kin * NR;
                for (int64_t c = 0; c < p->kin; c++)
                    for (int64_t j = 0; j < NR; j++) {
                        int64_t n = jp * NR + j;
                        T v = 0;
                        if (n < p->nout)
                            v = p->op == BF_CONV_FWD ? wt[c * g->out_c + grp * og + n]
                                                     : wt[n * g->out_c + grp * og + c];
                        dstp[c * NR + j] = v;
                    }
            }
    }
}

/* Copy len values from sv (zeros when sv is NULL) to packed-A row i, reduction index kk on:
   element kk of row i lives at ap[(kk / AKB) * MR * AKB + i * AKB + kk % AKB]. */
static inline void FN(bf_cg_copy_run)(T *restrict ap, int64_t i, int64_t kk,
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
static void FN(bf_cg_rows_task)(void *arg, int64_t task, int slot) {
    const FN(bf_cg_plan) *p = arg;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t per = p->ntasks_sub_max;
    int64_t grp = task / (p->nsubs * per), s = task / per % p->nsubs, mt = task % per;
    bf_conv_sub sp;
    bf_conv_sub_make(p->op, p->g, s, &sp);
    int64_t m = p->g->n * sp.ah * sp.aw, m0 = mt * BF_CG_MC;
    if (m0 >= m) return;
    int64_t mc = BF_MIN((int64_t)BF_CG_MC, m - m0), nmb = bf_cc_ceil_div(mc, MR);
    int64_t ksub = sp.nkh * sp.nkw * p->kin;
    const T *bp = p->bpack + FN(bf_cg_bofs)(p, grp, s);
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
                         nr, kc0 > 0);
                }
            }
            c0 += len;
            if (c0 == p->kin) c0 = 0, t0 += nt;
        } while (t0 < ntaps);
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
                    FN(bf_cg_copy_run)(ap, i, k - kc0, sv, len);
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

static size_t FN(bf_cg_rows_ws)(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    int64_t kin = op == BF_CONV_FWD ? g->k_in_c : g->out_c / g->groups;
    int64_t nout = op == BF_CONV_FWD ? g->out_c / g->groups : g->k_in_c;
    size_t b = bf_cc_mad((size_t)(g->groups * g->k_h * g->k_w), (size_t)kin,
                         0); /* taps x kin per group */
    b = bf_cc_mad(b, (size_t)bf_cc_round_up(BF_MAX(nout, 1), NR), 0);
    size_t a = bf_cc_mad((size_t)BF_CG_MC * BF_CG_KC, (size_t)n_threads, 0);
    size_t tot = bf_cc_mad(b + 16, 1, a);
    return bf_cc_mad(tot, sizeof(T), 64);
}

static void FN(bf_cg_rows_run)(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *w,
                                T *out, const bf_exec *ex) {
    FN(bf_cg_plan) p = {.op = op, .g = g, .w = w, .dst = out, .ex = ex, .kc = BF_CG_KC};
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
    bf_parallel_for(ex, g->groups * p.nsubs * (p.npad / NR), FN(bf_cg_pack_b_task), &p);
    bf_parallel_for(ex, g->groups * p.nsubs * p.ntasks_sub_max, FN(bf_cg_rows_task), &p);
}

/* ---- dense BWD_INPUT with few input channels: GEMM into columns, then col2im --------------
 * dcol[p, (tap, ci)] = sum_co dy[p, co] * w[tap, ci, co] for MC dy pixels at a time (a GEMM
 * with taps*Cg columns instead of Cg, so a 3-channel dx still fills the vector lanes), then
 * dcol is scattered into dx. One task per image, so no two tasks add into the same dx pixel.
 */
typedef struct FN(bf_ci_plan) {
    const bf_conv_geom *g;
    const T *dy;    /* [N, OH, OW, O] */
    const T *w;     /* [KH, KW, Cg, O] */
    T *dx;          /* [N, H, W, C] */
    T *bpack;       /* [group][panel of NR (tap, ci) columns][og][NR] */
    T *scratch;     /* per thread: A [MC x KC] then dcol [MC][ncol_pad] */
    int64_t og, ncol, npad, scratch_per, kc;
    const bf_exec *ex;
} FN(bf_ci_plan);

static bool FN(bf_ci_wanted)(const bf_conv_geom *g, int n_threads) {
    return g->k_in_c < NR / 2 && g->k_h * g->k_w * g->k_in_c >= NR && g->n >= n_threads &&
           g->groups == 1;
}

static void FN(bf_ci_pack_b_task)(void *arg, int64_t jp, int slot) {
    const FN(bf_ci_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    T *panel = p->bpack + jp * p->og * NR; /* [og][NR] */
    for (int64_t co = 0; co < p->og; co++)
        for (int64_t j = 0; j < NR; j++) {
            int64_t col = jp * NR + j; /* (tap, ci) */
            panel[co * NR + j] = col < p->ncol ? p->w[col * g->out_c + co] : 0;
        }
}

static void FN(bf_ci_task)(void *arg, int64_t n, int slot) {
    const FN(bf_ci_plan) *p = arg;
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
        int64_t kc0 = 0;
        do {
            int64_t kc = BF_MIN(p->kc, p->og - kc0), kcp = bf_cc_round_up(kc, AKB);
            for (int64_t mb = 0; mb < nmb && kc > 0; mb++)
                for (int64_t i = 0; i < MR; i++) {
                    int64_t r = mb * MR + i;
                    FN(bf_cg_copy_run)(apack + mb * kcp * MR, i, 0,
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
        /* col2im: add each row's taps into dx */
        for (int64_t r = 0; r < mc; r++) {
            int64_t oh = (m0 + r) / g->out_w, ow = (m0 + r) % g->out_w;
            const T *dc = dcol + r * p->npad;
            for (int64_t kh = 0; kh < g->k_h; kh++) {
                int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                if (ih < 0 || ih >= g->in_h) continue;
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

static size_t FN(bf_ci_ws)(const bf_conv_geom *g, int n_threads) {
    int64_t og = g->out_c, npad = bf_cc_round_up(g->k_h * g->k_w * g->k_in_c, NR);
    size_t b = bf_cc_mad((size_t)og, (size_t)npad, 16);
    size_t per = bf_cc_mad((size_t)BF_CG_MC, (size_t)(BF_CG_KC + npad), 16);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, b), sizeof(T), 64);
}

static void FN(bf_ci_run)(const bf_conv_geom *g, const T *dy, const T *w, T *dx,
                          const bf_exec *ex) {
    FN(bf_ci_plan) p = {.g = g, .dy = dy, .w = w, .dx = dx, .ex = ex, .kc = BF_CG_KC,
                        .og = g->out_c, .ncol = g->k_h * g->k_w * g->k_in_c};
    p.npad = bf_cc_round_up(p.ncol, NR);
    p.bpack = ex->workspace;
    p.scratch = p.bpack + bf_cc_round_up(p.og * p.npad, 16);
    p.scratch_per = bf_cc_round_up(BF_CG_MC * (BF_CG_KC + p.npad), 16);
    bf_parallel_for(ex, p.npad / NR, FN(bf_ci_pack_b_task), &p);
    bf_parallel_for(ex, g->n, FN(bf_ci_task), &p);
}

/* ---- dense BWD_FILTER ------------------------------------------------------------------- */

typedef struct FN(bf_cf_plan) {
    const bf_conv_geom *g;
    const T *x;     /* [N, H, W, C] */
    const T *dy;    /* [N, OH, OW, O] */
    T *out;         /* [KH, KW, Cg, O]: partial of slot 0 */
    T *partials;    /* (n_threads - 1) x [KH*KW*Cg*O] */
    T *scratch;     /* per thread: B [npad/NR][PC][NR] then A [PC][MR] */
    int64_t pc, npad, og, ktot, nel, scratch_per;
    int n_threads;
    const bf_exec *ex;
} FN(bf_cf_plan);

static int64_t FN(bf_cf_pc)(const bf_conv_geom *g) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c / g->groups, 1), NR);
    /* the dy chunk (pc x npad) and the x rows it reads (pc x C) both stay in L2 */
    int64_t pc = (int64_t)(262144 / sizeof(T)) / npad;
    pc = BF_MIN(pc, (int64_t)(262144 / sizeof(T)) / BF_MAX(g->in_c, 1));
    return BF_MAX(BF_MIN(pc, BF_CF_PC_MAX), 32);
}

static void FN(bf_cf_task)(void *arg, int64_t task, int slot) {
    const FN(bf_cf_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t P = g->n * g->out_h * g->out_w, p0 = task * p->pc;
    int64_t pc = BF_MIN(p->pc, P - p0);
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    T *bpk = p->scratch + (int64_t)slot * p->scratch_per; /* [npad/NR][pc][NR] */
    T *apk = bpk + p->npad * p->pc;                        /* [pc][MR] */
    int64_t cg = g->k_in_c;
    /* per pixel of the chunk: top-left input position and its index (may lie outside x) */
    int64_t ph[BF_CF_PC_MAX], pw[BF_CF_PC_MAX], pb[BF_CF_PC_MAX];
    for (int64_t q = 0; q < pc; q++) {
        int64_t pix = p0 + q;
        int64_t n = pix / (g->out_h * g->out_w), oh = pix / g->out_w % g->out_h;
        int64_t ow = pix % g->out_w;
        ph[q] = oh * g->stride_h - g->pad_top, pw[q] = ow * g->stride_w - g->pad_left;
        pb[q] = ((n * g->in_h + ph[q]) * g->in_w + pw[q]) * g->in_c;
    }
    for (int64_t grp = 0; grp < g->groups; grp++) {
        for (int64_t q = 0; q < pc; q++) {
            const T *d = p->dy + (p0 + q) * g->out_c + grp * p->og;
            for (int64_t jp = 0; jp < p->npad / NR; jp++) {
                T *restrict o = bpk + (jp * p->pc + q) * NR;
                if ((jp + 1) * NR <= p->og)
                    memcpy(o, d + jp * NR, NR * sizeof(T));
                else
                    for (int64_t j = 0; j < NR; j++)
                        o[j] = jp * NR + j < p->og ? d[jp * NR + j] : 0;
            }
        }
        for (int64_t mb = 0; mb < bf_cc_ceil_div(p->ktot, MR); mb++) {
            int64_t k0 = mb * MR, mr = BF_MIN((int64_t)MR, p->ktot - k0);
            /* row i of this block is tap (kh_i, kw_i), channel c_i: its x value for pixel q
               sits at index pb[q] + off[i] when ph[q] + dh[i], pw[q] + dw[i] are in range */
            int64_t dh[MR], dw[MR], off[MR];
            for (int64_t i = 0; i < MR; i++) {
                int64_t k = BF_MIN(k0 + i, p->ktot - 1), t = k / cg, c = k % cg;
                dh[i] = t / g->k_w * g->dil_h, dw[i] = t % g->k_w * g->dil_w;
                off[i] = (dh[i] * g->in_w + dw[i]) * g->in_c + grp * cg + c;
            }
            if (k0 % cg + mr <= cg) {
                /* one tap: MR consecutive channels, a contiguous copy per pixel */
                for (int64_t q = 0; q < pc; q++) {
                    T *restrict o = apk + q * MR;
                    int64_t ih = ph[q] + dh[0], iw = pw[q] + dw[0];
                    if (ih >= 0 && ih < g->in_h && iw >= 0 && iw < g->in_w) {
                        const T *restrict xv = p->x + pb[q] + off[0];
                        if (mr == MR)
                            memcpy(o, xv, MR * sizeof(T)); /* fixed size: inlined moves */
                        else
                            for (int64_t i = 0; i < MR; i++) o[i] = i < mr ? xv[i] : 0;
                    } else {
                        for (int i = 0; i < MR; i++) o[i] = 0;
                    }
                }
            } else {
                /* rows span several taps: split them into runs that are contiguous in x
                   (one tap's consecutive channels, extended over the next kw taps when all
                   channels of x belong to the run, e.g. a 3-channel stem) */
                int64_t s0[MR], sl[MR], ns = 0;
                for (int64_t i = 0; i < mr; i++) {
                    if (i > 0 && dh[i] == dh[i - 1] && off[i] == off[i - 1] + 1) sl[ns - 1]++;
                    else s0[ns] = i, sl[ns] = 1, ns++;
                }
                for (int64_t q = 0; q < pc; q++) {
                    T *restrict o = apk + q * MR;
                    for (int64_t sg = 0; sg < ns; sg++) {
                        int64_t a0 = s0[sg], a1 = a0 + sl[sg] - 1, ih = ph[q] + dh[a0];
                        bool row_in = ih >= 0 && ih < g->in_h;
                        if (row_in && pw[q] + dw[a0] >= 0 && pw[q] + dw[a1] < g->in_w) {
#ifdef BF_COPY_SHORT
                            BF_COPY_SHORT(o + a0, p->x + pb[q] + off[a0], sl[sg]);
#else
                            for (int64_t i = 0; i < sl[sg]; i++)
                                o[a0 + i] = p->x[pb[q] + off[a0] + i];
#endif
                        } else {
                            for (int64_t i = a0; i <= a1; i++) {
                                int64_t iw = pw[q] + dw[i];
                                o[i] = row_in && iw >= 0 && iw < g->in_w ? p->x[pb[q] + off[i]] : 0;
                            }
                        }
                    }
                    for (int64_t i = mr; i < MR; i++) o[i] = 0;
                }
            }
            T *crow[MR];
            for (int64_t i = 0; i < MR; i++)
                crow[i] = part + BF_MIN(k0 + i, p->ktot - 1) * g->out_c + grp * p->og;
            for (int64_t jp = 0; jp < p->npad / NR; jp++) {
                int nr = (int)BF_MIN((int64_t)NR, p->og - jp * NR);
                UKR(pc, apk, bpk + jp * p->pc * NR, crow, jp * NR, (int)mr, nr, 1);
            }
        }
    }
}

typedef struct FN(bf_sum_arg) {
    T *out;
    const T *partials;
    int64_t nel, nparts, chunk;
} FN(bf_sum_arg);

static void FN(bf_sum_task)(void *arg, int64_t i, int slot) {
    const FN(bf_sum_arg) *s = arg;
    int64_t e0 = i * s->chunk, e1 = BF_MIN(s->nel, e0 + s->chunk);
    for (int64_t q = 0; q < s->nparts; q++) {
        const T *restrict src = s->partials + q * s->nel;
        T *restrict dst = s->out;
        for (int64_t e = e0; e < e1; e++) dst[e] += src[e];
    }
}

static void FN(bf_zero_task)(void *arg, int64_t i, int slot) {
    const FN(bf_sum_arg) *s = arg;
    int64_t e0 = i * s->chunk, e1 = BF_MIN(s->nel, e0 + s->chunk);
    for (int64_t q = -1; q < s->nparts; q++) {
        T *dst = q < 0 ? s->out : (T *)s->partials + q * s->nel;
        for (int64_t e = e0; e < e1; e++) dst[e] = 0;
    }
}

/* Zero out and the partials, run `fn` over ntasks, sum the partials into out. */
static void FN(bf_partials_run)(T *out, T *partials, int64_t nel, int n_threads,
                                int64_t ntasks, bf_task_fn fn, void *arg, const bf_exec *ex) {
    FN(bf_sum_arg) s = {.out = out, .partials = partials, .nel = nel,
                        .nparts = n_threads - 1, .chunk = 16384};
    int64_t nchunks = bf_cc_ceil_div(nel, s.chunk);
    bf_parallel_for(ex, nchunks, FN(bf_zero_task), &s);
    bf_parallel_for(ex, ntasks, fn, arg);
    if (n_threads > 1) bf_parallel_for(ex, nchunks, FN(bf_sum_task), &s);
}

static size_t FN(bf_cf_ws)(const bf_conv_geom *g, int n_threads) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c / g->groups, 1), NR);
    size_t nel = bf_cc_mad((size_t)(g->k_h * g->k_w), (size_t)g->k_in_c, 0);
    nel = bf_cc_mad(nel, (size_t)g->out_c, 0);
    size_t parts = bf_cc_mad(nel, (size_t)(n_threads - 1), 0);
    size_t per = bf_cc_mad((size_t)FN(bf_cf_pc)(g), (size_t)(npad + MR), 16);
    size_t tot = bf_cc_mad(per, (size_t)n_threads, parts);
    return bf_cc_mad(bf_cc_mad(tot, 1, 16), sizeof(T), 64);
}

static void FN(bf_cf_run)(const bf_conv_geom *g, const T *x, const T *dy, T *out,
                          const bf_exec *ex) {
    FN(bf_cf_plan) p = {.g = g, .x = x, .dy = dy, .out = out, .ex = ex,
                        .n_threads = ex->n_threads};
    p.og = g->out_c / g->groups;
    p.npad = bf_cc_round_up(BF_MAX(p.og, 1), NR);
    p.pc = FN(bf_cf_pc)(g);
    p.ktot = g->k_h * g->k_w * g->k_in_c;
    p.nel = p.ktot * g->out_c;
    p.partials = ex->workspace;
    p.scratch = p.partials + bf_cc_round_up(p.nel * (p.n_threads - 1), 16);
    p.scratch_per = bf_cc_round_up(p.pc * (p.npad + MR), 16);
    int64_t P = g->n * g->out_h * g->out_w;
    FN(bf_partials_run)(out, p.partials, p.nel, p.n_threads, bf_cc_ceil_div(P, p.pc),
                        FN(bf_cf_task), &p, ex);
}

/* ---- depthwise ------------------------------------------------------------------------- */

typedef struct FN(bf_dw_plan) {
    bf_conv_op op;
    const bf_conv_geom *g;
    const T *a, *b;
    T *out;
    T *partials;    /* BWD_FILTER: (n_threads - 1) x [KH*KW*O] */
    T *scratch;     /* per thread: one row of W x O (expanded input or dx accumulator) */
    int64_t mult, rows_per_task, scratch_per, nel;
    const bf_exec *ex;
} FN(bf_dw_plan);

/* x row [W][C] -> [W][C*M] with each channel repeated M times. */
static const T *FN(bf_dw_expand)(const FN(bf_dw_plan) *p, const T *xrow, T *buf) {
    int64_t c = p->g->in_c, m = p->mult;
    if (m == 1) return xrow;
    for (int64_t iw = 0; iw < p->g->in_w; iw++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t q = 0; q < m; q++) buf[(iw * c + k) * m + q] = xrow[iw * c + k];
    return buf;
}

/* Vectors of BF_VEC_BYTES for the channel loops (GCC vector extension: one zmm with AVX-512,
   one ymm with AVX2, one xmm in the generic build). Unaligned loads and stores via memcpy. */
typedef T FN(bf_vec) __attribute__((vector_size(BF_VEC_BYTES)));
#define BF_VL ((int64_t)(BF_VEC_BYTES / sizeof(T)))
static inline FN(bf_vec) FN(bf_ldv)(const T *p) {
    FN(bf_vec) v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void FN(bf_stv)(T *p, FN(bf_vec) v) { memcpy(p, &v, sizeof v); }
static inline FN(bf_vec) FN(bf_vsplat)(T s) {
#ifdef BF_VSPLAT
    return (FN(bf_vec))BF_VSPLAT(s); /* ISA hook: one broadcast */
#else
    return (FN(bf_vec)){0} + s;
#endif
}
/* a * b + c on vectors, fused where the ISA file provides BF_VFMA (ISO C mode does not
   contract a * b + c by itself) */
#ifdef BF_VFMA
#define BF_VFMA_(a, b, c) BF_VFMA(a, b, c)
#else
#define BF_VFMA_(a, b, c) ((a) * (b) + (c))
#endif

/*
 * Interior of a depthwise row: for output positions o in [lo, hi) (all taps in range),
 * out[o][c] = sum_r sum_kw rows[r][(o*ms + off[kw]) * O + c] * w[tap(r, kw) * O + c], four
 * positions at a time so four independent accumulators hide the add latency. Returns the
 * first position it did not do (the caller finishes the rest with its bounds-checked loop).
 */
static int64_t FN(bf_dw_interior)(T *restrict out, const T *const *rows, const int64_t *khv,
                                  int64_t nk, const int64_t *off, int64_t kwn, int64_t ms,
                                  const T *w, int64_t kw_total, int64_t O, int64_t lo,
                                  int64_t hi) {
    int64_t cv = O / BF_VL * BF_VL, o = lo;
    if (cv == 0) return lo;
    for (; o + 4 <= hi; o += 4) {
        for (int64_t c = 0; c < cv; c += BF_VL) {
            FN(bf_vec) a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t kw = 0; kw < kwn; kw++) {
                    FN(bf_vec) wv = FN(bf_ldv)(w + (khv[r] * kw_total + kw) * O + c);
                    const T *base = rows[r] + (o * ms + off[kw]) * O + c;
                    a0 = BF_VFMA_(FN(bf_ldv)(base), wv, a0);
                    a1 = BF_VFMA_(FN(bf_ldv)(base + ms * O), wv, a1);
                    a2 = BF_VFMA_(FN(bf_ldv)(base + 2 * ms * O), wv, a2);
                    a3 = BF_VFMA_(FN(bf_ldv)(base + 3 * ms * O), wv, a3);
                }
            FN(bf_stv)(out + o * O + c, a0);
            FN(bf_stv)(out + (o + 1) * O + c, a1);
            FN(bf_stv)(out + (o + 2) * O + c, a2);
            FN(bf_stv)(out + (o + 3) * O + c, a3);
        }
        for (int64_t c = cv; c < O; c++)
            for (int64_t q = 0; q < 4; q++) {
                T acc = 0;
                for (int64_t r = 0; r < nk; r++)
                    for (int64_t kw = 0; kw < kwn; kw++)
                        acc += rows[r][((o + q) * ms + off[kw]) * O + c] *
                               w[(khv[r] * kw_total + kw) * O + c];
                out[(o + q) * O + c] = acc;
            }
    }
    return o;
}

#define DW_TAPS 9
/*
 * A whole output row for filters of at most DW_TAPS taps in the row set (3x3): channel vector
 * outer, so the taps' filter vectors are loaded once into registers and the positions then
 * stream past them; the interior [lo, hi) (every tap inside the row) four positions at a time,
 * the border columns one at a time with the same registers, skipping the taps that fall
 * outside the input row (in_w columns). Returns false (nothing written) when it does not apply.
 */
static bool FN(bf_dw_row_taps)(T *restrict out, const T *const *rows, const int64_t *khv,
                               int64_t nk, const int64_t *off, int64_t kwn, int64_t ms,
                               const T *w, int64_t kw_total, int64_t O, int64_t lo, int64_t hi,
                               int64_t out_w, int64_t in_w) {
    int64_t cv = O / BF_VL * BF_VL, nt = nk * kwn;
    if (cv == 0 || nt == 0 || nt > DW_TAPS) return false;
    const T *tp[DW_TAPS];
    const T *tw[DW_TAPS];
    int64_t toff[DW_TAPS];
    for (int64_t t = 0; t < DW_TAPS; t++) {
        int64_t r = BF_MIN(t, nt - 1) / kwn, kw = BF_MIN(t, nt - 1) % kwn;
        tp[t] = rows[r] + off[kw] * O;
        tw[t] = w + (khv[r] * kw_total + kw) * O;
        toff[t] = off[kw];
    }
    const int64_t step = ms * O;
#ifdef BF_VSTREAM
    /* whole aligned rows: streaming stores (no read of the output lines before writing) */
    bool nt_ok = (uintptr_t)out % BF_VEC_BYTES == 0 && O * (int64_t)sizeof(T) % BF_VEC_BYTES == 0;
#define STV(p_, v_) (nt_ok ? BF_VSTREAM((p_), (v_)) : FN(bf_stv)((p_), (v_)))
#else
#define STV(p_, v_) FN(bf_stv)((p_), (v_))
#endif
    for (int64_t c = 0; c < cv; c += BF_VL) {
        FN(bf_vec) wv[DW_TAPS];
#pragma GCC unroll 16
        for (int t = 0; t < DW_TAPS; t++)
            wv[t] = t < nt ? FN(bf_ldv)(tw[t] + c) : (FN(bf_vec)){0};
        for (int64_t o = 0; o < lo; o++) {
            FN(bf_vec) a0 = {0};
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                int64_t iw = o * ms + toff[t];
                if (iw >= 0 && iw < in_w)
                    a0 = BF_VFMA_(FN(bf_ldv)(tp[t] + o * step + c), wv[t], a0);
            }
            STV(out + o * O + c, a0);
        }
        int64_t o = lo;
        for (; o + 4 <= hi; o += 4) {
            FN(bf_vec) a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                const T *b = tp[t] + o * step + c;
                a0 = BF_VFMA_(FN(bf_ldv)(b), wv[t], a0);
                a1 = BF_VFMA_(FN(bf_ldv)(b + step), wv[t], a1);
                a2 = BF_VFMA_(FN(bf_ldv)(b + 2 * step), wv[t], a2);
                a3 = BF_VFMA_(FN(bf_ldv)(b + 3 * step), wv[t], a3);
            }
            STV(out + o * O + c, a0);
            STV(out + (o + 1) * O + c, a1);
            STV(out + (o + 2) * O + c, a2);
            STV(out + (o + 3) * O + c, a3);
        }
        for (; o < out_w; o++) {
            FN(bf_vec) a0 = {0};
            bool in = o < hi;
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                int64_t iw = o * ms + toff[t];
                if (in || (iw >= 0 && iw < in_w))
                    a0 = BF_VFMA_(FN(bf_ldv)(tp[t] + o * step + c), wv[t], a0);
            }
            STV(out + o * O + c, a0);
        }
    }
    for (int64_t c = cv; c < O; c++)
        for (int64_t o = 0; o < out_w; o++) {
            T acc = 0;
            for (int64_t t = 0; t < nt; t++) {
                int64_t iw = o * ms + toff[t];
                if (iw >= 0 && iw < in_w) acc += tp[t][o * step + c] * tw[t][c];
            }
            out[o * O + c] = acc;
        }
#undef STV
    return true;
}
#undef DW_TAPS

/* y[n, oh, :, :] for task row = n*OH + oh: per output pixel and channel vector, all taps are
   accumulated in a register and stored once. */
static void FN(bf_dw_fwd_task)(const FN(bf_dw_plan) *p, int64_t row, int slot,
                               int64_t *tags) {
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t n = row / g->out_h, oh = row % g->out_h, O = g->out_c;
    T *restrict y = p->out + row * g->out_w * O; /* [OW][O] */
    T *buf = p->scratch + (int64_t)slot * p->scratch_per;
    const T *xr[64];
    int64_t khv[64], nk = 0, key[64], nslots = BF_MIN(g->k_h, 64);
    for (int64_t kh = 0; kh < g->k_h && nk < 64; kh++) {
        int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
        if (ih < 0 || ih >= g->in_h) continue;
        xr[nk] = p->a + (n * g->in_h + ih) * g->in_w * g->in_c;
        key[nk] = n * g->in_h + ih, khv[nk] = kh, nk++;
    }
    if (p->mult > 1) {
        /* each valid row expanded into a slice of scratch; tags[s] = the row slice s holds
           (kept across the rows of one chunk, so a row is expanded once, not k_h times) */
        bool used[64] = {false};
        int64_t at[64];
        for (int64_t r = 0; r < nk; r++) {
            at[r] = -1;
            for (int64_t s = 0; s < nslots && at[r] < 0; s++)
                if (tags[s] == key[r]) at[r] = s, used[s] = true;
        }
        for (int64_t r = 0; r < nk; r++) {
            if (at[r] < 0) {
                int64_t s = 0;
                while (used[s]) s++; /* nk <= nslots, so a free slice exists */
                used[s] = true, at[r] = s, tags[s] = key[r];
                FN(bf_dw_expand)(p, xr[r], buf + s * g->in_w * O);
            }
            xr[r] = buf + at[r] * g->in_w * O;
        }
    }
    int64_t cv = O / BF_VL * BF_VL;
    /* interior: output columns whose every kw tap is inside the row */
    int64_t off[64], lo, hi, l2, h2;
    for (int64_t kw = 0; kw < g->k_w; kw++) off[kw] = kw * g->dil_w - g->pad_left;
    bf_cc_range(off[0], g->stride_w, g->in_w, g->out_w, &lo, &hi);
    bf_cc_range(off[g->k_w - 1], g->stride_w, g->in_w, g->out_w, &l2, &h2);
    lo = BF_MAX(lo, l2), hi = BF_MAX(BF_MIN(hi, h2), lo);
    if (FN(bf_dw_row_taps)(y, xr, khv, nk, off, g->k_w, g->stride_w, p->b, g->k_w, O, lo, hi,
                           g->out_w, g->in_w))
        return;
    int64_t done = FN(bf_dw_interior)(y, xr, khv, nk, off, g->k_w, g->stride_w, p->b, g->k_w,
                                      O, lo, hi);
    for (int64_t ow = 0; ow < g->out_w; ow++) {
        if (ow >= lo && ow < done) continue;
        int64_t iw0 = ow * g->stride_w - g->pad_left;
        for (int64_t c = 0; c < cv; c += BF_VL) {
            FN(bf_vec) acc = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t kw = 0; kw < g->k_w; kw++) {
                    int64_t iw = iw0 + kw * g->dil_w;
                    if (iw < 0 || iw >= g->in_w) continue;
                    acc += FN(bf_ldv)(xr[r] + iw * O + c) *
                           FN(bf_ldv)(p->b + (khv[r] * g->k_w + kw) * O + c);
                }
            FN(bf_stv)(y + ow * O + c, acc);
        }
        for (int64_t c = cv; c < O; c++) {
            T acc = 0;
            for (int64_t r = 0; r < nk; r++)
                for (int64_t kw = 0; kw < g->k_w; kw++) {
                    int64_t iw = iw0 + kw * g->dil_w;
                    if (iw < 0 || iw >= g->in_w) continue;
                    acc += xr[r][iw * O + c] * p->b[(khv[r] * g->k_w + kw) * O + c];
                }
            y[ow * O + c] = acc;
        }
    }
}

/* dx[n, ih, :, :] for task row = n*H + ih, gathering from the dy rows that reach it. With a
   multiplier the sums over out_c channels go to scratch first and are folded over q. */
static void FN(bf_dw_bwd_input_task)(void *arg, int64_t row, int slot) {
    const FN(bf_dw_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t n = row / g->in_h, ih = row % g->in_h, O = g->out_c, C = g->in_c;
    T *restrict dx = p->out + row * g->in_w * C; /* [W][C] */
    T *restrict acc_row = p->mult == 1 ? dx : p->scratch + (int64_t)slot * p->scratch_per;
    const T *dyr[64];
    int64_t khv[64], nk = 0;
    for (int64_t kh = 0; kh < g->k_h && nk < 64; kh++) {
        int64_t t = ih + g->pad_top - kh * g->dil_h;
        if (t < 0 || t % g->stride_h) continue;
        int64_t oh = t / g->stride_h;
        if (oh >= g->out_h) continue;
        dyr[nk] = p->a + (n * g->out_h + oh) * g->out_w * O, khv[nk] = kh, nk++;
    }
    int64_t cv = O / BF_VL * BF_VL;
    int64_t lo = 0, done = 0;
    if (g->stride_w == 1) {
        /* interior: dx columns every kw tap reaches, ow = iw + pad_left - kw*dil */
        int64_t off[64], hi, l2, h2;
        for (int64_t kw = 0; kw < g->k_w; kw++) off[kw] = g->pad_left - kw * g->dil_w;
        bf_cc_range(off[0], 1, g->out_w, g->in_w, &lo, &hi);
        bf_cc_range(off[g->k_w - 1], 1, g->out_w, g->in_w, &l2, &h2);
        lo = BF_MAX(lo, l2), hi = BF_MAX(BF_MIN(hi, h2), lo);
        done = FN(bf_dw_interior)(acc_row, dyr, khv, nk, off, g->k_w, 1, p->b, g->k_w, O, lo,
                                  hi);
    }
    for (int64_t iw = 0; iw < g->in_w; iw++) {
        if (iw >= lo && iw < done) continue;
        /* taps kw with (iw + pad_left - kw*dil) a non-negative multiple of stride, < OW */
        int64_t kwv[64], owv[64], nw = 0;
        for (int64_t kw = 0; kw < g->k_w && nw < 64; kw++) {
            int64_t t = iw + g->pad_left - kw * g->dil_w;
            if (t < 0 || t % g->stride_w || t / g->stride_w >= g->out_w) continue;
            kwv[nw] = kw, owv[nw] = t / g->stride_w, nw++;
        }
        for (int64_t c = 0; c < cv; c += BF_VL) {
            FN(bf_vec) acc = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t q = 0; q < nw; q++)
                    acc += FN(bf_ldv)(dyr[r] + owv[q] * O + c) *
                           FN(bf_ldv)(p->b + (khv[r] * g->k_w + kwv[q]) * O + c);
            FN(bf_stv)(acc_row + iw * O + c, acc);
        }
        for (int64_t c = cv; c < O; c++) {
            T acc = 0;
            for (int64_t r = 0; r < nk; r++)
                for (int64_t q = 0; q < nw; q++)
                    acc += dyr[r][owv[q] * O + c] * p->b[(khv[r] * g->k_w + kwv[q]) * O + c];
            acc_row[iw * O + c] = acc;
        }
    }
    if (p->mult > 1)
        for (int64_t iw = 0; iw < g->in_w; iw++)
            for (int64_t k = 0; k < C; k++) {
                T s = 0;
                for (int64_t q = 0; q < p->mult; q++) s += acc_row[(iw * C + k) * p->mult + q];
                dx[iw * C + k] = s;
            }
}

/* Partial dw over a chunk of (n, oh) rows: for each tap and channel vector, the products over
   the valid ow range are summed in four registers and added to the partial once per row. */
static void FN(bf_dw_bwd_filter_task)(void *arg, int64_t task, int slot) {
    const FN(bf_dw_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t O = g->out_c, rows = g->n * g->out_h, cv = O / BF_VL * BF_VL;
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    T *buf = p->scratch + (int64_t)slot * p->scratch_per;
    int64_t sw = g->stride_w;
    for (int64_t row = task * p->rows_per_task;
         row < BF_MIN(rows, (task + 1) * p->rows_per_task); row++) {
        int64_t n = row / g->out_h, oh = row % g->out_h;
        const T *dyr = p->b + row * g->out_w * O;
        for (int64_t kh = 0; kh < g->k_h; kh++) {
            int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
            if (ih < 0 || ih >= g->in_h) continue;
            const T *xr =
                FN(bf_dw_expand)(p, p->a + (n * g->in_h + ih) * g->in_w * g->in_c, buf);
            for (int64_t kw = 0; kw < g->k_w; kw++) {
                int64_t off = kw * g->dil_w - g->pad_left, lo, hi;
                bf_cc_range(off, sw, g->in_w, g->out_w, &lo, &hi);
                T *pv = part + (kh * g->k_w + kw) * O;
                const T *xo = xr; /* x of output position ow: xo + ow*sw*O + xoff */
                int64_t xoff = off * O;
                for (int64_t c = 0; c < cv; c += BF_VL) {
                    FN(bf_vec) a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                    int64_t ow = lo;
                    for (; ow + 4 <= hi; ow += 4) {
                        a0 = BF_VFMA_(FN(bf_ldv)(xo + (ow + 0) * sw * O + xoff + c),
                                      FN(bf_ldv)(dyr + (ow + 0) * O + c), a0);
                        a1 = BF_VFMA_(FN(bf_ldv)(xo + (ow + 1) * sw * O + xoff + c),
                                      FN(bf_ldv)(dyr + (ow + 1) * O + c), a1);
                        a2 = BF_VFMA_(FN(bf_ldv)(xo + (ow + 2) * sw * O + xoff + c),
                                      FN(bf_ldv)(dyr + (ow + 2) * O + c), a2);
                        a3 = BF_VFMA_(FN(bf_ldv)(xo + (ow + 3) * sw * O + xoff + c),
                                      FN(bf_ldv)(dyr + (ow + 3) * O + c), a3);
                    }
                    for (; ow < hi; ow++)
                        a0 = BF_VFMA_(FN(bf_ldv)(xo + ow * sw * O + xoff + c),
                                      FN(bf_ldv)(dyr + ow * O + c), a0);
                    FN(bf_stv)(pv + c, FN(bf_ldv)(pv + c) + (a0 + a1) + (a2 + a3));
                }
                for (int64_t c = cv; c < O; c++) {
                    T acc = 0;
                    for (int64_t ow = lo; ow < hi; ow++)
                        acc += xo[ow * sw * O + xoff + c] * dyr[ow * O + c];
                    pv[c] += acc;
                }
            }
        }
    }
}

/*
 * The same without a channel multiplier, for unit-stride rows of many channels (bf_dw_run
 * picks it): pixel by pixel, each tap's products over all channels go straight into the
 * thread's partial dW (KH*KW*O values, L1-resident for the MobileNet layers), so every load
 * walks memory contiguously, where the loop above strides a pixel at a time through one
 * channel vector.
 */
static void FN(bf_dw_bwd_filter_px_task)(void *arg, int64_t task, int slot) {
    const FN(bf_dw_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t O = g->out_c, W = g->in_w, OW = g->out_w, cv = O / BF_VL * BF_VL;
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    int64_t r0 = task * p->rows_per_task, r1 = BF_MIN(g->n * g->out_h, r0 + p->rows_per_task);
    for (int64_t row = r0; row < r1; row++) {
        int64_t n = row / g->out_h, oh = row % g->out_h;
        const T *dyr = p->b + row * OW * O;
        for (int64_t kh = 0; kh < g->k_h; kh++) {
            int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
            if (ih < 0 || ih >= g->in_h) continue;
            const T *xr = p->a + (n * g->in_h + ih) * W * O;
            for (int64_t kw = 0; kw < g->k_w; kw++) {
                int64_t off = kw * g->dil_w - g->pad_left, lo, hi;
                bf_cc_range(off, 1, W, OW, &lo, &hi);
                T *restrict pv = part + (kh * g->k_w + kw) * O;
                int64_t ow = lo;
                /* four pixels per pass over the channels: one partial load and store per four
                   multiply-adds */
                for (; ow + 4 <= hi; ow += 4) {
                    const T *restrict d = dyr + ow * O, *restrict xp = xr + (ow + off) * O;
                    int64_t c = 0;
                    for (; c < cv; c += BF_VL) {
                        FN(bf_vec) acc = FN(bf_ldv)(pv + c);
                        acc = BF_VFMA_(FN(bf_ldv)(xp + c), FN(bf_ldv)(d + c), acc);
                        acc = BF_VFMA_(FN(bf_ldv)(xp + O + c), FN(bf_ldv)(d + O + c), acc);
                        acc = BF_VFMA_(FN(bf_ldv)(xp + 2 * O + c), FN(bf_ldv)(d + 2 * O + c),
                                       acc);
                        acc = BF_VFMA_(FN(bf_ldv)(xp + 3 * O + c), FN(bf_ldv)(d + 3 * O + c),
                                       acc);
                        FN(bf_stv)(pv + c, acc);
                    }
                    for (; c < O; c++)
                        pv[c] += xp[c] * d[c] + xp[O + c] * d[O + c] +
                                 xp[2 * O + c] * d[2 * O + c] + xp[3 * O + c] * d[3 * O + c];
                }
                for (; ow < hi; ow++) {
                    const T *restrict d = dyr + ow * O, *restrict xp = xr + (ow + off) * O;
                    int64_t c = 0;
                    for (; c < cv; c += BF_VL)
                        FN(bf_stv)(pv + c, BF_VFMA_(FN(bf_ldv)(xp + c), FN(bf_ldv)(d + c),
                                                    FN(bf_ldv)(pv + c)));
                    for (; c < O; c++) pv[c] += xp[c] * d[c];
                }
            }
        }
    }
}

static void FN(bf_dw_fwd_chunk)(void *arg, int64_t task, int slot) {
    const FN(bf_dw_plan) *p = arg;
    int64_t rows = p->g->n * p->g->out_h, tags[64];
    for (int s = 0; s < 64; s++) tags[s] = -1;
    for (int64_t r = task * p->rows_per_task; r < BF_MIN(rows, (task + 1) * p->rows_per_task); r++)
        FN(bf_dw_fwd_task)(p, r, slot, tags);
#ifdef BF_VSTREAM
    BF_VSTREAM_FENCE(); /* the streaming stores are weakly ordered: drain them before the join */
#endif
}

static void FN(bf_dw_bwd_input_chunk)(void *arg, int64_t task, int slot) {
    const FN(bf_dw_plan) *p = arg;
    int64_t rows = p->g->n * p->g->in_h;
    for (int64_t r = task * p->rows_per_task; r < BF_MIN(rows, (task + 1) * p->rows_per_task); r++)
        FN(bf_dw_bwd_input_task)(arg, r, slot);
}

static size_t FN(bf_dw_ws)(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    size_t row = bf_cc_mad(bf_cc_mad((size_t)BF_MAX(g->in_w, 1), (size_t)g->out_c, 0),
                           (size_t)BF_MIN(BF_MAX(g->k_h, 1), 64), 32);
    size_t tot = bf_cc_mad(row, (size_t)n_threads, 0);
    if (op == BF_CONV_BWD_FILTER)
        tot = bf_cc_mad((size_t)(g->k_h * g->k_w * g->out_c), (size_t)(n_threads - 1) , tot);
    return bf_cc_mad(bf_cc_mad(tot, 1, 16), sizeof(T), 64);
}

static void FN(bf_dw_run)(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *b,
                          T *out, const bf_exec *ex) {
    FN(bf_dw_plan) p = {.op = op, .g = g, .a = a, .b = b, .out = out, .ex = ex,
                        .mult = g->out_c / g->in_c};
    p.nel = g->k_h * g->k_w * g->out_c;
    p.scratch_per =
        bf_cc_round_up(BF_MAX(g->in_w, 1) * g->out_c * BF_MIN(BF_MAX(g->k_h, 1), 64) + 16, 16);
    if (op == BF_CONV_FWD || op == BF_CONV_BWD_INPUT) {
        /* chunks of consecutive rows, so a thread reuses the input rows it just read */
        p.scratch = ex->workspace;
        int64_t rows = g->n * (op == BF_CONV_FWD ? g->out_h : g->in_h);
        p.rows_per_task = BF_MAX(1, BF_MIN(16, rows / (8 * ex->n_threads)));
        bf_parallel_for(ex, bf_cc_ceil_div(rows, p.rows_per_task),
                        op == BF_CONV_FWD ? FN(bf_dw_fwd_chunk) : FN(bf_dw_bwd_input_chunk), &p);
    } else {
        p.partials = ex->workspace;
        p.scratch = p.partials + bf_cc_round_up(p.nel * (ex->n_threads - 1), 16);
        int64_t rows = g->n * g->out_h;
        /* pixel order for unit-stride rows of at least 8 channel vectors (interleaved A/B,
           2 threads: 14x14x576 and 7x7x960 9% faster; with stride 2 (56x56x144) it was 34%
           slower, and 32 channels gained nothing) */
        bool px = p.mult == 1 && g->stride_w == 1 && g->out_c >= 8 * BF_VL;
        p.rows_per_task = BF_MAX(1, rows / (8 * ex->n_threads));
        FN(bf_partials_run)(out, p.partials, p.nel, ex->n_threads,
                            bf_cc_ceil_div(rows, p.rows_per_task),
                            px ? FN(bf_dw_bwd_filter_px_task) : FN(bf_dw_bwd_filter_task), &p,
                            ex);
    }
}

/* ---- dense FWD with few input channels: direct kernel over output-channel vectors --------
 * For a 3-channel stem the im2col rows are short runs that cost more to pack than to
 * multiply. Instead each block of SD_RB output pixels x SD_NV channel vectors is accumulated
 * in registers over every (kh, kw, c) tap with a broadcast of x times SD_NV vectors of the
 * filter, packed once per call as [oc block][KH*KW*C][SD_NV*BF_VL] (zeros past out_c). Blocks
 * whose every column tap is inside the image read x in place; border blocks (and the last,
 * partial one) first copy the window they read, zero-padded, into per-thread scratch.
 */
#if BF_VEC_BYTES >= 64
#define SD_NV 4
#else
#define SD_NV 2
#endif
#define SD_RB 6
#define SD_KWC_MAX 1024 /* k_w * in_c of the per-task tap offset table */

typedef struct FN(bf_sd_plan) {
    const bf_conv_geom *g;
    const T *x, *w;
    T *y;
    T *wpack;   /* [nob][K][SD_NV*BF_VL] */
    T *win;     /* per thread: k_h windows of winw*C */
    int64_t nob, K, winw, win_per;
    bool bwd;   /* BWD_INPUT as a forward conv of dy: w is the original [KH, KW, C, O] */
    const bf_exec *ex;
} FN(bf_sd_plan);

/* Few input channels (packing short im2col runs costs more than the multiplies), or a
   stride-1 spatial filter over up to SD_C_MAX channels. Measured A/B, 2 threads, against the
   packed GEMM: vgg 3x3/128 48.9 -> 36.7 ms, rn50 3x3/64 13.6 -> 10.5 ms, atrous 3x3/256
   14.5 -> 13.6 ms; the stride-2 3x3/256 (10.7 -> 12.3 ms) and the 1x1 256->64 (6.0 -> 6.5 ms)
   lose, so they stay on the GEMM. Against the GEMM that reads A in place (UKRI), FWD and
   BWD_INPUT: atrous 3x3/256 0.95x and 0.94x of this kernel's time, rn50 3x3/64 1.07x, vgg
   3x3/128 1.08x. */
#ifdef UKRI
#define SD_C_MAX 128
#else
#define SD_C_MAX 256
#endif
static bool FN(bf_sd_wanted)(bf_conv_op op, const bf_conv_geom *g) {
    bool s1 = g->stride_h == 1 && g->stride_w == 1;
    return op == BF_CONV_FWD && g->groups == 1 && g->out_c >= BF_VL &&
           g->k_w * g->in_c <= SD_KWC_MAX && g->k_h <= 64 &&
           (g->in_c <= 4 || (s1 && g->in_c <= SD_C_MAX && g->k_h * g->k_w > 1));
}

/* Width (pixels) of the input window of one block of SD_RB output columns. */
static int64_t FN(bf_sd_winw)(const bf_conv_geom *g) {
    return (SD_RB - 1) * g->stride_w + (g->k_w - 1) * g->dil_w + 1;
}

static void FN(bf_sd_pack_task)(void *arg, int64_t ob, int slot) {
    const FN(bf_sd_plan) *p = arg;
    const int64_t nvl = SD_NV * BF_VL, O = p->g->out_c;
    T *dst = p->wpack + ob * p->K * nvl;
    const bf_conv_geom *g = p->g;
    for (int64_t k = 0; k < p->K; k++)
        for (int64_t j = 0; j < nvl; j++) {
            int64_t o = ob * nvl + j;
            T v = 0;
            if (o < O && !p->bwd) {
                v = p->w[k * O + o];
            } else if (o < O) {
                /* tap (kh, kw) of the flipped filter, dy channel ci, dx channel o: the
                   original W[KH-1-kh][KW-1-kw][o][ci] (g has C = dy's O, O = dx's C) */
                int64_t ci = k % g->in_c, t = k / g->in_c;
                int64_t kh = g->k_h - 1 - t / g->k_w, kw = g->k_w - 1 - t % g->k_w;
                v = p->w[((kh * g->k_w + kw) * O + o) * g->in_c + ci];
            }
            dst[k * nvl + j] = v;
        }
}

/*
 * One block of rb (<= SD_RB) output pixels starting at yq, every output-channel block:
 * rb x SD_NV vectors of sums in registers over the taps of the rows xb[0..nk). Always inlined
 * with a constant rb, so the loops unroll and acc stays in registers.
 */
static inline __attribute__((always_inline)) void
FN(bf_sd_block)(int rb, const FN(bf_sd_plan) *p, const T *const *xb, const int64_t *khv,
                int64_t nk, const int64_t *xoff, int64_t ps, T *yq) {
    const bf_conv_geom *g = p->g;
    const int64_t O = g->out_c, nvl = SD_NV * BF_VL, kwc = g->k_w * g->in_c;
    for (int64_t ob = 0; ob < p->nob; ob++) {
        const T *wp = p->wpack + ob * p->K * nvl;
        int64_t o0 = ob * nvl;
        FN(bf_vec) acc[SD_RB][SD_NV];
#pragma GCC unroll 32
        for (int i = 0; i < rb; i++)
#pragma GCC unroll 8
            for (int v = 0; v < SD_NV; v++) acc[i][v] = (FN(bf_vec)){0};
        for (int64_t r = 0; r < nk; r++) {
            const T *restrict xr = xb[r];
            const T *restrict wr = wp + khv[r] * kwc * nvl;
            for (int64_t j = 0; j < kwc; j++) {
                FN(bf_vec) wv[SD_NV];
#pragma GCC unroll 8
                for (int v = 0; v < SD_NV; v++) wv[v] = FN(bf_ldv)(wr + j * nvl + v * BF_VL);
                const T *restrict xj = xr + xoff[j];
#pragma GCC unroll 32
                for (int i = 0; i < rb; i++) {
                    FN(bf_vec) xv = FN(bf_vsplat)(xj[i * ps]);
#pragma GCC unroll 8
                    for (int v = 0; v < SD_NV; v++) acc[i][v] = BF_VFMA_(xv, wv[v], acc[i][v]);
                }
            }
        }
        /* constant indices only, so acc stays in registers */
#pragma GCC unroll 32
        for (int i = 0; i < rb; i++) {
            T *yp = yq + i * O + o0;
#pragma GCC unroll 8
            for (int v = 0; v < SD_NV; v++) {
                int64_t oc = o0 + v * BF_VL;
                if (oc + BF_VL <= O) {
                    FN(bf_stv)(yp + v * BF_VL, acc[i][v]);
                } else if (oc < O) {
                    T tmp[BF_VL];
                    FN(bf_stv)(tmp, acc[i][v]);
                    memcpy(yp + v * BF_VL, tmp, (size_t)(O - oc) * sizeof(T));
                }
            }
        }
    }
}

static void FN(bf_sd_task)(void *arg, int64_t row, int slot) {
    const FN(bf_sd_plan) *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    const int64_t C = g->in_c, O = g->out_c, kwc = g->k_w * C;
    int64_t n = row / g->out_h, oh = row % g->out_h;
    T *win = p->win + (int64_t)slot * p->win_per;
    const T *xrow[64];
    int64_t khv[64], nk = 0;
    for (int64_t kh = 0; kh < g->k_h; kh++) {
        int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
        if (ih < 0 || ih >= g->in_h) continue;
        xrow[nk] = p->x + (n * g->in_h + ih) * g->in_w * C, khv[nk] = kh, nk++;
    }
    int64_t xoff[SD_KWC_MAX];
    for (int64_t j = 0; j < kwc; j++) xoff[j] = j / C * g->dil_w * C + j % C;
    const int64_t ps = g->stride_w * C; /* step between output pixels in x */
    T *yrow = p->y + row * g->out_w * O;
    for (int64_t q0 = 0; q0 < g->out_w; q0 += SD_RB) {
        /* the block reads input columns [iw0, iw0 + winw) */
        int64_t iw0 = q0 * g->stride_w - g->pad_left;
        bool inside = iw0 >= 0 && iw0 + p->winw <= g->in_w;
        const T *xb[64];
        for (int64_t r = 0; r < nk; r++) {
            if (inside) {
                xb[r] = xrow[r] + iw0 * C;
                continue;
            }
            T *d = win + r * p->winw * C;
            int64_t lo = BF_MIN(BF_MAX(-iw0, 0), p->winw);
            int64_t hi = BF_MAX(BF_MIN(g->in_w - iw0, p->winw), lo);
            memset(d, 0, (size_t)(lo * C) * sizeof(T));
            memcpy(d + lo * C, xrow[r] + (iw0 + lo) * C, (size_t)((hi - lo) * C) * sizeof(T));
            memset(d + hi * C, 0, (size_t)((p->winw - hi) * C) * sizeof(T));
            xb[r] = d;
        }
        int64_t nq = BF_MIN((int64_t)SD_RB, g->out_w - q0);
        /* the row's last block computes only its nq pixels (a 33-wide row is 5 x 6 + 3) */
        switch (nq) {
        case 1: FN(bf_sd_block)(1, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 2: FN(bf_sd_block)(2, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 3: FN(bf_sd_block)(3, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 4: FN(bf_sd_block)(4, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 5: FN(bf_sd_block)(5, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        default: FN(bf_sd_block)(SD_RB, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        }
    }
}

static size_t FN(bf_sd_ws)(const bf_conv_geom *g, int n_threads) {
    int64_t nvl = SD_NV * BF_VL, nob = bf_cc_ceil_div(g->out_c, nvl);
    /* the same rounded pieces bf_sd_run lays out: round_up(x + 16, 16) <= x + 31 */
    size_t wp = bf_cc_mad(bf_cc_mad((size_t)nob, (size_t)(g->k_h * g->k_w * g->in_c), 0),
                          (size_t)nvl, 32);
    size_t per = bf_cc_mad(bf_cc_mad((size_t)FN(bf_sd_winw)(g), (size_t)g->in_c, 0),
                           (size_t)g->k_h, 32);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, wp), sizeof(T), 64);
}

static void FN(bf_sd_run)(const bf_conv_geom *g, const T *x, const T *w, T *y, bool bwd,
                          const bf_exec *ex) {
    int64_t nvl = SD_NV * BF_VL;
    FN(bf_sd_plan) p = {.g = g, .x = x, .w = w, .y = y, .ex = ex, .bwd = bwd,
                        .nob = bf_cc_ceil_div(g->out_c, nvl),
                        .K = g->k_h * g->k_w * g->in_c, .winw = FN(bf_sd_winw)(g)};
    p.wpack = ex->workspace;
    p.win = p.wpack + bf_cc_round_up(p.nob * p.K * nvl + 16, 16);
    p.win_per = bf_cc_round_up(p.winw * g->in_c * g->k_h + 16, 16);
    if (g->n * g->out_h * g->out_w == 0) return;
    bf_parallel_for(ex, p.nob, FN(bf_sd_pack_task), &p);
    bf_parallel_for(ex, g->n * g->out_h, FN(bf_sd_task), &p);
}

/* BWD_INPUT with stride 1 is a forward convolution of dy with the flipped, transposed filter:
   dx[ih] = sum_kh dy[ih + pad_top - kh*dil] W[kh], i.e. a forward conv over dy with
   pad' = (k-1)*dil - pad and tap kh' = KH-1-kh. *g2 is that forward geometry; true when it is
   one the direct forward kernel takes (pads in [0, (k-1)*dil]). */
static bool FN(bf_sd_bwd_geom)(const bf_conv_geom *g, bf_conv_geom *g2) {
    if (g->groups != 1 || g->stride_h != 1 || g->stride_w != 1 || g->pad_top < 0 ||
        g->pad_left < 0 || g->pad_top > (g->k_h - 1) * g->dil_h ||
        g->pad_left > (g->k_w - 1) * g->dil_w)
        return false;
    *g2 = *g;
    g2->in_h = g->out_h, g2->in_w = g->out_w, g2->in_c = g->out_c, g2->k_in_c = g->out_c;
    g2->out_h = g->in_h, g2->out_w = g->in_w, g2->out_c = g->in_c;
    g2->pad_top = (g->k_h - 1) * g->dil_h - g->pad_top;
    g2->pad_left = (g->k_w - 1) * g->dil_w - g->pad_left;
    g2->pad_bottom = g2->pad_right = 0; /* unused: the output size is given */
    return g->in_c >= 5 && FN(bf_sd_wanted)(BF_CONV_FWD, g2);
}

/* ---- dense BWD_FILTER, direct: dW tiles in registers -------------------------------------
 * dW[k, o] = sum_p x_im2col[p, k] * dy[p, o], k = (kh, kw, c). Per output row (n, oh) the
 * k_h input rows it reads are made zero-padded (in place when the row needs no padding, a
 * per-thread zero row for kh outside the image), then for each tile of SF_RB k values x SF_NV
 * output-channel vectors the sum over the row's pixels is kept in registers (SF_NV dy loads,
 * SF_RB broadcasts of x, SF_RB*SF_NV FMAs per pixel) and added to the thread's partial dW.
 * No packing at all, which is what a 3-channel stem (147 short k rows) needs.
 */
#if BF_VEC_BYTES >= 64
#define SF_NV 4
#else
#define SF_NV 2
#endif
#define SF_RB 6

typedef struct FN(bf_sf_plan) {
    const bf_conv_geom *g;
    const T *x, *dy;
    T *out, *partials;
    T *rows;        /* per thread: (k_h + 1) padded rows of prw*C (the last is all zeros) */
    int64_t prw, rows_per, nel, rows_per_task;
    const bf_exec *ex;
} FN(bf_sf_plan);

/* Few input channels (the packed GEMM's k rows are too short), or rows long enough that
   the per-row read-modify-write of each dW tile is amortised (measured: 56-pixel rows win,
   a 14-pixel stride-2 row loses to the packed GEMM). */
static bool FN(bf_sf_wanted)(const bf_conv_geom *g) {
    return g->groups == 1 && g->out_c % (SF_NV * BF_VL) == 0 && g->k_h <= 64 &&
           g->out_w > 0 && (g->in_c <= 4 || g->out_w >= 48);
}

static int64_t FN(bf_sf_prw)(const bf_conv_geom *g) {
    return (BF_MAX(g->out_w, 1) - 1) * g->stride_w + (g->k_w - 1) * g->dil_w + 1;
}

static void FN(bf_sf_task)(void *arg, int64_t task, int slot) {
    const FN(bf_sf_plan) *p = arg;
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
        for (int64_t o0 = 0; o0 < O; o0 += nvl) {
            for (int64_t k0 = 0; k0 < K; k0 += SF_RB) {
                const T *xk[SF_RB];
#pragma GCC unroll 32
                for (int i = 0; i < SF_RB; i++) {
                    int64_t k = BF_MIN(k0 + i, K - 1), t = k / C, c = k % C;
                    xk[i] = prow[t / g->k_w] + t % g->k_w * g->dil_w * C + c;
                }
                FN(bf_vec) acc[SF_RB][SF_NV];
#pragma GCC unroll 32
                for (int i = 0; i < SF_RB; i++)
#pragma GCC unroll 8
                    for (int v = 0; v < SF_NV; v++) acc[i][v] = (FN(bf_vec)){0};
                const T *restrict dp = dyr + o0;
                for (int64_t ow = 0; ow < OW; ow++) {
                    FN(bf_vec) dv[SF_NV];
#pragma GCC unroll 8
                    for (int v = 0; v < SF_NV; v++) dv[v] = FN(bf_ldv)(dp + ow * O + v * BF_VL);
#pragma GCC unroll 32
                    for (int i = 0; i < SF_RB; i++) {
                        FN(bf_vec) xv = FN(bf_vsplat)(xk[i][ow * ps]);
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
                        FN(bf_stv)(pv + v * BF_VL, FN(bf_ldv)(pv + v * BF_VL) + acc[i][v]);
                }
            }
        }
    }
}

static size_t FN(bf_sf_ws)(const bf_conv_geom *g, int n_threads) {
    size_t nel = bf_cc_mad(bf_cc_mad((size_t)(g->k_h * g->k_w), (size_t)g->in_c, 0),
                           (size_t)g->out_c, 0);
    /* the same rounded pieces bf_sf_run lays out: round_up(x + 16, 16) <= x + 31 */
    size_t parts = bf_cc_mad(nel, (size_t)(n_threads - 1), 32);
    size_t per = bf_cc_mad(bf_cc_mad((size_t)FN(bf_sf_prw)(g), (size_t)g->in_c, 0),
                           (size_t)(g->k_h + 1), 32);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, parts), sizeof(T), 64);
}

static void FN(bf_sf_run)(const bf_conv_geom *g, const T *x, const T *dy, T *out,
                          const bf_exec *ex) {
    FN(bf_sf_plan) p = {.g = g, .x = x, .dy = dy, .out = out, .ex = ex,
                        .prw = FN(bf_sf_prw)(g)};
    p.nel = g->k_h * g->k_w * g->in_c * g->out_c;
    p.partials = ex->workspace;
    p.rows = p.partials + bf_cc_round_up(p.nel * (ex->n_threads - 1) + 16, 16);
    p.rows_per = bf_cc_round_up(p.prw * g->in_c * (g->k_h + 1) + 16, 16);
    int64_t nrows = g->n * g->out_h;
    p.rows_per_task = BF_MAX(1, nrows / (8 * ex->n_threads));
    FN(bf_partials_run)(out, p.partials, p.nel, ex->n_threads,
                        bf_cc_ceil_div(nrows, p.rows_per_task), FN(bf_sf_task), &p, ex);
}

#undef SF_NV
#undef SF_RB
#undef SD_NV
#undef SD_RB
#undef SD_C_MAX
#undef SD_KWC_MAX

/* ---- entry points of this instantiation ------------------------------------------------- */

/* The depthwise row kernels keep per-row tap lists of at most 64 entries. */
static bool FN(bf_dw_wanted)(const bf_conv_geom *g) {
    return bf_conv_is_depthwise(g) && g->k_h <= 64 && g->k_w <= 64;
}

static size_t FN(bf_conv_ws)(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    if (n_threads < 1) n_threads = 1;
    if (FN(bf_dw_wanted)(g)) return FN(bf_dw_ws)(op, g, n_threads);
    if (op == BF_CONV_BWD_FILTER && FN(bf_sf_wanted)(g)) return FN(bf_sf_ws)(g, n_threads);
    if (op == BF_CONV_BWD_FILTER) return FN(bf_cf_ws)(g, n_threads);
    if (FN(bf_sd_wanted)(op, g)) return FN(bf_sd_ws)(g, n_threads);
    bf_conv_geom g2;
    if (op == BF_CONV_BWD_INPUT && FN(bf_sd_bwd_geom)(g, &g2))
        return FN(bf_sd_ws)(&g2, n_threads);
    if (op == BF_CONV_BWD_INPUT && FN(bf_ci_wanted)(g, n_threads))
        return FN(bf_ci_ws)(g, n_threads);
    return FN(bf_cg_rows_ws)(op, g, n_threads);
}

static void FN(bf_conv_run)(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *b,
                            T *out, const bf_exec *ex) {
    bf_conv_geom g2;
    if (FN(bf_dw_wanted)(g)) FN(bf_dw_run)(op, g, a, b, out, ex);
    else if (op == BF_CONV_BWD_FILTER && FN(bf_sf_wanted)(g)) FN(bf_sf_run)(g, a, b, out, ex);
    else if (op == BF_CONV_BWD_FILTER) FN(bf_cf_run)(g, a, b, out, ex);
    else if (FN(bf_sd_wanted)(op, g)) FN(bf_sd_run)(g, a, b, out, false, ex);
    else if (op == BF_CONV_BWD_INPUT && FN(bf_sd_bwd_geom)(g, &g2))
        FN(bf_sd_run)(&g2, a, b, out, true, ex);
    else if (op == BF_CONV_BWD_INPUT && FN(bf_ci_wanted)(g, ex->n_threads))
        FN(bf_ci_run)(g, a, b, out, ex);
    else FN(bf_cg_rows_run)(op, g, a, b, out, ex);
}

#undef BF_CG_MC
#undef BF_CG_KC
#undef BF_CG_KCI
#undef BF_CF_PC_MAX
#undef BF_CG_TAPS_MAX
#undef BF_VL
#undef BF_VFMA_
