/*
 * reduce.h - what Sum, Mean, Max, Min and Prod share (TensorFlow's ReductionOp,
 * kernels/reduction_ops_common.{h,cc}): the ports `input` and `reduction_indices`, the attr
 * `keep_dims`, the axis checks in TF's words, and one engine that reduces any set of axes.
 *
 * `reduction_indices` is optional here: unconnected, every axis is reduced (what
 * tf.reduce_sum(x) computes), so pages written for the former one-input Sum keep their
 * meaning. It is a host port: a Const's value is known when the page is checked, and the
 * output shape with it.
 *
 * The engine (reduce.c) works as TF's ReductionHelper::Simplify does: size-1 dims join their
 * neighbours and adjacent dims of the same kind merge, leaving alternating runs of kept and
 * reduced dims. Then either the innermost run is reduced (each output reduces contiguous
 * segments: rows of a matrix, or everything) or it is kept (each output row accumulates
 * whole input rows: columns of a matrix, BiasAddGrad's shape). Work is split over outputs,
 * and also over the reduced range when there are too few outputs to keep the threads busy;
 * the partial results are then combined in a fixed order, so a result does not depend on
 * the thread count.
 *
 * Floats accumulate in double and are rounded once: float64's Sum and Mean compensated
 * (Neumaier's variant of Kahan's sum: a float64 loss such as sum(conv(x, w) * dy) stays exact
 * enough for finite differences), float32's and the half types' plainly (an error of at most
 * n * 2^-53 of the sum of magnitudes, far below their own rounding, at the speed of a plain
 * loop: BiasAddGrad and the gradients' Sums run in every training step). Integers are exact in
 * int64, where a Sum or Prod that overflows the dtype is an error (TF wraps around). Empty
 * reductions give TF's identities: Sum 0, Prod 1, Mean NaN (an error for integers, where TF
 * divides by zero), Max -inf (the lowest integer), Min +inf (the largest). Max and Min
 * propagate NaN.
 */
#ifndef BF_REDUCE_H
#define BF_REDUCE_H

#include "block.h"

typedef enum bf_reduce_kind {
    BF_REDUCE_SUM = 0,
    BF_REDUCE_MEAN,
    BF_REDUCE_MAX,
    BF_REDUCE_MIN,
    BF_REDUCE_PROD,
} bf_reduce_kind;

/* impl of the five descriptors. */
typedef struct bf_reduce_impl {
    bf_reduce_kind kind;
} bf_reduce_impl;

extern const bf_port_desc bf_reduce_inputs[2];
extern const bf_port_desc bf_reduce_outputs[1];
extern const bf_attr_desc bf_reduce_attrs[1];

bf_status bf_reduce_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err);
size_t bf_reduce_workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                               const bf_exec *ex);
bf_status bf_reduce_run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                            const bf_exec *ex, bf_error *err);
/* Sum and Mean: math_grad.py's _SumGrad and _MeanGrad; Max and Min: _MinOrMaxGrad. */
bf_status bf_reduce_gradient(bf_grad_ctx *g, bf_error *err);

/*
 * The engine on plain arrays, for blocks that reduce a known pattern (BiasAddGrad): reduce
 * `src` (dtype dt, `rank` dims) over the axes where mask[k] is set into `dst` (same dtype,
 * the kept dims in order). ws/ws_size: scratch of at least bf_reduce_engine_ws() bytes.
 * Errors: integer overflow (BF_EDTYPE), Mean of nothing in integers (BF_ESHAPE).
 */
size_t bf_reduce_engine_ws(bf_reduce_kind kind, bf_dtype dt, int rank, const int64_t *dims,
                           const bool *mask, int n_threads);
bf_status bf_reduce_engine(bf_reduce_kind kind, bf_dtype dt, const void *src, void *dst, int rank,
                           const int64_t *dims, const bool *mask, const bf_exec *ex, void *ws,
                           size_t ws_size, bf_error *err);

#endif /* BF_REDUCE_H */
