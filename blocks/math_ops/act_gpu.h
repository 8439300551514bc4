/*
 * act_gpu.h - the GPU hooks of the activation blocks (relu.c, sigmoid.c, tanh.c and their
 * *_grad.c): every float dtype runs on the GPU through bf_act_cuda (act_cuda.h); integers
 * (Relu only) stay on the CPU. A block file writes BF_ACT_GPU_HOOKS(op) once and sets
 * .gpu_unsupported = act_gpu_unsupported, .run_cuda = act_run_cuda in its descriptor.
 */
#ifndef BF_ACT_GPU_H
#define BF_ACT_GPU_H

#include "act_cuda.h"
#include "block.h"

/* NULL for a float dtype, else the reason the block stays on the CPU. */
const char *bf_act_gpu_unsupported(bf_act_op op, const bf_port_info *in);
/* The run_cuda of every activation block: out[0] = op(in[0], in[1]). */
bf_status bf_act_run_cuda(bf_act_op op, const bf_tensor *const *in, bf_tensor *const *out,
                          const bf_exec *ex, bf_error *err);

#define BF_ACT_GPU_HOOKS(op)                                                                   \
    static const char *act_gpu_unsupported(const bf_node *node, const bf_port_info *in) {      \
        (void)node;                                                                            \
        return bf_act_gpu_unsupported(op, in);                                                 \
    }                                                                                          \
    static bf_status act_run_cuda(const bf_node *node, const bf_tensor *const *in,             \
                                 bf_tensor *const *out, const bf_exec *ex, bf_error *err) {    \
        (void)node;                                                                            \
        return bf_act_run_cuda(op, in, out, ex, err);                                          \
    }

#endif /* BF_ACT_GPU_H */
