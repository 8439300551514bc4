/*
 * test_cli_input.c - the `blockflow` program's input and output for headless use (issue #18):
 * strict numbers and names on the command line, the output folder checked before running,
 * block ids that cannot be file names, pages from standard input and FIFOs (never hanging),
 * --json and --quiet, the table summarised on large pages with the peak memory in its footer,
 * --print by real indices and as a summary, "did you mean", status words, .npz feeds, and
 * `blockflow help TOPIC` from the same text as --help. Each case spawns $BF_BINARY in a
 * scratch folder (its current folder), with standard input from a file when given.
 */
#include "cli_harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run `prog` with `args` in the scratch folder (its working folder); standard input from `in`
 * (a path) or /dev/null. Killed after 30 s (a hang fails the test instead of stalling it). */
static bf_result run_prog(const char *prog, const char *in, const char *const *args) {
    bf_run_opts o = {
        .prog = prog, .in = in ? in : "/dev/null", .dir = bf_scratch(), .timeout_s = 30};
    return bf_run(&o, args);
}

static bf_result run_in(const char *in, const char *const *args) {
    return run_prog(bf_test_binary(), in, args);
}

static bf_result run_with(const char *prog, const char *const *args) {
    return run_prog(prog, NULL, args);
}

#define RUN(...) run_in(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_STDIN(in, ...) run_in(in, (const char *const[]){__VA_ARGS__, NULL})
/* `cmd` on a pseudo-terminal: script(1) copies what the terminal showed to its stdout. */
#define RUN_SCRIPT(cmd) \
    run_with("/usr/bin/script", (const char *const[]){"-qefc", cmd, "/dev/null", NULL})

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static const char small_page[] =
    HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[1.5,-2],[3,4]]}},"
         "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c\"}}],"
         "\"outputs\":[\"i\"]}";

static void save_tensor(const char *path, int rank, const int64_t *dims, double base) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, rank, dims, &t, NULL), BF_OK);
    float *p = bf_tensor_data(t);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) p[i] = (float)(base + (double)i);
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    bf_tensor_free(t);
}

static double first_value(const char *path) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_tensor_load_npy(NULL, path, &t, &e) == BF_OK, "%s: %s", path, e.message);
    double v = bf_tensor_get_f64(t, 0);
    bf_tensor_free(t);
    return v;
}

/* ---- strict numbers and names ---------------------------------------------------------------- */

START_TEST(numbers_are_parsed_strictly) {
    bf_write_file(bf_sp("p.json"), small_page);
    static const struct {
        const char *opt, *val, *says;
    } cases[] = {
        {"--timeout", "abc", "--timeout \"abc\": is not a number"},
        {"--timeout", "nan", "--timeout \"nan\""},
        {"--timeout", "-1", "--timeout \"-1\": must not be negative"},
        {"--timeout", "inf", "--timeout \"inf\""},
        {"--threads", "-2", "--threads \"-2\": must not be negative"},
        {"--threads", "4x", "--threads \"4x\": is not a whole number"},
        {"--max-elements", "-5", "--max-elements \"-5\": must not be negative"},
        {"--max-elements", "0", "--max-elements \"0\": must be at least 1"},
        {"--mem-limit", "12Q", "--mem-limit \"12Q\": is not a size"},
        {"--max-blocks", "99999999999", "--max-blocks \"99999999999\": must be at most"},
        {"--cache-limit", "lots", "--cache-limit \"lots\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bf_result r = RUN("run", "p.json", "--no-save", cases[i].opt, cases[i].val);
        ck_assert_msg(r.status == 2, "%s %s: exit %d", cases[i].opt, cases[i].val, r.status);
        ck_assert_msg(strstr(r.err, cases[i].says), "%s %s: %s", cases[i].opt, cases[i].val,
                      r.err);
        ck_assert_str_eq(r.out, ""); /* nothing ran */
        bf_result_free(&r);
    }
    /* a value missing at the end */
    bf_result r = RUN("run", "p.json", "--timeout");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--timeout needs a value"));
    bf_result_free(&r);
    /* too many threads: capped, with a message, and the run goes on */
    r = RUN("run", "p.json", "--no-save", "--threads", "1000000");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "--threads 1000000: using 1024"));
    bf_result_free(&r);
    /* an unknown device names the accepted values, without the whole usage */
    r = RUN("run", "p.json", "--device", "tpu");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--device \"tpu\": must be one of auto, cpu, gpu"));
    ck_assert_ptr_null(strstr(r.err, "usage:"));
    bf_result_free(&r);
}
END_TEST

