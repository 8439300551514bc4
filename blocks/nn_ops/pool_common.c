/*
 * pool_common.c - attribute tables, validation, shape inference and the CPU glue shared by the
 * four pooling blocks (see pool_common.h).
 *
 * Each op validates in the order of its own TF kernel constructor, then of its Compute and of
 * PoolParameters (pooling_ops_common.cc), with TF's words, so that a page gets the complaint
 * TF would give first; what was given is appended where TF's sentence does not say it.
 * Shapes in the messages TF builds with TensorShape::DebugString are printed as TF does,
 * "[1,2,2,1]". Nothing is divided before its divisor has been checked and every size product
 * is overflow-checked.
 *
 * float16 and bfloat16 are converted to float32 once into the workspace, pooled in float32
 * and rounded once into the output (TF's CPU kernels compute in the half type itself: a sum
 * of a window of halves may differ from TF's by the roundings TF does and this does not).
 *
 * On a GPU every float dtype and geometry runs there (cuda/pool_cuda.cu): cuDNN where it
 * computes what the CPU kernels compute, our own kernels elsewhere; the integer MaxPool stays
 * on the CPU.
 */
#include "pool_common.h"

#include "conv_geom.h"
#include "half.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- attribute tables -------------------------------------------------------------------- */

static const char *const max_padding_values[] = {"SAME", "VALID", "EXPLICIT", NULL};
static const char *const avg_padding_values[] = {"SAME", "VALID", NULL};
static const char *const format_values[] = {"NHWC", "NCHW", NULL};

#define BF_POOL_WINDOW_ATTRS                                                                    \
    {"ksize", BF_ATTR_INT_LIST, NULL, NULL, BF_ATTR_LENGTH(4),                                  \
     "4 window sizes in data_format order; N must be 1"},                                      \
    {"strides", BF_ATTR_INT_LIST, NULL, NULL, BF_ATTR_LENGTH(4),                                \
     "4 window strides in data_format order; N must be 1"}

const bf_attr_desc bf_maxpool_attr_descs[BF_MAXPOOL_N_ATTRS] = {
    BF_POOL_WINDOW_ATTRS,
    {"padding", BF_ATTR_ENUM, NULL, max_padding_values, 0,
     "SAME (output = ceil(in/stride), odd pad pixel after), VALID (no padding) or EXPLICIT; "
     "padding never wins a max"},
    {"explicit_paddings", BF_ATTR_INT_LIST, "[]", NULL, BF_ATTR_LENGTH(8),
     "EXPLICIT only: 8 values, (before, after) per dim in data_format order, each below the "
     "window size"},
    {"data_format", BF_ATTR_ENUM, "\"NHWC\"", format_values, 0, "layout of the tensors"},
};

const bf_attr_desc bf_avgpool_attr_descs[BF_AVGPOOL_N_ATTRS] = {
    BF_POOL_WINDOW_ATTRS,
    {"padding", BF_ATTR_ENUM, NULL, avg_padding_values, 0,
     "SAME (output = ceil(in/stride), odd pad pixel after; the mean is over the real "
     "elements only) or VALID (no padding)"},
    {"data_format", BF_ATTR_ENUM, "\"NHWC\"", format_values, 0, "layout of the tensors"},
};

/* ---- errors and shapes in TF's words ------------------------------------------------------ */

static bf_status attr_err(bf_error *err, const char *attr, const char *fmt, ...) BF_PRINTF(3, 4);
static bf_status attr_err(bf_error *err, const char *attr, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_verr(err, BF_EATTR, "bad_attr", fmt, ap);
    va_end(ap);
    bf_err_at(err, NULL, attr);
    return BF_EATTR;
}

static bf_status shape_err(bf_error *err, const char *port, const char *code, const char *fmt,
                           ...) BF_PRINTF(4, 5);
static bf_status shape_err(bf_error *err, const char *port, const char *code, const char *fmt,
                           ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_verr(err, BF_ESHAPE, code, fmt, ap);
    va_end(ap);
    bf_err_at(err, port, NULL);
    return BF_ESHAPE;
}

