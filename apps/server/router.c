/*
 * router.c - one HTTP request in, one answer out: the whole API of `blockflow serve`.
 *
 * srv_route() sees no sockets and no libwebsockets types, so the API tests, the unit tests and
 * the libFuzzer target (fuzz/fuzz_router.c) all drive this same function. Order of checks, so
 * that nothing is done for a request that fails one:
 *   1. Host must name the listening address (DNS rebinding), 403 otherwise;
 *   2. an Origin, when sent, must be the server's own (cross-site requests), 403 otherwise;
 *   3. everything but the editor's files needs a token (Authorization: Bearer, or the cookie
 *      "/?token=" sets), 401; the token says who asks (srv_identify: the teacher, a student, or
 *      the class token that may only join); X-Blockflow-Client must be a connected socket's;
 *   4. the body must be within --max-body and the JSON within max_json_depth, NUL-free (413,
 *      400);
 *   5. the API is a table (routes[]): the pattern (404) and the method (405), page names
 *      (400), the roles (403), then the preamble its flags ask for (a student's copy made
 *      before a write; the page open and idle), then the handler.
 * Errors are {"error": bf_error_json's object} (reply.c), with a fitting status.
 */
#include "server.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* ---- small helpers ------------------------------------------------------------------------- */

bool srv_secret_eq(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned char d = (unsigned char)(na != nb);
    for (size_t i = 0; i < nb; i++) d |= (unsigned char)(a[i < na ? i : 0] ^ b[i]);
    return d == 0 && na == nb;
}

long srv_base64_decode(const char *in, size_t n, unsigned char *out, size_t cap) {
    unsigned acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '+' || c == '-') v = 62;
        else if (c == '/' || c == '_') v = 63;
        else if (c == '=') break;
        else if (c == '\n' || c == '\r' || c == ' ') continue;
        else return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap) return -1;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return (long)o;
}

/* The value of query parameter `key` into buf; false when absent. */
static bool query_get(const char *q, const char *key, char *buf, size_t size) {
    size_t kl = strlen(key);
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t n = amp ? (size_t)(amp - q) : strlen(q);
        if (n > kl && !strncmp(q, key, kl) && q[kl] == '=') {
            size_t vl = n - kl - 1;
            if (vl >= size) vl = size - 1;
            memcpy(buf, q + kl + 1, vl);
            buf[vl] = '\0';
            return true;
        }
        if (n == kl && !strncmp(q, key, kl)) {
            buf[0] = '\0';
            return true;
        }
        q = amp ? amp + 1 : NULL;
    }
    return false;
}

void srv_random_hex(char *out, size_t n) {
    unsigned char b[64];
    size_t k = (n - 1) / 2 < sizeof(b) ? (n - 1) / 2 : sizeof(b);
    if (uv_random(NULL, NULL, b, k, 0, NULL) != 0) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(b, 1, k, f) != k) abort(); /* no entropy: never serve */
        fclose(f);
    }
    for (size_t i = 0; i < k; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
    out[2 * k] = '\0';
}

const char *srv_route_strip(const srv_app *app, const char *path) {
    size_t n = strlen(app->prefix);
    if (path && n && !strncmp(path, app->prefix, n) && path[n] == '/') return path + n;
    return path;
}

bool srv_route_is_open(const srv_app *app, const char *path) {
    path = srv_route_strip(app, path);
    return path && (!strcmp(path, "/") || !strcmp(path, "/index.html") ||
                    !strncmp(path, "/assets/", 8));
}

/* The token from "Authorization: Bearer T" or this server's cookie (app->cookie_name=T). */
static bool request_token(const srv_app *app, const srv_request *req, char *buf, size_t size) {
    const char *a = req->authorization;
    if (a && !strncasecmp(a, "Bearer ", 7)) {
        a += 7;
        while (*a == ' ') a++;
        snprintf(buf, size, "%s", a);
        return true;
    }
    size_t cn = strlen(app->cookie_name);
    for (const char *c = req->cookie; cn && c && *c;) {
        while (*c == ' ' || *c == ';') c++;
        if (!strncmp(c, app->cookie_name, cn) && c[cn] == '=') {
            c += cn + 1;
            size_t n = strcspn(c, "; ");
            if (n >= size) n = size - 1;
            memcpy(buf, c, n);
            buf[n] = '\0';
            return true;
        }
        c = strchr(c, ';');
    }
    return false;
}

static bool host_ok(const srv_app *app, const char *host) {
    if (!host) return false;
    for (int i = 0; i < app->n_hosts; i++)
        if (!strcasecmp(host, app->hosts[i])) return true;
    return false;
}

static bool origin_ok(const srv_app *app, const char *origin) {
    if (strncasecmp(origin, "http://", 7)) return false;
    return host_ok(app, origin + 7);
}

/* Parse a JSON body (limits first). NULL with res filled on failure. */
static cJSON *parse_body(srv_app *app, const srv_request *req, srv_response *res) {
    int limit = bf_context_config(app->ctx)->max_json_depth;
    if (req->body_len == 0) {
        srv_error(res, 400, "bad_request", "this request needs a JSON body");
        return NULL;
    }
    bf_error jc = {0};
    if (bf_json_check(req->body, req->body_len, limit, &jc)) {
        srv_error_bf(res, 400, &jc);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(req->body, req->body_len, &end, 0);
    if (!j) {
        size_t at = end && end >= req->body ? (size_t)(end - req->body) : 0;
        srv_error(res, 400, "bad_json", "the body is not valid JSON (near byte %zu)", at);
        return NULL;
    }
    return j;
}

static char *print(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* ---- pages --------------------------------------------------------------------------------- */

static void store_error(srv_response *res, int rc, const char *name) {
    if (rc == -ENOENT) srv_error(res, 404, "not_found", "no page named \"%s\"", name);
    else if (rc == -EEXIST) srv_error(res, 409, "exists", "a page named \"%s\" exists", name);
    else if (rc == -EFBIG)
        srv_error(res, 413, "limit", "page \"%s\" is larger than max_page_bytes", name);
    else if (rc == -ELOOP || rc == -EINVAL)
        srv_error(res, 403, "forbidden", "\"%s\" is not a regular file in the pages folder",
                  name);
    else srv_error(res, 500, "io_error", "page \"%s\": %s", name, strerror(-rc));
}

static void get_page(srv_app *app, srv_store *st, const char *name, const srv_request *req,
                     srv_response *res) {
    char *text;
    size_t len;
    int rc = srv_store_read(st, name, &text, &len);
    if (rc) {
        store_error(res, rc, name);
        return;
    }
    char rev[17];
    srv_revision(text, len, rev);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "revision", rev);
    cJSON_AddStringToObject(o, "space", st->label); /* "" the teacher's, else a student's copy */
    srv_page *p = srv_page_find(app, st, name);
    cJSON_AddBoolToObject(o, "open", p != NULL);
    /* ?view=session: also the page as the open session holds it (edits not yet saved) */
    char view[16];
    char *held = NULL;
    if (p && query_get(req->query, "view", view, sizeof(view)) && !strcmp(view, "session") &&
        bf_page_to_json(bf_session_page(srv_page_session(p)), &held, NULL) == BF_OK) {
        cJSON *sp = cJSON_Parse(held);
        if (sp) cJSON_AddItemToObject(o, "session_page", sp);
    }
    bf_string_free(held);
    int limit = bf_context_config(app->ctx)->max_json_depth;
    cJSON *page = bf_json_check(text, len, limit, NULL) == BF_OK
                      ? cJSON_ParseWithLengthOpts(text, len, NULL, 0)
                      : NULL;
    if (page) cJSON_AddItemToObject(o, "page", page);
    else {
        cJSON_AddNullToObject(o, "page");
        cJSON_AddStringToObject(o, "text", text); /* not JSON: the editor shows the text */
    }
    free(text);
    srv_json(res, 200, print(o));
}

/* The current revision of `name` into rev, or "" when there is no such page. */
static int current_revision(srv_app *app, srv_store *st, const char *name, char rev[17]) {
    char *text;
    size_t len;
    rev[0] = '\0';
    int rc = srv_store_read(st, name, &text, &len);
    if (rc == 0) {
        srv_revision(text, len, rev);
        free(text);
    }
    return rc;
}

static void stale(srv_response *res, const char *name, const char *current) {
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "code", "stale_revision");
    cJSON_AddStringToObject(e, "message", current[0]
                                              ? "the page changed since that revision was read"
                                              : "the page no longer exists");
    cJSON_AddStringToObject(o, "name", name);
    if (current[0]) cJSON_AddStringToObject(o, "revision", current);
    else cJSON_AddNullToObject(o, "revision");
    srv_json(res, 409, print(o));
}

