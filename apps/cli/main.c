/*
 * main.c - the `blockflow` program: run, check, fmt, blocks and bench.
 *
 * Everything here is presentation: the library returns errors and results, and this file
 * prints them (errors one per line on stderr, as PAGE: block "id": port "p": message) and
 * writes result files. Exit codes are documented in `blockflow --help` and the README.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bf_bench_main(int argc, char **argv); /* bench/bench.c (the blockflow_bench target) */
#ifdef BF_HAVE_SERVER
int bf_serve_main(int argc, char **argv); /* apps/server/serve.c */
#endif

static const char usage[] =
    "usage: blockflow COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run PAGE [--feed ID=FILE.npy]... [--fetch ID[:PORT]]... [--out DIR] [--no-save]\n"
    "           [--device auto|cpu|gpu] [--print] [--timeout SECONDS] [--threads N] [LIMITS]\n"
    "      run the page; write each fetched tensor to DIR/ID.npy (DIR/ID.PORT.npy for a\n"
    "      non-default port; DIR defaults to the current folder) and print a table per block\n"
    "  check PAGE [LIMITS]\n"
    "      validate the page and print the inferred dtype and shape of every port\n"
    "  fmt PAGE... [--check | --in-place]\n"
    "      print a page in canonical form; --check exits 1 when one is not, --in-place\n"
    "      rewrites it\n"
    "  blocks [--json] [TYPE]   the block catalogue\n"
    "  explain PAGE BLOCK INDEX... [--port P] [--json] [--max-terms N]\n"
    "      one output element of a convolution block: its value, the padding, and the\n"
    "      terms of its sum (pairs of operand elements in the tensors' own layouts)\n"
    "  gradcheck PAGE BLOCK [--json] [--eps E] [--tolerance T] [--samples N] [--seed S]\n"
    "           [--gpu]\n"
    "      check a gradient block (or both gradients of a forward block) against float64\n"
    "      central differences and the adjoint identity; exit 1 when it fails\n"
    "  grad PAGE BLOCK [--dy SOURCE] [--in-place]\n"
    "      add the gradient blocks of a Conv2D or DepthwiseConv2dNative block, as\n"
    "      tf.gradients builds them; print the page (or rewrite it)\n"
    "  bench [--cases FILE] [--ops LIST] [--threads N] [--json] [--device cpu|gpu]\n"
    "      benchmark the convolution kernels (see bench/RESULTS.md)\n"
    "  serve [--listen 127.0.0.1:8470] [--pages DIR] [--token TOKEN] [--threads N] [--open]\n"
    "      the runtime over HTTP and WebSocket for the browser editor (serve --help)\n"
    "  version\n"
    "\n"
    "limits (bf_config; sizes take K, M, G suffixes):\n"
    "  --mem-limit BYTES      tensor memory of the run (default: half the RAM)\n"
    "  --max-elements N       elements of one tensor (default 2^40)\n"
    "  --max-blocks N         blocks in a page (default 100000)\n"
    "  --max-page-bytes BYTES size of the page file (default 64M)\n"
    "  --max-json-depth N     JSON nesting of the page (default 64)\n"
    "  --confine-files        \"file\" attributes may only read inside the page's folder\n"
    "\n"
    "environment: BF_CUDNN_AUTOTUNE=1 (benchmark cuDNN's algorithms), BF_CUDNN_DETERMINISTIC=0\n"
    "  (admit non-deterministic ones), BF_CUDNN_WORKSPACE_MB (cap on cuDNN's workspace)\n"
    "\n"
    "exit status: 0 success, 1 not canonical (fmt --check) or failed (gradcheck), 2 usage\n"
    "             error, 3 invalid page or feed, 4 run-time failure, 5 results could not be\n"
    "             written, 130 interrupted\n";

static void print_error(const bf_error *e) { cli_print_error(e); }

/* Print every record of `d`; when it holds none, `e`. */
static void print_diags(const bf_diags *d, const bf_error *e) {
    size_t n = bf_diags_count(d);
    for (size_t i = 0; i < n; i++) print_error(bf_diags_at(d, i));
    if (!bf_diags_errors(d) && e && e->status) print_error(e);
}

