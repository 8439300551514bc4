/*
 * pool_cuda.cu - the four pooling ops on the GPU (pool_geom.h: bf_pool_cuda), with results
 * equal to the CPU kernels' (pool_kernels_impl.h).
 *
 * cuDNN (cudnnPoolingForward / cudnnPoolingBackward, NHWC or NCHW descriptors) runs MaxPool,
 * AvgPool and AvgPoolGrad when it computes what the CPU computes:
 *  - the pads are symmetric (pad_top == pad_bottom, pad_left == pad_right): cuDNN has one pad
 *    per dimension, while TF's SAME puts the odd pixel after the data. With symmetric pads
 *    cuDNN's output size 1 + (H + 2p - k) / s is TF's, and padded taps never take part
 *    (CUDNN_POOLING_MAX ignores them; CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING divides by
 *    the real elements, as TF does);
 *  - float32 or float64 (float16 and bfloat16 go to our kernels, which sum in float exactly as
 *    the CPU does), no pooling over depth, a non-empty input and output, every tensor below
 *    2^31 elements.
 *  MaxPool then clamps its output to the dtype's lowest finite value (fmax, so a NaN becomes
 *  it too): TF starts every max there, so a window of -inf or NaN alone gives that value.
 *  AvgPoolGrad gives cuDNN dy as the forward output and a scratch buffer of the input's size
 *  (ex->workspace, bf_pool_cuda_workspace) as the forward input: cuDNN's average backward
 *  wants both but reads neither (TensorFlow hands it uninitialised buffers there).
 * Our own kernels run everything else, and always MaxPoolGrad: cuDNN's max backward sends a
 * window's gradient to one of its maxima without saying which (its CUDNN_POOLING_MAX mode is
 * not even deterministic), while TF sends it to the first maximum in row-major window order,
 * which is common in training (after a Relu, windows of zeros tie). Asymmetric pads
 * (TF's SAME with an odd total: we chose our own kernels over a CPU fallback or a padded
 * copy, which cannot keep an average's count), half precision and pooling over depth also go
 * there.
 *
 * Our kernels are gathers, one thread per output element, with no atomics: each does the CPU
 * kernel's operations in the CPU kernel's order, so the results are bitwise the CPU's. A max
 * starts from `lowest` and takes a tap only when strictly greater (NaN never wins); an average
 * sums the real taps in row-major window order in float (double for float64) and divides by
 * their count; a gradient element adds, in row-major output order, each window's dy (MaxPool:
 * when it is that window's first maximum, recomputed from x: the window's first real tap,
 * replaced only by a strictly greater one; AvgPool: dy times (T)(1 / count), the product
 * rounded before the addition, as the CPU does). float16 and bfloat16 compute in float and
 * round once. Indices are 64-bit: any size the session can hold runs.
 */
#include "nn_ops/pool_geom.h"

#include "devices/cuda_ctx.h"
#include "nn_ops/cuda/conv_cuda_device.cuh"

#include <cuda_runtime.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>

/* ---- our kernels ------------------------------------------------------------------------ */

/* The per-element functions are __host__ __device__, so that tests/cuda/test_pool_cuda_emu.cu
 * runs them on the host, for every element, against the CPU kernels. */
#define HD __host__ __device__ __forceinline__

typedef long long i64;

struct pgeo {
    i64 n, h, w, c, oh, ow, oc, kh, kw, kd, sh, sw, pt, pl;
    int nchw;
};

static pgeo pgeo_from(const bf_pool_geom *g) {
    pgeo p;
    p.n = g->n, p.h = g->h, p.w = g->w, p.c = g->c, p.oh = g->oh, p.ow = g->ow, p.oc = g->oc;
    p.kh = g->kh, p.kw = g->kw, p.kd = g->kd, p.sh = g->sh, p.sw = g->sw, p.pt = g->pt;
    p.pl = g->pl, p.nchw = g->nchw;
    return p;
}

/* Elements each op's kernel runs over: the output's (forward) or the input's (gradients). */
static i64 pool_total(bf_pool_op op, const pgeo &g) {
    if (op == BF_POOL_MAX || op == BF_POOL_AVG)
        return g.kd > 1 ? g.n * g.h * g.w * g.oc : g.n * g.oh * g.ow * g.c;
    return g.n * g.h * g.w * g.c;
}

