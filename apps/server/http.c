/*
 * http.c - libwebsockets glue: HTTP and WebSocket on the app's libuv loop.
 *
 * lws joins our loop as a "foreign" loop (LWS_SERVER_OPTION_LIBUV + foreign_loops), so its
 * sockets, our timers, our signal handlers and the async handle that brings run events back
 * from the workers all run on one thread. This file only moves bytes: each HTTP request is
 * collected (headers, then the body up to --max-body) into an srv_request and answered by
 * srv_route(); each WebSocket is checked by srv_route_access() before the handshake completes
 * and then receives the events srv_emit() hands it.
 *
 * Before any body byte is read, the access rules (Host, Origin, token) are applied to the
 * headers alone, and a request with Transfer-Encoding is refused (400; with Content-Length it
 * is request smuggling, RFC 9112 section 6.1): a request that fails is answered and its
 * connection closed without reading the body. Every connection is tracked from accept to
 * destroy: at most --max-connections at once, of which at most --max-unauthenticated have not
 * yet shown the token (a new one past either gets a plain 503 and is closed); a request's
 * headers must arrive within --header-timeout and its whole body within --body-timeout (a
 * total deadline, not one restarted by every byte).
 *
 * Slow clients: an HTTP answer is written in 32 KiB pieces, each only when the socket is
 * writable, with a 30 s timeout per piece. Each WebSocket client has its own queue of events,
 * written out as long as the socket takes them (not one per writable callback); a block's
 * "started" event still queued when its "finished" one comes is dropped (coalesced). A client
 * whose queue passes --max-ws-queue bytes has stopped reading and is dropped; when all queues
 * together pass --max-ws-total, the client with the longest is dropped. So no client holds
 * memory without bound nor delays anybody else.
 */
#include "http.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct ws_msg {
    struct ws_msg *next;
    size_t len;
    uint64_t key;         /* block event: hash of (run, block); 0 for any other event */
    bool started;         /* a block_started event (coalesced away by its block's end) */
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the text */
} ws_msg;

/* One accepted connection, from accept to destroy (lws's opaque user data of the wsi). */
typedef struct track {
    struct lws *wsi;
    uint64_t since_ms;        /* when its current request began (accept, or the last answer) */
    uint64_t body_deadline;   /* uv_now() by which the body must be complete; 0 = none */
    bool authed;              /* has shown the token */
    bool expired;             /* past a deadline: closed at its next byte or sweep */
    struct track *prev, *next;
} track;

typedef struct conn {
    struct lws *wsi;
    /* HTTP */
    char method[8];
    char *path, *query;
    char host[300], origin[300], auth[200], cookie[8200], client[72];
    char *body;
    size_t body_len, body_cap;
    bool too_big, waiting_body, responding, close_after;
    bool doomed; /* answering a refused request: nothing more is read, then it closes */
    srv_response res;
    size_t sent;
    /* WebSocket */
    bool is_ws, dropped;
    bool batch;             /* /ws?batch=1: each frame is a JSON array of the queued events */
    char ws_client[72];
    srv_who who;            /* whose token opened it */
    char view_space[64];    /* the page its editor shows ({"type": "view"}), for live edits */
    char view_page[128];
    ws_msg *q_head, *q_tail;
    size_t q_bytes;
    char *rx;
    size_t rx_len;
    struct conn *next_ws;
} conn;

struct srv_http {
    srv_app *app;
    struct lws_context *ctx;
    struct lws_vhost *vh;
    conn *ws_list;
    size_t ws_bytes;    /* bytes queued for all WebSocket clients */
    track *conns;       /* every accepted connection */
    uv_timer_t *sweep;  /* enforces the header and body deadlines (malloc'd: freed on close) */
    int port;
    struct lws_protocols protocols[2];
    unsigned char out[LWS_PRE + (32 << 10)]; /* one chunk of a response body on its way out */
};

static uint64_t now_ms(srv_http *h) { return uv_now(h->app->loop); }

static void set_authed(srv_http *h, struct lws *wsi) {
    track *t = lws_get_opaque_user_data(wsi);
    if (t && !t->authed) {
        t->authed = true;
        h->app->n_unauth--;
    }
}

/* ---- request collection -------------------------------------------------------------------- */

