/*
 * bench_gpu_cuda.c - `blockflow bench --device gpu`: the cases of bench/shapes.json on the first
 * GPU. Part of the CUDA backend (libblockflow_cuda.so): the program reaches it through
 * bench/bench_gpu.c and the backend's table (runtime/devices/cuda_api.h). Per case and op it times, with CUDA events on the session stream (warmup runs, then
 * the median of --rounds runs):
 *   cudnn   our cuDNN path (bf_conv_cuda use_cudnn=1: filter transpose, pad/crop, cached
 *           heuristic algorithm; depthwise runs our own kernels there, as in TensorFlow);
 *   fastest the same with BF_CUDNN_AUTOTUNE=1 BF_CUDNN_DETERMINISTIC=0 (the fastest
 *           algorithm by cudnnFind*, deterministic or not, as TensorFlow autotunes);
 *   own     our own kernels (use_cudnn=0);
 *   best-d  cuDNN called directly with the fastest deterministic algorithm cudnnFind*
 *           reports (no transposes or padded copies: a lower bound for our cuDNN path);
 *   best    the same over all algorithms, deterministic or not (atomics);
 *   floor   max(2*MACs / measured FMA rate, minimum bytes / measured bandwidth), where the
 *           FMA rate is that of cuDNN's best algorithm on a large 1x1 convolution (a GEMM) in
 *           the same dtype and math mode, and the bandwidth that of a device-to-device copy.
 * Without a GPU it prints "no GPU: <reason>" and returns 2 (as bench_gpu.c does without CUDA
 * in the build or without the backend).
 *
 * Options (unknown ones from `blockflow bench` are ignored): --cases FILE (default
 * bench/shapes.json), --ops LIST (comma-separated TF op names), --rounds N (timed runs,
 * default 10), --warmup N (default 3), --dtype float32|float64|float16|bfloat16.
 */
#include "bench_gpu.h"

#include "device.h"
#include "devices/cuda_ctx.h"
#include "exec.h"
#include "half.h"
#include "nn_ops/conv_kernels.h"

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gbench_opts {
    const char *cases, *ops;
    int rounds, warmup;
    bf_dtype dt;
} gbench_opts;

/* One timed thing: run() enqueues the work on the stream. */
typedef bf_status (*gbench_fn)(void *arg, bf_error *err);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median milliseconds of `rounds` runs after `warmup` runs, or -1 with err filled. */
static double time_median(cudaStream_t st, gbench_fn fn, void *arg, int warmup, int rounds,
                          bf_error *err) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    double *t = calloc((size_t)rounds, sizeof *t);
    double med = -1;
    if (!t || cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        bf_err(err, BF_EDEVICE, "cuda", "cannot create CUDA events");
        goto out;
    }
    for (int i = 0; i < warmup; i++)
        if (fn(arg, err) != BF_OK) goto out;
    for (int i = 0; i < rounds; i++) {
        float ms = 0;
        cudaError_t e = cudaEventRecord(e0, st);
        if (e == cudaSuccess && fn(arg, err) != BF_OK) goto out;
        if (e == cudaSuccess) e = cudaEventRecord(e1, st);
        if (e == cudaSuccess) e = cudaEventSynchronize(e1);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
        if (e != cudaSuccess) {
            bf_err(err, BF_EDEVICE, "cuda", "timing: %s", cudaGetErrorString(e));
            goto out;
        }
        t[i] = ms;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp_double);
    med = rounds % 2 ? t[rounds / 2] : 0.5 * (t[rounds / 2 - 1] + t[rounds / 2]);
out:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    free(t);
    return med;
}

/* ---- our paths ----------------------------------------------------------------------------- */

typedef struct ours_arg {
    bf_conv_op op;
    const bf_conv_geom *g;
    bf_dtype dt;
    int use_cudnn;
    const void *a, *b;
    void *out;
    bf_exec *ex;
} ours_arg;

static bf_status run_ours(void *arg, bf_error *err) {
    ours_arg *o = arg;
    return bf_conv_cuda(o->op, o->g, o->dt, o->use_cudnn, o->a, o->b, o->out, o->ex, err);
}

/* ---- cuDNN directly ------------------------------------------------------------------------ */

