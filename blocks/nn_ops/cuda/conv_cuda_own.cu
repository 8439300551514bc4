/*
 * conv_cuda_own.cu - our own CUDA kernels for the three convolution ops (use_cudnn = 0, and the
 * depthwise ops always, as TensorFlow does), plus the pad / crop / filter-transpose helpers of
 * the cuDNN path.
 *
 * Each op is a GEMM over gathered operands (implicit GEMM, no im2col buffer), per group g:
 *   FWD        y[m=(n,oh,ow), co]      = sum_{k=(kh,kw,ci)}  x(n, oh*s-p+kh*d, .., ci) w[k, co]
 *   BWD_INPUT  dx[m=(n,ih,iw), ci]     = sum_{k=(kh,kw,co)}  dy(n, (ih+p-kh*d)/s, .., co)
 * w[kh,kw,ci,co] (taps where ih+p-kh*d is not a multiple of s, or out of range, read zero)
 *   BWD_FILTER dw[m=(kh,kw,ci), co]    = sum_{k=(n,oh,ow)}   x(n, oh*s-p+kh*d, .., ci)
 * dy[n,oh,ow,co]
 * The tiled kernel stages BK = 16 deep slices of the gathered operands in shared memory and
 * gives each of 256 threads a 4x4 block of outputs, in a 64x64 tile, or for BWD_INPUT with at
 * most 16 input channels per group a 256x16 one (the RGB stem would fill 3 of 64 columns).
 * BWD_FILTER's long reduction (N*OH*OW) is split over blocks; each split writes its partial sums
 * to the workspace and a second kernel adds them in split order, so results are bitwise
 * reproducible (no atomics).
 *
 * BWD_INPUT with stride s > 1 splits dx into stride phases (py, px) = (ih mod sh, iw mod sw)
 * rather than multiply the zero taps ((s-1)/s of them per axis): in phase py the taps whose
 * dy row is whole are the same for every pixel, ky = k0 + t*sh/gcd(sh,dh), and the dy row of
 * pixel ih = py + jy*sh under tap t is jy + o0 - t*dh/gcd(sh,dh) (likewise in x; bi_axis_of).
 * Each phase is an implicit GEMM of its own, with M = N * (pixels of the phase) rows and
 * K = (its ky taps) * (its kx taps) * Og, so the work is that of the nonzero taps only. The
 * work items (group, phase) go on grid.z (looped over when more than 65535); each block derives
 * its phase's taps once (gemm_blk_of), and blocks past a smaller phase's M exit. Stride 1 is
 * one phase with every tap: the same kernel, with no divisions added.
 *
 * Depthwise (groups == C, one input channel per group) has GEMMs of width M (the multiplier),
 * too thin to tile. NHWC goes to the kernels of conv_cuda_depthwise.cu (bf_dw_nhwc_takes);
 * NCHW, and filter gradients of filter sizes other than 3, 5 and 7, use the direct kernels
 * here: one thread per output element, gathering its inputs (forward and backprop-input), or
 * one thread per (filter element, split) for the filter gradient, again with an ordered
 * second-pass reduction.
 *
 * f16/bf16 load, convert to float, accumulate in float, round once on store; f64 in double.
 */
#include "conv_cuda_device.cuh"
#include "conv_cuda_internal.cuh"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bf_cgeo bf_cgeo_from(const bf_conv_geom *g) {
    bf_cgeo c;
    c.n = (int)g->n, c.h = (int)g->in_h, c.w = (int)g->in_w, c.c = (int)g->in_c;
    c.kh = (int)g->k_h, c.kw = (int)g->k_w, c.cg = (int)g->k_in_c, c.o = (int)g->out_c;
    c.oh = (int)g->out_h, c.ow = (int)g->out_w;
    c.sh = (int)g->stride_h, c.sw = (int)g->stride_w, c.dh = (int)g->dil_h, c.dw = (int)g->dil_w;
    c.pt = (int)g->pad_top, c.pl = (int)g->pad_left;
    c.groups = (int)g->groups, c.og = (int)(g->out_c / g->groups);
    c.nchw = g->nchw;
    return c;
}

void bf_note_add(char *note, size_t size, const char *fmt, ...) {
    if (!note || size == 0) return;
    size_t len = strnlen(note, size);
    if (len >= size - 1) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + len, size - len, fmt, ap);
    va_end(ap);
}

/* ---- tiled implicit GEMM ------------------------------------------------------------------- */

/* Tile shapes: a block computes TBM rows (m) x TBN columns (nn) of its GEMM, in BK-deep slices
 * of the reduction, with 256 threads of 4x4 outputs each. The wide 64x64 tile serves every op.
 * The thin 256x16 tile serves BWD_INPUT when a group has at most 16 input channels (NC = cg),
 * where most of a 64-wide tile would be columns past NC (the RGB stem: 3 of 64). */
enum { BM = 64, BN = 64, BK = 16, GEMM_THREADS = 256 };
enum { THIN_BM = 256, THIN_BN = 16 };

