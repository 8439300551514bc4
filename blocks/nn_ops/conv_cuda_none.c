/*
 * conv_cuda_none.c - the convolution GPU entry points of a build without CUDA. They are never
 * reached at run time (no GPU device exists in such a build); they answer "unsupported" so
 * that even a direct call fails cleanly.
 */
#include "conv_kernels.h"

const char *bf_conv_cuda_unsupported(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                                     int use_cudnn) {
    (void)op, (void)g, (void)dt, (void)use_cudnn;
    return "built without CUDA";
}

size_t bf_conv_cuda_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                              const bf_exec *ex) {
    (void)op, (void)g, (void)dt, (void)use_cudnn, (void)ex;
    return 0;
}

bf_status bf_conv_cuda(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                       const void *a, const void *b, void *out, const bf_exec *ex,
                       bf_error *err) {
    (void)op, (void)g, (void)dt, (void)use_cudnn, (void)a, (void)b, (void)out, (void)ex;
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "this library was built without CUDA");
}