/* Element offset of (n, y, x, ch) in a tensor of spatial size H x W and C channels. */
HD i64 at(int nchw, i64 n, i64 y, i64 x, i64 ch, i64 H, i64 W, i64 C) {
    return nchw ? ((n * C + ch) * H + y) * W + x : ((n * H + y) * W + x) * C + ch;
}

/* (n, y, x, ch) of flat offset i in such a tensor. */
HD void coords(int nchw, i64 i, i64 H, i64 W, i64 C, i64 *n, i64 *y, i64 *x, i64 *ch) {
    if (nchw) {
        *x = i % W, i /= W;
        *y = i % H, i /= H;
        *ch = i % C, *n = i / C;
    } else {
        *ch = i % C, i /= C;
        *x = i % W, i /= W;
        *y = i % H, *n = i / H;
    }
}

/* The real taps [lo, hi) of the window starting at `start` (pk_clip). */
HD void clip(i64 start, i64 k, i64 n, i64 *lo, i64 *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k < n ? start + k : n;
    if (*hi < *lo) *hi = *lo;
}

/* The windows (one dimension) holding position p: [*lo, *hi], empty when *lo > *hi. */
HD void windows_of(i64 p, i64 pad, i64 k, i64 s, i64 out, i64 *lo, i64 *hi) {
    i64 first = p + pad - k + 1; /* o * s >= first */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    *hi = (p + pad) / s; /* o * s <= p + pad */
    if (*hi > out - 1) *hi = out - 1;
}

/* a * b rounded, never fused into a following addition (the CPU does not fuse). */
HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
HD double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

/* MaxPool: output element i. */
template <typename T>
HD void max_fwd_at(const pgeo &g, const T *x, T *y, typename bf_acc<T>::type lowest, i64 i) {
    typedef typename bf_acc<T>::type A;
    if (g.kd > 1) { /* over depth (NHWC): kd channels to one, from the first */
        const T *xp = x + i * g.kd;
        A m = bf_ld(xp[0]);
        for (i64 q = 1; q < g.kd; q++) {
            A v = bf_ld(xp[q]);
            m = m < v ? v : m;
        }
        y[i] = bf_st<T>(m);
        return;
    }
    i64 n, oy, ox, ch;
    coords(g.nchw, i, g.oh, g.ow, g.c, &n, &oy, &ox, &ch);
    i64 h0, h1, w0, w1;
    clip(oy * g.sh - g.pt, g.kh, g.h, &h0, &h1);
    clip(ox * g.sw - g.pl, g.kw, g.w, &w0, &w1);
    A m = lowest;
    for (i64 ih = h0; ih < h1; ih++)
        for (i64 iw = w0; iw < w1; iw++) {
            A v = bf_ld(x[at(g.nchw, n, ih, iw, ch, g.h, g.w, g.c)]);
            m = v > m ? v : m;
        }
    y[i] = bf_st<T>(m);
}

/* AvgPool: output element i. */
template <typename T> HD void avg_fwd_at(const pgeo &g, const T *x, T *y, i64 i) {
    typedef typename bf_acc<T>::type A;
    i64 n, oy, ox, ch;
    coords(g.nchw, i, g.oh, g.ow, g.c, &n, &oy, &ox, &ch);
    i64 h0, h1, w0, w1;
    clip(oy * g.sh - g.pt, g.kh, g.h, &h0, &h1);
    clip(ox * g.sw - g.pl, g.kw, g.w, &w0, &w1);
    A s = A(0);
    for (i64 ih = h0; ih < h1; ih++)
        for (i64 iw = w0; iw < w1; iw++) s += bf_ld(x[at(g.nchw, n, ih, iw, ch, g.h, g.w, g.c)]);
    y[i] = bf_st<T>(s / (A)((h1 - h0) * (w1 - w0)));
}

/* MaxPoolGrad: input element i gets each window's dy where it is the window's first maximum
 * (recomputed from x). */