/*
 * One axis of BWD_INPUT's stride phases. Phase p holds the pixels iy = p + s*j, j in [0, n).
 * Pixel iy gets dy row (iy + pad - ky*d)/s from the taps ky with iy + pad - ky*d a multiple of
 * s, i.e. with (p + pad - ky*d) mod s == 0: the same taps for every pixel of the phase. Since
 * ky*d mod s repeats with period s/gcd(s,d) (and takes each value once per period), they are
 * ky = k0 + t*ks, t in [0, nk), ks = s/gcd(s,d), or none; tap t reads dy row
 * j + o0 - t*os, os = d/gcd(s,d), o0 = (p + pad - k0*d)/s. Stride 1: one phase, n = in,
 * k0 = 0, ks = 1, nk = k, o0 = pad, os = d (plain stride-1 backprop).
 */
struct bi_axis {
    int n;          /* pixels of the phase along the axis */
    int k0, ks, nk; /* its taps: k0 + t*ks, t < nk */
    int o0, os;     /* dy row of pixel j under tap t: j + o0 - t*os */
};

/* Phase p (0 <= p < min(s, in)) of an axis of `in` pixels, stride s, dilation d, leading pad
 * `pad`, filter size k. */
__host__ __device__ __forceinline__ bi_axis bi_axis_of(int p, int in, int s, int d, int pad,
                                                       int k) {
    if (s == 1) return bi_axis{in, 0, 1, k, pad, d}; /* the common case, without divisions */
    int gcd = s, r = d;
    while (r) {
        int t = gcd % r;
        gcd = r, r = t;
    }
    bi_axis x;
    x.n = (in - 1 - p) / s + 1;
    x.ks = s / gcd, x.os = d / gcd;
    x.k0 = 0, x.nk = 0, x.o0 = 0;
    for (int ky = 0; ky < k && ky < x.ks; ky++) { /* the first valid tap, if any */
        int t = p + pad - ky * d;
        if (t % s == 0) {
            x.k0 = ky, x.nk = (k - 1 - ky) / x.ks + 1, x.o0 = t / s;
            break;
        }
    }
    return x;
}

/* BWD_INPUT's stride phases per axis: min(stride, size), as phases past the edge are empty.
 * The other ops have one phase. */
__host__ __device__ __forceinline__ int bi_phases_y(const bf_cgeo &g) {
    return g.sh < g.h ? g.sh : g.h;
}
__host__ __device__ __forceinline__ int bi_phases_x(const bf_cgeo &g) {
    return g.sw < g.w ? g.sw : g.w;
}

/* What a block works on for the whole of its reduction: group, split of the reduction
 * (BWD_FILTER), and for BWD_INPUT the stride phase (py, px), a GEMM of its own with
 * M = N * y.n * x.n rows m = (n, jy, jx) (pixel (py + jy*sh, px + jx*sw)) and
 * K = y.nk * x.nk * og, k = (ty, tx, co) (tap (y.k0 + ty*y.ks, x.k0 + tx*x.ks), channel co). */
struct gemm_blk {
    int grp, split, M, K;
    int py, px;
    bi_axis y, x;
};

/* Work item z: (grp, split) = (z / splits, z % splits) for FWD and BWD_FILTER, whose M and K
 * are the launch's; (grp, phase) = (z / phases, z % phases), phase = py * phases_x + px, for
 * BWD_INPUT, which never splits its reduction and whose M and K are the phase's. */
template <int OP>
__host__ __device__ __forceinline__ gemm_blk gemm_blk_of(const bf_cgeo &g, int z, int splits,
                                                         int M, int K) {
    gemm_blk p;
    if (OP == BF_CONV_BWD_INPUT) {
        int phx = bi_phases_x(g), phases = bi_phases_y(g) * phx, ph = 0;
        if (phases > 1) ph = z % phases, z /= phases; /* (stride 1 without divisions) */
        p.grp = z, p.split = 0;
        p.py = ph / phx, p.px = ph % phx;
        p.y = bi_axis_of(p.py, g.h, g.sh, g.dh, g.pt, g.kh);
        p.x = bi_axis_of(p.px, g.w, g.sw, g.dw, g.pl, g.kw);
        p.M = g.n * p.y.n * p.x.n;
        p.K = p.y.nk * p.x.nk * g.og;
    } else {
        p.grp = z / splits, p.split = z % splits, p.M = M, p.K = K;
        p.py = p.px = 0;
        p.y = p.x = bi_axis{0, 0, 1, 0, 0, 0};
    }
    return p;
}

