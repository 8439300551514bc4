/*
 * pool_geom.h - what the pooling blocks' CPU glue (pool_common.c) and their GPU kernels
 * (cuda/pool_cuda.cu) share, in C that C++ also reads: the four ops, the window geometry, and
 * the GPU entry point (pool_cuda_glue.c in the core forwards it to the CUDA backend).
 */
#ifndef BF_POOL_GEOM_H
#define BF_POOL_GEOM_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bf_pool_op {
    BF_POOL_MAX = 0,   /* MaxPool:     input -> output                              */
    BF_POOL_MAX_GRAD,  /* MaxPoolGrad: orig_input, orig_output, grad -> output      */
    BF_POOL_AVG,       /* AvgPool:     value -> output                              */
    BF_POOL_AVG_GRAD,  /* AvgPoolGrad: orig_input_shape (host int32), grad -> output */
} bf_pool_op;

/*
 * The geometry the kernels run, in logical NHWC whatever the layout. Over non-empty data
 * every window holds at least one real element (SAME's pads are below the window size, and
 * EXPLICIT pads are checked to be so), so an average never divides by zero. Only EXPLICIT
 * pads around an empty H or W make windows of padding alone: MaxPool gives them the dtype's
 * lowest value (as TF) and MaxPoolGrad skips them.
 */
typedef struct bf_pool_geom {
    int64_t n, h, w, c;       /* input (and input gradient) */
    int64_t oh, ow, oc;       /* output (and output gradient); oc = c / kd */
    int64_t kh, kw, kd;       /* window; kd > 1: MaxPool over depth (NHWC, kh = kw = 1) */
    int64_t sh, sw;           /* strides */
    int64_t pt, pb, pl, pr;   /* pads: top, bottom, left, right (SAME: odd pixel after) */
    int nchw;                 /* the tensors' layout: 1 = [N, C, H, W], 0 = [N, H, W, C] */
} bf_pool_geom;

/*
 * Run `op` on the GPU, on the session's stream (ex->stream), for a geometry with a non-empty
 * output. Operands as the CPU kernels take them: a = x (MaxPool, AvgPool, MaxPoolGrad) or dy
 * (AvgPoolGrad), b = dy (MaxPoolGrad, else NULL), all device pointers in the geometry's layout;
 * `lowest` is where a max starts (the dtype's lowest finite value). dt: float32, float64,
 * float16 or bfloat16. The results are the CPU kernels' (pool_common.h): cuDNN where it
 * computes the same thing, our own kernels elsewhere (cuda/pool_cuda.cu says which is which);
 * the choice goes to ex->note. Errors: BF_EDEVICE with CUDA's or cuDNN's words,
 * BF_EUNSUPPORTED (dtype; a build without CUDA).
 */
bf_status bf_pool_cuda(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const void *a,
                       const void *b, void *out, double lowest, const bf_exec *ex,
                       bf_error *err);

/*
 * Device scratch bytes bf_pool_cuda wants in ex->workspace for this case: AvgPoolGrad through
 * cuDNN hands it a buffer of the input's size as the forward input, which cuDNN's average
 * backward requires but does not read (TensorFlow does the same); 0 otherwise, and 0 when ex
 * has no CUDA device. With less, bf_pool_cuda runs our own kernel instead.
 */
size_t bf_pool_cuda_workspace(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                              const bf_exec *ex);

#ifdef __cplusplus
}
#endif
#endif /* BF_POOL_GEOM_H */
