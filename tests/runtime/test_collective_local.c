/*
 * test_collective_local.c - a job whose ranks are threads of one process (bf_group,
 * runtime/collective_local.c): each collective against a serial reference, the bits of a
 * sharded filter gradient summed across 3 ranks equal to (p0 + p1) + p2 in float32 (p_r: rank
 * r's part computed alone, the sum an MPI job's --deterministic-reduce makes), a rank that
 * ends early failing the others' calls with its rank named instead of a hang, and the
 * configuration checks. Training in a group is checked through the program
 * (tests/apps/test_local_ranks.py).
 *
 * Numbers: random non-zero float32; sums compared bit for bit against the same float32 sums
 * made serially in rank order (the group promises exactly that order).
 */
#include "bf_test.h"
#include "collective.h"
#include "context.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define K 3

/* ---- each collective, from K threads ------------------------------------------------------- */

typedef struct worker {
    bf_group *g;
    int rank;
    bool deterministic;
    bf_status st, st2;
    bf_error e;
    float f32[1001];
    double f64[7];
    int64_t i64[5], max[6];
    unsigned char bytes[40], gathered[K * 40];
    char job[96];
} worker;

static bf_context *rank_ctx(bf_group *g, int rank, bool deterministic, bf_error *e) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    cfg.group = g;
    cfg.group_rank = rank;
    cfg.deterministic_reduce = deterministic;
    bf_context *ctx = NULL;
    return bf_context_new(&cfg, &ctx, e) ? NULL : ctx;
}

static float input_f32(int rank, int i) {
    bf_rng r = {(uint64_t)(rank * 7919 + i) * 2654435761u + 1};
    return (float)bf_rng_nonzero(&r);
}

static void *collectives(void *arg) {
    worker *w = arg;
    bf_context *ctx = rank_ctx(w->g, w->rank, false, &w->e);
    if (!ctx) {
        w->st = w->e.status;
        return NULL;
    }
    bf_coll *c = &ctx->coll;
    snprintf(w->job, sizeof(w->job), "%s", bf_context_job(ctx));
    for (int i = 0; i < 1001; i++) w->f32[i] = input_f32(w->rank, i);
    for (int i = 0; i < 7; i++) w->f64[i] = 0.1 * (i + 1) * (w->rank + 1);
    for (int i = 0; i < 5; i++) w->i64[i] = (int64_t)(i - 2) * (w->rank + 1) * 1000000007;
    for (int i = 0; i < 6; i++) w->max[i] = (int64_t)((i * 5 + w->rank * 3) % 7) - 3;
    for (int i = 0; i < 40; i++) w->bytes[i] = (unsigned char)(w->rank * 40 + i);
    bf_status st = c->ops->allreduce_sum(c, w->f32, 1001, BF_DTYPE_F32, &w->e);
    if (!st) st = c->ops->allreduce_sum(c, w->f64, 7, BF_DTYPE_F64, &w->e);
    if (!st) st = c->ops->allreduce_sum(c, w->i64, 5, BF_DTYPE_I64, &w->e);
    if (!st) st = c->ops->allreduce_max(c, w->max, 6, &w->e);
    if (!st) st = c->ops->gather(c, w->bytes, 40, w->rank == 1 ? w->gathered : NULL, 1, &w->e);
    if (!st) st = c->ops->broadcast(c, w->bytes, 40, 2, &w->e);
    if (!st) st = c->ops->allreduce_sum(c, w->f32, 0, BF_DTYPE_F32, &w->e); /* nothing */
    w->st = st;
    bf_context_free(ctx);
    return NULL;
}

static void run_workers(worker *w, void *(*fn)(void *)) {
    pthread_t th[K];
    for (int r = 0; r < K; r++) ck_assert_int_eq(pthread_create(&th[r], NULL, fn, &w[r]), 0);
    for (int r = 0; r < K; r++) pthread_join(th[r], NULL);
}

