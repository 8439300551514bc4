/*
 * teach_routes.c - the teaching endpoints of `blockflow serve` (issue #15), on open pages:
 *
 *   POST /api/pages/{name}/explain    {"block", "index": [...], "port"?, "max_terms"?}
 *        -> bf_session_explain's JSON; max_terms defaults to 10000 and is capped at 100000
 *           (the sum always covers every term; "truncated" says when the list was cut)
 *   POST /api/pages/{name}/gradcheck  {"block", "eps"?, "tolerance"?, "samples"?, "seed"?,
 *                                      "gpu"?}
 *        -> bf_session_gradcheck's JSON (samples capped at 1024)
 *   POST /api/pages/{name}/grad       {"block", "dy"?}
 *        -> {"created": {...}, "page": check} after bf_session_add_gradients (one edit batch)
 *
 * Access, body and name checks are srv_route's, as for every endpoint; errors are the usual
 * {"error": {...}} (404 no such block, 422 for what the page cannot do, 409 while it runs).
 * explain and gradcheck compute on the request's thread, within --run-timeout: they are meant
 * for teaching-size pages; a long computation belongs in a run.
 */
#include "server.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

bool srv_teach_route(srv_app *app, const char *act, const char *name, const char *client,
                     const srv_request *req, srv_response *res);

static cJSON *body_object(srv_app *app, const srv_request *req, srv_response *res,
                          const char *usage) {
    int limit = bf_context_config(app->ctx)->max_json_depth;
    cJSON *j = NULL;
    if (req->body_len && srv_json_depth(req->body, req->body_len, limit) <= limit)
        j = cJSON_ParseWithLength(req->body, req->body_len);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "block");
    if (!cJSON_IsObject(j) || !cJSON_IsString(b)) {
        srv_error(res, 400, "bad_request", "%s", usage);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static double number_or(const cJSON *o, const char *k, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void fail(srv_response *res, const bf_error *e) {
    int status = e->status == BF_ENOTFOUND   ? 404
                 : e->status == BF_ENOMEM    ? 500
                 : e->status == BF_EINTERNAL ? 500
                 : e->status == BF_ETIMEDOUT ? 504
                                             : 422;
    srv_error_bf(res, status, e);
}

/* The open page `name`, or NULL with res filled (busy, or cannot be opened). */
static srv_page *open_idle(srv_app *app, const char *name, const char *client,
                           srv_response *res) {
    srv_page *p = srv_page_find(app, name);
    if (p && srv_page_busy(p)) {
        srv_error(res, 409, "busy", "page \"%s\" is running; wait for run_finished or cancel it",
                  name);
        return NULL;
    }
    return srv_page_open(app, name, client, res);
}

static void explain(srv_app *app, const char *name, const char *client, const srv_request *req,
                    srv_response *res) {
    cJSON *j = body_object(app, req, res, "explain takes {\"block\": ID, \"index\": [i, ...], "
                           "\"port\"?: NAME, \"max_terms\"?: N}");
    if (!j) return;
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(j, "index"), *v;
    int64_t index[BF_MAX_RANK];
    int rank = 0;
    bool ok = cJSON_IsArray(idx) && cJSON_GetArraySize(idx) <= BF_MAX_RANK;
    const cJSON *list = ok ? idx : NULL;
    cJSON_ArrayForEach(v, list) {
        ok = ok && cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.0e15 &&
             v->valuedouble == (double)(int64_t)v->valuedouble;
        if (ok) index[rank++] = (int64_t)v->valuedouble;
    }
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(j, "port");
    double max_terms = number_or(j, "max_terms", 10000);
    if (!ok || (port && !cJSON_IsString(port)) || !(max_terms >= 1)) {
        srv_error(res, 400, "bad_request", "index takes an array of non-negative integers, "
                  "port a name, max_terms a positive number");
        cJSON_Delete(j);
        return;
    }
    srv_page *p = open_idle(app, name, client, res);
    if (!p) {
        cJSON_Delete(j);
        return;
    }
    bf_explain_options o;
    bf_explain_options_init(&o);
    o.port = port ? port->valuestring : NULL;
    o.max_terms = max_terms > 100000 ? 100000 : (int64_t)max_terms;
    o.timeout_s = app->lim.run_timeout_s;
    char *text = NULL;
    bf_error e = {0};
    bf_status st = bf_session_explain(srv_page_session(p),
                                      cJSON_GetObjectItemCaseSensitive(j, "block")->valuestring,
                                      index, rank, &o, &text, &e);
    cJSON_Delete(j);
    if (st) {
        fail(res, &e);
        return;
    }
    srv_json(res, 200, strdup(text));
    bf_string_free(text);
}

static void gradcheck(srv_app *app, const char *name, const char *client,
                      const srv_request *req, srv_response *res) {
    cJSON *j = body_object(app, req, res, "gradcheck takes {\"block\": ID, \"eps\"?, "
                           "\"tolerance\"?, \"samples\"?, \"seed\"?, \"gpu\"?: bool}");
    if (!j) return;
    bf_gradcheck_options o;
    bf_gradcheck_options_init(&o);
    o.eps = number_or(j, "eps", 0);
    o.tolerance = number_or(j, "tolerance", 0);
    double samples = number_or(j, "samples", 0), seed = number_or(j, "seed", 0);
    o.samples = samples > 1024 ? 1024 : samples > 0 ? (int)samples : 0;
    o.seed = seed > 0 && seed < 9.0e15 ? (uint64_t)seed : 0;
    o.compare_gpu = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "gpu"));
    o.timeout_s = app->lim.run_timeout_s;
    if (!(o.eps >= 0) || !(o.tolerance >= 0) || o.eps > 1) {
        srv_error(res, 400, "bad_request", "eps takes a number in [0, 1], tolerance >= 0");
        cJSON_Delete(j);
        return;
    }
    srv_page *p = open_idle(app, name, client, res);
    if (!p) {
        cJSON_Delete(j);
        return;
    }
    char *text = NULL;
    bf_error e = {0};
    bf_status st = bf_session_gradcheck(
        srv_page_session(p), cJSON_GetObjectItemCaseSensitive(j, "block")->valuestring, &o,
        &text, &e);
    cJSON_Delete(j);
    if (st) {
        fail(res, &e);
        return;
    }
    srv_json(res, 200, strdup(text));
    bf_string_free(text);
}

