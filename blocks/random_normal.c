/*
 * Block:    RandomNormal
 * Synopsis: output[i] = mean + stddev * N(0,1)(seed, i)
 * Padding:  none.
 * Example:  {"id": "dy", "type": "RandomNormal",
 *            "attrs": {"shape": [1, 3, 3, 1], "dtype": "float32", "seed": 7}}
 *           gives the same 3x3 tensor on every run and every machine.
 *
 * random_normal.c - deterministic random tensors (see counter_rng.h): element i depends only
 * on (seed, i), so results are reproducible whatever the thread count.
 */
#include "../runtime/block.h"
#include "counter_rng.h"

enum { A_SHAPE, A_DTYPE, A_SEED, A_P1, A_P2 };
static const bf_attr_desc attrs[] = {
    [A_SHAPE] = {"shape", BF_ATTR_SHAPE, NULL, NULL, 0, "shape of the output"},
    [A_DTYPE] = {"dtype", BF_ATTR_DTYPE, "\"float32\"", NULL, 0, "a floating dtype"},
    [A_SEED] = {"seed", BF_ATTR_INT, "0", NULL, 0, "the same seed gives the same tensor"},
    [A_P1] = {"mean", BF_ATTR_FLOAT, "0", NULL, 0, "mean"},
    [A_P2] = {"stddev", BF_ATTR_FLOAT, "1", NULL, 0, "stddev"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_FLOATS, 0, "the random tensor"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)in;
    const bf_attr_value *shape = &node->attrs[A_SHAPE];
    bf_dtype dt = node->attrs[A_DTYPE].dtype;
    if (!(BF_DT_FLOATS & (1u << dt))) {
        bf_err_at(err, NULL, "dtype");
        return bf_err(err, BF_EATTR, "bad_attr", "RandomNormal makes floating tensors, not %s",
                      bf_dtype_name(dt));
    }
    for (int i = 0; i < shape->n; i++)
        if (shape->list[i] < 0) {
            bf_err_at(err, NULL, "shape");
            return bf_err(err, BF_EATTR, "bad_attr", "the shape must be fully known");
        }
    bf_port_set(&out[0], dt, shape->n, shape->list);
    return BF_OK;
}

typedef struct job {
    bf_tensor *t;
    uint64_t seed;
    double p1, p2;
    const bf_exec *ex; /* polled between chunks: a big tensor stops early on Ctrl-C */
} job;

enum { CHUNK = 16384 };

static void fill_chunk(void *arg, int64_t c, int slot) {
    (void)slot;
    job *j = arg;
    if (bf_exec_cancelled(j->ex)) return;
    int64_t end = BF_MIN(j->t->numel, (c + 1) * CHUNK);
    for (int64_t i = c * CHUNK; i < end; i++) {
        double v = j->p1 + j->p2 * bf_counter_normal(j->seed, (uint64_t)i);
        bf_tensor_set_f64(j->t, i, v, NULL); /* floating dtypes: cannot fail */
    }
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)in;
    job j = {out[0], (uint64_t)node->attrs[A_SEED].i, node->attrs[A_P1].f, node->attrs[A_P2].f,
             ex};
    bf_parallel_for(ex, (out[0]->numel + CHUNK - 1) / CHUNK, fill_chunk, &j);
    return bf_exec_cancelled(ex) ? bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled")
                                 : BF_OK;
}

const bf_block_desc bf_block_random_normal = {
    .type = "RandomNormal",
    .category = "generic",
    .synopsis = "output[i] = mean + stddev * N(0,1)(seed, i)",
    .doc = "Deterministic random tensor: the same seed gives the same values on every machine "
           "and thread count.",
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
};
