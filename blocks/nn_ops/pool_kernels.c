/*
 * pool_kernels.c - the CPU kernels of the pooling blocks (declared in pool_common.h): the
 * template pool_kernels_impl.h instantiated for float32 and float64 (every kernel) and for
 * int32 and int64 (MaxPool), plus the helpers they share: clipping a window to the data,
 * splitting work into tasks for bf_parallel_for, and zeroing a gradient before it is summed.
 *
 * Work is split into contiguous ranges of units (output rows, images or channel planes),
 * enough tasks to balance the pool's threads but each worth at least ~32k element
 * operations, so a small pooling (the CNN benchmark's [128, 8, 8, 16]) is not drowned in task
 * hand-out and a tiny one runs on the calling thread alone. The gradient kernels zero the
 * part of dx each task owns just before adding into it (no separate pass over dx).
 */
#include "pool_common.h"

#include <stdint.h>
#include <string.h>

/* [*lo, *hi): the rows (or columns) of [0, n) that a window of k starting at `start` covers. */
static inline void pk_clip(int64_t start, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k < n ? start + k : n;
    if (*hi < *lo) *hi = *lo;
}

/* Task t of `tasks` owns units [*u0, *u1). */
static inline void pk_range(int64_t units, int64_t tasks, int64_t t, int64_t *u0, int64_t *u1) {
    *u0 = units * t / tasks;
    *u1 = units * (t + 1) / tasks;
}

#define PK_MIN_TASK_WORK ((int64_t)1 << 15)

/* How many tasks to split `units` units of `cost` element operations each into. */
static int64_t pk_tasks(const bf_exec *ex, int64_t units, int64_t cost) {
    int threads = ex && ex->pool && ex->n_threads > 1 ? ex->n_threads : 1;
    if (threads <= 1 || units <= 1) return 1;
    double total = (double)units * (double)(cost > 0 ? cost : 1);
    double by_work = total / (double)PK_MIN_TASK_WORK;
    double t = by_work < (double)units ? by_work : (double)units;
    if (t > 4.0 * threads) t = 4.0 * threads;
    return t < 1 ? 1 : (int64_t)t;
}

static void pk_run(const bf_exec *ex, int64_t tasks, bf_task_fn fn, void *arg) {
    if (tasks <= 1) {
        fn(arg, 0, 0);
        return;
    }
    bf_parallel_for(ex, tasks, fn, arg);
}

typedef struct pk_zero_job {
    char *p;
    int64_t bytes, tasks;
} pk_zero_job;

static void pk_zero_task(void *arg, int64_t t, int slot) {
    (void)slot;
    const pk_zero_job *j = arg;
    int64_t b0, b1;
    pk_range(j->bytes, j->tasks, t, &b0, &b1);
    memset(j->p + b0, 0, (size_t)(b1 - b0));
}

/* Zero `bytes` bytes at p, in parallel when that is worth it. */
static void pk_zero(const bf_exec *ex, void *p, int64_t bytes) {
    pk_zero_job j = {.p = p, .bytes = bytes, .tasks = pk_tasks(ex, bytes >> 6, 64)};
    pk_run(ex, j.tasks, pk_zero_task, &j);
}

#define PK_T     float
#define PK_S     f32
#define PK_FLOAT 1
#define PK_MASK  uint32_t /* an all-ones / all-zeros lane as wide as PK_T */
#define PK_VB    16       /* channels per block: one cache line */
#include "pool_kernels_impl.h"
#undef PK_T
#undef PK_S
#undef PK_FLOAT
#undef PK_MASK
#undef PK_VB

#define PK_T     double
#define PK_S     f64
#define PK_FLOAT 1
#define PK_MASK  uint64_t
#define PK_VB    8
#include "pool_kernels_impl.h"
#undef PK_T
#undef PK_S
#undef PK_FLOAT
#undef PK_MASK
#undef PK_VB

#define PK_T      int32_t
#define PK_S      i32
#define PK_FLOAT  0
#define PK_LOWEST INT32_MIN
#define PK_VB     16
#define PK_MASK   uint32_t
#include "pool_kernels_impl.h"
#undef PK_T
#undef PK_S
#undef PK_FLOAT
#undef PK_LOWEST
#undef PK_VB
#undef PK_MASK

#define PK_T      int64_t
#define PK_S      i64
#define PK_FLOAT  0
#define PK_LOWEST INT64_MIN
#define PK_VB     8
#define PK_MASK   uint64_t
#include "pool_kernels_impl.h"
#undef PK_T
#undef PK_S
#undef PK_FLOAT
#undef PK_LOWEST
#undef PK_VB
#undef PK_MASK
