/*
 * job.c - the program as one rank of an MPI job (`mpirun -np K blockflow run|train ...`):
 * every rank computes, rank 0 alone writes results, logs and checkpoints and prints the
 * tables and summaries, and each rank's errors are printed with its rank ("rank 1: ...").
 *
 * A failure inside a step or a run is known to every rank (the library's agreement: the
 * others fail with "rank_failed" naming it), so the ranks end together. A failure the other
 * ranks cannot learn of (a feed file missing on one node) would leave them waiting in their
 * next collective call, so it ends the whole job (bf_context_abort), after printing its
 * error. The rank is kept here, once per process, as the program's own state (the library
 * keeps none).
 */
#include "cli.h"

#include <stdio.h>

static struct {
    int rank, size;
} job = {0, 1};

void cli_job_begin(const bf_context *ctx) {
    job.rank = bf_context_rank(ctx);
    job.size = bf_context_size(ctx);
}

int cli_job_rank(void) { return job.rank; }

bool cli_job_writer(void) { return job.rank == 0; }

const char *cli_job_prefix(char *buf, size_t size) {
    if (job.size <= 1 || size == 0) return "";
    snprintf(buf, size, "rank %d: ", job.rank);
    return buf;
}

int cli_job_end(bf_context *ctx, int rc, bool alone) {
    if (job.size <= 1 || rc == EXIT_OK || !alone) return rc;
    fflush(stdout);
    fflush(stderr);
    bf_context_abort(ctx, rc); /* the others may be waiting for this rank: end them all */
    return rc;
}
