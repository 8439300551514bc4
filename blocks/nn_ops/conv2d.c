/*
 * Block:    Conv2D
 * Synopsis: y[n,oh,ow,co] = sum_{kh,kw,ci} x[n, oh*sh+kh*dh-pt, ow*sw+kw*dw-pl, g*Cg+ci] *
 *           w[kh,kw,ci,co]
 * Padding:  per spatial dim, eff = (f-1)*d+1. VALID: out = (in-eff+s)/s, no pad. SAME:
 *           out = ceil(in/s), need = max(0, (out-1)*s+eff-in), top/left = need/2 and the
 *           odd pixel after (bottom/right). EXPLICIT: out = (in+before+after-eff+s)/s.
 *           Division truncates toward zero, as in TF.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] (shape [1,3,3,1]), w = 2x2 ones ([2,2,1,1]):
 *           VALID -> [[12,16],[24,28]];  SAME -> out 3x3, pads top/left 0, bottom/right 1:
 *           [[12,16,9],[24,28,15],[15,17,9]].
 *
 * conv2d.c - Cross-correlation of a batch of images with a filter bank (the filter is not flipped).
 * Grouped convolution when the filter's third dim divides C: group g = co / (out_c / groups)
 * reads input channels [g*Cg, (g+1)*Cg).
 *
 * Superset of TensorFlow: NCHW is computed on the CPU too (TF's CPU kernel is NHWC only).
 * Every check TF makes, it makes too, in TF's words (conv_geom.c), before any arithmetic.
 * Dtypes:   float16, bfloat16, float32, float64 (halves are computed in float32 and
 *           rounded once). int32, which TF registers for Conv2D/Conv2DBackpropInput, is not
 *           offered: no integer kernel exists here.
 */
#include "conv_geom.h"

static const bf_port_desc inputs[] = {
    {"input", BF_DT_FLOATS, 0, "activations [N, H, W, C] (NHWC) or [N, C, H, W] (NCHW)"},
    {"filter", BF_DT_FLOATS, 0, "filter [fh, fw, C / groups, out_c] (HWIO, whatever data_format)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0,
     "activations [N, OH, OW, out_c] in data_format"},
};

static const bf_conv_spec spec = {BF_CONV_FWD, 0, "Conv2D"};

const bf_block_desc bf_block_conv2d = {
    .type = "Conv2D",
    .category = "nn",
    .synopsis = "y[n,oh,ow,co] = sum_{kh,kw,ci} x[n, oh*sh+kh*dh-pt, ow*sw+kw*dw-pl, g*Cg+ci] * "
        "w[kh,kw,ci,co]",
    .doc = "2-D convolution (cross-correlation) of NHWC/NCHW activations with an HWIO filter; "
        "grouped when the filter depth divides the input depth.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_conv2d_attr_descs,
    .n_attrs = BF_CONV2D_N_ATTRS,
    BF_CONV_BLOCK_FUNCTIONS,
    .gradient = bf_conv_desc_gradient,
    .impl = &spec,
};
