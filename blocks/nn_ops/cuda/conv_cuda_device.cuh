/*
 * conv_cuda_device.cuh - device code our CUDA kernel files share: how each dtype is loaded,
 * accumulated and stored (half and bfloat16 are read into float, accumulated in float and
 * rounded once on store; float in float; double in double), and the ordered reduction of
 * split partial sums that keeps split reductions bitwise reproducible.
 */
#ifndef BF_CONV_CUDA_DEVICE_CUH
#define BF_CONV_CUDA_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename T> struct bf_acc { typedef float type; };
template <> struct bf_acc<double> { typedef double type; };

__host__ __device__ __forceinline__ float bf_ld(float v) { return v; }
__host__ __device__ __forceinline__ double bf_ld(double v) { return v; }
__device__ __forceinline__ float bf_ld(__half v) { return __half2float(v); }
__device__ __forceinline__ float bf_ld(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __host__ __device__ __forceinline__ T bf_st(typename bf_acc<T>::type v);
template <> __host__ __device__ __forceinline__ float bf_st<float>(float v) { return v; }
template <> __host__ __device__ __forceinline__ double bf_st<double>(double v) { return v; }
template <> __device__ __forceinline__ __half bf_st<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 bf_st<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

/*
 * out[f] = the sum over s of partial[s*F + f], in a fixed order: block (32, 8) sums 32
 * consecutive f; thread (tx, ty) adds the splits ty, ty + 8, ... and the 8 sums are then added
 * in ty order. Coalesced across tx, and eight loads in flight per f rather than one long chain.
 */
template <typename T>
__global__ void __launch_bounds__(256)
    split_reduce(const typename bf_acc<T>::type *__restrict__ partial, T *__restrict__ out, int F,
                 int splits) {
    typedef typename bf_acc<T>::type A;
    __shared__ A red[8][32];
    int f = blockIdx.x * 32 + threadIdx.x;
    A s = A(0);
    if (f < F)
        for (int sp = threadIdx.y; sp < splits; sp += 8)
            s += partial[(size_t)sp * F + f];
    red[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && f < F) {
        A t = A(0);
        for (int q = 0; q < 8; q++)
            t += red[q][threadIdx.x];
        out[f] = bf_st<T>(t);
    }
}

/* Launch split_reduce for F outputs on stream st. */
template <typename T>
static inline void split_reduce_launch(const typename bf_acc<T>::type *partial, T *out, int F,
                                       int splits, cudaStream_t st) {
    split_reduce<T><<<(F + 31) / 32, dim3(32, 8), 0, st>>>(partial, out, F, splits);
}

#endif /* BF_CONV_CUDA_DEVICE_CUH */
