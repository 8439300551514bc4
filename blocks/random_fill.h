/*
 * random_fill.h - the implementation RandomNormal and RandomUniform share. Both take the
 * attributes (shape, dtype, seed, p1, p2) in this order, and their descriptors point at these
 * functions with a bf_random_kind as impl; element i is a pure function of (seed, i)
 * (counter_rng.h), so results do not depend on threads, order or machine.
 */
#ifndef BF_RANDOM_FILL_H
#define BF_RANDOM_FILL_H

#include "block.h"

enum { BF_RANDOM_SHAPE, BF_RANDOM_DTYPE, BF_RANDOM_SEED, BF_RANDOM_P1, BF_RANDOM_P2 };

/* impl of the two descriptors: which distribution p1 and p2 parameterise. */
typedef enum bf_random_kind {
    BF_RANDOM_NORMAL,  /* p1 = mean, p2 = stddev */
    BF_RANDOM_UNIFORM, /* p1 = minval, p2 = maxval */
} bf_random_kind;

extern const bf_port_desc bf_random_outputs[1];

bf_status bf_random_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err);
bf_status bf_random_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#endif /* BF_RANDOM_FILL_H */
