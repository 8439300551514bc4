/*
 * bf_test.c - shared test helpers (see bf_test.h).
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "bf_test.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- the scratch folder and files ----------------------------------------------------------- */

static char scratch[256];

void bf_scratch_setup(void) {
    snprintf(scratch, sizeof(scratch), "/tmp/bf_%s.XXXXXX", program_invocation_short_name);
    ck_assert_ptr_nonnull(mkdtemp(scratch));
}

void bf_scratch_teardown(void) { bf_rm_tree(scratch); }

const char *bf_scratch(void) { return scratch; }

const char *bf_sp(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ & 3];
    bf_test_path(b, 512, scratch, name);
    return b;
}

void bf_rm_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (!S_ISDIR(sb.st_mode)) {
        unlink(path);
        return;
    }
    chmod(path, S_IRWXU);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
            bf_rm_tree(p);
        }
        closedir(d);
    }
    if (rmdir(path) != 0 && errno != ENOENT)
        fprintf(stderr, "could not remove %s: %s\n", path, strerror(errno));
}

bool bf_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

void bf_write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

void bf_write_file(const char *path, const char *text) { bf_write_bytes(path, text, strlen(text)); }

char *bf_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_msg(n >= 0, "cannot size %s", path);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

int bf_count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* ---- numbers -------------------------------------------------------------------------------- */

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
