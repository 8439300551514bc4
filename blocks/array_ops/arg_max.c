/*
 * Block:    ArgMax
 * Synopsis: output = index of the largest element of input along `dimension`
 * Padding:  none.
 * Example:  input = [[1,9,3],[7,2,7]], dimension = 1  ->  output = [1, 0] (ties: the first).
 *
 * arg_max.c - TensorFlow's ArgMax (core/ops/math_ops.cc, kernels/argmax_op.cc): `dimension`
 * is a host int32/int64 scalar in [-rank, rank) (a Const gives the shape at check time),
 * output_type int64 (the default) or int32. TF's words: "dim must be a scalar, but received
 * tensor of shape: [2]", "Expected dimension in the range [-2, 2), but got 3", "Reduction
 * axis 1 is empty in shape [2,0]". An element replaces the best so far only when it is
 * greater, as in Eigen's reducer: ties keep the first, and NaN is passed over unless it
 * comes first. Not differentiable.
 */
#include "array_util.h"

#include <inttypes.h>

static const bf_attr_desc attrs[] = {
    {"output_type", BF_ATTR_DTYPE, "\"int64\"", NULL, 0, "int64 or int32"},
};
static const bf_port_desc inputs[] = {
    {"input", BF_DT_ALL, 0, "any tensor of rank >= 1"},
    {"dimension", BF_DT_INTS, BF_PORT_HOST, "scalar: the axis, in [-rank, rank)"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_INTS, 0,
                                        "input's shape without the "
                                        "axis: the indices"}};

static bf_status check_axis(const bf_port_info *x, int64_t dim, int *axis, bf_error *err) {
    int64_t a = dim < 0 ? dim + x->rank : dim;
    if (a < 0 || a >= x->rank)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "dimension", NULL,
                          "Expected dimension in the range [%d, %d), but got %" PRId64, -x->rank,
                          x->rank, dim);
    if (x->dims[a] == 0)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "input", NULL,
                          "Reduction axis %" PRId64 " is empty in shape %s", dim,
                          bf_tf_shape_of(x, (char[96]){0}, 96));
    *axis = (int)a;
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_port_info *x = &in[0], *d = &in[1];
    bf_dtype ot = node->attrs[0].dtype;
    if (ot != BF_DTYPE_I32 && ot != BF_DTYPE_I64)
        return bf_arr_err(err, BF_EATTR, "bad_attr", NULL, "output_type",
                          "Value for attr 'output_type' of %s is not in the list of allowed "
                          "values: int32, int64",
                          bf_dtype_name(ot));
    if (d->rank > 0)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "dimension", NULL,
                          "dim must be a scalar, but received tensor of shape: %s",
                          bf_tf_shape_of(d, (char[96]){0}, 96));
    if (!d->value || x->rank < 0) {
        bf_port_set(&out[0], ot, x->rank > 0 ? x->rank - 1 : -1, NULL);
        return BF_OK;
    }
    int axis;
    bf_status st = check_axis(x, bf_host_int(d->value, 0), &axis, err);
    if (st) return st;
    int64_t dims[BF_MAX_RANK];
    for (int k = 0, o = 0; k < x->rank; k++)
        if (k != axis) dims[o++] = x->dims[k];
    bf_port_set(&out[0], ot, x->rank - 1, dims);
    return BF_OK;
}

typedef struct argmax_job {
    const bf_tensor *x;
    bf_tensor *y;
    int64_t n, inner, outer_per_task, outer;
} argmax_job;

#define ARGMAX_LOOP(T)                                                                             \
    do {                                                                                           \
        const T *s = (const T *)j->x->data + o * j->n * j->inner + i;                              \
        T best = s[0];                                                                             \
        for (int64_t k = 1; k < j->n; k++)                                                         \
            if (s[k * j->inner] > best) {                                                          \
                best = s[k * j->inner];                                                            \
                idx = k;                                                                           \
            }                                                                                      \
    } while (0)

static void argmax_task(void *job, int64_t t, int slot) {
    (void)slot;
    argmax_job *j = job;
    int64_t o1 = BF_MIN(j->outer, (t + 1) * j->outer_per_task);
    for (int64_t o = t * j->outer_per_task; o < o1; o++)
        for (int64_t i = 0; i < j->inner; i++) {
            int64_t idx = 0;
            switch (j->x->dtype) {
            case BF_DTYPE_F32: ARGMAX_LOOP(float); break;
            case BF_DTYPE_F64: ARGMAX_LOOP(double); break;
            case BF_DTYPE_I32: ARGMAX_LOOP(int32_t); break;
            case BF_DTYPE_I64: ARGMAX_LOOP(int64_t); break;
            default: {
                double best = bf_tensor_get_f64(j->x, o * j->n * j->inner + i);
                for (int64_t k = 1; k < j->n; k++) {
                    double v = bf_tensor_get_f64(j->x, (o * j->n + k) * j->inner + i);
                    if (v > best) {
                        best = v;
                        idx = k;
                    }
                }
            }
            }
            if (j->y->dtype == BF_DTYPE_I32)
                ((int32_t *)j->y->data)[o * j->inner + i] = (int32_t)idx;
            else
                ((int64_t *)j->y->data)[o * j->inner + i] = idx;
        }
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node;
    const bf_tensor *x = in[0];
    bf_port_info xi;
    bf_port_set(&xi, x->dtype, x->rank, x->dims);
    int axis;
    bf_status st = check_axis(&xi, bf_host_int(in[1], 0), &axis, err);
    if (st) return st;
    argmax_job j = {.x = x, .y = out[0], .n = x->dims[axis], .inner = 1, .outer = 1};
    for (int k = 0; k < axis; k++) j.outer *= x->dims[k];
    for (int k = axis + 1; k < x->rank; k++) j.inner *= x->dims[k];
    if (out[0]->numel == 0) return BF_OK;
    j.outer_per_task = BF_MAX(1, 65536 / (j.n * j.inner));
    bf_parallel_for(ex, (j.outer + j.outer_per_task - 1) / j.outer_per_task, argmax_task, &j);
    return BF_OK;
}

const bf_block_desc bf_block_arg_max = {
    .type = "ArgMax",
    .category = "math",
    .synopsis = "output = index of the largest element of input along dimension",
    .doc = "TensorFlow's ArgMax: the index of the largest element along `dimension` (an "
           "int32/int64 scalar, negative counts from the end), as output_type (int64 by "
           "default, or int32). Ties give the first index.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
};
