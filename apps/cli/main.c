/*
 * main.c - the `blockflow` program: run, check, fmt, blocks, bench and help.
 *
 * Everything here is presentation: the library returns errors and results, and this file
 * prints them (errors one per line on stderr, as PAGE: block "id": port "p": message) and
 * writes result files. Exit codes are documented in `blockflow --help` and the README.
 */
#include "cli.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bf_bench_main(int argc, char **argv); /* bench/bench.c (the blockflow_bench target) */
#ifdef BF_HAVE_SERVER
int bf_serve_main(int argc, char **argv); /* apps/server/serve.c */
#endif

static void print_error(const bf_error *e) { cli_print_error(e); }

/* Print every record of `d`; when it holds none, `e`. */
static void print_diags(const bf_diags *d, const bf_error *e) {
    size_t n = bf_diags_count(d);
    for (size_t i = 0; i < n; i++) print_error(bf_diags_at(d, i));
    if (!bf_diags_errors(d) && e && e->status) print_error(e);
}

/* ---- run -------------------------------------------------------------------------------- */

/* lock-free atomics: with --ranks the handler may run on another thread than the run's */
static _Atomic(bf_session *) running_session;

static void on_sigint(int sig) {
    (void)sig;
    bf_session *s = running_session;
    if (s) bf_session_cancel(s); /* an atomic store: async-signal-safe */
}

/*
 * Parse a limit option at argv[*i] into cfg (train shares it: cli.h). Returns 1 when it was
 * one (advancing *i past its value), 0 when argv[*i] is no limit option, -1 on a bad value
 * (message printed).
 */
int cli_parse_limit(int argc, char **argv, int *i, bf_config *cfg) {
    static const struct {
        const char *name;
        uint64_t max;
    } opts[] = {{"--mem-limit", UINT64_MAX},     {"--max-elements", (uint64_t)1 << 62},
                {"--max-blocks", 1000000000},    {"--max-page-bytes", UINT64_MAX},
                {"--max-json-depth", 1000000000}};
    if (!strcmp(argv[*i], "--confine-files")) {
        cfg->confine_files = 1;
        return 1;
    }
    int k = 0;
    while (k < 5 && strcmp(argv[*i], opts[k].name)) k++;
    if (k == 5) return 0;
    uint64_t v;
    if (!cli_parse_u64(opts[k].name, *i + 1 < argc ? argv[*i + 1] : NULL, true, 1, opts[k].max,
                       &v))
        return -1;
    switch (k) {
    case 0: cfg->max_session_bytes = v; break;
    case 1: cfg->max_tensor_elements = v; break;
    case 2: cfg->max_blocks = (int)v; break;
    case 3: cfg->max_page_bytes = v; break;
    default: cfg->max_json_depth = (int)v; break;
    }
    *i += 1;
    return 1;
}

/* File name of a fetch: "dw" -> dw.npy, "dw:grad" -> dw.grad.npy. */
static void fetch_file(const char *dir, const char *fetch, char *buf, size_t size,
                       const char *prefix) {
    char name[256];
    snprintf(name, sizeof(name), "%s", fetch);
    char *colon = strchr(name, ':');
    if (colon) *colon = '.';
    snprintf(buf, size, "%s/%s%s.npy", dir, prefix, name);
}

/*
 * Temporary files of the result writer. Each is named .blockflow-PID.* (the staged result, its
 * .tmp.XXXXXX while it is written, the .old. backup of an older result), so that a signal can
 * be cleaned up after and a later run can tell whose they are.
 */
static atomic_int write_signal; /* SIGINT or SIGTERM received while writing */

static void on_write_signal(int sig) {
    write_signal = sig;
    signal(sig, SIG_DFL); /* a second one ends the program at once */
}

/* Remove the temporary files that runs which no longer exist left in `dir` (killed with
 * SIGKILL, or the machine stopped): .blockflow-PID.* where no process PID is alive. */
