/*
 * test_train_cli.c - `blockflow train`, `grad --loss` and `gradcheck --loss` end to end (the
 * program, $BF_BINARY, spawned with its output captured). A tiny training page (Variable ->
 * Conv2D -> Identity, the loss the sum of the convolution's outputs) gets its backward pass
 * and SGD updates from `grad --loss id --optimizer sgd:0.01 -o`, and is then trained:
 * - --steps, the CSV log (header, one row per step, steps 1..N, a falling loss) and the JSON
 *   Lines log (one object per row with every metric), --quiet, --json's fields;
 * - --checkpoint then --resume continues the step count, and 5 + 3 resumed steps give exactly
 *   the Variable of 8 straight steps (read back from the .npz with bf_tensor_load_npz);
 * - --save-every writes periodic checkpoints (seen after a SIGKILL of a long run);
 * - --epochs on a page with a Dataset block stops after E epochs (rows = E * batches), and is
 *   a usage error naming the problem on a page without one;
 * - bad options exit 2 naming the option; an unwritable --log fails (exit 5) before any step;
 * - Ctrl-C (SIGINT to the child after a few logged steps): exit 130, the checkpoint written,
 *   loadable, holding the step count of the last logged step;
 * - the progress line appears on a terminal (a pseudo-terminal as stderr) and not otherwise;
 * - `grad --loss`'s page reloads and runs; `gradcheck --loss` passes on it and fails (exit 1)
 *   on a hand-wired page whose gradient is scaled by 2 with a Mul.
 */
#define _GNU_SOURCE /* posix_openpt and friends */
#include "cli_harness.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Run blockflow in the scratch folder: the files it is given are named relative to it (bf_sp's
 * buffers are few, and bf_run uses two of them). */
static bf_result run_here(const char *const *args) {
    bf_run_opts o = {.dir = bf_scratch(), .timeout_s = 20};
    return bf_run(&o, args);
}
#define RUN(...) run_here((const char *const[]){__VA_ARGS__, NULL})
#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

/* Variable -> Conv2D -> Identity: the loss is the convolution's output (summed by the
 * gradient's seed of ones), its first element the reported metric. */
static const char fwd_page[] =
    HEAD "\"blocks\":["
         "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,4,4,1],\"value\":1.0}},"
         "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,1,2],"
         "\"initializer\":\"glorot_uniform\"}},"
         "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
         "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
         "{\"id\":\"id\",\"type\":\"Identity\",\"inputs\":{\"input\":\"conv\"}}],"
         "\"outputs\":[\"id\"]}";

/* The same page with its backward pass wired by hand; `scale` multiplies the filter's
 * gradient before the update (1: correct, 2: wrong). */
static void write_hand_wired(const char *path, double scale) {
    char text[4096];
    snprintf(text, sizeof(text),
             HEAD "\"blocks\":["
                  "{\"id\":\"x\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,4,4,1],\"value\":1.0}},"
                  "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,1,2],"
                  "\"initializer\":\"glorot_uniform\"}},"
                  "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\","
                  "\"filter\":\"w\"},\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
                  "{\"id\":\"id\",\"type\":\"Identity\",\"inputs\":{\"input\":\"conv\"}},"
                  "{\"id\":\"seed\",\"type\":\"Const\",\"attrs\":{\"shape\":[1,4,4,2],"
                  "\"value\":1.0}},"
                  "{\"id\":\"sizes\",\"type\":\"Const\",\"attrs\":{\"dtype\":\"int32\","
                  "\"shape\":[4],\"value\":[3,3,1,2]}},"
                  "{\"id\":\"gf\",\"type\":\"Conv2DBackpropFilter\",\"inputs\":{\"input\":\"x\","
                  "\"filter_sizes\":\"sizes\",\"out_backprop\":\"seed\"},"
                  "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
                  "{\"id\":\"k\",\"type\":\"Const\",\"attrs\":{\"value\":%g}},"
                  "{\"id\":\"scaled\",\"type\":\"Mul\",\"inputs\":{\"x\":\"gf\",\"y\":\"k\"}},"
                  "{\"id\":\"lr\",\"type\":\"Const\",\"attrs\":{\"value\":0.01}},"
                  "{\"id\":\"upd\",\"type\":\"ApplyGradientDescent\",\"inputs\":{\"var\":\"w\","
                  "\"alpha\":\"lr\",\"delta\":\"scaled\"}}],"
                  "\"outputs\":[\"id\"]}",
             scale);
    bf_write_file(path, text);
}

