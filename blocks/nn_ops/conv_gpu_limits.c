/*
 * conv_gpu_limits.c - which convolutions the GPU kernels take (bf_conv_cuda_unsupported,
 * conv_kernels.h): plain arithmetic on the geometry, with no CUDA call, so that both the core
 * (placing a block before any GPU code runs) and the CUDA backend (libblockflow_cuda.so,
 * checking again before it runs) compile this file. In a build without CUDA it declines all.
 */
#include "conv_kernels.h"

#include <limits.h>

#ifdef BF_HAVE_CUDA
/* True when the product of the four fits in an int (all are >= 0): the kernels index with it. */
static bool fits_int(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t r;
    return bf_i64_mul(a, b, &r) && bf_i64_mul(r, c, &r) && bf_i64_mul(r, d, &r) && r <= INT_MAX;
}
#endif

const char *bf_conv_cuda_unsupported(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                                     int use_cudnn) {
    (void)op, (void)use_cudnn;
#ifndef BF_HAVE_CUDA
    (void)g, (void)dt;
    return "built without CUDA";
#else
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        return "the GPU convolution kernels take half, bfloat16, float and double only";
    if (g->groups < 1 || g->k_in_c * g->groups != g->in_c || g->out_c % g->groups)
        return "channels are not divisible into the groups";
    if (g->stride_h < 1 || g->stride_w < 1 || g->dil_h < 1 || g->dil_w < 1)
        return "strides and dilations must be positive";
    if (g->pad_top < 0 || g->pad_bottom < 0 || g->pad_left < 0 || g->pad_right < 0)
        return "negative padding";
    if (g->n < 0 || g->in_h < 0 || g->in_w < 0 || g->in_c < 0 || g->k_h < 0 || g->k_w < 0 ||
        g->out_c < 0 || g->out_h < 0 || g->out_w < 0)
        return "negative dimension";
    if (g->pad_top + g->pad_bottom > INT_MAX / 4 || g->pad_left + g->pad_right > INT_MAX / 4 ||
        g->stride_h > INT_MAX / 4 || g->stride_w > INT_MAX / 4 || g->dil_h > INT_MAX / 4 ||
        g->dil_w > INT_MAX / 4)
        return "padding, stride or dilation too large for the GPU kernels";
    /* The input as the cuDNN path pads it: the pads cuDNN cannot take (the difference between
     * the two sides, conv_cuda.cu's plan_pad) are added to a copy. */
    int64_t dh = g->pad_top - g->pad_bottom, dw = g->pad_left - g->pad_right;
    int64_t hp = g->in_h + (dh < 0 ? -dh : dh), wp = g->in_w + (dw < 0 ? -dw : dw);
    if (!fits_int(g->n, g->in_h + g->pad_top + g->pad_bottom, g->in_w + g->pad_left + g->pad_right,
                  g->in_c) ||
        !fits_int(g->n, g->out_h, g->out_w, g->out_c) ||
        !fits_int(g->k_h, g->k_w, g->k_in_c, g->out_c) || !fits_int(g->n, hp, wp, g->in_c))
        return "a tensor has 2^31 elements or more (the GPU kernels index with 32 bits)";
    if (!bf_conv_is_depthwise(g) && g->groups > 65535) return "more than 65535 groups";
    if (g->k_in_c > 65535 * 64 || (g->groups > 0 && g->out_c / g->groups > 65535 * 64))
        return "more than 4M channels per group";
    return NULL;
#endif
}
