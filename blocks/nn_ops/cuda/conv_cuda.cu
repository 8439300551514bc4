/*
 * conv_cuda.cu - the GPU entry points of the convolution family (conv_kernels.h): the cuDNN
 * path (use_cudnn = 1) and the dispatch to our own kernels (conv_cuda_own.cu).
 *
 * cuDNN path, per op, as TensorFlow does it (tf-semantics.md section 6):
 *  - The filter is HWIO, which cuDNN cannot read: it is transposed into OHWI (NHWC data) or
 *    OIHW (NCHW data) in the workspace, and for BWD_FILTER cuDNN writes that layout and we
 *    transpose back.
 *  - cuDNN pads symmetrically only. With pad_top != pad_bottom or pad_left != pad_right we
 *    pass the common (minimum) padding and make up the difference ourselves: FWD and
 *    BWD_FILTER read a zero-padded copy of x; BWD_INPUT computes the gradient of that padded
 *    x and crops it. Results match the CPU kernels.
 *  - Algorithms come from cuDNN's heuristics (cudnnGet*_v7), first deterministic one whose
 *    workspace fits; with BF_CUDNN_AUTOTUNE=1 (read at session_init) from cudnnFind*
 *    (benchmarked, fastest deterministic one that fits). BF_CUDNN_DETERMINISTIC=0 admits
 *    algorithms that accumulate with atomics (results vary in the last bits between runs).
 *    Either way the choice is cached per (op, dtype, geometry) in the session's bf_cuda_ctx
 *    and written to ex->note.
 *  - float32 runs with CUDNN_FMA_MATH (no TF32); half and bfloat16 may use tensor cores with
 *    float accumulation (compute type float); double computes in double.
 *  - The cuDNN workspace is bounded by ctx->ws_cap (1 GiB unless BF_CUDNN_WORKSPACE_MB).
 * If cuDNN cannot run a case (no supported algorithm, an output size it would compute
 * differently, workspace too small), we run our own kernels and say so in ex->note.
 * Depthwise always runs our own kernels, as in TensorFlow.
 *
 * The workspace handed in (ex->workspace, planned with bf_conv_cuda_workspace) is laid out as
 * [cuDNN-layout filter | padded activation (if needed) | cuDNN workspace], 256-byte aligned.
 */
#include "conv_cuda_internal.cuh"

#include "devices/cuda_ctx.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define ALIGN_BYTES ((size_t)256)
static size_t align_up(size_t x) { return (x + ALIGN_BYTES - 1) & ~(ALIGN_BYTES - 1); }

/* ---- geometry helpers -------------------------------------------------------------------- */

struct pad_plan {
    int ct, cl;         /* common padding passed to cuDNN */
    int et, eb, el, er; /* extra padding we apply */
    int hp, wp;         /* padded input size */
    bool padded;
};

static pad_plan plan_pad(const bf_conv_geom *g) {
    pad_plan p;
    p.ct = (int)BF_MIN(g->pad_top, g->pad_bottom);
    p.cl = (int)BF_MIN(g->pad_left, g->pad_right);
    p.et = (int)g->pad_top - p.ct, p.eb = (int)g->pad_bottom - p.ct;
    p.el = (int)g->pad_left - p.cl, p.er = (int)g->pad_right - p.cl;
    p.hp = (int)g->in_h + p.et + p.eb, p.wp = (int)g->in_w + p.el + p.er;
    p.padded = p.et || p.eb || p.el || p.er;
    return p;
}

static size_t dt_size(bf_dtype dt) { return bf_dtype_size(dt); }

static bool any_empty(const bf_conv_geom *g) {
    return g->n == 0 || g->in_h == 0 || g->in_w == 0 || g->in_c == 0 || g->k_h == 0 ||
           g->k_w == 0 || g->k_in_c == 0 || g->out_c == 0 || g->out_h == 0 || g->out_w == 0;
}

static int64_t out_numel(bf_conv_op op, const bf_conv_geom *g) {
    switch (op) {
    case BF_CONV_FWD: return g->n * g->out_h * g->out_w * g->out_c;
    case BF_CONV_BWD_FILTER: return g->k_h * g->k_w * g->k_in_c * g->out_c;
    default: return g->n * g->in_h * g->in_w * g->in_c;
    }
}

static int ctx_sms(const bf_exec *ex) {
    const bf_cuda_ctx *c = ex ? (const bf_cuda_ctx *)ex->device_ctx : NULL;
    return c && c->sm_count > 0 ? c->sm_count : 0;
}

