/*
 * matmul_cuda_none.c - MatMul's GPU entry point in a build without CUDA. It is never reached
 * at run time (such a build has no GPU device); it refuses so that even a direct call fails
 * cleanly.
 */
#include "matmul_cuda.h"

bf_status bf_matmul_cuda(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bf_dtype dt,
                         const void *a, const void *b, void *c, const bf_exec *ex,
                         bf_error *err) {
    (void)m, (void)n, (void)k, (void)ta, (void)tb, (void)dt, (void)a, (void)b, (void)c, (void)ex;
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "this library was built without CUDA");
}