static bool page_busy(srv_app *app, srv_store *st, const char *name, srv_response *res) {
    srv_page *p = srv_page_find(app, st, name);
    if (p && srv_page_busy(p)) {
        srv_error(res, 409, "busy", "page \"%s\" is running; wait for run_finished or cancel it",
                  name);
        return true;
    }
    return false;
}

/*
 * The canonical text of a page (bf_page_to_json), or NULL with res filled with every problem.
 * Parsed as an editor saves: wiring problems are allowed (BF_LOAD_INCOMPLETE; the check reports
 * them). The .npy files are read, not skipped (BF_LOAD_SKIP_FILES would keep their names
 * unchecked), so a page that names a file outside the pages folder is never written.
 */
static char *canonical_page(srv_app *app, const char *name, const char *text, size_t len,
                            srv_response *res) {
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    bf_page *page = NULL;
    char fname[128], *out = NULL, dir[sizeof(app->store.dir) + 128];
    snprintf(fname, sizeof(fname), "%.100s.json", name);
    srv_store_page_dir(&app->store, name, dir, sizeof(dir)); /* files beside the page */
    bf_status st = d ? bf_page_parse(app->ctx, text, len, fname, dir, BF_LOAD_INCOMPLETE, &page,
                                     d, &e)
                     : BF_ENOMEM;
    if (st == BF_OK) st = bf_page_to_json(page, &out, &e);
    bf_page_free(page);
    if (st) srv_problems(res, 0, &e, d);
    bf_diags_free(d);
    return out;
}

/* Whether the open session's page is exactly `text` (canonical). */
static bool session_holds(srv_page *p, const char *text) {
    char *cur = NULL;
    bool same = bf_page_to_json(bf_session_page(srv_page_session(p)), &cur, NULL) == BF_OK &&
                !strcmp(cur, text);
    bf_string_free(cur);
    return same;
}

static void put_page(srv_app *app, srv_store *st, const char *name, const srv_request *req,
                     srv_response *res) {
    cJSON *body = parse_body(app, req, res);
    if (!body) return;
    cJSON *page = cJSON_GetObjectItemCaseSensitive(body, "page");
    cJSON *rev = cJSON_GetObjectItemCaseSensitive(body, "revision");
    if (!cJSON_IsObject(page) || (rev && !cJSON_IsString(rev) && !cJSON_IsNull(rev))) {
        srv_error(res, 400, "bad_request",
                  "PUT takes {\"page\": {...}, \"revision\": \"...\" or null for a new page}");
        cJSON_Delete(body);
        return;
    }
    char cur[17];
    int rc = current_revision(app, st, name, cur);
    if (rc && rc != -ENOENT) {
        store_error(res, rc, name);
        cJSON_Delete(body);
        return;
    }
    const char *want = cJSON_IsString(rev) ? rev->valuestring : "";
    if (strcmp(want, cur)) { /* a stale revision, or creating over an existing page */
        stale(res, name, cur);
        cJSON_Delete(body);
        return;
    }
    if (page_busy(app, st, name, res)) {
        cJSON_Delete(body);
        return;
    }
    char *given = cJSON_PrintUnformatted(page);
    cJSON_Delete(body);
    if (!given) {
        srv_error(res, 500, "out_of_memory", "out of memory");
        return;
    }
    char *text = canonical_page(app, name, given, strlen(given), res);
    free(given);
    if (!text) return;
    size_t len = strlen(text);
    rc = srv_store_write(st, name, text, len, cur[0] == '\0');
    char rev_new[17];
    srv_revision(text, len, rev_new);
    /* an open session that holds exactly this page stays open (its results stay cached);
       one that differs (another client saved other text) is closed, and reopens on use */
    srv_page *p = srv_page_find(app, st, name);
    if (rc == 0 && p && !session_holds(p, text)) srv_page_close(app, p);
    bf_string_free(text);
    if (rc == -EEXIST) { /* created by someone else meanwhile */
        current_revision(app, st, name, cur);
        stale(res, name, cur);
        return;
    }
    if (rc) {
        store_error(res, rc, name);
        return;
    }
    srv_file_event(app, st, name, rev_new, req->client);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "revision", rev_new);
    cJSON_AddBoolToObject(o, "open", srv_page_find(app, st, name) != NULL);
    srv_json(res, cur[0] ? 200 : 201, print(o));
}

static void delete_page(srv_app *app, srv_store *st, const char *name, const srv_request *req,
                        srv_response *res) {
    char want[64], cur[17];
    int rc = current_revision(app, st, name, cur);
    if (rc) {
        store_error(res, rc, name);
        return;
    }
    if (query_get(req->query, "revision", want, sizeof(want)) && strcmp(want, cur)) {
        stale(res, name, cur);
        return;
    }
    if (page_busy(app, st, name, res)) return;
    if ((rc = srv_store_delete(st, name))) {
        store_error(res, rc, name);
        return;
    }
    srv_page *p = srv_page_find(app, st, name);
    if (p) srv_page_close(app, p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "deleted", name);
    srv_json(res, 200, print(o));
}

/* rename and duplicate: {"to": "new-name"} */
static void copy_page(srv_app *app, srv_store *st, const char *name, bool move,
                      const srv_request *req, srv_response *res) {
    cJSON *body = parse_body(app, req, res);
    if (!body) return;
    cJSON *to = cJSON_GetObjectItemCaseSensitive(body, "to");
    char dst[128];
    if (!cJSON_IsString(to) || !srv_page_name_ok(to->valuestring)) {
        srv_error(res, 400, "bad_name",
                  "\"to\" must be a page name: letters, digits, '.', '_' and '-', not starting "
                  "with '.', at most 100 characters, maybe in subfolders (\"teach/conv\")");
        cJSON_Delete(body);
        return;
    }
    snprintf(dst, sizeof(dst), "%s", to->valuestring);
    cJSON_Delete(body);
    int rc;
    if (move) {
        if (page_busy(app, st, name, res)) return;
        rc = srv_store_rename(st, name, dst);
    } else {
        char *text;
        size_t len;
        rc = srv_store_read(st, name, &text, &len);
        if (rc == 0) {
            rc = srv_store_write(st, dst, text, len, true);
            free(text);
        }
    }
    if (rc) {
        store_error(res, rc, rc == -EEXIST ? dst : name);
        return;
    }
    srv_page *p = move ? srv_page_find(app, st, name) : NULL;
    if (p) srv_page_rename(p, dst);
    char rev[17];
    current_revision(app, st, dst, rev);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", dst);
    cJSON_AddStringToObject(o, "revision", rev);
    srv_json(res, move ? 200 : 201, print(o));
}

/* ---- check --------------------------------------------------------------------------------- */

/*
 * The check answer: bf_session_check_json (every problem, every port's dtype, shape and label).
 * When there is no session (the page did not parse), the problems of the parse and no blocks.
 */
