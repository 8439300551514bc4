/*
 * serve.c - `blockflow serve`: options, start-up, the URL with the token, and a clean stop.
 *
 * Start-up: parse the flags, make the app (context, pages folder, run workers), listen, print
 * the URL to open with its token (random at each start unless --token), run libuv's loop.
 * SIGINT/SIGTERM: refuse new work, cancel every run, wait for the workers to hand their
 * sessions back, close every connection and handle, then free everything. Page writes are
 * synchronous, atomic renames on the loop thread, so a signal never finds one half-written.
 */
#include "http.h"

#include <signal.h>
#include <stddef.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

static const char serve_usage[] =
    "usage: blockflow serve [--listen 127.0.0.1:8470] [--pages DIR] [--token TOKEN]\n"
    "                       [--threads N] [--web DIR] [--open] [LIMITS]\n"
    "\n"
    "  --listen ADDR:PORT   address to listen on (default 127.0.0.1:8470; port 0: any free\n"
    "                       port). Anything but loopback exposes the server: see README.\n"
    "  --allow-host NAME    another accepted Host header (a name for a non-loopback address)\n"
    "  --pages DIR          the pages folder (default: the current folder)\n"
    "  --token TOKEN        the access token (default: random at each start)\n"
    "  --threads N          kernel threads (default: CPU cores)\n"
    "  --web DIR            the built editor (default: web/dist of this source tree, else\n"
    "                       ../share/blockflow/web next to the program)\n"
    "  --open               open the URL in a browser\n"
    "  --classroom          a class: a teacher URL (edits the pages) and a student URL (each\n"
    "                       student joins by name and works on their own copies; see README)\n"
    "\n"
    "limits (each breach is a 4xx JSON error naming the flag):\n"
    "  --max-body BYTES        HTTP request body (default 1M)\n"
    "  --max-ws-message BYTES  WebSocket message (default 64K)\n"
    "  --max-upload BYTES      .npy bytes fed by one run request (default 64M)\n"
    "  --max-open-pages N      open pages per client (default 16)\n"
    "  --max-runs N            runs queued or running at once (default 64)\n"
    "  --idle-timeout SECONDS  an unused open page is closed after this (default 900)\n"
    "  --run-timeout SECONDS   one run's time limit (default 300)\n"
    "  --max-values N          elements in one ?view=values answer (default 65536)\n"
    "  --max-ws-queue BYTES    unread events before a WebSocket client is dropped (default 8M)\n"
    "  --max-ws-total BYTES    unread events of all WebSocket clients together; past it the\n"
    "                          client furthest behind is dropped (default 64M)\n"
    "  --workers N             run threads (default: the CPU cores)\n"
    "  --max-connections N     open connections (default 512)\n"
    "  --max-unauthenticated N connections that have not yet shown the token (default 256)\n"
    "  --header-timeout SECONDS a request's headers must arrive within this (default 10)\n"
    "  --body-timeout SECONDS  a request's whole body must arrive within this (default 30)\n"
    "  --max-open-pages-total N open pages of all clients together (default 256)\n"
    "  --max-students N        students who may join a classroom (default 500)\n"
    "  --max-memory BYTES      tensor memory of all open pages together; idle pages are\n"
    "                          closed first (default: half of the RAM)\n"
    "  --mem-limit BYTES       tensor memory of one open page (default 1G)\n"
    "  --max-page-bytes BYTES  page file size (default 4M)\n";

typedef struct serve_state {
    uv_loop_t loop;
    srv_app app;
    srv_http *http;
    uv_signal_t sigint, sigterm;
    bool stopping;
} serve_state;

static void on_drained(srv_app *app) {
    serve_state *st = (serve_state *)(void *)((char *)app - offsetof(serve_state, app));
    srv_http_stop(st->http); /* closes every connection and the listener */
    uv_close((uv_handle_t *)&st->sigint, NULL);
    uv_close((uv_handle_t *)&st->sigterm, NULL);
    srv_app_close_handles(&st->app);
}

