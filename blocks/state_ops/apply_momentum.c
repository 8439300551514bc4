/*
 * Block:    ApplyMomentum
 * Synopsis: accum <- accum * momentum + grad;  var <- var - lr * accum
 *           (use_nesterov: var <- var - grad * lr - accum * momentum * lr, with the new accum)
 * Padding:  none.
 * Example:  var = [1], accum = [0.5] (Variables), lr = 0.1, grad = [2], momentum = 0.9  ->
 *           accum = 0.45 + 2 = 2.45, out = 1 - 0.245 = 0.755.
 *
 * apply_momentum.c - TensorFlow's ApplyMomentum (training_ops.cc). `var` and `accum` are both
 * refs, each wired straight to a Variable. TensorFlow has one output (var's ref) and updates
 * accum in place; blockflow computes every next value into a new tensor, so it adds a second
 * output, `accum`, holding accum's next value, which the runtime commits into accum's Variable
 * (this output is blockflow's addition; `out` is TF's). Checks in TF's order and words: lr is
 * a scalar, accum and grad have var's shape, momentum is a scalar. use_locking has no effect
 * (a step commits at once).
 * Dtypes:   float32, float64, float16, bfloat16 (computed in float64, rounded once to float32
 *           and then to the dtype).
 */
#include "apply_common.h"

enum { VAR, ACCUM, LR, GRAD, MOMENTUM };

static void update(const bf_update_args *a, int64_t n, double *const *slot, const double *g) {
    double *var = slot[0], *accum = slot[1], lr = a->scalar[LR], mu = a->scalar[MOMENTUM];
    if (a->nesterov) {
        for (int64_t i = 0; i < n; i++) {
            accum[i] = accum[i] * mu + g[i];
            var[i] -= g[i] * lr + accum[i] * mu * lr;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            accum[i] = accum[i] * mu + g[i];
            var[i] -= accum[i] * lr;
        }
    }
}

static const bf_port_desc inputs[] = {
    [VAR] = {"var", BF_DT_FLOATS, BF_PORT_REF_TO(0), "the Variable (wired straight to it)"},
    [ACCUM] = {"accum", BF_DT_FLOATS, BF_PORT_REF_TO(1),
               "the accumulation Variable (wired straight to it), var's shape"},
    [LR] = {"lr", BF_DT_FLOATS, 0, "learning rate, a scalar"},
    [GRAD] = {"grad", BF_DT_FLOATS, 0, "the gradient, var's shape"},
    [MOMENTUM] = {"momentum", BF_DT_FLOATS, 0, "momentum, a scalar"},
};
static const bf_port_desc outputs[] = {
    {"out", BF_DT_FLOATS, 0, "var's next value, committed when the step ends"},
    {"accum", BF_DT_FLOATS, 0,
     "accum's next value, committed when the step ends (blockflow's addition: TF updates "
     "accum in place)"},
};
static const bf_attr_desc attrs[] = {
    [BF_UPDATE_USE_LOCKING] = {"use_locking", BF_ATTR_BOOL, "false", NULL, 0,
                               "TensorFlow's lock; no effect here (a step commits at once)"},
    [BF_UPDATE_SECOND] = {"use_nesterov", BF_ATTR_BOOL, "false", NULL, 0,
                          "Nesterov momentum: var -= grad * lr + accum * momentum * lr"},
};

static const bf_update_impl impl = {
    .kind = BF_UPDATE_APPLY, .n_refs = 2, .operand = GRAD,
    .order = {LR, ACCUM, GRAD, MOMENTUM, -1}, .spaced_colon = -1, .fn = update,
};

const bf_block_desc bf_block_apply_momentum = {
    .type = "ApplyMomentum",
    .category = "state",
    .synopsis = "accum <- accum * momentum + grad; var <- var - lr * accum",
    .doc = "One step of momentum on a Variable and its accumulator (TensorFlow's "
           "ApplyMomentum); `var` and `accum` are wired straight to their Variables, which "
           "take outputs `out` and `accum` when the step ends.",
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
