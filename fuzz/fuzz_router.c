/*
 * fuzz_router.c - libFuzzer target for the server's request router and JSON bodies
 * (apps/server/router.c, runs.c, store.c, static.c): everything `blockflow serve` does with a request
 * after libwebsockets has framed it.
 *
 * Input: a request as text.
 *     METHOD PATH[?QUERY]\n
 *     Header: value\n        (Host, Origin, Authorization, Cookie, X-Blockflow-Client; optional)
 *     \n
 *     BODY
 * Unless the input gives them, Host is the server's and the token is right, so the fuzzer
 * spends its time past the security checks too. The app is one for the whole process, on a
 * temporary pages folder holding a small page; runs are waited for after each input (with
 * tight limits, so a page cannot ask for minutes of work).
 */
#include "server.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static srv_app app;
static uv_loop_t loop;
static char dir[] = "/tmp/bf-fuzz-router-XXXXXX";
static unsigned iterations;

static const char teach[] =
    "{\"format\": \"blockflow.page\", \"version\": 1, \"name\": \"teach\", \"blocks\": ["
    "{\"id\": \"x\", \"type\": \"RandomUniform\", \"attrs\": {\"shape\": [1, 6, 6, 1]}},"
    "{\"id\": \"w\", \"type\": \"RandomNormal\", \"attrs\": {\"shape\": [3, 3, 1, 2]}},"
    "{\"id\": \"y\", \"type\": \"Conv2D\", \"inputs\": {\"input\": \"x\", \"filter\": \"w\"},"
    " \"attrs\": {\"strides\": [1, 1, 1, 1], \"padding\": \"SAME\"}}], \"outputs\": [\"y\"]}";

static void reset_pages(void) {
    while (app.pages) srv_page_close(&app, app.pages);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d) closedir(d);
    srv_store_write(&app.store, "teach", teach, sizeof(teach) - 1, false);
}

static bool client_known(void *user, const char *client) {
    (void)user;
    return !strcmp(client, "fuzzclient");
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (!mkdtemp(dir)) abort();
    uv_loop_init(&loop);
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_session_bytes = 64 << 20;
    cfg.max_tensor_elements = 1 << 16;
    cfg.max_page_bytes = 1 << 20;
    cfg.threads = 1;
    srv_limits lim;
    srv_limits_init(&lim);
    lim.max_body = 1 << 16;
    lim.max_upload = 1 << 16;
    lim.run_timeout_s = 2;
    lim.workers = 1;
    lim.max_values = 1000;
    char why[256];
    if (srv_app_init(&app, &loop, dir, &cfg, &lim, why, sizeof(why))) {
        fprintf(stderr, "fuzz_router: %s\n", why);
        abort();
    }
    snprintf(app.token, sizeof(app.token), "fuzz-token");
    /* a classroom, so the roles are fuzzed too: "Bearer fuzz-class" may only join */
    app.classroom = true;
    snprintf(app.class_token, sizeof(app.class_token), "fuzz-class");
    snprintf(app.cookie_name, sizeof(app.cookie_name), "blockflow_8470");
    app.client_known = client_known; /* "X-Blockflow-Client: fuzzclient" is a connected one */
    snprintf(app.hosts[0], sizeof(app.hosts[0]), "127.0.0.1:8470");
    app.n_hosts = 1;
    reset_pages();
    return 0;
}

/* The next line of [*p, end) into a NUL-terminated copy (at most size-1 bytes). */
static bool next_line(const char **p, const char *end, char *buf, size_t size) {
    if (*p >= end) return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = (size_t)((nl ? nl : end) - *p);
    size_t k = n < size - 1 ? n : size - 1;
    memcpy(buf, *p, k);
    buf[k] = '\0';
    for (size_t i = 0; i < k; i++)
        if (!buf[i]) buf[i] = ' '; /* header values are C strings */
    *p = nl ? nl + 1 : end;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    char line[2048], method[16] = "GET", path[2048] = "/", *query = "";
    char host[256] = "127.0.0.1:8470", origin[256], auth[256] = "Bearer fuzz-token",
         cookie[256], client[128];
    bool has_origin = false, has_cookie = false, has_client = false;
    if (next_line(&p, end, line, sizeof(line))) {
        char *sp = strchr(line, ' ');
        if (sp) {
            *sp = '\0';
            snprintf(method, sizeof(method), "%s", line);
            snprintf(path, sizeof(path), "%s", sp + 1);
        } else snprintf(path, sizeof(path), "%s", line);
        char *q = strchr(path, '?');
        if (q) *q = '\0', query = q + 1;
    }
    while (next_line(&p, end, line, sizeof(line)) && line[0]) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = '\0';
        const char *v = colon + 1 + (colon[1] == ' ');
        if (!strcasecmp(line, "host")) snprintf(host, sizeof(host), "%s", v);
        else if (!strcasecmp(line, "origin")) snprintf(origin, sizeof(origin), "%s", v), has_origin = true;
        else if (!strcasecmp(line, "authorization")) snprintf(auth, sizeof(auth), "%s", v);
        else if (!strcasecmp(line, "cookie")) snprintf(cookie, sizeof(cookie), "%s", v), has_cookie = true;
        else if (!strcasecmp(line, "x-blockflow-client"))
            snprintf(client, sizeof(client), "%s", v), has_client = true;
    }
    /* the body: its own copy, so ASan sees reads past its end */
    size_t blen = (size_t)(end - p);
    char *body = malloc(blen + 1);
    memcpy(body, p, blen);
    body[blen] = '\0';
    srv_request req = {.method = method, .path = path, .query = query, .host = host,
                       .origin = has_origin ? origin : NULL, .authorization = auth,
                       .cookie = has_cookie ? cookie : NULL, .client = has_client ? client : NULL,
                       .body = body, .body_len = blen};
    srv_response res;
    srv_route(&app, &req, &res);
    if (res.status < 200 || res.status > 599 || (res.body_len && !res.body)) abort();
    srv_response_free(&res);
    free(body);
    while (app.n_active) uv_run(&loop, UV_RUN_ONCE); /* finish the run it started */
    uv_run(&loop, UV_RUN_NOWAIT);
    if (++iterations % 2000 == 0) reset_pages();
    return 0;
}