static void on_signal(uv_signal_t *h, int signum) {
    serve_state *st = h->data;
    if (st->stopping) return;
    st->stopping = true;
    fprintf(stderr, "blockflow serve: %s: cancelling runs and stopping\n",
            signum == SIGINT ? "interrupted" : "terminated");
    st->app.on_drained = on_drained;
    srv_app_stop(&st->app);
}

static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || s[0] == '-') return false;
    if (*end == 'K' || *end == 'k') v <<= 10, end++;
    else if (*end == 'M' || *end == 'm') v <<= 20, end++;
    else if (*end == 'G' || *end == 'g') v <<= 30, end++;
    if (*end || v == 0) return false;
    *out = v;
    return true;
}

/* "host:port", "[v6]:port" or ":port" into iface and port. */
static bool parse_listen(const char *s, char *iface, size_t n, int *port, bool *v6) {
    const char *colon;
    *v6 = false;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return false;
        snprintf(iface, n, "%.*s", (int)(close - s - 1), s + 1);
        colon = close + 1;
        *v6 = true;
    } else {
        colon = strrchr(s, ':');
        if (!colon) return false;
        snprintf(iface, n, "%.*s", (int)(colon - s), s);
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535) return false;
    *port = (int)p;
    if (!iface[0]) snprintf(iface, n, "127.0.0.1");
    return true;
}

static bool is_loopback(const char *iface) {
    return !strncmp(iface, "127.", 4) || !strcmp(iface, "::1") || !strcasecmp(iface, "localhost");
}

/*
 * Find and open the editor's files: --web DIR when given (a warning when unusable), else the
 * source tree's web/dist (BF_WEB_DIR, set by CMake), else ../share/blockflow/web next to the
 * program (an installed copy). Without any, / says how to build the editor.
 */
static void open_web(srv_app *app, const char *given) {
    char why[600];
    if (given) {
        if (srv_web_open(app, given, why, sizeof(why)))
            fprintf(stderr, "blockflow serve: --web: %s; serving the API only\n", why);
        return;
    }
#ifdef BF_WEB_DIR
    if (srv_web_open(app, BF_WEB_DIR, why, sizeof(why)) == 0) return;
#endif
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 40);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            snprintf(slash, sizeof(exe) - (size_t)(slash - exe), "/../share/blockflow/web");
            if (srv_web_open(app, exe, why, sizeof(why)) == 0) return;
        }
    }
    fprintf(stderr, "blockflow serve: the editor is not built (run `make editor`); serving the "
                    "API only\n");
}

