/*
 * test_cli.c - the `blockflow` program end to end (cli/main.c): pages written into a scratch
 * folder are run, checked and listed by spawning the program ($BF_BINARY) with its output
 * captured to files. Covers the result files (ID.npy, ID.PORT.npy) read back and compared,
 * feeds, --print, `check`, every exit status (0, 2, 3, 4, 5), one stderr line per page
 * problem, that a failed run or write leaves an older result byte-identical and no staging
 * file, the catalogue as text and as JSON, and every page in examples/ (checked and run, with
 * no warning).
 */
#include "bf_test.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- scratch folder ------------------------------------------------------------------------- */

static char scratch[64];

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void scratch_setup(void) {
    strcpy(scratch, "/tmp/bf_test_cli.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static void scratch_teardown(void) { rm_tree(scratch); }

/* scratch/name into a static buffer (one of 4, rotating). */
static const char *sp(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ & 3];
    bf_test_path(b, 512, scratch, name);
    return b;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

/* The whole file as a NUL-terminated string (caller frees); *len its size. NULL if absent. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Count the entries of `dir` (not . and ..) and whether any is a staging file. */
static int count_entries(const char *dir, bool *staging) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (strstr(e->d_name, ".blockflow-") || strstr(e->d_name, ".tmp")) *staging = true;
        n++;
    }
    closedir(d);
    return n;
}

/* ---- running the program ------------------------------------------------------------------ */

typedef struct result {
    int status; /* exit status, or -1 when killed */
    char *out, *err;
} result;

static void result_free(result *r) {
    free(r->out);
    free(r->err);
}

/* Run blockflow with `args` (NULL-terminated), in the scratch folder, capturing its output. */
static result run_args(const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = bf_test_binary();
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, sp(".stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, sp(".stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot start %s", argv[0]);
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, read_file(sp(".stdout"), NULL),
                read_file(sp(".stderr"), NULL)};
    unlink(sp(".stdout"));
    unlink(sp(".stderr"));
    ck_assert_ptr_nonnull(r.out);
    ck_assert_ptr_nonnull(r.err);
    return r;
}

#define RUN(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static const char small_page[] =
    HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":{\"value\":[[1.5,-2],[3,4]]}},"
         "{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":{\"input\":\"c\"}}],"
         "\"outputs\":[\"i\"]}";

static const char big_page[] =
    HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[512,512],"
         "\"seed\":1}}],\"outputs\":[\"i\"]}";

static void expect_small_result(const char *path) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_tensor_load_npy(NULL, path, &t, &e) == BF_OK, "%s: %s", path, e.message);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F32);
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 2);
    ck_assert_int_eq(bf_tensor_dims(t)[1], 2);
    static const double want[4] = {1.5, -2, 3, 4};
    for (int i = 0; i < 4; i++) ck_assert_double_eq(bf_tensor_get_f64(t, i), want[i]);
    bf_tensor_free(t);
}

/* ---- run ----------------------------------------------------------------------------------- */

START_TEST(run_writes_results) {
    write_file(sp("p.json"), small_page);
    result r = RUN("run", sp("p.json"), "--out", sp("out"), "--threads", "1");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    expect_small_result(sp("out/i.npy"));
    ck_assert_ptr_nonnull(strstr(r.out, "wrote "));
    ck_assert_ptr_nonnull(strstr(r.out, "i.npy"));
    bool staging = false;
    ck_assert_int_eq(count_entries(sp("out"), &staging), 1);
    ck_assert(!staging);
    result_free(&r);

    /* --fetch ID names the file ID.npy, and so does ID:PORT when PORT is the default (first)
     * port; a fetch given twice is one. */
    r = RUN("run", sp("p.json"), "--out", sp("out2"), "--fetch", "i:output", "--fetch", "c",
            "--fetch", "c", "--fetch", "i");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    expect_small_result(sp("out2/i.npy"));
    expect_small_result(sp("out2/c.npy"));
    ck_assert(!exists(sp("out2/i.output.npy")));
    ck_assert_int_eq(count_lines(strstr(r.out, "wrote")), 2); /* one line per file */
    result_free(&r);

    /* --no-save writes nothing. */
    r = RUN("run", sp("p.json"), "--out", sp("out3"), "--no-save");
    ck_assert_int_eq(r.status, 0);
    ck_assert(!exists(sp("out3/i.npy")));
    result_free(&r);
}
END_TEST

