/*
 * Block:    Minimum
 * Synopsis: z = min(x, y)   (broadcasting; nan if either is nan)
 * Example:  x = [[1,5],[3,2]], y = [2,4]  ->  z = [[1,4],[2,2]].
 *
 * minimum.c - elementwise minimum with TensorFlow's broadcasting. A nan operand gives nan.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    *out = a < b ? a : b;
    return BF_CW_OK;
}

BF_CW_FLOAT2(minimum, (x < y || x != x) ? x : y)
BF_CW_INT2(minimum, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(minimum), BF_CW_INTS2(minimum, iop)};

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_maxmin_gradient(g, false);
}

const bf_block_desc bf_block_minimum = {
    .type = "Minimum",
    .category = "math",
    .synopsis = "z = min(x, y)",
    .doc = "Elementwise min(x, y) with TensorFlow's broadcasting; nan if either is nan. "
           "Every dtype.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = gradient,
};