static const char *copy_hdr(struct lws *wsi, enum lws_token_indexes t, char *buf, int size) {
    int n = lws_hdr_total_length(wsi, t);
    if (n <= 0 || n >= size) return NULL; /* absent, or too long to be valid */
    if (lws_hdr_copy(wsi, buf, size, t) < 0) return NULL;
    return buf;
}

static void conn_reset_http(conn *c) {
    free(c->path);
    free(c->query);
    free(c->body);
    srv_response_free(&c->res);
    c->path = c->query = c->body = NULL;
    c->body_len = c->body_cap = 0;
    c->too_big = c->waiting_body = c->responding = false;
    c->sent = 0;
}

/* The method and path of the request; false when lws saw no method we serve. */
static bool request_line(struct lws *wsi, conn *c) {
    static const struct {
        enum lws_token_indexes t;
        const char *m;
    } methods[] = {{WSI_TOKEN_GET_URI, "GET"},       {WSI_TOKEN_POST_URI, "POST"},
                   {WSI_TOKEN_PUT_URI, "PUT"},       {WSI_TOKEN_DELETE_URI, "DELETE"},
                   {WSI_TOKEN_PATCH_URI, "PATCH"},   {WSI_TOKEN_OPTIONS_URI, "OPTIONS"},
                   {WSI_TOKEN_HEAD_URI, "HEAD"}};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        int n = lws_hdr_total_length(wsi, methods[i].t);
        if (n <= 0) continue;
        snprintf(c->method, sizeof(c->method), "%s", methods[i].m);
        c->path = malloc((size_t)n + 1);
        if (!c->path || lws_hdr_copy(wsi, c->path, n + 1, methods[i].t) < 0) return false;
        break;
    }
    if (!c->path) return false;
    /* the query, as lws split (and decoded) it: fragments joined again with '&' */
    int total = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
    c->query = calloc(1, total > 0 ? (size_t)total + 64 : 1);
    if (!c->query) return false;
    size_t used = 0;
    char frag[1024];
    for (int i = 0; total > 0 && i < 32; i++) {
        int n = lws_hdr_copy_fragment(wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n < 0) break;
        if (used + (size_t)n + 2 > (size_t)total + 64) break;
        if (used) c->query[used++] = '&';
        memcpy(c->query + used, frag, (size_t)n);
        used += (size_t)n;
        c->query[used] = '\0';
    }
    return true;
}

static void collect_headers(struct lws *wsi, conn *c, srv_request *req) {
    memset(req, 0, sizeof(*req));
    req->method = c->method;
    req->path = c->path;
    req->query = c->query ? c->query : "";
    req->host = copy_hdr(wsi, WSI_TOKEN_HOST, c->host, sizeof(c->host));
    req->origin = copy_hdr(wsi, WSI_TOKEN_ORIGIN, c->origin, sizeof(c->origin));
    req->authorization = copy_hdr(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, c->auth, sizeof(c->auth));
    req->cookie = copy_hdr(wsi, WSI_TOKEN_HTTP_COOKIE, c->cookie, sizeof(c->cookie));
    int n = lws_hdr_custom_length(wsi, "x-blockflow-client:", 19);
    if (n > 0 && n < (int)sizeof(c->client) &&
        lws_hdr_custom_copy(wsi, c->client, sizeof(c->client), "x-blockflow-client:", 19) >= 0)
        req->client = c->client;
}

/* ---- answers ------------------------------------------------------------------------------- */

static int send_headers(struct lws *wsi, conn *c) {
    unsigned char buf[LWS_PRE + 2048], *start = buf + LWS_PRE, *p = start,
                                        *end = buf + sizeof(buf) - 1;
    srv_response *r = &c->res;
    if (lws_add_http_common_headers(wsi, (unsigned)r->status, r->content_type,
                                    (lws_filepos_t)r->body_len, &p, end))
        return -1;
    if (r->set_cookie[0] &&
        lws_add_http_header_by_name(wsi, (const unsigned char *)"set-cookie:",
                                    (const unsigned char *)r->set_cookie,
                                    (int)strlen(r->set_cookie), &p, end))
        return -1;
    if (r->location[0] &&
        lws_add_http_header_by_name(wsi, (const unsigned char *)"location:",
                                    (const unsigned char *)r->location,
                                    (int)strlen(r->location), &p, end))
        return -1;
    if (r->disposition[0] &&
        lws_add_http_header_by_name(wsi, (const unsigned char *)"content-disposition:",
                                    (const unsigned char *)r->disposition,
                                    (int)strlen(r->disposition), &p, end))
        return -1;
    static const char *const fixed[][2] = {{"cache-control:", "no-store"},
                                           {"x-content-type-options:", "nosniff"},
                                           {"referrer-policy:", "no-referrer"}};
    for (int i = 0; i < 3; i++)
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)fixed[i][0],
                                        (const unsigned char *)fixed[i][1],
                                        (int)strlen(fixed[i][1]), &p, end))
            return -1;
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return -1;
    c->responding = true;
    c->sent = 0;
    lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, 30);
    lws_callback_on_writable(wsi);
    return 0;
}

