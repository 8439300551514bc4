/*
 * batch.c - what `run` does beyond one run of one page: --set BLOCK.ATTR=VALUE (an attribute
 * overridden for this run, through bf_session_set_attr, so it is checked as an edit is),
 * --each (one run per item of a batch: the arrays of an .npz, or the files a glob names), and
 * --out FILE.npz (every result in one numpy archive, written once, atomically, at the end).
 */
#include "cli.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_set_attr(bf_session *s, const char *arg) {
    const char *eq = strchr(arg, '=');
    const char *dot = eq ? eq : arg + strlen(arg);
    while (dot > arg && *dot != '.') dot--; /* the last dot before "=": ids may hold dots */
    if (!eq || *dot != '.' || dot == arg || dot + 1 == eq) {
        fprintf(stderr, "blockflow: --set \"%s\": takes BLOCK.ATTR=VALUE (VALUE as JSON: 2, "
                        "[1,2,2,1], \"SAME\"; a bare word is a string)\n", arg);
        return EXIT_USAGE;
    }
    char block[256], attr[128];
    snprintf(block, sizeof(block), "%.*s", (int)(dot - arg), arg);
    snprintf(attr, sizeof(attr), "%.*s", (int)(eq - dot - 1), dot + 1);
    const char *value = eq + 1;
    /* JSON when it parses as JSON, else the text as a JSON string (padding=SAME) */
    bf_error e = {0};
    bf_status st = bf_session_set_attr(s, block, attr, value, &e);
    if (st == BF_EPARSE) {
        size_t n = strlen(value);
        char *quoted = malloc(2 * n + 3);
        if (!quoted) {
            fprintf(stderr, "blockflow: out of memory\n");
            return EXIT_RUN;
        }
        size_t k = 0;
        quoted[k++] = '"';
        for (size_t i = 0; i < n; i++) {
            if (value[i] == '"' || value[i] == '\\') quoted[k++] = '\\';
            quoted[k++] = value[i];
        }
        quoted[k++] = '"';
        quoted[k] = '\0';
        memset(&e, 0, sizeof(e));
        st = bf_session_set_attr(s, block, attr, quoted, &e);
        free(quoted);
    }
    if (st) {
        cli_print_error(&e);
        return st == BF_ENOTFOUND ? EXIT_USAGE : EXIT_INVALID;
    }
    return EXIT_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const cli_item *)a)->name, ((const cli_item *)b)->name);
}

int cli_each_items(const char *feed_arg, cli_item *items, int max, int *n) {
    *n = 0;
    const char *eq = strchr(feed_arg, '=');
    if (!eq || eq == feed_arg || !eq[1]) {
        fprintf(stderr, "blockflow: --feed \"%s\": takes ID=FILE.npz or ID='GLOB' with --each\n",
                feed_arg);
        return EXIT_USAGE;
    }
    int id_len = (int)(eq - feed_arg);
    const char *src = eq + 1;
    size_t len = strlen(src);
    if (len > 4 && !strcmp(src + len - 4, ".npz")) {
        char (*keys)[256] = calloc((size_t)max, 256);
        if (!keys) {
            fprintf(stderr, "blockflow: out of memory\n");
            return EXIT_RUN;
        }
        int k = cli_npz_keys(src, keys, max);
        for (int i = 0; i < k; i++) {
            snprintf(items[i].name, sizeof(items[i].name), "%s", keys[i]);
            snprintf(items[i].feed, sizeof(items[i].feed), "%.*s=%s:%s", id_len, feed_arg, src,
                     keys[i]);
        }
        free(keys);
        if (k < 0) return EXIT_INVALID;
        *n = k;
    } else {
        glob_t g;
        int rc = glob(src, 0, NULL, &g);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            fprintf(stderr, "blockflow: --feed \"%s\" --each: no file matches %s\n", feed_arg,
                    src);
            if (rc == 0) globfree(&g);
            return EXIT_INVALID;
        }
        if (rc) {
            fprintf(stderr, "blockflow: --feed \"%s\" --each: cannot list %s\n", feed_arg, src);
            return EXIT_INVALID;
        }
        for (size_t i = 0; i < g.gl_pathc && *n < max; i++) {
            const char *path = g.gl_pathv[i], *base = strrchr(path, '/');
            base = base ? base + 1 : path;
            size_t bl = strlen(base);
            if (bl > 4 && !strcmp(base + bl - 4, ".npy")) bl -= 4;
            snprintf(items[*n].name, sizeof(items[*n].name), "%.*s", (int)bl, base);
            snprintf(items[*n].feed, sizeof(items[*n].feed), "%.*s=%s", id_len, feed_arg, path);
            (*n)++;
        }
        globfree(&g);
    }
    if (*n == 0) {
        fprintf(stderr, "blockflow: --feed \"%s\" --each: no item to run\n", feed_arg);
        return EXIT_INVALID;
    }
    qsort(items, (size_t)*n, sizeof(*items), by_name);
    return EXIT_OK;
}

struct cli_archive {
    char **keys;
    bf_tensor **ts;
    int n, cap;
};

cli_archive *cli_archive_new(void) { return calloc(1, sizeof(cli_archive)); }

void cli_archive_free(cli_archive *a) {
    if (!a) return;
    for (int i = 0; i < a->n; i++) {
        free(a->keys[i]);
        bf_tensor_free(a->ts[i]);
    }
    free(a->keys);
    free(a->ts);
    free(a);
}

int cli_archive_add(cli_archive *a, bf_session *s, const char *const *fetches, int nf,
                    const char *prefix) {
    for (int i = 0; i < nf; i++) {
        if (a->n == a->cap) {
            int cap = a->cap ? 2 * a->cap : 16;
            char **k = realloc(a->keys, (size_t)cap * sizeof(*k));
            if (k) a->keys = k;
            bf_tensor **t = k ? realloc(a->ts, (size_t)cap * sizeof(*t)) : NULL;
            if (!t) {
                fprintf(stderr, "blockflow: out of memory collecting the results\n");
                return EXIT_OUTPUT;
            }
            a->ts = t;
            a->cap = cap;
        }
        char id[256], key[600];
        snprintf(id, sizeof(id), "%s", fetches[i]);
        char *colon = strchr(id, ':');
        if (colon) *colon++ = '\0';
        snprintf(key, sizeof(key), "%s%s%s%s", prefix ? prefix : "", id, colon ? "." : "",
                 colon ? colon : "");
        bf_error e = {0};
        bf_tensor *t = NULL;
        /* handed over, not copied: the run is over and the session will not read it again */
        if (bf_session_take_output(s, id, colon, &t, &e)) {
            cli_print_error(&e);
            return EXIT_OUTPUT;
        }
        a->keys[a->n] = strdup(key);
        a->ts[a->n] = t;
        if (!a->keys[a->n]) {
            bf_tensor_free(t);
            fprintf(stderr, "blockflow: out of memory collecting the results\n");
            return EXIT_OUTPUT;
        }
        a->n++;
    }
    return EXIT_OK;
}

int cli_archive_write(cli_archive *a, const char *path) {
    bf_error e = {0};
    if (bf_tensor_save_npz(path, (const char *const *)a->keys, (const bf_tensor *const *)a->ts,
                           a->n, &e)) {
        cli_print_error(&e);
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}
