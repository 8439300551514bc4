/*
 * Block:    Relu6
 * Synopsis: activations = min(max(features, 0), 6)
 * Example:  features = [-1,3,7]  ->  activations = [0,3,6].
 *
 * relu6.c - the rectifier capped at 6. nan stays nan. Integers exact.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t *out) {
    *out = a < 0 ? 0 : a > 6 ? 6 : a;
    return BF_CW_OK;
}

BF_CW_FLOAT1(relu6, x < 0 ? (T)0 : x > 6 ? (T)6 : x)
BF_CW_INT1(relu6, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(relu6), BF_CW_INTS1(relu6, iop)};

static const bf_port_desc inputs[] = {{"features", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"activations", BF_DT_ALL, 0, "features' shape"}};

/* nn_grad.py _Relu6Grad: Relu6Grad(dy, y), from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "Relu6Grad", "features", "gradients");
}

const bf_block_desc bf_block_relu6 = {
    .type = "Relu6",
    .category = "math",
    .synopsis = "activations = min(max(features, 0), 6)",
    .doc = "min(max(features, 0), 6) (nan stays nan). Every dtype.",
    BF_CW_UNARY_FIELDS(inputs, outputs),
    .impl = &impl,
    .gradient = gradient,
};
