/*
 * test_page.c - loading pages (runtime/page.c and runtime/attr.c): valid pages from a string
 * and from a file, relative "file" attributes resolved against the page's folder, one case per
 * loader error code asserting status, code, block, port or attribute and JSON pointer exactly,
 * the limits (blocks, depth, bytes) checked before the work they bound, every problem of a page
 * reported in one pass, the enuSpace attribute forms accepted with a warning naming the
 * canonical form, and standalone nodes (bf_node_make).
 */
#include "bf_test.h"
#include "block.h"
#include "common.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static bf_context *ctx_with(int max_blocks, int max_depth, uint64_t max_bytes) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    cfg.max_blocks = max_blocks;
    cfg.max_json_depth = max_depth;
    cfg.max_page_bytes = max_bytes;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

/* Load `json` as "t.json" with diags; returns the status, the page in *out (may be NULL). */
static bf_status load(bf_context *ctx, const char *json, bf_page **out, bf_diags *d,
                      bf_error *e) {
    bf_error_clear(e);
    bf_diags_clear(d);
    return bf_page_load_string(ctx, json, strlen(json), "t.json", NULL, out, d, e);
}

/*
 * Load a page that must fail with exactly `n` errors, the first being the one described; check
 * every field of it, both in `err` and in the diagnostics list.
 */
static void expect_first(const char *json, size_t n, bf_status st, const char *code,
                         const char *block, const char *port, const char *attr,
                         const char *pointer) {
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = (bf_page *)1;
    bf_error e;
    ck_assert_int_eq(load(ctx, json, &page, d, &e), st);
    ck_assert_ptr_null(page);
    ck_assert_uint_eq(bf_diags_errors(d), n);
    const bf_error *r = NULL;
    for (size_t i = bf_diags_count(d); i-- > 0;)
        if (bf_diags_at(d, i)->status != BF_OK) r = bf_diags_at(d, i);
    ck_assert_ptr_nonnull(r);
    const bf_error *both[2] = {&e, r};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(both[k]->status, st);
        ck_assert_str_eq(both[k]->code, code);
        ck_assert_str_eq(both[k]->page, "t.json");
        ck_assert_str_eq(both[k]->block_id, block);
        ck_assert_str_eq(both[k]->port, port);
        ck_assert_str_eq(both[k]->attr, attr);
        ck_assert_str_eq(both[k]->pointer, pointer);
        ck_assert(both[k]->message[0] != '\0');
    }
    bf_diags_free(d);
    bf_context_free(ctx);
}

/* The usual case: the page has exactly one problem. */
#define expect_one(json, ...) expect_first(json, 1, __VA_ARGS__)

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static char scratch[64];

static void scratch_setup(void) {
    strcpy(scratch, "/tmp/bf_test_page.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static void scratch_teardown(void) {
    DIR *dir = opendir(scratch);
    if (!dir) return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(dir))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof(p), "%s/%s", scratch, de->d_name);
        unlink(p);
    }
    closedir(dir);
    rmdir(scratch);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

/* A 2x3 float32 tensor 0.5, 1.5, ... saved as `name` in the scratch folder. */
static void save_npy(const char *name) {
    int64_t dims[2] = {2, 3};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 2, dims, &t, NULL), BF_OK);
    float *p = bf_tensor_data(t);
    for (int i = 0; i < 6; i++) p[i] = (float)i + 0.5f;
    char path[256];
    bf_test_path(path, sizeof(path), scratch, name);
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    bf_tensor_free(t);
}

/* ---- valid pages -------------------------------------------------------------------------- */

static const char valid_page[] =
    HEAD "\"name\":\"demo\",\"description\":\"a demo\",\"x-editor\":{\"zoom\":2},"
    "\"ui\":{},\"blocks\":["
    "{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[1,2],[3,4]]},"
    "\"ui\":{\"x\":1},\"x-note\":\"hi\",\"device\":\"cpu\"},"
    "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c:output\"},"
    "\"device\":\"gpu:1\"},"
    "{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2],\"x-seen\":true},"
    "\"device\":\"auto\"},"
    "{\"id\":\"g\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"},\"device\":\"gpu\"}],"
    "\"outputs\":[\"i\",\"g:output\"]}";