static void sweep_stale(const char *dir, bool quiet) {
    DIR *d = opendir(dir);
    if (!d) return;
    int removed = 0;
    for (struct dirent *de; (de = readdir(d));) {
        const char *n = de->d_name;
        if (strncmp(n, ".blockflow-", 11)) continue;
        char *end;
        errno = 0;
        long pid = strtol(n + 11, &end, 10);
        if (errno || end == n + 11 || *end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours) */
        if (unlinkat(dirfd(d), n, 0) == 0) removed++;
    }
    closedir(d);
    if (removed && !quiet)
        fprintf(stderr, "blockflow: removed %d temporary file%s that ended runs left in %s\n",
                removed, removed == 1 ? "" : "s", dir);
}

/*
 * Write all fetched tensors, all or nothing: first each to a staging file beside its target
 * (each written atomically: temporary file, fsync, rename), then each older result is kept
 * as a hard-linked backup while the staged files are renamed into place. If any step fails,
 * the targets already replaced get their backups back, so older results survive intact and
 * no partial file is left.
 */
static int write_outputs(bf_session *s, const char *dir, const char *const *fetches, int nf,
                         bool quiet) {
    enum { MAX_OUT = 64 };
    struct out_paths {
        char staged[4096], final[4096], backup[4096];
        bool had_old;
    } *o;
    int ok = 1, n = 0, placed = 0;
    struct stat sb;
    if (nf > MAX_OUT) {
        fprintf(stderr, "blockflow: at most %d fetches can be written at once\n", MAX_OUT);
        return EXIT_USAGE;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        if (mkdir(dir, 0777) != 0) {
            fprintf(stderr, "blockflow: cannot create the output folder %s: %s\n", dir,
                    strerror(errno));
            return EXIT_OUTPUT;
        }
    }
    if (!(o = calloc((size_t)(nf > 0 ? nf : 1), sizeof(*o)))) {
        fprintf(stderr, "blockflow: out of memory writing the results\n");
        return EXIT_OUTPUT;
    }
    sweep_stale(dir, quiet);
    /* Ctrl-C or SIGTERM while writing: finish the file being written, then undo everything
     * (older results put back, no temporary file left) and exit 130. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_write_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    write_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    char prefix[64], bprefix[64];
    snprintf(prefix, sizeof(prefix), ".blockflow-%ld.", (long)getpid());
    snprintf(bprefix, sizeof(bprefix), ".blockflow-%ld.old.", (long)getpid());
    for (n = 0; n < nf && ok; n++) {
        char id[256];
        snprintf(id, sizeof(id), "%s", fetches[n]);
        char *colon = strchr(id, ':');
        if (colon) *colon++ = '\0';
        const bf_tensor *t = bf_session_output(s, id, colon);
        fetch_file(dir, fetches[n], o[n].staged, sizeof(o[n].staged), prefix);
        fetch_file(dir, fetches[n], o[n].final, sizeof(o[n].final), "");
        fetch_file(dir, fetches[n], o[n].backup, sizeof(o[n].backup), bprefix);
        bf_error e = {0};
        if (write_signal) {
            ok = 0;
            break;
        }
        if (!t || bf_tensor_save_npy(t, o[n].staged, &e) != BF_OK) {
            if (!t) fprintf(stderr, "blockflow: no result for %s\n", fetches[n]);
            else print_error(&e);
            ok = 0;
            n++; /* its staging file may exist: remove it below */
            break;
        }
    }
    if (write_signal) ok = 0; /* the last file was finished: still undo it */
    for (; ok && placed < n; placed++) {
        o[placed].had_old = link(o[placed].final, o[placed].backup) == 0;
        if (rename(o[placed].staged, o[placed].final) != 0) {
            fprintf(stderr, "blockflow: cannot write %s: %s\n", o[placed].final, strerror(errno));
            ok = 0;
            break;
        }
    }
    if (!ok) /* put back what was replaced */
        for (int i = 0; i < placed; i++) {
            if (o[i].had_old) rename(o[i].backup, o[i].final);
            else unlink(o[i].final);
        }
    for (int i = 0; i < n; i++) {
        unlink(o[i].staged);
        unlink(o[i].backup);
    }
    free(o);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (write_signal) {
        fprintf(stderr, "blockflow: interrupted while writing the results: none written, "
                        "older ones kept\n");
        return EXIT_CANCEL;
    }
    return ok ? EXIT_OK : EXIT_OUTPUT;
}

