/*
 * Block:    Prod
 * Synopsis: output = product of input over reduction_indices (every axis when unconnected)
 * Padding:  none.
 * Example:  input = [[1,2,3],[4,5,6]], reduction_indices = 1  ->  output = [6, 120].
 *
 * prod.c - TensorFlow's Prod (core/ops/math_ops.cc: input, reduction_indices, keep_dims), one of
 * the reductions of array_ops/reduce.c, which holds the engine, the checks in TF's words and
 * the gradient. reduction_indices may stay unconnected: every axis is reduced.
 */
#include "reduce.h"

static const bf_reduce_impl impl = {BF_REDUCE_PROD};

const bf_block_desc bf_block_prod = {
    .type = "Prod",
    .category = "math",
    .synopsis = "output = product of input over reduction_indices (every axis when unconnected)",
    .doc = "TensorFlow's Prod: the product along the axes in `reduction_indices` "
           "(unconnected: every axis); keep_dims keeps them with size 1. Floats multiply in "
           "double and round once; integers are exact (overflow is an error). The product of "
           "nothing is 1. No gradient yet.",
    .inputs = bf_reduce_inputs,
    .n_inputs = 2,
    .outputs = bf_reduce_outputs,
    .n_outputs = 1,
    .attrs = bf_reduce_attrs,
    .n_attrs = 1,
    .infer = bf_reduce_infer,
    .workspace_cpu = bf_reduce_workspace_cpu,
    .run_cpu = bf_reduce_run_cpu,
    .impl = &impl,
};
