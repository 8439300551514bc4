/*
 * test_session.c - sessions (runtime/session.c): checking and shape/dtype inference, cycles,
 * feed errors, the scheduler (fan-out, wide pages, fetch pruning, block:port fetches),
 * incremental re-runs after feeds and attribute changes, the event callback, determinism of
 * the random blocks across sessions and thread counts (and their statistics), cancellation
 * from another thread, timeouts, and the memory and element limits, each failing cleanly and
 * leaving the session usable.
 *
 * Not covered here: the generic input dtype-mask check (dtype_mismatch on a port). Every
 * generic block accepts all dtypes on its inputs (Identity is the only one with an input), and
 * this branch registers no convolution block yet, so no page can reach that check.
 */
#include "bf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

/* ---- helpers ------------------------------------------------------------------------------ */

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static bf_context *ctx_cfg(int threads, uint64_t max_bytes, uint64_t max_elements) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = threads;
    cfg.max_session_bytes = max_bytes;
    cfg.max_tensor_elements = max_elements;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

static bf_session *session_flags(bf_context *ctx, const char *json, unsigned flags) {
    bf_page *page = NULL;
    bf_error e = {0};
    bf_status st = bf_page_parse(ctx, json, strlen(json), "s.json", NULL, flags, &page, NULL,
                                 &e);
    if (st) ck_abort_msg("page does not load: %s %s", e.code, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    return s;
}

static bf_session *session(bf_context *ctx, const char *json) {
    return session_flags(ctx, json, 0);
}

/* Index of block `id` in the page. */
static int idx(bf_session *s, const char *id) {
    const bf_page *p = bf_session_page(s);
    for (int i = 0; i < bf_page_block_count(p); i++)
        if (!strcmp(bf_page_block_id(p, i), id)) return i;
    ck_abort_msg("no block %s", id);
    return -1;
}

static const bf_block_stats *stats(bf_session *s, const char *id) {
    return bf_session_block_stats(s, idx(s, id));
}

static bf_tensor *tensor_2d(bf_dtype dt, int64_t a, int64_t b, double base) {
    int64_t dims[2] = {a, b};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, 2, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < a * b; i++) {
        if (dt == BF_DTYPE_F32) ((float *)bf_tensor_data(t))[i] = (float)(base + (double)i);
        if (dt == BF_DTYPE_I32) ((int32_t *)bf_tensor_data(t))[i] = (int32_t)(base + (double)i);
    }
    return t;
}

static bool same_tensor(const bf_tensor *a, const bf_tensor *b) {
    return a && b && bf_tensor_dtype(a) == bf_tensor_dtype(b) &&
           bf_tensor_rank(a) == bf_tensor_rank(b) && bf_tensor_nbytes(a) == bf_tensor_nbytes(b) &&
           !memcmp(bf_tensor_dims(a), bf_tensor_dims(b),
                   sizeof(int64_t) * (size_t)bf_tensor_rank(a)) &&
           !memcmp(bf_tensor_cdata(a), bf_tensor_cdata(b), bf_tensor_nbytes(a));
}

/* ---- check and inference ------------------------------------------------------------------- */

