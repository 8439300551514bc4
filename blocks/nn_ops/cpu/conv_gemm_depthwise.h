/*
 * conv_gemm_depthwise.h - bf_dw_*: depthwise convolution (groups == in_c, k_in_c == 1,
 * multiplier M = out_c / in_c), all three ops. Part of the kernel template (conv_gemm_impl.h;
 * no include guard); uses conv_gemm_vec.h and bf_partials_run of conv_gemm_filter.h.
 *
 * Depthwise is memory bound and is done with channel-vector loops over NHWC rows (GCC vector
 * extensions of BF_VEC_BYTES): FWD and BWD_INPUT gather every tap of an output (input) pixel
 * into a register, four pixels at a time in the interior, in tasks of consecutive rows;
 * BWD_FILTER with a 3x3 filter keeps the nine taps' sums of one channel vector (two, for a
 * two-vector layer on AVX-512) in registers over a band of rows, in strips of bands that run
 * from one image into the next (bf_dw_bwd_filter_3x3_task); other filters sum each tap over
 * a row in four registers into a per-thread partial dW. The row kernels prefetch, in address order,
 * what the next row or band reads first: their channel-vector passes read one line per pixel,
 * O apart, which the hardware prefetchers do not run ahead of. With
 * M > 1 each input row is first expanded to out_c channels (x[.., c] repeated M times) in
 * scratch so the inner loop is the same unit-stride multiply-add over out_c channels.
 * bf_dw_wanted (at the end) says when the entry points take this family.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_dw_plan               BF_KFN(bf_dw_plan)
#define bf_dw_expand             BF_KFN(bf_dw_expand)
#define bf_dw_interior           BF_KFN(bf_dw_interior)
#define bf_dw_row_taps           BF_KFN(bf_dw_row_taps)
#define bf_dw_row_pair           BF_KFN(bf_dw_row_pair)
#define bf_dw_fwd_task           BF_KFN(bf_dw_fwd_task)
#define bf_dw_bwd_input_task     BF_KFN(bf_dw_bwd_input_task)
#define bf_dw_bwd_row_taps       BF_KFN(bf_dw_bwd_row_taps)
#define bf_dw_bwd_filter_task    BF_KFN(bf_dw_bwd_filter_task)
#define bf_dw_bwd_filter_px_task BF_KFN(bf_dw_bwd_filter_px_task)
#define bf_dw_bwd_filter_3x3_task BF_KFN(bf_dw_bwd_filter_3x3_task)
#define bf_dw_3x3_band           BF_KFN(bf_dw_3x3_band)
#define bf_dw_3x3_xrows          BF_KFN(bf_dw_3x3_xrows)
#define bf_dw_3x3_new            BF_KFN(bf_dw_3x3_new)
#define bf_dw_3x3_band_run       BF_KFN(bf_dw_3x3_band_run)
#define bf_dw3                   BF_KFN(bf_dw3)
#define bf_dw_3x3_pass           BF_KFN(bf_dw_3x3_pass)
#define bf_dw_zeros              BF_KFN(bf_dw_zeros)
#define bf_dw_scratch_per        BF_KFN(bf_dw_scratch_per)
#define bf_dw_fwd_chunk          BF_KFN(bf_dw_fwd_chunk)
#define bf_dw_bwd_input_chunk    BF_KFN(bf_dw_bwd_input_chunk)
#define bf_dw_ws                 BF_KFN(bf_dw_ws)
#define bf_dw_run                BF_KFN(bf_dw_run)
#define bf_dw_wanted             BF_KFN(bf_dw_wanted)

typedef struct bf_dw_plan {
    bf_conv_op op;
    const bf_conv_geom *g;
    const T *a, *b;
    T *out;
    T *partials;    /* BWD_FILTER: (n_threads - 1) x [KH*KW*O] */
    T *scratch;     /* per thread: one row of W x O (expanded input or dx accumulator) */
    int64_t mult, rows_per_task, scratch_per, nel;
    int64_t strip_bands; /* BWD_FILTER 3x3: bands per task */
    const bf_exec *ex;
} bf_dw_plan;

/* x row [W][C] -> [W][C*M] with each channel repeated M times. */
static const T *bf_dw_expand(const bf_dw_plan *p, const T *xrow, T *buf) {
    int64_t nx = p->g->in_w * p->g->in_c, m = p->mult;
    if (m == 1) return xrow;
    if (m == 2) /* one flat loop of pairs, which GCC and clang vectorise (interleaving
                   stores): the loop below copied a value at a time, and took 60 % of the
                   multiplier-2 filter gradient (perf, dw_mult2_valid_c32_56) */
        for (int64_t j = 0; j < nx; j++) buf[2 * j] = buf[2 * j + 1] = xrow[j];
    else
        for (int64_t j = 0; j < nx; j++)
            for (int64_t q = 0; q < m; q++) buf[j * m + q] = xrow[j];
    return buf;
}

/*
 * Interior of a depthwise row: for output positions o in [lo, hi) (all taps in range),
 * out[o][c] = sum_r sum_kw rows[r][(o*ms + off[kw]) * O + c] * w[tap(r, kw) * O + c], four
 * positions at a time so four independent accumulators hide the add latency. Returns the
 * first position it did not do (the caller finishes the rest with its bounds-checked loop).
 */