START_TEST(valid_page_from_string) {
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    ck_assert_int_eq(load(ctx, valid_page, &page, d, &e), BF_OK);
    ck_assert_ptr_nonnull(page);
    ck_assert_uint_eq(bf_diags_count(d), 0); /* x- keys are accepted silently */
    ck_assert_str_eq(bf_page_name(page), "demo");
    ck_assert_str_eq(bf_page_description(page), "a demo");
    ck_assert_str_eq(bf_page_file(page), "t.json");
    ck_assert_int_eq(bf_page_block_count(page), 4);
    ck_assert_str_eq(bf_page_block_id(page, 1), "i");
    ck_assert_str_eq(bf_page_block_type(page, 2), "RandomNormal");
    ck_assert_ptr_null(bf_page_block_id(page, 4));
    ck_assert_int_eq(bf_page_output_count(page), 2);
    ck_assert_str_eq(bf_page_output(page, 0), "i");
    ck_assert_str_eq(bf_page_output(page, 1), "g:output");
    ck_assert_ptr_null(bf_page_output(page, 2));
    bf_page_free(page);
    bf_page_free(NULL);
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

START_TEST(valid_page_from_file_with_relative_npy) {
    save_npy("x.npy");
    char path[256];
    bf_test_path(path, sizeof(path), scratch, "p.json");
    write_file(path, HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Const\",\"attrs\":"
                          "{\"file\":\"x.npy\"}}],\"outputs\":[\"x\"]}");
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_page *page = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_page_load_file(ctx, path, &page, NULL, &e), BF_OK);
    ck_assert_str_eq(bf_page_file(page), path);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    const bf_tensor *t = bf_session_output(s, "x", NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F32);
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    ck_assert_int_eq(bf_tensor_dims(t)[1], 3);
    for (int i = 0; i < 6; i++) ck_assert_double_eq(bf_tensor_get_f64(t, i), i + 0.5);
    bf_session_free(s);

    /* From a string, `dir` plays the folder's part; a dtype converts the file. */
    const char *json = HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Const\",\"attrs\":"
                            "{\"file\":\"x.npy\",\"dtype\":\"float64\",\"shape\":[3,2]}}]}";
    ck_assert_int_eq(bf_page_load_string(ctx, json, strlen(json), "s", scratch, &page, NULL,
                                         &e),
                     BF_OK);
    bf_page_free(page);

    /* The page's folder, not the current one: from elsewhere the file is not found. */
    ck_assert_int_eq(bf_page_load_string(ctx, json, strlen(json), "s", "/nonexistent", &page,
                                         NULL, &e),
                     BF_EIO);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.block_id, "x");
    ck_assert_str_eq(e.attr, "file");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/file");
    bf_context_free(ctx);
}
END_TEST

START_TEST(missing_page_file) {
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_page *page = (bf_page *)1;
    bf_error e = {0};
    bf_diags *d = bf_diags_new();
    ck_assert_int_eq(bf_page_load_file(ctx, "/nonexistent/p.json", &page, d, &e), BF_EIO);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_str_eq(e.page, "/nonexistent/p.json");
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    ck_assert_int_eq(bf_page_load_file(ctx, "/tmp", &page, NULL, &e), BF_EIO); /* a folder */
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

/* ---- one error code each -------------------------------------------------------------------- */

START_TEST(bad_json_has_line_and_column) {
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = (bf_page *)1;
    bf_error e;
    /* The bad token (the second ',') is on line 3, column 14. */
    const char *json = "{\n  \"format\": \"blockflow.page\",\n  \"version\": ,\n}";
    ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_EPARSE);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "bad_json");
    ck_assert_str_eq(e.pointer, "");
    ck_assert_str_eq(e.block_id, "");
    ck_assert_int_eq(e.line, 3);
    ck_assert_int_eq(e.column, 14);
    ck_assert_uint_eq(bf_diags_count(d), 1);
    ck_assert_int_eq(bf_diags_at(d, 0)->line, 3);
    ck_assert_int_eq(bf_diags_at(d, 0)->column, 14);
    /* Truncated text: the error is at the end. */
    ck_assert_int_eq(load(ctx, "{\"a\":\n[1,", &page, d, &e), BF_EPARSE);
    ck_assert_int_eq(e.line, 2);
    ck_assert_int_ge(e.column, 3);
    ck_assert_int_eq(load(ctx, "", &page, d, &e), BF_EPARSE);
    ck_assert_int_eq(e.line, 1);
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

START_TEST(bad_format_and_version) {
    expect_one("{\"format\":\"tf.graph\",\"version\":1,\"blocks\":[]}", BF_ESCHEMA, "bad_format",
               "", "", "", "/format");
    expect_one("{\"version\":1,\"blocks\":[]}", BF_ESCHEMA, "bad_format", "", "", "", "/format");
    expect_one("{\"format\":\"blockflow.page\",\"version\":2,\"blocks\":[]}", BF_ESCHEMA,
               "bad_version", "", "", "", "/version");
    expect_one("{\"format\":\"blockflow.page\",\"version\":\"1\",\"blocks\":[]}", BF_ESCHEMA,
               "bad_version", "", "", "", "/version");
}
END_TEST