/* The gathered operands A [M x K] and B [K x NC] of block p's GEMM, zero outside. */
template <typename T, int OP>
__host__ __device__ __forceinline__ typename bf_acc<T>::type
gemm_a(const bf_cgeo &g, const gemm_blk &p, const T *__restrict__ a, int m, int k, int kend) {
    typedef typename bf_acc<T>::type A;
    if (m >= p.M || k >= kend) return A(0);
    if (OP == BF_CONV_FWD) {
        int ci = k % g.cg, tap = k / g.cg, kx = tap % g.kw, ky = tap / g.kw;
        int ox = m % g.ow, t = m / g.ow, oy = t % g.oh, n = t / g.oh;
        int iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
        if ((unsigned)iy >= (unsigned)g.h || (unsigned)ix >= (unsigned)g.w) return A(0);
        return bf_ld(a[bf_act_idx(g.nchw, n, iy, ix, p.grp * g.cg + ci, g.h, g.w, g.c)]);
    } else if (OP == BF_CONV_BWD_INPUT) { /* a = dy, m = (n, jy, jx), k = (ty, tx, co) */
        int co = k % g.og, tap = k / g.og, tx = tap % p.x.nk, ty = tap / p.x.nk;
        int jx = m % p.x.n, t = m / p.x.n, jy = t % p.y.n, n = t / p.y.n;
        int oy = jy + p.y.o0 - ty * p.y.os, ox = jx + p.x.o0 - tx * p.x.os;
        if ((unsigned)oy >= (unsigned)g.oh || (unsigned)ox >= (unsigned)g.ow) return A(0);
        return bf_ld(a[bf_act_idx(g.nchw, n, oy, ox, p.grp * g.og + co, g.oh, g.ow, g.o)]);
    } else { /* BWD_FILTER: a = x, m = (kh, kw, ci), k = (n, oh, ow) */
        int ci = m % g.cg, tap = m / g.cg, kx = tap % g.kw, ky = tap / g.kw;
        int ox = k % g.ow, t = k / g.ow, oy = t % g.oh, n = t / g.oh;
        int iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
        if ((unsigned)iy >= (unsigned)g.h || (unsigned)ix >= (unsigned)g.w) return A(0);
        return bf_ld(a[bf_act_idx(g.nchw, n, iy, ix, p.grp * g.cg + ci, g.h, g.w, g.c)]);
    }
}

template <typename T, int OP>
__host__ __device__ __forceinline__ typename bf_acc<T>::type
gemm_b(const bf_cgeo &g, const gemm_blk &p, const T *__restrict__ b, int k, int nn, int NC,
       int kend) {
    typedef typename bf_acc<T>::type A;
    if (nn >= NC || k >= kend) return A(0);
    if (OP == BF_CONV_FWD) { /* w[k = (kh,kw,ci), co] */
        return bf_ld(b[k * g.o + p.grp * g.og + nn]);
    } else if (OP == BF_CONV_BWD_INPUT) { /* w[ky, kx, ci = nn, co], k = (ty, tx, co) */
        int co = k % g.og, tap = k / g.og, tx = tap % p.x.nk, ty = tap / p.x.nk;
        int ky = p.y.k0 + ty * p.y.ks, kx = p.x.k0 + tx * p.x.ks;
        return bf_ld(b[((ky * g.kw + kx) * g.cg + nn) * g.o + p.grp * g.og + co]);
    } else { /* dy[n, oh, ow, co = nn], k = (n, oh, ow) */
        int ox = k % g.ow, t = k / g.ow, oy = t % g.oh, n = t / g.oh;
        return bf_ld(b[bf_act_idx(g.nchw, n, oy, ox, p.grp * g.og + nn, g.oh, g.ow, g.o)]);
    }
}

/* Offset of output (m, nn) of block p's GEMM in `out`. */
template <int OP>
__host__ __device__ __forceinline__ int gemm_out_idx(const bf_cgeo &g, const gemm_blk &p, int m,
                                                     int nn) {
    if (OP == BF_CONV_FWD) {
        int ox = m % g.ow, t = m / g.ow, oy = t % g.oh, n = t / g.oh;
        return bf_act_idx(g.nchw, n, oy, ox, p.grp * g.og + nn, g.oh, g.ow, g.o);
    } else if (OP == BF_CONV_BWD_INPUT) {
        int jx = m % p.x.n, t = m / p.x.n, jy = t % p.y.n, n = t / p.y.n;
        return bf_act_idx(g.nchw, n, p.py + jy * g.sh, p.px + jx * g.sw, p.grp * g.cg + nn, g.h,
                          g.w, g.c);
    } else {
        return m * g.o + p.grp * g.og + nn;
    }
}

/* Blocks per SM the register allocation must allow: the wide tile 4 (3 in double), i.e. at most
 * 64 (80) registers a thread, what the compiler picked for it before the thin tile existed; the
 * thin tile 2 (at most 128 registers). */
template <typename T, int TBM> constexpr int gemm_min_blocks() {
    return TBM == BM ? (sizeof(T) == 8 ? 3 : 4) : 2;
}

