/*
 * test_import_samples.c - enuSpace-Tensorflow's own sample pages, imported and run, give the
 * numbers they saved. The pages store each block's last result (`result_*` pins) and the
 * Variables' values at the start of that step (FORMAT.md 3.4); so, with every Variable set to
 * its cached value, one step of the imported page must reproduce the cache of every block that
 * has one, within the precision the cache was written with (3.x pages: "%f", so 5e-7
 * absolute) plus 1e-6 relative, plus what the Variables' own rounding to 6 decimals can move
 * a result (measured: the same step once per Variable element moved by 5e-7, the changes of
 * each result summed, times 1.5). The samples are in tests/data/enuspace (Apache-2.0, see its README); the MNIST
 * CNN evaluation page and its 1.1 MB .dat are read from a checkout of EXPNUNI/enuSpace-Tensorflow
 * named by $BF_ENUSPACE_REPO, skipped (saying so) without it.
 */
#include "bf_test.h"
#include "graph.h"
#include "symgrad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bf_context *ctx_new(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

typedef struct sample {
    char *page;
    size_t page_len;
    char *dat;
    size_t dat_len;
    enu_graph g;
    enu_result r;
    enu_options o;
} sample;

/* Read and import `path` (+ its .dat when there is one); the .npy files go to the scratch. */
static void sample_open(sample *sm, const char *path, bool partial) {
    memset(sm, 0, sizeof(*sm));
    sm->page = bf_read_file(path, &sm->page_len);
    ck_assert_msg(sm->page != NULL, "cannot read %s", path);
    char dat[4096];
    snprintf(dat, sizeof dat, "%.*s.dat", (int)(strrchr(path, '.') - path), path);
    sm->dat = bf_read_file(dat, &sm->dat_len);
    enu_options_init(&sm->o);
    sm->o.partial = partial;
    char err[512];
    ck_assert_msg(!enu_read_page((unsigned char *)sm->page, sm->page_len, &sm->o, &sm->g, err,
                                 sizeof err), "%s: %s", path, err);
    ck_assert_msg(!enu_import((unsigned char *)sm->page, sm->page_len, (unsigned char *)sm->dat,
                              sm->dat_len, &sm->o, &sm->r), "%s: %s", path, sm->r.error);
    for (int i = 0; i < sm->r.n_files; i++)
        bf_write_bytes(bf_sp(sm->r.files[i].name), sm->r.files[i].data, sm->r.files[i].size);
}

static void sample_close(sample *sm) {
    free(sm->page);
    free(sm->dat);
    enu_graph_free(&sm->g);
    enu_result_free(&sm->r);
}

