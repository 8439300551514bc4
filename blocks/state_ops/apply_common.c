/*
 * apply_common.c - checks, inference and the loop of the update blocks (apply_common.h).
 *
 * Checks. The dtypes first (every input has var's dtype, in the words of TensorFlow's
 * op_def_library), then, in the order of the TensorFlow kernel, each scalar's rank ("alpha is
 * not a scalar: [2]") and each tensor's shape against var's ("var and delta do not have the
 * same shape[3] [4]", TensorShape::DebugString's "[3,4]" glued to the sentence as TF glues
 * it). At check time only what is known is checked; right before the kernel, everything is.
 *
 * The loop. The elements are cut into tasks of TASK elements for bf_parallel_for, each task
 * into chunks of CHUNK: a chunk's refs and operand are widened into float64 scratch on the
 * stack, the block's formula runs over them, and the results are rounded once into the
 * outputs (float16 and bfloat16 through float32, as the rest of blockflow rounds them).
 * Assign copies bytes. Every dtype is a float one: the dtypes a Variable holds.
 */
#include "apply_common.h"
#include "half.h"

#include <stdio.h>
#include <string.h>

/* TensorShape::DebugString / PartialTensorShape: "[3,4]", "[]" for a scalar, "?" for an
 * unknown dim, "<unknown>" for an unknown rank. */
static const char *tf_shape(const bf_port_info *p, char *buf, size_t size) {
    if (p->rank < 0) {
        snprintf(buf, size, "<unknown>");
        return buf;
    }
    size_t k = 0;
    buf[k++] = '[';
    for (int i = 0; i < p->rank && k + 24 < size; i++) {
        if (i) buf[k++] = ',';
        if (p->dims[i] < 0) buf[k++] = '?';
        else k += (size_t)snprintf(buf + k, size - k, "%lld", (long long)p->dims[i]);
    }
    buf[k++] = ']';
    buf[k] = '\0';
    return buf;
}

/* Whether a and b are certainly different shapes (unknown ranks and dims match anything). */
static bool shapes_differ(const bf_port_info *a, const bf_port_info *b) {
    if (a->rank < 0 || b->rank < 0) return false;
    if (a->rank != b->rank) return true;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return true;
    return false;
}

static bool is_scalar_input(const bf_update_impl *impl, int k) {
    return k >= impl->n_refs && k != impl->operand;
}

static bf_status shape_check(const bf_node *node, const bf_update_impl *impl,
                             const bf_port_info *in, int k, bf_error *err) {
    const char *name = node->desc->inputs[k].name, *var = node->desc->inputs[0].name;
    char a[200], b[200];
    if (is_scalar_input(impl, k)) {
        if (in[k].rank < 0 || in[k].rank == 0) return BF_OK;
        bf_err_at(err, name, NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "%s is not a scalar%s %s", name,
                      k == impl->spaced_colon ? " :" : ":", tf_shape(&in[k], a, sizeof(a)));
    }
    if (k == 0 || !shapes_differ(&in[0], &in[k])) return BF_OK;
    bf_err_at(err, name, NULL);
    if (impl->kind == BF_UPDATE_ASSIGN) {
        if (!node->attrs[BF_UPDATE_SECOND].b) {
            bf_err_at(err, NULL, "validate_shape");
            return bf_err(err, BF_ESHAPE, "shape_mismatch",
                          "validate_shape=false would give ref the shape of value, %s, but a "
                          "Variable keeps its declared shape %s",
                          tf_shape(&in[k], b, sizeof(b)), tf_shape(&in[0], a, sizeof(a)));
        }
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "Assign requires shapes of both tensors to match. lhs shape= %s rhs "
                      "shape= %s", tf_shape(&in[0], a, sizeof(a)), tf_shape(&in[k], b, sizeof(b)));
    }
    if (impl->kind == BF_UPDATE_ASSIGN_OP)
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "Parameters and update must be the same size (ref %s, value %s)",
                      tf_shape(&in[0], a, sizeof(a)), tf_shape(&in[k], b, sizeof(b)));
    return bf_err(err, BF_ESHAPE, "shape_mismatch", "%s and %s do not have the same shape%s %s",
                  var, name, tf_shape(&in[0], a, sizeof(a)), tf_shape(&in[k], b, sizeof(b)));
}

