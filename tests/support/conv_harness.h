/*
 * conv_harness.h - driving the convolution blocks through their descriptors in tests, the way
 * the session does: a node from attribute JSON, infer from the input tensors, allocate the
 * inferred output, plan the workspace, run_cpu on a real thread pool, or run_cuda on the
 * first GPU. Also small tensor builders (values given as doubles, converted to any dtype).
 */
#ifndef BF_CONV_HARNESS_H
#define BF_CONV_HARNESS_H

#include "block.h"
#include "bf_test.h"
#include "device.h"

/* The six descriptors (blocks/nn_ops/). */
extern const bf_block_desc bf_block_conv2d, bf_block_conv2d_backprop_filter,
    bf_block_conv2d_backprop_input, bf_block_depthwise_conv2d_native,
    bf_block_depthwise_conv2d_native_backprop_filter,
    bf_block_depthwise_conv2d_native_backprop_input;

/* The descriptor of a TF op name ("Conv2DBackpropFilter"), or NULL. */
const bf_block_desc *ct_desc(const char *op);

/* A 4-or-fewer-D tensor of dtype dt with values v (numel of them; v NULL: zeros). */
bf_tensor *ct_tensor(bf_dtype dt, int rank, const int64_t *dims, const double *v);
/* A 1-D int32 tensor of n values. */
bf_tensor *ct_i32(int n, const int64_t *v);

/*
 * Run block `d` with attributes `attrs_json` on inputs in[0..n_inputs) using `threads`
 * threads. On success *out is the output tensor (caller frees). On failure *out is NULL and
 * err is filled by infer or run_cpu.
 */
bf_status ct_run(const bf_block_desc *d, const char *attrs_json, bf_tensor *const *in,
                 int threads, bf_tensor **out, bf_error *err);

/* Only infer, from port infos; *out is the inferred output info. */
bf_status ct_infer(const bf_block_desc *d, const char *attrs_json, const bf_port_info *in,
                   bf_port_info *out, bf_error *err);

/* The tensor's elements as doubles (malloc'd; caller frees with free()); NULL without memory. */
double *ct_values(const bf_tensor *t);

/* ---- the GPU --------------------------------------------------------------------------- */

/* The first GPU and this process's state on it: a stream and the device context (cuDNN). */
typedef struct ct_gpu {
    bf_device dev;
    void *stream, *ctx;
} ct_gpu;

/*
 * True when a GPU can be used; `why` then gets its description, else the reason none can. The
 * probe runs in a child process, so that a test program never initialises CUDA before Check
 * forks its tests (CUDA does not survive a fork). In a CUDA build it first points
 * BLOCKFLOW_CUDA_BACKEND at the build's libblockflow_cuda.so when the environment names none:
 * call it at the start of main.
 */
bool ct_gpu_present(char *why, size_t why_size);

/*
 * Open the first GPU (bf_cuda_probe) and make this process's stream and device context on it
 * (ops->session_init). Meant for once per test process, after Check has forked. On failure g
 * holds nothing to close. Errors: BF_EDEVICE "no_gpu" with the probe's reason, or those of
 * session_init.
 */
bf_status ct_gpu_open(ct_gpu *g, bf_error *err);
void ct_gpu_close(ct_gpu *g);

/*
 * ct_run on the GPU, the way the session runs a block there: infer, then gpu_unsupported (a
 * reason is returned as BF_EUNSUPPORTED "gpu_unsupported" naming it), inputs uploaded into
 * device tensors except BF_PORT_HOST ports (those stay host tensors), the output and the
 * workspace_cuda bytes allocated on the device, the output pre-filled with 0xff bytes (NaN in
 * every float format, so that an element the kernel forgets to write cannot pass), run_cuda,
 * sync, download. On success *out is a host tensor (caller frees); on failure *out is NULL and
 * err says why. note (note_size bytes, may be 0) gets the kernel's note either way. Every
 * device allocation is freed before returning.
 */
bf_status ct_run_gpu(ct_gpu *g, const bf_block_desc *d, const char *attrs_json,
                     bf_tensor *const *in, bf_tensor **out, char *note, size_t note_size,
                     bf_error *err);

#endif /* BF_CONV_HARNESS_H */
