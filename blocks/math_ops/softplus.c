/*
 * Block:    Softplus
 * Synopsis: activations = ln(1 + e^features)
 * Example:  features = [0,1]  ->  activations = [0.69314718,1.31326169].
 *
 * softplus.c - ln(1 + e^x) as TensorFlow computes it (softplus_op.h): with t = ln(eps) + 2
 * of the dtype (float32: -13.94, float64: -34.04), x itself above -t, e^x below t,
 * log1p(e^x) between. Halves are computed in float32, so they use float32's t, where
 * TensorFlow uses their own (float16: -4.93): between the two thresholds a float16 result
 * here is log1p(e^x) rounded, TensorFlow's is x.
 */
#include "cwise.h"

#include <tgmath.h>

/* ln(eps) + 2 of the dtype: float32 eps 2^-23, float64 2^-52. */
#define SP_T(T) ((T)(sizeof(T) == 4 ? -13.942385152878742 : -34.04365338911715))

BF_CW_FLOAT1(softplus, x > -SP_T(T) ? x : x < SP_T(T) ? exp(x) : log1p(exp(x)))

static const bf_unary_impl impl = {BF_CW_FLOATS1(softplus), .heavy = true};

static const bf_port_desc inputs[] = {{"features", BF_DT_FLOATS, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"activations", BF_DT_FLOATS, 0, "features' shape"}};

/* nn_grad.py _SoftplusGrad: dy * Sigmoid(features). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    return bf_cw_grad_times(g, "Sigmoid", "x");
}

const bf_block_desc bf_block_softplus = {
    .type = "Softplus",
    .category = "math",
    .synopsis = "activations = ln(1 + e^features)",
    .doc = "Softplus ln(1 + e^features), with TensorFlow's thresholds (x above -(ln eps + "
           "2), e^x below ln eps + 2). Float dtypes.",
    BF_CW_UNARY_FIELDS(inputs, outputs),
    .impl = &impl,
    .gradient = gradient,
};
