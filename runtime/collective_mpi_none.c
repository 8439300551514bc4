/*
 * collective_mpi_none.c - the stand-in for collective_mpi.c in a build without Open MPI
 * (CMake: BLOCKFLOW_MPI=OFF, or AUTO without libopenmpi-dev): one process only.
 */
#include "collective.h"

bf_status bf_coll_mpi_open(bf_coll *out, bf_error *err) {
    (void)out;
    return bf_err(err, BF_EUNSUPPORTED, "no_mpi", "this blockflow was built without Open MPI "
                  "(install libopenmpi-dev and rebuild with -DBLOCKFLOW_MPI=ON), so it runs in "
                  "one process only");
}
