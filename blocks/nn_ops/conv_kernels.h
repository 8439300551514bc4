/*
 * conv_kernels.h - the kernels behind the convolution family, on plain pointers (STYLE R10).
 *
 * One geometry describes all six blocks. Depthwise convolution is the grouped convolution
 * with groups == in_c and k_in_c == 1: its filter [fh, fw, in_c, M] is, byte for byte, the
 * HWIO filter [fh, fw, 1, in_c*M] (output channel k*M + q reads input channel k), which is
 * how TensorFlow itself hands it to cuDNN. So every kernel takes (op, geom) and nothing else.
 *
 * Operands, for each op (activations in NHWC or NCHW as geom.nchw says; filters always HWIO
 * [k_h, k_w, k_in_c, out_c]):
 *   BF_CONV_FWD         a = x  [N,H,W,C]     b = w  [KH,KW,Cg,O]    out = y  [N,OH,OW,O]
 *   BF_CONV_BWD_FILTER  a = x  [N,H,W,C]     b = dy [N,OH,OW,O]     out = dw [KH,KW,Cg,O]
 *   BF_CONV_BWD_INPUT   a = dy [N,OH,OW,O]   b = w  [KH,KW,Cg,O]    out = dx [N,H,W,C]
 * Every kernel writes every element of `out` (zeros where nothing contributes, including
 * when N, OH, OW or the input are empty).
 *
 * Position rule: ih = oh*stride_h - pad_top + kh*dil_h, iw = ow*stride_w - pad_left + kw*dil_w;
 * positions outside [0,H) x [0,W) read as zero. Group g = co / (out_c/groups) uses input
 * channels [g*k_in_c, (g+1)*k_in_c).
 */
#ifndef BF_CONV_KERNELS_H
#define BF_CONV_KERNELS_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bf_conv_op { BF_CONV_FWD = 0, BF_CONV_BWD_FILTER, BF_CONV_BWD_INPUT } bf_conv_op;

typedef struct bf_conv_geom {
    int64_t n, in_h, in_w, in_c;       /* input activation */
    int64_t k_h, k_w, k_in_c, out_c;   /* filter HWIO; k_in_c = in_c / groups */
    int64_t out_h, out_w;              /* output activation spatial size */
    int64_t stride_h, stride_w;
    int64_t dil_h, dil_w;
    int64_t pad_top, pad_bottom, pad_left, pad_right; /* TF SAME: smaller half before */
    int64_t groups;                    /* 1 for plain Conv2D; in_c for depthwise */
    int nchw;                          /* activations are [N,C,H,W] */
} bf_conv_geom;

/* True for the depthwise case (groups == in_c and k_in_c == 1). */
static inline int bf_conv_is_depthwise(const bf_conv_geom *g) {
    return g->groups == g->in_c && g->k_in_c == 1 && g->groups > 1;
}

/* Multiply-adds of the op, padded taps counted (TensorFlow's FLOP convention is 2x this). */
double bf_conv_macs(const bf_conv_geom *g);

/*
 * Reference kernels (cpu/conv_ref.c): direct loops over the definition, threaded over the
 * output, accumulating in double for f64 and in float for f32. The fast kernels are tested
 * against these. No workspace.
 */
void bf_conv_ref_f32(bf_conv_op op, const bf_conv_geom *g, const float *a, const float *b,
                     float *out, const bf_exec *ex);
void bf_conv_ref_f64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                     double *out, const bf_exec *ex);

/*
 * Fast CPU kernels (cpu/conv_fast*.c), chosen at run time by CPU features with a portable
 * fallback. bf_conv_cpu_workspace gives the scratch bytes (64-byte aligned, for
 * ex->n_threads threads) the op needs for this geometry and dtype; bf_conv_cpu_f32/_f64 run
 * it with that scratch in ex->workspace. They handle every geometry (falling back to the
 * reference internally where they have no faster path) and poll ex->cancel.
 */
size_t bf_conv_cpu_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int n_threads);
void bf_conv_cpu_f32(bf_conv_op op, const bf_conv_geom *g, const float *a, const float *b,
                     float *out, const bf_exec *ex);
void bf_conv_cpu_f64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                     double *out, const bf_exec *ex);

/*
 * GPU (cuda/conv_cuda.cu and friends): cuDNN path and our own kernels. `dt` is the tensor
 * dtype; pointers are device pointers; ex->stream and ex->device_ctx come from the CUDA
 * device. use_cudnn selects cuDNN (1) or our own kernels (0). Returns BF_EDEVICE with the CUDA/cuDNN message on failure.
 * bf_conv_cuda_unsupported returns NULL or the reason this combination cannot run there.
 */
const char *bf_conv_cuda_unsupported(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                                     int use_cudnn);
size_t bf_conv_cuda_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                              const bf_exec *ex);
bf_status bf_conv_cuda(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                       const void *a, const void *b, void *out, const bf_exec *ex,
                       bf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BF_CONV_KERNELS_H */
