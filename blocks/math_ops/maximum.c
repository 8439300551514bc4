/*
 * Block:    Maximum
 * Synopsis: z = max(x, y)   (broadcasting; nan if either is nan)
 * Example:  x = [[1,5],[3,2]], y = [2,4]  ->  z = [[2,5],[3,4]].
 *
 * maximum.c - elementwise maximum with TensorFlow's broadcasting. A nan operand gives nan
 * (TensorFlow's kernels propagate nan on both devices since 2.x).
 */
#include "cwise.h"

#include <stdio.h>

static inline int iop(int64_t a, int64_t b, int64_t *out) {
    *out = a > b ? a : b;
    return BF_CW_OK;
}

BF_CW_FLOAT2(maximum, (x > y || x != x) ? x : y)
BF_CW_INT2(maximum, iop)

static const bf_binary_impl impl = {BF_CW_FLOATS2(maximum), BF_CW_INTS2(maximum, iop)};

/*
 * math_grad.py _MaximumMinimumGrad: the mask x >= y (Maximum; Minimum's x <= y is y >= x)
 * says which input each element of dy goes to, ties to x. TensorFlow selects with its bool
 * mask (where(mask, dy, 0) and where(mask, 0, dy)); here GreaterEqual's int32 mask is cast to
 * dy's dtype: dy * mask to x, dy - dy * mask to y (the same numbers for every finite dy),
 * each reduced over its broadcast axes.
 */
bf_status bf_cw_maxmin_gradient(bf_grad_ctx *g, bool max) {
    const char *dy = bf_grad_dy(g, 0), *x = bf_grad_input(g, 0), *y = bf_grad_input(g, 1);
    if (!dy) return BF_OK;
    char attrs[64];
    snprintf(attrs, sizeof(attrs), "{\"DstT\":\"%s\"}",
             bf_dtype_name(bf_grad_output_info(g, 0)->dtype));
    const char *m =
        bf_grad_add(g, "mask", "GreaterEqual", NULL, "x", max ? x : y, "y", max ? y : x, NULL);
    m = bf_grad_add(g, "mask_cast", "Cast", attrs, "x", m, NULL);
    const char *gx = bf_grad_add(g, "dy_x", "Mul", NULL, "x", dy, "y", m, NULL);
    bf_cw_grad_reduce(g, 0, "grad_x", gx);
    if (bf_grad_wants(g, 1))
        bf_cw_grad_reduce(g, 1, "grad_y",
                          bf_grad_add(g, "dy_y", "Sub", NULL, "x", dy, "y", gx, NULL));
    return BF_OK;
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_maxmin_gradient(g, true);
}

const bf_block_desc bf_block_maximum = {
    .type = "Maximum",
    .category = "math",
    .synopsis = "z = max(x, y)",
    .doc = "Elementwise max(x, y) with TensorFlow's broadcasting; nan if either is nan. "
           "Every dtype.",
    BF_CW_BINARY_FIELDS(bf_cw_xy_all, bf_cw_z_all),
    .impl = &impl,
    .gradient = gradient,
};
