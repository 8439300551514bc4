/*
 * conv_cuda_depthwise.cu - our CUDA kernels for depthwise convolutions in NHWC (the layout
 * TensorFlow pages use). Depthwise work is a few multiply-adds per byte, so what these kernels
 * save is instructions (index arithmetic, load instructions) and re-reads; the generic direct
 * kernels of conv_cuda_own.cu (one thread per element, divisions per tap) stay for NCHW and the
 * filter sizes not specialised here.
 *
 * Notation: input x [N,H,W,C], filter w [KH,KW,C,M] (M = channel multiplier), output y
 * [N,OH,OW,C*M] with output channel co = c*M + m. A thread handles V consecutive channels
 * (V = 4 with one 16-byte load for float when M == 1 and C % 4 == 0 and the buffers are
 * aligned, else V = 1), and adjacent threads adjacent channel groups, so every warp-wide load
 * or store is contiguous.
 *
 *  FWD        one thread per (channel group, strip of DW_XT outputs along x): the tap weights
 *             are loaded once per strip, the index arithmetic once per thread.
 *  BWD_INPUT  one thread per (channel group, strip of DW_XT input pixels along x), gathering
 *             dx(n,iy,ix,c) = sum over ky,kx,m of dy(n,(iy+pt-ky*dh)/sh,(ix+pl-kx*dw)/sw,c*M+m)
 *             * w[ky,kx,c,m] over the taps where both divisions are exact. The stride is a
 *             template parameter (1 or 2 in both directions, or any), so the exactness test is
 *             a mask, not a division, in the common cases.
 *  BWD_FILTER blocks of TX channel groups x (256 / TX) workers over a split of the N*OH output
 *             rows. Each thread keeps the K*K tap sums of its channels in registers and reads
 *             each dy element once; the workers' sums are added in worker order through shared
 *             memory (a few rounds, the whole block adding), each split writes its partial sums
 *             to the workspace, and split_reduce
 *             adds them in split order: bitwise reproducible, no atomics. K is a template
 *             parameter (3, 5, 7: the depthwise filters networks use); other sizes take the
 *             generic kernel.
 * 3x3 filters get fully unrolled tap loops (K = 3), so all of a thread's loads can be in
 * flight at once.
 */
#include "conv_cuda_device.cuh"
#include "conv_cuda_internal.cuh"

#include <stdint.h>

enum { DW_XT = 4, DW_THREADS = 256 };

/* V consecutive elements, loaded and stored as one access (aligned to their size). */
template <typename T, int V> struct __align__(sizeof(T) * V) dw_vec { T e[V]; };

template <typename T, int V>
__device__ __forceinline__ void ld_v(const T *p, typename bf_acc<T>::type *out) {
    dw_vec<T, V> r = *reinterpret_cast<const dw_vec<T, V> *>(p);
#pragma unroll
    for (int v = 0; v < V; v++)
        out[v] = bf_ld(r.e[v]);
}

template <typename T, int V>
__device__ __forceinline__ void st_v(T *p, const typename bf_acc<T>::type *in) {
    dw_vec<T, V> r;
#pragma unroll
    for (int v = 0; v < V; v++)
        r.e[v] = bf_st<T>(in[v]);
    *reinterpret_cast<dw_vec<T, V> *>(p) = r;
}

/* ---- forward ----------------------------------------------------------------------------- */

/* K: the filter size when it is K x K and specialised (loops unrolled), 0 for any. V > 1
 * needs M == 1. */
