/*
 * context.c - configuration defaults, the kernel thread pool and device discovery.
 *
 * Defaults are chosen so that an unconfigured program is safe on a shared machine: half of
 * the RAM for a session's tensors, 2^40 elements for one tensor, 64 MiB pages, JSON nested at
 * most 64 deep. GPUs are probed lazily, so a CPU-only run never touches the CUDA driver.
 */
#include "context.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void bf_config_init(bf_config *cfg) {
    if (cfg) memset(cfg, 0, sizeof(*cfg));
}

static uint64_t ram_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return (uint64_t)8 << 30;
    return (uint64_t)pages * (uint64_t)size;
}

bf_status bf_context_new(const bf_config *cfg, bf_context **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    bf_context *ctx = bf_calloc(1, sizeof(*ctx));
    if (!ctx) return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate a context");
    if (cfg) ctx->cfg = *cfg;
    bf_config *c = &ctx->cfg;
    if (c->threads < 0 || c->max_blocks < 0 || c->max_json_depth < 0 ||
        c->cudnn_workspace_mb < 0 || c->cudnn_workspace_mb > (1 << 20)) {
        bf_free(ctx);
        return bf_err(err, BF_EINVAL, "bad_config", "negative or out-of-range value in "
                      "bf_config");
    }
    if (!c->max_session_bytes) c->max_session_bytes = ram_bytes() / 2;
    if (!c->max_cache_bytes) c->max_cache_bytes = c->max_session_bytes / 2;
    if (c->no_cache) c->max_cache_bytes = 0;
    if (!c->max_tensor_elements) c->max_tensor_elements = BF_DEFAULT_MAX_ELEMENTS;
    if (!c->max_page_bytes) c->max_page_bytes = (uint64_t)64 << 20;
    if (!c->max_blocks) c->max_blocks = 100000;
    if (!c->max_json_depth) c->max_json_depth = 64;
    if (!c->cudnn_workspace_mb) c->cudnn_workspace_mb = 1024;
    if (!c->threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = n > 0 ? (int)BF_MIN(n, 256) : 1;
    }
    if (uv_mutex_init(&ctx->probe_lock)) {
        bf_free(ctx);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot create a context's lock");
    }
    if (c->distributed < -1 || c->distributed > 1) {
        uv_mutex_destroy(&ctx->probe_lock);
        bf_free(ctx);
        return bf_err(err, BF_EINVAL, "bad_config", "bf_config.distributed must be -1, 0 or 1");
    }
    bf_status st = c->group ? bf_coll_local_open(c->group, c->group_rank, &ctx->coll, err)
                            : bf_coll_open(c->distributed, &ctx->coll, err);
    if (st == BF_OK) st = bf_pool_new(c->threads, &ctx->pool, err);
    if (st) {
        ctx->coll.ops->close(&ctx->coll);
        uv_mutex_destroy(&ctx->probe_lock);
        bf_free(ctx);
        return st;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    ctx->cpu_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    ctx->cpu_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    *out = ctx;
    return BF_OK;
}

void bf_context_free(bf_context *ctx) {
    if (!ctx) return;
    if (ctx->gpu_probed) bf_cuda_release(ctx->gpus, ctx->n_gpus);
    bf_pool_free(ctx->pool);
    ctx->coll.ops->close(&ctx->coll);
    uv_mutex_destroy(&ctx->probe_lock);
    bf_free(ctx);
}

const bf_config *bf_context_config(const bf_context *ctx) { return ctx ? &ctx->cfg : NULL; }

static void describe_devices(bf_context *ctx) {
    size_t n = (size_t)snprintf(ctx->devices_text, sizeof(ctx->devices_text),
                                "cpu: %d threads%s", ctx->cfg.threads,
                                ctx->cpu_avx512 ? ", avx512" : ctx->cpu_avx2 ? ", avx2" : "");
    if (ctx->n_gpus == 0 && n < sizeof(ctx->devices_text))
        snprintf(ctx->devices_text + n, sizeof(ctx->devices_text) - n, "; gpu: none (%s)",
                 ctx->gpu_why);
    for (int i = 0; i < ctx->n_gpus && n < sizeof(ctx->devices_text); i++)
        n += (size_t)snprintf(ctx->devices_text + n, sizeof(ctx->devices_text) - n,
                              "; %s: %s", ctx->gpus[i].label, ctx->gpus[i].description);
}

void bf_context_probe_gpus(bf_context *ctx) {
    uv_mutex_lock(&ctx->probe_lock);
    if (!ctx->gpu_probed) {
        if (ctx->cfg.disable_gpu)
            bf_strlcpy(ctx->gpu_why, "disabled by configuration", sizeof(ctx->gpu_why));
        else
            ctx->n_gpus = bf_cuda_probe(ctx->gpus, BF_MAX_GPUS, ctx->gpu_why,
                                        sizeof(ctx->gpu_why));
        describe_devices(ctx);
        ctx->gpu_probed = 1;
    }
    uv_mutex_unlock(&ctx->probe_lock);
}

int bf_context_has_gpu(bf_context *ctx) {
    if (!ctx) return 0;
    bf_context_probe_gpus(ctx);
    return ctx->n_gpus > 0;
}

const char *bf_context_devices(bf_context *ctx) {
    if (!ctx) return "no context";
    bf_context_probe_gpus(ctx);
    return ctx->devices_text;
}

/* ---- the job (collective.h) ---------------------------------------------------------------- */

int bf_launched_by_mpi(void) { return bf_coll_launched_by_mpi(); }

int bf_context_rank(const bf_context *ctx) { return ctx ? ctx->coll.rank : 0; }

int bf_context_size(const bf_context *ctx) { return ctx ? ctx->coll.size : 1; }

const char *bf_context_job(const bf_context *ctx) { return ctx ? ctx->coll.desc : "one process"; }

void bf_context_job_stats(const bf_context *ctx, int64_t *calls, int64_t *bytes,
                          double *seconds) {
    if (calls) *calls = ctx ? ctx->coll.calls : 0;
    if (bytes) *bytes = ctx ? ctx->coll.bytes : 0;
    if (seconds) *seconds = ctx ? ctx->coll.seconds : 0;
}

void bf_context_abort(bf_context *ctx, int code) {
    if (ctx && ctx->coll.size > 1) ctx->coll.ops->abort(&ctx->coll, code);
}
