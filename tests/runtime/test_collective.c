/*
 * test_collective.c - data parallelism without MPI: the job is replaced by a fake collective
 * that plays K ranks holding the same values as this one (an all-reduce sum multiplies by K,
 * a gather repeats this rank's part K times) and counts every call, so the runtime's side of
 * it is checked in one process: the AllReduce blocks of a run fused into one call per round
 * and dtype (runtime/fuse.c), the deterministic reduce, a failure or cancel on another rank
 * stopping a run and a step (nothing committed), shard "batch" on Placeholder and Dataset
 * (rows numpy.array_split gives), the data-parallel gradient build (AllReduce on every
 * Variable's gradient, refused for a batch that does not divide), the checksum comparison of
 * checkpoints, and the AllReduce block itself in one process (the identity).
 *
 * Numbers: small integers and k/4 in float32/float64, whose sums are exact: compared exactly.
 * The real MPI runs (mpirun -np 2 and 3) are tests/apps/test_mpi.py.
 */
#include "bf_test.h"
#include "block.h"
#include "context.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

/* ---- the fake job ---------------------------------------------------------------------------- */

typedef struct fake {
    int allreduces, maxes, gathers, broadcasts;
    int64_t reduced[16];     /* elements of each all-reduce */
    int fail_at_max;         /* this all-reduce max (1-based) reports rank 1 failed */
    int stop_at_max;         /* this one reports rank 1 stopping */
    int differ_at_max;       /* in this one rank 1 reduces one element more */
    bool diverge;            /* checksums (an all-reduce max of 2 values) differ on rank 1 */
} fake;

static fake F;

static bf_status f_allreduce(bf_coll *c, void *buf, int64_t n, bf_dtype dt, bf_error *err) {
    (void)err;
    if (F.allreduces < 16) F.reduced[F.allreduces] = n;
    F.allreduces++;
    for (int64_t i = 0; i < n; i++) {
        if (dt == BF_DTYPE_F32) ((float *)buf)[i] *= (float)c->size;
        else if (dt == BF_DTYPE_F64) ((double *)buf)[i] *= c->size;
        else ((int64_t *)buf)[i] *= c->size;
    }
    return BF_OK;
}

static bf_status f_max(bf_coll *c, int64_t *buf, int n, bf_error *err) {
    (void)err;
    F.maxes++;
    if (n == 6 && F.maxes == F.fail_at_max) buf[0] = BF_MAX(buf[0], c->size - 1);
    if (n == 6 && F.maxes == F.stop_at_max) buf[1] = BF_MAX(buf[1], c->size - 1);
    if (n == 6 && F.maxes == F.differ_at_max) buf[2]++;
    if (n == 2 && F.diverge) { /* rank 1's checksum is one more */
        int64_t other = buf[0] + 1;
        buf[0] = BF_MAX(buf[0], other);
        buf[1] = BF_MAX(buf[1], -other);
    }
    return BF_OK;
}

static bf_status f_broadcast(bf_coll *c, void *buf, size_t bytes, int root, bf_error *err) {
    (void)c, (void)buf, (void)bytes, (void)root, (void)err;
    F.broadcasts++;
    return BF_OK;
}

static bf_status f_gather(bf_coll *c, const void *send, size_t bytes, void *recv, int root,
                          bf_error *err) {
    (void)err;
    F.gathers++;
    if (c->rank == root)
        for (int r = 0; r < c->size; r++) memcpy((char *)recv + (size_t)r * bytes, send, bytes);
    return BF_OK;
}

static void f_abort(bf_coll *c, int code) { (void)c, (void)code; }
static void f_close(bf_coll *c) { (void)c; }

static const bf_coll_ops fake_ops = {f_allreduce, f_max, f_broadcast, f_gather, f_abort,
                                     f_close};

/* A context of one thread; with size > 1, rank `rank` of a fake job of `size`. */
static bf_context *ctx_job(int rank, int size, bool deterministic) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    cfg.deterministic_reduce = deterministic;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    if (size > 1) {
        ctx->coll.ops = &fake_ops;
        ctx->coll.rank = rank;
        ctx->coll.size = size;
    }
    memset(&F, 0, sizeof(F));
    return ctx;
}

static bf_status try_open(bf_context *ctx, bf_session **s, bf_error *e, const char *fmt, ...) {
    char body[8192], json[8400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof(body));
    snprintf(json, sizeof(json), HEAD "%s", body);
    bf_page *page = NULL;
    bf_status st = bf_page_load_string(ctx, json, strlen(json), "t.json", bf_scratch(), &page,
                                       NULL, e);
    if (st) return st;
    return bf_session_new(ctx, page, s, e);
}

