/*
 * Block:    LogSoftmax
 * Synopsis: logsoftmax[..., j] = (logits[..., j] - m) - log(sum_k exp(logits[..., k] - m)),
 *           m = max_k logits[..., k]   (over the last axis)
 * Padding:  none.
 * Example:  logits = [[1, 2, 3]] -> [[-2.4076059, -1.4076059, -0.4076059]];
 *           logits = [[0, -1000]] -> [[0, -1000]] (no log(0): the shift keeps it exact).
 *
 * log_softmax.c - TensorFlow's LogSoftmax over the last axis of a tensor of rank >= 1, in TF's
 * order: the shifted logits minus the log of the sum of their exps (softmax_family.c).
 * Gradient (nn_grad.py _LogSoftmaxGrad): dy - sum(dy, -1, keepdims) * exp(logsoftmax).
 */
#include "loss_common.h"

static const bf_port_desc inputs[] = {{"logits", BF_DT_FLOATS, 0, "any shape of rank >= 1"}};
static const bf_port_desc outputs[] = {
    {"logsoftmax", BF_DT_FLOATS, 0, "logits' shape: log of the softmax, computed stably"}};

static const bf_softmax_kind kind = {1, "LogSoftmax"};

const bf_block_desc bf_block_log_softmax = {
    .type = "LogSoftmax",
    .category = "nn",
    .synopsis = "logsoftmax[..., j] = (logits[..., j] - max) - log(sum_k exp(logits[..., k] - "
        "max))",
    .doc = "Log of the softmax over the last axis, computed without forming the softmax.",
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
