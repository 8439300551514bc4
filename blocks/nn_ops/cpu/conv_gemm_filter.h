/*
 * conv_gemm_filter.h - bf_cf_*: the GEMM behind dense BWD_FILTER, and bf_partials_run, the
 * per-thread partial dW sums that the depthwise and direct filter gradients use as well. Part
 * of the kernel template (conv_gemm_impl.h; no include guard).
 *
 * dW[(tap, ci), co] = sum_p im2col(x)[p, (tap, ci)] * dy[p, co], a GEMM whose reduction runs
 * over all N*OH*OW pixels. Tasks are chunks of PC pixels (sized so the packed chunk stays in
 * L2); a task packs its dy chunk as [panel][p][NR] and, for each MR rows of dW, the matching x
 * values as [p][MR] (runs of consecutive channels of one tap are contiguous in NHWC, so this
 * is a copy per pixel and run), then accumulates into the thread's partial dW with UKR (slot 0
 * writes `out` itself, the other slots use workspace), and a final pass sums the partials.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_cf_plan      BF_KFN(bf_cf_plan)
#define bf_cf_pc        BF_KFN(bf_cf_pc)
#define bf_cf_task      BF_KFN(bf_cf_task)
#define bf_sum_arg      BF_KFN(bf_sum_arg)
#define bf_sum_task     BF_KFN(bf_sum_task)
#define bf_zero_task    BF_KFN(bf_zero_task)
#define bf_partials_run BF_KFN(bf_partials_run)
#define bf_cf_ws        BF_KFN(bf_cf_ws)
#define bf_cf_run       BF_KFN(bf_cf_run)

#define BF_CF_PC_MAX 1024               /* most pixels per BWD_FILTER task */

typedef struct bf_cf_plan {
    const bf_conv_geom *g;
    const T *x;     /* [N, H, W, C] */
    const T *dy;    /* [N, OH, OW, O] */
    T *out;         /* [KH, KW, Cg, O]: partial of slot 0 */
    T *partials;    /* (n_threads - 1) x [KH*KW*Cg*O] */
    T *scratch;     /* per thread: B [npad/NR][PC][NR] then A [PC][MR] */
    int64_t pc, npad, og, ktot, nel, scratch_per;
    int n_threads;
    const bf_exec *ex;
} bf_cf_plan;

/* Pixels per task: as many as keep the dy chunk (pc x npad) and the x rows it reads (pc x C)
   in L2 (half of its 1 MiB here), so the thread's partial dW, which is larger than L2, is read
   and written once per pc pixels; then evened out so that the tasks split equally between
   the threads. Interleaved A/B against 256 KiB chunks (with the dW prefetch of bf_cf_task),
   2 threads: 3x3/s2/256 0.92x, atrous 3x3/256 0.93x; 1 thread 0.93x and 0.95x. */
static int64_t bf_cf_pc(const bf_conv_geom *g, int n_threads) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c / g->groups, 1), NR);
    int64_t pc = (int64_t)(524288 / sizeof(T)) / npad;
    pc = BF_MIN(pc, (int64_t)(524288 / sizeof(T)) / BF_MAX(g->in_c, 1));
    pc = BF_MAX(BF_MIN(pc, BF_CF_PC_MAX), 32);
    int64_t P = g->n * g->out_h * g->out_w;
    int64_t nt = bf_cc_round_up(bf_cc_ceil_div(BF_MAX(P, 1), pc), BF_MAX(n_threads, 1));
    return BF_MAX(BF_MIN(pc, bf_cc_ceil_div(P, nt)), 32);
}

static void bf_cf_task(void *arg, int64_t task, int slot) {
    const bf_cf_plan *p = arg;
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
                /* the partial dW is larger than L2: fetch the next tile of it while this one
                   multiplies, or the add at the end of the call waits on L3 */
                bool last = (jp + 1) * NR >= p->npad;
                for (int64_t i = 0; i < MR; i++) {
                    const T *c = last ? part + BF_MIN(k0 + MR + i, p->ktot - 1) * g->out_c +
                                            grp * p->og
                                      : crow[i] + (jp + 1) * NR;
                    for (int64_t q = 0; q < NR * (int64_t)sizeof(T); q += 64)
                        __builtin_prefetch((const char *)c + q, 1, 3);
                }
                UKR(pc, apk, bpk + jp * p->pc * NR, crow, jp * NR, (int)mr, nr, 1);
            }
        }
    }
}