static char *check_json(bf_session *s, bf_status st, const bf_diags *d, const bf_error *e) {
    char *text = NULL;
    if (s) {
        bf_error ce = {0};
        if (bf_session_check_json(s, &text, &ce)) return NULL;
        char *copy = strdup(text); /* answers are freed with free() */
        bf_string_free(text);
        return copy;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", st == BF_OK);
    cJSON_AddItemToObject(o, "problems", srv_problems_json(d, e));
    cJSON_AddObjectToObject(o, "blocks");
    return print(o);
}

/* POST /api/pages/{name}/check: the body is a page; nothing is written, nothing runs. */
static void check_page(srv_app *app, const char *name, const srv_request *req,
                       srv_response *res) {
    int limit = bf_context_config(app->ctx)->max_json_depth;
    if (req->body_len == 0) {
        srv_error(res, 400, "bad_request", "check takes the page to check as its body");
        return;
    }
    bf_error jc = {0};
    if (bf_json_check(req->body, req->body_len, limit, &jc)) {
        srv_error_bf(res, 400, &jc);
        return;
    }
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    bf_page *page = NULL;
    bf_session *s = NULL;
    char fname[128], dir[sizeof(app->store.dir) + 128];
    snprintf(fname, sizeof(fname), "%.100s.json", name);
    srv_store_page_dir(&app->store, name, dir, sizeof(dir));
    bf_status st = d ? bf_page_parse(app->ctx, req->body, req->body_len, fname, dir,
                                     BF_LOAD_INCOMPLETE, &page, d, &e)
                     : BF_ENOMEM;
    if (st == BF_OK) st = bf_session_new(app->ctx, page, &s, &e);
    if (st == BF_ENOMEM) srv_error(res, 500, "out_of_memory", "out of memory");
    else srv_json(res, 200, check_json(s, st, d, &e));
    bf_session_free(s);
    bf_diags_free(d);
}

/* ---- edits -------------------------------------------------------------------------------- */

/* Whether a batch only moves blocks or sets their look (set_ui): the session's results stay
 * what they were, so the last run's tensors stay readable (a drag does not lose a heatmap). */
static bool only_ui(const cJSON *edits) {
    const cJSON *e;
    cJSON_ArrayForEach(e, edits) {
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "op");
        if (!cJSON_IsString(op) || strcmp(op->valuestring, "set_ui")) return false;
    }
    return true;
}

static void edit_page(srv_app *app, srv_page *p, const char *client, const srv_request *req,
                      srv_response *res) {
    cJSON *body = parse_body(app, req, res);
    if (!body) return;
    cJSON *edits = cJSON_IsArray(body) ? body : cJSON_GetObjectItemCaseSensitive(body, "edits");
    if (!cJSON_IsArray(edits)) {
        srv_error(res, 400, "bad_request", "edits takes a JSON array of edits");
        cJSON_Delete(body);
        return;
    }
    /* all or nothing: the library tries a batch on a copy of the page first */
    char *text = edits == body ? NULL : cJSON_PrintUnformatted(edits);
    const char *etext = text ? text : req->body;
    size_t elen = text ? strlen(text) : req->body_len;
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    bf_session *s = srv_page_session(p);
    bool ui = only_ui(edits);
    if (!ui) srv_page_changing(p, client); /* another client's results stay theirs to read */
    bf_status bst = d && (text || edits == body) ? bf_session_apply_edits(s, etext, elen, d, &e)
                                                 : BF_ENOMEM;
    if (bst == BF_OK) { /* every socket viewing this page sees the edit, with its new revision */
        if (!ui) srv_page_changed(p);
        srv_page_event(app, p, "page_edited", etext, elen, client);
    }
    free(text);
    cJSON_Delete(body);
    if (bst) {
        if (bst == BF_ENOMEM) srv_error(res, 500, "out_of_memory", "out of memory");
        else srv_problems(res, 422, &e, d);
        bf_diags_free(d);
        return;
    }
    srv_json(res, 200, check_json(s, BF_OK, d, &e));
    bf_diags_free(d);
}

/* ---- runs ---------------------------------------------------------------------------------- */

static bf_status feed_error(bf_error *e, bf_status st, const char *code, const char *id,
                            const char *why) {
    bf_error_clear(e);
    e->status = st;
    snprintf(e->code, sizeof(e->code), "%s", code);
    snprintf(e->block_id, sizeof(e->block_id), "%.63s", id);
    snprintf(e->message, sizeof(e->message), "%s", why);
    return st;
}

/* Feed `len` bytes of a .npy to block `id`: the library's own strict reader parses them. */
static bf_status feed_bytes(srv_app *app, bf_session *s, const char *id, const void *buf,
                            size_t len, bf_error *e) {
    char name[96];
    snprintf(name, sizeof(name), "feed %.63s", id); /* the feed is named by its block */
    bf_tensor *t = NULL;
    bf_status st = bf_tensor_load_npy_mem(app->ctx, buf, len, name, &t, e);
    if (st == BF_OK) st = bf_session_feed(s, id, t, e);
    bf_tensor_free(t);
    if (st && !e->block_id[0]) snprintf(e->block_id, sizeof(e->block_id), "%.63s", id);
    return st;
}

/*
 * Feed one block: `f` is a base64 .npy, or {"file": "data/x.npy"}, a .npy file of the pages
 * folder (as GET /api/files lists them: a subfolder's files named with it), read through the
 * store (no link followed, nothing outside the folder). Both count against --max-upload.
 */
static bf_status feed_one(srv_app *app, bf_session *s, const cJSON *f, size_t *budget,
                          bf_error *e) {
    const char *id = f->string;
    char why[200];
    if (cJSON_IsObject(f)) {
        const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
        if (!cJSON_IsString(file) || cJSON_GetArraySize(f) != 1)
            return feed_error(e, BF_EINVAL, "bad_feed", id,
                              "a feed is a base64 .npy or {\"file\": \"a .npy of the pages "
                              "folder\"}");
        char *data = NULL;
        size_t len = 0;
        int rc = srv_store_read_file(&app->store, file->valuestring, ".npy", *budget, &data,
                                     &len);
        if (rc) {
            snprintf(why, sizeof(why), "\"%.100s\": %s", file->valuestring,
                     rc == -EFBIG ? "larger than the feeds of a run may be (--max-upload)"
                     : rc == -ENOENT ? "no such .npy file in the pages folder"
                     : rc == -EINVAL || rc == -ELOOP
                         ? "not a .npy file of the pages folder (a name like data/x.npy; no "
                           "links, no '..')"
                         : strerror(-rc));
            return feed_error(e, rc == -EFBIG ? BF_ELIMIT : BF_EINVAL,
                              rc == -EFBIG ? "limit" : "bad_feed", id, why);
        }
        *budget -= len;
        bf_status st = feed_bytes(app, s, id, data, len, e);
        free(data);
        return st;
    }
    if (!cJSON_IsString(f))
        return feed_error(e, BF_EINVAL, "bad_feed", id,
                          "a feed is a base64 .npy string or {\"file\": \"data/x.npy\"}");
    const char *b64 = f->valuestring;
    size_t n = strlen(b64), cap = n / 4 * 3 + 3;
    if (cap > *budget) {
        snprintf(why, sizeof(why), "the feeds of this run exceed %zu bytes (--max-upload)",
                 app->lim.max_upload);
        return feed_error(e, BF_ELIMIT, "limit", id, why);
    }
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) return BF_ENOMEM;
    long got = srv_base64_decode(b64, n, buf, cap);
    if (got < 0) {
        free(buf);
        return feed_error(e, BF_EINVAL, "bad_feed", id, "the feed is not base64");
    }
    *budget -= (size_t)got;
    bf_status st = feed_bytes(app, s, id, buf, (size_t)got, e);
    free(buf);
    return st;
}