static int64_t bf_dw_interior(T *restrict out, const T *const *rows, const int64_t *khv,
                              int64_t nk, const int64_t *off, int64_t kwn, int64_t ms,
                              const T *w, int64_t kw_total, int64_t O, int64_t lo,
                              int64_t hi) {
    int64_t cv = O / BF_VL * BF_VL, o = lo;
    if (cv == 0) return lo;
    for (; o + 4 <= hi; o += 4) {
        for (int64_t c = 0; c < cv; c += BF_VL) {
            bf_vec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t kw = 0; kw < kwn; kw++) {
                    bf_vec wv = bf_ldv(w + (khv[r] * kw_total + kw) * O + c);
                    const T *base = rows[r] + (o * ms + off[kw]) * O + c;
                    a0 = BF_VFMA_(bf_ldv(base), wv, a0);
                    a1 = BF_VFMA_(bf_ldv(base + ms * O), wv, a1);
                    a2 = BF_VFMA_(bf_ldv(base + 2 * ms * O), wv, a2);
                    a3 = BF_VFMA_(bf_ldv(base + 3 * ms * O), wv, a3);
                }
            bf_stv(out + o * O + c, a0);
            bf_stv(out + (o + 1) * O + c, a1);
            bf_stv(out + (o + 2) * O + c, a2);
            bf_stv(out + (o + 3) * O + c, a3);
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
 * Each channel vector's pass reads one line per pixel, O apart, which the hardware does not
 * prefetch ahead: the caller names the input the next row will read first ([pf, pf + npf),
 * or NULL), and the passes prefetch it in address order, a slice each.
 */
#if BF_VEC_BYTES == 32
/*
 * Where a vector is half a cache line (AVX2): one pass over two adjacent channel vectors, so
 * that the pass reads each input pixel's line whole and writes each output line whole, with
 * streaming stores when `stream` (the line 64-byte aligned; no read for ownership of the
 * output). One vector a pass read each line in two passes and wrote it in two, and a 32-byte
 * streaming store is half a line (1.8-1.9x slower, see conv_gemm_avx2.c). The 18 filter
 * vectors of a pair do not fit AVX2's 16 registers with the sums, so each tap's two are
 * loaded once per four output positions (18 loads per 72 multiply-adds, the input read
 * straight from memory by the FMAs). Same arguments as bf_dw_row_taps, for channels [c, c +
 * 2 * BF_VL).
 */
static inline __attribute__((always_inline)) void
bf_dw_row_pair(T *restrict out, const T *const *tp, const T *const *tw, const int64_t *toff,
               int64_t nt, int64_t step, int64_t O, int64_t lo, int64_t hi, int64_t out_w,
               int64_t in_w, int64_t ms, int64_t c, bool stream) {
    const int64_t L = BF_VL;
#define STP(p_, v0_, v1_)                                                                    \
    do {                                                                                     \
        if (stream) BF_VSTREAM((p_), (v0_)), BF_VSTREAM((p_) + L, (v1_));                    \
        else bf_stv((p_), (v0_)), bf_stv((p_) + L, (v1_));                                   \
    } while (0)
    for (int64_t o = 0; o < lo; o++) {
        bf_vec a0 = {0}, a1 = {0};
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) {
            if (t >= nt) break;
            int64_t iw = o * ms + toff[t];
            if (iw < 0 || iw >= in_w) continue;
            const T *x = tp[t] + o * step + c;
            a0 = BF_VFMA_(bf_ldv(x), bf_ldv(tw[t] + c), a0);
            a1 = BF_VFMA_(bf_ldv(x + L), bf_ldv(tw[t] + c + L), a1);
        }
        STP(out + o * O + c, a0, a1);
    }
    int64_t o = lo;
    for (; o + 4 <= hi; o += 4) {
        bf_vec a[4][2];
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) a[q][0] = a[q][1] = (bf_vec){0};
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) {
            if (t >= nt) break;
            bf_vec w0 = bf_ldv(tw[t] + c), w1 = bf_ldv(tw[t] + c + L);
            const T *x = tp[t] + o * step + c;
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                a[q][0] = BF_VFMA_(bf_ldv(x + q * step), w0, a[q][0]);
                a[q][1] = BF_VFMA_(bf_ldv(x + q * step + L), w1, a[q][1]);
            }
        }
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) STP(out + (o + q) * O + c, a[q][0], a[q][1]);
    }
    for (; o < out_w; o++) {
        bf_vec a0 = {0}, a1 = {0};
        bool in = o < hi;
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) {
            if (t >= nt) break;
            int64_t iw = o * ms + toff[t];
            if (!in && (iw < 0 || iw >= in_w)) continue;
            const T *x = tp[t] + o * step + c;
            a0 = BF_VFMA_(bf_ldv(x), bf_ldv(tw[t] + c), a0);
            a1 = BF_VFMA_(bf_ldv(x + L), bf_ldv(tw[t] + c + L), a1);
        }
        STP(out + o * O + c, a0, a1);
    }
#undef STP
}
#endif