START_TEST(run_with_feed_and_print) {
    write_file(sp("f.json"),
               HEAD "\"blocks\":[{\"id\":\"p\",\"type\":\"Placeholder\",\"attrs\":{\"shape\":"
                    "[2,2]}},{\"id\":\"ip\",\"type\":\"Identity\",\"inputs\":{\"input\":\"p\"}}],"
                    "\"outputs\":[\"ip\"]}");
    int64_t dims[2] = {2, 2};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 2, dims, &t, NULL), BF_OK);
    float *p = bf_tensor_data(t);
    p[0] = 1.5f, p[1] = -2, p[2] = 3, p[3] = 4;
    ck_assert_int_eq(bf_tensor_save_npy(t, sp("x.npy"), NULL), BF_OK);
    bf_tensor_free(t);
    char feed[600];
    snprintf(feed, sizeof(feed), "p=%s", sp("x.npy"));
    result r = RUN("run", sp("f.json"), "--feed", feed, "--out", sp("out"), "--print");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    expect_small_result(sp("out/ip.npy"));
    ck_assert_ptr_nonnull(strstr(r.out, "ip: float32 [2,2]"));
    ck_assert_ptr_nonnull(strstr(r.out, "1.5"));
    ck_assert_ptr_nonnull(strstr(r.out, "-2"));
    result_free(&r);

    /* Without the feed: an invalid run (exit 3) naming the placeholder. */
    r = RUN("run", sp("f.json"), "--out", sp("out4"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "block \"p\""));
    ck_assert(!exists(sp("out4/ip.npy")));
    result_free(&r);
    /* A feed of the wrong shape: exit 3. */
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, dims, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_save_npy(t, sp("y.npy"), NULL), BF_OK);
    bf_tensor_free(t);
    snprintf(feed, sizeof(feed), "p=%s", sp("y.npy"));
    r = RUN("run", sp("f.json"), "--feed", feed, "--out", sp("out4"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "block \"p\""));
    result_free(&r);
}
END_TEST

/* ---- check and invalid pages ------------------------------------------------------------------ */

START_TEST(check_prints_shapes) {
    write_file(sp("p.json"), small_page);
    result r = RUN("check", sp("p.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "float32"));
    ck_assert_ptr_nonnull(strstr(r.out, "[2,2]"));
    ck_assert_ptr_nonnull(strstr(r.out, ": ok"));
    ck_assert_str_eq(r.err, "");
    ck_assert(!exists(sp("i.npy"))); /* check runs nothing */
    result_free(&r);
}
END_TEST

START_TEST(invalid_page_exits_3_with_one_line_per_problem) {
    char page[512]; /* sp() buffers rotate: keep our own copy */
    snprintf(page, sizeof(page), "%s", sp("bad.json"));
    write_file(page, HEAD "\"blocks\":["
                          "{\"id\":\"a\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2],"
                          "\"sead\":1}},"
                          "{\"id\":\"b\",\"type\":\"Conv9D\"},"
                          "{\"id\":\"c\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[2]},"
                          "\"device\":\"tpu\"}],\"outputs\":[\"a\"]}");
    static const char *const cmds[] = {"run", "check"};
    for (int k = 0; k < 2; k++) {
        result r = RUN(cmds[k], page, "--out", sp("out"));
        if (k == 1) { /* check takes no options */
            result_free(&r);
            r = RUN(cmds[k], page);
        }
        ck_assert_msg(r.status == 3, "%s: exit %d", cmds[k], r.status);
        ck_assert_int_eq(count_lines(r.err), 3);
        static const char *const ids[] = {"a", "b", "c"};
        const char *line = r.err;
        for (int i = 0; i < 3; i++) {
            char prefix[600];
            snprintf(prefix, sizeof(prefix), "%s: block \"%s\": ", page, ids[i]);
            ck_assert_msg(!strncmp(line, prefix, strlen(prefix)), "line %d: %s", i, line);
            line = strchr(line, '\n') + 1;
        }
        ck_assert_ptr_nonnull(strstr(r.err, "attribute \"sead\""));
        result_free(&r);
    }
    ck_assert(!exists(sp("out")));

    /* Not JSON: exit 3, with line and column. */
    write_file(page, "{\n  \"format\": ,\n}");
    result r = RUN("run", page);
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "line 2, column"));
    result_free(&r);
    /* A page that does not exist: exit 3. */
    r = RUN("check", sp("none.json"));
    ck_assert_int_eq(r.status, 3);
    result_free(&r);
}
END_TEST

