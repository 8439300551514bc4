/*
 * Block:    Sign
 * Synopsis: y = -1, 0 or 1 as x < 0, x == 0, x > 0
 * Example:  x = [3,-0.5,0]  ->  y = [1,-1,0].
 *
 * sign.c - elementwise sign, as Eigen's scalar_sign_op: (x > 0) - (x < 0), so nan gives 0.
 * Abs's gradient uses it.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t *out) {
    *out = (a > 0) - (a < 0);
    return BF_CW_OK;
}

BF_CW_FLOAT1(sign, (T)((x > 0) - (x < 0)))
BF_CW_INT1(sign, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(sign), BF_CW_INTS1(sign, iop)};

/* math_grad.py _SignGrad: zeros of x's shape (ZerosLike). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    if (bf_grad_dy(g, 0) && bf_grad_wants(g, 0))
        bf_grad_set(g, 0,
                    bf_grad_add(g, "grad", "ZerosLike", NULL, "x", bf_grad_input(g, 0), NULL));
    return BF_OK;
}

const bf_block_desc bf_block_sign = {
    .type = "Sign",
    .category = "math",
    .synopsis = "y = -1, 0 or 1 as x < 0, x == 0, x > 0",
    .doc = "Elementwise sign: -1, 0 or 1 (0 for nan). Every dtype.",
    BF_CW_UNARY_FIELDS(bf_cw_x_all, bf_cw_y_all),
    .impl = &impl,
    .gradient = gradient,
};
