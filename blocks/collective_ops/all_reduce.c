/*
 * Block:    AllReduce
 * Synopsis: output = the sum (op "sum") or the mean (op "mean") of `input` over the ranks of
 *           the job; in one process, output = input
 * Padding:  none.
 * Example:  {"id": "w_grad_allreduce", "type": "AllReduce",
 *            "inputs": {"input": "conv_grad_filter"}, "attrs": {"op": "mean"}}
 *           under `mpirun -np 2`: each rank's filter gradient of its half of the batch in,
 *           the gradient of the whole batch out, the same on both ranks.
 *
 * all_reduce.c - blockflow's own block (Horovod's allreduce; TensorFlow's collective ops
 * CollectiveReduceV2 are the nearest raw op). A filter gradient is a sum over the batch, so
 * when each rank of a job has computed the gradient of its part of the batch, the sum (or the
 * mean of the per-rank means) over the ranks is the gradient of the whole batch: this block is
 * where a data-parallel page shows that step. bf_session_build_gradients puts one on every
 * Variable's gradient when asked (data_parallel).
 *
 * The block knows nothing of MPI. Its kernel copies its input (this rank's contribution) to
 * its output; the runtime (runtime/fuse.c) then reduces the outputs of every AllReduce ready
 * in the same round of a step in one fused buffer and one collective call, and `finish`
 * divides by the rank count for "mean". In one process it is the identity.
 *
 * `ranks`, when not 0, is the rank count the page was built for (bf_session_build_gradients
 * records it: the backward pass's shape Consts are those of one rank's part of the batch), and
 * the runtime refuses a job of another size with a message saying so (runtime/fuse.c).
 */
#include "block.h"
#include "half.h"

#include <stdio.h>
#include <string.h>

enum { A_OP, A_RANKS };
static const char *const ops[] = {"sum", "mean", NULL};
static const bf_attr_desc attrs[] = {
    [A_OP] = {"op", BF_ATTR_ENUM, "\"sum\"", ops, 0,
              "sum: the sum over the ranks; mean: that sum divided by the rank count"},
    [A_RANKS] = {"ranks", BF_ATTR_INT, "0", NULL, 0,
                 "the rank count this page was built for (its shapes are one rank's part of "
                 "the batch); 0: any"},
};
static const bf_port_desc inputs[] = {{"input", BF_DT_FLOATS, 0, "this rank's value"}};
static const bf_port_desc outputs[] = {
    {"output", BF_DT_FLOATS, 0, "the sum or mean over the ranks, the same on every rank"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    if (node->attrs[A_RANKS].i < 0) {
        bf_err_at(err, NULL, "ranks");
        return bf_err(err, BF_EATTR, "bad_attr", "ranks must be 0 (any) or the rank count, "
                      "got %lld", (long long)node->attrs[A_RANKS].i);
    }
    /* a job of another size than `ranks` is the runtime's check (fuse.c), made before any
     * block's inference so that it is the first problem a wrong job sees */
    out[0] = in[0];
    out[0].value = NULL; /* known only after the reduction */
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex, (void)err;
    memcpy(out[0]->data, in[0]->data, in[0]->nbytes);
    return BF_OK;
}

/* The sum over the ranks is in `out`: the mean divides it by the rank count. */
static void finish(const bf_node *node, bf_tensor *out, int ranks) {
    if (node->attrs[A_OP].i != 1 || ranks <= 1) return;
    int64_t n = out->numel;
    switch (out->dtype) {
    case BF_DTYPE_F32:
        for (int64_t i = 0; i < n; i++) ((float *)out->data)[i] /= (float)ranks;
        break;
    case BF_DTYPE_F64:
        for (int64_t i = 0; i < n; i++) ((double *)out->data)[i] /= (double)ranks;
        break;
    case BF_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *p = (uint16_t *)out->data + i;
            *p = bf_f32_to_f16(bf_f16_to_f32(*p) / (float)ranks);
        }
        break;
    case BF_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *p = (uint16_t *)out->data + i;
            *p = bf_f32_to_bf16(bf_bf16_to_f32(*p) / (float)ranks);
        }
        break;
    default: BF_ASSERT(!"dtype"); break;
    }
}

/* y = sum_r x_r: each rank's loss reads y, so dL/dx_r sums every rank's dy (Horovod's rule: the
 * gradient of an all-reduce is the same all-reduce of the gradient). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const bf_node *n = bf_grad_node(g);
    char attrs_json[64];
    snprintf(attrs_json, sizeof(attrs_json), "{\"op\": \"%s\", \"ranks\": %lld}",
             ops[n->attrs[A_OP].i], (long long)n->attrs[A_RANKS].i);
    bf_grad_set(g, 0, bf_grad_add(g, "grad", "AllReduce", attrs_json, "input", bf_grad_dy(g, 0),
                                  NULL));
    return BF_OK;
}

const bf_block_desc bf_block_all_reduce = {
    .type = "AllReduce",
    .category = "distributed",
    .synopsis = "output = sum (or mean) of input over the ranks of the job",
    .doc = "The sum or mean of a tensor over the ranks of an MPI job (mpirun -np K), the same on "
           "every rank: where a data-parallel page combines the gradients of each rank's part "
           "of the batch. Every AllReduce of a step is reduced in one fused call. In one "
           "process it passes its input through. blockflow's own block (Horovod's allreduce).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
    .collective_finish = finish,
};
