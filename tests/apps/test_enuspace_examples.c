/*
 * test_enuspace_examples.c - examples/enuspace/: enuSpace-Tensorflow's MNIST CNN training page
 * as `blockflow import` makes it (cnn_handwired.json, its backward pass wired by hand) and the
 * same forward pass with the backward pass built by `grad --loss` (cnn_grad.json). Each page
 * is canonical (fmt leaves it unchanged); both start from the same weights; after 3 steps on
 * the same batches the whole-page gradient check (float64 central differences of `loss`, the
 * batch sum of the cross-entropy) finds the grad-built pass right for every Variable and the
 * hand-wired one right for W3 only: its dB is the batch mean (1/100 of the true gradient,
 * relative error 0.99) and its dW1 and dW2 differentiate each conv+ReLU+max-pool stage as one
 * stride-2 convolution (relative errors of order 1). Then 30 steps of each lower the loss.
 * The IDX data (examples/enuspace/dataset) is written at build time from python3-sklearn's
 * digits (examples/data/make_mnist_idx.py): without it the test fails saying so.
 */
#include "bf_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bf_session *open_page(bf_context *ctx, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/enuspace/%s", bf_test_source_dir(), name);
    char data[4096];
    snprintf(data, sizeof data, "%s/examples/enuspace/dataset/train-images.idx3-ubyte",
             bf_test_source_dir());
    ck_assert_msg(bf_exists(data), "%s is missing: it is written at build time from "
                  "python3-sklearn (examples/data/make_mnist_idx.py)", data);
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_file(ctx, path, &page, NULL, &e)) ck_abort_msg("%s: %s", name, e.message);
    char *text = NULL;
    ck_assert_int_eq(bf_page_to_json(page, &text, &e), BF_OK);
    char *file = bf_read_file(path, NULL);
    ck_assert_msg(file && !strcmp(file, text), "%s is not in canonical form", name);
    free(file);
    bf_string_free(text);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

static double first(bf_session *s, const char *id) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_session_read_state(s, id, &t, NULL), BF_OK);
    double v = bf_tensor_get_f64(t, 0);
    bf_tensor_free(t);
    return v;
}

/* The gradient check's max relative error per Variable, in the order W3, B, W1, W2. */
static void gradcheck(bf_session *s, double err[4]) {
    bf_gradcheck_options o;
    bf_gradcheck_options_init(&o);
    o.samples = 12;
    char *json = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_session_check_gradients(s, "loss", &o, &json, &e) == BF_OK, "%s", e.message);
    cJSON *j = cJSON_Parse(json), *v;
    const char *ids[4] = {"ID_1eQnn4809", "ID_1eQnn4833", "ID_W1", "ID_W2"};
    int found = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(j, "variables")) {
        const char *id = cJSON_GetObjectItem(v, "variable")->valuestring;
        for (int k = 0; k < 4; k++)
            if (!strcmp(id, ids[k])) {
                err[k] = cJSON_GetObjectItem(v, "max_rel_error")->valuedouble;
                found++;
            }
    }
    ck_assert_int_eq(found, 4);
    fprintf(stderr, "gradcheck: W3 %.3g, B %.3g, W1 %.3g, W2 %.3g\n", err[0], err[1], err[2],
            err[3]);
    cJSON_Delete(j);
    bf_string_free(json);
}

static double loss_after(bf_session *s, int n) {
    const char *fetch[] = {"loss"};
    bf_step_options so;
    bf_step_options_init(&so);
    so.fetches = fetch;
    so.n_fetches = 1;
    bf_error e = {0};
    ck_assert_msg(bf_session_step(s, n, &so, NULL, &e) == BF_OK, "%s: %s", e.block_id, e.message);
    return bf_tensor_get_f64(bf_session_output(s, "loss", NULL), 0);
}

START_TEST(handwired_and_grad_built) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    bf_session *hand = open_page(ctx, "cnn_handwired.json"), *grad = open_page(ctx, "cnn_grad.json");
    const char *vars[4] = {"ID_1eQnn4809", "ID_1eQnn4833", "ID_W1", "ID_W2"};
    for (int k = 0; k < 4; k++) ck_assert(first(hand, vars[k]) == first(grad, vars[k]));
    double l0h = loss_after(hand, 3), l0g = loss_after(grad, 3);
    double eh[4], eg[4];
    gradcheck(grad, eg);
    for (int k = 0; k < 4; k++) ck_assert_msg(eg[k] < 1e-4, "grad-built pass: %s off by %g", vars[k], eg[k]);
    gradcheck(hand, eh);
    ck_assert_msg(eh[0] < 1e-4, "hand-wired dW3 off by %g", eh[0]);
    ck_assert_msg(fabs(eh[1] - 0.99) < 1e-3, "hand-wired dB: %g, not the batch mean's 0.99", eh[1]);
    ck_assert_msg(eh[2] > 0.3 && eh[3] > 0.3, "hand-wired dW1 %g, dW2 %g: not far off?", eh[2], eh[3]);
    /* and both train */
    double l1h = loss_after(hand, 30), l1g = loss_after(grad, 30);
    fprintf(stderr, "loss (batch sum of cross-entropy): hand-wired %.4g -> %.4g, grad %.4g -> %.4g\n",
            l0h, l1h, l0g, l1g);
    ck_assert(isfinite(l1h) && isfinite(l1g) && l1h < l0h && l1g < l0g);
    bf_session_free(hand);
    bf_session_free(grad);
    bf_context_free(ctx);
}
END_TEST

Suite *suite(void);
Suite *suite(void) {
    Suite *s = suite_create("enuspace_examples");
    TCase *tc = tcase_create("examples");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, handwired_and_grad_built);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