/* What run and check share: a context, a diagnostics list, the page and its session. */
typedef struct opened {
    bf_context *ctx;
    bf_diags *diags;
    bf_session *s; /* owns the page */
    bf_error e;
    bool alone;    /* failed before the session: the other ranks of a job cannot know */
} opened;

/*
 * Make the context and load `path` into a session. Returns EXIT_OK, EXIT_RUN (no context or
 * memory: the error is printed) or EXIT_INVALID (the page's problems are in o->diags and
 * o->e, not yet printed). Always pair with close_page().
 */
static int open_page(const char *path, const bf_config *cfg, opened *o) {
    memset(o, 0, sizeof(*o));
    o->diags = bf_diags_new();
    if (!o->diags || bf_context_new(cfg, &o->ctx, &o->e)) {
        print_error(&o->e);
        return EXIT_RUN;
    }
    cli_job_begin(o->ctx);
    bf_page *page = NULL;
    int rc = cli_load_page(o->ctx, path, &page, o->diags, &o->e);
    o->alone = rc != EXIT_OK;
    if (rc) return rc;
    if (bf_session_new(o->ctx, page, &o->s, &o->e))
        return EXIT_INVALID; /* bf_session_new frees the page on failure */
    return EXIT_OK;
}

static void close_page(opened *o) {
    bf_session_free(o->s);
    bf_diags_free(o->diags);
    bf_context_free(o->ctx);
}

/*
 * The output folder, checked before anything runs: it is a folder that can be written to, or
 * it does not exist yet and its parent is one (it is created when the results are written,
 * so an invalid page leaves no folder behind). Returns EXIT_OK or EXIT_OUTPUT (message
 * printed).
 */
