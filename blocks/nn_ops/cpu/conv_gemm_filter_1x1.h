/*
 * conv_gemm_filter_1x1.h - bf_f1_*: dense BWD_FILTER of a 1x1, stride-1, unpadded filter as
 * one long GEMM
 *     dW[c, o] = sum_p x[p, c] * dy[p, o]
 * over all N*H*W pixels p, with x read in place: pixel p's C channels are the row x + p * C.
 * Taken before the direct and the im2col filter gradients where the ISA has UKRS (the
 * microkernel that reads A with a row stride) and dW is small enough to stay in L2 beside a
 * chunk (bf_f1_wanted). Part of the kernel template (conv_gemm_impl.h; no include guard);
 * uses bf_partials_run of conv_gemm_filter.h.
 *
 * A task is a run of chunks of PC consecutive pixels. Per chunk it packs dy as
 * [npad/NR][pc][NR], then for each NR panel and each MR block of channels runs UKRS over the
 * whole chunk (A = the chunk's x rows, C apart; B = the packed panel, which stays in L1 while
 * the blocks go by), adding the MR x NR tile to the thread's partial dW. While it
 * multiplies, it prefetches the next chunk's x and dy rows into L2, a slice per microkernel
 * call: x is read exactly once and is far larger than the caches.
 *
 * Measured on Zen 3 (AVX2, 1 thread, bench/RESULTS.md "Issue 30"): rn50 1x1 256->64 at 56x56
 * went from 23.7-24.8 ms (the direct kernel; minima) to 18.6, UKRS at about 93 % of the FMA
 * peak and 4 % of the time outside it. What it replaced and why those lost:
 * the direct filter gradient (conv_gemm_direct_filter.h) keeps each dW tile in registers for
 * one 56-pixel row only, then reads and writes it back; the im2col GEMM (conv_gemm_filter.h)
 * packs one MR block of x at a time and so reads each chunk of x once per block, from L3
 * when the chunk does not fit L2 beside the packed dy. Packing x here as well (a chunk's
 * rows cut into MR-wide pieces in one pass) cost 10-20 % more than reading it in place; for
 * stride 2 and for dW over L2 it was no faster than the old paths, so they keep those.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_f1_plan    BF_KFN(bf_f1_plan)
#define bf_f1_wanted  BF_KFN(bf_f1_wanted)
#define bf_f1_pc      BF_KFN(bf_f1_pc)
#define bf_f1_pfs     BF_KFN(bf_f1_pfs)
#define bf_f1_pf      BF_KFN(bf_f1_pf)
#define bf_f1_task    BF_KFN(bf_f1_task)
#define bf_f1_ws      BF_KFN(bf_f1_ws)
#define bf_f1_run     BF_KFN(bf_f1_run)

typedef struct bf_f1_plan {
    const bf_conv_geom *g;
    const T *x;     /* [N, H, W, C] */
    const T *dy;    /* [N, H, W, O] */
    T *out;         /* [C, O]: partial of slot 0 */
    T *partials;    /* (n_threads - 1) x [C * O] */
    T *scratch;     /* per thread: B [npad/NR][pc][NR], then a junk row of npad values */
    int64_t pc, npad, nmb, nel, scratch_per, npix, nchunks, chunks_per_task;
    const bf_exec *ex;
} bf_f1_plan;

/* 1x1, stride 1, no padding (so pixel p of dy reads x + p * C), not grouped, at least 64
   input channels (at 16 and 32 the direct kernel was as fast or faster: 16 -> 96 at 112x112
   1.15x slower here), dW in 128 KiB (256 x 64 floats; at 512 x 128 and 1024 x 256 the old
   paths were as fast), and an ISA with UKRS. */
#ifdef UKRS
static bool bf_f1_wanted(const bf_conv_geom *g) {
    return g->groups == 1 && g->k_h == 1 && g->k_w == 1 && g->stride_h == 1 &&
           g->stride_w == 1 && g->pad_top == 0 && g->pad_left == 0 && g->out_h == g->in_h &&
           g->out_w == g->in_w && g->in_c >= BF_MAX(64, MR) && g->out_c >= 1 &&
           g->in_c * g->out_c <= (int64_t)(131072 / sizeof(T));
}