static bool bf_dw_row_taps(T *restrict out, const T *const *rows, const int64_t *khv,
                           int64_t nk, const int64_t *off, int64_t kwn, int64_t ms,
                           const T *w, int64_t kw_total, int64_t O, int64_t lo, int64_t hi,
                           int64_t out_w, int64_t in_w, const T *pf, int64_t npf) {
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
    int64_t c = 0;
#if BF_VEC_BYTES == 32
    /* pairs of vectors, whole lines (bf_dw_row_pair), streamed where the lines are aligned;
       a last odd vector takes the one-vector pass below. Unit stride only: interleaved A/B,
       1 thread, CPU time, against one vector a pass: c32@112 FWD 0.84x and BWD_INPUT 0.74x,
       c576@14 0.69x and 0.67x, c960@7 FWD 0.72x, multiplier 2 FWD 0.85x; but the stride-2
       c144@56 FWD 1.20x (1.31x without the streaming stores), so it keeps single vectors. */
    {
        bool line_ok = (uintptr_t)out % 64 == 0 && O * (int64_t)sizeof(T) % 64 == 0;
        for (; ms == 1 && c + 2 * BF_VL <= cv; c += 2 * BF_VL) {
            if (pf) {
                bf_pf_part(pf, npf, c / BF_VL, cv / BF_VL);
                bf_pf_part(pf, npf, c / BF_VL + 1, cv / BF_VL);
            }
            bf_dw_row_pair(out, tp, tw, toff, nt, step, O, lo, hi, out_w, in_w, ms, c,
                           line_ok);
        }
    }
#endif
#if defined(BF_VSTREAM) && BF_VEC_BYTES >= 64
    /* whole aligned rows: streaming stores (no read of the output lines before writing) */
    bool nt_ok = (uintptr_t)out % BF_VEC_BYTES == 0 && O * (int64_t)sizeof(T) % BF_VEC_BYTES == 0;
#define STV(p_, v_) (nt_ok ? BF_VSTREAM((p_), (v_)) : bf_stv((p_), (v_)))
#else
#define STV(p_, v_) bf_stv((p_), (v_))
#endif
    for (; c < cv; c += BF_VL) {
        if (pf) bf_pf_part(pf, npf, c / BF_VL, cv / BF_VL);
        bf_vec wv[DW_TAPS];
#pragma GCC unroll 16
        for (int t = 0; t < DW_TAPS; t++)
            wv[t] = t < nt ? bf_ldv(tw[t] + c) : (bf_vec){0};
        for (int64_t o = 0; o < lo; o++) {
            bf_vec a0 = {0};
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                int64_t iw = o * ms + toff[t];
                if (iw >= 0 && iw < in_w)
                    a0 = BF_VFMA_(bf_ldv(tp[t] + o * step + c), wv[t], a0);
            }
            STV(out + o * O + c, a0);
        }
        int64_t o = lo;
        for (; o + 4 <= hi; o += 4) {
            bf_vec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                const T *b = tp[t] + o * step + c;
                a0 = BF_VFMA_(bf_ldv(b), wv[t], a0);
                a1 = BF_VFMA_(bf_ldv(b + step), wv[t], a1);
                a2 = BF_VFMA_(bf_ldv(b + 2 * step), wv[t], a2);
                a3 = BF_VFMA_(bf_ldv(b + 3 * step), wv[t], a3);
            }
            STV(out + o * O + c, a0);
            STV(out + (o + 1) * O + c, a1);
            STV(out + (o + 2) * O + c, a2);
            STV(out + (o + 3) * O + c, a3);
        }
        for (; o < out_w; o++) {
            bf_vec a0 = {0};
            bool in = o < hi;
#pragma GCC unroll 16
            for (int t = 0; t < DW_TAPS; t++) {
                if (t >= nt) break;
                int64_t iw = o * ms + toff[t];
                if (in || (iw >= 0 && iw < in_w))
                    a0 = BF_VFMA_(bf_ldv(tp[t] + o * step + c), wv[t], a0);
            }
            STV(out + o * O + c, a0);
        }
    }
    for (c = cv; c < O; c++)
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
static void bf_dw_fwd_task(const bf_dw_plan *p, int64_t row, int slot,
                           int64_t *tags, bool next) {
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
                bf_dw_expand(p, xr[r], buf + s * g->in_w * O);
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
    /* the next row (when this task does it) reads stride_h new input rows below ours */
    const T *pf = NULL;
    int64_t ih_new = (oh + 1) * g->stride_h - g->pad_top + (g->k_h - 1) * g->dil_h;
    int64_t ih_from = BF_MAX(ih_new - g->stride_h + 1, 0), ih_to = BF_MIN(ih_new + 1, g->in_h);
    if (next && p->mult == 1 && oh + 1 < g->out_h && ih_from < ih_to)
        pf = p->a + (n * g->in_h + ih_from) * g->in_w * g->in_c;
    if (bf_dw_row_taps(y, xr, khv, nk, off, g->k_w, g->stride_w, p->b, g->k_w, O, lo, hi,
                       g->out_w, g->in_w, pf, pf ? (ih_to - ih_from) * g->in_w * g->in_c : 0))
        return;
    int64_t done = bf_dw_interior(y, xr, khv, nk, off, g->k_w, g->stride_w, p->b, g->k_w,
                                  O, lo, hi);
    for (int64_t ow = 0; ow < g->out_w; ow++) {
        if (ow >= lo && ow < done) continue;
        int64_t iw0 = ow * g->stride_w - g->pad_left;
        for (int64_t c = 0; c < cv; c += BF_VL) {
            bf_vec acc = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t kw = 0; kw < g->k_w; kw++) {
                    int64_t iw = iw0 + kw * g->dil_w;
                    if (iw < 0 || iw >= g->in_w) continue;
                    acc += bf_ldv(xr[r] + iw * O + c) *
                           bf_ldv(p->b + (khv[r] * g->k_w + kw) * O + c);
                }
            bf_stv(y + ow * O + c, acc);
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

/*
 * dx row `row` (n, ih) of BWD_INPUT with stride 1 and no multiplier: a forward row of dy with
 * the taps mirrored (off = pad_left - kw*dil, decreasing in kw) through bf_dw_row_taps, written
 * straight into dx (streaming stores when aligned); when this task also does the next row,
 * the one new dy row that row reads is prefetched. Returns false when bf_dw_row_taps does not
 * apply. Kept out of bf_dw_bwd_input_task: inlined there, it made that task's own loops (the
 * multiplier path) 4-11% slower in A/B runs.
 */
static __attribute__((noinline)) bool bf_dw_bwd_row_taps(const bf_dw_plan *p, int64_t row,
                                                         bool next) {
    const bf_conv_geom *g = p->g;
    int64_t n = row / g->in_h, ih = row % g->in_h, O = g->out_c;
    /* the same dy-row gather and interior columns as bf_dw_bwd_input_task's, written out
       again: calling a shared helper from that task made its multiplier path 17-24% slower
       (A/B, dw_mult2_valid_c32_56), the codegen sensitivity noted above */
    const T *dyr[64];
    int64_t khv[64], nk = 0, off[64], lo, hi, l2, h2;
    for (int64_t kh = 0; kh < g->k_h && nk < 64; kh++) {
        int64_t t = ih + g->pad_top - kh * g->dil_h;
        if (t < 0 || t % g->stride_h) continue;
        int64_t oh = t / g->stride_h;
        if (oh >= g->out_h) continue;
        dyr[nk] = p->a + (n * g->out_h + oh) * g->out_w * O, khv[nk] = kh, nk++;
    }
    for (int64_t kw = 0; kw < g->k_w; kw++) off[kw] = g->pad_left - kw * g->dil_w;
    bf_cc_range(off[0], 1, g->out_w, g->in_w, &lo, &hi);
    bf_cc_range(off[g->k_w - 1], 1, g->out_w, g->in_w, &l2, &h2);
    lo = BF_MAX(lo, l2), hi = BF_MAX(BF_MIN(hi, h2), lo);
    int64_t oh_new = ih + 1 + g->pad_top;
    const T *pf = next && g->stride_h == 1 && ih + 1 < g->in_h && oh_new < g->out_h
                      ? p->a + (n * g->out_h + oh_new) * g->out_w * O
                      : NULL;
    return bf_dw_row_taps(p->out + row * g->in_w * g->in_c, dyr, khv, nk, off, g->k_w, 1,
                          p->b, g->k_w, O, lo, hi, g->in_w, g->out_w, pf, g->out_w * O);
}

/* dx[n, ih, :, :] for task row = n*H + ih, gathering from the dy rows that reach it. With a
   multiplier the sums over out_c channels go to scratch first and are folded over q. */
static void bf_dw_bwd_input_task(void *arg, int64_t row, int slot, bool next) {
    const bf_dw_plan *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    if (p->mult == 1 && g->stride_w == 1 && bf_dw_bwd_row_taps(p, row, next)) return;
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
        done = bf_dw_interior(acc_row, dyr, khv, nk, off, g->k_w, 1, p->b, g->k_w, O, lo,
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
            bf_vec acc = {0};
            for (int64_t r = 0; r < nk; r++)
                for (int64_t q = 0; q < nw; q++)
                    acc += bf_ldv(dyr[r] + owv[q] * O + c) *
                           bf_ldv(p->b + (khv[r] * g->k_w + kwv[q]) * O + c);
            bf_stv(acc_row + iw * O + c, acc);
        }
        for (int64_t c = cv; c < O; c++) {
            T acc = 0;
            for (int64_t r = 0; r < nk; r++)
                for (int64_t q = 0; q < nw; q++)
                    acc += dyr[r][owv[q] * O + c] * p->b[(khv[r] * g->k_w + kwv[q]) * O + c];
            acc_row[iw * O + c] = acc;
        }
    }
    if (p->mult == 2) /* one flat loop of adjacent pairs, which GCC and clang vectorise */
        for (int64_t j = 0; j < g->in_w * C; j++) dx[j] = acc_row[2 * j] + acc_row[2 * j + 1];
    else if (p->mult > 1)
        for (int64_t iw = 0; iw < g->in_w; iw++)
            for (int64_t k = 0; k < C; k++) {
                T s = 0;
                for (int64_t q = 0; q < p->mult; q++) s += acc_row[(iw * C + k) * p->mult + q];
                dx[iw * C + k] = s;
            }
}

/* Partial dw over a chunk of (n, oh) rows: for each tap and channel vector, the products over
   the valid ow range are summed in four registers and added to the partial once per row. */
static void bf_dw_bwd_filter_task(void *arg, int64_t task, int slot) {
    const bf_dw_plan *p = arg;
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
                bf_dw_expand(p, p->a + (n * g->in_h + ih) * g->in_w * g->in_c, buf);
            for (int64_t kw = 0; kw < g->k_w; kw++) {
                int64_t off = kw * g->dil_w - g->pad_left, lo, hi;
                bf_cc_range(off, sw, g->in_w, g->out_w, &lo, &hi);
                T *pv = part + (kh * g->k_w + kw) * O;
                const T *xo = xr; /* x of output position ow: xo + ow*sw*O + xoff */
                int64_t xoff = off * O;
                for (int64_t c = 0; c < cv; c += BF_VL) {
                    bf_vec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                    int64_t ow = lo;
                    for (; ow + 4 <= hi; ow += 4) {
                        a0 = BF_VFMA_(bf_ldv(xo + (ow + 0) * sw * O + xoff + c),
                                      bf_ldv(dyr + (ow + 0) * O + c), a0);
                        a1 = BF_VFMA_(bf_ldv(xo + (ow + 1) * sw * O + xoff + c),
                                      bf_ldv(dyr + (ow + 1) * O + c), a1);
                        a2 = BF_VFMA_(bf_ldv(xo + (ow + 2) * sw * O + xoff + c),
                                      bf_ldv(dyr + (ow + 2) * O + c), a2);
                        a3 = BF_VFMA_(bf_ldv(xo + (ow + 3) * sw * O + xoff + c),
                                      bf_ldv(dyr + (ow + 3) * O + c), a3);
                    }
                    for (; ow < hi; ow++)
                        a0 = BF_VFMA_(bf_ldv(xo + ow * sw * O + xoff + c),
                                      bf_ldv(dyr + ow * O + c), a0);
                    bf_stv(pv + c, bf_ldv(pv + c) + (a0 + a1) + (a2 + a3));
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
static void bf_dw_bwd_filter_px_task(void *arg, int64_t task, int slot) {
    const bf_dw_plan *p = arg;
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
                        bf_vec acc = bf_ldv(pv + c);
                        acc = BF_VFMA_(bf_ldv(xp + c), bf_ldv(d + c), acc);
                        acc = BF_VFMA_(bf_ldv(xp + O + c), bf_ldv(d + O + c), acc);
                        acc = BF_VFMA_(bf_ldv(xp + 2 * O + c), bf_ldv(d + 2 * O + c),
                                       acc);
                        acc = BF_VFMA_(bf_ldv(xp + 3 * O + c), bf_ldv(d + 3 * O + c),
                                       acc);
                        bf_stv(pv + c, acc);
                    }
                    for (; c < O; c++)
                        pv[c] += xp[c] * d[c] + xp[O + c] * d[O + c] +
                                 xp[2 * O + c] * d[2 * O + c] + xp[3 * O + c] * d[3 * O + c];
                }
                for (; ow < hi; ow++) {
                    const T *restrict d = dyr + ow * O, *restrict xp = xr + (ow + off) * O;
                    int64_t c = 0;
                    for (; c < cv; c += BF_VL)
                        bf_stv(pv + c, BF_VFMA_(bf_ldv(xp + c), bf_ldv(d + c),
                                                bf_ldv(pv + c)));
                    for (; c < O; c++) pv[c] += xp[c] * d[c];
                }
            }
        }
    }
}

