/*
 * Block:    Add
 * Synopsis: z = x + y   (broadcasting)
 * Example:  x = [[1,2,3],[4,5,6]] ([2,3]), y = [10,20,30] ([3])  ->  z = [[11,22,33],[14,25,36]].
 *
 * add.c - elementwise sum with TensorFlow's broadcasting. Its loops are bf_cw_add_impl,
 * shared with AddV2 (the same operation under TensorFlow's newer name) and AddN.
 */
#include "cwise.h"

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out) ? BF_CW_OVERFLOW : BF_CW_OK;
}

BF_CW_FLOAT2(add, x + y)
BF_CW_INT2(add, iop)

const bf_binary_impl bf_cw_add_impl = {BF_CW_FLOATS2(add), BF_CW_INTS2(add, iop)};

/* math_grad.py _AddGrad (Add and AddV2): dy to both inputs, each reduced over the axes it
 * was broadcast along. */
bf_status bf_cw_add_gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    bf_cw_grad_reduce(g, 0, "grad_x", dy);
    bf_cw_grad_reduce(g, 1, "grad_y", dy);
    return BF_OK;
}

const bf_block_desc bf_block_add = {
    .type = "Add",
    .category = "math",
    .synopsis = "z = x + y",
    .doc = "Elementwise x + y with TensorFlow's broadcasting (trailing dims aligned, a dim "
           "of 1 stretches). Every dtype; integers are exact, and a sum that overflows is an "
           "error.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &bf_cw_add_impl,
    .gradient = bf_cw_add_gradient,
};
