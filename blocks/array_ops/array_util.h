/*
 * array_util.h - what the array, linear-algebra and reduction blocks (blocks/array_ops/)
 * share: TensorFlow's way of printing a shape in its messages, reading the integers of a
 * host shape/axis tensor, validating such a tensor as TensorFlow does, and typed copies.
 */
#ifndef BF_ARRAY_UTIL_H
#define BF_ARRAY_UTIL_H

#include "block.h"

/*
 * A shape as TensorFlow's TensorShape::DebugString writes it in its messages: "[2,3]", "[]"
 * for a scalar, "?" for an unknown dim and "<unknown>" for an unknown rank. Returns buf.
 */
const char *bf_tf_shape(int rank, const int64_t *dims, char *buf, size_t size);
/* The same for a port's info. */
const char *bf_tf_shape_of(const bf_port_info *p, char *buf, size_t size);

/* Element i of an int32 or int64 host tensor (0 for any other dtype). */
int64_t bf_host_int(const bf_tensor *t, int64_t i);

/* bf_err_at(err, port, attr) then bf_err(err, st, code, ...): one call per failed check. */
bf_status bf_arr_err(bf_error *err, bf_status st, const char *code, const char *port,
                     const char *attr, const char *fmt, ...) BF_PRINTF(6, 7);

/*
 * The shape an int32/int64 vector value names (BroadcastTo's `shape`, Fill's `dims`), checked
 * as tensorflow::tensor::MakeShape does: a vector ("`what` must be a vector, got shape
 * [2,2]"), at most BF_MAX_RANK entries, every entry >= 0 ("Dimension -1 must be >= 0").
 * Errors name `port`.
 */
bf_status bf_shape_from_value(const bf_tensor *v, const char *port, const char *what, int *rank,
                              int64_t *dims, bf_error *err);

/* Whether dims a and b (either may be -1, unknown) may be equal. */
static inline bool bf_dims_compatible(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

/* True for the floating dtypes (float16, bfloat16, float32, float64). */
static inline bool bf_dtype_is_float(bf_dtype dt) {
    return dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16 || dt == BF_DTYPE_F32 || dt == BF_DTYPE_F64;
}

/*
 * Copy `n` elements of `es` bytes from src + src_off to dst + dst_off, where src_off and
 * dst_off are element offsets (a typed memcpy for the gather loops).
 */
static inline void bf_copy_elems(void *dst, int64_t dst_off, const void *src, int64_t src_off,
                                 int64_t n, size_t es) {
    __builtin_memcpy((char *)dst + (size_t)dst_off * es, (const char *)src + (size_t)src_off * es,
                     (size_t)n * es);
}

#endif /* BF_ARRAY_UTIL_H */

/*
 * Permute the dims of a dense row-major array: dst has dims dims[perm[0]], dims[perm[1]], ...
 * and dst[i_0, ..., i_{r-1}] = src[j] with j_{perm[k]} = i_k (TensorFlow's Transpose).
 * Elements are `es` bytes (1, 2, 4 or 8). Dims of size 1 are dropped and runs of dims that
 * stay adjacent are merged first; then rows that stay contiguous are copied whole, and
 * otherwise the two innermost dims (the input's and the output's) are swapped in cache tiles.
 * Parallel over ex (may be NULL). `perm` must be a permutation of [0, rank).
 */
void bf_permute(const void *src, void *dst, int rank, const int64_t *dims, const int *perm,
                size_t es, const bf_exec *ex);

/*
 * dst (rank dims out_dims) = src (rank dims in_dims) repeated: every out_dims[k] is a multiple
 * of in_dims[k] (or both 0) and dst[o] = src[o_k mod in_dims[k] for every k] — Tile, and
 * BroadcastTo with in_dims padded with leading 1s. Rows of the output are built from the
 * input's rows (repeated, or one value spread) in parallel over ex (may be NULL).
 */
void bf_tile_copy(const void *src, const int64_t *in_dims, void *dst, const int64_t *out_dims,
                  int rank, size_t es, const bf_exec *ex);
