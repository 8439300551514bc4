/*
 * test_edit.c - the live page (runtime/edit.c, check.c, page_json.c): every editing call,
 * edits that fail leaving the page and its results exactly as they were, which blocks re-run
 * after which edit (read from the run statistics), batches applied all or nothing, every
 * problem reported at once (unconnected inputs and cycles together), port shapes without a
 * run, the canonical JSON's round trip on every example page, and a randomized test: a few
 * hundred random edits, valid and invalid, each followed by writing the page, loading it into
 * a fresh session and comparing the check and the results with the edited session's.
 */
#include "bf_test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

/* ---- helpers ------------------------------------------------------------------------------ */

static bf_context *context(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1; /* results compared bit for bit across sessions */
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

static bf_session *open_json(bf_context *ctx, const char *json, const char *dir) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_parse(ctx, json, strlen(json), "e.json", dir, BF_LOAD_INCOMPLETE, &page, NULL,
                      &e))
        ck_abort_msg("page does not load: %s: %s (%s)", e.code, e.message, e.pointer);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    return s;
}

/* The session's page as canonical text (caller frees). */
static char *text_of(bf_session *s) {
    char *t = NULL;
    ck_assert_int_eq(bf_page_to_json(bf_session_page(s), &t, NULL), BF_OK);
    return t;
}

static int idx(bf_session *s, const char *id) {
    return bf_page_find_block(bf_session_page(s), id);
}

/* Run fetching `ids` (NULL-terminated; NULL: the page's outputs). */
static bf_status run(bf_session *s, const char *const *ids, bf_error *e) {
    bf_run_options o;
    bf_run_options_init(&o);
    int n = 0;
    while (ids && ids[n]) n++;
    o.fetches = ids;
    o.n_fetches = n;
    return bf_session_run(s, ids ? &o : NULL, NULL, e);
}

/* "x,y" = the blocks that ran in the last run, in page order. */
static const char *ran(bf_session *s) {
    static char buf[512];
    buf[0] = '\0';
    const bf_page *p = bf_session_page(s);
    for (int i = 0; i < bf_page_block_count(p); i++)
        if (bf_session_block_stats(s, i)->ran) {
            if (buf[0]) strcat(buf, ",");
            strcat(buf, bf_page_block_id(p, i));
        }
    return buf;
}

static char *label(bf_session *s, const char *id, const char *port, int output) {
    static char buf[128];
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, id, port, output, &ps, NULL), BF_OK);
    bf_port_shape_format(&ps, buf, sizeof(buf));
    return buf;
}

static bool same_tensor(const bf_tensor *a, const bf_tensor *b) {
    if (!a || !b) return a == b;
    if (bf_tensor_dtype(a) != bf_tensor_dtype(b) || bf_tensor_rank(a) != bf_tensor_rank(b))
        return false;
    if (memcmp(bf_tensor_dims(a), bf_tensor_dims(b), sizeof(int64_t) * bf_tensor_rank(a)))
        return false;
    return !memcmp(bf_tensor_cdata(a), bf_tensor_cdata(b), bf_tensor_nbytes(a));
}

/* A small dense page: x (1x5x5x1), w (3x3x1x2), y = Conv2D, z = Identity(y), o = Add(x, x). */
static const char *const PAGE =
    HEAD "\"name\":\"p\",\"blocks\":["
    "{\"id\":\"x\",\"type\":\"RandomUniform\",\"attrs\":{\"shape\":[1,5,5,1],\"seed\":1}},"
    "{\"id\":\"w\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[3,3,1,2],\"seed\":2}},"
    "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
    "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"},\"ui\":{\"x\":1}},"
    "{\"id\":\"z\",\"type\":\"Identity\",\"inputs\":{\"input\":\"y\"}},"
    "{\"id\":\"o\",\"type\":\"Add\",\"inputs\":{\"x\":\"x\",\"y\":\"x\"}}],"
    "\"outputs\":[\"z\",\"o\"]}";

/* bf_session_set_attr validates the value as the block does (issue 26: "strides": [1,2,2]
 * was accepted and failed only at the next run); a value that only upsets another block is
 * still allowed (an editor's page passes through such states). */
START_TEST(set_attr_validates_what_it_touches) {
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    char *before = text_of(s);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_set_attr(s, "y", "strides", "[1,2,2]", &e), BF_EATTR);
    ck_assert_str_eq(e.block_id, "y");
    ck_assert_str_eq(e.attr, "strides");
    ck_assert_msg(strstr(e.message, "4 dimensions"), "%s", e.message);
    ck_assert_int_eq(bf_session_set_attr(s, "y", "strides", "[2,1,1,1]", &e), BF_EATTR);
    ck_assert_int_eq(bf_session_set_attr(s, "y", "dilations", "[1,0,1,1]", &e), BF_EATTR);
    char *after = text_of(s);
    ck_assert_str_eq(after, before); /* nothing changed */
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    /* a good value still goes through, and the block still runs */
    ck_assert_int_eq(bf_session_set_attr(s, "y", "strides", "[1,2,2,1]", &e), BF_OK);
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    free(before);
    free(after);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- every editing call ------------------------------------------------------------------- */

