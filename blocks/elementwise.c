/*
 * elementwise.c - the shape rule and the loop shared by Add, Sub and Mul (elementwise.h).
 */
#include "elementwise.h"
#include "half.h"

const bf_port_desc bf_binary_inputs[2] = {
    {"x", BF_DT_ALL, 0, "left operand"},
    {"y", BF_DT_ALL, 0, "right operand: same shape, or a scalar"},
};
const bf_port_desc bf_binary_outputs[1] = {{"z", BF_DT_ALL, 0, "the result"}};

bf_status bf_binary_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *y = &in[1];
    if (x->dtype && y->dtype && x->dtype != y->dtype) {
        bf_err_at(err, "y", NULL);
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "x is %s but y is %s",
                      bf_dtype_name(x->dtype), bf_dtype_name(y->dtype));
    }
    bf_dtype dt = x->dtype ? x->dtype : y->dtype;
    if (x->rank == 0) {
        bf_port_set(out, dt, y->rank, y->rank >= 0 ? y->dims : NULL);
        return BF_OK;
    }
    if (y->rank == 0 || y->rank < 0) {
        bf_port_set(out, dt, x->rank, x->rank >= 0 ? x->dims : NULL);
        return BF_OK;
    }
    if (x->rank < 0) {
        bf_port_set(out, dt, y->rank, y->dims);
        return BF_OK;
    }
    bool same = x->rank == y->rank;
    for (int i = 0; same && i < x->rank; i++)
        same = x->dims[i] < 0 || y->dims[i] < 0 || x->dims[i] == y->dims[i];
    if (!same) {
        char a[128], b[128];
        bf_err_at(err, "y", NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "x is %s and y is %s: shapes must be equal, or one a scalar (rank 0)",
                      bf_shape_str(x->rank, x->dims, a, sizeof(a)),
                      bf_shape_str(y->rank, y->dims, b, sizeof(b)));
    }
    bf_port_set(out, dt, x->rank, x->dims);
    for (int i = 0; i < x->rank; i++)
        if (out->dims[i] < 0) out->dims[i] = y->dims[i];
    return BF_OK;
}


bf_status bf_binary_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    (void)ex;
    const bf_tensor *x = in[0], *y = in[1];
    bf_binop op = ((const bf_binary_impl *)node->desc->impl)->op;
    int64_t n = out[0]->numel, sx = x->numel == n ? 1 : 0, sy = y->numel == n ? 1 : 0;
    if (out[0]->dtype == BF_DTYPE_F32) {
        const float *a = x->data, *b = y->data;
        float *o = out[0]->data;
        for (int64_t i = 0; i < n; i++) o[i] = (float)op(a[i * sx], b[i * sy]);
    } else if (out[0]->dtype == BF_DTYPE_F64) {
        const double *a = x->data, *b = y->data;
        double *o = out[0]->data;
        for (int64_t i = 0; i < n; i++) o[i] = op(a[i * sx], b[i * sy]);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double v = op(bf_tensor_get_f64(x, i * sx), bf_tensor_get_f64(y, i * sy));
            if (out[0]->dtype == BF_DTYPE_F16 || out[0]->dtype == BF_DTYPE_BF16) v = (float)v;
            bf_status st = bf_tensor_set_f64(out[0], i, v, err);
            if (st) return st;
        }
    }
    return BF_OK;
}

