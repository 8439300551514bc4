/*
 * collective_mpi.c - the job on Open MPI (collective.h): MPI_COMM_WORLD duplicated for each
 * context, so that blockflow's calls never mix with a program's own MPI messages (mpi4py's).
 *
 * MPI is started by the first context that needs it (MPI_Init_thread, MPI_THREAD_SERIALIZED:
 * a session's collectives come from the thread running it, one at a time) and finished at
 * exit, unless the program had started it itself: then it is the program's to finish. Errors
 * of MPI calls are returned (MPI_ERRORS_RETURN), never a silent abort.
 */
#include "collective.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void finish_mpi(void) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
}

static bf_status mpi_fail(bf_error *err, int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return bf_err(err, BF_EDEVICE, "mpi_error", "%s failed: %.160s", what, text);
}

static MPI_Comm comm_of(bf_coll *c) { return *(MPI_Comm *)c->impl; }

static bf_status mpi_allreduce(bf_coll *c, void *buf, int64_t count, bf_dtype dt, bf_error *err) {
    MPI_Datatype t = dt == BF_DTYPE_F32 ? MPI_FLOAT : dt == BF_DTYPE_F64 ? MPI_DOUBLE
                                                                          : MPI_INT64_T;
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_I64)
        return bf_err(err, BF_EINTERNAL, "bad_dtype", "all-reduce of %s", bf_dtype_name(dt));
    double t0 = bf_now();
    /* MPI counts are int: reduce in pieces of at most 2^30 elements */
    for (int64_t done = 0; done < count;) {
        int n = (int)BF_MIN(count - done, (int64_t)1 << 30);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)done * bf_dtype_size(dt), n, t,
                               MPI_SUM, comm_of(c));
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Allreduce");
        done += n;
    }
    c->calls++;
    c->bytes += count * (int64_t)bf_dtype_size(dt);
    c->seconds += bf_now() - t0;
    return BF_OK;
}

static bf_status mpi_max(bf_coll *c, int64_t *buf, int count, bf_error *err) {
    double t0 = bf_now();
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_INT64_T, MPI_MAX, comm_of(c));
    c->agree_calls++;
    c->agree_seconds += bf_now() - t0;
    return rc == MPI_SUCCESS ? BF_OK : mpi_fail(err, rc, "MPI_Allreduce (status)");
}

static bf_status mpi_broadcast(bf_coll *c, void *buf, size_t bytes, int root, bf_error *err) {
    for (size_t done = 0; done < bytes;) {
        int n = (int)BF_MIN(bytes - done, (size_t)1 << 30);
        int rc = MPI_Bcast((char *)buf + done, n, MPI_BYTE, root, comm_of(c));
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Bcast");
        done += (size_t)n;
    }
    return BF_OK;
}

static bf_status mpi_gather(bf_coll *c, const void *send, size_t bytes, void *recv, int root,
                            bf_error *err) {
    if (bytes > ((size_t)1 << 30))
        return bf_err(err, BF_ELIMIT, "too_large", "a deterministic reduce gathers at most 1 GiB "
                      "per rank and round, not %zu bytes", bytes);
    int rc = MPI_Gather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root, comm_of(c));
    return rc == MPI_SUCCESS ? BF_OK : mpi_fail(err, rc, "MPI_Gather");
}

static void mpi_abort(bf_coll *c, int code) {
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(comm_of(c), code);
}

static void mpi_close(bf_coll *c) {
    MPI_Comm *comm = c->impl;
    int done = 0;
    MPI_Finalized(&done);
    if (comm && !done) MPI_Comm_free(comm);
    bf_free(comm);
    c->impl = NULL;
}

static const bf_coll_ops mpi_ops = {mpi_allreduce, mpi_max, mpi_broadcast, mpi_gather, mpi_abort,
                                    mpi_close};

bf_status bf_coll_mpi_open(bf_coll *out, bf_error *err) {
    int started = 0, done = 0, provided = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&done);
    if (done) return bf_err(err, BF_EDEVICE, "mpi_error", "MPI was already finished in this "
                            "process: it cannot be started again");
    if (!started) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Init_thread");
        atexit(finish_mpi);
    }
    MPI_Comm *comm = bf_malloc(sizeof(*comm));
    if (!comm) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, comm);
    if (rc != MPI_SUCCESS) {
        bf_free(comm);
        return mpi_fail(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    memset(out, 0, sizeof(*out));
    out->ops = &mpi_ops;
    out->impl = comm;
    MPI_Comm_rank(*comm, &out->rank);
    MPI_Comm_size(*comm, &out->size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(version, &len);
    char *cut = strpbrk(version, ",\n");
    if (cut) *cut = '\0';
    snprintf(out->desc, sizeof(out->desc), "%.60s: rank %d of %d", version, out->rank, out->size);
    return BF_OK;
}
