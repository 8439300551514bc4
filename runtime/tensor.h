/*
 * tensor.h - the internal layout of bf_tensor and the allocation entry points the session and
 * the devices use. A tensor is dense and row-major. Its bytes live on one device: the host
 * (device == NULL) or a GPU (device points at that device's ops). Every byte is charged to a
 * bf_budget (the session's), so a page cannot allocate past its configured memory limit.
 */
#ifndef BF_TENSOR_H
#define BF_TENSOR_H

#include "common.h"

#include <stdatomic.h>

struct bf_device;

/* A memory account: bytes in use, the most in use at once since `peak` was last reset (the
 * session resets it when a run starts), and the ceiling. Shared by threads, hence atomic. */
typedef struct bf_budget {
    _Atomic uint64_t used;
    _Atomic uint64_t peak;
    uint64_t limit;
} bf_budget;

struct bf_tensor {
    bf_dtype dtype;
    int rank;
    int64_t dims[BF_MAX_RANK];
    int64_t numel;
    size_t nbytes;
    void *data;                /* host pointer, or device pointer when device != NULL */
    struct bf_device *device;  /* NULL: host memory */
    bf_budget *budget;         /* charged nbytes; NULL: only the absolute limits apply */
    bool borrowed;             /* data is not ours (bf_tensor_wrap, or a view of another
                                  tensor's data): bf_tensor_free calls `release` if set and
                                  never frees data itself */
    bf_release_fn release;     /* with borrowed: the owner's release, called once at free */
    void *release_user;
};

/* A tensor struct over `src`'s host data (borrowed, no release, budget NULL): the data must
 * outlive it. Errors: BF_ENOMEM. */
bf_status bf_tensor_view(const bf_tensor *src, bf_tensor **out, bf_error *err);

/*
 * Compute numel and nbytes of (dt, rank, dims) with overflow checks, and check them against
 * `max_elements` (0 = no limit). Errors: BF_EINVAL (negative dim, bad rank or dtype),
 * BF_ELIMIT (overflow or above the limit) with a message naming the shape.
 */
bf_status bf_shape_size(bf_dtype dt, int rank, const int64_t *dims, uint64_t max_elements,
                        int64_t *numel, size_t *nbytes, bf_error *err);

/* Format a shape as "[1, 4, 4, 1]" into buf. Returns buf. */
char *bf_shape_str(int rank, const int64_t *dims, char *buf, size_t size);

/* Charge / release `bytes` on `b` (may be NULL). Charge fails with BF_ELIMIT past the limit. */
bf_status bf_budget_charge(bf_budget *b, size_t bytes, bf_error *err);
void bf_budget_release(bf_budget *b, size_t bytes);
/* Start a new high-water mark at the bytes in use now. */
void bf_budget_reset_peak(bf_budget *b);

/*
 * Allocate a host tensor charged to `budget` (may be NULL). `zero` requests zero-filled data.
 * Errors: BF_EINVAL, BF_ELIMIT, BF_ENOMEM.
 */
bf_status bf_tensor_alloc(bf_budget *budget, uint64_t max_elements, bf_dtype dt, int rank,
                          const int64_t *dims, bool zero, bf_tensor **out, bf_error *err);

/* True when a and b have the same dtype, rank and dims. */
bool bf_tensor_same_shape(const bf_tensor *a, const bf_tensor *b);

/*
 * Convert src's elements to dtype `dt` into dst (same element count, host memory). Floats
 * round to nearest even (Inf on overflow for half/bfloat16); float to int truncates toward
 * zero and fails with BF_EDTYPE when a value is not finite or out of range.
 */
bf_status bf_tensor_convert(const bf_tensor *src, bf_tensor *dst, bf_error *err);

/* Store `v` (a double) as element i of t, converted as bf_tensor_convert does. */
bf_status bf_tensor_set_f64(bf_tensor *t, int64_t i, double v, bf_error *err);

/* bf_tensor_load_npy with an element limit of its own (0: none) instead of a context's. */
bf_status bf_npy_load(const char *path, uint64_t max_elements, bf_tensor **out, bf_error *err);

/* Parse a whole .npy file held in memory (`name` for messages), as bf_npy_load reads one. */
bf_status bf_npy_parse(const void *data, size_t len, const char *name, uint64_t max_elements,
                       bf_tensor **out, bf_error *err);
/* The numpy 1.0 header bf_tensor_save_npy writes for `t` (bfloat16 widened to <f4) into buf
 * (512 bytes suffice); returns its length, a multiple of 64. */
size_t bf_npy_header(const bf_tensor *t, char *buf, size_t size);

/*
 * Write a file atomically: `body` writes it to a temporary file beside `path` (returning 0 or
 * an errno), which is then synced and renamed over `path`; on failure it is removed and any
 * older file stays. Errors: BF_EIO naming the path and the step, BF_ENOMEM.
 */
bf_status bf_file_write_atomic(const char *path, int (*body)(int fd, void *user), void *user,
                               bf_error *err);
/* Write all n bytes to fd (retrying short writes and EINTR). Returns 0 or an errno. */
int bf_write_all(int fd, const void *buf, size_t n);

/* ---- npz.c: .npz archives ---- */

/* Called with each array of an archive, in archive order; it owns `t`. A non-OK status stops
 * the walk and is returned. */
typedef bf_status (*bf_npz_member_cb)(const char *key, bf_tensor *t, void *user, bf_error *err);
/* Read every array of the .npz at `path` (each bounded by max_elements). Errors: BF_EIO,
 * BF_EPARSE (damaged archive or array), BF_EUNSUPPORTED (compressed), BF_ELIMIT, BF_ENOMEM. */
bf_status bf_npz_each(const char *path, uint64_t max_elements, bf_npz_member_cb cb, void *user,
                      bf_error *err);
/* Write the n arrays ts[i] as keys[i] to a .npz at `path`, atomically. bfloat16 is refused
 * (convert first). Errors: BF_EINVAL, BF_ELIMIT (4 GiB), BF_EIO, BF_ENOMEM. */
bf_status bf_npz_save(const char *path, const char *const *keys, const bf_tensor *const *ts,
                      int n, bf_error *err);

/* The absolute limits used when no context is given (bf_tensor_new(NULL, ...)). */
#define BF_DEFAULT_MAX_ELEMENTS ((uint64_t)1 << 40)

#endif /* BF_TENSOR_H */
