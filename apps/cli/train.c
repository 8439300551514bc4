/*
 * train.c - `blockflow train PAGE [--steps N | --epochs E] [--metrics ID,...] [--log FILE]
 * [--checkpoint FILE.npz [--save-every K]] [--resume FILE.npz] ...`: run training steps
 * (bf_session_step), each committing the update blocks' new values, with
 *   - a progress line on stderr when it is a terminal (step, steps/s, the metrics), redrawn
 *     at most 10 times a second;
 *   - a log of one row per step (step, seconds since the start, each metric) as CSV or JSON
 *     Lines by the file's extension, flushed every step and opened before the first step (an
 *     unwritable path fails before anything runs);
 *   - checkpoints (bf_session_save_state, atomic) at the end, every K steps and on Ctrl-C;
 *     --resume restores one (and its step count) before the first step;
 *   - Ctrl-C: bf_session_cancel, so the step in flight commits nothing and the state is that of
 *     the last finished step; the checkpoint is written and the exit status is 130. In a job of
 *     several ranks the first Ctrl-C lets the step in flight finish and stops every rank at the
 *     next step boundary (a cancel inside a step would reach the ranks at different points of
 *     it, and one rank's cancelled all-reduce is the others' failure); a second one cancels.
 * A failed step (a kernel error, --timeout) writes no final checkpoint: the last one written
 * stays the last good state. --epochs needs a dataset block (a block whose catalogue "state"
 * is "cursor"): its cursor (int64 [epoch, batch]) is read after every step and training stops
 * when the epoch has advanced by E.
 *
 * --json writes one document on stdout, whatever happens (a usage error excepted):
 *   {"ok", "status", "step" (the step count now), "steps" (steps run by this command),
 *    "epoch" (with --epochs: epochs completed by this command), "seconds", "steps_per_second",
 *    "peak_bytes" (the most tensor memory the last step held), "metrics": {REF: last value (null when NaN)}, "checkpoint": FILE or null, "log": FILE or
 *    null, "problems": [...]}, and under mpirun "job": {"ranks", "allreduce_calls",
 *    "allreduce_bytes", "allreduce_seconds"} (rank 0's all-reductions, bf_context_job_stats)
 */
#include "cli.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_METRICS 64
#define MAX_FEEDS 64

typedef struct train_args {
    const char *page, *log, *checkpoint, *resume;
    const char *feeds[MAX_FEEDS];
    int n_feeds;
    char metric_buf[4096];
    const char *metrics[MAX_METRICS];
    int n_metrics; /* -1: the page's outputs */
    uint64_t steps, epochs, save_every, ranks;
    bool json, quiet, log_jsonl;
    double timeout;
    bf_device_kind device;
    bf_config cfg;
} train_args;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int usage_error(const char *fmt, const char *opt, const char *arg) {
    fprintf(stderr, "blockflow train: ");
    fprintf(stderr, fmt, opt, arg);
    fprintf(stderr, " (blockflow help train)\n");
    return EXIT_USAGE;
}

/* Split "a,b:port,c" into a->metrics. */
static int parse_metrics(const char *arg, train_args *a) {
    if (strlen(arg) >= sizeof(a->metric_buf))
        return usage_error("%s \"%.40s...\": too long", "--metrics", arg);
    snprintf(a->metric_buf, sizeof(a->metric_buf), "%s", arg);
    a->n_metrics = 0;
    for (char *p = a->metric_buf, *next; p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = '\0';
        if (!*p) return usage_error("%s \"%s\": an empty name", "--metrics", arg);
        if (a->n_metrics == MAX_METRICS)
            return usage_error("%s \"%.40s...\": at most 64 metrics", "--metrics", arg);
        a->metrics[a->n_metrics++] = p;
    }
    return EXIT_OK;
}