START_TEST(each_collective_against_a_serial_reference) {
    bf_group *g = NULL;
    ck_assert_int_eq(bf_group_new(K, &g, NULL), BF_OK);
    ck_assert_int_eq(bf_group_size(g), K);
    static worker w[K];
    memset(w, 0, sizeof(w));
    for (int r = 0; r < K; r++) w[r].g = g, w[r].rank = r;
    run_workers(w, collectives);
    for (int r = 0; r < K; r++) {
        ck_assert_msg(w[r].st == BF_OK, "rank %d: %s: %s", r, w[r].e.code, w[r].e.message);
        char want[96];
        snprintf(want, sizeof(want), "threads of one process: rank %d of %d", r, K);
        ck_assert_str_eq(w[r].job, want);
        for (int i = 0; i < 1001; i++) { /* (p0 + p1) + p2 in float32, bit for bit */
            float s = input_f32(0, i);
            for (int q = 1; q < K; q++) s += input_f32(q, i);
            ck_assert_msg(memcmp(&s, &w[r].f32[i], sizeof(s)) == 0, "rank %d element %d", r, i);
        }
        for (int i = 0; i < 7; i++) {
            double s = 0.1 * (i + 1) * 1;
            for (int q = 1; q < K; q++) s += 0.1 * (i + 1) * (q + 1);
            ck_assert(memcmp(&s, &w[r].f64[i], sizeof(s)) == 0);
        }
        for (int i = 0; i < 5; i++) ck_assert_int_eq(w[r].i64[i], (int64_t)(i - 2) * 6 * 1000000007);
        for (int i = 0; i < 6; i++) {
            int64_t m = INT64_MIN;
            for (int q = 0; q < K; q++) m = BF_MAX(m, (int64_t)((i * 5 + q * 3) % 7) - 3);
            ck_assert_int_eq(w[r].max[i], m);
        }
        for (int i = 0; i < 40; i++) ck_assert_int_eq(w[r].bytes[i], 2 * 40 + i); /* rank 2's */
    }
    for (int i = 0; i < K * 40; i++) ck_assert_int_eq(w[1].gathered[i], i); /* in rank order */
    bf_group_free(g);
}
END_TEST

/* ---- a sharded filter gradient ----------------------------------------------------------- */

#define N 10
static const char FILTER_PAGE[] =
    "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["
    "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,8,8,2],\"shard\":\"batch\"}},"
    "{\"id\":\"dy\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,8,8,3],\"shard\":\"batch\"}},"
    "{\"id\":\"fs\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[3,3,2,3]}},"
    "{\"id\":\"dw\",\"type\":\"Conv2DBackpropFilter\",\"inputs\":{\"input\":\"x\","
    "\"filter_sizes\":\"fs\",\"out_backprop\":\"dy\"},"
    "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
    "{\"id\":\"dw_sum\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"dw\"}}],"
    "\"outputs\":[\"dw_sum\"]}";

/* Rows [first, first + rows) of the batch of N, for input x (c = 2) or dy (c = 3). */
static bf_tensor *batch(int c, int64_t first, int64_t rows) {
    int64_t dims[4] = {rows, 8, 8, c};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 4, dims, &t, NULL), BF_OK);
    float *p = bf_tensor_data(t);
    for (int64_t i = 0; i < rows * 64 * c; i++) {
        bf_rng r = {(uint64_t)(c * 1000003 + first * 64 * c + i) * 0x9E3779B97F4A7C15ull + 1};
        p[i] = (float)bf_rng_nonzero(&r);
    }
    return t;
}

/* Open FILTER_PAGE on ctx, feed rows [first, first + rows), run; the float32 result. */
static bf_status filter_grad(bf_context *ctx, int64_t first, int64_t rows, float out[54],
                             bf_error *e) {
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_status st = bf_page_load_string(ctx, FILTER_PAGE, strlen(FILTER_PAGE), "fg.json", NULL,
                                       &page, NULL, e);
    if (!st) st = bf_session_new(ctx, page, &s, e);
    bf_tensor *x = st ? NULL : batch(2, first, rows), *dy = st ? NULL : batch(3, first, rows);
    if (!st) st = bf_session_feed(s, "x", x, e);
    if (!st) st = bf_session_feed(s, "dy", dy, e);
    if (!st) st = bf_session_run(s, NULL, NULL, e);
    const bf_tensor *t = st ? NULL : bf_session_output(s, "dw_sum", NULL);
    for (int i = 0; t && i < 54; i++) out[i] = (float)bf_tensor_get_f64(t, i); /* exact */
    if (!t && !st) st = bf_err(e, BF_EINTERNAL, "no_output", "dw_sum has no result");
    bf_tensor_free(x), bf_tensor_free(dy);
    bf_session_free(s);
    return st;
}

static float grads[K][54];

static void *filter_rank(void *arg) {
    worker *w = arg;
    bf_context *ctx = rank_ctx(w->g, w->rank, w->deterministic, &w->e);
    w->st = ctx ? filter_grad(ctx, 0, N, grads[w->rank], &w->e) : w->e.status;
    bf_context_free(ctx);
    return NULL;
}

