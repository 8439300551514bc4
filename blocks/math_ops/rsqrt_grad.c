/*
 * Block:    RsqrtGrad
 * Synopsis: z = -0.5 * dy * y^3
 * Example:  y = [0.5], dy = [8]  ->  z = [-0.5].
 *
 * rsqrt_grad.c - Rsqrt's gradient from its output y, as TensorFlow's
 * scalar_rsqrt_gradient_op: -0.5 * (dy * y) * (y * y). In the loop, x is y and y is dy.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(rsqrt_grad, (T)-0.5 * (y * x) * (x * x))

static const bf_binary_impl impl = {BF_CW_FLOATS2(rsqrt_grad)};

const bf_block_desc bf_block_rsqrt_grad = {
    .type = "RsqrtGrad",
    .category = "math",
    .synopsis = "z = -0.5 * dy * y^3",
    .doc = "Rsqrt's gradient from its output: -0.5 * dy * y^3. Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(bf_cw_grad_inputs, bf_cw_z_floats),
    .impl = &impl,
};