/* A shape as TF's TensorShape::DebugString prints it: "[1,2,2,1]", "?" for an unknown dim. */
static const char *tf_shape(int rank, const int64_t *dims, char *buf, size_t size) {
    size_t k = 0;
    buf[k++] = '[';
    for (int i = 0; i < rank && k + 24 < size; i++) {
        if (dims[i] < 0) k += (size_t)snprintf(buf + k, size - k, "%s?", i ? "," : "");
        else k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, i ? "," : "", dims[i]);
    }
    snprintf(buf + k, size - k, "]");
    return buf;
}

static bool known(int64_t d) { return d >= 0; }

/* ---- attributes ---------------------------------------------------------------------------- */

typedef struct pool_attrs {
    int64_t ksize[4], strides[4];  /* data_format order */
    int64_t explicit_pads[8];      /* data_format order; zeros unless EXPLICIT */
    bf_pool_padding padding;
    int nchw;
    int ih, iw, ic;                /* indices of H, W and C in data_format order */
} pool_attrs;

static bool is_max(const bf_pool_spec *s) { return s->op == BF_POOL_MAX || s->op == BF_POOL_MAX_GRAD; }

static bf_status check_len4(const bf_attr_value *v, const char *attr, const char *what,
                            bf_error *err) {
    if (!v->set || v->n != 4)
        return attr_err(err, attr, "Sliding window %s field must specify 4 dimensions, got %d",
                        what, v->set ? v->n : 0);
    return BF_OK;
}

/* TF reads ksize and strides as list(int) into int32 vectors (OpKernelConstruction::GetAttr). */
static bf_status check_int32(const bf_attr_value *v, const char *attr, bf_error *err) {
    for (int i = 0; i < v->n; i++)
        if (v->list[i] < INT32_MIN || v->list[i] > INT32_MAX)
            return attr_err(err, attr, "Attr %s has value %" PRId64 " out of range for an int32",
                            attr, v->list[i]);
    return BF_OK;
}

/*
 * The attributes in the order of each op's kernel constructor:
 *   MaxPool      data_format, ksize length, ksize > 0, strides length, padding, batch;
 *   MaxPoolGrad  data_format, ksize length, strides length, batch, depth, padding;
 *   AvgPool      data_format, ksize length, strides length, padding, batch, ksize > 0;
 *   AvgPoolGrad  data_format, ksize length, strides length, padding, batch.
 * The gradients also get their forward op's ksize > 0 rule (TF finds a zero window later or
 * never). explicit_paddings follows (TF's CheckValidPadding, called by the shape function).
 */