START_TEST(check_infers_shapes_and_dtypes) {
    bf_context *ctx = ctx_cfg(1, 0, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":["
                  "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2,3],[4,5,6]],"
                  "\"dtype\":\"int64\"}},"
                  "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c\"}},"
                  "{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[-1,3]}},"
                  "{\"id\":\"q\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float16\"}},"
                  "{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[4,1,2],"
                  "\"dtype\":\"float64\"}},"
                  "{\"id\":\"u\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[],"
                  "\"dtype\":\"bfloat16\"}}]}");
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_check(s, d, NULL), BF_OK);
    ck_assert_uint_eq(bf_diags_count(d), 0);
    const bf_block_stats *st = stats(s, "i");
    ck_assert_str_eq(st->id, "i");
    ck_assert_str_eq(st->type, "Identity");
    ck_assert_int_eq(st->n_outputs, 1);
    ck_assert_int_eq(st->dtype[0], BF_DTYPE_I64);
    ck_assert_int_eq(st->rank[0], 2);
    ck_assert_int_eq(st->dims[0][0], 2);
    ck_assert_int_eq(st->dims[0][1], 3);
    ck_assert_int_eq(st->ran, 0);
    st = stats(s, "p");
    ck_assert_int_eq(st->dtype[0], BF_DTYPE_F32);
    ck_assert_int_eq(st->rank[0], 2);
    ck_assert_int_eq(st->dims[0][0], -1);
    ck_assert_int_eq(st->dims[0][1], 3);
    st = stats(s, "q");
    ck_assert_int_eq(st->dtype[0], BF_DTYPE_F16);
    ck_assert_int_eq(st->rank[0], -1);
    st = stats(s, "r");
    ck_assert_int_eq(st->dtype[0], BF_DTYPE_F64);
    ck_assert_int_eq(st->rank[0], 3);
    ck_assert_int_eq(st->dims[0][2], 2);
    st = stats(s, "u");
    ck_assert_int_eq(st->dtype[0], BF_DTYPE_BF16);
    ck_assert_int_eq(st->rank[0], 0);
    ck_assert_int_eq(bf_session_block_output_count(s, 0), 1);
    ck_assert_str_eq(bf_session_block_output_name(s, 0, 0), "output");
    ck_assert_ptr_null(bf_session_block_output_name(s, 0, 1));
    ck_assert_ptr_null(bf_session_block_stats(s, 6));

    /* A feed makes the unknown dimension known. */
    bf_tensor *t = tensor_2d(BF_DTYPE_F32, 5, 3, 0);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_OK);
    bf_tensor_free(t);
    ck_assert_int_eq(bf_session_check(s, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "p")->dims[0][0], 5);
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(check_reports_semantic_errors) {
    bf_context *ctx = ctx_cfg(1, 0, 0);
    /* RandomNormal of an integer dtype: a check-time error naming the attribute. */
    bf_session *s = session(ctx, HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\","
                                      "\"attrs\":{\"shape\":[2],\"dtype\":\"int32\"}},"
                                      "{\"id\":\"k\",\"type\":\"RandomNormal\","
                                      "\"attrs\":{\"shape\":[2,-1]}}]}");
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_EATTR);
    ck_assert_uint_eq(bf_diags_errors(d), 2);
    ck_assert_str_eq(e.code, "bad_attr");
    ck_assert_str_eq(e.block_id, "r");
    ck_assert_str_eq(e.attr, "dtype");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/dtype");
    ck_assert_str_eq(e.page, "s.json");
    const bf_error *k = bf_diags_at(d, 1);
    ck_assert_str_eq(k->block_id, "k");
    ck_assert_str_eq(k->attr, "shape");
    ck_assert_str_eq(k->pointer, "/blocks/1/attrs/shape");
    /* run refuses the same way */
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_EATTR);
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(cycle_reports_every_block_on_it) {
    bf_context *ctx = ctx_cfg(1, 0, 0);
    /* an editor's page: the loader keeps the cycle for the session to report */
    bf_session *s = session_flags(
        ctx, HEAD "\"blocks\":["
                  "{\"id\":\"ok\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1]}},"
                  "{\"id\":\"a\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c\"}},"
                  "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"a\"}},"
                  "{\"id\":\"c\",\"type\":\"Identity\",\"inputs\":{\"input\":\"b:output\"}},"
                  "{\"id\":\"self\",\"type\":\"Identity\",\"inputs\":{\"input\":\"self\"}}],"
                  "\"outputs\":[\"ok\"]}", BF_LOAD_INCOMPLETE);
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "cycle");
    ck_assert_uint_eq(bf_diags_errors(d), 4);
    static const char *const ids[] = {"a", "b", "c", "self"};
    static const char *const ptrs[] = {"/blocks/1", "/blocks/2", "/blocks/3", "/blocks/4"};
    for (size_t i = 0; i < 4; i++) {
        const bf_error *r = bf_diags_at(d, i);
        ck_assert_int_eq(r->status, BF_ESCHEMA);
        ck_assert_str_eq(r->code, "cycle");
        ck_assert_str_eq(r->block_id, ids[i]);
        ck_assert_str_eq(r->pointer, ptrs[i]);
    }
    /* the well-formed block was still inferred, and runs: the cycle is not needed for it */
    ck_assert_int_eq(stats(s, "ok")->rank[0], 1);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    const char *f[] = {"c"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "cycle");
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- feeds -------------------------------------------------------------------------------- */

static const char feed_page[] =
    HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":[2,-1]}},"
         "{\"id\":\"ip\",\"type\":\"Identity\",\"inputs\":{\"input\":\"p\"}},"
         "{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[3],\"seed\":1}},"
         "{\"id\":\"ir\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}}],"
         "\"outputs\":[\"ip\",\"ir\"]}";

