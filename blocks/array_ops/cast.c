/*
 * Block:    Cast
 * Synopsis: y = x converted to DstT (floats round to nearest even, float -> int truncates)
 * Padding:  none.
 * Example:  x = [1.7, -1.7, 2.5] (float32), DstT = int32  ->  y = [1, -1, 2];
 *           x = [1, 2] (int32), DstT = float64  ->  y = [1.0, 2.0].
 *
 * cast.c - TensorFlow's Cast (core/ops/math_ops.cc, kernels/cast_op.cc): attrs SrcT (optional
 * here: when given, x must be of that dtype), DstT (required) and Truncate (default false).
 * Float to float rounds to nearest even, or toward zero with Truncate (TF's LSBZeroSetter:
 * the bits the narrower type cannot hold are dropped); float to integer truncates toward
 * zero; int64 to int32 and a float out of the integer's range or NaN are errors (TF's
 * static_cast gives an unspecified value there). Within the same dtype y is a copy.
 * The gradient (math_grad.py _CastGrad) casts dy back to x's dtype when both are floats;
 * other casts are not differentiable.
 */
#include "array_util.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { A_SRC, A_DST, A_TRUNC };
static const bf_attr_desc attrs[] = {
    [A_SRC] = {"SrcT", BF_ATTR_DTYPE, NULL, NULL, BF_ATTR_OPTIONAL,
               "x's dtype (optional; checked when given)"},
    [A_DST] = {"DstT", BF_ATTR_DTYPE, NULL, NULL, 0, "the dtype of y"},
    [A_TRUNC] = {"Truncate", BF_ATTR_BOOL, "false", NULL, 0,
                 "narrowing float casts round toward zero instead of to nearest even"},
};
static const bf_port_desc inputs[] = {{"x", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"y", BF_DT_ALL, 0, "x in dtype DstT"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_attr_value *src = &node->attrs[A_SRC];
    if (src->set && in[0].dtype && in[0].dtype != src->dtype && !node->promote_f64)
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "x", "SrcT",
                          "Input 'x' of 'Cast' Op has type %s that does not match type %s of "
                          "argument 'SrcT'.",
                          bf_dtype_name(in[0].dtype), bf_dtype_name(src->dtype));
    bf_port_set(&out[0], bf_node_float(node, node->attrs[A_DST].dtype), in[0].rank,
                in[0].rank >= 0 ? in[0].dims : NULL);
    return BF_OK;
}

/* v (a finite double) rounded toward zero to float32. */
static float f32_toward_zero(double v) {
    float f = (float)v;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    return f;
}

/* f (float32) toward zero to float16 / bfloat16: drop the bits they cannot hold. */
static uint16_t f16_toward_zero(float f) {
    uint16_t h = bf_f32_to_f16(f);
    float back = bf_f16_to_f32(h);
    if (isfinite(f) && fabsf(back) > fabsf(f)) h--; /* one step toward zero (same sign) */
    return h;
}

static uint16_t bf16_toward_zero(float f) {
    if (isnan(f)) return bf_f32_to_bf16(f);
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)ex;
    const bf_tensor *x = in[0];
    bf_tensor *y = out[0];
    bool trunc = node->attrs[A_TRUNC].b;
    bf_dtype from = x->dtype, to = y->dtype;
    bool narrowing =
        bf_dtype_is_float(from) && bf_dtype_is_float(to) && bf_dtype_size(to) < bf_dtype_size(from);
    if (from == BF_DTYPE_F16 && to == BF_DTYPE_BF16) narrowing = true; /* fewer mantissa bits */
    if (from == BF_DTYPE_F32 && to == BF_DTYPE_F64) {
        const float *s = x->data;
        double *d = y->data;
        for (int64_t i = 0; i < x->numel; i++) d[i] = s[i];
    } else if (from == BF_DTYPE_F64 && to == BF_DTYPE_F32 && !trunc) {
        const double *s = x->data;
        float *d = y->data;
        for (int64_t i = 0; i < x->numel; i++) d[i] = (float)s[i];
    } else if (trunc && narrowing) {
        for (int64_t i = 0; i < x->numel; i++) {
            double v = bf_tensor_get_f64(x, i);
            float f = isfinite(v) ? f32_toward_zero(v) : (float)v;
            if (to == BF_DTYPE_F32)
                ((float *)y->data)[i] = f;
            else if (to == BF_DTYPE_F16)
                ((uint16_t *)y->data)[i] = f16_toward_zero(f);
            else
                ((uint16_t *)y->data)[i] = bf16_toward_zero(f);
        }
    } else {
        bf_status st = bf_tensor_convert(x, y, err);
        if (st) {
            bf_err_at(err, "x", "DstT");
            return st;
        }
    }
    return BF_OK;
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    bf_dtype src = bf_grad_input_info(g, 0)->dtype, dst = bf_grad_output_info(g, 0)->dtype;
    if (!bf_dtype_is_float(src) || !bf_dtype_is_float(dst)) return BF_OK;
    char attrs_json[64];
    snprintf(attrs_json, sizeof(attrs_json), "{\"DstT\":\"%s\"}", bf_dtype_name(src));
    const char *dx = bf_grad_add(g, "dx", "Cast", attrs_json, "x", dy, NULL);
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_cast = {
    .type = "Cast",
    .category = "math",
    .synopsis = "y = x converted to DstT (float -> int truncates toward zero)",
    .doc = "TensorFlow's Cast: converts x to dtype DstT. Floats round to nearest even (toward "
           "zero with Truncate); float to integer truncates toward zero; a value the integer "
           "type cannot hold (or NaN) is an error. SrcT, when given, must be x's dtype.",
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
