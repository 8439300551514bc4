/*
 * conv_geom.c - attribute tables, validation and shape inference shared by the six
 * convolution blocks (see conv_geom.h). Checks run in TensorFlow's order with TensorFlow's
 * words (tf-semantics.md §5, §9), each followed by what was expected and what was given.
 * Nothing is divided before its divisor has been checked, and every product of sizes is
 * overflow-checked, so hostile shapes (the CVEs of §7) get an error, never a crash.
 */
#include "conv_geom.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- attribute tables -------------------------------------------------------------------- */

static const char *const padding_values[] = {"SAME", "VALID", "EXPLICIT", NULL};
static const char *const format_values[] = {"NHWC", "NCHW", NULL};

#define BF_CONV_COMMON_ATTRS                                                                    \
    {"strides", BF_ATTR_INT_LIST, NULL, NULL, BF_ATTR_LENGTH(4),                                \
     "4 window strides in data_format order; N and C must be 1"},                              \
    {"padding", BF_ATTR_ENUM, NULL, padding_values, 0,                                          \
     "SAME (output = ceil(in/stride), odd pad pixel after), VALID (no padding) or EXPLICIT"},  \
    {"explicit_paddings", BF_ATTR_INT_LIST, "[]", NULL, BF_ATTR_LENGTH(8),                      \
     "EXPLICIT only: 8 values, (before, after) per dim in data_format order"},                 \
    {"data_format", BF_ATTR_ENUM, "\"NHWC\"", format_values, 0,                                 \
     "layout of the activations; filters are always [fh, fw, in, out]"},                       \
    {"dilations", BF_ATTR_INT_LIST, "[1,1,1,1]", NULL, BF_ATTR_LENGTH(4),                       \
     "4 filter dilation rates in data_format order; N and C must be 1"}

const bf_attr_desc bf_conv2d_attr_descs[BF_CONV2D_N_ATTRS] = {
    BF_CONV_COMMON_ATTRS,
    {"use_cudnn_on_gpu", BF_ATTR_BOOL, "true", NULL, 0,
     "on a GPU, use cuDNN (true) or blockflow's own kernels (false)"},
};

const bf_attr_desc bf_depthwise_attr_descs[BF_DEPTHWISE_N_ATTRS] = {BF_CONV_COMMON_ATTRS};

/* ---- attributes ---------------------------------------------------------------------------- */

/* Fill err with a BF_EATTR "bad_attr" error about attribute `attr`. Returns BF_EATTR. */
static bf_status attr_err(bf_error *err, const char *attr, const char *fmt, ...)
    BF_PRINTF(3, 4);
static bf_status attr_err(bf_error *err, const char *attr, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_verr(err, BF_EATTR, "bad_attr", fmt, ap);
    va_end(ap);
    bf_err_at(err, NULL, attr);
    return BF_EATTR;
}

/* "[1, 2, 2, 1]" of an int list, for messages. */
static const char *list_str(const bf_attr_value *v, char *buf, size_t size) {
    return bf_shape_str(v->n < BF_MAX_RANK ? v->n : BF_MAX_RANK, v->list, buf, size);
}

/*
 * The checks follow TF's kernel constructors (§5.1): lengths first, then the N/C entries, then
 * the H/W entries, so that a page gets the same first complaint TF would give. The attribute
 * parser has already checked kinds and enum values; the enum ranges are re-checked here because
 * tests may hand-build nodes. Indices depend on data_format, so it is read early.
 */
