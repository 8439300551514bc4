/*
 * test_train.c - the training runtime (runtime/state.c, grad.c, grad_check.c, npz.c, the
 * Variable block) through the public API: step semantics (every read sees the start-of-step
 * value, one update per Variable, a failed or cancelled step commits nothing), the state an
 * edit keeps or re-initialises, reset, reading and writing state, .npz checkpoints (round
 * trip, all-or-nothing restore, hostile archives), the Variable's initializers, the
 * whole-page gradient call and its errors, and the whole-page gradient check (a correct and a
 * wrong hand-wired backward pass).
 *
 * Numbers: AssignAdd/ApplyGradientDescent on small exact values (k/4), compared exactly;
 * gradients against a float64 reference computed here (the filter gradient of a ones dy is
 * the sum of the input windows), within 1e-5 relative for float32.
 */
#include "bf_test.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

static bf_context *ctx_new(uint64_t mem) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    cfg.max_session_bytes = mem;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
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

static double state_at(bf_session *s, const char *id, int64_t i) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_session_read_state(s, id, &t, &e) == BF_OK, "%s", e.message);
    double v = bf_tensor_get_f64(t, i);
    bf_tensor_free(t);
    return v;
}

static void step_ok(bf_session *s, int64_t n) {
    bf_error e = {0};
    bf_status st = bf_session_step(s, n, NULL, NULL, &e);
    ck_assert_msg(st == BF_OK, "step: %s: %s", e.code, e.message);
}

/* w = [1, 2], grown by c = [10, 10] every step; r reads w (page order: r after the update). */
#define COUNTER                                                                                 \
    "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,2]}},"                         \
    "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[10,10]}},"                          \
    "{\"id\":\"up\",\"type\":\"AssignAdd\",\"inputs\":{\"ref\":\"w\",\"value\":\"c\"}},"       \
    "{\"id\":\"r\",\"type\":\"Identity\",\"inputs\":{\"input\":\"w\"}}"

START_TEST(reads_see_the_start_of_step) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER "],\"outputs\":[\"r\",\"up\"]}");
    ck_assert_int_eq(bf_session_step_count(s), 0);
    step_ok(s, 1);
    /* the step's r read w before the commit, wherever the blocks ran */
    const bf_tensor *r = bf_session_output(s, "r", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_double_eq(bf_tensor_get_f64(r, 0), 1);
    ck_assert_double_eq(bf_tensor_get_f64(r, 1), 2);
    const bf_tensor *up = bf_session_output(s, "up", NULL);
    ck_assert_double_eq(bf_tensor_get_f64(up, 1), 12);
    ck_assert_double_eq(state_at(s, "w", 0), 11);
    ck_assert_int_eq(bf_session_step_count(s), 1);
    step_ok(s, 3);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "r", NULL), 0), 31);
    ck_assert_double_eq(state_at(s, "w", 0), 41);
    ck_assert_int_eq(bf_session_step_count(s), 4);
    /* a plain run evaluates without committing */
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "r", NULL), 0), 41);
    ck_assert_double_eq(state_at(s, "w", 0), 41);
    ck_assert_int_eq(bf_session_step_count(s), 4);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static int64_t seen_steps[16];
static double seen_metric[16];
static int n_seen;

static int stop_at_3(int64_t step, const double *m, int n, void *user) {
    (void)user;
    ck_assert_int_eq(n, 1);
    seen_steps[n_seen] = step;
    seen_metric[n_seen++] = m[0];
    return step == 3;
}

START_TEST(callback_metrics_and_early_stop) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER "],\"outputs\":[\"r\"]}");
    bf_step_options o;
    bf_step_options_init(&o);
    o.on_step = stop_at_3;
    n_seen = 0;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_step(s, 10, &o, NULL, &e), BF_OK);
    ck_assert_int_eq(n_seen, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(seen_steps[i], i + 1);
        ck_assert_double_eq(seen_metric[i], 1 + 10 * i); /* r[0] at the start of step i+1 */
    }
    ck_assert_int_eq(bf_session_step_count(s), 3);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static void cancel_on_w(bf_event_kind kind, const bf_block_stats *st, void *user) {
    bf_session *s = user;
    if (kind == BF_EVENT_BLOCK_DONE && !strcmp(st->id, "w") && bf_session_step_count(s) == 2)
        bf_session_cancel(s);
}

