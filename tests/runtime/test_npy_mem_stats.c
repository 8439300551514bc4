/*
 * test_npy_mem_stats.c - bf_tensor_load_npy_mem (a .npy held in memory, as the server's feeds
 * arrive) and bf_tensor_stats_of (the one summary of a tensor's values).
 *
 * Loading from memory must give exactly what loading the same bytes from a file gives, refuse
 * the same hostile headers with the same codes, and never read past `len` (a claimed size
 * larger than the bytes is refused before anything is allocated). The statistics are checked
 * on random non-zero data against an independent two-pass long-double reference (relative
 * tolerance 1e-12), with NaN and infinities counted apart and left out of the moments.
 */
#include "bf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bf_context *ctx;

static void setup(void) {
    bf_scratch_setup();
    bf_error e = {0};
    ck_assert_int_eq(bf_context_new(NULL, &ctx, &e), BF_OK);
}

static void teardown(void) {
    bf_context_free(ctx);
    bf_scratch_teardown();
}

/* A 2x3 float32 tensor of random non-zero values, saved as .npy; its bytes. */
static char *saved(bf_tensor **t, size_t *len) {
    int64_t dims[2] = {2, 3};
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F32, 2, dims, t, &e), BF_OK);
    bf_rng r = {7};
    float *d = bf_tensor_data(*t);
    for (int i = 0; i < 6; i++) d[i] = (float)bf_rng_nonzero(&r);
    ck_assert_int_eq(bf_tensor_save_npy(*t, bf_sp("a.npy"), &e), BF_OK);
    return bf_read_file(bf_sp("a.npy"), len);
}

START_TEST(mem_equals_file) {
    bf_tensor *t, *from_file = NULL, *from_mem = NULL;
    size_t len;
    char *bytes = saved(&t, &len);
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_load_npy(ctx, bf_sp("a.npy"), &from_file, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_load_npy_mem(ctx, bytes, len, "upload", &from_mem, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_rank(from_mem), 2);
    ck_assert_int_eq(bf_tensor_dims(from_mem)[1], 3);
    ck_assert_int_eq(bf_tensor_dtype(from_mem), BF_DTYPE_F32);
    ck_assert_mem_eq(bf_tensor_cdata(from_mem), bf_tensor_cdata(from_file), 6 * sizeof(float));
    ck_assert_mem_eq(bf_tensor_cdata(from_mem), bf_tensor_cdata(t), 6 * sizeof(float));
    bf_tensor_free(from_file);
    bf_tensor_free(from_mem);
    bf_tensor_free(t);
    free(bytes);
}
END_TEST

START_TEST(mem_hostile) {
    bf_tensor *t, *out = NULL;
    size_t len;
    char *bytes = saved(&t, &len);
    bf_error e = {0};
    /* the data cut short: the header claims more than the bytes hold */
    ck_assert_int_ne(bf_tensor_load_npy_mem(ctx, bytes, len - 1, "cut", &out, &e), BF_OK);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(e.message, "cut"));
    /* not a .npy at all */
    ck_assert_int_eq(bf_tensor_load_npy_mem(ctx, "hello", 5, "text", &out, &e), BF_EPARSE);
    ck_assert_ptr_null(out);
    /* a huge claimed shape: refused by the element limit before any allocation */
    char big[128];
    int n = snprintf(big, sizeof(big), "\x93NUMPY\x01%c%c{'descr': '<f4', 'fortran_order': "
                     "False, 'shape': (1000000000000,), }", 0, 0);
    big[8] = (char)(n - 10);
    ck_assert_int_ne(bf_tensor_load_npy_mem(ctx, big, (size_t)n, "big", &out, &e), BF_OK);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(bf_tensor_load_npy_mem(ctx, NULL, 4, "null", &out, &e), BF_EINVAL);
    bf_tensor_free(t);
    free(bytes);
}
END_TEST

START_TEST(stats_against_reference) {
    enum { N = 10007 };
    int64_t dims[1] = {N};
    bf_tensor *t;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F64, 1, dims, &t, &e), BF_OK);
    double *d = bf_tensor_data(t);
    bf_rng r = {11};
    for (int i = 0; i < N; i++) d[i] = 1e6 + bf_rng_nonzero(&r); /* a large mean: cancellation */
    d[5] = NAN;
    d[17] = INFINITY;
    d[99] = -INFINITY;
    long double sum = 0, lo = INFINITY, hi = -INFINITY;
    int64_t finite = 0;
    for (int i = 0; i < N; i++)
        if (isfinite(d[i])) {
            sum += d[i];
            finite++;
            if (d[i] < lo) lo = d[i];
            if (d[i] > hi) hi = d[i];
        }
    long double mean = sum / finite, ss = 0;
    for (int i = 0; i < N; i++)
        if (isfinite(d[i])) ss += (d[i] - mean) * (d[i] - mean);
    double std = (double)sqrtl(ss / finite);
    bf_tensor_stats st;
    bf_tensor_stats_of(t, &st);
    ck_assert_int_eq(st.count, N);
    ck_assert_int_eq(st.finite, N - 3);
    ck_assert_int_eq(st.nan, 1);
    ck_assert_int_eq(st.inf, 2);
    ck_assert_double_eq(st.min, (double)lo);
    ck_assert_double_eq(st.max, (double)hi);
    ck_assert_double_le(fabs(st.mean - (double)mean), 1e-12 * (double)mean);
    ck_assert_double_le(fabs(st.std - std), 1e-9 * std);
    bf_tensor_free(t);
}
END_TEST

START_TEST(stats_no_finite) {
    int64_t dims[1] = {2};
    bf_tensor *t;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F32, 1, dims, &t, &e), BF_OK);
    float *d = bf_tensor_data(t);
    d[0] = NAN;
    d[1] = INFINITY;
    bf_tensor_stats st;
    bf_tensor_stats_of(t, &st);
    ck_assert_int_eq(st.finite, 0);
    ck_assert_int_eq(st.nan + st.inf, 2);
    ck_assert_double_eq(st.mean, 0);
    bf_tensor_free(t);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("npy_mem_stats");
    TCase *tc = tcase_create("all");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, mem_equals_file);
    tcase_add_test(tc, mem_hostile);
    tcase_add_test(tc, stats_against_reference);
    tcase_add_test(tc, stats_no_finite);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
