/*
 * Block:    SoftmaxCrossEntropyWithLogits
 * Synopsis: loss[b] = -sum_j labels[b,j] * log(softmax(features[b])[j])
 *                   = sum_j labels[b,j] * (log(sum_k exp(f[b,k] - m)) - (f[b,j] - m)),
 *           backprop[b,j] = softmax(features[b])[j] - labels[b,j]      (m = max_k f[b,k])
 * Padding:  none. features and labels broadcast against each other to [batch, classes] with
 *           numpy's rule (TF's BCast): [1, C] or [C] rows are repeated, as is a scalar.
 * Example:  features = [[1, 2, 3]], labels = [[0, 0, 1]] -> loss = [0.4076059],
 *           backprop = [[0.0900306, 0.2447285, -0.3347590]].
 *
 * softmax_cross_entropy_with_logits.c - TensorFlow's SoftmaxCrossEntropyWithLogits: the cross
 * entropy of soft labels against the softmax of the features, and its gradient with respect
 * to the features, in TF's order of operations (XentEigenImpl, loss_kernels_impl.h): shift by
 * the row max, so exp never overflows; a label of 0 against a -inf feature gives NaN, as TF.
 * Gradient (nn_grad.py _SoftmaxCrossEntropyWithLogitsGrad): features: ExpandDims(d loss, -1) *
 * backprop (+ the softmax gradient of d backprop), summed back to features' shape when it was
 * broadcast; labels: ExpandDims(d loss, -1) * -LogSoftmax(features), likewise (zeros when
 * only backprop leads to the loss: TF leaves out backprop's dependence on the labels).
 */
#include "loss_common.h"

#include <string.h>

static const bf_port_desc inputs[] = {
    {"features", BF_DT_FLOATS, 0, "logits [batch, classes] (or broadcastable to it)"},
    {"labels", BF_DT_FLOATS, 0, "a distribution per row [batch, classes] (or broadcastable)"},
};
static const bf_port_desc outputs[] = {
    {"loss", BF_DT_FLOATS, 0, "per-example cross entropy [batch]"},
    {"backprop", BF_DT_FLOATS, 0, "d loss / d features: softmax - labels [batch, classes]"},
};

/* TF's BCast of the two shapes (fewer_dims_optimization off): right-aligned, each pair of
 * dims equal or one of them 1. -1 where not known. Errors in TF's words. */
static bf_status bcast(const bf_port_info *f, const bf_port_info *l, int *rank, int64_t *dims,
                       bf_error *err) {
    int r = BF_MAX(f->rank, l->rank);
    bool bad = false;
    for (int i = 0; i < r && i < BF_MAX_RANK; i++) {
        int fi = f->rank - r + i, li = l->rank - r + i;
        int64_t a = fi >= 0 ? f->dims[fi] : 1, b = li >= 0 ? l->dims[li] : 1;
        if (a == b) dims[i] = a;
        else if (a == 1) dims[i] = b;
        else if (b == 1) dims[i] = a;
        else if (a < 0) dims[i] = b;
        else if (b < 0) dims[i] = a;
        else bad = true;
    }
    if (bad) {
        char b1[96], b2[96];
        bf_err_at(err, "labels", NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "logits and labels must be broadcastable: logits_size=%s labels_size=%s",
                      bf_loss_shape_str(f->rank, f->dims, b1, sizeof(b1)),
                      bf_loss_shape_str(l->rank, l->dims, b2, sizeof(b2)));
    }
    if (r != 2) {
        char b1[96], b2[96];
        bf_err_at(err, "features", NULL);
        return bf_err(err, BF_ESHAPE, "bad_shape",
                      "logits and labels must be either 2-dimensional, or broadcasted to be "
                      "2-dimensional (logits_size=%s labels_size=%s)",
                      bf_loss_shape_str(f->rank, f->dims, b1, sizeof(b1)),
                      bf_loss_shape_str(l->rank, l->dims, b2, sizeof(b2)));
    }
    *rank = r;
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *f = &in[0], *l = &in[1];
    if (f->dtype && l->dtype && f->dtype != l->dtype) {
        bf_err_at(err, "labels", NULL);
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "labels has dtype %s but features has "
                      "dtype %s", bf_dtype_name(l->dtype), bf_dtype_name(f->dtype));
    }
    bf_dtype dt = f->dtype ? f->dtype : l->dtype;
    int64_t d[BF_MAX_RANK] = {-1, -1};
    if (f->rank >= 0 && l->rank >= 0) {
        int rank;
        bf_status st = bcast(f, l, &rank, d, err);
        if (st) return st;
    }
    bf_port_set(&out[0], dt, 1, d);
    bf_port_set(&out[1], dt, 2, d);
    return BF_OK;
}

