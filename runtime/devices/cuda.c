/*
 * cuda.c - the CUDA device (STYLE R11): probing the GPUs, device memory, copies, and the
 * per-session state (a stream, a cuDNN handle, a cuBLAS handle made on first use and the
 * algorithm cache, see cuda_ctx.h). Part of the CUDA backend, libblockflow_cuda.so, which
 * the core loads when present (cuda_api.h, cuda_loader.c).
 *
 * The backend links the CUDA runtime and cuDNN (cuBLAS is loaded when a MatMul first runs on
 * a GPU) but never assumes a GPU: on a machine with the toolkit and no driver or no device,
 * cudaGetDeviceCount fails (cudaErrorNoDevice, cudaErrorInsufficientDriver, ...) and the probe
 * returns 0 with that text, so everything runs on the CPU. Every CUDA, cuDNN and cuBLAS call is
 * checked and becomes BF_EDEVICE with the library's own error string (STYLE R6).
 */
#define _GNU_SOURCE /* dladdr */
#include "device.h"
#include "cuda_ctx.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Our fat binary has sm_80 and sm_90 code and compute_90 PTX: older GPUs cannot run it. */
#define BF_CUDA_MIN_MAJOR 8
/* Default bound on the workspace one cuDNN algorithm may ask for. */
#define BF_CUDA_WS_CAP ((size_t)1 << 30)

static bf_status cuda_fail(bf_error *err, cudaError_t e, const char *what) {
    return bf_err(err, BF_EDEVICE, "cuda", "%s: %s (%s)", what, cudaGetErrorString(e),
                  cudaGetErrorName(e));
}

#define CUDA_TRY(call, what)                                                                       \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) return cuda_fail(err, e_, what);                                    \
    } while (0)

static void *cuda_alloc(bf_device *dev, size_t bytes, bf_error *err) {
    void *p = NULL;
    cudaError_t e = cudaSetDevice(dev->ordinal);
    if (e == cudaSuccess) e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        bf_status st = e == cudaErrorMemoryAllocation ? BF_ENOMEM : BF_EDEVICE;
        bf_err(err, st, "cuda", "cudaMalloc of %zu bytes on %s: %s", bytes, dev->label,
               cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void cuda_free(bf_device *dev, void *ptr) {
    if (!ptr) return;
    /* Nothing useful can be done with a failed free; the pointer is given up either way. */
    if (cudaSetDevice(dev->ordinal) == cudaSuccess) (void)cudaFree(ptr);
}

static bf_status cuda_memset0(bf_device *dev, void *ptr, size_t bytes, void *stream,
                              bf_error *err) {
    if (bytes == 0) return BF_OK;
    CUDA_TRY(cudaSetDevice(dev->ordinal), "cudaSetDevice");
    CUDA_TRY(cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)stream), "cudaMemsetAsync");
    return BF_OK;
}

/* Copies complete before returning (the stream is synchronised), so host buffers may be
 * reused or read at once. */
static bf_status cuda_copy(bf_device *dev, void *dst, const void *src, size_t bytes, void *stream,
                           enum cudaMemcpyKind kind, bf_error *err) {
    if (bytes == 0) return BF_OK;
    CUDA_TRY(cudaSetDevice(dev->ordinal), "cudaSetDevice");
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, (cudaStream_t)stream), "cudaMemcpyAsync");
    CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
    return BF_OK;
}

static bf_status cuda_upload(bf_device *dev, void *dst, const void *src, size_t bytes, void *stream,
                             bf_error *err) {
    return cuda_copy(dev, dst, src, bytes, stream, cudaMemcpyHostToDevice, err);
}

static bf_status cuda_download(bf_device *dev, void *dst, const void *src, size_t bytes,
                               void *stream, bf_error *err) {
    return cuda_copy(dev, dst, src, bytes, stream, cudaMemcpyDeviceToHost, err);
}

static bf_status cuda_sync(bf_device *dev, void *stream, bf_error *err) {
    CUDA_TRY(cudaSetDevice(dev->ordinal), "cudaSetDevice");
    CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
    return BF_OK;
}