static int respond(struct lws *wsi, srv_http *h, conn *c) {
    srv_request req;
    collect_headers(wsi, c, &req);
    req.body = c->body;
    req.body_len = c->body_len;
    if (c->too_big) {
        memset(&c->res, 0, sizeof(c->res));
        srv_error(&c->res, 413, "limit", "the request body is larger than %zu bytes (--max-body)",
                  h->app->lim.max_body);
        c->close_after = true;
    } else if (h->app->stopping) {
        memset(&c->res, 0, sizeof(c->res));
        srv_error(&c->res, 503, "stopping", "the server is shutting down");
        c->close_after = true;
    } else {
        srv_route(h->app, &req, &c->res);
        if (c->res.status == 401 || c->res.status == 403) c->close_after = true;
    }
    if (!c->res.content_type) c->res.content_type = "application/json";
    return send_headers(wsi, c);
}

/* Answer c->res (a refusal made before the body) and close after it; nothing more is read. */
static int refuse(struct lws *wsi, conn *c) {
    c->close_after = true;
    c->doomed = true;
    if (!c->res.content_type) c->res.content_type = "application/json";
    return send_headers(wsi, c);
}

static int write_more(struct lws *wsi, srv_http *h, conn *c) {
    enum { CHUNK = sizeof(h->out) - LWS_PRE };
    unsigned char *buf = h->out;
    size_t left = c->res.body_len - c->sent, n = left < CHUNK ? left : CHUNK;
    bool last = n == left;
    if (n) memcpy(buf + LWS_PRE, c->res.body + c->sent, n);
    if (lws_write(wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) !=
        (int)n)
        return -1;
    c->sent += n;
    if (!last) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, 30);
        lws_callback_on_writable(wsi);
        return 0;
    }
    bool close = c->close_after;
    conn_reset_http(c);
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    track *t = lws_get_opaque_user_data(wsi);
    if (t) t->since_ms = now_ms(h); /* the next request's headers are timed from here */
    if (close) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---- WebSocket ----------------------------------------------------------------------------- */

static void ws_free_queue(srv_http *h, conn *c) {
    for (ws_msg *m = c->q_head, *next; m; m = next) {
        next = m->next;
        free(m);
    }
    h->ws_bytes -= c->q_bytes;
    c->q_head = c->q_tail = NULL;
    c->q_bytes = 0;
}

/* A client that does not read: drop it rather than hold memory or delay others. */
static void ws_drop(srv_http *h, conn *c) {
    c->dropped = true;
    h->app->ws_dropped++;
    ws_free_queue(h, c);
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/*
 * The coalescing key of a block event: a hash of its run and block ("" for other events), and
 * whether it is a block_started. Events are made by runs.c as {"type":..., "run_id":...,
 * "page":..., ["kind":...,] "block":...}; page names and run ids hold no quote.
 */
static uint64_t event_key(const char *json, size_t len, bool *started) {
    static const char pre[] = "{\"type\":\"block_";
    *started = false;
    if (len < sizeof(pre) || memcmp(json, pre, sizeof(pre) - 1)) return 0;
    *started = !strncmp(json + sizeof(pre) - 1, "started\"", 8);
    const char *run = strstr(json, "\"run_id\":\""), *blk = strstr(json, "\"block\":\"");
    if (!run || !blk) return 0;
    uint64_t hsh = 1469598103934665603ull;
    for (const char *p = run + 10; *p && *p != '"'; p++)
        hsh = (hsh ^ (unsigned char)*p) * 1099511628211ull;
    hsh = (hsh ^ ':') * 1099511628211ull;
    for (const char *p = blk + 9; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) p++;
        hsh = (hsh ^ (unsigned char)*p) * 1099511628211ull;
    }
    return hsh ? hsh : 1;
}

