/*
 * array_util.c - the helpers of array_util.h.
 */
#include "array_util.h"

#include <inttypes.h>
#include <stdio.h>

const char *bf_tf_shape(int rank, const int64_t *dims, char *buf, size_t size) {
    if (size == 0) return buf;
    if (rank < 0) {
        bf_strlcpy(buf, "<unknown>", size);
        return buf;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++) {
        if (dims && dims[i] >= 0)
            n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? "," : "", dims[i]);
        else
            n += (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "");
    }
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

const char *bf_tf_shape_of(const bf_port_info *p, char *buf, size_t size) {
    return bf_tf_shape(p->rank, p->dims, buf, size);
}

int64_t bf_host_int(const bf_tensor *t, int64_t i) {
    if (t->dtype == BF_DTYPE_I32) return ((const int32_t *)t->data)[i];
    if (t->dtype == BF_DTYPE_I64) return ((const int64_t *)t->data)[i];
    return 0;
}

bf_status bf_arr_err(bf_error *err, bf_status st, const char *code, const char *port,
                     const char *attr, const char *fmt, ...) {
    bf_err_at(err, port, attr);
    va_list ap;
    va_start(ap, fmt);
    bf_status r = bf_verr(err, st, code, fmt, ap);
    va_end(ap);
    return r;
}

bf_status bf_shape_from_value(const bf_tensor *v, const char *port, const char *what, int *rank,
                              int64_t *dims, bf_error *err) {
    char b[96];
    if (v->rank != 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", port, NULL,
                          "%s must be a vector, got shape %s", what,
                          bf_tf_shape(v->rank, v->dims, b, sizeof(b)));
    if (v->dims[0] > BF_MAX_RANK)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", port, NULL,
                          "%s has %" PRId64 " dimensions: at most %d are supported", what,
                          v->dims[0], BF_MAX_RANK);
    *rank = (int)v->dims[0];
    for (int i = 0; i < *rank; i++) {
        dims[i] = bf_host_int(v, i);
        if (dims[i] < 0)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", port, NULL,
                              "Dimension %" PRId64 " must be >= 0", dims[i]);
    }
    return BF_OK;
}

/* ---- bf_permute ----------------------------------------------------------------------- */

enum { PERM_TILE = 64 };

typedef struct perm_job {
    const char *src;
    char *dst;
    size_t es;
    int rank;                 /* after simplification */
    int64_t od[BF_MAX_RANK];  /* output dims */
    int64_t ist[BF_MAX_RANK]; /* input stride (elements) of output dim k */
    int64_t ost[BF_MAX_RANK]; /* output stride of output dim k */
    /* rows mode: the last output dim is contiguous in the input too */
    int64_t row, rows_per_task, n_rows;
    /* tile mode: output dim q is the input's innermost (input stride 1) */
    int q;
    int64_t nbq, nbl; /* tiles along q and along the output's last dim */
} perm_job;

/* Offsets (input, output) of the outer index `o` over every output dim except `skip1` and
 * `skip2` (and, in rows mode, the last), in row-major order of those dims. */
static void perm_offsets(const perm_job *j, int64_t o, int skip1, int skip2, int64_t *is,
                         int64_t *os) {
    int64_t a = 0, b = 0;
    for (int k = j->rank - 1; k >= 0; k--) {
        if (k == skip1 || k == skip2) continue;
        int64_t c = o % j->od[k];
        o /= j->od[k];
        a += c * j->ist[k], b += c * j->ost[k];
    }
    *is = a, *os = b;
}

static void perm_rows_task(void *arg, int64_t t, int slot) {
    (void)slot;
    const perm_job *j = arg;
    int last = j->rank - 1;
    int64_t r0 = t * j->rows_per_task, r1 = BF_MIN(j->n_rows, r0 + j->rows_per_task);
    for (int64_t r = r0; r < r1; r++) {
        int64_t is, os;
        perm_offsets(j, r, last, -1, &is, &os);
        bf_copy_elems(j->dst, os, j->src, is, j->row, j->es);
    }
}

/*
 * One tile: d[x * qs + y] = s[x + y * ls] for x in [q0, q1), y in [l0, l1). Whole 8x8 blocks
 * go through a local block: eight contiguous loads of a source row, eight contiguous stores
 * of a destination row, the transposition itself in L1 (the compiler vectorises both sides).
 */
#define PERM_TILE_LOOP(T)                                                                          \
    do {                                                                                           \
        const T *s = (const T *)j->src + is;                                                       \
        T *d = (T *)j->dst + os;                                                                   \
        int64_t x = q0;                                                                            \
        for (; x + 8 <= q1; x += 8) {                                                              \
            int64_t y = l0;                                                                        \
            for (; y + 8 <= l1; y += 8) {                                                          \
                T blk[8][8];                                                                       \
                for (int b = 0; b < 8; b++)                                                        \
                    for (int a = 0; a < 8; a++) blk[a][b] = s[x + a + (y + b) * ls];               \
                for (int a = 0; a < 8; a++)                                                        \
                    for (int b = 0; b < 8; b++) d[(x + a) * qs + y + b] = blk[a][b];               \
            }                                                                                      \
            for (; y < l1; y++)                                                                    \
                for (int a = 0; a < 8; a++) d[(x + a) * qs + y] = s[x + a + y * ls];               \
        }                                                                                          \
        for (; x < q1; x++)                                                                        \
            for (int64_t y = l0; y < l1; y++) d[x * qs + y] = s[x + y * ls];                       \
    } while (0)

