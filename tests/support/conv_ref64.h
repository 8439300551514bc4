/*
 * conv_ref64.h - the plain float64 reference of the convolution ops that the kernel tests
 * (fast CPU, GPU, CUDA emulation) compare against: every multiply-add of the definition in
 * conv_kernels.h, visited once, summed in double. Independent of every kernel it judges.
 */
#ifndef BF_CONV_REF64_H
#define BF_CONV_REF64_H

#include "nn_ops/conv_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[0..out_n) (zeroed here) = op(a, b) for geometry g; operands as in conv_kernels.h. */
void bf_test_conv_ref64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                        double *out, int64_t out_n);

#ifdef __cplusplus
}
#endif
#endif /* BF_CONV_REF64_H */