typedef struct direct {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    bf_conv_op op;
    bf_dtype dt;
    int algo;
    size_t ws_bytes;
    void *ws, *dx, *dw, *dy; /* x (padded size), filter (cuDNN layout), y */
    int64_t nx, nw, ny;      /* their element counts */
    char algo_name[24];
} direct;

/* Cleanup: destroy/free failures are ignored (nothing to do about them at this point). */
static void direct_free(direct *d) {
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
    cudaFree(d->ws), cudaFree(d->dx), cudaFree(d->dw), cudaFree(d->dy);
    memset(d, 0, sizeof *d);
}

#define DTRY(call)                                                                                 \
    do {                                                                                           \
        cudnnStatus_t s_ = (call);                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            return bf_err(err, BF_EDEVICE, "cudnn", "%s: %s", #call, cudnnGetErrorString(s_));     \
    } while (0)
#define CTRY(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return bf_err(err, BF_EDEVICE, "cuda", "%s: %s", #call, cudaGetErrorString(e_));       \
    } while (0)

/* Describe the case to cuDNN (asymmetric pads as a padded input with the common padding),
 * find the fastest algorithm whose math is allowed (float32: no TF32) and, with det_only,
 * that is deterministic; allocate its buffers. */
static bf_status direct_make(direct *d, cudnnHandle_t h, bf_conv_op op, const bf_conv_geom *g,
                             bf_dtype dt, bool det_only, bf_error *err) {
    memset(d, 0, sizeof *d);
    d->h = h, d->op = op, d->dt = dt;
    cudnnDataType_t data = dt == BF_DTYPE_F64    ? CUDNN_DATA_DOUBLE
                           : dt == BF_DTYPE_F16  ? CUDNN_DATA_HALF
                           : dt == BF_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16
                                                 : CUDNN_DATA_FLOAT;
    cudnnDataType_t comp = dt == BF_DTYPE_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int ct = (int)BF_MIN(g->pad_top, g->pad_bottom), cl = (int)BF_MIN(g->pad_left, g->pad_right);
    int hp = (int)(g->in_h + g->pad_top + g->pad_bottom) - 2 * ct;
    int wp = (int)(g->in_w + g->pad_left + g->pad_right) - 2 * cl;
    cudnnTensorFormat_t fmt = g->nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    DTRY(cudnnCreateTensorDescriptor(&d->x));
    DTRY(cudnnCreateTensorDescriptor(&d->y));
    DTRY(cudnnCreateFilterDescriptor(&d->w));
    DTRY(cudnnCreateConvolutionDescriptor(&d->conv));
    DTRY(cudnnSetTensor4dDescriptor(d->x, fmt, data, (int)g->n, (int)g->in_c, hp, wp));
    DTRY(cudnnSetTensor4dDescriptor(d->y, fmt, data, (int)g->n, (int)g->out_c, (int)g->out_h,
                                    (int)g->out_w));
    DTRY(cudnnSetFilter4dDescriptor(d->w, data, fmt, (int)g->out_c, (int)g->k_in_c, (int)g->k_h,
                                    (int)g->k_w));
    DTRY(cudnnSetConvolution2dDescriptor(d->conv, ct, cl, (int)g->stride_h, (int)g->stride_w,
                                         (int)g->dil_h, (int)g->dil_w, CUDNN_CROSS_CORRELATION,
                                         comp));
    DTRY(cudnnSetConvolutionGroupCount(d->conv, (int)g->groups));
    DTRY(cudnnSetConvolutionMathType(d->conv, dt == BF_DTYPE_F32   ? CUDNN_FMA_MATH
                                              : dt == BF_DTYPE_F64 ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_TENSOR_OP_MATH));
    size_t es = bf_dtype_size(dt);
    d->nx = g->n * hp * wp * g->in_c;
    d->nw = g->k_h * g->k_w * g->k_in_c * g->out_c;
    d->ny = g->n * g->out_h * g->out_w * g->out_c;
    CTRY(cudaMalloc(&d->dx, (size_t)d->nx * es + 1));
    CTRY(cudaMalloc(&d->dw, (size_t)d->nw * es + 1));
    CTRY(cudaMalloc(&d->dy, (size_t)d->ny * es + 1));
    /* Zeros for cudnnFind (the caller uploads random data before timing: zeros can run faster
     * than real data). */
    CTRY(cudaMemset(d->dx, 0, (size_t)d->nx * es));
    CTRY(cudaMemset(d->dw, 0, (size_t)d->nw * es));
    CTRY(cudaMemset(d->dy, 0, (size_t)d->ny * es));

    int n = 0, found = 0;
    enum { K = 16 };
    if (op == BF_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t r[K];
        DTRY(cudnnFindConvolutionForwardAlgorithm(h, d->x, d->w, d->conv, d->y, K, &n, r));
        for (int i = 0; i < n && !found; i++)
            if (r[i].status == CUDNN_STATUS_SUCCESS &&
                (dt != BF_DTYPE_F32 || r[i].mathType != CUDNN_TENSOR_OP_MATH) &&
                (!det_only || r[i].determinism == CUDNN_DETERMINISTIC))
                found = 1, d->algo = r[i].algo, d->ws_bytes = r[i].memory;
    } else if (op == BF_CONV_BWD_FILTER) {
        cudnnConvolutionBwdFilterAlgoPerf_t r[K];
        DTRY(cudnnFindConvolutionBackwardFilterAlgorithm(h, d->x, d->y, d->conv, d->w, K, &n, r));
        for (int i = 0; i < n && !found; i++)
            if (r[i].status == CUDNN_STATUS_SUCCESS &&
                (dt != BF_DTYPE_F32 || r[i].mathType != CUDNN_TENSOR_OP_MATH) &&
                (!det_only || r[i].determinism == CUDNN_DETERMINISTIC))
                found = 1, d->algo = r[i].algo, d->ws_bytes = r[i].memory;
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t r[K];
        DTRY(cudnnFindConvolutionBackwardDataAlgorithm(h, d->w, d->y, d->conv, d->x, K, &n, r));
        for (int i = 0; i < n && !found; i++)
            if (r[i].status == CUDNN_STATUS_SUCCESS &&
                (dt != BF_DTYPE_F32 || r[i].mathType != CUDNN_TENSOR_OP_MATH) &&
                (!det_only || r[i].determinism == CUDNN_DETERMINISTIC))
                found = 1, d->algo = r[i].algo, d->ws_bytes = r[i].memory;
    }
    if (!found) return bf_err(err, BF_EUNSUPPORTED, "cudnn", "cudnnFind: no algorithm runs");
    snprintf(d->algo_name, sizeof d->algo_name, "algo %d", d->algo);
    if (d->ws_bytes) CTRY(cudaMalloc(&d->ws, d->ws_bytes));
    return BF_OK;
}

