/*
 * Block:    Sub
 * Synopsis: z = x - y   (broadcasting)
 * Example:  x = [[1,2,3],[4,5,6]], y = 1 (a scalar)  ->  z = [[0,1,2],[3,4,5]].
 *
 * sub.c - elementwise difference with TensorFlow's broadcasting.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    return __builtin_sub_overflow(a, b, out) ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT2(sub, x - y)
BF_CW_INT2(sub, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(sub), BF_CW_INTS2(sub, iop)};

/* math_grad.py _SubGrad: dy to x, -dy to y, each reduced over its broadcast axes. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy) return BF_OK;
    bf_cw_grad_reduce(g, 0, "grad_x", dy);
    if (bf_grad_wants(g, 1))
        bf_cw_grad_reduce(g, 1, "grad_y", bf_grad_add(g, "neg_dy", "Neg", NULL, "x", dy, NULL));
    return BF_OK;
}

const bf_block_desc bf_block_sub = {
    .type = "Sub",
    .category = "math",
    .synopsis = "z = x - y",
    .doc = "Elementwise x - y with TensorFlow's broadcasting. Every dtype; integers are "
           "exact, and a difference that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = gradient,
};