/* Pixels per chunk: the chunk's x rows and packed dy, and the next chunk's rows that are
   prefetched meanwhile, in 320 KiB, which leaves room in a 512 KiB L2 for dW. 96 to 192
   pixels were as fast on rn50 1x1 256->64 (128 here). */
static int64_t bf_f1_pc(const bf_conv_geom *g) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c, 1), NR);
    int64_t per = (int64_t)sizeof(T) * (npad + 2 * g->in_c + g->out_c);
    int64_t pc = (int64_t)327680 / per;
    return BF_MAX(BF_MIN(pc, 1024), 16);
}

/* The prefetch of the next chunk (its x and dy rows, contiguous, into L2, in address order),
   a slice per microkernel call: the next `per_call` lines of each, no divisions per call
   (an idiv per prefetched line cost a third of the time outside the microkernel). */
typedef struct bf_f1_pfs {
    const char *x, *xend, *y, *yend;
    int64_t xpc, ypc; /* lines per call */
} bf_f1_pfs;

/* The dy lines of one call (x's go to UKRS). always_inline: a function that only prefetches
   is "const" to GCC, and a call to it that was not inlined before that analysis is deleted
   as dead code (it was: nothing was prefetched). */
static inline __attribute__((always_inline)) void bf_f1_pf(bf_f1_pfs *s) {
    for (int64_t l = 0; l < s->ypc && s->y < s->yend; l++, s->y += 64)
        __builtin_prefetch(s->y, 0, 2);
}

static void bf_f1_task(void *arg, int64_t task, int slot) {
    const bf_f1_plan *p = arg;
    const bf_conv_geom *g = p->g;
    const int64_t C = g->in_c, O = g->out_c, pc = p->pc, njp = p->npad / NR, nmb = p->nmb;
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    T *bpk = p->scratch + (int64_t)slot * p->scratch_per;
    T *junk = bpk + p->npad * pc;
    int64_t c0 = task * p->chunks_per_task;
    int64_t c1 = BF_MIN(p->nchunks, c0 + p->chunks_per_task);
    for (int64_t ch = c0; ch < c1; ch++) {
        if (bf_exec_cancelled(p->ex)) return;
        int64_t p0 = ch * pc, n = BF_MIN(pc, p->npix - p0);
        const T *x = p->x + p0 * C, *d = p->dy + p0 * O;
        /* pack dy: [npad/NR][pc][NR], zeros past O */
        for (int64_t q = 0; q < n; q++)
            for (int64_t jp = 0; jp < njp; jp++) {
                T *restrict o = bpk + (jp * pc + q) * NR;
                const T *restrict s = d + q * O + jp * NR;
                if ((jp + 1) * NR <= O)
                    memcpy(o, s, NR * sizeof(T)); /* fixed size: inlined moves */
                else
                    for (int64_t j = 0; j < NR; j++) o[j] = jp * NR + j < O ? s[j] : 0;
            }
        bf_f1_pfs pf = {0};
        int64_t n1 = ch + 1 < c1 ? BF_MIN(pc, p->npix - p0 - pc) : 0;
        if (n1 > 0) {
            pf.x = (const char *)(x + n * C), pf.xend = (const char *)(x + (n + n1) * C);
            pf.y = (const char *)(d + n * O), pf.yend = (const char *)(d + (n + n1) * O);
            pf.xpc = bf_cc_ceil_div((pf.xend - pf.x + 63) / 64, njp * nmb);
            pf.ypc = bf_cc_ceil_div((pf.yend - pf.y + 63) / 64, njp * nmb);
        }
        for (int64_t jp = 0; jp < njp; jp++) {
            int nr = (int)BF_MIN((int64_t)NR, O - jp * NR);
            for (int64_t mb = 0; mb < nmb; mb++) {
                bf_f1_pf(&pf);
                /* a short last block is read shifted back to end at channel C (past the row
                   it would read past x at the last pixel): its first sh rows are the block
                   before's, and go to the junk row */
                int64_t k0 = BF_MIN(mb * MR, C - MR), sh = mb * MR - k0;
                T *crow[MR];
                for (int64_t i = 0; i < MR; i++) crow[i] = i < sh ? junk : part + (k0 + i) * O;
                /* the dW tile of the next call: read and written once per chunk, in L2 */
                int64_t k1 = mb + 1 < nmb ? BF_MIN(k0 + MR, C - MR) : 0;
                int64_t o1 = mb + 1 < nmb ? jp : jp + 1;
                if (o1 < njp)
                    for (int64_t i = 0; i < MR; i++) {
                        const T *c = part + (k1 + i) * O + o1 * NR;
                        for (int64_t b = 0; b < NR * (int64_t)sizeof(T); b += 64)
                            __builtin_prefetch((const char *)c + b, 1, 3);
                    }
                /* the next chunk's x: its next xpc lines, which UKRS prefetches as it goes,
                   one every 8 steps (issued here at once, they stalled the loop); those
                   that n / 8 steps do not reach (few calls per chunk) here */
                int64_t npf = pf.x ? BF_MIN(pf.xpc, (pf.xend - pf.x + 63) / 64) : 0;
                int64_t nk = BF_MIN(npf, n / 8);
                for (int64_t l = nk; l < npf; l++) __builtin_prefetch(pf.x + l * 64, 0, 2);
                UKRS(n, x + k0, C, bpk + jp * pc * NR, crow, jp * NR, MR, nr, 1, pf.x, nk);
                if (npf > 0) pf.x += npf * 64;
            }
        }
    }
}