START_TEST(every_edit_call) {
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    bf_error e = {0};
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(label(s, "y", NULL, 1), "float32[1,3,3,2]");

    /* add + connect: a second convolution reading x with SAME padding */
    ck_assert_int_eq(bf_session_add_block(s, "y2", "Conv2D",
                                          "{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}", "cpu",
                                          "{\"x\":40,\"y\":80}", &e), BF_OK);
    ck_assert_str_eq(label(s, "y2", "input", 0), "?[...]"); /* not connected yet */
    ck_assert_int_eq(bf_session_connect(s, "y2", "input", "x", &e), BF_OK);
    ck_assert_int_eq(bf_session_connect(s, "y2", "filter", "w:output", &e), BF_OK);
    ck_assert_str_eq(label(s, "y2", "input", 0), "float32[1,5,5,1]");
    ck_assert_str_eq(label(s, "y2", "output", 1), "float32[1,5,5,2]");
    /* set_attr changes the inferred shape without a run */
    ck_assert_int_eq(bf_session_set_attr(s, "y2", "strides", "[1,2,2,1]", &e), BF_OK);
    ck_assert_str_eq(label(s, "y2", NULL, 1), "float32[1,3,3,2]");
    /* back to the default: Conv2D's dilations */
    ck_assert_int_eq(bf_session_set_attr(s, "y2", "dilations", "[1,1,2,1]", &e), BF_OK);
    ck_assert_int_eq(bf_session_set_attr(s, "y2", "dilations", NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_set_device(s, "y2", "auto", &e), BF_OK);
    ck_assert_int_eq(bf_session_set_ui(s, "y2", "{\"x\":41}", &e), BF_OK);
    ck_assert_int_eq(bf_session_set_ui(s, NULL, "{\"zoom\":2}", &e), BF_OK);
    ck_assert_int_eq(bf_session_rename_block(s, "y2", "strided", &e), BF_OK);
    const char *outs[] = {"strided", "z:output"};
    ck_assert_int_eq(bf_session_set_outputs(s, outs, 2, &e), BF_OK);
    ck_assert_int_eq(bf_session_set_name(s, "edited", &e), BF_OK);
    ck_assert_int_eq(bf_session_set_description(s, "après édition", &e), BF_OK);
    ck_assert_int_eq(bf_session_disconnect(s, "o", "y", &e), BF_OK);
    ck_assert_int_eq(bf_session_remove_block(s, "o", &e), BF_OK);
    ck_assert_int_eq(idx(s, "o"), -1);
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_ptr_nonnull(bf_session_output(s, "strided", NULL));

    char *t = text_of(s);
    ck_assert_ptr_nonnull(strstr(t, "\"name\": \"edited\""));
    ck_assert_ptr_nonnull(strstr(t, "\"description\": \"après édition\""));
    ck_assert_ptr_nonnull(strstr(t, "\"ui\": {\"zoom\": 2}"));
    ck_assert_ptr_nonnull(strstr(t, "\"id\": \"strided\""));
    ck_assert_ptr_nonnull(strstr(t, "\"strides\": [1, 2, 2, 1]"));
    ck_assert_ptr_null(strstr(t, "dilations")); /* back to the default: left out */
    ck_assert_ptr_null(strstr(t, "\"device\"")); /* set back to "auto": left out */
    ck_assert_ptr_nonnull(strstr(t, "\"outputs\": [\"strided\", \"z:output\"]"));
    ck_assert_ptr_nonnull(strstr(t, "\"inputs\": {\"input\": \"x\", \"filter\": \"w:output\"}"));

    /* the written page gives the same results in a fresh session */
    bf_session *s2 = open_json(ctx, t, NULL);
    ck_assert_int_eq(run(s2, NULL, &e), BF_OK);
    ck_assert(same_tensor(bf_session_output(s, "strided", NULL),
                          bf_session_output(s2, "strided", NULL)));
    free(t);
    bf_session_free(s2);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- failing edits change nothing --------------------------------------------------------- */

typedef struct bad_edit {
    const char *json;      /* one edit, as the batch form */
    const char *code, *block, *port, *attr;
} bad_edit;

START_TEST(failing_edits_change_nothing) {
    static const bad_edit cases[] = {
        {"{\"op\":\"add_block\",\"id\":\"x\",\"type\":\"Identity\"}", "duplicate_id", "x", "", ""},
        {"{\"op\":\"add_block\",\"id\":\"a:b\",\"type\":\"Identity\"}", "bad_id", "a:b", "", ""},
        {"{\"op\":\"add_block\",\"id\":\"../evil\",\"type\":\"Identity\"}", "bad_id", "../evil", "",
         ""},
        {"{\"op\":\"add_block\",\"id\":\"n\",\"type\":\"Conv3D\"}", "unknown_block_type", "n", "",
         ""},
        {"{\"op\":\"add_block\",\"id\":\"n\",\"type\":\"Identity\",\"device\":\"tpu\"}",
         "bad_device", "n", "", ""},
        {"{\"op\":\"add_block\",\"id\":\"n\",\"type\":\"Conv2D\",\"attrs\":{\"padding\":\"X\"}}",
         "bad_attr", "n", "", "padding"},
        {"{\"op\":\"add_block\",\"id\":\"n\",\"type\":\"Const\",\"attrs\":{\"value\":[1,2],"
         "\"shape\":[3]}}", "shape_mismatch", "n", "", "value"},
        {"{\"op\":\"add_block\",\"id\":\"n\",\"type\":\"Const\",\"attrs\":{\"file\":\"no.npy\"}}",
         "io_error", "n", "", "file"},
        {"{\"op\":\"remove_block\",\"id\":\"nope\"}", "unknown_block", "", "", ""},
        {"{\"op\":\"rename_block\",\"id\":\"y\",\"new_id\":\"x\"}", "duplicate_id", "y", "", ""},
        {"{\"op\":\"rename_block\",\"id\":\"y\",\"new_id\":\"\"}", "bad_id", "y", "", ""},
        {"{\"op\":\"connect\",\"block\":\"y\",\"port\":\"bias\",\"source\":\"x\"}", "unknown_port",
         "y", "bias", ""},
        {"{\"op\":\"connect\",\"block\":\"y\",\"port\":\"input\",\"source\":\"x:nope\"}",
         "bad_link", "y", "input", ""},
        {"{\"op\":\"connect\",\"block\":\"y\",\"port\":\"input\",\"source\":\"ghost\"}",
         "bad_link", "y", "input", ""},
        {"{\"op\":\"disconnect\",\"block\":\"ghost\",\"port\":\"input\"}", "unknown_block", "", "",
         ""},
        {"{\"op\":\"set_attr\",\"block\":\"y\",\"attr\":\"strides\",\"value\":[1,\"a\"]}",
         "bad_attr", "y", "", "strides"},
        {"{\"op\":\"set_attr\",\"block\":\"y\",\"attr\":\"padding\",\"value\":\"FULL\"}",
         "bad_attr", "y", "", "padding"},
        {"{\"op\":\"set_attr\",\"block\":\"y\",\"attr\":\"stride\",\"value\":[1,1,1,1]}",
         "unknown_attr", "y", "", "stride"},
        {"{\"op\":\"set_attr\",\"block\":\"y\",\"attr\":\"padding\",\"value\":null}",
         "missing_attr", "y", "", "padding"},
        {"{\"op\":\"set_attr\",\"block\":\"x\",\"attr\":\"dtype\",\"value\":\"complex64\"}",
         "bad_attr", "x", "", "dtype"},
        {"{\"op\":\"set_device\",\"block\":\"y\",\"device\":\"gpu:x\"}", "bad_device", "y", "", ""},
        {"{\"op\":\"set_outputs\",\"outputs\":[\"z\",\"ghost\"]}", "bad_output", "", "", ""},
        {"{\"op\":\"set_ui\",\"block\":\"ghost\",\"ui\":{}}", "unknown_block", "", "", ""},
        {"{\"op\":\"frobnicate\"}", "bad_edit", "", "", ""},
        {"{\"op\":\"connect\",\"block\":\"y\",\"port\":\"input\"}", "bad_edit", "", "", ""},
        {"{\"op\":\"set_name\",\"name\":7}", "bad_edit", "", "", ""},
        {"{\"op\":\"remove_block\",\"id\":\"x\",\"extra\":1}", "bad_edit", "", "", ""},
    };
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    bf_error e = {0};
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    char *before = text_of(s);
    const bf_tensor *z0 = bf_session_output(s, "z", NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const bad_edit *c = &cases[i];
        char batch[512];
        snprintf(batch, sizeof(batch), "[%s]", c->json);
        bf_diags *d = bf_diags_new();
        memset(&e, 0, sizeof(e));
        ck_assert_msg(bf_session_apply_edits(s, batch, strlen(batch), d, &e) != BF_OK, "%s",
                      c->json);
        ck_assert_msg(!strcmp(e.code, c->code), "%s: code %s, wanted %s (%s)", c->json, e.code,
                      c->code, e.message);
        ck_assert_msg(!strcmp(e.block_id, c->block), "%s: block \"%s\"", c->json, e.block_id);
        ck_assert_msg(!strcmp(e.port, c->port), "%s: port \"%s\"", c->json, e.port);
        ck_assert_msg(!strcmp(e.attr, c->attr), "%s: attr \"%s\"", c->json, e.attr);
        ck_assert_str_eq(e.pointer, "/0");
        ck_assert_ptr_nonnull(strstr(e.message, "edit 0 ("));
        ck_assert_uint_eq(bf_diags_errors(d), 1);
        bf_diags_free(d);
        char *after = text_of(s);
        ck_assert_msg(!strcmp(before, after), "%s changed the page", c->json);
        free(after);
        /* nothing was invalidated either: the cached result is the same object */
        ck_assert_ptr_eq(bf_session_output(s, "z", NULL), z0);
    }
    /* the same through the single calls */
    ck_assert_int_eq(bf_session_set_attr(s, "y", "strides", "[1,2", &e), BF_EPARSE);
    ck_assert_str_eq(e.block_id, "y");
    ck_assert_str_eq(e.attr, "strides");
    ck_assert_int_eq(bf_session_add_block(s, "n", "Identity", "{oops", NULL, NULL, &e),
                     BF_EPARSE);
    ck_assert_int_eq(bf_session_add_block(s, "n", "Conv2D", "{\"strides\":[1,1,1,1]}", NULL,
                                          NULL, &e), BF_EATTR);
    ck_assert_str_eq(e.code, "missing_attr");
    ck_assert_str_eq(e.attr, "padding");
    char *after = text_of(s);
    ck_assert_str_eq(before, after);
    free(after);
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(ran(s), ""); /* still every result cached */
    free(before);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- invalidation ---------------------------------------------------------------------------- */

START_TEST(invalidation_per_edit) {
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    bf_error e = {0};
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(ran(s), "x,w,y,z,o");
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(ran(s), "");
    static const struct {
        const char *edits, *ran;
    } steps[] = {
        /* layout, names and outputs invalidate nothing */
        {"[{\"op\":\"set_ui\",\"block\":\"y\",\"ui\":{\"x\":9}}]", ""},
        {"[{\"op\":\"set_ui\",\"ui\":{\"grid\":true}},{\"op\":\"set_name\",\"name\":\"n\"},"
         "{\"op\":\"set_description\",\"description\":\"d\"}]", ""},
        {"[{\"op\":\"rename_block\",\"id\":\"y\",\"new_id\":\"conv\"}]", ""},
        {"[{\"op\":\"set_outputs\",\"outputs\":[\"z\",\"o\"]}]", ""},
        /* the same value again changes nothing */
        {"[{\"op\":\"set_attr\",\"block\":\"conv\",\"attr\":\"padding\",\"value\":\"VALID\"}]",
         ""},
        /* an attribute: that block and what is downstream */
        {"[{\"op\":\"set_attr\",\"block\":\"conv\",\"attr\":\"padding\",\"value\":\"SAME\"}]",
         "conv,z"},
        {"[{\"op\":\"set_attr\",\"block\":\"x\",\"attr\":\"seed\",\"value\":5}]",
         "x,conv,z,o"},
        /* a wire: the block and downstream */
        {"[{\"op\":\"connect\",\"block\":\"z\",\"port\":\"input\",\"source\":\"o\"}]", "z"},
        {"[{\"op\":\"connect\",\"block\":\"z\",\"port\":\"input\",\"source\":\"conv\"}]", "z"},
        /* a device: the block and downstream */
        {"[{\"op\":\"set_device\",\"block\":\"conv\",\"device\":\"cpu\"}]", "conv,z"},
        /* an added block is new; nothing else re-runs */
        {"[{\"op\":\"add_block\",\"id\":\"k\",\"type\":\"Identity\"},"
         "{\"op\":\"connect\",\"block\":\"k\",\"port\":\"input\",\"source\":\"o\"},"
         "{\"op\":\"set_outputs\",\"outputs\":[\"z\",\"o\",\"k\"]}]", "k"},
        /* removing a block frees its results; what read it is left unconnected */
        {"[{\"op\":\"remove_block\",\"id\":\"k\"}]", ""},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        ck_assert_msg(bf_session_apply_edits(s, steps[i].edits, strlen(steps[i].edits), NULL,
                                             &e) == BF_OK, "%s: %s", steps[i].edits, e.message);
        ck_assert_int_eq(run(s, NULL, &e), BF_OK);
        ck_assert_msg(!strcmp(ran(s), steps[i].ran), "after %s ran \"%s\", wanted \"%s\"",
                      steps[i].edits, ran(s), steps[i].ran);
    }
    /* removing a source leaves its reader unconnected: the check says so, at its port */
    ck_assert_int_eq(bf_session_remove_block(s, "o", &e), BF_OK);
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_OK); /* nothing reads o any more */
    ck_assert_int_eq(bf_session_remove_block(s, "conv", &e), BF_OK);
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "missing_input");
    ck_assert_str_eq(e.block_id, "z");
    ck_assert_str_eq(e.port, "input");
    ck_assert_ptr_null(bf_session_output(s, "conv", NULL));
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(batch_is_all_or_nothing) {
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    bf_error e = {0};
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    char *before = text_of(s);
    const char *batch = "[{\"op\":\"remove_block\",\"id\":\"o\"},"
                        "{\"op\":\"rename_block\",\"id\":\"y\",\"new_id\":\"c\"},"
                        "{\"op\":\"set_attr\",\"block\":\"y\",\"attr\":\"padding\","
                        "\"value\":\"SAME\"}]"; /* y is called c by then */
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_session_apply_edits(s, batch, strlen(batch), d, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.code, "unknown_block");
    ck_assert_str_eq(e.pointer, "/2");
    ck_assert_ptr_nonnull(strstr(e.message, "edit 2 (set_attr): "));
    char *after = text_of(s);
    ck_assert_str_eq(before, after);
    free(after);
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(ran(s), "");
    /* not JSON, not a list */
    ck_assert_int_eq(bf_session_apply_edits(s, "[{", 2, d, &e), BF_EPARSE);
    ck_assert_int_eq(bf_session_apply_edits(s, "{}", 2, d, &e), BF_ESCHEMA);
    ck_assert_int_eq(bf_session_apply_edits(s, "[]", 2, d, &e), BF_OK);
    bf_diags_free(d);
    free(before);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- checking ------------------------------------------------------------------------------ */

START_TEST(every_problem_at_once) {
    /* an unwired port and a cycle, found in one check (and by the strict loader, at once) */
    const char *json =
        HEAD "\"blocks\":["
        "{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float32\","
        "\"shape\":[-1,5,5,1]}},"
        "{\"id\":\"w\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[3,3,1,2]}},"
        "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\"},"
        "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
        "{\"id\":\"a\",\"type\":\"Identity\",\"inputs\":{\"input\":\"b\"}},"
        "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"a\"}},"
        "{\"id\":\"v\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
        "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}}],\"outputs\":[\"ghost\"]}";
    bf_context *ctx = context();
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_page_load_string(ctx, json, strlen(json), "p.json", NULL, &page, d, &e),
                     BF_ESCHEMA);
    ck_assert_uint_eq(bf_diags_errors(d), 4); /* missing filter, a, b on the cycle, output */
    bf_diags_clear(d);
    bf_session *s = open_json(ctx, json, NULL);
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_ESCHEMA);
    ck_assert_uint_eq(bf_diags_errors(d), 4);
    static const char *const codes[] = {"missing_input", "cycle", "cycle", "bad_output"};
    static const char *const blocks[] = {"y", "a", "b", ""};
    static const char *const ptrs[] = {"/blocks/2/inputs", "/blocks/3", "/blocks/4",
                                       "/outputs/0"};
    for (int i = 0; i < 4; i++) {
        const bf_error *r = bf_diags_at(d, (size_t)i);
        ck_assert_str_eq(r->code, codes[i]);
        ck_assert_str_eq(r->block_id, blocks[i]);
        ck_assert_str_eq(r->pointer, ptrs[i]);
    }
    ck_assert_str_eq(bf_diags_at(d, 0)->port, "filter");
    /* one problem as JSON, the form every presenter (CLI --json, server) uses */
    char *pj = NULL;
    ck_assert_int_eq(bf_error_json(bf_diags_at(d, 0), &pj, &e), BF_OK);
    ck_assert_str_eq(pj, "{\"severity\":\"error\",\"code\":\"missing_input\","
                         "\"status\":\"ESCHEMA\",\"message\":\"input \\\"filter\\\" of Conv2D is "
                         "not connected\",\"page\":\"e.json\",\"block\":\"y\",\"port\":\"filter\","
                         "\"pointer\":\"/blocks/2/inputs\"}");
    bf_string_free(pj);
    ck_assert_int_eq(bf_error_json(NULL, &pj, &e), BF_EINVAL);
    /* what can be inferred is: the batch is known only when fed ("?") */
    ck_assert_str_eq(label(s, "v", NULL, 1), "float32[?,3,3,2]");
    ck_assert_str_eq(label(s, "y", "input", 0), "float32[?,5,5,1]");
    ck_assert_str_eq(label(s, "y", "filter", 0), "?[...]");
    ck_assert_str_eq(label(s, "y", NULL, 1), "?[...]");
    bf_port_shape ps;
    ck_assert_int_eq(bf_session_port_shape(s, "y", "bias", 0, &ps, &e), BF_ENOTFOUND);
    ck_assert_int_eq(bf_session_port_shape(s, "ghost", NULL, 1, &ps, &e), BF_ENOTFOUND);
    /* the JSON form carries the same */
    char *j = NULL;
    ck_assert_int_eq(bf_session_check_json(s, &j, &e), BF_OK);
    ck_assert_ptr_nonnull(strstr(j, "\"ok\":false"));
    ck_assert_ptr_nonnull(strstr(j, "\"code\":\"missing_input\""));
    ck_assert_ptr_nonnull(strstr(j, "\"shape\":[null,3,3,2],\"label\":\"float32[?,3,3,2]\""));
    bf_string_free(j);
    /* fixing the wiring fixes the page, one edit at a time */
    ck_assert_int_eq(bf_session_connect(s, "y", "filter", "w", &e), BF_OK);
    ck_assert_int_eq(bf_session_remove_block(s, "a", &e), BF_OK);
    ck_assert_int_eq(bf_session_remove_block(s, "b", &e), BF_OK);
    const char *outs[] = {"y"};
    ck_assert_int_eq(bf_session_set_outputs(s, outs, 1, &e), BF_OK);
    bf_diags_clear(d);
    ck_assert_int_eq(bf_session_check(s, d, &e), BF_OK);
    ck_assert_str_eq(label(s, "y", NULL, 1), "float32[?,5,5,2]");
    bf_diags_free(d);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* A dangling link resolves as soon as a block of that name exists, as it would on a fresh load */
START_TEST(dangling_links_resolve_when_named) {
    const char *json = HEAD "\"blocks\":["
                            "{\"id\":\"a\",\"type\":\"Identity\",\"inputs\":{\"input\":\"ghost\"}},"
                            "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"spook\"}},"
                            "{\"id\":\"c\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2]}}]}";
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, json, NULL);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_ESCHEMA);
    ck_assert_str_eq(e.code, "bad_link");
    ck_assert_int_eq(bf_session_add_block(s, "ghost", "RandomUniform", "{\"shape\":[3]}", NULL,
                                          NULL, &e), BF_OK);
    ck_assert_str_eq(label(s, "a", "input", 0), "float32[3]");
    ck_assert_int_eq(bf_session_rename_block(s, "c", "spook", &e), BF_OK);
    ck_assert_str_eq(label(s, "b", NULL, 1), "float32[2]");
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
    const char *f[] = {"a", "b", NULL};
    ck_assert_int_eq(run(s, f, &e), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* Setting a file attribute to the same name reads the file again: it may have changed */
START_TEST(file_attribute_reloads) {
    char dir[] = "/tmp/bf_edit_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/v.npy", dir);
    int64_t dims[1] = {2};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, dims, &t, NULL), BF_OK);
    ((float *)bf_tensor_data(t))[0] = 1.5f;
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    const char *json = HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"file\":"
                            "\"v.npy\"}}],\"outputs\":[\"c\"]}";
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, json, dir);
    bf_error e = {0};
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "c", NULL), 0), 1.5);
    ((float *)bf_tensor_data(t))[0] = -4.0f;
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    ck_assert_int_eq(bf_session_set_attr(s, "c", "file", "\"v.npy\"", &e), BF_OK);
    ck_assert_int_eq(run(s, NULL, &e), BF_OK);
    ck_assert_str_eq(ran(s), "c");
    ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "c", NULL), 0), -4.0);
    unlink(path);
    rmdir(dir);
    bf_tensor_free(t);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- the canonical form ----------------------------------------------------------------- */

