/*
 * test_cache.c - the memory of a run and the result cache (runtime/sched.c, runtime/graph.c):
 * intermediate results are freed after their last reader, so a chain of 12 Conv2D blocks runs
 * under a limit just above its live set; the peak bytes a session reports are exactly what the
 * plan predicts (constants, plus the two results a chain holds at a time); fetched results
 * and page outputs stay; the cache keeps the most recently used results up to its limit; a
 * block whose result was evicted runs again when needed, and only then; an edit upstream of an
 * evicted result still recomputes everything downstream; and a run that runs short of memory
 * empties the cache instead of failing.
 */
#include "bf_test.h"

#include <stdlib.h>
#include <string.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

/* A context with 1 thread, `max_bytes` of session memory (0: default), and the cache as
 * `cache` says: -1 none (no_cache), 0 default, else that many bytes. */
static bf_context *ctx_new(uint64_t max_bytes, int64_t cache) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    cfg.max_session_bytes = max_bytes;
    if (cache < 0) cfg.no_cache = 1;
    else cfg.max_cache_bytes = (uint64_t)cache;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

static bf_session *session(bf_context *ctx, const char *json) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "c.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s %s", e.code, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    return s;
}

static const bf_block_stats *stats(bf_session *s, const char *id) {
    return bf_session_block_stats(s, bf_page_find_block(bf_session_page(s), id));
}

static bf_status run(bf_session *s, const char *fetch, bf_error *e) {
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = &fetch;
    o.n_fetches = fetch ? 1 : 0;
    if (!fetch) o.fetches = NULL;
    return bf_session_run(s, &o, NULL, e);
}

/* ---- a chain of 12 Conv2D blocks ------------------------------------------------------------ */

/* x: RandomNormal [2,64,64,32] float32 (1 MiB), f: a shared 1x1 filter, c1..c12 Conv2D. */
static char *conv_chain(void) {
    size_t cap = 8192, n = 0;
    char *j = malloc(cap);
    n += (size_t)snprintf(j + n, cap - n,
                          HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"RandomNormal\",\"attrs\":"
                               "{\"shape\":[2,64,64,32],\"seed\":1}},"
                               "{\"id\":\"f\",\"type\":\"RandomNormal\",\"attrs\":"
                               "{\"shape\":[1,1,32,32],\"seed\":2,\"stddev\":0.2}}");
    for (int i = 1; i <= 12; i++) {
        char prev[8];
        snprintf(prev, sizeof(prev), i == 1 ? "x" : "c%d", i - 1);
        n += (size_t)snprintf(j + n, cap - n,
                              ",{\"id\":\"c%d\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"%s\","
                              "\"filter\":\"f\"},\"attrs\":{\"strides\":[1,1,1,1],"
                              "\"padding\":\"SAME\"}}",
                              i, prev);
    }
    snprintf(j + n, cap - n, "],\"outputs\":[\"c12\"]}");
    return j;
}

