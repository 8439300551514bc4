/*
 * cuda_api.h - the contract between the core and the CUDA backend, a plugin of its own
 * (libblockflow_cuda.so, beside libblockflow.so) that the core loads with dlopen when a GPU
 * question is first asked (devices/cuda_loader.c). Only the backend links the CUDA runtime and
 * cuDNN, so the program and the library start on a machine without them and run on the CPU,
 * saying why there is no GPU.
 *
 * The backend exports one symbol, BF_CUDA_ENTRY ("bf_cuda_backend_v1"), a bf_cuda_entry_v1
 * function: the core hands it the core functions the backend calls (bf_cuda_core_v1: the
 * replaceable allocator, error formatting, dtype names) and gets the backend's table
 * (bf_cuda_api_v1: the device probe and the kernels' entry points). Both tables start with
 * their ABI number and size. The structs both sides pass (bf_exec, bf_device, bf_conv_geom...)
 * are internal and change between versions, so the core takes only a backend of its own
 * version with the same struct sizes (bf_cuda_layout), and says which one it refused.
 *
 * A table grows only at its end (the size says what a side has); a change of meaning or order
 * is a new ABI number and a new entry symbol.
 */
#ifndef BF_CUDA_API_H
#define BF_CUDA_API_H

#include "device.h"
#include "exec.h"
#include "math_ops/act_cuda.h"
#include "nn_ops/conv_kernels.h"
#include "nn_ops/pool_geom.h"

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BF_CUDA_ABI 1
#define BF_CUDA_ENTRY "bf_cuda_backend_v1"
/* The backend's file name, installed in the same folder as libblockflow.so. */
#define BF_CUDA_BACKEND_FILE "libblockflow_cuda.so"

/* The sizes of the internal structs the two sides share: equal or the backend is refused. */
typedef struct bf_cuda_layout {
    uint32_t error, exec, device, device_ops, config, conv_geom, pool_geom;
} bf_cuda_layout;

static inline bf_cuda_layout bf_cuda_layout_here(void) {
    bf_cuda_layout l = {(uint32_t)sizeof(bf_error),     (uint32_t)sizeof(bf_exec),
                        (uint32_t)sizeof(bf_device),    (uint32_t)sizeof(bf_device_ops),
                        (uint32_t)sizeof(bf_config),    (uint32_t)sizeof(bf_conv_geom),
                        (uint32_t)sizeof(bf_pool_geom)};
    return l;
}

/* What the core lends the backend: the backend's bf_malloc, bf_err, ... call these, so its
 * allocations go through bf_replace_allocator's hooks like everyone else's. */
typedef struct bf_cuda_core_v1 {
    uint32_t abi;  /* BF_CUDA_ABI */
    uint32_t size; /* sizeof(bf_cuda_core_v1) on the core's side */
    void *(*malloc)(size_t size);
    void *(*calloc)(size_t n, size_t size);
    void *(*realloc)(void *ptr, size_t size);
    void (*free)(void *ptr);
    bf_status (*verr)(bf_error *err, bf_status status, const char *code, const char *fmt,
                      va_list ap);
    void (*strlcpy)(char *dst, const char *src, size_t size);
    const char *(*dtype_name)(bf_dtype dt);
    size_t (*dtype_size)(bf_dtype dt);
    bf_dtype (*dtype_from_name)(const char *name);
} bf_cuda_core_v1;

/*
 * The backend. Each entry point is the function of the same name in the headers that declare
 * it (device.h, conv_kernels.h, pool_geom.h, act_cuda.h, matmul_cuda.h, bench/bench_gpu.h),
 * whose comments say what it does; the core's functions of those names forward here.
 */
typedef struct bf_cuda_api_v1 {
    uint32_t abi;         /* BF_CUDA_ABI */
    uint32_t size;        /* sizeof(bf_cuda_api_v1) on the backend's side */
    const char *version;  /* BF_VERSION_STRING of the build it came from */
    bf_cuda_layout layout;
    /* the GPUs: fills devs[i].ops; the core then sets devs[i].cuda to this table */
    int (*probe)(bf_device *devs, int cap, char *why, size_t why_size);
    void (*release)(bf_device *devs, int n);
    size_t (*conv_workspace)(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                             const bf_exec *ex);
    bf_status (*conv)(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int use_cudnn,
                      const void *a, const void *b, void *out, const bf_exec *ex,
                      bf_error *err);
    size_t (*pool_workspace)(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt,
                             const bf_exec *ex);
    bf_status (*pool)(bf_pool_op op, const bf_pool_geom *g, bf_dtype dt, const void *a,
                      const void *b, void *out, double lowest, const bf_exec *ex,
                      bf_error *err);
    bf_status (*act)(bf_act_op op, bf_dtype dt, const void *x, const void *y, void *z,
                     int64_t n, const bf_exec *ex, bf_error *err);
    bf_status (*matmul)(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bf_dtype dt,
                        const void *a, const void *b, void *c, const bf_exec *ex,
                        bf_error *err);
    int (*bench)(int argc, char **argv); /* `blockflow bench --device gpu` */
} bf_cuda_api_v1;

/*
 * The backend's one exported function. Returns its table, or NULL with the reason in `why`
 * (the core's ABI is not one it knows, or the backend already serves another copy of the core
 * in this process). It touches no GPU.
 */
typedef const bf_cuda_api_v1 *(*bf_cuda_entry_v1)(const bf_cuda_core_v1 *core, char *why,
                                                  size_t why_size);

/*
 * The core's side (devices/cuda_loader.c): the backend's table, loaded on the first call,
 * or NULL with the reason in `why` ("built without CUDA", the loader's words about a missing
 * libcudart.so.13, a backend of another version...). Where it is looked for, first found wins:
 * the file named by the environment variable BLOCKFLOW_CUDA_BACKEND (and only there when
 * set); libblockflow_cuda.so in the folder of the file holding the core (libblockflow.so, or
 * the program that links the core statically) and in that folder's BF_CUDA_LIBDIR_FROM_BIN
 * (an installed bin/ -> lib/); then the system loader's search. Once loaded, the backend
 * stays loaded for the life of the process (code that registered kernels with the CUDA
 * runtime cannot be unloaded safely); asking again returns the same table.
 */
const bf_cuda_api_v1 *bf_cuda_backend(char *why, size_t why_size);

/* The backend behind ex's device, or NULL when ex runs on the CPU or on a device of no
 * backend (a test's fake device). */
static inline const bf_cuda_api_v1 *bf_cuda_api_of(const bf_exec *ex) {
    return ex && ex->device ? ex->device->cuda : NULL;
}

/* The error of a GPU entry point called without a CUDA device behind ex: BF_EUNSUPPORTED,
 * code "no_gpu". */
bf_status bf_cuda_no_backend(bf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BF_CUDA_API_H */