/*
 * 3x3 filters (every MobileNet layer) with any stride, dilation, padding and multiplier. For
 * one channel vector the nine taps' sums stay in nine registers while the task walks its rows
 * pixel by pixel: one dy load and nine x loads per nine multiply-adds, and one add into the
 * partial dW per task. The loops above add into the partial once per tap and row (px: once
 * per four pixels), so they spend most loads and stores on the partial; this one spends them
 * on x and dy. A task is a band of output rows of one image, sized (bf_dw_3x3_band) so that
 * its dy rows and the x rows they read stay in L2 while the channel vectors after the first
 * pass over them. With M > 1 the band's x rows are expanded once per task into scratch.
 */
#define BF_DW3_BAND_BYTES 262144
/* Two channel vectors in one pass where the ISA has the 32 vector registers that their 18
   accumulators need (AVX-512); see bf_dw_3x3_band_run for when */
#if BF_VEC_BYTES == 64
#define BF_DW3_PAIRS 1
#else
#define BF_DW3_PAIRS 0
#endif

/* What a tap reads where it reads padding (one vector; BF_VL <= 64 for every T). */
static const T bf_dw_zeros[64];

/* Output rows per band: the dy rows and their x rows in about BF_DW3_BAND_BYTES. */
static int64_t bf_dw_3x3_band(const bf_conv_geom *g) {
    int64_t per = (g->out_w + g->stride_h * g->in_w) * g->out_c * (int64_t)sizeof(T);
    return BF_MAX(1, BF_MIN(g->out_h, (int64_t)BF_DW3_BAND_BYTES / BF_MAX(per, 1)));
}

