/*
 * Block:    L2Loss
 * Synopsis: output = sum_i t[i]^2 / 2   (a rank-0 tensor)
 * Padding:  none.
 * Example:  t = [[1, 2], [3, 4]] -> output = 15.
 *
 * l2_loss.c - TensorFlow's L2Loss, half the squared Euclidean norm of a tensor of any shape
 * (weight decay). The squares are summed in double in fixed chunks (the same grouping for
 * any thread count) and rounded once to t's dtype; TF sums in t's dtype, so float32 results
 * agree to the last bits, not bit for bit.
 * Gradient (nn_grad.py _L2LossGrad): t * dy.
 */
#include "loss_common.h"

#include "half.h"

static const bf_port_desc inputs[] = {{"t", BF_DT_FLOATS, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"output", BF_DT_FLOATS, 0, "scalar: sum(t^2) / 2"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node, (void)err;
    bf_port_set(&out[0], in[0].dtype, 0, NULL);
    return BF_OK;
}

#define L2_CHUNK     ((int64_t)1 << 16) /* the smallest chunk */
#define L2_MAX_PARTS 64                 /* partial sums, on the stack */

typedef struct l2_job {
    const bf_tensor *t;
    int64_t chunk;
    double part[L2_MAX_PARTS];
} l2_job;

static void l2_task(void *arg, int64_t k, int slot) {
    (void)slot;
    l2_job *j = arg;
    const int64_t i0 = k * j->chunk, i1 = BF_MIN(j->t->numel, i0 + j->chunk);
    double s = 0;
    switch (j->t->dtype) {
    case BF_DTYPE_F32: {
        const float *x = j->t->data;
        for (int64_t i = i0; i < i1; i++) s += (double)x[i] * (double)x[i];
        break;
    }
    case BF_DTYPE_F64: {
        const double *x = j->t->data;
        for (int64_t i = i0; i < i1; i++) s += x[i] * x[i];
        break;
    }
    case BF_DTYPE_F16: {
        const uint16_t *x = j->t->data;
        for (int64_t i = i0; i < i1; i++) {
            double v = bf_f16_to_f32(x[i]);
            s += v * v;
        }
        break;
    }
    default: {
        const uint16_t *x = j->t->data;
        for (int64_t i = i0; i < i1; i++) {
            double v = bf_bf16_to_f32(x[i]);
            s += v * v;
        }
        break;
    }
    }
    j->part[k] = s;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node;
    /* The chunks depend on the size only, so the sum does not depend on the thread count. */
    l2_job j = {.t = in[0]};
    const int64_t n = in[0]->numel;
    j.chunk = BF_MAX(L2_CHUNK, (n + L2_MAX_PARTS - 1) / L2_MAX_PARTS);
    const int64_t parts = (n + j.chunk - 1) / j.chunk;
    if (parts > 1 && ex && ex->pool && ex->n_threads > 1) {
        bf_parallel_for(ex, parts, l2_task, &j);
    } else {
        for (int64_t k = 0; k < parts; k++) l2_task(&j, k, 0);
    }
    double s = 0;
    for (int64_t k = 0; k < parts; k++) s += j.part[k];
    return bf_tensor_set_f64(out[0], 0, 0.5 * s, err);
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *r = bf_grad_add(g, "grad", "Mul", NULL, "x", bf_grad_input(g, 0), "y", dy,
                                (const char *)NULL);
    if (r) bf_grad_set(g, 0, r);
    return BF_OK;
}

const bf_block_desc bf_block_l2_loss = {
    .type = "L2Loss",
    .category = "nn",
    .synopsis = "output = sum(t^2) / 2",
    .doc = "Half the sum of squares of a tensor (weight decay), as a rank-0 tensor of its dtype.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
