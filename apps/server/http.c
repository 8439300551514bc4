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
 * Slow clients: an HTTP answer is written in 32 KiB pieces, each only when the socket is
 * writable, with a 30 s timeout per piece. Each WebSocket client has its own queue of events;
 * when a client does not read and its queue passes --max-ws-queue bytes it is dropped, so it
 * never holds memory without bound nor delays anybody else.
 */
#include "http.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct ws_msg {
    struct ws_msg *next;
    size_t len;
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the text */
} ws_msg;

typedef struct conn {
    struct lws *wsi;
    /* HTTP */
    char method[8];
    char *path, *query;
    char host[300], origin[300], auth[200], cookie[600], client[72];
    char *body;
    size_t body_len, body_cap;
    bool too_big, waiting_body, responding, close_after;
    srv_response res;
    size_t sent;
    /* WebSocket */
    bool is_ws, dropped;
    char ws_client[72];
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
    int port;
    struct lws_protocols protocols[2];
    unsigned char out[LWS_PRE + (32 << 10)]; /* one chunk of a response body on its way out */
};

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
    if (close) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---- WebSocket ----------------------------------------------------------------------------- */

static void ws_free_queue(conn *c) {
    for (ws_msg *m = c->q_head, *next; m; m = next) {
        next = m->next;
        free(m);
    }
    c->q_head = c->q_tail = NULL;
    c->q_bytes = 0;
}

static void ws_push(srv_http *h, conn *c, const char *json, size_t len) {
    if (c->dropped) return;
    if (c->q_bytes + len > h->app->lim.max_ws_queue) {
        /* a client that does not read: drop it rather than hold memory or delay others */
        c->dropped = true;
        h->app->ws_dropped++;
        ws_free_queue(c);
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    ws_msg *m = malloc(sizeof(*m) + LWS_PRE + len);
    if (!m) return;
    m->next = NULL;
    m->len = len;
    memcpy(m->data + LWS_PRE, json, len);
    if (c->q_tail) c->q_tail->next = m;
    else c->q_head = m;
    c->q_tail = m;
    c->q_bytes += len;
    lws_callback_on_writable(c->wsi);
}

static void emit(void *user, const char *client, const char *json, size_t len) {
    srv_http *h = user;
    for (conn *c = h->ws_list; c; c = c->next_ws)
        if (!client[0] || !strcmp(client, c->ws_client)) ws_push(h, c, json, len);
}

static void ws_reply_error(srv_http *h, conn *c, const char *code, const char *message) {
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(o, "type", "error");
    cJSON_AddStringToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s) ws_push(h, c, s, strlen(s));
    free(s);
}

/* One whole message from a client: {"type": "ping"} is the only request so far. */
static void ws_message(srv_http *h, conn *c) {
    int limit = bf_context_config(h->app->ctx)->max_json_depth;
    cJSON *j = srv_json_depth(c->rx, c->rx_len, limit) <= limit
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
    } else ws_reply_error(h, c, "bad_request", "unknown message type (known: ping)");
    cJSON_Delete(j);
}

static int ws_filter(struct lws *wsi, srv_http *h, conn *c) {
    srv_request req;
    srv_response res = {0};
    if (!request_line(wsi, c) || strcmp(c->path, "/ws")) {
        conn_reset_http(c);
        lws_return_http_status(wsi, 404, NULL);
        return -1;
    }
    collect_headers(wsi, c, &req);
    int rc = h->app->stopping ? -1 : srv_route_access(h->app, &req, true, &res);
    char client[72] = "";
    if (!rc && c->query) {
        const char *q = strstr(c->query, "client=");
        if (q && (q == c->query || q[-1] == '&')) {
            snprintf(client, sizeof(client), "%.*s", (int)strcspn(q + 7, "&"), q + 7);
            if (!srv_name_ok(client)) client[0] = '\0';
        }
    }
    conn_reset_http(c);
    if (rc) {
        lws_return_http_status(wsi, h->app->stopping ? 503 : (unsigned)res.status,
                               NULL);
        srv_response_free(&res);
        return -1;
    }
    snprintf(c->ws_client, sizeof(c->ws_client), "%s", client);
    return 0;
}

/* ---- the callback -------------------------------------------------------------------------- */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
    conn *c = user;
    struct lws_vhost *vh = lws_get_vhost(wsi);
    srv_http *h = vh ? lws_get_vhost_user(vh) : NULL;
    /* no vhost, or no per-connection memory (lws refused the request line before allocating
       it, e.g. a NUL in the URI): lws answers by itself */
    if (!h || !c) return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        conn_reset_http(c);
        c->wsi = wsi;
        c->close_after = false;
        if (!request_line(wsi, c)) {
            lws_return_http_status(wsi, 400, NULL);
            return -1;
        }
        char cl[32];
        long long clen = copy_hdr(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, cl, sizeof(cl))
                             ? atoll(cl)
                             : 0;
        if (clen < 0) clen = 0;
        if ((unsigned long long)clen > h->app->lim.max_body) {
            c->too_big = true; /* answered now; the body is never read */
            return respond(wsi, h, c);
        }
        if (clen > 0 && (!strcmp(c->method, "POST") || !strcmp(c->method, "PUT"))) {
            c->waiting_body = true;
            c->body = malloc((size_t)clen + 1);
            c->body_cap = c->body ? (size_t)clen : 0;
            if (!c->body) c->too_big = true;
            return 0;
        }
        return respond(wsi, h, c);
    }
    case LWS_CALLBACK_HTTP_BODY:
        if (c->too_big || !c->waiting_body) return 0;
        if (c->body_len + len > c->body_cap) {
            c->too_big = true;
            return 0;
        }
        memcpy(c->body + c->body_len, in, len);
        c->body_len += len;
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (!c->waiting_body) return 0;
        c->waiting_body = false;
        if (c->body) c->body[c->body_len] = '\0';
        return respond(wsi, h, c);
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
        if (!c->ws_client[0])
            snprintf(c->ws_client, sizeof(c->ws_client), "c%llu",
                     (unsigned long long)++h->app->next_client);
        c->next_ws = h->ws_list;
        h->ws_list = c;
        h->app->ws_clients++;
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
        ws_msg *m = c->q_head;
        if (!m) return 0;
        c->q_head = m->next;
        if (!c->q_head) c->q_tail = NULL;
        c->q_bytes -= m->len;
        int n = lws_write(wsi, m->data + LWS_PRE, m->len, LWS_WRITE_TEXT);
        free(m);
        if (n < 0) return -1;
        if (c->q_head) lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_CLOSED:
        for (conn **pp = &h->ws_list; *pp; pp = &(*pp)->next_ws)
            if (*pp == c) {
                *pp = c->next_ws;
                h->app->ws_clients--;
                break;
            }
        ws_free_queue(c);
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
    info.max_http_header_data = 4096;
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
    return h;
}

int srv_http_port(const srv_http *h) { return h->vh ? h->port : -1; }

void srv_http_stop(srv_http *h) {
    if (h && h->ctx) lws_context_destroy(h->ctx);
}

bool srv_http_stopped(const srv_http *h) { return !h || !h->ctx; }

void srv_http_free(srv_http *h) {
    if (!h) return;
    if (h->ctx) lws_context_destroy(h->ctx);
    if (h->app) h->app->emit = NULL;
    free(h);
}