static bf_session *session_of(bf_context *ctx, sample *sm) {
    bf_page *page = NULL;
    bf_error e = {0};
    bf_diags *d = bf_diags_new();
    char *built = NULL, why[600];
    ck_assert_msg(!enu_build_symbolic_gradients(ctx, sm->r.page_json, "imported", bf_scratch(),
                                                &built, why, sizeof why), "%s", why);
    if (built) { /* AddSymbolicGradients, built as blockflow import builds it */
        free(sm->r.page_json);
        sm->r.page_json = strdup(built);
        bf_string_free(built);
    }
    if (bf_page_load_string(ctx, sm->r.page_json, strlen(sm->r.page_json), "imported",
                            bf_scratch(), &page, d, &e))
        ck_abort_msg("the imported page does not load: %s (%s)", e.message, e.block_id);
    bf_diags_free(d);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

/* The cached value of pin `pin` of block `b`, as doubles; false when it has none. */
static bool cache_of(sample *sm, const enu_block *b, const enu_pin *p, enu_value *v) {
    char err[400];
    if (!p->binary && !*p->value) return false;
    return enu_pin_value((unsigned char *)sm->dat, sm->dat_len, p, &sm->o, v, err, sizeof err) == 0;
    (void)b;
}

/* Set every Variable to its cached value `result_ref`, element `pk` of block `pb` moved by
 * `delta`; returns how many were set and adds their element count to *n_elems. */
static int set_variables(bf_session *s, sample *sm, int pb, int64_t pk, double delta,
                         int64_t *n_elems) {
    int n = 0;
    for (int i = 0; i < sm->g.n_blocks; i++) {
        enu_block *b = &sm->g.blocks[i];
        enu_pin *p = enu_block_pin(b, "result_ref");
        enu_value v;
        if (strcmp(b->symbol, "Variable") || !p || !cache_of(sm, b, p, &v)) continue;
        bf_tensor *t = NULL;
        bf_error e = {0};
        ck_assert_msg(bf_session_read_state(s, b->id, &t, &e) == BF_OK, "%s: %s", b->id, e.message);
        ck_assert_msg(bf_tensor_numel(t) == v.n, "Variable %s: %lld elements, its cache %lld",
                      b->id, (long long)bf_tensor_numel(t), (long long)v.n);
        for (int64_t k = 0; k < v.n; k++) {
            double x = v.d[k] + (i == pb && k == pk ? delta : 0);
            if (bf_tensor_dtype(t) == BF_DTYPE_F32) ((float *)bf_tensor_data(t))[k] = (float)x;
            else ((double *)bf_tensor_data(t))[k] = x;
        }
        ck_assert_msg(bf_session_write_state(s, b->id, t, &e) == BF_OK, "%s: %s", b->id, e.message);
        bf_tensor_free(t);
        if (n_elems) *n_elems += v.n;
        enu_value_free(&v);
        n++;
    }
    return n;
}

/* Block index and element of the j-th Variable element with a cache; false past the end. */
static bool variable_element(sample *sm, int64_t j, int *pb, int64_t *pk) {
    for (int i = 0; i < sm->g.n_blocks; i++) {
        enu_block *b = &sm->g.blocks[i];
        enu_pin *p = enu_block_pin(b, "result_ref");
        enu_value v;
        if (strcmp(b->symbol, "Variable") || !p || !cache_of(sm, b, p, &v)) continue;
        int64_t n = v.n;
        enu_value_free(&v);
        if (j < n) {
            *pb = i;
            *pk = j;
            return true;
        }
        j -= n;
    }
    return false;
}

typedef struct cached {
    char ref[200];
    const char *id, *port;
    enu_value v;
} cached;

/* Every op block's caches (not the Variables', which are inputs here). */
static int collect(sample *sm, bf_session *s, cached *out, int max) {
    int n = 0;
    const bf_page *page = bf_session_page(s);
    for (int i = 0; i < sm->g.n_blocks; i++) {
        enu_block *b = &sm->g.blocks[i];
        if (!strcmp(b->symbol, "Variable") || !strcmp(b->symbol, "ClientSession")) continue;
        int bi = bf_page_find_block(page, b->id);
        if (bi < 0) continue; /* display blocks */
        for (int k = 0; k < b->n_pins; k++) {
            enu_pin *p = &b->pins[k];
            if (strncmp(p->name, "result_", 7) || n == max) continue;
            if (!cache_of(sm, b, p, &out[n].v)) continue;
            out[n].id = b->id;
            out[n].port = p->name + 7;
            snprintf(out[n].ref, sizeof out[n].ref, "%s:%s", b->id, p->name + 7);
            n++;
        }
    }
    return n;
}

/* One step with the Variables at their caches (element pk of block pb moved by delta); the
 * results of `c`. */
static void step_results(bf_session *s, sample *sm, cached *c, int n, int pb, int64_t pk,
                         double delta, double **res) {
    ck_assert_int_eq(bf_session_reset(s, NULL), BF_OK);
    set_variables(s, sm, pb, pk, delta, NULL);
    const char *refs[256];
    for (int i = 0; i < n; i++) refs[i] = c[i].ref;
    bf_step_options so;
    bf_step_options_init(&so);
    so.fetches = refs;
    so.n_fetches = n;
    bf_error e = {0};
    ck_assert_msg(bf_session_step(s, 1, &so, NULL, &e) == BF_OK, "step: %s: %s", e.block_id,
                  e.message);
    for (int i = 0; i < n; i++) {
        const bf_tensor *t = bf_session_output(s, c[i].id, c[i].port);
        ck_assert_msg(t != NULL, "no result for %s", c[i].ref);
        ck_assert_msg(bf_tensor_numel(t) == c[i].v.n, "%s: %lld elements, the cache %lld",
                      c[i].ref, (long long)bf_tensor_numel(t), (long long)c[i].v.n);
        res[i] = malloc((size_t)(c[i].v.n ? c[i].v.n : 1) * sizeof(double));
        for (int64_t k = 0; k < c[i].v.n; k++) res[i][k] = bf_tensor_get_f64(t, k);
    }
}

/* Import `rel`, step once from the cached Variables, compare every cache; returns the number
 * of caches compared. */
static int reproduce(const char *path, int min_vars, int min_caches) {
    bf_context *ctx = ctx_new();
    sample sm;
    sample_open(&sm, path, false);
    bf_session *s = session_of(ctx, &sm);
    int64_t n_elems = 0;
    ck_assert_int_ge(set_variables(s, &sm, -1, 0, 0, &n_elems), min_vars);
    cached c[256];
    int n = collect(&sm, s, c, 256);
    ck_assert_int_ge(n, min_caches);
    double *at[256], *sens[256], *moved[256];
    step_results(s, &sm, c, n, -1, 0, 0, at);
    for (int i = 0; i < n; i++) sens[i] = calloc((size_t)(c[i].v.n ? c[i].v.n : 1), sizeof(double));
    /* how far the rounding of each Variable element (to 6 decimals) can move each result */
    int pb;
    int64_t pk;
    for (int64_t j = 0; j < n_elems && variable_element(&sm, j, &pb, &pk); j++) {
        step_results(s, &sm, c, n, pb, pk, 5e-7, moved);
        for (int i = 0; i < n; i++) {
            for (int64_t k = 0; k < c[i].v.n; k++) sens[i][k] += fabs(moved[i][k] - at[i][k]);
            free(moved[i]);
        }
    }
    double worst = 0;
    const char *worst_ref = "";
    for (int i = 0; i < n; i++) {
        for (int64_t k = 0; k < c[i].v.n; k++) {
            double cache = c[i].v.d[k], got = at[i][k];
            double tol = 5e-7 + 1e-6 * fabs(cache) + 1.5 * sens[i][k] + 1e-12;
            double excess = fabs(got - cache) / tol;
            if (excess > worst) worst = excess, worst_ref = c[i].ref;
            ck_assert_msg(excess <= 1, "%s: %s[%lld] = %.9g, its cache %.9g (tolerance %.3g, "
                          "of which %.3g from the Variables' rounding)",
                          path, c[i].ref, (long long)k, got, cache, tol, 1.5 * sens[i][k]);
        }
        free(at[i]);
        free(sens[i]);
        enu_value_free(&c[i].v);
    }
    fprintf(stderr, "%s: %d caches reproduced, worst at %.2f of the tolerance (%s)\n",
            strrchr(path, '/') + 1, n, worst, worst_ref);
    bf_session_free(s);
    sample_close(&sm);
    bf_context_free(ctx);
    return n;
}

static const char *data(const char *rel) {
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/tests/data/enuspace/%s", bf_test_source_dir(), rel);
    return buf[k];
}

START_TEST(basic_1_5_matmul) {
    reproduce(data("1.5/basic.svg"), 0, 3);
    /* and the numbers the issue names: [[19], [-3]] */
    bf_context *ctx = ctx_new();
    const char *pages[] = {"1.5/basic.svg", "1.5/basic.json"};
    for (int p = 0; p < 2; p++) {
        sample sm;
        sample_open(&sm, data(pages[p]), false);
        bf_session *s = session_of(ctx, &sm);
        bf_run_options ro;
        bf_run_options_init(&ro);
        ck_assert_int_eq(bf_session_run(s, &ro, NULL, NULL), BF_OK);
        const bf_tensor *t = bf_session_output(s, "ID_MUL", NULL);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F64);
        ck_assert_int_eq(bf_tensor_rank(t), 2);
        ck_assert_int_eq(bf_tensor_dims(t)[0], 2);
        ck_assert_int_eq(bf_tensor_dims(t)[1], 1);
        ck_assert(bf_tensor_get_f64(t, 0) == 19 && bf_tensor_get_f64(t, 1) == -3);
        bf_session_free(s);
        sample_close(&sm);
    }
    bf_context_free(ctx);
}
END_TEST