static void ws_push_keyed(srv_http *h, conn *c, const char *json, size_t len, uint64_t key,
                          bool started) {
    if (c->dropped) return;
    /* behind (a quarter of --max-ws-queue unsent): a block's end supersedes its start */
    if (key && !started && c->q_bytes > h->app->lim.max_ws_queue / 4) {
        ws_msg *prev = NULL;
        int scanned = 0;
        for (ws_msg *m = c->q_head; m && scanned < 1024; prev = m, m = m->next, scanned++) {
            if (m->key != key || !m->started) continue;
            if (prev) prev->next = m->next;
            else c->q_head = m->next;
            if (c->q_tail == m) c->q_tail = prev;
            c->q_bytes -= m->len;
            h->ws_bytes -= m->len;
            free(m);
            break;
        }
    }
    if (c->q_bytes + len > h->app->lim.max_ws_queue) {
        ws_drop(h, c);
        return;
    }
    ws_msg *m = malloc(sizeof(*m) + LWS_PRE + len);
    if (!m) return;
    m->next = NULL;
    m->len = len;
    m->key = key;
    m->started = started;
    memcpy(m->data + LWS_PRE, json, len);
    if (c->q_tail) c->q_tail->next = m;
    else c->q_head = m;
    c->q_tail = m;
    c->q_bytes += len;
    h->ws_bytes += len;
    lws_callback_on_writable(c->wsi);
    /* all queues together past --max-ws-total: the client furthest behind goes */
    while (h->ws_bytes > h->app->lim.max_ws_total) {
        conn *worst = NULL;
        for (conn *o = h->ws_list; o; o = o->next_ws)
            if (!o->dropped && (!worst || o->q_bytes > worst->q_bytes)) worst = o;
        if (!worst || !worst->q_bytes) break;
        ws_drop(h, worst);
    }
    h->app->ws_queued = h->ws_bytes;
    if (h->ws_bytes > h->app->ws_queued_peak) h->app->ws_queued_peak = h->ws_bytes;
}

enum { WS_BATCH_BYTES = 64 << 10 }; /* a batch frame's events: this many bytes at most */

/*
 * A batching socket's writable callback: the queued events go out as frames that each hold a
 * JSON array of events ([ev, ev, ...], at most WS_BATCH_BYTES of them; an event larger than
 * that alone), as many frames as the socket takes now. A run's thousand events then cross to
 * a browser in a few frames: each frame costs a browser a task and an IPC hop, and one per
 * event made a 500-block run's events arrive over 350 ms after a 40 ms run.
 */
static int ws_write_batches(struct lws *wsi, srv_http *h, conn *c) {
    while (c->q_head) {
        size_t total = 2, n = 0;
        for (ws_msg *m = c->q_head; m; m = m->next, n++) {
            if (n && total + m->len + 1 > WS_BATCH_BYTES) break;
            total += m->len + (n ? 1 : 0);
        }
        unsigned char *buf = malloc(LWS_PRE + total);
        if (!buf) return -1;
        unsigned char *p = buf + LWS_PRE;
        *p++ = '[';
        for (size_t k = 0; k < n; k++) {
            ws_msg *m = c->q_head;
            c->q_head = m->next;
            if (!c->q_head) c->q_tail = NULL;
            c->q_bytes -= m->len;
            h->ws_bytes -= m->len;
            if (k) *p++ = ',';
            memcpy(p, m->data + LWS_PRE, m->len);
            p += m->len;
            free(m);
        }
        *p++ = ']';
        int w = lws_write(wsi, buf + LWS_PRE, total, LWS_WRITE_TEXT);
        free(buf);
        if (w < 0) return -1;
        if (lws_send_pipe_choked(wsi)) break;
    }
    h->app->ws_queued = h->ws_bytes;
    if (c->q_head) lws_callback_on_writable(wsi);
    return 0;
}

static void ws_push(srv_http *h, conn *c, const char *json, size_t len) {
    ws_push_keyed(h, c, json, len, 0, false);
}

static bool client_known(void *user, const char *client) {
    srv_http *h = user;
    for (conn *c = h->ws_list; c; c = c->next_ws)
        if (!c->dropped && !strcmp(client, c->ws_client)) return true;
    return false;
}

