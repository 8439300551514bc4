/*
 * test_conv_errors.c - one case per validation rule of the convolution family (tf-semantics
 * §4, §5.1-§5.5) and one per CVE input of §7, each asserting the status, err.code, the port or
 * attribute named, and a keyword of TF's message. Also the degenerate inputs that must give
 * an empty or zero-filled result rather than an error, and inference with partial knowledge.
 */
#include "conv_harness.h"

#include <stdlib.h>
#include <string.h>

/* An input: F = float32 tensor of shape d[0..rank), D = float64, V = int32 vector of values. */
enum { F = 0, D, V, I };
typedef struct tspec {
    int kind;
    int rank;
    int64_t d[5];
} tspec;
#define F4(a, b, c, e) {F, 4, {a, b, c, e}}
#define V4(a, b, c, e) {V, 4, {a, b, c, e}}

typedef struct err_case {
    const char *name;
    const char *op;
    const char *attrs;
    tspec in[3];
    bf_status status;
    const char *code; /* NULL: not checked (errors from the generic attribute parser) */
    const char *port; /* "" when none */
    const char *attr; /* "" when none */
    const char *keyword;
} err_case;

#define SAME "{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}"
#define VALID "{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}"
#define C2 "Conv2D"
#define BPI "Conv2DBackpropInput"
#define BPF "Conv2DBackpropFilter"
#define DW "DepthwiseConv2dNative"
#define DWI "DepthwiseConv2dNativeBackpropInput"
#define DWF "DepthwiseConv2dNativeBackpropFilter"
#define X33 F4(1, 3, 3, 1)
#define W22 F4(2, 2, 1, 1)

