/*
 * act_cuda.h - the GPU entry point of the activations and their gradients (Relu, Sigmoid,
 * Tanh, ReluGrad, SigmoidGrad, TanhGrad): cuda/act_cuda.cu in the CUDA backend
 * (libblockflow_cuda.so), reached from the core through act_cuda_glue.c, which refuses when
 * no CUDA device is behind the exec (a build without CUDA, no backend). C and C++.
 */
#ifndef BF_ACT_CUDA_H
#define BF_ACT_CUDA_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bf_act_op {
    BF_ACT_RELU = 0,     /* z = x < 0 ? 0 : x                      (x = features)          */
    BF_ACT_SIGMOID,      /* z = 1 / (1 + exp(-x))                                          */
    BF_ACT_TANH,         /* z = tanh(x)                                                    */
    BF_ACT_RELU_GRAD,    /* z = x * (y > 0)                  (x = gradients, y = features) */
    BF_ACT_SIGMOID_GRAD, /* z = (y * x) * (1 - x)            (x = Sigmoid's output, y = dy) */
    BF_ACT_TANH_GRAD,    /* z = y * (1 - x * x)              (x = Tanh's output, y = dy)    */
} bf_act_op;

/* True for the three gradients, which read a second operand y. */
static inline bool bf_act_binary(bf_act_op op) { return op >= BF_ACT_RELU_GRAD; }

/*
 * z[i] = op(x[i], y[i]) for i < n (n >= 1), device pointers, on the session's stream
 * (ex->stream): the CPU loops' expressions (cwise.h) in the same order of operations, products
 * never fused into a following addition (the CPU does not fuse either). dt: float32 and
 * float64 natively, float16 and bfloat16 computed in float and rounded once, as on the CPU.
 * Writes a note to ex->note. Errors: BF_EDEVICE (a launch), BF_EUNSUPPORTED (dtype; a build
 * without CUDA).
 */
bf_status bf_act_cuda(bf_act_op op, bf_dtype dt, const void *x, const void *y, void *z,
                      int64_t n, const bf_exec *ex, bf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BF_ACT_CUDA_H */
