/*
 * bf_test.h - what every test program shares: where the source tree and shared/ are, a
 * scratch folder per test with small file helpers, a seeded random generator for non-zero
 * test data, float64 comparison helpers, and the main that runs one Check suite and turns
 * "needs a GPU, none here" into exit code 77 (skipped).
 */
#ifndef BF_TEST_H
#define BF_TEST_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "blockflow.h"

/* $BF_SOURCE_DIR (the repository root) and $BF_SHARED_DIR (../shared), set by ctest. */
const char *bf_test_source_dir(void);
const char *bf_test_shared_dir(void);
/* Path of the blockflow program ($BF_BINARY), for end-to-end CLI tests. */
const char *bf_test_binary(void);
/* Join dir and name into a static-per-call buffer that the caller copies if needed. */
void bf_test_path(char *buf, size_t size, const char *dir, const char *name);

/* ---- the scratch folder and files ----------------------------------------------------------- */

/*
 * A fresh folder per test: bf_scratch_setup and bf_scratch_teardown are a Check checked fixture
 * (tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown)), so they run in the
 * forked test process. setup makes /tmp/bf_PROGRAM.XXXXXX (PROGRAM: this test program's name,
 * e.g. /tmp/bf_test_cli.XXXXXX) and fails the test if it cannot; teardown removes it and all
 * below it, first giving the owner rwx on every folder so that a test that took permissions
 * away (read-only or unlistable folders) still leaves nothing behind.
 */
void bf_scratch_setup(void);
void bf_scratch_teardown(void);
/* The scratch folder's path (valid between setup and teardown). */
const char *bf_scratch(void);
/*
 * scratch/name in a static buffer, one of 4 used in turn: up to four results may be alive at
 * once (e.g. the arguments of one call); copy one that must outlive that.
 */
const char *bf_sp(const char *name);
/* Remove `path` and, for a folder, all below it (folders made u+rwx first); no error if absent. */
void bf_rm_tree(const char *path);
/* Whether `path` exists (stat succeeds). */
bool bf_exists(const char *path);

/* Write `text` (up to its NUL) to `path`, replacing it; the test fails on any error. */
void bf_write_file(const char *path, const char *text);
/* Write the n bytes at `data` to `path`, replacing it; the test fails on any error. */
void bf_write_bytes(const char *path, const void *data, size_t n);
/*
 * The whole file as a NUL-terminated string (caller frees), *len (when len is not NULL) its
 * size in bytes (it may hold NUL bytes). NULL when the file cannot be opened; the test fails
 * when one that opened cannot be read whole.
 */
char *bf_read_file(const char *path, size_t *len);
/* The number of newline characters in s. */
int bf_count_lines(const char *s);

/* ---- numbers -------------------------------------------------------------------------------- */

/* A small deterministic generator (splitmix64). */
typedef struct bf_rng {
    uint64_t s;
} bf_rng;
uint64_t bf_rng_next(bf_rng *r);
/* Uniform in [lo, hi). */
double bf_rng_uniform(bf_rng *r, double lo, double hi);
/* Uniform integer in [lo, hi]. */
int64_t bf_rng_int(bf_rng *r, int64_t lo, int64_t hi);
/* Non-zero random value in [-1, -0.1] U [0.1, 1]. */
double bf_rng_nonzero(bf_rng *r);

/* Max over i of |a[i]-b[i]| / (atol + rtol*|b[i]|); <= 1 means within tolerance. */
double bf_test_rel_excess(const double *a, const double *b, int64_t n, double atol, double rtol);

/*
 * Run `suite` with Check (forking each test) and return the process exit code: 0 when all
 * passed, 1 when any failed. Test programs end with `return bf_test_main(suite_fn());`.
 */
int bf_test_main(Suite *suite);

/* Exit code that ctest reports as skipped (SKIP_RETURN_CODE). */
#define BF_TEST_SKIP 77

#endif /* BF_TEST_H */