START_TEST(unknown_keys) {
    expect_one(HEAD "\"blocks\":[],\"colour\":1}", BF_ESCHEMA, "unknown_key", "", "", "",
               "/colour");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":"
                    "{\"shape\":[1]},\"colour\":1}]}",
               BF_ESCHEMA, "unknown_key", "r", "", "", "/blocks/0/colour");
    /* x- keys at both levels are the editors' own. */
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_page *page = NULL;
    const char *ok = HEAD "\"x-a\":1,\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\","
                          "\"attrs\":{\"shape\":[1]},\"x-b\":[1]}]}";
    ck_assert_int_eq(bf_page_load_string(ctx, ok, strlen(ok), "t", NULL, &page, NULL, NULL),
                     BF_OK);
    bf_page_free(page);
    bf_context_free(ctx);
}
END_TEST

START_TEST(bad_and_duplicate_ids) {
    expect_one(HEAD "\"blocks\":[{\"id\":\"a:b\",\"type\":\"Identity\"}]}", BF_ESCHEMA,
               "bad_id", "", "", "", "/blocks/0/id");
    expect_one(HEAD "\"blocks\":[{\"id\":\"\",\"type\":\"Identity\"}]}", BF_ESCHEMA, "bad_id",
               "", "", "", "/blocks/0/id");
    expect_one(HEAD "\"blocks\":[{\"type\":\"Identity\"}]}", BF_ESCHEMA, "bad_id", "", "", "",
               "/blocks/0/id");
    expect_one(HEAD "\"blocks\":[{\"id\":7,\"type\":\"Identity\"}]}", BF_ESCHEMA, "bad_id", "",
               "", "", "/blocks/0/id");
    char json[512];
    snprintf(json, sizeof(json), HEAD "\"blocks\":[{\"id\":\"%064d\",\"type\":\"Const\"}]}", 0);
    expect_one(json, BF_ESCHEMA, "bad_id", "", "", "", "/blocks/0/id"); /* 64 characters */
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[1]}},{\"id\":\"q\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1]}},"
                    "{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1]}}]}",
               BF_ESCHEMA, "duplicate_id", "r", "", "", "/blocks/2/id");
    /* an input given twice (JSON allows repeated keys; the fuzzer found the first one leaked) */
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[1]}},{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\","
                    "\"input\":\"r\"}}]}",
               BF_ESCHEMA, "duplicate_port", "i", "input", "", "/blocks/1/inputs/input");
}
END_TEST

START_TEST(unknown_block_type) {
    expect_one(HEAD "\"blocks\":[{\"id\":\"z\",\"type\":\"Conv9D\"}]}", BF_ESCHEMA,
               "unknown_block_type", "z", "", "", "/blocks/0/type");
    expect_one(HEAD "\"blocks\":[{\"id\":\"z\"}]}", BF_ESCHEMA, "unknown_block_type", "z", "",
               "", "/blocks/0/type");
}
END_TEST

#define RN(id) "{\"id\":\"" id "\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2]}}"

START_TEST(ports_and_links) {
    expect_one(HEAD "\"blocks\":[" RN("r") ",{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
                                           "{\"input\":\"r\",\"extra\":\"r\"}}]}",
               BF_ESCHEMA, "unknown_port", "i", "extra", "", "/blocks/1/inputs/extra");
    expect_one(HEAD "\"blocks\":[" RN("r") ",{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
                                           "{\"input\":\"nobody\"}}]}",
               BF_ESCHEMA, "bad_link", "i", "input", "", "/blocks/1/inputs/input");
    expect_one(HEAD "\"blocks\":[" RN("r") ",{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
                                           "{\"input\":\"r:grad\"}}]}",
               BF_ESCHEMA, "bad_link", "i", "input", "", "/blocks/1/inputs/input");
    expect_one(HEAD "\"blocks\":[" RN("r") ",{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
                                           "{\"input\":3}}]}",
               BF_ESCHEMA, "bad_link", "i", "input", "", "/blocks/1/inputs/input");
    /* Inputs that are not an object: the port is then also unconnected. */
    expect_first(HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":[\"r\"]}]}",
               2, BF_ESCHEMA, "bad_link", "i", "", "", "/blocks/0/inputs");
    expect_one(HEAD "\"blocks\":[" RN("r") ",{\"id\":\"i\",\"type\":\"Identity\"}]}",
               BF_ESCHEMA, "missing_input", "i", "input", "", "/blocks/1/inputs");
    /* A link may name a block that comes later in the page. */
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_page *page = NULL;
    const char *ok = HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
                          "{\"input\":\"r:output\"}}," RN("r") "]}";
    ck_assert_int_eq(bf_page_load_string(ctx, ok, strlen(ok), "t", NULL, &page, NULL, NULL),
                     BF_OK);
    bf_page_free(page);
    bf_context_free(ctx);
}
END_TEST