/* bf_conv_cuda_unsupported (which cases the GPU takes) is in ../conv_gpu_limits.c: the core
 * decides placement with it before any GPU code runs. */

/* ---- cuDNN ------------------------------------------------------------------------------- */

static bf_status cudnn_fail(bf_error *err, cudnnStatus_t s, const char *what) {
    return bf_err(err, BF_EDEVICE, "cudnn", "%s: %s", what, cudnnGetErrorString(s));
}
static bf_status cuda_fail(bf_error *err, cudaError_t e, const char *what) {
    return bf_err(err, BF_EDEVICE, "cuda", "%s: %s", what, cudaGetErrorString(e));
}

/* A failed cuDNN convolution call: NOT_SUPPORTED (nothing was launched) sends the caller to
 * our own kernels; anything else is a device error. */
static bf_status conv_fail(bf_error *err, cudnnStatus_t s, const char *what, const char **why) {
    if (s == CUDNN_STATUS_NOT_SUPPORTED) {
        *why = "the chosen algorithm reported CUDNN_STATUS_NOT_SUPPORTED";
        return BF_EUNSUPPORTED;
    }
    return cudnn_fail(err, s, what);
}

struct cudnn_setup {
    cudnnTensorDescriptor_t x = NULL, y = NULL; /* x is the padded input when padding */
    cudnnFilterDescriptor_t w = NULL;
    cudnnConvolutionDescriptor_t conv = NULL;
    cudnnDataType_t data = CUDNN_DATA_FLOAT;
};

/* Destroy failures are ignored: there is nothing to do about them and nothing is leaked. */
static void setup_free(cudnn_setup *s) {
    if (s->x) (void)cudnnDestroyTensorDescriptor(s->x);
    if (s->y) (void)cudnnDestroyTensorDescriptor(s->y);
    if (s->w) (void)cudnnDestroyFilterDescriptor(s->w);
    if (s->conv) (void)cudnnDestroyConvolutionDescriptor(s->conv);
    *s = cudnn_setup();
}

static cudnnMathType_t base_math(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F32: return CUDNN_FMA_MATH; /* no TF32 */
    case BF_DTYPE_F64: return CUDNN_DEFAULT_MATH;
    default: return CUDNN_TENSOR_OP_MATH; /* half / bf16: tensor cores, float accumulation */
    }
}

/* A math type an algorithm may run with for this dtype (float32: never TF32). */
static bool math_ok(bf_dtype dt, cudnnMathType_t m) {
    if (dt == BF_DTYPE_F32) return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
    return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/*
 * Describe the convolution to cuDNN. Returns CUDNN_STATUS_SUCCESS, or a failure; *mismatch is
 * set when cuDNN would compute a different output size than the geometry's (then the caller
 * uses our own kernels).
 */
static cudnnStatus_t setup_make(const bf_conv_geom *g, bf_dtype dt, const pad_plan &p,
                                cudnn_setup *s, bool *mismatch) {
    *mismatch = false;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    switch (dt) {
    case BF_DTYPE_F64: s->data = CUDNN_DATA_DOUBLE, comp = CUDNN_DATA_DOUBLE; break;
    case BF_DTYPE_F16: s->data = CUDNN_DATA_HALF; break;
    case BF_DTYPE_BF16: s->data = CUDNN_DATA_BFLOAT16; break;
    default: s->data = CUDNN_DATA_FLOAT; break;
    }
    cudnnTensorFormat_t fmt = g->nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    cudnnStatus_t st;
#define TRY(call)                                                                                  \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st != CUDNN_STATUS_SUCCESS) return st;                                                 \
    } while (0)
    TRY(cudnnCreateTensorDescriptor(&s->x));
    TRY(cudnnCreateTensorDescriptor(&s->y));
    TRY(cudnnCreateFilterDescriptor(&s->w));
    TRY(cudnnCreateConvolutionDescriptor(&s->conv));
    TRY(cudnnSetTensor4dDescriptor(s->x, fmt, s->data, (int)g->n, (int)g->in_c, p.hp, p.wp));
    TRY(cudnnSetTensor4dDescriptor(s->y, fmt, s->data, (int)g->n, (int)g->out_c, (int)g->out_h,
                                   (int)g->out_w));
    TRY(cudnnSetFilter4dDescriptor(s->w, s->data, fmt, (int)g->out_c, (int)g->k_in_c, (int)g->k_h,
                                   (int)g->k_w));
    TRY(cudnnSetConvolution2dDescriptor(s->conv, p.ct, p.cl, (int)g->stride_h, (int)g->stride_w,
                                        (int)g->dil_h, (int)g->dil_w, CUDNN_CROSS_CORRELATION,
                                        comp));
    TRY(cudnnSetConvolutionGroupCount(s->conv, (int)g->groups));
    TRY(cudnnSetConvolutionMathType(s->conv, base_math(dt)));
    int on, oc, oh, ow;
    TRY(cudnnGetConvolution2dForwardOutputDim(s->conv, s->x, s->w, &on, &oc, &oh, &ow));
#undef TRY
    if (on != g->n || oc != g->out_c || oh != g->out_h || ow != g->out_w) *mismatch = true;
    return CUDNN_STATUS_SUCCESS;
}

