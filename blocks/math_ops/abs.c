/*
 * Block:    Abs
 * Synopsis: y = |x|
 * Example:  x = [1,-2,0]  ->  y = [1,2,0].
 *
 * abs.c - elementwise absolute value; integers exact (the most negative value has no
 * absolute value in its dtype: an error, not a wrapped value).
 */
#include "cwise.h"

#include <tgmath.h>

static inline int iop(int64_t a, int64_t *out) {
    if (a == INT64_MIN) return BF_CW_OVERFLOW;
    *out = a < 0 ? -a : a;
    return BF_CW_OK;
}

BF_CW_FLOAT1(abs, fabs(x))
BF_CW_INT1(abs, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(abs), BF_CW_INTS1(abs, iop)};

/* math_grad.py _AbsGrad: dy * Sign(x) (0 at x = 0). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_times(g, "Sign", "x");
}

const bf_block_desc bf_block_abs = {
    .type = "Abs",
    .category = "math",
    .synopsis = "y = |x|",
    .doc = "Elementwise |x|. Every dtype; |most negative integer| is an error.",
    BF_CW_UNARY_FIELDS(bf_cw_x_all, bf_cw_y_all),
    .impl = &impl,
    .gradient = gradient,
};