START_TEST(feed_errors) {
    bf_context *ctx = ctx_cfg(1, 0, 0);
    bf_session *s = session(ctx, feed_page);
    bf_error e = {0};
    bf_tensor *bad_shape = tensor_2d(BF_DTYPE_F32, 3, 3, 0);
    ck_assert_int_eq(bf_session_feed(s, "p", bad_shape, &e), BF_ESHAPE);
    ck_assert_str_eq(e.code, "shape_mismatch");
    ck_assert_str_eq(e.block_id, "p");
    ck_assert_str_eq(e.attr, "shape");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/shape");
    bf_tensor *bad_rank = NULL;
    int64_t d1[1] = {2};
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d1, &bad_rank, NULL), BF_OK);
    ck_assert_int_eq(bf_session_feed(s, "p", bad_rank, &e), BF_ESHAPE);
    bf_tensor *bad_dtype = tensor_2d(BF_DTYPE_I32, 2, 3, 0);
    ck_assert_int_eq(bf_session_feed(s, "p", bad_dtype, &e), BF_EDTYPE);
    ck_assert_str_eq(e.code, "dtype_mismatch");
    ck_assert_str_eq(e.block_id, "p");
    ck_assert_str_eq(e.attr, "dtype");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/dtype");
    bf_tensor *good = tensor_2d(BF_DTYPE_F32, 2, 7, 1);
    ck_assert_int_eq(bf_session_feed(s, "nobody", good, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.code, "unknown_block");
    ck_assert_int_eq(bf_session_feed(s, "r", good, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "not_feedable");
    ck_assert_str_eq(e.block_id, "r");

    /* Nothing was fed: the run says which placeholder is missing. */
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_run(s, NULL, d, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "missing_feed");
    ck_assert_str_eq(e.block_id, "p");
    ck_assert_str_eq(e.pointer, "/blocks/0");
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    ck_assert_int_eq(stats(s, "r")->ran, 0); /* found before anything ran */

    /* A good feed (the session copies it) and the run succeeds. */
    ck_assert_int_eq(bf_session_feed(s, "p", good, &e), BF_OK);
    ((float *)bf_tensor_data(good))[0] = -99;
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    const bf_tensor *out = bf_session_output(s, "ip", "output");
    ck_assert_int_eq(bf_tensor_dims(out)[1], 7);
    ck_assert_double_eq(bf_tensor_get_f64(out, 0), 1);
    ck_assert_double_eq(bf_tensor_get_f64(out, 13), 14);
    /* A rejected feed keeps the previous one. */
    ck_assert_int_eq(bf_session_feed(s, "p", bad_shape, &e), BF_ESHAPE);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    ck_assert_int_eq(stats(s, "ip")->reused, 1);
    bf_tensor_free(bad_shape);
    bf_tensor_free(bad_rank);
    bf_tensor_free(bad_dtype);
    bf_tensor_free(good);
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- scheduling ---------------------------------------------------------------------------- */

typedef struct event_log {
    int n;
    bf_event_kind kind[512];
    char id[512][16];
} event_log;

static void log_event(bf_event_kind kind, const bf_block_stats *st, void *user) {
    event_log *l = user;
    if (l->n >= 512) return;
    l->kind[l->n] = kind;
    snprintf(l->id[l->n], sizeof(l->id[0]), "%s", st->id);
    l->n++;
}

static int count_events(const event_log *l, bf_event_kind kind, const char *id) {
    int k = 0;
    for (int i = 0; i < l->n; i++) k += l->kind[i] == kind && !strcmp(l->id[i], id);
    return k;
}

static int position(const event_log *l, bf_event_kind kind, const char *id) {
    for (int i = 0; i < l->n; i++)
        if (l->kind[i] == kind && !strcmp(l->id[i], id)) return i;
    return -1;
}

START_TEST(fan_out_runs_the_source_once) {
    /* No generic block takes two inputs, so the "diamond" joins at the fetch list: a feeds b
     * and c, each feeds a leaf, and both leaves are fetched. */
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":["
                  "{\"id\":\"d\",\"type\":\"Identity\",\"inputs\":{\"input\":\"b\"}},"
                  "{\"id\":\"e\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c\"}},"
                  "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"a\"}},"
                  "{\"id\":\"c\",\"type\":\"Identity\",\"inputs\":{\"input\":\"a\"}},"
                  "{\"id\":\"a\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[64],"
                  "\"seed\":3}}],\"outputs\":[\"d\",\"e\"]}");
    event_log log = {0};
    bf_run_options o;
    bf_run_options_init(&o);
    o.on_event = log_event;
    o.user = &log;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    static const char *const ids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_START, ids[i]), 1);
        ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_DONE, ids[i]), 1);
        ck_assert_int_eq(stats(s, ids[i])->ran, 1);
        ck_assert_str_eq(stats(s, ids[i])->device, "cpu");
        ck_assert_int_eq(stats(s, ids[i])->status, BF_OK);
    }
    ck_assert_int_eq(log.n, 10);
    /* dependencies respected: a source is done before its consumer starts */
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "a"),
                     position(&log, BF_EVENT_BLOCK_START, "b"));
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "a"),
                     position(&log, BF_EVENT_BLOCK_START, "c"));
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "b"),
                     position(&log, BF_EVENT_BLOCK_START, "d"));
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "c"),
                     position(&log, BF_EVENT_BLOCK_START, "e"));
    ck_assert(same_tensor(bf_session_output(s, "d", NULL), bf_session_output(s, "a", NULL)));
    ck_assert(same_tensor(bf_session_output(s, "e", NULL), bf_session_output(s, "a", NULL)));

    /* Second run: everything reused, REUSED events only. */
    log.n = 0;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    ck_assert_int_eq(log.n, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_REUSED, ids[i]), 1);
        ck_assert_int_eq(stats(s, ids[i])->reused, 1);
        ck_assert_int_eq(stats(s, ids[i])->ran, 0);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(diamond_joins_once) {
    /* a -> b, a -> c, (b, c) -> d: d starts only after both, a runs once, d = 2a + 1. */
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":["
                  "{\"id\":\"d\",\"type\":\"Add\",\"inputs\":{\"x\":\"b\",\"y\":\"c\"}},"
                  "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"a\"}},"
                  "{\"id\":\"one\",\"type\":\"Const\",\"attrs\":{\"value\":1}},"
                  "{\"id\":\"c\",\"type\":\"Add\",\"inputs\":{\"x\":\"a\",\"y\":\"one\"}},"
                  "{\"id\":\"a\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[5],"
                  "\"seed\":9}}],\"outputs\":[\"d\"]}");
    event_log log = {0};
    bf_run_options o;
    bf_run_options_init(&o);
    o.on_event = log_event;
    o.user = &log;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_START, "a"), 1);
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "b"),
                     position(&log, BF_EVENT_BLOCK_START, "d"));
    ck_assert_int_lt(position(&log, BF_EVENT_BLOCK_DONE, "c"),
                     position(&log, BF_EVENT_BLOCK_START, "d"));
    const bf_tensor *a = bf_session_output(s, "a", NULL), *d = bf_session_output(s, "d", NULL);
    for (int i = 0; i < 5; i++)
        ck_assert_float_eq_tol(((const float *)bf_tensor_cdata(d))[i],
                               2 * ((const float *)bf_tensor_cdata(a))[i] + 1, 1e-6);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(port_dtype_mask) {
    /* Conv2D takes floating tensors only: an int32 input is refused at check time. */
    bf_context *ctx = ctx_cfg(1, 0, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":["
                  "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
                  "\"shape\":[1,2,2,1],\"value\":1}},"
                  "{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,1,1,1],"
                  "\"value\":1}},"
                  "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\","
                  "\"filter\":\"w\"},\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}}"
                  "],\"outputs\":[\"y\"]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_EDTYPE);
    ck_assert_str_eq(e.code, "dtype_mismatch");
    ck_assert_str_eq(e.block_id, "y");
    ck_assert_str_eq(e.port, "input");
    ck_assert_str_eq(e.pointer, "/blocks/2/inputs/input");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(wide_page) {
    enum { N = 64 };
    size_t cap = 64 + N * 200;
    char *json = malloc(cap);
    size_t n = (size_t)snprintf(json, cap, HEAD "\"blocks\":[");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(json + n, cap - n,
                              "%s{\"id\":\"r%d\",\"type\":\"RandomNormal\",\"attrs\":"
                              "{\"shape\":[1000],\"seed\":%d}},"
                              "{\"id\":\"i%d\",\"type\":\"Identity\",\"inputs\":"
                              "{\"input\":\"r%d\"}}",
                              i ? "," : "", i, i, i, i);
    n += (size_t)snprintf(json + n, cap - n, "],\"outputs\":[");
    for (int i = 0; i < N; i++) n += (size_t)snprintf(json + n, cap - n, "%s\"i%d\"", i ? "," : "", i);
    snprintf(json + n, cap - n, "]}");
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(ctx, json);
    free(json);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    for (int i = 0; i < N; i++) {
        char r[16], id[16];
        snprintf(r, sizeof(r), "r%d", i);
        snprintf(id, sizeof(id), "i%d", i);
        ck_assert_int_eq(stats(s, id)->ran, 1);
        ck_assert(same_tensor(bf_session_output(s, id, NULL), bf_session_output(s, r, NULL)));
        if (i) { /* different seeds, different tensors */
            char prev[16];
            snprintf(prev, sizeof(prev), "r%d", i - 1);
            ck_assert(!same_tensor(bf_session_output(s, r, NULL),
                                   bf_session_output(s, prev, NULL)));
        }
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(fetch_pruning_and_ports) {
    bf_context *ctx = ctx_cfg(1, 0, 0);
    bf_session *s = session(ctx, feed_page);
    /* ip needs the unfed placeholder p; fetching only ir must neither run nor need p. */
    const char *f1[] = {"ir"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f1;
    o.n_fetches = 1;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(stats(s, "r")->ran, 1);
    ck_assert_int_eq(stats(s, "ir")->ran, 1);
    ck_assert_int_eq(stats(s, "p")->ran, 0);
    ck_assert_int_eq(stats(s, "ip")->ran, 0);
    ck_assert_ptr_null(bf_session_output(s, "ip", NULL));
    ck_assert_ptr_nonnull(bf_session_output(s, "ir", "output"));
    ck_assert_ptr_null(bf_session_output(s, "ir", "grad"));
    ck_assert_ptr_null(bf_session_output(s, "zz", NULL));

    /* block:port fetch: only r runs... and it is already up to date. */
    const char *f2[] = {"r:output"};
    o.fetches = f2;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(stats(s, "r")->reused, 1);
    ck_assert_int_eq(stats(s, "ir")->reused, 0);
    ck_assert_int_eq(stats(s, "ir")->ran, 0);

    /* Bad fetches. */
    static const char *const bad[] = {"nope", "r:nope", "r:", ""};
    for (int i = 0; i < 4; i++) {
        const char *f3[] = {bad[i]};
        o.fetches = f3;
        bf_error_clear(&e);
        ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_ENOTFOUND);
        ck_assert_str_eq(e.code, "bad_fetch");
        ck_assert_str_eq(e.page, "s.json");
    }
    /* The page's own outputs include ip: missing feed. */
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "missing_feed");
    bf_session_free(s);

    /* No outputs and no fetches: nothing to do. */
    s = session(ctx, HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":"
                          "{\"shape\":[1]}}]}");
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "no_fetch");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- incremental runs ---------------------------------------------------------------------- */

START_TEST(feed_reruns_only_downstream) {
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(ctx, feed_page);
    bf_tensor *t = tensor_2d(BF_DTYPE_F32, 2, 2, 10);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(bf_session_block_stats(s, i)->ran, 1);
    bf_tensor_free(t);
    t = tensor_2d(BF_DTYPE_F32, 2, 2, 20);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_OK);
    ck_assert_ptr_null(bf_session_output(s, "ip", NULL)); /* invalidated at once */
    ck_assert_ptr_nonnull(bf_session_output(s, "ir", NULL));
    event_log log = {0};
    bf_run_options o;
    bf_run_options_init(&o);
    o.on_event = log_event;
    o.user = &log;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "p")->ran, 1);
    ck_assert_int_eq(stats(s, "ip")->ran, 1);
    ck_assert_int_eq(stats(s, "r")->ran, 0);
    ck_assert_int_eq(stats(s, "r")->reused, 1);
    ck_assert_int_eq(stats(s, "ir")->reused, 1);
    ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_START, "p"), 1);
    ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_DONE, "ip"), 1);
    ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_REUSED, "ir"), 1);
    ck_assert_int_eq(count_events(&log, BF_EVENT_BLOCK_START, "r"), 0);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "ip", NULL), 3), 23);
    bf_tensor_free(t);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(set_attr_reruns_it_and_downstream) {
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(ctx, feed_page);
    bf_tensor *t = tensor_2d(BF_DTYPE_F32, 2, 2, 10);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_OK);
    bf_tensor_free(t);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    bf_tensor *before = NULL;
    ck_assert_int_eq(bf_tensor_copy(bf_session_output(s, "ir", NULL), &before, NULL), BF_OK);

    ck_assert_int_eq(bf_session_set_attr(s, "r", "seed", "2", NULL), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "r")->ran, 1);
    ck_assert_int_eq(stats(s, "ir")->ran, 1);
    ck_assert_int_eq(stats(s, "p")->reused, 1);
    ck_assert_int_eq(stats(s, "ip")->reused, 1);
    ck_assert(!same_tensor(before, bf_session_output(s, "ir", NULL)));
    /* back to seed 1: the original values exactly */
    ck_assert_int_eq(bf_session_set_attr(s, "r", "seed", "1", NULL), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert(same_tensor(before, bf_session_output(s, "ir", NULL)));
    /* the shape changes the output shape */
    ck_assert_int_eq(bf_session_set_attr(s, "r", "shape", "[2,5]", NULL), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_numel(bf_session_output(s, "ir", NULL)), 10);
    ck_assert_int_eq(bf_session_set_attr(s, "r", "shape", "[3]", NULL), BF_OK);

    /* Errors keep the old value and the cached results. */
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_set_attr(s, "r", "sead", "3", &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.code, "unknown_attr");
    ck_assert_str_eq(e.block_id, "r");
    ck_assert_str_eq(e.attr, "sead");
    ck_assert_int_eq(bf_session_set_attr(s, "r", "seed", "\"abc\"", &e), BF_EATTR);
    ck_assert_str_eq(e.code, "bad_attr");
    ck_assert_str_eq(e.block_id, "r");
    ck_assert_str_eq(e.attr, "seed");
    ck_assert_str_eq(e.pointer, "/blocks/2/attrs/seed");
    ck_assert_int_eq(bf_session_set_attr(s, "r", "seed", "{", &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_json");
    ck_assert_int_eq(bf_session_set_attr(s, "zz", "seed", "1", &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.code, "unknown_block");
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(bf_session_block_stats(s, i)->reused, 1);
    ck_assert(same_tensor(before, bf_session_output(s, "ir", NULL)));
    bf_tensor_free(before);
    bf_session_free(s);

    /* A Const whose init rejects the new value keeps its old value and state. */
    s = session(ctx, HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":"
                          "{\"shape\":[2],\"value\":[1,2]}}],\"outputs\":[\"c\"]}");
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert_int_eq(bf_session_set_attr(s, "c", "value", "[1,2,3]", &e), BF_ESHAPE);
    ck_assert_str_eq(e.code, "shape_mismatch");
    ck_assert_str_eq(e.block_id, "c");
    ck_assert_str_eq(e.attr, "value");
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "c", NULL), 1), 2);
    ck_assert_int_eq(bf_session_set_attr(s, "c", "value", "[7,8]", &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    ck_assert_int_eq(stats(s, "c")->ran, 1);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "c", NULL), 1), 8);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- random blocks ------------------------------------------------------------------------- */

