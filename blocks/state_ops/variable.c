/*
 * Block:    Variable
 * Synopsis: ref = the variable's value as of the start of the step
 * Padding:  none.
 * Example:  {"id": "w", "type": "Variable",
 *            "attrs": {"shape": [3, 3, 1, 8], "initializer": "glorot_uniform", "seed": 7}}
 *           {"id": "b", "type": "Variable", "attrs": {"shape": [8]}}     (zeros)
 *           {"id": "k", "type": "Variable", "attrs": {"value": [[1, 0], [0, 1]]}}
 *
 * variable.c - TensorFlow's VariableV2 with its initializer folded in: state that lives
 * between the steps of a training page. Its output is its value as of the start of the step;
 * update blocks (Assign, ApplyGradientDescent, ...) wired to it compute its next value, which
 * the runtime commits when the step ends (runtime/state.c). The initial value comes from
 * `value` or `file` (as a Const's), or from a seeded `initializer` (Keras' and TensorFlow's
 * definitions: glorot_uniform U(-l, l) with l = sqrt(6 / (fan_in + fan_out)), glorot_normal and
 * he_normal a normal truncated at two standard deviations whose stddev is divided by
 * 0.87962566103423978, fans as tf.keras computes them: [..., in, out] with the receptive field
 * the product of the leading dims). Element i of an initializer is a pure function of
 * (seed, i), so a page starts from the same numbers on every machine.
 */
#include "const.h"
#include "counter_rng.h"

#include <math.h>
#include <string.h>

enum { A_SHAPE, A_DTYPE, A_VALUE, A_FILE, A_INIT, A_SEED, A_MEAN, A_STDDEV, A_MINVAL, A_MAXVAL,
       A_TRAINABLE };
static const char *const inits[] = {"zeros", "ones", "glorot_uniform", "glorot_normal",
                                    "he_normal", "random_normal", "random_uniform",
                                    "truncated_normal", NULL};
enum { I_ZEROS, I_ONES, I_GLOROT_U, I_GLOROT_N, I_HE_N, I_NORMAL, I_UNIFORM, I_TRUNC };

static const bf_attr_desc attrs[] = {
    [A_SHAPE] = {"shape", BF_ATTR_SHAPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "shape, fully known; default: the shape of `value` or `file`"},
    [A_DTYPE] = {"dtype", BF_ATTR_DTYPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "float16, bfloat16, float32 (default) or float64"},
    [A_VALUE] = {"value", BF_ATTR_TENSOR, NULL, NULL, BF_ATTR_OPTIONAL,
                 "initial value: numbers, flat or nested (as a Const's)"},
    [A_FILE] = {"file", BF_ATTR_FILE, NULL, NULL, BF_ATTR_OPTIONAL,
                "initial value from a .npy file, relative to the page's folder"},
    [A_INIT] = {"initializer", BF_ATTR_ENUM, "\"zeros\"", inits, 0,
                "how the initial value is drawn when there is no `value` or `file`"},
    [A_SEED] = {"seed", BF_ATTR_INT, "1", NULL, 0, "seed of the random initializers"},
    [A_MEAN] = {"mean", BF_ATTR_FLOAT, "0", NULL, 0, "random_normal, truncated_normal"},
    [A_STDDEV] = {"stddev", BF_ATTR_FLOAT, "1", NULL, 0, "random_normal, truncated_normal"},
    [A_MINVAL] = {"minval", BF_ATTR_FLOAT, "0", NULL, 0, "random_uniform: lower bound"},
    [A_MAXVAL] = {"maxval", BF_ATTR_FLOAT, "1", NULL, 0, "random_uniform: upper bound"},
    [A_TRAINABLE] = {"trainable", BF_ATTR_BOOL, "true", NULL, BF_ATTR_KEEPS_STATE,
                     "differentiated and updated by the gradient and optimizer calls"},
};
static const bf_port_desc outputs[] = {
    {"ref", BF_DT_FLOATS, 0, "the value as of the start of the step"}};

