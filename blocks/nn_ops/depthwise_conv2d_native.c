/*
 * Block:    DepthwiseConv2dNative
 * Synopsis: y[n,oh,ow,k*M+q] = sum_{kh,kw} x[n, oh*s+kh*dh-pt, ow*s+kw*dw-pl, k] * w[kh,kw,k,q]
 * Padding:  per spatial dim, eff = (f-1)*d+1. VALID: out = (in-eff+s)/s, no pad. SAME:
 *           out = ceil(in/s), need = max(0, (out-1)*s+eff-in), top/left = need/2 and the
 *           odd pixel after (bottom/right). EXPLICIT: out = (in+before+after-eff+s)/s.
 *           Division truncates toward zero, as in TF.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] ([1,3,3,1]), M = 2, w[:,:,0,0] = 2x2 ones,
 *           w[:,:,0,1] = [[1,0],[0,-1]], VALID -> y[...,0] = [[12,16],[24,28]],
 *           y[...,1] = [[-4,-4],[-4,-4]] (channels interleaved: y = [12,-4, 16,-4, ...]).
 *
 * depthwise_conv2d_native.c - Each input channel k is convolved on its own with M filters; the
 * C*M results are interleaved channel-major (k*M+q). Equal to Conv2D with groups = C on the HWIO
 * view [fh, fw, 1, C*M] of the same filter bytes.
 *
 * Superset of TensorFlow: Dilations are honoured (TF's native kernels silently ignore them; XLA and
 * tf.nn.depthwise_conv2d honour them) and NCHW is computed on the CPU. TF's own rule that
 * the row and column strides be equal is kept: it is part of the op's definition.
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once).
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input", BF_DT_FLOATS, 0, "activations [N, H, W, C] (or NCHW)"},
    {"filter", BF_DT_FLOATS, 0, "filter [fh, fw, C, M] (M = channel multiplier)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "activations [N, OH, OW, C*M]; channel k*M+q comes from input channel k"},
};

static const bf_conv_spec spec = {BF_CONV_FWD, 1, "DepthwiseConv2dNative"};

const bf_block_desc bf_block_depthwise_conv2d_native = {
    .type = "DepthwiseConv2dNative",
    .category = "nn",
    .synopsis = "y[n,oh,ow,k*M+q] = sum_{kh,kw} x[n, oh*s+kh*dh-pt, ow*s+kw*dw-pl, k] * "
        "w[kh,kw,k,q]",
    .doc = "Depthwise 2-D convolution: each input channel is convolved with its own "
        "channel_multiplier filters.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_depthwise_attr_descs,
    .n_attrs = BF_DEPTHWISE_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .gradient = bf_conv_desc_gradient,
    .impl = &spec,
};
