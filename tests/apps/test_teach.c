/*
 * test_teach.c - the teaching views end to end (issue #15): bf_session_explain,
 * bf_session_gradcheck and bf_session_add_gradients through the public API, and the
 * `blockflow explain`, `gradcheck` and `grad` verbs through the program ($BF_BINARY).
 *
 * - every page of examples/teach/: explain on every element of every convolution block, the
 *   sum of the products equal to the output element (1e-12 of sum |terms| for float64, 2e-6
 *   for float32), the term count and truncation honest; and `explain --json` on one element
 *   of each block, parsed and checked the same way;
 * - gradcheck passes on every gradient and forward convolution block of those pages, and fails
 *   (exit 1) on tests/data/teach_wrong_padding.json, whose dW pads differently from its
 *   forward block;
 * - add_gradients on Conv2D (NCHW, strided, dilated, EXPLICIT) and depthwise (multiplier 2,
 *   SAME) blocks builds blocks whose results, for a fed dy, equal a brute-force autograd
 *   reference written here from the definition; `grad --in-place` then `run --feed` does too;
 * - usage and error paths of the three verbs.
 */
#include "cli_harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Run blockflow with `args` (NULL-terminated) from the test's own folder, with its standard
 * input, capturing its output (no time limit). */
#define RUN(...) bf_run(NULL, (const char *const[]){__VA_ARGS__, NULL})

/* ---- sessions ------------------------------------------------------------------------------- */

typedef struct opened {
    bf_context *ctx;
    bf_session *s;
} opened;

static opened open_file(const char *path) {
    opened o = {0};
    bf_error e = {0};
    ck_assert_int_eq(bf_context_new(NULL, &o.ctx, &e), BF_OK);
    bf_page *p = NULL;
    ck_assert_msg(bf_page_load_file(o.ctx, path, &p, NULL, &e) == BF_OK, "%s: %s", path,
                  e.message);
    ck_assert_int_eq(bf_session_new(o.ctx, p, &o.s, &e), BF_OK);
    return o;
}

static opened open_string(const char *json) {
    opened o = {0};
    bf_error e = {0};
    ck_assert_int_eq(bf_context_new(NULL, &o.ctx, &e), BF_OK);
    bf_page *p = NULL;
    ck_assert_msg(bf_page_load_string(o.ctx, json, strlen(json), "t.json", ".", &p, NULL, &e) ==
                      BF_OK,
                  "%s", e.message);
    ck_assert_int_eq(bf_session_new(o.ctx, p, &o.s, &e), BF_OK);
    return o;
}

static void close_opened(opened *o) {
    bf_session_free(o->s);
    bf_context_free(o->ctx);
}

static bool is_conv(const char *type) {
    return strstr(type, "Conv2D") || strstr(type, "DepthwiseConv2dNative");
}

static bool is_grad(const char *type) { return strstr(type, "Backprop") != NULL; }

/* The teaching pages: names into names[], count returned. */
static int teach_pages(char names[][256], int max) {
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/examples/teach", bf_test_source_dir());
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (strstr(e->d_name, ".json")) snprintf(names[n++], 256, "%.120s/%.120s", dir, e->d_name);
    closedir(d);
    return n;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "no number \"%s\"", k);
    return v->valuedouble;
}

/* Check one explain result: the listed terms' products add up to "sum", which equals the
 * value within the dtype's tolerance, and the bookkeeping is consistent. */
