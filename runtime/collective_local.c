/*
 * collective_local.c - a job whose ranks are threads of this process (bf_group, collective.h):
 * `blockflow train PAGE --ranks K` on one machine without MPI, for teaching the batch sum as
 * a sum across ranks, and to give the bits of a K-rank job in one process.
 *
 * Each rank is a context of its own (cfg.group, cfg.group_rank), used from its own thread; its
 * collective calls meet the other ranks' at a barrier. Every rank posts the address of its
 * buffer, waits for all, and then reads the others' buffers in place (one process, one
 * address space), so nothing is copied that an MPI job would not send. Sums are made in rank
 * order, element by element (rank 0's value + rank 1's + ...), with each rank computing one
 * slice of the elements: the same bits as an MPI job's deterministic reduce, whichever path
 * (all-reduce, or gather and broadcast) the runtime takes.
 *
 * A rank that aborts, or ends (its context freed) while the others still call, breaks the
 * group: every call waiting or to come returns "rank_failed" naming it, so no rank waits for
 * ever.
 */
#include "collective.h"

#include <stdio.h>
#include <string.h>
#include <uv.h>

struct bf_group {
    int size;
    uv_mutex_t lock;
    uv_cond_t cond;
    int arrived;         /* ranks at the current barrier */
    uint64_t generation; /* barriers completed */
    int gone;            /* the lowest rank that aborted or left while others went on, -1 */
    bool *joined;        /* a context holds rank r */
    const void **slot;   /* per rank: the buffer it posted for the current call */
    void **scratch;      /* per rank: its slice of a sum */
    bool *short_of;      /* per rank: it had no memory for its slice */
};

typedef struct local_rank {
    bf_group *g;
} local_rank;

