/*
 * test_import_mnist.c - enuSpace-Tensorflow's MNIST CNN pages, imported. They and their .dat
 * files (the evaluation page's is 1.1 MB) are not copied into this repository: the tests read
 * them from a checkout of EXPNUNI/enuSpace-Tensorflow named by $BF_ENUSPACE_REPO, and the
 * program exits 77 (ctest: skipped) saying so without it.
 *
 *   cnn_eval_forward: the evaluation page's stored weights give its stored activations and
 *     logits. The page restores its weights from checkpoints that are not in the repository
 *     and reads t10k images that are not either, so the import is --partial (the reader
 *     pipeline, Restore, Switch ... become Placeholders); the test then puts, in place of each
 *     Assign that loads a weight, a Const holding that Assign's cached result (the trained
 *     weights, from the .dat), and in place of the image block (ID_IMAGE, Div by 255) its
 *     cached image, and runs the imported forward model: Reshape, Conv2D, Relu, MaxPool,
 *     Conv2D, Relu, MaxPool, Reshape, MatMul (transpose_b), Add, ArgMax. Every cache of those
 *     blocks must come out within 2e-6 of the tensor's largest magnitude plus 2e-6 relative
 *     (float32 sums of up to 3136 products, accumulated in another order than TensorFlow's).
 */
#include "bf_test.h"
#include "graph.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *repo(void) { return getenv("BF_ENUSPACE_REPO"); }

static char *page_path(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/enu_Tensorflow(1.5)/samples/model_samples/mnist/%s", repo(), rel);
    return buf;
}

/* A Const block holding `v` (written as scratch/<id>.cache.npy). */
static cJSON *const_of(const char *id, const enu_value *v) {
    unsigned char *bytes;
    size_t n;
    ck_assert_int_eq(enu_npy_bytes(v, &bytes, &n), 0);
    char name[200];
    snprintf(name, sizeof name, "%s.cache.npy", id);
    bf_write_bytes(bf_sp(name), bytes, n);
    free(bytes);
    cJSON *b = cJSON_CreateObject(), *a = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "id", id);
    cJSON_AddStringToObject(b, "type", "Const");
    cJSON_AddStringToObject(a, "file", name);
    cJSON_AddItemToObject(b, "attrs", a);
    return b;
}

