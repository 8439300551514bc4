/*
 * Block:    MaxPool
 * Synopsis: y[n,oh,ow,c] = max_{kh,kw} x[n, oh*sh+kh-pt, ow*sw+kw-pl, c]   (padding excluded)
 * Padding:  per spatial dim, as Conv2D with a kh x kw filter: VALID: out = (in-k+s)/s, no pad.
 *           SAME: out = ceil(in/s), need = max(0, (out-1)*s+k-in), top/left = need/2 and the
 *           odd pixel after. EXPLICIT: the given pads, each below the window size. Padded
 *           taps never win: the max is over the real elements of the window.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] (shape [1,3,3,1]), ksize = strides = [1,2,2,1]:
 *           VALID -> [[5]];  SAME -> out 2x2, pads bottom/right 1: [[5,6],[8,9]].
 *
 * max_pool.c - TensorFlow's MaxPool: the maximum of each window of the input. A ksize of
 * [1,1,1,k] with strides [1,1,1,k] (NHWC) pools over depth instead, k channels to one, as TF's
 * CPU kernel does. TF starts a max from the dtype's lowest finite value and its CPU kernel
 * never takes a NaN, and so does this block. float16/bfloat16 pool in float32 (exact: the
 * result is an element); int32 and int64 pool as integers.
 * Gradient (nn_grad.py _MaxPoolGrad): MaxPoolGrad(orig_input, orig_output, dy), same attrs.
 * GPU (nn_ops/cuda/pool_cuda.cu): cuDNN for float32/float64 with symmetric pads (its output
 * clamped to the lowest value, as TF starts a max there), our own kernel otherwise (TF's SAME
 * with an odd pad total, halves, over depth); integers on the CPU.
 */
#include "pool_common.h"

static const bf_port_desc inputs[] = {
    {"input", BF_DT_ALL, 0, "activations [N, H, W, C] (NHWC) or [N, C, H, W] (NCHW)"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_ALL, 0, "the window maxima [N, OH, OW, C] in data_format"},
};

static const bf_pool_spec spec = {BF_POOL_MAX, "MaxPool"};

/* d input = MaxPoolGrad(input, output, d output), with MaxPool's attributes. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *dx = bf_grad_add(g, "grad", "MaxPoolGrad", BF_GRAD_SAME_ATTRS, "orig_input",
                                 bf_grad_input(g, 0), "orig_output", bf_grad_output(g, 0),
                                 "grad", dy, (const char *)NULL);
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_max_pool = {
    .type = "MaxPool",
    .category = "nn",
    .synopsis = "y[n,oh,ow,c] = max_{kh,kw} x[n, oh*sh+kh-pt, ow*sw+kw-pl, c]",
    .doc = "Max pooling of NHWC/NCHW activations over ksize windows moved by strides; padding "
        "never wins. ksize [1,1,1,k] with strides [1,1,1,k] pools over depth (NHWC).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_maxpool_attr_descs,
    .n_attrs = BF_MAXPOOL_N_ATTRS,
    BF_POOL_BLOCK_FUNCTIONS,
    .gradient = gradient,
    .impl = &spec,
};