template <typename T, int K, int V>
__global__ void __launch_bounds__(DW_THREADS)
    dw_fwd_nhwc(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y,
                int strips_x, int total) {
    typedef typename bf_acc<T>::type A;
    const int kh = K ? K : g.kh, kw = K ? K : g.kw, groups = g.o / V;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int co = i % groups * V, t = i / groups;
        int ox0 = t % strips_x * DW_XT;
        t /= strips_x;
        int oy = t % g.oh, n = t / g.oh, c = V > 1 ? co : co / g.og;
        A acc[DW_XT][V];
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
#pragma unroll
            for (int v = 0; v < V; v++)
                acc[j][v] = A(0);
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            int iy = oy * g.sh - g.pt + ky * g.dh;
            if ((unsigned)iy >= (unsigned)g.h) continue;
            const T *xrow = x + (n * g.h + iy) * g.w * g.c + c;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                A wv[V];
                ld_v<T, V>(w + (ky * kw + kx) * g.o + co, wv);
                int ix0 = ox0 * g.sw - g.pl + kx * g.dw;
#pragma unroll
                for (int j = 0; j < DW_XT; j++) {
                    int ix = ix0 + j * g.sw;
                    if ((unsigned)ix >= (unsigned)g.w) continue;
                    A xv[V];
                    ld_v<T, V>(xrow + ix * g.c, xv);
#pragma unroll
                    for (int v = 0; v < V; v++)
                        acc[j][v] += xv[v] * wv[v];
                }
            }
        }
        T *yp = y + ((n * g.oh + oy) * g.ow + ox0) * g.o + co;
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            if (ox0 + j < g.ow) st_v<T, V>(yp + j * g.o, acc[j]);
    }
}

/* ---- input gradient ---------------------------------------------------------------------- */

/* S: the stride when it is S in both directions (1 or 2), 0 for any; K as for dw_fwd_nhwc;
 * V > 1 needs M == 1. */
template <typename T, int S, int K, int V>
__global__ void __launch_bounds__(DW_THREADS)
    dw_bwd_input_nhwc(bf_cgeo g, const T *__restrict__ dy, const T *__restrict__ w,
                      T *__restrict__ dx, int strips_x, int total) {
    typedef typename bf_acc<T>::type A;
    const int sh = S ? S : g.sh, sw = S ? S : g.sw, kh = K ? K : g.kh, kw = K ? K : g.kw;
    const int groups = g.c / V;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = i % groups * V, t = i / groups;
        int ix0 = t % strips_x * DW_XT;
        t /= strips_x;
        int iy = t % g.h, n = t / g.h;
        A acc[DW_XT][V];
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
#pragma unroll
            for (int v = 0; v < V; v++)
                acc[j][v] = A(0);
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            int ty = iy + g.pt - ky * g.dh;
            if (ty < 0 || ty % sh) continue;
            int oy = ty / sh;
            if (oy >= g.oh) continue;
            const T *dyrow = dy + (n * g.oh + oy) * g.ow * g.o + c * g.og;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                const T *wt = w + (ky * kw + kx) * g.o + c * g.og;
                A wv[V];
                if (V > 1) ld_v<T, V>(wt, wv);
                int tx0 = ix0 + g.pl - kx * g.dw;
#pragma unroll
                for (int j = 0; j < DW_XT; j++) {
                    int tx = tx0 + j;
                    if (tx < 0 || tx % sw) continue;
                    int ox = tx / sw;
                    if (ox >= g.ow) continue;
                    const T *d = dyrow + ox * g.o;
                    if (V > 1) {
                        A dv[V];
                        ld_v<T, V>(d, dv);
#pragma unroll
                        for (int v = 0; v < V; v++)
                            acc[j][v] += dv[v] * wv[v];
                    } else {
                        for (int m = 0; m < g.og; m++)
                            acc[j][0] += bf_ld(d[m]) * bf_ld(wt[m]);
                    }
                }
            }
        }
        T *p = dx + ((n * g.h + iy) * g.w + ix0) * g.c + c;
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            if (ix0 + j < g.w) st_v<T, V>(p + j * g.c, acc[j]);
    }
}

/* ---- filter gradient --------------------------------------------------------------------- */

/* Channel groups per block row: 32, or fewer (a power of two) when the layer has fewer. */
static int filter_tile(int groups) {
    int tx = 1;
    while (tx < 32 && tx < groups) tx *= 2;
    return tx;
}

