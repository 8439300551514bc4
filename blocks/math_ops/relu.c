/*
 * Block:    Relu
 * Synopsis: activations = max(features, 0)
 * Example:  features = [-1,0,2]  ->  activations = [0,0,2].
 *
 * relu.c - the rectifier. nan stays nan. TensorFlow registers every real dtype; integers
 * are exact here too (no result can overflow).
 */
#include "act_gpu.h"
#include "cwise.h"

static inline int iop(int64_t a, int64_t *out) {
    *out = a < 0 ? 0 : a;
    return BF_CW_OK;
}

BF_CW_FLOAT1(relu, x < 0 ? (T)0 : x)
BF_CW_INT1(relu, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(relu), BF_CW_INTS1(relu, iop)};

static const bf_port_desc inputs[] = {{"features", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"activations", BF_DT_ALL, 0, "features' shape"}};

/* nn_grad.py _ReluGrad: ReluGrad(dy, y), from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "ReluGrad", "features", "gradients");
}

/* On a GPU: our own elementwise kernel (act_gpu.h). */
BF_ACT_GPU_HOOKS(BF_ACT_RELU)

const bf_block_desc bf_block_relu = {
    .type = "Relu",
    .category = "math",
    .synopsis = "activations = max(features, 0)",
    .doc = "Rectified linear unit max(features, 0) (nan stays nan). Every dtype.",
    BF_CW_UNARY_FIELDS(inputs, outputs),
    .impl = &impl,
    .gradient = gradient,
    .gpu_unsupported = act_gpu_unsupported,
    .run_cuda = act_run_cuda,
};
