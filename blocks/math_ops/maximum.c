/*
 * Block:    Maximum
 * Synopsis: z = max(x, y)   (broadcasting; nan if either is nan)
 * Example:  x = [[1,5],[3,2]], y = [2,4]  ->  z = [[2,5],[3,4]].
 *
 * maximum.c - elementwise maximum with TensorFlow's broadcasting. A nan operand gives nan
 * (TensorFlow's kernels propagate nan on both devices since 2.x).
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    *out = a > b ? a : b;
    return BF_CW_OK;
}

BF_CW_FLOAT2(maximum, (x > y || x != x) ? x : y)
BF_CW_INT2(maximum, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(maximum), BF_CW_INTS2(maximum, iop)};

const bf_block_desc bf_block_maximum = {
    .type = "Maximum",
    .category = "math",
    .synopsis = "z = max(x, y)",
    .doc = "Elementwise max(x, y) with TensorFlow's broadcasting; nan if either is nan. "
           "Every dtype.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
};