bf_status bf_update_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err) {
    const bf_update_impl *impl = node->desc->impl;
    const bf_block_desc *d = node->desc;
    /* Every input has var's dtype (TensorFlow's type attribute T). */
    int first = -1;
    for (int k = 0; k < d->n_inputs; k++) {
        if (!in[k].dtype) continue;
        if (first < 0) {
            first = k;
            continue;
        }
        if (in[k].dtype != in[first].dtype) {
            bf_err_at(err, d->inputs[k].name, NULL);
            return bf_err(err, BF_EDTYPE, "dtype_mismatch",
                          "Input '%s' of '%s' Op has type %s that does not match type %s of "
                          "argument '%s'.", d->inputs[k].name, d->type,
                          bf_dtype_name(in[k].dtype), bf_dtype_name(in[first].dtype),
                          d->inputs[first].name);
        }
    }
    for (int i = 0; impl->order[i] >= 0; i++) {
        bf_status st = shape_check(node, impl, in, impl->order[i], err);
        if (st) return st;
    }
    /* Each output has its ref's dtype and shape; what var does not know, the tensors of the
     * same shape may (they were just checked to agree). */
    bf_dtype dt = first >= 0 ? in[first].dtype : BF_DTYPE_INVALID;
    bf_port_info shape = in[0];
    for (int k = 1; k < d->n_inputs && shape.rank < 0; k++)
        if (!is_scalar_input(impl, k) && in[k].rank >= 0) shape = in[k];
    for (int k = 1; k < d->n_inputs && shape.rank >= 0; k++) {
        if (is_scalar_input(impl, k) || in[k].rank != shape.rank) continue;
        for (int i = 0; i < shape.rank; i++)
            if (shape.dims[i] < 0) shape.dims[i] = in[k].dims[i];
    }
    for (int j = 0; j < impl->n_refs; j++)
        bf_port_set(&out[j], dt, shape.rank, shape.rank >= 0 ? shape.dims : NULL);
    return BF_OK;
}

/* ---- the loop -------------------------------------------------------------------------- */

enum { CHUNK = 512, TASK = 16384 };

typedef struct job {
    const bf_update_impl *impl;
    const bf_tensor *const *in;
    bf_tensor *const *out;
    bf_update_args args;
    int64_t n;
    const bf_exec *ex;
} job;

static void widen(const bf_tensor *t, int64_t at, int64_t n, double *dst) {
    switch (t->dtype) {
    case BF_DTYPE_F32: {
        const float *s = (const float *)t->data + at;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case BF_DTYPE_F64: memcpy(dst, (const double *)t->data + at, (size_t)n * sizeof(double)); break;
    case BF_DTYPE_F16: {
        const uint16_t *s = (const uint16_t *)t->data + at;
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f16_to_f32(s[i]);
        break;
    }
    case BF_DTYPE_BF16: {
        const uint16_t *s = (const uint16_t *)t->data + at;
        for (int64_t i = 0; i < n; i++) dst[i] = bf_bf16_to_f32(s[i]);
        break;
    }
    default: BF_ASSERT(!"floating dtype"); break;
    }
}

static void narrow(const double *src, int64_t n, bf_tensor *t, int64_t at) {
    switch (t->dtype) {
    case BF_DTYPE_F32: {
        float *d = (float *)t->data + at;
        for (int64_t i = 0; i < n; i++) d[i] = (float)src[i];
        break;
    }
    case BF_DTYPE_F64: memcpy((double *)t->data + at, src, (size_t)n * sizeof(double)); break;
    case BF_DTYPE_F16: {
        uint16_t *d = (uint16_t *)t->data + at;
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_f16((float)src[i]);
        break;
    }
    case BF_DTYPE_BF16: {
        uint16_t *d = (uint16_t *)t->data + at;
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_bf16((float)src[i]);
        break;
    }
    default: BF_ASSERT(!"floating dtype"); break;
    }
}

static void task(void *arg, int64_t t, int slot_id) {
    (void)slot_id;
    const job *j = arg;
    if (bf_exec_cancelled(j->ex)) return;
    const bf_update_impl *impl = j->impl;
    double buf[BF_UPDATE_MAX_REFS][CHUNK], g[CHUNK];
    double *slot[BF_UPDATE_MAX_REFS];
    for (int r = 0; r < impl->n_refs; r++) slot[r] = buf[r];
    int64_t end = BF_MIN(j->n, (t + 1) * TASK);
    for (int64_t at = t * TASK; at < end; at += CHUNK) {
        int64_t n = BF_MIN(CHUNK, end - at);
        for (int r = 0; r < impl->n_refs; r++) widen(j->in[r], at, n, buf[r]);
        widen(j->in[impl->operand], at, n, g);
        impl->fn(&j->args, n, slot, g);
        for (int r = 0; r < impl->n_refs; r++) narrow(buf[r], n, j->out[r], at);
    }
}

bf_status bf_update_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    const bf_update_impl *impl = node->desc->impl;
    const bf_tensor *var = in[0];
    if (impl->kind == BF_UPDATE_ASSIGN) {
        BF_ASSERT(out[0]->nbytes == in[impl->operand]->nbytes);
        if (out[0]->nbytes) memcpy(out[0]->data, in[impl->operand]->data, out[0]->nbytes);
        return BF_OK;
    }
    job j = {.impl = impl, .in = in, .out = out, .n = var->numel, .ex = ex};
    for (int k = 0; k < node->desc->n_inputs; k++)
        if (is_scalar_input(impl, k)) j.args.scalar[k] = bf_tensor_get_f64(in[k], 0);
    if (impl->kind == BF_UPDATE_APPLY && node->desc->n_attrs > BF_UPDATE_SECOND)
        j.args.nesterov = node->attrs[BF_UPDATE_SECOND].b;
    if (j.n == 0) return BF_OK;
    bf_parallel_for(ex, (j.n + TASK - 1) / TASK, task, &j);
    return bf_exec_cancelled(ex) ? bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled")
                                 : BF_OK;
}