/* Tile (m0, n0) of work item p: the body of gemm_kernel. */
template <typename T, int OP, int TBM, int TBN>
__device__ __forceinline__ void gemm_tile(const bf_cgeo &g, const gemm_blk &p,
                                          const T *__restrict__ a, const T *__restrict__ b,
                                          T *__restrict__ out,
                                          typename bf_acc<T>::type *__restrict__ partial, int M,
                                          int NC, int kchunk, int splits, int m0, int n0) {
    typedef typename bf_acc<T>::type A;
    enum { TX = TBN / 4 }; /* threads across the columns (256 / TX across the rows) */
    static_assert(TBM * TBN == 16 * GEMM_THREADS, "4x4 outputs per thread");
    static_assert((TBM * BK) % GEMM_THREADS == 0 && (TBN * BK) % GEMM_THREADS == 0, "tile loads");
    __shared__ A As[BK][TBM + 1];
    __shared__ A Bs[BK][TBN + 1];
    int kbeg = p.split * kchunk, kend = min(p.K, kbeg + kchunk);
    int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    A acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = A(0);

    for (int k0 = kbeg; k0 < kend; k0 += BK) {
#pragma unroll
        for (int i = 0; i < (TBM * BK) / GEMM_THREADS; i++) {
            int idx = threadIdx.x + i * GEMM_THREADS;
            int kk = idx % BK, mm = idx / BK;
            As[kk][mm] = gemm_a<T, OP>(g, p, a, m0 + mm, k0 + kk, kend);
        }
#pragma unroll
        for (int i = 0; i < (TBN * BK) / GEMM_THREADS; i++) {
            int idx = threadIdx.x + i * GEMM_THREADS;
            int nn = idx % TBN, kk = idx / TBN;
            Bs[kk][nn] = gemm_b<T, OP>(g, p, b, k0 + kk, n0 + nn, NC, kend);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            A ra[4], rb[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                ra[i] = As[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; j++)
                rb[j] = Bs[kk][tx + TX * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads(); /* before the next slice (or work item) overwrites As / Bs */
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty * 4 + i;
        if (m >= p.M) continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int nn = n0 + tx + TX * j; /* adjacent threads write adjacent channels */
            if (nn >= NC) continue;
            if (splits > 1)
                partial[((size_t)(p.split * g.groups + p.grp) * M + m) * NC + nn] = acc[i][j];
            else
                out[gemm_out_idx<OP>(g, p, m, nn)] = bf_st<T>(acc[i][j]);
        }
    }
}

/*
 * grid = (ceil(M/TBM), ceil(NC/TBN), min(nz, 65535)) with nz work items (gemm_blk_of):
 * groups * splits for FWD and BWD_FILTER, one a block (nz <= 65535 there); groups * phases for
 * BWD_INPUT, where block (bx, by, bz) does tile (bx, by) of items bz, bz + gridDim.z, ... and
 * M is the largest phase's (phase (0, 0)); a block past its item's M skips it (the same for the
 * whole block, so no barrier is split). Split s of an item sums k in
 * [s*kchunk, min(K, (s+1)*kchunk)). With splits == 1 the result goes to `out`; otherwise to
 * partial[((s*groups + grp)*M + m)*NC + nn] for gemm_reduce.
 */
template <typename T, int OP, int TBM, int TBN>
__global__ void __launch_bounds__(GEMM_THREADS, gemm_min_blocks<T, TBM>())
    gemm_kernel(bf_cgeo g, const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ out,
                typename bf_acc<T>::type *__restrict__ partial, int M, int NC, int K, int kchunk,
                int splits, int nz) {
    int m0 = blockIdx.x * TBM, n0 = blockIdx.y * TBN;
    if (OP == BF_CONV_BWD_INPUT) { /* work items may outnumber grid.z; phases differ in M */
        for (int z = blockIdx.z; z < nz; z += gridDim.z) {
            const gemm_blk p = gemm_blk_of<OP>(g, z, splits, M, K);
            if (m0 < p.M) /* the same for the whole block */
                gemm_tile<T, OP, TBM, TBN>(g, p, a, b, out, partial, M, NC, kchunk, splits, m0,
                                           n0);
        }
    } else { /* nz <= 65535 (bwd_filter_splits, and at most 65535 groups) */
        const gemm_blk p = gemm_blk_of<OP>(g, blockIdx.z, splits, M, K);
        gemm_tile<T, OP, TBM, TBN>(g, p, a, b, out, partial, M, NC, kchunk, splits, m0, n0);
    }
}

template <typename T, int OP, int TBM, int TBN>
static void launch_gemm(const bf_cgeo &g, const T *a, const T *b, T *out,
                        typename bf_acc<T>::type *partial, int M, int NC, int K, int kchunk,
                        int splits, int nz, cudaStream_t st) {
    dim3 grid((M + TBM - 1) / TBM, (NC + TBN - 1) / TBN, nz < 65535 ? nz : 65535);
    gemm_kernel<T, OP, TBM, TBN>
        <<<grid, GEMM_THREADS, 0, st>>>(g, a, b, out, partial, M, NC, K, kchunk, splits, nz);
}

/* out[HWIO f] = sum over s, in order, of the split partials (both reduction layouts). */
template <typename T>
__global__ void gemm_reduce(bf_cgeo g, const typename bf_acc<T>::type *__restrict__ partial,
                            T *__restrict__ out, int M, int NC, int splits) {
    typedef typename bf_acc<T>::type A;
    int total = g.groups * M * NC;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int nn = i % NC, t = i / NC, m = t % M, grp = t / M;
        A s = A(0);
        for (int sp = 0; sp < splits; sp++)
            s += partial[(size_t)sp * total + i];
        out[m * g.o + grp * g.og + nn] = bf_st<T>(s);
    }
}

/* ---- direct kernels (depthwise) ---------------------------------------------------------- */

/* y element i (in y's layout): sum over kh, kw and the group's input channels of x * w. */
template <typename T>
__host__ __device__ __forceinline__ typename bf_acc<T>::type
direct_fwd_elem(const bf_cgeo &g, const T *__restrict__ x, const T *__restrict__ w, int i) {
    typedef typename bf_acc<T>::type A;
    int n, oy, ox, co;
    if (g.nchw) {
        ox = i % g.ow;
        int t = i / g.ow;
        oy = t % g.oh;
        t /= g.oh;
        co = t % g.o;
        n = t / g.o;
    } else {
        co = i % g.o;
        int t = i / g.o;
        ox = t % g.ow;
        t /= g.ow;
        oy = t % g.oh;
        n = t / g.oh;
    }
    int grp = co / g.og;
    A s = A(0);
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pt + ky * g.dh;
        if ((unsigned)iy >= (unsigned)g.h) continue;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pl + kx * g.dw;
            if ((unsigned)ix >= (unsigned)g.w) continue;
            for (int ci = 0; ci < g.cg; ci++)
                s += bf_ld(x[bf_act_idx(g.nchw, n, iy, ix, grp * g.cg + ci, g.h, g.w, g.c)]) *
                     bf_ld(w[((ky * g.kw + kx) * g.cg + ci) * g.o + co]);
        }
    }
    return s;
}

