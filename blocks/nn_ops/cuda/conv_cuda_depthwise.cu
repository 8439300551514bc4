/*
 * conv_cuda_depthwise.cu - our CUDA kernels for depthwise convolutions in NHWC (the layout
 * TensorFlow pages use), written for memory speed. Depthwise work is a few multiply-adds per
 * byte, so what these kernels save is index arithmetic and re-reads; the generic direct kernels
 * of conv_cuda_own.cu (one thread per element, with divisions per tap) stay for NCHW and the
 * filter sizes not specialised here.
 *
 * Notation: input x [N,H,W,C], filter w [KH,KW,C,M] (M = channel multiplier), output y
 * [N,OH,OW,C*M] with output channel co = c*M + m. Adjacent threads always take adjacent
 * channels, so every warp-wide load or store is contiguous.
 *
 *  FWD        one thread per (co, strip of DW_XT outputs along x): the tap weight is loaded
 *             once per strip, the index arithmetic is done once per thread; 3x3 filters get
 *             unrolled tap loops, so all of a thread's loads can be in flight at once.
 *  BWD_INPUT  one thread per (c, strip of DW_XT input pixels along x), gathering
 *             dx(n,iy,ix,c) = sum over ky,kx,m of dy(n,(iy+pt-ky*dh)/sh,(ix+pl-kx*dw)/sw,c*M+m)
 *             * w[ky,kx,c,m] over the taps where both divisions are exact. The x stride is a
 *             template parameter (1, 2, or any), so the exactness test costs a mask, not a
 *             division, in the common cases.
 *  BWD_FILTER blocks of 32 channels x 8 workers over a split of the N*OH output rows. Each
 *             thread keeps the K*K tap sums of its channel in registers and reads each dy
 *             element once; the 8 workers' sums are added in worker order through shared
 *             memory, each split writes its partial sums to the workspace, and split_reduce
 *             adds them in split order: bitwise reproducible, no atomics. K is a template
 *             parameter (3, 5, 7: the depthwise filters networks use); other sizes take the
 *             generic kernel.
 */
#include "conv_cuda_device.cuh"
#include "conv_cuda_internal.cuh"

enum { DW_XT = 4, DW_WORKERS = 8, DW_TILE_C = 32 };

/* ---- forward ----------------------------------------------------------------------------- */

/* K: the filter size when it is K x K and specialised (loops unrolled), 0 for any. */
template <typename T, int K>
__global__ void __launch_bounds__(256)
    dw_fwd_nhwc(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y,
                int strips_x, int total) {
    typedef typename bf_acc<T>::type A;
    const int kh = K ? K : g.kh, kw = K ? K : g.kw;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int co = i % g.o, t = i / g.o;
        int ox0 = t % strips_x * DW_XT;
        t /= strips_x;
        int oy = t % g.oh, n = t / g.oh, c = co / g.og;
        A acc[DW_XT];
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            acc[j] = A(0);
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            int iy = oy * g.sh - g.pt + ky * g.dh;
            if ((unsigned)iy >= (unsigned)g.h) continue;
            const T *xrow = x + (n * g.h + iy) * g.w * g.c + c;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                A wv = bf_ld(w[(ky * kw + kx) * g.o + co]);
                int ix0 = ox0 * g.sw - g.pl + kx * g.dw;
#pragma unroll
                for (int j = 0; j < DW_XT; j++) {
                    int ix = ix0 + j * g.sw;
                    if ((unsigned)ix < (unsigned)g.w) acc[j] += bf_ld(xrow[ix * g.c]) * wv;
                }
            }
        }
        T *yp = y + ((n * g.oh + oy) * g.ow + ox0) * g.o + co;
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            if (ox0 + j < g.ow) yp[j * g.o] = bf_st<T>(acc[j]);
    }
}

/* ---- input gradient ---------------------------------------------------------------------- */