/* ---- the output folder, before anything runs --------------------------------------------------
 */

START_TEST(output_folder_checked_before_running) {
    bf_write_file(bf_sp("p.json"), small_page);
    bf_write_file(bf_sp("plain"), "x");
    bf_result r = RUN("run", "p.json", "--out", "plain/sub");
    ck_assert_int_eq(r.status, 5);
    ck_assert_ptr_nonnull(strstr(r.err, "plain is not a folder"));
    ck_assert_str_eq(r.out, ""); /* no table: nothing ran */
    bf_result_free(&r);
    r = RUN("run", "p.json", "--out", "plain");
    ck_assert_int_eq(r.status, 5);
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
    r = RUN("run", "p.json", "--out", "no/such/deep");
    ck_assert_int_eq(r.status, 5);
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
    if (geteuid() != 0) { /* root may write anywhere */
        ck_assert_int_eq(mkdir(bf_sp("ro"), 0555), 0);
        r = RUN("run", "p.json", "--out", "ro");
        ck_assert_int_eq(r.status, 5);
        ck_assert_str_eq(r.out, "");
        bf_result_free(&r);
    }
    /* a folder that does not exist yet but can be: created when writing */
    r = RUN("run", "p.json", "--out", "new");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("new/i.npy")), 1.5);
    bf_result_free(&r);
}
END_TEST

/* ---- block ids that cannot be file names ----------------------------------------------------- */

START_TEST(ids_that_are_not_file_names_are_page_errors) {
    static const char *const ids[] = {"../evil", "a/b", "a\\u0001b", "a:b", ".hidden",
                                      "a\\\\b"};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char page[512];
        snprintf(page, sizeof(page),
                 HEAD "\"blocks\":[{\"id\":\"%s\",\"type\":\"Const\",\"attrs\":{\"value\":1}}],"
                      "\"outputs\":[]}",
                 ids[i]);
        bf_write_file(bf_sp("bad.json"), page);
        bf_result r = RUN("check", "bad.json", "--json");
        ck_assert_msg(r.status == 3, "id %s: exit %d", ids[i], r.status);
        cJSON *doc = cJSON_Parse(r.out);
        ck_assert_msg(doc != NULL, "id %s: not JSON: %s", ids[i], r.out);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ok")));
        cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "problems"), 0);
        ck_assert_str_eq(cJSON_GetObjectItem(p, "code")->valuestring, "bad_id");
        ck_assert_str_eq(cJSON_GetObjectItem(p, "pointer")->valuestring, "/blocks/0/id");
        cJSON_Delete(doc);
        bf_result_free(&r);
        /* and `run` writes nothing */
        r = RUN("run", "bad.json", "--out", "o");
        ck_assert_int_eq(r.status, 3);
        ck_assert_ptr_nonnull(strstr(r.err, "an id"));
        bf_result_free(&r);
    }
    struct stat sb;
    ck_assert_int_ne(stat(bf_sp("evil.npy"), &sb), 0);
    ck_assert_int_ne(stat(bf_sp("o"), &sb), 0);
    /* the rule is in the page schema */
    char path[512];
    bf_test_path(path, sizeof(path), bf_test_source_dir(), "graph_schemas/page.schema.json");
    char *schema = bf_read_file(path, NULL);
    ck_assert_ptr_nonnull(schema);
    ck_assert_ptr_nonnull(strstr(schema, "\"pattern\""));
    free(schema);
}
END_TEST

/* ---- pages from standard input and streams ----------------------------------------------------
 */

