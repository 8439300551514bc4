/*
 * collective.c - the single-process job (rank 0 of 1, where every collective is the identity)
 * and the choice between it and MPI (collective.h).
 */
#include "collective.h"

#include <stdlib.h>
#include <string.h>

static bf_status one_allreduce(bf_coll *c, void *buf, int64_t count, bf_dtype dt, bf_error *err) {
    (void)c, (void)buf, (void)count, (void)dt, (void)err;
    return BF_OK;
}

static bf_status one_max(bf_coll *c, int64_t *buf, int count, bf_error *err) {
    (void)c, (void)buf, (void)count, (void)err;
    return BF_OK;
}

static bf_status one_broadcast(bf_coll *c, void *buf, size_t bytes, int root, bf_error *err) {
    (void)c, (void)buf, (void)bytes, (void)root, (void)err;
    return BF_OK;
}

static bf_status one_gather(bf_coll *c, const void *send, size_t bytes, void *recv, int root,
                            bf_error *err) {
    (void)c, (void)root, (void)err;
    if (bytes && recv != send) memcpy(recv, send, bytes);
    return BF_OK;
}

static void one_abort(bf_coll *c, int code) {
    (void)c, (void)code; /* one process: the caller's own exit ends the job */
}

static void one_close(bf_coll *c) { (void)c; }

static const bf_coll_ops one_ops = {one_allreduce, one_max, one_broadcast, one_gather, one_abort,
                                    one_close};

void bf_coll_single(bf_coll *c) {
    memset(c, 0, sizeof(*c));
    c->ops = &one_ops;
    c->rank = 0;
    c->size = 1;
    bf_strlcpy(c->desc, "one process", sizeof(c->desc));
}

bool bf_coll_launched_by_mpi(void) {
    /* Open MPI's mpirun and PMIx launchers (srun --mpi=pmix) set these in every rank. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (int i = 0; i < BF_COUNT(vars); i++)
        if (getenv(vars[i])) return true;
    return false;
}

bf_status bf_coll_open(int mode, bf_coll *out, bf_error *err) {
    bf_coll_single(out);
    if (mode == BF_COLL_NEVER || (mode == BF_COLL_AUTO && !bf_coll_launched_by_mpi()))
        return BF_OK;
    bf_status st = bf_coll_mpi_open(out, err);
    if (st) bf_coll_single(out);
    return st;
}

bf_status bf_coll_agree(bf_coll *c, bool failed, bool stop, int64_t size_a, int64_t size_b,
                        bf_coll_verdict *v, bf_error *err) {
    /* the maximum of (size - rank) over the ranks that say yes names the lowest of them */
    int64_t x[6] = {failed ? c->size - c->rank : 0, stop ? c->size - c->rank : 0,
                    size_a, -size_a, size_b, -size_b};
    bf_status st = c->size > 1 ? c->ops->allreduce_max(c, x, 6, err) : BF_OK;
    v->failed_rank = x[0] > 0 ? c->size - (int)x[0] : -1;
    v->stop_rank = x[1] > 0 ? c->size - (int)x[1] : -1;
    v->same = x[2] == -x[3] && x[4] == -x[5];
    return st;
}