/* The training page t.json in the scratch folder, made by `grad --loss -o`. */
static void make_training_page(void) {
    bf_write_file(bf_sp("p.json"), fwd_page);
    bf_result r = RUN("grad", "p.json", "--loss", "id", "--optimizer", "sgd:0.01", "-o",
                      "t.json");
    ck_assert_msg(r.status == 0, "grad: exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, "");
    ck_assert_ptr_nonnull(strstr(r.err, "d(loss)/d(w) = conv_grad_filter, updated by w_update"));
    ck_assert_ptr_nonnull(strstr(r.err, "added 5 blocks"));
    bf_result_free(&r);
}

/* Array `key` of the .npz at `path`, element i, as a double; the test fails when unreadable. */
static double npz_get(const char *path, const char *key, int64_t i) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_tensor_load_npz(NULL, path, key, &t, &e) == BF_OK, "%s:%s: %s", path, key,
                  e.message);
    ck_assert_int_gt(bf_tensor_numel(t), i);
    double v = bf_tensor_get_f64(t, i);
    bf_tensor_free(t);
    return v;
}

static cJSON *parse_json(const char *text) {
    cJSON *d = cJSON_Parse(text);
    ck_assert_msg(d != NULL, "not JSON: %s", text);
    return d;
}

static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "\"%s\" is not a number", k);
    return v->valuedouble;
}

/* ---- steps and logs ---------------------------------------------------------------------- */

START_TEST(grad_loss_page_reloads_and_runs) {
    make_training_page();
    bf_result r = RUN("run", "t.json", "--no-save", "--quiet");
    ck_assert_msg(r.status == 0, "run: exit %d: %s", r.status, r.err);
    bf_result_free(&r);
    r = RUN("check", "t.json", "--quiet");
    ck_assert_msg(r.status == 0, "check: %s", r.err);
    bf_result_free(&r);
    /* printed on stdout without -o, the blocks listed on stderr unless --quiet */
    r = RUN("grad", "p.json", "--loss", "id", "--wrt", "w", "--optimizer", "adam:0.001",
            "--quiet");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "\"ApplyAdam\""));
    bf_result_free(&r);
    /* the one-block form still works */
    r = RUN("grad", "p.json", "conv");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "Conv2DBackpropFilter"));
    ck_assert_ptr_nonnull(strstr(r.err, "added: "));
    bf_result_free(&r);
    /* --in-place rewrites the page */
    r = RUN("grad", "p.json", "--loss", "id", "--optimizer", "momentum:0.01", "--in-place",
            "-q");
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    char *now = bf_read_file(bf_sp("p.json"), NULL);
    ck_assert_ptr_nonnull(strstr(now, "ApplyMomentum"));
    free(now);
}
END_TEST

START_TEST(grad_usage_errors) {
    bf_write_file(bf_sp("p.json"), fwd_page);
    static const struct {
        const char *a[6];
        int status;
        const char *says;
    } cases[] = {
        {{"grad", "P"}, 2, "usage: blockflow grad"},
        {{"grad", "P", "conv", "--loss", "id"}, 2, "not both"},
        {{"grad", "P", "conv", "--optimizer", "sgd:1"}, 2, "--optimizer goes with --loss"},
        {{"grad", "P", "--loss", "id", "--dy", "x"}, 2, "--dy goes with BLOCK"},
        {{"grad", "P", "--loss"}, 2, "--loss needs a value"},
        {{"grad", "P", "--loss", "nosuch"}, 2, "nosuch"},
        {{"grad", "P", "--loss", "id", "--optimizer", "rmsprop:1"}, 3, "sgd:LR"},
        {{"grad", "P", "--loss", "id", "--wrt", "w,"}, 2, "an empty name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[8] = {0};
        for (int k = 0; k < 6 && cases[i].a[k]; k++)
            args[k] = !strcmp(cases[i].a[k], "P") ? "p.json" : cases[i].a[k];
        bf_result r = run_here(args);
        ck_assert_msg(r.status == cases[i].status, "case %zu: exit %d: %s", i, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].says), "case %zu: %s", i, r.err);
        ck_assert_str_eq(r.out, "");
        bf_result_free(&r);
    }
}
END_TEST

