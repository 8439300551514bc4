/*
 * Block:    OnesLike
 * Synopsis: y = ones of x's shape and dtype
 * Padding:  none.
 * Example:  x = [[1,2],[3,4]]  ->  y = [[1,1],[1,1]].
 *
 * ones_like.c - TensorFlow's OnesLike (core/ops/array_ops.cc): x's values are not read. Not
 * differentiable. Shares ZerosLike's implementation (zeros_like.c).
 */
#include "fill_like.h"

static const bf_fill_like_impl impl = {1};

const bf_block_desc bf_block_ones_like = {
    .type = "OnesLike",
    .category = "array",
    .synopsis = "y = ones of x's shape and dtype",
    .doc = "TensorFlow's OnesLike: a tensor of ones with the shape and dtype of x.",
    .inputs = bf_fill_like_inputs,
    .n_inputs = 1,
    .outputs = bf_fill_like_outputs,
    .n_outputs = 1,
    .infer = bf_fill_like_infer,
    .run_cpu = bf_fill_like_run_cpu,
    .impl = &impl,
};
