/*
 * Block:    Div
 * Synopsis: z = x / y   (broadcasting; integers truncate toward zero)
 * Example:  x = [7,-7], y = 2  ->  float32: z = [3.5,-3.5]; int32: z = [3,-3].
 *
 * div.c - elementwise quotient with TensorFlow's broadcasting. On floats it is RealDiv; on
 * integers it truncates toward zero as TensorFlow's Div does (C division), a zero divisor
 * is TensorFlow's error "Integer division by zero", and the one quotient that overflows
 * (the most negative value by -1) is an error too.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    if (b == 0) return BF_CW_DIV_ZERO;
    if (b == -1 && a == INT64_MIN) return BF_CW_OVERFLOW;
    *out = a / b;
    return BF_CW_OK;
}

BF_CW_FLOAT2(div, x / y)
BF_CW_INT2(div, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(div), BF_CW_INTS2(div, iop)};

const bf_block_desc bf_block_div = {
    .type = "Div",
    .category = "math",
    .synopsis = "z = x / y",
    .doc = "Elementwise x / y with TensorFlow's broadcasting. Floats divide as IEEE does "
           "(x/0 is inf or nan); integers truncate toward zero, and a zero divisor is an "
           "error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = bf_cw_div_gradient,
};
