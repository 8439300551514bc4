/*
 * teach_routes.c - the teaching endpoints of `blockflow serve` (issue #15), on open pages:
 *
 *   POST /api/pages/{name}/explain    {"block", "index": [...], "port"?, "max_terms"?}
 *        -> 202 {"run_id", "page", "kind": "explain"}; the run's events end with
 *           explain_finished {"result": bf_session_explain's JSON}; max_terms defaults to
 *           10000 and is capped at 100000 (the sum always covers every term; padded_taps is
 *           capped alike; "truncated" / "padded_truncated" say when a list was cut)
 *   POST /api/pages/{name}/gradcheck  {"block", "eps"?, "tolerance"?, "samples"?, "seed"?,
 *                                      "gpu"?}
 *        -> 202 {"run_id", ...}; gradcheck_finished {"result": bf_session_gradcheck's JSON}
 *           (samples capped at 1024)
 *   POST /api/pages/{name}/grad       {"block", "dy"?}
 *        -> 200 {"created": {...}, "page": check} after bf_session_add_gradients (one edit
 *           batch; no kernels, so it is answered at once)
 *
 * explain and gradcheck run kernels (and gradcheck float64 finite differences), which never
 * happens on the loop thread: they are jobs on the run workers (runs.c, srv_teach_start), with
 * a run's rules (--max-runs, one at a time per page, --run-timeout, POST /api/runs/{id}/cancel)
 * and a run's events; the terminal event is also GET /api/runs/{id}/result. What is checked
 * here, at once, is what needs no kernel: the body (400), the page (404, 409 while it runs,
 * 422 when it does not load) and the block's existence (404). What the library finds (no
 * teaching view, an index out of range, a failed run) is the job's run_failed event.
 * Access, body and name checks are srv_route's, as for every endpoint.
 */
#include "server.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

bool srv_teach_route(srv_app *app, srv_store *st, const char *act, const char *name,
                     const char *client, const srv_request *req, srv_response *res);