START_TEST(cancel_inside_a_step) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER "],\"outputs\":[\"r\"]}");
    bf_step_options o;
    bf_step_options_init(&o);
    o.on_event = cancel_on_w;
    o.user = s;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_step(s, 10, &o, NULL, &e), BF_ECANCELED);
    ck_assert_int_eq(bf_session_step_count(s), 2);
    ck_assert_double_eq(state_at(s, "w", 0), 21); /* the cancelled third step committed nothing */
    step_ok(s, 1); /* and the session goes on */
    ck_assert_double_eq(state_at(s, "w", 0), 31);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(failed_step_commits_nothing) {
    bf_context *ctx = ctx_new(4096);
    /* big needs 8 KB: over the session's 4 KB, so the step fails after the update ran */
    bf_session *s = OPEN(ctx, COUNTER ",{\"id\":\"big\",\"type\":\"RandomNormal\",\"attrs\":"
                              "{\"shape\":[2048],\"dtype\":\"float32\"}},"
                              "{\"id\":\"sum\",\"type\":\"Add\",\"inputs\":{\"x\":\"big\","
                              "\"y\":\"big\"}}],\"outputs\":[\"up\",\"sum\"]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_step(s, 1, NULL, NULL, &e), BF_ELIMIT);
    ck_assert_int_eq(bf_session_step_count(s), 0);
    ck_assert_double_eq(state_at(s, "w", 0), 1);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(one_update_per_variable_and_refs_to_variables) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER ",{\"id\":\"up2\",\"type\":\"AssignSub\",\"inputs\":"
                              "{\"ref\":\"w\",\"value\":\"c\"}}],\"outputs\":[\"r\"]}");
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    ck_assert_int_eq(bf_session_step(s, 1, NULL, d, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "double_update");
    ck_assert_str_eq(e.block_id, "up2");
    ck_assert_str_eq(e.port, "ref");
    ck_assert_ptr_nonnull(strstr(e.message, "\"up\""));
    ck_assert_int_eq(bf_session_step_count(s), 0);
    bf_session_free(s);
    bf_diags_clear(d);
    s = OPEN(ctx, COUNTER ",{\"id\":\"up3\",\"type\":\"AssignAdd\",\"inputs\":"
                  "{\"ref\":\"c\",\"value\":\"c\"}}],\"outputs\":[\"r\"]}");
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "ref_not_variable");
    ck_assert_str_eq(e.block_id, "up3");
    ck_assert_str_eq(e.pointer, "/blocks/4/inputs/ref");
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(edits_keep_state_or_say_they_reset_it) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER "],\"outputs\":[\"r\"]}");
    step_ok(s, 2);
    bf_error e = {0};
    bf_diags *d = bf_diags_new();
    /* a knob (the Const) changes: the Variable and the step count stay */
    const char *knob = "[{\"op\":\"set_attr\",\"block\":\"c\",\"attr\":\"value\",\"value\":[1,1]}]";
    ck_assert_int_eq(bf_session_apply_edits(s, knob, strlen(knob), d, &e), BF_OK);
    ck_assert_int_eq(bf_diags_count(d), 0);
    ck_assert_double_eq(state_at(s, "w", 0), 21);
    step_ok(s, 1);
    ck_assert_double_eq(state_at(s, "w", 0), 22);
    ck_assert_int_eq(bf_session_step_count(s), 3);
    /* its trainable flag changes: kept too */
    const char *tr = "[{\"op\":\"set_attr\",\"block\":\"w\",\"attr\":\"trainable\",\"value\":false}]";
    ck_assert_int_eq(bf_session_apply_edits(s, tr, strlen(tr), d, &e), BF_OK);
    ck_assert_int_eq(bf_diags_count(d), 0);
    ck_assert_double_eq(state_at(s, "w", 0), 22);
    /* its own initial value changes: re-initialised, and the edit says so */
    const char *re = "[{\"op\":\"set_attr\",\"block\":\"w\",\"attr\":\"value\",\"value\":[5,6]},"
                     "{\"op\":\"set_ui\",\"block\":\"w\",\"ui\":{\"x\":1}}]";
    ck_assert_int_eq(bf_session_apply_edits(s, re, strlen(re), d, &e), BF_OK);
    ck_assert_int_eq(bf_diags_count(d), 1);
    ck_assert_int_eq(bf_diags_errors(d), 0);
    const bf_error *w = bf_diags_at(d, 0);
    ck_assert_str_eq(w->code, "state_reset");
    ck_assert_str_eq(w->block_id, "w");
    ck_assert_str_eq(w->attr, "value");
    ck_assert_double_eq(state_at(s, "w", 0), 5);
    ck_assert_int_eq(bf_session_step_count(s), 3);
    /* reset: every state from its initializer, step 0 */
    step_ok(s, 1);
    ck_assert_int_eq(bf_session_reset(s, &e), BF_OK);
    ck_assert_double_eq(state_at(s, "w", 1), 6);
    ck_assert_int_eq(bf_session_step_count(s), 0);
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(read_and_write_state) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, COUNTER "],\"outputs\":[\"r\"]}");
    ck_assert_int_eq(bf_session_state_count(s), 1);
    ck_assert_str_eq(bf_session_state_id(s, 0), "w");
    ck_assert_ptr_null(bf_session_state_id(s, 1));
    bf_error e = {0};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_session_read_state(s, "c", &t, &e), BF_EINVAL);
    ck_assert_str_eq(e.code, "no_state");
    ck_assert_int_eq(bf_session_read_state(s, "nope", &t, &e), BF_ENOTFOUND);
    int64_t dims[1] = {2};
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F32, 1, dims, &t, NULL), BF_OK);
    ((float *)bf_tensor_data(t))[0] = 7;
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK); /* r cached: 1 */
    ck_assert_int_eq(bf_session_write_state(s, "w", t, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "r", NULL), 0), 7); /* recomputed */
    bf_tensor_free(t);
    int64_t three[1] = {3};
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F32, 1, three, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_session_write_state(s, "w", t, &e), BF_ESHAPE);
    ck_assert_str_eq(e.block_id, "w");
    bf_tensor_free(t);
    ck_assert_int_eq(bf_tensor_new(ctx, BF_DTYPE_F64, 1, dims, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_session_write_state(s, "w", t, &e), BF_EDTYPE);
    bf_tensor_free(t);
    ck_assert_double_eq(state_at(s, "w", 0), 7);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

#define TWO_VARS                                                                                \
    "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"value\":[1,2,3]}},"                       \
    "{\"id\":\"b\",\"type\":\"Variable\",\"attrs\":{\"shape\":[2,2],\"dtype\":\"float64\","     \
    "\"initializer\":\"ones\"}},"                                                               \
    "{\"id\":\"ca\",\"type\":\"Const\",\"attrs\":{\"value\":[1,1,1]}},"                         \
    "{\"id\":\"cb\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\",\"shape\":[2,2],"      \
    "\"value\":0.5}},"                                                                          \
    "{\"id\":\"ua\",\"type\":\"AssignAdd\",\"inputs\":{\"ref\":\"a\",\"value\":\"ca\"}},"      \
    "{\"id\":\"ub\",\"type\":\"AssignAdd\",\"inputs\":{\"ref\":\"b\",\"value\":\"cb\"}}"

START_TEST(checkpoints_round_trip_all_or_nothing) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, TWO_VARS "],\"outputs\":[]}");
    step_ok(s, 3);
    bf_error e = {0};
    char ck[4096];
    snprintf(ck, sizeof(ck), "%s", bf_sp("ck.npz"));
    ck_assert_int_eq(bf_session_save_state(s, ck, &e), BF_OK);
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_load_npz(ctx, ck, ".step", &t, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_I64);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), 3);
    bf_tensor_free(t);
    ck_assert_int_eq(bf_tensor_load_npz(ctx, ck, "b", &t, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F64);
    ck_assert_double_eq(bf_tensor_get_f64(t, 3), 2.5);
    bf_tensor_free(t);
    ck_assert_int_eq(bf_tensor_load_npz(ctx, ck, "zz", &t, &e), BF_ENOTFOUND);
    ck_assert_int_eq(bf_session_reset(s, &e), BF_OK);
    ck_assert_int_eq(bf_session_load_state(s, ck, &e), BF_OK);
    ck_assert_int_eq(bf_session_step_count(s), 3);
    ck_assert_double_eq(state_at(s, "a", 2), 6);
    ck_assert_double_eq(state_at(s, "b", 0), 2.5);
    step_ok(s, 1);
    ck_assert_int_eq(bf_session_step_count(s), 4);
    bf_session_free(s);

    /* the same ids with another shape of b: refused, and a (loaded first) is put back */
    s = OPEN(ctx, "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"value\":[0,0,0]}},"
                  "{\"id\":\"b\",\"type\":\"Variable\",\"attrs\":{\"shape\":[4],\"dtype\":"
                  "\"float64\"}}],\"outputs\":[]}");
    ck_assert_int_eq(bf_session_load_state(s, ck, &e), BF_ESHAPE);
    ck_assert_str_eq(e.block_id, "b");
    ck_assert_double_eq(state_at(s, "a", 2), 0);
    ck_assert_int_eq(bf_session_step_count(s), 0);
    bf_session_free(s);
    /* a key that names no state */
    s = OPEN(ctx, "{\"id\":\"a\",\"type\":\"Variable\",\"attrs\":{\"value\":[0,0,0]}}],"
                  "\"outputs\":[]}");
    ck_assert_int_eq(bf_session_load_state(s, ck, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.code, "unknown_state");
    ck_assert_double_eq(state_at(s, "a", 0), 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(hostile_checkpoints) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, TWO_VARS "],\"outputs\":[]}");
    bf_error e = {0};
    char ck[4096];
    snprintf(ck, sizeof(ck), "%s", bf_sp("ck.npz"));
    ck_assert_int_eq(bf_session_save_state(s, ck, &e), BF_OK);
    size_t len = 0;
    char *z = bf_read_file(ck, &len);
    ck_assert_ptr_nonnull(z);
    /* truncations at every length: an error, never a crash, and the state unchanged */
    for (size_t cut = 0; cut < len; cut += 7) {
        bf_write_bytes(bf_sp("cut.npz"), z, cut);
        bf_status st = bf_session_load_state(s, bf_sp("cut.npz"), &e);
        ck_assert_msg(st != BF_OK, "a %zu-byte prefix loaded", cut);
        ck_assert_double_eq(state_at(s, "a", 0), 1);
    }
    /* flipped bytes: never a crash (most are errors; a flip inside data may load) */
    for (size_t at = 0; at < len; at += 5) {
        char *m = malloc(len);
        memcpy(m, z, len);
        m[at] ^= 0x5a;
        bf_write_bytes(bf_sp("flip.npz"), m, len);
        (void)bf_session_load_state(s, bf_sp("flip.npz"), &e);
        free(m);
    }
    free(z);
    ck_assert_int_eq(bf_session_load_state(s, bf_sp("absent.npz"), &e), BF_EIO);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(variable_initializers) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx,
        "{\"id\":\"g\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,4,8],\"initializer\":"
        "\"glorot_uniform\",\"seed\":5}},"
        "{\"id\":\"g2\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,4,8],\"initializer\":"
        "\"glorot_uniform\",\"seed\":5}},"
        "{\"id\":\"t\",\"type\":\"Variable\",\"attrs\":{\"shape\":[4096],\"initializer\":"
        "\"truncated_normal\",\"stddev\":0.5,\"mean\":1}},"
        "{\"id\":\"u\",\"type\":\"Variable\",\"attrs\":{\"shape\":[4096],\"initializer\":"
        "\"random_uniform\",\"minval\":-3,\"maxval\":-2,\"dtype\":\"float64\"}}],\"outputs\":[]}");
    /* glorot_uniform: |v| <= sqrt(6 / (fan_in + fan_out)), fans 3*3*4 and 3*3*8 */
    double lim = sqrt(6.0 / (36 + 72)), mx = 0;
    bf_tensor *a = NULL, *b = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_read_state(s, "g", &a, &e), BF_OK);
    ck_assert_int_eq(bf_session_read_state(s, "g2", &b, &e), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(a); i++) {
        double v = bf_tensor_get_f64(a, i);
        ck_assert(fabs(v) <= lim * (1 + 1e-6));
        mx = fmax(mx, fabs(v));
        ck_assert_double_eq(v, bf_tensor_get_f64(b, i)); /* same seed, same numbers */
    }
    ck_assert(mx > 0.8 * lim); /* the whole range is used */
    bf_tensor_free(a), bf_tensor_free(b);
    ck_assert_int_eq(bf_session_read_state(s, "t", &a, &e), BF_OK);
    double sum = 0;
    for (int64_t i = 0; i < 4096; i++) {
        double v = bf_tensor_get_f64(a, i);
        ck_assert(fabs(v - 1) <= 1.0 + 1e-6); /* within 2 stddev */
        sum += v;
    }
    ck_assert(fabs(sum / 4096 - 1) < 0.05);
    bf_tensor_free(a);
    ck_assert_int_eq(bf_session_read_state(s, "u", &a, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_dtype(a), BF_DTYPE_F64);
    for (int64_t i = 0; i < 4096; i++) {
        double v = bf_tensor_get_f64(a, i);
        ck_assert(v >= -3 && v < -2);
    }
    bf_tensor_free(a);
    bf_session_free(s);
    /* errors name the attribute */
    bf_session *bad = NULL;
    ck_assert_int_eq(try_open(ctx, &bad, &e, "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":"
                              "{\"value\":[1],\"initializer\":\"ones\"}}]}"), BF_EATTR);
    ck_assert_str_eq(e.attr, "initializer");
    ck_assert_int_eq(try_open(ctx, &bad, &e, "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":"
                              "{\"shape\":[2],\"dtype\":\"int32\"}}]}"), BF_EATTR);
    ck_assert_str_eq(e.attr, "dtype");
    ck_assert_int_eq(try_open(ctx, &bad, &e, "{\"id\":\"v\",\"type\":\"Variable\"}]}"),
                     BF_EATTR);
    ck_assert_str_eq(e.attr, "shape");
    ck_assert_int_eq(try_open(ctx, &bad, &e, "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":"
                              "{\"shape\":[2,-1]}}]}"), BF_EATTR);
    ck_assert_int_eq(try_open(ctx, &bad, &e, "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":"
                              "{\"shape\":[2],\"initializer\":\"random_uniform\",\"minval\":1,"
                              "\"maxval\":1}}]}"), BF_EATTR);
    ck_assert_str_eq(e.attr, "maxval");
    bf_context_free(ctx);
}
END_TEST