static void open_browser(const char *url) {
    char *argv[] = {"xdg-open", (char *)url, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
        fprintf(stderr, "blockflow serve: cannot run xdg-open; open the URL yourself\n");
}

int bf_serve_main(int argc, char **argv);

int bf_serve_main(int argc, char **argv) {
    const char *listen = "127.0.0.1:8470", *pages = ".", *token = NULL, *web = NULL;
    const char *allow[4];
    int n_allow = 0, open_url = 0;
    bool classroom = false;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_session_bytes = (uint64_t)1 << 30;
    cfg.max_page_bytes = (uint64_t)4 << 20;
    srv_limits lim;
    srv_limits_init(&lim);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u = 0;
        bool ok = true;
        if (!strcmp(a, "--open")) {
            open_url = 1;
            continue;
        }
        if (!strcmp(a, "--classroom")) {
            classroom = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(serve_usage, stdout);
            return 0;
        }
        if (!v || a[0] != '-') {
            fprintf(stderr, "blockflow serve: unexpected argument \"%s\"\n\n%s", a, serve_usage);
            return 2;
        }
        i++;
        if (!strcmp(a, "--listen")) listen = v;
        else if (!strcmp(a, "--pages")) pages = v;
        else if (!strcmp(a, "--token")) token = v;
        else if (!strcmp(a, "--web")) web = v;
        else if (!strcmp(a, "--allow-host") && n_allow < 4) allow[n_allow++] = v;
        else if (!strcmp(a, "--threads")) ok = parse_size(v, &u) && u <= 1024, cfg.threads = (int)u;
        else if (!strcmp(a, "--max-body")) ok = parse_size(v, &u), lim.max_body = u;
        else if (!strcmp(a, "--max-ws-message")) ok = parse_size(v, &u), lim.max_ws_message = u;
        else if (!strcmp(a, "--max-upload")) ok = parse_size(v, &u), lim.max_upload = u;
        else if (!strcmp(a, "--max-open-pages"))
            ok = parse_size(v, &u) && u < 100000, lim.max_open_pages = (int)u;
        else if (!strcmp(a, "--max-runs")) ok = parse_size(v, &u) && u < 100000, lim.max_runs = (int)u;
        else if (!strcmp(a, "--workers")) ok = parse_size(v, &u) && u <= 256, lim.workers = (int)u;
        else if (!strcmp(a, "--idle-timeout")) ok = (lim.idle_s = atof(v)) > 0;
        else if (!strcmp(a, "--run-timeout")) ok = (lim.run_timeout_s = atof(v)) > 0;
        else if (!strcmp(a, "--max-values")) ok = parse_size(v, &u), lim.max_values = u;
        else if (!strcmp(a, "--max-ws-queue")) ok = parse_size(v, &u), lim.max_ws_queue = u;
        else if (!strcmp(a, "--max-ws-total")) ok = parse_size(v, &u), lim.max_ws_total = u;
        else if (!strcmp(a, "--max-connections"))
            ok = parse_size(v, &u) && u < 100000, lim.max_connections = (int)u;
        else if (!strcmp(a, "--max-unauthenticated"))
            ok = parse_size(v, &u) && u < 100000, lim.max_unauth = (int)u;
        else if (!strcmp(a, "--header-timeout")) ok = (lim.header_timeout_s = atof(v)) > 0;
        else if (!strcmp(a, "--body-timeout")) ok = (lim.body_timeout_s = atof(v)) > 0;
        else if (!strcmp(a, "--max-open-pages-total"))
            ok = parse_size(v, &u) && u < 100000, lim.max_pages_total = (int)u;
        else if (!strcmp(a, "--max-memory")) ok = parse_size(v, &u), lim.max_memory = u;
        else if (!strcmp(a, "--max-students"))
            ok = parse_size(v, &u) && u < 100000, lim.max_students = (int)u;
        else if (!strcmp(a, "--mem-limit")) ok = parse_size(v, &u), cfg.max_session_bytes = u;
        else if (!strcmp(a, "--max-page-bytes")) ok = parse_size(v, &u), cfg.max_page_bytes = u;
        else {
            fprintf(stderr, "blockflow serve: unknown option \"%s\"\n\n%s", a, serve_usage);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "blockflow serve: %s takes a positive number, got \"%s\"\n", a, v);
            return 2;
        }
    }
    /* one open page never holds more than all of them may */
    if (cfg.max_session_bytes > lim.max_memory) cfg.max_session_bytes = lim.max_memory;
    char iface[256];
    int port;
    bool v6;
    if (!parse_listen(listen, iface, sizeof(iface), &port, &v6)) {
        fprintf(stderr, "blockflow serve: --listen takes ADDRESS:PORT, got \"%s\"\n", listen);
        return 2;
    }
    if (token && (strlen(token) < 8 || strlen(token) > 64 || !srv_name_ok(token))) {
        fprintf(stderr, "blockflow serve: --token takes 8 to 64 letters, digits, '.', '_' or "
                        "'-'\n");
        return 2;
    }
    if (!is_loopback(iface))
        fprintf(stderr, "blockflow serve: WARNING: listening on %s, not loopback: anyone who "
                        "can reach this address and learns the token can run pages here, and "
                        "traffic is not encrypted (see README, \"Serve\")\n", iface);
    signal(SIGPIPE, SIG_IGN);

    serve_state *st = calloc(1, sizeof(*st)); /* the app holds the run table: not on the stack */
    if (!st) {
        fprintf(stderr, "blockflow serve: out of memory\n");
        return 1;
    }
    char why[512];
    int uerr = uv_loop_init(&st->loop);
    if (uerr) {
        fprintf(stderr, "blockflow serve: cannot start an event loop: %s\n", uv_strerror(uerr));
        free(st);
        return 1;
    }
    if (srv_app_init(&st->app, &st->loop, pages, &cfg, &lim, why, sizeof(why))) {
        fprintf(stderr, "blockflow serve: %s\n", why);
        uv_loop_close(&st->loop);
        free(st);
        return 1;
    }
    open_web(&st->app, web);
    if (token) snprintf(st->app.token, sizeof(st->app.token), "%s", token);
    else srv_random_hex(st->app.token, 49);
    st->app.classroom = classroom;
    if (classroom) srv_random_hex(st->app.class_token, 49);
    st->http = srv_http_start(&st->app, iface, port, v6, why, sizeof(why));
    int rc = 0;
    if (!st->http || srv_http_port(st->http) < 0) {
        fprintf(stderr, "blockflow serve: %s\n", why);
        rc = 1;
        st->app.on_drained = NULL;
        srv_app_close_handles(&st->app);
    } else {
        port = srv_http_port(st->http);
        const char *shown = is_loopback(iface) ? "127.0.0.1" : iface;
        int nh = 0;
        if (is_loopback(iface)) {
            snprintf(st->app.hosts[nh++], sizeof(st->app.hosts[0]), "127.0.0.1:%d", port);
            snprintf(st->app.hosts[nh++], sizeof(st->app.hosts[0]), "localhost:%d", port);
            snprintf(st->app.hosts[nh++], sizeof(st->app.hosts[0]), "[::1]:%d", port);
        } else {
            snprintf(st->app.hosts[nh++], sizeof(st->app.hosts[0]), v6 ? "[%s]:%d" : "%s:%d",
                     iface, port);
        }
        for (int i = 0; i < n_allow && nh < 8; i++)
            snprintf(st->app.hosts[nh++], sizeof(st->app.hosts[0]), "%s:%d", allow[i], port);
        st->app.n_hosts = nh;
        /* one cookie per server (by port), scoped to a random path of this start */
        snprintf(st->app.cookie_name, sizeof(st->app.cookie_name), "blockflow_%d", port);
        char nonce[17];
        srv_random_hex(nonce, sizeof(nonce));
        snprintf(st->app.prefix, sizeof(st->app.prefix), "/s/%s", nonce);
        uv_signal_init(&st->loop, &st->sigint);
        uv_signal_init(&st->loop, &st->sigterm);
        st->sigint.data = st->sigterm.data = st;
        uv_signal_start(&st->sigint, on_signal, SIGINT);
        uv_signal_start(&st->sigterm, on_signal, SIGTERM);
        char url[512];
        snprintf(url, sizeof(url), v6 && !is_loopback(iface) ? "http://[%s]:%d%s/?token=%s"
                                                             : "http://%s:%d%s/?token=%s",
                 shown, port, st->app.prefix, st->app.token);
        printf("blockflow serve: pages in %s\n", st->app.store.dir);
        if (st->app.store.swept)
            printf("blockflow serve: removed %u temporary files left by a stopped server\n",
                   st->app.store.swept);
        if (st->app.have_web) printf("blockflow serve: editor from %s\n", st->app.web_dir);
        if (classroom) {
            char class_url[512];
            snprintf(class_url, sizeof(class_url), "%.*s%s", (int)(strstr(url, "?token=") -
                     url), url, "");
            printf("blockflow serve: listening on port %d; classroom\n"
                   "  teacher (edits the pages, sees the roster), open\n    %s\n"
                   "  students (each joins with a name, works on a copy), open\n    %s?token=%s\n",
                   port, url, class_url, st->app.class_token);
        } else {
            printf("blockflow serve: listening on port %d; open\n    %s\n", port, url);
        }
        fflush(stdout);
        if (open_url) open_browser(url);
    }
    uv_run(&st->loop, UV_RUN_DEFAULT);
    srv_http_free(st->http);
    uv_run(&st->loop, UV_RUN_DEFAULT); /* whatever lws still closes */
    srv_web_close(&st->app);
    srv_app_free(&st->app);
    if (uv_loop_close(&st->loop) != 0) fprintf(stderr, "blockflow serve: handles left open\n");
    free(st);
    if (!rc) fprintf(stderr, "blockflow serve: stopped\n");
    return rc;
}