static void perm_tile_task(void *arg, int64_t t, int slot) {
    (void)slot;
    const perm_job *j = arg;
    int last = j->rank - 1, q = j->q;
    int64_t tiles = j->nbq * j->nbl, outer = t / tiles, tt = t % tiles;
    int64_t is, os;
    perm_offsets(j, outer, q, last, &is, &os);
    int64_t q0 = (tt / j->nbl) * PERM_TILE, q1 = BF_MIN(j->od[q], q0 + PERM_TILE);
    int64_t l0 = (tt % j->nbl) * PERM_TILE, l1 = BF_MIN(j->od[last], l0 + PERM_TILE);
    int64_t qs = j->ost[q], ls = j->ist[last];
    switch (j->es) {
    case 1: PERM_TILE_LOOP(uint8_t); break;
    case 2: PERM_TILE_LOOP(uint16_t); break;
    case 4: PERM_TILE_LOOP(uint32_t); break;
    default: PERM_TILE_LOOP(uint64_t); break;
    }
}

void bf_permute(const void *src, void *dst, int rank, const int64_t *dims, const int *perm,
                size_t es, const bf_exec *ex) {
    int64_t numel = 1, ist_in[BF_MAX_RANK];
    for (int k = rank - 1; k >= 0; k--) ist_in[k] = numel, numel *= dims[k];
    if (numel == 0) return;
    /* output dims in order, dropping 1s, merging dims adjacent in both layouts */
    perm_job j = {.src = src, .dst = dst, .es = es, .rank = 0};
    for (int k = 0; k < rank; k++) {
        int p = perm[k];
        if (dims[p] == 1) continue;
        if (j.rank > 0 && j.ist[j.rank - 1] == ist_in[p] * dims[p]) {
            j.od[j.rank - 1] *= dims[p];
            j.ist[j.rank - 1] = ist_in[p];
        } else {
            j.od[j.rank] = dims[p];
            j.ist[j.rank] = ist_in[p];
            j.rank++;
        }
    }
    int64_t st = 1;
    for (int k = j.rank - 1; k >= 0; k--) j.ost[k] = st, st *= j.od[k];
    if (j.rank <= 1 || j.ist[j.rank - 1] == 1) {
        /* rows mode (a single merged dim is one row: a plain copy) */
        j.row = j.rank ? j.od[j.rank - 1] : 1;
        j.n_rows = numel / j.row;
        j.rows_per_task = BF_MAX(1, (int64_t)(65536 / es) / j.row);
        if (j.rank <= 1) j.rank = 1, j.od[0] = numel, j.ist[0] = 1, j.ost[0] = 1;
        bf_parallel_for(ex, (j.n_rows + j.rows_per_task - 1) / j.rows_per_task, perm_rows_task, &j);
        return;
    }
    j.q = 0;
    for (int k = 0; k < j.rank; k++)
        if (j.ist[k] == 1) j.q = k;
    int last = j.rank - 1;
    j.nbq = (j.od[j.q] + PERM_TILE - 1) / PERM_TILE;
    j.nbl = (j.od[last] + PERM_TILE - 1) / PERM_TILE;
    int64_t outer = numel / (j.od[j.q] * j.od[last]);
    bf_parallel_for(ex, outer * j.nbq * j.nbl, perm_tile_task, &j);
}

/* ---- bf_tile_copy ----------------------------------------------------------------------- */

typedef struct tile_job {
    const char *src;
    char *dst;
    size_t es;
    int rank;
    const int64_t *in, *out;
    int64_t in_st[BF_MAX_RANK];
    int64_t rows, rows_per_task, in_row, out_row;
} tile_job;

static void tile_task(void *arg, int64_t t, int slot) {
    (void)slot;
    const tile_job *j = arg;
    int64_t r0 = t * j->rows_per_task, r1 = BF_MIN(j->rows, r0 + j->rows_per_task);
    size_t es = j->es;
    for (int64_t r = r0; r < r1; r++) {
        int64_t idx = r, off = 0;
        for (int k = j->rank - 2; k >= 0; k--) {
            off += (idx % j->out[k]) % j->in[k] * j->in_st[k];
            idx /= j->out[k];
        }
        const char *s = j->src + (size_t)off * es;
        char *d = j->dst + (size_t)(r * j->out_row) * es;
        if (j->in_row == 1 && j->out_row > 1) {
            for (int64_t i = 0; i < j->out_row; i++) __builtin_memcpy(d + (size_t)i * es, s, es);
        } else {
            for (int64_t i = 0; i < j->out_row; i += j->in_row)
                __builtin_memcpy(d + (size_t)i * es, s, (size_t)j->in_row * es);
        }
    }
}

void bf_tile_copy(const void *src, const int64_t *in_dims, void *dst, const int64_t *out_dims,
                  int rank, size_t es, const bf_exec *ex) {
    int64_t numel = 1;
    for (int k = 0; k < rank; k++) numel *= out_dims[k];
    if (numel == 0) return;
    if (rank == 0) {
        __builtin_memcpy(dst, src, es);
        return;
    }
    tile_job j = {.src = src, .dst = dst, .es = es, .rank = rank, .in = in_dims, .out = out_dims};
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) j.in_st[k] = s, s *= in_dims[k];
    j.in_row = in_dims[rank - 1], j.out_row = out_dims[rank - 1];
    j.rows = numel / j.out_row;
    j.rows_per_task = BF_MAX(1, (int64_t)(65536 / es) / j.out_row);
    bf_parallel_for(ex, (j.rows + j.rows_per_task - 1) / j.rows_per_task, tile_task, &j);
}