/* One algorithm result, whatever the op. */
struct algo_perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
};

template <typename P> static algo_perf to_perf(const P &r) {
    algo_perf a;
    a.algo = (int)r.algo, a.status = r.status, a.time = r.time, a.memory = r.memory;
    a.det = r.determinism, a.math = r.mathType;
    return a;
}

enum { MAX_ALGOS = 16 };

/* Ask cuDNN for its ranked algorithms: heuristics, or benchmarks when `find`. */
static cudnnStatus_t query_algos(cudnnHandle_t h, bf_conv_op op, const cudnn_setup *s, bool find,
                                 algo_perf *out, int *n_out) {
    int n = 0;
    cudnnStatus_t st;
    if (op == BF_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t r[MAX_ALGOS];
        st = find ? cudnnFindConvolutionForwardAlgorithm(h, s->x, s->w, s->conv, s->y, MAX_ALGOS,
                                                         &n, r)
                  : cudnnGetConvolutionForwardAlgorithm_v7(h, s->x, s->w, s->conv, s->y, MAX_ALGOS,
                                                           &n, r);
        for (int i = 0; i < n; i++)
            out[i] = to_perf(r[i]);
    } else if (op == BF_CONV_BWD_FILTER) {
        cudnnConvolutionBwdFilterAlgoPerf_t r[MAX_ALGOS];
        st = find ? cudnnFindConvolutionBackwardFilterAlgorithm(h, s->x, s->y, s->conv, s->w,
                                                                MAX_ALGOS, &n, r)
                  : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, s->x, s->y, s->conv, s->w,
                                                                  MAX_ALGOS, &n, r);
        for (int i = 0; i < n; i++)
            out[i] = to_perf(r[i]);
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t r[MAX_ALGOS];
        st = find ? cudnnFindConvolutionBackwardDataAlgorithm(h, s->w, s->y, s->conv, s->x,
                                                              MAX_ALGOS, &n, r)
                  : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s->w, s->y, s->conv, s->x,
                                                                MAX_ALGOS, &n, r);
        for (int i = 0; i < n; i++)
            out[i] = to_perf(r[i]);
    }
    *n_out = st == CUDNN_STATUS_SUCCESS ? n : 0;
    return st;
}

static void make_key(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int64_t *key) {
    memset(key, 0, sizeof(int64_t) * BF_CUDA_KEY_WORDS);
    const int64_t v[] = {op,          dt,           g->n,      g->in_h,  g->in_w,    g->in_c,
                         g->k_h,      g->k_w,       g->k_in_c, g->out_c, g->out_h,   g->out_w,
                         g->stride_h, g->stride_w,  g->dil_h,  g->dil_w, g->pad_top, g->pad_bottom,
                         g->pad_left, g->pad_right, g->groups, g->nchw};
    static_assert(sizeof v / sizeof v[0] <= BF_CUDA_KEY_WORDS, "cache key too short");
    memcpy(key, v, sizeof v);
}

/*
 * Pick the algorithm for this case whose workspace is at most `avail`: cached choice if it
 * fits, else heuristics / benchmarks (ctx->autotune), first deterministic entry with an
 * allowed math type that fits; remembered when it was chosen under the full cap. Caller holds
 * ctx->lock. Returns false (with *why) when cuDNN offers nothing usable.
 */
