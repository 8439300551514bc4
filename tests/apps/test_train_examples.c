/*
 * test_train_examples.c - the teaching pages of examples/train/ do what their descriptions
 * promise, through the public API:
 *   learn_a_filter.json  the 3x3 Variable converges to the Sobel filter: max |w - sobel| < 1e-3
 *                        within 300 steps;
 *   xor.json             (backward pass wired by hand) after 3000 steps all four outputs are on
 *                        the right side of 0.5, and the whole-page gradient check passes;
 *   digits_cnn.json      (backward pass built by grad --loss) after 5 epochs of batches of 32,
 *                        at least 95% of the held-out fifth (data/digits_test_*.npy, never
 *                        seen in training) is classified right; the gradient check passes.
 * Each page also passes `fmt --check` (canonical form) through bf_page_to_json.
 * The digits' .npy files are written at build time from python3-sklearn (CMakeLists.txt;
 * `make` installs it): without them that test fails saying so.
 */
#include "bf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bf_context *ctx_new(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

static bf_session *open_example(bf_context *ctx, const char *name) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/train/%s", bf_test_source_dir(), name);
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_file(ctx, path, &page, NULL, &e))
        ck_abort_msg("%s: %s", name, e.message);
    /* canonical, as the examples are kept */
    char *text = NULL;
    ck_assert_int_eq(bf_page_to_json(page, &text, &e), BF_OK);
    size_t len = 0;
    char *file = bf_read_file(path, &len);
    ck_assert_msg(file && !strcmp(file, text), "%s is not in canonical form", name);
    free(file);
    bf_string_free(text);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

static void steps(bf_session *s, int64_t n) {
    bf_error e = {0};
    bf_status st = bf_session_step(s, n, NULL, NULL, &e);
    ck_assert_msg(st == BF_OK, "%s: %s", e.block_id, e.message);
}

static bool gradcheck_passes(bf_session *s, const char *loss) {
    char *json = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_session_check_gradients(s, loss, NULL, &json, &e) == BF_OK, "%s", e.message);
    bool pass = strstr(json, "\"pass\":false") == NULL && strstr(json, "\"pass\":true");
    if (!pass) fprintf(stderr, "%s\n", json);
    bf_string_free(json);
    return pass;
}

START_TEST(learn_a_filter) {
    bf_context *ctx = ctx_new();
    bf_session *s = open_example(ctx, "learn_a_filter.json");
    static const double sobel[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    steps(s, 300);
    bf_tensor *w = NULL;
    ck_assert_int_eq(bf_session_read_state(s, "w", &w, NULL), BF_OK);
    double worst = 0;
    for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(bf_tensor_get_f64(w, i) - sobel[i]));
    ck_assert_msg(worst < 1e-3, "after 300 steps max |w - sobel| = %g", worst);
    bf_tensor_free(w);
    ck_assert(gradcheck_passes(s, "loss"));
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(xor_by_hand) {
    bf_context *ctx = ctx_new();
    bf_session *s = open_example(ctx, "xor.json");
    ck_assert(gradcheck_passes(s, "loss")); /* the hand-wired backward pass is exact */
    steps(s, 3000);
    const char *f[1] = {"out"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f, o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    const bf_tensor *out = bf_session_output(s, "out", NULL);
    static const int want[4] = {0, 1, 1, 0};
    for (int i = 0; i < 4; i++) {
        double v = bf_tensor_get_f64(out, i);
        ck_assert_msg(want[i] ? v > 0.5 : v < 0.5, "xor row %d: %g", i, v);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(digits_cnn_generalises) {
    char data[4096];
    snprintf(data, sizeof(data), "%s/examples/train/data/digits_test_x.npy",
             bf_test_source_dir());
    if (access(data, R_OK))
        ck_abort_msg("%s is missing: the build writes it with python3-sklearn (make installs it)",
                     data);
    bf_context *ctx = ctx_new();
    bf_session *s = open_example(ctx, "digits_cnn.json");
    ck_assert(gradcheck_passes(s, "loss"));
    steps(s, 5 * (1438 / 32)); /* five epochs */
    bf_tensor *cursor = NULL;
    ck_assert_int_eq(bf_session_read_state(s, "data", &cursor, NULL), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(cursor, 0), 5); /* epoch 5, batch 0 */
    bf_tensor_free(cursor);
    /* The held-out fifth in one batch: the trained state, through a checkpoint, in the same
     * page reading the test files (what `train --checkpoint` then `run` with that page does). */
    char ck[4096], dir[2048], page_path[4096];
    snprintf(ck, sizeof(ck), "/tmp/bf_digits_%d.npz", (int)getpid());
    bf_error e = {0};
    ck_assert_int_eq(bf_session_save_state(s, ck, &e), BF_OK);
    bf_session_free(s);
    snprintf(dir, sizeof(dir), "%s/examples/train", bf_test_source_dir());
    snprintf(page_path, sizeof(page_path), "%s/digits_cnn.json", dir);
    char *text = bf_read_file(page_path, NULL), *eval = malloc(strlen(text) + 64);
    const char *from[] = {"digits_train_x", "digits_train_y", "\"batch_size\": 32"};
    const char *to[] = {"digits_test_x", "digits_test_y", "\"batch_size\": 359"};
    for (int r = 0; r < 3; r++) {
        char *at = strstr(text, from[r]);
        ck_assert_ptr_nonnull(at);
        sprintf(eval, "%.*s%s%s", (int)(at - text), text, to[r], at + strlen(from[r]));
        strcpy(text = realloc(text, strlen(eval) + 1), eval);
    }
    bf_page *page = NULL;
    ck_assert_msg(bf_page_load_string(ctx, eval, strlen(eval), "eval.json", dir, &page, NULL,
                                      &e) == BF_OK, "%s", e.message);
    free(text), free(eval);
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    bf_tensor *cursor0 = NULL;
    ck_assert_int_eq(bf_session_read_state(s, "data", &cursor0, NULL), BF_OK);
    /* the trained Variables; the test set's cursor goes back to its start */
    ck_assert_int_eq(bf_session_load_state(s, ck, &e), BF_OK);
    ck_assert_int_eq(bf_session_write_state(s, "data", cursor0, &e), BF_OK);
    bf_tensor_free(cursor0);
    unlink(ck);
    const char *f[1] = {"accuracy"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f, o.n_fetches = 1;
    ck_assert_msg(bf_session_run(s, &o, NULL, &e) == BF_OK, "%s", e.message);
    double acc = bf_tensor_get_f64(bf_session_output(s, "accuracy", NULL), 0);
    fprintf(stderr, "digits_cnn: held-out accuracy %.4f after 5 epochs\n", acc);
    ck_assert_msg(acc >= 0.95, "held-out accuracy %g", acc);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

int main(void) {
    Suite *su = suite_create("train_examples");
    TCase *tc = tcase_create("examples");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, learn_a_filter);
    tcase_add_test(tc, xor_by_hand);
    tcase_add_test(tc, digits_cnn_generalises);
    suite_add_tcase(su, tc);
    return bf_test_main(su);
}