START_TEST(conv_chain_runs_under_a_limit_just_above_its_live_set) {
    const uint64_t T = 2 * 64 * 64 * 32 * 4, F = 32 * 32 * 4;
    char *json = conv_chain();
    /* Unlimited, without a cache: the peak is two activations, the filter and a workspace. */
    bf_context *ctx = ctx_new(0, -1);
    bf_session *s = session(ctx, json);
    bf_error e = {0};
    ck_assert_msg(run(s, NULL, &e) == BF_OK, "%s", e.message);
    uint64_t peak = bf_session_peak_bytes(s);
    ck_assert_uint_ge(peak, 2 * T + F);
    ck_assert_uint_lt(peak, 4 * T);     /* 2 T, the filter and the kernel's workspace (~1.2 T) */
    ck_assert_uint_eq(bf_session_cached_bytes(s), 0);
    for (int i = 1; i <= 12; i++) {
        char id[8];
        snprintf(id, sizeof(id), "c%d", i);
        ck_assert_int_eq(stats(s, id)->ran, 1);
        /* freed after their reader, except the page output */
        ck_assert(i == 12 ? bf_session_output(s, id, NULL) != NULL
                          : bf_session_output(s, id, NULL) == NULL);
    }
    bf_session_free(s);
    bf_context_free(ctx);

    /* Under a limit of exactly that peak: it runs (keeping every result would need 13 T). */
    ck_assert_uint_lt(peak, 13 * T);
    ctx = ctx_new(peak, -1);
    s = session(ctx, json);
    ck_assert_msg(run(s, NULL, &e) == BF_OK, "%s", e.message);
    ck_assert_uint_eq(bf_session_peak_bytes(s), peak);
    bf_session_free(s);
    bf_context_free(ctx);

    /* One byte less: a clean memory_limit error. */
    ctx = ctx_new(peak - 1, -1);
    s = session(ctx, json);
    ck_assert_int_eq(run(s, NULL, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "memory_limit");
    bf_session_free(s);
    bf_context_free(ctx);
    free(json);
}
END_TEST

/* ---- peak bytes: what the plan predicts ------------------------------------------------------ */

/* k: Const [1000] float32 (its tensor is held by the session: T), then n Identity blocks. */
static char *identity_chain(int n) {
    size_t cap = 16384, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(j + len, cap - len,
                            HEAD "\"blocks\":[{\"id\":\"k\",\"type\":\"Const\",\"attrs\":"
                                 "{\"dtype\":\"float32\",\"shape\":[1000],\"value\":[1.5]}}");
    for (int i = 1; i <= n; i++)
        len += (size_t)snprintf(j + len, cap - len,
                                ",{\"id\":\"i%d\",\"type\":\"Identity\",\"inputs\":"
                                "{\"input\":\"%s%d\"}}",
                                i, i == 1 ? "k" : "i", i == 1 ? 0 : i - 1);
    snprintf(j + len, cap - len, "],\"outputs\":[\"i%d\"]}", n);
    /* "k0" above names the Const: fix the first link */
    char *k0 = strstr(j, "\"k0\"");
    if (k0) memmove(k0 + 2, k0 + 3, strlen(k0 + 3) + 1);
    return j;
}

START_TEST(peak_bytes_equal_the_plan) {
    const uint64_t T = 4000;
    char *json = identity_chain(6);
    /* No cache: the Const's own tensor, plus a block's input and output: 3 T. */
    bf_context *ctx = ctx_new(0, -1);
    bf_session *s = session(ctx, json);
    ck_assert_uint_eq(bf_session_peak_bytes(s), T); /* before a run: what the Const holds */
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_uint_eq(bf_session_peak_bytes(s), 3 * T);
    /* A re-run with nothing to do holds the Const and the output: 2 T. */
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "i6")->reused, 1);
    ck_assert_uint_eq(bf_session_peak_bytes(s), 2 * T);
    bf_session_free(s);
    bf_context_free(ctx);

    /* A cache that holds everything: the Const and all 7 results: 8 T, 5 T of them cached
     * (k's output and i1..i5; i6 is the page output). */
    ctx = ctx_new(0, 0);
    s = session(ctx, json);
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_uint_eq(bf_session_peak_bytes(s), 8 * T);
    ck_assert_uint_eq(bf_session_cached_bytes(s), 6 * T);
    bf_session_free(s);
    bf_context_free(ctx);

    /* A cache of 2 T: the peak is 3 T (run) + 2 T (cached) at most, and exactly 5 T here. */
    ctx = ctx_new(0, 2 * T);
    s = session(ctx, json);
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_uint_eq(bf_session_cached_bytes(s), 2 * T);
    ck_assert_uint_eq(bf_session_peak_bytes(s), 5 * T);
    /* the two most recently used stay: i4 and i5 */
    ck_assert_ptr_nonnull(bf_session_output(s, "i5", NULL));
    ck_assert_ptr_nonnull(bf_session_output(s, "i4", NULL));
    ck_assert_ptr_null(bf_session_output(s, "i3", NULL));
    ck_assert_ptr_null(bf_session_output(s, "k", NULL));
    bf_session_free(s);
    bf_context_free(ctx);
    free(json);
}
END_TEST

/* ---- fetched results stay; evicted results run again, and only when needed ------------------- */

