/*
 * Block:    BiasAdd
 * Synopsis: output = value + bias, bias added along the channel dim (last, or 1 in NCHW)
 * Padding:  none.
 * Example:  value = [[1,2,3],[4,5,6]], bias = [10,20,30]  ->  output = [[11,22,33],[14,25,36]];
 *           data_format NCHW, value [N,C,H,W]: bias[c] is added to every value[n,c,:,:].
 *
 * bias_add.c - TensorFlow's BiasAdd (core/ops/nn_ops.cc, kernels/bias_op.cc): value of rank
 * 2 to 5, a 1-D bias as long as the channel dim, data_format NHWC (channels last, whatever
 * the rank) or NCHW (channels in dim 1), with the kernel's checks and words ("Input tensor
 * must be at least 2D", "Biases must be 1D", "Must provide as many biases as the last
 * dimension of the input tensor"). Floats add in their own precision (half types through
 * float, rounded once); integers exactly, an overflow being an error. The gradient is dy for
 * value and BiasAddGrad(dy) for bias (nn_grad.py _BiasAddGrad).
 */
#include "array_util.h"
#include "bias_add.h"
#include "half.h"

#include <stdatomic.h>
#include <stdio.h>

const char *const bf_bias_formats[] = {"NHWC", "NCHW", NULL};

static const bf_attr_desc attrs[] = {
    {"data_format", BF_ATTR_ENUM, "\"NHWC\"", bf_bias_formats, 0,
     "NHWC: the bias runs along the last dim; NCHW: along dim 1"},
};
static const bf_port_desc inputs[] = {
    {"value", BF_DT_ALL, 0, "tensor of rank 2 to 5"},
    {"bias", BF_DT_ALL, 0, "1-D, as long as value's channel dim"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "value + bias, value's shape"}};

bf_status bf_bias_check_value(const bf_port_info *v, const char *port, bf_error *err) {
    char b[96];
    if (v->rank >= 0 && v->rank < 2)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", port, NULL,
                          "Input tensor must be at least 2D: %s", bf_tf_shape_of(v, b, sizeof(b)));
    if (v->rank > 5)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", port, NULL,
                          "Only ranks up to 5 supported: %s", bf_tf_shape_of(v, b, sizeof(b)));
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_port_info *v = &in[0], *b = &in[1];
    char s0[96], s1[96];
    if (v->dtype && b->dtype && v->dtype != b->dtype)
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "bias", NULL,
                          "Input 'bias' of 'BiasAdd' Op has type %s that does not match type "
                          "%s of argument 'value'.",
                          bf_dtype_name(b->dtype), bf_dtype_name(v->dtype));
    bf_status st = bf_bias_check_value(v, "value", err);
    if (st) return st;
    if (b->rank >= 0 && b->rank != 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "bias", NULL, "Biases must be 1D: %s",
                          bf_tf_shape_of(b, s1, sizeof(s1)));
    if (v->rank >= 2 && b->rank == 1) {
        int cdim = node->attrs[0].i == 1 ? 1 : v->rank - 1;
        if (!bf_dims_compatible(b->dims[0], v->dims[cdim]))
            return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "bias", NULL,
                              "Must provide as many biases as the last dimension of the input "
                              "tensor: %s vs. %s",
                              bf_tf_shape_of(b, s1, sizeof(s1)), bf_tf_shape_of(v, s0, sizeof(s0)));
    }
    bf_port_set(&out[0], v->dtype ? v->dtype : b->dtype, v->rank, v->rank >= 0 ? v->dims : NULL);
    if (v->rank >= 2 && b->rank == 1) { /* the channel dim may come from the bias */
        int cdim = node->attrs[0].i == 1 ? 1 : v->rank - 1;
        if (out[0].dims[cdim] < 0) out[0].dims[cdim] = b->dims[0];
    }
    return BF_OK;
}

typedef struct bias_job {
    const void *x, *b;
    void *y;
    bf_dtype dt;
    int64_t rows, c, inner; /* value as [rows, c, inner] (NHWC: inner 1) */
    int64_t rows_per_task;
    atomic_int overflow;
} bias_job;

