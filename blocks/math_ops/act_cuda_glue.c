/*
 * act_cuda_glue.c - the activations' GPU entry point in the core: it forwards to the CUDA
 * backend behind ex's device (libblockflow_cuda.so, devices/cuda_api.h; the kernels are
 * cuda/act_cuda.cu). Without one (a build without CUDA, a CPU exec) it refuses cleanly.
 */
#include "act_cuda.h"

#include "devices/cuda_api.h"

bf_status bf_act_cuda(bf_act_op op, bf_dtype dt, const void *x, const void *y, void *z,
                      int64_t n, const bf_exec *ex, bf_error *err) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    if (!api) return bf_cuda_no_backend(err);
    return api->act(op, dt, x, y, z, n, ex, err);
}