START_TEST(attribute_errors) {
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2],\"seed\":\"abc\"}}]}",
               BF_EATTR, "bad_attr", "r", "", "seed", "/blocks/0/attrs/seed");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2],\"dtype\":\"float42\"}}]}",
               BF_EATTR, "bad_attr", "r", "", "dtype", "/blocks/0/attrs/dtype");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2,-3]}}]}",
               BF_EATTR, "bad_attr", "r", "", "shape", "/blocks/0/attrs/shape");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[1,1,1,1,1,1,1,1,1]}}]}",
               BF_EATTR, "bad_attr", "r", "", "shape", "/blocks/0/attrs/shape");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2],\"sead\":1}}]}",
               BF_EATTR, "unknown_attr", "r", "", "sead", "/blocks/0/attrs/sead");
    /* JSON pointer escaping of the attribute name (RFC 6901). */
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2],\"a/b~c\":1}}]}",
               BF_EATTR, "unknown_attr", "r", "", "a/b~c", "/blocks/0/attrs/a~1b~0c");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":"
                    "{\"seed\":1}}]}",
               BF_EATTR, "missing_attr", "r", "", "shape", "/blocks/0/attrs");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\"}]}", BF_EATTR,
               "missing_attr", "r", "", "shape", "/blocks/0/attrs");
    /* Attributes that are not an object: the required shape is then also missing. */
    expect_first(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":[1]}]}",
               2, BF_ESCHEMA, "bad_attr", "r", "", "", "/blocks/0/attrs");
}
END_TEST

START_TEST(bad_outputs_and_devices) {
    expect_one(HEAD "\"blocks\":[" RN("r") "],\"outputs\":[\"r\",\"q\"]}", BF_ESCHEMA,
               "bad_output", "", "", "", "/outputs/1");
    expect_one(HEAD "\"blocks\":[" RN("r") "],\"outputs\":[\"r:nope\"]}", BF_ESCHEMA,
               "bad_output", "", "", "", "/outputs/0");
    expect_one(HEAD "\"blocks\":[" RN("r") "],\"outputs\":\"r\"}", BF_ESCHEMA, "bad_output", "",
               "", "", "/outputs");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2]},\"device\":\"tpu\"}]}",
               BF_ESCHEMA, "bad_device", "r", "", "", "/blocks/0/device");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2]},\"device\":\"gpu:x\"}]}",
               BF_ESCHEMA, "bad_device", "r", "", "", "/blocks/0/device");
    expect_one(HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[2]},\"device\":1}]}",
               BF_ESCHEMA, "bad_device", "r", "", "", "/blocks/0/device");
}
END_TEST

/* ---- limits ------------------------------------------------------------------------------ */

START_TEST(too_many_blocks) {
    bf_context *ctx = ctx_with(2, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    const char *two = HEAD "\"blocks\":[" RN("a") "," RN("b") "]}";
    const char *three = HEAD "\"blocks\":[" RN("a") "," RN("b") "," RN("c") "]}";
    ck_assert_int_eq(load(ctx, two, &page, d, &e), BF_OK);
    bf_page_free(page);
    ck_assert_int_eq(load(ctx, three, &page, d, &e), BF_ELIMIT);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "too_many_blocks");
    ck_assert_str_eq(e.pointer, "/blocks");
    ck_assert_str_eq(e.block_id, "");
    ck_assert_uint_eq(bf_diags_errors(d), 1); /* the blocks themselves are not read */
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

START_TEST(too_deep) {
    /* root 1, blocks 2, block 3, attrs 4, value 5, its numbers 6. */
    bf_context *ctx = ctx_with(0, 6, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    const char *ok = HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":"
                          "{\"value\":[1,2]}}]}";
    const char *deep = HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":"
                            "{\"value\":[[1,2]]}}]}";
    ck_assert_int_eq(load(ctx, ok, &page, d, &e), BF_OK);
    bf_page_free(page);
    ck_assert_int_eq(load(ctx, deep, &page, d, &e), BF_ELIMIT);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "too_deep");
    ck_assert_str_eq(e.pointer, "");
    ck_assert_uint_eq(bf_diags_count(d), 1);
    bf_diags_free(d);
    bf_context_free(ctx);

    /* Deeper than cJSON's own nesting limit: a parse error, never a crash. */
    ctx = ctx_with(0, 0, 0);
    d = bf_diags_new();
    size_t n = 100000;
    char *json = malloc(2 * n + 1);
    memset(json, '[', n);
    memset(json + n, ']', n);
    json[2 * n] = '\0';
    bf_status st = load(ctx, json, &page, d, &e);
    ck_assert(st == BF_EPARSE || st == BF_ELIMIT);
    ck_assert_ptr_null(page);
    free(json);
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

START_TEST(page_too_large) {
    const char *json = HEAD "\"blocks\":[" RN("a") "]}";
    size_t len = strlen(json);
    bf_context *ctx = ctx_with(0, 0, len);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_OK); /* exactly at the limit */
    bf_page_free(page);
    bf_context_free(ctx);

    ctx = ctx_with(0, 0, len - 1);
    ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_ELIMIT);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "page_too_large");
    ck_assert_str_eq(e.pointer, "");
    ck_assert_uint_eq(bf_diags_count(d), 1);

    /* From a file, the size is checked before reading. */
    char path[256];
    bf_test_path(path, sizeof(path), scratch, "big.json");
    write_file(path, json);
    bf_diags_clear(d);
    ck_assert_int_eq(bf_page_load_file(ctx, path, &page, d, &e), BF_ELIMIT);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "page_too_large");
    ck_assert_str_eq(e.page, path);
    ck_assert_uint_eq(bf_diags_count(d), 1);
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

