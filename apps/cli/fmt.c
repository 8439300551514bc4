/*
 * fmt.c - `blockflow fmt PAGE... [--check] [--in-place]`: a page in its canonical form
 * (bf_page_to_json), the tool to run before committing a page, as clang-format or
 * terraform fmt are.
 *
 *   blockflow fmt PAGE              print the canonical form of PAGE ("-": standard input)
 *   blockflow fmt --check PAGE...   exit 1, naming each, when a page is not canonical
 *   blockflow fmt --in-place PAGE...  rewrite the pages that are not (atomically)
 *
 * A page whose wiring is unfinished (an editor's page) is formatted too. A well-formed page
 * with other problems (an unknown block type, a bad attribute value) is laid out as written
 * (bf_page_format_json: key order and layout, values untouched), its problems printed on
 * stderr; --check reports them and exits 3. Only text that is not JSON is an error that
 * formats nothing (exit 3). The .npy files that `file` attributes name are not read:
 * formatting needs only the page.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read all of `f` (at most `limit` bytes) into a NUL-terminated buffer. NULL on error. */
static char *read_all(FILE *f, size_t limit, size_t *len, const char **why) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    *why = "out of memory";
    while (buf) {
        if (n + 1 == cap) {
            char *p = cap < limit + 2 ? realloc(buf, cap * 2) : NULL;
            if (!p) {
                *why = cap < limit + 2 ? "out of memory" : "the page is larger than the limit";
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (n > limit) {
            *why = "the page is larger than the limit";
            break;
        }
        if (got == 0) {
            if (ferror(f)) {
                *why = strerror(errno);
                break;
            }
            buf[n] = '\0';
            *len = n;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* Replace `path` by `text` atomically: a temporary file beside it, fsync, rename. The page's
 * permission bits are kept. */
static int write_atomic(const char *path, const char *text, size_t len) {
    char tmp[4096];
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.fmt-%ld.tmp", dir_len, path,
                 slash ? slash + 1 : path, (long)getpid()) >= (int)sizeof(tmp)) {
        fprintf(stderr, "blockflow fmt: %s: the path is too long\n", path);
        return EXIT_OUTPUT;
    }
    struct stat sb;
    mode_t mode = stat(path, &sb) == 0 ? sb.st_mode & 07777 : 0644;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
    bool ok = fd >= 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0) ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "blockflow fmt: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0) unlink(tmp);
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

int cli_write_atomic(const char *path, const char *text, size_t len) {
    return write_atomic(path, text, len);
}

/* Format one page; `mode` 0 print, 1 check, 2 in place. Returns an exit status (1: not
 * canonical, under --check). */
static int fmt_one(bf_context *ctx, const char *path, int mode) {
    bool in = !strcmp(path, "-");
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "blockflow fmt: cannot read %s: %s\n", path, strerror(errno));
        return EXIT_INVALID;
    }
    size_t len = 0;
    const char *why = "";
    char *text = read_all(f, bf_context_config(ctx)->max_page_bytes, &len, &why);
    if (!in) fclose(f);
    if (!text) {
        fprintf(stderr, "blockflow fmt: cannot read %s: %s\n", path, why);
        return EXIT_INVALID;
    }
    const char *name = in ? "<stdin>" : path;
    bf_diags *diags = bf_diags_new();
    bf_page *page = NULL;
    bf_error e = {0};
    char *canon = NULL;
    int rc = EXIT_OK;
    if (!diags) {
        rc = EXIT_RUN;
    } else if (bf_page_parse(ctx, text, len, name, ".", BF_LOAD_INCOMPLETE | BF_LOAD_SKIP_FILES,
                             &page, diags, &e)) {
        /* A well-formed page with problems (an unknown type, "padding": "same") is laid out
         * as written; --check also reports the problems (exit 3), the others warn. */
        bf_error fe = {0};
        bool formatted = e.status != BF_EPARSE &&
                         bf_page_format_json(text, len, &canon, &fe) == BF_OK;
        for (size_t i = 0; i < bf_diags_count(diags); i++)
            if (bf_diags_at(diags, i)->status != BF_OK) cli_print_error(bf_diags_at(diags, i));
        if (!bf_diags_errors(diags)) cli_print_error(&e);
        if (!formatted || mode == 1) {
            rc = EXIT_INVALID;
            if (formatted && strcmp(canon, text) != 0)
                printf("%s: not in canonical form (blockflow fmt --in-place %s)\n", name, name);
        } else if (mode == 0 || in) {
            fputs(canon, stdout);
        } else if (strcmp(canon, text) != 0) {
            rc = write_atomic(path, canon, strlen(canon));
        }
    } else if (bf_page_to_json(page, &canon, &e)) {
        cli_print_error(&e);
        rc = EXIT_RUN;
    } else if (mode == 0) {
        fputs(canon, stdout);
    } else if (strcmp(canon, text) != 0) {
        if (mode == 1) {
            printf("%s: not in canonical form (blockflow fmt --in-place %s)\n", name, name);
            rc = 1;
        } else if (in) {
            fputs(canon, stdout);
        } else {
            rc = write_atomic(path, canon, strlen(canon));
        }
    } else if (mode == 2 && in) {
        fputs(canon, stdout);
    }
    bf_string_free(canon);
    bf_page_free(page);
    bf_diags_free(diags);
    free(text);
    return rc;
}

int cli_fmt(int argc, char **argv) {
    int mode = 0, n_pages = 0;
    const char *pages[256];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) mode = 1;
        else if (!strcmp(argv[i], "--in-place") || !strcmp(argv[i], "-i")) mode = 2;
        else if ((argv[i][0] != '-' || !strcmp(argv[i], "-")) && n_pages < 256)
            pages[n_pages++] = argv[i];
        else {
            fprintf(stderr, "blockflow fmt: unexpected argument \"%s\"\n"
                    "usage: blockflow fmt PAGE... [--check | --in-place]\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (n_pages == 0 || (mode == 0 && n_pages > 1)) {
        fprintf(stderr, "usage: blockflow fmt PAGE          print the canonical form\n"
                        "       blockflow fmt --check PAGE...     exit 1 if one is not canonical\n"
                        "       blockflow fmt --in-place PAGE...  rewrite them in canonical form\n");
        return EXIT_USAGE;
    }
    bf_context *ctx = NULL;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 1;
    bf_error e = {0};
    if (bf_context_new(&cfg, &ctx, &e)) {
        cli_print_error(&e);
        return EXIT_RUN;
    }
    int rc = EXIT_OK;
    for (int i = 0; i < n_pages; i++) {
        int r = fmt_one(ctx, pages[i], mode);
        if (r > rc) rc = r; /* the worst: 1 not canonical < 3 invalid < 5 not written */
    }
    bf_context_free(ctx);
    return rc;
}