static bf_status direct_run(void *arg, bf_error *err) {
    direct *d = arg;
    float f1 = 1, f0 = 0;
    double d1 = 1, d0 = 0;
    const void *one = d->dt == BF_DTYPE_F64 ? (const void *)&d1 : (const void *)&f1;
    const void *zero = d->dt == BF_DTYPE_F64 ? (const void *)&d0 : (const void *)&f0;
    if (d->op == BF_CONV_FWD)
        DTRY(cudnnConvolutionForward(d->h, one, d->x, d->dx, d->w, d->dw, d->conv,
                                     (cudnnConvolutionFwdAlgo_t)d->algo, d->ws, d->ws_bytes, zero,
                                     d->y, d->dy));
    else if (d->op == BF_CONV_BWD_FILTER)
        DTRY(cudnnConvolutionBackwardFilter(d->h, one, d->x, d->dx, d->y, d->dy, d->conv,
                                            (cudnnConvolutionBwdFilterAlgo_t)d->algo, d->ws,
                                            d->ws_bytes, zero, d->w, d->dw));
    else
        DTRY(cudnnConvolutionBackwardData(d->h, one, d->w, d->dw, d->y, d->dy, d->conv,
                                          (cudnnConvolutionBwdDataAlgo_t)d->algo, d->ws,
                                          d->ws_bytes, zero, d->x, d->dx));
    return BF_OK;
}

/* ---- the card's rates ---------------------------------------------------------------------- */

