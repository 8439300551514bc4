/*
 * Block:    TanhGrad
 * Synopsis: z = dy * (1 - y * y)
 * Example:  y = [0.5], dy = [2]  ->  z = [1.5].
 *
 * tanh_grad.c - Tanh's gradient from its output y, as TensorFlow's scalar_tanh_gradient_op:
 * dy * (1 - y^2). In the loop, x is y and y is dy.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(tanh_grad, y * ((T)1 - x * x))

static const bf_binary_impl impl = {BF_CW_FLOATS2(tanh_grad)};

const bf_block_desc bf_block_tanh_grad = {
    .type = "TanhGrad",
    .category = "math",
    .synopsis = "z = dy * (1 - y * y)",
    .doc = "Tanh's gradient from its output: dy * (1 - y^2). Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(bf_cw_grad_inputs, bf_cw_z_floats),
    .impl = &impl,
};