typedef struct bf_sum_arg {
    T *out;
    const T *partials;
    int64_t nel, nparts, chunk;
} bf_sum_arg;

static void bf_sum_task(void *arg, int64_t i, int slot) {
    const bf_sum_arg *s = arg;
    int64_t e0 = i * s->chunk, e1 = BF_MIN(s->nel, e0 + s->chunk);
    for (int64_t q = 0; q < s->nparts; q++) {
        const T *restrict src = s->partials + q * s->nel;
        T *restrict dst = s->out;
        for (int64_t e = e0; e < e1; e++) dst[e] += src[e];
    }
}

static void bf_zero_task(void *arg, int64_t i, int slot) {
    const bf_sum_arg *s = arg;
    int64_t e0 = i * s->chunk, e1 = BF_MIN(s->nel, e0 + s->chunk);
    for (int64_t q = -1; q < s->nparts; q++) {
        T *dst = q < 0 ? s->out : (T *)s->partials + q * s->nel;
        for (int64_t e = e0; e < e1; e++) dst[e] = 0;
    }
}

/* Zero out and the partials, run `fn` over ntasks, sum the partials into out. */
static void bf_partials_run(T *out, T *partials, int64_t nel, int n_threads,
                            int64_t ntasks, bf_task_fn fn, void *arg, const bf_exec *ex) {
    bf_sum_arg s = {.out = out, .partials = partials, .nel = nel,
                    .nparts = n_threads - 1, .chunk = 16384};
    int64_t nchunks = bf_cc_ceil_div(nel, s.chunk);
    bf_parallel_for(ex, nchunks, bf_zero_task, &s);
    bf_parallel_for(ex, ntasks, fn, arg);
    if (n_threads > 1) bf_parallel_for(ex, nchunks, bf_sum_task, &s);
}

static size_t bf_cf_ws(const bf_conv_geom *g, int n_threads) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c / g->groups, 1), NR);
    size_t nel = bf_cc_mad((size_t)(g->k_h * g->k_w), (size_t)g->k_in_c, 0);
    nel = bf_cc_mad(nel, (size_t)g->out_c, 0);
    size_t parts = bf_cc_mad(nel, (size_t)(n_threads - 1), 0);
    size_t per = bf_cc_mad((size_t)bf_cf_pc(g, n_threads), (size_t)(npad + MR), 16);
    size_t tot = bf_cc_mad(per, (size_t)n_threads, parts);
    return bf_cc_mad(bf_cc_mad(tot, 1, 16), sizeof(T), 64);
}

static void bf_cf_run(const bf_conv_geom *g, const T *x, const T *dy, T *out,
                      const bf_exec *ex) {
    bf_cf_plan p = {.g = g, .x = x, .dy = dy, .out = out, .ex = ex,
                    .n_threads = ex->n_threads};
    p.og = g->out_c / g->groups;
    p.npad = bf_cc_round_up(BF_MAX(p.og, 1), NR);
    p.pc = bf_cf_pc(g, p.n_threads);
    p.ktot = g->k_h * g->k_w * g->k_in_c;
    p.nel = p.ktot * g->out_c;
    p.partials = ex->workspace;
    p.scratch = p.partials + bf_cc_round_up(p.nel * (p.n_threads - 1), 16);
    p.scratch_per = bf_cc_round_up(p.pc * (p.npad + MR), 16);
    int64_t P = g->n * g->out_h * g->out_w;
    bf_partials_run(out, p.partials, p.nel, p.n_threads, bf_cc_ceil_div(P, p.pc),
                    bf_cf_task, &p, ex);
}
