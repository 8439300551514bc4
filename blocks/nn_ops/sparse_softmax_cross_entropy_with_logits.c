/*
 * Block:    SparseSoftmaxCrossEntropyWithLogits
 * Synopsis: loss[b] = log(sum_k exp(f[b,k] - m)) - (f[b, labels[b]] - m),
 *           backprop[b,j] = softmax(features[b])[j] - (j == labels[b])     (m = max_k f[b,k])
 * Padding:  none.
 * Example:  features = [[1, 2, 3], [1, 2, 3]], labels = [2, 0] -> loss = [0.4076059,
 *           2.4076059], backprop = [[0.0900306, 0.2447285, -0.3347590],
 *           [-0.9099694, 0.2447285, 0.6652410]].
 *
 * sparse_softmax_cross_entropy_with_logits.c - TensorFlow's
 * SparseSoftmaxCrossEntropyWithLogits: the cross entropy of a class index per example (int32
 * or int64) against the softmax of the features, and its gradient with respect to the
 * features, in TF's order of operations (SparseXentEigenImpl). A label outside [0, classes)
 * is an error at run time, in TF's words, naming the labels.
 * Gradient (nn_grad.py _SparseSoftmaxCrossEntropyWithLogitsGrad): features:
 * ExpandDims(d loss, -1) * backprop (+ the softmax gradient of d backprop); labels: none.
 */
#include "loss_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const bf_port_desc inputs[] = {
    {"features", BF_DT_FLOATS, 0, "logits [batch, classes]"},
    {"labels", BF_DT_INTS, 0, "the class of each example [batch], in [0, classes)"},
};
static const bf_port_desc outputs[] = {
    {"loss", BF_DT_FLOATS, 0, "per-example cross entropy [batch]"},
    {"backprop", BF_DT_FLOATS, 0, "d loss / d features: softmax - onehot(labels)"},
};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *f = &in[0], *l = &in[1];
    char b1[96], b2[96];
    if (f->rank >= 0 && f->rank != 2) {
        bf_err_at(err, "features", NULL);
        return bf_err(err, BF_ESHAPE, "bad_shape", "logits must be 2-D, but got shape %s",
                      bf_loss_shape_str(f->rank, f->dims, b1, sizeof(b1)));
    }
    if (l->rank >= 0 && l->rank != 1) {
        bf_err_at(err, "labels", NULL);
        return bf_err(err, BF_ESHAPE, "bad_shape", "labels must be 1-D, but got shape %s",
                      bf_loss_shape_str(l->rank, l->dims, b1, sizeof(b1)));
    }
    int64_t d[2] = {f->rank == 2 ? f->dims[0] : -1, f->rank == 2 ? f->dims[1] : -1};
    int64_t lb = l->rank == 1 ? l->dims[0] : -1;
    if (d[0] >= 0 && lb >= 0 && d[0] != lb) {
        bf_err_at(err, "labels", NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "logits and labels must have the same first dimension, got logits shape "
                      "%s and labels shape %s",
                      bf_loss_shape_str(f->rank, f->dims, b1, sizeof(b1)),
                      bf_loss_shape_str(l->rank, l->dims, b2, sizeof(b2)));
    }
    if (d[1] == 0) {
        bf_err_at(err, "features", NULL);
        return bf_err(err, BF_ESHAPE, "bad_shape",
                      "Must have at least one class, but got logits shape %s",
                      bf_loss_shape_str(f->rank, f->dims, b1, sizeof(b1)));
    }
    if (d[0] < 0) d[0] = lb;
    bf_port_set(&out[0], f->dtype, 1, d);
    bf_port_set(&out[1], f->dtype, 2, d);
    return BF_OK;
}

/* TF's CheckInvalidLabelIndex: the smallest label if it is negative, else the largest if it
 * is too large, with the label values (as many as the message holds). */
static bf_status check_labels(const bf_tensor *l, int64_t classes, bf_error *err) {
    const int32_t *l32 = l->dtype == BF_DTYPE_I32 ? l->data : NULL;
    const int64_t *l64 = l->dtype == BF_DTYPE_I64 ? l->data : NULL;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < l->numel; i++) {
        int64_t v = l32 ? l32[i] : l64[i];
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    if (l->numel == 0 || (lo >= 0 && hi < classes)) return BF_OK;
    char vals[160];
    size_t k = 0;
    for (int64_t i = 0; i < l->numel; i++) {
        int n = snprintf(vals + k, sizeof(vals) - k, "%s%" PRId64, i ? " " : "",
                         l32 ? (int64_t)l32[i] : l64[i]);
        if (n < 0 || k + (size_t)n + 4 >= sizeof(vals)) {
            snprintf(vals + k, sizeof(vals) - k, "...");
            break;
        }
        k += (size_t)n;
    }
    bf_err_at(err, "labels", NULL);
    return bf_err(err, BF_EINVAL, "bad_label",
                  "Received a label value of %" PRId64 " which is outside the valid range of "
                  "[0, %" PRId64 ").  Label values: %s",
                  lo < 0 ? lo : hi, classes, vals);
}

static size_t workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                            const bf_exec *ex) {
    (void)node, (void)ex;
    if (!bf_loss_is_half(out[0].dtype)) return 0;
    const int64_t n[3] = {bf_port_numel(&in[0]), bf_port_numel(&out[0]), bf_port_numel(&out[1])};
    return bf_loss_half_workspace(3, n);
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node;
    const bf_tensor *f = in[0], *l = in[1];
    bf_tensor *loss = out[0], *bp = out[1];
    bf_rows r = {.rows = f->dims[0], .cols = f->dims[1]};
    if (r.rows == 0) return BF_OK;
    bf_status st = check_labels(l, r.cols, err);
    if (st) return st;
    const int32_t *l32 = l->dtype == BF_DTYPE_I32 ? l->data : NULL;
    const int64_t *l64 = l->dtype == BF_DTYPE_I64 ? l->data : NULL;
    switch (bp->dtype) {
    case BF_DTYPE_F32:
        bf_sparse_xent_rows_f32(&r, f->data, l32, l64, loss->data, bp->data, ex);
        break;
    case BF_DTYPE_F64:
        bf_sparse_xent_rows_f64(&r, f->data, l32, l64, loss->data, bp->data, ex);
        break;
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        const int64_t n[3] = {f->numel, loss->numel, bp->numel};
        float *a[3];
        void *own;
        if ((st = bf_loss_half_arrays(ex, 3, n, a, &own, err))) return st;
        bf_loss_widen(f->dtype, f->data, a[0], f->numel);
        bf_sparse_xent_rows_f32(&r, a[0], l32, l64, a[1], a[2], ex);
        bf_loss_narrow(bp->dtype, a[1], loss->data, loss->numel);
        bf_loss_narrow(bp->dtype, a[2], bp->data, bp->numel);
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
    bf_loss_grad_xent_features(g); /* labels are indices: no gradient (TF returns None) */
    return BF_OK;
}

const bf_block_desc bf_block_sparse_softmax_cross_entropy_with_logits = {
    .type = "SparseSoftmaxCrossEntropyWithLogits",
    .category = "nn",
    .synopsis = "loss[b] = -log softmax(features[b])[labels[b]]; backprop = softmax(features) - "
        "onehot(labels)",
    .doc = "Softmax cross entropy of one class index per example (int32 or int64), and its "
        "gradient with respect to the features.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .workspace_cpu = workspace_cpu,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