/* x rows a band of `rows` output rows reads (at most). */
static int64_t bf_dw_3x3_xrows(const bf_conv_geom *g, int64_t rows) {
    return BF_MIN(g->in_h, (rows - 1) * g->stride_h + 2 * g->dil_h + 1);
}

/* Memory [lo, hi) in x or dy that band (n, oh0..oh1) reads and no earlier band of its image
   did: its dy rows, and its x rows below the previous band's. */
static void bf_dw_3x3_new(const bf_dw_plan *p, int64_t n, int64_t oh0, int64_t oh1,
                          const T **dy, int64_t *ndy, const T **x, int64_t *nx) {
    const bf_conv_geom *g = p->g;
    int64_t OWO = g->out_w * g->out_c, WC = g->in_w * g->in_c;
    *dy = p->b + (n * g->out_h + oh0) * OWO, *ndy = (oh1 - oh0) * OWO;
    int64_t last = oh0 == 0 ? 0 : BF_MIN(g->in_h, (oh0 - 1) * g->stride_h - g->pad_top +
                                                       2 * g->dil_h + 1);
    int64_t ih0 = BF_MAX(last, BF_MAX(0, oh0 * g->stride_h - g->pad_top));
    int64_t ih1 = BF_MIN(g->in_h, (oh1 - 1) * g->stride_h - g->pad_top + 2 * g->dil_h + 1);
    *x = p->a + (n * g->in_h + BF_MIN(ih0, g->in_h)) * WC, *nx = BF_MAX(ih1 - ih0, 0) * WC;
}

/* What the passes of one band share: its x rows from ih0 (in place or expanded), its dy rows
   from oh0, and its interior columns [ilo, ihi) (all three kw in range). */
typedef struct bf_dw3 {
    const bf_conv_geom *g;
    const T *xb, *dyb;
    int64_t oh0, oh1, ih0, ilo, ihi;
} bf_dw3;

/* One pass of a band over NV adjacent channel vectors from c (NV = 1 or 2): the nine taps'
   sums stay in registers while the pass walks the band pixel by pixel, then are added to the
   partial `part`. Inlined with NV constant, so a[][] lives in registers. */