template <typename T> HD void max_bwd_at(const pgeo &g, const T *x, const T *dy, T *dx, i64 i) {
    typedef typename bf_acc<T>::type A;
    i64 n, py, px, ch;
    coords(g.nchw, i, g.h, g.w, g.c, &n, &py, &px, &ch);
    i64 oy0, oy1, ox0, ox1;
    windows_of(py, g.pt, g.kh, g.sh, g.oh, &oy0, &oy1);
    windows_of(px, g.pl, g.kw, g.sw, g.ow, &ox0, &ox1);
    A acc = A(0);
    for (i64 oy = oy0; oy <= oy1; oy++) {
        i64 h0, h1;
        clip(oy * g.sh - g.pt, g.kh, g.h, &h0, &h1);
        for (i64 ox = ox0; ox <= ox1; ox++) {
            i64 w0, w1;
            clip(ox * g.sw - g.pl, g.kw, g.w, &w0, &w1);
            i64 by = h0, bx = w0; /* the window holds (py, px): it is not empty */
            A best = bf_ld(x[at(g.nchw, n, h0, w0, ch, g.h, g.w, g.c)]);
            for (i64 ih = h0; ih < h1; ih++)
                for (i64 iw = ih == h0 ? w0 + 1 : w0; iw < w1; iw++) {
                    A v = bf_ld(x[at(g.nchw, n, ih, iw, ch, g.h, g.w, g.c)]);
                    if (best < v) best = v, by = ih, bx = iw;
                }
            if (by == py && bx == px) acc += bf_ld(dy[at(g.nchw, n, oy, ox, ch, g.oh, g.ow, g.c)]);
        }
    }
    dx[i] = bf_st<T>(acc);
}

/* AvgPoolGrad: input element i gets each window's dy * (T)(1 / count). */
template <typename T> HD void avg_bwd_at(const pgeo &g, const T *dy, T *dx, i64 i) {
    typedef typename bf_acc<T>::type A;
    i64 n, py, px, ch;
    coords(g.nchw, i, g.h, g.w, g.c, &n, &py, &px, &ch);
    i64 oy0, oy1, ox0, ox1;
    windows_of(py, g.pt, g.kh, g.sh, g.oh, &oy0, &oy1);
    windows_of(px, g.pl, g.kw, g.sw, g.ow, &ox0, &ox1);
    A acc = A(0);
    for (i64 oy = oy0; oy <= oy1; oy++) {
        i64 h0, h1;
        clip(oy * g.sh - g.pt, g.kh, g.h, &h0, &h1);
        for (i64 ox = ox0; ox <= ox1; ox++) {
            i64 w0, w1;
            clip(ox * g.sw - g.pl, g.kw, g.w, &w0, &w1);
            const A coeff = (A)(1.0 / (double)((h1 - h0) * (w1 - w0)));
            acc = acc + mul_rn(bf_ld(dy[at(g.nchw, n, oy, ox, ch, g.oh, g.ow, g.c)]), coeff);
        }
    }
    dx[i] = bf_st<T>(acc);
}

#define GRID_STRIDE(i, total)                                                                      \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (total);                          \
         i += (i64)gridDim.x * blockDim.x)

template <typename T>
__global__ void max_fwd(pgeo g, const T *__restrict__ x, T *__restrict__ y, double lowest,
                        i64 total) {
    GRID_STRIDE(i, total) max_fwd_at<T>(g, x, y, (typename bf_acc<T>::type)lowest, i);
}

template <typename T>
__global__ void avg_fwd(pgeo g, const T *__restrict__ x, T *__restrict__ y, i64 total) {
    GRID_STRIDE(i, total) avg_fwd_at<T>(g, x, y, i);
}

template <typename T>
__global__ void max_bwd(pgeo g, const T *__restrict__ x, const T *__restrict__ dy,
                        T *__restrict__ dx, i64 total) {
    GRID_STRIDE(i, total) max_bwd_at<T>(g, x, dy, dx, i);
}

template <typename T>
__global__ void avg_bwd(pgeo g, const T *__restrict__ dy, T *__restrict__ dx, i64 total) {
    GRID_STRIDE(i, total) avg_bwd_at<T>(g, dy, dx, i);
}

/* y = max(y, lowest), NaN -> lowest: TF's start of a max, after cuDNN's. */
template <typename T>
__global__ void clamp_lowest(T *__restrict__ y, double lowest_d, i64 total) {
    typedef typename bf_acc<T>::type A;
    const A lowest = (A)lowest_d;
    GRID_STRIDE(i, total) {
        A v = bf_ld(y[i]);
        if (!(v >= lowest)) y[i] = bf_st<T>(lowest);
    }
}