/* x: [1,5,5,1] of k/8, w: a 3x3 Variable; loss = conv(x, w) (VALID, its sum is the loss). */
#define CONV_PAGE(pad)                                                                          \
    "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,5,5,1],\"value\":[1,2,3,4,5,6,"  \
    "7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]}},"                                 \
    "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,1,1],\"initializer\":"     \
    "\"glorot_uniform\"}},"                                                                     \
    "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"      \
    "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"" pad "\"}}"

START_TEST(build_gradients_and_train) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, CONV_PAGE("VALID") "],\"outputs\":[\"conv\"]}");
    char *created = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_build_gradients(s, "conv", NULL, 0, "sgd:0.125", &created, &e),
                     BF_OK);
    ck_assert_ptr_nonnull(strstr(created, "\"w\":\"conv_grad_filter\""));
    ck_assert_ptr_nonnull(strstr(created, "\"w\":\"w_update\""));
    bf_string_free(created);
    double w0[9];
    for (int i = 0; i < 9; i++) w0[i] = state_at(s, "w", i);
    step_ok(s, 2);
    /* d sum(conv)/d w[kh,kw] = sum of the 3x3 window sums of x starting at (kh, kw) */
    for (int kh = 0; kh < 3; kh++)
        for (int kw = 0; kw < 3; kw++) {
            double g = 0;
            for (int oh = 0; oh < 3; oh++)
                for (int ow = 0; ow < 3; ow++) g += (oh + kh) * 5 + (ow + kw) + 1;
            double want = w0[kh * 3 + kw] - 2 * 0.125 * g;
            ck_assert_double_eq_tol(state_at(s, "w", kh * 3 + kw), want, 1e-5 * fabs(want) + 1e-6);
        }
    /* the check finds the built gradient right */
    char *json = NULL;
    ck_assert_int_eq(bf_session_check_gradients(s, "conv", NULL, &json, &e), BF_OK);
    ck_assert_ptr_nonnull(strstr(json, "\"pass\":true"));
    ck_assert_ptr_null(strstr(json, "\"pass\":false"));
    bf_string_free(json);
    ck_assert_int_eq(bf_session_step_count(s), 2); /* the check committed nothing */
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(check_finds_a_wrong_hand_wired_gradient) {
    bf_context *ctx = ctx_new(0);
    /* the filter gradient wired by hand with SAME where the forward is VALID */
    bf_session *s = OPEN(ctx, CONV_PAGE("VALID")
        ",{\"id\":\"dy\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,3,3,1],\"value\":1}},"
        "{\"id\":\"dyS\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,5,5,1],\"value\":1}},"
        "{\"id\":\"fs\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[3,3,1,1]}},"
        "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":0.01}},"
        "{\"id\":\"gw\",\"type\":\"Conv2DBackpropFilter\",\"inputs\":{\"input\":\"x\","
        "\"filter_sizes\":\"fs\",\"out_backprop\":\"dyS\"},\"attrs\":{\"strides\":[1,1,1,1],"
        "\"padding\":\"SAME\"}},"
        "{\"id\":\"upd\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\","
        "\"alpha\":\"lr\",\"delta\":\"gw\"}}],\"outputs\":[\"conv\"]}");
    char *json = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check_gradients(s, "conv", NULL, &json, &e), BF_OK);
    ck_assert_ptr_nonnull(strstr(json, "\"variable\":\"w\""));
    ck_assert_ptr_nonnull(strstr(json, "\"gradient\":\"gw\""));
    ck_assert_ptr_nonnull(strstr(json, "\"pass\":false"));
    bf_string_free(json);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *cancel_soon(void *arg) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    bf_session_cancel(arg);
    return NULL;
}