bf_status bf_group_new(int ranks, bf_group **out, bf_error *err) {
    bf_error_clear(err);
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (ranks < 1 || ranks > 4096)
        return bf_err(err, BF_EINVAL, "bad_argument", "a group has 1 to 4096 ranks, not %d", ranks);
    bf_group *g = bf_calloc(1, sizeof(*g));
    if (!g) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    g->size = ranks;
    g->gone = -1;
    g->joined = bf_calloc((size_t)ranks, sizeof(bool));
    g->slot = bf_calloc((size_t)ranks, sizeof(void *));
    g->scratch = bf_calloc((size_t)ranks, sizeof(void *));
    g->short_of = bf_calloc((size_t)ranks, sizeof(bool));
    bool locks = false;
    if (g->joined && g->slot && g->scratch && g->short_of && !uv_mutex_init(&g->lock)) {
        if (!uv_cond_init(&g->cond)) locks = true;
        else uv_mutex_destroy(&g->lock);
    }
    if (!locks) {
        bf_free(g->joined), bf_free(g->slot), bf_free(g->scratch), bf_free(g->short_of);
        bf_free(g);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    *out = g;
    return BF_OK;
}

void bf_group_free(bf_group *g) {
    if (!g) return;
    uv_cond_destroy(&g->cond);
    uv_mutex_destroy(&g->lock);
    bf_free(g->joined), bf_free(g->slot), bf_free(g->scratch), bf_free(g->short_of);
    bf_free(g);
}

int bf_group_size(const bf_group *g) { return g ? g->size : 0; }

static bf_status broken(const bf_group *g, bf_error *err) {
    return bf_err(err, BF_EDEVICE, "rank_failed", "rank %d of the job stopped before this "
                  "collective call, so it stops on every rank (rank %d's error says why)",
                  g->gone, g->gone);
}

/* Wait until every rank has arrived, having posted `post` in its slot: the first barrier of a
 * call posts, the later ones (post NULL) leave the slots alone while others may read them. */
static bf_status barrier(bf_coll *c, const void *post, bf_error *err) {
    bf_group *g = ((local_rank *)c->impl)->g;
    uv_mutex_lock(&g->lock);
    if (g->gone >= 0) {
        uv_mutex_unlock(&g->lock);
        return broken(g, err);
    }
    if (post) g->slot[c->rank] = post;
    uint64_t mine = g->generation;
    if (++g->arrived == g->size) {
        g->arrived = 0;
        g->generation++;
        uv_cond_broadcast(&g->cond);
    } else {
        while (g->generation == mine && g->gone < 0) uv_cond_wait(&g->cond, &g->lock);
    }
    bool done = g->generation != mine; /* completed, even if a rank left just after */
    uv_mutex_unlock(&g->lock);
    return done ? BF_OK : broken(g, err);
}

/* This rank's slice [lo, hi) of n elements. */
static void slice(const bf_coll *c, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = n * c->rank / c->size;
    *hi = n * (c->rank + 1) / c->size;
}

static bf_status local_allreduce(bf_coll *c, void *buf, int64_t count, bf_dtype dt,
                                 bf_error *err) {
    bf_group *g = ((local_rank *)c->impl)->g;
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_I64)
        return bf_err(err, BF_EINTERNAL, "bad_dtype", "all-reduce of %s", bf_dtype_name(dt));
    double t0 = bf_now();
    size_t esz = bf_dtype_size(dt);
    int64_t lo, hi;
    slice(c, count, &lo, &hi);
    void *mine = hi > lo ? bf_malloc((size_t)(hi - lo) * esz) : NULL;
    g->short_of[c->rank] = hi > lo && !mine;
    g->scratch[c->rank] = mine;
    bf_status st = barrier(c, buf, err); /* 1: every buffer posted */
    bool oom = false;
    for (int r = 0; st == BF_OK && r < c->size; r++) oom |= g->short_of[r];
    if (st == BF_OK && !oom) {
        /* this rank's slice of the sum, in rank order */
        for (int64_t i = lo; i < hi; i++) {
            if (dt == BF_DTYPE_F32) {
                float acc = ((const float *)g->slot[0])[i];
                for (int r = 1; r < c->size; r++) acc += ((const float *)g->slot[r])[i];
                ((float *)mine)[i - lo] = acc;
            } else if (dt == BF_DTYPE_F64) {
                double acc = ((const double *)g->slot[0])[i];
                for (int r = 1; r < c->size; r++) acc += ((const double *)g->slot[r])[i];
                ((double *)mine)[i - lo] = acc;
            } else {
                int64_t acc = ((const int64_t *)g->slot[0])[i];
                for (int r = 1; r < c->size; r++)
                    acc = (int64_t)((uint64_t)acc + (uint64_t)((const int64_t *)g->slot[r])[i]);
                ((int64_t *)mine)[i - lo] = acc;
            }
        }
        st = barrier(c, NULL, err); /* 2: every slice summed, no buffer is read any more */
        for (int r = 0; st == BF_OK && r < c->size; r++) {
            int64_t rlo = count * r / c->size, rhi = count * (r + 1) / c->size;
            if (rhi > rlo)
                memcpy((char *)buf + (size_t)rlo * esz, g->scratch[r], (size_t)(rhi - rlo) * esz);
        }
        if (st == BF_OK) st = barrier(c, NULL, err); /* 3: every slice copied */
    } else if (st == BF_OK) {
        st = bf_err(err, BF_ENOMEM, "out_of_memory", "no memory to sum %lld elements across "
                    "the ranks", (long long)count);
    }
    bf_free(mine);
    c->calls++;
    c->bytes += count * (int64_t)esz;
    c->seconds += bf_now() - t0;
    return st;
}

