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

const bf_block_desc bf_block_mul = {
    .type = "Mul",
    .category = "math",
    .synopsis = "z = x * y",
    .doc = "Elementwise x * y with TensorFlow's broadcasting. Every dtype; integers are "
           "exact, and a product that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
};
