/*
 * Block:    Identity
 * Synopsis: output = input
 * Padding:  none.
 * Example:  a 3x3 tensor passes through unchanged; a value known at check time (a Const)
 *           stays known, so shape-carrying inputs such as filter_sizes may pass through it.
 *
 * identity.c - forwards its input. Useful to name an intermediate result, to fetch it, or to
 * move a tensor between devices.
 */
#include "block.h"

#include <string.h>

static const bf_port_desc inputs[] = {{"input", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "the same tensor"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node, (void)err;
    out[0] = in[0];
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex, (void)err;
    memcpy(out[0]->data, in[0]->data, in[0]->nbytes);
    return BF_OK;
}

/* tf.gradients: the gradient passes through. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    bf_grad_set(g, 0, bf_grad_dy(g, 0));
    return BF_OK;
}

const bf_block_desc bf_block_identity = {
    .type = "Identity",
    .category = "generic",
    .synopsis = "output = input",
    .doc = "Passes its input through unchanged. A value known before running stays known.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