/* The CSV log: header, then rows "STEP,SECONDS,ID" for steps 1..n; returns the losses. */
static void read_csv(const char *path, int n, double *loss) {
    char *text = bf_read_file(path, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(bf_count_lines(text), n + 1);
    ck_assert(!strncmp(text, "step,seconds,id\n", 16));
    char *line = strchr(text, '\n') + 1;
    double last_s = 0;
    for (int i = 0; i < n; i++) {
        long long step;
        double s;
        ck_assert_int_eq(sscanf(line, "%lld,%lf,%lf", &step, &s, &loss[i]), 3);
        ck_assert_int_eq(step, i + 1);
        ck_assert(s >= last_s);
        last_s = s;
        line = strchr(line, '\n') + 1;
    }
    free(text);
}

START_TEST(train_steps_with_csv_log) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--steps", "7", "--log", "l.csv",
                      "--threads", "1");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "trained 7 steps"));
    ck_assert_ptr_nonnull(strstr(r.out, "step 7 now"));
    ck_assert_ptr_nonnull(strstr(r.out, "log "));
    ck_assert_ptr_null(strstr(r.err, "steps/s")); /* no progress line: stderr is no terminal */
    bf_result_free(&r);
    double loss[7];
    read_csv(bf_sp("l.csv"), 7, loss);
    for (int i = 1; i < 7; i++) ck_assert_msg(loss[i] < loss[i - 1], "loss rose at step %d", i + 1);

    /* the default is 100 steps; --quiet prints nothing */
    r = RUN("train", "t.json", "--quiet", "--log", "l.csv");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    bf_result_free(&r);
    double loss100[100];
    read_csv(bf_sp("l.csv"), 100, loss100); /* the log was made new */
    ck_assert_double_eq(loss100[6], loss[6]);
}
END_TEST

START_TEST(train_jsonl_log_and_metrics) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--steps", "5", "--metrics", "id,w,conv:output",
                      "--log", "l.jsonl", "--quiet");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    bf_result_free(&r);
    char *text = bf_read_file(bf_sp("l.jsonl"), NULL);
    ck_assert_int_eq(bf_count_lines(text), 5);
    char *line = text;
    for (int i = 0; i < 5; i++) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        cJSON *o = parse_json(line);
        ck_assert_double_eq(jnum(o, "step"), i + 1);
        ck_assert(jnum(o, "seconds") >= 0);
        jnum(o, "w");
        ck_assert_double_eq(jnum(o, "id"), jnum(o, "conv:output")); /* Identity */
        ck_assert_int_eq(cJSON_GetArraySize(o), 5);
        cJSON_Delete(o);
        line = nl + 1;
    }
    free(text);
}
END_TEST

START_TEST(train_json_document) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--steps", "4", "--json", "--checkpoint",
                      "ck.npz");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "");
    cJSON *d = parse_json(r.out);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "ok")));
    ck_assert_str_eq(cJSON_GetObjectItem(d, "status")->valuestring, "ok");
    ck_assert_double_eq(jnum(d, "step"), 4);
    ck_assert_double_eq(jnum(d, "steps"), 4);
    ck_assert(jnum(d, "seconds") >= 0);
    ck_assert(jnum(d, "steps_per_second") > 0);
    const cJSON *m = cJSON_GetObjectItem(d, "metrics");
    ck_assert_int_eq(cJSON_GetArraySize(m), 1);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(m, "id")));
    ck_assert_str_eq(cJSON_GetObjectItem(d, "checkpoint")->valuestring, "ck.npz");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "log")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "problems")), 0);
    cJSON_Delete(d);
    bf_result_free(&r);

    /* a failure is one document too: a page that does not load */
    bf_write_file(bf_sp("bad.json"), HEAD "\"blocks\":[{\"id\":\"i\",\"type\":\"Nope\"}]}");
    r = RUN("train", "bad.json", "--json");
    ck_assert_int_eq(r.status, 3);
    d = parse_json(r.out);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "ok")));
    ck_assert_str_eq(cJSON_GetObjectItem(d, "status")->valuestring, "invalid");
    ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(d, "problems")), 1);
    cJSON_Delete(d);
    bf_result_free(&r);
}
END_TEST

/* ---- checkpoints ---------------------------------------------------------------------------- */

