/*
 * Block:    ZerosLike
 * Synopsis: y = zeros of x's shape and dtype
 * Padding:  none.
 * Example:  x = [[1,2],[3,4]]  ->  y = [[0,0],[0,0]].
 *
 * zeros_like.c - TensorFlow's ZerosLike (core/ops/array_ops.cc, kernels/constant_op.cc):
 * x's values are not read. Not differentiable. The implementation is shared with OnesLike
 * (this file holds it; ones_like.c is the thin descriptor).
 */
#include "fill_like.h"
#include "array_util.h"
#include "half.h"

const bf_port_desc bf_fill_like_inputs[1] = {{"x", BF_DT_ALL, 0, "gives the shape and dtype"}};
const bf_port_desc bf_fill_like_outputs[1] = {{"y", BF_DT_ALL, 0,
                                               "x's shape, every element "
                                               "the constant"}};

bf_status bf_fill_like_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err) {
    (void)node, (void)err;
    bf_port_set(&out[0], in[0].dtype, in[0].rank, in[0].rank >= 0 ? in[0].dims : NULL);
    return BF_OK;
}

bf_status bf_fill_like_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    (void)in;
    const bf_fill_like_impl *impl = node->desc->impl;
    bf_tensor *y = out[0];
    if (y->numel == 0) return BF_OK;
    if (impl->value == 0) {
        __builtin_memset(y->data, 0, y->nbytes);
        return BF_OK;
    }
    bf_status st = bf_tensor_set_f64(y, 0, impl->value, err);
    if (st) return st;
    int64_t one[BF_MAX_RANK];
    for (int k = 0; k < y->rank; k++) one[k] = 1;
    char first[8];
    __builtin_memcpy(first, y->data, bf_dtype_size(y->dtype));
    bf_tile_copy(first, one, y->data, y->dims, y->rank, bf_dtype_size(y->dtype), ex);
    return BF_OK;
}

static const bf_fill_like_impl impl = {0};

const bf_block_desc bf_block_zeros_like = {
    .type = "ZerosLike",
    .category = "array",
    .synopsis = "y = zeros of x's shape and dtype",
    .doc = "TensorFlow's ZerosLike: a tensor of zeros with the shape and dtype of x.",
    .inputs = bf_fill_like_inputs,
    .n_inputs = 1,
    .outputs = bf_fill_like_outputs,
    .n_outputs = 1,
    .infer = bf_fill_like_infer,
    .run_cpu = bf_fill_like_run_cpu,
    .impl = &impl,
};
