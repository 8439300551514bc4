/*
 * context.h - the internal layout of bf_context: resolved configuration, the kernel thread
 * pool and the devices found. Sessions borrow all of it.
 */
#ifndef BF_CONTEXT_H
#define BF_CONTEXT_H

#include "collective.h"
#include "device.h"
#include "exec.h"
#include "tensor.h"

#include <uv.h>

#define BF_MAX_GPUS 16

struct bf_context {
    bf_config cfg;          /* defaults resolved */
    bf_pool *pool;          /* kernel threads */
    uv_mutex_t probe_lock;  /* sessions on different threads may ask the first GPU question */
    int gpu_probed;         /* devices are probed lazily, on the first GPU question */
    int n_gpus;             /* these three and devices_text are written once, under probe_lock */
    bf_device gpus[BF_MAX_GPUS];
    char gpu_why[128];      /* why there is no GPU, when n_gpus == 0 */
    char devices_text[256];
    int cpu_avx512, cpu_avx2;
    bf_coll coll;           /* the job: one process, or this rank of an MPI job */
};

/* Probe the GPUs once. Thread-safe: the first caller probes, the others wait for it; after it
 * returns, gpus, n_gpus, gpu_why and devices_text may be read without the lock. */
void bf_context_probe_gpus(bf_context *ctx);

#endif /* BF_CONTEXT_H */
