/*
 * Block:    Rsqrt
 * Synopsis: y = 1 / sqrt(x)
 * Example:  x = [4,0.25]  ->  y = [0.5,2].
 *
 * rsqrt.c - elementwise reciprocal square root (inf at 0, nan below).
 */
#include "cwise.h"

#include <tgmath.h>

BF_CW_FLOAT1(rsqrt, (T)1 / sqrt(x))

static const bf_unary_impl impl = {BF_CW_FLOATS1(rsqrt)};

/* math_grad.py _RsqrtGrad: RsqrtGrad(y, dy) from the output y. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_by_block(g, "RsqrtGrad", "y", "dy");
}

const bf_block_desc bf_block_rsqrt = {
    .type = "Rsqrt",
    .category = "math",
    .synopsis = "y = 1 / sqrt(x)",
    .doc = "Elementwise 1 / sqrt(x) (inf at 0, nan for x < 0). Float dtypes.",
    BF_CW_UNARY_FIELDS(bf_cw_x_floats, bf_cw_y_floats),
    .impl = &impl,
    .gradient = gradient,
};