static int parse_train(int argc, char **argv, train_args *a) {
    memset(a, 0, sizeof(*a));
    a->n_metrics = -1;
    a->device = BF_DEVICE_AUTO;
    bf_config_init(&a->cfg);
    cli_config_from_env(&a->cfg);
    bool have_steps = false;
    for (int i = 1, lim; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        static const char *const takes[] = {"--steps",   "--epochs",     "--metrics", "--log",
                                            "--checkpoint", "--resume",  "--save-every",
                                            "--feed",    "--device",     "--timeout",
                                            "--threads", "--ranks"};
        bool value = false;
        for (size_t k = 0; k < sizeof(takes) / sizeof(takes[0]); k++) value |= !strcmp(o, takes[k]);
        if (value && !v) return usage_error("%s needs a value%s", o, "");
        if (!strcmp(o, "--steps")) {
            if (!cli_parse_u64(o, argv[++i], false, 1, (uint64_t)1 << 62, &a->steps))
                return EXIT_USAGE;
            have_steps = true;
        } else if (!strcmp(o, "--epochs")) {
            if (!cli_parse_u64(o, argv[++i], false, 1, 1000000000, &a->epochs))
                return EXIT_USAGE;
        } else if (!strcmp(o, "--save-every")) {
            if (!cli_parse_u64(o, argv[++i], false, 1, (uint64_t)1 << 62, &a->save_every))
                return EXIT_USAGE;
        } else if (!strcmp(o, "--metrics")) {
            int rc = parse_metrics(argv[++i], a);
            if (rc) return rc;
        } else if (!strcmp(o, "--log")) {
            a->log = argv[++i];
            a->log_jsonl = ends_with(a->log, ".jsonl") || ends_with(a->log, ".ndjson");
            if (!a->log_jsonl && !ends_with(a->log, ".csv"))
                return usage_error("%s \"%s\": the file name must end in .csv or .jsonl",
                                   "--log", a->log);
        } else if (!strcmp(o, "--checkpoint")) {
            a->checkpoint = argv[++i];
        } else if (!strcmp(o, "--resume")) {
            a->resume = argv[++i];
        } else if (!strcmp(o, "--feed")) {
            if (a->n_feeds == MAX_FEEDS) return usage_error("at most 64 of %s%s", o, "");
            a->feeds[a->n_feeds++] = argv[++i];
        } else if (!strcmp(o, "--device")) {
            if (!cli_parse_device(argv[++i], &a->device)) return EXIT_USAGE;
        } else if (!strcmp(o, "--timeout")) {
            if (!cli_parse_seconds(o, argv[++i], &a->timeout)) return EXIT_USAGE;
        } else if (!strcmp(o, "--threads")) {
            if ((a->cfg.threads = cli_parse_threads(argv[++i])) < 0) return EXIT_USAGE;
        } else if (!strcmp(o, "--ranks")) {
            if (!cli_parse_u64(o, argv[++i], false, 1, 256, &a->ranks)) return EXIT_USAGE;
        } else if ((lim = cli_parse_limit(argc, argv, &i, &a->cfg)) != 0) {
            if (lim < 0) return EXIT_USAGE;
        } else if (!strcmp(o, "--json")) a->json = true;
        else if (!strcmp(o, "--deterministic-reduce")) a->cfg.deterministic_reduce = 1;
        else if (!strcmp(o, "--quiet") || !strcmp(o, "-q")) a->quiet = true;
        else if ((o[0] != '-' || !strcmp(o, "-")) && !a->page) a->page = o;
        else {
            cli_usage_error("train", o);
            return EXIT_USAGE;
        }
    }
    if (!a->page) return usage_error("which page?%s%s", "", "");
    if (have_steps && a->epochs) return usage_error("%s and %s: give one of them", "--steps",
                                                    "--epochs");
    if (!have_steps) a->steps = 100;
    if (a->save_every && !a->checkpoint)
        return usage_error("%s needs %s FILE.npz (where to save)", "--save-every",
                           "--checkpoint");
    return EXIT_OK;
}

/* ---- the page's blocks, from the catalogue ------------------------------------------------- */

/* The catalogue entry of `type`: whether it keeps a dataset cursor, whether it updates a
 * Variable (an input port flagged "ref"). */