START_TEST(usage_errors_exit_2) {
    write_file(sp("p.json"), small_page);
    const char *const *const cases[] = {
        (const char *const[]){"frobnicate", NULL},
        (const char *const[]){"run", NULL},
        (const char *const[]){"run", "PAGE", "--bogus", NULL},
        (const char *const[]){"run", "PAGE", "--device", "tpu", NULL},
        (const char *const[]){"run", "PAGE", "--mem-limit", "lots", NULL},
        (const char *const[]){"run", "PAGE", "--feed", "nofile", NULL},
        (const char *const[]){"check", NULL},
        (const char *const[]){"blocks", "--bogus", NULL},
        (const char *const[]){"blocks", "Nope", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[8];
        int n = 0;
        for (; cases[i][n]; n++) args[n] = !strcmp(cases[i][n], "PAGE") ? sp("p.json")
                                                                          : cases[i][n];
        args[n] = NULL;
        result r = run_args(args);
        ck_assert_msg(r.status == 2, "case %zu (%s %s): exit %d", i, args[0],
                      args[1] ? args[1] : "", r.status);
        ck_assert_msg(r.err[0] != '\0', "case %zu: nothing on stderr", i);
        result_free(&r);
    }
    result r = RUN("--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "usage: blockflow"));
    result_free(&r);
    r = run_args((const char *const[]){NULL});
    ck_assert_int_eq(r.status, 2);
    result_free(&r);
}
END_TEST

/* ---- failures keep older results -------------------------------------------------------------- */

START_TEST(run_failure_exits_4_and_keeps_old_result) {
    write_file(sp("big.json"), big_page);
    result r = RUN("run", sp("big.json"), "--out", sp("out"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    result_free(&r);
    size_t n0, n1;
    char *before = read_file(sp("out/i.npy"), &n0);
    ck_assert_ptr_nonnull(before);
    ck_assert_uint_gt(n0, 512 * 512 * 4);

    /* The same page under a 1 KiB memory limit: a run-time failure naming the block. */
    write_file(sp("big.json"), HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"RandomNormal\","
                                    "\"attrs\":{\"shape\":[512,512],\"seed\":2}}],"
                                    "\"outputs\":[\"i\"]}");
    r = RUN("run", sp("big.json"), "--out", sp("out"), "--mem-limit", "1K");
    ck_assert_int_eq(r.status, 4);
    ck_assert_ptr_nonnull(strstr(r.err, "block \"i\""));
    result_free(&r);
    char *after = read_file(sp("out/i.npy"), &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert(!memcmp(before, after, n0));
    free(after);
    bool staging = false;
    ck_assert_int_eq(count_entries(sp("out"), &staging), 1);
    ck_assert(!staging);

    /* A timeout is a run-time failure too. */
    write_file(sp("slow.json"), HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"RandomNormal\","
                                     "\"attrs\":{\"shape\":[64,1024,1024]}}],"
                                     "\"outputs\":[\"i\"]}");
    r = RUN("run", sp("slow.json"), "--out", sp("out"), "--timeout", "0.001");
    ck_assert_int_eq(r.status, 4);
    result_free(&r);
    after = read_file(sp("out/i.npy"), &n1);
    ck_assert(n0 == n1 && !memcmp(before, after, n0));
    free(after);
    free(before);
}
END_TEST

START_TEST(unwritable_output_exits_5) {
    write_file(sp("p.json"), small_page);
    write_file(sp("plain"), "not a folder");
    result r = RUN("run", sp("p.json"), "--out", sp("plain/sub"));
    ck_assert_int_eq(r.status, 5);
    ck_assert(r.err[0] != '\0');
    result_free(&r);
    size_t n;
    char *text = read_file(sp("plain"), &n);
    ck_assert_str_eq(text, "not a folder");
    free(text);
    bool staging = false;
    ck_assert_int_eq(count_entries(scratch, &staging), 2); /* p.json and plain */
    ck_assert(!staging);

    /* A second fetch that cannot be saved: neither file is written, the older one is kept. */
    r = RUN("run", sp("p.json"), "--out", sp("out"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    size_t n0, n1;
    char *before = read_file(sp("out/i.npy"), &n0);
    ck_assert_int_eq(mkdir(sp("out/c.npy"), 0755), 0); /* the rename onto it fails */
    /* New values, so that an overwritten i.npy would differ. The failing file comes first:
     * the files are renamed in fetch order, and a rename failure stops the later ones. */
    write_file(sp("p.json"), HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\",\"attrs\":"
                                  "{\"value\":[[9,9],[9,9]]}},{\"id\":\"i\",\"type\":"
                                  "\"Identity\",\"inputs\":{\"input\":\"c\"}}]}");
    r = RUN("run", sp("p.json"), "--out", sp("out"), "--fetch", "c", "--fetch", "i");
    ck_assert_int_eq(r.status, 5);
    result_free(&r);
    char *after = read_file(sp("out/i.npy"), &n1);
    ck_assert(n0 == n1 && !memcmp(before, after, n0));
    free(before);
    free(after);
    staging = false;
    ck_assert_int_eq(count_entries(sp("out"), &staging), 2); /* i.npy and the c.npy folder */
    ck_assert(!staging);
}
END_TEST

/* ---- the catalogue ---------------------------------------------------------------------------- */

START_TEST(blocks_catalogue) {
    result r = RUN("blocks");
    ck_assert_int_eq(r.status, 0);
    for (int i = 0; i < bf_block_type_count(); i++)
        ck_assert_ptr_nonnull(strstr(r.out, bf_block_type_name(i)));
    result_free(&r);

    r = RUN("blocks", "--json");
    ck_assert_int_eq(r.status, 0);
    cJSON *root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(root, "blocks");
    ck_assert(cJSON_IsArray(blocks));
    ck_assert_int_eq(cJSON_GetArraySize(blocks), bf_block_type_count());
    for (int i = 0; i < bf_block_type_count(); i++) {
        bool found = false;
        const cJSON *b;
        cJSON_ArrayForEach(b, blocks) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
            found |= cJSON_IsString(t) && !strcmp(t->valuestring, bf_block_type_name(i));
        }
        ck_assert_msg(found, "%s missing from blocks --json", bf_block_type_name(i));
    }
    cJSON_Delete(root);
    result_free(&r);

    r = RUN("blocks", "Const");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "Const"));
    ck_assert_ptr_null(strstr(r.out, "RandomNormal"));
    result_free(&r);

    r = RUN("blocks", "--json", "Placeholder");
    ck_assert_int_eq(r.status, 0);
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert_ptr_nonnull(strstr(r.out, "\"Placeholder\""));
    ck_assert_ptr_null(strstr(r.out, "\"Identity\""));
    cJSON_Delete(root);
    result_free(&r);

    r = RUN("version");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, BF_VERSION_STRING));
    result_free(&r);
}
END_TEST

/* ---- examples/ ------------------------------------------------------------------------------- */

START_TEST(examples_run) {
    char dir[512];
    bf_test_path(dir, sizeof(dir), bf_test_source_dir(), "examples");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
        char page[1024];
        snprintf(page, sizeof(page), "%s/%s", dir, e->d_name);
        result r = RUN("check", page);
        ck_assert_msg(r.status == 0, "%s: check exit %d: %s", e->d_name, r.status, r.err);
        result_free(&r);
        r = RUN("run", page, "--out", sp("ex"), "--device", "cpu");
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", e->d_name, r.status, r.err);
        ck_assert_msg(!strstr(r.err, "warning"), "%s: warnings: %s", e->d_name, r.err);
        result_free(&r);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 7); /* the pages the README lists */
}
END_TEST

/* ---- fmt ---------------------------------------------------------------------------------- */

START_TEST(fmt_check_and_in_place) {
    /* the example pages are kept canonical */
    char ex[4096], names[8][4200];
    const char *args[16] = {"fmt", "--check"};
    int n = 2;
    static const char *const pages[] = {"filter_grad_same.json", "filter_grad_valid.json",
                                        "depthwise.json", "nchw.json", "input_grad.json",
                                        "strided_dilated.json", "fd_check_filter_grad.json"};
    bf_test_path(ex, sizeof(ex), bf_test_source_dir(), "examples");
    for (int i = 0; i < 7; i++) {
        bf_test_path(names[i], sizeof(names[i]), ex, pages[i]);
        args[n++] = names[i];
    }
    args[n] = NULL;
    result r = run_args(args);
    ck_assert_msg(r.status == 0, "examples not canonical: %s%s", r.out, r.err);
    result_free(&r);

    /* a page written by hand: printed canonical, --check says so, --in-place rewrites it */
    write_file(sp("p.json"), small_page);
    r = RUN("fmt", sp("p.json"));
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "{\n  \"format\": \"blockflow.page\",\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"inputs\": {\"input\": \"c\"}"));
    char *canon = strdup(r.out);
    result_free(&r);
    r = RUN("fmt", "--check", sp("p.json"));
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "not in canonical form"));
    result_free(&r);
    r = RUN("fmt", "--in-place", sp("p.json"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    char *now = read_file(sp("p.json"), NULL);
    ck_assert_str_eq(now, canon);
    free(now);
    free(canon);
    r = RUN("fmt", "--check", sp("p.json"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    /* and it still runs, with the same result */
    r = RUN("run", sp("p.json"), "--out", sp("out"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    expect_small_result(sp("out/i.npy"));

    /* an unfinished page is formatted; a broken one is refused and never rewritten */
    write_file(sp("u.json"), HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Identity\"}]}");
    r = RUN("fmt", "--in-place", sp("u.json"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    const char *broken = HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Nope\"}]}";
    write_file(sp("b.json"), broken);
    r = RUN("fmt", "--in-place", sp("b.json"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "unknown block type \"Nope\""));
    ck_assert_ptr_nonnull(strstr(r.err, "blockflow blocks")); /* the CLI's hint */
    result_free(&r);
    now = read_file(sp("b.json"), NULL);
    ck_assert_str_eq(now, broken);
    free(now);
    r = RUN("fmt");
    ck_assert_int_eq(r.status, 2);
    result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
    tcase_add_test(tc, run_writes_results);
    tcase_add_test(tc, fmt_check_and_in_place);
    tcase_add_test(tc, run_with_feed_and_print);
    tcase_add_test(tc, check_prints_shapes);
    tcase_add_test(tc, invalid_page_exits_3_with_one_line_per_problem);
    tcase_add_test(tc, usage_errors_exit_2);
    tcase_add_test(tc, run_failure_exits_4_and_keeps_old_result);
    tcase_add_test(tc, unwritable_output_exits_5);
    tcase_add_test(tc, blocks_catalogue);
    tcase_add_test(tc, examples_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
