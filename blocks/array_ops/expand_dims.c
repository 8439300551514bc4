/*
 * Block:    ExpandDims
 * Synopsis: output = input with a dim of size 1 inserted at index `dim`
 * Padding:  none.
 * Example:  input [2,3], dim = 0  ->  output [1,2,3]; dim = -1  ->  [2,3,1].
 *
 * expand_dims.c - TensorFlow's ExpandDims (core/ops/array_ops.cc, kernels/shape_ops.h):
 * `dim` is a host int32/int64 tensor holding one value in [-rank-1, rank] (negative counts
 * from the end as numpy does), checked in TF's words ("'dim' must be a tensor with a single
 * value", "Tried to expand dim index 3 for tensor with 1 dimensions."). The elements are
 * copied unchanged; the gradient reshapes dy back (array_grad.py _ExpandDimsGrad).
 */
#include "array_util.h"
#include "reshape.h"

#include <inttypes.h>
#include <string.h>

static const bf_port_desc inputs[] = {
    {"input", BF_DT_ALL, 0, "any tensor"},
    {"dim", BF_DT_INTS, BF_PORT_HOST, "where the new dim goes: one value in [-rank-1, rank]"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "input with one more dim"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *d = &in[1];
    if (d->rank >= 0 && bf_port_known(d) && bf_port_numel(d) != 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "dim", NULL,
                          "'dim' must be a tensor with a single value");
    if (x->rank >= BF_MAX_RANK)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "input", NULL,
                          "ExpandDims of a rank-%d tensor: at most %d dims are supported", x->rank,
                          BF_MAX_RANK);
    if (!d->value || x->rank < 0) {
        bf_port_set(&out[0], x->dtype, x->rank >= 0 ? x->rank + 1 : -1, NULL);
        return BF_OK;
    }
    int64_t dim = bf_host_int(d->value, 0);
    if (dim < -1 - x->rank || dim > x->rank)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "dim", NULL,
                          "Tried to expand dim index %" PRId64 " for tensor with %d dimensions.",
                          dim, x->rank);
    if (dim < 0) dim = BF_MIN(dim + x->rank + 1, x->rank);
    int64_t dims[BF_MAX_RANK];
    for (int k = 0, o = 0; o <= x->rank; o++) dims[o] = o == dim ? 1 : x->dims[k++];
    bf_port_set(&out[0], x->dtype, x->rank + 1, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex, (void)err;
    if (out[0]->nbytes) memcpy(out[0]->data, in[0]->data, out[0]->nbytes);
    return BF_OK;
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *dx = bf_grad_reshape_to_input(g, "dx", dy);
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_expand_dims = {
    .type = "ExpandDims",
    .category = "array",
    .synopsis = "output = input with a dim of size 1 inserted at index dim",
    .doc = "TensorFlow's ExpandDims: inserts a dim of size 1 at index `dim` (one int32/int64 "
           "value in [-rank-1, rank]; negative counts from the end).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