static void check_explain(const cJSON *r, const char *what) {
    const double tol = !strcmp(cJSON_GetObjectItem(r, "dtype")->valuestring, "float64") ? 1e-12
                                                                                         : 2e-6;
    const cJSON *terms = cJSON_GetObjectItem(r, "terms"), *t;
    const bool truncated = cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated"));
    double sum = 0;
    int n = 0;
    cJSON_ArrayForEach(t, terms) {
        const cJSON *a = cJSON_GetObjectItem(t, "a"), *b = cJSON_GetObjectItem(t, "b");
        ck_assert_ptr_nonnull(cJSON_GetObjectItem(a, "tensor"));
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(a, "index")), 4);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "index")), 4);
        sum += num(a, "value") * num(b, "value");
        n++;
    }
    ck_assert_msg(truncated ? n < num(r, "n_terms") : n == num(r, "n_terms"), "%s", what);
    if (!truncated)
        ck_assert_msg(fabs(sum - num(r, "sum")) <= 1e-12 * num(r, "abs_sum"), "%s", what);
    ck_assert_msg(fabs(num(r, "sum") - num(r, "value")) <= tol * num(r, "abs_sum") + 1e-300,
                  "%s: sum %.17g, value %.17g", what, num(r, "sum"), num(r, "value"));
    const cJSON *pad = cJSON_GetObjectItem(r, "padding");
    ck_assert(num(pad, "top") >= 0 && num(pad, "bottom") >= 0 && num(pad, "left") >= 0 &&
              num(pad, "right") >= 0);
    /* the padded taps: listed as the terms are (up to the same cap), each on the ring of
     * operand A's grid, with A's index carrying the same h and w, and a real B element */
    const cJSON *pads = cJSON_GetObjectItem(r, "padded_taps");
    ck_assert_msg(cJSON_IsArray(pads), "%s: no padded_taps", what);
    const bool ptrunc = cJSON_IsTrue(cJSON_GetObjectItem(r, "padded_truncated"));
    const int np = cJSON_GetArraySize(pads);
    ck_assert_msg(ptrunc ? np < num(r, "n_padded") : np == num(r, "n_padded"), "%s", what);
    ck_assert_msg(!ptrunc || !truncated || np == n, "%s: one cap for both lists", what);
    const char *ta = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "operands"), "a")->valuestring;
    cJSON_ArrayForEach(t, pads) {
        const cJSON *a = cJSON_GetObjectItem(t, "a"), *b = cJSON_GetObjectItem(t, "b");
        const cJSON *ai = cJSON_GetObjectItem(a, "index");
        ck_assert_str_eq(cJSON_GetObjectItem(a, "tensor")->valuestring, ta);
        ck_assert(num(a, "value") == 0);
        ck_assert_int_eq(cJSON_GetArraySize(ai), 4);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "index")), 4);
        (void)num(b, "value");
        const double h = num(t, "h"), w = num(t, "w");
        /* NHWC [n, h, w, c] or NCHW [n, c, h, w]: h and w are adjacent either way */
        const double i1 = cJSON_GetArrayItem(ai, 1)->valuedouble;
        const double i2 = cJSON_GetArrayItem(ai, 2)->valuedouble;
        const double i3 = cJSON_GetArrayItem(ai, 3)->valuedouble;
        ck_assert_msg((i1 == h && i2 == w) || (i2 == h && i3 == w), "%s: tap (%g, %g)", what, h,
                      w);
        ck_assert_msg(h >= -num(pad, "top") && w >= -num(pad, "left"), "%s", what);
        ck_assert_msg(h < 0 || w < 0 || num(pad, "bottom") > 0 || num(pad, "right") > 0,
                      "%s: tap (%g, %g) with no padding after", what, h, w);
    }
}

/* ---- explain ----------------------------------------------------------------------------------
 */

START_TEST(explain_every_element_of_every_teaching_page) {
    char pages[32][256];
    int np = teach_pages(pages, 32), checked = 0;
    ck_assert_int_ge(np, 7);
    for (int p = 0; p < np; p++) {
        opened o = open_file(pages[p]);
        const bf_page *page = bf_session_page(o.s);
        for (int b = 0; b < bf_page_block_count(page); b++) {
            const char *id = bf_page_block_id(page, b);
            if (!is_conv(bf_page_block_type(page, b))) continue;
            bf_error e = {0};
            ck_assert_int_eq(bf_session_run(o.s, NULL, NULL, &e), BF_OK);
            const bf_tensor *out = bf_session_output(o.s, id, NULL);
            if (!out) { /* not a page output: fetch it */
                bf_run_options ro;
                bf_run_options_init(&ro);
                const char *f[1] = {id};
                ro.fetches = f, ro.n_fetches = 1;
                ck_assert_int_eq(bf_session_run(o.s, &ro, NULL, &e), BF_OK);
                out = bf_session_output(o.s, id, NULL);
            }
            int64_t dims[4], numel = bf_tensor_numel(out);
            memcpy(dims, bf_tensor_dims(out), sizeof(dims));
            for (int64_t f = 0; f < numel; f++) {
                int64_t idx[4], r = f;
                for (int k = 3; k >= 0; k--) idx[k] = r % dims[k], r /= dims[k];
                char *json = NULL;
                bf_explain_options eo;
                bf_explain_options_init(&eo);
                eo.max_terms = f % 2 ? 3 : -1; /* odd elements: a truncated list */
                ck_assert_msg(bf_session_explain(o.s, id, idx, 4, &eo, &json, &e) == BF_OK,
                              "%s %s: %s", pages[p], id, e.message);
                cJSON *j = cJSON_Parse(json);
                ck_assert_ptr_nonnull(j);
                char what[400];
                snprintf(what, sizeof(what), "%.256s %.64s element %ld", pages[p], id, (long)f);
                check_explain(j, what);
                ck_assert_str_eq(cJSON_GetObjectItem(j, "block")->valuestring, id);
                cJSON_Delete(j);
                bf_string_free(json);
                checked++;
            }
        }
        close_opened(&o);
    }
    ck_assert_int_ge(checked, 100);
}
END_TEST

