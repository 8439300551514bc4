/*
 * conv_harness.h - driving the convolution blocks through their descriptors in tests, the way
 * the session does: a node from attribute JSON, infer from the input tensors, allocate the
 * inferred output, plan the workspace, run_cpu on a real thread pool. Also small tensor
 * builders (values given as doubles, converted to any dtype).
 */
#ifndef BF_CONV_HARNESS_H
#define BF_CONV_HARNESS_H

#include "block.h"
#include "bf_test.h"

/* The six descriptors (blocks/nn_ops/). */
extern const bf_block_desc bf_block_conv2d, bf_block_conv2d_backprop_filter,
    bf_block_conv2d_backprop_input, bf_block_depthwise_conv2d_native,
    bf_block_depthwise_conv2d_native_backprop_filter,
    bf_block_depthwise_conv2d_native_backprop_input;

/* The descriptor of a TF op name ("Conv2DBackpropFilter"), or NULL. */
const bf_block_desc *ct_desc(const char *op);

/* A 4-or-fewer-D tensor of dtype dt with values v (numel of them; v NULL: zeros). */
bf_tensor *ct_tensor(bf_dtype dt, int rank, const int64_t *dims, const double *v);
/* A 1-D int32 tensor of n values. */
bf_tensor *ct_i32(int n, const int64_t *v);

/*
 * Run block `d` with attributes `attrs_json` on inputs in[0..n_inputs) using `threads`
 * threads. On success *out is the output tensor (caller frees). On failure *out is NULL and
 * err is filled by infer or run_cpu.
 */
bf_status ct_run(const bf_block_desc *d, const char *attrs_json, bf_tensor *const *in,
                 int threads, bf_tensor **out, bf_error *err);

/* Only infer, from port infos; *out is the inferred output info. */
bf_status ct_infer(const bf_block_desc *d, const char *attrs_json, const bf_port_info *in,
                   bf_port_info *out, bf_error *err);

/* The tensor's elements as doubles (malloc'd; caller frees with free()); NULL without memory. */
double *ct_values(const bf_tensor *t);

#endif /* BF_CONV_HARNESS_H */