START_TEST(a_sharded_filter_gradient_has_the_bits_of_a_deterministic_job) {
    /* rank r's part alone, in one process: rows numpy.array_split(10, 3) gives */
    static const int64_t part[K][2] = {{0, 4}, {4, 3}, {7, 3}};
    float p[K][54];
    bf_config cfg; /* one thread, as each rank: a kernel's sums follow its thread count */
    bf_config_init(&cfg);
    cfg.threads = 1;
    bf_context *one = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &one, NULL), BF_OK);
    for (int r = 0; r < K; r++) {
        bf_error e = {0};
        ck_assert_msg(filter_grad(one, part[r][0], part[r][1], p[r], &e) == BF_OK, "%s",
                      e.message);
    }
    bf_context_free(one);
    for (int det = 0; det < 2; det++) {
        bf_group *g = NULL;
        ck_assert_int_eq(bf_group_new(K, &g, NULL), BF_OK);
        static worker w[K];
        memset(w, 0, sizeof(w));
        for (int r = 0; r < K; r++) w[r].g = g, w[r].rank = r, w[r].deterministic = det;
        run_workers(w, filter_rank);
        bf_group_free(g);
        for (int r = 0; r < K; r++) {
            ck_assert_msg(w[r].st == BF_OK, "rank %d: %s: %s", r, w[r].e.code, w[r].e.message);
            for (int i = 0; i < 54; i++) {
                float want = (p[0][i] + p[1][i]) + p[2][i];
                ck_assert_msg(memcmp(&want, &grads[r][i], sizeof(want)) == 0,
                              "deterministic %d, rank %d, element %d: %.9g, want %.9g", det, r, i,
                              (double)grads[r][i], (double)want);
            }
        }
    }
}
END_TEST

/* ---- a rank that ends early ------------------------------------------------------------- */

static void *quitter(void *arg) {
    worker *w = arg;
    bf_context *ctx = rank_ctx(w->g, w->rank, false, &w->e);
    if (!ctx) {
        w->st = w->e.status;
        return NULL;
    }
    bf_coll *c = &ctx->coll;
    float v[4] = {1, 2, 3, 4};
    if (w->rank == 1) { /* fails before the job's first call: leaves */
        bf_context_free(ctx);
        return NULL;
    }
    w->st = c->ops->allreduce_sum(c, v, 4, BF_DTYPE_F32, &w->e);
    w->st2 = c->ops->broadcast(c, v, sizeof(v), 0, NULL); /* and every call after */
    bf_context_free(ctx);
    return NULL;
}

START_TEST(a_rank_that_ends_early_fails_the_others_calls) {
    bf_group *g = NULL;
    ck_assert_int_eq(bf_group_new(K, &g, NULL), BF_OK);
    static worker w[K];
    memset(w, 0, sizeof(w));
    for (int r = 0; r < K; r++) w[r].g = g, w[r].rank = r;
    run_workers(w, quitter); /* returns: nobody waits for ever (the test's timeout otherwise) */
    for (int r = 0; r < K; r += 2) {
        ck_assert_int_eq(w[r].st, BF_EDEVICE);
        ck_assert_str_eq(w[r].e.code, "rank_failed");
        ck_assert_ptr_nonnull(strstr(w[r].e.message, "rank 1 of the job"));
        ck_assert_int_eq(w[r].st2, BF_EDEVICE);
    }
    bf_group_free(g);
}
END_TEST

START_TEST(configuration) {
    bf_group *g = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_group_new(0, &g, &e), BF_EINVAL);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(bf_group_new(5000, &g, &e), BF_EINVAL);
    ck_assert_int_eq(bf_group_new(2, NULL, &e), BF_EINVAL);
    ck_assert_int_eq(bf_group_size(NULL), 0);
    bf_group_free(NULL);
    ck_assert_int_eq(bf_group_new(2, &g, &e), BF_OK);
    ck_assert_ptr_null(rank_ctx(g, 2, false, &e));
    ck_assert_str_eq(e.code, "bad_config");
    ck_assert_ptr_nonnull(strstr(e.message, "ranks 0 to 1"));
    ck_assert_ptr_null(rank_ctx(g, -1, false, &e));
    bf_context *a = rank_ctx(g, 1, false, &e);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(bf_context_rank(a), 1);
    ck_assert_int_eq(bf_context_size(a), 2);
    ck_assert_ptr_null(rank_ctx(g, 1, false, &e)); /* one context a rank */
    ck_assert_str_eq(e.code, "bad_config");
    bf_context_free(a);
    bf_group_free(g);
    /* a group of one is the single process, through the group */
    ck_assert_int_eq(bf_group_new(1, &g, &e), BF_OK);
    bf_context *one = rank_ctx(g, 0, false, &e);
    float out[54];
    ck_assert_int_eq(filter_grad(one, 0, N, out, &e), BF_OK);
    bf_context_free(one);
    bf_group_free(g);
}
END_TEST

int main(void) {
    Suite *s = suite_create("collective_local");
    TCase *tc = tcase_create("group");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_collective_against_a_serial_reference);
    tcase_add_test(tc, a_sharded_filter_gradient_has_the_bits_of_a_deterministic_job);
    tcase_add_test(tc, a_rank_that_ends_early_fails_the_others_calls);
    tcase_add_test(tc, configuration);
    suite_add_tcase(s, tc);
    return bf_test_main(s);
}
