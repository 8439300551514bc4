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

const bf_block_desc bf_block_squared_difference = {
    .type = "SquaredDifference",
    .category = "math",
    .synopsis = "z = (x - y) * (x - y)",
    .doc = "Elementwise (x - y)^2 with TensorFlow's broadcasting. Every dtype; integers are "
           "exact, and a result that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
};