static void type_traits(const char *type, bool *cursor, bool *update) {
    char *text = NULL;
    *cursor = *update = false;
    if (bf_block_catalog_json(type, &text, NULL)) return;
    cJSON *d = cJSON_Parse(text);
    bf_string_free(text);
    const cJSON *st = cJSON_GetObjectItem(d, "state"), *p;
    *cursor = cJSON_IsString(st) && !strcmp(st->valuestring, "cursor");
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(d, "inputs"))
        if (cJSON_IsTrue(cJSON_GetObjectItem(p, "ref"))) *update = true;
    cJSON_Delete(d);
}

/* The first dataset block of the page (NULL: none) and whether any block updates state. */
static const char *find_blocks(const bf_page *page, bool *any_update) {
    const char *dataset = NULL;
    *any_update = false;
    for (int i = 0; i < bf_page_block_count(page); i++) {
        bool cursor, update;
        type_traits(bf_page_block_type(page, i), &cursor, &update);
        if (cursor && !dataset) dataset = bf_page_block_id(page, i);
        *any_update |= update;
    }
    return dataset;
}

/* The epoch of the dataset's cursor ([epoch, batch]); -1 when it cannot be read. */
static int64_t read_epoch(bf_session *s, const char *dataset, bf_error *e) {
    bf_tensor *t = NULL;
    if (bf_session_read_state(s, dataset, &t, e)) return -1;
    int64_t epoch = bf_tensor_numel(t) > 0 ? (int64_t)bf_tensor_get_f64(t, 0) : -1;
    bf_tensor_free(t);
    if (epoch < 0) {
        memset(e, 0, sizeof(*e));
        e->status = BF_EINVAL;
        snprintf(e->code, sizeof(e->code), "bad_cursor");
        snprintf(e->block_id, sizeof(e->block_id), "%s", dataset);
        snprintf(e->message, sizeof(e->message), "the dataset's cursor holds no epoch count");
    }
    return epoch;
}

/* ---- the run --------------------------------------------------------------------------------- */

typedef struct trainer {
    const train_args *a;
    bf_session *s;
    const char *const *names; /* the metrics' names */
    int n;
    FILE *log;
    const char *dataset;
    int64_t first_step, last_step, target_step, first_epoch, epochs_done, last_saved;
    double t0, last_draw, seconds, *values;
    bool progress, drawn;
    int width; /* of the terminal, for the progress line */
    int rc;    /* set when the callback stops training: EXIT_OUTPUT, EXIT_RUN */
    bf_error e;
} trainer;

/* Set by the thread that trains (rank 0 of --ranks' threads), read by the signal handler and
 * by every rank's on_step: lock-free atomics, safe in a handler and between threads. */
static _Atomic(bf_session *) training_session;
static atomic_int in_job;     /* a job of several ranks */
static atomic_int stop_asked; /* in a job: stop at the next step boundary */

static void on_sigint(int sig) {
    (void)sig;
    bf_session *s = training_session;
    if (!s) return;
    if (in_job && !stop_asked) {
        stop_asked = 1; /* on_step asks every rank to stop after this step */
        return;
    }
    bf_session_cancel(s); /* an atomic store: async-signal-safe */
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void log_header(trainer *t) {
    if (t->a->log_jsonl) return;
    fputs("step,seconds", t->log);
    for (int i = 0; i < t->n; i++) {
        fputc(',', t->log);
        csv_field(t->log, t->names[i]);
    }
    fputc('\n', t->log);
}

/* One row; false when it could not be written. */
static bool log_row(trainer *t, int64_t step, double seconds, const double *m) {
    FILE *f = t->log;
    if (t->a->log_jsonl) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "step", (double)step);
        cJSON_AddNumberToObject(o, "seconds", round(seconds * 1e6) / 1e6);
        for (int i = 0; i < t->n; i++) {
            if (isfinite(m[i])) cJSON_AddNumberToObject(o, t->names[i], m[i]);
            else cJSON_AddNullToObject(o, t->names[i]);
        }
        char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!text) return false;
        fputs(text, f);
        fputc('\n', f);
        free(text);
    } else {
        fprintf(f, "%lld,%.6f", (long long)step, seconds);
        for (int i = 0; i < t->n; i++) fprintf(f, ",%.9g", m[i]);
        fputc('\n', f);
    }
    return fflush(f) == 0 && !ferror(f);
}

