/*
 * test_cli_batch.c - `blockflow run` beyond one run (issue 26, "what users expect next"):
 * --set BLOCK.ATTR=VALUE overrides an attribute (checked as an edit), --each runs once per
 * array of an .npz or per file of a glob (results per item), --out FILE.npz writes one
 * archive, and --watch runs again when a fed file changes.
 */
#include "cli_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN(...) bf_run(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

static const char id_page[] =
    HEAD "\"blocks\":[{\"id\":\"x\",\"type\":\"Placeholder\"},"
         "{\"id\":\"y\",\"type\":\"Mul\",\"inputs\":{\"x\":\"x\",\"y\":\"two\"}},"
         "{\"id\":\"two\",\"type\":\"Const\",\"attrs\":{\"value\":2}}],\"outputs\":[\"y\"]}";

static bf_tensor *vec(double a, double b) {
    int64_t d[1] = {2};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &t, NULL), BF_OK);
    ((float *)bf_tensor_data(t))[0] = (float)a;
    ((float *)bf_tensor_data(t))[1] = (float)b;
    return t;
}

static void save_vec(const char *path, double a, double b) {
    bf_tensor *t = vec(a, b);
    ck_assert_int_eq(bf_tensor_save_npy(t, path, NULL), BF_OK);
    bf_tensor_free(t);
}

/* Element 0 and 1 of the .npy at `path` (or of array `key` of the .npz). */
static void expect(const char *path, const char *key, double a, double b) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    bf_status st = key ? bf_tensor_load_npz(NULL, path, key, &t, &e)
                       : bf_tensor_load_npy(NULL, path, &t, &e);
    ck_assert_msg(st == BF_OK, "%s %s: %s", path, key ? key : "", e.message);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), a);
    ck_assert_double_eq(bf_tensor_get_f64(t, 1), b);
    bf_tensor_free(t);
}

START_TEST(set_overrides_attributes) {
    bf_write_file(bf_sp("p.json"), id_page);
    save_vec(bf_sp("x.npy"), 1, 2);
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("x.npy"));
    bf_result r = RUN("run", bf_sp("p.json"), "--feed", feed, "--set", "two.value=10", "--out",
                      bf_sp("out"));
    ck_assert_msg(r.status == 0, "%s", r.err);
    bf_result_free(&r);
    expect(bf_sp("out/y.npy"), NULL, 10, 20);
    r = RUN("run", bf_sp("p.json"), "--feed", feed, "--set", "two.nope=1", "--no-save");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "has no attribute \"nope\""), "%s", r.err);
    bf_result_free(&r);
    r = RUN("run", bf_sp("p.json"), "--feed", feed, "--set", "two.dtype=complex", "--no-save");
    ck_assert_int_eq(r.status, 3); /* a bare word is a string, checked as the attribute */
    ck_assert_msg(strstr(r.err, "block \"two\"") && strstr(r.err, "\"dtype\""), "%s", r.err);
    bf_result_free(&r);
    r = RUN("run", bf_sp("p.json"), "--set", "nodot=1", "--no-save");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST

