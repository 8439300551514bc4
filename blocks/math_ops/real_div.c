/*
 * Block:    RealDiv
 * Synopsis: z = x / y   (broadcasting; floats)
 * Example:  x = [[1,2],[3,4]], y = [2,4]  ->  z = [[0.5,0.5],[1.5,1]].
 *
 * real_div.c - elementwise IEEE quotient with TensorFlow's broadcasting (float dtypes, as
 * TensorFlow's CPU kernels).
 */
#include "cwise.h"

BF_CW_FLOAT2(real_div, x / y)

static const bf_binary_impl impl = {BF_CW_FLOATS2(real_div)};

/* math_grad.py _RealDivGrad (and _DivGrad, on floats): dy / y to x, dy * ((-x / y) / y) to
 * y, each reduced over its broadcast axes. */
bf_status bf_cw_div_gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0), *x = bf_grad_input(g, 0), *y = bf_grad_input(g, 1);
    if (!dy) return BF_OK;
    if (bf_grad_wants(g, 0))
        bf_cw_grad_reduce(g, 0, "grad_x",
                          bf_grad_add(g, "dy_over_y", "RealDiv", NULL, "x", dy, "y", y, NULL));
    if (bf_grad_wants(g, 1)) {
        const char *nx = bf_grad_add(g, "neg_x", "Neg", NULL, "x", x, NULL);
        const char *q = bf_grad_add(g, "neg_x_over_y", "RealDiv", NULL, "x", nx, "y", y, NULL);
        q = bf_grad_add(g, "neg_x_over_y2", "RealDiv", NULL, "x", q, "y", y, NULL);
        bf_cw_grad_reduce(g, 1, "grad_y",
                          bf_grad_add(g, "dy_q", "Mul", NULL, "x", dy, "y", q, NULL));
    }
    return BF_OK;
}

const bf_block_desc bf_block_real_div = {
    .type = "RealDiv",
    .category = "math",
    .synopsis = "z = x / y",
    .doc = "Elementwise x / y with TensorFlow's broadcasting, on float dtypes (x/0 is inf or "
           "nan).",
    BF_CW_BINARY_FIELDS(bf_cw_xy_floats, bf_cw_z_floats),
    .impl = &impl,
    .gradient = bf_cw_div_gradient,
};
