/*
 * pool.c - the kernel thread pool behind bf_parallel_for.
 *
 * Blocks run concurrently on libuv's thread pool (the scheduler); inside one block, a kernel
 * splits its work over this pool. Several kernels may call bf_parallel_for at once: each call
 * is a job on a queue, workers join the oldest job with a free slot, and the caller always
 * works on its own job too, so a job finishes even when every worker is busy elsewhere (no
 * deadlock, no oversubscription beyond n_threads per job). Tasks are handed out one index at a
 * time from an atomic counter, which balances uneven tasks without any tuning.
 */
#include "exec.h"

#include <uv.h>

typedef struct bf_job {
    bf_task_fn fn;
    void *arg;
    int64_t n;
    const bf_exec *ex;        /* cancelled or past its deadline: hand out no more tasks */
    _Atomic int64_t next; /* next task index to hand out */
    int max_slots;        /* participants allowed, the caller included */
    int slots;            /* participants so far (under the pool mutex) */
    int active;           /* workers inside the job (under the pool mutex) */
    struct bf_job *link;  /* queue */
} bf_job;

struct bf_pool {
    uv_mutex_t mu;
    uv_cond_t cv_work; /* a job was queued, or stop */
    uv_cond_t cv_done; /* a worker left a job */
    bf_job *head, *tail;
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

static void worker_main(void *arg) {
    bf_pool *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
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
    uv_cond_broadcast(&p->cv_work);
    uv_mutex_unlock(&p->mu);

    job_work(&j, 0);

    uv_mutex_lock(&p->mu);
    queue_remove(p, &j);
    while (j.active > 0) uv_cond_wait(&p->cv_done, &p->mu);
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
