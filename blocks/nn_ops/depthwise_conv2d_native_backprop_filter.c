/*
 * Block:    DepthwiseConv2dNativeBackpropFilter
 * Synopsis: dW[kh,kw,k,q] = sum_{n,oh,ow} x[n, oh*s+kh*dh-pt, ow*s+kw*dw-pl, k] * dy[n,oh,ow,k*M+q]
 * Padding:  the forward op's: eff = (f-1)*d+1; VALID out = (in-eff+s)/s; SAME out =
 *           ceil(in/s) with need/2 before and the odd pixel after; EXPLICIT from the attr.
 *           out_backprop's spatial size must equal that computed out, exactly as in TF.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] ([1,3,3,1]), filter_sizes = [2,2,1,1], VALID,
 *           dy = 2x2 ones -> dW = [[12,16],[24,28]]; with SAME and dy = 3x3 ones the zero
 *           row/column padded after the data gives dW = [[45,33],[39,28]].
 *
 * depthwise_conv2d_native_backprop_filter.c - The gradient of DepthwiseConv2dNative with respect
 * to its filter. An empty out_backprop gives a zero-filled gradient (TF returns uninitialised
 * memory there).
 *
 * Superset of TensorFlow: Dilations are honoured and NCHW is computed on the CPU (see
 * depthwise_conv2d_native.c); equal row/column strides are required as in TF.
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once).
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input", BF_DT_FLOATS, 0, "forward input [N, H, W, C] (or NCHW)"},
    {"filter_sizes", BF_DT(I32), BF_PORT_HOST, "int32 [4]: the filter shape [fh, fw, C, M]"},
    {"out_backprop", BF_DT_FLOATS, 0, "gradient of the forward output [N, OH, OW, C*M] (or NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "filter gradient [fh, fw, C, M]"},
};

static const bf_conv_spec spec = {BF_CONV_BWD_FILTER, 1, "DepthwiseConv2DBackpropFilter"};

const bf_block_desc bf_block_depthwise_conv2d_native_backprop_filter = {
    .type = "DepthwiseConv2dNativeBackpropFilter",
    .category = "nn",
    .synopsis = "dW[kh,kw,k,q] = sum_{n,oh,ow} x[n, oh*s+kh*dh-pt, ow*s+kw*dw-pl, k] * "
        "dy[n,oh,ow,k*M+q]",
    .doc = "Gradient of DepthwiseConv2dNative with respect to the filter; the result has the shape "
        "given by filter_sizes.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_depthwise_attr_descs,
    .n_attrs = BF_DEPTHWISE_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .grad = &bf_depthwise_grad_filter,
    .impl = &spec,
};
