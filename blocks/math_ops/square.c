/*
 * Block:    Square
 * Synopsis: y = x * x
 * Example:  x = [1,-2,3]  ->  y = [1,4,9].
 *
 * square.c - elementwise square; integers exact, an overflow is an error.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t *out) {
    return __builtin_mul_overflow(a, a, out) ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT1(square, x * x)
BF_CW_INT1(square, iop)

static const bf_unary_impl impl = {BF_CW_FLOATS1(square), BF_CW_INTS1(square, iop)};

/* math_grad.py _SquareGrad: dy * (x * 2). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *two = bf_grad_const_scalar(g, "two", bf_grad_output_info(g, 0)->dtype, 2);
    const char *x2 = bf_grad_add(g, "two_x", "Mul", NULL, "x", bf_grad_input(g, 0), "y", two, NULL);
    bf_grad_set(g, 0, bf_grad_add(g, "grad", "Mul", NULL, "x", dy, "y", x2, NULL));
    return BF_OK;
}

const bf_block_desc bf_block_square = {
    .type = "Square",
    .category = "math",
    .synopsis = "y = x * x",
    .doc = "Elementwise x * x. Every dtype; an integer square that overflows is an error.",
    BF_CW_UNARY_FIELDS(bf_cw_x_all, bf_cw_y_all),
    .impl = &impl,
    .gradient = gradient,
};
