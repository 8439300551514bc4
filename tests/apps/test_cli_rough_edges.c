/*
 * test_cli_rough_edges.c - the rough edges a newcomer hit in the `blockflow` program (issue
 * 26), each end to end through $BF_BINARY: -V; --json says "ran" and --json --print carries the
 * values; check prints "?" (not "[]") for a block whose shape is unknown; the messages that
 * named too little ("output N" without its text, "fed a int32"); explain and gradcheck take
 * --feed; a float32 .npy fed to a bfloat16 Placeholder is rounded to nearest even; fmt lays out
 * a well-formed page with problems (and --check reports them); SIGTERM while results are
 * written leaves no temporary file and the older results; stale temporary files of runs that
 * no longer exist are swept.
 */
#include "cli_harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN(...) bf_run(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static void save(const char *path, bf_dtype dt, int rank, const int64_t *dims,
                 const double *values) {
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, NULL), BF_OK);
    for (int64_t i = 0; i < bf_tensor_numel(t); i++) {
        if (dt == BF_DTYPE_F32) ((float *)bf_tensor_data(t))[i] = (float)values[i];
        else if (dt == BF_DTYPE_I32) ((int32_t *)bf_tensor_data(t))[i] = (int32_t)values[i];
        else ((double *)bf_tensor_data(t))[i] = values[i];
    }
    bf_error e = {0};
    ck_assert_msg(bf_tensor_save_npy(t, path, &e) == BF_OK, "%s", e.message);
    bf_tensor_free(t);
}

static bool has(const char *s, const char *what) { return strstr(s, what) != NULL; }

START_TEST(version_flag) {
    bf_result r = RUN("-V");
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(!strncmp(r.out, "blockflow " BF_VERSION_STRING "\n", 12), "%s", r.out);
    bf_result_free(&r);
}
END_TEST

START_TEST(json_says_ran_and_print_adds_values) {
    char page[4096];
    bf_test_path(page, sizeof(page), bf_test_source_dir(), "examples/filter_grad_same.json");
    bf_result r = RUN("run", page, "--json", "--print", "--no-save");
    ck_assert_msg(r.status == 0, "%s", r.err);
    cJSON *doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "status")->valuestring, "ran");
    const cJSON *dw = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "values"), "dw");
    ck_assert_msg(dw != NULL, "--json --print gave no values: %s", r.out);
    ck_assert_str_eq(cJSON_GetObjectItem(dw, "dtype")->valuestring, "float32");
    const cJSON *v = cJSON_GetObjectItem(dw, "values"); /* [3][3][1][1], dw[1,1,0,0] = 325 */
    ck_assert_double_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetArrayItem(
                            cJSON_GetArrayItem(v, 1), 1), 0), 0)->valuedouble, 325);
    cJSON_Delete(doc);
    bf_result_free(&r);
}
END_TEST

START_TEST(messages_name_what_they_mean) {
    /* an output naming nothing is named; a failed block's shape is "?" in check's table */
    bf_write_file(bf_sp("o.json"), HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\","
                                        "\"attrs\":{\"value\":[1]}}],\"outputs\":[\"c\",\"nope\"]}");
    bf_result r = RUN("check", bf_sp("o.json"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(has(r.err, "output 1 (\"nope\") names no block output"), "%s", r.err);
    bf_result_free(&r);
    bf_write_file(bf_sp("s.json"),
                  HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":"
                       "{\"dtype\":\"float32\",\"shape\":[1,4,4,1]}},"
                       "{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"shape\":[2,2,2,1],"
                       "\"value\":[1,2,3,4,5,6,7,8]}},"
                       "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":"
                       "\"w\"},\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}}]}");
    r = RUN("check", bf_sp("s.json"));
    ck_assert_int_eq(r.status, 3);
    const char *line = strstr(r.out, "\ny ");
    ck_assert_msg(line && has(line, "?") && !has(line, "[]"), "%s", r.out);
    bf_result_free(&r);
    /* a syntax error does not claim a depth limit (cJSON's 1000) the page never had (64) */
    bf_write_file(bf_sp("j.json"), "{\"blocks\": [");
    r = RUN("check", bf_sp("j.json"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(has(r.err, "not valid JSON") && !has(r.err, "1000"), "%s", r.err);
    bf_result_free(&r);
    /* "fed an int32 tensor" */
    int64_t d[1] = {2};
    double v[2] = {1, 2};
    save(bf_sp("i.npy"), BF_DTYPE_I32, 1, d, v);
    bf_write_file(bf_sp("p.json"), HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Placeholder\"}],"
                                        "\"outputs\":[\"x\"]}");
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("i.npy"));
    r = RUN("run", bf_sp("p.json"), "--feed", feed, "--no-save");
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(has(r.err, "fed an int32 tensor, expected float32"), "%s", r.err);
    bf_result_free(&r);
}
END_TEST

static const char conv_page[] =
    HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Placeholder\",\"attrs\":{\"dtype\":\"float64\"}},"
         "{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"float64\",\"shape\":[2,2,1,1],"
         "\"value\":[1,2,3,4]}},"
         "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
         "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"}}],\"outputs\":[\"y\"]}";