START_TEST(canonical_form_keeps_ui_and_ext) {
    const char *json =
        "{\"x-editor\":{\"v\":2},\"blocks\":[{\"attrs\":\"use_cudnn_on_gpu_ = true;"
        "data_format_ = NHWC;dilations_ = {1,1,1,1};strides_ = 1,2,2,1;padding_ = VALID;\","
        "\"x-note\":\"kept\",\"ui\":{\"x\":1.5,\"y\":-2},\"type\":\"Conv2D\",\"id\":\"c\","
        "\"inputs\":{\"filter\":\"f\",\"input\":\"i\"}},"
        "{\"id\":\"i\",\"type\":\"Const\",\"attrs\":{\"value\":[[0.1,2],[3e-7,4]],"
        "\"x-unit\":\"cm\"}},"
        "{\"id\":\"f\",\"type\":\"Const\",\"device\":\"cpu\",\"attrs\":{\"value\":1,"
        "\"shape\":[1,1,1,1]}}],"
        "\"version\":1,\"format\":\"blockflow.page\",\"ui\":{\"zoom\":1}}";
    const char *want =
        "{\n"
        "  \"format\": \"blockflow.page\",\n"
        "  \"version\": 1,\n"
        "  \"ui\": {\"zoom\": 1},\n"
        "  \"x-editor\": {\"v\": 2},\n"
        "  \"blocks\": [\n"
        "    {\n"
        "      \"id\": \"c\",\n"
        "      \"type\": \"Conv2D\",\n"
        "      \"inputs\": {\"input\": \"i\", \"filter\": \"f\"},\n"
        "      \"attrs\": {\n"
        "        \"strides\": [1, 2, 2, 1],\n"
        "        \"padding\": \"VALID\",\n"
        "        \"data_format\": \"NHWC\",\n"
        "        \"dilations\": [1, 1, 1, 1],\n"
        "        \"use_cudnn_on_gpu\": true\n"
        "      },\n"
        "      \"ui\": {\"x\": 1.5, \"y\": -2},\n"
        "      \"x-note\": \"kept\"\n"
        "    },\n"
        "    {\n"
        "      \"id\": \"i\",\n"
        "      \"type\": \"Const\",\n"
        "      \"attrs\": {\n"
        "        \"value\": [\n"
        "          [0.1, 2],\n"
        "          [3e-07, 4]\n"
        "        ],\n"
        "        \"x-unit\": \"cm\"\n"
        "      }\n"
        "    },\n"
        "    {\n"
        "      \"id\": \"f\",\n"
        "      \"type\": \"Const\",\n"
        "      \"attrs\": {\n"
        "        \"shape\": [1, 1, 1, 1],\n"
        "        \"value\": 1\n"
        "      },\n"
        "      \"device\": \"cpu\"\n"
        "    }\n"
        "  ]\n"
        "}\n";
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, json, NULL);
    char *t = text_of(s);
    ck_assert_str_eq(t, want);
    /* and it is a fixed point */
    bf_session *s2 = open_json(ctx, t, NULL);
    char *t2 = text_of(s2);
    ck_assert_str_eq(t2, want);
    free(t);
    free(t2);
    bf_session_free(s2);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* load -> save -> load on every example page: identical text and identical results */