/* The progress line, clipped to the terminal's width so that \r redraws it in place. */
static void draw(trainer *t, int64_t step, double now) {
    char line[1024];
    size_t n = 0;
#define ADD(...)                                                                               \
    do {                                                                                       \
        if (n < sizeof(line)) n += (size_t)snprintf(line + n, sizeof(line) - n, __VA_ARGS__);  \
    } while (0)
    if (t->dataset && t->a->epochs)
        ADD("epoch %lld/%llu  step %lld", (long long)t->epochs_done + 1,
            (unsigned long long)t->a->epochs, (long long)step);
    else ADD("step %lld/%lld", (long long)step, (long long)t->target_step);
    double dt = now - t->t0;
    if (dt > 0) ADD("  %.1f steps/s", (double)(step - t->first_step) / dt);
    for (int i = 0; i < t->n; i++) ADD("  %s %.4g", t->names[i], t->values[i]);
#undef ADD
    if (n >= sizeof(line)) n = sizeof(line) - 1;
    if (t->width > 1 && n > (size_t)t->width - 1) n = (size_t)t->width - 1;
    fprintf(stderr, "\r\033[K%.*s", (int)n, line);
    fflush(stderr);
    t->drawn = true;
    t->last_draw = now;
}

static int on_step(int64_t step, const double *m, int n_metrics, void *user) {
    trainer *t = user;
    double now = now_s();
    t->last_step = step;
    for (int i = 0; i < n_metrics && i < t->n; i++) t->values[i] = m[i];
    if (t->log && !log_row(t, step, now - t->t0, t->values)) {
        fprintf(stderr, "%sblockflow train: cannot write the log %s: %s\n",
                t->drawn ? "\r\033[K" : "", t->a->log, strerror(errno));
        t->drawn = false;
        t->rc = EXIT_OUTPUT;
        return 1;
    }
    if (t->a->save_every && step % (int64_t)t->a->save_every == 0) {
        if (bf_session_save_state(t->s, t->a->checkpoint, &t->e)) {
            t->rc = EXIT_OUTPUT;
            return 1;
        }
        t->last_saved = step;
    }
    bool stop = false;
    if (t->dataset && t->a->epochs) {
        int64_t epoch = read_epoch(t->s, t->dataset, &t->e);
        if (epoch < 0) {
            t->rc = EXIT_RUN;
            return 1;
        }
        t->epochs_done = epoch - t->first_epoch;
        stop = t->epochs_done >= (int64_t)t->a->epochs;
    }
    if (t->progress && (now - t->last_draw >= 0.1 || !t->drawn)) draw(t, step, now);
    return stop || stop_asked;
}

static void print_diags(const bf_diags *d, const bf_error *e) {
    size_t n = bf_diags_count(d);
    for (size_t i = 0; i < n; i++) cli_print_error(bf_diags_at(d, i));
    if (!bf_diags_errors(d) && e && e->status) cli_print_error(e);
}

/* The directory of `path` can be written to (an atomic save makes a file beside it). */
static int check_writable_dir(const char *opt, const char *path) {
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof(dir), ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "blockflow train: %s %s: cannot write in %s: %s\n", opt, path, dir,
                strerror(errno));
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

