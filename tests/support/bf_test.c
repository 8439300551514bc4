/*
 * bf_test.c - shared test helpers (see bf_test.h).
 */
#include "bf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *bf_test_source_dir(void) {
    const char *d = getenv("BF_SOURCE_DIR");
    return d ? d : ".";
}

const char *bf_test_shared_dir(void) {
    const char *d = getenv("BF_SHARED_DIR");
    return d ? d : "../shared";
}

const char *bf_test_binary(void) {
    const char *b = getenv("BF_BINARY");
    return b ? b : "blockflow";
}

void bf_test_path(char *buf, size_t size, const char *dir, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

uint64_t bf_rng_next(bf_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double bf_rng_uniform(bf_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(bf_rng_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

int64_t bf_rng_int(bf_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(bf_rng_next(r) % (uint64_t)(hi - lo + 1));
}

double bf_rng_nonzero(bf_rng *r) {
    double v = bf_rng_uniform(r, 0.1, 1.0);
    return (bf_rng_next(r) & 1) ? v : -v;
}

double bf_test_rel_excess(const double *a, const double *b, int64_t n, double atol, double rtol) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (atol + rtol * fabs(b[i]));
        if (!(e <= worst)) worst = e; /* NaN propagates as a failure */
    }
    return worst;
}

int bf_test_main(Suite *suite) {
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