START_TEST(cnn_eval_forward) {
    const char *path = page_path("convolution neural network/convolution_neural_network_eval.svg");
    size_t plen = 0, dlen = 0;
    char *page = bf_read_file(path, &plen);
    ck_assert_msg(page != NULL, "cannot read %s", path);
    char dat_path[4096];
    snprintf(dat_path, sizeof dat_path, "%.*s.dat", (int)(strlen(path) - 4), path);
    char *dat = bf_read_file(dat_path, &dlen);
    ck_assert_msg(dat != NULL, "cannot read %s", dat_path);
    /* the page reads the t10k IDX files (mapped to Datasets), which the repository lacks:
       stand-ins of one blank image, in the scratch folder (the test replaces the image) */
    static const unsigned char images[16 + 784] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 28, 0, 0, 0, 28};
    static const unsigned char labels[9] = {0, 0, 8, 1, 0, 0, 0, 1, 0};
    bf_write_bytes(bf_sp("t10k-images.idx3-ubyte"), images, sizeof images);
    bf_write_bytes(bf_sp("t10k-labels.idx1-ubyte"), labels, sizeof labels);
    enu_options o;
    enu_options_init(&o);
    o.partial = true;
    o.data_dir = bf_scratch();
    enu_graph g;
    enu_result r;
    char err[512];
    ck_assert_msg(!enu_read_page((unsigned char *)page, plen, &o, &g, err, sizeof err), "%s", err);
    ck_assert_msg(!enu_import((unsigned char *)page, plen, (unsigned char *)dat, dlen, &o, &r),
                  "%s", r.error);
    for (int i = 0; i < r.n_files; i++)
        bf_write_bytes(bf_sp(r.files[i].name), r.files[i].data, r.files[i].size);
    cJSON *pg = cJSON_Parse(r.page_json), *blocks = cJSON_GetObjectItem(pg, "blocks");
    /* the weights and the image: their caches, as Consts */
    int replaced = 0;
    for (int i = 0; i < g.n_blocks; i++) {
        enu_block *b = &g.blocks[i];
        bool image = !strcmp(b->id, "ID_IMAGE");
        if (strcmp(b->symbol, "Assign") && !image) continue;
        enu_pin *c = enu_block_pin(b, image ? "result_z" : "result_output_ref");
        enu_value v;
        if (!c || enu_pin_value((unsigned char *)dat, dlen, c, &o, &v, err, sizeof err) ||
            v.dtype != ENU_F32)
            continue;
        for (int k = 0; k < cJSON_GetArraySize(blocks); k++) {
            cJSON *bj = cJSON_GetArrayItem(blocks, k);
            if (strcmp(cJSON_GetObjectItem(bj, "id")->valuestring, b->id)) continue;
            cJSON_ReplaceItemInArray(blocks, k, const_of(b->id, &v));
            replaced++;
        }
        enu_value_free(&v);
    }
    ck_assert_int_eq(replaced, 5); /* W1, W2, W3, B and the image */
    char *text = cJSON_PrintUnformatted(pg);
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_page *p = NULL;
    bf_error e = {0};
    ck_assert_msg(!bf_page_parse(ctx, text, strlen(text), "eval", bf_scratch(), BF_LOAD_INCOMPLETE,
                                 &p, NULL, &e), "%s: %s", e.block_id, e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, p, &s, &e), BF_OK);
    /* the model's blocks with caches */
    const char *model[] = {"Reshape", "Conv2D", "Relu", "MaxPool", "MatMul", "Add", "ArgMax"};
    const char *fetch[64];
    enu_value want[64];
    int n = 0;
    for (int i = 0; i < g.n_blocks && n < 64; i++) {
        enu_block *b = &g.blocks[i];
        bool in = false;
        for (size_t k = 0; k < sizeof model / sizeof *model; k++) in |= !strcmp(b->symbol, model[k]);
        if (!in) continue;
        for (int k = 0; k < b->n_pins; k++) {
            enu_pin *c = &b->pins[k];
            if (strncmp(c->name, "result_", 7) || (!c->binary && !*c->value)) continue;
            if (enu_pin_value((unsigned char *)dat, dlen, c, &o, &want[n], err, sizeof err)) continue;
            /* the model: what depends on the image (the counters' Adds do not) */
            if (!strcmp(b->symbol, "Add") && want[n].n != 10) {
                enu_value_free(&want[n]);
                continue;
            }
            fetch[n++] = b->id;
        }
    }
    ck_assert_int_ge(n, 11);
    bf_run_options ro;
    bf_run_options_init(&ro);
    ro.fetches = fetch;
    ro.n_fetches = n;
    ck_assert_msg(bf_session_run(s, &ro, NULL, &e) == BF_OK, "%s: %s", e.block_id, e.message);
    for (int i = 0; i < n; i++) {
        const bf_tensor *t = bf_session_output(s, fetch[i], NULL);
        ck_assert_msg(t && bf_tensor_numel(t) == want[i].n, "%s: %lld elements, its cache %lld",
                      fetch[i], t ? (long long)bf_tensor_numel(t) : -1LL, (long long)want[i].n);
        double big = 0, worst = 0;
        for (int64_t k = 0; k < want[i].n; k++) big = fmax(big, fabs(want[i].d[k]));
        for (int64_t k = 0; k < want[i].n; k++) {
            double got = bf_tensor_get_f64(t, k), c = want[i].d[k];
            double tol = 2e-6 * big + 2e-6 * fabs(c) + 1e-30;
            worst = fmax(worst, fabs(got - c) / tol);
            ck_assert_msg(fabs(got - c) <= tol, "%s[%lld] = %.9g, its cache %.9g", fetch[i],
                          (long long)k, got, c);
        }
        fprintf(stderr, "%s: %lld values reproduced, worst at %.3f of the tolerance\n", fetch[i],
                (long long)want[i].n, worst);
        enu_value_free(&want[i]);
    }
    /* the first logit and the answer the page shows */
    const bf_tensor *logits = bf_session_output(s, "ID_1eJCtM2074", NULL);
    ck_assert_ptr_nonnull(logits);
    ck_assert_double_eq_tol(bf_tensor_get_f64(logits, 0), 90.7748, 1e-3);
    bf_session_free(s);
    bf_context_free(ctx);
    free(text);
    cJSON_Delete(pg);
    enu_result_free(&r);
    enu_graph_free(&g);
    free(page);
    free(dat);
}
END_TEST

Suite *suite(void);
Suite *suite(void) {
    Suite *s = suite_create("import_mnist");
    TCase *tc = tcase_create("mnist");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cnn_eval_forward);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    if (!repo() || !*repo()) {
        printf("skipped: set BF_ENUSPACE_REPO to a checkout of EXPNUNI/enuSpace-Tensorflow "
               "(its MNIST pages and .dat files are not copied here)\n");
        return BF_TEST_SKIP;
    }
    return bf_test_main(suite());
}
