/*
 * Block:    Mul
 * Synopsis: z = x * y   (broadcasting)
 * Example:  x = [[1,2],[3,4]], y = [[10],[100]] ([2,1])  ->  z = [[10,20],[300,400]].
 *
 * mul.c - elementwise product with TensorFlow's broadcasting.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out) ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT2(mul, x * y)
BF_CW_INT2(mul, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(mul), BF_CW_INTS2(mul, iop)};

/* math_grad.py _MulGrad: dy * y to x, x * dy to y, each reduced over its broadcast axes. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0), *x = bf_grad_input(g, 0), *y = bf_grad_input(g, 1);
    if (!dy) return BF_OK;
    if (bf_grad_wants(g, 0))
        bf_cw_grad_reduce(g, 0, "grad_x",
                          bf_grad_add(g, "dy_y", "Mul", NULL, "x", dy, "y", y, NULL));
    if (bf_grad_wants(g, 1))
        bf_cw_grad_reduce(g, 1, "grad_y",
                          bf_grad_add(g, "x_dy", "Mul", NULL, "x", x, "y", dy, NULL));
    return BF_OK;
}

const bf_block_desc bf_block_mul = {
    .type = "Mul",
    .category = "math",
    .synopsis = "z = x * y",
    .doc = "Elementwise x * y with TensorFlow's broadcasting. Every dtype; integers are "
           "exact, and a product that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = gradient,
};
