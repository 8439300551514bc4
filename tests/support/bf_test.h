/*
 * bf_test.h - what every test program shares: where the source tree and shared/ are, a
 * seeded random generator for non-zero test data, float64 comparison helpers, and the main
 * that runs one Check suite and turns "needs a GPU, none here" into exit code 77 (skipped).
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