static cJSON *body_object(srv_app *app, const srv_request *req, srv_response *res,
                          const char *usage) {
    int limit = bf_context_config(app->ctx)->max_json_depth;
    cJSON *j = NULL;
    if (req->body_len && bf_json_check(req->body, req->body_len, limit, NULL) == BF_OK)
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
static srv_page *open_idle(srv_app *app, srv_store *st, const char *name, const char *client,
                           srv_response *res) {
    srv_page *p = srv_page_find(app, st, name);
    if (p && srv_page_busy(p)) {
        srv_error(res, 409, "busy", "page \"%s\" is running; wait for run_finished or cancel it",
                  name);
        return NULL;
    }
    return srv_page_open(app, st, name, client, res);
}

/*
 * Queue job `j` on page `name` (open it when needed) and answer 202 {"run_id", "page",
 * "kind"}; or answer 409 (busy), 404 (no page or no block `j->block`), a load error, or a
 * limit of srv_teach_start.
 */
static void start_job(srv_app *app, srv_store *st, const char *name, const char *client,
                      srv_teach_job *j,
                      srv_response *res) {
    srv_page *p = open_idle(app, st, name, client, res);
    if (!p) return;
    if (bf_page_find_block(bf_session_page(srv_page_session(p)), j->block) < 0) {
        srv_error(res, 404, "not_found", "no block \"%s\" on page \"%s\"", j->block, name);
        return;
    }
    srv_run *r = srv_teach_start(app, p, client, j, res);
    if (!r) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_id", srv_run_id(r));
    cJSON_AddStringToObject(o, "page", name);
    cJSON_AddStringToObject(o, "kind", j->kind == SRV_JOB_EXPLAIN ? "explain" : "gradcheck");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    srv_json(res, 202, text);
}

/* Copy the body's "block" into j->block; false (400 in res) when it does not fit. */
static bool job_block(const cJSON *j, srv_teach_job *job, srv_response *res) {
    const char *b = cJSON_GetObjectItemCaseSensitive(j, "block")->valuestring;
    if (strlen(b) >= sizeof(job->block)) {
        srv_error(res, 400, "bad_request", "a block id has fewer than %zu bytes",
                  sizeof(job->block));
        return false;
    }
    snprintf(job->block, sizeof(job->block), "%s", b);
    return true;
}

static void explain(srv_app *app, srv_store *st, const char *name, const char *client,
                    const srv_request *req, srv_response *res) {
    cJSON *j = body_object(app, req, res, "explain takes {\"block\": ID, \"index\": [i, ...], "
                           "\"port\"?: NAME, \"max_terms\"?: N}");
    if (!j) return;
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(j, "index"), *v;
    srv_teach_job job = {.kind = SRV_JOB_EXPLAIN};
    int64_t *index = job.index;
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
    if (!ok || (port && (!cJSON_IsString(port) ||
                         strlen(port->valuestring) >= sizeof(job.port))) ||
        !(max_terms >= 1)) {
        srv_error(res, 400, "bad_request", "index takes an array of non-negative integers, "
                  "port a name, max_terms a positive number");
        cJSON_Delete(j);
        return;
    }
    if (port) snprintf(job.port, sizeof(job.port), "%s", port->valuestring);
    job.rank = rank;
    job.max_terms = max_terms > 100000 ? 100000 : (int64_t)max_terms;
    if (job_block(j, &job, res)) start_job(app, st, name, client, &job, res);
    cJSON_Delete(j);
}

static void gradcheck(srv_app *app, srv_store *st, const char *name, const char *client,
                      const srv_request *req, srv_response *res) {
    cJSON *j = body_object(app, req, res, "gradcheck takes {\"block\": ID, \"eps\"?, "
                           "\"tolerance\"?, \"samples\"?, \"seed\"?, \"gpu\"?: bool}");
    if (!j) return;
    srv_teach_job job = {.kind = SRV_JOB_GRADCHECK};
    bf_gradcheck_options o;
    bf_gradcheck_options_init(&o);
    o.eps = number_or(j, "eps", 0);
    o.tolerance = number_or(j, "tolerance", 0);
    double samples = number_or(j, "samples", 0), seed = number_or(j, "seed", 0);
    o.samples = samples > 1024 ? 1024 : samples > 0 ? (int)samples : 0;
    o.seed = seed > 0 && seed < 9.0e15 ? (uint64_t)seed : 0;
    o.compare_gpu = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "gpu"));
    if (!(o.eps >= 0) || !(o.tolerance >= 0) || o.eps > 1) {
        srv_error(res, 400, "bad_request", "eps takes a number in [0, 1], tolerance >= 0");
        cJSON_Delete(j);
        return;
    }
    job.gc = o; /* timeout_s: --run-timeout, set by runs.c */
    if (job_block(j, &job, res)) start_job(app, st, name, client, &job, res);
    cJSON_Delete(j);
}

static void grad(srv_app *app, srv_store *st, const char *name, const char *client,
                 const srv_request *req, srv_response *res) {
    cJSON *j = body_object(app, req, res, "grad takes {\"block\": ID, \"dy\"?: SOURCE}");
    if (!j) return;
    const cJSON *dy = cJSON_GetObjectItemCaseSensitive(j, "dy");
    if (dy && !cJSON_IsString(dy) && !cJSON_IsNull(dy)) {
        srv_error(res, 400, "bad_request", "dy takes a source \"block\" or \"block:port\"");
        cJSON_Delete(j);
        return;
    }
    srv_page *p = open_idle(app, st, name, client, res);
    if (!p) {
        cJSON_Delete(j);
        return;
    }
    bf_session *s = srv_page_session(p);
    char *created = NULL;
    bf_error e = {0};
    bf_status gst = bf_session_add_gradients(
        s, cJSON_GetObjectItemCaseSensitive(j, "block")->valuestring,
        cJSON_IsString(dy) ? dy->valuestring : NULL, &created, &e);
    cJSON_Delete(j);
    if (gst) {
        fail(res, &e);
        return;
    }
    srv_gradients_built(p, s, created, res);
}

void srv_gradients_built(srv_page *p, bf_session *s, char *created, srv_response *res) {
    char *check = NULL;
    bf_error e = {0};
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
    if (!out) srv_error(res, 500, "out_of_memory", "out of memory");
    else srv_json(res, 200, out);
}

bool srv_teach_route(srv_app *app, srv_store *st, const char *act, const char *name,
                     const char *client, const srv_request *req, srv_response *res) {
    if (!strcmp(act, "explain")) explain(app, st, name, client, req, res);
    else if (!strcmp(act, "gradcheck")) gradcheck(app, st, name, client, req, res);
    else if (!strcmp(act, "grad")) grad(app, st, name, client, req, res);
    else return false;
    return true;
}