static int check_out_dir(const char *dir) {
    struct stat sb;
    const char *what = dir;
    char parent[4096];
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            fprintf(stderr, "blockflow: cannot use the output folder %s: %s\n", dir,
                    strerror(errno));
            return EXIT_OUTPUT;
        }
        snprintf(parent, sizeof(parent), "%s", dir);
        size_t n = strlen(parent);
        while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
        char *slash = strrchr(parent, '/');
        if (!slash) snprintf(parent, sizeof(parent), ".");
        else if (slash == parent) slash[1] = '\0';
        else *slash = '\0';
        what = parent;
        if (stat(parent, &sb) != 0) {
            fprintf(stderr, "blockflow: cannot create the output folder %s: %s\n", dir,
                    strerror(errno));
            return EXIT_OUTPUT;
        }
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "blockflow: cannot %s the output folder %s: %s is not a folder\n",
                what == dir ? "use" : "create", dir, what);
        return EXIT_OUTPUT;
    }
    if (access(what, W_OK | X_OK) != 0) {
        fprintf(stderr, "blockflow: cannot %s the output folder %s: %s\n",
                what == dir ? "write to" : "create", dir, strerror(errno));
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

/*
 * The fetches in canonical form, once each: "dw:output" is "dw" when output is dw's first
 * (default) port, so it names the same file, dw.npy. Refs naming no block are kept as given
 * (the run reports them). `out` holds up to 64 strings of 256 bytes.
 */
static int canonical_fetches(bf_session *s, const char *const *in, int n, char out[][256]) {
    const bf_page *page = bf_session_page(s);
    int m = 0;
    for (int i = 0; i < n; i++) {
        char ref[256];
        snprintf(ref, sizeof(ref), "%s", in[i]);
        char *colon = strrchr(ref, ':');
        if (colon) {
            *colon = '\0';
            int b = bf_page_find_block(page, ref);
            const char *first = b >= 0 ? bf_session_block_output_name(s, b, 0) : NULL;
            if (!first || strcmp(first, colon + 1)) *colon = ':'; /* not the default port */
        }
        int j = 0;
        while (j < m && strcmp(out[j], ref)) j++;
        if (j == m) snprintf(out[m++], 256, "%s", ref);
    }
    return m;
}

typedef struct run_args {
    const char *page, *out_dir;
    const char *feeds[64], *fetches[64], *sets[64];
    int n_feeds, n_fetches, n_sets;
    bool print, save, json, quiet, each, archive; /* archive: --out FILE.npz */
    uint64_t ranks; /* --ranks K: threads as ranks */
    double timeout;
    bf_device_kind device;
    bf_config cfg;
} run_args;

/* Parse `run`'s arguments; returns EXIT_OK or EXIT_USAGE (message printed). */
static int parse_run(int argc, char **argv, run_args *a) {
    memset(a, 0, sizeof(*a));
    a->out_dir = ".";
    a->save = true;
    a->device = BF_DEVICE_AUTO;
    bf_config_init(&a->cfg);
    cli_config_from_env(&a->cfg);
    a->cfg.no_cache = 1; /* one run, no edits after it: nothing to keep for a re-run */
    for (int i = 1, lim; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(o, "--feed") || !strcmp(o, "--fetch") || !strcmp(o, "--out") ||
                     !strcmp(o, "--set") ||
                     !strcmp(o, "--device") || !strcmp(o, "--timeout") ||
                     !strcmp(o, "--threads") || !strcmp(o, "--cache-limit") ||
                     !strcmp(o, "--ranks");
        if (takes && !v) {
            fprintf(stderr, "blockflow run: %s needs a value (blockflow help run)\n", o);
            return EXIT_USAGE;
        }
        if ((!strcmp(o, "--feed") && a->n_feeds == 64) ||
            (!strcmp(o, "--fetch") && a->n_fetches == 64) ||
            (!strcmp(o, "--set") && a->n_sets == 64)) {
            fprintf(stderr, "blockflow run: at most 64 of %s\n", o);
            return EXIT_USAGE;
        }
        if (!strcmp(o, "--feed")) a->feeds[a->n_feeds++] = argv[++i];
        else if (!strcmp(o, "--set")) a->sets[a->n_sets++] = argv[++i];
        else if (!strcmp(o, "--each")) a->each = true;
        else if (!strcmp(o, "--fetch")) a->fetches[a->n_fetches++] = argv[++i];
        else if (!strcmp(o, "--out")) a->out_dir = argv[++i];
        else if (!strcmp(o, "--device")) {
            if (!cli_parse_device(argv[++i], &a->device)) return EXIT_USAGE;
        } else if (!strcmp(o, "--timeout")) {
            if (!cli_parse_seconds(o, argv[++i], &a->timeout)) return EXIT_USAGE;
        } else if (!strcmp(o, "--threads")) {
            if ((a->cfg.threads = cli_parse_threads(argv[++i])) < 0) return EXIT_USAGE;
        } else if (!strcmp(o, "--cache-limit")) {
            uint64_t c;
            if (!cli_parse_u64(o, argv[++i], true, 0, UINT64_MAX, &c)) return EXIT_USAGE;
            a->cfg.no_cache = c == 0;
            a->cfg.max_cache_bytes = c;
        } else if ((lim = cli_parse_limit(argc, argv, &i, &a->cfg)) != 0) {
            if (lim < 0) return EXIT_USAGE;
        } else if (!strcmp(o, "--print")) a->print = true;
        else if (!strcmp(o, "--no-save")) a->save = false;
        else if (!strcmp(o, "--deterministic-reduce")) a->cfg.deterministic_reduce = 1;
        else if (!strcmp(o, "--ranks")) {
            if (!cli_parse_u64(o, argv[++i], false, 1, 256, &a->ranks)) return EXIT_USAGE;
        } else if (!strcmp(o, "--json")) a->json = true;
        else if (!strcmp(o, "--quiet") || !strcmp(o, "-q")) a->quiet = true;
        else if ((o[0] != '-' || !strcmp(o, "-")) && !a->page) a->page = o;
        else {
            cli_usage_error("run", o);
            return EXIT_USAGE;
        }
    }
    if (!a->page) {
        fprintf(stderr, "blockflow run: which page? (blockflow help run)\n");
        return EXIT_USAGE;
    }
    size_t ol = strlen(a->out_dir);
    a->archive = ol > 4 && !strcmp(a->out_dir + ol - 4, ".npz");
    if (a->each && !a->n_feeds) {
        fprintf(stderr, "blockflow run: --each runs once per item of a --feed "
                        "(ID=FILE.npz or ID='GLOB')\n");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* The folder that will hold the archive `path`, checked as an output folder. */
static int check_archive_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof(dir), ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "blockflow: cannot write the archive %s: %s is not a folder that can "
                        "be written to\n", path, dir);
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

/* The --feed that --each iterates: the last whose source is an .npz without :KEY or a glob. */
static int each_feed(const run_args *a) {
    for (int i = a->n_feeds - 1; i >= 0; i--) {
        const char *eq = strchr(a->feeds[i], '=');
        if (!eq) continue;
        size_t n = strlen(eq + 1);
        if ((n > 4 && !strcmp(eq + 1 + n - 4, ".npz")) || strpbrk(eq + 1, "*?["))
            return i;
    }
    return -1;
}

/*
 * One run of the opened page (feeds, --set and the item's feed already given): the run, its
 * table or JSON document (added to `items` under --each), --print, and its results written
 * (to `dir`, or collected into `arc`). Returns an exit status.
 */
static int run_item(run_args *a, opened *o, const char *item, const char *dir,
                    cli_archive *arc, cJSON *items, bf_status *st_out) {
    bf_session *s = o->s;
    bf_diags *diags = o->diags;
    bf_diags_clear(diags);
    bf_error e = {0};
    bf_status st = BF_OK;
    int rc = EXIT_OK;
    char fetches[64][256];
    const char *names[64];
    int nf = 0;
    const bf_page *page = bf_session_page(s);
    if (a->n_fetches) {
        nf = canonical_fetches(s, a->fetches, a->n_fetches, fetches);
    } else {
        const char *outs[64];
        int n = bf_page_output_count(page) < 64 ? bf_page_output_count(page) : 64;
        for (int i = 0; i < n; i++) outs[i] = bf_page_output(page, i);
        nf = canonical_fetches(s, outs, n, fetches);
    }
    for (int i = 0; i < nf; i++) names[i] = fetches[i];
    bf_run_options opts;
    bf_run_options_init(&opts);
    opts.fetches = a->n_fetches ? names : NULL;
    opts.n_fetches = a->n_fetches ? nf : 0;
    opts.device = a->device;
    opts.timeout_s = a->timeout;
    cli_progress progress;
    cli_progress_init(&progress, s, !a->quiet && !a->json);
    opts.on_event = cli_progress_event;
    opts.user = &progress;
    if (item && !a->quiet && !a->json) printf("item %s\n", item);
    /* the process's signals: each MPI rank takes its own; of --ranks' threads, rank 0 */
    bool signals = !bf_context_config(o->ctx)->group || cli_job_writer();
    if (signals) {
        running_session = s;
        signal(SIGINT, on_sigint);
        signal(SIGTERM, on_sigint);
    }
    st = bf_session_run(s, &opts, diags, &e);
    if (signals) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        running_session = NULL;
    }
    cli_progress_end(&progress);
    bool table = st == BF_OK || bf_diags_errors(diags) == 0 || st == BF_ECANCELED ||
                 st == BF_ETIMEDOUT;
    if (!a->json && !a->quiet && table) cli_print_run_table(s);
    if (!a->json && !a->quiet)
        for (size_t i = 0; i < bf_diags_count(diags); i++)
            if (bf_diags_at(diags, i)->status == BF_OK) print_error(bf_diags_at(diags, i));
    if (st) {
        if (!a->json) print_diags(diags, &e);
        bool invalid = st == BF_ESCHEMA || st == BF_EATTR || st == BF_ESHAPE ||
                       st == BF_EDTYPE || st == BF_EPARSE || st == BF_EINVAL;
        /* a shape error found only when running (values known late) is still a bad page */
        rc = st == BF_ECANCELED ? EXIT_CANCEL
             : st == BF_ENOTFOUND ? EXIT_USAGE /* --fetch names nothing */
             : invalid ? EXIT_INVALID
                       : EXIT_RUN;
    }
    if (!st && a->print && !a->json)
        for (int i = 0; i < nf; i++) {
            char id[256];
            snprintf(id, sizeof(id), "%s", names[i]);
            char *colon = strchr(id, ':');
            if (colon) *colon++ = '\0';
            const bf_tensor *t = bf_session_output(s, id, colon);
            if (t) cli_print_tensor(names[i], t);
        }
    cJSON *doc = a->json ? cli_run_json(s, st, diags, &e) : NULL;
    cJSON *values = doc && a->print && st == BF_OK ? cJSON_AddObjectToObject(doc, "values") : NULL;
    for (int i = 0; values && i < nf; i++) {
        char id[256];
        snprintf(id, sizeof(id), "%s", names[i]);
        char *colon = strchr(id, ':');
        if (colon) *colon++ = '\0';
        const bf_tensor *t = bf_session_output(s, id, colon);
        cJSON *v = t ? cli_tensor_json(t) : NULL;
        if (v) cJSON_AddItemToObject(values, names[i], v);
    }
    if (!st && a->save) {
        if (arc) {
            char prefix[300];
            snprintf(prefix, sizeof(prefix), "%s%s", item ? item : "", item ? "/" : "");
            rc = cli_archive_add(arc, s, names, nf, prefix);
        } else {
            rc = write_outputs(s, dir, names, nf, a->quiet || a->json);
        }
    }
    if (doc) {
        cJSON *outs = cJSON_GetObjectItem(doc, "outputs");
        for (int i = 0; !arc && a->save && rc == EXIT_OK && st == BF_OK && i < nf; i++) {
            char f[4096];
            fetch_file(dir, names[i], f, sizeof(f), "");
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "fetch", names[i]);
            cJSON_AddStringToObject(x, "file", f);
            cJSON_AddItemToArray(outs, x);
        }
        if (rc && st == BF_OK) { /* the files failed: already said on stderr */
            cJSON_ReplaceItemInObject(doc, "ok", cJSON_CreateFalse());
            cJSON_ReplaceItemInObject(doc, "status", cJSON_CreateString("not written"));
        }
        if (items) {
            if (item) cJSON_AddStringToObject(doc, "item", item);
            cJSON_AddItemToArray(items, doc);
        } else {
            cli_json_print(doc);
        }
    } else if (!arc && a->save && rc == EXIT_OK && st == BF_OK && !a->quiet) {
        for (int i = 0; i < nf; i++) {
            char f[4096];
            fetch_file(dir, names[i], f, sizeof(f), "");
            printf("wrote %s\n", f);
        }
    }
    *st_out = st;
    return rc;
}

