/*
 * Block:    SquaredDifference
 * Synopsis: z = (x - y) * (x - y)   (broadcasting)
 * Example:  x = [1,2,3], y = 2  ->  z = [1,0,1].
 *
 * squared_difference.c - elementwise squared difference with TensorFlow's broadcasting;
 * integers exact, an overflow (of the difference or of its square) is an error.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    int64_t d;
    bool bad = __builtin_sub_overflow(a, b, &d) || __builtin_mul_overflow(d, d, out);
    return bad ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT2(squared_difference, (x - y) * (x - y))
BF_CW_INT2(squared_difference, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(squared_difference),
                                    BF_CW_INTS2(squared_difference, iop)};

/* math_grad.py _SquaredDifferenceGrad: 2 * dy * (x - y) to x; to y its reduction, negated. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0), *x = bf_grad_input(g, 0), *y = bf_grad_input(g, 1);
    if (!dy) return BF_OK;
    const bf_port_info *zi = bf_grad_output_info(g, 0);
    const char *two = bf_grad_const_scalar(g, "two", zi->dtype, 2);
    const char *t = bf_grad_add(g, "two_dy", "Mul", NULL, "x", two, "y", dy, NULL);
    const char *d = bf_grad_add(g, "x_minus_y", "Sub", NULL, "x", x, "y", y, NULL);
    const char *xg = bf_grad_add(g, "x_grad", "Mul", NULL, "x", t, "y", d, NULL);
    bf_cw_grad_reduce(g, 0, "grad_x", xg);
    if (bf_grad_wants(g, 1) && xg) {
        const char *r = bf_grad_unbroadcast(g, "grad_y_sum", xg, zi, 1);
        bf_grad_set(g, 1, bf_grad_add(g, "grad_y", "Neg", NULL, "x", r, NULL));
    }
    return BF_OK;
}

const bf_block_desc bf_block_squared_difference = {
    .type = "SquaredDifference",
    .category = "math",
    .synopsis = "z = (x - y) * (x - y)",
    .doc = "Elementwise (x - y)^2 with TensorFlow's broadcasting. Every dtype; integers are "
           "exact, and a result that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = gradient,
};