/* One thread per y element. */
template <typename T>
__global__ void direct_fwd(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ w,
                           T *__restrict__ y, int total) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
        y[i] = bf_st<T>(direct_fwd_elem(g, x, w, i));
}

/* dx element i (in x's layout): gathers the dy positions whose window covers it; taps where
 * ih + pad - kh*dil is not a multiple of the stride read nothing. */
template <typename T>
__host__ __device__ __forceinline__ typename bf_acc<T>::type
direct_bwd_input_elem(const bf_cgeo &g, const T *__restrict__ dy, const T *__restrict__ w, int i) {
    typedef typename bf_acc<T>::type A;
    int n, iy, ix, ci;
    if (g.nchw) {
        ix = i % g.w;
        int t = i / g.w;
        iy = t % g.h;
        t /= g.h;
        ci = t % g.c;
        n = t / g.c;
    } else {
        ci = i % g.c;
        int t = i / g.c;
        ix = t % g.w;
        t /= g.w;
        iy = t % g.h;
        n = t / g.h;
    }
    int grp = ci / g.cg, cl = ci % g.cg;
    A s = A(0);
    for (int ky = 0; ky < g.kh; ky++) {
        int ty = iy + g.pt - ky * g.dh;
        if (ty < 0 || ty % g.sh) continue;
        int oy = ty / g.sh;
        if (oy >= g.oh) continue;
        for (int kx = 0; kx < g.kw; kx++) {
            int tx = ix + g.pl - kx * g.dw;
            if (tx < 0 || tx % g.sw) continue;
            int ox = tx / g.sw;
            if (ox >= g.ow) continue;
            const T *wr = w + ((ky * g.kw + kx) * g.cg + cl) * g.o + grp * g.og;
            for (int q = 0; q < g.og; q++)
                s += bf_ld(dy[bf_act_idx(g.nchw, n, oy, ox, grp * g.og + q, g.oh, g.ow, g.o)]) *
                     bf_ld(wr[q]);
        }
    }
    return s;
}

/* One thread per dx element. */
template <typename T>
__global__ void direct_bwd_input(bf_cgeo g, const T *__restrict__ dy, const T *__restrict__ w,
                                 T *__restrict__ dx, int total) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
        dx[i] = bf_st<T>(direct_bwd_input_elem(g, dy, w, i));
}

/* Filter-gradient element f (HWIO index) summed over positions p = (n, oh, ow) in
 * [pbeg, pend). */
template <typename T>
__host__ __device__ __forceinline__ typename bf_acc<T>::type
direct_bwd_filter_elem(const bf_cgeo &g, const T *__restrict__ x, const T *__restrict__ dy, int f,
                       int pbeg, int pend) {
    typedef typename bf_acc<T>::type A;
    int co = f % g.o, t = f / g.o, ci = t % g.cg, tap = t / g.cg, kx = tap % g.kw, ky = tap / g.kw;
    int grp = co / g.og, c = grp * g.cg + ci;
    A acc = A(0);
    for (int p = pbeg; p < pend; p++) {
        int ox = p % g.ow, r = p / g.ow, oy = r % g.oh, n = r / g.oh;
        int iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
        if ((unsigned)iy >= (unsigned)g.h || (unsigned)ix >= (unsigned)g.w) continue;
        acc += bf_ld(x[bf_act_idx(g.nchw, n, iy, ix, c, g.h, g.w, g.c)]) *
               bf_ld(dy[bf_act_idx(g.nchw, n, oy, ox, co, g.oh, g.ow, g.o)]);
    }
    return acc;
}

/*
 * Filter gradient, one thread per (HWIO element f, split s): positions
 * [s*chunk, (s+1)*chunk). Adjacent threads take adjacent output channels, so NHWC reads are
 * coalesced. splits == 1 writes dw directly, otherwise partial[s*F + f].
 */
