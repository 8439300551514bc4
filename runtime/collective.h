/*
 * collective.h - the job a process belongs to: its rank among `size` processes and the few
 * collective operations data parallelism needs (an all-reduce sum of one buffer, a broadcast,
 * a gather, an agreement on a small status vector). Three implementations:
 *   collective.c      one process (rank 0 of 1): every operation is the identity;
 *   collective_local.c  ranks that are threads of one process (bf_group), sums in rank order;
 *   collective_mpi.c  Open MPI, built when CMake finds it (BLOCKFLOW_MPI=AUTO/ON); without it,
 *                     collective_mpi_none.c answers "built without Open MPI".
 * Blocks never see this interface: the AllReduce block only declares that it is collective
 * (bf_block_desc.collective) and the scheduler (fuse.c) reduces every such block of a round
 * in one fused buffer and one call.
 *
 * Every call is collective: each rank of the job makes the same calls in the same order with
 * the same sizes (the runtime keeps it so: rounds of a run, the status agreement ending each
 * step, the broadcast of Variables when a session is made), from one thread at a time.
 */
#ifndef BF_COLLECTIVE_H
#define BF_COLLECTIVE_H

#include "common.h"

typedef struct bf_coll bf_coll;

typedef struct bf_coll_ops {
    /* buf[0..count) := the sum over the ranks of their buf (dtype float32, float64, int64). */
    bf_status (*allreduce_sum)(bf_coll *c, void *buf, int64_t count, bf_dtype dt, bf_error *err);
    /* buf[0..count) := the element-wise maximum over the ranks (int64). */
    bf_status (*allreduce_max)(bf_coll *c, int64_t *buf, int count, bf_error *err);
    /* Rank `root`'s bytes to every rank. */
    bf_status (*broadcast)(bf_coll *c, void *buf, size_t bytes, int root, bf_error *err);
    /* Every rank's `bytes` bytes to recv on `root` (size * bytes, in rank order; recv is read
     * on root only). */
    bf_status (*gather)(bf_coll *c, const void *send, size_t bytes, void *recv, int root,
                        bf_error *err);
    /* End every process of the job now with `code` (never returns in a job of several). */
    void (*abort)(bf_coll *c, int code);
    void (*close)(bf_coll *c);
} bf_coll_ops;

struct bf_coll {
    const bf_coll_ops *ops;
    int rank, size;
    void *impl;                /* the implementation's own (an MPI communicator) */
    char desc[96];             /* "one process", "Open MPI 4.1.4: rank 1 of 3" */
    int64_t calls, bytes;      /* all-reductions of data (fused rounds, metrics) and their
                                  bytes, for reports and benchmarks */
    double seconds;            /* time spent in them, waiting for the other ranks included */
    int64_t agree_calls;       /* agreements (bf_coll_agree: six integers each) */
    double agree_seconds;
};

/* How bf_coll_open chooses (bf_config.distributed). */
enum { BF_COLL_AUTO = 0, BF_COLL_REQUIRED = 1, BF_COLL_NEVER = -1 };

/* The single-process job (rank 0 of 1). Never fails. */
void bf_coll_single(bf_coll *c);
/* The job this process was launched in: MPI when it was started by mpirun (or `mode` is
 * BF_COLL_REQUIRED), else the single process. Errors: BF_EUNSUPPORTED (required, but built
 * without Open MPI), BF_EDEVICE (MPI failed to start). */
bf_status bf_coll_open(int mode, bf_coll *out, bf_error *err);
/* Whether the environment says this process was started by an MPI launcher. */
bool bf_coll_launched_by_mpi(void);

/* collective_local.c: rank `rank` of the threads' job g (bf_group). Errors: BF_EINVAL (a rank
 * outside the group, or one that already has a context), BF_ENOMEM. */
bf_status bf_coll_local_open(bf_group *g, int rank, bf_coll *out, bf_error *err);

/* collective_mpi.c / collective_mpi_none.c */
bf_status bf_coll_mpi_open(bf_coll *out, bf_error *err);

/* What the ranks said in an agreement. */
typedef struct bf_coll_verdict {
    int failed_rank;   /* the lowest rank that failed, -1 when none did */
    int stop_rank;     /* the lowest rank that asked to stop (a cancel), -1 when none did */
    bool same;         /* every rank gave the same two sizes */
} bf_coll_verdict;

/* The status agreement every collective step of the runtime starts with (one all-reduce of
 * six int64): each rank says whether it failed, whether it wants to stop, and two sizes that
 * must be the same on every rank (a round's element counts, or 0). Collective; in one process
 * the verdict is this rank's own. */
bf_status bf_coll_agree(bf_coll *c, bool failed, bool stop, int64_t size_a, int64_t size_b,
                        bf_coll_verdict *v, bf_error *err);

#endif /* BF_COLLECTIVE_H */