static void run_page(srv_app *app, srv_page *p, const char *client, const srv_request *req,
                     srv_response *res) {
    cJSON *body = NULL;
    if (req->body_len && !(body = parse_body(app, req, res))) return;
    if (body && !cJSON_IsObject(body)) {
        srv_error(res, 400, "bad_request", "run takes {\"fetch\": [...], \"feeds\": {...}, "
                  "\"device\": \"auto\"|\"cpu\"|\"gpu\"} (all optional)");
        cJSON_Delete(body);
        return;
    }
    cJSON *fetch = cJSON_GetObjectItemCaseSensitive(body, "fetch");
    cJSON *feeds = cJSON_GetObjectItemCaseSensitive(body, "feeds");
    cJSON *device = cJSON_GetObjectItemCaseSensitive(body, "device");
    bf_device_kind dev = BF_DEVICE_AUTO;
    if (device && !cJSON_IsNull(device)) {
        const char *dv = cJSON_IsString(device) ? device->valuestring : "";
        if (!strcmp(dv, "cpu")) dev = BF_DEVICE_CPU;
        else if (!strcmp(dv, "gpu")) dev = BF_DEVICE_GPU;
        else if (strcmp(dv, "auto")) {
            srv_error(res, 400, "bad_request", "\"device\" is \"auto\", \"cpu\" or \"gpu\"");
            cJSON_Delete(body);
            return;
        }
    }
    int nf = fetch ? cJSON_GetArraySize(fetch) : 0;
    if ((fetch && !cJSON_IsArray(fetch) && !cJSON_IsNull(fetch)) || nf > 256 ||
        (feeds && !cJSON_IsObject(feeds) && !cJSON_IsNull(feeds))) {
        srv_error(res, 400, "bad_request",
                  "\"fetch\" is a list of at most 256 \"block\" or \"block:port\" and \"feeds\" "
                  "an object of block id -> base64 .npy or {\"file\": \"x.npy\"}");
        cJSON_Delete(body);
        return;
    }
    if (!srv_app_room_for_run(app, p, res)) {
        cJSON_Delete(body);
        return;
    }
    const char *name = srv_page_name(p);
    size_t budget = app->lim.max_upload;
    const cJSON *f;
    cJSON_ArrayForEach(f, feeds) {
        bf_error e = {0};
        if (!cJSON_IsString(f) && !cJSON_IsObject(f)) {
            srv_error(res, 400, "bad_feed", "feed \"%s\" must be a base64 string or "
                      "{\"file\": \"a .npy of the pages folder\"}", f->string);
            cJSON_Delete(body);
            return;
        }
        srv_page_changing(p, client);
        bf_status fst = feed_one(app, srv_page_session(p), f, &budget, &e);
        if (fst) {
            srv_error_bf(res, fst == BF_ELIMIT ? 413 : fst == BF_ENOMEM ? 500 : 422, &e);
            cJSON_Delete(body);
            return;
        }
        srv_page_changed(p);
    }
    char **fetches = nf ? calloc((size_t)nf, sizeof(char *)) : NULL;
    if (nf && !fetches) {
        srv_error(res, 500, "out_of_memory", "out of memory");
        cJSON_Delete(body);
        return;
    }
    for (int i = 0; i < nf; i++) {
        cJSON *it = cJSON_GetArrayItem(fetch, i);
        if (!cJSON_IsString(it) || !(fetches[i] = strdup(it->valuestring))) {
            for (int k = 0; k < i; k++) free(fetches[k]);
            free(fetches);
            srv_error(res, 400, "bad_request", "\"fetch\" items are strings");
            cJSON_Delete(body);
            return;
        }
    }
    cJSON_Delete(body);
    srv_run *r = srv_run_start(app, p, client, fetches, nf, dev, res);
    if (!r) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_id", srv_run_id(r));
    cJSON_AddStringToObject(o, "page", name);
    srv_json(res, 202, print(o));
}

/* ---- tensors ------------------------------------------------------------------------------- */

static void tensor_summary(const bf_tensor *t, cJSON *o) {
    bf_tensor_stats st;
    bf_tensor_stats_of(t, &st); /* the library's one summary, as the CLI prints it */
    if (st.finite) {
        cJSON_AddNumberToObject(o, "min", st.min);
        cJSON_AddNumberToObject(o, "max", st.max);
        cJSON_AddNumberToObject(o, "mean", st.mean);
        cJSON_AddNumberToObject(o, "std", st.std);
    } else {
        cJSON_AddNullToObject(o, "min");
        cJSON_AddNullToObject(o, "max");
        cJSON_AddNullToObject(o, "mean");
        cJSON_AddNullToObject(o, "std");
    }
    cJSON_AddNumberToObject(o, "nan", (double)st.nan);
    cJSON_AddNumberToObject(o, "inf", (double)st.inf);
}

/*
 * Parse slice "a:b,c,:,..." against dims: per dimension "start:stop" (either may be empty,
 * negatives count from the end, clamped as Python does), a single index "i", or ":". Missing
 * trailing dimensions are whole. Fills lo/hi; false on a malformed slice.
 */
static bool parse_slice(const char *s, int rank, const int64_t *dims, int64_t *lo, int64_t *hi) {
    for (int d = 0; d < rank; d++) lo[d] = 0, hi[d] = dims[d];
    if (!s || !*s) return true;
    int d = 0;
    while (*s) {
        if (d >= rank) return false;
        char part[64];
        size_t n = strcspn(s, ",");
        if (n >= sizeof(part)) return false;
        memcpy(part, s, n);
        part[n] = '\0';
        s += n + (s[n] == ',');
        char *colon = strchr(part, ':'), *end;
        if (!colon) {
            long long i = strtoll(part, &end, 10);
            if (end == part || *end) return false;
            if (i < 0) i += dims[d];
            if (i < 0 || i >= dims[d]) return false;
            lo[d] = i, hi[d] = i + 1;
        } else {
            *colon = '\0';
            long long a = 0, b = dims[d];
            if (part[0]) {
                a = strtoll(part, &end, 10);
                if (*end) return false;
            }
            if (colon[1]) {
                b = strtoll(colon + 1, &end, 10);
                if (*end) return false;
            }
            if (a < 0) a += dims[d];
            if (b < 0) b += dims[d];
            a = a < 0 ? 0 : a > dims[d] ? dims[d] : a;
            b = b < a ? a : b > dims[d] ? dims[d] : b;
            lo[d] = a, hi[d] = b;
        }
        d++;
    }
    return true;
}