bf_status bf_conv_parse_attrs(const bf_node *node, const bf_conv_spec *spec, bf_conv_attrs *a,
                              bf_error *err) {
    const bf_attr_value *v = node->attrs;
    const bf_attr_value *st = &v[BF_CONV_ATTR_STRIDES], *dl = &v[BF_CONV_ATTR_DILATIONS];
    const bf_attr_value *pd = &v[BF_CONV_ATTR_PADDING], *ep = &v[BF_CONV_ATTR_EXPLICIT_PADDINGS];
    const bf_attr_value *df = &v[BF_CONV_ATTR_DATA_FORMAT];
    char buf[96];
    memset(a, 0, sizeof(*a));

    /* data_format first for the Conv2D ops, after strides for depthwise (TF's order). */
    if (!spec->depthwise && (!df->set || df->i < 0 || df->i > 1)) {
        bf_err(err, BF_EATTR, "bad_attr", "Invalid data format: expected \"NHWC\" or \"NCHW\"");
        bf_err_at(err, NULL, "data_format");
        return BF_EATTR;
    }
    if (!st->set || st->n != 4) {
        bf_err(err, BF_EATTR, "bad_attr",
               "Sliding window strides field must specify 4 dimensions, got %d",
               st->set ? st->n : 0);
        bf_err_at(err, NULL, "strides");
        return BF_EATTR;
    }
    if (!df->set || df->i < 0 || df->i > 1) {
        bf_err(err, BF_EATTR, "bad_attr", "Invalid data format: expected \"NHWC\" or \"NCHW\"");
        bf_err_at(err, NULL, "data_format");
        return BF_EATTR;
    }
    a->nchw = df->i == 1;
    const int ih = a->nchw ? 2 : 1, iw = a->nchw ? 3 : 2, ic = a->nchw ? 1 : 3;
    if (spec->depthwise && st->list[ih] != st->list[iw])
        return attr_err(err, "strides",
                        "Current implementation only supports equal length strides in the row "
                        "and column dimensions, got %" PRId64 " and %" PRId64,
                        st->list[ih], st->list[iw]);
    if (st->list[0] != 1 || st->list[ic] != 1) {
        bf_err(err, BF_EATTR, "bad_attr",
               "Current implementation does not yet support strides in the batch and depth "
               "dimensions: expected 1 for N and C, got strides %s",
               list_str(st, buf, sizeof(buf)));
        bf_err_at(err, NULL, "strides");
        return BF_EATTR;
    }
    if (st->list[ih] <= 0 || st->list[iw] <= 0)
        return attr_err(err, "strides",
                        "Row and column strides should be larger than 0, got %" PRId64
                        " and %" PRId64,
                        st->list[ih], st->list[iw]);
    if (!dl->set || dl->n != 4) {
        bf_err(err, BF_EATTR, "bad_attr",
               "Sliding window dilations field must specify 4 dimensions, got %d",
               dl->set ? dl->n : 0);
        bf_err_at(err, NULL, "dilations");
        return BF_EATTR;
    }
    if (dl->list[0] != 1 || dl->list[ic] != 1) {
        bf_err(err, BF_EATTR, "bad_attr",
               "Current implementation does not yet support dilations in the batch and depth "
               "dimensions: expected 1 for N and C, got dilations %s",
               list_str(dl, buf, sizeof(buf)));
        bf_err_at(err, NULL, "dilations");
        return BF_EATTR;
    }
    if (dl->list[ih] <= 0 || dl->list[iw] <= 0)
        return attr_err(err, "dilations",
                        "Dilated rates should be larger than 0, got %" PRId64 " and %" PRId64,
                        dl->list[ih], dl->list[iw]);
    /* Strides and dilations feed int arithmetic in kernels (and cuDNN): keep them in int32. */
    if (st->list[ih] > INT32_MAX || st->list[iw] > INT32_MAX)
        return attr_err(err, "strides", "strides must be at most %d, got %" PRId64,
                        INT32_MAX, BF_MAX(st->list[ih], st->list[iw]));
    if (dl->list[ih] > INT32_MAX || dl->list[iw] > INT32_MAX)
        return attr_err(err, "dilations", "dilations must be at most %d, got %" PRId64,
                        INT32_MAX, BF_MAX(dl->list[ih], dl->list[iw]));

    /* Padding (TF's CheckValidPadding): an EXPLICIT list is 8 non-negative values in
     * data_format order, zero on N and C; any other padding takes no list at all. */
    if (!pd->set || pd->i < 0 || pd->i > 2) {
        bf_err(err, BF_EATTR, "bad_attr",
               "padding is not an allowed padding type: expected SAME, VALID or EXPLICIT");
        bf_err_at(err, NULL, "padding");
        return BF_EATTR;
    }
    a->padding = (bf_conv_padding)pd->i;
    int n_pads = ep->set ? ep->n : 0;
    if (a->padding == BF_CONV_PADDING_EXPLICIT) {
        if (n_pads != 8)
            return attr_err(err, "explicit_paddings",
                            "explicit_paddings attribute must contain 8 values, but got: %d",
                            n_pads);
        for (int i = 0; i < 8; i++) {
            if (ep->list[i] < 0)
                return attr_err(err, "explicit_paddings",
                                "All elements of explicit_paddings must be nonnegative, got "
                                "%" PRId64 " at index %d",
                                ep->list[i], i);
            if (ep->list[i] > INT32_MAX)
                return attr_err(err, "explicit_paddings",
                                "explicit padding too large: at most %d, got %" PRId64,
                                INT32_MAX, ep->list[i]);
        }
        if (ep->list[0] || ep->list[1] || ep->list[2 * ic] || ep->list[2 * ic + 1]) {
            bf_err(err, BF_EATTR, "bad_attr",
                   "Nonzero explicit padding in the batch or depth dimensions is not supported: "
                   "expected 0 for N and C, got %s",
                   list_str(ep, buf, sizeof(buf)));
            bf_err_at(err, NULL, "explicit_paddings");
            return BF_EATTR;
        }
        memcpy(a->explicit_pads, ep->list, sizeof(a->explicit_pads));
    } else if (n_pads != 0) {
        return attr_err(err, "explicit_paddings",
                        "explicit_paddings attribute must be empty if the padding attribute is "
                        "not EXPLICIT, got %d values",
                        n_pads);
    }
    memcpy(a->strides, st->list, sizeof(a->strides));
    memcpy(a->dilations, dl->list, sizeof(a->dilations));
    a->use_cudnn = 0;
    if (!spec->depthwise)
        a->use_cudnn = v[BF_CONV_ATTR_USE_CUDNN].set ? v[BF_CONV_ATTR_USE_CUDNN].b : 1;
    return BF_OK;
}