static bf_status local_max(bf_coll *c, int64_t *buf, int count, bf_error *err) {
    bf_group *g = ((local_rank *)c->impl)->g;
    double t0 = bf_now();
    /* rank 0 takes the maximum into its own buffer (the others wait, and read it after) */
    bf_status st = barrier(c, buf, err);
    for (int i = 0; st == BF_OK && c->rank == 0 && i < count; i++)
        for (int r = 1; r < c->size; r++) buf[i] = BF_MAX(buf[i], ((const int64_t *)g->slot[r])[i]);
    if (st == BF_OK) st = barrier(c, NULL, err);
    if (st == BF_OK && c->rank != 0) memcpy(buf, g->slot[0], (size_t)count * sizeof(int64_t));
    if (st == BF_OK) st = barrier(c, NULL, err); /* rank 0's buffer is free again */
    c->agree_calls++;
    c->agree_seconds += bf_now() - t0;
    return st;
}

static bf_status local_broadcast(bf_coll *c, void *buf, size_t bytes, int root, bf_error *err) {
    bf_group *g = ((local_rank *)c->impl)->g;
    bf_status st = barrier(c, buf, err);
    if (st == BF_OK && c->rank != root && bytes) memcpy(buf, g->slot[root], bytes);
    return st == BF_OK ? barrier(c, NULL, err) : st; /* the root's buffer is free again */
}

static bf_status local_gather(bf_coll *c, const void *send, size_t bytes, void *recv, int root,
                              bf_error *err) {
    bf_group *g = ((local_rank *)c->impl)->g;
    bf_status st = barrier(c, send, err);
    for (int r = 0; st == BF_OK && c->rank == root && r < c->size; r++)
        if (bytes) memcpy((char *)recv + (size_t)r * bytes, g->slot[r], bytes);
    return st == BF_OK ? barrier(c, NULL, err) : st;
}

/* Break the group: the other ranks' calls return rank_failed naming this one. */
static void leave(bf_coll *c) {
    bf_group *g = ((local_rank *)c->impl)->g;
    uv_mutex_lock(&g->lock);
    if (g->gone < 0 || c->rank < g->gone) g->gone = c->rank;
    uv_cond_broadcast(&g->cond);
    uv_mutex_unlock(&g->lock);
}

static void local_abort(bf_coll *c, int code) {
    (void)code; /* the threads' program decides its exit code */
    leave(c);
}

static void local_close(bf_coll *c) {
    local_rank *lr = c->impl;
    if (!lr) return;
    bf_group *g = lr->g;
    /* A rank that ends breaks the group: a call another rank is waiting in (this one failed
     * before it) or makes later could never complete. After a job's last call, when every
     * rank ends, nothing waits and nothing notices. */
    uv_mutex_lock(&g->lock);
    g->joined[c->rank] = false;
    if (g->gone < 0) g->gone = c->rank;
    uv_cond_broadcast(&g->cond);
    uv_mutex_unlock(&g->lock);
    bf_free(lr);
    c->impl = NULL;
}

static const bf_coll_ops local_ops = {local_allreduce, local_max,   local_broadcast,
                                      local_gather,    local_abort, local_close};

bf_status bf_coll_local_open(bf_group *g, int rank, bf_coll *out, bf_error *err) {
    bf_coll_single(out);
    if (rank < 0 || rank >= g->size)
        return bf_err(err, BF_EINVAL, "bad_config", "bf_config.group_rank is %d, and the group "
                      "has ranks 0 to %d", rank, g->size - 1);
    local_rank *lr = bf_malloc(sizeof(*lr));
    if (!lr) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    uv_mutex_lock(&g->lock);
    bool taken = g->joined[rank];
    g->joined[rank] = true;
    uv_mutex_unlock(&g->lock);
    if (taken) {
        bf_free(lr);
        return bf_err(err, BF_EINVAL, "bad_config", "rank %d of the group already has a "
                      "context: each rank is one context", rank);
    }
    lr->g = g;
    out->ops = &local_ops;
    out->impl = lr;
    out->rank = rank;
    out->size = g->size;
    snprintf(out->desc, sizeof(out->desc), "threads of one process: rank %d of %d", rank, g->size);
    return BF_OK;
}
