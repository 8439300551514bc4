/*
 * softmax_family.c - what Softmax and LogSoftmax share (loss_common.h): TF's check ("logits
 * must have >= 1 dimension"), the output of the logits' shape, the run over rows of the last
 * axis, and their gradients (nn_grad.py _SoftmaxGrad and _LogSoftmaxGrad). The descriptor's
 * impl, a bf_softmax_kind, says which of the two a block is.
 */
#include "loss_common.h"

static const bf_softmax_kind *kind_of(const bf_node *node) { return node->desc->impl; }

bf_status bf_softmax_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                                bf_error *err) {
    (void)node;
    if (in[0].rank == 0) {
        bf_err_at(err, "logits", NULL);
        return bf_err(err, BF_ESHAPE, "bad_shape", "logits must have >= 1 dimension, got []");
    }
    bf_port_set(&out[0], in[0].dtype, in[0].rank, in[0].rank >= 0 ? in[0].dims : NULL);
    return BF_OK;
}

size_t bf_softmax_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                     const bf_port_info *out, const bf_exec *ex) {
    (void)node, (void)ex;
    if (!bf_loss_is_half(out[0].dtype)) return 0;
    const int64_t n[2] = {bf_port_numel(&in[0]), bf_port_numel(&out[0])};
    return bf_loss_half_workspace(2, n);
}

bf_status bf_softmax_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                                  bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    const bf_tensor *x = in[0];
    bf_tensor *y = out[0];
    if (y->numel == 0) return BF_OK;
    const int log = kind_of(node)->log;
    /* rows x cols over the last axis (cols > 0 here: numel > 0) */
    bf_rows r = {.cols = x->dims[x->rank - 1]};
    r.rows = x->numel / r.cols;
    switch (y->dtype) {
    case BF_DTYPE_F32: bf_softmax_rows_f32(&r, x->data, y->data, log, ex); break;
    case BF_DTYPE_F64: bf_softmax_rows_f64(&r, x->data, y->data, log, ex); break;
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        const int64_t n[2] = {x->numel, y->numel};
        float *a[2];
        void *own;
        bf_status st = bf_loss_half_arrays(ex, 2, n, a, &own, err);
        if (st) return st;
        bf_loss_widen(x->dtype, x->data, a[0], x->numel);
        bf_softmax_rows_f32(&r, a[0], a[1], log, ex);
        bf_loss_narrow(y->dtype, a[1], y->data, y->numel);
        bf_aligned_free(own);
        break;
    }
    default:
        return bf_err(err, BF_EDTYPE, "bad_dtype", "no CPU kernel for dtype %s",
                      bf_dtype_name(y->dtype));
    }
    return BF_OK;
}

/*
 * Softmax:    dx = (dy - sum(dy * y, -1, keepdims)) * y;
 * LogSoftmax: dx = dy - sum(dy, -1, keepdims) * exp(y);   y the block's own output.
 */
bf_status bf_softmax_desc_gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *y = bf_grad_output(g, 0), *dx = NULL;
    if (!kind_of(bf_grad_node(g))->log) {
        dx = bf_loss_grad_softmax(g, "grad", dy, y);
    } else {
        const int64_t last = -1;
        const char *e = bf_grad_add(g, "exp", "Exp", NULL, "x", y, (const char *)NULL);
        const char *axis = e ? bf_grad_const_i32(g, "axis", 1, &last) : NULL;
        const char *s = axis ? bf_grad_add(g, "sum", "Sum", "{\"keep_dims\":true}", "input", dy,
                                           "reduction_indices", axis, (const char *)NULL)
                             : NULL;
        const char *p = s ? bf_grad_add(g, "mul", "Mul", NULL, "x", s, "y", e,
                                        (const char *)NULL)
                          : NULL;
        dx = p ? bf_grad_add(g, "grad", "Sub", NULL, "x", dy, "y", p, (const char *)NULL) : NULL;
    }
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}
