/*
 * Block:    Sum
 * Synopsis: output = sum of input over the axes in reduction_indices (all when unconnected)
 * Padding:  none.
 * Example:  input = [[1,2,3],[4,5,6]], reduction_indices = 1  ->  output = [6, 15];
 *           reduction_indices = [0, 1] (or unconnected)  ->  output = 21;
 *           keep_dims = true, reduction_indices = 0  ->  output = [[5, 7, 9]].
 *
 * sum.c - TensorFlow's Sum (core/ops/math_ops.cc: input, reduction_indices, keep_dims),
 * accumulated in double and rounded once to the input's dtype; in float64 compensated
 * (Neumaier's variant of Kahan's sum), so that a loss such as sum(conv(x, w) * dy) is exact
 * enough for finite-difference checks. Integers are exact (an overflow is an error).
 *
 * Compatibility: blockflow's first Sum had only `input` and summed everything into a scalar.
 * `reduction_indices` is optional: a page that leaves it unconnected still gets the sum of
 * every element, which is also what tf.reduce_sum(x) computes. The engine, the checks and
 * the gradient are shared with Mean, Max, Min and Prod (array_ops/reduce.c).
 */
#include "array_ops/reduce.h"

static const bf_reduce_impl impl = {BF_REDUCE_SUM};

const bf_block_desc bf_block_sum = {
    .type = "Sum",
    .category = "math",
    .synopsis = "output = sum of input over reduction_indices (every axis when unconnected)",
    .doc = "TensorFlow's Sum: adds the elements of `input` along the axes in "
           "`reduction_indices` (negative axes count from the end; unconnected: every axis, "
           "so a one-input Sum of older pages still gives the scalar total). keep_dims keeps "
           "the reduced axes with size 1. Accumulated in double (compensated for float64) and "
           "rounded once; integers exact. An empty sum is 0.",
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
