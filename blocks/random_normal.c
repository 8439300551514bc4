/*
 * Block:    RandomNormal
 * Synopsis: output[i] = mean + stddev * N(0,1)(seed, i)
 * Padding:  none.
 * Example:  {"id": "dy", "type": "RandomNormal",
 *            "attrs": {"shape": [1, 3, 3, 1], "dtype": "float32", "seed": 7}}
 *           gives the same 3x3 tensor on every run and every machine.
 *
 * random_normal.c - deterministic random tensors: element i depends only on (seed, i), so
 * results are reproducible whatever the thread count (random_fill.c, counter_rng.h).
 */
#include "random_fill.h"

static const bf_attr_desc attrs[] = {
    [BF_RANDOM_SHAPE] = {"shape", BF_ATTR_SHAPE, NULL, NULL, 0, "shape of the output"},
    [BF_RANDOM_DTYPE] = {"dtype", BF_ATTR_DTYPE, "\"float32\"", NULL, 0, "a floating dtype"},
    [BF_RANDOM_SEED] = {"seed", BF_ATTR_INT, "0", NULL, 0,
                        "the same seed gives the same tensor"},
    [BF_RANDOM_P1] = {"mean", BF_ATTR_FLOAT, "0", NULL, 0, "mean"},
    [BF_RANDOM_P2] = {"stddev", BF_ATTR_FLOAT, "1", NULL, 0, "stddev"},
};

static const bf_random_kind kind = BF_RANDOM_NORMAL;

const bf_block_desc bf_block_random_normal = {
    .type = "RandomNormal",
    .category = "generic",
    .synopsis = "output[i] = mean + stddev * N(0,1)(seed, i)",
    .doc = "Deterministic random tensor: the same seed gives the same values on every machine "
           "and thread count.",
    .outputs = bf_random_outputs,
    .n_outputs = 1,
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = bf_random_infer,
    .run_cpu = bf_random_run_cpu,
    .impl = &kind,
};
