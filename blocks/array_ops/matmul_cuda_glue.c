/*
 * matmul_cuda_glue.c - MatMul's GPU entry point in the core: it forwards to the CUDA backend
 * behind ex's device (libblockflow_cuda.so, devices/cuda_api.h), which runs it on cuBLAS
 * (cuda/matmul_cuda.cu). Without one (a build without CUDA, a CPU exec) it refuses cleanly.
 */
#include "matmul_cuda.h"

#include "devices/cuda_api.h"

bf_status bf_matmul_cuda(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bf_dtype dt,
                         const void *a, const void *b, void *c, const bf_exec *ex,
                         bf_error *err) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    if (!api) return bf_cuda_no_backend(err);
    return api->matmul(m, n, k, ta, tb, dt, a, b, c, ex, err);
}