static void shape_text(int rank, const int64_t *dims, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "[");
    if (rank < 0) {
        snprintf(buf, size, "?");
        return;
    }
    for (int i = 0; i < rank && n < size; i++)
        n += dims[i] < 0 ? (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "")
                         : (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "",
                                            (long long)dims[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

/* ---- small tensors as text (for teachers) ------------------------------------------------ */

static void print_tensor(const char *name, const bf_tensor *t) {
    int rank = bf_tensor_rank(t);
    const int64_t *dims = bf_tensor_dims(t);
    char s[128];
    shape_text(rank, dims, s, sizeof(s));
    printf("%s: %s %s\n", name, bf_dtype_name(bf_tensor_dtype(t)), s);
    int64_t n = bf_tensor_numel(t);
    if (n > 1024) {
        printf("  (%lld elements: too many to print; read the .npy file)\n", (long long)n);
        return;
    }
    /* Squeeze size-1 dims, then print the last two as a matrix per leading index. */
    int64_t sq[BF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < rank; i++)
        if (dims[i] != 1) sq[r++] = dims[i];
    int64_t cols = r >= 1 ? sq[r - 1] : 1, rows = r >= 2 ? sq[r - 2] : 1;
    int64_t mats = (cols * rows) != 0 ? n / (cols * rows) : 0;
    bool integral = bf_tensor_dtype(t) == BF_DTYPE_I32 || bf_tensor_dtype(t) == BF_DTYPE_I64;
    for (int64_t m = 0; m < mats; m++) {
        if (mats > 1) printf("  [%lld]\n", (long long)m);
        for (int64_t i = 0; i < rows; i++) {
            printf("   ");
            for (int64_t j = 0; j < cols; j++) {
                double v = bf_tensor_get_f64(t, (m * rows + i) * cols + j);
                if (integral)
                    printf(" %8lld", (long long)v);
                else
                    printf(" %11.6g", v);
            }
            printf("\n");
        }
    }
}

/* ---- run -------------------------------------------------------------------------------- */

static bf_session *volatile running_session;

static void on_sigint(int sig) {
    (void)sig;
    bf_session *s = running_session;
    if (s) bf_session_cancel(s); /* an atomic store: async-signal-safe */
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return false;
    if (*end == 'K' || *end == 'k') v <<= 10, end++;
    else if (*end == 'M' || *end == 'm') v <<= 20, end++;
    else if (*end == 'G' || *end == 'g') v <<= 30, end++;
    if (*end) return false;
    *out = v;
    return true;
}

/*
 * Parse a limit option at argv[*i] into cfg. Returns 1 when it was one (advancing *i past
 * its value), 0 when argv[*i] is no limit option, -1 on a bad value (message printed).
 */
static int parse_limit(int argc, char **argv, int *i, bf_config *cfg) {
    static const char *const names[] = {"--mem-limit", "--max-elements", "--max-blocks",
                                        "--max-page-bytes", "--max-json-depth"};
    if (!strcmp(argv[*i], "--confine-files")) {
        cfg->confine_files = 1;
        return 1;
    }
    int k = 0;
    while (k < 5 && strcmp(argv[*i], names[k])) k++;
    if (k == 5) return 0;
    uint64_t v;
    if (*i + 1 >= argc || !parse_u64(argv[*i + 1], &v) || v == 0 ||
        (k >= 2 && k != 3 && v > 1000000000)) {
        fprintf(stderr, "blockflow: %s takes a positive number%s\n", names[k],
                k == 0 || k == 3 ? " of bytes (e.g. 512M)" : "");
        return -1;
    }
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
 * Write all fetched tensors, all or nothing: first each to a staging file beside its target
 * (each written atomically: temporary file, fsync, rename), then each older result is kept
 * as a hard-linked backup while the staged files are renamed into place. If any step fails,
 * the targets already replaced get their backups back, so older results survive intact and
 * no partial file is left.
 */
static int write_outputs(bf_session *s, const char *dir, const char *const *fetches, int nf) {
    enum { MAX_OUT = 64 };
    static char staged[MAX_OUT][4096], final[MAX_OUT][4096], backup[MAX_OUT][4096];
    bool had_old[MAX_OUT] = {0};
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
    char prefix[64], bprefix[64];
    snprintf(prefix, sizeof(prefix), ".blockflow-%ld.", (long)getpid());
    snprintf(bprefix, sizeof(bprefix), ".blockflow-%ld.old.", (long)getpid());
    for (n = 0; n < nf && ok; n++) {
        char id[256];
        snprintf(id, sizeof(id), "%s", fetches[n]);
        char *colon = strchr(id, ':');
        if (colon) *colon++ = '\0';
        const bf_tensor *t = bf_session_output(s, id, colon);
        fetch_file(dir, fetches[n], staged[n], sizeof(staged[n]), prefix);
        fetch_file(dir, fetches[n], final[n], sizeof(final[n]), "");
        fetch_file(dir, fetches[n], backup[n], sizeof(backup[n]), bprefix);
        bf_error e = {0};
        if (!t || bf_tensor_save_npy(t, staged[n], &e) != BF_OK) {
            if (!t) fprintf(stderr, "blockflow: no result for %s\n", fetches[n]);
            else print_error(&e);
            ok = 0;
            n++; /* its staging file may exist: remove it below */
            break;
        }
    }
    for (; ok && placed < n; placed++) {
        had_old[placed] = link(final[placed], backup[placed]) == 0;
        if (rename(staged[placed], final[placed]) != 0) {
            fprintf(stderr, "blockflow: cannot write %s: %s\n", final[placed], strerror(errno));
            ok = 0;
            break;
        }
    }
    if (!ok) /* put back what was replaced */
        for (int i = 0; i < placed; i++) {
            if (had_old[i]) rename(backup[i], final[i]);
            else unlink(final[i]);
        }
    for (int i = 0; i < n; i++) {
        unlink(staged[i]);
        unlink(backup[i]);
    }
    return ok ? EXIT_OK : EXIT_OUTPUT;
}

/* Width of the widest block id (at least `min`), for aligned tables. */
static int id_width(const bf_page *page, int min) {
    int w = min;
    for (int i = 0; i < bf_page_block_count(page); i++) {
        int n = (int)strlen(bf_page_block_id(page, i));
        if (n > w) w = n;
    }
    return w;
}

static void print_table(bf_session *s, bool only_needed) {
    const bf_page *page = bf_session_page(s);
    int w = id_width(page, 5), shown = 0;
    for (int i = 0; i < bf_page_block_count(page); i++) {
        const bf_block_stats *st = bf_session_block_stats(s, i);
        shown += !only_needed || st->ran || st->reused || st->status != BF_OK;
    }
    if (!shown) return;
    printf("%-*s %-36s %-6s %-18s %9s  %s\n", w, "block", "type", "device", "shape", "ms",
           "status");
    for (int i = 0; i < bf_page_block_count(page); i++) {
        const bf_block_stats *st = bf_session_block_stats(s, i);
        if (only_needed && !st->ran && !st->reused && st->status == BF_OK) continue;
        char shape[96] = "-";
        if (st->n_outputs > 0) shape_text(st->rank[0], st->dims[0], shape, sizeof(shape));
        const char *status = st->status ? bf_status_name(st->status)
                             : st->reused ? "reused"
                             : st->ran    ? "ran"
                                          : "-";
        char ms[32] = "-";
        if (st->ran) snprintf(ms, sizeof(ms), "%.3f", st->ms);
        printf("%-*s %-36s %-6s %-18s %9s  %s%s%s\n", w, st->id, st->type,
               st->device[0] ? st->device : "-", shape, ms, status, st->note[0] ? "  " : "",
               st->note);
    }
}

/* What run and check share: a context, a diagnostics list, the page and its session. */
typedef struct opened {
    bf_context *ctx;
    bf_diags *diags;
    bf_session *s; /* owns the page */
    bf_error e;
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
    bf_page *page = NULL;
    if (bf_page_load_file(o->ctx, path, &page, o->diags, &o->e) ||
        bf_session_new(o->ctx, page, &o->s, &o->e))
        return EXIT_INVALID; /* bf_session_new frees the page on failure */
    return EXIT_OK;
}

static void close_page(opened *o) {
    bf_session_free(o->s);
    bf_diags_free(o->diags);
    bf_context_free(o->ctx);
}

static int cmd_run(int argc, char **argv) {
    const char *page_path = NULL, *out_dir = ".", *device = "auto";
    const char *feeds[64], *fetches[64];
    int n_feeds = 0, n_fetches = 0, print = 0, save = 1;
    double timeout = 0;
    bf_config cfg;
    bf_config_init(&cfg);
    cli_config_from_env(&cfg);
    for (int i = 1, lim; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--feed") && v && n_feeds < 64) feeds[n_feeds++] = argv[++i];
        else if (!strcmp(a, "--fetch") && v && n_fetches < 64) fetches[n_fetches++] = argv[++i];
        else if (!strcmp(a, "--out") && v) out_dir = argv[++i];
        else if (!strcmp(a, "--device") && v) device = argv[++i];
        else if (!strcmp(a, "--timeout") && v) timeout = atof(argv[++i]);
        else if (!strcmp(a, "--threads") && v) cfg.threads = atoi(argv[++i]);
        else if ((lim = parse_limit(argc, argv, &i, &cfg)) != 0) {
            if (lim < 0) return EXIT_USAGE;
        } else if (!strcmp(a, "--print")) print = 1;
        else if (!strcmp(a, "--no-save")) save = 0;
        else if (a[0] != '-' && !page_path) page_path = a;
        else {
            fprintf(stderr, "blockflow run: unexpected argument \"%s\"\n\n%s", a, usage);
            return EXIT_USAGE;
        }
    }
    bf_device_kind dev = !strcmp(device, "cpu") ? BF_DEVICE_CPU
                         : !strcmp(device, "gpu") ? BF_DEVICE_GPU
                         : !strcmp(device, "auto") ? BF_DEVICE_AUTO
                                                   : (bf_device_kind)-1;
    if (!page_path || (int)dev < 0 || timeout < 0 || cfg.threads < 0) {
        fprintf(stderr, "%s", usage);
        return EXIT_USAGE;
    }
    opened o;
    int rc = open_page(page_path, &cfg, &o);
    bf_context *ctx = o.ctx;
    bf_session *s = o.s;
    bf_diags *diags = o.diags;
    bf_error e = {0};
    if (rc) {
        if (rc == EXIT_INVALID) print_diags(diags, &o.e);
        goto done;
    }
    const bf_page *page = bf_session_page(s);
    for (int i = 0; i < n_feeds; i++) {
        char id[256];
        snprintf(id, sizeof(id), "%s", feeds[i]);
        char *eq = strchr(id, '=');
        if (!eq) {
            fprintf(stderr, "blockflow: --feed takes ID=FILE.npy, got \"%s\"\n", feeds[i]);
            rc = EXIT_USAGE;
            goto done;
        }
        *eq = '\0';
        bf_tensor *t = NULL;
        if (bf_tensor_load_npy(ctx, eq + 1, &t, &e) || bf_session_feed(s, id, t, &e)) {
            print_error(&e);
            bf_tensor_free(t);
            rc = EXIT_INVALID;
            goto done;
        }
        bf_tensor_free(t);
    }
    bf_run_options opts;
    bf_run_options_init(&opts);
    opts.fetches = n_fetches ? fetches : NULL;
    opts.n_fetches = n_fetches;
    opts.device = dev;
    opts.timeout_s = timeout;
    running_session = s;
    signal(SIGINT, on_sigint);
    bf_status st = bf_session_run(s, &opts, diags, &e);
    signal(SIGINT, SIG_DFL);
    running_session = NULL;
    if (st == BF_OK || bf_diags_errors(diags) == 0 || st == BF_ECANCELED || st == BF_ETIMEDOUT)
        print_table(s, true);
    for (size_t i = 0; i < bf_diags_count(diags); i++)
        if (bf_diags_at(diags, i)->status == BF_OK) print_error(bf_diags_at(diags, i));
    if (st) {
        print_diags(diags, &e);
        bool invalid = st == BF_ESCHEMA || st == BF_EATTR || st == BF_ESHAPE ||
                       st == BF_EDTYPE || st == BF_EPARSE || st == BF_EINVAL;
        /* a shape error found only when running (values known late) is still a bad page */
        rc = st == BF_ECANCELED ? EXIT_CANCEL
             : st == BF_ENOTFOUND ? EXIT_USAGE /* --fetch names nothing */
             : invalid ? EXIT_INVALID
                       : EXIT_RUN;
        goto done;
    }
    const char *const *names = n_fetches ? fetches : NULL;
    const char *defaults[64];
    int nf = n_fetches;
    if (!names) {
        nf = bf_page_output_count(page) < 64 ? bf_page_output_count(page) : 64;
        for (int i = 0; i < nf; i++) defaults[i] = bf_page_output(page, i);
        names = defaults;
    }
    if (print)
        for (int i = 0; i < nf; i++) {
            char id[256];
            snprintf(id, sizeof(id), "%s", names[i]);
            char *colon = strchr(id, ':');
            if (colon) *colon++ = '\0';
            const bf_tensor *t = bf_session_output(s, id, colon);
            if (t) print_tensor(names[i], t);
        }
    if (save) {
        rc = write_outputs(s, out_dir, names, nf);
        if (rc == EXIT_OK)
            for (int i = 0; i < nf; i++) {
                char f[4096];
                fetch_file(out_dir, names[i], f, sizeof(f), "");
                printf("wrote %s\n", f);
            }
    }
done:
    close_page(&o);
    return rc;
}

static int cmd_check(int argc, char **argv) {
    const char *page_path = NULL;
    bf_config cfg;
    bf_config_init(&cfg);
    cli_config_from_env(&cfg);
    for (int i = 1, lim; i < argc; i++) {
        if ((lim = parse_limit(argc, argv, &i, &cfg)) < 0) return EXIT_USAGE;
        if (lim) continue;
        if (argv[i][0] == '-' || page_path) {
            fprintf(stderr, "blockflow check: unexpected argument \"%s\"\n\n%s", argv[i], usage);
            return EXIT_USAGE;
        }
        page_path = argv[i];
    }
    if (!page_path) {
        fprintf(stderr, "%s", usage);
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
    bf_status st = rc ? e.status : bf_session_check(s, diags, &e);
    if (s) {
        const bf_page *page = bf_session_page(s);
        int w = id_width(page, 5);
        printf("%-*s %-36s %-10s %-10s %s\n", w, "block", "type", "port", "dtype", "shape");
        for (int i = 0; i < bf_page_block_count(page); i++) {
            const bf_block_stats *bs = bf_session_block_stats(s, i);
            for (int p = 0; p < bs->n_outputs && p < 4; p++) {
                char shape[96];
                shape_text(bs->rank[p], bs->dims[p], shape, sizeof(shape));
                printf("%-*s %-36s %-10s %-10s %s\n", w, p ? "" : bs->id, p ? "" : bs->type,
                       bf_session_block_output_name(s, i, p),
                       bs->dtype[p] ? bf_dtype_name(bs->dtype[p]) : "?", shape);
            }
        }
    }
    print_diags(diags, &e);
    if (st) rc = EXIT_INVALID;
    else printf("%s: ok\n", page_path);
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
            fprintf(stderr, "%s", usage);
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
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "fmt")) return cli_fmt(argc - 1, argv + 1);
    if (!strcmp(cmd, "blocks")) return cmd_blocks(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return bf_bench_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "explain")) return cli_explain(argc - 1, argv + 1);
    if (!strcmp(cmd, "gradcheck")) return cli_gradcheck(argc - 1, argv + 1);
    if (!strcmp(cmd, "grad")) return cli_grad(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) {
#ifdef BF_HAVE_SERVER
        return bf_serve_main(argc - 1, argv + 1);
#else
        fprintf(stderr, "blockflow: this build has no server (install libwebsockets-dev)\n");
        return EXIT_USAGE;
#endif
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("blockflow %s\n", BF_VERSION_STRING);
        return EXIT_OK;
    }
    fprintf(stderr, "blockflow: unknown command \"%s\"\n\n%s", cmd, usage);
    return EXIT_USAGE;
}