static bf_status parse_attrs(const bf_node *node, const bf_pool_spec *spec, pool_attrs *a,
                             bf_error *err) {
    const bf_attr_value *v = node->attrs;
    const bool max = is_max(spec);
    const bf_attr_value *ks = &v[BF_POOL_ATTR_KSIZE], *st = &v[BF_POOL_ATTR_STRIDES];
    const bf_attr_value *pd = &v[BF_POOL_ATTR_PADDING];
    const bf_attr_value *df = &v[max ? BF_MAXPOOL_ATTR_DATA_FORMAT : BF_AVGPOOL_ATTR_DATA_FORMAT];
    const bf_attr_value *ep = max ? &v[BF_MAXPOOL_ATTR_EXPLICIT_PADDINGS] : NULL;
    bf_status s;
    memset(a, 0, sizeof(*a));

    if (!df->set || df->i < 0 || df->i > 1)
        return attr_err(err, "data_format",
                        "Invalid data format: expected \"NHWC\" or \"NCHW\"");
    a->nchw = df->i == 1;
    a->ih = a->nchw ? 2 : 1, a->iw = a->nchw ? 3 : 2, a->ic = a->nchw ? 1 : 3;
    if ((s = check_len4(ks, "ksize", "ksize", err))) return s;
    if ((s = check_int32(ks, "ksize", err))) return s;
    if (max)
        for (int i = 0; i < 4; i++)
            if (ks->list[i] <= 0)
                return attr_err(err, "ksize", "Sliding window ksize for dimension %d was zero.",
                                i);
    /* MaxPool and AvgPool say "stride", their gradients "strides" (TF's kernels). */
    const char *sname = spec->op == BF_POOL_MAX || spec->op == BF_POOL_AVG ? "stride" : "strides";
    if ((s = check_len4(st, "strides", sname, err))) return s;
    if ((s = check_int32(st, "strides", err))) return s;
    int maxpad = max ? 2 : 1;
    if (!pd->set || pd->i < 0 || pd->i > maxpad)
        return attr_err(err, "padding", max ? "padding is not an allowed padding type: expected "
                                              "SAME, VALID or EXPLICIT"
                                            : "padding is not an allowed padding type: expected "
                                              "SAME or VALID");
    a->padding = (bf_pool_padding)pd->i;
    if (ks->list[0] != 1 || st->list[0] != 1) {
        char b1[64], b2[64];
        return attr_err(err, ks->list[0] != 1 ? "ksize" : "strides",
                        "Pooling is not yet supported on the batch dimension. (ksize %s, "
                        "strides %s)",
                        tf_shape(4, ks->list, b1, sizeof(b1)), tf_shape(4, st->list, b2, sizeof(b2)));
    }
    if (spec->op == BF_POOL_MAX_GRAD && (ks->list[a->ic] != 1 || st->list[a->ic] != 1))
        return attr_err(err, ks->list[a->ic] != 1 ? "ksize" : "strides",
                        "MaxPoolingGrad is not yet supported on the depth dimension.");
    if (spec->op == BF_POOL_AVG || spec->op == BF_POOL_AVG_GRAD)
        for (int i = 0; i < 4; i++)
            if (ks->list[i] <= 0)
                return attr_err(err, "ksize", "ksize must be a positive int32 value, got:%" PRId64,
                                ks->list[i]);

    /* explicit_paddings (TF's CheckValidPadding): 8 non-negative values, zero on N and C, for
     * EXPLICIT; an empty list otherwise. */
    int n_pads = ep && ep->set ? ep->n : 0;
    if (a->padding == BF_POOL_PADDING_EXPLICIT) {
        if (n_pads != 8)
            return attr_err(err, "explicit_paddings",
                            "explicit_paddings attribute must contain 8 values, but got: %d",
                            n_pads);
        for (int i = 0; i < 8; i++)
            if (ep->list[i] < 0)
                return attr_err(err, "explicit_paddings",
                                "All elements of explicit_paddings must be nonnegative, got "
                                "%" PRId64 " at index %d",
                                ep->list[i], i);
        if (ep->list[0] || ep->list[1] || ep->list[2 * a->ic] || ep->list[2 * a->ic + 1])
            return attr_err(err, "explicit_paddings",
                            "Nonzero explicit padding in the batch or depth dimensions is not "
                            "supported");
        memcpy(a->explicit_pads, ep->list, sizeof(a->explicit_pads));
    } else if (n_pads != 0) {
        return attr_err(err, "explicit_paddings",
                        "explicit_paddings attribute must be empty if the padding attribute is "
                        "not EXPLICIT, got %d values",
                        n_pads);
    }
    memcpy(a->ksize, ks->list, sizeof(a->ksize));
    memcpy(a->strides, st->list, sizeof(a->strides));
    return BF_OK;
}

/* ---- inference --------------------------------------------------------------------------- */

static void to_nhwc(const int64_t *d, int nchw, int64_t *o) {
    if (nchw) o[0] = d[0], o[1] = d[2], o[2] = d[3], o[3] = d[1];
    else memcpy(o, d, 4 * sizeof(int64_t));
}
static void from_nhwc(const int64_t *d, int nchw, int64_t *o) {
    if (nchw) o[0] = d[0], o[1] = d[3], o[2] = d[1], o[3] = d[2];
    else memcpy(o, d, 4 * sizeof(int64_t));
}

/* A 4-D port: rank 4 when known; its dims in logical NHWC -> o (all -1 when unknown). */
static bf_status rank4(const bf_port_info *p, const char *port, const char *words, int nchw,
                       int64_t *o, bf_error *err) {
    for (int i = 0; i < 4; i++) o[i] = -1;
    if (p->rank < 0) return BF_OK;
    if (p->rank != 4) {
        char buf[96];
        return shape_err(err, port, "bad_shape", "%s, got shape %s", words,
                         tf_shape(p->rank, p->dims, buf, sizeof(buf)));
    }
    to_nhwc(p->dims, nchw, o);
    return BF_OK;
}