START_TEST(explain_json_from_the_program) {
    char pages[32][256];
    int np = teach_pages(pages, 32);
    for (int p = 0; p < np; p++) {
        opened o = open_file(pages[p]);
        const bf_page *page = bf_session_page(o.s);
        for (int b = 0; b < bf_page_block_count(page); b++) {
            if (!is_conv(bf_page_block_type(page, b))) continue;
            const char *id = bf_page_block_id(page, b);
            bf_result r = RUN("explain", pages[p], id, "0", "0", "0", "0", "--json");
            ck_assert_msg(r.status == 0, "%s %s: %s", pages[p], id, r.err);
            cJSON *j = cJSON_Parse(r.out);
            ck_assert_ptr_nonnull(j);
            check_explain(j, pages[p]);
            ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "index")), 4);
            cJSON_Delete(j);
            bf_result_free(&r);
            bf_result t = RUN("explain", pages[p], id, "0", "0", "0", "0");
            ck_assert_int_eq(t.status, 0);
            ck_assert_ptr_nonnull(strstr(t.out, "sum of products"));
            ck_assert_ptr_nonnull(strstr(t.out, "padding "));
            bf_result_free(&t);
        }
        close_opened(&o);
    }
}
END_TEST

START_TEST(explain_marks_same_odd_pixel) {
    char path[512];
    snprintf(path, sizeof(path), "%s/examples/teach/valid_vs_same.json", bf_test_source_dir());
    bf_result r = RUN("explain", path, "same", "0", "4", "4", "0", "--json");
    ck_assert_int_eq(r.status, 0);
    cJSON *j = cJSON_Parse(r.out);
    const cJSON *pad = cJSON_GetObjectItem(j, "padding");
    ck_assert_str_eq(cJSON_GetObjectItem(pad, "mode")->valuestring, "SAME");
    ck_assert_int_eq((int)num(pad, "top"), 0);
    ck_assert_int_eq((int)num(pad, "bottom"), 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pad, "odd")), 2);
    ck_assert_int_eq((int)num(j, "n_terms"), 1);
    ck_assert_int_eq((int)num(j, "n_padded"), 3);
    ck_assert_double_eq(num(j, "value"), 25);
    /* the 2x2 window at the 5x5 input's corner: the 3 other taps are on SAME's odd column 5
     * and odd row 5, with the filter elements they would have met */
    const cJSON *pads = cJSON_GetObjectItem(j, "padded_taps");
    ck_assert_int_eq(cJSON_GetArraySize(pads), 3);
    ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(j, "padded_truncated")));
    const int want[3][4] = {{4, 5, 0, 1}, {5, 4, 1, 0}, {5, 5, 1, 1}}; /* h, w, kh, kw */
    for (int k = 0; k < 3; k++) {
        const cJSON *t = cJSON_GetArrayItem(pads, k);
        ck_assert_int_eq((int)num(t, "h"), want[k][0]);
        ck_assert_int_eq((int)num(t, "w"), want[k][1]);
        const cJSON *bi = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "b"), "index");
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "b"), "tensor")->valuestring,
                         "filter");
        ck_assert_int_eq(cJSON_GetArrayItem(bi, 0)->valueint, want[k][2]);
        ck_assert_int_eq(cJSON_GetArrayItem(bi, 1)->valueint, want[k][3]);
    }
    cJSON_Delete(j);
    bf_result_free(&r);
    bf_result t = RUN("explain", path, "same", "0", "4", "4", "0");
    ck_assert_ptr_nonnull(strstr(t.out, "bottom 1 (SAME's odd pixel)"));
    bf_result_free(&t);
}
END_TEST

