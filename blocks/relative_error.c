/*
 * Block:    RelativeError
 * Synopsis: error = max_i |a[i] - b[i]| / max(max_i |a[i]|, max_i |b[i]|, tiny)   (float64)
 * Padding:  none.
 * Example:  a = [1.0, 2.0], b = [1.0, 2.002]  ->  error = 0.002 / 2.002 = 0.000999.
 *
 * relative_error.c - compares two tensors of the same shape, typically a gradient block's
 * result against a finite-difference estimate (examples/fd_check_filter_grad.json). The
 * result is a rank-0 float64, small (about 1e-9 in float64) when the two agree.
 */
#include "block.h"

#include <math.h>

static const bf_port_desc inputs[] = {
    {"a", BF_DT_ALL, 0, "first tensor"},
    {"b", BF_DT_ALL, 0, "second tensor, same shape"},
};
static const bf_port_desc outputs[] = {{"error", BF_DT(F64), 0, "scalar relative error"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    bool same = in[0].rank < 0 || in[1].rank < 0 || in[0].rank == in[1].rank;
    for (int i = 0; same && in[0].rank >= 0 && in[1].rank >= 0 && i < in[0].rank; i++)
        same = in[0].dims[i] < 0 || in[1].dims[i] < 0 || in[0].dims[i] == in[1].dims[i];
    if (!same) {
        char a[128], b[128];
        bf_err_at(err, "b", NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "a is %s but b is %s",
                      bf_shape_str(in[0].rank, in[0].dims, a, sizeof(a)),
                      bf_shape_str(in[1].rank, in[1].dims, b, sizeof(b)));
    }
    bf_port_set(&out[0], BF_DTYPE_F64, 0, NULL);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex, (void)err;
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < in[0]->numel; i++) {
        double a = bf_tensor_get_f64(in[0], i), b = bf_tensor_get_f64(in[1], i);
        double d = fabs(a - b);
        if (!(d <= diff)) diff = d; /* NaN propagates */
        scale = fmax(scale, fmax(fabs(a), fabs(b)));
    }
    ((double *)out[0]->data)[0] = diff / fmax(scale, 1e-300);
    return BF_OK;
}

const bf_block_desc bf_block_relative_error = {
    .type = "RelativeError",
    .category = "check",
    .synopsis = "error = max|a - b| / max(max|a|, max|b|)",
    .doc = "Relative difference of two tensors of the same shape, as a float64 scalar: how "
           "well a gradient agrees with its finite-difference estimate.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
};