static bool choose_algo(bf_cuda_ctx *c, bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                        const cudnn_setup *s, size_t avail, bf_cuda_algo_entry *pick,
                        const char **why) {
    int64_t key[BF_CUDA_KEY_WORDS];
    make_key(op, g, dt, key);
    for (int i = 0; i < c->n_cache; i++) {
        if (memcmp(c->cache[i].key, key, sizeof key) == 0 && c->cache[i].ws_bytes <= avail) {
            *pick = c->cache[i];
            return true;
        }
    }
    algo_perf r[MAX_ALGOS];
    int n = 0;
    cudnnStatus_t st = query_algos(c->cudnn, op, s, c->autotune != 0, r, &n);
    if (st != CUDNN_STATUS_SUCCESS) {
        *why = cudnnGetErrorString(st);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (r[i].status != CUDNN_STATUS_SUCCESS ||
            (r[i].det != CUDNN_DETERMINISTIC && !c->any_algo) || r[i].memory > avail ||
            !math_ok(dt, r[i].math))
            continue;
        memcpy(pick->key, key, sizeof key);
        pick->algo = r[i].algo;
        pick->math = dt == BF_DTYPE_F32 ? (int)CUDNN_FMA_MATH : (int)r[i].math;
        pick->ws_bytes = r[i].memory;
        pick->ms = c->autotune ? r[i].time : -1.0f;
        pick->nondet = r[i].det != CUDNN_DETERMINISTIC;
        if (avail >= c->ws_cap) { /* remember choices made under the normal bound */
            if (c->n_cache == c->cap_cache) {
                int cap = c->cap_cache ? 2 * c->cap_cache : 16;
                bf_cuda_algo_entry *m =
                    (bf_cuda_algo_entry *)bf_realloc(c->cache, (size_t)cap * sizeof *m);
                if (m) c->cache = m, c->cap_cache = cap;
            }
            if (c->n_cache < c->cap_cache) c->cache[c->n_cache++] = *pick;
        }
        return true;
    }
    *why = c->any_algo ? "no algorithm within the workspace bound"
                       : "no deterministic algorithm within the workspace bound";
    return false;
}

static const char *algo_name(bf_conv_op op, int a) {
    static const char *const fwd[] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
        "WINOGRAD",      "WINOGRAD_NONFUSED"};
    static const char *const bwd_data[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                           "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *const bwd_filter[] = {
        "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
    if (op == BF_CONV_FWD) return a >= 0 && a < BF_COUNT(fwd) ? fwd[a] : "?";
    if (op == BF_CONV_BWD_INPUT) return a >= 0 && a < BF_COUNT(bwd_data) ? bwd_data[a] : "?";
    return a >= 0 && a < BF_COUNT(bwd_filter) ? bwd_filter[a] : "?";
}

static const char *math_name(int m) {
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_FMA_MATH: return "fma";
    default: return "tensor_op_allow_conversion";
    }
}

/* Bytes of the filter copy and the padded activation that precede the cuDNN workspace. */
static size_t cudnn_extras(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt) {
    (void)op; /* every op has one filter copy and pads (or crops) the same input-sized tensor */
    pad_plan p = plan_pad(g);
    size_t es = dt_size(dt);
    size_t bytes = align_up((size_t)(g->k_h * g->k_w * g->k_in_c * g->out_c) * es);
    if (p.padded) bytes += align_up((size_t)(g->n * p.hp * p.wp * g->in_c) * es);
    return bytes;
}

static bool use_own(bf_conv_op op, const bf_conv_geom *g, int use_cudnn) {
    (void)op;
    return !use_cudnn || bf_conv_is_depthwise(g) || any_empty(g);
}

extern "C" size_t bf_conv_cuda_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                                         int use_cudnn, const bf_exec *ex) {
    if (bf_conv_cuda_unsupported(op, g, dt, use_cudnn)) return 0;
    size_t own = bf_conv_own_workspace(op, g, dt, ctx_sms(ex));
    if (use_own(op, g, use_cudnn)) return own;
    size_t extras = cudnn_extras(op, g, dt);
    bf_cuda_ctx *c = ex ? (bf_cuda_ctx *)ex->device_ctx : NULL;
    if (!c) return BF_MAX(own, extras); /* no session: only workspace-free algorithms */
    size_t ws = 0;
    pad_plan p = plan_pad(g);
    cudnn_setup s;
    bool mismatch = false;
    pthread_mutex_lock(&c->lock);
    if (cudaSetDevice(c->ordinal) == cudaSuccess &&
        cudnnSetStream(c->cudnn, ex->stream ? (cudaStream_t)ex->stream : c->stream) ==
            CUDNN_STATUS_SUCCESS &&
        setup_make(g, dt, p, &s, &mismatch) == CUDNN_STATUS_SUCCESS && !mismatch) {
        bf_cuda_algo_entry pick;
        const char *why = NULL;
        if (choose_algo(c, op, g, dt, &s, c->ws_cap, &pick, &why)) ws = pick.ws_bytes;
    }
    pthread_mutex_unlock(&c->lock);
    setup_free(&s);
    return BF_MAX(own, extras + ws);
}

