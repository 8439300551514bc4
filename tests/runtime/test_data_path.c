/*
 * test_data_path.c - the zero-copy data path of the public API: tensors over the caller's
 * memory (bf_tensor_wrap: its rules and its release callback), feeding a tensor without a copy
 * (bf_session_feed_tensor: the Placeholder's output is the caller's memory), handing a result
 * over (bf_session_take_output: the caller owns it, the block runs again when needed, its
 * sources do not), uninitialised tensors, and the huge-page advice on large buffers.
 */
#include "bf_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

/* x (Placeholder) -> y (Identity), and z = x + y (AddV2) reading both. */
static const char *PAGE = HEAD "\"blocks\":["
    "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\"}},"
    "{\"id\":\"y\",\"type\":\"Identity\",\"inputs\":{\"input\":\"x\"}},"
    "{\"id\":\"z\",\"type\":\"AddV2\",\"inputs\":{\"x\":\"x\",\"y\":\"y\"}}],"
    "\"outputs\":[\"z\"]}";

static bf_session *session(bf_context *ctx) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, PAGE, strlen(PAGE), "p.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s", e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    return s;
}

static int released;
static void *released_data;
static void count_release(void *data, void *user) {
    released += *(int *)user;
    released_data = data;
}

static int ran(bf_session *s, const char *id) {
    const bf_page *p = bf_session_page(s);
    return bf_session_block_stats(s, bf_page_find_block(p, id))->ran;
}

START_TEST(wrap_rules) {
    float buf[8] __attribute__((aligned(64))) = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t dims[2] = {2, 4};
    int one = 1;
    bf_tensor *t = NULL;
    bf_error e = {0};
    released = 0;
    /* the wrong size, a misaligned pointer, NULL data: refused, and release never called */
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F32, 2, dims, buf, 28, count_release, &one,
                                    &t, &e), BF_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(e.message, "has 32 bytes, but the buffer given has 28"), "%s",
                  e.message);
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F32, 2, dims, (char *)buf + 2, 32,
                                    count_release, &one, &t, &e), BF_EINVAL);
    ck_assert_msg(strstr(e.message, "is not aligned to the 4 bytes"), "%s", e.message);
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F32, 2, dims, NULL, 32, NULL, NULL, &t, &e),
                     BF_EINVAL);
    ck_assert_int_eq(released, 0);
    /* a good one reads the memory in place; freeing it calls release once, with the data */
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F32, 2, dims, buf, sizeof(buf),
                                    count_release, &one, &t, &e), BF_OK);
    ck_assert_ptr_eq(bf_tensor_data(t), buf);
    ck_assert_int_eq(bf_tensor_numel(t), 8);
    ck_assert_double_eq(bf_tensor_get_f64(t, 7), 8.0);
    bf_tensor_free(t);
    ck_assert_int_eq(released, 1);
    ck_assert_ptr_eq(released_data, buf);
    /* a copy of a wrapped tensor is the library's own */
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F32, 2, dims, buf, sizeof(buf), NULL, NULL,
                                    &t, &e), BF_OK);
    bf_tensor *c = NULL;
    ck_assert_int_eq(bf_tensor_copy(t, &c, &e), BF_OK);
    ck_assert_ptr_ne(bf_tensor_data(c), buf);
    bf_tensor_free(t);
    buf[0] = 42;
    ck_assert_double_eq(bf_tensor_get_f64(c, 0), 1.0);
    bf_tensor_free(c);
    /* empty: no data needed */
    int64_t zero[1] = {0};
    ck_assert_int_eq(bf_tensor_wrap(NULL, BF_DTYPE_F64, 1, zero, NULL, 0, NULL, NULL, &t, &e),
                     BF_OK);
    bf_tensor_free(t);
}
END_TEST

