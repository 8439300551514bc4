/*
 * Block:    ReluGrad
 * Synopsis: backprops = gradients * (features > 0)
 * Example:  gradients = [5,5,5], features = [-1,0,2]  ->  backprops = [0,0,5].
 *
 * relu_grad.c - Relu's gradient, as TensorFlow's kernel computes it: the incoming gradient
 * times (features > 0) as 1 or 0 (so an inf gradient where features <= 0 gives nan, as
 * TensorFlow's). features may be Relu's input or its output: both are positive at the same
 * places. In the loop, x is gradients and y is features.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

/* (y == y) changes nothing (nan > 0 is false) but lets gcc keep the mask arithmetic, which
 * it vectorises, where x * (T)(y > 0) alone becomes a branch. */
BF_CW_FLOAT2(relu_grad, x * (T)((y > 0) & (y == y)))

static const bf_binary_impl impl = {BF_CW_FLOATS2(relu_grad)};

static const bf_port_desc inputs[] = {
    {"gradients", BF_DT_FLOATS, 0, "the gradient arriving at Relu's output"},
    {"features", BF_DT_FLOATS, 0, "Relu's input or output (same shape)"},
};
static const bf_port_desc outputs[] = {
    {"backprops", BF_DT_FLOATS, 0, "the gradient of Relu's input"}};

const bf_block_desc bf_block_relu_grad = {
    .type = "ReluGrad",
    .category = "math",
    .synopsis = "backprops = gradients * (features > 0)",
    .doc = "Relu's gradient: gradients * (features > 0). Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(inputs, outputs),
    .impl = &impl,
};