START_TEST(round_trip_every_example) {
    char dir[4096];
    bf_test_path(dir, sizeof(dir), bf_test_source_dir(), "examples");
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    bf_context *ctx = context();
    int n = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json")) continue;
        char path[4200];
        bf_test_path(path, sizeof(path), dir, de->d_name);
        bf_page *page = NULL;
        bf_error e = {0};
        ck_assert_msg(bf_page_load_file(ctx, path, &page, NULL, &e) == BF_OK, "%s: %s", path,
                      e.message);
        bf_session *a = NULL, *b = NULL;
        ck_assert_int_eq(bf_session_new(ctx, page, &a, &e), BF_OK);
        char *t1 = text_of(a);
        b = open_json(ctx, t1, dir);
        char *t2 = text_of(b);
        ck_assert_msg(!strcmp(t1, t2), "%s does not round-trip", de->d_name);
        ck_assert_int_eq(run(a, NULL, &e), BF_OK);
        ck_assert_int_eq(run(b, NULL, &e), BF_OK);
        const bf_page *p = bf_session_page(a);
        for (int i = 0; i < bf_page_output_count(p); i++) {
            char id[128];
            snprintf(id, sizeof(id), "%s", bf_page_output(p, i));
            char *colon = strchr(id, ':');
            if (colon) *colon++ = '\0';
            ck_assert_msg(same_tensor(bf_session_output(a, id, colon),
                                      bf_session_output(b, id, colon)),
                          "%s: output %s differs", de->d_name, id);
        }
        free(t1);
        free(t2);
        bf_session_free(a);
        bf_session_free(b);
        n++;
    }
    closedir(dp);
    ck_assert_int_ge(n, 7);
    bf_context_free(ctx);
}
END_TEST

