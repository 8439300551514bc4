/*
 * Block:    ApplyGradientDescent
 * Synopsis: var <- var - alpha * delta   (out: var's next value, committed when the step ends)
 * Padding:  none.
 * Example:  var = [1, 2] (a Variable), alpha = 0.1, delta = [10, -10]  ->  out = [0, 3], which
 *           var holds after the step.
 *
 * apply_gradient_descent.c - TensorFlow's ApplyGradientDescent (training_ops.cc): `var` is
 * wired straight to a Variable, `out` is a new tensor, committed into it when the step ends.
 * Checks in TF's order and words: "alpha is not a scalar: [2]", then "var and delta do not
 * have the same shape[3] [4]". use_locking has no effect (a step commits at once).
 * Dtypes:   float32, float64, float16, bfloat16 (computed in float64, rounded once to float32
 *           and then to the dtype).
 */
#include "apply_common.h"

enum { VAR, ALPHA, DELTA };

static void update(const bf_update_args *a, int64_t n, double *const *slot, const double *g) {
    double *var = slot[0], alpha = a->scalar[ALPHA];
    for (int64_t i = 0; i < n; i++) var[i] -= g[i] * alpha;
}

static const bf_port_desc inputs[] = {
    [VAR] = {"var", BF_DT_FLOATS, BF_PORT_REF_TO(0), "the Variable (wired straight to it)"},
    [ALPHA] = {"alpha", BF_DT_FLOATS, 0, "scaling factor (learning rate), a scalar"},
    [DELTA] = {"delta", BF_DT_FLOATS, 0, "the change (gradient), var's shape"},
};
static const bf_port_desc outputs[] = {
    {"out", BF_DT_FLOATS, 0, "var's next value, committed when the step ends"},
};
static const bf_attr_desc attrs[] = {
    [BF_UPDATE_USE_LOCKING] = {"use_locking", BF_ATTR_BOOL, "false", NULL, 0,
                               "TensorFlow's lock; no effect here (a step commits at once)"},
};

static const bf_update_impl impl = {
    .kind = BF_UPDATE_APPLY, .n_refs = 1, .operand = DELTA, .order = {ALPHA, DELTA, -1},
    .spaced_colon = -1, .fn = update,
};

const bf_block_desc bf_block_apply_gradient_descent = {
    .type = "ApplyGradientDescent",
    .category = "state",
    .synopsis = "var <- var - alpha * delta",
    .doc = "One step of gradient descent on a Variable (TensorFlow's ApplyGradientDescent); "
           "`var` is wired straight to the Variable, which takes `out` when the step ends.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = bf_update_infer,
    .run_cpu = bf_update_run_cpu,
    .impl = &impl,
};