/* ---- all problems at once ------------------------------------------------------------------ */

START_TEST(every_problem_reported_at_once) {
    const char *json = "{\"format\":\"blockflow.page\",\"version\":2,\"colour\":1,\"blocks\":["
                       "{\"id\":\"a\",\"type\":\"Nope\"},"
                       "{\"id\":\"b\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2],"
                       "\"foo\":1}},"
                       "{\"id\":\"c\",\"type\":\"Identity\",\"inputs\":{\"input\":\"b\"}}],"
                       "\"outputs\":[\"zzz\"]}";
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_ESCHEMA);
    ck_assert_ptr_null(page);
    ck_assert_uint_eq(bf_diags_count(d), 5);
    ck_assert_uint_eq(bf_diags_errors(d), 5);
    static const char *const codes[] = {"unknown_key", "bad_version", "unknown_block_type",
                                        "unknown_attr", "bad_output"};
    static const char *const ptrs[] = {"/colour", "/version", "/blocks/0/type",
                                       "/blocks/1/attrs/foo", "/outputs/0"};
    static const char *const ids[] = {"", "", "a", "b", ""};
    for (size_t i = 0; i < 5; i++) {
        const bf_error *r = bf_diags_at(d, i);
        ck_assert_str_eq(r->code, codes[i]);
        ck_assert_str_eq(r->pointer, ptrs[i]);
        ck_assert_str_eq(r->block_id, ids[i]);
        ck_assert_str_eq(r->page, "t.json");
    }
    ck_assert_ptr_null(bf_diags_at(d, 5));
    ck_assert_str_eq(e.code, "unknown_key"); /* err holds the first */
    /* The formatted line the CLI prints. */
    char line[512];
    bf_error_format(bf_diags_at(d, 3), line, sizeof(line));
    ck_assert_str_eq(line, "t.json: block \"b\": attribute \"foo\": RandomNormal has no "
                           "attribute \"foo\"");
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

/* ---- enuSpace forms ------------------------------------------------------------------------ */

START_TEST(legacy_int_list_forms) {
    static const char *const forms[] = {"\"1,2,3\"", "\"{1,2,3}\"", "\" { 1, 2 ,3 } \""};
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    for (int f = 0; f < 3; f++) {
        char json[512];
        snprintf(json, sizeof(json), HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\","
                 "\"attrs\":{\"shape\":%s}}],\"outputs\":[\"r\"]}", forms[f]);
        bf_page *page = NULL;
        bf_error e;
        ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_OK);
        ck_assert_uint_eq(bf_diags_count(d), 1);
        ck_assert_uint_eq(bf_diags_errors(d), 0);
        const bf_error *w = bf_diags_at(d, 0);
        ck_assert_int_eq(w->status, BF_OK);
        ck_assert_str_eq(w->code, "legacy_attr_form");
        ck_assert_str_eq(w->block_id, "r");
        ck_assert_str_eq(w->attr, "shape");
        ck_assert_str_eq(w->pointer, "/blocks/0/attrs/shape");
        ck_assert_ptr_nonnull(strstr(w->message, "\"shape\": [1, 2, 3]"));
        char line[512];
        bf_error_format(w, line, sizeof(line));
        ck_assert_ptr_nonnull(strstr(line, "warning: "));
        /* The value is the list. */
        bf_session *s = NULL;
        ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
        ck_assert_int_eq(bf_session_check(s, NULL, NULL), BF_OK);
        const bf_block_stats *st = bf_session_block_stats(s, 0);
        ck_assert_int_eq(st->rank[0], 3);
        ck_assert_int_eq(st->dims[0][2], 3);
        bf_session_free(s);
    }
    /* A malformed text list is still an error. */
    bf_page *page = NULL;
    bf_error e;
    const char *bad = HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":"
                           "{\"shape\":\"{1,2\"}}]}";
    ck_assert_int_eq(load(ctx, bad, &page, d, &e), BF_EATTR);
    ck_assert_str_eq(e.code, "bad_attr");
    ck_assert_str_eq(e.attr, "shape");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/shape");
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

