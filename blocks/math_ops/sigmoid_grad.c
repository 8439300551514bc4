/*
 * Block:    SigmoidGrad
 * Synopsis: z = dy * y * (1 - y)
 * Example:  y = [0.5], dy = [2]  ->  z = [0.5].
 *
 * sigmoid_grad.c - Sigmoid's gradient from its output y, as TensorFlow's
 * scalar_sigmoid_gradient_op: dy * y * (1 - y). In the loop, x is y and y is dy.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(sigmoid_grad, y * x * ((T)1 - x))

static const bf_binary_impl impl = {BF_CW_FLOATS2(sigmoid_grad)};

const bf_block_desc bf_block_sigmoid_grad = {
    .type = "SigmoidGrad",
    .category = "math",
    .synopsis = "z = dy * y * (1 - y)",
    .doc = "Sigmoid's gradient from its output: dy * y * (1 - y). Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(bf_cw_grad_inputs, bf_cw_z_floats),
    .impl = &impl,
};