START_TEST(explain_and_gradcheck_take_feeds) {
    bf_write_file(bf_sp("c.json"), conv_page);
    int64_t d[4] = {1, 3, 3, 1};
    double v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    save(bf_sp("x.npy"), BF_DTYPE_F64, 4, d, v);
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("x.npy"));
    /* y[0,0,0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37 */
    bf_result r = RUN("explain", bf_sp("c.json"), "y", "0", "0", "0", "0", "--feed", feed);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(has(r.out, "y[0,0,0,0] = 37"), "%s", r.out);
    bf_result_free(&r);
    r = RUN("explain", bf_sp("c.json"), "y", "0", "0", "0", "0"); /* without: says so */
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(has(r.err, "not fed"), "%s", r.err);
    bf_result_free(&r);
    r = RUN("gradcheck", bf_sp("c.json"), "y", "--feed", feed, "--json");
    ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
    ck_assert_msg(has(r.out, "\"pass\":true") || has(r.out, "\"pass\": true"), "%s", r.out);
    bf_result_free(&r);
}
END_TEST

START_TEST(float32_feeds_round_to_bfloat16) {
    bf_write_file(bf_sp("b.json"), HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Placeholder\","
                                        "\"attrs\":{\"dtype\":\"bfloat16\"}}],\"outputs\":[\"x\"]}");
    int64_t d[1] = {4};
    /* 1 + 2^-8 is a tie: to even, 1; 1 + 3*2^-8 a tie: to even, 1 + 2^-6; -2.5 exact */
    double v[4] = {1 + 1.0 / 256, 1 + 3.0 / 256, -2.5, 1 + 1.0 / 256 + 1.0 / 65536};
    save(bf_sp("f.npy"), BF_DTYPE_F32, 1, d, v);
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("f.npy"));
    bf_result r = RUN("run", bf_sp("b.json"), "--feed", feed, "--json", "--print", "--no-save");
    ck_assert_msg(r.status == 0, "%s", r.err);
    cJSON *doc = cJSON_Parse(r.out);
    const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "values"), "x");
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(cJSON_GetObjectItem(x, "dtype")->valuestring, "bfloat16");
    const cJSON *vals = cJSON_GetObjectItem(x, "values");
    static const double want[4] = {1, 1 + 4.0 / 256, -2.5, 1 + 2.0 / 256};
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq(cJSON_GetArrayItem(vals, i)->valuedouble, want[i]);
    cJSON_Delete(doc);
    bf_result_free(&r);
}
END_TEST

START_TEST(fmt_lays_out_pages_with_problems) {
    static const char page[] =
        "{\"blocks\":[{\"attrs\":{\"padding\":\"same\"},\"type\":\"Conv2d\",\"id\":\"c\","
        "\"x-note\":1}],\"version\":1,\"format\":\"blockflow.page\"}";
    bf_write_file(bf_sp("f.json"), page);
    bf_result r = RUN("fmt", bf_sp("f.json"));
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(has(r.out, "{\n  \"format\": \"blockflow.page\",\n  \"version\": 1,\n"
                             "  \"blocks\": [\n    {\n      \"id\": \"c\",\n"
                             "      \"type\": \"Conv2d\",\n      \"attrs\": {\"padding\": \"same\"},\n"
                             "      \"x-note\": 1\n    }\n  ]\n}\n"), "%s", r.out);
    ck_assert_msg(has(r.err, "Conv2d"), "the problem is still reported: %s", r.err);
    char *formatted = strdup(r.out);
    bf_result_free(&r);
    r = RUN("fmt", "--check", bf_sp("f.json"));
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(has(r.err, "Conv2d") && has(r.out, "not in canonical form"), "%s", r.err);
    bf_result_free(&r);
    r = RUN("fmt", "--in-place", bf_sp("f.json"));
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    char *now = bf_read_file(bf_sp("f.json"), NULL);
    ck_assert_str_eq(now, formatted);
    free(now);
    free(formatted);
    bf_write_file(bf_sp("bad.json"), "{\"blocks\": [");
    r = RUN("fmt", bf_sp("bad.json"));
    ck_assert_int_eq(r.status, 3); /* not JSON: nothing to format */
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
}
END_TEST