START_TEST(checkpoint_then_resume_continues) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--steps", "5", "--checkpoint", "a.npz",
                      "--quiet");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    bf_result_free(&r);
    ck_assert_double_eq(npz_get(bf_sp("a.npz"), ".step", 0), 5);
    r = RUN("train", "t.json", "--steps", "3", "--resume", "a.npz", "--checkpoint",
            "a.npz", "--json", "--log", "r.csv");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    cJSON *d = parse_json(r.out);
    ck_assert_double_eq(jnum(d, "step"), 8);
    ck_assert_double_eq(jnum(d, "steps"), 3);
    cJSON_Delete(d);
    bf_result_free(&r);
    ck_assert_double_eq(npz_get(bf_sp("a.npz"), ".step", 0), 8);
    char *log = bf_read_file(bf_sp("r.csv"), NULL);
    ck_assert_ptr_nonnull(strstr(log, "\n6,"));
    ck_assert_ptr_nonnull(strstr(log, "\n8,"));
    ck_assert_ptr_null(strstr(log, "\n1,"));
    free(log);

    /* 5 + 3 resumed steps are 8 straight steps, to the bit */
    r = RUN("train", "t.json", "--steps", "8", "--checkpoint", "b.npz", "-q");
    ck_assert_int_eq(r.status, 0);
    bf_result_free(&r);
    for (int i = 0; i < 18; i++)
        ck_assert_double_eq(npz_get(bf_sp("a.npz"), "w", i), npz_get(bf_sp("b.npz"), "w", i));
    ck_assert(npz_get(bf_sp("a.npz"), "w", 0) != npz_get(bf_sp("a.npz"), "w", 1));

    /* a checkpoint that does not fit the page: exit 3, nothing runs */
    r = RUN("train", "p.json", "--resume", "nosuch.npz");
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "--resume"));
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
}
END_TEST

/* Spawn blockflow in the scratch folder with `args`, stdout and stderr to child.out and
 * child.err there (or stderr to `stderr_fd`); returns its pid. */
static pid_t spawn(const char *const *args, int stderr_fd) {
    const char *argv[40];
    int n = 0;
    argv[n++] = bf_test_binary();
    for (int i = 0; args[i] && n < 39; i++) argv[n++] = args[i];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, bf_scratch());
    posix_spawn_file_actions_addopen(&fa, 1, "child.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stderr_fd, 2);
    else posix_spawn_file_actions_addopen(&fa, 2, "child.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot start %s", argv[0]);
    return pid;
}

