/*
 * Block:    Shape
 * Synopsis: output = the dims of input, as a 1-D int32 (or int64) tensor
 * Padding:  none.
 * Example:  input of shape [2,3,4]  ->  output = [2,3,4]; a scalar  ->  [] (empty).
 *
 * shape.c - TensorFlow's Shape (core/ops/array_ops.cc, kernels/shape_ops.h): out_type int32
 * (the default) or int64; a dim too large for int32 is an error, as in TF. Not
 * differentiable. The gradients of the reductions and reshapes use it when a shape is known
 * only when running.
 */
#include "array_util.h"

#include <inttypes.h>

static const bf_attr_desc attrs[] = {
    {"out_type", BF_ATTR_DTYPE, "\"int32\"", NULL, 0, "int32 or int64"},
};
static const bf_port_desc inputs[] = {{"input", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"output", BF_DT_INTS, 0, "[rank]: input's dims"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    bf_dtype ot = node->attrs[0].dtype;
    if (ot != BF_DTYPE_I32 && ot != BF_DTYPE_I64)
        return bf_arr_err(err, BF_EATTR, "bad_attr", NULL, "out_type",
                          "Value for attr 'out_type' of %s is not in the list of allowed "
                          "values: int32, int64",
                          bf_dtype_name(ot));
    int64_t n = in[0].rank;
    bf_port_set(&out[0], ot, 1, &n);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex;
    for (int k = 0; k < in[0]->rank; k++) {
        int64_t d = in[0]->dims[k];
        if (out[0]->dtype == BF_DTYPE_I64) {
            ((int64_t *)out[0]->data)[k] = d;
        } else {
            if (d > INT32_MAX)
                return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "output", "out_type",
                                  "Shape output type is 32-bit  but dim %d is %" PRId64, k, d);
            ((int32_t *)out[0]->data)[k] = (int32_t)d;
        }
    }
    return BF_OK;
}

const bf_block_desc bf_block_shape = {
    .type = "Shape",
    .category = "array",
    .synopsis = "output = the dims of input as a 1-D int32/int64 tensor",
    .doc = "TensorFlow's Shape: the dims of `input` as a vector of out_type (int32 by "
           "default, or int64).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
};
