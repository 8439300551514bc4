/*
 * conv_gemm_direct_fwd.h - bf_sd_*: the direct dense FWD, which packs only the filter, and
 * stride-1 BWD_INPUT run as a FWD of dy with the flipped, transposed filter (bf_sd_bwd_geom).
 * Part of the kernel template (conv_gemm_impl.h; no include guard); uses conv_gemm_vec.h.
 * The entry points take it before the GEMMs for FWD with <= 4 input channels (a 3-channel
 * stem) or a stride-1 spatial filter over <= SD_C_MAX channels (bf_sd_wanted).
 *
 * For a 3-channel stem the im2col rows are short runs that cost more to pack than to
 * multiply. Instead each block of SD_RB output pixels x SD_NV channel vectors is accumulated
 * in registers over every (kh, kw, c) tap with a broadcast of x times SD_NV vectors of the
 * filter, packed once per call as [oc block][KH*KW*C][SD_NV*BF_VL] (zeros past out_c). Blocks
 * whose every column tap is inside the image read x in place; border blocks (and the last,
 * partial one) first copy the window they read, zero-padded, into per-thread scratch.
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_sd_plan      BF_KFN(bf_sd_plan)
#define bf_sd_wanted    BF_KFN(bf_sd_wanted)
#define bf_sd_winw      BF_KFN(bf_sd_winw)
#define bf_sd_pack_task BF_KFN(bf_sd_pack_task)
#define bf_sd_block     BF_KFN(bf_sd_block)
#define bf_sd_task      BF_KFN(bf_sd_task)
#define bf_sd_ws        BF_KFN(bf_sd_ws)
#define bf_sd_run       BF_KFN(bf_sd_run)
#define bf_sd_bwd_geom  BF_KFN(bf_sd_bwd_geom)

#if BF_VEC_BYTES >= 64
#define SD_NV 4
#else
#define SD_NV 2
#endif
#define SD_RB 6
#define SD_KWC_MAX 1024 /* k_w * in_c of the per-task tap offset table */

typedef struct bf_sd_plan {
    const bf_conv_geom *g;
    const T *x, *w;
    T *y;
    T *wpack;   /* [nob][K][SD_NV*BF_VL] */
    T *win;     /* per thread: k_h windows of winw*C */
    int64_t nob, K, winw, win_per;
    bool bwd;   /* BWD_INPUT as a forward conv of dy: w is the original [KH, KW, C, O] */
    bool stream; /* y past BF_CG_STREAM_BYTES, 64-byte aligned rows: streaming stores */
    const bf_exec *ex;
} bf_sd_plan;

/* Few input channels (packing short im2col runs costs more than the multiplies), or a
   stride-1 spatial filter over up to SD_C_MAX channels. Measured A/B, 2 threads, against the
   packed GEMM: vgg 3x3/128 48.9 -> 36.7 ms, rn50 3x3/64 13.6 -> 10.5 ms, atrous 3x3/256
   14.5 -> 13.6 ms; the stride-2 3x3/256 (10.7 -> 12.3 ms) and the 1x1 256->64 (6.0 -> 6.5 ms)
   lose, so they stay on the GEMM. Against the GEMM that reads A in place (UKRI), FWD and
   BWD_INPUT: atrous 3x3/256 0.95x and 0.94x of this kernel's time, rn50 3x3/64 1.07x, vgg
   3x3/128 1.08x. AVX2 (6 x 16 in-place microkernel) draws it lower, at 64: on a Zen 5 the
   GEMM took atrous 3x3/256 1.10x (FWD) and 1.08x (BWD_INPUT) of the direct kernel's time, but
   on a Zen 3 (32 KiB L1; the direct kernel reads a 9 * C * 16-float filter block per 16
   output channels, 147 KiB for 256 channels, 73 KiB for 128) the GEMM takes atrous 0.90x and
   0.95x, vgg 3x3/128 0.91x and 0.87x (minima of 5-6 interleaved runs, 1 thread, CPU time;
   medians 0.75-0.85x), and rn50 3x3/64 1.01x and 0.99x (medians 0.89x, 0.80x), so 64 stays
   direct. (The Zen 5 runs AVX-512 anyway.) */
#if defined(UKRI) && BF_VEC_BYTES < 64
#define SD_C_MAX 64
#elif defined(UKRI)
#define SD_C_MAX 128
#else
#define SD_C_MAX 256
#endif
static bool bf_sd_wanted(bf_conv_op op, const bf_conv_geom *g) {
    bool s1 = g->stride_h == 1 && g->stride_w == 1;
    return op == BF_CONV_FWD && g->groups == 1 && g->out_c >= BF_VL &&
           g->k_w * g->in_c <= SD_KWC_MAX && g->k_h <= 64 &&
           (g->in_c <= 4 || (s1 && g->in_c <= SD_C_MAX && g->k_h * g->k_w > 1));
}

/* Width (pixels) of the input window of one block of SD_RB output columns. */
static int64_t bf_sd_winw(const bf_conv_geom *g) {
    return (SD_RB - 1) * g->stride_w + (g->k_w - 1) * g->dil_w + 1;
}