static void tensor_values(srv_app *app, const bf_tensor *t, const char *slice, cJSON *o,
                          srv_response *res) {
    int rank = bf_tensor_rank(t);
    const int64_t *dims = bf_tensor_dims(t);
    int64_t lo[BF_MAX_RANK], hi[BF_MAX_RANK];
    if (!parse_slice(slice, rank, dims, lo, hi)) {
        srv_error(res, 400, "bad_slice",
                  "slice is one \"start:stop\" or index per dimension, comma-separated");
        return;
    }
    uint64_t count = 1;
    for (int d = 0; d < rank; d++) count *= (uint64_t)(hi[d] - lo[d]);
    if (count > app->lim.max_values) {
        srv_error(res, 413, "limit",
                  "the slice has %llu elements, more than %zu (--max-values); ask for a "
                  "smaller window or ?view=npy",
                  (unsigned long long)count, app->lim.max_values);
        return;
    }
    cJSON *start = cJSON_AddArrayToObject(o, "start"), *wshape = cJSON_AddArrayToObject(o, "window");
    for (int d = 0; d < rank; d++) {
        cJSON_AddItemToArray(start, cJSON_CreateNumber((double)lo[d]));
        cJSON_AddItemToArray(wshape, cJSON_CreateNumber((double)(hi[d] - lo[d])));
    }
    cJSON *vals = cJSON_AddArrayToObject(o, "values"); /* flat, row-major over the window */
    int64_t idx[BF_MAX_RANK];
    for (int d = 0; d < rank; d++) idx[d] = lo[d];
    for (uint64_t k = 0; k < count; k++) {
        int64_t flat = 0;
        for (int d = 0; d < rank; d++) flat = flat * dims[d] + idx[d];
        double v = bf_tensor_get_f64(t, flat);
        cJSON_AddItemToArray(vals, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
        for (int d = rank - 1; d >= 0; d--) {
            if (++idx[d] < hi[d]) break;
            idx[d] = lo[d];
        }
    }
    srv_json(res, 200, print(o));
}

/* The whole tensor as a .npy file (format 1.0; bfloat16 widened to float32 as the CLI does). */
static void tensor_npy(const bf_tensor *t, const char *name, srv_response *res) {
    bf_dtype dt = bf_tensor_dtype(t);
    const char *descr = dt == BF_DTYPE_F16 ? "<f2" : dt == BF_DTYPE_F64 ? "<f8"
                        : dt == BF_DTYPE_I32 ? "<i4" : dt == BF_DTYPE_I64 ? "<i8" : "<f4";
    size_t esize = dt == BF_DTYPE_BF16 ? 4 : bf_dtype_size(dt);
    int64_t n = bf_tensor_numel(t);
    char hdr[512];
    int hl = snprintf(hdr, sizeof(hdr), "{'descr': '%s', 'fortran_order': False, 'shape': (",
                      descr);
    for (int d = 0; d < bf_tensor_rank(t); d++)
        hl += snprintf(hdr + hl, sizeof(hdr) - (size_t)hl, "%lld,%s",
                       (long long)bf_tensor_dims(t)[d],
                       d + 1 < bf_tensor_rank(t) ? " " : "");
    if (bf_tensor_rank(t) > 1) hl--; /* "(3, 3,)" -> "(3, 3)" */
    hl += snprintf(hdr + hl, sizeof(hdr) - (size_t)hl, "), }");
    size_t total_hdr = 10 + (size_t)hl + 1;
    size_t pad = (64 - total_hdr % 64) % 64;
    size_t data = (size_t)n * esize, size = total_hdr + pad + data;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        srv_error(res, 500, "out_of_memory", "out of memory");
        return;
    }
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t hlen = (size_t)hl + pad + 1;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, hdr, (size_t)hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + hl + pad] = '\n';
    char *p = buf + total_hdr + pad;
    if (dt == BF_DTYPE_BF16)
        for (int64_t i = 0; i < n; i++) {
            float f = (float)bf_tensor_get_f64(t, i);
            memcpy(p + i * 4, &f, 4);
        }
    else memcpy(p, bf_tensor_cdata(t), data);
    free(res->body);
    res->status = 200;
    res->content_type = "application/octet-stream";
    res->body = buf;
    res->body_len = size;
    snprintf(res->disposition, sizeof(res->disposition), "attachment; filename=\"%.120s.npy\"", name);
}

static void get_tensor(srv_app *app, const char *run_id, const char *spec,
                       const srv_request *req, srv_response *res) {
    srv_run *r = srv_run_find(app, run_id);
    if (!r) {
        srv_error(res, 404, "not_found", "no run \"%s\" (finished runs are kept a while)",
                  run_id);
        return;
    }
    char block[128], port[64] = "";
    snprintf(block, sizeof(block), "%.127s", spec);
    char *colon = strchr(block, ':');
    if (colon) {
        *colon = '\0';
        snprintf(port, sizeof(port), "%s", colon + 1);
    }
    const char *why = NULL;
    const bf_tensor *t = srv_run_tensor(r, block, port, &why);
    if (!t) {
        if (!strcmp(why, "running"))
            srv_error(res, 409, "busy", "run %s has not finished", run_id);
        else if (!strcmp(why, "gone"))
            srv_error(res, 410, "gone", "the results of run %s were replaced by a later run or "
                      "edit, or the page was closed", run_id);
        else srv_error(res, 404, "not_found", "run %s has no tensor %s", run_id, spec);
        return;
    }
    char view[32] = "summary", slice[256] = "";
    query_get(req->query, "view", view, sizeof(view));
    query_get(req->query, "slice", slice, sizeof(slice));
    if (!strcmp(view, "npy")) {
        char fname[200];
        snprintf(fname, sizeof(fname), "%.100s%s%.60s", block, port[0] ? "." : "", port);
        tensor_npy(t, fname, res);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_id", run_id);
    cJSON_AddStringToObject(o, "tensor", spec);
    cJSON_AddStringToObject(o, "dtype", bf_dtype_name(bf_tensor_dtype(t)));
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < bf_tensor_rank(t); d++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)bf_tensor_dims(t)[d]));
    if (!strcmp(view, "summary")) {
        tensor_summary(t, o);
        srv_json(res, 200, print(o));
    } else if (!strcmp(view, "values")) {
        tensor_values(app, t, slice, o, res);
        if (res->status != 200) cJSON_Delete(o);
    } else {
        cJSON_Delete(o);
        srv_error(res, 400, "bad_request", "view is summary, values or npy");
    }
}

/* ---- the routes ---------------------------------------------------------------------------- */

static const char index_html[] =
    "<!doctype html><meta charset=utf-8><title>blockflow</title>\n"
    "<h1>blockflow serve</h1>\n"
    "<p>The browser editor is not built. From the repository, run <code>make editor</code>\n"
    "(or <code>make serve</code>, which builds it and starts this server), then reload.\n"
    "Meanwhile the JSON API answers under <code>/api/</code> and run events stream on\n"
    "<code>/ws</code>; see the README's \"Serve\" section.</p>\n"
    "<p>If you opened this page without <code>?token=...</code>, use the URL that\n"
    "<code>blockflow serve</code> printed: API calls need the token.</p>\n";

/* teach_routes.c: explain, gradcheck and grad on open pages; false when `act` is none of them. */
bool srv_teach_route(srv_app *app, srv_store *st, const char *act, const char *name,
                     const char *client, const srv_request *req, srv_response *res);

/* POST /api/pages/{name}/update-copy (a student): the copy becomes the teacher's page now. */
static void update_copy(srv_app *app, const srv_who *who, const char *name, srv_response *res) {
    srv_store *mine = srv_student_store(who->student);
    srv_page *p = srv_page_find(app, mine, name);
    if (p && srv_page_busy(p)) {
        srv_error(res, 409, "busy", "page \"%s\" is running; wait for run_finished or cancel it",
                  name);
        return;
    }
    int rc = srv_class_update_copy(app, who->student, name);
    if (rc) {
        store_error(res, rc, name);
        return;
    }
    if (p) srv_page_close(app, p); /* reopens from the new copy on use */
    char rev[17];
    current_revision(app, mine, name, rev);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "revision", rev);
    cJSON_AddStringToObject(o, "space", mine->label);
    srv_json(res, 200, print(o));
}

/* Split path into at most 6 segments (no empty ones, at most 200 bytes each). */
enum { MAX_SEGS = 10 }; /* class/students/S/pages/ and a page 4 segments deep, with room */

static int split_path(const char *path, char seg[MAX_SEGS][208]) {
    int n = 0;
    if (!path || path[0] != '/') return -1;
    const char *p = path + 1;
    while (*p) {
        size_t len = strcspn(p, "/");
        if (len == 0 || len >= 200 || n == MAX_SEGS) return -1;
        memcpy(seg[n], p, len);
        seg[n][len] = '\0';
        n++;
        p += len;
        if (*p == '/') p++;
    }
    return n;
}

/* ---- the API as a table ------------------------------------------------------------------- */

/* What one matched request carries to its handler. */
typedef struct route_ctx {
    srv_app *app;
    const srv_request *req;
    const srv_who *who;
    const char *client; /* a connected socket's id, or "" */
    srv_store *st;      /* whose pages: the teacher's, or the student's copies */
    const char *name;   /* {name}: a page, maybe in subfolders (checked with srv_page_name_ok) */
    const char *id;     /* {id}: a run */
    const char *arg;    /* {spec} of a tensor, {student}, or the last segment ({act}) */
    srv_page *page;     /* NEEDS_PAGE: the open page, idle */
} route_ctx;

