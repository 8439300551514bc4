/*
 * import.c - `blockflow import PAGE.svg|PAGE.json [--dat FILE] [-o OUT.json] [--data-dir DIR]
 * [--partial] [--json] [--quiet]`: an enuSpace-Tensorflow page as a canonical blockflow page.
 *
 * The importer (apps/enuspace) turns the bytes into a page and the .npy files of its large
 * arrays; this file reads the files, checks the page with the library (bf_page_parse, files
 * not read) and writes it in canonical form (bf_page_to_json), the .npy files first, each
 * atomically, beside OUT. Without -o the page goes to standard output (a page that needs
 * .npy files needs -o). The report goes to stderr as text, or to stdout as JSON with --json.
 * A page that cannot be imported writes nothing.
 */
#include "cli.h"
#include "enuspace.h"
#include "symgrad.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMPORT_MAX_BYTES ((size_t)256 << 20)

/* The whole file at `path` (at most `limit` bytes); NULL with the reason printed. */
static unsigned char *slurp(const char *path, size_t limit, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "blockflow import: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            if (cap > limit) {
                fprintf(stderr, "blockflow import: %s is larger than %zu bytes\n", path, limit);
                free(b);
                b = NULL;
                break;
            }
            unsigned char *p = realloc(b, cap * 2);
            if (!p) {
                free(b);
                b = NULL;
                break;
            }
            b = p;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                fprintf(stderr, "blockflow import: cannot read %s: %s\n", path, strerror(errno));
                free(b);
                b = NULL;
            }
            break;
        }
    }
    if (!b && !ferror(f)) fprintf(stderr, "blockflow import: out of memory reading %s\n", path);
    fclose(f);
    if (b && n > limit) {
        fprintf(stderr, "blockflow import: %s is larger than %zu bytes\n", path, limit);
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}

static int usage(const char *why) {
    fprintf(stderr, "blockflow import: %s\n", why);
    fprintf(stderr, "usage: blockflow import PAGE.svg|PAGE.json [--dat FILE] [-o OUT.json] "
                    "[--data-dir DIR] [--partial] [--json] [--quiet]\n");
    return EXIT_USAGE;
}