/* Wait until the file at `path` has at least `lines` lines (at most 20 s). */
static void wait_lines(const char *path, int lines, pid_t pid) {
    for (int t = 0; t < 2000; t++) {
        char *text = bf_read_file(path, NULL);
        int n = text ? bf_count_lines(text) : 0;
        free(text);
        if (n >= lines) return;
        int ws;
        ck_assert_msg(waitpid(pid, &ws, WNOHANG) == 0, "the training ended early");
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_abort_msg("%s never reached %d lines", path, lines);
}

START_TEST(ctrl_c_saves_the_checkpoint) {
    make_training_page();
    char log[512], ck[512];
    snprintf(log, sizeof(log), "%s", bf_sp("i.csv"));
    snprintf(ck, sizeof(ck), "%s", bf_sp("i.npz"));
    pid_t pid = spawn((const char *const[]){"train", "t.json", "--steps", "1000000000",
                                            "--log", log, "--checkpoint", ck, "--threads", "1",
                                            NULL},
                      -1);
    wait_lines(log, 4, pid);
    ck_assert(!bf_exists(ck)); /* nothing saved yet: no --save-every */
    kill(pid, SIGINT);
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert(WIFEXITED(ws));
    ck_assert_int_eq(WEXITSTATUS(ws), 130);
    char *err = bf_read_file(bf_sp("child.err"), NULL);
    ck_assert_msg(strstr(err, "interrupted after step"), "%s", err);
    free(err);
    /* the checkpoint holds the last logged (committed) step */
    char *text = bf_read_file(log, NULL);
    int rows = bf_count_lines(text) - 1;
    free(text);
    ck_assert_int_ge(rows, 3);
    ck_assert_double_eq(npz_get(ck, ".step", 0), rows);
    char *out = bf_read_file(bf_sp("child.out"), NULL);
    ck_assert_ptr_nonnull(strstr(out, "checkpoint "));
    free(out);
    /* and it resumes */
    bf_result r = RUN("train", "t.json", "--steps", "1", "--resume", ck, "--json");
    ck_assert_int_eq(r.status, 0);
    cJSON *d = parse_json(r.out);
    ck_assert_double_eq(jnum(d, "step"), rows + 1);
    cJSON_Delete(d);
    bf_result_free(&r);
}
END_TEST

START_TEST(save_every_writes_periodic_checkpoints) {
    make_training_page();
    char log[512], ck[512];
    snprintf(log, sizeof(log), "%s", bf_sp("s.csv"));
    snprintf(ck, sizeof(ck), "%s", bf_sp("s.npz"));
    pid_t pid = spawn((const char *const[]){"train", "t.json", "--steps", "1000000000",
                                            "--log", log, "--checkpoint", ck, "--save-every",
                                            "7", "--threads", "1", NULL},
                      -1);
    wait_lines(log, 20, pid);
    kill(pid, SIGKILL); /* no chance to save at the end: what is there came from --save-every */
    waitpid(pid, NULL, 0);
    double step = npz_get(ck, ".step", 0);
    ck_assert(step >= 14);
    ck_assert_double_eq(step, 7 * (int64_t)(step / 7));
}
END_TEST

/* ---- epochs ---------------------------------------------------------------------------------- */

START_TEST(epochs_with_a_dataset) {
    /* 12 samples, batches of 4: 3 steps an epoch */
    int64_t dims[4] = {12, 4, 4, 1};
    bf_tensor *x = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 4, dims, &x, &e), BF_OK);
    bf_rng rng = {7};
    float *px = bf_tensor_data(x);
    for (int i = 0; i < 12 * 16; i++) px[i] = (float)bf_rng_nonzero(&rng);
    ck_assert_int_eq(bf_tensor_save_npy(x, bf_sp("x.npy"), &e), BF_OK);
    bf_tensor_free(x);
    bf_write_file(bf_sp("d.json"),
                  HEAD "\"blocks\":["
                       "{\"id\":\"data\",\"type\":\"Dataset\",\"attrs\":{\"file\":\"x.npy\","
                       "\"batch_size\":4}},"
                       "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"shape\":[3,3,1,2],"
                       "\"initializer\":\"glorot_uniform\"}},"
                       "{\"id\":\"conv\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"data:batch\","
                       "\"filter\":\"w\"},\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"SAME\"}},"
                       "{\"id\":\"loss\",\"type\":\"Identity\",\"inputs\":{\"input\":\"conv\"}}],"
                       "\"outputs\":[\"loss\"]}");
    bf_result r = RUN("grad", "d.json", "--loss", "loss", "--optimizer", "sgd:0.01",
                      "--in-place", "-q");
    ck_assert_msg(r.status == 0, "%s", r.err);
    bf_result_free(&r);
    r = RUN("train", "d.json", "--epochs", "2", "--metrics", "loss,data:epoch,data:index",
            "--log", "e.csv", "--checkpoint", "e.npz");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "trained 6 steps"));
    ck_assert_ptr_nonnull(strstr(r.out, "2 epochs"));
    bf_result_free(&r);
    char *log = bf_read_file(bf_sp("e.csv"), NULL);
    ck_assert_int_eq(bf_count_lines(log), 7);
    ck_assert(!strncmp(log, "step,seconds,loss,data:epoch,data:index\n", 40));
    /* the last row is epoch 1's last batch */
    char *last = log + strlen(log) - 1;
    while (last > log && last[-1] != '\n') last--;
    long long step;
    double s, l, ep, ix;
    ck_assert_int_eq(sscanf(last, "%lld,%lf,%lf,%lf,%lf", &step, &s, &l, &ep, &ix), 5);
    ck_assert_int_eq(step, 6);
    ck_assert_double_eq(ep, 1);
    ck_assert_double_eq(ix, 2);
    /* the dataset advances whether or not its outputs are among the metrics: the same losses
     * with the default metrics (the loss only) */
    r = RUN("train", "d.json", "--steps", "4", "--log", "f.csv", "-q");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    bf_result_free(&r);
    char *f = bf_read_file(bf_sp("f.csv"), NULL);
    ck_assert_int_eq(bf_count_lines(f), 5);
    const char *pe = strchr(log, '\n') + 1, *pf = strchr(f, '\n') + 1;
    for (int i = 0; i < 4; i++) {
        double le, lf;
        ck_assert_int_eq(sscanf(pe, "%lld,%lf,%lf", &step, &s, &le), 3);
        ck_assert_int_eq(sscanf(pf, "%lld,%lf,%lf", &step, &s, &lf), 3);
        ck_assert_msg(le == lf, "step %d: loss %.9g with the dataset's outputs fetched, %.9g "
                      "without (the dataset did not advance?)", i + 1, le, lf);
        pe = strchr(pe, '\n') + 1, pf = strchr(pf, '\n') + 1;
    }
    free(f);
    free(log);
    /* the cursor saved is the next epoch's first batch; one more epoch from there */
    ck_assert_double_eq(npz_get(bf_sp("e.npz"), "data", 0), 2);
    ck_assert_double_eq(npz_get(bf_sp("e.npz"), "data", 1), 0);
    r = RUN("train", "d.json", "--epochs", "1", "--resume", "e.npz", "--json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    cJSON *d = parse_json(r.out);
    ck_assert_double_eq(jnum(d, "step"), 9);
    ck_assert_double_eq(jnum(d, "steps"), 3);
    ck_assert_double_eq(jnum(d, "epoch"), 1);
    cJSON_Delete(d);
    bf_result_free(&r);
}
END_TEST

