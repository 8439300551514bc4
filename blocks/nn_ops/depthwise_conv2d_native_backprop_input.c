/*
 * Block:    DepthwiseConv2dNativeBackpropInput
 * Synopsis: dX[n,ih,iw,k] = sum over (oh,ow,kh,kw,q) with ih = oh*s+kh*dh-pt, iw = ow*s+kw*dw-pl of
 *           w[kh,kw,k,q] * dy[n,oh,ow,k*M+q]
 * Padding:  the forward op's: eff = (f-1)*d+1; VALID out = (in-eff+s)/s; SAME out =
 *           ceil(in/s) with need/2 before and the odd pixel after; EXPLICIT from the attr.
 *           out_backprop's spatial size must equal that computed out, exactly as in TF.
 * Example:  dy = 2x2 ones ([1,2,2,1]), w = 2x2 ones ([2,2,1,1]), input_sizes = [1,3,3,1],
 *           VALID -> dX = [[1,2,1],[2,4,2],[1,2,1]] (windows covering each pixel).
 *
 * depthwise_conv2d_native_backprop_input.c - The gradient of DepthwiseConv2dNative with respect
 * to its input: each channel's output gradients are spread back through that channel's M filters
 * and summed.
 *
 * Superset of TensorFlow: Dilations are honoured, NCHW is computed on the CPU, and input_sizes may
 * be [H, W] as for Conv2DBackpropInput; equal row/column strides are required as in TF.
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once).
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input_sizes", BF_DT(I32), BF_PORT_HOST,
     "int32 [4]: the input shape in data_format order (or [2]: [H, W])"},
    {"filter", BF_DT_FLOATS, 0, "filter [fh, fw, C, M]"},
    {"out_backprop", BF_DT_FLOATS, 0, "gradient of the forward output [N, OH, OW, C*M] (or NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "input gradient of shape input_sizes"},
};

static const bf_conv_spec spec = {BF_CONV_BWD_INPUT, 1, "DepthwiseConv2DBackpropInput"};

const bf_block_desc bf_block_depthwise_conv2d_native_backprop_input = {
    .type = "DepthwiseConv2dNativeBackpropInput",
    .category = "nn",
    .synopsis = "dX[n,ih,iw,k] = sum over (oh,ow,kh,kw,q) with ih = oh*s+kh*dh-pt, "
        "iw = ow*s+kw*dw-pl of "
        "w[kh,kw,k,q] * dy[n,oh,ow,k*M+q]",
    .doc = "Gradient of DepthwiseConv2dNative with respect to the input; the result has the shape "
        "given by input_sizes.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_depthwise_attr_descs,
    .n_attrs = BF_DEPTHWISE_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .grad = &bf_depthwise_grad_input,
    .impl = &spec,
};
