/*
 * Block:    Softmax
 * Synopsis: softmax[..., j] = exp(logits[..., j] - m) / sum_k exp(logits[..., k] - m),
 *           m = max_k logits[..., k]   (over the last axis)
 * Padding:  none.
 * Example:  logits = [[1, 2, 3]] -> [[0.0900306, 0.2447285, 0.6652410]];
 *           logits = [[1000, 1000]] -> [[0.5, 0.5]] (the shift by the max keeps exp finite).
 *
 * softmax.c - TensorFlow's Softmax over the last axis of a tensor of rank >= 1, computed as TF
 * does: exp(logits - max) times the inverse of its sum (softmax_family.c).
 * Gradient (nn_grad.py _SoftmaxGrad): (dy - sum(dy * softmax, -1, keepdims)) * softmax.
 */
#include "loss_common.h"

static const bf_port_desc inputs[] = {{"logits", BF_DT_FLOATS, 0, "any shape of rank >= 1"}};
static const bf_port_desc outputs[] = {
    {"softmax", BF_DT_FLOATS, 0, "logits' shape; each row of the last axis sums to 1"}};

static const bf_softmax_kind kind = {0, "Softmax"};

const bf_block_desc bf_block_softmax = {
    .type = "Softmax",
    .category = "nn",
    .synopsis = "softmax[..., j] = exp(logits[..., j] - max) / sum_k exp(logits[..., k] - max)",
    .doc = "Softmax over the last axis, shifted by the row maximum so that exp never overflows.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = bf_softmax_desc_infer,
    .workspace_cpu = bf_softmax_desc_workspace_cpu,
    .run_cpu = bf_softmax_desc_run_cpu,
    .gradient = bf_softmax_desc_gradient,
    .impl = &kind,
};