/* ---- explain when memory runs out (STYLE R14e) */

static long fail_at, n_allocs, live;

static void *fail_malloc(size_t size, void *user) {
    (void)user;
    if (++n_allocs == fail_at) return NULL;
    void *p = malloc(size);
    if (p) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return p;
}

static void *fail_realloc(void *ptr, size_t size, void *user) {
    (void)user;
    if (++n_allocs == fail_at) return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return p;
}

static void counting_free(void *ptr, void *user) {
    (void)user;
    if (ptr) __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
    free(ptr);
}

/* The corner of SAME on an odd size (1 term, 3 padded taps): open the page, run and explain
 * it with the Nth allocation failing, N = 1, 2, ... (the allocator is replaced before anything
 * else, as bf_replace_allocator asks): BF_ENOMEM and no leak, until the whole answer fits. */
START_TEST(explain_out_of_memory_loop) {
    char path[512];
    snprintf(path, sizeof(path), "%s/examples/teach/valid_vs_same.json", bf_test_source_dir());
    const int64_t idx[4] = {0, 4, 4, 0};
    bf_replace_allocator(fail_malloc, fail_realloc, counting_free, NULL);
    int n;
    for (n = 1; n < 20000; n++) {
        fail_at = n, n_allocs = 0;
        bf_error e = {0};
        bf_context *ctx = NULL;
        bf_page *pg = NULL;
        bf_session *s = NULL;
        char *json = NULL;
        bf_status st = bf_context_new(NULL, &ctx, &e);
        if (!st) st = bf_page_load_file(ctx, path, &pg, NULL, &e);
        if (!st) st = bf_session_new(ctx, pg, &s, &e);
        if (!st) st = bf_session_explain(s, "same", idx, 4, NULL, &json, &e);
        if (st) {
            ck_assert_msg(st == BF_ENOMEM, "allocation %d: %s (%s)", n, bf_status_name(st),
                          e.message);
            ck_assert_ptr_null(json);
        } else {
            ck_assert_ptr_nonnull(strstr(json, "\"padded_taps\":[{\"h\":4,\"w\":5,"));
        }
        bf_string_free(json);
        bf_session_free(s);
        bf_context_free(ctx);
        ck_assert_msg(live == 0, "allocation %d failed: %ld blocks leaked", n, live);
        if (!st && n_allocs < n) break; /* nothing failed: every allocation was covered */
    }
    bf_replace_allocator(NULL, NULL, NULL, NULL);
    ck_assert_int_lt(n, 20000);
    fprintf(stderr, "explain_out_of_memory_loop: %d allocations covered\n", n - 1);
}
END_TEST