template <typename T>
__global__ void direct_bwd_filter(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ dy,
                                  T *__restrict__ dw,
                                  typename bf_acc<T>::type *__restrict__ partial, int F, int P,
                                  int chunk, int splits) {
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= F) return;
    int s = blockIdx.y;
    int pbeg = s * chunk, pend = min(P, pbeg + chunk);
    typename bf_acc<T>::type acc = direct_bwd_filter_elem(g, x, dy, f, pbeg, pend);
    if (splits == 1)
        dw[f] = bf_st<T>(acc);
    else
        partial[(size_t)s * F + f] = acc;
}

/* ---- planning ---------------------------------------------------------------------------- */


/* How many splits the filter-gradient reduction gets: enough blocks to give every SM four,
 * each split at least 64 positions long, at most 256 splits, grid.z within 65535, and the
 * partial sums within BF_CUDA_PARTIAL_CAP. Depends only on the geometry, dtype and SM count,
 * so planning (workspace) and running agree. */
static int bwd_filter_splits(const bf_conv_geom *g, bf_dtype dt, int sm_count) {
    int64_t F = g->k_h * g->k_w * g->k_in_c * g->out_c;
    int64_t P = g->n * g->out_h * g->out_w;
    int64_t sms = sm_count > 0 ? sm_count : 132;
    int64_t units = bf_conv_is_depthwise(g)
                        ? (F + 255) / 256 /* blocks of 256 threads */
                        : g->groups * ((g->k_h * g->k_w * g->k_in_c + BM - 1) / BM) *
                              ((g->out_c / g->groups + BN - 1) / BN);
    int64_t want = (4 * sms + units - 1) / BF_MAX(units, 1);
    int64_t most = BF_MAX(P / 64, 1);
    int64_t s = BF_MIN(BF_MIN(want, most), 256);
    if (!bf_conv_is_depthwise(g)) s = BF_MIN(s, 65535 / BF_MAX(g->groups, 1)); /* grid.z */
    s = BF_MIN(s, (int64_t)(BF_CUDA_PARTIAL_CAP / ((size_t)BF_MAX(F, 1) * bf_cuda_acc_size(dt))));
    return (int)BF_MAX(s, 1);
}

size_t bf_conv_own_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int sm_count) {
    if (op != BF_CONV_BWD_FILTER) return 0;
    int s = bf_dw_nhwc_takes(op, g) ? bf_dw_nhwc_filter_splits(g, dt, sm_count)
                                    : bwd_filter_splits(g, dt, sm_count);
    if (s <= 1) return 0;
    return (size_t)s * (size_t)(g->k_h * g->k_w * g->k_in_c * g->out_c) * bf_cuda_acc_size(dt);
}

/* ---- launch ------------------------------------------------------------------------------ */

template <typename T>
static void launch_own(bf_conv_op op, const bf_conv_geom *geom, const T *a, const T *b, T *out,
                       void *ws, size_t ws_size, cudaStream_t st, int sm_count, char *note,
                       size_t note_size) {
    typedef typename bf_acc<T>::type A;
    bf_cgeo g = bf_cgeo_from(geom);
    int depthwise = bf_conv_is_depthwise(geom);
    if (op == BF_CONV_BWD_FILTER) {
        int F = g.kh * g.kw * g.cg * g.o;
        int P = g.n * g.oh * g.ow;
        int splits =
            bwd_filter_splits(geom, sizeof(A) == 8 ? BF_DTYPE_F64 : BF_DTYPE_F32, sm_count);
        size_t per = (size_t)F * sizeof(A);
        if (splits > 1 && (size_t)splits * per > ws_size) splits = (int)(ws_size / per);
        if (splits < 2) splits = 1;
        if (depthwise) {
            int chunk = (P + splits - 1) / splits;
            dim3 grid((F + 255) / 256, splits);
            direct_bwd_filter<T><<<grid, 256, 0, st>>>(g, a, b, out, (A *)ws, F, P, chunk, splits);
            if (splits > 1)
                split_reduce_launch<T>((A *)ws, out, F, splits, st);
            bf_note_add(note, note_size, "own direct depthwise bwd_filter, %d splits", splits);
        } else {
            int M = g.kh * g.kw * g.cg, NC = g.og, K = P;
            int kchunk = ((K + splits - 1) / splits + BK - 1) / BK * BK;
            splits = (K + kchunk - 1) / kchunk;
            if (splits < 1) splits = 1;
            launch_gemm<T, BF_CONV_BWD_FILTER, BM, BN>(g, a, b, out, (A *)ws, M, NC, K, kchunk,
                                                       splits, g.groups * splits, st);
            if (splits > 1)
                gemm_reduce<T><<<bf_cuda_grid_1d((int64_t)g.groups * M * NC, 256), 256, 0, st>>>(
                    g, (A *)ws, out, M, NC, splits);
            bf_note_add(note, note_size, "own implicit-GEMM bwd_filter, %d splits", splits);
        }
        return;
    }
    if (depthwise) {
        int total = op == BF_CONV_FWD ? g.n * g.oh * g.ow * g.o : g.n * g.h * g.w * g.c;
        if (op == BF_CONV_FWD)
            direct_fwd<T><<<bf_cuda_grid_1d(total, 256), 256, 0, st>>>(g, a, b, out, total);
        else
            direct_bwd_input<T><<<bf_cuda_grid_1d(total, 256), 256, 0, st>>>(g, a, b, out, total);
        bf_note_add(note, note_size, "own direct depthwise %s",
                    op == BF_CONV_FWD ? "fwd" : "bwd_input");
        return;
    }
    if (op == BF_CONV_FWD) {
        int M = g.n * g.oh * g.ow, NC = g.og, K = g.kh * g.kw * g.cg;
        launch_gemm<T, BF_CONV_FWD, BM, BN>(g, a, b, out, NULL, M, NC, K, K, 1, g.groups, st);
        bf_note_add(note, note_size, "own implicit-GEMM fwd");
    } else {
        /* One GEMM per group and stride phase; the grid covers the largest phase, (0, 0). The
         * product groups * phases <= C * H * W fits an int. */
        int phases = bi_phases_y(g) * bi_phases_x(g);
        int M = g.n * ((g.h - 1) / g.sh + 1) * ((g.w - 1) / g.sw + 1), NC = g.cg;
        int K = g.kh * g.kw * g.og; /* bounds every phase's K */
        if (NC <= THIN_BN)
            launch_gemm<T, BF_CONV_BWD_INPUT, THIN_BM, THIN_BN>(g, a, b, out, NULL, M, NC, K, K, 1,
                                                                g.groups * phases, st);
        else
            launch_gemm<T, BF_CONV_BWD_INPUT, BM, BN>(g, a, b, out, NULL, M, NC, K, K, 1,
                                                      g.groups * phases, st);
        bf_note_add(note, note_size, "own implicit-GEMM bwd_input, %d stride phases, %dx%d tiles",
                    phases, NC <= THIN_BN ? (int)THIN_BM : (int)BM,
                    NC <= THIN_BN ? (int)THIN_BN : (int)BN);
    }
}

