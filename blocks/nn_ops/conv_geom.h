/*
 * conv_geom.h - what the six convolution blocks share: their attribute tables, the parsing and
 * validation of those attributes, and the one inference routine that turns (attributes, what is
 * known about the input ports) into the output port and a bf_conv_geom.
 *
 * Every block of the family is the same computation seen from a different side (see
 * conv_kernels.h), so validation is written once, here, in TensorFlow's order and words
 * (tf-semantics.md §3-§5, §9). A block file only says which op it is (bf_conv_spec) and calls
 * bf_conv_infer() from both its `infer` (partial knowledge, at check time) and its kernels
 * (full knowledge, from the real tensors), so the kernels run on exactly the checked geometry.
 *
 * blockflow is a superset of TensorFlow's CPU kernels where TF refuses only for lack of a
 * kernel: NCHW everywhere, dilated and grouped gradients, strides with dilations, and depthwise
 * dilations (honoured, where TF's native kernels silently ignore them).
 */
#ifndef BF_CONV_GEOM_H
#define BF_CONV_GEOM_H

#include "block.h"
#include "conv_kernels.h"

/* Attribute indices, the same for every block of the family (depthwise stops before cuDNN). */
enum {
    BF_CONV_ATTR_STRIDES = 0,
    BF_CONV_ATTR_PADDING,
    BF_CONV_ATTR_EXPLICIT_PADDINGS,
    BF_CONV_ATTR_DATA_FORMAT,
    BF_CONV_ATTR_DILATIONS,
    BF_CONV_ATTR_USE_CUDNN, /* Conv2D* only */
    BF_CONV2D_N_ATTRS,
    BF_DEPTHWISE_N_ATTRS = BF_CONV_ATTR_USE_CUDNN
};

/* The attribute tables (TF names, kinds, defaults), in the index order above. */
extern const bf_attr_desc bf_conv2d_attr_descs[BF_CONV2D_N_ATTRS];
extern const bf_attr_desc bf_depthwise_attr_descs[BF_DEPTHWISE_N_ATTRS];

typedef enum bf_conv_padding {
    BF_CONV_PADDING_SAME = 0,
    BF_CONV_PADDING_VALID,
    BF_CONV_PADDING_EXPLICIT
} bf_conv_padding;

/* The parsed attributes, indexed in data_format order as TF writes them. */
typedef struct bf_conv_attrs {
    int64_t strides[4];
    int64_t dilations[4];
    int64_t explicit_pads[8]; /* zeros unless EXPLICIT */
    bf_conv_padding padding;
    int nchw;
    int use_cudnn;            /* 0 for depthwise */
} bf_conv_attrs;

/* Which block is asking: the op, the filter convention, and TF's label for messages. */
typedef struct bf_conv_spec {
    bf_conv_op op;
    int depthwise;     /* filter [fh, fw, in_c, multiplier] and equal H/W strides */
    const char *label; /* "Conv2DBackpropFilter", ... as TF prefixes its messages */
} bf_conv_spec;

/*
 * Parse node->attrs and check them in TF's order (§5.1 / §5.5): strides (4 values, N and C
 * equal to 1, H and W > 0, equal for depthwise), dilations (4 values, N and C equal to 1, H and
 * W > 0), explicit_paddings (8 non-negative values zero on N and C when EXPLICIT, empty
 * otherwise). Errors: BF_EATTR "bad_attr" naming the attribute.
 */
bf_status bf_conv_parse_attrs(const bf_node *node, const bf_conv_spec *spec, bf_conv_attrs *a,
                              bf_error *err);

/*
 * Output size and pads of one spatial dimension, `dim_name` "rows" or "cols" (§3):
 * truncating division, SAME's odd pixel after the data, EXPLICIT pads given. `in` may be -1
 * (unknown): then *out = -1 and the pads are those known (EXPLICIT) or 0. Checks stride > 0
 * and dilation >= 1 before dividing, the filter size > 0, overflow, and a negative result.
 * Errors: BF_ESHAPE "bad_shape" (overflow: BF_ELIMIT "too_large"); the caller names the port.
 */
bf_status bf_conv_out_size(const char *dim_name, int64_t in, int64_t f, int64_t stride,
                           int64_t dil, bf_conv_padding padding, int64_t pad_before_in,
                           int64_t pad_after_in, int64_t *out, int64_t *pad_before,
                           int64_t *pad_after, bf_error *err);

/*
 * The whole inference of one block: attributes, port dtypes, ranks, the host shape vector
 * (filter_sizes / input_sizes) when its value is known, every shape rule of TF (§4, §5.2-§5.5)
 * that the known dims allow, then out[0]. When everything is known and valid, *g is the
 * geometry the kernels run and *complete is set; otherwise *complete is 0 and out[0] holds
 * what could be inferred (-1 elsewhere). g and complete may be NULL.
 */
