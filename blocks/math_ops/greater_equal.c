/*
 * Block:    GreaterEqual
 * Synopsis: z = (x >= y) ? 1 : 0   (broadcasting; int32 output)
 * Example:  x = [1,2,3], y = 2  ->  z = [0,1,1] (int32).
 *
 * greater_equal.c - elementwise x >= y with TensorFlow's broadcasting. TensorFlow's output
 * is bool; blockflow has no bool dtype, so z is int32 holding 1 (true) and 0 (false). A nan
 * operand gives 0. Not differentiable (no gradient); Maximum's and Minimum's gradients use
 * it as their mask.
 */
#include "cwise.h"

BF_CW_COMPARE2(greater_equal, x >= y)

static const bf_binary_impl impl = {BF_CW_COMPARES2(greater_equal)};

static const bf_port_desc outputs[] = {
    {"z", BF_DT(I32), 0, "1 where true, 0 where false (int32: TensorFlow's bool)"}};

const bf_block_desc bf_block_greater_equal = {
    .type = "GreaterEqual",
    .category = "math",
    .synopsis = "z = (x >= y) ? 1 : 0",
    .doc = "Elementwise x >= y with TensorFlow's broadcasting, as int32 1 or 0 (TensorFlow "
           "gives bool; blockflow has no bool dtype). Every dtype in.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, outputs),
    .impl = &impl,
};