typedef void (*route_fn)(route_ctx *c, srv_response *res);

enum { /* who may: role bits */
    R_TEACHER = 1 << SRV_TEACHER,
    R_STUDENT = 1 << SRV_STUDENT,
    R_JOINING = 1 << SRV_JOINING,
    R_MEMBER = R_TEACHER | R_STUDENT,
    R_ANYONE = R_TEACHER | R_STUDENT | R_JOINING,
};
enum { /* flags */
    NEEDS_PAGE = 1,     /* the page opened (and not busy) before the handler: the preamble */
    WRITES_PAGE = 2,    /* a student's request makes their copy first */
    CLASSROOM = 4,      /* only with --classroom */
};

typedef struct route {
    const char *method;
    const char *pattern; /* segments after /api/; {name} {id} {spec} {student} {act} capture */
    int roles;
    int flags;
    route_fn fn;
} route;

static void r_health(route_ctx *c, srv_response *res) {
    srv_app *app = c->app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", true);
    cJSON_AddStringToObject(o, "version", BF_VERSION_STRING);
    cJSON_AddStringToObject(o, "devices", bf_context_devices(app->ctx));
    cJSON_AddNumberToObject(o, "open_pages", app->n_pages);
    cJSON_AddNumberToObject(o, "active_runs", app->n_active);
    cJSON_AddNumberToObject(o, "ws_clients", app->ws_clients);
    cJSON_AddNumberToObject(o, "ws_dropped", (double)app->ws_dropped);
    cJSON_AddNumberToObject(o, "ws_queued", (double)app->ws_queued);
    cJSON_AddNumberToObject(o, "ws_queued_peak", (double)app->ws_queued_peak);
    cJSON_AddNumberToObject(o, "pages_evicted", (double)app->pages_evicted);
    cJSON_AddNumberToObject(o, "workers", app->n_threads);
    cJSON_AddNumberToObject(o, "connections", app->n_conns);
    cJSON_AddNumberToObject(o, "unauthenticated", app->n_unauth);
    cJSON_AddNumberToObject(o, "connections_refused", (double)app->conns_refused);
    cJSON_AddNumberToObject(o, "connections_timed_out", (double)app->conns_timed_out);
    srv_json(res, 200, print(o));
}

static void r_blocks(route_ctx *c, srv_response *res) {
    (void)c;
    char *text = NULL;
    bf_error e = {0};
    if (bf_block_catalog_json(NULL, &text, &e)) {
        srv_error_bf(res, 500, &e);
        return;
    }
    srv_json(res, 200, strdup(text));
    bf_string_free(text);
}

/* {"KEY": LIST} around a JSON array text (taken). */
static void list_answer(srv_response *res, const char *key, char *list, char *extra) {
    if (!list) {
        free(extra);
        srv_error(res, 500, "io_error", "cannot list the pages folder");
        return;
    }
    size_t len = strlen(list) + (extra ? strlen(extra) : 0) + 64;
    char *o = malloc(len);
    /* "copies": the pages a student has their own copy of (in a classroom) */
    if (o && extra) snprintf(o, len, "{\"%s\":%s,\"copies\":%s}", key, list, extra);
    else if (o) snprintf(o, len, "{\"%s\":%s}", key, list);
    free(list);
    free(extra);
    srv_json(res, 200, o);
}

static void r_files(route_ctx *c, srv_response *res) { /* the .npy files a Const may name */
    list_answer(res, "files", srv_store_list_files_json(&c->app->store, ".npy"), NULL);
}

/*
 * GET /api/files/{name}: what a .npy file of the pages folder holds, {"file", "dtype",
 * "shape", "bytes"}, read whole by the library's strict reader as a run's feed would be (so at
 * most --max-upload bytes): the editor checks a file against a Placeholder before feeding it.
 */
static void r_file_info(route_ctx *c, srv_response *res) {
    srv_app *app = c->app;
    char *data = NULL;
    size_t len = 0;
    int rc = srv_store_read_file(&app->store, c->name, ".npy", app->lim.max_upload, &data, &len);
    if (rc) {
        if (rc == -ENOENT) srv_error(res, 404, "not_found", "no file \"%s\"", c->name);
        else if (rc == -EFBIG)
            srv_error(res, 413, "limit", "\"%s\" is larger than a run's feeds may be "
                      "(--max-upload %zu bytes)", c->name, app->lim.max_upload);
        else if (rc == -EINVAL || rc == -ELOOP)
            srv_error(res, 403, "forbidden", "\"%s\" is not a .npy file of the pages folder",
                      c->name);
        else srv_error(res, 500, "io_error", "\"%s\": %s", c->name, strerror(-rc));
        return;
    }
    bf_tensor *t = NULL;
    bf_error e = {0};
    bf_status st = bf_tensor_load_npy_mem(app->ctx, data, len, c->name, &t, &e);
    free(data);
    if (st) {
        srv_error_bf(res, st == BF_ENOMEM ? 500 : 422, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", c->name);
    cJSON_AddStringToObject(o, "dtype", bf_dtype_name(bf_tensor_dtype(t)));
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int i = 0; i < bf_tensor_rank(t); i++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)bf_tensor_dims(t)[i]));
    cJSON_AddNumberToObject(o, "bytes", (double)len);
    bf_tensor_free(t);
    srv_json(res, 200, print(o));
}

static void r_import(route_ctx *c, srv_response *res) { srv_import(c->app, c->req, res); }

static void r_pages(route_ctx *c, srv_response *res) {
    char *copies = c->who->student ? srv_store_list_json(srv_student_store(c->who->student))
                                   : strdup("[]");
    list_answer(res, "pages", srv_store_list_json(&c->app->store), copies);
}

static void r_get(route_ctx *c, srv_response *res) {
    get_page(c->app, c->st, c->name, c->req, res);
}
static void r_put(route_ctx *c, srv_response *res) {
    put_page(c->app, c->st, c->name, c->req, res);
}
static void r_delete(route_ctx *c, srv_response *res) {
    delete_page(c->app, c->st, c->name, c->req, res);
}
static void r_rename(route_ctx *c, srv_response *res) {
    copy_page(c->app, c->st, c->name, true, c->req, res);
}
static void r_duplicate(route_ctx *c, srv_response *res) {
    copy_page(c->app, c->st, c->name, false, c->req, res);
}
static void r_check(route_ctx *c, srv_response *res) {
    check_page(c->app, c->name, c->req, res);
}
static void r_edits(route_ctx *c, srv_response *res) {
    edit_page(c->app, c->page, c->client, c->req, res);
}
static void r_run(route_ctx *c, srv_response *res) {
    run_page(c->app, c->page, c->client, c->req, res);
}
static void r_teach(route_ctx *c, srv_response *res) { /* explain, gradcheck, grad */
    srv_teach_route(c->app, c->st, c->arg, c->name, c->client, c->req, res);
}
static void r_open(route_ctx *c, srv_response *res) {
    srv_json(res, 200, check_json(srv_page_session(c->page), BF_OK, NULL, NULL));
}
static void r_close(route_ctx *c, srv_response *res) {
    srv_page *p = srv_page_find(c->app, c->st, c->name);
    if (p && page_busy(c->app, c->st, c->name, res)) return;
    if (p) srv_page_close(c->app, p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "closed", c->name);
    cJSON_AddBoolToObject(o, "was_open", p != NULL);
    srv_json(res, 200, print(o));
}
static void r_update_copy(route_ctx *c, srv_response *res) {
    update_copy(c->app, c->who, c->name, res);
}