START_TEST(explain_errors) {
    char path[512];
    snprintf(path, sizeof(path), "%s/examples/teach/valid_vs_same.json", bf_test_source_dir());
    bf_result r = RUN("explain", path, "same", "0", "5", "0", "0");
    ck_assert_int_eq(r.status, 2); /* outside the output */
    ck_assert_ptr_nonnull(strstr(r.err, "outside"));
    bf_result_free(&r);
    r = RUN("explain", path, "same", "0", "0");
    ck_assert_int_eq(r.status, 2); /* wrong rank */
    bf_result_free(&r);
    r = RUN("explain", path, "x", "0", "0", "0", "0");
    ck_assert_int_eq(r.status, 2); /* a Const has no teaching view */
    ck_assert_ptr_nonnull(strstr(r.err, "no teaching view"));
    bf_result_free(&r);
    r = RUN("explain", path, "nothere", "0", "0", "0", "0");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
    r = RUN("explain", path, "same");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST

/* ---- gradcheck --------------------------------------------------------------------------------
 */

START_TEST(gradcheck_passes_on_teaching_pages) {
    char pages[32][256];
    int np = teach_pages(pages, 32), checked = 0;
    for (int p = 0; p < np; p++) {
        opened o = open_file(pages[p]);
        const bf_page *page = bf_session_page(o.s);
        for (int b = 0; b < bf_page_block_count(page); b++) {
            if (!is_conv(bf_page_block_type(page, b))) continue;
            const char *id = bf_page_block_id(page, b);
            char *json = NULL;
            bf_error e = {0};
            bf_gradcheck_options go;
            bf_gradcheck_options_init(&go);
            go.compare_gpu = 1;
            ck_assert_msg(bf_session_gradcheck(o.s, id, &go, &json, &e) == BF_OK, "%s %s: %s",
                          pages[p], id, e.message);
            cJSON *j = cJSON_Parse(json);
            ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(j, "pass")), "%s %s: %s", pages[p], id,
                          json);
            const cJSON *checks = cJSON_GetObjectItem(j, "checks");
            ck_assert_int_eq(cJSON_GetArraySize(checks),
                             is_grad(bf_page_block_type(page, b)) ? 1 : 2);
            const cJSON *c;
            cJSON_ArrayForEach(c, checks) /* small tensors: every element */
                ck_assert_double_eq(num(c, "n_checked"), num(c, "n_elements"));
            const cJSON *adj = cJSON_GetObjectItem(j, "adjoint");
            ck_assert_ptr_nonnull(cJSON_GetObjectItem(adj, "input"));
            ck_assert_ptr_nonnull(cJSON_GetObjectItem(adj, "filter"));
            const cJSON *gpu = cJSON_GetObjectItem(j, "gpu");
            ck_assert_ptr_nonnull(gpu);
            if (!bf_context_has_gpu(o.ctx))
                ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(gpu, "available")));
            cJSON_Delete(j);
            bf_string_free(json);
            checked++;
        }
        close_opened(&o);
    }
    ck_assert_int_ge(checked, 10);
}
END_TEST

/* What a teaching call's runs told on_event, as "started:x ran:x reused:fs ..." */
typedef struct heard {
    char text[1024];
} heard;

static void hear(bf_event_kind kind, const bf_block_stats *st, void *user) {
    heard *h = user;
    size_t n = strlen(h->text);
    snprintf(h->text + n, sizeof(h->text) - n, "%s%s:%s", n ? " " : "",
             kind == BF_EVENT_BLOCK_START    ? "started"
             : kind == BF_EVENT_BLOCK_REUSED ? "reused"
             : st->status                    ? "failed"
                                             : "ran",
             st->id);
}

/* The server shows a teaching job's runs on the canvas as it shows a run: explain and
 * gradcheck pass their runs' block events on. */
START_TEST(teaching_calls_report_block_events) {
    char path[512];
    snprintf(path, sizeof(path), "%s/examples/teach/stride2_odd_input.json",
             bf_test_source_dir());
    opened o = open_file(path);
    char *json = NULL;
    bf_error e = {0};
    heard h = {""};
    bf_explain_options eo;
    bf_explain_options_init(&eo);
    eo.on_event = hear, eo.user = &h;
    const int64_t idx[4] = {1, 0, 0, 0};
    ck_assert_int_eq(bf_session_explain(o.s, "dw", idx, 4, &eo, &json, &e), BF_OK);
    bf_string_free(json);
    /* dw and what it reads ran; conv, dx and their sources were not needed */
    ck_assert_msg(strstr(h.text, "ran:x") && strstr(h.text, "ran:fs") &&
                      strstr(h.text, "ran:dy") && strstr(h.text, "started:dw") &&
                      strstr(h.text, "ran:dw") && !strstr(h.text, "conv") &&
                      !strstr(h.text, ":dx") && !strstr(h.text, ":w"),
                  "first explain: %s", h.text);
    /* the same question again: everything is reused */
    h.text[0] = '\0';
    ck_assert_int_eq(bf_session_explain(o.s, "dw", idx, 4, &eo, &json, &e), BF_OK);
    bf_string_free(json);
    ck_assert_msg(strstr(h.text, "reused:dw") && !strstr(h.text, "ran:"), "again: %s", h.text);
    /* a gradient check of dx runs dx and its sources, and says so */
    h.text[0] = '\0';
    bf_gradcheck_options go;
    bf_gradcheck_options_init(&go);
    go.on_event = hear, go.user = &h;
    ck_assert_int_eq(bf_session_gradcheck(o.s, "dx", &go, &json, &e), BF_OK);
    bf_string_free(json);
    ck_assert_msg(strstr(h.text, "ran:dx") && strstr(h.text, "ran:w") &&
                      strstr(h.text, "ran:xs") && strstr(h.text, "reused:dy"),
                  "gradcheck: %s", h.text);
    close_opened(&o);
}
END_TEST