START_TEST(epochs_without_a_dataset_is_a_usage_error) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--epochs", "1", "--log", "no.csv");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--epochs needs a dataset block"));
    ck_assert_str_eq(r.out, "");
    ck_assert(!bf_exists(bf_sp("no.csv")));
    bf_result_free(&r);
}
END_TEST

/* ---- command line ------------------------------------------------------------------------------ */

START_TEST(bad_options_name_the_option) {
    make_training_page();
    static const struct {
        const char *a[6];
        const char *says;
    } cases[] = {
        {{"--steps", "0"}, "--steps \"0\": must be at least 1"},
        {{"--steps", "12x"}, "--steps \"12x\": is not a whole number"},
        {{"--steps", "-3"}, "--steps \"-3\": must not be negative"},
        {{"--steps"}, "--steps needs a value"},
        {{"--epochs", "0"}, "--epochs \"0\": must be at least 1"},
        {{"--steps", "3", "--epochs", "1"}, "--steps and --epochs"},
        {{"--log", "l.txt"}, "--log \"l.txt\": the file name must end in .csv or .jsonl"},
        {{"--save-every", "3"}, "--save-every needs --checkpoint"},
        {{"--save-every", "0", "--checkpoint", "c.npz"}, "--save-every \"0\""},
        {{"--metrics", "id,,w"}, "--metrics \"id,,w\": an empty name"},
        {{"--metrics", "nosuch"}, "--metrics: no block \"nosuch\""},
        {{"--device", "tpu"}, "--device \"tpu\": must be one of auto, cpu, gpu"},
        {{"--timeout", "soon"}, "--timeout \"soon\""},
        {{"--bogus"}, "unexpected argument \"--bogus\""},
        {{"--mem-limit", "lots"}, "--mem-limit \"lots\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[10] = {"train", "t.json"};
        for (int k = 0; k < 6 && cases[i].a[k]; k++) args[2 + k] = cases[i].a[k];
        bf_result r = run_here(args);
        ck_assert_msg(r.status == 2, "case %zu: exit %d: %s", i, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].says), "case %zu: %s", i, r.err);
        ck_assert_str_eq(r.out, "");
        bf_result_free(&r);
    }
    bf_result r = RUN("train");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "which page?"));
    bf_result_free(&r);
    /* help */
    r = RUN("help", "train");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--save-every"));
    ck_assert_ptr_nonnull(strstr(r.out, "--epochs"));
    ck_assert_ptr_nonnull(strstr(r.out, "--mem-limit")); /* the limits */
    bf_result_free(&r);
    r = RUN("train", "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--resume"));
    bf_result_free(&r);
    r = RUN("--help");
    ck_assert_ptr_nonnull(strstr(r.out, "  train PAGE"));
    ck_assert_ptr_nonnull(strstr(r.out, "grad PAGE --loss"));
    ck_assert_ptr_nonnull(strstr(r.out, "gradcheck PAGE --loss"));
    bf_result_free(&r);
}
END_TEST