#define OPEN(ctx, ...)                                                                          \
    ({                                                                                          \
        bf_session *s_ = NULL;                                                                  \
        bf_error e_ = {0};                                                                      \
        if (try_open(ctx, &s_, &e_, __VA_ARGS__))                                               \
            ck_abort_msg("page does not open: %s: %s", e_.code, e_.message);                    \
        s_;                                                                                     \
    })

static void run_ok(bf_session *s, const char *const *fetches, int n) {
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetches, o.n_fetches = n;
    bf_error e = {0};
    if (bf_session_run(s, &o, NULL, &e)) ck_abort_msg("run failed: %s: %s", e.code, e.message);
}

static double out_at(bf_session *s, const char *id, int64_t i) {
    const bf_tensor *t = bf_session_output(s, id, NULL);
    ck_assert_ptr_nonnull(t);
    return bf_tensor_get_f64(t, i);
}

/* Three independent AllReduce (two float32, one float64) and one fed by another. */
#define FOUR_ALLREDUCE                                                                          \
    "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[2,3],\"value\":[1,2,3,4,5,6]}},"    \
    "{\"id\":\"y\",\"type\":\"Const\",\"attrs\":{\"shape\":[4],\"value\":[0.25,0.5,0.75,1]}},"  \
    "{\"id\":\"z\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\",\"shape\":[3],"          \
    "\"value\":[-1,-2,-3]}},"                                                                   \
    "{\"id\":\"xs\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"x\"}},"                      \
    "{\"id\":\"ym\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"y\"},"                       \
    "\"attrs\":{\"op\":\"mean\"}},"                                                             \
    "{\"id\":\"zm\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"z\"},"                       \
    "\"attrs\":{\"op\":\"mean\"}},"                                                             \
    "{\"id\":\"xss\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"xs\"}}]}"

static const char *const four[] = {"xs", "ym", "zm", "xss"};