/* The run of one rank (of one process, of an MPI job, or of --ranks' threads). */
static int run_one(run_args a) {
    opened o;
    int rc = open_page(a.page, &a.cfg, &o);
    if (!cli_job_writer()) /* a job of several ranks: rank 0 alone writes and prints */
        a.save = a.print = a.json = false, a.quiet = true;
    bf_status st = BF_OK;
    cli_item *items = NULL;
    cli_archive *arc = NULL;
    cJSON *docs = NULL;
    int n_items = 0, each = a.each ? each_feed(&a) : -1;
    bool json_done = false; /* --json: the one document was printed */
    if (rc) {
        if (rc == EXIT_INVALID && !a.json) print_diags(o.diags, &o.e);
        if (a.json) cli_json_print(cli_run_json(o.s, o.e.status ? o.e.status : BF_EINVAL,
                                                o.diags, &o.e));
        json_done = true;
        goto done;
    }
    if (a.each && each < 0) {
        fprintf(stderr, "blockflow run: --each needs a --feed ID=FILE.npz (each array an item) "
                        "or ID='GLOB' (each file an item)\n");
        rc = EXIT_USAGE;
        goto done;
    }
    for (int i = 0; i < a.n_sets; i++)
        if ((rc = cli_set_attr(o.s, a.sets[i]))) goto done;
    for (int i = 0; i < a.n_feeds; i++)
        if (i != each && (rc = cli_feed(o.ctx, o.s, a.feeds[i]))) {
            o.alone = true; /* this rank's files: the others cannot know */
            goto done;
        }
    if (a.archive && a.save && !(arc = cli_archive_new())) {
        fprintf(stderr, "blockflow: out of memory\n");
        rc = EXIT_RUN;
        goto done;
    }
    if (each < 0) {
        rc = run_item(&a, &o, NULL, a.out_dir, arc, NULL, &st);
        json_done = true;
    } else {
        enum { MAX_ITEMS = 4096 };
        if (!(items = calloc(MAX_ITEMS, sizeof(*items)))) {
            fprintf(stderr, "blockflow: out of memory\n");
            rc = EXIT_RUN;
            goto done;
        }
        if ((rc = cli_each_items(a.feeds[each], items, MAX_ITEMS, &n_items))) goto done;
        if (a.save && !arc && mkdir(a.out_dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "blockflow: cannot create the output folder %s: %s\n", a.out_dir,
                    strerror(errno));
            rc = EXIT_OUTPUT;
            goto done;
        }
        if (a.json) docs = cJSON_CreateArray();
        for (int i = 0; i < n_items && rc == EXIT_OK; i++) {
            char dir[4096];
            snprintf(dir, sizeof(dir), "%s/%s", a.out_dir, items[i].name);
            if (a.save && !arc && (rc = check_out_dir(dir))) break;
            if ((rc = cli_feed(o.ctx, o.s, items[i].feed))) {
                o.alone = true;
                break;
            }
            rc = run_item(&a, &o, items[i].name, dir, arc, docs, &st);
        }
    }
    if (arc && rc == EXIT_OK) {
        rc = cli_archive_write(arc, a.out_dir);
        if (rc == EXIT_OK && !a.quiet && !a.json) printf("wrote %s\n", a.out_dir);
    }
done:
    if (docs) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddBoolToObject(doc, "ok", rc == EXIT_OK);
        cJSON_AddStringToObject(doc, "status", rc == EXIT_OK ? "ran" : st ? cli_status_word(st)
                                                                       : "failed");
        cJSON_AddItemToObject(doc, "items", docs);
        cli_json_print(doc);
    } else if (a.json && !json_done) { /* a --set or --feed failed: already said on stderr */
        cJSON *doc = cli_run_json(o.s, BF_OK, o.diags, NULL);
        cJSON_ReplaceItemInObject(doc, "ok", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(doc, "status", cJSON_CreateString("invalid"));
        cli_json_print(doc);
    }
    free(items);
    cli_archive_free(arc);
    rc = cli_job_end(o.ctx, rc, o.alone);
    close_page(&o);
    return rc;
}

