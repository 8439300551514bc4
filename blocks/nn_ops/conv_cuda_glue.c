/*
 * conv_cuda_glue.c - the convolution GPU entry points in the core: they forward to the CUDA
 * backend behind ex's device (libblockflow_cuda.so, devices/cuda_api.h; the kernels are in
 * cuda/). Without one (a build without CUDA, a CPU exec) they refuse cleanly. Which cases the
 * GPU takes (bf_conv_cuda_unsupported) is decided in the core: conv_gpu_limits.c.
 */
#include "conv_kernels.h"

#include "devices/cuda_api.h"

size_t bf_conv_cuda_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                              const bf_exec *ex) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    return api ? api->conv_workspace(op, g, dt, use_cudnn, ex) : 0;
}

bf_status bf_conv_cuda(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                       const void *a, const void *b, void *out, const bf_exec *ex,
                       bf_error *err) {
    const bf_cuda_api_v1 *api = bf_cuda_api_of(ex);
    if (!api) return bf_cuda_no_backend(err);
    return api->conv(op, g, dt, use_cudnn, a, b, out, ex, err);
}