static void cuda_session_free(bf_device *dev, void *stream, void *device_ctx) {
    bf_cuda_ctx *c = device_ctx;
    (void)cudaSetDevice(dev->ordinal);
    if (stream) (void)cudaStreamSynchronize((cudaStream_t)stream);
    if (c) {
        if (c->cudnn) (void)cudnnDestroy(c->cudnn);
        if (c->cublas && c->blas.destroy) (void)c->blas.destroy(c->cublas);
        pthread_mutex_destroy(&c->lock);
        bf_free(c->cache);
        bf_free(c);
    }
    if (stream) (void)cudaStreamDestroy((cudaStream_t)stream);
}

/*
 * Make the session's stream and device state: a non-blocking stream, a cuDNN handle bound to
 * it, and the algorithm cache. BF_CUDNN_AUTOTUNE=1 in the environment at this moment turns on
 * benchmarking (cudnnFind*) instead of heuristics; BF_CUDNN_DETERMINISTIC=0 lets cuDNN use
 * algorithms whose results vary in the last bits from run to run (atomic accumulation), as
 * TensorFlow does unless determinism is asked for; BF_CUDNN_WORKSPACE_MB bounds the cuDNN
 * workspace (default 1024). On failure nothing is left allocated and *stream, *device_ctx
 * are NULL.
 */
static bf_status cuda_session_init(bf_device *dev, const bf_config *cfg, void **stream,
                                   void **device_ctx, bf_error *err) {
    *stream = NULL;
    *device_ctx = NULL;
    CUDA_TRY(cudaSetDevice(dev->ordinal), "cudaSetDevice");
    bf_cuda_ctx *c = bf_calloc(1, sizeof *c);
    if (!c) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory for the CUDA session state");
    c->ordinal = dev->ordinal;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        bf_free(c);
        return bf_err(err, BF_EINTERNAL, "thread_error", "pthread_mutex_init failed");
    }
    c->autotune = cfg && cfg->cudnn_autotune;
    c->any_algo = cfg && cfg->cudnn_nondeterministic;
    c->ws_cap = cfg && cfg->cudnn_workspace_mb > 0 ? (size_t)cfg->cudnn_workspace_mb << 20
                                                    : BF_CUDA_WS_CAP;
    cudaError_t e =
        cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, dev->ordinal);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cuda_session_free(dev, NULL, c);
        return cuda_fail(err, e, "creating the session stream");
    }
    cudnnStatus_t s = cudnnCreate(&c->cudnn);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetStream(c->cudnn, c->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        cudaStream_t st = c->stream;
        cuda_session_free(dev, st, c);
        return bf_err(err, BF_EDEVICE, "cudnn", "cudnnCreate on %s: %s", dev->label,
                      cudnnGetErrorString(s));
    }
    *stream = c->stream;
    *device_ctx = c;
    return BF_OK;
}

/* Set the function pointer at `fn` (of size `size`) to symbol `name` of `lib`. */
static bool load_sym(void *lib, const char *name, void *fn, size_t size) {
    void *p = dlsym(lib, name);
    if (!p || size != sizeof p) return false;
    memcpy(fn, &p, size);
    return true;
}

#define LOAD(field, name) load_sym(lib, name, &api.field, sizeof api.field)

