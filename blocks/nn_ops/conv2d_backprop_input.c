/*
 * Block:    Conv2DBackpropInput
 * Synopsis: dX[n,ih,iw,g*Cg+ci] = sum over (oh,ow,kh,kw,co) with ih = oh*sh+kh*dh-pt, iw =
 *           ow*sw+kw*dw-pl of w[kh,kw,ci,co] * dy[n,oh,ow,co]
 * Padding:  the forward op's: eff = (f-1)*d+1; VALID out = (in-eff+s)/s; SAME out =
 *           ceil(in/s) with need/2 before and the odd pixel after; EXPLICIT from the attr.
 *           out_backprop's spatial size must equal that computed out, exactly as in TF.
 * Example:  dy = 2x2 ones ([1,2,2,1]), w = 2x2 ones, input_sizes = [1,3,3,1], VALID:
 *           dX = [[1,2,1],[2,4,2],[1,2,1]] (how many windows covered each pixel). Pixels no
 *           window covers (e.g. the last columns with stride 3 on width 7) get 0.
 *
 * conv2d_backprop_input.c - The gradient of Conv2D with respect to its input (the "transposed
 * convolution"): every output gradient is spread back over the window of input pixels it came from.
 * input_sizes is needed because with stride > 1 several input sizes give the same output.
 *
 * Superset of TensorFlow: NCHW, dilations > 1 and grouped filters are computed on the CPU (TF's CPU
 * kernel refuses them for lack of a kernel). input_sizes may be [H, W]: then N comes from
 * out_backprop and C from filter dim 2, as in TF.
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once). int32, which TF registers for Conv2D/Conv2DBackpropInput, is not
 *           offered: no integer kernel exists here.
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input_sizes", BF_DT(I32), BF_PORT_HOST,
     "int32 [4]: the input shape in data_format order, or [2]: [H, W]"},
    {"filter", BF_DT_FLOATS, 0, "filter [fh, fw, C / groups, out_c]"},
    {"out_backprop", BF_DT_FLOATS, 0,
     "gradient of the forward output [N, OH, OW, out_c] (or NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "input gradient of shape input_sizes"},
};

static const bf_conv_spec spec = {BF_CONV_BWD_INPUT, 0, "Conv2DBackpropInput"};

const bf_block_desc bf_block_conv2d_backprop_input = {
    .type = "Conv2DBackpropInput",
    .category = "nn",
    .synopsis = "dX[n,ih,iw,g*Cg+ci] = sum over (oh,ow,kh,kw,co) with ih = oh*sh+kh*dh-pt, iw = "
        "ow*sw+kw*dw-pl of w[kh,kw,ci,co] * dy[n,oh,ow,co]",
    .doc = "Gradient of Conv2D with respect to the input (transposed convolution); the result has "
        "the shape given by input_sizes.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_conv2d_attr_descs,
    .n_attrs = BF_CONV2D_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .grad = &bf_conv2d_grad_input,
    .impl = &spec,
};