START_TEST(each_runs_once_per_item) {
    bf_write_file(bf_sp("p.json"), id_page);
    bf_tensor *a = vec(1, 2), *b = vec(3, 4);
    const char *keys[2] = {"b_second", "a_first"};
    const bf_tensor *ts[2] = {b, a};
    ck_assert_int_eq(bf_tensor_save_npz(bf_sp("batch.npz"), keys, ts, 2, NULL), BF_OK);
    bf_tensor_free(a);
    bf_tensor_free(b);
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("batch.npz"));
    bf_result r = RUN("run", bf_sp("p.json"), "--feed", feed, "--each", "--out", bf_sp("out"));
    ck_assert_msg(r.status == 0, "%s", r.err);
    char *first = strstr(r.out, "item a_first"), *second = strstr(r.out, "item b_second");
    ck_assert_msg(first && second && first < second, "%s", r.out); /* sorted by name */
    bf_result_free(&r);
    expect(bf_sp("out/a_first/y.npy"), NULL, 2, 4);
    expect(bf_sp("out/b_second/y.npy"), NULL, 6, 8);
    /* one archive instead: keys ITEM/ID */
    r = RUN("run", bf_sp("p.json"), "--feed", feed, "--each", "--out", bf_sp("all.npz"),
            "--quiet");
    ck_assert_msg(r.status == 0, "%s", r.err);
    bf_result_free(&r);
    expect(bf_sp("all.npz"), "a_first/y", 2, 4);
    expect(bf_sp("all.npz"), "b_second/y", 6, 8);
    /* a glob: one run per file; --json gives one document with the items */
    ck_assert_int_eq(mkdir(bf_sp("in"), 0777), 0);
    save_vec(bf_sp("in/one.npy"), 5, 6);
    save_vec(bf_sp("in/two.npy"), 7, 8);
    char glob[4200];
    snprintf(glob, sizeof(glob), "x=%s/in/*.npy", bf_scratch());
    r = RUN("run", bf_sp("p.json"), "--feed", glob, "--each", "--out", bf_sp("g"), "--json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "\"items\"") && strstr(r.out, "\"item\":\t\"two\"") &&
                      strstr(r.out, "\"status\":\t\"ran\""), "%s", r.out);
    bf_result_free(&r);
    expect(bf_sp("g/one/y.npy"), NULL, 10, 12);
    expect(bf_sp("g/two/y.npy"), NULL, 14, 16);
    /* --each without a batch to iterate */
    r = RUN("run", bf_sp("p.json"), "--each");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST

START_TEST(out_npz_writes_one_archive) {
    bf_write_file(bf_sp("p.json"), id_page);
    save_vec(bf_sp("x.npy"), 1, 2);
    char feed[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("x.npy"));
    bf_result r = RUN("run", bf_sp("p.json"), "--feed", feed, "--fetch", "y", "--fetch", "x",
                      "--out", bf_sp("r.npz"));
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "wrote"), "%s", r.out);
    bf_result_free(&r);
    expect(bf_sp("r.npz"), "y", 2, 4);
    expect(bf_sp("r.npz"), "x", 1, 2);
}
END_TEST

static bool file_has(const char *path, const char *what) {
    char *t = bf_read_file(path, NULL);
    bool yes = t && strstr(t, what);
    free(t);
    return yes;
}

static double first_of(const char *path) {
    bf_tensor *t = NULL;
    if (bf_tensor_load_npy(NULL, path, &t, NULL) != BF_OK) return -1;
    double v = bf_tensor_get_f64(t, 0);
    bf_tensor_free(t);
    return v;
}

START_TEST(watch_runs_again_when_a_feed_changes) {
    bf_write_file(bf_sp("p.json"), id_page);
    save_vec(bf_sp("x.npy"), 1, 2);
    char feed[4200], out[4200], log[4200];
    snprintf(feed, sizeof(feed), "x=%s", bf_sp("x.npy"));
    snprintf(out, sizeof(out), "%s", bf_sp("out"));
    snprintf(log, sizeof(log), "%s", bf_sp("watch.log"));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(bf_test_binary(), "blockflow", "run", bf_sp("p.json"), "--feed", feed, "--out",
              out, "--watch", (char *)NULL);
        _exit(127);
    }
    char y[4300];
    snprintf(y, sizeof(y), "%s/y.npy", out);
    struct timespec ts = {0, 20 * 1000 * 1000};
    int i = 0;
    for (; i < 1500 && !file_has(log, "watching"); i++) nanosleep(&ts, NULL);
    ck_assert_msg(first_of(y) == 2, "first run: %g", first_of(y));
    save_vec(bf_sp("x.npy"), 50, 60); /* a new feed: run again */
    for (i = 0; i < 1500 && first_of(y) != 100; i++) nanosleep(&ts, NULL);
    ck_assert_msg(first_of(y) == 100, "no second run");
    for (i = 0; i < 500 && !file_has(log, "x.npy changed: running again"); i++)
        nanosleep(&ts, NULL);
    ck_assert(file_has(log, "x.npy changed: running again"));
    for (i = 0; i < 1500 && !file_has(log, "watching 2 files\n"); i++)
        nanosleep(&ts, NULL);
    kill(pid, SIGINT); /* while waiting: stop, exit 0 */
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli_batch");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, set_overrides_attributes);
    tcase_add_test(tc, each_runs_once_per_item);
    tcase_add_test(tc, out_npz_writes_one_archive);
    tcase_add_test(tc, watch_runs_again_when_a_feed_changes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
