/*
 * Block:    BroadcastTo
 * Synopsis: output = input broadcast to `shape` (numpy's rules: dims of 1 are repeated)
 * Padding:  none.
 * Example:  input = [1,2,3], shape = [2,3]  ->  output = [[1,2,3],[1,2,3]];
 *           input [2,1], shape = [2,3]  ->  each row repeats its one value.
 *
 * broadcast_to.c - TensorFlow's BroadcastTo (core/ops/array_ops.cc,
 * kernels/broadcast_to_op.cc): `shape` is a host int32/int64 vector (a Const gives the output
 * shape at check time); input's dims, aligned to the right, must each equal the target dim
 * or be 1. TF's words: "Rank of input (3) must be no greater than rank of output shape (2).",
 * "Incompatible shapes: [2,3] vs. [3,3]", "Unable to broadcast tensor of shape [3,1] to
 * tensor of shape [1,3]". The gradient sums dy over the broadcast dims (array_grad.py
 * _BroadcastToGrad): Sum with keep_dims, then Reshape to the input's shape.
 */
#include "array_util.h"

#include <inttypes.h>

static const bf_port_desc inputs[] = {
    {"input", BF_DT_ALL, 0, "the tensor to broadcast"},
    {"shape", BF_DT_INTS, BF_PORT_HOST, "the target shape (int32/int64 vector)"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "input broadcast to shape"}};

/* Check input (rank, dims; dims may be -1) against the target; fills the aligned in dims. */
static bf_status check(const bf_port_info *x, int rank, const int64_t *dims, int64_t *aligned,
                       bf_error *err) {
    if (x->rank > rank)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "shape", NULL,
                          "Rank of input (%d) must be no greater than rank of output shape "
                          "(%d).",
                          x->rank, rank);
    int lead = rank - x->rank;
    bool incompatible = false, unable = false;
    for (int k = 0; k < rank; k++) {
        int64_t i = k < lead ? 1 : x->dims[k - lead], o = dims[k];
        aligned[k] = i;
        if (i < 0 || o < 0 || i == o || i == 1) continue;
        if (o == 1)
            unable = true; /* would broadcast the output's dim to the input's */
        else
            incompatible = true;
    }
    char a[96], b[96];
    if (incompatible)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "shape", NULL,
                          "Incompatible shapes: %s vs. %s", bf_tf_shape_of(x, a, sizeof(a)),
                          bf_tf_shape(rank, dims, b, sizeof(b)));
    if (unable)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "shape", NULL,
                          "Unable to broadcast tensor of shape %s to tensor of shape %s",
                          bf_tf_shape_of(x, a, sizeof(a)), bf_tf_shape(rank, dims, b, sizeof(b)));
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *s = &in[1];
    if (!s->value) {
        int r = s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= BF_MAX_RANK ? (int)s->dims[0] : -1;
        bf_port_set(&out[0], x->dtype, r, NULL);
        return BF_OK;
    }
    int rank;
    int64_t dims[BF_MAX_RANK], aligned[BF_MAX_RANK];
    bf_status st = bf_shape_from_value(s->value, "shape", "shape", &rank, dims, err);
    if (st) return st;
    if (x->rank >= 0 && (st = check(x, rank, dims, aligned, err))) return st;
    bf_port_set(&out[0], x->dtype, rank, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)err;
    const bf_tensor *x = in[0];
    bf_tensor *y = out[0];
    bf_port_info xi;
    bf_port_set(&xi, x->dtype, x->rank, x->dims);
    int64_t aligned[BF_MAX_RANK];
    bf_status st = check(&xi, y->rank, y->dims, aligned, err);
    if (st) return st;
    bf_tile_copy(x->data, aligned, y->data, y->dims, y->rank, bf_dtype_size(x->dtype), ex);
    return BF_OK;
}

/* _BroadcastToGrad: Reshape(Sum(dy, broadcast axes, keep_dims), shape(input)). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const bf_port_info *x = bf_grad_input_info(g, 0), *y = bf_grad_output_info(g, 0);
    if (!bf_port_known(x) || !bf_port_known(y))
        return bf_arr_err(err, BF_ESHAPE, "shape_unknown", "shape", NULL,
                          "the gradient of BroadcastTo needs the input's and the output's shape "
                          "before running");
    int64_t axes[BF_MAX_RANK];
    int n = 0, lead = y->rank - x->rank;
    for (int k = 0; k < y->rank; k++)
        if (k < lead || (x->dims[k - lead] == 1 && y->dims[k] != 1)) axes[n++] = k;
    if (n == 0 && lead == 0) {
        bf_grad_set(g, 0, dy);
        return BF_OK;
    }
    const char *ax = bf_grad_const_i32(g, "axes", n, axes);
    const char *sum = ax ? bf_grad_add(g, "sum", "Sum", "{\"keep_dims\":true}", "input", dy,
                                       "reduction_indices", ax, NULL)
                         : NULL;
    const char *shape = sum ? bf_grad_const_i32(g, "input_shape", x->rank, x->dims) : NULL;
    const char *dx =
        shape ? bf_grad_add(g, "dx", "Reshape", NULL, "tensor", sum, "shape", shape, NULL) : NULL;
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_broadcast_to = {
    .type = "BroadcastTo",
    .category = "array",
    .synopsis = "output = input broadcast to `shape` (dims of 1 repeated, numpy's rules)",
    .doc = "TensorFlow's BroadcastTo: repeats input along its dims of size 1 (and new leading "
           "dims) to the shape given by the int32/int64 vector `shape`.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