/* Entries of `dir` whose name starts with ".blockflow-". */
static int temporaries(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += !strncmp(e->d_name, ".blockflow-", 11);
    closedir(d);
    return n;
}

START_TEST(sigterm_while_writing_leaves_nothing_behind) {
    /* six 32 MiB results of one random tensor: writing them takes a while */
    bf_write_file(bf_sp("big.json"),
                  HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomUniform\",\"attrs\":"
                       "{\"shape\":[8,1024,1024],\"seed\":1}},"
                       "{\"id\":\"a\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}},"
                       "{\"id\":\"b\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}},"
                       "{\"id\":\"c\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}},"
                       "{\"id\":\"d\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}},"
                       "{\"id\":\"e\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}},"
                       "{\"id\":\"f\",\"type\":\"Identity\",\"inputs\":{\"input\":\"r\"}}],"
                       "\"outputs\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}");
    char out[4096];
    snprintf(out, sizeof(out), "%s", bf_sp("out"));
    ck_assert_int_eq(mkdir(out, 0777), 0);
    /* an older result that must survive, and a stale file of a run that no longer exists */
    char old[4200], stale[4200];
    snprintf(old, sizeof(old), "%s/a.npy", out);
    snprintf(stale, sizeof(stale), "%s/.blockflow-999999999.a.npy.tmp.abcdef", out);
    bf_write_file(old, "older result");
    bf_write_file(stale, "left by a killed run");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(bf_test_binary(), "blockflow", "run", bf_sp("big.json"), "--out", out, "--quiet",
              (char *)NULL);
        _exit(127);
    }
    /* wait for the first temporary file of this run, then SIGTERM */
    char mine[64];
    snprintf(mine, sizeof(mine), ".blockflow-%ld.", (long)pid);
    bool seen = false;
    for (int i = 0; i < 60000 && !seen; i++) {
        DIR *d = opendir(out);
        for (struct dirent *e; d && (e = readdir(d));) seen |= !strncmp(e->d_name, mine, strlen(mine));
        if (d) closedir(d);
        if (!seen) {
            int st;
            ck_assert_msg(waitpid(pid, &st, WNOHANG) == 0, "the run ended before writing");
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_msg(seen, "no temporary file appeared");
    kill(pid, SIGTERM);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    ck_assert_int_eq(temporaries(out), 0); /* ours cleaned, the stale one swept */
    char *kept = bf_read_file(old, NULL);
    ck_assert_str_eq(kept, "older result");
    free(kept);
    char b[4200];
    snprintf(b, sizeof(b), "%s/b.npy", out);
    ck_assert(!bf_exists(b));
}
END_TEST

START_TEST(stale_files_of_live_runs_are_kept) {
    bf_write_file(bf_sp("p.json"), HEAD "\"blocks\":[{\"id\":\"c\",\"type\":\"Const\","
                                        "\"attrs\":{\"value\":[1]}}],\"outputs\":[\"c\"]}");
    char live[4200], dead[4200];
    snprintf(live, sizeof(live), "%s/.blockflow-%ld.c.npy", bf_scratch(), (long)getpid());
    snprintf(dead, sizeof(dead), "%s/.blockflow-999999998.old.c.npy", bf_scratch());
    bf_write_file(live, "a run in progress");
    bf_write_file(dead, "x");
    bf_result r = RUN("run", bf_sp("p.json"), "--out", bf_scratch());
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(has(r.err, "removed 1 temporary file"), "%s", r.err);
    bf_result_free(&r);
    ck_assert(bf_exists(live));
    ck_assert(!bf_exists(dead));
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli_rough_edges");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, version_flag);
    tcase_add_test(tc, json_says_ran_and_print_adds_values);
    tcase_add_test(tc, messages_name_what_they_mean);
    tcase_add_test(tc, explain_and_gradcheck_take_feeds);
    tcase_add_test(tc, float32_feeds_round_to_bfloat16);
    tcase_add_test(tc, fmt_lays_out_pages_with_problems);
    tcase_add_test(tc, sigterm_while_writing_leaves_nothing_behind);
    tcase_add_test(tc, stale_files_of_live_runs_are_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