START_TEST(fetches_stay_and_evicted_blocks_rerun_when_needed) {
    const uint64_t T = 4000;
    char *json = identity_chain(4);
    bf_context *ctx = ctx_new(0, -1);
    bf_session *s = session(ctx, json);
    const char *fetches[] = {"i2", "i4"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetches;
    o.n_fetches = 2;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    ck_assert_ptr_nonnull(bf_session_output(s, "i2", NULL));
    ck_assert_ptr_nonnull(bf_session_output(s, "i4", NULL));
    ck_assert_ptr_null(bf_session_output(s, "i1", NULL));
    ck_assert_ptr_null(bf_session_output(s, "i3", NULL));
    (void)T;
    /* Fetching i4 again: reused, nothing runs although i1 and i3 are gone. */
    ck_assert_int_eq(run(s, "i4", NULL), BF_OK);
    ck_assert_int_eq(stats(s, "i4")->reused, 1);
    for (int i = 1; i <= 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "i%d", i);
        ck_assert_int_eq(stats(s, id)->ran, 0);
    }
    /* i2 was fetched by the previous run only: without a cache it is freed now. */
    ck_assert_ptr_null(bf_session_output(s, "i2", NULL));
    /* Fetching i3: i3 runs again from k, i1, i2 (evicted), which run too. */
    ck_assert_int_eq(run(s, "i3", NULL), BF_OK);
    ck_assert_int_eq(stats(s, "i3")->ran, 1);
    ck_assert_int_eq(stats(s, "i2")->ran, 1);
    ck_assert_int_eq(stats(s, "i1")->ran, 1);
    ck_assert_int_eq(stats(s, "i4")->ran, 0);
    const bf_tensor *t = bf_session_output(s, "i3", NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq(bf_tensor_get_f64(t, 999), 1.5);
    bf_session_free(s);
    bf_context_free(ctx);
    free(json);
}
END_TEST

/* ---- an edit after eviction recomputes the right blocks ------------------------------------- */

START_TEST(edit_after_eviction_recomputes_the_right_blocks) {
    const uint64_t T = 4000;
    char *json = identity_chain(3); /* k -> i1 -> i2 -> i3 (output) */
    bf_context *ctx = ctx_new(0, T); /* the cache holds one result */
    bf_session *s = session(ctx, json);
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    /* k and i1 were evicted, i2 is cached, i3 is the output. */
    ck_assert_ptr_null(bf_session_output(s, "k", NULL));
    ck_assert_ptr_null(bf_session_output(s, "i1", NULL));
    ck_assert_ptr_nonnull(bf_session_output(s, "i2", NULL));
    /* Editing k, upstream of the evicted i1 and of the valid i2 and i3: all four run again
     * and the output has the new value (a walk that stopped at the evicted i1 would leave
     * i2 and i3 stale). */
    bf_error e = {0};
    ck_assert_msg(bf_session_set_attr(s, "k", "value", "[2.5]", &e) == BF_OK, "%s", e.message);
    ck_assert_ptr_null(bf_session_output(s, "i3", NULL));
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    static const char *const all[] = {"k", "i1", "i2", "i3"};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(stats(s, all[i])->ran, 1);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "i3", NULL), 0), 2.5);

    /* Editing i3 (its device): only i3 runs; i2 comes from the cache, k and i1 (evicted
     * again) are not needed. */
    ck_assert_int_eq(bf_session_set_device(s, "i3", "cpu", NULL), BF_OK);
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "i3")->ran, 1);
    ck_assert_int_eq(stats(s, "i2")->reused, 1);
    ck_assert_int_eq(stats(s, "i1")->ran, 0);
    ck_assert_int_eq(stats(s, "k")->ran, 0);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "i3", NULL), 0), 2.5);

    /* Removing a block moves the nodes after it: the cache's links follow. */
    ck_assert_int_eq(bf_session_add_block(s, "z", "Const", "{\"value\":[1]}", NULL, NULL, NULL),
                     BF_OK);
    ck_assert_int_eq(bf_session_remove_block(s, "k", NULL), BF_OK);
    ck_assert_int_eq(bf_session_connect(s, "i1", "input", "z", NULL), BF_OK);
    ck_assert_int_eq(run(s, NULL, NULL), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "i3", NULL), 0), 1);
    ck_assert_uint_le(bf_session_cached_bytes(s), T);
    bf_session_free(s);
    bf_context_free(ctx);
    free(json);
}
END_TEST

/* ---- the cache never makes a run fail -------------------------------------------------------- */

START_TEST(a_run_short_of_memory_empties_the_cache_first) {
    const uint64_t T = 4000;
    char *json = identity_chain(10);
    /* 5 T of session memory and a cache allowed all of it: without eviction the chain needs
     * 12 T. */
    bf_context *ctx = ctx_new(5 * T, 5 * T);
    bf_session *s = session(ctx, json);
    bf_error e = {0};
    ck_assert_msg(run(s, NULL, &e) == BF_OK, "%s: %s", e.code, e.message);
    ck_assert_uint_le(bf_session_peak_bytes(s), 5 * T);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "i10", NULL), 7), 1.5);
    bf_session_free(s);
    bf_context_free(ctx);
    free(json);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, conv_chain_runs_under_a_limit_just_above_its_live_set);
    tcase_add_test(tc, peak_bytes_equal_the_plan);
    tcase_add_test(tc, fetches_stay_and_evicted_blocks_rerun_when_needed);
    tcase_add_test(tc, edit_after_eviction_recomputes_the_right_blocks);
    tcase_add_test(tc, a_run_short_of_memory_empties_the_cache_first);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
