/*
 * Block:    AddV2
 * Synopsis: z = x + y   (broadcasting)
 * Example:  x = [[1,2],[3,4]], y = [[10],[20]] ([2,1])  ->  z = [[11,12],[23,24]].
 *
 * add_v2.c - TensorFlow's newer name for Add (tf.math.add makes AddV2): the same operation,
 * shapes and dtypes, and Add's loops (bf_cw_add_impl).
 */
#include "cwise.h"

const bf_block_desc bf_block_add_v2 = {
    .type = "AddV2",
    .category = "math",
    .synopsis = "z = x + y",
    .doc = "Elementwise x + y with TensorFlow's broadcasting, as Add (tf.math.add builds "
           "AddV2). Every dtype; integers are exact, and a sum that overflows is an error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &bf_cw_add_impl,
    .gradient = bf_cw_add_gradient,
};