START_TEST(pages_from_stdin_and_fifos) {
    /* standard input: `file` paths relative to the current folder */
    int64_t dims[2] = {2, 2};
    save_tensor(bf_sp("x.npy"), 2, dims, 7);
    bf_write_file(bf_sp("in.json"), HEAD "\"blocks\":[{\"id\":\"k\",\"type\":\"Const\",\"attrs\":"
                                   "{\"file\":\"x.npy\"}}],\"outputs\":[\"k\"]}");
    bf_result r = RUN_STDIN(bf_sp("in.json"), "run", "-", "--out", "o");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("o/k.npy")), 7);
    bf_result_free(&r);
    r = RUN_STDIN(bf_sp("in.json"), "check", "-");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "-: ok"));
    bf_result_free(&r);
    /* a page on stdin over the size limit */
    r = RUN_STDIN(bf_sp("in.json"), "check", "-", "--max-page-bytes", "20");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "larger than the limit"));
    bf_result_free(&r);
    /* an empty stdin: an invalid page, not a hang */
    r = RUN("check", "-");
    ck_assert_int_eq(r.status, 3);
    bf_result_free(&r);

    /* a FIFO nobody writes to: opens at once, reads as empty */
    ck_assert_int_eq(mkfifo(bf_sp("fifo"), 0600), 0);
    r = RUN("check", "fifo");
    ck_assert_int_eq(r.status, 3);
    bf_result_free(&r);
    /* a FIFO with a writer: read as a stream */
    pid_t w = fork();
    if (w == 0) {
        int fd = open(bf_sp("fifo"), O_WRONLY);
        if (fd >= 0) {
            const char *p = small_page;
            ssize_t n = write(fd, p, strlen(p));
            (void)n;
            close(fd);
        }
        _exit(0);
    }
    usleep(200000); /* let the writer open it first */
    r = RUN("run", "fifo", "--out", "f");
    waitpid(w, NULL, 0);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("f/i.npy")), 1.5);
    bf_result_free(&r);
    /* a character device is read with the limit applied */
    r = RUN("check", "/dev/zero", "--max-page-bytes", "1M");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "larger than the limit"));
    bf_result_free(&r);
}
END_TEST

/* ---- --json and --quiet ---------------------------------------------------------------------- */

START_TEST(json_and_quiet) {
    bf_write_file(bf_sp("p.json"), small_page);
    bf_result r = RUN("run", "p.json", "--json", "--out", "o");
    ck_assert_msg(r.status == 0, "%s", r.err);
    cJSON *doc = cJSON_Parse(r.out);
    ck_assert_msg(doc != NULL, "not one JSON document: %s", r.out);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "blocks")), 2);
    cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "blocks"), 1);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "id")->valuestring, "i");
    ck_assert_str_eq(cJSON_GetObjectItem(b, "status")->valuestring, "ran");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "shape")), 2);
    ck_assert_double_gt(cJSON_GetObjectItem(doc, "peak_bytes")->valuedouble, 0);
    cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "outputs"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "file")->valuestring, "o/i.npy");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "problems")), 0);
    cJSON_Delete(doc);
    bf_result_free(&r);

    /* a failing page: still one document, with its problems */
    bf_write_file(bf_sp("bad.json"), HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Identity\"}],"
                                    "\"outputs\":[\"i\"]}");
    r = RUN("run", "bad.json", "--json", "--no-save");
    ck_assert_int_eq(r.status, 3);
    doc = cJSON_Parse(r.out);
    ck_assert_msg(doc != NULL, "not JSON: %s", r.out);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ok")));
    cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "problems"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(p, "block")->valuestring, "i");
    cJSON_Delete(doc);
    bf_result_free(&r);
    r = RUN("check", "p.json", "--json");
    ck_assert_int_eq(r.status, 0);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "blocks"), "i"));
    cJSON_Delete(doc);
    bf_result_free(&r);

    /* --quiet: nothing but errors */
    r = RUN("run", "p.json", "--quiet", "--out", "q");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    ck_assert_double_eq(first_value(bf_sp("q/i.npy")), 1.5);
    bf_result_free(&r);
    r = RUN("check", "p.json", "-q");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
    r = RUN("run", "bad.json", "--quiet", "--no-save");
    ck_assert_int_eq(r.status, 3);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_ne(r.err, "");
    bf_result_free(&r);
}
END_TEST

/* ---- large pages, the footer, status words -----------------------------------------------------
 */

START_TEST(large_tables_are_summarised) {
    enum { N = 100 };
    char *page = malloc(32768);
    size_t n = (size_t)snprintf(page, 32768, HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\","
                                                  "\"attrs\":{\"value\":[1,2]}}");
    for (int i = 1; i <= N; i++)
        n += (size_t)snprintf(page + n, 32768 - n,
                              ",{\"id\":\"b%d\",\"type\":\"Identity\",\"inputs\":"
                              "{\"input\":\"%s%d\"}}",
                              i, i == 1 ? "c" : "b", i - 1);
    snprintf(page + n, 32768 - n, "],\"outputs\":[\"b%d\"]}", N);
    /* "c0" -> "c" */
    char *c0 = strstr(page, "\"c0\"");
    memmove(c0 + 2, c0 + 3, strlen(c0 + 3) + 1);
    bf_write_file(bf_sp("big.json"), page);
    free(page);
    bf_result r = RUN("run", "big.json", "--no-save");
    ck_assert_msg(r.status == 0, "%s", r.err);
    int lines = 0;
    for (const char *s = r.out; *s; s++) lines += *s == '\n';
    ck_assert_int_lt(lines, 50);
    ck_assert_ptr_nonnull(strstr(r.out, "more blocks not shown"));
    ck_assert_ptr_nonnull(strstr(r.out, "101 blocks"));
    ck_assert_ptr_nonnull(strstr(r.out, "peak memory"));
    bf_result_free(&r);
    r = RUN("run", "big.json", "--no-save", "--json");
    cJSON *doc = cJSON_Parse(r.out);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "blocks")), N + 1);
    cJSON_Delete(doc);
    bf_result_free(&r);
}
END_TEST

