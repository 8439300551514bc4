/*
 * Block:    MaxPoolGrad
 * Synopsis: dx[n,h,w,c] = sum over windows (oh,ow) whose argmax is (h,w) of dy[n,oh,ow,c]
 * Padding:  MaxPool's (see max_pool.c): padded taps are never an argmax.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]] (shape [1,3,3,1]), ksize = strides = [1,2,2,1],
 *           SAME, dy = [[1,2],[3,4]] -> dx = [[0,0,0],[0,1,2],[0,3,4]].
 *           Ties: x all equal, VALID 2x2 s2 on 4x4 -> each window's dy goes to its top-left.
 *
 * max_pool_grad.c - TensorFlow's MaxPoolGrad, the gradient of MaxPool with respect to its
 * input. As TF's CPU kernel it recomputes each window's argmax from orig_input: the first
 * element in row-major window order, replaced only by a strictly greater one (so ties and
 * NaN send the gradient to the earliest element), and reads orig_output only for its shape,
 * which must be MaxPool's output shape, as grad's must. Pooling over depth has no gradient
 * (TF: "not yet supported on the depth dimension"). float16/bfloat16 in float32.
 * GPU (nn_ops/cuda/pool_cuda.cu): always our own kernel, with this same first-maximum rule:
 * cuDNN's max backward gives a tied window's gradient to one of its maxima without saying
 * which, and after a Relu windows of zeros tie all the time.
 */
#include "pool_common.h"

static const bf_port_desc inputs[] = {
    {"orig_input", BF_DT_FLOATS, 0, "MaxPool's input [N, H, W, C] in data_format"},
    {"orig_output", BF_DT_FLOATS, 0, "MaxPool's output (its shape is checked; values unused)"},
    {"grad", BF_DT_FLOATS, 0, "the gradient of MaxPool's output, its shape"},
};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0, "the gradient of MaxPool's input, orig_input's shape"},
};

static const bf_pool_spec spec = {BF_POOL_MAX_GRAD, "MaxPoolGrad"};

const bf_block_desc bf_block_max_pool_grad = {
    .type = "MaxPoolGrad",
    .category = "nn",
    .synopsis = "dx[n,h,w,c] = sum_{(oh,ow): argmax of window = (h,w)} dy[n,oh,ow,c]",
    .doc = "Gradient of MaxPool with respect to its input: each window's gradient goes to the "
        "first maximum of the window in row-major order (recomputed from orig_input).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = bf_maxpool_attr_descs,
    .n_attrs = BF_MAXPOOL_N_ATTRS,
    BF_POOL_BLOCK_FUNCTIONS,
    .impl = &spec,
};
