/*
 * apply_common.h - what the update blocks share (Assign, AssignAdd, AssignSub,
 * ApplyGradientDescent, ApplyMomentum, ApplyAdam): TensorFlow's checks, in TensorFlow's order
 * and words (tensorflow/core/kernels/training_ops.cc, dense_update_ops.cc, assign_op.h), the
 * inference of the next values, and one chunked, threaded loop that reads every operand into
 * float64, applies the block's formula and writes the results rounded once to the dtype.
 *
 * An update block's first n_refs inputs are TensorFlow's refs (var, accum, m, v), each wired to
 * a Variable; output j holds ref j's next value, which the runtime commits when the step ends
 * (block.h, bf_state_desc). Outputs are always new tensors: the inputs are never written, so
 * every read of a step sees the values of the start of the step.
 */
#ifndef BF_APPLY_COMMON_H
#define BF_APPLY_COMMON_H

#include "block.h"

enum { BF_UPDATE_MAX_INPUTS = 10, BF_UPDATE_MAX_REFS = 3 };

/* What the formula gets besides the slots: every scalar input's value by input index, and
 * the use_nesterov attribute. */
typedef struct bf_update_args {
    double scalar[BF_UPDATE_MAX_INPUTS];
    bool nesterov;
} bf_update_args;

/*
 * The formula, on n elements in float64: slot[j][i] holds ref j's value at the start of the
 * step and receives its next value (in a scratch buffer, never the input tensor); g[i] is the
 * elementwise operand (delta, grad, value).
 */
typedef void (*bf_update_fn)(const bf_update_args *a, int64_t n, double *const *slot,
                             const double *g);

typedef enum bf_update_kind {
    BF_UPDATE_APPLY,      /* Apply*: scalars must be rank 0, shapes must equal var's */
    BF_UPDATE_ASSIGN,     /* Assign: output = value; validate_shape */
    BF_UPDATE_ASSIGN_OP,  /* AssignAdd, AssignSub: TF's own shape message */
} bf_update_kind;

typedef struct bf_update_impl {
    bf_update_kind kind;
    int n_refs;          /* inputs 0..n_refs-1 are refs; outputs 0..n_refs-1 their next values */
    int operand;         /* input index of the elementwise operand */
    /* TensorFlow's order of checks after the dtypes, input indices ending with -1: a scalar
     * input is checked for rank 0, a ref or the operand for var's shape. */
    signed char order[BF_UPDATE_MAX_INPUTS + 1];
    /* A scalar input whose TensorFlow message reads "is not a scalar : " (ApplyAdam's lr,
     * a space before the colon in TF's kernel), or -1. */
    int spaced_colon;
    bf_update_fn fn;     /* floating path (not Assign) */
} bf_update_impl;

/* Attribute indices every update block's table starts with. */
enum { BF_UPDATE_USE_LOCKING = 0, BF_UPDATE_SECOND = 1 /* use_nesterov or validate_shape */ };

bf_status bf_update_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err);
bf_status bf_update_run_cpu(const bf_node *node, const bf_tensor *const *in,
                            bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#endif /* BF_APPLY_COMMON_H */