/* The enuSpace forms of the issue, on a convolution block, give the same result as the
 * canonical JSON attributes; an unknown key in the text is an error naming it. */
static bf_tensor *run_filter_grad(const char *attrs, bf_diags *d) {
    char json[1024];
    snprintf(json, sizeof(json),
             HEAD "\"blocks\":["
                  "{\"id\":\"x\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1,6,6,2],\"seed\":1}},"
                  "{\"id\":\"dy\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1,3,3,4],\"seed\":2}},"
                  "{\"id\":\"fs\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\",\"value\":[3,3,2,4]}},"
                  "{\"id\":\"dw\",\"type\":\"Conv2DBackpropFilter\",\"inputs\":{\"input\":\"x\","
                  "\"filter_sizes\":\"fs\",\"out_backprop\":\"dy\"},\"attrs\":%s}],"
                  "\"outputs\":[\"dw\"]}",
             attrs);
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_tensor *copy = NULL;
    bf_error e;
    if (load(ctx, json, &page, d, &e) == BF_OK && bf_session_new(ctx, page, &s, &e) == BF_OK &&
        bf_session_run(s, NULL, d, &e) == BF_OK)
        ck_assert_int_eq(bf_tensor_copy(bf_session_output(s, "dw", NULL), &copy, NULL), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
    return copy;
}

START_TEST(enuspace_forms_on_a_conv_block) {
    bf_diags *d = bf_diags_new();
    bf_tensor *canon = run_filter_grad("{\"strides\":[1,2,2,1],\"padding\":\"SAME\","
                                       "\"dilations\":[1,1,1,1],\"data_format\":\"NHWC\","
                                       "\"use_cudnn_on_gpu\":true}", d);
    ck_assert_ptr_nonnull(canon);
    ck_assert_uint_eq(bf_diags_count(d), 0);
    static const char *const forms[] = {
        "{\"strides\":\"1,2,2,1\",\"padding\":\"SAME\"}",
        "{\"strides\":\"{1,2,2,1}\",\"padding\":\"SAME\",\"dilations\":\"{1, 1, 1, 1}\"}",
        "\"strides_ = {1,2,2,1}; padding_ = SAME;use_cudnn_on_gpu_ = true;"
        "data_format_ = NHWC;dilations_ = {1,1,1,1};\"",
    };
    for (int i = 0; i < 3; i++) {
        bf_diags_clear(d);
        bf_tensor *t = run_filter_grad(forms[i], d);
        ck_assert_msg(t != NULL, "form %d did not run", i);
        ck_assert_uint_eq(bf_diags_errors(d), 0);
        ck_assert_uint_ge(bf_diags_count(d), 1); /* warnings naming the canonical form */
        ck_assert_str_eq(bf_diags_at(d, 0)->code, "legacy_attr_form");
        ck_assert_str_eq(bf_diags_at(d, 0)->block_id, "dw");
        ck_assert_ptr_nonnull(strstr(bf_diags_at(d, 0)->message, "[1, 2, 2, 1]"));
        ck_assert_uint_eq(bf_tensor_nbytes(t), bf_tensor_nbytes(canon));
        ck_assert(!memcmp(bf_tensor_cdata(t), bf_tensor_cdata(canon), bf_tensor_nbytes(t)));
        bf_tensor_free(t);
    }
    bf_diags_clear(d);
    ck_assert_ptr_null(run_filter_grad("\"strides_ = {1,2,2,1}; padding_ = SAME; cudnn_ = 1;\"", d));
    ck_assert_uint_eq(bf_diags_errors(d), 1);
    const bf_error *bad = NULL;
    for (size_t i = 0; i < bf_diags_count(d); i++)
        if (bf_diags_at(d, i)->status != BF_OK) bad = bf_diags_at(d, i);
    ck_assert_str_eq(bad->code, "unknown_attr");
    ck_assert_str_eq(bad->attr, "cudnn");
    ck_assert_str_eq(bad->block_id, "dw");
    bf_tensor_free(canon);
    bf_diags_free(d);
}
END_TEST

/* With confine_files, "file" attributes reach only inside the page's folder. */
static bf_status load_const_file(bool confine, const char *dir, const char *name, bf_error *e) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.confine_files = confine;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    char json[512];
    snprintf(json, sizeof(json),
             HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"file\":\"%s\"}}]}",
             name);
    bf_page *page = NULL;
    memset(e, 0, sizeof(*e));
    bf_status st = bf_page_load_string(ctx, json, strlen(json), "p.json", dir, &page, NULL, e);
    bf_page_free(page);
    bf_context_free(ctx);
    return st;
}