bf_status bf_conv_own_run(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, const void *a,
                          const void *b, void *out, void *ws, size_t ws_size, cudaStream_t stream,
                          int sm_count, char *note, size_t note_size, bf_error *err) {
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "dtype %s has no CUDA convolution kernel",
                      bf_dtype_name(dt));
    if (bf_dw_nhwc_takes(op, g))
        bf_dw_nhwc_run(op, g, dt, a, b, out, ws, ws_size, stream, sm_count, note, note_size);
    else if (dt == BF_DTYPE_F32)
        launch_own(op, g, (const float *)a, (const float *)b, (float *)out, ws, ws_size, stream,
                   sm_count, note, note_size);
    else if (dt == BF_DTYPE_F64)
        launch_own(op, g, (const double *)a, (const double *)b, (double *)out, ws, ws_size, stream,
                   sm_count, note, note_size);
    else if (dt == BF_DTYPE_F16)
        launch_own(op, g, (const __half *)a, (const __half *)b, (__half *)out, ws, ws_size, stream,
                   sm_count, note, note_size);
    else
        launch_own(op, g, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b, (__nv_bfloat16 *)out,
                   ws, ws_size, stream, sm_count, note, note_size);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return bf_err(err, BF_EDEVICE, "cuda", "launching our convolution kernel: %s",
                      cudaGetErrorString(e));
    return BF_OK;
}

/* ---- helpers of the cuDNN path ----------------------------------------------------------- */

/* For element i of the destination of a pad (pad != 0: dst is [N, H+et+eb, W+el+er, C]) or a
 * crop (dst is [N, H, W, C]), the source element, or -1 for a zero of the padding. */
__host__ __device__ __forceinline__ int pad_crop_src(int i, int n, int h, int w, int c, int et,
                                                     int eb, int el, int er, int nchw, int pad) {
    (void)n;
    int hp = h + et + eb, wp = w + el + er;
    int H = pad ? hp : h, W = pad ? wp : w;
    int nn, y, x, ch;
    if (nchw) {
        x = i % W;
        int t = i / W;
        y = t % H;
        t /= H;
        ch = t % c;
        nn = t / c;
    } else {
        ch = i % c;
        int t = i / c;
        x = t % W;
        t /= W;
        y = t % H;
        nn = t / H;
    }
    if (pad) {
        int sy = y - et, sx = x - el;
        if ((unsigned)sy >= (unsigned)h || (unsigned)sx >= (unsigned)w) return -1;
        return bf_act_idx(nchw, nn, sy, sx, ch, h, w, c);
    }
    return bf_act_idx(nchw, nn, y + et, x + el, ch, hp, wp, c);
}

template <typename E>
__global__ void pad_crop_kernel(const E *__restrict__ src, E *__restrict__ dst, int n, int h, int w,
                                int c, int et, int eb, int el, int er, int nchw, int pad) {
    int total = pad ? n * (h + et + eb) * (w + el + er) * c : n * h * w * c;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int j = pad_crop_src(i, n, h, w, c, et, eb, el, er, nchw, pad);
        dst[i] = j < 0 ? E(0) : src[j];
    }
}

