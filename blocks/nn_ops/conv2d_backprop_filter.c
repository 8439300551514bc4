/*
 * Block:    Conv2DBackpropFilter
 * Synopsis: dW[kh,kw,ci,co] = sum_{n,oh,ow} x[n, oh*sh+kh*dh-pt, ow*sw+kw*dw-pl, g*Cg+ci] *
 *           dy[n,oh,ow,co]
 * Padding:  the forward op's: eff = (f-1)*d+1; VALID out = (in-eff+s)/s; SAME out =
 *           ceil(in/s) with need/2 before and the odd pixel after; EXPLICIT from the attr.
 *           out_backprop's spatial size must equal that computed out, exactly as in TF.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] ([1,3,3,1]), filter_sizes = [2,2,1,1]:
 *           VALID, dy = 2x2 ones  -> dW = [[12,16],[24,28]] (each tap sums the pixels it saw);
 *           SAME,  dy = 3x3 ones  -> dW = [[45,33],[39,28]] (padding adds zeros below/right).
 *
 * conv2d_backprop_filter.c - The gradient of Conv2D with respect to its filter: each filter tap
 * correlates the input pixels it visited with the output gradient at the positions it produced.
 *
 * Superset of TensorFlow: NCHW, dilations > 1 and grouped filters (filter_sizes[2] dividing C) are
 * computed on the CPU (TF's CPU kernel refuses them for lack of a kernel; its GPU/XLA
 * kernels compute exactly this).
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once). int32, which TF registers for Conv2D/Conv2DBackpropInput, is not
 *           offered: no integer kernel exists here.
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input", BF_DT_FLOATS, 0, "forward input [N, H, W, C] (or NCHW)"},
    {"filter_sizes", BF_DT(I32), BF_PORT_HOST,
     "int32 [4]: the filter shape [fh, fw, C / groups, out_c]"},
    {"out_backprop", BF_DT_FLOATS, 0,
     "gradient of the forward output [N, OH, OW, out_c] (or NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "filter gradient of shape filter_sizes"},
};

static const bf_conv_spec spec = {BF_CONV_BWD_FILTER, 0, "Conv2DBackpropFilter"};

const bf_block_desc bf_block_conv2d_backprop_filter = {
    .type = "Conv2DBackpropFilter",
    .category = "nn",
    .synopsis = "dW[kh,kw,ci,co] = sum_{n,oh,ow} x[n, oh*sh+kh*dh-pt, ow*sw+kw*dw-pl, g*Cg+ci] * "
        "dy[n,oh,ow,co]",
    .doc = "Gradient of Conv2D with respect to the filter; the result has the shape given by "
        "filter_sizes.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_conv2d_attr_descs,
    .n_attrs = BF_CONV2D_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .grad = &bf_conv2d_grad_filter,
    .impl = &spec,
};