static int run_rank(const bf_config *cfg, void *arg) {
    run_args a = *(const run_args *)arg;
    a.cfg = *cfg;
    return run_one(a);
}

static int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse_run(argc, argv, &a);
    if (rc) return rc;
    if (a.save && (rc = a.archive ? check_archive_dir(a.out_dir) : check_out_dir(a.out_dir)))
        return rc;
    if (a.ranks > 1) return cli_job_threads((int)a.ranks, &a.cfg, "run", run_rank, &a);
    return run_one(a);
}

static int cmd_check(int argc, char **argv) {
    const char *page_path = NULL;
    bool json = false, quiet = false;
    bf_config cfg;
    bf_config_init(&cfg);
    cli_config_from_env(&cfg);
    for (int i = 1, lim; i < argc; i++) {
        if ((lim = cli_parse_limit(argc, argv, &i, &cfg)) < 0) return EXIT_USAGE;
        if (lim) continue;
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) quiet = true;
        else if ((argv[i][0] == '-' && strcmp(argv[i], "-")) || page_path) {
            cli_usage_error("check", argv[i]);
            return EXIT_USAGE;
        } else page_path = argv[i];
    }
    if (!page_path) {
        fprintf(stderr, "blockflow check: which page? (blockflow help check)\n");
        return EXIT_USAGE;
    }
    opened o;
    int rc = open_page(page_path, &cfg, &o);
    if (rc == EXIT_RUN) {
        close_page(&o);
        return rc;
    }
    bf_session *s = o.s;
    bf_diags *diags = o.diags;
    bf_error e = o.e;
    bf_status st = rc ? (e.status ? e.status : BF_EINVAL) : bf_session_check(s, diags, &e);
    if (json) {
        char *text = NULL;
        if (s && bf_session_check_json(s, &text, &e) == BF_OK) {
            puts(text);
        } else {
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddBoolToObject(doc, "ok", false);
            cJSON_AddItemToObject(doc, "problems", cli_problems_json(diags, &e));
            cli_json_print(doc);
        }
        bf_string_free(text);
        close_page(&o);
        return st ? EXIT_INVALID : EXIT_OK;
    }
    if (s && !quiet) {
        const bf_page *page = bf_session_page(s);
        int w = cli_id_width(page, 5);
        printf("%-*s %-36s %-10s %-10s %s\n", w, "block", "type", "port", "dtype", "shape");
        for (int i = 0; i < bf_page_block_count(page); i++) {
            const bf_block_stats *bs = bf_session_block_stats(s, i);
            for (int p = 0; p < bs->n_outputs && p < 4; p++) {
                char shape[96];
                /* a block whose inference failed has no shape: "?", not "[]" (a scalar) */
                cli_shape_text(bs->dtype[p] ? bs->rank[p] : -1, bs->dims[p], shape,
                               sizeof(shape));
                printf("%-*s %-36s %-10s %-10s %s\n", w, p ? "" : bs->id, p ? "" : bs->type,
                       bf_session_block_output_name(s, i, p),
                       bs->dtype[p] ? bf_dtype_name(bs->dtype[p]) : "?", shape);
            }
        }
    }
    print_diags(diags, &e);
    if (st) rc = EXIT_INVALID;
    else if (!quiet) printf("%s: ok\n", page_path);
    close_page(&o);
    return rc;
}