START_TEST(gradcheck_fails_on_wrong_padding) {
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/teach_wrong_padding.json", bf_test_source_dir());
    bf_result r = RUN("gradcheck", path, "dw");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "FAIL"));
    ck_assert_ptr_nonnull(strstr(r.out, "against forward block conv"));
    bf_result_free(&r);
    r = RUN("gradcheck", path, "dw", "--json");
    ck_assert_int_eq(r.status, 1);
    cJSON *j = cJSON_Parse(r.out);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "pass")));
    ck_assert_str_eq(cJSON_GetObjectItem(j, "forward")->valuestring, "conv");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "checks"), 0);
    ck_assert(num(c, "max_rel_error") > 1e-2);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "adjoint"), "pass")));
    cJSON_Delete(j);
    bf_result_free(&r);
    /* the forward block itself is fine */
    r = RUN("gradcheck", path, "conv");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "PASS"));
    bf_result_free(&r);
    r = RUN("gradcheck", path, "x");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST

/* ---- add_gradients against a brute-force autograd reference ---------------------------------- */

typedef struct geo {
    int dw, nchw;
    int64_t N, H, W, C, KH, KW, M, O, sh, sw, dh, dwl, OH, OW, pt, pl;
} geo;

static int64_t act(const geo *g, int64_t H, int64_t W, int64_t C, int64_t n, int64_t h, int64_t w,
                   int64_t c) {
    return g->nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

/* dX and dW of sum(conv(x, w) * dy), from the definition (groups 1, or depthwise). */
static void autograd(const geo *g, const double *x, const double *w, const double *dy,
                     double *dx, double *dwt) {
    int64_t nx = g->N * g->H * g->W * g->C, nw = g->KH * g->KW * g->C * (g->dw ? g->M : g->O);
    memset(dx, 0, 8 * (size_t)nx), memset(dwt, 0, 8 * (size_t)nw);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++)
                for (int64_t co = 0; co < g->O; co++)
                    for (int64_t kh = 0; kh < g->KH; kh++)
                        for (int64_t kw = 0; kw < g->KW; kw++)
                            for (int64_t ci = 0; ci < (g->dw ? 1 : g->C); ci++) {
                                int64_t ih = oh * g->sh - g->pt + kh * g->dh;
                                int64_t iw = ow * g->sw - g->pl + kw * g->dwl;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t c = g->dw ? co / g->M : ci;
                                int64_t fi = g->dw
                                                 ? ((kh * g->KW + kw) * g->C + c) * g->M + co % g->M
                                                 : ((kh * g->KW + kw) * g->C + ci) * g->O + co;
                                int64_t xi = act(g, g->H, g->W, g->C, n, ih, iw, c);
                                int64_t yi = act(g, g->OH, g->OW, g->O, n, oh, ow, co);
                                dx[xi] += w[fi] * dy[yi];
                                dwt[fi] += x[xi] * dy[yi];
                            }
}

static void values(bf_rng *r, double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) v[i] = bf_rng_nonzero(r);
}

static void list_json(char *buf, size_t size, const double *v, int64_t n) {
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int64_t i = 0; i < n; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%.17g", i ? "," : "", v[i]);
    snprintf(buf + k, size - k, "]");
}