/* Require a port known in full to have (format-ordered) shape `want`, in TF's words. */
static bf_status expect_shape(const bf_port_info *p, const char *port, const char *tf_name,
                              const int64_t *want, bf_error *err) {
    if (p->rank != 4) return BF_OK; /* unknown (rank checked before) */
    for (int i = 0; i < 4; i++)
        if (known(want[i]) && known(p->dims[i]) && want[i] != p->dims[i]) {
            char b1[96], b2[96];
            return shape_err(err, port, "shape_mismatch", "Expected %s shape to be %s, but got %s",
                             tf_name, tf_shape(4, want, b1, sizeof(b1)),
                             tf_shape(4, p->dims, b2, sizeof(b2)));
        }
    return BF_OK;
}

bf_status bf_pool_infer(const bf_node *node, const bf_pool_spec *spec, const bf_port_info *in,
                        bf_port_info *out, bf_pool_geom *g, int *complete, bf_error *err) {
    if (complete) *complete = 0;
    pool_attrs a;
    bf_status st = parse_attrs(node, spec, &a, err);
    if (st) return st;
    const bf_pool_op op = spec->op;
    const int ishape = op == BF_POOL_AVG_GRAD ? 0 : -1; /* the host shape vector */

    /* dtypes: every T port agrees; orig_input_shape is int32. */
    bf_dtype dt = BF_DTYPE_INVALID;
    const char *dt_port = NULL;
    for (int i = 0; i < node->desc->n_inputs; i++) {
        const char *pname = node->desc->inputs[i].name;
        if (in[i].dtype == BF_DTYPE_INVALID) continue;
        if (i == ishape) {
            if (in[i].dtype != BF_DTYPE_I32) {
                bf_err_at(err, pname, NULL);
                return bf_err(err, BF_EDTYPE, "dtype_mismatch", "%s must be int32, got %s",
                              pname, bf_dtype_name(in[i].dtype));
            }
            continue;
        }
        if (!(node->desc->inputs[i].dtypes & (1u << in[i].dtype))) {
            bf_err_at(err, pname, NULL);
            return bf_err(err, BF_EDTYPE, "bad_dtype", "%s has dtype %s, which %s does not take",
                          pname, bf_dtype_name(in[i].dtype), spec->label);
        }
        if (dt != BF_DTYPE_INVALID && in[i].dtype != dt) {
            bf_err_at(err, pname, NULL);
            return bf_err(err, BF_EDTYPE, "dtype_mismatch", "%s has dtype %s but %s has dtype %s",
                          pname, bf_dtype_name(in[i].dtype), dt_port, bf_dtype_name(dt));
        }
        dt = in[i].dtype, dt_port = pname;
    }

    /* The input's dims (logical NHWC, -1 unknown) and the ranks, in each kernel's order. */
    int64_t x[4] = {-1, -1, -1, -1}, yo[4] = {-1, -1, -1, -1}, dy[4] = {-1, -1, -1, -1};
    switch (op) {
    case BF_POOL_MAX:
    case BF_POOL_AVG: {
        const char *port = op == BF_POOL_MAX ? "input" : "value";
        char words[64];
        snprintf(words, sizeof(words), "Shape must be rank 4 but is rank %d", in[0].rank);
        if ((st = rank4(&in[0], port, words, a.nchw, x, err))) return st;
        break;
    }
    case BF_POOL_MAX_GRAD:
        if ((st = rank4(&in[0], "orig_input", "tensor_in must be 4-dimensional", a.nchw, x, err)) ||
            (st = rank4(&in[1], "orig_output", "tensor_out must be 4-dimensional", a.nchw, yo,
                        err)) ||
            (st = rank4(&in[2], "grad", "out_backprop must be 4-dimensional", a.nchw, dy, err)))
            return st;
        break;
    case BF_POOL_AVG_GRAD: {
        const bf_port_info *p = &in[0];
        const bf_tensor *v = p->value;
        int rank = v ? v->rank : p->rank;
        int64_t len = v ? (v->rank == 1 ? v->dims[0] : -1) : (rank == 1 ? p->dims[0] : -1);
        if ((rank >= 0 && rank != 1) || (len >= 0 && len != 4)) {
            char buf[96];
            return shape_err(err, "orig_input_shape", "bad_shape",
                             "out_backprop must be 1-dimensional and 4 elements "
                             "(orig_input_shape has shape %s)",
                             v ? tf_shape(v->rank, v->dims, buf, sizeof(buf))
                               : tf_shape(p->rank, p->dims, buf, sizeof(buf)));
        }
        if ((st = rank4(&in[1], "grad", "out_backprop must be 4-dimensional", a.nchw, dy, err)))
            return st;
        if (v) {
            int64_t d[4];
            for (int i = 0; i < 4; i++) {
                d[i] = (int64_t)bf_tensor_get_f64(v, i);
                if (d[i] < 0)
                    return shape_err(err, "orig_input_shape", "bad_shape",
                                     "Expected a non-negative size, got %" PRId64
                                     " (orig_input_shape[%d])",
                                     d[i], i);
            }
            int64_t numel;
            size_t nbytes;
            if (bf_shape_size(dt ? dt : BF_DTYPE_F64, 4, d, node->max_elements, &numel, &nbytes,
                              err)) {
                bf_err_at(err, "orig_input_shape", NULL);
                return err ? err->status : BF_ELIMIT;
            }
            to_nhwc(d, a.nchw, x);
        }
        break;
    }
    }

    /* The window: over depth (MaxPool only) or over H and W (TF's PoolParameters). */
    const int64_t kh = a.ksize[a.ih], kw = a.ksize[a.iw], kd = a.ksize[a.ic];
    const int64_t sh = a.strides[a.ih], sw = a.strides[a.iw], sd = a.strides[a.ic];
    if (kd != 1 && (kh != 1 || kw != 1))
        return attr_err(err, "ksize",
                        "MaxPooling supports exactly one of pooling across depth or pooling "
                        "across width/height.");
    int64_t y[4] = {x[0], -1, -1, x[3]}, pads[4] = {0, 0, 0, 0};
    if (kd != 1) {
        if (op == BF_POOL_AVG || op == BF_POOL_AVG_GRAD)
            return attr_err(err, "ksize", "Non-spatial pooling is not yet supported. "
                                          "Volunteers? :)");
        /* MaxPool over depth: TF's CPU kernel only; spatial strides and padding unused. */
        if (known(x[3]) && x[3] % kd != 0)
            return shape_err(err, "input", "shape_mismatch",
                             "Depthwise max pooling requires the depth window to evenly divide "
                             "the input depth (depth %" PRId64 ", window %" PRId64 ")",
                             x[3], kd);
        if (sd != kd)
            return attr_err(err, "strides", "Depthwise max pooling requires the depth window to "
                                            "equal the depth stride");
        if (a.padding == BF_POOL_PADDING_EXPLICIT)
            return attr_err(err, "padding",
                            "Depthwise max pooling does not support explicit padding.");
        if (a.nchw)
            return attr_err(err, "data_format", "Depthwise max pooling supports data_format "
                                                "NHWC only (TF's CPU kernel)");
        y[1] = x[1], y[2] = x[2], y[3] = known(x[3]) ? x[3] / kd : -1;
    } else {
        if (a.padding == BF_POOL_PADDING_EXPLICIT) {
            /* TF's CheckPaddingSize: a pad at least the window would make an empty window. */
            const char *side[4] = {"Top", "Bottom", "Left", "Right"};
            for (int i = 0; i < 4; i++) {
                int64_t p = a.explicit_pads[2 * (i < 2 ? a.ih : a.iw) + (i & 1)];
                int64_t k = i < 2 ? kh : kw;
                if (p >= k)
                    return attr_err(err, "explicit_paddings",
                                    "%s padding %" PRId64 " needs to be smaller than the window "
                                    "size %" PRId64,
                                    side[i], p, k);
            }
        }
        const char *names[2] = {"rows", "cols"};
        for (int d = 0; d < 2; d++) {
            int fi = d == 0 ? a.ih : a.iw;
            st = bf_conv_out_size(names[d], x[1 + d], d == 0 ? kh : kw, a.strides[fi], 1,
                                  (bf_conv_padding)a.padding, a.explicit_pads[2 * fi],
                                  a.explicit_pads[2 * fi + 1], &y[1 + d], &pads[2 * d],
                                  &pads[2 * d + 1], err);
            if (st) {
                if (a.strides[fi] <= 0) bf_err_at(err, NULL, "strides");
                else bf_err_at(err, node->desc->inputs[0].name, NULL);
                return st;
            }
        }
    }

    /* The gradients' agreement with the forward output (TF's Compute, after PoolParameters). */
    int64_t yf[4];
    from_nhwc(y, a.nchw, yf);
    if (op == BF_POOL_MAX_GRAD) {
        if ((st = expect_shape(&in[1], "orig_output", "orig_output", yf, err)) ||
            (st = expect_shape(&in[2], "grad", "grad", yf, err)))
            return st;
    }
    bool empty_in = known(x[0]) && known(x[1]) && known(x[2]) && known(x[3]) &&
                    (x[0] == 0 || x[1] == 0 || x[2] == 0 || x[3] == 0);
    /* AvgPoolGrad returns zeros for an empty input before it looks at grad (TF). */
    if (op == BF_POOL_AVG_GRAD && !empty_in && (st = expect_shape(&in[1], "grad", "grad", yf, err)))
        return st;
    (void)dy, (void)yo;

    /* The output: the pooled tensor, or the input's gradient. */
    int64_t od[4];
    if (op == BF_POOL_MAX || op == BF_POOL_AVG) memcpy(od, yf, sizeof(od));
    else from_nhwc(x, a.nchw, od);
    bf_port_set(&out[0], dt, 4, od);

    bool all = true;
    for (int i = 0; i < 4; i++) all = all && known(x[i]) && known(y[i]);
    for (int i = 0; i < node->desc->n_inputs; i++) all = all && bf_port_known(&in[i]);
    if (ishape >= 0) all = all && in[0].value;
    if (!all) return BF_OK;
    if (g) {
        *g = (bf_pool_geom){.n = x[0], .h = x[1], .w = x[2], .c = x[3],
                            .oh = y[1], .ow = y[2], .oc = y[3],
                            .kh = kh, .kw = kw, .kd = kd, .sh = sh, .sw = sw,
                            .pt = pads[0], .pb = pads[1], .pl = pads[2], .pr = pads[3],
                            .nchw = a.nchw};
    }
    if (complete) *complete = 1;
    return BF_OK;
}