/* Keras' _compute_fans. */
static void fans(const bf_tensor *t, double *fan_in, double *fan_out) {
    if (t->rank < 1) {
        *fan_in = *fan_out = 1;
    } else if (t->rank == 1) {
        *fan_in = *fan_out = (double)t->dims[0];
    } else {
        double receptive = 1;
        for (int i = 0; i < t->rank - 2; i++) receptive *= (double)t->dims[i];
        *fan_in = (double)t->dims[t->rank - 2] * receptive;
        *fan_out = (double)t->dims[t->rank - 1] * receptive;
    }
}

/* A standard normal truncated at two standard deviations: redrawn (with the next counter)
 * until it falls inside, as TensorFlow's truncated_normal does. */
static double truncated(uint64_t seed, uint64_t i) {
    for (uint64_t k = 0;; k++) {
        double z = bf_counter_normal(seed + k * 0x632be59bd9b4e019ull, i);
        if (fabs(z) <= 2.0) return z;
    }
}

static bf_status draw(const bf_node *node, bf_tensor *t, bf_error *err) {
    int kind = (int)node->attrs[A_INIT].i;
    uint64_t seed = (uint64_t)node->attrs[A_SEED].i;
    double mean = node->attrs[A_MEAN].f, sd = node->attrs[A_STDDEV].f;
    double lo = node->attrs[A_MINVAL].f, hi = node->attrs[A_MAXVAL].f;
    double fin, fout;
    fans(t, &fin, &fout);
    if (kind == I_UNIFORM && !(lo < hi)) {
        bf_err_at(err, NULL, "maxval");
        return bf_err(err, BF_EATTR, "bad_attr", "maxval (%g) must be greater than minval (%g)",
                      hi, lo);
    }
    if ((kind == I_NORMAL || kind == I_TRUNC) && !(sd >= 0)) {
        bf_err_at(err, NULL, "stddev");
        return bf_err(err, BF_EATTR, "bad_attr", "stddev must be >= 0, got %g", sd);
    }
    double limit = sqrt(6.0 / BF_MAX(fin + fout, 1.0));
    double gsd = sqrt(2.0 / BF_MAX(fin + fout, 1.0)) / 0.87962566103423978;
    double hsd = sqrt(2.0 / BF_MAX(fin, 1.0)) / 0.87962566103423978;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = 0;
        switch (kind) {
        case I_ZEROS: v = 0; break;
        case I_ONES: v = 1; break;
        case I_GLOROT_U: v = (2 * bf_counter_uniform(seed, (uint64_t)i, 0) - 1) * limit; break;
        case I_GLOROT_N: v = truncated(seed, (uint64_t)i) * gsd; break;
        case I_HE_N: v = truncated(seed, (uint64_t)i) * hsd; break;
        case I_NORMAL: v = mean + sd * bf_counter_normal(seed, (uint64_t)i); break;
        case I_UNIFORM: v = lo + (hi - lo) * bf_counter_uniform(seed, (uint64_t)i, 0); break;
        case I_TRUNC: v = mean + sd * truncated(seed, (uint64_t)i); break;
        }
        bf_status st = bf_tensor_set_f64(t, i, v, err);
        if (st) return st;
    }
    return BF_OK;
}