typedef struct copy_arg {
    void *dst;
    const void *src;
    size_t bytes;
    cudaStream_t st;
} copy_arg;

static bf_status run_copy(void *arg, bf_error *err) {
    copy_arg *c = arg;
    CTRY(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->st));
    return BF_OK;
}

/* Device bandwidth in bytes/s: a 256 MiB device-to-device copy reads and writes each byte. */
static double measure_bandwidth(cudaStream_t st, bf_error *err) {
    copy_arg c = {.bytes = (size_t)256 << 20, .st = st};
    void *a = NULL, *b = NULL;
    double ms = -1;
    if (cudaMalloc(&a, c.bytes) == cudaSuccess && cudaMalloc(&b, c.bytes) == cudaSuccess) {
        c.dst = a, c.src = b;
        ms = time_median(st, run_copy, &c, 2, 9, err);
    }
    cudaFree(a), cudaFree(b);
    return ms > 0 ? 2.0 * (double)c.bytes / (ms * 1e-3) : -1;
}


/* ---- cases --------------------------------------------------------------------------------- */

static int64_t jint(const cJSON *arr, int i) {
    const cJSON *v = cJSON_GetArrayItem(arr, i);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* TF NHWC case -> geometry. Returns false when the case is malformed. */
static bool case_geom(const cJSON *c, bf_conv_geom *g) {
    const cJSON *in = cJSON_GetObjectItem(c, "input"), *f = cJSON_GetObjectItem(c, "filter");
    const cJSON *s = cJSON_GetObjectItem(c, "strides"), *d = cJSON_GetObjectItem(c, "dilations");
    const cJSON *pad = cJSON_GetObjectItem(c, "padding");
    if (cJSON_GetArraySize(in) != 4 || cJSON_GetArraySize(f) != 4 || !cJSON_IsString(pad))
        return false;
    memset(g, 0, sizeof *g);
    g->n = jint(in, 0), g->in_h = jint(in, 1), g->in_w = jint(in, 2), g->in_c = jint(in, 3);
    g->k_h = jint(f, 0), g->k_w = jint(f, 1);
    g->stride_h = s ? jint(s, 1) : 1, g->stride_w = s ? jint(s, 2) : 1;
    g->dil_h = d ? jint(d, 1) : 1, g->dil_w = d ? jint(d, 2) : 1;
    if (cJSON_IsTrue(cJSON_GetObjectItem(c, "depthwise"))) {
        g->k_in_c = 1, g->groups = g->in_c, g->out_c = g->in_c * jint(f, 3);
    } else {
        g->k_in_c = jint(f, 2), g->out_c = jint(f, 3);
        if (g->k_in_c <= 0 || g->in_c % g->k_in_c) return false;
        g->groups = g->in_c / g->k_in_c;
    }
    if (g->stride_h < 1 || g->stride_w < 1 || g->dil_h < 1 || g->dil_w < 1) return false;
    int64_t eh = (g->k_h - 1) * g->dil_h + 1, ew = (g->k_w - 1) * g->dil_w + 1;
    if (!strcmp(pad->valuestring, "SAME")) {
        g->out_h = (g->in_h + g->stride_h - 1) / g->stride_h;
        g->out_w = (g->in_w + g->stride_w - 1) / g->stride_w;
        int64_t th = BF_MAX((g->out_h - 1) * g->stride_h + eh - g->in_h, 0);
        int64_t tw = BF_MAX((g->out_w - 1) * g->stride_w + ew - g->in_w, 0);
        g->pad_top = th / 2, g->pad_bottom = th - th / 2;
        g->pad_left = tw / 2, g->pad_right = tw - tw / 2;
    } else {
        if (g->in_h < eh || g->in_w < ew) return false;
        g->out_h = (g->in_h - eh) / g->stride_h + 1, g->out_w = (g->in_w - ew) / g->stride_w + 1;
    }
    return true;
}

static bf_conv_op op_of(const char *name) {
    if (strstr(name, "BackpropFilter")) return BF_CONV_BWD_FILTER;
    if (strstr(name, "BackpropInput")) return BF_CONV_BWD_INPUT;
    return BF_CONV_FWD;
}

static bool op_selected(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            char *nb = bf_realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

/* Upload `count` random values in [-1, 1) of dtype dt to dst. */
static bf_status fill_random(bf_device *dev, void *stream, void *dst, int64_t count, bf_dtype dt,
                             uint64_t seed, bf_error *err) {
    size_t es = bf_dtype_size(dt);
    unsigned char *h = bf_malloc((size_t)BF_MAX(count, 1) * es);
    if (!h) return bf_err(err, BF_ENOMEM, "oom", "out of memory for bench data");
    uint64_t s = seed;
    for (int64_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
        switch (dt) {
        case BF_DTYPE_F64: ((double *)h)[i] = v; break;
        case BF_DTYPE_F16: ((uint16_t *)h)[i] = bf_f32_to_f16(v); break;
        case BF_DTYPE_BF16: ((uint16_t *)h)[i] = bf_f32_to_bf16(v); break;
        default: ((float *)h)[i] = v; break;
        }
    }
    bf_status st = dev->ops->upload(dev, dst, h, (size_t)count * es, stream, err);
    bf_free(h);
    return st;
}

/* Time cuDNN directly with the fastest (deterministic, with det_only) algorithm on random
 * data; -1 when cuDNN has none. The algorithm's name goes to `name`. */
static double time_direct(bf_device *dev, void *stream, cudnnHandle_t h, bf_conv_op op,
                          const bf_conv_geom *g, const gbench_opts *o, bool det_only, char *name,
                          size_t name_size) {
    direct d;
    bf_error err = {0};
    double t = -1;
    if (direct_make(&d, h, op, g, o->dt, det_only, &err) == BF_OK &&
        fill_random(dev, stream, d.dx, d.nx, o->dt, 3, &err) == BF_OK &&
        fill_random(dev, stream, d.dw, d.nw, o->dt, 4, &err) == BF_OK &&
        fill_random(dev, stream, d.dy, d.ny, o->dt, 5, &err) == BF_OK)
        t = time_median(stream, direct_run, &d, o->warmup, o->rounds, &err);
    snprintf(name, name_size, "%s", t >= 0 ? d.algo_name : "n/a");
    direct_free(&d);
    return t;
}

/* Multiply-add rate (MAC/s) of the dtype: cuDNN's best algorithm on a 1x1 convolution, which
 * is the GEMM [32*32*32, 1024] x [1024, 1024], on random data like every other timing; -1 when
 * it cannot run. */
static double measure_mac_rate(bf_device *dev, void *stream, cudnnHandle_t h, bf_dtype dt) {
    bf_conv_geom g = {.n = 32,
                      .in_h = 32,
                      .in_w = 32,
                      .in_c = 1024,
                      .k_h = 1,
                      .k_w = 1,
                      .k_in_c = 1024,
                      .out_c = 1024,
                      .out_h = 32,
                      .out_w = 32,
                      .stride_h = 1,
                      .stride_w = 1,
                      .dil_h = 1,
                      .dil_w = 1,
                      .groups = 1};
    gbench_opts o = {.rounds = 7, .warmup = 2, .dt = dt};
    char name[24];
    double ms = time_direct(dev, stream, h, BF_CONV_FWD, &g, &o, false, name, sizeof name);
    double macs = 32.0 * 32 * 32 * 1024 * 1024;
    return ms > 0 ? macs / (ms * 1e-3) : -1;
}

/* ctx (on `stream`): heuristic algorithms; tuned (on `tstream`): the fastest algorithm. */
static void bench_op(bf_device *dev, void *stream, bf_cuda_ctx *ctx, void *tstream,
                     bf_cuda_ctx *tuned, const char *cname, const char *oname,
                     const bf_conv_geom *g, const gbench_opts *o, double mac_rate, double bw) {
    bf_conv_op op = op_of(oname);
    size_t es = bf_dtype_size(o->dt);
    int64_t nx = g->n * g->in_h * g->in_w * g->in_c, ny = g->n * g->out_h * g->out_w * g->out_c;
    int64_t nw = g->k_h * g->k_w * g->k_in_c * g->out_c;
    int64_t na = op == BF_CONV_BWD_INPUT ? ny : nx;
    int64_t nb = op == BF_CONV_FWD ? nw : op == BF_CONV_BWD_FILTER ? ny : nw;
    int64_t no = op == BF_CONV_FWD ? ny : op == BF_CONV_BWD_FILTER ? nw : nx;
    double macs = (double)(g->n * g->out_h * g->out_w) * (double)g->out_c * (double)g->k_h *
                  (double)g->k_w * (double)g->k_in_c;
    double floor_ms = 1e3 * BF_MAX(macs / mac_rate, (double)(na + nb + no) * (double)es / bw);
    bf_error err = {0};
    /* our paths: 0 cuDNN heuristic, 1 cuDNN fastest, 2 own kernels */
    char note[3][288] = {"", "", ""}, best_d[24] = "n/a", best_a[24] = "n/a";
    double t[3] = {-1, -1, -1}, t_bd = -1, t_ba = -1;
    bf_exec ex = {.n_threads = 1, .device = dev, .stream = stream};
    size_t ws = 0;
    for (int p = 0; p < 3; p++) {
        ex.device_ctx = p == 1 ? tuned : ctx;
        ws = BF_MAX(ws, bf_conv_cuda_workspace(op, g, o->dt, p < 2, &ex));
    }
    void *a = dev->ops->alloc(dev, (size_t)na * es, &err);
    void *b = dev->ops->alloc(dev, (size_t)nb * es, &err);
    void *out = dev->ops->alloc(dev, (size_t)no * es, &err);
    void *wsp = dev->ops->alloc(dev, ws, &err);
    const char *fail = NULL;
    if (!a || !b || !out || !wsp || fill_random(dev, stream, a, na, o->dt, 1, &err) != BF_OK ||
        fill_random(dev, stream, b, nb, o->dt, 2, &err) != BF_OK) {
        fail = err.message;
        goto print;
    }
    for (int p = 0; p < 3; p++) {
        ex.device_ctx = p == 1 ? tuned : ctx;
        ex.stream = p == 1 ? tstream : stream;
        ex.workspace = wsp, ex.workspace_size = ws;
        ex.note = note[p], ex.note_size = sizeof note[p];
        ours_arg oa = {op, g, o->dt, p < 2, a, b, out, &ex};
        t[p] = time_median(ex.stream, run_ours, &oa, o->warmup, o->rounds, &err);
        if (t[p] < 0) snprintf(note[p], sizeof note[p], "error: %s", err.message);
    }
    t_bd = time_direct(dev, stream, ctx->cudnn, op, g, o, true, best_d, sizeof best_d);
    t_ba = time_direct(dev, stream, ctx->cudnn, op, g, o, false, best_a, sizeof best_a);
print:
    printf("%-24s %-36s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f  %s | %s | %s | best-d %s | best %s\n",
           cname, oname, t[0], t[1], t[2], t_bd, t_ba, floor_ms, note[0], note[1], note[2],
           best_d, fail ? fail : best_a);
    fflush(stdout);
    dev->ops->free(dev, a), dev->ops->free(dev, b), dev->ops->free(dev, out);
    dev->ops->free(dev, wsp);
}

int bf_bench_gpu_cuda_main(int argc, char **argv) {
    gbench_opts o = {.cases = "bench/shapes.json", .rounds = 10, .warmup = 3, .dt = BF_DTYPE_F32};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cases") && v)
            o.cases = v, i++;
        else if (!strcmp(a, "--ops") && v)
            o.ops = v, i++;
        else if (!strcmp(a, "--rounds") && v)
            o.rounds = BF_MAX(atoi(v), 1), i++;
        else if (!strcmp(a, "--warmup") && v)
            o.warmup = BF_MAX(atoi(v), 0), i++;
        else if (!strcmp(a, "--dtype") && v)
            o.dt = bf_dtype_from_name(v), i++;
        else if ((!strcmp(a, "--device") || !strcmp(a, "--threads") || !strcmp(a, "--time")) && v)
            i++;
    }
    if (o.dt != BF_DTYPE_F32 && o.dt != BF_DTYPE_F64 && o.dt != BF_DTYPE_F16 &&
        o.dt != BF_DTYPE_BF16) {
        fprintf(stderr, "bench: --dtype must be float32, float64, float16 or bfloat16\n");
        return 2;
    }
    char why[256] = "";
    bf_device devs[8];
    int ndev = bf_cuda_dev_probe(devs, 8, why, sizeof why);
    if (ndev <= 0) {
        printf("no GPU: %s\n", why);
        return 2;
    }
    bf_device *dev = &devs[0];
    char *text = read_file(o.cases);
    if (!text) {
        fprintf(stderr, "bench: cannot read %s\n", o.cases);
        bf_cuda_dev_release(devs, ndev);
        return 1;
    }
    cJSON *root = cJSON_Parse(text);
    bf_free(text);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "bench: %s has no \"cases\" array\n", o.cases);
        cJSON_Delete(root);
        bf_cuda_dev_release(devs, ndev);
        return 1;
    }
    void *stream = NULL, *vctx = NULL;
    bf_error err = {0};
    if (dev->ops->session_init(dev, NULL, &stream, &vctx, &err) != BF_OK) {
        printf("no GPU: %s\n", err.message);
        cJSON_Delete(root);
        bf_cuda_dev_release(devs, ndev);
        return 2;
    }
    bf_cuda_ctx *ctx = vctx;
    /* A second session context on the same device that picks the fastest algorithm. */
    void *tstream = NULL, *tvctx = NULL;
    if (dev->ops->session_init(dev, NULL, &tstream, &tvctx, &err) != BF_OK) {
        printf("no GPU: %s\n", err.message);
        dev->ops->session_free(dev, stream, vctx);
        cJSON_Delete(root);
        bf_cuda_dev_release(devs, ndev);
        return 2;
    }
    bf_cuda_ctx *tuned = tvctx;
    tuned->autotune = 1, tuned->any_algo = 1;
    double bw = measure_bandwidth(stream, &err);
    double rate = measure_mac_rate(dev, stream, ctx->cudnn, o.dt);
    int rc = 0;
    if (bw <= 0 || rate <= 0) {
        fprintf(stderr, "bench: measuring the card failed: %s\n",
                bw <= 0 ? err.message : "cuDNN could not run the 1x1 reference convolution");
        rc = 1;
        goto done;
    }
    printf("device: %s; dtype %s; bandwidth %.0f GB/s (D2D copy); %s MAC rate %.1f TMAC/s "
           "(cuDNN 1x1 conv, %s)\n",
           dev->description, bf_dtype_name(o.dt), bw * 1e-9, bf_dtype_name(o.dt), rate * 1e-12,
           o.dt == BF_DTYPE_F32 ? "FMA math, no TF32" : "tensor-op math allowed");
    printf("times: median of %d runs after %d warmup, milliseconds (-1: did not run)\n", o.rounds,
           o.warmup);
    printf("%-24s %-36s %9s %9s %9s %9s %9s %9s  %s\n", "case", "op", "cudnn", "fastest", "own",
           "best-d", "best", "floor", "notes (cudnn | fastest | own | best-d | best)");
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *name = cJSON_GetObjectItem(c, "name"), *ops = cJSON_GetObjectItem(c, "ops");
        bf_conv_geom g;
        if (!cJSON_IsString(name) || !cJSON_IsArray(ops) || !case_geom(c, &g)) {
            fprintf(stderr, "bench: skipping a malformed case\n");
            continue;
        }
        const cJSON *op;
        cJSON_ArrayForEach(op, ops) {
            if (!cJSON_IsString(op) || !op_selected(o.ops, op->valuestring)) continue;
            const char *bad = bf_conv_cuda_unsupported(op_of(op->valuestring), &g, o.dt, 1);
            if (bad) {
                printf("%-24s %-36s unsupported: %s\n", name->valuestring, op->valuestring, bad);
                continue;
            }
            bench_op(dev, stream, ctx, tstream, tuned, name->valuestring, op->valuestring, &g, &o,
                     rate, bw);
        }
    }
done:
    dev->ops->session_free(dev, tstream, tvctx);
    dev->ops->session_free(dev, stream, vctx);
    cJSON_Delete(root);
    bf_cuda_dev_release(devs, ndev);
    return rc;
}
