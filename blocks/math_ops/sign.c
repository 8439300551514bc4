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

const bf_block_desc bf_block_sign = {
    .type = "Sign",
    .category = "math",
    .synopsis = "y = -1, 0 or 1 as x < 0, x == 0, x > 0",
    .doc = "Elementwise sign: -1, 0 or 1 (0 for nan). Every dtype.",
    BF_CW_UNARY_FIELDS(bf_cw_x_all, bf_cw_y_all),
    .impl = &impl,
};