int cli_import(int argc, char **argv) {
    const char *page_path = NULL, *dat_path = NULL, *out = NULL, *data_dir = NULL;
    bool json = false, quiet = false;
    enu_options o;
    enu_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--dat") && i + 1 < argc) dat_path = argv[++i];
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && i + 1 < argc) out = argv[++i];
        else if (!strcmp(a, "--data-dir") && i + 1 < argc) data_dir = argv[++i];
        else if (!strcmp(a, "--partial")) o.partial = true;
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--quiet")) quiet = true;
        else if (a[0] == '-' && a[1]) {
            char why[200];
            snprintf(why, sizeof why, "unknown or incomplete option \"%.60s\"", a);
            return usage(why);
        } else if (!page_path) page_path = a;
        else return usage("one page at a time");
    }
    if (!page_path) return usage("which page? (an enuSpace .svg page or Task .json export)");
    if (json && !out) return usage("--json prints the report on stdout: give the page -o OUT.json");

    /* the page's name: its file name without folder and extension */
    const char *base = strrchr(page_path, '/');
    base = base ? base + 1 : page_path;
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    o.page_name = name;
    o.data_dir = data_dir;
    /* the .npy files are named after the page written: OUT.<block>.npy */
    char prefix[300] = "";
    if (out) {
        const char *ob = strrchr(out, '/');
        snprintf(prefix, sizeof prefix, "%s", ob ? ob + 1 : out);
        char *od = strrchr(prefix, '.');
        if (od && od != prefix) *od = '\0';
        strncat(prefix, ".", sizeof prefix - strlen(prefix) - 1);
        o.file_prefix = prefix;
    }

    size_t page_len = 0, dat_len = 0;
    unsigned char *page = slurp(page_path, IMPORT_MAX_BYTES, &page_len), *dat = NULL;
    if (!page) return EXIT_INVALID;
    char guess[4096];
    if (!dat_path) { /* <page>.dat beside the page, when there is one */
        size_t stem = strlen(page_path) - (dot ? strlen(base) - (size_t)(dot - name) : 0);
        struct stat sb;
        if (snprintf(guess, sizeof guess, "%.*s.dat", (int)stem, page_path) < (int)sizeof guess &&
            stat(guess, &sb) == 0 && S_ISREG(sb.st_mode))
            dat_path = guess;
    }
    if (dat_path && !(dat = slurp(dat_path, IMPORT_MAX_BYTES, &dat_len))) {
        free(page);
        return EXIT_INVALID;
    }

    enu_result r;
    int st = enu_import(page, page_len, dat, dat_len, &o, &r);
    free(page);
    free(dat);
    char *text = r.report_json && !json ? enu_report_text(r.report_json) : NULL;
    if (st) {
        if (json && r.report_json) printf("%s\n", r.report_json);
        else if (text && !quiet) fputs(text, stderr);
        fprintf(stderr, "blockflow import: %s: %s\n", page_path, r.error);
        free(text);
        enu_result_free(&r);
        return EXIT_INVALID;
    }

    /* the library checks the page and writes its canonical form */
    int rc = EXIT_OK, written = 0;
    bf_error e = {0};
    bf_context *ctx = NULL;
    bf_diags *diags = bf_diags_new();
    bf_page *pg = NULL;
    char *canon = NULL, *built = NULL, dir[4096] = ".";
    const char *page_text = r.page_json;
    if (out) {
        const char *sl = strrchr(out, '/');
        snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - out) : 1, sl ? out : ".");
        if (sl == out) snprintf(dir, sizeof dir, "/");
    }
    if (!diags || bf_context_new(NULL, &ctx, &e)) {
        cli_print_error(&e);
        rc = EXIT_INVALID;
        goto done;
    }
    if (strstr(r.page_json, "\"symbolic_gradients\"")) {
        /* AddSymbolicGradients: built on the page with its .npy files in place */
        if (r.n_files && !out) {
            fprintf(stderr, "blockflow import: %s: give -o OUT.json (the page's large arrays go "
                            "beside it)\n", page_path);
            rc = EXIT_USAGE;
            goto done;
        }
        for (; written < r.n_files && rc == EXIT_OK; written++) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s", dir, r.files[written].name) >=
                (int)sizeof path) {
                fprintf(stderr, "blockflow import: the path of %s in %s is too long\n",
                        r.files[written].name, dir);
                rc = EXIT_OUTPUT;
                break;
            }
            rc = cli_write_atomic(path, (const char *)r.files[written].data, r.files[written].size);
        }
        char why[600];
        if (rc == EXIT_OK &&
            enu_build_symbolic_gradients(ctx, r.page_json, name, dir, &built, why, sizeof why)) {
            fprintf(stderr, "blockflow import: %s: %s\n", page_path, why);
            rc = EXIT_INVALID;
        }
        if (rc != EXIT_OK) goto done;
        if (built) page_text = built;
    }
    if (bf_page_parse(ctx, page_text, strlen(page_text), name, NULL,
                      BF_LOAD_INCOMPLETE | BF_LOAD_SKIP_FILES, &pg, diags, &e) ||
        bf_page_to_json(pg, &canon, &e)) {
        fprintf(stderr, "blockflow import: %s: the imported page is not valid (please report "
                        "it):\n", page_path);
        for (size_t i = 0; diags && i < bf_diags_count(diags); i++) cli_print_error(bf_diags_at(diags, i));
        if (!diags || !bf_diags_count(diags)) cli_print_error(&e);
        rc = EXIT_INVALID;
        goto done;
    }
    if (!out && r.n_files) {
        fprintf(stderr, "blockflow import: %s: the page keeps %d large array%s in .npy files: "
                        "give -o OUT.json to write them beside it\n", page_path, r.n_files,
                r.n_files > 1 ? "s" : "");
        rc = EXIT_USAGE;
        goto done;
    }
    if (out) {
        struct stat od;
        if (stat(dir, &od) != 0 || !S_ISDIR(od.st_mode)) {
            fprintf(stderr, "blockflow import: cannot write %s: no folder %s\n", out, dir);
            rc = EXIT_OUTPUT;
            goto done;
        }
        for (; written < r.n_files && rc == EXIT_OK; written++) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s", dir, r.files[written].name) >=
                (int)sizeof path) {
                fprintf(stderr, "blockflow import: %s: the path is too long\n", out);
                rc = EXIT_OUTPUT;
                break;
            }
            rc = cli_write_atomic(path, (const char *)r.files[written].data,
                                  r.files[written].size);
        }
        if (rc == EXIT_OK) rc = cli_write_atomic(out, canon, strlen(canon));
    } else {
        fputs(canon, stdout);
    }
    if (rc == EXIT_OK) {
        if (json) printf("%s\n", r.report_json);
        else if (text && !quiet) fputs(text, stderr);
    }
done:
    if (rc != EXIT_OK) /* a failed import leaves no file behind */
        for (int i = 0; i < written; i++) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s", dir, r.files[i].name) < (int)sizeof path)
                remove(path);
        }
    bf_string_free(built);
    bf_string_free(canon);
    bf_page_free(pg);
    bf_diags_free(diags);
    bf_context_free(ctx);
    free(text);
    enu_result_free(&r);
    return rc;
}