static void bf_sd_pack_task(void *arg, int64_t ob, int slot) {
    const bf_sd_plan *p = arg;
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
bf_sd_block(int rb, const bf_sd_plan *p, const T *const *xb, const int64_t *khv,
            int64_t nk, const int64_t *xoff, int64_t ps, T *yq) {
    const bf_conv_geom *g = p->g;
    const int64_t O = g->out_c, nvl = SD_NV * BF_VL, kwc = g->k_w * g->in_c;
    for (int64_t ob = 0; ob < p->nob; ob++) {
        const T *wp = p->wpack + ob * p->K * nvl;
        int64_t o0 = ob * nvl;
        bf_vec acc[SD_RB][SD_NV];
#pragma GCC unroll 32
        for (int i = 0; i < rb; i++)
#pragma GCC unroll 8
            for (int v = 0; v < SD_NV; v++) acc[i][v] = (bf_vec){0};
        for (int64_t r = 0; r < nk; r++) {
            const T *restrict xr = xb[r];
            const T *restrict wr = wp + khv[r] * kwc * nvl;
            for (int64_t j = 0; j < kwc; j++) {
                bf_vec wv[SD_NV];
#pragma GCC unroll 8
                for (int v = 0; v < SD_NV; v++) wv[v] = bf_ldv(wr + j * nvl + v * BF_VL);
                const T *restrict xj = xr + xoff[j];
#pragma GCC unroll 32
                for (int i = 0; i < rb; i++) {
                    bf_vec xv = bf_vsplat(xj[i * ps]);
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
#if defined(BF_VSTREAM) && BF_VEC_BYTES >= 64
                    if (p->stream) {
                        BF_VSTREAM(yp + v * BF_VL, acc[i][v]);
                        continue;
                    }
#endif
                    bf_stv(yp + v * BF_VL, acc[i][v]);
                } else if (oc < O) {
                    T tmp[BF_VL];
                    bf_stv(tmp, acc[i][v]);
                    memcpy(yp + v * BF_VL, tmp, (size_t)(O - oc) * sizeof(T));
                }
            }
        }
    }
}

static void bf_sd_task(void *arg, int64_t row, int slot) {
    const bf_sd_plan *p = arg;
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
        case 1: bf_sd_block(1, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 2: bf_sd_block(2, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 3: bf_sd_block(3, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 4: bf_sd_block(4, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        case 5: bf_sd_block(5, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        default: bf_sd_block(SD_RB, p, xb, khv, nk, xoff, ps, yrow + q0 * O); break;
        }
    }
#if defined(BF_VSTREAM) && BF_VEC_BYTES >= 64
    if (p->stream) BF_VSTREAM_FENCE(); /* drain the streaming stores before the join */
#endif
}

static size_t bf_sd_ws(const bf_conv_geom *g, int n_threads) {
    int64_t nvl = SD_NV * BF_VL, nob = bf_cc_ceil_div(g->out_c, nvl);
    /* the same rounded pieces bf_sd_run lays out: round_up(x + 16, 16) <= x + 31 */
    size_t wp = bf_cc_mad(bf_cc_mad((size_t)nob, (size_t)(g->k_h * g->k_w * g->in_c), 0),
                          (size_t)nvl, 32);
    size_t per = bf_cc_mad(bf_cc_mad((size_t)bf_sd_winw(g), (size_t)g->in_c, 0),
                           (size_t)g->k_h, 32);
    return bf_cc_mad(bf_cc_mad(per, (size_t)n_threads, wp), sizeof(T), 64);
}

static void bf_sd_run(const bf_conv_geom *g, const T *x, const T *w, T *y, bool bwd,
                      const bf_exec *ex) {
    int64_t nvl = SD_NV * BF_VL;
    bf_sd_plan p = {.g = g, .x = x, .w = w, .y = y, .ex = ex, .bwd = bwd,
                    .nob = bf_cc_ceil_div(g->out_c, nvl),
                    .K = g->k_h * g->k_w * g->in_c, .winw = bf_sd_winw(g)};
    p.wpack = ex->workspace;
    p.win = p.wpack + bf_cc_round_up(p.nob * p.K * nvl + 16, 16);
    p.win_per = bf_cc_round_up(p.winw * g->in_c * g->k_h + 16, 16);
    if (g->n * g->out_h * g->out_w == 0) return;
#if defined(BF_VSTREAM) && BF_VEC_BYTES >= 64
    /* As in the row GEMM: an output this large leaves the cache before anyone reads it, so
       skip the read for ownership of its lines. Whole vectors are aligned when y and a
       pixel's O values are (O a multiple of the vector). Interleaved A/B: rn50 stem 7x7/s2
       (26 MB y) 0.95x at 1 thread, 0.94x at 2; vgg 3x3/128 (26 MB) 0.98x at 1 thread, even
       at 2. */
    p.stream = (double)g->n * g->out_h * g->out_w * g->out_c * sizeof(T) >= BF_CG_STREAM_BYTES &&
               (uintptr_t)y % BF_VEC_BYTES == 0 && g->out_c % BF_VL == 0;
#endif
    bf_parallel_for(ex, p.nob, bf_sd_pack_task, &p);
    bf_parallel_for(ex, g->n * g->out_h, bf_sd_task, &p);
}

/* BWD_INPUT with stride 1 is a forward convolution of dy with the flipped, transposed filter:
   dx[ih] = sum_kh dy[ih + pad_top - kh*dil] W[kh], i.e. a forward conv over dy with
   pad' = (k-1)*dil - pad and tap kh' = KH-1-kh. *g2 is that forward geometry; true when it is
   one the direct forward kernel takes (pads in [0, (k-1)*dil]). */
static bool bf_sd_bwd_geom(const bf_conv_geom *g, bf_conv_geom *g2) {
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
    return g->in_c >= 5 && bf_sd_wanted(BF_CONV_FWD, g2);
}

#undef SD_NV
#undef SD_RB
#undef SD_C_MAX
#undef SD_KWC_MAX