START_TEST(basic_2_0_add) {
    reproduce(data("2.0/basic.svg"), 0, 3);
    bf_context *ctx = ctx_new();
    const char *pages[] = {"2.0/basic.svg", "2.0.1/basic.json"};
    for (int p = 0; p < 2; p++) {
        sample sm;
        sample_open(&sm, data(pages[p]), false);
        bf_session *s = session_of(ctx, &sm);
        bf_run_options ro;
        bf_run_options_init(&ro);
        ck_assert_int_eq(bf_session_run(s, &ro, NULL, NULL), BF_OK);
        const bf_page *pg = bf_session_page(s);
        ck_assert_int_eq(bf_page_output_count(pg), 1);
        const bf_tensor *t = bf_session_output(s, bf_page_output(pg, 0), NULL);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(bf_tensor_numel(t), 4);
        for (int k = 0; k < 4; k++) ck_assert(bf_tensor_get_f64(t, k) == 2.0 * (k + 1));
        bf_session_free(s);
        sample_close(&sm);
    }
    bf_context_free(ctx);
}
END_TEST

START_TEST(gradient_descent_xw_apply) { reproduce(data("1.5/gradient_descent_xw_apply.svg"), 3, 8); }
END_TEST
START_TEST(gradient_descent_xw_sub) { reproduce(data("1.5/gradient_descent_xw_sub.svg"), 3, 9); }
END_TEST
START_TEST(gradient_descent_xnwn_b) { reproduce(data("1.5/gradient_descent_xnwn_b.svg"), 4, 10); }
END_TEST
START_TEST(xor) { reproduce(data("1.5/Xor.svg"), 4, 30); }
END_TEST
START_TEST(xor2) { reproduce(data("1.5/Xor2.svg"), 4, 20); }
END_TEST
/* AddSymbolicGradients, its gradients built by blockflow's grad builder: the six
 * ApplyGradientDescent results and everything else the page cached */