START_TEST(check_gradients_cancelled) {
    bf_context *ctx = ctx_new(0);
    /* 9216 elements checked one by one, each by two runs of a [96,96] product: seconds */
    bf_session *s = OPEN(ctx,
        "{\"id\":\"x\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[96,96]}},"
        "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[96,96],"
        "\"initializer\":\"glorot_uniform\"}},"
        "{\"id\":\"y\",\"type\":\"MatMul\",\"inputs\":{\"a\":\"x\",\"b\":\"w\"}},"
        "{\"id\":\"loss\",\"type\":\"Sum\",\"inputs\":{\"input\":\"y\"}}],"
        "\"outputs\":[\"loss\"]}");
    char *created = NULL, *json = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_build_gradients(s, "loss", NULL, 0, "sgd:0.1", &created, &e),
                     BF_OK);
    bf_string_free(created);
    bf_gradcheck_options o;
    bf_gradcheck_options_init(&o);
    o.full_below = 1 << 20;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, cancel_soon, s), 0);
    double t0 = now_s();
    ck_assert_int_eq(bf_session_check_gradients(s, "loss", &o, &json, &e), BF_ECANCELED);
    ck_assert_msg(now_s() - t0 < 5, "the cancel took %g s", now_s() - t0);
    pthread_join(th, NULL);
    ck_assert_ptr_null(json);
    ck_assert_int_eq(bf_session_step_count(s), 0);
    step_ok(s, 1); /* usable afterwards */
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(build_gradients_errors) {
    bf_context *ctx = ctx_new(0);
    bf_session *s = OPEN(ctx, CONV_PAGE("SAME")
        ",{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"shape\":[1]}},"
        "{\"id\":\"is\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[1,5,5,1]}},"
        "{\"id\":\"bi\",\"type\":\"Conv2DBackpropInput\",\"inputs\":{\"input_sizes\":\"is\","
        "\"filter\":\"w\",\"out_backprop\":\"conv\"},\"attrs\":{\"strides\":[1,1,1,1],"
        "\"padding\":\"SAME\"}}],\"outputs\":[\"conv\"]}");
    char *created = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_build_gradients(s, "nope", NULL, 0, NULL, &created, &e),
                     BF_ENOTFOUND);
    const char *wv[1] = {"v"};
    ck_assert_int_eq(bf_session_build_gradients(s, "conv", wv, 1, NULL, &created, &e),
                     BF_EINVAL);
    ck_assert_str_eq(e.code, "no_dependency");
    const char *wx[1] = {"x"};
    ck_assert_int_eq(bf_session_build_gradients(s, "conv", wx, 1, NULL, &created, &e),
                     BF_EINVAL);
    ck_assert_str_eq(e.code, "not_variable");
    ck_assert_int_eq(bf_session_build_gradients(s, "conv", NULL, 0, "sgd", &created, &e),
                     BF_EINVAL);
    ck_assert_str_eq(e.code, "bad_optimizer");
    ck_assert_int_eq(bf_session_build_gradients(s, "conv", NULL, 0, "adam:-1", &created, &e),
                     BF_EINVAL);
    /* a block on the way without a gradient is named */
    ck_assert_int_eq(bf_session_build_gradients(s, "bi", NULL, 0, NULL, &created, &e),
                     BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "no_gradient");
    ck_assert_str_eq(e.block_id, "bi");
    ck_assert_ptr_null(created);
    ck_assert_int_eq(bf_page_block_count(bf_session_page(s)), 6); /* nothing was added */
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

int main(void) {
    Suite *su = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reads_see_the_start_of_step);
    tcase_add_test(tc, callback_metrics_and_early_stop);
    tcase_add_test(tc, cancel_inside_a_step);
    tcase_add_test(tc, failed_step_commits_nothing);
    tcase_add_test(tc, one_update_per_variable_and_refs_to_variables);
    tcase_add_test(tc, edits_keep_state_or_say_they_reset_it);
    tcase_add_test(tc, read_and_write_state);
    tcase_add_test(tc, checkpoints_round_trip_all_or_nothing);
    tcase_add_test(tc, hostile_checkpoints);
    tcase_add_test(tc, variable_initializers);
    tcase_add_test(tc, build_gradients_and_train);
    tcase_add_test(tc, check_finds_a_wrong_hand_wired_gradient);
    tcase_add_test(tc, build_gradients_errors);
    tcase_add_test(tc, check_gradients_cancelled);
    suite_add_tcase(su, tc);
    return bf_test_main(su);
}
