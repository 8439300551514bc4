/*
 * cuda_entry.c - the CUDA backend's door (cuda_api.h): its one exported function,
 * bf_cuda_backend_v1, which returns the backend's table, and the core functions the backend's
 * code calls (bf_malloc, bf_err, bf_dtype_name, ...), each forwarded to the core that loaded it.
 * Only libblockflow_cuda.so is built from this file; everything else in it is hidden, and it
 * is linked with no undefined symbol, so it needs nothing from the program that loads it.
 *
 * The one piece of state: the core's table, bound by the first call of the entry and never
 * changed after (a process holds one core: a second, different one is refused, as its
 * allocator could not free what the first one's allocated). The table it points to is the
 * core's constant data.
 */
#include "devices/cuda_api.h"
#include "devices/cuda_ctx.h"

#include "bench_gpu.h"
#include "array_ops/matmul_cuda.h"

#include <stdatomic.h>
#include <stdio.h>

static _Atomic(const bf_cuda_core_v1 *) core;

/* ---- the core's functions, as the backend's code calls them ------------------------------ */

static const bf_cuda_core_v1 *C(void) { return atomic_load_explicit(&core, memory_order_acquire); }

void *bf_malloc(size_t size) { return C()->malloc(size); }
void *bf_calloc(size_t n, size_t size) { return C()->calloc(n, size); }
void *bf_realloc(void *ptr, size_t size) { return C()->realloc(ptr, size); }
void bf_free(void *ptr) { C()->free(ptr); }
void bf_strlcpy(char *dst, const char *src, size_t size) { C()->strlcpy(dst, src, size); }
const char *bf_dtype_name(bf_dtype dt) { return C()->dtype_name(dt); }
size_t bf_dtype_size(bf_dtype dt) { return C()->dtype_size(dt); }
bf_dtype bf_dtype_from_name(const char *name) { return C()->dtype_from_name(name); }

bf_status bf_verr(bf_error *err, bf_status status, const char *code, const char *fmt,
                  va_list ap) {
    return C()->verr(err, status, code, fmt, ap);
}

bf_status bf_err(bf_error *err, bf_status status, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_status st = C()->verr(err, status, code, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- the table ---------------------------------------------------------------------------- */

static const bf_cuda_api_v1 api_v1 = {
    .abi            = BF_CUDA_ABI,
    .size           = sizeof(bf_cuda_api_v1),
    .version        = BF_VERSION_STRING,
    .layout         = {sizeof(bf_error), sizeof(bf_exec), sizeof(bf_device),
                       sizeof(bf_device_ops), sizeof(bf_config), sizeof(bf_conv_geom),
                       sizeof(bf_pool_geom)},
    .probe          = bf_cuda_dev_probe,
    .release        = bf_cuda_dev_release,
    .conv_workspace = bf_conv_cuda_workspace,
    .conv           = bf_conv_cuda,
    .pool_workspace = bf_pool_cuda_workspace,
    .pool           = bf_pool_cuda,
    .act            = bf_act_cuda,
    .matmul         = bf_matmul_cuda,
    .bench          = bf_bench_gpu_cuda_main,
};

__attribute__((visibility("default"))) const bf_cuda_api_v1 *
bf_cuda_backend_v1(const bf_cuda_core_v1 *from, char *why, size_t why_size);

const bf_cuda_api_v1 *bf_cuda_backend_v1(const bf_cuda_core_v1 *from, char *why,
                                         size_t why_size) {
    if (!from || from->abi != BF_CUDA_ABI || from->size < sizeof(bf_cuda_core_v1)) {
        if (why && why_size)
            snprintf(why, why_size, "%s speaks backend ABI %d, the library %u",
                     BF_CUDA_BACKEND_FILE, BF_CUDA_ABI, from ? (unsigned)from->abi : 0u);
        return NULL;
    }
    const bf_cuda_core_v1 *none = NULL;
    if (!atomic_compare_exchange_strong(&core, &none, from) && none != from) {
        if (why && why_size)
            snprintf(why, why_size, "%s already serves another copy of the blockflow library "
                     "in this process", BF_CUDA_BACKEND_FILE);
        return NULL;
    }
    return &api_v1;
}