/* ---- randomized --------------------------------------------------------------------------- */

static const char *const TYPES[] = {"Const", "RandomUniform", "Identity", "Add", "Mul",
                                    "Conv2D", "Conv2DBackpropFilter"};

/* Random attributes for a block of type t, valid most of the time. */
static void random_attrs(bf_rng *r, const char *t, char *buf, size_t size) {
    static const char *const pads[] = {"\"SAME\"", "\"VALID\"", "\"EXPLICIT\"", "\"BAD\""};
    int s1 = (int)bf_rng_int(r, 1, 2);
    if (!strcmp(t, "Const"))
        snprintf(buf, size, "{\"value\":%.3f,\"shape\":[1,%d,%d,1]}", bf_rng_nonzero(r),
                 (int)bf_rng_int(r, 3, 5), (int)bf_rng_int(r, 3, 5));
    else if (!strcmp(t, "RandomUniform"))
        snprintf(buf, size, "{\"shape\":[%d,%d,%d,1],\"seed\":%d}", (int)bf_rng_int(r, 1, 2),
                 (int)bf_rng_int(r, 3, 5), (int)bf_rng_int(r, 3, 5), (int)bf_rng_int(r, 0, 9));
    else if (!strcmp(t, "Conv2D") || !strcmp(t, "Conv2DBackpropFilter"))
        snprintf(buf, size, "{\"strides\":[1,%d,%d,1],\"padding\":%s}", s1, s1,
                 pads[bf_rng_int(r, 0, 3) == 3 && bf_rng_int(r, 0, 3) == 0 ? 3 : s1 - 1]);
    else
        snprintf(buf, size, "{}");
}