static inline __attribute__((always_inline)) void bf_dw_3x3_pass(const bf_dw3 *b, int64_t c,
                                                                 const int NV, T *part) {
    const bf_conv_geom *g = b->g;
    int64_t O = g->out_c, W = g->in_w, OW = g->out_w, sw = g->stride_w, pl = g->pad_left;
    int64_t xs = sw * O, k1 = g->dil_w * O, k2 = 2 * g->dil_w * O, ilo = b->ilo, ihi = b->ihi;
    bf_vec a[2][9];
#pragma GCC unroll 2
    for (int u = 0; u < NV; u++)
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) a[u][t] = (bf_vec){0};
    for (int64_t oh = b->oh0; oh < b->oh1; oh++) {
        const T *dyr = b->dyb + (oh - b->oh0) * OW * O + c;
        int64_t xo[3], rb[3];
        bool v[3];
        for (int64_t kh = 0; kh < 3; kh++) {
            int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
            v[kh] = ih >= 0 && ih < g->in_h;
            rb[kh] = v[kh] ? (ih - b->ih0) * W * O + c : -1;
            xo[kh] = v[kh] ? rb[kh] + (ilo * sw - pl) * O : 0;
        }
        if (ihi > ilo) {
            const T *x0 = b->xb + xo[0], *x1 = b->xb + xo[1], *x2 = b->xb + xo[2];
            const T *d = dyr + ilo * O;
            int64_t cnt = ihi - ilo;
            if (v[0] && v[1] && v[2]) {
                for (int64_t j = 0; j < cnt; j++, d += O, x0 += xs, x1 += xs, x2 += xs)
#pragma GCC unroll 2
                    for (int u = 0; u < NV; u++) {
                        int64_t e = u * BF_VL;
                        bf_vec dv = bf_ldv(d + e);
                        a[u][0] = BF_VFMA_(bf_ldv(x0 + e), dv, a[u][0]);
                        a[u][1] = BF_VFMA_(bf_ldv(x0 + k1 + e), dv, a[u][1]);
                        a[u][2] = BF_VFMA_(bf_ldv(x0 + k2 + e), dv, a[u][2]);
                        a[u][3] = BF_VFMA_(bf_ldv(x1 + e), dv, a[u][3]);
                        a[u][4] = BF_VFMA_(bf_ldv(x1 + k1 + e), dv, a[u][4]);
                        a[u][5] = BF_VFMA_(bf_ldv(x1 + k2 + e), dv, a[u][5]);
                        a[u][6] = BF_VFMA_(bf_ldv(x2 + e), dv, a[u][6]);
                        a[u][7] = BF_VFMA_(bf_ldv(x2 + k1 + e), dv, a[u][7]);
                        a[u][8] = BF_VFMA_(bf_ldv(x2 + k2 + e), dv, a[u][8]);
                    }
            } else {
                for (int64_t j = 0; j < cnt; j++, d += O, x0 += xs, x1 += xs, x2 += xs)
#pragma GCC unroll 2
                    for (int u = 0; u < NV; u++) {
                        int64_t e = u * BF_VL;
                        bf_vec dv = bf_ldv(d + e);
                        if (v[0]) {
                            a[u][0] = BF_VFMA_(bf_ldv(x0 + e), dv, a[u][0]);
                            a[u][1] = BF_VFMA_(bf_ldv(x0 + k1 + e), dv, a[u][1]);
                            a[u][2] = BF_VFMA_(bf_ldv(x0 + k2 + e), dv, a[u][2]);
                        }
                        if (v[1]) {
                            a[u][3] = BF_VFMA_(bf_ldv(x1 + e), dv, a[u][3]);
                            a[u][4] = BF_VFMA_(bf_ldv(x1 + k1 + e), dv, a[u][4]);
                            a[u][5] = BF_VFMA_(bf_ldv(x1 + k2 + e), dv, a[u][5]);
                        }
                        if (v[2]) {
                            a[u][6] = BF_VFMA_(bf_ldv(x2 + e), dv, a[u][6]);
                            a[u][7] = BF_VFMA_(bf_ldv(x2 + k1 + e), dv, a[u][7]);
                            a[u][8] = BF_VFMA_(bf_ldv(x2 + k2 + e), dv, a[u][8]);
                        }
                    }
            }
        }
        /* border columns: a tap that reads padding reads a vector of zeros instead */
        for (int64_t ow = 0; ow < OW; ow++) {
            if (ow == ilo && ihi > ilo) ow = ihi;
            if (ow >= OW) break;
            const T *q[9];
            for (int64_t t = 0; t < 9; t++) {
                int64_t iw = ow * sw + t % 3 * g->dil_w - pl;
                q[t] = rb[t / 3] >= 0 && iw >= 0 && iw < W ? b->xb + rb[t / 3] + iw * O
                                                           : bf_dw_zeros;
            }
#pragma GCC unroll 2
            for (int u = 0; u < NV; u++) {
                int64_t e = u * BF_VL;
                bf_vec dv = bf_ldv(dyr + ow * O + e);
#pragma GCC unroll 9
                for (int t = 0; t < 9; t++) a[u][t] = BF_VFMA_(bf_ldv(q[t] + e), dv, a[u][t]);
            }
        }
    }
#pragma GCC unroll 2
    for (int u = 0; u < NV; u++)
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) {
            T *pt = part + t * O + c + u * BF_VL;
            bf_stv(pt, bf_ldv(pt) + a[u][t]);
        }
}

/* One band (n, oh0..oh1) into the partial `part`; while it runs, the memory that the band
   (nn, nx0..nx1) needs next (of this image or the next one) is prefetched in address order,
   a slice per pass (the band's own lines are read one or two per pixel, O apart, an order no
   hardware prefetcher follows at DRAM speed). nx1 <= nx0: nothing to prefetch. */
