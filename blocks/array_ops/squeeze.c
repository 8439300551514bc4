/*
 * Block:    Squeeze
 * Synopsis: output = input without its dims of size 1 (only those in squeeze_dims if given)
 * Padding:  none.
 * Example:  input [1,2,1,3]  ->  output [2,3]; squeeze_dims = [2]  ->  [1,2,3].
 *
 * squeeze.c - TensorFlow's Squeeze (core/ops/array_ops.cc, kernels/shape_ops.h): the attr
 * squeeze_dims (TF's name; tf.squeeze calls it axis) lists dims in [-rank, rank) that must
 * be 1, in TF's words ("Tried to squeeze dim index 2 for tensor with 2 dimensions.", "Can not
 * squeeze dim[1], expected a dimension of 1, got 3"); empty, every dim of size 1 goes, which
 * is known at check time only when every dim is. The gradient reshapes dy back
 * (array_grad.py _SqueezeGrad).
 */
#include "array_util.h"
#include "reshape.h"

#include <inttypes.h>
#include <string.h>

static const bf_attr_desc attrs[] = {
    {"squeeze_dims", BF_ATTR_INT_LIST, "[]", NULL, 0,
     "the dims to remove (each must be 1); empty: every dim of size 1"},
};
static const bf_port_desc inputs[] = {{"input", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "input without those dims"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_port_info *x = &in[0];
    const bf_attr_value *sd = &node->attrs[0];
    if (x->rank < 0) {
        bf_port_set(&out[0], x->dtype, -1, NULL);
        return BF_OK;
    }
    bool drop[BF_MAX_RANK] = {false};
    for (int i = 0; i < sd->n; i++) {
        int64_t d = sd->list[i];
        if (d < -x->rank || d >= x->rank)
            return bf_arr_err(err, BF_EATTR, "bad_attr", NULL, "squeeze_dims",
                              "Tried to squeeze dim index %" PRId64 " for tensor with %d "
                              "dimensions.",
                              d, x->rank);
        drop[d < 0 ? d + x->rank : d] = true;
    }
    int64_t dims[BF_MAX_RANK];
    int r = 0;
    for (int k = 0; k < x->rank; k++) {
        if (sd->n > 0 && drop[k]) {
            if (x->dims[k] >= 0 && x->dims[k] != 1)
                return bf_arr_err(err, BF_ESHAPE, "bad_shape", "input", "squeeze_dims",
                                  "Can not squeeze dim[%d], expected a dimension of 1, got "
                                  "%" PRId64,
                                  k, x->dims[k]);
            continue;
        }
        if (sd->n == 0 && x->dims[k] < 0) { /* may or may not be 1 */
            bf_port_set(&out[0], x->dtype, -1, NULL);
            return BF_OK;
        }
        if (sd->n == 0 && x->dims[k] == 1) continue;
        dims[r++] = x->dims[k];
    }
    bf_port_set(&out[0], x->dtype, r, dims);
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

const bf_block_desc bf_block_squeeze = {
    .type = "Squeeze",
    .category = "array",
    .synopsis = "output = input without its dims of size 1 (those of squeeze_dims if given)",
    .doc = "TensorFlow's Squeeze: removes the dims listed in squeeze_dims (each must be 1; "
           "negative counts from the end), or every dim of size 1 when the list is empty.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