static int grid_for(i64 total, int threads) {
    i64 b = (total + threads - 1) / threads;
    return (int)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

enum { THREADS = 256 };

template <typename T>
static void launch_own(bf_pool_op op, const pgeo &g, const void *a, const void *b, void *out,
                       double lowest, cudaStream_t st) {
    const i64 total = pool_total(op, g);
    const int grid = grid_for(total, THREADS);
    switch (op) {
    case BF_POOL_MAX:
        max_fwd<T><<<grid, THREADS, 0, st>>>(g, (const T *)a, (T *)out, lowest, total);
        break;
    case BF_POOL_AVG: avg_fwd<T><<<grid, THREADS, 0, st>>>(g, (const T *)a, (T *)out, total); break;
    case BF_POOL_MAX_GRAD:
        max_bwd<T><<<grid, THREADS, 0, st>>>(g, (const T *)a, (const T *)b, (T *)out, total);
        break;
    case BF_POOL_AVG_GRAD:
        avg_bwd<T><<<grid, THREADS, 0, st>>>(g, (const T *)a, (T *)out, total);
        break;
    }
}

template <typename T> static void launch_clamp(void *y, double lowest, i64 total, cudaStream_t st) {
    clamp_lowest<T><<<grid_for(total, THREADS), THREADS, 0, st>>>((T *)y, lowest, total);
}

/* ---- cuDNN ---------------------------------------------------------------------------------- */

/* Why cuDNN does not run this case, or NULL when it does. */
static const char *cudnn_declines(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt) {
    if (op == BF_POOL_MAX_GRAD) return "first-maximum rule";
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64) return "half precision";
    if (g->kd > 1) return "pooling over depth";
    if (g->pt != g->pb || g->pl != g->pr) return "asymmetric padding";
    if (g->n < 1 || g->h < 1 || g->w < 1 || g->c < 1 || g->oh < 1 || g->ow < 1)
        return "an empty input";
    const int64_t big = INT_MAX;
    if (g->n * g->h * g->w * g->c > big || g->n * g->oh * g->ow * g->c > big || g->kh > big ||
        g->kw > big || g->sh > big || g->sw > big)
        return "2^31 elements or more";
    return NULL;
}

extern "C" size_t bf_pool_cuda_workspace(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                                         const bf_exec *ex) {
    (void)ex;
    if (op != BF_POOL_AVG_GRAD || cudnn_declines(op, g, dt)) return 0;
    return (size_t)(g->n * g->h * g->w * g->c) * bf_dtype_size(dt);
}

/* Run op through cuDNN (`scratch`: AvgPoolGrad's unread forward input). BF_EUNSUPPORTED (with
 * *why) sends the caller to our kernels. */