/* ---- one spatial dimension ------------------------------------------------------------- */

bf_status bf_conv_out_size(const char *dim_name, int64_t in, int64_t f, int64_t stride,
                           int64_t dil, bf_conv_padding padding, int64_t pad_before_in,
                           int64_t pad_after_in, int64_t *out, int64_t *pad_before,
                           int64_t *pad_after, bf_error *err) {
    *out = -1;
    *pad_before = padding == BF_CONV_PADDING_EXPLICIT ? pad_before_in : 0;
    *pad_after = padding == BF_CONV_PADDING_EXPLICIT ? pad_after_in : 0;
    if (stride <= 0)
        return bf_err(err, BF_ESHAPE, "bad_shape", "Stride must be > 0, but got %" PRId64, stride);
    if (dil < 1)
        return bf_err(err, BF_ESHAPE, "bad_shape", "Dilation rate must be >= 1, but got %" PRId64,
                      dil);
    if (f <= 0)
        return bf_err(err, BF_ESHAPE, "bad_shape",
                      "filter %s must be > 0, got %" PRId64, dim_name, f);
    /* eff = (f - 1) * dil + 1, the span of the dilated filter; may overflow for hostile attrs. */
    int64_t eff;
    if (!bf_i64_mul(f - 1, dil, &eff) || !bf_i64_add(eff, 1, &eff))
        return bf_err(err, BF_ELIMIT, "too_large",
                      "effective filter size overflows: filter %s %" PRId64 ", dilation %" PRId64,
                      dim_name, f, dil);
    if (in < 0) return BF_OK; /* unknown: output unknown too */
    /* All terms are below 2^62 here (int32-bounded stride/pads, checked eff and in). */
    int64_t total = in, need;
    switch (padding) {
    case BF_CONV_PADDING_VALID:
        *out = (in - eff + stride) / stride;
        break;
    case BF_CONV_PADDING_SAME:
        *out = (in + stride - 1) / stride;
        if (!bf_i64_mul(*out - 1, stride, &need) || !bf_i64_add(need, eff - in, &need))
            return bf_err(err, BF_ELIMIT, "too_large", "SAME padding of %s overflows", dim_name);
        need = BF_MAX(need, 0);
        *pad_before = need / 2;
        *pad_after = need - need / 2;
        break;
    case BF_CONV_PADDING_EXPLICIT:
        total = in + pad_before_in + pad_after_in;
        *out = (total - eff + stride) / stride;
        break;
    }
    if (*out < 0)
        return bf_err(err, BF_ESHAPE, "bad_shape",
                      "Computed output size would be negative: %" PRId64 " [input_size: %" PRId64
                      ", effective_filter_size: %" PRId64 ", stride: %" PRId64 "] (%s)",
                      *out, total, eff, stride, dim_name);
    return BF_OK;
}