/* Index in cuDNN's filter layout (OIHW for nchw, OHWI for nhwc) of HWIO element i. */
__host__ __device__ __forceinline__ int filter_cudnn_idx(int i, int kh, int kw, int cg, int o,
                                                         int nchw) {
    int co = i % o, t = i / o, ci = t % cg, tap = t / cg, x = tap % kw, y = tap / kw;
    return nchw ? ((co * cg + ci) * kh + y) * kw + x : ((co * kh + y) * kw + x) * cg + ci;
}

template <typename E>
__global__ void filter_xpose_kernel(const E *__restrict__ src, E *__restrict__ dst, int kh, int kw,
                                    int cg, int o, int nchw, int to_cudnn) {
    int total = kh * kw * cg * o;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int j = filter_cudnn_idx(i, kh, kw, cg, o, nchw); /* i indexes the HWIO tensor */
        if (to_cudnn)
            dst[j] = src[i];
        else
            dst[i] = src[j];
    }
}

static cudaError_t pad_crop(int esize, const void *src, void *dst, int n, int h, int w, int c,
                            int et, int eb, int el, int er, int nchw, int pad, cudaStream_t st) {
    int64_t total = (int64_t)n * (h + et + eb) * (w + el + er) * c;
    int blocks = bf_cuda_grid_1d(total, 256);
    switch (esize) {
    case 2:
        pad_crop_kernel<uint16_t><<<blocks, 256, 0, st>>>((const uint16_t *)src, (uint16_t *)dst, n,
                                                          h, w, c, et, eb, el, er, nchw, pad);
        break;
    case 4:
        pad_crop_kernel<uint32_t><<<blocks, 256, 0, st>>>((const uint32_t *)src, (uint32_t *)dst, n,
                                                          h, w, c, et, eb, el, er, nchw, pad);
        break;
    default:
        pad_crop_kernel<uint64_t><<<blocks, 256, 0, st>>>((const uint64_t *)src, (uint64_t *)dst, n,
                                                          h, w, c, et, eb, el, er, nchw, pad);
        break;
    }
    return cudaGetLastError();
}

cudaError_t bf_cuda_pad(int esize, const void *src, void *dst, int n, int h, int w, int c, int et,
                        int eb, int el, int er, int nchw, cudaStream_t st) {
    return pad_crop(esize, src, dst, n, h, w, c, et, eb, el, er, nchw, 1, st);
}

cudaError_t bf_cuda_crop(int esize, const void *src, void *dst, int n, int h, int w, int c, int et,
                         int eb, int el, int er, int nchw, cudaStream_t st) {
    return pad_crop(esize, src, dst, n, h, w, c, et, eb, el, er, nchw, 0, st);
}

/*
 * For NHWC data the filter transpose is a plain matrix transpose: HWIO is [KH*KW*Cg] x [O] and
 * OHWI is [O] x [KH*KW*Cg]. 32x32 tiles through shared memory (padded against bank conflicts)
 * keep both the reads and the writes coalesced; the generic index kernel above scatters.
 * src is rows x cols, dst cols x rows.
 */
template <typename E>
__global__ void transpose_kernel(const E *__restrict__ src, E *__restrict__ dst, int rows,
                                 int cols) {
    __shared__ E tile[32][33];
    int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = src[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        int c = c0 + i, r = r0 + threadIdx.x;
        if (r < rows && c < cols) dst[(size_t)c * rows + r] = tile[threadIdx.x][i];
    }
}

template <typename E>
static void filter_xpose(const E *src, E *dst, int kh, int kw, int cg, int o, int nchw,
                         int to_cudnn, cudaStream_t st) {
    int rows = to_cudnn ? kh * kw * cg : o, cols = to_cudnn ? o : kh * kw * cg;
    if (!nchw && (rows + 31) / 32 <= 65535) { /* grid.y limit */
        dim3 grid((cols + 31) / 32, (rows + 31) / 32);
        transpose_kernel<E><<<grid, dim3(32, 8), 0, st>>>(src, dst, rows, cols);
        return;
    }
    int blocks = bf_cuda_grid_1d((int64_t)kh * kw * cg * o, 256);
    filter_xpose_kernel<E><<<blocks, 256, 0, st>>>(src, dst, kh, kw, cg, o, nchw, to_cudnn);
}

cudaError_t bf_cuda_filter_xpose(int esize, const void *src, void *dst, int kh, int kw, int cg,
                                 int o, int nchw, int to_cudnn, cudaStream_t st) {
    switch (esize) {
    case 2:
        filter_xpose((const uint16_t *)src, (uint16_t *)dst, kh, kw, cg, o, nchw, to_cudnn, st);
        break;
    case 4:
        filter_xpose((const uint32_t *)src, (uint32_t *)dst, kh, kw, cg, o, nchw, to_cudnn, st);
        break;
    default:
        filter_xpose((const uint64_t *)src, (uint64_t *)dst, kh, kw, cg, o, nchw, to_cudnn, st);
        break;
    }
    return cudaGetLastError();
}