static void bias_task(void *arg, int64_t t, int slot) {
    (void)slot;
    bias_job *j = arg;
    int64_t r0 = t * j->rows_per_task, r1 = BF_MIN(j->rows, r0 + j->rows_per_task);
    int64_t row = j->c * j->inner;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t ch = 0; ch < j->c; ch++) {
            int64_t o = r * row + ch * j->inner;
            switch (j->dt) {
            case BF_DTYPE_F32: {
                const float *x = (const float *)j->x + o;
                float bb = ((const float *)j->b)[ch], *y = (float *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++) y[i] = x[i] + bb;
                break;
            }
            case BF_DTYPE_F64: {
                const double *x = (const double *)j->x + o;
                double bb = ((const double *)j->b)[ch], *y = (double *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++) y[i] = x[i] + bb;
                break;
            }
            case BF_DTYPE_F16: {
                const uint16_t *x = (const uint16_t *)j->x + o;
                float bb = bf_f16_to_f32(((const uint16_t *)j->b)[ch]);
                uint16_t *y = (uint16_t *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++)
                    y[i] = bf_f32_to_f16(bf_f16_to_f32(x[i]) + bb);
                break;
            }
            case BF_DTYPE_BF16: {
                const uint16_t *x = (const uint16_t *)j->x + o;
                float bb = bf_bf16_to_f32(((const uint16_t *)j->b)[ch]);
                uint16_t *y = (uint16_t *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++)
                    y[i] = bf_f32_to_bf16(bf_bf16_to_f32(x[i]) + bb);
                break;
            }
            case BF_DTYPE_I32: {
                const int32_t *x = (const int32_t *)j->x + o;
                int32_t bb = ((const int32_t *)j->b)[ch], *y = (int32_t *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++)
                    if (__builtin_add_overflow(x[i], bb, &y[i])) atomic_store(&j->overflow, 1);
                break;
            }
            default: {
                const int64_t *x = (const int64_t *)j->x + o;
                int64_t bb = ((const int64_t *)j->b)[ch], *y = (int64_t *)j->y + o;
                for (int64_t i = 0; i < j->inner; i++)
                    if (__builtin_add_overflow(x[i], bb, &y[i])) atomic_store(&j->overflow, 1);
                break;
            }
            }
        }
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    const bf_tensor *x = in[0];
    bool nchw = node->attrs[0].i == 1;
    int cdim = nchw ? 1 : x->rank - 1;
    bias_job j = {.x = x->data,
                  .b = in[1]->data,
                  .y = out[0]->data,
                  .dt = x->dtype,
                  .c = x->dims[cdim],
                  .inner = 1};
    if (x->numel == 0) return BF_OK;
    for (int k = cdim + 1; k < x->rank; k++) j.inner *= x->dims[k];
    j.rows = x->numel / (j.c * j.inner);
    j.rows_per_task = BF_MAX(1, 16384 / (j.c * j.inner));
    atomic_init(&j.overflow, 0);
    bf_parallel_for(ex, (j.rows + j.rows_per_task - 1) / j.rows_per_task, bias_task, &j);
    if (atomic_load(&j.overflow))
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "output", NULL,
                          "value + bias overflows %s", bf_dtype_name(x->dtype));
    return BF_OK;
}

/* nn_grad.py _BiasAddGrad: (dy, BiasAddGrad(dy, data_format)). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy) return BF_OK;
    if (bf_grad_wants(g, 0)) bf_grad_set(g, 0, dy);
    if (bf_grad_wants(g, 1)) {
        const char *db =
            bf_grad_add(g, "db", "BiasAddGrad", BF_GRAD_SAME_ATTRS, "out_backprop", dy, NULL);
        if (db) bf_grad_set(g, 1, db);
    }
    return BF_OK;
}

const bf_block_desc bf_block_bias_add = {
    .type = "BiasAdd",
    .category = "nn",
    .synopsis = "output = value + bias along the channel dim (last, or dim 1 for NCHW)",
    .doc = "TensorFlow's BiasAdd: adds a 1-D bias to `value` (rank 2 to 5) along its channel "
           "dim: the last with data_format NHWC, dim 1 with NCHW.",
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
