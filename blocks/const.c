/*
 * Block:    Const
 * Synopsis: output = value (inline, with dtype and shape) or the contents of a .npy file
 * Padding:  none.
 * Example:  {"id": "fs", "type": "Const",
 *            "attrs": {"dtype": "int32", "shape": [4], "value": [3, 3, 1, 1]}}
 *           {"id": "img", "type": "Const", "attrs": {"value": [[1, 2, 3], [4, 5, 6]]}}
 *           is a 2x3 float32 matrix; {"file": "dy.npy"} loads a tensor next to the page.
 *
 * const.c - a constant tensor. Its value is known when the page is checked, so blocks that
 * take shapes as tensors (filter_sizes, input_sizes) can infer their outputs before anything
 * runs. `value` may be nested lists (their nesting gives the shape) or a flat list with an
 * explicit `shape`; one number with a shape fills the whole tensor, as tf.fill does. A `file`
 * is converted to `dtype` when one is given.
 */
#include "const.h"

#include <math.h>
#include <string.h>

enum { A_DTYPE, A_SHAPE, A_VALUE, A_FILE };
static const bf_attr_desc attrs[] = {
    [A_DTYPE] = {"dtype", BF_ATTR_DTYPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "element type; default float32 for `value`, the file's dtype for `file`"},
    [A_SHAPE] = {"shape", BF_ATTR_SHAPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "shape; default: the nesting of `value`, or the file's shape"},
    [A_VALUE] = {"value", BF_ATTR_TENSOR, NULL, NULL, BF_ATTR_OPTIONAL,
                 "numbers, flat or nested (at most 4096: larger tensors go in a .npy file)"},
    [A_FILE] = {"file", BF_ATTR_FILE, NULL, NULL, BF_ATTR_OPTIONAL,
                ".npy file, relative to the page's folder"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "the constant"}};

static bf_status shape_error(bf_error *err, const char *attr, const char *fmt, long long a,
                             long long b) {
    bf_err_at(err, NULL, attr);
    return bf_err(err, BF_ESHAPE, "shape_mismatch", fmt, a, b);
}

bf_status bf_const_tensor(const bf_node *node, const bf_attr_value *dt,
                          const bf_attr_value *shape, const bf_attr_value *value,
                          const bf_attr_value *file, bf_tensor **out, bf_error *err) {
    for (int i = 0; shape->set && i < shape->n; i++)
        if (shape->list[i] < 0) {
            bf_err_at(err, NULL, "shape");
            return bf_err(err, BF_EATTR, "bad_attr", "a Const's shape must be fully known");
        }
    bf_tensor *t = NULL;
    bf_status st;
    if (file->set) {
        const bf_tensor *src = file->tensor;
        bf_dtype want = bf_node_float(node, dt->set ? dt->dtype : src->dtype);
        const int64_t *dims = shape->set ? shape->list : src->dims;
        int rank = shape->set ? shape->n : src->rank;
        st = bf_tensor_alloc(node->budget, node->max_elements, want, rank, dims, false, &t, err);
        if (st == BF_OK && t->numel != src->numel) {
            long long want_n = (long long)t->numel; /* read before t is freed */
            bf_tensor_free(t);
            return shape_error(err, "shape", "the file has %lld elements, the shape %lld",
                               (long long)src->numel, want_n);
        }
        /* An integer dtype refuses non-integers, as for `value` (a plain conversion would
         * truncate 1.5 to 1 without a word). */
        bool to_int = want == BF_DTYPE_I32 || want == BF_DTYPE_I64;
        for (int64_t i = 0; st == BF_OK && to_int && i < src->numel; i++) {
            double v = bf_tensor_get_f64(src, i);
            if (v != floor(v))
                st = bf_err(err, BF_EDTYPE, "dtype_mismatch",
                            "element %lld (%g) is not an integer but dtype is %s", (long long)i,
                            v, bf_dtype_name(want));
        }
        if (st == BF_OK) st = bf_tensor_convert(src, t, err);
    } else {
        bf_dtype want = bf_node_float(node, dt->set ? dt->dtype : BF_DTYPE_F32);
        int rank = shape->set ? shape->n : value->nest_rank;
        const int64_t *dims = shape->set ? shape->list : value->nest_dims;
        if (!shape->set && value->nest_rank == 0) rank = 0; /* a bare number: a scalar */
        st = bf_tensor_alloc(node->budget, node->max_elements, want, rank, dims, false, &t, err);
        if (st == BF_OK && value->n != t->numel && value->n != 1) {
            long long holds = (long long)t->numel; /* read before t is freed */
            bf_tensor_free(t);
            return shape_error(err, "value", "value has %lld numbers but the shape holds %lld",
                               (long long)value->n, holds);
        }
        for (int64_t i = 0; st == BF_OK && i < t->numel; i++) {
            double v = value->numbers[value->n == 1 ? 0 : i];
            if ((want == BF_DTYPE_I32 || want == BF_DTYPE_I64) && v != floor(v)) {
                bf_err_at(err, NULL, "value");
                st = bf_err(err, BF_EDTYPE, "dtype_mismatch",
                            "element %lld (%g) is not an integer but dtype is %s",
                            (long long)i, v, bf_dtype_name(want));
                break;
            }
            st = bf_tensor_set_f64(t, i, v, err);
        }
    }
    if (st) {
        bf_tensor_free(t);
        bf_err_at(err, NULL, file->set ? "file" : "value");
        return st;
    }
    *out = t;
    return BF_OK;
}

static bf_status init(bf_node *node, bf_error *err) {
    const bf_attr_value *value = &node->attrs[A_VALUE], *file = &node->attrs[A_FILE];
    if (value->set == file->set) {
        bf_err_at(err, NULL, value->set ? "file" : "value");
        return bf_err(err, BF_EATTR, value->set ? "bad_attr" : "missing_attr",
                      "a Const needs exactly one of \"value\" and \"file\"");
    }
    bf_tensor *t = NULL;
    bf_status st = bf_const_tensor(node, &node->attrs[A_DTYPE], &node->attrs[A_SHAPE], value,
                                   file, &t, err);
    if (st == BF_OK) node->state = t;
    return st;
}

void bf_const_fini(bf_node *node) {
    bf_tensor_free(node->state);
    node->state = NULL;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)in, (void)err;
    const bf_tensor *t = node->state;
    bf_port_set(&out[0], t->dtype, t->rank, t->dims);
    out[0].value = t;
    return BF_OK;
}

bf_status bf_const_run_cpu(const bf_node *node, const bf_tensor *const *in,
                           bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    (void)in, (void)ex, (void)err;
    const bf_tensor *t = node->state;
    memcpy(out[0]->data, t->data, t->nbytes);
    return BF_OK;
}

const bf_block_desc bf_block_const = {
    .type = "Const",
    .category = "generic",
    .synopsis = "output = value, or the tensor in a .npy file",
    .doc = "A constant tensor, inline (`value`, with `dtype` and `shape`) or from a .npy "
           "`file`. Known before running, so shape inputs can be inferred at check time.",
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .init = init,
    .fini = bf_const_fini,
    .infer = infer,
    .run_cpu = bf_const_run_cpu,
};