static bf_status run_cudnn(bf_cuda_ctx *c, bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                           const void *a, void *out, void *scratch, cudaStream_t stream,
                           const char **why, bf_error *err) {
    cudnnDataType_t data = dt == BF_DTYPE_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t fmt = g->nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    cudnnPoolingMode_t mode =
        op == BF_POOL_MAX ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    cudnnPoolingDescriptor_t pd = NULL;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    const char *what = "describing the pooling to cuDNN";
    int on = 0, oc = 0, oh = 0, ow = 0;
    cudnnStatus_t s = cudnnSetStream(c->cudnn, stream);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreatePoolingDescriptor(&pd);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateTensorDescriptor(&xd);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateTensorDescriptor(&yd);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetPooling2dDescriptor(pd, mode, CUDNN_NOT_PROPAGATE_NAN, (int)g->kh, (int)g->kw,
                                        (int)g->pt, (int)g->pl, (int)g->sh, (int)g->sw);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(xd, fmt, data, (int)g->n, (int)g->c, (int)g->h, (int)g->w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(yd, fmt, data, (int)g->n, (int)g->c, (int)g->oh,
                                       (int)g->ow);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnGetPooling2dForwardOutputDim(pd, xd, &on, &oc, &oh, &ow);
    bf_status rc = BF_OK;
    if (s == CUDNN_STATUS_SUCCESS &&
        (on != g->n || oc != g->c || oh != g->oh || ow != g->ow)) {
        *why = "cuDNN computes another output size";
        rc = BF_EUNSUPPORTED;
    } else if (s == CUDNN_STATUS_SUCCESS) {
        const float f1 = 1.0f, f0 = 0.0f;
        const double d1 = 1.0, d0 = 0.0;
        const void *one = dt == BF_DTYPE_F64 ? (const void *)&d1 : (const void *)&f1;
        const void *zero = dt == BF_DTYPE_F64 ? (const void *)&d0 : (const void *)&f0;
        if (op == BF_POOL_AVG_GRAD) {
            what = "cudnnPoolingBackward";
            s = cudnnPoolingBackward(c->cudnn, pd, one, yd, a, yd, a, xd, scratch, zero, xd,
                                     out);
        } else {
            what = "cudnnPoolingForward";
            s = cudnnPoolingForward(c->cudnn, pd, one, xd, a, zero, yd, out);
        }
    }
    if (rc == BF_OK && s != CUDNN_STATUS_SUCCESS) {
        if (s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM) {
            *why = cudnnGetErrorString(s);
            rc = BF_EUNSUPPORTED;
        } else {
            rc = bf_err(err, BF_EDEVICE, "cudnn", "%s: %s", what, cudnnGetErrorString(s));
        }
    }
    if (yd) (void)cudnnDestroyTensorDescriptor(yd);
    if (xd) (void)cudnnDestroyTensorDescriptor(xd);
    if (pd) (void)cudnnDestroyPoolingDescriptor(pd);
    return rc;
}

/* ---- the entry point ------------------------------------------------------------------------ */

static const char *op_name(bf_pool_op op) {
    switch (op) {
    case BF_POOL_MAX: return "maxpool";
    case BF_POOL_MAX_GRAD: return "maxpool grad";
    case BF_POOL_AVG: return "avgpool";
    default: return "avgpool grad";
    }
}

extern "C" bf_status bf_pool_cuda(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                                  const void *a, const void *b, void *out, double lowest,
                                  const bf_exec *ex, bf_error *err) {
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "no GPU pooling for dtype %s",
                      bf_dtype_name(dt));
    if (!ex) return bf_err(err, BF_EINTERNAL, "no_exec", "bf_pool_cuda needs a bf_exec");
    bf_cuda_ctx *c = (bf_cuda_ctx *)ex->device_ctx;
    cudaStream_t stream = (cudaStream_t)ex->stream;
    char *note = ex->note && ex->note_size ? ex->note : NULL;
    if (c) {
        cudaError_t e = cudaSetDevice(c->ordinal);
        if (e != cudaSuccess)
            return bf_err(err, BF_EDEVICE, "cuda", "cudaSetDevice: %s", cudaGetErrorString(e));
        if (!stream) stream = c->stream;
    }
    const char *why = c ? cudnn_declines(op, g, dt) : "no cuDNN handle";
    const size_t scratch = why ? 0 : bf_pool_cuda_workspace(op, g, dt, ex);
    if (!why && scratch && (!ex->workspace || ex->workspace_size < scratch))
        why = "workspace smaller than planned";
    if (!why) {
        pthread_mutex_lock(&c->lock);
        bf_status rc = run_cudnn(c, op, g, dt, a, out, ex->workspace, stream, &why, err);
        pthread_mutex_unlock(&c->lock);
        if (rc == BF_OK && op == BF_POOL_MAX) {
            const i64 total = g->n * g->oh * g->ow * g->c;
            if (dt == BF_DTYPE_F64) launch_clamp<double>(out, lowest, total, stream);
            else launch_clamp<float>(out, lowest, total, stream);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                return bf_err(err, BF_EDEVICE, "cuda", "launching the clamp of MaxPool: %s",
                              cudaGetErrorString(e));
        }
        if (rc == BF_OK && note)
            snprintf(note, ex->note_size, "cudnn %s (%s)", op_name(op),
                     g->nchw ? "NCHW" : "NHWC");
        if (rc != BF_EUNSUPPORTED) return rc;
    }
    pgeo p = pgeo_from(g);
    switch (dt) {
    case BF_DTYPE_F64: launch_own<double>(op, p, a, b, out, lowest, stream); break;
    case BF_DTYPE_F16: launch_own<__half>(op, p, a, b, out, lowest, stream); break;
    case BF_DTYPE_BF16: launch_own<__nv_bfloat16>(op, p, a, b, out, lowest, stream); break;
    default: launch_own<float>(op, p, a, b, out, lowest, stream); break;
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return bf_err(err, BF_EDEVICE, "cuda", "launching our %s kernel: %s", op_name(op),
                      cudaGetErrorString(e));
    if (note)
        snprintf(note, ex->note_size, "own %s kernel (%s)", op_name(op),
                 op == BF_POOL_MAX_GRAD ? "TF's first-maximum rule" : why);
    return BF_OK;
}
