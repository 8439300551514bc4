/*
 * test_null_handles.c - every public function of include/blockflow.h called with NULL for its
 * handles (context, page, session, tensor, diags, error record) and for its out-parameters:
 * each returns BF_EINVAL (or its documented "nothing" value: NULL, 0, -1, a no-op) and never
 * crashes. Each probe runs in its own forked process (a loop test), so one crash names its
 * function. A last test reads the header and fails when a public function has no probe here,
 * so a new function cannot skip the rule.
 */
#include "bf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(c)                                                                              \
    do {                                                                                       \
        if (!(c)) return #c;                                                                   \
    } while (0)

static const char *PAGE = "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["
                          "{\"id\":\"x\",\"type\":\"Placeholder\"},"
                          "{\"id\":\"y\",\"type\":\"Identity\",\"inputs\":{\"input\":\"x\"}}],"
                          "\"outputs\":[\"y\"]}";

static bf_context *ctx(void) {
    bf_context *c = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &c, NULL), BF_OK);
    return c;
}

static bf_page *page(bf_context *c) {
    bf_page *p = NULL;
    ck_assert_int_eq(bf_page_load_string(c, PAGE, strlen(PAGE), "p", NULL, &p, NULL, NULL),
                     BF_OK);
    return p;
}

static bf_session *session(bf_context *c) {
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(c, page(c), &s, NULL), BF_OK);
    return s;
}

/* ---- probes: NULL when the function behaved, else the expectation that failed ------------- */

#define S (bf_session *)NULL
static bf_error E;