static void bf_dw_3x3_band_run(const bf_dw_plan *p, int64_t n, int64_t oh0, int64_t oh1,
                               int64_t nn, int64_t nx0, int64_t nx1, T *part, int slot) {
    const bf_conv_geom *g = p->g;
    int64_t O = g->out_c, W = g->in_w, OW = g->out_w, sw = g->stride_w, dw = g->dil_w;
    int64_t sh = g->stride_h, pl = g->pad_left;
    const T *pdy = NULL, *px = NULL;
    int64_t npdy = 0, npx = 0;
    if (nx1 > nx0) bf_dw_3x3_new(p, nn, nx0, nx1, &pdy, &npdy, &px, &npx);
    bf_dw3 b = {.g = g, .oh0 = oh0, .oh1 = oh1};
    /* the band's x rows [ih0, ih1): in place, or expanded to O channels in scratch */
    b.ih0 = BF_MAX(0, oh0 * sh - g->pad_top);
    int64_t ih1 = BF_MIN(g->in_h, (oh1 - 1) * sh - g->pad_top + 2 * g->dil_h + 1);
    if (ih1 <= b.ih0) return; /* every row reads padding only */
    b.xb = p->a + (n * g->in_h + b.ih0) * W * g->in_c;
    if (p->mult > 1) {
        T *buf = p->scratch + (int64_t)slot * p->scratch_per;
        for (int64_t ih = b.ih0; ih < ih1; ih++)
            bf_dw_expand(p, p->a + (n * g->in_h + ih) * W * g->in_c, buf + (ih - b.ih0) * W * O);
        b.xb = buf;
    }
    b.ilo = 0, b.ihi = OW;
    for (int64_t kw = 0; kw < 3; kw++) {
        int64_t lo, hi;
        bf_cc_range(kw * dw - pl, sw, W, OW, &lo, &hi);
        b.ilo = BF_MAX(b.ilo, lo), b.ihi = BF_MIN(b.ihi, hi);
    }
    b.ihi = BF_MAX(b.ihi, b.ilo);
    if (b.ilo >= OW) b.ilo = b.ihi = OW;
    b.dyb = p->b + (n * g->out_h + oh0) * OW * O;
    int64_t cv = O / BF_VL * BF_VL, ncv = cv / BF_VL;
    /* Exactly two channel vectors (MobileNet's 32 channels in floats) are one pass, which then
       reads each pixel's channels whole and the band in address order: 0.90x of two passes'
       time (c32@112, interleaved A/B, 2 threads). With more vectors, pairs of them were
       slower than single ones (c576@14 1.4x), so those take one vector a pass. */
    if (BF_DW3_PAIRS && ncv == 2) {
        if (nx1 > nx0) bf_pf_part(pdy, npdy, 0, 1), bf_pf_part(px, npx, 0, 1);
        bf_dw_3x3_pass(&b, 0, 2, part);
    } else {
        for (int64_t k = 0; k < ncv; k++) {
            if (nx1 > nx0) bf_pf_part(pdy, npdy, k, ncv), bf_pf_part(px, npx, k, ncv);
            bf_dw_3x3_pass(&b, k * BF_VL, 1, part);
        }
    }
    for (int64_t c = cv; c < O; c++) { /* channels past the last full vector */
        T acc[9] = {0};
        for (int64_t oh = oh0; oh < oh1; oh++)
            for (int64_t kh = 0; kh < 3; kh++) {
                int64_t ih = oh * sh - g->pad_top + kh * g->dil_h;
                if (ih < 0 || ih >= g->in_h) continue;
                const T *xr = b.xb + (ih - b.ih0) * W * O + c;
                const T *d = b.dyb + (oh - oh0) * OW * O + c;
                for (int64_t kw = 0; kw < 3; kw++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        int64_t iw = ow * sw + kw * dw - pl;
                        if (iw >= 0 && iw < W) acc[kh * 3 + kw] += xr[iw * O] * d[ow * O];
                    }
            }
        for (int64_t t = 0; t < 9; t++) part[t * O + c] += acc[t];
    }
}

/* A strip of consecutive bands in (image, band) order, crossing from one image into the next,
   each band prefetching the one after it: only a strip's first band is read cold. Strips that
   stopped at the end of an image left that cold share at 1 / (bands per image), half the
   bands for 7x7 images (two bands each). Task = strip. */
static void bf_dw_bwd_filter_3x3_task(void *arg, int64_t task, int slot) {
    const bf_dw_plan *p = arg;
    const bf_conv_geom *g = p->g;
    if (bf_exec_cancelled(p->ex)) return;
    int64_t R = p->rows_per_task, nb = bf_cc_ceil_div(g->out_h, R), S = p->strip_bands;
    int64_t b0 = task * S, b1 = BF_MIN(g->n * nb, b0 + S);
    T *part = slot == 0 ? p->out : p->partials + (int64_t)(slot - 1) * p->nel;
    for (int64_t b = b0; b < b1; b++) {
        if (bf_exec_cancelled(p->ex)) return;
        int64_t n = b / nb, oh0 = b % nb * R, oh1 = BF_MIN(g->out_h, oh0 + R);
        int64_t nn = (b + 1) / nb, nx0 = 0, nx1 = 0;
        if (b + 1 < b1) nx0 = (b + 1) % nb * R, nx1 = BF_MIN(g->out_h, nx0 + R);
        bf_dw_3x3_band_run(p, n, oh0, oh1, nn, nx0, nx1, part, slot);
    }
}