static const err_case cases[] = {
    /* ---- attributes (§5.1, §5.5) ---- */
    {"strides_len", C2, "{\"strides\":[1,1,1],\"padding\":\"SAME\"}", {X33, W22}, BF_EATTR,
     "bad_attr", "", "strides", "4 dimensions"},
    {"strides_batch", C2, "{\"strides\":[2,1,1,1],\"padding\":\"SAME\"}", {X33, W22}, BF_EATTR,
     "bad_attr", "", "strides", "batch and depth"},
    {"strides_depth_nchw", C2,
     "{\"strides\":[1,2,1,1],\"padding\":\"SAME\",\"data_format\":\"NCHW\"}",
     {F4(1, 1, 3, 3), W22}, BF_EATTR, "bad_attr", "", "strides", "batch and depth"},
    {"strides_zero", C2, "{\"strides\":[1,0,1,1],\"padding\":\"SAME\"}", {X33, W22}, BF_EATTR,
     "bad_attr", "", "strides", "larger than 0"},
    {"strides_negative", BPF, "{\"strides\":[1,1,-2,1],\"padding\":\"SAME\"}",
     {X33, V4(2, 2, 1, 1), X33}, BF_EATTR, "bad_attr", "", "strides", "larger than 0"},
    {"dilations_len", C2, "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"dilations\":[1,1]}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "dilations", "4 dimensions"},
    {"dilations_depth", C2,
     "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"dilations\":[1,1,1,2]}", {X33, W22},
     BF_EATTR, "bad_attr", "", "dilations", "batch and depth"},
    {"dilations_zero", BPI, "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"dilations\":[1,1,0,1]}",
     {V4(1, 3, 3, 1), W22, X33}, BF_EATTR, "bad_attr", "", "dilations", "larger than 0"},
    {"explicit_count", C2,
     "{\"strides\":[1,1,1,1],\"padding\":\"EXPLICIT\",\"explicit_paddings\":[0,0,1,1,1,1]}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "explicit_paddings", "8 values"},
    {"explicit_negative", C2,
     "{\"strides\":[1,1,1,1],\"padding\":\"EXPLICIT\",\"explicit_paddings\":[0,0,-1,1,1,1,0,0]}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "explicit_paddings", "nonnegative"},
    {"explicit_batch", C2,
     "{\"strides\":[1,1,1,1],\"padding\":\"EXPLICIT\",\"explicit_paddings\":[1,0,1,1,1,1,0,0]}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "explicit_paddings", "batch or depth"},
    {"explicit_not_empty", C2,
     "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"explicit_paddings\":[0,0,1,1,1,1,0,0]}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "explicit_paddings", "must be empty"},
    {"data_format_unknown", C2, "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"data_format\":"
     "\"NCDHW\"}", {X33, W22}, BF_EATTR, NULL, "", "data_format", ""},
    {"padding_unknown", C2, "{\"strides\":[1,1,1,1],\"padding\":\"FULL\"}", {X33, W22},
     BF_EATTR, NULL, "", "padding", ""},
    {"strides_missing", C2, "{\"padding\":\"SAME\"}", {X33, W22}, BF_EATTR, NULL, "", "strides",
     ""},
    {"depthwise_unequal_strides", DW, "{\"strides\":[1,2,1,1],\"padding\":\"SAME\"}",
     {X33, W22}, BF_EATTR, "bad_attr", "", "strides", "equal length strides"},
    {"depthwise_no_cudnn_attr", DW,
     "{\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"use_cudnn_on_gpu\":true}", {X33, W22},
     BF_EATTR, NULL, "", "use_cudnn_on_gpu", ""},

    /* ---- Conv2D shapes (§5.2) ---- */
    {"input_rank", C2, SAME, {{F, 3, {3, 3, 1}}, W22}, BF_ESHAPE, "bad_shape", "input", "",
     "4-dimensional"},
    {"filter_rank", C2, SAME, {X33, {F, 3, {2, 2, 1}}}, BF_ESHAPE, "bad_shape", "filter", "",
     "4-dimensional"},
    {"CVE-2021-29526_filter_depth_zero", C2, SAME, {F4(0, 0, 0, 0), F4(0, 0, 0, 0)}, BF_ESHAPE,
     "bad_shape", "filter", "", "stricly positive"},
    {"depth_not_divisible", C2, SAME, {F4(1, 3, 3, 3), F4(1, 1, 2, 4)}, BF_ESHAPE,
     "shape_mismatch", "filter", "", "evenly divisible by filter depth"},
    {"CVE-2021-41209_zero_filter", C2, SAME, {F4(1, 1, 1, 1), F4(1, 0, 1, 1)}, BF_ESHAPE,
     "bad_shape", "filter", "", "zero elements"},
    {"zero_out_channels", C2, SAME, {X33, F4(2, 2, 1, 0)}, BF_ESHAPE, "bad_shape", "filter", "",
     "zero elements"},
    {"groups_not_dividing_out", C2, SAME, {F4(1, 3, 3, 4), F4(1, 1, 2, 3)}, BF_ESHAPE,
     "shape_mismatch", "filter", "", "number of groups"},
    {"filter_deeper_than_input", C2, SAME, {F4(1, 3, 3, 1), F4(1, 1, 2, 2)}, BF_ESHAPE,
     "shape_mismatch", "filter", "", "evenly divisible"},
    {"negative_output", C2, "{\"strides\":[1,2,2,1],\"padding\":\"VALID\"}",
     {F4(1, 1, 1, 1), F4(5, 1, 1, 1)}, BF_ESHAPE, "bad_shape", "input", "", "negative"},
    {"dtype_mismatch", C2, SAME, {X33, {D, 4, {2, 2, 1, 1}}}, BF_EDTYPE, "dtype_mismatch",
     "filter", "", "float64"},
    {"dtype_int32_input", C2, SAME, {{I, 4, {1, 3, 3, 1}}, {I, 4, {2, 2, 1, 1}}}, BF_EDTYPE,
     "bad_dtype", "input", "", "int32"},

    /* ---- Conv2DBackpropInput (§4, §5.3) ---- */
    {"bpi_scalar_out_backprop", BPI, VALID, {{V, 2, {65534, 65534}}, W22, {F, 0, {0}}},
     BF_ESHAPE, "bad_shape", "out_backprop", "", "4-dimensional"},
    {"bpi_input_sizes_float", BPI, VALID, {{F, 1, {4}}, W22, F4(1, 2, 2, 1)}, BF_EDTYPE,
     "dtype_mismatch", "input_sizes", "", "int32"},
    {"bpi_input_sizes_rank", BPI, VALID, {{I, 2, {2, 2}}, W22, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "input_sizes", "", "1-dim, not 2"},
    {"bpi_input_sizes_len", BPI, VALID, {{V, 3, {1, 3, 3}}, W22, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "input_sizes", "", "4 values or 2 values"},
    {"bpi_input_sizes_negative", BPI, VALID, {V4(1, -3, 3, 1), W22, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "input_sizes", "", ">= 0"},
    {"bpi_input_sizes_2_negative", BPI, VALID, {{V, 2, {3, -3}}, W22, F4(1, 2, 2, 1)},
     BF_ESHAPE, "bad_shape", "input_sizes", "", ">= 0"},
    {"bpi_filter_rank", BPI, VALID, {V4(1, 3, 3, 1), {F, 2, {2, 2}}, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "filter", "", "4-dimensional"},
    {"bpi_batch", BPI, VALID, {V4(2, 3, 3, 1), W22, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "same batch size"},
    {"bpi_filter_depth_zero", BPI, VALID, {V4(1, 3, 3, 0), F4(2, 2, 0, 1), F4(1, 2, 2, 1)},
     BF_ESHAPE, "bad_shape", "filter", "", "strictly greater than zero"},
    {"bpi_depth_not_divisible", BPI, VALID, {V4(1, 3, 3, 3), F4(2, 2, 2, 1), F4(1, 2, 2, 1)},
     BF_ESHAPE, "shape_mismatch", "filter", "", "evenly divisible"},
    {"bpi_out_depth", BPI, VALID, {V4(1, 3, 3, 1), F4(2, 2, 1, 2), F4(1, 2, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "same out_depth"},
    {"bpi_spatial", BPI, VALID, {V4(1, 3, 3, 1), W22, F4(1, 3, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "doesn't match computed"},
    {"CVE-2021-29525_empty_filter", BPI, SAME,
     {V4(52, 1, 1, 5), F4(0, 1, 5, 0), F4(52, 1, 1, 0)}, BF_ESHAPE, "bad_shape", "filter", "",
     "filter rows must be > 0"},

    /* ---- Conv2DBackpropFilter (§4, §5.4) ---- */
    {"bpf_filter_sizes_rank", BPF, VALID, {X33, {V, 0, {0}}, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "filter_sizes", "", "1-dim"},
    {"bpf_filter_sizes_len", BPF, VALID, {X33, {V, 3, {2, 2, 1}}, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "filter_sizes", "", "4 values"},
    {"bpf_filter_sizes_negative", BPF, VALID, {X33, V4(2, 2, -1, 1), F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "filter_sizes", "", "Dimension 2 of filter_sizes must be >= 0"},
    {"bpf_input_rank", BPF, VALID, {{F, 5, {1, 1, 3, 3, 1}}, V4(2, 2, 1, 1), F4(1, 2, 2, 1)},
     BF_ESHAPE, "bad_shape", "input", "", "Conv2DBackpropFilter: input must be 4-dimensional"},
    {"bpf_out_backprop_rank", BPF, VALID, {X33, V4(2, 2, 1, 1), {F, 3, {2, 2, 1}}}, BF_ESHAPE,
     "bad_shape", "out_backprop", "", "4-dimensional"},
    {"bpf_batch", BPF, VALID, {X33, V4(2, 2, 1, 1), F4(2, 2, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "same batch size"},
    {"bpf_out_depth", BPF, VALID, {X33, V4(2, 2, 1, 1), F4(1, 2, 2, 3)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "same out_depth"},
    {"bpf_spatial", BPF, "{\"strides\":[1,2,2,1],\"padding\":\"SAME\"}",
     {X33, V4(2, 2, 1, 1), F4(1, 3, 3, 1)}, BF_ESHAPE, "shape_mismatch", "out_backprop", "",
     "actual = 3, computed = 2"},
    {"CVE-2021-29524_zero_depth_input", BPF, "{\"strides\":[1,66,18,1],\"padding\":\"SAME\"}",
     {F4(0, 0, 1, 0), V4(1, 1, 1, 1), F4(0, 0, 1, 1)}, BF_ESHAPE, "bad_shape", "input", "",
     "number of groups"},
    {"CVE-2021-29538_all_zero", BPF, SAME, {F4(0, 0, 0, 0), V4(0, 0, 0, 0), F4(0, 0, 0, 0)},
     BF_ESHAPE, "bad_shape", "filter_sizes", "", "strictly greater than zero"},
    {"CVE-2021-29540_filter_sizes_too_small", BPF, "{\"strides\":[1,66,49,1],\"padding\":"
     "\"VALID\"}", {F4(1, 1, 1, 2), V4(1, 1, 1, 1), F4(1, 1, 1, 1)}, BF_ESHAPE,
     "shape_mismatch", "filter_sizes", "", "number of groups"},
    {"CVE-2021-29540_second", BPF, SAME, {F4(0, 1, 1, 5), V4(3, 8, 1, 1), F4(0, 1, 1, 1)},
     BF_ESHAPE, "shape_mismatch", "filter_sizes", "", "number of groups"},

    /* ---- depthwise (§5.5) ---- */
    {"dw_depth", DW, SAME, {F4(1, 3, 3, 2), F4(2, 2, 1, 2)}, BF_ESHAPE, "shape_mismatch",
     "filter", "", "same depth: 2 vs 1"},
    {"dw_input_rank", DW, SAME, {{F, 2, {3, 3}}, W22}, BF_ESHAPE, "bad_shape", "input", "",
     "4-dimensional"},
    {"dw_zero_filter", DW, SAME, {X33, F4(0, 2, 1, 1)}, BF_ESHAPE, "bad_shape", "filter", "",
     "filter rows must be > 0"},
    {"dwi_out_depth", DWI, VALID, {V4(1, 3, 3, 2), F4(2, 2, 2, 2), F4(1, 2, 2, 2)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "depth_multiplier * in_depth"},
    {"dwi_in_depth", DWI, VALID, {V4(1, 3, 3, 2), F4(2, 2, 3, 1), F4(1, 2, 2, 3)}, BF_ESHAPE,
     "shape_mismatch", "filter", "", "same in_depth"},
    {"dwi_batch", DWI, VALID, {V4(2, 3, 3, 1), W22, F4(1, 2, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "same batch size"},
    {"dwi_spatial", DWI, VALID, {V4(1, 3, 3, 1), W22, F4(1, 2, 3, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "doesn't match computed"},
    {"dwf_in_depth", DWF, VALID, {X33, V4(2, 2, 2, 1), F4(1, 2, 2, 2)}, BF_ESHAPE,
     "shape_mismatch", "filter_sizes", "", "same in_depth"},
    {"dwf_filter_sizes_negative", DWF, VALID, {X33, V4(2, -2, 1, 1), F4(1, 2, 2, 1)}, BF_ESHAPE,
     "bad_shape", "filter_sizes", "", "Dimension 1 of filter_sizes"},
    {"dwf_out_depth", DWF, VALID, {X33, V4(2, 2, 1, 2), F4(1, 2, 2, 1)}, BF_ESHAPE,
     "shape_mismatch", "out_backprop", "", "depth_multiplier * in_depth"},
};

static bf_tensor *make(const tspec *s) {
    switch (s->kind) {
    case V: {
        if (s->rank != 1 && s->rank != 2 && s->rank != 3 && s->rank != 4) {
            int64_t d0 = 0;
            return ct_tensor(BF_DTYPE_I32, 0, &d0, NULL); /* a scalar: rank 0 */
        }
        /* a 1-D vector of s->rank values */
        return ct_i32(s->rank, s->d);
    }
    case I: return ct_tensor(BF_DTYPE_I32, s->rank, s->d, NULL);
    default: {
        bf_dtype dt = s->kind == D ? BF_DTYPE_F64 : BF_DTYPE_F32;
        int64_t n = 1;
        for (int i = 0; i < s->rank; i++) n *= s->d[i];
        double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 7) + 1;
        bf_tensor *t = ct_tensor(dt, s->rank, s->d, v);
        free(v);
        return t;
    }
    }
}

START_TEST(error_case) {
    const err_case *c = &cases[_i];
    const bf_block_desc *d = ct_desc(c->op);
    ck_assert_ptr_nonnull(d);
    bf_tensor *in[3] = {NULL, NULL, NULL}, *out = NULL;
    for (int i = 0; i < d->n_inputs; i++) ck_assert_ptr_nonnull(in[i] = make(&c->in[i]));
    bf_error err;
    memset(&err, 0, sizeof(err));
    bf_status st = ct_run(d, c->attrs, in, 2, &out, &err);
    ck_assert_msg(st == c->status, "%s: status %d (%s), expected %d", c->name, st, err.message,
                  c->status);
    ck_assert_ptr_null(out);
    if (c->code) ck_assert_msg(!strcmp(err.code, c->code), "%s: code %s", c->name, err.code);
    ck_assert_msg(!strcmp(err.port, c->port), "%s: port '%s', expected '%s' (%s)", c->name,
                  err.port, c->port, err.message);
    ck_assert_msg(!strcmp(err.attr, c->attr), "%s: attr '%s', expected '%s'", c->name,
                  err.attr, c->attr);
    ck_assert_msg(strstr(err.message, c->keyword) != NULL, "%s: message '%s' lacks '%s'",
                  c->name, err.message, c->keyword);
    for (int i = 0; i < 3; i++) bf_tensor_free(in[i]);
}
END_TEST

/* Run and return the output values (all must succeed). */
static double *run_ok(const char *op, const char *attrs, const tspec *specs, int64_t *dims) {
    const bf_block_desc *d = ct_desc(op);
    bf_tensor *in[3] = {NULL, NULL, NULL}, *out = NULL;
    for (int i = 0; i < d->n_inputs; i++) in[i] = make(&specs[i]);
    bf_error err = {0};
    bf_status st = ct_run(d, attrs, in, 2, &out, &err);
    ck_assert_msg(st == BF_OK, "%s: %s", op, err.message);
    memcpy(dims, out->dims, sizeof(int64_t) * 4);
    double *v = ct_values(out);
    for (int i = 0; i < 3; i++) bf_tensor_free(in[i]);
    bf_tensor_free(out);
    return v;
}

static void assert_zeros(const double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) ck_assert_msg(v[i] == 0.0, "element %ld is %g", (long)i, v[i]);
}

START_TEST(CVE_2022_35996_only_padding_gives_zeros) {
    tspec s[2] = {F4(1, 0, 2, 1), F4(1, 1, 1, 1)};
    int64_t dims[4];
    double *v = run_ok(C2, "{\"strides\":[1,1,1,1],\"padding\":\"EXPLICIT\",\"explicit_paddings\":"
                           "[0,0,1,1,1,1,0,0]}", s, dims);
    ck_assert_int_eq(dims[1], 2);
    ck_assert_int_eq(dims[2], 4);
    assert_zeros(v, 8);
    free(v);
}
END_TEST

START_TEST(CVE_2022_35999_empty_out_backprop_gives_zeros) {
    tspec s[3] = {V4(3, 1, 1, 2), F4(1, 3, 2, 3), F4(3, 1, 0, 3)};
    int64_t dims[4];
    double *v = run_ok(BPI, "{\"strides\":[1,1,2,1],\"padding\":\"VALID\"}", s, dims);
    ck_assert_int_eq(dims[0] * dims[1] * dims[2] * dims[3], 6);
    assert_zeros(v, 6);
    free(v);
}
END_TEST

START_TEST(depthwise_filter_grad_of_empty_out_backprop_is_zero) {
    /* TF returns uninitialised memory here (PR #126484); we zero-fill. */
    tspec s[3] = {F4(1, 1, 3, 2), V4(2, 2, 2, 1), F4(1, 0, 2, 2)};
    int64_t dims[4];
    double *v = run_ok(DWF, VALID, s, dims);
    assert_zeros(v, 8);
    free(v);
}
END_TEST

START_TEST(filter_grad_of_empty_input_is_zero) {
    tspec s[3] = {F4(0, 2, 3, 1), V4(2, 2, 1, 1), F4(0, 1, 2, 1)};
    int64_t dims[4];
    double *v = run_ok(BPF, VALID, s, dims);
    assert_zeros(v, 4);
    free(v);
}
END_TEST

START_TEST(truncating_division_gives_empty_not_error) {
    /* VALID, in=1, f=4, s=2: (1-4+2)/2 truncates to 0 (tf-semantics §3). */
    tspec s[2] = {F4(1, 1, 1, 1), F4(4, 1, 1, 1)};
    int64_t dims[4];
    double *v = run_ok(C2, "{\"strides\":[1,2,2,1],\"padding\":\"VALID\"}", s, dims);
    ck_assert_int_eq(dims[1], 0);
    free(v);
}
END_TEST

START_TEST(CVE_2021_37675_partial_infer_checks_filter_depth) {
    /* Shape inference with the input unknown must still reject a zero filter depth. */
    bf_port_info in[2], out[1];
    int64_t z[4] = {0, 0, 0, 0};
    bf_port_set(&in[0], BF_DTYPE_F32, -1, NULL);
    bf_port_set(&in[1], BF_DTYPE_F32, 4, z);
    bf_error err = {0};
    ck_assert_int_eq(ct_infer(&bf_block_conv2d, SAME, in, out, &err), BF_ESHAPE);
    ck_assert_str_eq(err.port, "filter");
}
END_TEST

START_TEST(huge_input_sizes_are_refused_before_allocating) {
    /* #78428-like: input_sizes whose product overflows; out_backprop known only as info. */
    bf_port_info in[3], out[1];
    int64_t sizes[4] = {1, 2147483647, 2147483647, 1000}, f[4] = {1, 1, 1000, 1},
            dy[4] = {1, 2147483647, 2147483647, 1};
    bf_tensor *v = ct_i32(4, sizes);
    bf_port_set(&in[0], BF_DTYPE_I32, 1, (int64_t[]){4});
    in[0].value = v;
    bf_port_set(&in[1], BF_DTYPE_F32, 4, f);
    bf_port_set(&in[2], BF_DTYPE_F32, 4, dy);
    bf_error err = {0};
    ck_assert_int_eq(ct_infer(&bf_block_conv2d_backprop_input, VALID, in, out, &err), BF_ELIMIT);
    ck_assert_str_eq(err.port, "input_sizes");
    bf_tensor_free(v);
}
END_TEST

START_TEST(partial_infer_uses_known_filter_sizes) {
    bf_port_info in[3], out[1];
    int64_t fs[4] = {3, 3, 1, 8};
    bf_tensor *v = ct_i32(4, fs);
    bf_port_set(&in[0], BF_DTYPE_F32, 4, NULL); /* rank known, dims unknown */
    bf_port_set(&in[1], BF_DTYPE_I32, 1, (int64_t[]){4});
    in[1].value = v;
    bf_port_set(&in[2], BF_DTYPE_INVALID, -1, NULL);
    bf_error err = {0};
    ck_assert_int_eq(ct_infer(&bf_block_conv2d_backprop_filter, SAME, in, out, &err), BF_OK);
    ck_assert_int_eq(out[0].rank, 4);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(out[0].dims[i], fs[i]);
    ck_assert_int_eq(out[0].dtype, BF_DTYPE_F32);
    /* value unknown: rank 4, dims unknown */
    in[1].value = NULL;
    ck_assert_int_eq(ct_infer(&bf_block_conv2d_backprop_filter, SAME, in, out, &err), BF_OK);
    ck_assert_int_eq(out[0].rank, 4);
    ck_assert_int_eq(out[0].dims[0], -1);
    /* attributes are checked even when nothing else is known */
    ck_assert_int_eq(ct_infer(&bf_block_conv2d_backprop_filter,
                              "{\"strides\":[1,1,1],\"padding\":\"SAME\"}", in, out, &err),
                     BF_EATTR);
    ck_assert_str_eq(err.attr, "strides");
    bf_tensor_free(v);
}
END_TEST

START_TEST(partial_infer_forward_output_dims) {
    bf_port_info in[2], out[1];
    int64_t x[4] = {-1, 7, 7, 4}, w[4] = {3, 3, 2, 6};
    bf_port_set(&in[0], BF_DTYPE_BF16, 4, x);
    bf_port_set(&in[1], BF_DTYPE_BF16, 4, w);
    bf_error err = {0};
    ck_assert_int_eq(ct_infer(&bf_block_conv2d, "{\"strides\":[1,2,2,1],\"padding\":\"SAME\"}",
                              in, out, &err),
                     BF_OK);
    ck_assert_int_eq(out[0].dims[0], -1);
    ck_assert_int_eq(out[0].dims[1], 4);
    ck_assert_int_eq(out[0].dims[2], 4);
    ck_assert_int_eq(out[0].dims[3], 6);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("conv_errors");
    TCase *tc = tcase_create("rules");
    tcase_add_loop_test(tc, error_case, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, CVE_2022_35996_only_padding_gives_zeros);
    tcase_add_test(tc, CVE_2022_35999_empty_out_backprop_gives_zeros);
    tcase_add_test(tc, depthwise_filter_grad_of_empty_out_backprop_is_zero);
    tcase_add_test(tc, filter_grad_of_empty_input_is_zero);
    tcase_add_test(tc, truncating_division_gives_empty_not_error);
    tcase_add_test(tc, CVE_2021_37675_partial_infer_checks_filter_depth);
    tcase_add_test(tc, huge_input_sizes_are_refused_before_allocating);
    tcase_add_test(tc, partial_infer_uses_known_filter_sizes);
    tcase_add_test(tc, partial_infer_forward_output_dims);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