static int cmd_blocks(int argc, char **argv) {
    int json = 0;
    const char *type = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (argv[i][0] != '-' && !type) type = argv[i];
        else {
            cli_usage_error("blocks", argv[i]);
            return EXIT_USAGE;
        }
    }
    char *text = NULL;
    bf_error e = {0};
    bf_status st = json ? bf_block_catalog_json(type, &text, &e)
                        : bf_block_catalog_text(type, &text, &e);
    if (st) {
        print_error(&e);
        return st == BF_ENOTFOUND ? EXIT_USAGE : EXIT_RUN;
    }
    fputs(text, stdout);
    if (json) fputc('\n', stdout);
    bf_string_free(text);
    return EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        cli_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) return cli_help(NULL, stdout);
    if (!strcmp(cmd, "help")) return cli_help(argc > 2 ? argv[2] : NULL, stdout);
    /* `blockflow run --help` is `blockflow help run` */
    for (int i = 2; i < argc && strcmp(cmd, "serve") && strcmp(cmd, "bench"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return cli_help(cmd, stdout);
    if (!strcmp(cmd, "run")) {
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--watch")) return cli_watch(argc - 1, argv + 1, cmd_run);
        return cmd_run(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "fmt")) return cli_fmt(argc - 1, argv + 1);
    if (!strcmp(cmd, "blocks")) return cmd_blocks(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return bf_bench_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "explain")) return cli_explain(argc - 1, argv + 1);
    if (!strcmp(cmd, "gradcheck")) return cli_gradcheck(argc - 1, argv + 1);
    if (!strcmp(cmd, "grad")) return cli_grad(argc - 1, argv + 1);
    if (!strcmp(cmd, "train")) return cli_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cli_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) {
#ifdef BF_HAVE_SERVER
        return bf_serve_main(argc - 1, argv + 1);
#else
        fprintf(stderr, "blockflow: this build has no server (install libwebsockets-dev)\n");
        return EXIT_USAGE;
#endif
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("blockflow %s\n", BF_VERSION_STRING);
        return EXIT_OK;
    }
    fprintf(stderr, "blockflow: unknown command \"%s\"\n\n", cmd);
    cli_usage(stderr);
    return EXIT_USAGE;
}
