/*
 * act_gpu.c - the GPU glue of the activation blocks (act_gpu.h): which dtypes run there, and
 * the call of their kernel on the run's tensors.
 */
#include "act_gpu.h"

#include "tensor.h"

static const char *const names[] = {"Relu",      "Sigmoid",     "Tanh",
                                    "ReluGrad",  "SigmoidGrad", "TanhGrad"};

const char *bf_act_gpu_unsupported(bf_act_op op, const bf_port_info *in) {
    switch (in[0].dtype) {
    case BF_DTYPE_F32:
    case BF_DTYPE_F64:
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: return NULL;
    case BF_DTYPE_I32:
    case BF_DTYPE_I64: return op == BF_ACT_RELU ? "integer Relu on the CPU" : "integer dtype";
    default: return "dtype not known before running";
    }
}

bf_status bf_act_run_cuda(bf_act_op op, const bf_tensor *const *in, bf_tensor *const *out,
                          const bf_exec *ex, bf_error *err) {
    bf_tensor *z = out[0];
    if (z->numel == 0) return BF_OK;
    if (bf_act_binary(op) && in[1]->numel != z->numel) /* infer makes them equal */
        return bf_err(err, BF_EINTERNAL, "internal", "%s: operands of %lld and %lld elements",
                      (unsigned)op < (unsigned)BF_COUNT(names) ? names[op] : "?",
                      (long long)z->numel, (long long)in[1]->numel);
    return bf_act_cuda(op, z->dtype, in[0]->data, bf_act_binary(op) ? in[1]->data : NULL,
                       z->data, z->numel, ex, err);
}
