/*
 * act_cuda.cu - Relu, Sigmoid, Tanh and their gradients on the GPU (act_cuda.h): one
 * grid-stride elementwise kernel per op and dtype, our own rather than cudnnActivation*,
 * because each is one expression and written here it is the CPU loop's expression (cwise.h,
 * relu.c ...) with the same order of operations:
 *   Relu         x < 0 ? 0 : x            (NaN and -0 stay as they are)
 *   Sigmoid      1 / (1 + exp(-x))
 *   Tanh         tanh(x)
 *   ReluGrad     x * (y > 0)              (an inf gradient where y <= 0 gives NaN, as TF)
 *   SigmoidGrad  (y * x) * (1 - x)        (x: Sigmoid's output, y: dy)
 *   TanhGrad     y * (1 - x * x)          (x: Tanh's output, y: dy)
 * Products go through __fmul_rn / __dmul_rn so that nvcc never fuses them into an FMA (the
 * CPU rounds each product). Relu and the gradients then equal the CPU bit for bit; Sigmoid
 * and Tanh differ by the last bit or two where CUDA's expf / tanhf and the C library's differ
 * (both are within 2 ulp). float16 and bfloat16 compute in float and round once, as the CPU
 * loops do.
 */
#include "math_ops/act_cuda.h"

#include "devices/cuda_ctx.h"
#include "nn_ops/cuda/conv_cuda_device.cuh"

#include <cuda_runtime.h>
#include <stdio.h>

typedef long long i64;

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float exp_(float v) { return expf(v); }
__device__ __forceinline__ double exp_(double v) { return exp(v); }
__device__ __forceinline__ float tanh_(float v) { return tanhf(v); }
__device__ __forceinline__ double tanh_(double v) { return tanh(v); }

template <typename A> __device__ __forceinline__ A act(bf_act_op op, A x, A y) {
    const A one = A(1), zero = A(0);
    switch (op) {
    case BF_ACT_RELU: return x < zero ? zero : x;
    case BF_ACT_SIGMOID: return one / (one + exp_(-x));
    case BF_ACT_TANH: return tanh_(x);
    case BF_ACT_RELU_GRAD: return mul_rn(x, y > zero ? one : zero);
    case BF_ACT_SIGMOID_GRAD: return mul_rn(mul_rn(y, x), one - x);
    default: return mul_rn(y, one - mul_rn(x, x)); /* BF_ACT_TANH_GRAD */
    }
}

/* One kernel per (op, dtype): the op is a template argument, so the switch folds away. */
template <typename T, int OP>
__global__ void act_kernel(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ z,
                           i64 n) {
    typedef typename bf_acc<T>::type A;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        A yv = y ? bf_ld(y[i]) : A(0);
        z[i] = bf_st<T>(act<A>((bf_act_op)OP, bf_ld(x[i]), yv));
    }
}

enum { THREADS = 256 };

template <typename T>
static void launch(bf_act_op op, const void *x, const void *y, void *z, i64 n, cudaStream_t st) {
    i64 b = (n + THREADS - 1) / THREADS;
    const int grid = (int)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
    const T *xp = (const T *)x, *yp = (const T *)y;
    T *zp = (T *)z;
    switch (op) {
    case BF_ACT_RELU: act_kernel<T, BF_ACT_RELU><<<grid, THREADS, 0, st>>>(xp, yp, zp, n); break;
    case BF_ACT_SIGMOID:
        act_kernel<T, BF_ACT_SIGMOID><<<grid, THREADS, 0, st>>>(xp, yp, zp, n);
        break;
    case BF_ACT_TANH: act_kernel<T, BF_ACT_TANH><<<grid, THREADS, 0, st>>>(xp, yp, zp, n); break;
    case BF_ACT_RELU_GRAD:
        act_kernel<T, BF_ACT_RELU_GRAD><<<grid, THREADS, 0, st>>>(xp, yp, zp, n);
        break;
    case BF_ACT_SIGMOID_GRAD:
        act_kernel<T, BF_ACT_SIGMOID_GRAD><<<grid, THREADS, 0, st>>>(xp, yp, zp, n);
        break;
    case BF_ACT_TANH_GRAD:
        act_kernel<T, BF_ACT_TANH_GRAD><<<grid, THREADS, 0, st>>>(xp, yp, zp, n);
        break;
    }
}

extern "C" bf_status bf_act_cuda(bf_act_op op, bf_dtype dt, const void *x, const void *y,
                                 void *z, int64_t n, const bf_exec *ex, bf_error *err) {
    static const char *const names[] = {"relu",      "sigmoid",      "tanh",
                                        "relu_grad", "sigmoid_grad", "tanh_grad"};
    if ((unsigned)op >= sizeof names / sizeof names[0])
        return bf_err(err, BF_EINTERNAL, "internal", "unknown activation %d", (int)op);
    if (bf_act_binary(op) && !y)
        return bf_err(err, BF_EINTERNAL, "internal", "%s needs two operands", names[op]);
    if (n <= 0) return BF_OK;
    cudaStream_t st = ex ? (cudaStream_t)ex->stream : NULL;
    const bf_cuda_ctx *c = ex ? (const bf_cuda_ctx *)ex->device_ctx : NULL;
    if (c) {
        cudaError_t e = cudaSetDevice(c->ordinal);
        if (e != cudaSuccess)
            return bf_err(err, BF_EDEVICE, "cuda", "cudaSetDevice: %s", cudaGetErrorString(e));
        if (!st) st = c->stream;
    }
    switch (dt) {
    case BF_DTYPE_F32: launch<float>(op, x, y, z, n, st); break;
    case BF_DTYPE_F64: launch<double>(op, x, y, z, n, st); break;
    case BF_DTYPE_F16: launch<__half>(op, x, y, z, n, st); break;
    case BF_DTYPE_BF16: launch<__nv_bfloat16>(op, x, y, z, n, st); break;
    default:
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "no GPU %s for dtype %s",
                      names[op], bf_dtype_name(dt));
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return bf_err(err, BF_EDEVICE, "cuda", "launching the %s kernel: %s", names[op],
                      cudaGetErrorString(e));
    if (ex && ex->note && ex->note_size)
        snprintf(ex->note, ex->note_size, "own %s kernel", names[op]);
    return BF_OK;
}
