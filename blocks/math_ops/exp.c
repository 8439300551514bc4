/*
 * Block:    Exp
 * Synopsis: y = e^x
 * Example:  x = [0,1]  ->  y = [1,2.71828183].
 *
 * exp.c - elementwise exponential.
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(exp, exp(x))

static const bf_unary_impl impl = {BF_CW_FLOATS1(exp), .heavy = true};

/* math_grad.py _ExpGrad: dy * y, from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (dy && bf_grad_wants(g, 0))
        bf_grad_set(g, 0, bf_grad_add(g, "grad", "Mul", NULL, "x", dy, "y", bf_grad_output(g, 0),
                                      NULL));
    return BF_OK;
}

const bf_block_desc bf_block_exp = {
    .type = "Exp",
    .category = "math",
    .synopsis = "y = e^x",
    .doc = "Elementwise e^x. Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