/* ---- the CPU glue -------------------------------------------------------------------------- */

static const bf_pool_spec *spec_of(const bf_node *node) { return node->desc->impl; }

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The tensors a kernel reads and writes, in kernel order: operands a (x or dy), b (dy, for
 * MaxPoolGrad) and the output. Host shape vectors are not operands. */
typedef struct operands {
    const bf_tensor *a, *b;
} operands;

static operands operands_of(bf_pool_op op, const bf_tensor *const *in) {
    switch (op) {
    case BF_POOL_MAX_GRAD: return (operands){in[0], in[2]};
    case BF_POOL_AVG_GRAD: return (operands){in[1], NULL};
    default: return (operands){in[0], NULL};
    }
}

/* Bytes of float32 copies of a, b and the output, for float16/bfloat16 (0 otherwise). */
static bool half_plan(bf_dtype dt, int64_t na, int64_t nb, int64_t no, size_t *off_b,
                      size_t *off_o, size_t *total) {
    *off_b = *off_o = *total = 0;
    if (dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16) return true;
    size_t sa, sb, so;
    if (!bf_size_mul((size_t)na, 4, &sa) || !bf_size_mul((size_t)nb, 4, &sb) ||
        !bf_size_mul((size_t)no, 4, &so) || sa > SIZE_MAX / 4 || sb > SIZE_MAX / 4 ||
        so > SIZE_MAX / 4)
        return false;
    *off_b = align64(sa);
    *off_o = *off_b + align64(sb);
    *total = *off_o + align64(so);
    return true;
}

