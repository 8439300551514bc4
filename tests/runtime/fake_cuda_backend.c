/*
 * fake_cuda_backend.c - a stand-in for libblockflow_cuda.so for test_cuda_loader (CUDA builds):
 * it exports the backend's entry point with no CUDA behind it. $BF_FAKE_BACKEND, read at each
 * call of the entry, chooses what it hands the core:
 *   ""/unset  a good table: one host-memory "GPU", and kernels that refuse naming themselves
 *             ("fake conv 1", ...), so a test sees the core's glue reach each one;
 *   version   the table of another blockflow version;   layout  other struct sizes;
 *   abi       another ABI number;                        refuse  NULL with a reason.
 */
#include "devices/cuda_api.h"

#include <stdlib.h>
#include <string.h>

static const bf_cuda_core_v1 *core; /* bound by the entry (test code: one core per process) */

static bf_status fail(bf_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_status st = core->verr(err, BF_EUNSUPPORTED, "fake", fmt, ap);
    va_end(ap);
    return st;
}

static void *f_alloc(bf_device *d, size_t n, bf_error *err) {
    (void)d, (void)err;
    return core->calloc(1, n ? n : 1);
}
static void f_free(bf_device *d, void *p) { (void)d, core->free(p); }
static bf_status f_memset0(bf_device *d, void *p, size_t n, void *s, bf_error *err) {
    (void)d, (void)s, (void)err;
    memset(p, 0, n);
    return BF_OK;
}
static bf_status f_copy(bf_device *d, void *dst, const void *src, size_t n, void *s,
                        bf_error *err) {
    (void)d, (void)s, (void)err;
    if (n) memcpy(dst, src, n);
    return BF_OK;
}
static bf_status f_sync(bf_device *d, void *s, bf_error *err) {
    (void)d, (void)s, (void)err;
    return BF_OK;
}
static bf_status f_session_init(bf_device *d, const bf_config *cfg, void **stream, void **ctx,
                                bf_error *err) {
    (void)d, (void)cfg, (void)err;
    *stream = NULL, *ctx = NULL;
    return BF_OK;
}
static void f_session_free(bf_device *d, void *stream, void *ctx) { (void)d, (void)stream, (void)ctx; }

static const bf_device_ops fake_ops = {"fake", f_alloc, f_free, f_memset0, f_copy, f_copy,
                                       f_sync, f_session_init, f_session_free};

static int f_probe(bf_device *devs, int cap, char *why, size_t why_size) {
    if (cap < 1) {
        core->strlcpy(why, "no room", why_size);
        return 0;
    }
    memset(&devs[0], 0, sizeof devs[0]);
    devs[0].ops = &fake_ops;
    core->strlcpy(devs[0].label, "gpu:0", sizeof devs[0].label);
    core->strlcpy(devs[0].description, "fake device of test_cuda_loader",
                  sizeof devs[0].description);
    return 1;
}
static void f_release(bf_device *devs, int n) { (void)devs, (void)n; }
static size_t f_conv_ws(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                        const bf_exec *ex) {
    (void)op, (void)g, (void)dt, (void)use_cudnn, (void)ex;
    return 123;
}
static bf_status f_conv(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                        const void *a, const void *b, void *out, const bf_exec *ex,
                        bf_error *err) {
    (void)g, (void)dt, (void)a, (void)b, (void)out, (void)ex;
    return fail(err, "fake conv %d cudnn %d", (int)op, use_cudnn);
}
static size_t f_pool_ws(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const bf_exec *ex) {
    (void)op, (void)g, (void)dt, (void)ex;
    return 456;
}
static bf_status f_pool(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const void *a,
                        const void *b, void *out, double lowest, const bf_exec *ex,
                        bf_error *err) {
    (void)g, (void)dt, (void)a, (void)b, (void)out, (void)lowest, (void)ex;
    return fail(err, "fake pool %d", (int)op);
}
static bf_status f_act(bf_act_op op, bf_dtype dt, const void *x, const void *y, void *z,
                       int64_t n, const bf_exec *ex, bf_error *err) {
    (void)dt, (void)x, (void)y, (void)z, (void)ex;
    return fail(err, "fake act %d n %lld", (int)op, (long long)n);
}
static bf_status f_matmul(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bf_dtype dt,
                          const void *a, const void *b, void *c, const bf_exec *ex,
                          bf_error *err) {
    (void)ta, (void)tb, (void)dt, (void)a, (void)b, (void)c, (void)ex;
    return fail(err, "fake matmul %lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
}
static int f_bench(int argc, char **argv) {
    (void)argv;
    return 40 + argc;
}

#define TABLE(name, abi_, version_, exec_extra)                                                   \
    static const bf_cuda_api_v1 name = {                                                         \
        abi_,     sizeof(bf_cuda_api_v1),                                                        \
        version_, {sizeof(bf_error), sizeof(bf_exec) + (exec_extra), sizeof(bf_device),          \
                   sizeof(bf_device_ops), sizeof(bf_config), sizeof(bf_conv_geom),               \
                   sizeof(bf_pool_geom)},                                                        \
        f_probe,  f_release, f_conv_ws, f_conv, f_pool_ws, f_pool, f_act, f_matmul, f_bench}

TABLE(good, BF_CUDA_ABI, BF_VERSION_STRING, 0);
TABLE(old_version, BF_CUDA_ABI, "0.0.0", 0);
TABLE(other_layout, BF_CUDA_ABI, BF_VERSION_STRING, 8);
TABLE(other_abi, BF_CUDA_ABI + 1, BF_VERSION_STRING, 0);

__attribute__((visibility("default"))) const bf_cuda_api_v1 *
bf_cuda_backend_v1(const bf_cuda_core_v1 *from, char *why, size_t why_size);

const bf_cuda_api_v1 *bf_cuda_backend_v1(const bf_cuda_core_v1 *from, char *why,
                                         size_t why_size) {
    core = from;
    const char *v = getenv("BF_FAKE_BACKEND");
    if (!v || !v[0]) return &good;
    if (!strcmp(v, "version")) return &old_version;
    if (!strcmp(v, "layout")) return &other_layout;
    if (!strcmp(v, "abi")) return &other_abi;
    from->strlcpy(why, "fake refuses", why_size);
    return NULL;
}