START_TEST(status_words_not_codes) {
    bf_write_file(bf_sp("slow.json"),
               HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":"
                    "[64,64,64,64],\"seed\":1}},{\"id\":\"f\",\"type\":\"RandomNormal\","
                    "\"attrs\":{\"shape\":[5,5,64,64],\"seed\":2}},{\"id\":\"c\",\"type\":"
                    "\"Conv2D\",\"inputs\":{\"input\":\"r\",\"filter\":\"f\"},\"attrs\":"
                    "{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}}],\"outputs\":[\"c\"]}");
    bf_result r = RUN("run", "slow.json", "--no-save", "--timeout", "0.05", "--threads", "1");
    ck_assert_int_eq(r.status, 4);
    ck_assert_ptr_null(strstr(r.out, "ECANCELED"));
    ck_assert_ptr_null(strstr(r.out, "ETIMEDOUT"));
    ck_assert_msg(strstr(r.out, "cancelled") || strstr(r.out, "timed out"), "%s", r.out);
    bf_result_free(&r);
}
END_TEST

/* ---- --print -----------------------------------------------------------------------------------
 */

START_TEST(print_by_real_indices_and_summaries) {
    int64_t d4[4] = {2, 2, 2, 3};
    save_tensor(bf_sp("small.npy"), 4, d4, 0);
    int64_t d2[2] = {100, 50};
    save_tensor(bf_sp("large.npy"), 2, d2, 0);
    bf_write_file(bf_sp("p.json"), HEAD "\"blocks\":[{\"id\":\"s\",\"type\":\"Const\",\"attrs\":"
                                  "{\"file\":\"small.npy\"}},{\"id\":\"l\",\"type\":\"Const\","
                                  "\"attrs\":{\"file\":\"large.npy\"}}],"
                                  "\"outputs\":[\"s\",\"l\"]}");
    bf_result r = RUN("run", "p.json", "--no-save", "--print");
    ck_assert_msg(r.status == 0, "%s", r.err);
    /* four 2x3 grids, labelled with their real indices */
    ck_assert_ptr_nonnull(strstr(r.out, "s: float32 [2,2,2,3]"));
    ck_assert_ptr_nonnull(strstr(r.out, "[0,0,:,:]"));
    ck_assert_ptr_nonnull(strstr(r.out, "[0,1,:,:]"));
    ck_assert_ptr_nonnull(strstr(r.out, "[1,1,:,:]"));
    ck_assert_ptr_null(strstr(r.out, "[3]"));
    /* s[0,1,1,2] = 6*1 + 3*1 + 2 = 11 follows the [0,1,:,:] label */
    ck_assert_ptr_nonnull(strstr(strstr(r.out, "[0,1,:,:]"), "11"));
    /* the large one: a summary and its corners */
    ck_assert_ptr_nonnull(strstr(r.out, "l: float32 [100,50]"));
    ck_assert_ptr_nonnull(strstr(r.out, "5000 elements: min 0  max 4999  mean 2499.5"));
    ck_assert_ptr_nonnull(strstr(r.out, "NaN 0  Inf 0"));
    ck_assert_ptr_nonnull(strstr(r.out, "4999"));
    ck_assert_ptr_nonnull(strstr(r.out, "..."));
    bf_result_free(&r);
}
END_TEST

/* ---- did you mean ------------------------------------------------------------------------------
 */