/* The run {id}, when this requester may see it (a student: only their own); else 404. */
static srv_run *run_of(route_ctx *c, srv_response *res) {
    srv_run *r = srv_run_find(c->app, c->id);
    if (r && c->who->role == SRV_STUDENT &&
        strcmp(srv_run_owner(r), srv_who_name(c->who)))
        r = NULL;
    if (!r) srv_error(res, 404, "not_found", "no run \"%s\" (finished runs are kept a while)",
                      c->id);
    return r;
}

static void r_cancel(route_ctx *c, srv_response *res) {
    srv_run *r = run_of(c, res);
    if (!r) return;
    bool done = srv_run_cancel(r);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_id", c->id);
    cJSON_AddBoolToObject(o, "cancelled", done);
    srv_json(res, done ? 202 : 200, print(o));
}

static void r_result(route_ctx *c, srv_response *res) { /* the terminal event, result included */
    srv_run *r = run_of(c, res);
    if (!r) return;
    size_t len = 0;
    const char *why = NULL, *text = srv_run_result(r, &len, &why);
    char *copy = text ? malloc(len + 1) : NULL;
    if (copy) memcpy(copy, text, len + 1);
    if (text) srv_json(res, 200, copy);
    else if (!strcmp(why, "running")) srv_error(res, 409, "busy", "run %s has not finished", c->id);
    else srv_error(res, 410, "gone", "the result of run %s is no longer kept", c->id);
}

static void r_tensor(route_ctx *c, srv_response *res) {
    if (run_of(c, res)) get_tensor(c->app, c->id, c->arg, c->req, res);
}

/* Training jobs (train_jobs.c): GET/POST .../train, POST .../backward, .../check_backward. */
static void r_train(route_ctx *c, srv_response *res) {
    srv_train_route(c->app, c->st, c->arg, c->name, c->client, c->req, res);
}

static void r_me(route_ctx *c, srv_response *res) { srv_class_me(c->app, c->who, res); }

static void r_join(route_ctx *c, srv_response *res) {
    cJSON *body = parse_body(c->app, c->req, res);
    if (!body) return;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
    if (!cJSON_IsString(name)) srv_error(res, 400, "bad_request", "join takes {\"name\"}");
    else srv_class_join(c->app, name->valuestring, res);
    cJSON_Delete(body);
}

static void r_roster(route_ctx *c, srv_response *res) { srv_class_roster(c->app, res); }

/* The teacher looks over a student's shoulder: their copies, read-only. */
static srv_student *student_of(route_ctx *c, srv_response *res) {
    srv_student *s = srv_student_find(c->app, c->arg);
    if (!s) srv_error(res, 404, "not_found", "no student named \"%s\"", c->arg);
    return s;
}
static void r_student_pages(route_ctx *c, srv_response *res) {
    srv_student *s = student_of(c, res);
    if (s) list_answer(res, "pages", srv_store_list_json(srv_student_store(s)), NULL);
}
static void r_student_page(route_ctx *c, srv_response *res) {
    srv_student *s = student_of(c, res);
    if (s) get_page(c->app, srv_student_store(s), c->name, c->req, res);
}

/*
 * The API. The access rules read `roles` (and 403 otherwise), the preamble reads `flags` (a
 * student's copy made before a write; the page opened and idle before the handler), and the
 * dispatcher finds the route by `pattern` (404) and `method` (405).
 */
static const route routes[] = {
    {"GET", "health", R_ANYONE, 0, r_health},
    {"GET", "blocks", R_ANYONE, 0, r_blocks},
    {"GET", "files", R_MEMBER, 0, r_files},
    {"GET", "files/{name}", R_MEMBER, 0, r_file_info},
    {"POST", "import", R_TEACHER, 0, r_import},
    {"GET", "pages", R_MEMBER, 0, r_pages},
    {"GET", "pages/{name}", R_MEMBER, 0, r_get},
    {"PUT", "pages/{name}", R_MEMBER, WRITES_PAGE, r_put},
    {"DELETE", "pages/{name}", R_MEMBER, 0, r_delete},
    {"POST", "pages/{name}/rename", R_TEACHER, 0, r_rename},
    {"POST", "pages/{name}/duplicate", R_TEACHER, 0, r_duplicate},
    {"POST", "pages/{name}/check", R_MEMBER, 0, r_check},
    {"POST", "pages/{name}/edits", R_MEMBER, WRITES_PAGE | NEEDS_PAGE, r_edits},
    {"POST", "pages/{name}/run", R_MEMBER, WRITES_PAGE | NEEDS_PAGE, r_run},
    {"POST", "pages/{name}/explain", R_MEMBER, WRITES_PAGE, r_teach},
    {"POST", "pages/{name}/gradcheck", R_MEMBER, WRITES_PAGE, r_teach},
    {"POST", "pages/{name}/grad", R_MEMBER, WRITES_PAGE, r_teach},
    {"POST", "pages/{name}/open", R_MEMBER, NEEDS_PAGE, r_open},
    {"POST", "pages/{name}/close", R_MEMBER, 0, r_close},
    {"POST", "pages/{name}/update-copy", R_STUDENT, CLASSROOM, r_update_copy},
    {"GET", "pages/{name}/train", R_MEMBER, 0, r_train},
    {"POST", "pages/{name}/train", R_MEMBER, WRITES_PAGE, r_train},
    {"POST", "pages/{name}/backward", R_MEMBER, WRITES_PAGE, r_train},
    {"POST", "pages/{name}/check_backward", R_MEMBER, WRITES_PAGE, r_train},
    {"POST", "runs/{id}/cancel", R_MEMBER, 0, r_cancel},
    {"GET", "runs/{id}/result", R_MEMBER, 0, r_result},
    {"GET", "runs/{id}/tensors/{spec}", R_MEMBER, 0, r_tensor},
    {"GET", "class/me", R_ANYONE, 0, r_me},
    {"POST", "class/join", R_JOINING | R_TEACHER, CLASSROOM, r_join},
    {"GET", "class/roster", R_TEACHER, CLASSROOM, r_roster},
    {"GET", "class/students/{student}/pages", R_TEACHER, CLASSROOM, r_student_pages},
    {"GET", "class/students/{student}/pages/{name}", R_TEACHER, CLASSROOM, r_student_page},
};

/*
 * Whether the segments after /api/ match `pattern`; captures into c. {name} takes every
 * segment the rest of the pattern leaves ("pages/{name}/run" on pages/teach/conv/run names
 * page "teach/conv"), joined into name_buf[128]. A name of several segments must be a page
 * name (srv_page_name_ok, which refuses an action word as the last one), else the route does
 * not match: pages/teach/train is the training of page "teach", never page "teach/train".
 */
static bool match(const char *pattern, char seg[MAX_SEGS][208], int n, route_ctx *c,
                  char name_buf[128]) {
    route_ctx got = *c;
    int i = 1; /* seg[0] is "api" */
    for (const char *p = pattern; *p; i++) {
        size_t len = strcspn(p, "/");
        if (i >= n) return false;
        if (len == 6 && !strncmp(p, "{name}", 6)) {
            int rest = 0; /* pattern segments after {name} */
            for (const char *q = p + len; *q; q++) rest += *q == '/';
            int last = n - 1 - rest; /* the name's last segment */
            if (last < i) return false;
            if (last == i) {
                got.name = seg[i]; /* one segment: checked (and refused) by the dispatcher */
            } else {
                size_t used = 0;
                for (int k = i; k <= last; k++) {
                    int w = snprintf(name_buf + used, 128 - used, "%s%s", k > i ? "/" : "", seg[k]);
                    if (w < 0 || (size_t)w >= 128 - used) return false;
                    used += (size_t)w;
                }
                if (!srv_page_name_ok(name_buf)) return false;
                got.name = name_buf;
            }
            i = last;
        } else if (p[0] == '{') {
            if (!strncmp(p, "{id}", len)) got.id = seg[i];
            else got.arg = seg[i];
        } else if (strlen(seg[i]) != len || strncmp(p, seg[i], len)) {
            return false;
        }
        p += len + (p[len] == '/');
    }
    if (i != n) return false;
    if (!got.arg) got.arg = seg[n - 1]; /* {act}: the last segment */
    *c = got;
    return true;
}