/* Load libcublas and its functions into c->blas. */
static bf_status load_cublas(bf_cuda_ctx *c, bf_error *err) {
    char name[64], path[1024];
    snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) { /* beside the CUDA runtime we were linked with */
        Dl_info info;
        void *sym = NULL;
        cudaError_t (*probe)(int *) = cudaGetDeviceCount;
        memcpy(&sym, &probe, sizeof sym);
        if (dladdr(sym, &info) && info.dli_fname && strrchr(info.dli_fname, '/')) {
            int dir = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
            snprintf(path, sizeof path, "%.*s/%s", dir, info.dli_fname, name);
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!lib) {
        const char *why = dlerror();
        return bf_err(err, BF_EDEVICE, "cublas", "cannot load %s for MatMul on the GPU: %s",
                      name, why ? why : "not found");
    }
    bf_cublas_api api;
    memset(&api, 0, sizeof api);
    if (!LOAD(create, "cublasCreate_v2") || !LOAD(destroy, "cublasDestroy_v2") ||
        !LOAD(set_stream, "cublasSetStream_v2") || !LOAD(set_math_mode, "cublasSetMathMode") ||
        !LOAD(status_string, "cublasGetStatusString") || !LOAD(sgemm, "cublasSgemm_v2") ||
        !LOAD(dgemm, "cublasDgemm_v2") || !LOAD(gemm_ex, "cublasGemmEx"))
        /* the library stays loaded: see cuda_ctx.h */
        return bf_err(err, BF_EDEVICE, "cublas", "%s lacks a function MatMul needs", name);
    api.lib = lib;
    c->blas = api;
    return BF_OK;
}
#undef LOAD

bf_status bf_cuda_ctx_cublas(bf_cuda_ctx *c, bf_error *err) {
    if (c->cublas) return BF_OK;
    if (!c->blas.lib) {
        bf_status st = load_cublas(c, err);
        if (st) return st;
    }
    cublasHandle_t h = NULL;
    const char *what = "cublasCreate";
    cublasStatus_t s = c->blas.create(&h);
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasSetMathMode";
        s = c->blas.set_math_mode(h, CUBLAS_PEDANTIC_MATH);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasSetStream";
        s = c->blas.set_stream(h, c->stream);
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        if (h) (void)c->blas.destroy(h);
        return bf_err(err, BF_EDEVICE, "cublas", "%s: %s", what, c->blas.status_string(s));
    }
    c->cublas = h;
    return BF_OK;
}

static const bf_device_ops cuda_ops = {
    .name         = "cuda",
    .alloc        = cuda_alloc,
    .free         = cuda_free,
    .memset0      = cuda_memset0,
    .upload       = cuda_upload,
    .download     = cuda_download,
    .sync         = cuda_sync,
    .session_init = cuda_session_init,
    .session_free = cuda_session_free,
};

int bf_cuda_dev_probe(bf_device *devs, int cap, char *why, size_t why_size) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        /* No driver, no device, driver too old...: not an error, just no GPU. */
        snprintf(why, why_size, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return 0;
    }
    size_t cudnn_ver = cudnnGetVersion();
    if (cudnn_ver < 90000) {
        snprintf(why, why_size, "cuDNN %zu is older than 9.0", cudnn_ver);
        return 0;
    }
    int n = 0;
    char skipped[96] = "";
    for (int i = 0; i < count && n < cap; i++) {
        struct cudaDeviceProp p;
        e = cudaGetDeviceProperties(&p, i);
        if (e != cudaSuccess) {
            snprintf(skipped, sizeof skipped, "gpu %d: %s", i, cudaGetErrorString(e));
            continue;
        }
        if (p.major < BF_CUDA_MIN_MAJOR) {
            snprintf(skipped, sizeof skipped, "gpu %d is sm_%d%d, need sm_80 or newer", i,
                     p.major % 100, p.minor % 100);
            continue;
        }
        bf_device *d = &devs[n];
        memset(d, 0, sizeof *d);
        d->ops = &cuda_ops;
        d->ordinal = i;
        snprintf(d->label, sizeof d->label, "gpu:%d", n);
        char name[64];
        bf_strlcpy(name, p.name, sizeof name);
        snprintf(d->description, sizeof d->description, "%s (sm_%d%d, %.1f GiB, cuDNN %u)", name,
                 p.major % 100, p.minor % 100, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024),
                 (unsigned)(cudnn_ver % 1000000));
        n++;
    }
    if (n == 0) snprintf(why, why_size, "%s", count == 0 ? "no CUDA device" : skipped);
    return n;
}

void bf_cuda_dev_release(bf_device *devs, int n) {
    /* The probe keeps no per-device state (impl stays NULL); sessions own their streams. */
    for (int i = 0; i < n; i++)
        devs[i].impl = NULL;
}
