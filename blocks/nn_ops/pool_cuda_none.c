/*
 * pool_cuda_none.c - the pooling GPU entry point of a build without CUDA. It is never reached
 * at run time (such a build has no GPU device); it refuses so that even a direct call fails
 * cleanly.
 */
#include "pool_geom.h"

bf_status bf_pool_cuda(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const void *a,
                       const void *b, void *out, double lowest, const bf_exec *ex,
                       bf_error *err) {
    (void)op, (void)g, (void)dt, (void)a, (void)b, (void)out, (void)lowest, (void)ex;
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "this library was built without CUDA");
}

size_t bf_pool_cuda_workspace(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt) {
    (void)op, (void)g, (void)dt;
    return 0;
}
