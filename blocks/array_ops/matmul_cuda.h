/*
 * matmul_cuda.h - MatMul's GPU entry point: cuda/matmul_cuda.cu (cuBLAS) in the CUDA backend
 * (libblockflow_cuda.so), reached from the core through matmul_cuda_glue.c, which refuses
 * when no CUDA device is behind the exec (a build without CUDA, no backend).
 */
#ifndef BF_MATMUL_CUDA_H
#define BF_MATMUL_CUDA_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Row-major c [m, n] = op(a) op(b) on the session's stream (ex->stream) with its cuBLAS handle
 * (ex->device_ctx): a is [m, k] ([k, m] with ta), b is [k, n] ([n, k] with tb). dt is float32
 * (cublasSgemm), float64 (cublasDgemm), float16 or bfloat16 (cublasGemmEx, float accumulation,
 * the result rounded once). m, n, k are all >= 1 and below 2^31 (the caller handles empty
 * products). Writes a note ("cublas sgemm") to ex->note. Errors: BF_EDEVICE with cuBLAS's
 * words, BF_EUNSUPPORTED (dtype, sizes), BF_EINTERNAL (no session state).
 */
bf_status bf_matmul_cuda(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bf_dtype dt,
                         const void *a, const void *b, void *c, const bf_exec *ex, bf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BF_MATMUL_CUDA_H */