/* Open the log: appended to when resuming (the header only in an empty file), else made new. */
static int open_log(trainer *t) {
    const train_args *a = t->a;
    t->log = fopen(a->log, a->resume ? "a" : "w");
    if (!t->log) {
        fprintf(stderr, "blockflow train: cannot write the log %s: %s\n", a->log,
                strerror(errno));
        return EXIT_OUTPUT;
    }
    if (ftell(t->log) == 0) log_header(t);
    if (fflush(t->log) != 0) {
        fprintf(stderr, "blockflow train: cannot write the log %s: %s\n", a->log,
                strerror(errno));
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

static cJSON *number_or_null(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The training of one rank (of one process, of an MPI job, or of --ranks' threads). */
static int train_one(train_args a) {
    int rc = EXIT_OK;
    trainer t;
    memset(&t, 0, sizeof(t));
    t.a = &a;
    bf_context *ctx = NULL;
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_diags *diags = bf_diags_new();
    bf_error e = {0};
    bf_status st = BF_OK;
    const char *names[MAX_METRICS];
    bool saved = false, checked = false, alone = false;
    int64_t done_steps = 0;
    if (!diags || bf_context_new(&a.cfg, &ctx, &e)) {
        cli_print_error(&e);
        bf_diags_free(diags);
        return EXIT_RUN;
    }
    cli_job_begin(ctx);
    if (!cli_job_writer()) /* a job of several ranks: rank 0 alone writes the log and prints */
        a.log = NULL, a.json = false, a.quiet = true;
    if (cli_job_writer() && a.checkpoint &&
        (rc = check_writable_dir("--checkpoint", a.checkpoint))) {
        rc = cli_job_end(ctx, rc, true);
        bf_diags_free(diags);
        bf_context_free(ctx);
        return rc;
    }
    if ((rc = cli_load_page(ctx, a.page, &page, diags, &e)) ||
        bf_session_new(ctx, page, &s, &e)) {
        alone = rc != EXIT_OK;
        if (!a.json) print_diags(diags, &e);
        st = e.status ? e.status : BF_EINVAL;
        rc = EXIT_INVALID;
        goto done;
    }
    t.s = s;
    const bf_page *pg = bf_session_page(s);

    /* the metrics: --metrics, or the page's outputs */
    if (a.n_metrics >= 0) {
        for (int i = 0; i < a.n_metrics; i++) {
            char id[256];
            snprintf(id, sizeof(id), "%s", a.metrics[i]);
            char *colon = strchr(id, ':');
            if (colon) *colon = '\0';
            if (bf_page_find_block(pg, id) < 0) {
                fprintf(stderr, "blockflow train: --metrics: no block \"%s\" on %s\n", id,
                        a.page);
                rc = EXIT_USAGE;
                st = BF_ENOTFOUND;
                goto done;
            }
            names[t.n++] = a.metrics[i];
        }
    } else {
        for (int i = 0; i < bf_page_output_count(pg) && t.n < MAX_METRICS; i++)
            names[t.n++] = bf_page_output(pg, i);
    }
    t.names = names;
    if (!(t.values = calloc((size_t)t.n + 1, sizeof(double)))) {
        fprintf(stderr, "blockflow train: out of memory\n");
        rc = EXIT_RUN;
        st = BF_ENOMEM;
        goto done;
    }
    for (int i = 0; i < t.n; i++) t.values[i] = NAN;

    bool any_update;
    t.dataset = find_blocks(pg, &any_update);
    if (a.epochs && !t.dataset) {
        fprintf(stderr, "blockflow train: --epochs needs a dataset block on the page, and %s "
                        "has none: give --steps N (blockflow help train)\n", a.page);
        rc = EXIT_USAGE;
        st = BF_EINVAL;
        goto done;
    }
    if (!any_update && !a.quiet && !a.json)
        fprintf(stderr, "blockflow train: warning: %s has no update block, so nothing learns "
                        "(add them with blockflow grad PAGE --loss ID --optimizer sgd:0.01 "
                        "--in-place)\n", a.page);

    for (int i = 0; i < a.n_feeds; i++)
        if ((rc = cli_feed(ctx, s, a.feeds[i]))) {
            alone = true;
            st = BF_EINVAL;
            goto done;
        }
    if (a.resume && bf_session_load_state(s, a.resume, &e)) {
        fprintf(stderr, "blockflow train: --resume %s: ", a.resume);
        cli_print_error(&e);
        rc = e.status == BF_ENOMEM ? EXIT_RUN : EXIT_INVALID;
        st = e.status;
        goto done;
    }
    if (a.log && (rc = open_log(&t))) {
        alone = true;
        st = BF_EIO;
        goto done;
    }
    if (t.dataset && a.epochs && (t.first_epoch = read_epoch(s, t.dataset, &e)) < 0) {
        cli_print_error(&e);
        rc = EXIT_RUN;
        st = e.status;
        goto done;
    }

    t.first_step = t.last_step = bf_session_step_count(s);
    t.target_step = t.first_step + (int64_t)a.steps;
    t.last_saved = -1;
    t.progress = !a.quiet && !a.json && isatty(STDERR_FILENO);
    if (t.progress) {
        struct winsize ws;
        t.width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 80;
    }
    bf_step_options so;
    bf_step_options_init(&so);
    so.fetches = names;
    so.n_fetches = t.n;
    so.device = a.device;
    so.timeout_s = a.timeout;
    so.on_step = on_step;
    so.user = &t;
    t.t0 = now_s();
    /* the process's signals: each MPI rank takes its own; of --ranks' threads, rank 0 (on_step
     * tells the others) */
    bool signals = !bf_context_config(ctx)->group || cli_job_writer();
    if (signals) {
        in_job = bf_context_size(ctx) > 1;
        stop_asked = 0;
        training_session = s;
        signal(SIGINT, on_sigint);
        if (bf_context_size(ctx) > 1) signal(SIGTERM, on_sigint); /* mpirun passes Ctrl-C on */
    }
    st = bf_session_step(s, a.epochs ? INT64_MAX : (int64_t)a.steps, &so, diags, &e);
    checked = true;
    t.seconds = now_s() - t.t0;
    if (signals) /* a Ctrl-C from here on is ignored until the checkpoint is out */
        training_session = NULL;
    if (t.drawn) fprintf(stderr, "\r\033[K");
    t.last_step = bf_session_step_count(s);

    /* In a job, a Ctrl-C stops every rank at a step boundary (its own, or another rank's that
     * got the signal first): the steps end early without an error. */
    bool early = a.epochs ? t.epochs_done < (int64_t)a.epochs : t.last_step < t.target_step;
    bool job = bf_context_size(ctx) > 1;
    if (st == BF_OK && !t.rc && job && (stop_asked || early)) st = BF_ECANCELED;
    if (t.rc) { /* the callback stopped: a log or checkpoint write, or the cursor */
        rc = t.rc;
        if (t.e.status) cli_print_error(&t.e);
        if (st == BF_OK) st = t.e.status ? t.e.status : BF_EIO;
        if (t.e.status) e = t.e;
    } else if (st && st != BF_ECANCELED) {
        if (!a.json) print_diags(diags, &e);
        bool invalid = st == BF_ESCHEMA || st == BF_EATTR || st == BF_ESHAPE ||
                       st == BF_EDTYPE || st == BF_EPARSE || st == BF_EINVAL;
        rc = st == BF_ENOTFOUND ? EXIT_USAGE : invalid ? EXIT_INVALID : EXIT_RUN;
    } else {
        if (st == BF_ECANCELED) {
            rc = EXIT_CANCEL;
            if (!a.json && !a.quiet)
                fprintf(stderr, "blockflow train: interrupted after step %lld\n",
                        (long long)t.last_step);
        }
        if (a.checkpoint && t.last_saved != t.last_step) {
            bf_error se = {0};
            if (bf_session_save_state(s, a.checkpoint, &se)) {
                cli_print_error(&se);
                if (!rc) rc = EXIT_OUTPUT;
                if (st == BF_OK) st = se.status, e = se;
            } else {
                t.last_saved = t.last_step;
            }
        }
        saved = a.checkpoint && t.last_saved == t.last_step;
    }
    if (signals) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
    }

    done_steps = t.last_step - t.first_step;
    double rate = t.seconds > 0 ? (double)done_steps / t.seconds : 0;
    if (!a.json && !a.quiet && checked) {
        printf("%s %lld step%s in %.2f s (%.1f steps/s), step %lld now", rc ? "ran" : "trained",
               (long long)done_steps, done_steps == 1 ? "" : "s", t.seconds, rate,
               (long long)t.last_step);
        if (t.dataset && a.epochs) printf(", %lld epoch%s", (long long)t.epochs_done,
                                          t.epochs_done == 1 ? "" : "s");
        printf("\n");
        int w = 6;
        for (int i = 0; i < t.n; i++)
            if ((int)strlen(names[i]) > w) w = (int)strlen(names[i]);
        for (int i = 0; done_steps > 0 && i < t.n; i++)
            printf("  %-*s %.6g\n", w, names[i], t.values[i]);
        if (saved) printf("checkpoint %s (step %lld)\n", a.checkpoint, (long long)t.last_step);
        if (a.log) printf("log %s\n", a.log);
    }
done:
    if (t.log && fclose(t.log) != 0 && !rc) {
        fprintf(stderr, "blockflow train: cannot write the log %s: %s\n", a.log,
                strerror(errno));
        rc = EXIT_OUTPUT;
    }
    if (a.json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddBoolToObject(doc, "ok", rc == EXIT_OK);
        cJSON_AddStringToObject(doc, "status",
                                rc == EXIT_OK       ? "ok"
                                : rc == EXIT_OUTPUT ? "not written"
                                : st                ? cli_status_word(st)
                                                    : "invalid");
        cJSON_AddNumberToObject(doc, "step", (double)(s ? bf_session_step_count(s) : 0));
        cJSON_AddNumberToObject(doc, "steps", (double)done_steps);
        if (t.dataset && a.epochs) cJSON_AddNumberToObject(doc, "epoch", (double)t.epochs_done);
        cJSON_AddNumberToObject(doc, "seconds", t.seconds);
        cJSON_AddNumberToObject(doc, "steps_per_second",
                                t.seconds > 0 ? (double)done_steps / t.seconds : 0);
        cJSON_AddNumberToObject(doc, "peak_bytes", (double)(s ? bf_session_peak_bytes(s) : 0));
        if (bf_context_size(ctx) > 1) { /* this rank's all-reductions (rank 0's) */
            int64_t calls = 0, bytes = 0;
            double secs = 0;
            bf_context_job_stats(ctx, &calls, &bytes, &secs);
            cJSON *j = cJSON_AddObjectToObject(doc, "job");
            cJSON_AddNumberToObject(j, "ranks", bf_context_size(ctx));
            cJSON_AddNumberToObject(j, "allreduce_calls", (double)calls);
            cJSON_AddNumberToObject(j, "allreduce_bytes", (double)bytes);
            cJSON_AddNumberToObject(j, "allreduce_seconds", secs);
        }
        cJSON *m = cJSON_CreateObject();
        for (int i = 0; i < t.n && t.values; i++)
            cJSON_AddItemToObject(m, names[i], number_or_null(done_steps ? t.values[i] : NAN));
        cJSON_AddItemToObject(doc, "metrics", m);
        if (saved) cJSON_AddStringToObject(doc, "checkpoint", a.checkpoint);
        else cJSON_AddNullToObject(doc, "checkpoint");
        if (a.log && t.log) cJSON_AddStringToObject(doc, "log", a.log);
        else cJSON_AddNullToObject(doc, "log");
        cJSON_AddItemToObject(doc, "problems",
                              cli_problems_json(diags, st && st != BF_ECANCELED ? &e : NULL));
        cli_json_print(doc);
    }
    free(t.values);
    rc = cli_job_end(ctx, rc, alone);
    bf_session_free(s);
    bf_diags_free(diags);
    bf_context_free(ctx);
    return rc;
}

static int train_rank(const bf_config *cfg, void *arg) {
    train_args a = *(const train_args *)arg;
    a.cfg = *cfg;
    return train_one(a);
}

int cli_train(int argc, char **argv) {
    train_args a;
    int rc = parse_train(argc, argv, &a);
    if (rc) return rc;
    if (a.ranks > 1) return cli_job_threads((int)a.ranks, &a.cfg, "train", train_rank, &a);
    return train_one(a);
}