size_t bf_pool_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                  const bf_port_info *out, const bf_exec *ex) {
    (void)ex;
    const bf_pool_spec *spec = spec_of(node);
    bf_dtype dt = out[0].dtype;
    if (dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16) return 0;
    int ia = spec->op == BF_POOL_AVG_GRAD ? 1 : 0, ib = spec->op == BF_POOL_MAX_GRAD ? 2 : -1;
    size_t ob, oo, total;
    if (!half_plan(dt, bf_port_numel(&in[ia]), ib >= 0 ? bf_port_numel(&in[ib]) : 0,
                   bf_port_numel(&out[0]), &ob, &oo, &total))
        return SIZE_MAX; /* the session's limits then refuse it with a clear error */
    return total;
}

static void widen(bf_dtype dt, const uint16_t *src, float *dst, int64_t n) {
    if (dt == BF_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f16_to_f32(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_bf16_to_f32(src[i]);
    }
}

static void narrow(bf_dtype dt, const float *src, uint16_t *dst, int64_t n) {
    if (dt == BF_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f32_to_bf16(src[i]);
    }
}

/* The lowest finite value of a float dtype, where TF's max starts. */
static double lowest_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F16: return -65504.0;
    case BF_DTYPE_BF16: return (double)bf_bf16_to_f32(0xff7fu);
    case BF_DTYPE_F32: return -FLT_MAX;
    default: return -DBL_MAX;
    }
}

