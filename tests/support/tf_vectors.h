/*
 * tf_vectors.h - TensorFlow's conformance vectors (shared/conformance/tf_vectors.json: 81
 * literal cases and 71 derived ones) as checks of the six convolution blocks, shared by the
 * CPU test (test_conv_vectors) and the GPU test (test_conv_vectors_gpu) so that both build the
 * same inputs and judge with the same tolerances.
 *
 * A vector runs in a dtype (float32 or float64) and a layout: NHWC, or NCHW for the cases TF
 * also ran in NCHW (activations transposed in, results transposed back; filters stay HWIO).
 * SeparableConv2D_composite runs DepthwiseConv2dNative, then a 1x1 Conv2D with VALID.
 *
 * On the CPU a vector runs through run_cpu (ct_run); on the GPU through run_cuda (ct_run_gpu),
 * either with cuDNN or with our own CUDA kernels, chosen by the Conv2D ops' use_cudnn_on_gpu.
 * The depthwise ops have no such attribute (and refuse it): they always run our own kernels.
 */
#ifndef BF_TF_VECTORS_H
#define BF_TF_VECTORS_H

#include "conv_harness.h"

/* Where a vector runs. */
typedef enum tv_path {
    TV_CPU = 0,   /* run_cpu on 2 threads; no use_cudnn_on_gpu attribute is given */
    TV_GPU_CUDNN, /* run_cuda, the Conv2D ops with use_cudnn_on_gpu true */
    TV_GPU_OWN,   /* run_cuda, the Conv2D ops with use_cudnn_on_gpu false */
} tv_path;

/* How one vector runs. */
typedef struct tv_target {
    bf_dtype dtype; /* BF_DTYPE_F32 or BF_DTYPE_F64 */
    int nchw;       /* 1: NCHW (only meaningful where tv_nchw_tested) */
    tv_path path;
    ct_gpu *gpu;    /* the open GPU for the GPU paths (NULL for TV_CPU) */
} tv_target;

/*
 * Read and parse the vectors from $BF_SHARED_DIR/conformance, falling back to the copy in
 * tests/data. Call once, before Check forks. Nothing is loaded when neither file can be read
 * or parsed (then tv_count() is 0 and tv_all_loaded says so).
 */
void tv_load(void);

/* Number of loaded vectors (literal first, then derived), and whether all 81 + 71 are there
 * (false: msg says what is missing). */
int tv_count(void);
bool tv_all_loaded(char *msg, size_t msg_size);

/* Vector i's id ("co.fwd.1x1Filter"), whether TF also ran it in NCHW, and whether it runs a
 * Conv2D op (one with use_cudnn_on_gpu, so that TV_GPU_CUDNN differs from TV_GPU_OWN). */
const char *tv_id(int i);
bool tv_nchw_tested(int i);
bool tv_has_conv2d(int i);

/* "float32, NHWC" on the CPU, "float32, NHWC, GPU cuDNN" or "float32, NHWC, GPU own kernels":
 * the target as messages name it. Returns buf. */
const char *tv_target_str(const tv_target *t, char *buf, size_t size);

/*
 * Build vector i's inputs for target t, run its op through the block descriptors (ct_run on 2
 * threads, or ct_run_gpu) and compare the output shape and values with TF's expected ones:
 * float32 within atol 1e-4 + rtol 1e-5 (TF's own float32 tolerance on values up to ~1e5; the
 * cuDNN path computes float32 without TF32), float64 within atol 1e-9 + rtol 1e-12, on every
 * path. Returns true when it matches; otherwise false with msg (starting with the vector id
 * and the target) saying why. A block that cannot run on the GPU (gpu_unsupported) fails: the
 * GPU kernels cover NCHW, dilations, groups and every padding, which is all these vectors use.
 * note (note_size bytes, may be 0) gets the GPU kernels' notes ("" on the CPU); the separable
 * composite's two runs are labelled "depthwise: ...; pointwise: ...".
 */
bool tv_check(int i, const tv_target *t, char *msg, size_t msg_size, char *note,
              size_t note_size);

#endif /* BF_TF_VECTORS_H */