static bf_tensor *random_result(int threads, const char *type, int seed) {
    char json[512];
    snprintf(json, sizeof(json),
             HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"%s\",\"attrs\":{\"shape\":[300,1000],"
                  "\"seed\":%d}}],\"outputs\":[\"r\"]}",
             type, seed);
    bf_context *ctx = ctx_cfg(threads, 0, 0);
    bf_session *s = session(ctx, json);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    bf_tensor *copy = NULL;
    ck_assert_int_eq(bf_tensor_copy(bf_session_output(s, "r", NULL), &copy, NULL), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
    return copy;
}

START_TEST(random_is_deterministic) {
    static const char *const types[] = {"RandomNormal", "RandomUniform"};
    for (int k = 0; k < 2; k++) {
        bf_tensor *a = random_result(1, types[k], 42);
        bf_tensor *b = random_result(4, types[k], 42);
        bf_tensor *c = random_result(4, types[k], 43);
        ck_assert(same_tensor(a, b));
        ck_assert(!same_tensor(a, c));
        bf_tensor_free(a);
        bf_tensor_free(b);
        bf_tensor_free(c);
    }
}
END_TEST

static void moments(const bf_tensor *t, double *mean, double *sd, double *lo, double *hi) {
    int64_t n = bf_tensor_numel(t);
    double s = 0, s2 = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = bf_tensor_get_f64(t, i);
        s += v;
        s2 += v * v;
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

START_TEST(random_statistics) {
    bf_context *ctx = ctx_cfg(2, 0, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":[{\"id\":\"n\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                  "[100000],\"mean\":2,\"stddev\":3,\"seed\":9,\"dtype\":\"float64\"}},"
                  "{\"id\":\"u\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[100000],"
                  "\"minval\":-1,\"maxval\":3,\"seed\":9}}],\"outputs\":[\"n\",\"u\"]}");
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
    double mean, sd, lo, hi;
    /* standard errors: mean 3/sqrt(1e5) ~ 0.0095, sd ~ 0.0067: 5 sigma bounds */
    moments(bf_session_output(s, "n", NULL), &mean, &sd, &lo, &hi);
    ck_assert_double_eq_tol(mean, 2.0, 0.05);
    ck_assert_double_eq_tol(sd, 3.0, 0.04);
    ck_assert_double_lt(lo, 2.0 - 3 * 3.5); /* tails exist: P(|z|>3.5) * 1e5 ~ 46 */
    ck_assert_double_gt(hi, 2.0 + 3 * 3.5);
    /* uniform on [-1, 3): mean 1, sd 4/sqrt(12) = 1.1547 */
    moments(bf_session_output(s, "u", NULL), &mean, &sd, &lo, &hi);
    ck_assert_double_eq_tol(mean, 1.0, 0.02);
    ck_assert_double_eq_tol(sd, 4.0 / sqrt(12.0), 0.01);
    ck_assert_double_ge(lo, -1.0);
    ck_assert_double_lt(hi, 3.0);
    ck_assert_double_lt(lo, -0.999);
    ck_assert_double_gt(hi, 2.999);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- cancellation, timeouts, limits ----------------------------------------------------------- */

/* A page of `n` RandomNormal blocks of 4M float32 elements each, all fetched. */
static char *big_page(int n) {
    size_t cap = 128 + (size_t)n * 128;
    char *json = malloc(cap);
    size_t k = (size_t)snprintf(json, cap, HEAD "\"blocks\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(json + k, cap - k,
                              "%s{\"id\":\"b%d\",\"type\":\"RandomNormal\",\"attrs\":"
                              "{\"shape\":[4194304],\"seed\":%d}}",
                              i ? "," : "", i, i);
    k += (size_t)snprintf(json + k, cap - k, ",{\"id\":\"small\",\"type\":\"RandomNormal\","
                                             "\"attrs\":{\"shape\":[4]}}],\"outputs\":[");
    for (int i = 0; i < n; i++) k += (size_t)snprintf(json + k, cap - k, "%s\"b%d\"", i ? "," : "", i);
    snprintf(json + k, cap - k, "]}");
    return json;
}

typedef struct canceller {
    bf_session *s;
    int delay_ms;
    double at; /* when cancel was called */
} canceller;

static void cancel_later(void *arg) {
    canceller *c = arg;
    struct timespec ts = {0, (long)c->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    c->at = uv_hrtime() / 1e9;
    bf_session_cancel(c->s);
}

START_TEST(cancel_from_another_thread) {
    bf_context *ctx = ctx_cfg(2, 0, 0);
    char *json = big_page(24);
    bf_session *s = session(ctx, json);
    free(json);
    bf_session_cancel(s); /* a no-op when nothing runs */
    canceller c = {s, 30, 0};
    uv_thread_t th;
    ck_assert_int_eq(uv_thread_create(&th, cancel_later, &c), 0);
    bf_error e = {0};
    bf_diags *d = bf_diags_new();
    bf_status st = bf_session_run(s, NULL, d, &e);
    double end = uv_hrtime() / 1e9;
    uv_thread_join(&th);
    ck_assert_int_eq(st, BF_ECANCELED);
    ck_assert_str_eq(e.code, "cancelled");
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    /* Running kernels finish their block; nothing new starts. */
    ck_assert_double_lt(end - c.at, 1.0);
    int ran = 0;
    for (int i = 0; i < 24; i++) ran += bf_session_block_stats(s, i)->ran;
    ck_assert_int_lt(ran, 24);

    /* The session is usable: a small fetch runs. */
    const char *f[] = {"small"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_ptr_nonnull(bf_session_output(s, "small", NULL));
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(timeout) {
    bf_context *ctx = ctx_cfg(2, 0, 0);
    char *json = big_page(24);
    bf_session *s = session(ctx, json);
    free(json);
    bf_run_options o;
    bf_run_options_init(&o);
    o.timeout_s = 0.005;
    bf_error e = {0};
    double t0 = uv_hrtime() / 1e9;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_ETIMEDOUT);
    ck_assert_double_lt(uv_hrtime() / 1e9 - t0, 1.5);
    ck_assert_str_eq(e.code, "timeout");
    /* usable afterwards */
    const char *f[] = {"small"};
    o.fetches = f;
    o.n_fetches = 1;
    o.timeout_s = 10;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(memory_limit) {
    bf_context *ctx = ctx_cfg(1, 1 << 20, 0);
    bf_session *s = session(
        ctx, HEAD "\"blocks\":[{\"id\":\"small\",\"type\":\"RandomNormal\",\"attrs\":"
                  "{\"shape\":[1000]}},{\"id\":\"big\",\"type\":\"RandomNormal\",\"attrs\":"
                  "{\"shape\":[1024,1024]}}],\"outputs\":[\"small\",\"big\"]}");
    bf_error e = {0};
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_run(s, NULL, d, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "memory_limit");
    ck_assert_str_eq(e.block_id, "big");
    ck_assert_str_eq(e.pointer, "/blocks/1");
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    ck_assert_int_eq(stats(s, "big")->status, BF_ELIMIT);
    ck_assert_ptr_null(bf_session_output(s, "big", NULL));
    /* still usable: the small block alone, and after shrinking the big one, the whole page */
    const char *f[] = {"small"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_set_attr(s, "big", "shape", "[1024,64]", &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_numel(bf_session_output(s, "big", NULL)), 65536);
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(element_limit_and_huge_shapes) {
    bf_context *ctx = ctx_cfg(1, 0, 1000);
    bf_session *s = session(ctx, HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\","
                                      "\"attrs\":{\"shape\":[100,100]}},{\"id\":\"ok\","
                                      "\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1000]}}],"
                                      "\"outputs\":[\"r\",\"ok\"]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "too_large");
    ck_assert_str_eq(e.block_id, "r");
    /* Only the blocks a run needs must be free of problems: fetching "ok" alone runs while
     * "r" is still an error; once "r" is fixed, the whole page runs. */
    const char *f[] = {"ok"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_ELIMIT);
    ck_assert_int_eq(bf_session_set_attr(s, "r", "shape", "[10,10]", &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);

    /* 10^18 elements: refused before any allocation, at once. */
    ctx = ctx_cfg(1, 0, 0);
    s = session(ctx, HEAD "\"blocks\":[{\"id\":\"h\",\"type\":\"RandomNormal\",\"attrs\":"
                          "{\"shape\":[1000000,1000000,1000000]}},{\"id\":\"o\",\"type\":"
                          "\"RandomNormal\",\"attrs\":{\"shape\":[1000000000000,1000000000000,1000000000000]}}]}");
    /* both are reported by the run's whole-page check, at once and before any allocation */
    static const char *const ids[] = {"h", "o"};
    bf_diags *d = bf_diags_new();
    double t0 = uv_hrtime() / 1e9;
    bf_error_clear(&e);
    ck_assert_int_eq(bf_session_run(s, NULL, d, &e), BF_ELIMIT);
    ck_assert_double_lt(uv_hrtime() / 1e9 - t0, 0.5);
    ck_assert_uint_eq(bf_diags_errors(d), 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_str_eq(bf_diags_at(d, (size_t)i)->code, "too_large");
        ck_assert_str_eq(bf_diags_at(d, (size_t)i)->block_id, ids[i]);
    }
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, check_infers_shapes_and_dtypes);
    tcase_add_test(tc, check_reports_semantic_errors);
    tcase_add_test(tc, cycle_reports_every_block_on_it);
    tcase_add_test(tc, feed_errors);
    tcase_add_test(tc, fan_out_runs_the_source_once);
    tcase_add_test(tc, wide_page);
    tcase_add_test(tc, diamond_joins_once);
    tcase_add_test(tc, port_dtype_mask);
    tcase_add_test(tc, fetch_pruning_and_ports);
    tcase_add_test(tc, feed_reruns_only_downstream);
    tcase_add_test(tc, set_attr_reruns_it_and_downstream);
    tcase_add_test(tc, random_is_deterministic);
    tcase_add_test(tc, random_statistics);
    tcase_add_test(tc, cancel_from_another_thread);
    tcase_add_test(tc, timeout);
    tcase_add_test(tc, memory_limit);
    tcase_add_test(tc, element_limit_and_huge_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
