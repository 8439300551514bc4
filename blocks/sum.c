/*
 * Block:    Sum
 * Synopsis: output = sum over every element of input   (a rank-0 tensor)
 * Padding:  none.
 * Example:  input = [[1,2,3],[4,5,6],[7,8,9]]  ->  output = 45.
 *
 * sum.c - the total of a tensor, accumulated in double (compensated, Kahan-Babuska) and
 * rounded once to the input's dtype, so that a loss such as sum(conv(x, w) * dy) is exact
 * enough for finite-difference checks.
 */
#include "block.h"

#include <math.h>

static const bf_port_desc inputs[] = {{"input", BF_DT_ALL, 0, "any tensor"}};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "scalar: the sum"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node, (void)err;
    bf_port_set(&out[0], in[0].dtype, 0, NULL);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex;
    double s = 0, c = 0;
    for (int64_t i = 0; i < in[0]->numel; i++) {
        double v = bf_tensor_get_f64(in[0], i), t = s + v;
        c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    return bf_tensor_set_f64(out[0], 0, s + c, err);
}

const bf_block_desc bf_block_sum = {
    .type = "Sum",
    .category = "generic",
    .synopsis = "output = sum of all elements of input",
    .doc = "Sums every element into a rank-0 tensor of the same dtype (accumulated in double).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
};
