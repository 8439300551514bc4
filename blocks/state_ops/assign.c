/*
 * Block:    Assign
 * Synopsis: ref <- value   (output_ref: the Variable's next value, committed when the step ends)
 * Padding:  none.
 * Example:  {"id": "w", "type": "Variable", "attrs": {"shape": [3], "value": [0, 0, 0]}},
 *           {"id": "c", "type": "Const", "attrs": {"value": [1, 2, 3]}},
 *           {"id": "set", "type": "Assign", "inputs": {"ref": "w", "value": "c"}}
 *           after one step, w holds [1, 2, 3].
 *
 * assign.c - TensorFlow's Assign. `ref` must be wired straight to a Variable (a TF ref);
 * `output_ref` is a new tensor holding value, which the runtime commits into the Variable when
 * the step ends, so every block of the step reads the Variable's value of the start of the
 * step. validate_shape (default true) refuses a value of another shape in TF's words; false is
 * accepted but cannot change the shape (a Variable keeps the shape it declares), so a value of
 * another shape is still refused, saying so. use_locking (TF default true) has no effect: a
 * step's updates are committed all at once.
 * Dtypes:   float32, float64, float16, bfloat16 (the bytes are copied): the dtypes a Variable
 *           holds (TF also takes integers).
 */
#include "apply_common.h"

static const bf_port_desc inputs[] = {
    {"ref", BF_DT_FLOATS, BF_PORT_REF_TO(0), "the Variable to assign (wired straight to it)"},
    {"value", BF_DT_FLOATS, 0, "the value to assign; ref's dtype and shape"},
};
static const bf_port_desc outputs[] = {
    {"output_ref", BF_DT_FLOATS, 0, "ref's next value (= value), committed when the step ends"},
};
static const bf_attr_desc attrs[] = {
    [BF_UPDATE_USE_LOCKING] = {"use_locking", BF_ATTR_BOOL, "true", NULL, 0,
                               "TensorFlow's lock; no effect here (a step commits at once)"},
    [BF_UPDATE_SECOND] = {"validate_shape", BF_ATTR_BOOL, "true", NULL, 0,
                          "value must have ref's shape (false cannot reshape a Variable)"},
};

static const bf_update_impl impl = {
    .kind = BF_UPDATE_ASSIGN, .n_refs = 1, .operand = 1, .order = {1, -1}, .spaced_colon = -1,
};

const bf_block_desc bf_block_assign = {
    .type = "Assign",
    .category = "state",
    .synopsis = "ref <- value",
    .doc = "Sets a Variable to `value` when the step ends (TensorFlow's Assign). `ref` is wired "
           "straight to the Variable; every read in the step sees the old value.",
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
