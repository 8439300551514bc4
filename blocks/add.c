/*
 * Block:    Add
 * Synopsis: z = x + y   (elementwise; a rank-0 scalar operand is broadcast)
 * Padding:  none.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]], y = 2 (a scalar)  ->  z = x + 2 for every element.
 *
 * add.c - elementwise Add, one of the few generic blocks a page needs to check gradients
 * numerically (examples/fd_check_filter_grad.json).
 */
#include "elementwise.h"

static double op(double a, double b) { return a + b; }

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    return bf_binary_infer(in, out, err);
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex;
    return bf_binary_run(in[0], in[1], out[0], op, err);
}

const bf_block_desc bf_block_add = {
    .type = "Add",
    .category = "generic",
    .synopsis = "z = x + y",
    .doc = "Elementwise Add of two tensors of the same shape and dtype; either may be a "
           "rank-0 scalar, which is broadcast.",
    .inputs = bf_binary_inputs,
    .n_inputs = BF_COUNT(bf_binary_inputs),
    .outputs = bf_binary_outputs,
    .n_outputs = BF_COUNT(bf_binary_outputs),
    .infer = infer,
    .run_cpu = run_cpu,
};
