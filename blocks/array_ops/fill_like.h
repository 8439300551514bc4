/*
 * fill_like.h - ZerosLike and OnesLike: one implementation, the constant in impl.
 */
#ifndef BF_FILL_LIKE_H
#define BF_FILL_LIKE_H

#include "block.h"

typedef struct bf_fill_like_impl {
    double value; /* 0 or 1 */
} bf_fill_like_impl;

extern const bf_port_desc bf_fill_like_inputs[1];
extern const bf_port_desc bf_fill_like_outputs[1];
bf_status bf_fill_like_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err);
bf_status bf_fill_like_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#endif /* BF_FILL_LIKE_H */
