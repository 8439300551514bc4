/*
 * Block:    Fill
 * Synopsis: output = a tensor of shape `dims` with every element equal to the scalar value
 * Padding:  none.
 * Example:  dims = [2,3], value = 9  ->  output = [[9,9,9],[9,9,9]].
 *
 * fill.c - TensorFlow's Fill (core/ops/array_ops.cc, kernels/constant_op.cc): `dims` is a
 * host int32/int64 vector (a Const gives the shape at check time), `value` a scalar of the
 * output's dtype; TF's words: "dims must be a vector, got shape [2,2]", "value must be a
 * scalar, got shape [2]", "Dimension -1 must be >= 0". The gradient of value is the sum of
 * dy (array_grad.py _FillGrad); dims has none.
 */
#include "array_util.h"

static const bf_port_desc inputs[] = {
    {"dims", BF_DT_INTS, BF_PORT_HOST, "the output's shape (int32/int64 vector)"},
    {"value", BF_DT_ALL, 0, "scalar: the value of every element"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "value everywhere"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *d = &in[0], *v = &in[1];
    char b[96];
    if (d->rank >= 0 && d->rank != 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "dims", NULL,
                          "dims must be a vector, got shape %s", bf_tf_shape_of(d, b, sizeof(b)));
    if (v->rank >= 0 && v->rank != 0)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "value", NULL,
                          "value must be a scalar, got shape %s", bf_tf_shape_of(v, b, sizeof(b)));
    if (!d->value) {
        int r = d->rank == 1 && d->dims[0] >= 0 && d->dims[0] <= BF_MAX_RANK ? (int)d->dims[0] : -1;
        bf_port_set(&out[0], v->dtype, r, NULL);
        return BF_OK;
    }
    int rank;
    int64_t dims[BF_MAX_RANK];
    bf_status st = bf_shape_from_value(d->value, "dims", "dims", &rank, dims, err);
    if (st) return st;
    bf_port_set(&out[0], v->dtype, rank, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)err;
    int64_t one[BF_MAX_RANK];
    for (int k = 0; k < out[0]->rank; k++) one[k] = 1;
    bf_tile_copy(in[1]->data, one, out[0]->data, out[0]->dims, out[0]->rank,
                 bf_dtype_size(out[0]->dtype), ex);
    return BF_OK;
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 1)) return BF_OK;
    const char *dv = bf_grad_add(g, "dvalue", "Sum", NULL, "input", dy, NULL);
    if (dv) bf_grad_set(g, 1, dv);
    return BF_OK;
}

const bf_block_desc bf_block_fill = {
    .type = "Fill",
    .category = "array",
    .synopsis = "output = a tensor of shape dims, every element the scalar value",
    .doc = "TensorFlow's Fill: a tensor of the shape given by the int32/int64 vector `dims`, "
           "every element equal to the scalar `value` (and of its dtype).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