/*
 * grid (ceil(O / (V*TX)), splits), block (TX, 256 / TX). Split s sums output rows
 * r = (n, oy) in [s*rows, min(N*OH, (s+1)*rows)); worker ty takes the columns ox = ty,
 * ty + workers, ... With splits == 1 the result goes to dw, else to partial[s*F + f].
 * V > 1 needs M == 1.
 */
template <typename T, int K, int V>
__global__ void __launch_bounds__(DW_THREADS)
    dw_bwd_filter_nhwc(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ dy,
                       T *__restrict__ dw, typename bf_acc<T>::type *__restrict__ partial,
                       int rows, int splits) {
    typedef typename bf_acc<T>::type A;
    enum { NV = K * K * V,                       /* sums per thread */
           G = (16384 / DW_THREADS) / sizeof(A) }; /* of them per reduction round (16 KiB) */
    __shared__ A red[G * DW_THREADS];
    const int TX = blockDim.x, workers = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TX + tx;
    const int co = (blockIdx.x * TX + tx) * V, c = V > 1 ? co : co / g.og;
    const bool live = co < g.o;
    A acc[NV]; /* acc[(a*K + b)*V + v]: tap (a, b), channel co + v */
#pragma unroll
    for (int q = 0; q < NV; q++)
        acc[q] = A(0);
    const int R = g.n * g.oh, rbeg = blockIdx.y * rows, rend = min(R, rbeg + rows);
    for (int r = rbeg; live && r < rend; r++) {
        int n = r / g.oh, oy = r % g.oh;
        const T *dyrow = dy + r * g.ow * g.o + co;
        const T *ximg = x + n * g.h * g.w * g.c + c;
        int iy0 = oy * g.sh - g.pt;
        for (int ox = ty; ox < g.ow; ox += workers) {
            A d[V];
            ld_v<T, V>(dyrow + ox * g.o, d);
            int ix0 = ox * g.sw - g.pl;
#pragma unroll
            for (int a = 0; a < K; a++) {
                int iy = iy0 + a * g.dh;
                if ((unsigned)iy >= (unsigned)g.h) continue;
                const T *xrow = ximg + iy * g.w * g.c;
#pragma unroll
                for (int b = 0; b < K; b++) {
                    int ix = ix0 + b * g.dw;
                    if ((unsigned)ix >= (unsigned)g.w) continue;
                    A xv[V];
                    ld_v<T, V>(xrow + ix * g.c, xv);
#pragma unroll
                    for (int v = 0; v < V; v++)
                        acc[(a * K + b) * V + v] += xv[v] * d[v];
                }
            }
        }
    }
    /* Add the workers' sums, G per round: every thread parks G sums in shared memory, then the
     * block adds each (sum, channel group) over the workers in worker order. */
    const int F = K * K * g.o;
#pragma unroll
    for (int q0 = 0; q0 < NV; q0 += G) {
#pragma unroll
        for (int q = q0; q < q0 + G && q < NV; q++)
            red[(q - q0) * DW_THREADS + tid] = acc[q];
        __syncthreads();
        int n_here = min(G, NV - q0) * TX;
        for (int u = tid; u < n_here; u += DW_THREADS) {
            int ql = u / TX, t = u % TX, q = q0 + ql;
            int cot = (blockIdx.x * TX + t) * V + q % V;
            A s = A(0);
            for (int wk = 0; wk < workers; wk++)
                s += red[ql * DW_THREADS + wk * TX + t];
            if (cot >= g.o) continue;
            int f = q / V * g.o + cot; /* HWIO with I = 1 per group */
            if (splits == 1)
                dw[f] = bf_st<T>(s);
            else
                partial[(size_t)blockIdx.y * F + f] = s;
        }
        __syncthreads();
    }
}

/* ---- planning and launch ----------------------------------------------------------------- */

static bool fast_filter_size(const bf_conv_geom *g) {
    return g->k_h == g->k_w && (g->k_h == 3 || g->k_h == 5 || g->k_h == 7);
}

