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

const bf_block_desc bf_block_real_div = {
    .type = "RealDiv",
    .category = "math",
    .synopsis = "z = x / y",
    .doc = "Elementwise x / y with TensorFlow's broadcasting, on float dtypes (x/0 is inf or "
           "nan).",
    BF_CW_BINARY_FIELDS(bf_cw_xy_floats, bf_cw_z_floats),
    .impl = &impl,
};