/* SW: the x stride when it is 1 or 2, 0 for any (read from g); K as for dw_fwd_nhwc. */
template <typename T, int SW, int K>
__global__ void __launch_bounds__(256)
    dw_bwd_input_nhwc(bf_cgeo g, const T *__restrict__ dy, const T *__restrict__ w,
                      T *__restrict__ dx, int strips_x, int total) {
    typedef typename bf_acc<T>::type A;
    const int sw = SW ? SW : g.sw, kh = K ? K : g.kh, kw = K ? K : g.kw;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = i % g.c, t = i / g.c;
        int ix0 = t % strips_x * DW_XT;
        t /= strips_x;
        int iy = t % g.h, n = t / g.h;
        A acc[DW_XT];
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            acc[j] = A(0);
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            int ty = iy + g.pt - ky * g.dh;
            if (ty < 0 || ty % g.sh) continue;
            int oy = ty / g.sh;
            if (oy >= g.oh) continue;
            const T *dyrow = dy + (n * g.oh + oy) * g.ow * g.o + c * g.og;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                const T *wt = w + (ky * kw + kx) * g.o + c * g.og;
                int tx0 = ix0 + g.pl - kx * g.dw;
#pragma unroll
                for (int j = 0; j < DW_XT; j++) {
                    int tx = tx0 + j;
                    if (tx < 0 || tx % sw) continue;
                    int ox = tx / sw;
                    if (ox >= g.ow) continue;
                    const T *d = dyrow + ox * g.o;
                    for (int m = 0; m < g.og; m++)
                        acc[j] += bf_ld(d[m]) * bf_ld(wt[m]);
                }
            }
        }
        T *p = dx + ((n * g.h + iy) * g.w + ix0) * g.c + c;
#pragma unroll
        for (int j = 0; j < DW_XT; j++)
            if (ix0 + j < g.w) p[j * g.c] = bf_st<T>(acc[j]);
    }
}

/* ---- filter gradient --------------------------------------------------------------------- */

/*
 * grid (ceil(O / 32), splits), block (32, DW_WORKERS). Split s sums output rows
 * r = (n, oy) in [s*rows, min(N*OH, (s+1)*rows)); worker ty takes the columns ox = ty,
 * ty + DW_WORKERS, ... With splits == 1 the result goes to dw, else to partial[s*F + f].
 */