bool bf_dw_nhwc_takes(bf_conv_op op, const bf_conv_geom *g) {
    if (g->nchw || !bf_conv_is_depthwise(g)) return false;
    return op != BF_CONV_BWD_FILTER || fast_filter_size(g);
}

/* The channel vector width the geometry allows (the buffers' alignment is checked at launch):
 * 4 when M == 1 and C % 4 == 0 (and, for the filter gradient, 3x3 filters: 36 sums per
 * thread), else 1. */
static int geom_vec(bf_conv_op op, const bf_conv_geom *g) {
    bool ok = g->out_c == g->in_c && g->in_c % 4 == 0;
    if (op == BF_CONV_BWD_FILTER) ok = ok && g->k_h == 3;
    return ok ? 4 : 1;
}

/* Splits of the filter gradient: about 8 blocks per SM, at least one row each, at most 1024
 * and at most 256 MiB of partial sums. Depends on the geometry only, so planning (the
 * workspace) and running agree. */
int bf_dw_nhwc_filter_splits(const bf_conv_geom *g, bf_dtype dt, int sm_count) {
    int64_t sms = sm_count > 0 ? sm_count : 132;
    int64_t groups = g->out_c / geom_vec(BF_CONV_BWD_FILTER, g);
    int64_t tx = filter_tile((int)BF_MIN(groups, 32));
    int64_t tiles = (groups + tx - 1) / tx;
    int64_t rows = g->n * g->out_h;
    int64_t F = g->k_h * g->k_w * g->out_c;
    int64_t s = (8 * sms + tiles - 1) / BF_MAX(tiles, 1);
    s = BF_MIN(BF_MIN(s, rows), 1024);
    s = BF_MIN(s, (int64_t)(BF_CUDA_PARTIAL_CAP / ((size_t)BF_MAX(F, 1) * bf_cuda_acc_size(dt))));
    return (int)BF_MAX(s, 1);
}

static bool aligned(const void *p, size_t n) { return (uintptr_t)p % n == 0; }

template <typename T, int V>
static void launch_fwd(const bf_cgeo &g, const T *x, const T *w, T *y, cudaStream_t st) {
    int strips = (g.ow + DW_XT - 1) / DW_XT, total = g.n * g.oh * strips * (g.o / V);
    int blocks = bf_cuda_grid_1d(total, DW_THREADS);
    if (g.kh == 3 && g.kw == 3)
        dw_fwd_nhwc<T, 3, V><<<blocks, DW_THREADS, 0, st>>>(g, x, w, y, strips, total);
    else
        dw_fwd_nhwc<T, 0, V><<<blocks, DW_THREADS, 0, st>>>(g, x, w, y, strips, total);
}

template <typename T, int V>
static void launch_bwd_input(const bf_cgeo &g, const T *dy, const T *w, T *dx, cudaStream_t st) {
    int strips = (g.w + DW_XT - 1) / DW_XT, total = g.n * g.h * strips * (g.c / V);
    int blocks = bf_cuda_grid_1d(total, DW_THREADS);
    bool k3 = g.kh == 3 && g.kw == 3;
    if (k3 && g.sh == 1 && g.sw == 1)
        dw_bwd_input_nhwc<T, 1, 3, V><<<blocks, DW_THREADS, 0, st>>>(g, dy, w, dx, strips, total);
    else if (k3 && g.sh == 2 && g.sw == 2)
        dw_bwd_input_nhwc<T, 2, 3, V><<<blocks, DW_THREADS, 0, st>>>(g, dy, w, dx, strips, total);
    else
        dw_bwd_input_nhwc<T, 0, 0, V><<<blocks, DW_THREADS, 0, st>>>(g, dy, w, dx, strips, total);
}