START_TEST(confined_file_reads) {
    char sub[256], abs_out[256], link[256];
    save_npy("outside.npy"); /* scratch/outside.npy, beside the page folder */
    snprintf(sub, sizeof(sub), "%s/page", scratch);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(abs_out, sizeof(abs_out), "%s/outside.npy", scratch);
    snprintf(link, sizeof(link), "%s/page/link.npy", scratch);
    ck_assert_int_eq(symlink(abs_out, link), 0);
    char inside[256];
    snprintf(inside, sizeof(inside), "%s/page/in.npy", scratch);
    ck_assert_int_eq(rename(abs_out, inside), 0); /* move it in, then make the outside one again */
    save_npy("outside.npy");

    bf_error e;
    static const char *const outside[] = {"../outside.npy", "link.npy", NULL};
    ck_assert_int_eq(load_const_file(true, sub, "in.npy", &e), BF_OK);
    for (int i = 0; outside[i]; i++) {
        ck_assert_int_eq(load_const_file(false, sub, outside[i], &e), BF_OK);
        ck_assert_int_eq(load_const_file(true, sub, outside[i], &e), BF_EATTR);
        ck_assert_str_eq(e.code, "file_outside_page");
        ck_assert_str_eq(e.attr, "file");
        ck_assert_str_eq(e.pointer, "/blocks/0/attrs/file");
    }
    ck_assert_int_eq(load_const_file(false, sub, abs_out, &e), BF_OK);
    ck_assert_int_eq(load_const_file(true, sub, abs_out, &e), BF_EATTR);
    ck_assert_str_eq(e.code, "file_outside_page");
    unlink(link);
    unlink(inside);
    rmdir(sub);
}
END_TEST

START_TEST(legacy_attribute_text) {
    bf_context *ctx = ctx_with(0, 0, 0);
    bf_diags *d = bf_diags_new();
    bf_page *page = NULL;
    bf_error e;
    const char *json = HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":"
                            "\"dtype_ = float32; shape_ = {2,2};\"}]}";
    ck_assert_int_eq(load(ctx, json, &page, d, &e), BF_OK);
    ck_assert_uint_eq(bf_diags_errors(d), 0);
    ck_assert_uint_eq(bf_diags_count(d), 3); /* dtype, shape, and the text form itself */
    for (size_t i = 0; i < 3; i++) {
        const bf_error *w = bf_diags_at(d, i);
        ck_assert_int_eq(w->status, BF_OK);
        ck_assert_str_eq(w->code, "legacy_attr_form");
        ck_assert_str_eq(w->block_id, "p");
        ck_assert_str_eq(w->pointer, "/blocks/0/attrs");
    }
    ck_assert_str_eq(bf_diags_at(d, 0)->attr, "dtype");
    ck_assert_ptr_nonnull(strstr(bf_diags_at(d, 0)->message, "\"dtype\": \"float32\""));
    ck_assert_str_eq(bf_diags_at(d, 1)->attr, "shape");
    ck_assert_ptr_nonnull(strstr(bf_diags_at(d, 1)->message, "\"shape\": [2, 2]"));
    ck_assert_str_eq(bf_diags_at(d, 2)->attr, "");

    /* The values took: a 2x2 float32 feed is accepted, a 2x3 one is not. */
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    int64_t ok[2] = {2, 2}, no[2] = {2, 3};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 2, ok, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_OK);
    bf_tensor_free(t);
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 2, no, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_session_feed(s, "p", t, NULL), BF_ESHAPE);
    bf_tensor_free(t);
    bf_session_free(s);

    /* An unknown key in the text is an error naming it. */
    const char *unk = HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":"
                           "\"dtype_ = float32; colour_ = red;\"}]}";
    ck_assert_int_eq(load(ctx, unk, &page, d, &e), BF_EATTR);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "unknown_attr");
    ck_assert_str_eq(e.attr, "colour");
    ck_assert_str_eq(e.block_id, "p");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs");
    ck_assert_uint_eq(bf_diags_errors(d), 1);

    /* A bad value and a malformed item too. */
    const char *bad = HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":"
                           "\"dtype_ = float99; shape_\"}]}";
    ck_assert_int_eq(load(ctx, bad, &page, d, &e), BF_EATTR);
    ck_assert_uint_eq(bf_diags_errors(d), 2);
    ck_assert_str_eq(e.code, "bad_attr");
    ck_assert_str_eq(e.attr, "dtype");
    bf_diags_free(d);
    bf_context_free(ctx);
}
END_TEST

/* ---- standalone nodes ------------------------------------------------------------------------ */