START_TEST(add_symbolic_gradients) { reproduce(data("1.5/addsymbolicgradients.svg"), 6, 20); }
END_TEST

/* The 2.0 SVG page and the 2.0.1 Task JSON export of gradient_descent_xnwn_b describe the
 * 1.5 page's graph (their caches were re-saved with one element each, so they are not
 * compared): from the same initial values, 20 steps give the 1.5 page's W, b and cost. */
START_TEST(gradient_descent_versions_agree) {
    const char *pages[3] = {"1.5/gradient_descent_xnwn_b.svg", "2.0/gradient_descent_xnwn_b.svg",
                            "2.0.1/gradient_descent_xnwn_b.json"};
    const char *ids[3] = {"ID_COST", "ID_W", "ID_B"};
    double got[3][3][3];
    bf_context *ctx = ctx_new();
    for (int p = 0; p < 3; p++) {
        sample sm;
        sample_open(&sm, data(pages[p]), false);
        bf_session *s = session_of(ctx, &sm);
        bf_error e = {0};
        ck_assert_msg(bf_session_step(s, 20, NULL, NULL, &e) == BF_OK, "%s: %s", pages[p], e.message);
        for (int v = 0; v < 3; v++) {
            bf_tensor *t = NULL;
            if (v == 0) {
                const bf_tensor *c = bf_session_output(s, "ID_COST", NULL);
                ck_assert_ptr_nonnull(c);
                for (int k = 0; k < 3; k++) got[p][v][k] = bf_tensor_get_f64(c, k < bf_tensor_numel(c) ? k : 0);
                continue;
            }
            ck_assert_msg(bf_session_read_state(s, ids[v], &t, &e) == BF_OK, "%s %s: %s", pages[p],
                          ids[v], e.message);
            for (int k = 0; k < 3; k++) got[p][v][k] = bf_tensor_get_f64(t, k < bf_tensor_numel(t) ? k : 0);
            bf_tensor_free(t);
        }
        bf_session_free(s);
        sample_close(&sm);
    }
    for (int p = 1; p < 3; p++)
        for (int v = 0; v < 3; v++)
            for (int k = 0; k < 3; k++)
                ck_assert_msg(got[p][v][k] == got[0][v][k], "%s: %s[%d] = %.17g, the 1.5 page's %.17g",
                              pages[p], v ? ids[v] : "ID_COST", k, got[p][v][k], got[0][v][k]);
    bf_context_free(ctx);
}
END_TEST

Suite *suite(void);
Suite *suite(void) {
    Suite *s = suite_create("import_samples");
    TCase *tc = tcase_create("samples");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, basic_1_5_matmul);
    tcase_add_test(tc, basic_2_0_add);
    tcase_add_test(tc, gradient_descent_xw_apply);
    tcase_add_test(tc, gradient_descent_xw_sub);
    tcase_add_test(tc, gradient_descent_xnwn_b);
    tcase_add_test(tc, xor);
    tcase_add_test(tc, xor2);
    tcase_add_test(tc, add_symbolic_gradients);
    tcase_add_test(tc, gradient_descent_versions_agree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
