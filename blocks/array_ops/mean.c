/*
 * Block:    Mean
 * Synopsis: output = mean of input over reduction_indices (every axis when unconnected)
 * Padding:  none.
 * Example:  input = [[1,2,3],[4,5,6]], reduction_indices = 0  ->  output = [2.5, 3.5, 4.5].
 *
 * mean.c - TensorFlow's Mean (core/ops/math_ops.cc: input, reduction_indices, keep_dims), one of
 * the reductions of array_ops/reduce.c, which holds the engine, the checks in TF's words and
 * the gradient. reduction_indices may stay unconnected: every axis is reduced.
 */
#include "reduce.h"

static const bf_reduce_impl impl = {BF_REDUCE_MEAN};

const bf_block_desc bf_block_mean = {
    .type = "Mean",
    .category = "math",
    .synopsis = "output = mean of input over reduction_indices (every axis when unconnected)",
    .doc = "TensorFlow's Mean: the average of `input` along the axes in `reduction_indices` "
           "(unconnected: every axis); keep_dims keeps them with size 1. Floats are summed in "
           "double (compensated for float64) and divided once; integers truncate, as TF's. The "
           "mean of "
           "nothing is NaN.",
    .inputs = bf_reduce_inputs,
    .n_inputs = 2,
    .outputs = bf_reduce_outputs,
    .n_outputs = 1,
    .attrs = bf_reduce_attrs,
    .n_attrs = 1,
    .infer = bf_reduce_infer,
    .workspace_cpu = bf_reduce_workspace_cpu,
    .run_cpu = bf_reduce_run_cpu,
    .gradient = bf_reduce_gradient,
    .impl = &impl,
};
