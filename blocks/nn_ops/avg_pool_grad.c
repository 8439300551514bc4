/*
 * Block:    AvgPoolGrad
 * Synopsis: dx[n,h,w,c] = sum_{windows (oh,ow) holding (h,w)} dy[n,oh,ow,c] / count(oh,ow)
 * Padding:  AvgPool's (see avg_pool.c): count(oh,ow) is the window's number of real elements.
 * Example:  orig_input_shape = [1,3,3,1], ksize = strides = [1,2,2,1], SAME,
 *           dy = [[4,2],[2,1]] -> dx = [[1,1,1],[1,1,1],[1,1,1]].
 *
 * avg_pool_grad.c - TensorFlow's AvgPoolGrad, the gradient of AvgPool with respect to its
 * input, whose shape comes as a host int32 vector (a Const at check time gives the output
 * shape before running). Each window's dy times (T)(1/count) is added to its real elements in
 * output order, as TF's CPU kernel does; where TF's CPU kernel miscounts (a window larger than
 * the input with SAME padding, GetBroadcastSize), this block keeps the forward count, so it
 * stays the exact gradient of AvgPool. float16/bfloat16 in float32.
 * Gradient (nn_grad.py _AvgPoolGradGrad): of grad, AvgPool(dy) with the same attrs.
 * GPU (nn_ops/cuda/pool_cuda.cu): cuDNN (average excluding padding) for float32/float64 with
 * symmetric pads, our own kernel otherwise.
 */
#include "pool_common.h"

static const bf_port_desc inputs[] = {
    {"orig_input_shape", BF_DT(I32), BF_PORT_HOST, "AvgPool's input shape, 4 values"},
    {"grad", BF_DT_FLOATS, 0, "the gradient of AvgPool's output [N, OH, OW, C] in data_format"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0, "the gradient of AvgPool's input, of orig_input_shape"},
};

static const bf_pool_spec spec = {BF_POOL_AVG_GRAD, "AvgPoolGrad"};

static const bf_grad_desc grad_rel = {"AvgPool", "value", "orig_input_shape", "grad"};

/* d grad = AvgPool(d output), with the same attributes; the shape has no gradient. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 1)) return BF_OK;
    const char *r = bf_grad_add(g, "grad", "AvgPool", BF_GRAD_SAME_ATTRS, "value", dy,
                                (const char *)NULL);
    if (r) bf_grad_set(g, 1, r);
    return BF_OK;
}

const bf_block_desc bf_block_avg_pool_grad = {
    .type = "AvgPoolGrad",
    .category = "nn",
    .synopsis = "dx[n,h,w,c] = sum_{windows holding (h,w)} dy[n,oh,ow,c] / count(oh,ow)",
    .doc = "Gradient of AvgPool with respect to its input, of shape orig_input_shape: each "
        "window's gradient spread evenly over its real elements.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_avgpool_attr_descs,
    .n_attrs = BF_AVGPOOL_N_ATTRS,
    BF_POOL_BLOCK_FUNCTIONS,
    .grad = &grad_rel,
    .gradient = gradient,
    .impl = &spec,
};
