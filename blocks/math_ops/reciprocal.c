/*
 * Block:    Reciprocal
 * Synopsis: y = 1 / x
 * Example:  x = [2,-4]  ->  y = [0.5,-0.25].
 *
 * reciprocal.c - elementwise reciprocal (inf at 0). TensorFlow also registers integer
 * Reciprocal (1/x truncated, almost always 0); it is not offered here.
 */
#include "cwise.h"

BF_CW_FLOAT1(reciprocal, (T)1 / x)

static const bf_unary_impl impl = {BF_CW_FLOATS1(reciprocal)};

/* math_grad.py _ReciprocalGrad: ReciprocalGrad(y, dy) from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "ReciprocalGrad", "y", "dy");
}

const bf_block_desc bf_block_reciprocal = {
    .type = "Reciprocal",
    .category = "math",
    .synopsis = "y = 1 / x",
    .doc = "Elementwise 1 / x (inf at 0). Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
