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
 * keeps none). With --ranks K (cli_job_threads) the ranks are threads of this process, so the
 * rank is kept per thread.
 */
#include "cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BF_CLI_MAX(a, b) ((a) > (b) ? (a) : (b))

static _Thread_local struct {
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

typedef struct rank_thread {
    int (*body)(const bf_config *cfg, void *arg);
    void *arg;
    bf_config cfg;
    int rc;
} rank_thread;

/* Break the group as rank cfg->group_rank, for a rank that ended early without a context
 * (one it could not make): the others would wait for it in their next collective call. */
static void leave_group(const bf_config *cfg) {
    bf_config one = *cfg;
    one.threads = 1;
    bf_context *ctx = NULL;
    if (bf_context_new(&one, &ctx, NULL) == BF_OK) bf_context_abort(ctx, EXIT_RUN);
    bf_context_free(ctx);
}

static void *run_rank(void *p) {
    rank_thread *r = p;
    r->rc = r->body(&r->cfg, r->arg);
    if (r->rc != EXIT_OK) leave_group(&r->cfg); /* nothing if its context already left */
    return NULL;
}

int cli_job_threads(int ranks, const bf_config *cfg, const char *cmd,
                    int (*body)(const bf_config *cfg, void *arg), void *arg) {
    if (bf_launched_by_mpi()) {
        fprintf(stderr, "blockflow %s: --ranks makes the ranks threads of this process; under "
                        "mpirun the job's ranks are the processes mpirun started: leave "
                        "--ranks out\n", cmd);
        return EXIT_USAGE;
    }
    bf_group *g = NULL;
    bf_error e = {0};
    rank_thread *t = calloc((size_t)ranks, sizeof(*t));
    pthread_t *th = calloc((size_t)ranks, sizeof(*th));
    if (!t || !th || bf_group_new(ranks, &g, &e)) {
        if (e.status) cli_print_error(&e);
        else fprintf(stderr, "blockflow %s: out of memory\n", cmd);
        free(t), free(th);
        return EXIT_RUN;
    }
    /* the cores shared among the ranks, unless --threads says how many each takes */
    bf_config each = *cfg;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (each.threads == 0) each.threads = (int)BF_CLI_MAX(1, (cores > 0 ? cores : 1) / ranks);
    int started = 0, rc = EXIT_OK;
    for (; started < ranks; started++) {
        t[started] = (rank_thread){body, arg, each, EXIT_OK};
        t[started].cfg.group = g;
        t[started].cfg.group_rank = started;
        if (pthread_create(&th[started], NULL, run_rank, &t[started])) break;
    }
    if (started < ranks) {
        /* the ranks that started wait for one that never will: its absence breaks the group */
        leave_group(&t[started].cfg);
        fprintf(stderr, "blockflow %s: cannot start the thread of rank %d\n", cmd, started);
        rc = EXIT_RUN;
    }
    for (int r = 0; r < started; r++) pthread_join(th[r], NULL);
    /* the job's status: the lowest rank's that failed (rank 0's first) */
    for (int r = 0; r < started && rc == EXIT_OK; r++) rc = t[r].rc;
    bf_group_free(g);
    free(t), free(th);
    return rc;
}

int cli_job_end(bf_context *ctx, int rc, bool alone) {
    if (job.size <= 1 || rc == EXIT_OK || !alone) return rc;
    fflush(stdout);
    fflush(stderr);
    bf_context_abort(ctx, rc); /* the others may be waiting for this rank: end them all */
    return rc;
}
