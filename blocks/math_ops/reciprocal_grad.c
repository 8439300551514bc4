/*
 * Block:    ReciprocalGrad
 * Synopsis: z = -dy * y * y
 * Example:  y = [0.5], dy = [4]  ->  z = [-1].
 *
 * reciprocal_grad.c - Reciprocal's gradient from its output y, as TensorFlow's
 * scalar_inverse_gradient_op: -dy * y * y. In the loop, x is y and y is dy.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(reciprocal_grad, -y * x * x)

static const bf_binary_impl impl = {BF_CW_FLOATS2(reciprocal_grad)};

const bf_block_desc bf_block_reciprocal_grad = {
    .type = "ReciprocalGrad",
    .category = "math",
    .synopsis = "z = -dy * y * y",
    .doc = "Reciprocal's gradient from its output: -dy * y^2. Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(bf_cw_grad_inputs, bf_cw_z_floats),
    .impl = &impl,
};
