/*
 * watch.c - `blockflow run PAGE ... --watch`: run, then run again whenever the page or a file
 * it reads changes (the --feed files, and the .npy files its blocks' "file" attributes name),
 * printing which changed. Files are polled (size, modification time, inode) every 0.3 s, so
 * an editor's save-by-rename is seen too. Each run is a whole `run` (the page loaded again),
 * so an edit that breaks the page is reported and the next save is awaited. Ctrl-C while
 * waiting ends it (exit 0); Ctrl-C during a run cancels the run and ends it (exit 130).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { MAX_WATCHED = 256 };

typedef struct watched {
    char path[4096];
    struct stat sb;
    bool exists;
} watched;

static volatile sig_atomic_t stop;
static void on_stop(int sig) {
    (void)sig;
    stop = 1;
}

static void add(watched *w, int *n, const char *path) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(w[i].path, path)) return;
    if (*n == MAX_WATCHED) return;
    snprintf(w[*n].path, sizeof(w[*n].path), "%s", path);
    w[*n].exists = stat(path, &w[*n].sb) == 0;
    (*n)++;
}

/* The "file" attributes of the page at `page` (relative ones against its folder). */
static void add_page_files(watched *w, int *n, const char *page) {
    char *text = NULL;
    FILE *f = fopen(page, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (len > 0 && len < (64L << 20) && (text = malloc((size_t)len + 1))) {
            size_t got = fread(text, 1, (size_t)len, f);
            text[got] = '\0';
        }
        fclose(f);
    }
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const char *slash = strrchr(page, '/');
    int dir_len = slash ? (int)(slash - page + 1) : 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(root, "blocks")) {
        const cJSON *file = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "attrs"), "file");
        if (!cJSON_IsString(file) || !file->valuestring[0]) continue;
        char path[4096];
        if (file->valuestring[0] == '/') snprintf(path, sizeof(path), "%s", file->valuestring);
        else snprintf(path, sizeof(path), "%.*s%s", dir_len, page, file->valuestring);
        add(w, n, path);
    }
    cJSON_Delete(root);
}

/* What to watch: the page, the --feed files (FILE of ID=FILE or ID=FILE.npz:KEY), the page's
 * "file" attributes. */
static int collect(int argc, char **argv, const char *page, watched *w) {
    int n = 0;
    add(w, &n, page);
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--feed")) continue;
        const char *eq = strchr(argv[++i], '=');
        if (!eq) continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s", eq + 1);
        char *npz = strstr(path, ".npz:");
        if (npz) npz[4] = '\0';
        add(w, &n, path);
    }
    add_page_files(w, &n, page);
    return n;
}

/* The first watched file that changed (NULL: none), its new state remembered. */
static const char *changed(watched *w, int n) {
    for (int i = 0; i < n; i++) {
        struct stat sb;
        bool exists = stat(w[i].path, &sb) == 0;
        if (exists != w[i].exists ||
            (exists && (sb.st_mtim.tv_sec != w[i].sb.st_mtim.tv_sec ||
                        sb.st_mtim.tv_nsec != w[i].sb.st_mtim.tv_nsec ||
                        sb.st_size != w[i].sb.st_size || sb.st_ino != w[i].sb.st_ino))) {
            w[i].sb = sb;
            w[i].exists = exists;
            return w[i].path;
        }
    }
    return NULL;
}

int cli_watch(int argc, char **argv, int (*run)(int argc, char **argv)) {
    /* the page: the first argument that is not an option or an option's value */
    static const char *const takes[] = {"--feed", "--fetch", "--out", "--device", "--timeout",
                                        "--threads", "--cache-limit", "--set", "--mem-limit",
                                        "--max-elements", "--max-blocks", "--max-page-bytes",
                                        "--max-json-depth", NULL};
    const char *page = NULL;
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    if (!args) return EXIT_RUN;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--watch")) continue;
        args[n++] = argv[i];
        if (i == 0) continue;
        bool value = false;
        for (int k = 0; takes[k]; k++) value |= !strcmp(argv[i], takes[k]);
        if (value && i + 1 < argc) {
            args[n++] = argv[++i];
            continue;
        }
        if (!page && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) page = argv[i];
    }
    if (!page || !strcmp(page, "-")) {
        fprintf(stderr, "blockflow run: --watch needs a page file (not standard input)\n");
        free(args);
        return EXIT_USAGE;
    }
    watched *w = calloc(MAX_WATCHED, sizeof(*w));
    if (!w) {
        free(args);
        return EXIT_RUN;
    }
    int rc = EXIT_OK;
    for (;;) {
        int nw = collect(n, args, page, w); /* before the run: a save during it is seen */
        rc = run(n, args);
        fflush(stdout);
        if (rc == EXIT_USAGE || rc == EXIT_CANCEL) break;
        fprintf(stderr, "blockflow: watching %d file%s (Ctrl-C to stop)\n", nw,
                nw == 1 ? "" : "s");
        stop = 0;
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
        const char *what = NULL;
        while (!stop && !(what = changed(w, nw))) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (stop) {
            rc = EXIT_OK;
            break;
        }
        /* let a writer finish (several files saved together): settle for 0.1 s */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        fprintf(stderr, "blockflow: %s changed: running again\n", what);
    }
    free(w);
    free(args);
    return rc;
}
