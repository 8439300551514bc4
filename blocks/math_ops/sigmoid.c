/*
 * Block:    Sigmoid
 * Synopsis: y = 1 / (1 + e^-x)
 * Example:  x = [0,2]  ->  y = [0.5,0.88079708].
 *
 * sigmoid.c - the logistic function, 1 / (1 + e^-x): 0 and 1 in the limits (e^-x
 * overflowing to inf gives 0), a few ulp from the exact value elsewhere.
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(sigmoid, (T)1 / ((T)1 + exp(-x)))

static const bf_unary_impl impl = {BF_CW_FLOATS1(sigmoid), .heavy = true};

/* math_grad.py _SigmoidGrad: SigmoidGrad(y, dy) from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "SigmoidGrad", "y", "dy");
}

const bf_block_desc bf_block_sigmoid = {
    .type = "Sigmoid",
    .category = "math",
    .synopsis = "y = 1 / (1 + e^-x)",
    .doc = "Logistic function 1 / (1 + e^-x). Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
