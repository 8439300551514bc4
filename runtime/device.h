/*
 * device.h - the device layer: a small vtable per kind of device (STYLE R11). The CPU needs
 * no entry (host memory is the default, device == NULL); a GPU backend fills a bf_device_ops
 * and is found at run time, so the same library runs with or without CUDA, with or without a
 * GPU. Blocks never see an #ifdef: a block offers run_cpu and optionally run_cuda, and the
 * session decides where it runs and moves tensors.
 */
#ifndef BF_DEVICE_H
#define BF_DEVICE_H

#include "common.h"

typedef struct bf_device bf_device;

typedef struct bf_device_ops {
    const char *name;                                     /* "cuda" */
    /* Device memory. alloc returns NULL on failure and fills err (BF_EDEVICE / BF_ENOMEM). */
    void *(*alloc)(bf_device *dev, size_t bytes, bf_error *err);
    void (*free)(bf_device *dev, void *ptr);
    bf_status (*memset0)(bf_device *dev, void *ptr, size_t bytes, void *stream, bf_error *err);
    bf_status (*upload)(bf_device *dev, void *dst, const void *src, size_t bytes, void *stream,
                        bf_error *err);
    bf_status (*download)(bf_device *dev, void *dst, const void *src, size_t bytes,
                          void *stream, bf_error *err);
    bf_status (*sync)(bf_device *dev, void *stream, bf_error *err);
    /* Per-session state (stream, cuDNN handle), made lazily and freed with the session; `cfg`
     * (NULL: the defaults) gives the cuDNN choices (autotune, determinism, workspace cap). */
    bf_status (*session_init)(bf_device *dev, const bf_config *cfg, void **stream,
                              void **device_ctx, bf_error *err);
    void (*session_free)(bf_device *dev, void *stream, void *device_ctx);
} bf_device_ops;

struct bf_cuda_api_v1;

struct bf_device {
    const bf_device_ops *ops;
    int ordinal;          /* GPU index */
    char label[16];       /* "gpu:0" */
    char description[128];
    void *impl;           /* backend-private */
    /* The CUDA backend that found it (devices/cuda_api.h): its kernels' entry points. */
    const struct bf_cuda_api_v1 *cuda;
};

/*
 * Probe the CUDA backend: fill `devs` (capacity `cap`) with the GPUs found and return their
 * number; 0 when the library was built without CUDA, the backend or the CUDA libraries cannot
 * be loaded, or no driver/device is present, with the reason in `why`. Defined in
 * devices/cuda_loader.c, which loads the backend (devices/cuda.c in libblockflow_cuda.so).
 */
int bf_cuda_probe(bf_device *devs, int cap, char *why, size_t why_size);
/* Release what bf_cuda_probe set up for these devices. */
void bf_cuda_release(bf_device *devs, int n);

#endif /* BF_DEVICE_H */
