/*
 * act_cuda_none.c - the activations' GPU entry point in a build without CUDA. It is never
 * reached at run time (such a build has no GPU device); it refuses so that even a direct call
 * fails cleanly.
 */
#include "act_cuda.h"

bf_status bf_act_cuda(bf_act_op op, bf_dtype dt, const void *x, const void *y, void *z,
                      int64_t n, const bf_exec *ex, bf_error *err) {
    (void)op, (void)dt, (void)x, (void)y, (void)z, (void)n, (void)ex;
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "this library was built without CUDA");
}
