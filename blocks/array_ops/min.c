/*
 * Block:    Min
 * Synopsis: output = min of input over reduction_indices (every axis when unconnected)
 * Padding:  none.
 * Example:  input = [[1,5,3],[4,2,6]], reduction_indices = 1  ->  output = [1, 2].
 *
 * min.c - TensorFlow's Min (core/ops/math_ops.cc: input, reduction_indices, keep_dims), one of
 * the reductions of array_ops/reduce.c, which holds the engine, the checks in TF's words and
 * the gradient. reduction_indices may stay unconnected: every axis is reduced.
 */
#include "reduce.h"

static const bf_reduce_impl impl = {BF_REDUCE_MIN};

const bf_block_desc bf_block_min = {
    .type = "Min",
    .category = "math",
    .synopsis = "output = min of input over reduction_indices (every axis when unconnected)",
    .doc = "TensorFlow's Min: the smallest element along the axes in `reduction_indices` "
           "(unconnected: every axis); keep_dims keeps them with size 1. NaN propagates; the "
           "min of nothing is +inf (the largest integer for integers).",
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