/* The rows view of an operand of `rank` and `dims` broadcast to [rows, cols]. */
static void strides_of(int rank, const int64_t *dims, int64_t *rs, int64_t *cs) {
    int64_t r = rank == 2 ? dims[0] : 1, c = rank >= 1 ? dims[rank - 1] : 1;
    *cs = c == 1 ? 0 : 1;
    *rs = r == 1 ? 0 : c;
}

static size_t workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                            const bf_exec *ex) {
    (void)node, (void)ex;
    if (!bf_loss_is_half(out[0].dtype)) return 0;
    const int64_t n[4] = {bf_port_numel(&in[0]), bf_port_numel(&in[1]), bf_port_numel(&out[0]),
                          bf_port_numel(&out[1])};
    return bf_loss_half_workspace(4, n);
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node;
    const bf_tensor *f = in[0], *l = in[1];
    bf_tensor *loss = out[0], *bp = out[1];
    bf_rows r = {.rows = bp->dims[0], .cols = bp->dims[1]};
    if (r.rows == 0) return BF_OK; /* TF computes nothing for an empty batch */
    strides_of(f->rank, f->dims, &r.f_rs, &r.f_cs);
    strides_of(l->rank, l->dims, &r.l_rs, &r.l_cs);
    switch (bp->dtype) {
    case BF_DTYPE_F32: bf_xent_rows_f32(&r, f->data, l->data, loss->data, bp->data, ex); break;
    case BF_DTYPE_F64: bf_xent_rows_f64(&r, f->data, l->data, loss->data, bp->data, ex); break;
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        const int64_t n[4] = {f->numel, l->numel, loss->numel, bp->numel};
        float *a[4];
        void *own;
        bf_status st = bf_loss_half_arrays(ex, 4, n, a, &own, err);
        if (st) return st;
        bf_loss_widen(f->dtype, f->data, a[0], f->numel);
        bf_loss_widen(l->dtype, l->data, a[1], l->numel);
        bf_xent_rows_f32(&r, a[0], a[1], a[2], a[3], ex);
        bf_loss_narrow(bp->dtype, a[2], loss->data, loss->numel);
        bf_loss_narrow(bp->dtype, a[3], bp->data, bp->numel);
        bf_aligned_free(own);
        break;
    }
    default:
        return bf_err(err, BF_EDTYPE, "bad_dtype", "no CPU kernel for dtype %s",
                      bf_dtype_name(bp->dtype));
    }
    return BF_OK;
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *col = bf_loss_grad_xent_features(g);
    if (!bf_grad_wants(g, 1)) return BF_OK;
    if (!bf_grad_dy(g, 0)) {
        /* Only backprop leads to the loss: TF's labels gradient, grad_loss (zeros here) times
         * -LogSoftmax, is zeros; it leaves out backprop's own dependence on the labels. */
        const char *z = bf_grad_add(g, "grad_labels", "ZerosLike", NULL, "x",
                                    bf_grad_input(g, 1), (const char *)NULL);
        if (z) bf_grad_set(g, 1, z);
        return BF_OK;
    }
    if (!col) return BF_OK; /* the builder recorded the error */
    /* labels: ExpandDims(d loss, -1) * -LogSoftmax(features), summed back to labels' shape */
    const bf_port_info *bp = bf_grad_output_info(g, 1);
    const char *ls = bf_grad_add(g, "log_softmax", "LogSoftmax", NULL, "logits",
                                 bf_grad_input(g, 0), (const char *)NULL);
    const char *m1 = ls ? bf_grad_const_scalar(g, "minus_one", bp->dtype, -1.0) : NULL;
    const char *neg = m1 ? bf_grad_add(g, "neg_log_softmax", "Mul", NULL, "x", ls, "y", m1,
                                       (const char *)NULL)
                         : NULL;
    const char *dl = neg ? bf_grad_add(g, "labels_mul", "Mul", NULL, "x", col, "y", neg,
                                       (const char *)NULL)
                         : NULL;
    const char *r = dl ? bf_grad_unbroadcast(g, "grad_labels", dl, bp, 1) : NULL;
    if (r) bf_grad_set(g, 1, r);
    return BF_OK;
}

const bf_block_desc bf_block_softmax_cross_entropy_with_logits = {
    .type = "SoftmaxCrossEntropyWithLogits",
    .category = "nn",
    .synopsis = "loss[b] = -sum_j labels[b,j] * log softmax(features[b])[j]; backprop = "
        "softmax(features) - labels",
    .doc = "Softmax cross entropy of soft labels, per example, and its gradient with respect "
        "to the features; features and labels broadcast to [batch, classes].",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .workspace_cpu = workspace_cpu,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