/* A random edit of the session's page as a one-edit batch, sometimes invalid. */
static void random_edit(bf_rng *r, bf_session *s, int serial, char *buf, size_t size) {
    const bf_page *p = bf_session_page(s);
    int n = bf_page_block_count(p);
    const char *any = n ? bf_page_block_id(p, (int)bf_rng_int(r, 0, n - 1)) : "none";
    const char *other = n ? bf_page_block_id(p, (int)bf_rng_int(r, 0, n - 1)) : "none";
    char attrs[256];
    switch (bf_rng_int(r, 0, 9)) {
    case 0:
    case 1: {
        const char *t = TYPES[bf_rng_int(r, 0, (int)(sizeof(TYPES) / sizeof(*TYPES)) - 1)];
        random_attrs(r, t, attrs, sizeof(attrs));
        snprintf(buf, size, "[{\"op\":\"add_block\",\"id\":\"b%d\",\"type\":\"%s\","
                 "\"attrs\":%s,\"ui\":{\"x\":%d}}]", serial, t, attrs, serial);
        break;
    }
    case 2:
        snprintf(buf, size, "[{\"op\":\"remove_block\",\"id\":\"%s\"}]",
                 bf_rng_int(r, 0, 5) ? any : "ghost");
        break;
    case 3:
        snprintf(buf, size, "[{\"op\":\"rename_block\",\"id\":\"%s\",\"new_id\":\"%s\"}]", any,
                 bf_rng_int(r, 0, 3) ? (snprintf(attrs, sizeof(attrs), "r%d", serial), attrs)
                                     : other);
        break;
    case 4:
    case 5:
    case 6: {
        int b = n ? (int)bf_rng_int(r, 0, n - 1) : 0;
        int k = bf_page_block_input_count(p, b);
        const char *port = k ? bf_page_block_input_name(p, b, (int)bf_rng_int(r, 0, k - 1))
                             : "input";
        snprintf(buf, size, "[{\"op\":\"%s\",\"block\":\"%s\",\"port\":\"%s\"%s%s%s}]",
                 bf_rng_int(r, 0, 4) ? "connect" : "disconnect", n ? bf_page_block_id(p, b)
                                                                   : "none",
                 port, ",\"source\":\"", other, "\"");
        if (strstr(buf, "disconnect")) /* no source member */
            snprintf(buf, size, "[{\"op\":\"disconnect\",\"block\":\"%s\",\"port\":\"%s\"}]",
                     n ? bf_page_block_id(p, b) : "none", port);
        break;
    }
    case 7: {
        int b = n ? (int)bf_rng_int(r, 0, n - 1) : 0;
        const char *t = n ? bf_page_block_type(p, b) : "Const";
        random_attrs(r, t, attrs, sizeof(attrs));
        /* set the first attribute of the random set, whichever it is */
        char key[64] = "seed", *q = strchr(attrs, '"');
        if (q) sscanf(q + 1, "%63[^\"]", key);
        char *v = strchr(attrs, ':');
        char value[128] = "null";
        if (v) sscanf(v + 1, "%127[^]]", value);
        if (v && value[0] == '[') strcat(value, "]");
        if (v && value[0] != '[') sscanf(v + 1, "%127[^,}]", value);
        snprintf(buf, size, "[{\"op\":\"set_attr\",\"block\":\"%s\",\"attr\":\"%s\","
                 "\"value\":%s}]", n ? bf_page_block_id(p, b) : "none", key, value);
        break;
    }
    case 8:
        snprintf(buf, size, "[{\"op\":\"set_outputs\",\"outputs\":[\"%s\"]}]", any);
        break;
    default:
        snprintf(buf, size, "[{\"op\":\"set_ui\",\"block\":\"%s\",\"ui\":{\"y\":%d}}]", any,
                 serial);
    }
}