/* Run op through cuDNN. Returns BF_OK, an error, or BF_EUNSUPPORTED with *why set when the
 * caller should use our own kernels instead. Caller holds ctx->lock. */
static bf_status run_cudnn(bf_cuda_ctx *c, bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                           const void *a, const void *b, void *out, const bf_exec *ex,
                           const char **why, bf_error *err) {
    cudaStream_t stream = (cudaStream_t)ex->stream;
    pad_plan p = plan_pad(g);
    size_t es = dt_size(dt);
    size_t extras = cudnn_extras(op, g, dt);
    if (ex->workspace_size < extras || (extras && !ex->workspace)) {
        *why = "workspace smaller than planned";
        return BF_EUNSUPPORTED;
    }
    char *base = (char *)ex->workspace;
    void *wt = base;
    void *xp = base + align_up((size_t)(g->k_h * g->k_w * g->k_in_c * g->out_c) * es);
    void *cws = base + extras;
    size_t avail = ex->workspace_size - extras;

    cudnn_setup s;
    bool mismatch = false;
    cudnnStatus_t st = cudnnSetStream(c->cudnn, stream);
    if (st != CUDNN_STATUS_SUCCESS) return cudnn_fail(err, st, "cudnnSetStream");
    st = setup_make(g, dt, p, &s, &mismatch);
    if (st != CUDNN_STATUS_SUCCESS || mismatch) {
        setup_free(&s);
        if (st == CUDNN_STATUS_SUCCESS) {
            *why = "cuDNN computes a different output size for this geometry";
            return BF_EUNSUPPORTED;
        }
        if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM) {
            *why = cudnnGetErrorString(st);
            return BF_EUNSUPPORTED;
        }
        return cudnn_fail(err, st, "describing the convolution to cuDNN");
    }
    bf_cuda_algo_entry pick;
    if (!choose_algo(c, op, g, dt, &s, BF_MIN(avail, c->ws_cap), &pick, why)) {
        setup_free(&s);
        return BF_EUNSUPPORTED;
    }
    bf_status rc = BF_OK;
    cudaError_t ce = cudaSuccess;
    const float f1 = 1.0f, f0 = 0.0f;
    const double d1 = 1.0, d0 = 0.0;
    const void *one = dt == BF_DTYPE_F64 ? (const void *)&d1 : (const void *)&f1;
    const void *zero = dt == BF_DTYPE_F64 ? (const void *)&d0 : (const void *)&f0;
    int nchw = g->nchw;
    int n = (int)g->n, h = (int)g->in_h, w = (int)g->in_w, ch = (int)g->in_c;
    int kh = (int)g->k_h, kw = (int)g->k_w, cg = (int)g->k_in_c, o = (int)g->out_c;

    st = cudnnSetConvolutionMathType(s.conv, (cudnnMathType_t)pick.math);
    if (st != CUDNN_STATUS_SUCCESS) {
        rc = cudnn_fail(err, st, "cudnnSetConvolutionMathType");
        goto done;
    }
    if (op == BF_CONV_FWD) {
        const void *x = a;
        ce = bf_cuda_filter_xpose((int)es, b, wt, kh, kw, cg, o, nchw, 1, stream);
        if (ce == cudaSuccess && p.padded) {
            ce = bf_cuda_pad((int)es, a, xp, n, h, w, ch, p.et, p.eb, p.el, p.er, nchw, stream);
            x = xp;
        }
        if (ce != cudaSuccess) goto cuda_err;
        st = cudnnConvolutionForward(c->cudnn, one, s.x, x, s.w, wt, s.conv,
                                     (cudnnConvolutionFwdAlgo_t)pick.algo, cws, pick.ws_bytes, zero,
                                     s.y, out);
        if (st != CUDNN_STATUS_SUCCESS) rc = conv_fail(err, st, "cudnnConvolutionForward", why);
    } else if (op == BF_CONV_BWD_FILTER) {
        const void *x = a;
        if (p.padded) {
            ce = bf_cuda_pad((int)es, a, xp, n, h, w, ch, p.et, p.eb, p.el, p.er, nchw, stream);
            if (ce != cudaSuccess) goto cuda_err;
            x = xp;
        }
        st = cudnnConvolutionBackwardFilter(c->cudnn, one, s.x, x, s.y, b, s.conv,
                                            (cudnnConvolutionBwdFilterAlgo_t)pick.algo, cws,
                                            pick.ws_bytes, zero, s.w, wt);
        if (st != CUDNN_STATUS_SUCCESS) {
            rc = conv_fail(err, st, "cudnnConvolutionBackwardFilter", why);
            goto done;
        }
        ce = bf_cuda_filter_xpose((int)es, wt, out, kh, kw, cg, o, nchw, 0, stream);
        if (ce != cudaSuccess) goto cuda_err;
    } else {
        ce = bf_cuda_filter_xpose((int)es, b, wt, kh, kw, cg, o, nchw, 1, stream);
        if (ce != cudaSuccess) goto cuda_err;
        st = cudnnConvolutionBackwardData(c->cudnn, one, s.w, wt, s.y, a, s.conv,
                                          (cudnnConvolutionBwdDataAlgo_t)pick.algo, cws,
                                          pick.ws_bytes, zero, s.x, p.padded ? xp : out);
        if (st != CUDNN_STATUS_SUCCESS) {
            rc = conv_fail(err, st, "cudnnConvolutionBackwardData", why);
            goto done;
        }
        if (p.padded) {
            ce = bf_cuda_crop((int)es, xp, out, n, h, w, ch, p.et, p.eb, p.el, p.er, nchw, stream);
            if (ce != cudaSuccess) goto cuda_err;
        }
    }
    if (rc == BF_OK) {
        static const char *const names[] = {"fwd", "bwd_filter", "bwd_input"};
        char tune[48] = "heuristic";
        if (pick.ms >= 0) snprintf(tune, sizeof tune, "autotuned %.3f ms", (double)pick.ms);
        bf_note_add(ex->note, ex->note_size, "cudnn %s algo=%s math=%s ws=%zu (%s%s)%s",
                    names[op], algo_name(op, pick.algo), math_name(pick.math), pick.ws_bytes,
                    tune, pick.nondet ? ", non-deterministic" : "",
                    p.padded ? ", asymmetric pad via padded copy" : "");
    }
    goto done;
