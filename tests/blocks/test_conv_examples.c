/*
 * test_conv_examples.c - every page in examples/ loads, checks and runs end to end through the
 * public API (context, page, session), producing finite outputs of the documented shapes; the
 * all-constant input-gradient page is also compared value by value with a plain scatter loop,
 * the SAME page with the sums its description states, and the finite-difference page must
 * agree with the gradient block.
 */
#include "bf_test.h"

#include <math.h>
#include <string.h>

typedef struct example {
    const char *file;
    const char *output;
    int64_t dims[4];
} example;

static const example examples[] = {
    {"filter_grad_valid.json", "dw", {3, 3, 1, 1}}, {"filter_grad_same.json", "dw", {3, 3, 1, 1}},
    {"strided_dilated.json", "y", {1, 3, 3, 4}},    {"nchw.json", "dx", {1, 2, 6, 6}},
    {"depthwise.json", "dw", {2, 2, 2, 3}},         {"input_grad.json", "dx", {1, 7, 7, 1}},
};

/* Run examples/<file>; return the fetched output copied (caller frees), asserting success. */
static bf_tensor *run_page(const char *file, const char *output) {
    char dir[1024], path[1200];
    snprintf(dir, sizeof(dir), "%s/examples", bf_test_source_dir());
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    bf_context *ctx = NULL;
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_error err = {0};
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, &err), BF_OK);
    ck_assert_msg(bf_page_load_file(ctx, path, &page, NULL, &err) == BF_OK, "%s: %s", file,
                  err.message);
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &err), BF_OK);
    bf_run_options opts = {0};
    ck_assert_msg(bf_session_run(s, &opts, NULL, &err) == BF_OK, "%s: %s", file, err.message);
    const bf_tensor *t = bf_session_output(s, output, NULL);
    ck_assert_ptr_nonnull(t);
    bf_tensor *copy = NULL;
    ck_assert_int_eq(bf_tensor_copy(t, &copy, &err), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
    return copy;
}

START_TEST(example_runs) {
    const example *e = &examples[_i];
    bf_tensor *t = run_page(e->file, e->output);
    ck_assert_int_eq(bf_tensor_rank(t), 4);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(bf_tensor_dims(t)[i], e->dims[i]);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++)
        ck_assert_msg(isfinite(bf_tensor_get_f64(t, i)), "%s: element %ld", e->file, (long)i);
    bf_tensor_free(t);
}
END_TEST

START_TEST(input_grad_values) {
    /* The page: w = [[1,2,1],[2,4,2],[1,2,1]], dy = 1..9 (3x3), stride 2, VALID, 7x7 input. */
    const double w[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    double want[49] = {0};
    for (int oh = 0; oh < 3; oh++)
        for (int ow = 0; ow < 3; ow++)
            for (int kh = 0; kh < 3; kh++)
                for (int kw = 0; kw < 3; kw++)
                    want[(oh * 2 + kh) * 7 + ow * 2 + kw] += w[kh * 3 + kw] * (oh * 3 + ow + 1);
    bf_tensor *t = run_page("input_grad.json", "dx");
    for (int i = 0; i < 49; i++) ck_assert_double_eq_tol(bf_tensor_get_f64(t, i), want[i], 1e-5);
    bf_tensor_free(t);
}
END_TEST

START_TEST(same_padding_values) {
    /* dy all ones: each weight sums the pixels (1..25 of the 5x5 image) its taps touched. */
    static const double want[9] = {160, 210, 176, 250, 325, 270, 240, 310, 256};
    bf_tensor *t = run_page("filter_grad_same.json", "dw");
    for (int i = 0; i < 9; i++) ck_assert_double_eq(bf_tensor_get_f64(t, i), want[i]);
    bf_tensor_free(t);
}
END_TEST

START_TEST(finite_difference_page_agrees) {
    bf_tensor *err = run_page("fd_check_filter_grad.json", "error");
    ck_assert_int_eq(bf_tensor_rank(err), 0);
    ck_assert_double_lt(bf_tensor_get_f64(err, 0), 1e-7); /* a wrong pad or layout gives ~1 */
    bf_tensor_free(err);
    bf_tensor *fd = run_page("fd_check_filter_grad.json", "finite_difference");
    ck_assert_double_gt(fabs(bf_tensor_get_f64(fd, 0)), 0.1); /* not trivially zero */
    bf_tensor_free(fd);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("conv_examples");
    TCase *tc = tcase_create("pages");
    tcase_add_loop_test(tc, example_runs, 0, (int)(sizeof(examples) / sizeof(examples[0])));
    tcase_add_test(tc, input_grad_values);
    tcase_add_test(tc, same_padding_values);
    tcase_add_test(tc, finite_difference_page_agrees);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
