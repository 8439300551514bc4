/*
 * Block:    Tanh
 * Synopsis: y = tanh(x)
 * Example:  x = [0,1]  ->  y = [0,0.76159416].
 *
 * tanh.c - elementwise hyperbolic tangent.
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(tanh, tanh(x))

static const bf_unary_impl impl = {BF_CW_FLOATS1(tanh), .heavy = true};

/* math_grad.py _TanhGrad: TanhGrad(y, dy) from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "TanhGrad", "y", "dy");
}

const bf_block_desc bf_block_tanh = {
    .type = "Tanh",
    .category = "math",
    .synopsis = "y = tanh(x)",
    .doc = "Elementwise hyperbolic tangent. Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