static void emit(void *user, const char *client, const char *json, size_t len) {
    srv_http *h = user;
    bool started;
    uint64_t key = event_key(json, len, &started);
    for (conn *c = h->ws_list; c; c = c->next_ws) {
        /* a run without a client id goes to every socket; in a classroom only to the
           teacher's, never to another student */
        bool to = client[0] ? !strcmp(client, c->ws_client)
                            : !h->app->classroom || c->who.role == SRV_TEACHER;
        if (to) ws_push_keyed(h, c, json, len, key, started);
    }
}

static void emit_view(void *user, const char *space, const char *page, bool any_space,
                      const char *json, size_t len) {
    srv_http *h = user;
    for (conn *c = h->ws_list; c; c = c->next_ws)
        if (c->view_page[0] && !strcmp(c->view_page, page) &&
            (any_space || !strcmp(c->view_space, space)))
            ws_push(h, c, json, len);
}

static void ws_reply_error(srv_http *h, conn *c, const char *code, const char *message) {
    bf_error e = {0};
    e.status = BF_EINVAL;
    snprintf(e.code, sizeof(e.code), "%s", code);
    snprintf(e.message, sizeof(e.message), "%s", message);
    cJSON *o = cJSON_CreateObject(), *err = srv_error_object(&e);
    cJSON_AddStringToObject(o, "type", "error");
    if (err) cJSON_AddItemToObject(o, "error", err);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s) ws_push(h, c, s, strlen(s));
    free(s);
}

/* One whole message from a client: {"type": "ping"} is the only request so far. */
static void ws_message(srv_http *h, conn *c) {
    int limit = bf_context_config(h->app->ctx)->max_json_depth;
    cJSON *j = bf_json_check(c->rx, c->rx_len, limit, NULL) == BF_OK
                   ? cJSON_ParseWithLengthOpts(c->rx, c->rx_len, NULL, 0)
                   : NULL;
    cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!j) ws_reply_error(h, c, "bad_json", "messages are JSON objects");
    else if (cJSON_IsString(type) && !strcmp(type->valuestring, "ping")) {
        /* {"type": "pong", "client", "data"}: "data" echoed (bounded by --max-ws-message) */
        cJSON *o = cJSON_CreateObject(), *data = cJSON_GetObjectItemCaseSensitive(j, "data");
        cJSON_AddStringToObject(o, "type", "pong");
        cJSON_AddStringToObject(o, "client", c->ws_client);
        if (cJSON_IsString(data)) cJSON_AddStringToObject(o, "data", data->valuestring);
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (s) ws_push(h, c, s, strlen(s));
        free(s);
    } else if (cJSON_IsString(type) && !strcmp(type->valuestring, "view")) {
        /* {"type": "view", "page": "x", "space": ""|"NAME"}: this socket shows page x of the
           teacher's pages ("") or of a student's copies; its edits come here live. A student
           may view the teacher's pages and their own copies; the teacher every space. */
        const cJSON *page = cJSON_GetObjectItemCaseSensitive(j, "page");
        const cJSON *space = cJSON_GetObjectItemCaseSensitive(j, "space");
        const char *sp = cJSON_IsString(space) ? space->valuestring : "";
        bool ok = cJSON_IsString(page) &&
                  (srv_page_name_ok(page->valuestring) || !page->valuestring[0]) &&
                  (!sp[0] || c->who.role == SRV_TEACHER ||
                   (c->who.student && !strcmp(sp, srv_who_name(&c->who))));
        if (!ok) {
            ws_reply_error(h, c, "forbidden", "view takes a page name and a space you may read");
        } else {
            snprintf(c->view_page, sizeof(c->view_page), "%s", page->valuestring);
            snprintf(c->view_space, sizeof(c->view_space), "%s", sp);
            srv_class_viewing(h->app, &c->who, c->view_page);
            char ack[300];
            snprintf(ack, sizeof(ack), "{\"type\":\"viewing\",\"page\":\"%s\",\"space\":\"%s\"}",
                     c->view_page, c->view_space);
            ws_push(h, c, ack, strlen(ack));
        }
    } else ws_reply_error(h, c, "bad_request", "unknown message type (known: ping, view)");
    cJSON_Delete(j);
}

