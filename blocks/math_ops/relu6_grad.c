/*
 * Block:    Relu6Grad
 * Synopsis: backprops = gradients * (0 < features < 6)
 * Example:  gradients = [5,5,5,5], features = [-1,3,6,7]  ->  backprops = [0,5,0,0].
 *
 * relu6_grad.c - Relu6's gradient as TensorFlow's kernel: the incoming gradient times (0 <
 * features < 6) as 1 or 0; features may be Relu6's input or output. In the loop, x is
 * gradients and y is features.
 * No gradient of its own (TensorFlow has one; second derivatives are not offered here).
 */
#include "cwise.h"

BF_CW_FLOAT2(relu6_grad, x * (T)((y > 0) & (y < 6)))

static const bf_binary_impl impl = {BF_CW_FLOATS2(relu6_grad)};

static const bf_port_desc inputs[] = {
    {"gradients", BF_DT_FLOATS, 0, "the gradient arriving at Relu6's output"},
    {"features", BF_DT_FLOATS, 0, "Relu6's input or output (same shape)"},
};
static const bf_port_desc outputs[] = {
    {"backprops", BF_DT_FLOATS, 0, "the gradient of Relu6's input"}};

const bf_block_desc bf_block_relu6_grad = {
    .type = "Relu6Grad",
    .category = "math",
    .synopsis = "backprops = gradients * (0 < features < 6)",
    .doc = "Relu6's gradient: gradients * (0 < features < 6). Same shapes. Float dtypes.",
    BF_CW_SAME_FIELDS(inputs, outputs),
    .impl = &impl,
};