START_TEST(node_make) {
    const bf_block_desc *rn = bf_registry_find("RandomNormal");
    ck_assert_ptr_nonnull(rn);
    bf_node *node = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_node_make(rn, "{\"shape\":[2,3],\"seed\":5}", &node, &e), BF_OK);
    ck_assert_int_eq(node->attrs[0].n, 2);           /* shape */
    ck_assert_int_eq(node->attrs[0].list[1], 3);
    ck_assert_int_eq(node->attrs[1].dtype, BF_DTYPE_F32); /* dtype defaulted */
    ck_assert(node->attrs[1].defaulted);
    ck_assert_int_eq(node->attrs[2].i, 5); /* seed */
    ck_assert(!node->attrs[2].defaulted);
    ck_assert_double_eq(node->attrs[4].f, 1.0); /* stddev */
    bf_port_info out[1];
    ck_assert_int_eq(rn->infer(node, NULL, out, &e), BF_OK);
    ck_assert_int_eq(out[0].rank, 2);
    ck_assert_int_eq(out[0].dims[1], 3);
    bf_node_destroy(node);

    /* The enuSpace text works here too. */
    ck_assert_int_eq(bf_node_make(rn, "\"shape_ = 4,4; seed_ = 2;\"", &node, &e), BF_OK);
    ck_assert_int_eq(node->attrs[0].n, 2);
    ck_assert_int_eq(node->attrs[2].i, 2);
    bf_node_destroy(node);

    node = (bf_node *)1;
    ck_assert_int_eq(bf_node_make(rn, "{\"shape\":[2],\"bogus\":1}", &node, &e), BF_EATTR);
    ck_assert_ptr_null(node);
    ck_assert_str_eq(e.code, "unknown_attr");
    ck_assert_str_eq(e.attr, "bogus");
    ck_assert_int_eq(bf_node_make(rn, "{}", &node, &e), BF_EATTR);
    ck_assert_str_eq(e.code, "missing_attr");
    ck_assert_str_eq(e.attr, "shape");
    ck_assert_int_eq(bf_node_make(rn, "{\"shape\":", &node, &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_json");

    /* init runs: a Const without a value fails there; with one it holds the tensor. */
    const bf_block_desc *cn = bf_registry_find("Const");
    ck_assert_int_eq(bf_node_make(cn, NULL, &node, &e), BF_EATTR);
    ck_assert_str_eq(e.code, "missing_attr");
    ck_assert_int_eq(bf_node_make(cn, "{\"value\":[1,2,3],\"dtype\":\"int32\"}", &node, &e),
                     BF_OK);
    const bf_tensor *t = node->state;
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_I32);
    ck_assert_double_eq(bf_tensor_get_f64(t, 2), 3);
    bf_node_destroy(node);
    bf_node_destroy(NULL);

    /* A value that does not fill its shape: the message names both counts. */
    ck_assert_int_eq(bf_node_make(cn, "{\"value\":[1,2,3],\"shape\":[2,2]}", &node, &e),
                     BF_ESHAPE);
    ck_assert_str_eq(e.code, "shape_mismatch");
    ck_assert_str_eq(e.attr, "value");
    ck_assert_str_eq(e.message, "value has 3 numbers but the shape holds 4");
}
END_TEST

START_TEST(const_file_shape_mismatch) {
    save_npy("x.npy"); /* 6 elements */
    bf_context *ctx = ctx_with(0, 0, 0);
    const char *json = HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Const\",\"attrs\":"
                            "{\"file\":\"x.npy\",\"shape\":[5]}}]}";
    bf_page *page = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_page_load_string(ctx, json, strlen(json), "s", scratch, &page, NULL,
                                         &e),
                     BF_OK);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_ESHAPE);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(e.code, "shape_mismatch");
    ck_assert_str_eq(e.block_id, "x");
    ck_assert_str_eq(e.attr, "shape");
    ck_assert_str_eq(e.pointer, "/blocks/0/attrs/shape");
    ck_assert_str_eq(e.message, "the file has 6 elements, the shape 5");
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("page");
    TCase *tc = tcase_create("load");
    tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
    tcase_add_test(tc, valid_page_from_string);
    tcase_add_test(tc, valid_page_from_file_with_relative_npy);
    tcase_add_test(tc, missing_page_file);
    tcase_add_test(tc, bad_json_has_line_and_column);
    tcase_add_test(tc, bad_format_and_version);
    tcase_add_test(tc, unknown_keys);
    tcase_add_test(tc, bad_and_duplicate_ids);
    tcase_add_test(tc, unknown_block_type);
    tcase_add_test(tc, ports_and_links);
    tcase_add_test(tc, attribute_errors);
    tcase_add_test(tc, bad_outputs_and_devices);
    tcase_add_test(tc, too_many_blocks);
    tcase_add_test(tc, too_deep);
    tcase_add_test(tc, page_too_large);
    tcase_add_test(tc, every_problem_reported_at_once);
    tcase_add_test(tc, legacy_int_list_forms);
    tcase_add_test(tc, legacy_attribute_text);
    tcase_add_test(tc, enuspace_forms_on_a_conv_block);
    tcase_add_test(tc, confined_file_reads);
    tcase_add_test(tc, node_make);
    tcase_add_test(tc, const_file_shape_mismatch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
