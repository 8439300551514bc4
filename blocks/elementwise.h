/*
 * elementwise.h - what Add, Sub and Mul share: shape rules (equal shapes, or one side a
 * rank-0 scalar that is broadcast, as TensorFlow broadcasts a scalar) and the loop, typed
 * for float32 and float64 and through double for the other dtypes (half and bfloat16 are
 * computed in float and rounded once).
 */
#ifndef BF_ELEMENTWISE_H
#define BF_ELEMENTWISE_H

#include "block.h"

typedef double (*bf_binop)(double a, double b);

/* impl of the Add, Sub and Mul descriptors: the scalar operation. */
typedef struct bf_binary_impl {
    bf_binop op;
} bf_binary_impl;

extern const bf_port_desc bf_binary_inputs[2];
extern const bf_port_desc bf_binary_outputs[1];

/* Infer the output of a broadcasting binary op on inputs "x" and "y". */
bf_status bf_binary_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err);
/* z[i] = op(x[i or 0], y[i or 0]), op from node->desc->impl. */
bf_status bf_binary_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#endif /* BF_ELEMENTWISE_H */
