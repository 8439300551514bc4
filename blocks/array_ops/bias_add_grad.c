/*
 * Block:    BiasAddGrad
 * Synopsis: output[c] = sum of out_backprop over every dim but the channel dim
 * Padding:  none.
 * Example:  out_backprop = [[1,2,3],[4,5,6]]  ->  output = [5, 7, 9];
 *           data_format NCHW, out_backprop [N,C,H,W]: output[c] = sum over n, h, w.
 *
 * bias_add_grad.c - TensorFlow's BiasAddGrad (core/ops/nn_ops.cc, kernels/bias_op.cc): the
 * gradient of BiasAdd with respect to its bias, out_backprop of rank 2 to 5, data_format as
 * BiasAdd's. The sum runs on the reduction engine of Sum (array_ops/reduce.c: in double,
 * compensated for float64, split over threads when there are few channels), so it is at
 * least as exact as TF's (which accumulates float in float).
 */
#include "array_util.h"
#include "bias_add.h"
#include "reduce.h"

static const bf_attr_desc attrs[] = {
    {"data_format", BF_ATTR_ENUM, "\"NHWC\"", bf_bias_formats, 0,
     "NHWC: the bias runs along the last dim; NCHW: along dim 1"},
};
static const bf_port_desc inputs[] = {
    {"out_backprop", BF_DT_ALL, 0, "the gradient of BiasAdd's output, rank 2 to 5"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "1-D: one sum per channel"}};

static int channel_dim(const bf_node *node, int rank) {
    return node->attrs[0].i == 1 ? 1 : rank - 1;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    bf_status st = bf_bias_check_value(&in[0], "out_backprop", err);
    if (st) return st;
    int64_t c = in[0].rank >= 2 ? in[0].dims[channel_dim(node, in[0].rank)] : -1;
    bf_port_set(&out[0], in[0].dtype, 1, &c);
    return BF_OK;
}

static void mask_of(const bf_node *node, int rank, bool *mask) {
    int cdim = channel_dim(node, rank);
    for (int k = 0; k < rank; k++) mask[k] = k != cdim;
}

static size_t workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                            const bf_exec *ex) {
    (void)out;
    bool mask[BF_MAX_RANK];
    mask_of(node, in[0].rank, mask);
    return bf_reduce_engine_ws(BF_REDUCE_SUM, in[0].dtype, in[0].rank, in[0].dims, mask,
                               ex->n_threads);
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    bool mask[BF_MAX_RANK];
    mask_of(node, in[0]->rank, mask);
    bf_status st =
        bf_reduce_engine(BF_REDUCE_SUM, in[0]->dtype, in[0]->data, out[0]->data, in[0]->rank,
                         in[0]->dims, mask, ex, ex->workspace, ex->workspace_size, err);
    if (st) bf_err_at(err, "output", NULL);
    return st;
}

const bf_block_desc bf_block_bias_add_grad = {
    .type = "BiasAddGrad",
    .category = "nn",
    .synopsis = "output[c] = sum of out_backprop over every dim but the channel dim",
    .doc = "TensorFlow's BiasAddGrad: the gradient of BiasAdd for its bias, the sum of "
           "out_backprop (rank 2 to 5) over every dim but the channel dim (the last for NHWC, "
           "dim 1 for NCHW). Summed in double and rounded once.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .workspace_cpu = workspace_cpu,
    .run_cpu = run_cpu,
};
