/*
 * random_fill.c - shape checks and the threaded fill shared by RandomNormal and
 * RandomUniform (see random_fill.h). The fill is split into fixed chunks, each a pure
 * function of (seed, index), and polls for cancellation between chunks.
 */
#include "random_fill.h"
#include "counter_rng.h"

#include <math.h>

const bf_port_desc bf_random_outputs[1] = {{"output", BF_DT_FLOATS, 0, "the random tensor"}};

bf_status bf_random_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err) {
    (void)in;
    const bf_attr_value *shape = &node->attrs[BF_RANDOM_SHAPE];
    bf_dtype dt = node->attrs[BF_RANDOM_DTYPE].dtype;
    if (!(BF_DT_FLOATS & (1u << dt))) {
        bf_err_at(err, NULL, "dtype");
        return bf_err(err, BF_EATTR, "bad_attr", "%s makes floating tensors, not %s",
                      node->desc->type, bf_dtype_name(dt));
    }
    for (int i = 0; i < shape->n; i++)
        if (shape->list[i] < 0) {
            bf_err_at(err, NULL, "shape");
            return bf_err(err, BF_EATTR, "bad_attr", "the shape must be fully known");
        }
    bf_port_set(&out[0], bf_node_float(node, dt), shape->n, shape->list);
    return BF_OK;
}

typedef struct job {
    bf_tensor *t;
    bf_random_kind kind;
    uint64_t seed;
    double p1, p2;
    const bf_exec *ex; /* polled between chunks: a big tensor stops early on Ctrl-C */
} job;

enum { CHUNK = 16384 };

/*
 * Replace element i of t by the next value of its dtype towards -infinity. RandomUniform
 * uses it for an element that rounding to the dtype carried up to maxval: TensorFlow's range
 * is [minval, maxval), and float16 rounds about 1 draw in 4500 of U(0,1) up to 1.0, bfloat16
 * 1 in 500. The value before rounding lies below maxval, so the next value down does too.
 */
static void step_down(bf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        uint16_t *h = (uint16_t *)t->data + i;
        if ((*h & 0x7fffu) == 0) *h = 0x8001u; /* +-0: the smallest negative subnormal */
        else *h = (*h & 0x8000u) ? (uint16_t)(*h + 1) : (uint16_t)(*h - 1);
        break;
    }
    case BF_DTYPE_F32: ((float *)t->data)[i] = nextafterf(((float *)t->data)[i], -INFINITY); break;
    case BF_DTYPE_F64: ((double *)t->data)[i] = nextafter(((double *)t->data)[i], -INFINITY); break;
    default: break;
    }
}

static void fill_chunk(void *arg, int64_t c, int slot) {
    (void)slot;
    job *j = arg;
    if (bf_exec_cancelled(j->ex)) return;
    int64_t end = BF_MIN(j->t->numel, (c + 1) * CHUNK);
    for (int64_t i = c * CHUNK; i < end; i++) {
        double v = j->kind == BF_RANDOM_NORMAL
                       ? j->p1 + j->p2 * bf_counter_normal(j->seed, (uint64_t)i)
                       : j->p1 + (j->p2 - j->p1) * bf_counter_uniform(j->seed, (uint64_t)i, 0);
        bf_tensor_set_f64(j->t, i, v, NULL); /* floating dtypes: cannot fail */
        if (j->kind == BF_RANDOM_UNIFORM && j->p2 > j->p1 && bf_tensor_get_f64(j->t, i) >= j->p2)
            step_down(j->t, i);
    }
}

bf_status bf_random_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    (void)in;
    const bf_random_kind *kind = node->desc->impl;
    job j = {out[0], *kind, (uint64_t)node->attrs[BF_RANDOM_SEED].i,
             node->attrs[BF_RANDOM_P1].f, node->attrs[BF_RANDOM_P2].f, ex};
    bf_parallel_for(ex, (out[0]->numel + CHUNK - 1) / CHUNK, fill_chunk, &j);
    return bf_exec_cancelled(ex) ? bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled")
                                 : BF_OK;
}
