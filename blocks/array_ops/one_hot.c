/*
 * Block:    OneHot
 * Synopsis: output[..., j, ...] = on_value where indices[...] == j, off_value elsewhere
 * Padding:  none.
 * Example:  indices = [0, 2, -1], depth = 3, on_value = 1.0, off_value = 0.0
 *           ->  output = [[1,0,0],[0,0,1],[0,0,0]] (an index outside [0, depth): all off).
 *
 * one_hot.c - TensorFlow's OneHot (core/ops/array_ops.cc, kernels/one_hot_op.cc): indices
 * (int32 or int64), depth (an int32 scalar read on the host, so a Const gives the shape at
 * check time), on_value and off_value (scalars of the output's dtype), attr axis (-1: the new
 * dim goes last). TF's words: "Expected axis to be -1 or between [0, 2).  But received: 5",
 * "depth must be a scalar, but got: [2]", "depth must be non-negative, got: -1", "on_value
 * must be a scalar, but got: [2]". Not differentiable.
 */
#include "array_util.h"

#include <inttypes.h>
#include <string.h>

static const bf_attr_desc attrs[] = {
    {"axis", BF_ATTR_INT, "-1", NULL, 0, "where the new dim of size depth goes; -1: last"},
};
static const bf_port_desc inputs[] = {
    {"indices", BF_DT_INTS, 0, "the hot positions"},
    {"depth", BF_DT(I32), BF_PORT_HOST, "scalar: the size of the new dim"},
    {"on_value", BF_DT_ALL, 0, "scalar: the value at the hot positions"},
    {"off_value", BF_DT_ALL, 0, "scalar: the value elsewhere"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "indices' shape + [depth]"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_port_info *ix = &in[0], *d = &in[1], *on = &in[2], *off = &in[3];
    int64_t axis = node->attrs[0].i;
    char b[96];
    if (on->dtype && off->dtype && on->dtype != off->dtype)
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "off_value", NULL,
                          "Input 'off_value' of 'OneHot' Op has type %s that does not match "
                          "type %s of argument 'on_value'.",
                          bf_dtype_name(off->dtype), bf_dtype_name(on->dtype));
    if (ix->rank >= BF_MAX_RANK)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "indices", NULL,
                          "OneHot of rank-%d indices: at most %d output dims are supported",
                          ix->rank, BF_MAX_RANK);
    if (ix->rank >= 0 && !(axis == -1 || (axis >= 0 && axis < ix->rank + 1)))
        return bf_arr_err(err, BF_EATTR, "bad_attr", NULL, "axis",
                          "Expected axis to be -1 or between [0, %d).  But received: %" PRId64,
                          ix->rank + 1, axis);
    if (axis < -1)
        return bf_arr_err(err, BF_EATTR, "bad_attr", NULL, "axis",
                          "Expected axis to be -1 or between [0, N).  But received: %" PRId64,
                          axis);
    const struct {
        const bf_port_info *p;
        const char *name;
    } scalars[3] = {{d, "depth"}, {on, "on_value"}, {off, "off_value"}};
    for (int k = 0; k < 3; k++)
        if (scalars[k].p->rank > 0)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", scalars[k].name, NULL,
                              "%s must be a scalar, but got: %s", scalars[k].name,
                              bf_tf_shape_of(scalars[k].p, b, sizeof(b)));
    int64_t depth = -1;
    if (d->value) {
        depth = bf_host_int(d->value, 0);
        if (depth < 0)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "depth", NULL,
                              "depth must be non-negative, got: %" PRId64, depth);
    }
    bf_dtype dt = on->dtype ? on->dtype : off->dtype;
    if (ix->rank < 0) {
        bf_port_set(&out[0], dt, -1, NULL);
        return BF_OK;
    }
    int ax = axis == -1 ? ix->rank : (int)axis;
    int64_t dims[BF_MAX_RANK];
    for (int k = 0, o = 0; o <= ix->rank; o++) dims[o] = o == ax ? depth : ix->dims[k++];
    bf_port_set(&out[0], dt, ix->rank + 1, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)ex, (void)err;
    const bf_tensor *ix = in[0];
    bf_tensor *y = out[0];
    if (y->numel == 0) return BF_OK;
    int64_t axis = node->attrs[0].i;
    int ax = axis == -1 ? ix->rank : (int)axis;
    int64_t depth = y->dims[ax], prefix = 1;
    for (int k = 0; k < ax; k++) prefix *= ix->dims[k];
    int64_t suffix = ix->numel / prefix;
    size_t es = bf_dtype_size(y->dtype);
    const char *on = in[2]->data, *off = in[3]->data;
    char *o = y->data;
    for (int64_t p = 0; p < prefix; p++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t s = 0; s < suffix; s++) {
                int64_t i = bf_host_int(ix, p * suffix + s);
                memcpy(o + (size_t)((p * depth + d) * suffix + s) * es, i == d ? on : off, es);
            }
    return BF_OK;
}

const bf_block_desc bf_block_one_hot = {
    .type = "OneHot",
    .category = "array",
    .synopsis = "output = on_value where indices == j along the new dim, off_value elsewhere",
    .doc = "TensorFlow's OneHot: a new dim of size `depth` at `axis` (-1: last) holding "
           "on_value at position indices[...] and off_value elsewhere; an index outside "
           "[0, depth) gives off_value everywhere.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
};