static void run_f32(bf_pool_op op, const bf_pool_geom *g, const float *a, const float *b,
                    float *o, float lowest, const bf_exec *ex) {
    switch (op) {
    case BF_POOL_MAX: bf_pool_max_f32(g, a, o, lowest, ex); break;
    case BF_POOL_MAX_GRAD: bf_pool_max_grad_f32(g, a, b, o, ex); break;
    case BF_POOL_AVG: bf_pool_avg_f32(g, a, o, ex); break;
    case BF_POOL_AVG_GRAD: bf_pool_avg_grad_f32(g, a, o, ex); break;
    }
}

static void run_f64(bf_pool_op op, const bf_pool_geom *g, const double *a, const double *b,
                    double *o, const bf_exec *ex) {
    switch (op) {
    case BF_POOL_MAX: bf_pool_max_f64(g, a, o, -DBL_MAX, ex); break;
    case BF_POOL_MAX_GRAD: bf_pool_max_grad_f64(g, a, b, o, ex); break;
    case BF_POOL_AVG: bf_pool_avg_f64(g, a, o, ex); break;
    case BF_POOL_AVG_GRAD: bf_pool_avg_grad_f64(g, a, o, ex); break;
    }
}

bf_status bf_pool_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err) {
    return bf_pool_infer(node, spec_of(node), in, out, NULL, NULL, err);
}

/* The geometry of a run, from its tensors (host shape vectors are host tensors). */
static bf_status run_geom(const bf_node *node, const bf_pool_spec *spec,
                          const bf_tensor *const *in, bf_pool_geom *g, bf_error *err) {
    bf_port_info info[3], oinfo;
    for (int k = 0; k < node->desc->n_inputs; k++) {
        bf_port_set(&info[k], in[k]->dtype, in[k]->rank, in[k]->dims);
        info[k].value = in[k]->device ? NULL : in[k];
    }
    int complete = 0;
    bf_status st = bf_pool_infer(node, spec, info, &oinfo, g, &complete, err);
    if (st) return st;
    if (!complete)
        return bf_err(err, BF_EINTERNAL, "internal", "%s: geometry not known at run time",
                      spec->label);
    return BF_OK;
}

