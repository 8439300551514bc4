/*
 * port.c - small helpers on bf_port_info that block inference functions share.
 */
#include "block.h"

#include <string.h>

bool bf_port_known(const bf_port_info *p) {
    if (p->rank < 0 || p->dtype == BF_DTYPE_INVALID) return false;
    for (int i = 0; i < p->rank; i++)
        if (p->dims[i] < 0) return false;
    return true;
}

void bf_port_set(bf_port_info *p, bf_dtype dt, int rank, const int64_t *dims) {
    memset(p, 0, sizeof(*p));
    p->dtype = dt;
    p->rank = rank;
    for (int i = 0; i < rank && i < BF_MAX_RANK; i++) p->dims[i] = dims ? dims[i] : -1;
}

int64_t bf_port_numel(const bf_port_info *p) {
    if (p->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < p->rank; i++) {
        if (p->dims[i] < 0 || !bf_i64_mul(n, p->dims[i], &n)) return -1;
    }
    return n;
}