static int ws_filter(struct lws *wsi, srv_http *h, conn *c) {
    srv_request req;
    srv_response res = {0};
    if (!request_line(wsi, c) || strcmp(srv_route_strip(h->app, c->path), "/ws")) {
        conn_reset_http(c);
        lws_return_http_status(wsi, 404, NULL);
        return -1;
    }
    collect_headers(wsi, c, &req);
    c->batch = c->query && (!strcmp(c->query, "batch=1") || strstr(c->query, "&batch=1") ||
                            !strncmp(c->query, "batch=1&", 8));
    srv_who who;
    int rc = h->app->stopping ? -1 : srv_route_access(h->app, &req, true, &who, &res);
    conn_reset_http(c);
    if (rc) {
        lws_return_http_status(wsi, h->app->stopping ? 503 : (unsigned)res.status,
                               NULL);
        srv_response_free(&res);
        return -1;
    }
    set_authed(h, wsi);
    c->who = who;
    return 0;
}

/* ---- connections: counted from accept to destroy, deadlines swept ------------------------ */

/* Accept time: refuse past the caps with a plain 503 written straight to the new socket. */
static int filter_connection(srv_http *h, int fd) {
    const srv_limits *l = &h->app->lim;
    const char *flag = h->app->n_conns >= l->max_connections ? "--max-connections"
                       : h->app->n_unauth >= l->max_unauth   ? "--max-unauthenticated"
                                                        : NULL;
    if (!flag) return 0;
    char body[200], msg[400];
    int bn = snprintf(body, sizeof(body),
                      "{\"error\":{\"code\":\"busy\",\"message\":\"the server has too many "
                      "connections (%s); try again shortly\"}}",
                      flag);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                     "content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n%s",
                     bn, body);
    if (send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) { /* nothing more to do */ }
    h->app->conns_refused++;
    return 1;
}

static int track_new(srv_http *h, struct lws *wsi) {
    track *t = calloc(1, sizeof(*t));
    if (!t) return -1;
    t->wsi = wsi;
    t->since_ms = now_ms(h);
    t->next = h->conns;
    if (h->conns) h->conns->prev = t;
    h->conns = t;
    h->app->n_conns++;
    h->app->n_unauth++;
    lws_set_opaque_user_data(wsi, t);
    return 0;
}

static void track_free(srv_http *h, struct lws *wsi) {
    track *t = lws_get_opaque_user_data(wsi);
    if (!t || t->wsi != wsi) return;
    if (t->prev) t->prev->next = t->next;
    else h->conns = t->next;
    if (t->next) t->next->prev = t->prev;
    h->app->n_conns--;
    if (!t->authed) h->app->n_unauth--;
    lws_set_opaque_user_data(wsi, NULL);
    free(t);
}

/* Every second: close connections past their header or body deadline. The kill is asked
   again at every sweep: lws re-arms its own content timeout on each byte a body brings, which
   can replace an asynchronous kill asked before that byte was handled. */