START_TEST(did_you_mean) {
    bf_write_file(bf_sp("t.json"), HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"conv2d\"}]}");
    bf_result r = RUN("check", "t.json");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(
        strstr(r.err, "unknown block type \"conv2d\" (did you mean \"Conv2D\"?)"));
    bf_result_free(&r);
    bf_write_file(bf_sp("a.json"), HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":"
                                  "{\"valeu\":1}}]}");
    r = RUN("check", "a.json");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "(did you mean \"value\"?)"));
    bf_result_free(&r);
    r = RUN("blocks", "IDENTITY");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "(did you mean \"Identity\"?)"));
    bf_result_free(&r);
    r = RUN("blocks", "Zzzzzzzzzz");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_null(strstr(r.err, "did you mean"));
    bf_result_free(&r);
}
END_TEST

/* ---- .npz feeds --------------------------------------------------------------------------------
 */

static void put16(FILE *f, unsigned v) {
    fputc((int)(v & 255), f);
    fputc((int)(v >> 8 & 255), f);
}
static void put32(FILE *f, uint32_t v) {
    put16(f, v & 0xffff);
    put16(f, v >> 16);
}

/* A ZIP of stored members, as numpy.savez writes it (CRCs left 0: the reader ignores them). */
static void write_npz(const char *path, const char *const *names, const char *const *files,
                      int n) {
    FILE *f = fopen(path, "wb");
    uint32_t offs[8], sizes[8];
    for (int i = 0; i < n; i++) {
        char *data = bf_read_file(files[i], NULL);
        struct stat sb;
        stat(files[i], &sb);
        offs[i] = (uint32_t)ftell(f);
        sizes[i] = (uint32_t)sb.st_size;
        put32(f, 0x04034b50), put16(f, 20), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0);
        put32(f, 0), put32(f, sizes[i]), put32(f, sizes[i]);
        put16(f, (unsigned)strlen(names[i])), put16(f, 0);
        fputs(names[i], f);
        fwrite(data, 1, sizes[i], f);
        free(data);
    }
    uint32_t cd = (uint32_t)ftell(f);
    for (int i = 0; i < n; i++) {
        put32(f, 0x02014b50), put16(f, 20), put16(f, 20), put16(f, 0), put16(f, 0);
        put16(f, 0), put16(f, 0), put32(f, 0), put32(f, sizes[i]), put32(f, sizes[i]);
        put16(f, (unsigned)strlen(names[i])), put16(f, 0), put16(f, 0), put16(f, 0);
        put16(f, 0), put32(f, 0), put32(f, offs[i]);
        fputs(names[i], f);
    }
    uint32_t end = (uint32_t)ftell(f);
    put32(f, 0x06054b50), put16(f, 0), put16(f, 0), put16(f, (unsigned)n), put16(f, (unsigned)n);
    put32(f, end - cd), put32(f, cd), put16(f, 0);
    fclose(f);
}

START_TEST(npz_feeds) {
    int64_t d[2] = {2, 2};
    save_tensor(bf_sp("a.npy"), 2, d, 10);
    save_tensor(bf_sp("b.npy"), 2, d, 20);
    char fa[512], fb[512];
    snprintf(fa, sizeof(fa), "%s", bf_sp("a.npy"));
    snprintf(fb, sizeof(fb), "%s", bf_sp("b.npy"));
    write_npz(bf_sp("two.npz"), (const char *const[]){"a.npy", "b.npy"},
              (const char *const[]){fa, fb}, 2);
    write_npz(bf_sp("one.npz"), (const char *const[]){"only.npy"}, (const char *const[]){fb}, 1);
    bf_write_file(bf_sp("f.json"),
               HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":"
                    "[2,2]}},{\"id\":\"y\",\"type\":\"Identity\",\"inputs\":{\"input\":\"p\"}}],"
                    "\"outputs\":[\"y\"]}");
    bf_result r = RUN("run", "f.json", "--feed", "p=two.npz:b", "--out", "o");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("o/y.npy")), 20);
    bf_result_free(&r);
    r = RUN("run", "f.json", "--feed", "p=two.npz:a", "--out", "o");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("o/y.npy")), 10);
    bf_result_free(&r);
    /* an archive of one array needs no key */
    r = RUN("run", "f.json", "--feed", "p=one.npz", "--out", "o");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_double_eq(first_value(bf_sp("o/y.npy")), 20);
    bf_result_free(&r);
    /* a missing key lists the keys; several arrays need one */
    r = RUN("run", "f.json", "--feed", "p=two.npz:c", "--no-save");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "has no array \"c\" (keys: a, b)"));
    bf_result_free(&r);
    r = RUN("run", "f.json", "--feed", "p=two.npz", "--no-save");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "holds several arrays"));
    bf_result_free(&r);
    bf_write_file(bf_sp("junk.npz"), "not a zip at all, not at all, no.");
    r = RUN("run", "f.json", "--feed", "p=junk.npz:a", "--no-save");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "not an .npz file"));
    bf_result_free(&r);
}
END_TEST