bf_status bf_conv_infer(const bf_node *node, const bf_conv_spec *spec, const bf_port_info *in,
                        bf_port_info *out, bf_conv_geom *g, int *complete, bf_error *err);

/* The same from real tensors (for the kernels): fills infos from in[] and requires them known. */
bf_status bf_conv_geom_from_tensors(const bf_node *node, const bf_conv_spec *spec,
                                    const bf_tensor *const *in, bf_conv_geom *g,
                                    bf_error *err);

/* ---- the block glue every conv block uses as its descriptor functions ------------------ */

/* CPU scratch for the kernel plus, for float16/bfloat16, the float32 copies of a, b and out. */
size_t bf_conv_block_workspace_cpu(const bf_node *node, const bf_conv_spec *spec,
                                   const bf_port_info *in, const bf_port_info *out,
                                   const bf_exec *ex);
/* Run on the CPU: geometry from the tensors, dtype conversion, bf_conv_cpu_f32/_f64. */
bf_status bf_conv_block_run_cpu(const bf_node *node, const bf_conv_spec *spec,
                                const bf_tensor *const *in, bf_tensor *const *out,
                                const bf_exec *ex, bf_error *err);
/* GPU entry points, forwarding to conv_kernels.h (use_cudnn from the attr, 0 for depthwise). */
const char *bf_conv_block_gpu_unsupported(const bf_node *node, const bf_conv_spec *spec,
                                          const bf_port_info *in);
size_t bf_conv_block_workspace_cuda(const bf_node *node, const bf_conv_spec *spec,
                                    const bf_port_info *in, const bf_port_info *out,
                                    const bf_exec *ex);
bf_status bf_conv_block_run_cuda(const bf_node *node, const bf_conv_spec *spec,
                                 const bf_tensor *const *in, bf_tensor *const *out,
                                 const bf_exec *ex, bf_error *err);

/*
 * The descriptor functions of every convolution block: each reads its bf_conv_spec from
 * node->desc->impl. A block descriptor lists them with BF_CONV_BLOCK_FUNCTIONS.
 */
bf_status bf_conv_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err);
size_t bf_conv_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                  const bf_port_info *out, const bf_exec *ex);
bf_status bf_conv_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err);
const char *bf_conv_desc_gpu_unsupported(const bf_node *node, const bf_port_info *in);
size_t bf_conv_desc_workspace_cuda(const bf_node *node, const bf_port_info *in,
                                   const bf_port_info *out, const bf_exec *ex);
bf_status bf_conv_desc_run_cuda(const bf_node *node, const bf_tensor *const *in,
                                bf_tensor *const *out, const bf_exec *ex, bf_error *err);

/* conv_explain.c: the terms of one output element (bf_block_desc.explain). */
bf_status bf_conv_desc_explain(const bf_node *node, const bf_port_info *in, int out_port,
                               int64_t out_flat, bf_explain_term_cb cb, bf_explain_pad_cb pad_cb,
                               void *user, bf_explain_geom *geom, bf_error *err);
/* The same on a known geometry: the enumeration itself (operands as in conv_kernels.h, flat
 * offsets; the padded taps skipped, passed to pad_cb when it is not NULL, and counted in the
 * return value). out_flat must be < the output's numel. */
int64_t bf_conv_explain_terms(bf_conv_op op, const bf_conv_geom *g, int64_t out_flat,
                              bf_explain_term_cb cb, bf_explain_pad_cb pad_cb, void *user);

/* The gradient of a forward convolution as blocks (bf_block_desc.gradient): the backprop
 * blocks whose `grad` names it, with its attributes. */
bf_status bf_conv_desc_gradient(bf_grad_ctx *g, bf_error *err);

/* The gradient relations of the four backprop blocks (bf_block_desc.grad). */
extern const bf_grad_desc bf_conv2d_grad_filter, bf_conv2d_grad_input,
    bf_depthwise_grad_filter, bf_depthwise_grad_input;

#define BF_CONV_BLOCK_FUNCTIONS                                                               \
    .infer = bf_conv_desc_infer, .workspace_cpu = bf_conv_desc_workspace_cpu,                 \
    .run_cpu = bf_conv_desc_run_cpu, .gpu_unsupported = bf_conv_desc_gpu_unsupported,         \
    .workspace_cuda = bf_conv_desc_workspace_cuda, .run_cuda = bf_conv_desc_run_cuda,         \
    .explain = bf_conv_desc_explain

#endif /* BF_CONV_GEOM_H */