bf_status bf_pool_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    const bf_pool_spec *spec = spec_of(node);
    bf_pool_geom g;
    bf_status st = run_geom(node, spec, in, &g, err);
    if (st) return st;
    bf_tensor *o = out[0];
    if (o->numel == 0) return BF_OK;
    operands p = operands_of(spec->op, in);
    switch (o->dtype) {
    case BF_DTYPE_F32:
        run_f32(spec->op, &g, p.a->data, p.b ? p.b->data : NULL, o->data, -FLT_MAX, ex);
        break;
    case BF_DTYPE_F64:
        run_f64(spec->op, &g, p.a->data, p.b ? p.b->data : NULL, o->data, ex);
        break;
    case BF_DTYPE_I32: bf_pool_max_i32(&g, p.a->data, o->data, ex); break;
    case BF_DTYPE_I64: bf_pool_max_i64(&g, p.a->data, o->data, ex); break;
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        size_t ob, oo, total;
        if (!half_plan(o->dtype, p.a->numel, p.b ? p.b->numel : 0, o->numel, &ob, &oo, &total))
            return bf_err(err, BF_ELIMIT, "too_large", "pooling workspace size overflows");
        char *ws = ex ? ex->workspace : NULL, *own = NULL;
        if (ws && ex->workspace_size < total)
            return bf_err(err, BF_EINTERNAL, "workspace", "planned workspace of %zu bytes is "
                          "smaller than the %zu this call needs", ex->workspace_size, total);
        if (!ws) {
            /* A caller driving the block directly (a test, a tool) may pass none. */
            if (!(own = bf_aligned_alloc(total ? total : 64, false)))
                return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory for %zu bytes of workspace",
                              total);
            ws = own;
        }
        float *fa = (float *)ws, *fb = (float *)(ws + ob), *fo = (float *)(ws + oo);
        widen(o->dtype, p.a->data, fa, p.a->numel);
        if (p.b) widen(o->dtype, p.b->data, fb, p.b->numel);
        run_f32(spec->op, &g, fa, p.b ? fb : NULL, fo, (float)lowest_of(o->dtype), ex);
        narrow(o->dtype, fo, o->data, o->numel);
        bf_aligned_free(own);
        break;
    }
    default:
        return bf_err(err, BF_EDTYPE, "bad_dtype", "no CPU kernel for dtype %s",
                      bf_dtype_name(o->dtype));
    }
    if (bf_exec_cancelled(ex)) return bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled");
    return BF_OK;
}

/* ---- the GPU glue (pool_geom.h: bf_pool_cuda) --------------------------------------------- */

/* Every float dtype runs on the GPU, whatever the geometry (our own kernels take what cuDNN
 * would compute differently); only MaxPool's integers stay on the CPU. */
const char *bf_pool_desc_gpu_unsupported(const bf_node *node, const bf_port_info *in) {
    const bf_pool_spec *spec = spec_of(node);
    switch (in[spec->op == BF_POOL_AVG_GRAD ? 1 : 0].dtype) {
    case BF_DTYPE_F32:
    case BF_DTYPE_F64:
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: return NULL;
    case BF_DTYPE_I32:
    case BF_DTYPE_I64: return "integer MaxPool on the CPU";
    default: return "dtype not known before running";
    }
}

size_t bf_pool_desc_workspace_cuda(const bf_node *node, const bf_port_info *in,
                                   const bf_port_info *out, const bf_exec *ex) {
    const bf_pool_spec *spec = spec_of(node);
    bf_port_info oinfo;
    bf_pool_geom g;
    int complete = 0;
    if (bf_pool_infer(node, spec, in, &oinfo, &g, &complete, NULL) != BF_OK || !complete)
        return 0; /* the run reports the problem */
    return bf_pool_cuda_workspace(spec->op, &g, out[0].dtype, ex);
}

bf_status bf_pool_desc_run_cuda(const bf_node *node, const bf_tensor *const *in,
                                bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    const bf_pool_spec *spec = spec_of(node);
    bf_pool_geom g;
    bf_status st = run_geom(node, spec, in, &g, err);
    if (st) return st;
    bf_tensor *o = out[0];
    if (o->numel == 0) return BF_OK;
    operands p = operands_of(spec->op, in);
    return bf_pool_cuda(spec->op, &g, o->dtype, p.a->data, p.b ? p.b->data : NULL, o->data,
                        lowest_of(o->dtype), ex, err);
}
