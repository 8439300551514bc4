/*
 * Block:    Log
 * Synopsis: y = ln(x)
 * Example:  x = [1,2.71828183]  ->  y = [0,1].
 *
 * log.c - elementwise natural logarithm (-inf at 0, nan below).
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(log, log(x))

static const bf_unary_impl impl = {BF_CW_FLOATS1(log), .heavy = true};

/* math_grad.py _LogGrad: dy * Reciprocal(x). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_times(g, "Reciprocal", "x");
}

const bf_block_desc bf_block_log = {
    .type = "Log",
    .category = "math",
    .synopsis = "y = ln(x)",
    .doc = "Elementwise natural logarithm (-inf at 0, nan for x < 0). Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