static void grad_case(const geo *g, const char *attrs) {
    bf_rng r = {42};
    int64_t nx = g->N * g->H * g->W * g->C, nw = g->KH * g->KW * g->C * (g->dw ? g->M : g->O);
    int64_t ny = g->N * g->OH * g->OW * g->O;
    double *x = malloc(8 * (size_t)nx), *w = malloc(8 * (size_t)nw), *dy = malloc(8 * (size_t)ny);
    double *rdx = malloc(8 * (size_t)nx), *rdw = malloc(8 * (size_t)nw);
    values(&r, x, nx), values(&r, w, nw), values(&r, dy, ny);
    autograd(g, x, w, dy, rdx, rdw);
    char *page = malloc(1 << 16), xs[16384], ws[16384];
    list_json(xs, sizeof(xs), x, nx), list_json(ws, sizeof(ws), w, nw);
    int64_t xd[4], wd[4] = {g->KH, g->KW, g->C, g->dw ? g->M : g->O};
    if (g->nchw) xd[0] = g->N, xd[1] = g->C, xd[2] = g->H, xd[3] = g->W;
    else xd[0] = g->N, xd[1] = g->H, xd[2] = g->W, xd[3] = g->C;
    snprintf(page, 1 << 16,
             "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["
             "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\",\"shape\":"
             "[%ld,%ld,%ld,%ld],\"value\":%s}},"
             "{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\",\"shape\":"
             "[%ld,%ld,%ld,%ld],\"value\":%s}},"
             "{\"id\":\"conv\",\"type\":\"%s\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
             "\"attrs\":%s,\"ui\":{\"x\":100,\"y\":50}}],\"outputs\":[\"conv\"]}",
             (long)xd[0], (long)xd[1], (long)xd[2], (long)xd[3], xs, (long)wd[0], (long)wd[1],
             (long)wd[2], (long)wd[3], ws, g->dw ? "DepthwiseConv2dNative" : "Conv2D", attrs);
    opened o = open_string(page);
    char *created = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_session_add_gradients(o.s, "conv", NULL, &created, &e) == BF_OK, "%s",
                  e.message);
    cJSON *c = cJSON_Parse(created);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "dy")->valuestring, "conv_dy");
    const cJSON *gr = cJSON_GetObjectItem(c, "gradients");
    ck_assert_str_eq(cJSON_GetObjectItem(gr, "filter")->valuestring, "conv_grad_filter");
    ck_assert_str_eq(cJSON_GetObjectItem(gr, "input")->valuestring, "conv_grad_input");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "blocks")), 5);
    cJSON_Delete(c);
    bf_string_free(created);
    /* layout: beside the forward block */
    char *text = NULL;
    ck_assert_int_eq(bf_page_to_json(bf_session_page(o.s), &text, &e), BF_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"x\": 620"));
    bf_string_free(text);
    /* feed dy, run, compare */
    int64_t yd[4];
    if (g->nchw) yd[0] = g->N, yd[1] = g->O, yd[2] = g->OH, yd[3] = g->OW;
    else yd[0] = g->N, yd[1] = g->OH, yd[2] = g->OW, yd[3] = g->O;
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(o.ctx, BF_DTYPE_F64, 4, yd, &t, &e), BF_OK);
    memcpy(bf_tensor_data(t), dy, 8 * (size_t)ny);
    ck_assert_msg(bf_session_feed(o.s, "conv_dy", t, &e) == BF_OK, "%s", e.message);
    bf_tensor_free(t);
    bf_run_options ro;
    bf_run_options_init(&ro);
    const char *fetch[2] = {"conv_grad_filter", "conv_grad_input"};
    ro.fetches = fetch, ro.n_fetches = 2;
    ck_assert_msg(bf_session_run(o.s, &ro, NULL, &e) == BF_OK, "%s", e.message);
    const bf_tensor *gw = bf_session_output(o.s, "conv_grad_filter", NULL);
    const bf_tensor *gx = bf_session_output(o.s, "conv_grad_input", NULL);
    ck_assert_int_eq(bf_tensor_numel(gw), nw);
    ck_assert_int_eq(bf_tensor_numel(gx), nx);
    ck_assert(bf_test_rel_excess(bf_tensor_cdata(gw), rdw, nw, 1e-12, 1e-12) <= 1);
    ck_assert(bf_test_rel_excess(bf_tensor_cdata(gx), rdx, nx, 1e-12, 1e-12) <= 1);
    /* a second call gets fresh ids and the chosen dy */
    ck_assert_int_eq(bf_session_add_gradients(o.s, "conv", "conv_dy", &created, &e), BF_OK);
    c = cJSON_Parse(created);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "dy")->valuestring, "conv_dy");
    ck_assert_str_eq(
        cJSON_GetObjectItem(cJSON_GetObjectItem(c, "gradients"), "filter")->valuestring,
        "conv_grad_filter_2");
    cJSON_Delete(c);
    bf_string_free(created);
    /* errors */
    ck_assert_int_eq(bf_session_add_gradients(o.s, "x", NULL, &created, &e), BF_EUNSUPPORTED);
    ck_assert_ptr_null(created);
    ck_assert_int_eq(bf_session_add_gradients(o.s, "nope", NULL, &created, &e), BF_ENOTFOUND);
    ck_assert_int_eq(bf_session_add_gradients(o.s, "conv", "nope", &created, &e), BF_ENOTFOUND);
    close_opened(&o);
    free(page), free(x), free(w), free(dy), free(rdx), free(rdw);
}

