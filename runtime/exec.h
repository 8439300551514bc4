/*
 * exec.h - what a kernel gets besides its tensors: the thread pool to split its work over,
 * the cancel flag to poll, its planned scratch memory, and the device it runs on.
 *
 * Kernels never allocate (STYLE R8e): the session asks each block for its workspace size
 * once per shape, keeps the buffer across runs, and passes it here.
 */
#ifndef BF_EXEC_H
#define BF_EXEC_H

#include "common.h"

#ifdef __cplusplus
/* C++ (the .cu files): std::atomic<int> has the layout of C11's atomic_int. */
#include <atomic>
using std::atomic_int;
using std::atomic_load_explicit;
using std::memory_order_relaxed;
extern "C" {
#else
#include <stdatomic.h>
#endif

typedef struct bf_pool bf_pool;
struct bf_device;

/*
 * A task function for bf_parallel_for: process task `i` of the job. `slot` identifies the
 * participating thread, 0 <= slot < bf_exec.n_threads, and is stable for the duration of one
 * call of `fn`, so per-thread scratch can be indexed by it.
 */
typedef void (*bf_task_fn)(void *arg, int64_t i, int slot);

typedef struct bf_exec {
    bf_pool *pool;                   /* NULL: run everything on the calling thread */
    int n_threads;                   /* >= 1: the most slots a parallel_for will use */
    const atomic_int *cancel;        /* nonzero: stop as soon as convenient (may be NULL) */
    double deadline;                 /* bf_now() past this also means stop (0: none) */
    void *workspace;                 /* planned scratch, 64-byte aligned */
    size_t workspace_size;
    struct bf_device *device;        /* NULL: CPU */
    void *stream;                    /* the device's stream (cudaStream_t) or NULL */
    void *device_ctx;                /* the device's per-session state (cuDNN handle...) */
    char *note;                      /* kernels may write a short note here (algorithm...) */
    size_t note_size;
} bf_exec;

/*
 * Run fn(arg, i, slot) for i in [0, n) on up to ex->n_threads threads, the caller included,
 * and return when all are done. Safe to call from several threads at once (each call is its
 * own job). Tasks must not call bf_parallel_for themselves. Once ex->cancel is set, no further
 * tasks start: the kernel's outputs are then incomplete, and the session discards them.
 */
void bf_parallel_for(const bf_exec *ex, int64_t n, bf_task_fn fn, void *arg);

/* True when the run was cancelled or ran past its deadline; long kernels poll this between
 * tasks (bf_parallel_for does it for them). */
static inline bool bf_exec_cancelled(const bf_exec *ex) {
    if (!ex) return false;
    if (ex->cancel && atomic_load_explicit(ex->cancel, memory_order_relaxed) != 0) return true;
    return ex->deadline > 0 && bf_now() > ex->deadline;
}

/* The pool: `n_threads - 1` workers (the caller is the n-th). Errors: BF_ENOMEM, BF_EINTERNAL. */
bf_status bf_pool_new(int n_threads, bf_pool **out, bf_error *err);
void bf_pool_free(bf_pool *pool);
int bf_pool_threads(const bf_pool *pool);

#ifdef __cplusplus
}
#endif
#endif /* BF_EXEC_H */