START_TEST(random_edits_match_a_fresh_load) {
    bf_rng r = {.s = 20261124};
    bf_context *ctx = context();
    bf_session *s = open_json(ctx, PAGE, NULL);
    int applied = 0, refused = 0, compared = 0;
    for (int step = 0; step < 300; step++) {
        char edit[1024];
        random_edit(&r, s, step, edit, sizeof(edit));
        char *before = text_of(s);
        bf_error e = {0};
        bf_status st = bf_session_apply_edits(s, edit, strlen(edit), NULL, &e);
        char *t = text_of(s);
        if (st) {
            refused++;
            ck_assert_msg(!strcmp(before, t), "refused edit %s changed the page", edit);
        } else {
            applied++;
        }
        free(before);
        /* the written page, loaded afresh, is the same page with the same check */
        bf_session *fresh = open_json(ctx, t, NULL);
        char *t2 = text_of(fresh);
        ck_assert_msg(!strcmp(t, t2), "step %d (%s): the page does not round-trip", step, edit);
        char *c1 = NULL, *c2 = NULL;
        ck_assert_int_eq(bf_session_check_json(s, &c1, NULL), BF_OK);
        ck_assert_int_eq(bf_session_check_json(fresh, &c2, NULL), BF_OK);
        ck_assert_msg(!strcmp(c1, c2), "step %d (%s): checks differ:\n%s\n%s", step, edit, c1,
                      c2);
        /* every block that checks out computes the same in both (the edited session reusing
         * what its edits did not invalidate) */
        const bf_page *p = bf_session_page(s);
        const char *ids[256];
        int nf = 0;
        for (int i = 0; i < bf_page_block_count(p) && nf < 255; i++) {
            bf_port_shape ps;
            bf_session_port_shape(s, bf_page_block_id(p, i), NULL, 1, &ps, NULL);
            if (ps.rank >= 0 && strcmp(bf_page_block_type(p, i), "Placeholder"))
                ids[nf++] = bf_page_block_id(p, i);
        }
        ids[nf] = NULL;
        if (nf) {
            bf_status r1 = run(s, ids, &e), r2 = run(fresh, ids, &e);
            ck_assert_msg(r1 == r2, "step %d (%s): runs differ: %d %d (%s)", step, edit, r1, r2,
                          e.message);
            for (int i = 0; r1 == BF_OK && i < nf; i++)
                ck_assert_msg(same_tensor(bf_session_output(s, ids[i], NULL),
                                          bf_session_output(fresh, ids[i], NULL)),
                              "step %d (%s): %s differs", step, edit, ids[i]);
            compared += r1 == BF_OK;
        }
        bf_string_free(c1);
        bf_string_free(c2);
        free(t);
        free(t2);
        bf_session_free(fresh);
    }
    /* the mix exercised both sides */
    fprintf(stderr, "random edits: %d applied, %d refused, %d runs compared\n", applied,
            refused, compared);
    ck_assert_int_ge(applied, 100);
    ck_assert_int_ge(refused, 30);
    ck_assert_int_ge(compared, 100);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("edit");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_edit_call);
    tcase_add_test(tc, set_attr_validates_what_it_touches);
    tcase_add_test(tc, failing_edits_change_nothing);
    tcase_add_test(tc, invalidation_per_edit);
    tcase_add_test(tc, batch_is_all_or_nothing);
    tcase_add_test(tc, every_problem_at_once);
    tcase_add_test(tc, dangling_links_resolve_when_named);
    tcase_add_test(tc, file_attribute_reloads);
    tcase_add_test(tc, canonical_form_keeps_ui_and_ext);
    tcase_add_test(tc, round_trip_every_example);
    tcase_add_test(tc, random_edits_match_a_fresh_load);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