START_TEST(add_gradients_conv2d_nchw_strided_dilated) {
    /* H 7, k 3, s 2, d 2, EXPLICIT pads 1/2 rows, 0/1 cols: OH = (7+3-5)/2+1 = 3,
     * W 6: OW = (6+1-5)/2+1 = 2 */
    geo g = {.nchw = 1, .N = 2, .H = 7, .W = 6, .C = 2, .KH = 3, .KW = 3, .O = 3, .sh = 2,
             .sw = 2, .dh = 2, .dwl = 2, .OH = 3, .OW = 2, .pt = 1, .pl = 0};
    grad_case(&g, "{\"strides\":[1,1,2,2],\"dilations\":[1,1,2,2],\"padding\":\"EXPLICIT\","
                  "\"explicit_paddings\":[0,0,0,0,1,2,0,1],\"data_format\":\"NCHW\"}");
}
END_TEST

START_TEST(add_gradients_depthwise_same) {
    /* H 5, k 2, s 2, SAME: OH 3, total pad (3-1)*2+2-5 = 1 -> 0 before; W 4: OW 2, pad 0 */
    geo g = {.dw = 1, .N = 1, .H = 5, .W = 4, .C = 2, .KH = 2, .KW = 2, .M = 2, .O = 4, .sh = 2,
             .sw = 2, .dh = 1, .dwl = 1, .OH = 3, .OW = 2, .pt = 0, .pl = 0};
    grad_case(&g, "{\"strides\":[1,2,2,1],\"padding\":\"SAME\"}");
}
END_TEST

START_TEST(grad_verb_in_place_then_run) {
    char src[512], dst[512], dyf[512], out[512];
    snprintf(src, sizeof(src), "%s/examples/teach/dilation2.json", bf_test_source_dir());
    snprintf(dst, sizeof(dst), "%s/page.json", bf_scratch());
    char *text = bf_read_file(src, NULL);
    bf_write_file(dst, text);
    free(text);
    bf_result r = RUN("grad", dst, "y");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "\"y_grad_filter\""));
    ck_assert_ptr_nonnull(strstr(r.err, "added:"));
    bf_result_free(&r);
    r = RUN("grad", dst, "y", "--dy", "dy", "--in-place");
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    r = RUN("fmt", "--check", dst);
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    snprintf(out, sizeof(out), "%s", bf_scratch());
    r = RUN("run", dst, "--fetch", "y_grad_filter", "--fetch", "dw", "--out", out);
    ck_assert_msg(r.status == 0, "%s", r.err);
    bf_result_free(&r);
    snprintf(dyf, sizeof(dyf), "%s/y_grad_filter.npy", bf_scratch());
    char dwf[512];
    snprintf(dwf, sizeof(dwf), "%s/dw.npy", bf_scratch());
    char *a = bf_read_file(dyf, NULL), *b = bf_read_file(dwf, NULL);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(a + 128, b + 128); /* same data (the headers are 128 bytes) */
    free(a), free(b);
    r = RUN("gradcheck", dst, "y_grad_input");
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    r = RUN("grad", dst, "dw");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("teach");
    TCase *tc = tcase_create("teach");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, explain_every_element_of_every_teaching_page);
    tcase_add_test(tc, explain_json_from_the_program);
    tcase_add_test(tc, explain_marks_same_odd_pixel);
    tcase_add_test(tc, explain_errors);
    tcase_add_test(tc, explain_out_of_memory_loop);
    tcase_add_test(tc, gradcheck_passes_on_teaching_pages);
    tcase_add_test(tc, gradcheck_fails_on_wrong_padding);
    tcase_add_test(tc, teaching_calls_report_block_events);
    tcase_add_test(tc, add_gradients_conv2d_nchw_strided_dilated);
    tcase_add_test(tc, add_gradients_depthwise_same);
    tcase_add_test(tc, grad_verb_in_place_then_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
