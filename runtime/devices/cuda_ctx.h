/*
 * cuda_ctx.h - the per-session state of the CUDA device (STYLE R12: no globals). session_init
 * in devices/cuda.c makes one bf_cuda_ctx per session and hands it out as bf_exec.device_ctx;
 * the kernels in blocks/{nn,array,math}_ops/cuda/ read it. It owns the session's cuDNN
 * handle, its cuBLAS handle (made on first use) and the cache of convolution algorithms
 * chosen per shape. Plain C so that both cuda.c and the .cu files include it; only CUDA builds
 * see it.
 */
#ifndef BF_CUDA_CTX_H
#define BF_CUDA_CTX_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Words of an algorithm-cache key: the op, the dtype and every field of the geometry. */
#define BF_CUDA_KEY_WORDS 24

/* One remembered algorithm choice (cuDNN enum values stored as int). */
typedef struct bf_cuda_algo_entry {
    int64_t key[BF_CUDA_KEY_WORDS];
    int algo;        /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    int math;        /* cudnnMathType_t the algorithm was found with */
    size_t ws_bytes; /* its cuDNN workspace */
    float ms;        /* measured time (autotune) or -1 (heuristic) */
    int nondet;      /* results may vary in the last bits between runs (atomics) */
} bf_cuda_algo_entry;

typedef struct bf_cuda_ctx {
    int ordinal;               /* the GPU this session runs on */
    cudaStream_t stream;       /* the session's stream (also bf_exec.stream) */
    cudnnHandle_t cudnn;       /* bound to `stream` */
    cublasHandle_t cublas;     /* NULL until bf_cuda_ctx_cublas makes it (MatMul) */
    int autotune;              /* BF_CUDNN_AUTOTUNE=1 at session_init: benchmark and cache */
    int any_algo;              /* BF_CUDNN_DETERMINISTIC=0: non-deterministic algorithms too */
    size_t ws_cap;             /* most cuDNN workspace an algorithm may use (bytes) */
    int sm_count;              /* multiprocessors, for grid sizing */
    pthread_mutex_t lock;      /* guards the cuDNN and cuBLAS handles and the cache */
    bf_cuda_algo_entry *cache; /* bf_malloc'd, n_cache used of cap_cache */
    int n_cache, cap_cache;
} bf_cuda_ctx;

/*
 * The session's cuBLAS handle, made on first use (cublasCreate costs a few milliseconds and
 * some device memory, which sessions without a MatMul on the GPU never pay), in
 * CUBLAS_PEDANTIC_MATH: float32 never goes through TF32 or the BF16x9 emulation, float64 never
 * through fixed-point emulation, so products match the CPU's to rounding. The caller holds
 * c->lock and binds the handle to its stream (cublasSetStream) before each call. Freed by
 * session_free. Returns CUBLAS_STATUS_SUCCESS with *out set, or why not.
 */
cublasStatus_t bf_cuda_ctx_cublas(bf_cuda_ctx *c, cublasHandle_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BF_CUDA_CTX_H */