static bf_status init(bf_node *node, bf_error *err) {
    const bf_attr_value *shape = &node->attrs[A_SHAPE], *dt = &node->attrs[A_DTYPE];
    const bf_attr_value *value = &node->attrs[A_VALUE], *file = &node->attrs[A_FILE];
    if (value->set && file->set) {
        bf_err_at(err, NULL, "file");
        return bf_err(err, BF_EATTR, "bad_attr", "a Variable takes at most one of \"value\" "
                      "and \"file\"");
    }
    if ((value->set || file->set) && !node->attrs[A_INIT].defaulted) {
        bf_err_at(err, NULL, "initializer");
        return bf_err(err, BF_EATTR, "bad_attr", "\"initializer\" draws an initial value: it "
                      "cannot be given together with \"%s\"", value->set ? "value" : "file");
    }
    if (dt->set && !(BF_DT_FLOATS & (1u << dt->dtype))) {
        bf_err_at(err, NULL, "dtype");
        return bf_err(err, BF_EATTR, "bad_attr", "a Variable holds a float dtype (float16, "
                      "bfloat16, float32, float64), not %s", bf_dtype_name(dt->dtype));
    }
    if (!value->set && !file->set && !shape->set) {
        bf_err_at(err, NULL, "shape");
        return bf_err(err, BF_EATTR, "missing_attr", "a Variable needs a \"shape\" (or an "
                      "initial \"value\" or \"file\")");
    }
    for (int i = 0; shape->set && i < shape->n; i++)
        if (shape->list[i] < 0) {
            bf_err_at(err, NULL, "shape");
            return bf_err(err, BF_EATTR, "bad_attr", "a Variable's shape must be fully known");
        }
    bf_tensor *t = NULL;
    bf_status st;
    if (value->set || file->set) {
        st = bf_const_tensor(node, dt, shape, value, file, &t, err);
        if (st == BF_OK && !(BF_DT_FLOATS & (1u << t->dtype))) {
            bf_err_at(err, NULL, "dtype");
            st = bf_err(err, BF_EATTR, "bad_attr", "the initial value is %s: give a float "
                        "\"dtype\"", bf_dtype_name(t->dtype));
        }
    } else {
        bf_dtype want = bf_node_float(node, dt->set ? dt->dtype : BF_DTYPE_F32);
        st = bf_tensor_alloc(node->budget, node->max_elements, want, shape->n, shape->list,
                             true, &t, err);
        if (st) bf_err_at(err, NULL, "shape");
        if (st == BF_OK) st = draw(node, t, err);
    }
    if (st) {
        bf_tensor_free(t);
        return st;
    }
    node->state = t;
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)in, (void)err;
    const bf_tensor *t = node->state;
    bf_port_set(&out[0], t->dtype, t->rank, t->dims); /* no value: it changes every step */
    return BF_OK;
}

static bf_status check_like(const bf_tensor *have, const bf_tensor *t, bf_error *err) {
    if (t->rank != have->rank || memcmp(t->dims, have->dims, sizeof(int64_t) * (size_t)t->rank)) {
        char a[128], b[128];
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "the value has shape %s but the "
                      "Variable holds %s", bf_shape_str(t->rank, t->dims, a, sizeof(a)),
                      bf_shape_str(have->rank, have->dims, b, sizeof(b)));
    }
    return BF_OK;
}

static bf_status assign(bf_node *node, const bf_tensor *value, bf_error *err) {
    bf_tensor *t = node->state;
    bf_status st = check_like(t, value, err);
    if (st) return st;
    if (value->dtype == t->dtype) {
        memcpy(t->data, value->data, t->nbytes);
        return BF_OK;
    }
    return bf_tensor_convert(value, t, err); /* a checkpoint's float32 for a bfloat16 */
}

static bf_status save(const bf_node *node, bf_tensor **out, bf_error *err) {
    return bf_tensor_copy(node->state, out, err);
}

static bf_status load(bf_node *node, const bf_tensor *t, bf_error *err) {
    const bf_tensor *have = node->state;
    bool widened = have->dtype == BF_DTYPE_BF16 && t->dtype == BF_DTYPE_F32;
    if (t->dtype != have->dtype && !widened)
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "the value is %s but the Variable "
                      "holds %s", bf_dtype_name(t->dtype), bf_dtype_name(have->dtype));
    return assign(node, t, err);
}

static const bf_state_desc state = {
    .variable = true, .assign = assign, .save = save, .load = load};

const bf_block_desc bf_block_variable = {
    .type = "Variable",
    .category = "state",
    .synopsis = "ref = the value as of the start of the step",
    .doc = "State kept between training steps (TensorFlow's VariableV2 with its initializer). "
           "Every block reading it in a step sees its value as of the start of the step; the "
           "update block wired to it (Assign, ApplyGradientDescent, ...) gives its next value, "
           "committed when the step ends. Initial value: `value` or `file`, else a seeded "
           "`initializer` of `shape`.",
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .init = init,
    .fini = bf_const_fini,
    .infer = infer,
    .run_cpu = bf_const_run_cpu, /* its value is its state, as a Const's */
    .state = &state,
};
