/*
 * Block:    Sqrt
 * Synopsis: y = sqrt(x)
 * Example:  x = [4,9,2]  ->  y = [2,3,1.41421356].
 *
 * sqrt.c - elementwise square root (nan below zero), correctly rounded.
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(sqrt, sqrt(x))

static const bf_unary_impl impl = {BF_CW_FLOATS1(sqrt)};

/* math_grad.py _SqrtGrad: SqrtGrad(y, dy) from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "SqrtGrad", "y", "dy");
}

const bf_block_desc bf_block_sqrt = {
    .type = "Sqrt",
    .category = "math",
    .synopsis = "y = sqrt(x)",
    .doc = "Elementwise square root (nan for x < 0). Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
