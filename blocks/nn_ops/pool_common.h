/*
 * pool_common.h - what the four 2-D pooling blocks (MaxPool, MaxPoolGrad, AvgPool, AvgPoolGrad)
 * share: their attribute tables, the validation of those attributes and of the ports in
 * TensorFlow's order and words, the one inference routine that turns them into the output port
 * and a bf_pool_geom, the CPU kernels (pool_kernels.c) and the descriptor functions.
 *
 * The window geometry is the convolutions' (tf-semantics.md §3): the output size and the pads
 * of each spatial dimension come from bf_conv_out_size (conv_geom.h), TF's
 * GetWindowedOutputSizeVerbose with a dilation of 1, so SAME puts the odd pad pixel after the
 * data here exactly as it does for Conv2D. Padding never takes part in a window: a max ignores
 * it and an average divides by the number of real elements only, as TF's CPU kernels do.
 *
 * blockflow is a superset of TF's CPU kernels where TF refuses only for lack of a kernel: NCHW
 * is computed on the CPU too (TF's CPU pooling is NHWC only).
 */
#ifndef BF_POOL_COMMON_H
#define BF_POOL_COMMON_H

#include "block.h"
#include "pool_geom.h"

/* Which block is asking (a descriptor's impl). */
typedef struct bf_pool_spec {
    bf_pool_op op;
    const char *label; /* TF's op name: "MaxPoolGrad" */
} bf_pool_spec;

/* Attribute indices. The max family has explicit_paddings (TF's order: ksize, strides,
 * padding, explicit_paddings, data_format); the average family has not. */
enum {
    BF_POOL_ATTR_KSIZE = 0,
    BF_POOL_ATTR_STRIDES = 1,
    BF_POOL_ATTR_PADDING = 2,
    BF_MAXPOOL_ATTR_EXPLICIT_PADDINGS = 3,
    BF_MAXPOOL_ATTR_DATA_FORMAT = 4,
    BF_MAXPOOL_N_ATTRS = 5,
    BF_AVGPOOL_ATTR_DATA_FORMAT = 3,
    BF_AVGPOOL_N_ATTRS = 4,
};

extern const bf_attr_desc bf_maxpool_attr_descs[BF_MAXPOOL_N_ATTRS];
extern const bf_attr_desc bf_avgpool_attr_descs[BF_AVGPOOL_N_ATTRS];

typedef enum bf_pool_padding {
    BF_POOL_PADDING_SAME = 0,
    BF_POOL_PADDING_VALID,
    BF_POOL_PADDING_EXPLICIT
} bf_pool_padding;


/*
 * The whole inference of one block: attributes (checked in the op's own constructor order
 * and words), port dtypes, ranks, the host shape vector of AvgPoolGrad when its value is
 * known, the window arithmetic, the gradients' agreement with the forward shape, then out[0].
 * With everything known and valid, *g is the geometry the kernels run and *complete is set;
 * otherwise *complete is 0 and out[0] holds what could be inferred (-1 elsewhere). g and
 * complete may be NULL.
 */
bf_status bf_pool_infer(const bf_node *node, const bf_pool_spec *spec, const bf_port_info *in,
                        bf_port_info *out, bf_pool_geom *g, int *complete, bf_error *err);

/* ---- CPU kernels (pool_kernels.c) --------------------------------------------------------
 * Plain pointers in the geometry's layout; float32 and float64 (MaxPool also int32, int64).
 * `lowest` is the start of a max (TF starts from the dtype's lowest finite value, so a
 * window of -inf only gives that value). The gradient kernels overwrite their whole output.
 * NaN: a max never takes a NaN (TF's CPU kernels compare with <), the gradient goes to the
 * first element of its window in row-major order unless a later one is strictly greater.
 */
void bf_pool_max_f32(const bf_pool_geom *g, const float *x, float *y, float lowest,
                     const bf_exec *ex);
void bf_pool_max_f64(const bf_pool_geom *g, const double *x, double *y, double lowest,
                     const bf_exec *ex);
void bf_pool_max_i32(const bf_pool_geom *g, const int32_t *x, int32_t *y, const bf_exec *ex);
void bf_pool_max_i64(const bf_pool_geom *g, const int64_t *x, int64_t *y, const bf_exec *ex);
void bf_pool_max_grad_f32(const bf_pool_geom *g, const float *x, const float *dy, float *dx,
                          const bf_exec *ex);
void bf_pool_max_grad_f64(const bf_pool_geom *g, const double *x, const double *dy,
                          double *dx, const bf_exec *ex);
void bf_pool_avg_f32(const bf_pool_geom *g, const float *x, float *y, const bf_exec *ex);
void bf_pool_avg_f64(const bf_pool_geom *g, const double *x, double *y, const bf_exec *ex);
void bf_pool_avg_grad_f32(const bf_pool_geom *g, const float *dy, float *dx,
                          const bf_exec *ex);
void bf_pool_avg_grad_f64(const bf_pool_geom *g, const double *dy, double *dx,
                          const bf_exec *ex);

/* ---- the descriptor functions of the four blocks (spec from node->desc->impl) ----------- */

bf_status bf_pool_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err);
size_t bf_pool_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                  const bf_port_info *out, const bf_exec *ex);
bf_status bf_pool_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err);
/* The GPU (bf_pool_cuda): every float dtype and geometry; integers stay on the CPU. */
const char *bf_pool_desc_gpu_unsupported(const bf_node *node, const bf_port_info *in);
size_t bf_pool_desc_workspace_cuda(const bf_node *node, const bf_port_info *in,
                                   const bf_port_info *out, const bf_exec *ex);
bf_status bf_pool_desc_run_cuda(const bf_node *node, const bf_tensor *const *in,
                                bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#define BF_POOL_BLOCK_FUNCTIONS                                                               \
    .infer = bf_pool_desc_infer, .workspace_cpu = bf_pool_desc_workspace_cpu,                 \
    .run_cpu = bf_pool_desc_run_cpu, .gpu_unsupported = bf_pool_desc_gpu_unsupported,         \
    .workspace_cuda = bf_pool_desc_workspace_cuda, .run_cuda = bf_pool_desc_run_cuda

#endif /* BF_POOL_COMMON_H */