START_TEST(one_process_is_the_identity) {
    bf_context *ctx = ctx_job(0, 1, false);
    ck_assert_int_eq(bf_context_rank(ctx), 0);
    ck_assert_int_eq(bf_context_size(ctx), 1);
    ck_assert_str_eq(bf_context_job(ctx), "one process");
    bf_session *s = OPEN(ctx, FOUR_ALLREDUCE);
    run_ok(s, four, 4);
    for (int i = 0; i < 6; i++) {
        ck_assert_double_eq(out_at(s, "xs", i), i + 1);
        ck_assert_double_eq(out_at(s, "xss", i), i + 1);
    }
    for (int i = 0; i < 4; i++) ck_assert_double_eq(out_at(s, "ym", i), 0.25 * (i + 1));
    for (int i = 0; i < 3; i++) ck_assert_double_eq(out_at(s, "zm", i), -(i + 1));
    int64_t calls = -1;
    bf_context_job_stats(ctx, &calls, NULL, NULL);
    ck_assert_int_eq(calls, 0);
    bf_session_free(s);
    /* bfloat16 passes through too; an integer does not pass the port's dtypes */
    bf_error e = {0};
    s = NULL;
    ck_assert_int_ne(try_open(ctx, &s, &e,
                              "{\"id\":\"i\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
                              "\"value\":[1]}},{\"id\":\"r\",\"type\":\"AllReduce\","
                              "\"inputs\":{\"input\":\"i\"}}],\"outputs\":[\"r\"]}") ||
                         bf_session_check(s, NULL, &e),
                     BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(a_page_built_for_other_ranks_is_refused) {
    bf_context *ctx = ctx_job(0, 1, false);
    bf_session *s = OPEN(ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[1]}},"
                              "{\"id\":\"r\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"x\"},"
                              "\"attrs\":{\"op\":\"mean\",\"ranks\":2}}],\"outputs\":[\"r\"]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "wrong_rank_count");
    ck_assert_str_eq(e.block_id, "r");
    ck_assert_str_eq(e.attr, "ranks");
    ck_assert_ptr_nonnull(strstr(e.message, "mpirun -np 2"));
    bf_session_free(s);
    bf_context_free(ctx);
    ctx = ctx_job(1, 2, false); /* the job it was built for */
    s = OPEN(ctx, "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"value\":[3]}},"
                  "{\"id\":\"r\",\"type\":\"AllReduce\",\"inputs\":{\"input\":\"x\"},"
                  "\"attrs\":{\"op\":\"mean\",\"ranks\":2}}],\"outputs\":[\"r\"]}");
    run_ok(s, NULL, 0);
    ck_assert_double_eq(out_at(s, "r", 0), 3); /* (3 + 3) / 2 */
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(one_call_per_round_and_dtype) {
    bf_context *ctx = ctx_job(0, 3, false);
    bf_session *s = OPEN(ctx, FOUR_ALLREDUCE);
    int broadcasts = F.broadcasts;
    run_ok(s, four, 4);
    /* round 1: xs, ym (float32, 10 elements) and zm (float64, 3); round 2: xss (6) */
    ck_assert_int_eq(F.allreduces, 3);
    ck_assert_int_eq(F.reduced[0], 10);
    ck_assert_int_eq(F.reduced[1], 3);
    ck_assert_int_eq(F.reduced[2], 6);
    ck_assert_int_eq(F.maxes, 1 + 2); /* the session's agreement, then one per round */
    ck_assert_int_eq(F.broadcasts, broadcasts); /* only the deterministic reduce broadcasts */
    for (int i = 0; i < 6; i++) {
        ck_assert_double_eq(out_at(s, "xs", i), 3.0 * (i + 1));
        ck_assert_double_eq(out_at(s, "xss", i), 9.0 * (i + 1));
    }
    for (int i = 0; i < 4; i++) ck_assert_double_eq(out_at(s, "ym", i), 0.25 * (i + 1));
    for (int i = 0; i < 3; i++) ck_assert_double_eq(out_at(s, "zm", i), -(i + 1));
    /* the results are kept: running again reduces nothing */
    run_ok(s, four, 4);
    ck_assert_int_eq(F.allreduces, 3);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(deterministic_reduce_gathers_sums_and_broadcasts) {
    bf_context *ctx = ctx_job(0, 3, true);
    bf_session *s = OPEN(ctx, FOUR_ALLREDUCE);
    int broadcasts = F.broadcasts;
    run_ok(s, four, 4);
    ck_assert_int_eq(F.allreduces, 0);
    ck_assert_int_eq(F.gathers, 3); /* round 1: float32 and float64; round 2: float32 */
    ck_assert_int_eq(F.broadcasts, broadcasts + 3);
    for (int i = 0; i < 6; i++) ck_assert_double_eq(out_at(s, "xss", i), 9.0 * (i + 1));
    for (int i = 0; i < 3; i++) ck_assert_double_eq(out_at(s, "zm", i), -(i + 1));
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(a_failure_on_another_rank_stops_the_run) {
    bf_context *ctx = ctx_job(0, 2, false);
    bf_session *s = OPEN(ctx, FOUR_ALLREDUCE);
    F.fail_at_max = F.maxes + 1; /* the first round's agreement: rank 1 failed */
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = four, o.n_fetches = 4;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_EDEVICE);
    ck_assert_str_eq(e.code, "rank_failed");
    ck_assert_ptr_nonnull(strstr(e.message, "rank 1"));
    ck_assert_int_eq(F.allreduces, 0); /* nothing reduced once a rank failed */
    ck_assert_ptr_null(bf_session_output(s, "xs", NULL));
    /* a cancel on another rank */
    F.stop_at_max = F.maxes + 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_ECANCELED);
    ck_assert_ptr_nonnull(strstr(e.message, "rank 1"));
    /* the ranks reduce different amounts (another page, or another --deterministic-reduce) */
    F.differ_at_max = F.maxes + 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_EINTERNAL);
    ck_assert_str_eq(e.code, "round_mismatch");
    /* the session stays usable */
    run_ok(s, four, 4);
    ck_assert_double_eq(out_at(s, "xs", 5), 12);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* A learn-a-filter page on a sharded batch of 16 images (a squared loss, so that the gradient
 * depends on w and every step reduces it again): the data-parallel build, steps. */
#define FILTER_PAGE                                                                             \
    "{\"id\":\"images\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[16,5,5,1],"               \
    "\"shard\":\"batch\"}},"                                                                    \
    "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2,2,1,1],\"value\":0.25}},"       \
    "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"images\",\"filter\":\"w\"},"  \
    "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}},"                                  \
    "{\"id\":\"sq\",\"type\":\"Square\",\"inputs\":{\"x\":\"conv\"}},"                          \
    "{\"id\":\"axes\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[0,1,2,3]}},"  \
    "{\"id\":\"loss\",\"type\":\"Mean\",\"inputs\":{\"input\":\"sq\","                          \
    "\"reduction_indices\":\"axes\"}}],\"outputs\":[\"loss\"]}"

static void feed_images(bf_context *ctx, bf_session *s) {
    int64_t dims[4] = {16, 5, 5, 1};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F32, 4, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < 400; i++) ((float *)bf_tensor_data(t))[i] = (float)(i % 7) / 4;
    ck_assert_int_eq(bf_session_feed(s, "images", t, NULL), BF_OK);
    bf_tensor_free(t);
}

START_TEST(data_parallel_gradients_and_a_step) {
    bf_context *ctx = ctx_job(1, 2, false);
    bf_session *s = OPEN(ctx, FILTER_PAGE);
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "images", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.dims[0], 8); /* this rank's half */
    bf_grad_options go;
    bf_grad_options_init(&go);
    go.optimizer = "sgd:0.5";
    go.data_parallel = 1;
    char *created = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_build_gradients_opts(s, "loss", NULL, 0, &go, &created, &e),
                     BF_OK);
    ck_assert_ptr_nonnull(strstr(created, "\"all_reduce\":{\"w\":\"w_grad_allreduce\"}"));
    bf_string_free(created);
    const bf_page *pg = bf_session_page(s);
    int ar = bf_page_find_block(pg, "w_grad_allreduce"), upd = bf_page_find_block(pg, "w_update");
    ck_assert_int_ge(ar, 0);
    ck_assert_str_eq(bf_page_block_type(pg, ar), "AllReduce");
    ck_assert_str_eq(bf_page_block_input_source(pg, upd, 2), "w_grad_allreduce");
    char *text = NULL;
    ck_assert_int_eq(bf_page_to_json(pg, &text, NULL), BF_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"ranks\": 2"));
    bf_string_free(text);
    feed_images(ctx, s);
    /* a step: one round (the gradient), the metric's mean, the agreements */
    memset(&F, 0, sizeof(F));
    ck_assert_int_eq(bf_session_step(s, 1, NULL, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_step_count(s), 1);
    ck_assert_int_eq(F.allreduces, 2);      /* the fused gradients, the loss metric */
    ck_assert_int_eq(F.reduced[0], 4);      /* w's gradient: 2x2x1x1 */
    /* another rank fails after its run: the step commits nothing here either */
    bf_tensor *before = NULL, *after = NULL;
    ck_assert_int_eq(bf_session_read_state(s, "w", &before, NULL), BF_OK);
    memset(&F, 0, sizeof(F));
    F.fail_at_max = 3; /* the step boundary, the gradient round, then the step's agreement */
    ck_assert_int_eq(bf_session_step(s, 5, NULL, NULL, &e), BF_EDEVICE);
    ck_assert_str_eq(e.code, "rank_failed");
    ck_assert_ptr_nonnull(strstr(e.message, "in step 2"));
    ck_assert_int_eq(bf_session_step_count(s), 1);
    ck_assert_int_eq(bf_session_read_state(s, "w", &after, NULL), BF_OK);
    ck_assert_mem_eq(bf_tensor_cdata(before), bf_tensor_cdata(after), bf_tensor_nbytes(after));
    bf_tensor_free(before), bf_tensor_free(after);
    /* a cancel on another rank, seen at the next step boundary */
    memset(&F, 0, sizeof(F));
    F.fail_at_max = 1;
    ck_assert_int_eq(bf_session_step(s, 5, NULL, NULL, &e), BF_ECANCELED);
    ck_assert_int_eq(bf_session_step_count(s), 1);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(a_batch_that_does_not_divide) {
    /* 16 images among 3 ranks: parts of 6, 5, 5 (numpy.array_split) */
    int64_t want[3][2] = {{0, 6}, {6, 5}, {11, 5}};
    for (int r = 0; r < 3; r++) {
        int64_t first, count;
        bf_shard_rows(16, r, 3, &first, &count);
        ck_assert_int_eq(first, want[r][0]);
        ck_assert_int_eq(count, want[r][1]);
    }
    bf_context *ctx = ctx_job(2, 3, false);
    bf_session *s = OPEN(ctx, FILTER_PAGE);
    feed_images(ctx, s);
    const char *const fetch[] = {"images"};
    run_ok(s, fetch, 1);
    const bf_tensor *t = bf_session_output(s, "images", NULL);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 5);
    for (int64_t i = 0; i < 125; i++) /* rows 11..15 of the fed batch */
        ck_assert_double_eq(bf_tensor_get_f64(t, i), (double)((11 * 25 + i) % 7) / 4);
    /* a data-parallel backward pass needs equal parts: refused, naming the block */
    bf_grad_options go;
    bf_grad_options_init(&go);
    go.data_parallel = 1;
    char *created = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_build_gradients_opts(s, "loss", NULL, 0, &go, &created, &e),
                     BF_ESHAPE);
    ck_assert_str_eq(e.code, "batch_not_divisible");
    ck_assert_str_eq(e.block_id, "images");
    ck_assert_ptr_nonnull(strstr(e.message, "among 3 ranks"));
    ck_assert_int_eq(bf_page_find_block(bf_session_page(s), "w_grad_allreduce"), -1);
    /* built for 2 ranks, from this job of 3 */
    go.ranks = 2;
    ck_assert_int_eq(bf_session_build_gradients_opts(s, "loss", NULL, 0, &go, &created, &e),
                     BF_OK);
    bf_string_free(created);
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "images", NULL, 1, &ps, NULL), BF_OK);
    ck_assert_int_eq(ps.dims[0], 5); /* back to this job's part */
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EINVAL); /* the first problem */
    ck_assert_str_eq(e.code, "wrong_rank_count");
    ck_assert_str_eq(e.block_id, "w_grad_allreduce");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(dataset_parts) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/d.npy", bf_scratch());
    int64_t n = 10;
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, &n, &t, NULL), BF_OK);
    for (int i = 0; i < 10; i++) ((float *)bf_tensor_data(t))[i] = (float)i;
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    bf_tensor_free(t);
    /* batches of 4 (the last one 2) among 3 ranks: rank 1 takes 1 of each 4, then 1 of 2 */
    bf_context *ctx = ctx_job(1, 3, false);
    bf_session *s = OPEN(ctx, "{\"id\":\"d\",\"type\":\"Dataset\",\"attrs\":{\"file\":\"d.npy\","
                              "\"batch_size\":4,\"shard\":\"batch\"}}],\"outputs\":[\"d\"]}");
    const char *const fetch[] = {"d:batch"};
    double want[3][2] = {{2, -1}, {6, -1}, {9, -1}}; /* [0..3]: 2 | [4..7]: 6 | [8,9]: 9 */
    for (int step = 0; step < 3; step++) {
        bf_step_options so;
        bf_step_options_init(&so);
        so.fetches = fetch, so.n_fetches = 1;
        bf_error e = {0};
        ck_assert_int_eq(bf_session_step(s, 1, &so, NULL, &e), BF_OK);
        const bf_tensor *b = bf_session_output(s, "d", "batch");
        ck_assert_int_eq(bf_tensor_dims(b)[0], 1);
        ck_assert_double_eq(bf_tensor_get_f64(b, 0), want[step][0]);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(checkpoints_compare_the_replicas) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/c.npz", bf_scratch());
    bf_context *ctx = ctx_job(0, 2, false);
    bf_session *s = OPEN(ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3],"
                              "\"value\":0.5}}],\"outputs\":[\"w\"]}");
    ck_assert_int_ge(F.broadcasts, 1); /* rank 0's Variables to every rank */
    bf_error e = {0};
    F.diverge = true;
    ck_assert_int_eq(bf_session_save_state(s, path, &e), BF_EINTERNAL);
    ck_assert_str_eq(e.code, "diverged");
    ck_assert_str_eq(e.block_id, "w");
    ck_assert(!bf_exists(path));
    F.diverge = false;
    ck_assert_int_eq(bf_session_save_state(s, path, &e), BF_OK);
    ck_assert(bf_exists(path));
    bf_session_free(s);
    bf_context_free(ctx);
    /* another rank writes nothing, and reads nothing: rank 0's state comes to it */
    char other[4096];
    snprintf(other, sizeof(other), "%s/other.npz", bf_scratch());
    ctx = ctx_job(1, 2, false);
    s = OPEN(ctx, "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3],"
                  "\"value\":0.5}}],\"outputs\":[\"w\"]}");
    ck_assert_int_eq(bf_session_save_state(s, other, &e), BF_OK);
    ck_assert(!bf_exists(other));
    ck_assert_int_eq(bf_session_load_state(s, "/nonexistent/ckpt.npz", &e), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

int main(void) {
    Suite *su = suite_create("collective");
    TCase *tc = tcase_create("collective");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_process_is_the_identity);
    tcase_add_test(tc, a_page_built_for_other_ranks_is_refused);
    tcase_add_test(tc, one_call_per_round_and_dtype);
    tcase_add_test(tc, deterministic_reduce_gathers_sums_and_broadcasts);
    tcase_add_test(tc, a_failure_on_another_rank_stops_the_run);
    tcase_add_test(tc, data_parallel_gradients_and_a_step);
    tcase_add_test(tc, a_batch_that_does_not_divide);
    tcase_add_test(tc, dataset_parts);
    tcase_add_test(tc, checkpoints_compare_the_replicas);
    suite_add_tcase(su, tc);
    return bf_test_main(su);
}