static void sweep_cb(uv_timer_t *timer) {
    srv_http *h = timer->data;
    uint64_t now = now_ms(h), hdr_ms = (uint64_t)(h->app->lim.header_timeout_s * 1000);
    for (track *t = h->conns; t; t = t->next) {
        bool late_body = t->body_deadline && now > t->body_deadline;
        bool late_head = !t->authed && !t->body_deadline && now - t->since_ms > hdr_ms;
        if (!t->expired && (late_body || late_head)) {
            t->expired = true;
            h->app->conns_timed_out++;
        }
        if (t->expired) lws_set_timeout(t->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    }
}

static void sweep_closed(uv_handle_t *handle) { free(handle); }

/* ---- the callback -------------------------------------------------------------------------- */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
    conn *c = user;
    struct lws_vhost *vh = lws_get_vhost(wsi);
    srv_http *h = vh ? lws_get_vhost_user(vh) : NULL;
    /* no vhost, or no per-connection memory (lws refused the request line before allocating
       it, e.g. a NUL in the URI): lws answers by itself */
    if (h) switch (reason) { /* reasons without per-connection memory */
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return filter_connection(h, (int)(intptr_t)in);
        case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
            return track_new(h, wsi);
        case LWS_CALLBACK_WSI_DESTROY:
            track_free(h, wsi);
            return 0;
        default:
            break;
        }
    if (!h || !c) return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        if (c->doomed) return 0; /* a request after a refused one: never read, it closes */
        conn_reset_http(c);
        c->wsi = wsi;
        c->close_after = false;
        if (!request_line(wsi, c)) {
            lws_return_http_status(wsi, 400, NULL);
            return -1;
        }
        track *t = lws_get_opaque_user_data(wsi);
        char cl[32];
        const char *cls = copy_hdr(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, cl, sizeof(cl));
        long long clen = cls ? atoll(cls) : 0;
        if (clen < 0) clen = 0;
        /* Transfer-Encoding on a request: refused, and the connection closed after the answer
           (RFC 9112 6.1: with Content-Length it is how a second request is smuggled in) */
        if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
            memset(&c->res, 0, sizeof(c->res));
            srv_error(&c->res, 400, "bad_request",
                      "a request with Transfer-Encoding is refused; send the body with "
                      "Content-Length");
            return refuse(wsi, c);
        }
        /* Host, Origin and the token, on the headers alone: a request that fails them is
           answered and closed before any byte of its body is read */
        srv_request req;
        collect_headers(wsi, c, &req);
        bool open_path = srv_route_is_open(h->app, req.path);
        memset(&c->res, 0, sizeof(c->res));
        if (srv_route_access(h->app, &req, !open_path, NULL, &c->res)) return refuse(wsi, c);
        srv_response_free(&c->res);
        if (!open_path) set_authed(h, wsi);
        if (clen > 0 && open_path) {
            /* the editor's files take no body: answered without reading one */
            c->close_after = true;
            c->doomed = true;
            return respond(wsi, h, c);
        }
        if ((unsigned long long)clen > h->app->lim.max_body) {
            c->too_big = true; /* answered now; the body is never read */
            c->doomed = true;
            return respond(wsi, h, c);
        }
        if (clen > 0 && (!strcmp(c->method, "POST") || !strcmp(c->method, "PUT"))) {
            c->waiting_body = true;
            c->body = malloc((size_t)clen + 1);
            c->body_cap = c->body ? (size_t)clen : 0;
            if (!c->body) c->too_big = true;
            if (t) /* one deadline for the whole body, not restarted by each byte */
                t->body_deadline = now_ms(h) + (uint64_t)(h->app->lim.body_timeout_s * 1000);
            return 0;
        }
        if (clen > 0) { /* a body where none is taken (GET, DELETE): not read */
            c->close_after = true;
            c->doomed = true;
        }
        return respond(wsi, h, c);
    }
    case LWS_CALLBACK_HTTP_BODY: {
        /* lws restarts its own timeout on every byte: the total deadline is checked here (and
           by the sweep, for a body that stalls) */
        track *t = lws_get_opaque_user_data(wsi);
        if (t && !t->expired && t->body_deadline && now_ms(h) > t->body_deadline) {
            t->expired = true;
            h->app->conns_timed_out++;
        }
        if (t && t->expired) return -1;
        if (c->too_big || !c->waiting_body) return 0;
        if (c->body_len + len > c->body_cap) {
            c->too_big = true;
            return 0;
        }
        memcpy(c->body + c->body_len, in, len);
        c->body_len += len;
        return 0;
    }
    case LWS_CALLBACK_HTTP_BODY_COMPLETION: {
        if (!c->waiting_body) return 0;
        c->waiting_body = false;
        track *t = lws_get_opaque_user_data(wsi);
        if (t) t->body_deadline = 0;
        if (c->body) c->body[c->body_len] = '\0';
        return respond(wsi, h, c);
    }
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (!c->responding) return 0;
        return write_more(wsi, h, c);
    case LWS_CALLBACK_CLOSED_HTTP:
        conn_reset_http(c);
        return 0;
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        memset(c, 0, sizeof(*c));
        return ws_filter(wsi, h, c);
    case LWS_CALLBACK_ESTABLISHED: {
        c->wsi = wsi;
        c->is_ws = true;
        /* a random id, known only to this socket: events for it go nowhere else, and an HTTP
           request naming it (X-Blockflow-Client) must name a connected socket's id */
        srv_random_hex(c->ws_client, 33);
        c->next_ws = h->ws_list;
        h->ws_list = c;
        h->app->ws_clients++;
        srv_class_socket(h->app, &c->who, +1);
        char s[128];
        snprintf(s, sizeof(s), "{\"type\":\"hello\",\"client\":\"%s\"}", c->ws_client);
        ws_push(h, c, s, strlen(s));
        return 0;
    }
    case LWS_CALLBACK_RECEIVE: {
        if (c->dropped) return -1;
        if (c->rx_len + len > h->app->lim.max_ws_message) {
            char reason_text[120];
            int n = snprintf(reason_text, sizeof(reason_text),
                             "{\"code\":\"limit\",\"limit\":\"max_ws_message\",\"bytes\":%zu}",
                             h->app->lim.max_ws_message);
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
                             (unsigned char *)reason_text, (size_t)n);
            return -1;
        }
        char *nrx = realloc(c->rx, c->rx_len + len + 1);
        if (!nrx) return -1;
        c->rx = nrx;
        memcpy(c->rx + c->rx_len, in, len);
        c->rx_len += len;
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            ws_message(h, c);
            free(c->rx);
            c->rx = NULL;
            c->rx_len = 0;
        }
        return 0;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        if (c->dropped) return -1;
        if (c->batch) return ws_write_batches(wsi, h, c);
        /* as many messages as the socket takes now, not one per callback */
        for (ws_msg *m; (m = c->q_head);) {
            c->q_head = m->next;
            if (!c->q_head) c->q_tail = NULL;
            c->q_bytes -= m->len;
            h->ws_bytes -= m->len;
            int n = lws_write(wsi, m->data + LWS_PRE, m->len, LWS_WRITE_TEXT);
            free(m);
            if (n < 0) return -1;
            if (lws_send_pipe_choked(wsi)) break;
        }
        if (c->q_head) lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_CLOSED:
        for (conn **pp = &h->ws_list; *pp; pp = &(*pp)->next_ws)
            if (*pp == c) {
                *pp = c->next_ws;
                h->app->ws_clients--;
                srv_class_socket(h->app, &c->who, -1);
                break;
            }
        ws_free_queue(h, c);
        free(c->rx);
        c->rx = NULL;
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- start and stop ------------------------------------------------------------------------ */