static const char *p_status(void) {
    EXPECT(bf_status_name((bf_status)12345) && bf_strerror((bf_status)12345));
    return NULL;
}
static const char *p_error(void) {
    char buf[16] = "x";
    EXPECT(bf_error_format(NULL, buf, sizeof(buf)) >= 0);
    char *out = (char *)1;
    EXPECT(bf_error_json(NULL, &out, &E) == BF_EINVAL && out == NULL);
    EXPECT(bf_error_json(&E, NULL, &E) == BF_EINVAL);
    bf_error_clear(NULL);
    EXPECT(bf_json_check(NULL, 3, 0, &E) == BF_EINVAL);
    EXPECT(bf_error_code_meaning(NULL) == NULL && bf_error_codes(NULL) > 0);
    return NULL;
}
static const char *p_diags(void) {
    bf_diags_free(NULL);
    bf_diags_clear(NULL);
    EXPECT(bf_diags_count(NULL) == 0 && bf_diags_errors(NULL) == 0);
    EXPECT(bf_diags_at(NULL, 0) == NULL);
    bf_diags *d = bf_diags_new();
    EXPECT(d != NULL);
    bf_diags_free(d);
    return NULL;
}
static const char *p_allocator(void) {
    bf_replace_allocator(NULL, NULL, NULL, NULL); /* NULL: the default hooks */
    return NULL;
}
static const char *p_dtype(void) {
    EXPECT(bf_dtype_from_name(NULL) == BF_DTYPE_INVALID);
    EXPECT(!strcmp(bf_dtype_name((bf_dtype)99), "invalid") && bf_dtype_size((bf_dtype)99) == 0);
    return NULL;
}
static const char *p_tensor_make(void) {
    int64_t d[1] = {2};
    float f[2] = {0};
    bf_tensor *t = (bf_tensor *)1;
    EXPECT(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, NULL, &E) == BF_EINVAL);
    EXPECT(bf_tensor_new(NULL, BF_DTYPE_F32, 1, NULL, &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_tensor_new_uninit(NULL, BF_DTYPE_F32, 1, d, NULL, &E) == BF_EINVAL);
    EXPECT(bf_tensor_wrap(NULL, BF_DTYPE_F32, 1, d, f, 8, NULL, NULL, NULL, &E) == BF_EINVAL);
    EXPECT(bf_tensor_copy(NULL, &t, &E) == BF_EINVAL && !t);
    bf_tensor_free(NULL);
    return NULL;
}
static const char *p_tensor_get(void) {
    EXPECT(bf_tensor_dtype(NULL) == BF_DTYPE_INVALID && bf_tensor_rank(NULL) == -1);
    EXPECT(bf_tensor_dims(NULL) == NULL && bf_tensor_numel(NULL) == 0);
    EXPECT(bf_tensor_nbytes(NULL) == 0 && !bf_tensor_data(NULL) && !bf_tensor_cdata(NULL));
    EXPECT(isnan(bf_tensor_get_f64(NULL, 0)));
    return NULL;
}
static const char *p_tensor_files(void) {
    bf_tensor *t = (bf_tensor *)1;
    EXPECT(bf_tensor_load_npy(NULL, NULL, &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_tensor_load_npy(NULL, "x.npy", NULL, &E) == BF_EINVAL);
    t = (bf_tensor *)1;
    EXPECT(bf_tensor_load_npy_mem(NULL, NULL, 4, "m", &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_tensor_load_npy_mem(NULL, "x", 1, NULL, NULL, &E) == BF_EINVAL);
    bf_tensor_stats ts = {.count = 5};
    bf_tensor_stats_of(NULL, &ts);
    EXPECT(ts.count == 0 && ts.finite == 0);
    bf_tensor_stats_of(NULL, NULL);
    EXPECT(bf_tensor_save_npy(NULL, "x.npy", &E) == BF_EINVAL);
    int64_t d[1] = {1};
    bf_tensor *u = NULL;
    EXPECT(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &u, &E) == BF_OK);
    bf_status st = bf_tensor_save_npy(u, NULL, &E);
    bf_tensor_free(u);
    EXPECT(st == BF_EINVAL);
    t = (bf_tensor *)1;
    EXPECT(bf_tensor_load_npz(NULL, NULL, "k", &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_tensor_load_npz(NULL, "x.npz", NULL, &t, &E) == BF_EINVAL);
    EXPECT(bf_tensor_load_npz(NULL, "x.npz", "k", NULL, &E) == BF_EINVAL);
    const char *keys[1] = {"k"};
    const bf_tensor *none[1] = {NULL};
    EXPECT(bf_tensor_save_npz(NULL, keys, none, 1, &E) == BF_EINVAL);
    EXPECT(bf_tensor_save_npz("x.npz", keys, none, 1, &E) == BF_EINVAL);
    EXPECT(bf_tensor_save_npz("x.npz", NULL, NULL, 1, &E) == BF_EINVAL);
    return NULL;
}
static const char *p_context(void) {
    bf_config_init(NULL);
    EXPECT(bf_context_new(NULL, NULL, &E) == BF_EINVAL);
    bf_context_free(NULL);
    EXPECT(bf_context_config(NULL) == NULL && bf_context_has_gpu(NULL) == 0);
    const char *d = bf_context_devices(NULL);
    EXPECT(d == NULL || d[0] != '\0' || 1);
    /* the job of a NULL context is one process: rank 0 of 1, nothing reduced, no abort */
    EXPECT(bf_context_rank(NULL) == 0 && bf_context_size(NULL) == 1 && bf_context_job(NULL));
    int64_t calls = -1, bytes = -1;
    double secs = -1;
    bf_context_job_stats(NULL, &calls, &bytes, &secs);
    EXPECT(calls == 0 && bytes == 0 && secs == 0);
    bf_context_job_stats(NULL, NULL, NULL, NULL);
    bf_context_abort(NULL, 1);
    EXPECT(bf_launched_by_mpi() == 0 || bf_launched_by_mpi() == 1);
    /* a group of threads: NULL out refused, NULL group has no ranks and frees as nothing */
    EXPECT(bf_group_new(2, NULL, &E) == BF_EINVAL && bf_group_size(NULL) == 0);
    bf_group_free(NULL);
    return NULL;
}
static const char *p_catalog(void) {
    EXPECT(bf_block_type_count() > 0 && bf_block_type_name(-1) == NULL);
    EXPECT(bf_block_catalog_json(NULL, NULL, &E) == BF_EINVAL);
    EXPECT(bf_block_catalog_text(NULL, NULL, &E) == BF_EINVAL);
    bf_string_free(NULL);
    return NULL;
}
static const char *p_page_load(void) {
    bf_context *c = ctx();
    bf_page *p = (bf_page *)1;
    EXPECT(bf_page_load_file(NULL, "p.json", &p, NULL, &E) == BF_EINVAL && !p);
    EXPECT(bf_page_load_file(c, NULL, &p, NULL, &E) == BF_EINVAL);
    EXPECT(bf_page_load_file(c, "p.json", NULL, NULL, &E) == BF_EINVAL);
    p = (bf_page *)1;
    EXPECT(bf_page_load_string(NULL, PAGE, strlen(PAGE), "p", NULL, &p, NULL, &E) ==
           BF_EINVAL && !p);
    EXPECT(bf_page_load_string(c, NULL, 10, "p", NULL, &p, NULL, &E) == BF_EINVAL);
    EXPECT(bf_page_load_string(c, PAGE, strlen(PAGE), "p", NULL, NULL, NULL, &E) == BF_EINVAL);
    EXPECT(bf_page_parse(NULL, PAGE, strlen(PAGE), "p", NULL, 0, &p, NULL, &E) == BF_EINVAL);
    EXPECT(bf_page_parse(c, NULL, 10, "p", NULL, 0, &p, NULL, &E) == BF_EINVAL);
    EXPECT(bf_page_parse(c, PAGE, strlen(PAGE), "p", NULL, 0, NULL, NULL, &E) == BF_EINVAL);
    bf_context_free(c);
    return NULL;
}
static const char *p_page_get(void) {
    char *out = (char *)1;
    EXPECT(bf_page_format_json(NULL, 3, &out, &E) == BF_EINVAL && !out);
    EXPECT(bf_page_format_json(PAGE, strlen(PAGE), NULL, &E) == BF_EINVAL);
    out = (char *)1;
    EXPECT(bf_page_to_json(NULL, &out, &E) == BF_EINVAL && !out);
    bf_context *c = ctx();
    bf_page *p = page(c);
    bf_status st = bf_page_to_json(p, NULL, &E);
    bf_page_free(p);
    bf_context_free(c);
    EXPECT(st == BF_EINVAL);
    bf_page_free(NULL);
    EXPECT(!bf_page_name(NULL) && !bf_page_description(NULL) && !bf_page_file(NULL));
    EXPECT(bf_page_block_count(NULL) == 0 && !bf_page_block_id(NULL, 0));
    EXPECT(!bf_page_block_type(NULL, 0) && bf_page_output_count(NULL) == 0);
    EXPECT(!bf_page_output(NULL, 0) && bf_page_find_block(NULL, "x") == -1);
    EXPECT(bf_page_block_input_count(NULL, 0) == 0 && !bf_page_block_input_name(NULL, 0, 0));
    EXPECT(!bf_page_block_input_source(NULL, 0, 0));
    return NULL;
}
static const char *p_session_life(void) {
    bf_context *c = ctx();
    bf_session *s = (bf_session *)1;
    EXPECT(bf_session_new(NULL, page(c), &s, &E) == BF_EINVAL && !s); /* the page is freed */
    EXPECT(bf_session_new(c, NULL, &s, &E) == BF_EINVAL);
    EXPECT(bf_session_new(c, page(c), NULL, &E) == BF_EINVAL);
    bf_session_free(NULL);
    EXPECT(bf_session_page(NULL) == NULL);
    bf_run_options_init(NULL);
    bf_context_free(c);
    return NULL;
}
static const char *p_session_edit(void) {
    const char *refs[1] = {"y"};
    EXPECT(bf_session_check(S, NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_feed(S, "x", NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_feed_tensor(S, "x", NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_add_block(S, "z", "Identity", NULL, NULL, NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_remove_block(S, "y", &E) == BF_EINVAL);
    EXPECT(bf_session_rename_block(S, "y", "z", &E) == BF_EINVAL);
    EXPECT(bf_session_connect(S, "y", "input", "x", &E) == BF_EINVAL);
    EXPECT(bf_session_disconnect(S, "y", "input", &E) == BF_EINVAL);
    EXPECT(bf_session_set_attr(S, "x", "dtype", "\"float64\"", &E) == BF_EINVAL);
    EXPECT(bf_session_set_device(S, "y", "cpu", &E) == BF_EINVAL);
    EXPECT(bf_session_set_ui(S, "y", NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_set_outputs(S, refs, 1, &E) == BF_EINVAL);
    EXPECT(bf_session_set_name(S, "n", &E) == BF_EINVAL);
    EXPECT(bf_session_set_description(S, "d", &E) == BF_EINVAL);
    EXPECT(bf_session_apply_edits(S, "[]", 2, NULL, &E) == BF_EINVAL);
    EXPECT(!strcmp(E.code, "bad_argument"));
    return NULL;
}
static const char *p_session_edit_args(void) {
    bf_context *c = ctx();
    bf_session *s = session(c);
    const char *r = NULL;
    if (bf_session_rename_block(s, "y", NULL, &E) == BF_OK) r = "rename to NULL";
    if (bf_session_connect(s, "y", "input", NULL, &E) == BF_OK) r = "connect to NULL";
    if (bf_session_add_block(s, NULL, "Identity", NULL, NULL, NULL, &E) == BF_OK) r = "add NULL";
    if (bf_session_add_block(s, "z", NULL, NULL, NULL, NULL, &E) == BF_OK) r = "add type NULL";
    if (bf_session_set_outputs(s, NULL, 1, &E) == BF_OK) r = "outputs NULL";
    if (bf_session_apply_edits(s, NULL, 2, NULL, &E) == BF_OK) r = "edits NULL";
    if (bf_session_set_device(s, "y", NULL, &E) == BF_OK) r = "device NULL";
    bf_session_free(s);
    bf_context_free(c);
    return r;
}
static const char *p_session_query(void) {
    bf_port_shape ps;
    char *out = (char *)1;
    char buf[32];
    EXPECT(bf_session_port_shape(S, "y", NULL, 1, &ps, &E) == BF_EINVAL);
    EXPECT(bf_port_shape_format(NULL, buf, sizeof(buf)) >= 0);
    EXPECT(bf_session_check_json(S, &out, &E) == BF_EINVAL && !out);
    EXPECT(bf_session_run(S, NULL, NULL, &E) == BF_EINVAL);
    bf_session_cancel(NULL);
    EXPECT(bf_session_output(S, "y", NULL) == NULL);
    bf_tensor *t = (bf_tensor *)1;
    EXPECT(bf_session_take_output(S, "y", NULL, &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_session_peak_bytes(NULL) == 0 && bf_session_cached_bytes(NULL) == 0);
    EXPECT(bf_session_block_stats(NULL, 0) == NULL && bf_session_block_output_count(NULL, 0) == 0);
    EXPECT(bf_session_block_output_name(NULL, 0, 0) == NULL);
    bf_context *c = ctx();
    bf_session *s = session(c);
    const char *r = NULL;
    if (bf_session_port_shape(s, "y", NULL, 1, NULL, &E) != BF_EINVAL) r = "port_shape out";
    if (bf_session_check_json(s, NULL, &E) != BF_EINVAL) r = "check_json out";
    if (bf_session_take_output(s, "y", NULL, NULL, &E) != BF_EINVAL) r = "take out";
    bf_session_free(s);
    bf_context_free(c);
    return r;
}
static const char *p_session_teach(void) {
    char *out = (char *)1;
    int64_t idx[1] = {0};
    bf_explain_options_init(NULL);
    bf_gradcheck_options_init(NULL);
    EXPECT(bf_session_explain(S, "y", idx, 1, NULL, &out, &E) == BF_EINVAL && !out);
    out = (char *)1;
    EXPECT(bf_session_gradcheck(S, "y", NULL, &out, &E) == BF_EINVAL && !out);
    out = (char *)1;
    EXPECT(bf_session_add_gradients(S, "y", NULL, &out, &E) == BF_EINVAL && !out);
    bf_context *c = ctx();
    bf_session *s = session(c);
    const char *r = NULL;
    if (bf_session_explain(s, "y", NULL, 1, NULL, &out, &E) != BF_EINVAL) r = "explain index";
    if (bf_session_explain(s, "y", idx, 1, NULL, NULL, &E) != BF_EINVAL) r = "explain out";
    if (bf_session_gradcheck(s, "y", NULL, NULL, &E) != BF_EINVAL) r = "gradcheck out";
    if (bf_session_add_gradients(s, "y", NULL, NULL, &E) != BF_EINVAL) r = "add_gradients out";
    bf_session_free(s);
    bf_context_free(c);
    return r;
}
static const char *p_session_state(void) {
    bf_tensor *t = (bf_tensor *)1;
    char *out = (char *)1;
    bf_step_options_init(NULL);
    EXPECT(bf_session_step(S, 1, NULL, NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_step_count(NULL) == 0 && bf_session_reset(S, &E) == BF_EINVAL);
    EXPECT(bf_session_state_count(NULL) == 0 && bf_session_state_id(NULL, 0) == NULL);
    EXPECT(bf_session_read_state(S, "w", &t, &E) == BF_EINVAL && !t);
    EXPECT(bf_session_write_state(S, "w", NULL, &E) == BF_EINVAL);
    EXPECT(bf_session_save_state(S, "s.npz", &E) == BF_EINVAL);
    EXPECT(bf_session_load_state(S, "s.npz", &E) == BF_EINVAL);
    EXPECT(bf_session_build_gradients(S, "y", NULL, 0, NULL, &out, &E) == BF_EINVAL && !out);
    out = (char *)1;
    bf_grad_options_init(NULL);
    EXPECT(bf_session_build_gradients_opts(S, "y", NULL, 0, NULL, &out, &E) == BF_EINVAL && !out);
    out = (char *)1;
    EXPECT(bf_session_check_gradients(S, "y", NULL, &out, &E) == BF_EINVAL && !out);
    bf_context *c = ctx();
    bf_session *s = session(c);
    const char *r = NULL;
    if (bf_session_read_state(s, "x", NULL, &E) != BF_EINVAL) r = "read_state out";
    if (bf_session_write_state(s, "x", NULL, &E) != BF_EINVAL) r = "write_state value";
    if (bf_session_save_state(s, NULL, &E) != BF_EINVAL) r = "save_state path";
    if (bf_session_load_state(s, NULL, &E) != BF_EINVAL) r = "load_state path";
    if (bf_session_build_gradients(s, NULL, NULL, 0, NULL, &out, &E) == BF_OK) r = "loss NULL";
    if (bf_session_build_gradients(s, "y", NULL, 0, NULL, NULL, &E) != BF_EINVAL) r = "bg out";
    if (bf_session_build_gradients_opts(s, NULL, NULL, 0, NULL, &out, &E) == BF_OK) r = "bgo loss";
    if (bf_session_build_gradients_opts(s, "y", NULL, 0, NULL, NULL, &E) != BF_EINVAL)
        r = "bgo out";
    if (bf_session_check_gradients(s, "y", NULL, NULL, &E) != BF_EINVAL) r = "cg out";
    if (bf_session_check_gradients(s, NULL, NULL, &out, &E) == BF_OK) r = "cg loss NULL";
    bf_session_free(s);
    bf_context_free(c);
    return r;
}

/* Each probe and the public functions it covers (checked against the header below). */
static const struct {
    const char *(*fn)(void);
    const char *covers;
} probes[] = {
    {p_status, "bf_status_name bf_strerror"},
    {p_error, "bf_error_format bf_error_json bf_error_clear bf_json_check "
                "bf_error_code_meaning bf_error_codes"},
    {p_diags, "bf_diags_new bf_diags_free bf_diags_clear bf_diags_count bf_diags_errors "
              "bf_diags_at"},
    {p_allocator, "bf_replace_allocator"},
    {p_dtype, "bf_dtype_name bf_dtype_from_name bf_dtype_size"},
    {p_tensor_make, "bf_tensor_new bf_tensor_new_uninit bf_tensor_wrap bf_tensor_free "
                    "bf_tensor_copy"},
    {p_tensor_get, "bf_tensor_dtype bf_tensor_rank bf_tensor_dims bf_tensor_numel "
                   "bf_tensor_nbytes bf_tensor_data bf_tensor_cdata bf_tensor_get_f64"},
    {p_tensor_files, "bf_tensor_load_npy bf_tensor_save_npy bf_tensor_load_npz "
                     "bf_tensor_save_npz bf_tensor_load_npy_mem bf_tensor_stats_of"},
    {p_context, "bf_config_init bf_context_new bf_context_free bf_context_config "
                "bf_context_has_gpu bf_context_devices bf_context_rank bf_context_size "
                "bf_context_job bf_context_job_stats bf_context_abort bf_launched_by_mpi "
                "bf_group_new bf_group_size bf_group_free"},
    {p_catalog, "bf_block_type_count bf_block_type_name bf_block_catalog_json "
                "bf_block_catalog_text bf_string_free"},
    {p_page_load, "bf_page_load_file bf_page_load_string bf_page_parse"},
    {p_page_get, "bf_page_format_json bf_page_to_json bf_page_free bf_page_name bf_page_description bf_page_file "
                 "bf_page_block_count bf_page_block_id bf_page_block_type bf_page_output_count "
                 "bf_page_output bf_page_find_block bf_page_block_input_count "
                 "bf_page_block_input_name bf_page_block_input_source"},
    {p_session_life, "bf_session_new bf_session_free bf_session_page bf_run_options_init"},
    {p_session_edit, "bf_session_check bf_session_feed bf_session_feed_tensor "
                     "bf_session_add_block bf_session_remove_block bf_session_rename_block "
                     "bf_session_connect bf_session_disconnect bf_session_set_attr "
                     "bf_session_set_device bf_session_set_ui bf_session_set_outputs "
                     "bf_session_set_name bf_session_set_description bf_session_apply_edits"},
    {p_session_edit_args, ""},
    {p_session_query, "bf_session_port_shape bf_port_shape_format bf_session_check_json "
                      "bf_session_run bf_session_cancel bf_session_output "
                      "bf_session_take_output bf_session_peak_bytes bf_session_cached_bytes "
                      "bf_session_block_stats bf_session_block_output_count "
                      "bf_session_block_output_name"},
    {p_session_teach, "bf_explain_options_init bf_session_explain bf_gradcheck_options_init "
                      "bf_session_gradcheck bf_session_add_gradients"},
    {p_session_state, "bf_step_options_init bf_session_step bf_session_step_count "
                      "bf_session_reset bf_session_state_count bf_session_state_id "
                      "bf_session_read_state bf_session_write_state bf_session_save_state "
                      "bf_session_load_state bf_session_build_gradients "
                      "bf_grad_options_init bf_session_build_gradients_opts "
                      "bf_session_check_gradients"},
};

START_TEST(null_arguments) {
    const char *why = probes[_i].fn();
    ck_assert_msg(why == NULL, "probe %d (%s): %s", _i, probes[_i].covers, why ? why : "");
}
END_TEST

/* Every BF_API function of the header is covered by a probe above. */
START_TEST(every_public_function_is_probed) {
    char path[4096];
    bf_test_path(path, sizeof(path), bf_test_source_dir(), "include/blockflow.h");
    char *h = bf_read_file(path, NULL);
    ck_assert_ptr_nonnull(h);
    int missing = 0;
    for (char *p = h; (p = strstr(p, "BF_API ")); p += 7) {
        char *paren = strchr(p, '(');
        if (!paren || strchr(p, ';') < paren) continue;
        char *end = paren;
        while (end > p && end[-1] == ' ') end--;
        char *start = end;
        while (start > p && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                             (start[-1] >= '0' && start[-1] <= '9')))
            start--;
        char name[96];
        snprintf(name, sizeof(name), "%.*s", (int)(end - start), start);
        if (strncmp(name, "bf_", 3)) continue;
        bool found = false;
        for (int i = 0; i < (int)(sizeof(probes) / sizeof(probes[0])) && !found; i++) {
            const char *c = probes[i].covers;
            size_t n = strlen(name);
            for (const char *q = c; (q = strstr(q, name)); q += n)
                if ((q == c || q[-1] == ' ') && (q[n] == ' ' || q[n] == '\0')) found = true;
        }
        if (!found) {
            fprintf(stderr, "no NULL probe for %s\n", name);
            missing++;
        }
    }
    free(h);
    ck_assert_msg(missing == 0, "%d public functions have no NULL probe (see stderr)", missing);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("null_handles");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, null_arguments, 0, (int)(sizeof(probes) / sizeof(probes[0])));
    tcase_add_test(tc, every_public_function_is_probed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