static void grad(srv_app *app, const char *name, const char *client, const srv_request *req,
                 srv_response *res) {
    cJSON *j = body_object(app, req, res, "grad takes {\"block\": ID, \"dy\"?: SOURCE}");
    if (!j) return;
    const cJSON *dy = cJSON_GetObjectItemCaseSensitive(j, "dy");
    if (dy && !cJSON_IsString(dy) && !cJSON_IsNull(dy)) {
        srv_error(res, 400, "bad_request", "dy takes a source \"block\" or \"block:port\"");
        cJSON_Delete(j);
        return;
    }
    srv_page *p = open_idle(app, name, client, res);
    if (!p) {
        cJSON_Delete(j);
        return;
    }
    bf_session *s = srv_page_session(p);
    char *created = NULL, *check = NULL;
    bf_error e = {0};
    bf_status st = bf_session_add_gradients(
        s, cJSON_GetObjectItemCaseSensitive(j, "block")->valuestring,
        cJSON_IsString(dy) ? dy->valuestring : NULL, &created, &e);
    cJSON_Delete(j);
    if (st) {
        fail(res, &e);
        return;
    }
    srv_page_changed(p);
    if (bf_session_check_json(s, &check, &e)) {
        bf_string_free(created);
        fail(res, &e);
        return;
    }
    size_t n = strlen(created) + strlen(check) + 32;
    char *out = malloc(n);
    if (out) snprintf(out, n, "{\"created\":%s,\"page\":%s}", created, check);
    bf_string_free(created);
    bf_string_free(check);
    if (!out) srv_error(res, 500, "no_memory", "out of memory");
    else srv_json(res, 200, out);
}

bool srv_teach_route(srv_app *app, const char *act, const char *name, const char *client,
                     const srv_request *req, srv_response *res) {
    if (!strcmp(act, "explain")) explain(app, name, client, req, res);
    else if (!strcmp(act, "gradcheck")) gradcheck(app, name, client, req, res);
    else if (!strcmp(act, "grad")) grad(app, name, client, req, res);
    else return false;
    return true;
}