/* ---- help
 * ---------------------------------------------------------------------------------------- */

START_TEST(help_topics_from_the_usage_text) {
    bf_result all = RUN("--help");
    ck_assert_int_eq(all.status, 0);
    bf_result r = RUN("help", "run");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--cache-limit"));
    ck_assert_ptr_nonnull(strstr(r.out, "--json"));
    /* the synopsis of `help run` is the run entry of --help, to the byte */
    const char *syn = strstr(r.out, "  run PAGE");
    ck_assert_ptr_nonnull(syn);
    const char *end = strstr(syn, "print a table per block\n");
    ck_assert_ptr_nonnull(end);
    char entry[2048];
    snprintf(entry, sizeof(entry), "%.*s", (int)(end - syn), syn);
    ck_assert_ptr_nonnull(strstr(all.out, entry));
    bf_result_free(&r);
    r = RUN("run", "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--cache-limit"));
    bf_result_free(&r);
    r = RUN("help", "check");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "check PAGE"));
    bf_result_free(&r);
    r = RUN("help", "nope");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "topics: run check"));
    bf_result_free(&r);
    bf_result_free(&all);
}
END_TEST

/* In a terminal, a run longer than half a second shows a progress line on stderr; not with
 * --quiet, and never when stderr is not a terminal. The terminal is a pseudo-terminal made by
 * script(1) (util-linux, on every Debian). */
START_TEST(progress_line_in_a_terminal) {
    if (access("/usr/bin/script", X_OK) != 0) return; /* bsdutils is essential on Debian */
    /* a chain of 150 copies of a 64 MiB tensor: well over half a second even on an idle
     * machine (75 copies of 32 MiB took 0.45 s there, and CI saw no progress line), and about
     * as slow under the sanitizers (memcpy) as without them */
    static char page[32768];
    int n = snprintf(page, sizeof(page), HEAD "\"blocks\":[{\"id\":\"b0\",\"type\":\"Const\","
                     "\"attrs\":{\"value\":1.5,\"shape\":[4096,4096]}}");
    for (int i = 1; i <= 150; i++)
        n += snprintf(page + n, sizeof(page) - (size_t)n,
                      ",{\"id\":\"b%d\",\"type\":\"Identity\",\"inputs\":{\"input\":\"b%d\"}}", i,
                      i - 1);
    snprintf(page + n, sizeof(page) - (size_t)n, "],\"outputs\":[\"b150\"]}");
    bf_write_file(bf_sp("slow.json"), page);
    char cmd[2048];
    for (int quiet = 0; quiet < 2; quiet++) {
        snprintf(cmd, sizeof(cmd), "%s run %s --threads 1 --no-save%s", bf_test_binary(),
                 bf_sp("slow.json"), quiet ? " --quiet" : "");
        bf_result r = RUN_SCRIPT(cmd);
        ck_assert_msg(r.status == 0, "script: %d %s%s", r.status, r.out, r.err);
        bool shown = strstr(r.out, " done, running b") != NULL;
        ck_assert_msg(shown == !quiet, "progress %s with quiet=%d:\n%s",
                      shown ? "shown" : "missing", quiet, r.out);
        bf_result_free(&r);
    }
    /* not a terminal: no progress line, no control characters */
    bf_result r = RUN("run", bf_sp("slow.json"), "--threads", "1", "--no-save");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.err, "done, running"));
    ck_assert_ptr_null(strchr(r.err, '\033'));
    bf_result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli_input");
    TCase *tc = tcase_create("headless");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, numbers_are_parsed_strictly);
    tcase_add_test(tc, output_folder_checked_before_running);
    tcase_add_test(tc, ids_that_are_not_file_names_are_page_errors);
    tcase_add_test(tc, pages_from_stdin_and_fifos);
    tcase_add_test(tc, json_and_quiet);
    tcase_add_test(tc, large_tables_are_summarised);
    tcase_add_test(tc, status_words_not_codes);
    tcase_add_test(tc, print_by_real_indices_and_summaries);
    tcase_add_test(tc, did_you_mean);
    tcase_add_test(tc, npz_feeds);
    tcase_add_test(tc, help_topics_from_the_usage_text);
    tcase_add_test(tc, progress_line_in_a_terminal);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
