/*
 * Block:    Mul
 * Synopsis: z = x * y   (elementwise; a rank-0 scalar operand is broadcast)
 * Padding:  none.
 * Example:  x = [[1,2,3],[4,5,6],[7,8,9]], y = 2 (a scalar)  ->  z = x * 2 for every element.
 *
 * mul.c - elementwise Mul, one of the few generic blocks a page needs to check gradients
 * numerically (examples/fd_check_filter_grad.json).
 */
#include "elementwise.h"

static double op(double a, double b) { return a * b; }

static bool iop(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

static const bf_binary_impl impl = {op, iop};

const bf_block_desc bf_block_mul = {
    .type = "Mul",
    .category = "generic",
    .synopsis = "z = x * y",
    .doc = "Elementwise Mul of two tensors of the same shape and dtype; either may be a "
           "rank-0 scalar, which is broadcast.",
    .inputs = bf_binary_inputs,
    .n_inputs = 2,
    .outputs = bf_binary_outputs,
    .n_outputs = 1,
    .infer = bf_binary_infer,
    .run_cpu = bf_binary_run_cpu,
    .impl = &impl,
};