/* ---- inference --------------------------------------------------------------------------- */

/*
 * Inside the inference everything is logical NHWC (activations) or HWIO (filters); only the
 * ports and the output are in data_format order. These convert a 4-vector of dims.
 */
static void to_nhwc(const int64_t *d, int nchw, int64_t *o) {
    if (nchw) {
        o[0] = d[0], o[1] = d[2], o[2] = d[3], o[3] = d[1];
    } else {
        memcpy(o, d, 4 * sizeof(int64_t));
    }
}
static void from_nhwc(const int64_t *d, int nchw, int64_t *o) {
    if (nchw) {
        o[0] = d[0], o[1] = d[3], o[2] = d[1], o[3] = d[2];
    } else {
        memcpy(o, d, 4 * sizeof(int64_t));
    }
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

/* A dim is known when >= 0; -1 marks "not known yet" at check time. */
static bool known(int64_t d) { return d >= 0; }

/* Check a 4-D activation/filter port: rank 4 when known. dims -> o (all -1 when unknown). */
static bf_status rank4(const bf_port_info *p, const char *port, const char *label, int nchw,
                       int64_t *o, bf_error *err) {
    for (int i = 0; i < 4; i++) o[i] = -1;
    if (p->rank < 0) return BF_OK;
    if (p->rank != 4) {
        char buf[96];
        return shape_err(err, port, "bad_shape", "%s%s%s must be 4-dimensional, got shape %s",
                         label ? label : "", label ? ": " : "", port,
                         bf_shape_str(p->rank, p->dims, buf, sizeof(buf)));
    }
    if (nchw) {
        to_nhwc(p->dims, 1, o);
    } else {
        memcpy(o, p->dims, sizeof(int64_t) * 4);
    }
    return BF_OK;
}

bf_status bf_conv_infer(const bf_node *node, const bf_conv_spec *spec, const bf_port_info *in,
                        bf_port_info *out, bf_conv_geom *g, int *complete, bf_error *err) {
    if (complete) *complete = 0;
    bf_conv_attrs a;
    bf_status st = bf_conv_parse_attrs(node, spec, &a, err);
    if (st) return st;
    const bf_conv_op op = spec->op;
    const char *lab = op == BF_CONV_FWD ? NULL : spec->label;

    /*
     * Which port plays which role. x, w, dy are the three tensors of the convolution; one of
     * them is given as a host shape vector (filter_sizes / input_sizes) by the backprop ops.
     * -1 means "this op has no such port".
     */
    const int ix = op == BF_CONV_BWD_INPUT ? -1 : 0;     /* input x */
    const int iw = op == BF_CONV_BWD_FILTER ? -1 : 1;    /* filter w */
    const int idy = op == BF_CONV_FWD ? -1 : 2;          /* out_backprop dy */
    const int isz = op == BF_CONV_FWD ? -1 : (op == BF_CONV_BWD_FILTER ? 1 : 0);
    const char *sz_name = op == BF_CONV_BWD_FILTER ? "filter_sizes" : "input_sizes";
    const char *x_port = ix >= 0 ? "input" : "input_sizes";
    const char *w_port = iw >= 0 ? "filter" : "filter_sizes";

    /* dtypes: every T port agrees; the shape vector is int32. */
    bf_dtype dt = BF_DTYPE_INVALID;
    const char *dt_port = NULL;
    for (int i = 0; i < node->desc->n_inputs; i++) {
        const char *pname = node->desc->inputs[i].name;
        if (i == isz) {
            if (in[i].dtype != BF_DTYPE_INVALID && in[i].dtype != BF_DTYPE_I32) {
                bf_err(err, BF_EDTYPE, "dtype_mismatch", "%s must be int32, got %s", pname,
                       bf_dtype_name(in[i].dtype));
                bf_err_at(err, pname, NULL);
                return BF_EDTYPE;
            }
            continue;
        }
        if (in[i].dtype == BF_DTYPE_INVALID) continue;
        if (!(node->desc->inputs[i].dtypes & (1u << in[i].dtype))) {
            bf_err(err, BF_EDTYPE, "bad_dtype",
                   "%s has dtype %s; expected float16, bfloat16, float32 or float64", pname,
                   bf_dtype_name(in[i].dtype));
            bf_err_at(err, pname, NULL);
            return BF_EDTYPE;
        }
        if (dt != BF_DTYPE_INVALID && in[i].dtype != dt) {
            bf_err(err, BF_EDTYPE, "dtype_mismatch", "%s has dtype %s but %s has dtype %s", pname,
                   bf_dtype_name(in[i].dtype), dt_port, bf_dtype_name(dt));
            bf_err_at(err, pname, NULL);
            return BF_EDTYPE;
        }
        dt = in[i].dtype, dt_port = pname;
    }

    int64_t x[4], w[4], dy[4] = {-1, -1, -1, -1}; /* logical NHWC / HWIO, -1 unknown */
    /* Conv2DBackpropInput checks out_backprop's rank before anything else (§5.3). */
    if (idy >= 0 && op == BF_CONV_BWD_INPUT &&
        (st = rank4(&in[idy], "out_backprop", NULL, a.nchw, dy, err)))
        return st;

    /* The shape vector: 1-D, 4 values (or 2 for input_sizes), non-negative. */
    int64_t sz[4] = {-1, -1, -1, -1};
    int sz_n = -1; /* number of values, when known */
    if (isz >= 0) {
        const bf_port_info *p = &in[isz];
        const bf_tensor *v = p->value;
        int rank = v ? v->rank : p->rank;
        const char *tf_label = op == BF_CONV_BWD_FILTER ? "Conv2DBackpropFilter"
                                                        : "Conv2DBackpropInput";
        if (rank >= 0 && rank != 1)
            return shape_err(err, sz_name, "bad_shape", "%s: %s input must be 1-dim, not %d",
                             tf_label, sz_name, rank);
        int64_t len = v ? v->dims[0] : (rank == 1 ? p->dims[0] : -1);
        if (len >= 0 && len != 4 && !(op == BF_CONV_BWD_INPUT && len == 2)) {
            if (op == BF_CONV_BWD_INPUT)
                return shape_err(err, sz_name, "bad_shape",
                                 "%s requires input_sizes to contain 4 values or 2 values, but "
                                 "got: %" PRId64,
                                 tf_label, len);
            return shape_err(err, sz_name, "bad_shape",
                             "%s: filter must be 4-dimensional: filter_sizes must have 4 values "
                             "[fh, fw, in, out], got %" PRId64,
                             tf_label, len);
        }
        sz_n = (int)len;
        if (v) {
            for (int i = 0; i < len; i++) {
                int64_t e = (int64_t)bf_tensor_get_f64(v, i);
                if (e < 0)
                    return shape_err(err, sz_name, "bad_shape",
                                     "Dimension %d of %s must be >= 0, got %" PRId64, i, sz_name,
                                     e);
                sz[i] = e;
            }
        }
    }

    /*
     * The three operands in logical order, TF's rank checks in TF's order. An operand given
     * by a shape vector takes its dims from the vector's value (unknown until it is known).
     */
    if (ix >= 0) {
        if ((st = rank4(&in[ix], "input", lab, a.nchw, x, err))) return st;
    } else {
        for (int i = 0; i < 4; i++) x[i] = -1;
    }
    if (iw >= 0) {
        if ((st = rank4(&in[iw], "filter", lab, 0, w, err))) return st;
    } else {
        memcpy(w, sz, sizeof(w)); /* filter_sizes is always [fh, fw, in, out] */
    }
    if (idy >= 0 && op != BF_CONV_BWD_INPUT &&
        (st = rank4(&in[idy], "out_backprop", lab, a.nchw, dy, err)))
        return st;
    if (op == BF_CONV_BWD_INPUT) {
        if (sz_n == 4) {
            to_nhwc(sz, a.nchw, x);
        } else if (sz_n == 2) {
            /* [H, W]: N from out_backprop, C from the filter's dim 2 (§4). */
            x[0] = dy[0], x[1] = sz[0], x[2] = sz[1], x[3] = w[2];
        }
    }

    /*
     * Depth rules (§5.2-§5.5). Each divisor is checked > 0 before it divides (CVE-2021-29526,
     * -29524, -37675). For Conv2D* the group count is in_c / filter_in_c and the out depth must
     * split evenly into groups; the same rules hold for the gradients, which is what makes
     * grouped gradients well defined (TF's CPU kernels refuse them; its GPU kernels agree).
     */
    int64_t out_c = -1;
    if (!spec->depthwise) {
        if (known(w[2]) && w[2] <= 0) {
            if (op == BF_CONV_FWD)
                return shape_err(err, w_port, "bad_shape",
                                 "filter depth must be stricly positive, got %" PRId64, w[2]);
            return shape_err(err, w_port, "bad_shape",
                             "%s: filter depth must be strictly greater than zero, got %" PRId64,
                             lab, w[2]);
        }
        if (known(x[3]) && known(w[2]) && x[3] % w[2] != 0)
            return shape_err(err, w_port, "shape_mismatch",
                             "%s%sinput depth must be evenly divisible by filter depth: "
                             "%" PRId64 " vs %" PRId64,
                             lab ? lab : "", lab ? ": " : "", x[3], w[2]);
        if (op == BF_CONV_FWD && (w[0] == 0 || w[1] == 0 || w[3] == 0)) {
            char buf[96];
            return shape_err(err, "filter", "bad_shape",
                             "filter must not have zero elements (i.e. all dimensions must be "
                             "non-zero), got filter shape %s",
                             bf_shape_str(4, w, buf, sizeof(buf)));
        }
        if (known(x[3]) && known(w[2]) && known(w[3])) {
            int64_t groups = x[3] / w[2];
            if (groups <= 0)
                return shape_err(err, x_port, "bad_shape",
                                 "number of groups must be stricly positive, got %" PRId64
                                 " (input depth %" PRId64 ", filter depth %" PRId64 ")",
                                 groups, x[3], w[2]);
            if (w[3] % groups != 0 || (op == BF_CONV_FWD && w[3] < groups))
                return shape_err(err, w_port, "shape_mismatch",
                                 "output depth must be evenly divisible by number of groups: "
                                 "%" PRId64 " vs %" PRId64,
                                 w[3], groups);
        }
        out_c = w[3];
    } else {
        if (known(x[3]) && known(w[2]) && x[3] != w[2]) {
            if (op == BF_CONV_FWD)
                return shape_err(err, "filter", "shape_mismatch",
                                 "input and filter must have the same depth: %" PRId64
                                 " vs %" PRId64,
                                 x[3], w[2]);
            return shape_err(err, w_port, "shape_mismatch",
                             "%s: input and filter must have the same in_depth: %" PRId64
                             " vs %" PRId64,
                             lab, x[3], w[2]);
        }
        if (known(w[2]) && known(w[3]) && !bf_i64_mul(w[2], w[3], &out_c))
            return shape_err(err, w_port, "too_large",
                             "Output depth too large: %" PRId64 " * %" PRId64, w[2], w[3]);
    }
    if (op != BF_CONV_FWD) {
        if (known(x[0]) && known(dy[0]) && x[0] != dy[0])
            return shape_err(err, "out_backprop", "shape_mismatch",
                             "%s: input and out_backprop must have the same batch size. Input "
                             "batch: %" PRId64 ", outbackprop batch: %" PRId64,
                             lab, x[0], dy[0]);
        if (known(out_c) && known(dy[3]) && out_c != dy[3]) {
            if (spec->depthwise)
                return shape_err(err, "out_backprop", "shape_mismatch",
                                 "%s: depth_multiplier * in_depth not equal to out_depth: "
                                 "%" PRId64 " vs %" PRId64,
                                 lab, out_c, dy[3]);
            return shape_err(err, "out_backprop", "shape_mismatch",
                             "%s: filter and out_backprop must have the same out_depth: "
                             "%" PRId64 " vs %" PRId64,
                             lab, out_c, dy[3]);
        }
    }

    /*
     * Spatial sizes (§3), then the backprop agreement with out_backprop (§3 bookkeeping): the
     * gradient ops recompute the forward output size and require out_backprop to have it,
     * which is what keeps every kernel index inside its buffer (the CVE-2021-29540 class).
     */
    const int sh = a.nchw ? 2 : 1, sw = a.nchw ? 3 : 2;
    int64_t y[4] = {x[0], -1, -1, out_c}, pads[4] = {0, 0, 0, 0};
    const char *dim_names[2] = {"rows", "cols"};
    for (int d = 0; d < 2; d++) {
        int fi = d == 0 ? sh : sw;
        if (!known(w[d])) continue;
        st = bf_conv_out_size(dim_names[d], x[1 + d], w[d], a.strides[fi], a.dilations[fi],
                              a.padding, a.explicit_pads[2 * fi], a.explicit_pads[2 * fi + 1],
                              &y[1 + d], &pads[2 * d], &pads[2 * d + 1], err);
        if (st) {
            bf_err_at(err, w[d] <= 0 ? w_port : x_port, NULL);
            return st;
        }
        if (op != BF_CONV_FWD && known(y[1 + d]) && known(dy[1 + d]) && y[1 + d] != dy[1 + d])
            return shape_err(err, "out_backprop", "shape_mismatch",
                             "%s: Size of out_backprop doesn't match computed: actual = "
                             "%" PRId64 ", computed = %" PRId64 " spatial_dim: %d input: "
                             "%" PRId64 " filter: %" PRId64 " output: %" PRId64 " stride: "
                             "%" PRId64 " dilation: %" PRId64,
                             lab, dy[1 + d], y[1 + d], fi, x[1 + d], w[d], dy[1 + d],
                             a.strides[fi], a.dilations[fi]);
    }

    /*
     * The output port, in data_format order. Its element count is checked against the limit
     * here, before anyone allocates it: input_sizes / filter_sizes are user data.
     */
    int64_t o[4];
    const char *size_port;
    if (op == BF_CONV_FWD) {
        from_nhwc(y, a.nchw, o), size_port = "input";
    } else if (op == BF_CONV_BWD_FILTER) {
        memcpy(o, w, sizeof(o)), size_port = "filter_sizes";
    } else {
        from_nhwc(x, a.nchw, o), size_port = "input_sizes";
    }
    bf_port_set(&out[0], dt, 4, o);
    bool all = true;
    for (int i = 0; i < 4; i++) all = all && known(o[i]);
    if (all) {
        int64_t numel;
        size_t nbytes;
        bf_status s2 = bf_shape_size(dt != BF_DTYPE_INVALID ? dt : BF_DTYPE_F16, 4, o,
                                     node->max_elements, &numel, &nbytes, err);
        if (s2) {
            bf_err_at(err, size_port, NULL);
            return s2;
        }
    }

    /* Everything known: the geometry the kernels run (depthwise as groups == in_c). */
    bool full = all && dt != BF_DTYPE_INVALID;
    for (int i = 0; i < 4; i++) full = full && known(x[i]) && known(w[i]) && known(y[i]);
    if (!full) return BF_OK;
    if (g) {
        memset(g, 0, sizeof(*g));
        g->n = x[0], g->in_h = x[1], g->in_w = x[2], g->in_c = x[3];
        g->k_h = w[0], g->k_w = w[1];
        g->k_in_c = spec->depthwise ? 1 : w[2];
        g->out_c = out_c;
        g->groups = spec->depthwise ? x[3] : x[3] / w[2];
        g->out_h = y[1], g->out_w = y[2];
        g->stride_h = a.strides[sh], g->stride_w = a.strides[sw];
        g->dil_h = a.dilations[sh], g->dil_w = a.dilations[sw];
        g->pad_top = pads[0], g->pad_bottom = pads[1];
        g->pad_left = pads[2], g->pad_right = pads[3];
        g->nchw = a.nchw;
    }
    if (complete) *complete = 1;
    return BF_OK;
}

bf_status bf_conv_geom_from_tensors(const bf_node *node, const bf_conv_spec *spec,
                                    const bf_tensor *const *in, bf_conv_geom *g,
                                    bf_error *err) {
    bf_port_info info[3], out;
    int n = node->desc->n_inputs;
    for (int i = 0; i < n; i++) {
        bf_port_set(&info[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        if (node->desc->inputs[i].flags & BF_PORT_HOST) info[i].value = in[i];
    }
    int complete = 0;
    bf_status st = bf_conv_infer(node, spec, info, &out, g, &complete, err);
    if (st) return st;
    if (!complete)
        return bf_err(err, BF_EINTERNAL, "internal",
                      "convolution geometry incomplete at run time");
    return BF_OK;
}
