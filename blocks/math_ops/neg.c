/*
 * Block:    Neg
 * Synopsis: y = -x
 * Example:  x = [1,-2,0]  ->  y = [-1,2,0].
 *
 * neg.c - elementwise negation; integers exact (negating the most negative value is an
 * error, not a wrapped value).
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t *out) {
    return __builtin_sub_overflow((int64_t)0, a, out) ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT1(neg, -x)
BF_CW_INT1(neg, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(neg), BF_CW_INTS1(neg, iop)};

/* math_grad.py _NegGrad: -dy. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (dy && bf_grad_wants(g, 0))
        bf_grad_set(g, 0, bf_grad_add(g, "grad", "Neg", NULL, "x", dy, NULL));
    return BF_OK;
}

const bf_block_desc bf_block_neg = {
    .type = "Neg",
    .category = "math",
    .synopsis = "y = -x",
    .doc = "Elementwise -x. Every dtype; negating the most negative integer is an error.",
    BF_CW_UNARY_FIELDS(bf_cw_x_all, bf_cw_y_all),
    .impl = &impl,
    .gradient = gradient,
};