static void dispatch(srv_app *app, const srv_request *req, const srv_who *who,
                     const char *client, srv_response *res) {
    const char *m = req->method ? req->method : "";
    char seg[MAX_SEGS][208];
    int n = split_path(req->path, seg);
    if (n < 2 || strcmp(seg[0], "api")) {
        srv_error(res, 404, "not_found", "no such endpoint");
        return;
    }
    route_ctx c = {.app = app, .req = req, .who = who, .client = client, .st = &app->store};
    const route *hit = NULL;
    bool path_known = false;
    char scratch[128], name[128]; /* a {name} of several segments, joined */
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]) && !hit; i++) {
        route_ctx t = c;
        if (!match(routes[i].pattern, seg, n, &t, scratch)) continue;
        path_known = true;
        if (t.name == scratch) {
            memcpy(name, scratch, sizeof(name));
            t.name = name;
        }
        if (!strcmp(routes[i].method, m)) hit = &routes[i], c = t;
        else if (!c.name) c.name = t.name;
    }
    if (c.name && !srv_page_name_ok(c.name)) {
        srv_error(res, 400, "bad_name",
                  "a page name is letters, digits, '.', '_' and '-', not starting with '.', at "
                  "most 100 characters (\".json\" is implied); a page in a subfolder is named "
                  "with its folders, \"teach/conv_grad\"");
        return;
    }
    if (!hit) {
        if (path_known) srv_error(res, 405, "method_not_allowed", "%s is not allowed here", m);
        else srv_error(res, 404, "not_found", "no such endpoint");
        return;
    }
    if ((hit->flags & CLASSROOM) && !app->classroom) {
        srv_error(res, 404, "not_found", "this server is not a classroom (blockflow serve "
                  "--classroom)");
        return;
    }
    if (!(hit->roles & (1 << who->role))) {
        srv_error(res, 403, "forbidden", "%s",
                  who->role == SRV_JOINING
                      ? "join the class first (POST /api/class/join {\"name\": \"...\"}), "
                        "then use the URL it gives"
                  : who->role == SRV_STUDENT
                      ? "students work on their own copies; only the teacher does this"
                      : "only a student does this");
        return;
    }
    /* a student reads the teacher's page until they have a copy; a write goes to their own
       copy, made now when needed (a read, check or open never makes one) */
    if (who->role == SRV_STUDENT && c.name && !strcmp(seg[1], "pages")) {
        srv_store *mine = srv_student_store(who->student);
        char *probe;
        size_t plen;
        bool have = srv_store_read(mine, c.name, &probe, &plen) == 0;
        if (have) free(probe);
        if (!have && (hit->flags & WRITES_PAGE)) {
            int rc = srv_class_ensure_copy(app, who->student, c.name);
            if (rc == -ENOENT && hit->fn == r_put) rc = 0; /* a new page of their own */
            if (rc) {
                store_error(res, rc, c.name);
                return;
            }
            have = true;
        }
        if (have || hit->fn == r_delete) c.st = mine;
    }
    /* edits of a page that is training wait for the next step boundary (train_jobs.c) */
    if (hit->fn == r_edits && srv_train_route(app, c.st, "edits", c.name, client, req, res))
        return;
    if (hit->flags & NEEDS_PAGE) { /* the preamble: the page open and idle */
        if (page_busy(app, c.st, c.name, res)) return;
        if (!(c.page = srv_page_open(app, c.st, c.name, client, res))) return;
    }
    hit->fn(&c, res);
}

int srv_route_access(srv_app *app, const srv_request *req, bool need_token, srv_who *who,
                     srv_response *res) {
    srv_who nobody;
    if (!who) who = &nobody;
    memset(who, 0, sizeof(*who));
    if (!host_ok(app, req->host)) {
        srv_error(res, 403, "bad_host",
                  "the Host header must name this server's address (a guard against DNS "
                  "rebinding)");
        return -1;
    }
    if (req->origin && !origin_ok(app, req->origin)) {
        srv_error(res, 403, "bad_origin", "requests from another origin are refused");
        return -1;
    }
    char tok[128];
    bool have = request_token(app, req, tok, sizeof(tok));
    if (!have && !strcmp(req->path ? srv_route_strip(app, req->path) : "", "/ws"))
        have = query_get(req->query, "token", tok, sizeof(tok));
    bool known = have && srv_identify(app, tok, who);
    if (need_token && !known) {
        srv_error(res, 401, "unauthorized",
                  have ? "wrong token" : "this needs the token: open the URL that blockflow "
                  "serve printed, or send Authorization: Bearer TOKEN");
        return -1;
    }
    return 0;
}

void srv_route(srv_app *app, const srv_request *req_in, srv_response *res) {
    memset(res, 0, sizeof(*res));
    srv_request stripped = *req_in;
    stripped.path = srv_route_strip(app, req_in->path);
    const srv_request *req = &stripped;
    const char *m = req->method ? req->method : "";
    bool root = req->path && (!strcmp(req->path, "/") || !strcmp(req->path, "/index.html"));
    /* the editor's own files hold no data: they need no token (the API they call does) */
    bool asset = req->path && !strncmp(req->path, "/assets/", 8);
    srv_who who;
    if (srv_route_access(app, req, !root && !asset, &who, res)) return;
    /* X-Blockflow-Client must be the id the server gave a connected WebSocket: ids are random
       and known only to their socket, so nobody can take another's events or page quota */
    const char *client = "";
    if (req->client) {
        if (!srv_name_ok(req->client) || !app->client_known ||
            !app->client_known(app->emit_user, req->client)) {
            srv_error(res, 400, "unknown_client",
                      "X-Blockflow-Client must be the id of a connected WebSocket (its hello "
                      "event); reconnect and use the new id");
            return;
        }
        client = req->client;
    }
    if (asset) {
        if (strcmp(m, "GET") && strcmp(m, "HEAD"))
            srv_error(res, 405, "method_not_allowed", "%s is not allowed here", m);
        else srv_static(app, req->path, res);
        return;
    }
    if (root) {
        char tok[128];
        if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
            srv_error(res, 405, "method_not_allowed", "%s / is not allowed", m);
            return;
        }
        srv_who by_url;
        if (query_get(req->query, "token", tok, sizeof(tok)) && srv_identify(app, tok, &by_url)) {
            /* the cookie is named for this server and scoped to its random path, so a browser
               sends it to no other server, not even one on another port of this machine */
            snprintf(res->set_cookie, sizeof(res->set_cookie),
                     "%s=%s; Path=%s/; HttpOnly; SameSite=Strict", app->cookie_name, tok,
                     app->prefix[0] ? app->prefix : "");
            if (app->prefix[0] && req->path == req_in->path) { /* "/?token=": to the prefix */
                snprintf(res->location, sizeof(res->location), "%s/", app->prefix);
                char *b = malloc(sizeof(res->location) + 20);
                if (b) snprintf(b, sizeof(res->location) + 20, "{\"location\":\"%s\"}",
                                res->location);
                srv_json(res, 303, b);
                return;
            }
        }
        if (app->have_web) {
            srv_static(app, "/", res);
            if (res->status == 200) return;
            srv_response_free(res);
        }
        res->status = 200;
        res->content_type = "text/html; charset=utf-8";
        res->body = strdup(index_html);
        res->body_len = res->body ? strlen(res->body) : 0;
        return;
    }
    if (app->lim.max_body && req->body_len > app->lim.max_body) {
        srv_error(res, 413, "limit", "the request body is larger than %zu bytes (--max-body)",
                  app->lim.max_body);
        return;
    }
    dispatch(app, req, &who, client, res);
}