template <typename T, int V>
static void launch_bwd_filter(const bf_cgeo &g, const T *x, const T *dy, T *dw,
                              typename bf_acc<T>::type *partial, int rows, int splits,
                              cudaStream_t st) {
    int groups = g.o / V, tx = filter_tile(BF_MIN(groups, 32));
    dim3 grid((groups + tx - 1) / tx, splits), block(tx, DW_THREADS / tx);
    if (g.kh == 3)
        dw_bwd_filter_nhwc<T, 3, V><<<grid, block, 0, st>>>(g, x, dy, dw, partial, rows, splits);
    else if (g.kh == 5)
        dw_bwd_filter_nhwc<T, 5, 1><<<grid, block, 0, st>>>(g, x, dy, dw, partial, rows, splits);
    else
        dw_bwd_filter_nhwc<T, 7, 1><<<grid, block, 0, st>>>(g, x, dy, dw, partial, rows, splits);
}

template <typename T>
static void launch(bf_conv_op op, const bf_conv_geom *geom, const T *a, const T *b, T *out,
                   void *ws, size_t ws_size, cudaStream_t st, int sm_count, char *note,
                   size_t note_size) {
    typedef typename bf_acc<T>::type A;
    bf_cgeo g = bf_cgeo_from(geom);
    size_t vb = 4 * sizeof(T);
    int V = geom_vec(op, geom) == 4 && aligned(a, vb) && aligned(b, vb) && aligned(out, vb) ? 4 : 1;
    if (op == BF_CONV_FWD) {
        if (V == 4)
            launch_fwd<T, 4>(g, a, b, out, st);
        else
            launch_fwd<T, 1>(g, a, b, out, st);
        bf_note_add(note, note_size, "own depthwise NHWC fwd, %d-wide strips x %d channels",
                    (int)DW_XT, V);
        return;
    }
    if (op == BF_CONV_BWD_INPUT) {
        if (V == 4)
            launch_bwd_input<T, 4>(g, a, b, out, st);
        else
            launch_bwd_input<T, 1>(g, a, b, out, st);
        bf_note_add(note, note_size, "own depthwise NHWC bwd_input, %d-wide strips x %d channels",
                    (int)DW_XT, V);
        return;
    }
    int F = g.kh * g.kw * g.o, R = g.n * g.oh;
    int splits = bf_dw_nhwc_filter_splits(geom, sizeof(A) == 8 ? BF_DTYPE_F64 : BF_DTYPE_F32,
                                          sm_count);
    size_t per = (size_t)F * sizeof(A);
    if (splits > 1 && (size_t)splits * per > ws_size) splits = (int)(ws_size / per);
    if (splits < 2) splits = 1;
    int rows = (R + splits - 1) / splits;
    splits = (R + rows - 1) / rows; /* no empty trailing splits */
    if (V == 4)
        launch_bwd_filter<T, 4>(g, a, b, out, (A *)ws, rows, splits, st);
    else
        launch_bwd_filter<T, 1>(g, a, b, out, (A *)ws, rows, splits, st);
    if (splits > 1) split_reduce_launch<T>((A *)ws, out, F, splits, st);
    bf_note_add(note, note_size, "own depthwise NHWC bwd_filter %dx%d x %d channels, %d splits",
                g.kh, g.kw, V, splits);
}

void bf_dw_nhwc_run(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, const void *a,
                    const void *b, void *out, void *ws, size_t ws_size, cudaStream_t st,
                    int sm_count, char *note, size_t note_size) {
    switch (dt) {
    case BF_DTYPE_F64:
        launch(op, g, (const double *)a, (const double *)b, (double *)out, ws, ws_size, st,
               sm_count, note, note_size);
        break;
    case BF_DTYPE_F16:
        launch(op, g, (const __half *)a, (const __half *)b, (__half *)out, ws, ws_size, st,
               sm_count, note, note_size);
        break;
    case BF_DTYPE_BF16:
        launch(op, g, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b, (__nv_bfloat16 *)out,
               ws, ws_size, st, sm_count, note, note_size);
        break;
    default:
        launch(op, g, (const float *)a, (const float *)b, (float *)out, ws, ws_size, st,
               sm_count, note, note_size);
        break;
    }
}
