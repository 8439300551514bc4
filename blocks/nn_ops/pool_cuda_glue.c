/*
 * pool_cuda_glue.c - the pooling GPU entry points in the core: they forward to the CUDA
 * backend behind ex's device (libblockflow_cuda.so, devices/cuda_api.h; the kernels are
 * cuda/pool_cuda.cu). Without one (a build without CUDA, a CPU exec) they refuse cleanly.
 */
#include "pool_geom.h"

#include "devices/cuda_api.h"

bf_status bf_pool_cuda(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const void *a,
                       const void *b, void *out, double lowest, const bf_exec *ex,
                       bf_error *err) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    if (!api) return bf_cuda_no_backend(err);
    return api->pool(op, g, dt, a, b, out, lowest, ex, err);
}

size_t bf_pool_cuda_workspace(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                              const bf_exec *ex) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    return api ? api->pool_workspace(op, g, dt, ex) : 0;
}
