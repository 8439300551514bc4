/*
 * loss_common.h - what the softmax and loss blocks share (Softmax, LogSoftmax,
 * SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits, L2Loss): the row
 * kernels over the last axis (loss_kernels.c), in TF's order of operations, numerically
 * stable (every row is shifted by its max before exp), float32 and float64; helpers for the
 * float16/bfloat16 path (converted to float32 once, rounded once); TF-style shape strings;
 * and the gradient compositions the blocks' `gradient` functions share.
 */
#ifndef BF_LOSS_COMMON_H
#define BF_LOSS_COMMON_H

#include "block.h"

/* One rows x cols problem: row r of operand X starts at X + r * rs and its element j is at
 * X[j * cs] (cs = 0 and rs = 0 broadcast a [1, C] row or a scalar, as TF's BCast does). */
typedef struct bf_rows {
    int64_t rows, cols;
    int64_t f_rs, f_cs; /* features / logits strides */
    int64_t l_rs, l_cs; /* labels strides (dense cross entropy) */
} bf_rows;

/* softmax (log = 0) or log-softmax (log = 1) of each row of x [rows, cols] into y (dense). */
void bf_softmax_rows_f32(const bf_rows *r, const float *x, float *y, int log,
                         const bf_exec *ex);
void bf_softmax_rows_f64(const bf_rows *r, const double *x, double *y, int log,
                         const bf_exec *ex);

/* TF's XentEigenImpl: loss[r] = sum_j labels * (log(sum exp(f - max)) - (f - max)) and
 * backprop[r, j] = exp(f - max) / sum - labels, with broadcast strides from r. */
void bf_xent_rows_f32(const bf_rows *r, const float *f, const float *l, float *loss,
                      float *backprop, const bf_exec *ex);
void bf_xent_rows_f64(const bf_rows *r, const double *f, const double *l, double *loss,
                      double *backprop, const bf_exec *ex);

/* TF's SparseXentEigenImpl with labels already checked in [0, cols): loss[r] =
 * log(sum exp(f - max)) - (f[label] - max), backprop = exp(f - max) / sum - onehot(label).
 * labels is int32 (l64 NULL) or int64 (l32 NULL). */
void bf_sparse_xent_rows_f32(const bf_rows *r, const float *f, const int32_t *l32,
                             const int64_t *l64, float *loss, float *backprop,
                             const bf_exec *ex);
void bf_sparse_xent_rows_f64(const bf_rows *r, const double *f, const int32_t *l32,
                             const int64_t *l64, double *loss, double *backprop,
                             const bf_exec *ex);

/* ---- float16 / bfloat16 through float32 ------------------------------------------------- */

bool bf_loss_is_half(bf_dtype dt);
/* Convert n halves or bfloat16s (dt) to float32, and back with one rounding. */
void bf_loss_widen(bf_dtype dt, const void *src, float *dst, int64_t n);
void bf_loss_narrow(bf_dtype dt, const float *src, void *dst, int64_t n);

/*
 * A scratch area of `count` float32 arrays of the given element counts, carved from the
 * session's workspace (planned by bf_loss_half_workspace with the same counts) or, for a
 * caller that passes none, allocated here (*own, freed by the caller with bf_aligned_free).
 */
size_t bf_loss_half_workspace(int count, const int64_t *n);
bf_status bf_loss_half_arrays(const bf_exec *ex, int count, const int64_t *n, float **arrays,
                              void **own, bf_error *err);

/* ---- Softmax and LogSoftmax (softmax_family.c; impl: a bf_softmax_kind) --------------- */

typedef struct bf_softmax_kind {
    int log;            /* 0: Softmax, 1: LogSoftmax */
    const char *label;  /* TF's op name */
} bf_softmax_kind;

bf_status bf_softmax_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                                bf_error *err);
size_t bf_softmax_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                     const bf_port_info *out, const bf_exec *ex);
bf_status bf_softmax_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                                  bf_tensor *const *out, const bf_exec *ex, bf_error *err);
bf_status bf_softmax_desc_gradient(bf_grad_ctx *g, bf_error *err);

/* ---- messages ---------------------------------------------------------------------------- */

/* A shape as TF's TensorShape::DebugString prints it: "[2,3]", "?" for an unknown dim. */
const char *bf_loss_shape_str(int rank, const int64_t *dims, char *buf, size_t size);

/* ---- gradients ------------------------------------------------------------------------------ */

/*
 * nn_grad.py _SoftmaxGrad: (dy - sum(dy * y, -1, keepdims)) * y, as Mul, Sum (keep_dims,
 * reduction_indices a Const [-1]), Sub and Mul blocks named "<name>_...". Returns the ref of
 * the result, or NULL (the builder recorded the error).
 */
const char *bf_loss_grad_softmax(bf_grad_ctx *g, const char *name, const char *dy,
                                 const char *y);

/*
 * Cross entropy's feature gradient (nn_grad.py _SoftmaxCrossEntropyWithLogitsGrad and the
 * sparse one): ExpandDims(dy_loss, -1) * backprop as a Reshape to [batch, 1] and a Mul, plus
 * the softmax gradient of a gradient arriving at backprop, reduced to the features' shape.
 * Declares input 0's gradient. Returns the Reshape's ref (the labels' gradient reuses it).
 */
const char *bf_loss_grad_xent_features(bf_grad_ctx *g);

#endif /* BF_LOSS_COMMON_H */