template <typename T, int K>
__global__ void __launch_bounds__(DW_TILE_C *DW_WORKERS)
    dw_bwd_filter_nhwc(bf_cgeo g, const T *__restrict__ x, const T *__restrict__ dy,
                       T *__restrict__ dw, typename bf_acc<T>::type *__restrict__ partial,
                       int rows, int splits) {
    typedef typename bf_acc<T>::type A;
    __shared__ A red[DW_WORKERS][DW_TILE_C];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int co = blockIdx.x * DW_TILE_C + tx, c = co / g.og;
    const bool live = co < g.o;
    A acc[K][K];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int b = 0; b < K; b++)
            acc[a][b] = A(0);
    const int R = g.n * g.oh, rbeg = blockIdx.y * rows, rend = min(R, rbeg + rows);
    for (int r = rbeg; live && r < rend; r++) {
        int n = r / g.oh, oy = r % g.oh;
        const T *dyrow = dy + r * g.ow * g.o + co;
        const T *ximg = x + n * g.h * g.w * g.c + c;
        int iy0 = oy * g.sh - g.pt;
        for (int ox = ty; ox < g.ow; ox += DW_WORKERS) {
            A d = bf_ld(dyrow[ox * g.o]);
            int ix0 = ox * g.sw - g.pl;
#pragma unroll
            for (int a = 0; a < K; a++) {
                int iy = iy0 + a * g.dh;
                if ((unsigned)iy >= (unsigned)g.h) continue;
                const T *xrow = ximg + iy * g.w * g.c;
#pragma unroll
                for (int b = 0; b < K; b++) {
                    int ix = ix0 + b * g.dw;
                    if ((unsigned)ix < (unsigned)g.w) acc[a][b] += bf_ld(xrow[ix * g.c]) * d;
                }
            }
        }
    }
    const int F = K * K * g.o;
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int b = 0; b < K; b++) {
            red[ty][tx] = acc[a][b];
            __syncthreads();
            if (ty == 0 && live) {
                A s = A(0);
                for (int q = 0; q < DW_WORKERS; q++)
                    s += red[q][tx];
                int f = (a * K + b) * g.o + co; /* HWIO with I = 1 per group */
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

/* Splits of the filter gradient: about 8 blocks per SM, at least one row each, at most 1024
 * and at most 256 MiB of partial sums. Planning and running both call this. */
int bf_dw_nhwc_filter_splits(const bf_conv_geom *g, bf_dtype dt, int sm_count) {
    int64_t sms = sm_count > 0 ? sm_count : 132;
    int64_t tiles = (g->out_c + DW_TILE_C - 1) / DW_TILE_C;
    int64_t rows = g->n * g->out_h;
    int64_t F = g->k_h * g->k_w * g->out_c;
    int64_t s = (8 * sms + tiles - 1) / BF_MAX(tiles, 1);
    s = BF_MIN(BF_MIN(s, rows), 1024);
    s = BF_MIN(s, (int64_t)(((size_t)256 << 20) / ((size_t)BF_MAX(F, 1) * (dt == BF_DTYPE_F64 ? 8 : 4))));
    return (int)BF_MAX(s, 1);
}

static int blocks_for(int total) {
    int b = (total + 255) / 256;
    return b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b;
}

template <typename T>
static void launch(bf_conv_op op, const bf_conv_geom *geom, const T *a, const T *b, T *out,
                   void *ws, size_t ws_size, cudaStream_t st, int sm_count, char *note,
                   size_t note_size) {
    typedef typename bf_acc<T>::type A;
    bf_cgeo g = bf_cgeo_from(geom);
    if (op == BF_CONV_FWD) {
        int strips = (g.ow + DW_XT - 1) / DW_XT, total = g.n * g.oh * strips * g.o;
        if (g.kh == 3 && g.kw == 3)
            dw_fwd_nhwc<T, 3><<<blocks_for(total), 256, 0, st>>>(g, a, b, out, strips, total);
        else
            dw_fwd_nhwc<T, 0><<<blocks_for(total), 256, 0, st>>>(g, a, b, out, strips, total);
        bf_note_add(note, note_size, "own depthwise NHWC fwd, %d-wide strips", (int)DW_XT);
        return;
    }
    if (op == BF_CONV_BWD_INPUT) {
        int strips = (g.w + DW_XT - 1) / DW_XT, total = g.n * g.h * strips * g.c;
        int blocks = blocks_for(total);
        bool k3 = g.kh == 3 && g.kw == 3;
        if (g.sw == 1 && k3)
            dw_bwd_input_nhwc<T, 1, 3><<<blocks, 256, 0, st>>>(g, a, b, out, strips, total);
        else if (g.sw == 2 && k3)
            dw_bwd_input_nhwc<T, 2, 3><<<blocks, 256, 0, st>>>(g, a, b, out, strips, total);
        else
            dw_bwd_input_nhwc<T, 0, 0><<<blocks, 256, 0, st>>>(g, a, b, out, strips, total);
        bf_note_add(note, note_size, "own depthwise NHWC bwd_input, %d-wide strips", (int)DW_XT);
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
    dim3 grid((g.o + DW_TILE_C - 1) / DW_TILE_C, splits), block(DW_TILE_C, DW_WORKERS);
    switch (g.kh) {
    case 3: dw_bwd_filter_nhwc<T, 3><<<grid, block, 0, st>>>(g, a, b, out, (A *)ws, rows, splits); break;
    case 5: dw_bwd_filter_nhwc<T, 5><<<grid, block, 0, st>>>(g, a, b, out, (A *)ws, rows, splits); break;
    default: dw_bwd_filter_nhwc<T, 7><<<grid, block, 0, st>>>(g, a, b, out, (A *)ws, rows, splits); break;
    }
    if (splits > 1) split_reduce_launch<T>((A *)ws, out, F, splits, st);
    bf_note_add(note, note_size, "own depthwise NHWC bwd_filter %dx%d, %d splits", g.kh, g.kw,
                splits);
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
