/*
 * cuda_ctx.h - the per-session state of the CUDA device (STYLE R12: no globals). session_init
 * in devices/cuda.c makes one bf_cuda_ctx per session and hands it out as bf_exec.device_ctx;
 * the kernels in blocks/{nn,array,math}_ops/cuda/ read it. It owns the session's cuDNN
 * handle, its cuBLAS handle (made on first use) and the cache of convolution algorithms
 * chosen per shape. Plain C so that both cuda.c and the .cu files include it; only the CUDA
 * backend (libblockflow_cuda.so) sees it.
 */
#ifndef BF_CUDA_CTX_H
#define BF_CUDA_CTX_H

#include "common.h"

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

/*
 * The cuBLAS functions we call, found with dlopen/dlsym when a session first needs them
 * (bf_cuda_ctx_cublas). cuBLAS is not linked: libcublas and libcublasLt map hundreds of MB
 * whose relocated pages make every fork() of a process that merely links them about 20 times
 * slower (measured: 6 ms instead of 0.3 ms), which every program and test would pay for a
 * MatMul it may never run on a GPU.
 */
typedef struct bf_cublas_api {
    void *lib; /* the dlopen handle, NULL until loaded */
    cublasStatus_t (*create)(cublasHandle_t *handle);
    cublasStatus_t (*destroy)(cublasHandle_t handle);
    cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
    cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode);
    const char *(*status_string)(cublasStatus_t status);
    cublasStatus_t (*sgemm)(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                            int m, int n, int k, const float *alpha, const float *a, int lda,
                            const float *b, int ldb, const float *beta, float *c, int ldc);
    cublasStatus_t (*dgemm)(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                            int m, int n, int k, const double *alpha, const double *a, int lda,
                            const double *b, int ldb, const double *beta, double *c, int ldc);
    cublasStatus_t (*gemm_ex)(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const void *alpha, const void *a,
                              cudaDataType at, int lda, const void *b, cudaDataType bt, int ldb,
                              const void *beta, void *c, cudaDataType ct, int ldc,
                              cublasComputeType_t compute, cublasGemmAlgo_t algo);
} bf_cublas_api;

typedef struct bf_cuda_ctx {
    int ordinal;               /* the GPU this session runs on */
    cudaStream_t stream;       /* the session's stream (also bf_exec.stream) */
    cudnnHandle_t cudnn;       /* bound to `stream` */
    cublasHandle_t cublas;     /* NULL until bf_cuda_ctx_cublas makes it (MatMul) */
    bf_cublas_api blas;        /* its functions, loaded with it */
    int autotune;              /* BF_CUDNN_AUTOTUNE=1 at session_init: benchmark and cache */
    int any_algo;              /* BF_CUDNN_DETERMINISTIC=0: non-deterministic algorithms too */
    size_t ws_cap;             /* most cuDNN workspace an algorithm may use (bytes) */
    int sm_count;              /* multiprocessors, for grid sizing */
    pthread_mutex_t lock;      /* guards the cuDNN and cuBLAS handles and the cache */
    bf_cuda_algo_entry *cache; /* bf_malloc'd, n_cache used of cap_cache */
    int n_cache, cap_cache;
} bf_cuda_ctx;

/*
 * The session's cuBLAS handle (c->cublas) and functions (c->blas), made on first use:
 * libcublas.so.<major> is loaded (the loader's search, then the folder libcudart came from),
 * and the handle made in CUBLAS_PEDANTIC_MATH, so that float32 never goes through TF32 or the
 * BF16x9 emulation and float64 never through fixed-point emulation: products match the CPU's
 * to rounding. The caller holds c->lock and binds the handle to its stream (blas.set_stream)
 * before each call. session_free destroys the handle; the library stays loaded (unloading code
 * that registered kernels with the CUDA runtime is not safe while the runtime lives).
 * Errors: BF_EDEVICE (the library or a function missing, cublasCreate failing), with why.
 */
bf_status bf_cuda_ctx_cublas(bf_cuda_ctx *c, bf_error *err);

/*
 * The backend's device probe and release (devices/cuda.c), behind the table's probe and
 * release (cuda_api.h): bf_cuda_probe in the core loads the backend and calls these. Fill
 * `devs` with the GPUs found (sm_80 or newer, cuDNN 9 or newer) and return their number, or
 * 0 with the reason in `why` (no driver, no device...).
 */
int bf_cuda_dev_probe(struct bf_device *devs, int cap, char *why, size_t why_size);
void bf_cuda_dev_release(struct bf_device *devs, int n);

#ifdef __cplusplus
}
#endif
#endif /* BF_CUDA_CTX_H */
