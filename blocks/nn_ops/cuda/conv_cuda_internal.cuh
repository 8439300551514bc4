/*
 * conv_cuda_internal.cuh - what the two convolution .cu files share: the dtype traits (half
 * and bfloat16 accumulate in float, double in double), the 32-bit geometry the kernels index
 * with, and the launchers of conv_cuda_own.cu that conv_cuda.cu calls (our own kernels, and the
 * pad / crop / filter-transpose helpers of the cuDNN path). C++ linkage, library-internal.
 */
#ifndef BF_CONV_CUDA_INTERNAL_CUH
#define BF_CONV_CUDA_INTERNAL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common.h"
#include "nn_ops/conv_kernels.h"

/* The geometry as the kernels see it. Every tensor involved has fewer than 2^31 elements
 * (bf_conv_cuda_unsupported checks), so int indices never overflow. */
struct bf_cgeo {
    int n, h, w, c;     /* input activation */
    int kh, kw, cg, o;  /* filter HWIO, cg = in channels per group */
    int oh, ow;         /* output spatial size */
    int sh, sw, dh, dw; /* strides, dilations */
    int pt, pl;         /* top / left pads (bottom / right follow from the sizes) */
    int groups, og;     /* og = out channels per group */
    int nchw;
};

bf_cgeo bf_cgeo_from(const bf_conv_geom *g);

/* Element offset of (n, y, x, ch) in an activation of spatial size H x W and C channels. */
__host__ __device__ __forceinline__ int bf_act_idx(int nchw, int n, int y, int x, int ch, int H,
                                                   int W, int C) {
    return nchw ? ((n * C + ch) * H + y) * W + x : ((n * H + y) * W + x) * C + ch;
}

/* Planning helpers both kernel files use: the accumulator size of a dtype (double for double,
 * float otherwise), the most bytes of split partial sums a filter gradient may use, and a 1-D
 * grid for `total` elements of grid-stride loops (at most 65535 * 8 blocks). */
static inline size_t bf_cuda_acc_size(bf_dtype dt) { return dt == BF_DTYPE_F64 ? 8 : 4; }
#define BF_CUDA_PARTIAL_CAP ((size_t)256 << 20)
static inline int bf_cuda_grid_1d(int64_t total, int threads) {
    int64_t b = (total + threads - 1) / threads;
    return (int)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

/* Scratch the own kernels need (split reductions of the filter gradient); 0 for most ops. */
size_t bf_conv_own_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int sm_count);

/*
 * Run `op` with our own kernels on `stream`. The depthwise case uses direct gather kernels;
 * everything else a tiled implicit GEMM. Deterministic: every output is summed by one thread
 * in a fixed order, split reductions go through `ws` and are summed in split order.
 * Appends a description of the kernel to `note`.
 */
bf_status bf_conv_own_run(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, const void *a,
                          const void *b, void *out, void *ws, size_t ws_size, cudaStream_t stream,
                          int sm_count, char *note, size_t note_size, bf_error *err);

/*
 * The NHWC depthwise kernels of conv_cuda_depthwise.cu: whether they take (op, g), the split
 * count of their filter gradient (workspace: splits * KH*KW*O accumulators when > 1), and the
 * launch (kernel errors are read by the caller with cudaGetLastError).
 */
bool bf_dw_nhwc_takes(bf_conv_op op, const bf_conv_geom *g);
int bf_dw_nhwc_filter_splits(const bf_conv_geom *g, bf_dtype dt, int sm_count);
void bf_dw_nhwc_run(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, const void *a,
                    const void *b, void *out, void *ws, size_t ws_size, cudaStream_t st,
                    int sm_count, char *note, size_t note_size);

/*
 * Helpers of the cuDNN path, on raw element bytes (esize 2, 4 or 8):
 *   pad:  dst [N, H+et+eb, W+el+er, C] (layout nchw) = src [N, H, W, C] placed at (et, el),
 *         zeros around;
 *   crop: dst [N, H, W, C] = src [N, H+et+eb, W+el+er, C] at (et, el);
 *   filter: HWIO [KH,KW,Cg,O] <-> cuDNN's OHWI (nhwc) or OIHW (nchw); to_cudnn picks the
 *         direction.
 */
cudaError_t bf_cuda_pad(int esize, const void *src, void *dst, int n, int h, int w, int c, int et,
                        int eb, int el, int er, int nchw, cudaStream_t st);
cudaError_t bf_cuda_crop(int esize, const void *src, void *dst, int n, int h, int w, int c, int et,
                         int eb, int el, int er, int nchw, cudaStream_t st);
cudaError_t bf_cuda_filter_xpose(int esize, const void *src, void *dst, int kh, int kw, int cg,
                                 int o, int nchw, int to_cudnn, cudaStream_t st);

/* Append printf text to a note buffer (may be NULL). */
void bf_note_add(char *note, size_t size, const char *fmt, ...);

#endif /* BF_CONV_CUDA_INTERNAL_CUH */
