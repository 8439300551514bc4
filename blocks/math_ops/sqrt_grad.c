/*
 * Block:    SqrtGrad
 * Synopsis: z = 0.5 * dy / y
 * Example:  y = [2], dy = [4]  ->  z = [1].
 *
 * sqrt_grad.c - Sqrt's gradient from its output y, as TensorFlow's scalar_sqrt_gradient_op:
 * 0.5 * dy / y. In the loop, x is y and y is dy.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(sqrt_grad, (T)0.5 * y / x)

static const bf_binary_impl impl = {BF_CW_FLOATS2(sqrt_grad)};

const bf_block_desc bf_block_sqrt_grad = {
    .type = "SqrtGrad",
    .category = "math",
    .synopsis = "z = 0.5 * dy / y",
    .doc = "Sqrt's gradient from its output: 0.5 * dy / y. Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(bf_cw_grad_inputs, bf_cw_z_floats),
    .impl = &impl,
};
