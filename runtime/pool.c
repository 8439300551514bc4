/*
 * pool.c - the kernel thread pool behind bf_parallel_for.
 *
 * Blocks run concurrently on libuv's thread pool (the scheduler); inside one block, a kernel
 * splits its work over this pool. Several kernels may call bf_parallel_for at once: each call
 * is a job on a queue, workers join the oldest job with a free slot, and the caller always
 * works on its own job too, so a job finishes even when every worker is busy elsewhere (no
 * deadlock, no oversubscription beyond n_threads per job). Tasks are handed out one index at a
 * time from an atomic counter, which balances uneven tasks without any tuning.
 *
 * A thread that runs out of work spins for BF_POOL_SPIN_S before it sleeps on a condition
 * variable: a worker, for the next job (a kernel calls bf_parallel_for several times in a row,
 * and a session runs block after block), and the caller, for the workers still in its job.
 * Waking a sleeping thread takes an IPI and, on a virtual machine, the host's scheduler: tens
 * to hundreds of microseconds (40-50 here), paid up to twice per call, which cost 3-7 % of
 * two-thread depthwise convolutions of about a millisecond (bench/RESULTS.md). OpenMP
 * runtimes spin likewise.
 */
#include "exec.h"

#include <uv.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BF_CPU_RELAX() _mm_pause()
#else
#define BF_CPU_RELAX() ((void)0)
#endif

#define BF_POOL_SPIN_S 200e-6 /* how long an idle thread spins before it sleeps */

typedef struct bf_job {
    bf_task_fn fn;
    void *arg;
    int64_t n;
    const bf_exec *ex;        /* cancelled or past its deadline: hand out no more tasks */
    _Atomic int64_t next; /* next task index to hand out */
    int max_slots;        /* participants allowed, the caller included */
    int slots;            /* participants so far (under the pool mutex) */
    _Atomic int active;   /* workers inside the job (changed under the pool mutex; the caller
                             may read it without, while it spins) */
    struct bf_job *link;  /* queue */
} bf_job;

struct bf_pool {
    uv_mutex_t mu;
    uv_cond_t cv_work; /* a job was queued, or stop */
    uv_cond_t cv_done; /* a worker left a job */
    bf_job *head, *tail;
    _Atomic unsigned queued; /* jobs queued so far (changed under the mutex): spinning workers
                                watch it without taking the mutex */
    int stop;
    int n_workers;
    uv_thread_t *threads;
};

/*
 * Take tasks until none are left or the run is cancelled. A cancelled kernel's outputs are
 * incomplete, and the session discards them (execute() turns the kernel's status into
 * BF_ECANCELED), so skipping the remaining tasks is what makes cancellation prompt for every
 * kernel built on bf_parallel_for, without each kernel polling the flag itself.
 */
static void job_work(bf_job *j, int slot) {
    int64_t i;
    while ((i = atomic_fetch_add(&j->next, 1)) < j->n) {
        if (bf_exec_cancelled(j->ex)) {
            atomic_store(&j->next, j->n);
            break;
        }
        j->fn(j->arg, i, slot);
    }
}

/* Remove `j` from the queue if it is there. Caller holds the mutex. */
static void queue_remove(bf_pool *p, bf_job *j) {
    bf_job **pp = &p->head, *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->link;
    }
    if (!*pp) return;
    *pp = j->link;
    if (p->tail == j) p->tail = prev;
    j->link = NULL;
}

/* Spin until *v differs from `seen` or BF_POOL_SPIN_S has passed. */
static void spin_while_equal(const _Atomic unsigned *v, unsigned seen) {
    double until = bf_now() + BF_POOL_SPIN_S;
    for (int k = 1; atomic_load_explicit(v, memory_order_acquire) == seen; k++) {
        BF_CPU_RELAX();
        if (k % 64 == 0 && bf_now() > until) break;
    }
}

static void worker_main(void *arg) {
    bf_pool *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        if (!p->stop && !p->head) {
            unsigned seen = atomic_load_explicit(&p->queued, memory_order_relaxed);
            uv_mutex_unlock(&p->mu);
            spin_while_equal(&p->queued, seen);
            uv_mutex_lock(&p->mu);
        }
        while (!p->stop && !p->head) uv_cond_wait(&p->cv_work, &p->mu);
        if (p->stop) break;
        bf_job *j = p->head;
        int slot = j->slots++;
        if (j->slots >= j->max_slots || atomic_load(&j->next) >= j->n) queue_remove(p, j);
        j->active++;
        uv_mutex_unlock(&p->mu);
        job_work(j, slot);
        uv_mutex_lock(&p->mu);
        j->active--;
        uv_cond_broadcast(&p->cv_done);
    }
    uv_mutex_unlock(&p->mu);
}

void bf_parallel_for(const bf_exec *ex, int64_t n, bf_task_fn fn, void *arg) {
    bf_pool *p = ex ? ex->pool : NULL;
    int threads = ex ? ex->n_threads : 1;
    if (n <= 0) return;
    if (!p || threads <= 1 || n == 1 || p->n_workers == 0) {
        for (int64_t i = 0; i < n && !bf_exec_cancelled(ex); i++) fn(arg, i, 0);
        return;
    }
    bf_job j = {.fn = fn, .arg = arg, .n = n, .ex = ex,
                .max_slots = (int)BF_MIN(threads, n), .slots = 1};
    atomic_init(&j.next, 0);
    uv_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->link = &j;
    else
        p->head = &j;
    p->tail = &j;
    atomic_fetch_add_explicit(&p->queued, 1, memory_order_release);
    uv_cond_broadcast(&p->cv_work);
    uv_mutex_unlock(&p->mu);

    job_work(&j, 0);

    /* the workers still in the job are finishing their last tasks: spin a while first */
    double until = bf_now() + BF_POOL_SPIN_S;
    for (int k = 1; atomic_load(&j.active) > 0; k++) {
        BF_CPU_RELAX();
        if (k % 64 == 0 && bf_now() > until) break;
    }
    uv_mutex_lock(&p->mu);
    queue_remove(p, &j); /* no worker joins from here on */
    while (atomic_load(&j.active) > 0) uv_cond_wait(&p->cv_done, &p->mu);
    uv_mutex_unlock(&p->mu);
}

bf_status bf_pool_new(int n_threads, bf_pool **out, bf_error *err) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    bf_pool *p = bf_calloc(1, sizeof(*p));
    if (!p) return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate the thread pool");
    p->threads = bf_calloc((size_t)n_threads, sizeof(uv_thread_t));
    if (!p->threads || uv_mutex_init(&p->mu)) {
        bf_free(p->threads);
        bf_free(p);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate the thread pool");
    }
    uv_cond_init(&p->cv_work);
    uv_cond_init(&p->cv_done);
    for (int i = 0; i < n_threads - 1; i++) {
        if (uv_thread_create(&p->threads[i], worker_main, p)) {
            bf_pool_free(p);
            return bf_err(err, BF_EINTERNAL, "thread_error", "cannot start kernel thread %d", i);
        }
        p->n_workers++;
    }
    *out = p;
    return BF_OK;
}

void bf_pool_free(bf_pool *p) {
    if (!p) return;
    uv_mutex_lock(&p->mu);
    p->stop = 1;
    uv_cond_broadcast(&p->cv_work);
    uv_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) uv_thread_join(&p->threads[i]);
    uv_cond_destroy(&p->cv_work);
    uv_cond_destroy(&p->cv_done);
    uv_mutex_destroy(&p->mu);
    bf_free(p->threads);
    bf_free(p);
}

int bf_pool_threads(const bf_pool *p) { return p ? p->n_workers + 1 : 1; }