cuda_err:
    rc = cuda_fail(err, ce, "launching a pad/crop/transpose kernel");
done:
    setup_free(&s);
    return rc;
}

extern "C" bf_status bf_conv_cuda(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                                  const void *a, const void *b, void *out, const bf_exec *ex,
                                  bf_error *err) {
    const char *bad = bf_conv_cuda_unsupported(op, g, dt, use_cudnn);
    if (bad) return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "%s", bad);
    if (!ex) return bf_err(err, BF_EINTERNAL, "no_exec", "bf_conv_cuda needs a bf_exec");
    if (ex->note && ex->note_size) ex->note[0] = '\0';
    cudaStream_t stream = (cudaStream_t)ex->stream;
    bf_cuda_ctx *c = (bf_cuda_ctx *)ex->device_ctx;
    if (c) {
        cudaError_t e = cudaSetDevice(c->ordinal);
        if (e != cudaSuccess) return cuda_fail(err, e, "cudaSetDevice");
    }
    int64_t numel = out_numel(op, g);
    if (numel == 0) return BF_OK;
    if (any_empty(g)) { /* nothing contributes: zeros */
        cudaError_t e = cudaMemsetAsync(out, 0, (size_t)numel * dt_size(dt), stream);
        if (e != cudaSuccess) return cuda_fail(err, e, "cudaMemsetAsync");
        bf_note_add(ex->note, ex->note_size, "empty reduction: zeros");
        return BF_OK;
    }
    if (use_cudnn && !bf_conv_is_depthwise(g)) {
        if (!c)
            return bf_err(err, BF_EINTERNAL, "no_device_ctx",
                          "the cuDNN path needs the session's CUDA state (ex->device_ctx)");
        const char *why = NULL;
        pthread_mutex_lock(&c->lock);
        bf_status rc = run_cudnn(c, op, g, dt, a, b, out, ex, &why, err);
        pthread_mutex_unlock(&c->lock);
        if (rc != BF_EUNSUPPORTED) return rc;
        bf_note_add(ex->note, ex->note_size, "cudnn unavailable (%s), fell back to ", why);
    } else if (use_cudnn) {
        bf_note_add(ex->note, ex->note_size, "depthwise: ");
    }
    return bf_conv_own_run(op, g, dt, a, b, out, ex->workspace, ex->workspace_size, stream,
                           ctx_sms(ex), ex->note, ex->note_size, err);
}
