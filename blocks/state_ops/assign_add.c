/*
 * Block:    AssignAdd
 * Synopsis: ref <- ref + value   (output_ref: the Variable's next value, committed when the
 *           step ends)
 * Padding:  none.
 * Example:  {"id": "count", "type": "Variable", "attrs": {"shape": [], "value": 0}},
 *           {"id": "one", "type": "Const", "attrs": {"value": 1}},
 *           {"id": "tick", "type": "AssignAdd", "inputs": {"ref": "count", "value": "one"}}:
 *           count grows by 1 each step.
 *
 * assign_add.c - TensorFlow's AssignAdd. `ref` must be wired straight to a Variable;
 * `output_ref` is a new tensor holding ref + value, committed into the Variable when the step
 * ends (reads in the step see the old value). The shapes must be equal (TF's kernel:
 * "Parameters and update must be the same size"). use_locking has no effect (a step commits at
 * once).
 * Dtypes:   float32, float64, float16, bfloat16 (computed in float64, rounded once to float32
 *           and then to the dtype): the dtypes a Variable holds (TF also takes integers).
 */
#include "apply_common.h"

static void update(const bf_update_args *a, int64_t n, double *const *slot, const double *g) {
    (void)a;
    double *ref = slot[0];
    for (int64_t i = 0; i < n; i++) ref[i] += g[i];
}

static const bf_port_desc inputs[] = {
    {"ref", BF_DT_FLOATS, BF_PORT_REF_TO(0), "the Variable to update (wired straight to it)"},
    {"value", BF_DT_FLOATS, 0, "ref's dtype and shape"},
};
static const bf_port_desc outputs[] = {
    {"output_ref", BF_DT_FLOATS, 0, "ref's next value (ref + value), committed when the step ends"},
};
static const bf_attr_desc attrs[] = {
    [BF_UPDATE_USE_LOCKING] = {"use_locking", BF_ATTR_BOOL, "false", NULL, 0,
                               "TensorFlow's lock; no effect here (a step commits at once)"},
};

static const bf_update_impl impl = {
    .kind = BF_UPDATE_ASSIGN_OP, .n_refs = 1, .operand = 1, .order = {1, -1},
    .spaced_colon = -1, .fn = update,
};

const bf_block_desc bf_block_assign_add = {
    .type = "AssignAdd",
    .category = "state",
    .synopsis = "ref <- ref + value",
    .doc = "Adds `value` to a Variable when the step ends (TensorFlow's AssignAdd). "
           "`ref` is wired straight to the Variable; every read in the step sees the old value.",
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
