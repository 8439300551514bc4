/*
 * Block:    ApplyAdam
 * Synopsis: lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
 *           m <- m + (g - m) * (1 - beta1);  v <- v + (g^2 - v) * (1 - beta2);
 *           var <- var - lr_t * m / (sqrt(v) + epsilon)
 *           (use_nesterov: var <- var - lr_t * (g * (1 - beta1) + beta1 * m) / (sqrt(v) + epsilon),
 *           with the new m and v)
 * Padding:  none.
 * Example:  var = [1], m = [0], v = [0] (Variables), beta1_power = 0.9, beta2_power = 0.999,
 *           lr = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, grad = [0.5]  ->
 *           m = 0.05, v = 0.00025, lr_t = 0.001 * sqrt(0.001) / 0.1, out = 1 - lr_t * 0.05 /
 *           (0.0158114 + 1e-8) = 0.999 (the first Adam step moves each weight by about lr).
 *
 * apply_adam.c - TensorFlow's ApplyAdam (training_ops.cc, ApplyAdamNonCuda). `var`, `m` and `v`
 * are refs, each wired straight to a Variable. TensorFlow has one output (var's ref) and
 * updates m and v in place; blockflow computes every next value into a new tensor, so it adds
 * outputs `m` and `v`, holding their next values, which the runtime commits into their
 * Variables (these two outputs are blockflow's addition; `out` is TF's). beta1_power and
 * beta2_power are inputs, as in TF: the page keeps them (tf.train.AdamOptimizer keeps them in
 * two Variables multiplied by beta1 and beta2 after each step). Checks in TF's order and
 * words, including the kernel's "lr is not a scalar : [2]" (a space before the colon). use_locking
 * has no effect (a step commits at once).
 * Dtypes:   float32, float64, float16, bfloat16 (computed in float64, rounded once to float32
 *           and then to the dtype).
 */
#include "apply_common.h"

#include <math.h>

enum { VAR, M, V, BETA1_POWER, BETA2_POWER, LR, BETA1, BETA2, EPSILON, GRAD };

static void update(const bf_update_args *a, int64_t n, double *const *slot, const double *g) {
    const double *s = a->scalar;
    double *var = slot[0], *m = slot[1], *v = slot[2];
    double alpha = s[LR] * sqrt(1 - s[BETA2_POWER]) / (1 - s[BETA1_POWER]);
    double b1 = s[BETA1], c1 = 1 - s[BETA1], c2 = 1 - s[BETA2], eps = s[EPSILON];
    if (a->nesterov) {
        for (int64_t i = 0; i < n; i++) {
            m[i] += (g[i] - m[i]) * c1;
            v[i] += (g[i] * g[i] - v[i]) * c2;
            var[i] -= ((g[i] * c1 + b1 * m[i]) * alpha) / (sqrt(v[i]) + eps);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            m[i] += (g[i] - m[i]) * c1;
            v[i] += (g[i] * g[i] - v[i]) * c2;
            var[i] -= (m[i] * alpha) / (sqrt(v[i]) + eps);
        }
    }
}

static const bf_port_desc inputs[] = {
    [VAR] = {"var", BF_DT_FLOATS, BF_PORT_REF_TO(0), "the Variable (wired straight to it)"},
    [M] = {"m", BF_DT_FLOATS, BF_PORT_REF_TO(1),
           "first-moment Variable (wired straight to it), var's shape"},
    [V] = {"v", BF_DT_FLOATS, BF_PORT_REF_TO(2),
           "second-moment Variable (wired straight to it), var's shape"},
    [BETA1_POWER] = {"beta1_power", BF_DT_FLOATS, 0, "beta1^t, a scalar"},
    [BETA2_POWER] = {"beta2_power", BF_DT_FLOATS, 0, "beta2^t, a scalar"},
    [LR] = {"lr", BF_DT_FLOATS, 0, "learning rate, a scalar"},
    [BETA1] = {"beta1", BF_DT_FLOATS, 0, "momentum factor, a scalar"},
    [BETA2] = {"beta2", BF_DT_FLOATS, 0, "momentum factor, a scalar"},
    [EPSILON] = {"epsilon", BF_DT_FLOATS, 0, "ridge term, a scalar"},
    [GRAD] = {"grad", BF_DT_FLOATS, 0, "the gradient, var's shape"},
};
static const bf_port_desc outputs[] = {
    {"out", BF_DT_FLOATS, 0, "var's next value, committed when the step ends"},
    {"m", BF_DT_FLOATS, 0,
     "m's next value, committed when the step ends (blockflow's addition: TF updates m in "
     "place)"},
    {"v", BF_DT_FLOATS, 0,
     "v's next value, committed when the step ends (blockflow's addition: TF updates v in "
     "place)"},
};
static const bf_attr_desc attrs[] = {
    [BF_UPDATE_USE_LOCKING] = {"use_locking", BF_ATTR_BOOL, "false", NULL, 0,
                               "TensorFlow's lock; no effect here (a step commits at once)"},
    [BF_UPDATE_SECOND] = {"use_nesterov", BF_ATTR_BOOL, "false", NULL, 0,
                          "Nesterov's variant: the step uses g * (1 - beta1) + beta1 * m"},
};

static const bf_update_impl impl = {
    .kind = BF_UPDATE_APPLY, .n_refs = 3, .operand = GRAD,
    .order = {BETA1_POWER, BETA2_POWER, LR, BETA1, BETA2, EPSILON, M, V, GRAD, -1},
    .spaced_colon = LR, .fn = update,
};

const bf_block_desc bf_block_apply_adam = {
    .type = "ApplyAdam",
    .category = "state",
    .synopsis = "m <- m + (g-m)(1-beta1); v <- v + (g^2-v)(1-beta2); "
                "var <- var - lr_t m / (sqrt(v) + epsilon)",
    .doc = "One Adam step on a Variable and its two moment Variables (TensorFlow's ApplyAdam), "
           "lr_t = lr sqrt(1 - beta2_power) / (1 - beta1_power); the Variables take outputs "
           "`out`, `m` and `v` when the step ends.",
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