START_TEST(unwritable_log_fails_before_training) {
    make_training_page();
    bf_result r = RUN("train", "t.json", "--log", "nodir/l.csv", "--checkpoint",
                      "c.npz");
    ck_assert_int_eq(r.status, 5);
    ck_assert_ptr_nonnull(strstr(r.err, "cannot write the log"));
    ck_assert_ptr_null(strstr(r.out, "trained"));
    ck_assert(!bf_exists(bf_sp("c.npz"))); /* not one step: no checkpoint either */
    bf_result_free(&r);
    r = RUN("train", "t.json", "--checkpoint", "nodir/c.npz");
    ck_assert_int_eq(r.status, 5);
    ck_assert_ptr_nonnull(strstr(r.err, "--checkpoint"));
    ck_assert_str_eq(r.out, "");
    bf_result_free(&r);
    /* --json still writes its document */
    r = RUN("train", "t.json", "--log", "nodir/l.jsonl", "--json");
    ck_assert_int_eq(r.status, 5);
    cJSON *d = parse_json(r.out);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "ok")));
    ck_assert_double_eq(jnum(d, "steps"), 0);
    cJSON_Delete(d);
    bf_result_free(&r);
}
END_TEST

START_TEST(progress_line_on_a_terminal) {
    make_training_page();
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(master, 0);
    ck_assert_int_eq(grantpt(master), 0);
    ck_assert_int_eq(unlockpt(master), 0);
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    ck_assert_int_ge(slave, 0);
    pid_t pid = spawn((const char *const[]){"train", "t.json", "--steps", "300",
                                            "--threads", "1", NULL},
                      slave);
    close(slave);
    char buf[65536];
    size_t n = 0;
    for (;;) { /* read until the child's side closes (EIO) */
        ssize_t k = read(master, buf + n, sizeof(buf) - 1 - n);
        if (k <= 0) break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    close(master);
    int ws;
    waitpid(pid, &ws, 0);
    ck_assert_int_eq(WEXITSTATUS(ws), 0);
    ck_assert_msg(strstr(buf, "\r\033[Kstep 1/300  "), "%s", buf);
    ck_assert_msg(strstr(buf, "steps/s  id "), "%s", buf);
}
END_TEST

/* ---- gradcheck --loss ----------------------------------------------------------------------- */

START_TEST(gradcheck_loss_passes_and_fails) {
    make_training_page();
    bf_result r = RUN("gradcheck", "t.json", "--loss", "id");
    ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "variable"));
    ck_assert_ptr_nonnull(strstr(r.out, "conv_grad_filter"));
    ck_assert_ptr_nonnull(strstr(r.out, "18/18"));
    ck_assert_ptr_nonnull(strstr(r.out, "PASS"));
    bf_result_free(&r);
    r = RUN("gradcheck", "t.json", "--loss", "id", "--json");
    ck_assert_int_eq(r.status, 0);
    cJSON *d = parse_json(r.out);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "pass")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "variables")), 1);
    cJSON_Delete(d);
    bf_result_free(&r);

    write_hand_wired(bf_sp("h1.json"), 1.0);
    r = RUN("gradcheck", "h1.json", "--loss", "id");
    ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "scaled"));
    bf_result_free(&r);
    write_hand_wired(bf_sp("h2.json"), 2.0);
    r = RUN("gradcheck", "h2.json", "--loss", "id");
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "FAILED"));
    ck_assert_ptr_nonnull(strstr(r.out, "FAIL\n"));
    bf_result_free(&r);
    r = RUN("gradcheck", "h2.json", "--loss", "id", "--json");
    ck_assert_int_eq(r.status, 1);
    d = parse_json(r.out);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "pass")));
    cJSON_Delete(d);
    bf_result_free(&r);

    /* usage */
    r = RUN("gradcheck", "t.json", "conv", "--loss", "id");
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
    r = RUN("gradcheck", "p.json", "--loss", "id"); /* no update block */
    ck_assert_int_eq(r.status, 3);
    bf_result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("train_cli");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, grad_loss_page_reloads_and_runs);
    tcase_add_test(tc, grad_usage_errors);
    tcase_add_test(tc, train_steps_with_csv_log);
    tcase_add_test(tc, train_jsonl_log_and_metrics);
    tcase_add_test(tc, train_json_document);
    tcase_add_test(tc, checkpoint_then_resume_continues);
    tcase_add_test(tc, ctrl_c_saves_the_checkpoint);
    tcase_add_test(tc, save_every_writes_periodic_checkpoints);
    tcase_add_test(tc, epochs_with_a_dataset);
    tcase_add_test(tc, epochs_without_a_dataset_is_a_usage_error);
    tcase_add_test(tc, bad_options_name_the_option);
    tcase_add_test(tc, unwritable_log_fails_before_training);
    tcase_add_test(tc, progress_line_on_a_terminal);
    tcase_add_test(tc, gradcheck_loss_passes_and_fails);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