srv_http *srv_http_start(srv_app *app, const char *iface, int port, bool ipv6, char *why,
                         size_t n) {
    srv_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    h->app = app;
    app->emit = emit;
    app->emit_view = emit_view;
    app->client_known = client_known;
    app->emit_user = h;
    h->protocols[0] = (struct lws_protocols){
        .name = "blockflow",
        .callback = callback,
        .per_session_data_size = sizeof(conn),
        .rx_buffer_size = 16 << 10,
    };
    lws_set_log_level(LLL_ERR, NULL);
    void *loops[1] = {app->loop};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
                   (ipv6 ? 0 : LWS_SERVER_OPTION_DISABLE_IPV6);
    info.foreign_loops = loops;
    info.protocols = h->protocols;
    info.pcontext = &h->ctx;
    info.timeout_secs = 30;
    info.max_http_header_data = 16384; /* a Cookie header of up to 8 KiB, and the rest */
    h->ctx = lws_create_context(&info);
    if (!h->ctx) {
        snprintf(why, n, "cannot start libwebsockets (is libwebsockets-evlib-uv installed?)");
        free(h);
        app->emit = NULL;
        return NULL;
    }
    info.port = port;
    info.iface = iface;
    info.vhost_name = "blockflow";
    info.user = h;
    h->vh = lws_create_vhost(h->ctx, &info);
    if (!h->vh) {
        snprintf(why, n, "cannot listen on %s%s%s:%d", ipv6 ? "[" : "", iface, ipv6 ? "]" : "",
                 port);
        lws_context_destroy(h->ctx);
        return h; /* the caller runs the loop out and frees with srv_http_free */
    }
    h->port = lws_get_vhost_listen_port(h->vh);
    if ((h->sweep = malloc(sizeof(*h->sweep)))) {
        uv_timer_init(app->loop, h->sweep);
        h->sweep->data = h;
        uv_timer_start(h->sweep, sweep_cb, 1000, 1000);
        uv_unref((uv_handle_t *)h->sweep);
    }
    return h;
}

int srv_http_port(const srv_http *h) { return h->vh ? h->port : -1; }

static void stop_sweep(srv_http *h) {
    if (!h->sweep) return;
    uv_timer_stop(h->sweep);
    uv_close((uv_handle_t *)h->sweep, sweep_closed);
    h->sweep = NULL;
}

void srv_http_stop(srv_http *h) {
    if (!h) return;
    stop_sweep(h);
    if (h->ctx) lws_context_destroy(h->ctx);
}

bool srv_http_stopped(const srv_http *h) { return !h || !h->ctx; }

void srv_http_free(srv_http *h) {
    if (!h) return;
    stop_sweep(h);
    if (h->ctx) lws_context_destroy(h->ctx);
    if (h->app) h->app->emit = NULL, h->app->emit_view = NULL, h->app->client_known = NULL;
    free(h);
}