static size_t bf_f1_ws(const bf_conv_geom *g, int n_threads) {
    int64_t npad = bf_cc_round_up(BF_MAX(g->out_c, 1), NR);
    size_t nel = bf_cc_mad((size_t)g->in_c, (size_t)g->out_c, 0);
    /* the same rounded pieces bf_f1_run lays out: round_up(x, 16) <= x + 15 */
    size_t parts = bf_cc_mad(nel, (size_t)(n_threads - 1), 16);
    size_t per = bf_cc_mad((size_t)bf_f1_pc(g), (size_t)npad, (size_t)npad + 16);
    size_t tot = bf_cc_mad(per, (size_t)n_threads, parts);
    return bf_cc_mad(tot, sizeof(T), 64);
}

static void bf_f1_run(const bf_conv_geom *g, const T *x, const T *dy, T *out,
                      const bf_exec *ex) {
    bf_f1_plan p = {.g = g, .x = x, .dy = dy, .out = out, .ex = ex, .pc = bf_f1_pc(g)};
    p.npad = bf_cc_round_up(BF_MAX(g->out_c, 1), NR);
    p.nmb = bf_cc_ceil_div(g->in_c, MR);
    p.nel = g->in_c * g->out_c;
    p.npix = g->n * g->out_h * g->out_w;
    p.nchunks = bf_cc_ceil_div(p.npix, p.pc);
    /* one run of chunks on 1 thread (the prefetch crosses every chunk boundary); four runs
       per thread otherwise, so a thread held up does not hold up the end */
    int64_t ntasks = ex->n_threads > 1 ? 4 * (int64_t)ex->n_threads : 1;
    p.chunks_per_task = BF_MAX(bf_cc_ceil_div(p.nchunks, ntasks), 1);
    p.partials = ex->workspace;
    p.scratch = p.partials + bf_cc_round_up(p.nel * (ex->n_threads - 1), 16);
    p.scratch_per = bf_cc_round_up(p.pc * p.npad + p.npad, 16);
    bf_partials_run(out, p.partials, p.nel, ex->n_threads,
                    bf_cc_ceil_div(p.nchunks, p.chunks_per_task), bf_f1_task, &p, ex);
}
#endif