static void bf_dw_fwd_chunk(void *arg, int64_t task, int slot) {
    const bf_dw_plan *p = arg;
    int64_t rows = p->g->n * p->g->out_h, tags[64];
    for (int s = 0; s < 64; s++) tags[s] = -1;
    for (int64_t r = task * p->rows_per_task; r < BF_MIN(rows, (task + 1) * p->rows_per_task); r++)
        bf_dw_fwd_task(p, r, slot, tags, r + 1 < BF_MIN(rows, (task + 1) * p->rows_per_task));
#ifdef BF_VSTREAM
    BF_VSTREAM_FENCE(); /* the streaming stores are weakly ordered: drain them before the join */
#endif
}

static void bf_dw_bwd_input_chunk(void *arg, int64_t task, int slot) {
    const bf_dw_plan *p = arg;
    int64_t rows = p->g->n * p->g->in_h;
    for (int64_t r = task * p->rows_per_task; r < BF_MIN(rows, (task + 1) * p->rows_per_task); r++)
        bf_dw_bwd_input_task(arg, r, slot, r + 1 < BF_MIN(rows, (task + 1) * p->rows_per_task));
#ifdef BF_VSTREAM
    if (p->mult == 1 && p->g->stride_w == 1)
        BF_VSTREAM_FENCE(); /* bf_dw_row_taps' streaming stores, as in the forward chunk */
#endif
}

/* Scratch values per thread: one expanded x row per tap row (or a 3x3 filter band's x rows),
   or a dx accumulator row. */
static int64_t bf_dw_scratch_per(bf_conv_op op, const bf_conv_geom *g) {
    int64_t rows = BF_MIN(BF_MAX(g->k_h, 1), 64);
    if (op == BF_CONV_BWD_FILTER && g->k_h == 3 && g->k_w == 3)
        rows = BF_MAX(rows, bf_dw_3x3_xrows(g, bf_dw_3x3_band(g)));
    return bf_cc_round_up(BF_MAX(g->in_w, 1) * g->out_c * rows + 16, 16);
}

static size_t bf_dw_ws(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    size_t tot = bf_cc_mad((size_t)bf_dw_scratch_per(op, g), (size_t)n_threads, 0);
    if (op == BF_CONV_BWD_FILTER)
        tot = bf_cc_mad((size_t)(g->k_h * g->k_w * g->out_c), (size_t)(n_threads - 1), tot);
    /* BWD_FILTER's scratch starts after the partials rounded up to 16 values */
    return bf_cc_mad(bf_cc_mad(tot, 1, op == BF_CONV_BWD_FILTER ? 32 : 16), sizeof(T), 64);
}

static void bf_dw_run(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *b,
                      T *out, const bf_exec *ex) {
    bf_dw_plan p = {.op = op, .g = g, .a = a, .b = b, .out = out, .ex = ex,
                    .mult = g->out_c / g->in_c};
    p.nel = g->k_h * g->k_w * g->out_c;
    p.scratch_per = bf_dw_scratch_per(op, g);
    if (op == BF_CONV_FWD || op == BF_CONV_BWD_INPUT) {
        /* chunks of consecutive rows, so a thread reuses the input rows it just read */
        p.scratch = ex->workspace;
        int64_t rows = g->n * (op == BF_CONV_FWD ? g->out_h : g->in_h);
        p.rows_per_task = BF_MAX(1, BF_MIN(16, rows / (8 * ex->n_threads)));
        bf_parallel_for(ex, bf_cc_ceil_div(rows, p.rows_per_task),
                        op == BF_CONV_FWD ? bf_dw_fwd_chunk : bf_dw_bwd_input_chunk, &p);
    } else {
        p.partials = ex->workspace;
        p.scratch = p.partials + bf_cc_round_up(p.nel * (ex->n_threads - 1), 16);
        int64_t rows = g->n * g->out_h, ntasks;
        bf_task_fn fn;
        /* 3x3: bands, with any stride (strided rows without a multiplier went to the
           per-tap loop below while a strip stopped at the end of its image; with strips
           running on into the next image the bands are faster there too: s2 c144@56,
           interleaved A/B, band / per-tap 0.86x on 1 thread, 0.76x on 2) */
        if (g->k_h == 3 && g->k_w == 3) {
            p.rows_per_task = bf_dw_3x3_band(g);
            /* strips of bands: long enough that most bands are prefetched by the one before,
               enough of them (8 per thread) to balance */
            int64_t bands = g->n * bf_cc_ceil_div(g->out_h, p.rows_per_task);
            p.strip_bands = BF_MAX(1, bands / (8 * ex->n_threads));
            ntasks = bf_cc_ceil_div(bands, p.strip_bands);
            fn = bf_dw_bwd_filter_3x3_task;
        } else {
            /* pixel order for unit-stride rows of at least 8 channel vectors (interleaved
               A/B, 2 threads: 14x14x576 and 7x7x960 9% faster; with stride 2 (56x56x144) it
               was 34% slower, and 32 channels gained nothing) */
            bool px = p.mult == 1 && g->stride_w == 1 && g->out_c >= 8 * BF_VL;
            p.rows_per_task = BF_MAX(1, rows / (8 * ex->n_threads));
            ntasks = bf_cc_ceil_div(rows, p.rows_per_task);
            fn = px ? bf_dw_bwd_filter_px_task : bf_dw_bwd_filter_task;
        }
        bf_partials_run(out, p.partials, p.nel, ex->n_threads, ntasks, fn, &p, ex);
    }
}

/* The depthwise row kernels keep per-row tap lists of at most 64 entries. */
static bool bf_dw_wanted(const bf_conv_geom *g) {
    return bf_conv_is_depthwise(g) && g->k_h <= 64 && g->k_w <= 64;
}
