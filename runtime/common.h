/*
 * common.h - small helpers every runtime and block file uses: allocation through the
 * replaceable allocator, overflow-checked size arithmetic, assertions for our own invariants,
 * and filling a bf_error. Internal: never installed, never seen by library users.
 */
#ifndef BF_COMMON_H
#define BF_COMMON_H

#include "blockflow.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the CUDA .cu files are C++ */
#endif

#define BF_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define BF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BF_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define BF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BF_PRINTF(f, a)
#endif

/*
 * BF_ASSERT checks an invariant of our own code, never a property of user input (input gets a
 * bf_status). It is active in every build type: a broken invariant is a bug that must not go on
 * to corrupt memory.
 */
void bf_assert_fail(const char *expr, const char *file, int line);
#define BF_ASSERT(e) ((e) ? (void)0 : bf_assert_fail(#e, __FILE__, __LINE__))

/* Allocation through the hooks of bf_replace_allocator(). bf_free(NULL) is a no-op. */
void *bf_malloc(size_t size);
void *bf_calloc(size_t n, size_t size); /* zeroed, overflow-checked */
void *bf_realloc(void *ptr, size_t size);
void bf_free(void *ptr);
char *bf_strdup(const char *s); /* NULL when s is NULL or out of memory */
/*
 * Allocations that failed on the calling thread so far. Code that calls a library which
 * reports out-of-memory like any other failure (cJSON_Parse returns NULL for both) compares
 * this before and after to tell BF_ENOMEM from bad input.
 */
unsigned bf_alloc_failures(void);

/*
 * 64-bit aligned allocation for tensor data (64 bytes, one cache line / AVX-512 vector).
 * Zeroed when `zero` is set. Goes through the same hooks (over-allocates and aligns).
 */
void *bf_aligned_alloc(size_t size, bool zero);
void bf_aligned_free(void *ptr);
/* Ask the OS for transparent huge pages over the buffer when it is at least BF_HUGE_MIN
 * bytes (bf_aligned_alloc does it for every buffer); a no-op elsewhere. */
#define BF_HUGE_MIN ((size_t)4 << 20)
void bf_advise_huge(void *ptr, size_t size);

/* Overflow-checked arithmetic: return false (and leave *out unspecified) on overflow. */
static inline bool bf_size_mul(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool bf_size_add(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool bf_i64_mul(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool bf_i64_add(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* Copy `src` into the fixed buffer `dst` of `size` bytes, truncating, always terminated. */
void bf_strlcpy(char *dst, const char *src, size_t size);

/*
 * Fill `err` (may be NULL) with `status`, the stable `code` ("bad_attr") and a printf message.
 * Leaves block_id, port, attr and pointer as they were, so a caller that knows the block can
 * add it. Returns `status`, so that `return bf_err(err, BF_EATTR, "bad_attr", "...")` reads well.
 */
bf_status bf_err(bf_error *err, bf_status status, const char *code, const char *fmt, ...)
    BF_PRINTF(4, 5);
bf_status bf_verr(bf_error *err, bf_status status, const char *code, const char *fmt, va_list ap);

/* Set the port / attribute an error is about (either may be NULL to leave it). */
void bf_err_at(bf_error *err, const char *port, const char *attr);

/* Append a copy of `e` to `d` (d may be NULL). Returns false when out of memory. */
bool bf_diags_push(bf_diags *d, const bf_error *e);

/* Monotonic clock in seconds. */
double bf_now(void);

#ifdef __cplusplus
}
#endif
#endif /* BF_COMMON_H */