START_TEST(feed_tensor_lends_the_memory) {
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_session *s = session(ctx);
    float *buf = aligned_alloc(64, 64 * sizeof(float));
    for (int i = 0; i < 64; i++) buf[i] = (float)i + 0.5f;
    int64_t dims[1] = {64};
    int one = 1;
    released = 0;
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_wrap(ctx, BF_DTYPE_F32, 1, dims, buf, 64 * sizeof(float),
                                    count_release, &one, &t, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed_tensor(s, "x", t, &e), BF_OK);
    const char *fetch[] = {"x", "z"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetch;
    o.n_fetches = 2;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    /* the Placeholder's output is the caller's memory itself: no copy */
    ck_assert_ptr_eq(bf_tensor_cdata(bf_session_output(s, "x", NULL)), buf);
    const float *z = bf_tensor_cdata(bf_session_output(s, "z", NULL));
    for (int i = 0; i < 64; i++) ck_assert_float_eq(z[i], 2 * buf[i]);
    ck_assert_int_eq(released, 0);
    /* feeding again releases the old buffer (once), after the results that viewed it went */
    ck_assert_int_eq(bf_tensor_wrap(ctx, BF_DTYPE_F32, 1, dims, buf, 64 * sizeof(float),
                                    count_release, &one, &t, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed_tensor(s, "x", t, &e), BF_OK);
    ck_assert_int_eq(released, 1);
    /* a refused feed (wrong dtype; not a Placeholder) still takes the tensor: released now */
    int64_t d2[1] = {2};
    double dd[2] = {1, 2};
    ck_assert_int_eq(bf_tensor_wrap(ctx, BF_DTYPE_F64, 1, d2, dd, sizeof(dd), count_release,
                                    &one, &t, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed_tensor(s, "x", t, &e), BF_EDTYPE);
    ck_assert_str_eq(e.block_id, "x");
    ck_assert_int_eq(released, 2);
    ck_assert_int_eq(bf_tensor_wrap(ctx, BF_DTYPE_F64, 1, d2, dd, sizeof(dd), count_release,
                                    &one, &t, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed_tensor(s, "y", t, &e), BF_EINVAL);
    ck_assert_int_eq(released, 3);
    ck_assert_int_eq(bf_tensor_wrap(ctx, BF_DTYPE_F64, 1, d2, dd, sizeof(dd), count_release,
                                    &one, &t, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed_tensor(s, "nope", t, &e), BF_ENOTFOUND);
    ck_assert_int_eq(released, 4);
    ck_assert_int_eq(bf_session_feed_tensor(s, "x", NULL, &e), BF_EINVAL);
    /* the session frees the one it holds */
    bf_session_free(s);
    ck_assert_int_eq(released, 5);
    free(buf);
    bf_context_free(ctx);
}
END_TEST

START_TEST(take_output_hands_the_result_over) {
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_session *s = session(ctx);
    int64_t dims[1] = {1000};
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new_uninit(ctx, BF_DTYPE_F32, 1, dims, &t, &e), BF_OK);
    for (int i = 0; i < 1000; i++) ((float *)bf_tensor_data(t))[i] = (float)i;
    ck_assert_int_eq(bf_session_feed_tensor(s, "x", t, &e), BF_OK);
    const char *fetch[] = {"y", "z"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetch;
    o.n_fetches = 2;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    const bf_tensor *lent = bf_session_output(s, "z", NULL);
    bf_tensor *z = NULL;
    ck_assert_int_eq(bf_session_take_output(s, "z", "nope", &z, &e), BF_ENOTFOUND);
    ck_assert_ptr_null(z);
    ck_assert_int_eq(bf_session_take_output(s, "z", NULL, &z, &e), BF_OK);
    ck_assert_ptr_eq(z, lent); /* the same tensor: no copy */
    ck_assert_ptr_null(bf_session_output(s, "z", NULL));
    ck_assert_int_eq(bf_session_take_output(s, "z", NULL, &t, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.block_id, "z");
    /* the Placeholder's output is its feed: taking it copies */
    bf_tensor *x = NULL;
    ck_assert_int_eq(bf_session_take_output(s, "x", NULL, &x, &e), BF_OK);
    ck_assert_ptr_ne(bf_tensor_cdata(x), bf_tensor_cdata(bf_session_output(s, "x", NULL)));
    /* the next run runs z again, and only z */
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(ran(s, "z"), 1);
    ck_assert_int_eq(ran(s, "y"), 0);
    ck_assert_int_eq(ran(s, "x"), 0);
    bf_tensor *z2 = NULL;
    ck_assert_int_eq(bf_session_take_output(s, "z", NULL, &z2, &e), BF_OK);
    bf_session_free(s);
    /* both outlive the session */
    for (int i = 0; i < 1000; i++) {
        ck_assert_float_eq(((float *)bf_tensor_data(z))[i], 2.0f * (float)i);
        ck_assert_float_eq(((float *)bf_tensor_data(z2))[i], 2.0f * (float)i);
        ck_assert_float_eq(((float *)bf_tensor_data(x))[i], (float)i);
    }
    bf_tensor_free(z);
    bf_tensor_free(z2);
    bf_tensor_free(x);
    ck_assert_int_eq(bf_session_take_output(NULL, "z", NULL, &z, &e), BF_EINVAL);
    ck_assert_int_eq(bf_session_take_output(NULL, "z", NULL, NULL, &e), BF_EINVAL);
    bf_context_free(ctx);
}
END_TEST

/* Whether the mapping holding `p` in /proc/self/smaps carries the "hg" flag (MADV_HUGEPAGE). */
static int advised_huge(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

START_TEST(large_tensors_ask_for_huge_pages) {
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) != 0) return; /* no THP */
    int64_t big[1] = {16 << 20}, small[1] = {1024};
    bf_tensor *t = NULL, *u = NULL;
    ck_assert_int_eq(bf_tensor_new_uninit(NULL, BF_DTYPE_F32, 1, big, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, small, &u, NULL), BF_OK);
    /* the page-aligned inside of the 64 MiB buffer carries the advice */
    ck_assert_int_eq(advised_huge((char *)bf_tensor_data(t) + (8 << 20)), 1);
    bf_tensor_free(t);
    bf_tensor_free(u);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("data_path");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, wrap_rules);
    tcase_add_test(tc, feed_tensor_lends_the_memory);
    tcase_add_test(tc, take_output_hands_the_result_over);
    tcase_add_test(tc, large_tensors_ask_for_huge_pages);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
