/*
 * Block:    AvgPool
 * Synopsis: y[n,oh,ow,c] = sum_{kh,kw real} x[n, oh*sh+kh-pt, ow*sw+kw-pl, c] / count
 * Padding:  as MaxPool's SAME and VALID (see max_pool.c); count is the number of real
 *           (unpadded) elements of the window, so SAME never averages in zeros.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] (shape [1,3,3,1]), ksize = strides = [1,2,2,1]:
 *           VALID -> [[3]];  SAME -> [[3, 4.5],[7.5, 9]] (counts 4, 2, 2, 1).
 *
 * avg_pool.c - TensorFlow's AvgPool: the mean of the real elements of each window, summed in
 * row-major window order and divided by their count, as TF's CPU kernel does. Pooling over
 * depth is refused as TF refuses it. float16/bfloat16 are averaged in float32 and rounded
 * once (TF sums in the half type).
 * Gradient (nn_grad.py _AvgPoolGrad): AvgPoolGrad(Const(shape of value), dy), same attrs.
 * GPU (nn_ops/cuda/pool_cuda.cu): cuDNN (average excluding padding) for float32/float64 with
 * symmetric pads, our own kernel otherwise (TF's SAME with an odd pad total, halves).
 */
#include "pool_common.h"

static const bf_port_desc inputs[] = {
    {"value", BF_DT_FLOATS, 0, "activations [N, H, W, C] (NHWC) or [N, C, H, W] (NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0, "the window means [N, OH, OW, C] in data_format"},
};

static const bf_pool_spec spec = {BF_POOL_AVG, "AvgPool"};

/* d value = AvgPoolGrad(shape(value), d output), with AvgPool's attributes. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const bf_port_info *x = bf_grad_input_info(g, 0);
    if (!bf_port_known(x) || x->rank != 4)
        return bf_err(err, BF_ESHAPE, "bad_shape",
                      "AvgPool's gradient needs the shape of value known before running");
    const char *shape = bf_grad_const_i32(g, "shape", 4, x->dims);
    if (!shape) return BF_OK;
    const char *dx = bf_grad_add(g, "grad", "AvgPoolGrad", BF_GRAD_SAME_ATTRS,
                                 "orig_input_shape", shape, "grad", dy, (const char *)NULL);
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_avg_pool = {
    .type = "AvgPool",
    .category = "nn",
    .synopsis = "y[n,oh,ow,c] = mean of the real x[n, oh*sh+kh-pt, ow*sw+kw-pl, c]",
    .doc = "Average pooling of NHWC/NCHW activations over ksize windows moved by strides; "
        "SAME padding averages the real elements only.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_avgpool_attr_descs,
    .n_attrs = BF_AVGPOOL_N_ATTRS,
    BF_POOL_BLOCK_FUNCTIONS,
    .gradient = gradient,
    .impl = &spec,
};
