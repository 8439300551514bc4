/*
 * train_jobs.c - live training of an open page (issue 27): play, pause, step, reset, edits at
 * step boundaries, coalesced step events, and views of the Variables while it learns.
 *
 *   POST /api/pages/{name}/train  {"action": "start" | "resume" | "pause" | "step" | "reset" |
 *                                  "watch" | "view", "steps"?: N, "rate"?: R, "metrics"?: [ref],
 *                                  "watch"?: [ref]}
 *        (rate: at most R steps a second, so a class can watch a fast page learn; 0: all;
 *        "view": a segment that only copies the watched tensors, e.g. the Variables before
 *        the first step, so that they have a run id to be read with)
 *   GET  /api/pages/{name}/train  -> {"state": "running"|"paused"|"idle", "step", "run_id",
 *                                     "target", "metrics", "watch", "history": {m: [[s, v]]}}
 *   POST /api/pages/{name}/edits  while a job plays: queued, applied at the next step boundary
 *        (202 {"queued": true, "edit": id}); its outcome is the event edits_applied (with the
 *        page's check and "state_reset": the Variables it re-initialised) or edits_failed
 *   POST /api/pages/{name}/backward        {"loss", "optimizer"?, "wrt"?}: the whole-page
 *        backward pass as blocks (bf_session_build_gradients; no kernel runs, answered at once)
 *   POST /api/pages/{name}/check_backward  {"loss", "samples"?, "tolerance"?, "eps"?, "seed"?}:
 *        bf_session_check_gradients as a job; its event backward_checked carries "result"
 *
 * A job is one trainer per open page, kept until the page closes. Each "play" (start, resume),
 * single step or reset is a *segment*: a run of the run workers (runs.c, srv_job_start) with a
 * run's rules (--max-runs, the page busy while it plays, POST /api/runs/{id}/cancel,
 * --run-timeout for each step, kernels only on the workers). Its events, in order:
 * train_started, then step_finished, edits_applied (its "state_reset": the Variables an edit
 * re-initialised) / edits_failed and train_reset as they happen, and one of train_paused (pause, a single step, a reset),
 * train_finished (the asked number of steps is done), run_failed or run_cancelled.
 *
 * Fairness: a playing segment runs its steps in slices and goes back to the tail of the
 * workers' queue after each (srv_run_requeue): after one step when another job waits, else
 * after 50 ms. So 30 pages training at once on a few workers advance round-robin by step.
 *
 * Coalescing: step_finished goes to a client at most every 50 ms (20 a second, shared by all
 * the pages of one client id), carrying the latest step and metrics and up to 64 points of
 * the steps since the previous event ("points": [[step, m1, m2, ...]]), so curves keep their
 * shape; the last step of a segment is always sent before its terminal event.
 *
 * Views: the refs in "watch" (Variables, gradients, activations) are copied at a step
 * boundary at most 4 times a second and at the end of each segment, and are read as any run's
 * tensors: GET /api/runs/{run_id}/tensors/{ref}?view=values (the step_finished event that
 * follows a new copy says "snapshot": its step). A Variable's view is its committed value.
 *
 * Thread rules: the trainer's requests (pause, reset, edits, watch) and what the loop reads
 * (step, history, the newest copy) are under its mutex; the session is touched by the worker
 * while a segment holds the page, by the loop otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall(SYS_gettid): the nice value of one thread */
#endif
#include "server.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

enum { SEG_PLAY, SEG_STEP, SEG_RESET, SEG_VIEW };
enum {
    MAX_REFS = 64,         /* metrics, and watched tensors */
    REF_BYTES = 300,
    HISTORY_CAP = 4096,    /* points per metric kept for GET .../train (older ones thinned) */
    PENDING_CAP = 1024,    /* points waiting for the next step event (thinned past it) */
    POINTS_PER_EVENT = 64,
    MAX_PENDING_EDITS = 64,
};
static const uint64_t EVENT_GAP_NS = 50000000ull; /* step events: 20 a second per client */
static const uint64_t SNAP_GAP_NS = 250000000ull; /* tensor copies: 4 a second */
static const uint64_t SLICE_NS = 50000000ull;     /* a job alone keeps a worker this long */

typedef struct series {
    char name[REF_BYTES];
    int64_t *steps;
    double *vals;
    int n;
} series;

typedef struct pending_edit {
    uint64_t id;
    char *text;
    size_t len;
    struct pending_edit *next;
} pending_edit;

typedef struct snapshot {
    int64_t step;
    int n;
    char (*refs)[REF_BYTES];
    bf_tensor **t;
} snapshot;

typedef struct refs {
    char (*v)[REF_BYTES];
    int n;
} refs;

typedef struct srv_trainer {
    srv_app *app;
    srv_page *page;
    char client[64];
    char run_id[24];        /* loop: the latest segment */
    int seg_kind;           /* set by the loop before the segment starts */
    uv_mutex_t mu;
    /* under mu: requests, applied by the worker at the next step boundary */
    atomic_int requests;    /* nonzero while a request waits: the step loop stops for it */
    bool pause_req, reset_req, config_req;
    pending_edit *edits, *edits_tail;
    int n_edits;
    uint64_t next_edit;
    refs new_metrics, new_watch;
    /* under mu: what the loop reads while a segment plays */
    int64_t step;
    int64_t target;         /* stop when the step count reaches it; -1: until paused */
    double rate;            /* at most this many steps a second (a class watching); 0: all */
    series *series;         /* one per metric */
    int n_series;
    snapshot *snap_new;     /* the newest copy, not yet taken by the loop */
    double steps_per_s;
    /* the session's owner (worker in a segment, loop otherwise) */
    refs metrics, watch;
    /* worker, within a segment */
    bool seg_started;
    srv_run *run;
    uint64_t slice_ns, last_step_ns, last_event_ns, last_snap_ns;
    int64_t sent_step, rate_step;
    uint64_t rate_ns;
    double last_ms;
    int64_t *pend_steps;    /* points since the last step event */
    double *pend_vals;      /* PENDING_CAP x metrics.n */
    int n_pend;
    bool snap_fresh;
    cJSON *views;           /* the refs of the newest copy */
    /* loop */
    snapshot *snap;
    struct srv_trainer *next;
} srv_trainer;

typedef struct client_gap {
    char client[64];
    uint64_t last_ns;
} client_gap;

typedef struct srv_train_hub {
    srv_trainer *list;      /* loop */
    uv_mutex_t mu;          /* guards gaps */
    client_gap *gaps;
    int n_gaps, cap_gaps;
} srv_train_hub;

/* ---- the workers' priority ------------------------------------------------------------------ */

void srv_worker_nice(void) {
#ifdef SYS_gettid
    /* on Linux the nice value is per thread: this one, and the threads it starts (libuv's pool,
     * made by the first run), yield to the loop thread, which answers requests and delivers
     * events; a class training at once then still gets quick answers. Best effort. */
    errno = 0;
    int base = getpriority(PRIO_PROCESS, 0);
    if (errno) base = 0;
    int want = base + 5 > 19 ? 19 : base + 5;
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), want);
#endif
}

/* ---- small helpers ------------------------------------------------------------------------- */

/* The body as JSON when it passes the library's checks (depth, no NUL), else NULL. */
static cJSON *parse_json(srv_app *app, const srv_request *req) {
    bf_error jc = {0};
    int limit = bf_context_config(app->ctx)->max_json_depth;
    if (!req->body_len || bf_json_check(req->body, req->body_len, limit, &jc)) return NULL;
    return cJSON_ParseWithLength(req->body, req->body_len);
}

static double wall_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec * 1000.0 + (double)tv.tv_usec / 1000.0;
}

static char *print(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

static void refs_free(refs *r) {
    free(r->v);
    r->v = NULL;
    r->n = 0;
}

static cJSON *refs_json(const refs *r) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < r->n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(r->v[i]));
    return a;
}

/* The block part of ref "block" or "block:port" into out. */
static void ref_block(const char *ref, char *out, size_t n) {
    snprintf(out, n, "%.*s", (int)strcspn(ref, ":"), ref);
}

/*
 * Parse a JSON list of refs (at most MAX_REFS, each naming a block of `page`) into out.
 * false with res filled (400, 404).
 */
static bool refs_parse(const cJSON *list, const bf_page *page, const char *what, refs *out,
                       srv_response *res) {
    out->v = NULL, out->n = 0;
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list) || n > MAX_REFS) {
        srv_error(res, 400, "bad_request", "\"%s\" takes a list of at most %d \"block\" or "
                  "\"block:port\"", what, MAX_REFS);
        return false;
    }
    if (n && !(out->v = calloc((size_t)n, REF_BYTES))) {
        srv_error(res, 500, "out_of_memory", "out of memory");
        return false;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        char block[REF_BYTES];
        if (!cJSON_IsString(it) || strlen(it->valuestring) >= REF_BYTES) {
            srv_error(res, 400, "bad_request", "\"%s\" items are \"block\" or \"block:port\" "
                      "of fewer than %d bytes", what, REF_BYTES);
            refs_free(out);
            return false;
        }
        ref_block(it->valuestring, block, sizeof(block));
        if (bf_page_find_block(page, block) < 0) {
            srv_error(res, 404, "not_found", "\"%s\" names no block \"%s\" of the page", what,
                      block);
            refs_free(out);
            return false;
        }
        snprintf(out->v[out->n++], REF_BYTES, "%s", it->valuestring);
    }
    return true;
}

/* The page's outputs as the default metrics. */
static bool refs_outputs(const bf_page *page, refs *out) {
    int n = bf_page_output_count(page);
    out->v = NULL, out->n = 0;
    if (n > MAX_REFS) n = MAX_REFS;
    if (n && !(out->v = calloc((size_t)n, REF_BYTES))) return false;
    for (int i = 0; i < n; i++) snprintf(out->v[out->n++], REF_BYTES, "%s", bf_page_output(page, i));
    return true;
}

static bool is_variable(bf_session *s, const char *block) {
    const bf_page *page = bf_session_page(s);
    int i = bf_page_find_block(page, block);
    return i >= 0 && !strcmp(bf_page_block_type(page, i), "Variable");
}

/* ---- tensor copies ------------------------------------------------------------------------- */

static void snap_free(snapshot *sn) {
    if (!sn) return;
    for (int i = 0; i < sn->n; i++) bf_tensor_free(sn->t[i]);
    free(sn->refs);
    free(sn->t);
    free(sn);
}

static const bf_tensor *snap_find(const snapshot *sn, const char *ref) {
    for (int i = 0; sn && i < sn->n; i++)
        if (!strcmp(sn->refs[i], ref)) return sn->t[i];
    return NULL;
}

/*
 * Copy the watched tensors of session s: a Variable's committed value, anything else the
 * output of the last step (a ref the last step did not compute keeps its copy from `prev`).
 * NULL when there is nothing to copy or memory ran out (the views then keep the older copy).
 */
static snapshot *snap_take(bf_session *s, const refs *watch, const snapshot *prev) {
    if (!watch->n) return NULL;
    snapshot *sn = calloc(1, sizeof(*sn));
    if (!sn || !(sn->refs = calloc((size_t)watch->n, REF_BYTES)) ||
        !(sn->t = calloc((size_t)watch->n, sizeof(bf_tensor *)))) {
        snap_free(sn);
        return NULL;
    }
    sn->step = bf_session_step_count(s);
    for (int i = 0; i < watch->n; i++) {
        const char *ref = watch->v[i];
        char block[REF_BYTES];
        ref_block(ref, block, sizeof(block));
        const char *colon = strchr(ref, ':');
        bf_tensor *t = NULL;
        bf_error e = {0};
        if (is_variable(s, block)) {
            if (bf_session_read_state(s, block, &t, &e)) t = NULL;
        } else {
            const bf_tensor *o = bf_session_output(s, block, colon ? colon + 1 : NULL);
            if (!o) o = snap_find(prev, ref);
            if (o && bf_tensor_copy(o, &t, &e)) t = NULL;
        }
        if (!t) continue;
        snprintf(sn->refs[sn->n], REF_BYTES, "%s", ref);
        sn->t[sn->n++] = t;
    }
    return sn;
}

/* The refs a copy holds, as a JSON array. */
static cJSON *snap_refs(const snapshot *sn) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && sn && i < sn->n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(sn->refs[i]));
    return a;
}

/* Hand a new copy to the loop (worker side). */
static void snap_publish(srv_trainer *t, snapshot *sn) {
    if (!sn) return;
    cJSON_Delete(t->views);
    t->views = snap_refs(sn);
    uv_mutex_lock(&t->mu);
    snap_free(t->snap_new);
    t->snap_new = sn;
    uv_mutex_unlock(&t->mu);
    t->snap_fresh = true;
}

/* "snapshot": step and "views": the refs readable, on an event after a new copy (worker). */
static void add_snapshot(srv_trainer *t, cJSON *o, int64_t step) {
    if (!t->snap_fresh) return;
    cJSON_AddNumberToObject(o, "snapshot", (double)step);
    if (t->views) cJSON_AddItemToObject(o, "views", cJSON_Duplicate(t->views, 1));
    t->snap_fresh = false;
}

/* A new copy taken on the loop while paused; what it cannot read keeps the newest copy's. */
static void loop_refresh(srv_trainer *t, bf_session *s) {
    uv_mutex_lock(&t->mu);
    const snapshot *prev = t->snap_new ? t->snap_new : t->snap;
    uv_mutex_unlock(&t->mu);
    snap_publish(t, snap_take(s, &t->watch, prev));
}

/* srv_run_tensor for a trainer's runs: the newest copy (loop). */
static const bf_tensor *train_tensor(srv_run *r, void *user, const char *block, const char *port,
                                     const char **why) {
    (void)r;
    srv_trainer *t = user;
    uv_mutex_lock(&t->mu);
    if (t->snap_new) {
        snap_free(t->snap);
        t->snap = t->snap_new;
        t->snap_new = NULL;
    }
    uv_mutex_unlock(&t->mu);
    char ref[2 * REF_BYTES];
    snprintf(ref, sizeof(ref), "%s%s%s", block, port && port[0] ? ":" : "", port ? port : "");
    const bf_tensor *x = snap_find(t->snap, ref);
    if (!x) *why = "not_found";
    return x;
}

/* ---- metric history and step events -------------------------------------------------------- */

static void series_clear(srv_trainer *t) {
    for (int i = 0; i < t->n_series; i++) {
        free(t->series[i].steps);
        free(t->series[i].vals);
    }
    free(t->series);
    t->series = NULL;
    t->n_series = 0;
}

/* One series per metric, keeping the points of metrics still named (under mu). */
static void series_follow(srv_trainer *t, const refs *m) {
    series *ns = m->n ? calloc((size_t)m->n, sizeof(series)) : NULL;
    if (m->n && !ns) return; /* no memory: the history keeps its old metrics */
    for (int i = 0; i < m->n; i++) {
        snprintf(ns[i].name, REF_BYTES, "%s", m->v[i]);
        for (int k = 0; k < t->n_series; k++)
            if (t->series[k].steps && !strcmp(t->series[k].name, m->v[i])) {
                ns[i] = t->series[k];
                t->series[k].steps = NULL, t->series[k].vals = NULL;
                break;
            }
    }
    series_clear(t);
    t->series = ns;
    t->n_series = m->n;
}

/* Append (step, v) to series `se`, halving the older points when full (under mu). */
static void series_add(series *se, int64_t step, double v) {
    if (!se->steps) {
        se->steps = malloc(HISTORY_CAP * sizeof(int64_t));
        se->vals = malloc(HISTORY_CAP * sizeof(double));
        if (!se->steps || !se->vals) {
            free(se->steps), free(se->vals);
            se->steps = NULL, se->vals = NULL;
            return;
        }
        se->n = 0;
    }
    if (se->n == HISTORY_CAP) {
        int k = 0;
        for (int i = 0; i < se->n; i += 2, k++) se->steps[k] = se->steps[i], se->vals[k] = se->vals[i];
        se->n = k;
    }
    se->steps[se->n] = step;
    se->vals[se->n++] = v;
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* Whether `client` may get a step event now (20 a second each); `force` always may. */
static bool client_may_send(srv_app *app, const char *client, uint64_t now, bool force) {
    srv_train_hub *h = app->train;
    bool ok = force;
    uv_mutex_lock(&h->mu);
    int i = 0;
    while (i < h->n_gaps && strcmp(h->gaps[i].client, client)) i++;
    if (i == h->n_gaps) {
        if (h->n_gaps == h->cap_gaps) {
            int cap = h->cap_gaps ? 2 * h->cap_gaps : 16;
            client_gap *g = realloc(h->gaps, (size_t)cap * sizeof(*g));
            if (!g) {
                uv_mutex_unlock(&h->mu);
                return true;
            }
            h->gaps = g, h->cap_gaps = cap;
        }
        snprintf(h->gaps[i].client, sizeof(h->gaps[i].client), "%s", client);
        h->gaps[i].last_ns = 0;
        h->n_gaps++;
    }
    if (now - h->gaps[i].last_ns >= EVENT_GAP_NS) ok = true;
    if (ok) h->gaps[i].last_ns = now;
    uv_mutex_unlock(&h->mu);
    return ok;
}

/* Send step_finished with the points since the last one (worker). */
static void send_step(srv_trainer *t, uint64_t now) {
    if (!t->n_pend) return;
    srv_run *r = t->run;
    int nm = t->metrics.n, last = t->n_pend - 1;
    cJSON *o = srv_run_event(r, "step_finished");
    cJSON_AddNumberToObject(o, "step", (double)t->pend_steps[last]);
    cJSON_AddNumberToObject(o, "ms", t->last_ms);
    double dt = (double)(now - t->rate_ns) / 1e9;
    if (t->rate_ns && dt > 0.2) {
        double rate = (double)(t->pend_steps[last] - t->rate_step) / dt;
        t->rate_ns = now, t->rate_step = t->pend_steps[last];
        uv_mutex_lock(&t->mu);
        t->steps_per_s = rate;
        uv_mutex_unlock(&t->mu);
    } else if (!t->rate_ns) {
        t->rate_ns = now, t->rate_step = t->pend_steps[last];
    }
    uv_mutex_lock(&t->mu);
    cJSON_AddNumberToObject(o, "steps_per_s", t->steps_per_s);
    uv_mutex_unlock(&t->mu);
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    for (int k = 0; k < nm; k++) cJSON_AddItemToObject(m, t->metrics.v[k], num(t->pend_vals[last * nm + k]));
    cJSON_AddItemToObject(o, "names", refs_json(&t->metrics));
    cJSON *pts = cJSON_AddArrayToObject(o, "points");
    int every = (t->n_pend + POINTS_PER_EVENT - 1) / POINTS_PER_EVENT;
    for (int i = t->n_pend - 1 - (t->n_pend - 1) / every * every; i < t->n_pend; i += every) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber((double)t->pend_steps[i]));
        for (int k = 0; k < nm; k++) cJSON_AddItemToArray(p, num(t->pend_vals[i * nm + k]));
        cJSON_AddItemToArray(pts, p);
    }
    add_snapshot(t, o, t->pend_steps[last]);
    cJSON_AddNumberToObject(o, "t", wall_ms());
    t->sent_step = t->pend_steps[last];
    t->n_pend = 0;
    t->last_event_ns = now;
    srv_run_post(r, o);
}

typedef struct step_ctx {
    srv_trainer *t;
    srv_run *r;
    bool paced;             /* one step at a time (a rate is set) */
} step_ctx;

/* After each committed step (worker): record it, maybe send it, say whether to stop. */
static int on_step(int64_t step, const double *m, int n, void *user) {
    step_ctx *c = user;
    srv_trainer *t = c->t;
    uint64_t now = uv_hrtime();
    t->last_ms = (double)(now - t->last_step_ns) / 1e6;
    t->last_step_ns = now;
    int nm = t->metrics.n < n ? t->metrics.n : n;
    uv_mutex_lock(&t->mu);
    t->step = step;
    for (int k = 0; k < nm && k < t->n_series; k++) series_add(&t->series[k], step, m[k]);
    uv_mutex_unlock(&t->mu);
    if (t->n_pend == PENDING_CAP) { /* thin the waiting points, keep the newest */
        int k = 0;
        for (int i = 1; i < t->n_pend; i += 2, k++) {
            t->pend_steps[k] = t->pend_steps[i];
            memcpy(t->pend_vals + k * t->metrics.n, t->pend_vals + i * t->metrics.n,
                   (size_t)t->metrics.n * sizeof(double));
        }
        t->n_pend = k;
    }
    t->pend_steps[t->n_pend] = step;
    for (int k = 0; k < t->metrics.n; k++)
        t->pend_vals[t->n_pend * t->metrics.n + k] = k < nm ? m[k] : NAN;
    t->n_pend++;
    if (now - t->last_event_ns >= EVENT_GAP_NS && client_may_send(t->app, t->client, now, false))
        send_step(t, now);
    return t->seg_kind != SEG_PLAY || c->paced || atomic_load(&t->requests) ||
           srv_run_cancelled(c->r) ||
           now - t->slice_ns >= SLICE_NS || now - t->last_snap_ns >= SNAP_GAP_NS ||
           srv_jobs_waiting(t->app);
}

/* ---- edits --------------------------------------------------------------------------------- */

/* Post event o from the loop to the trainer's client. */
static void loop_emit(srv_trainer *t, cJSON *o) {
    char *text = print(o);
    if (text && t->app->emit) t->app->emit(t->app->emit_user, t->client, text, strlen(text));
    free(text);
}

static cJSON *trainer_event(srv_trainer *t, const char *type) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "run_id", t->run_id);
    cJSON_AddStringToObject(o, "page", srv_page_name(t->page));
    return o;
}

/*
 * Apply one batch of edits to s (worker at a step boundary, or the loop while paused).
 * Returns the event: edits_applied {"edit", "step", "state_reset": [ids], "check"} or
 * edits_failed {"edit", "step", "problems"}; *resets counts the Variables re-initialised.
 */
static cJSON *apply_edit(srv_trainer *t, srv_run *r, bf_session *s, const pending_edit *pe,
                         int *resets) {
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    bf_status st = d ? bf_session_apply_edits(s, pe->text, pe->len, d, &e) : BF_ENOMEM;
    if (!d) snprintf(e.message, sizeof(e.message), "out of memory");
    cJSON *o = r ? srv_run_event(r, st ? "edits_failed" : "edits_applied")
                 : trainer_event(t, st ? "edits_failed" : "edits_applied");
    cJSON_AddNumberToObject(o, "edit", (double)pe->id);
    cJSON_AddNumberToObject(o, "step", (double)bf_session_step_count(s));
    if (st) {
        cJSON_AddItemToObject(o, "problems", srv_problems_json(d, &e));
    } else {
        cJSON *reset = cJSON_AddArrayToObject(o, "state_reset");
        for (size_t i = 0; i < bf_diags_count(d); i++) {
            const bf_error *w = bf_diags_at(d, i);
            if (!strcmp(w->code, "state_reset") && w->block_id[0]) {
                cJSON_AddItemToArray(reset, cJSON_CreateString(w->block_id));
                (*resets)++;
            }
        }
        char *check = NULL;
        if (bf_session_check_json(s, &check, &e) == BF_OK) {
            cJSON *c = cJSON_Parse(check);
            if (c) cJSON_AddItemToObject(o, "check", c);
        }
        bf_string_free(check);
    }
    bf_diags_free(d);
    return o;
}

static void edits_free(pending_edit *pe) {
    while (pe) {
        pending_edit *next = pe->next;
        free(pe->text);
        free(pe);
        pe = next;
    }
}

/* ---- segments (worker) --------------------------------------------------------------------- */

static void pend_alloc(srv_trainer *t) {
    free(t->pend_steps);
    free(t->pend_vals);
    t->n_pend = 0;
    t->pend_steps = malloc(PENDING_CAP * sizeof(int64_t));
    t->pend_vals = malloc((size_t)PENDING_CAP * (size_t)(t->metrics.n + 1) * sizeof(double));
}

/* Apply what the loop asked for since the last boundary; true when a pause was asked. */
static bool take_requests(srv_trainer *t, srv_run *r, bf_session *s) {
    uv_mutex_lock(&t->mu);
    pending_edit *edits = t->edits;
    t->edits = t->edits_tail = NULL;
    t->n_edits = 0;
    bool pause = t->pause_req, reset = t->reset_req, config = t->config_req;
    t->pause_req = t->reset_req = t->config_req = false;
    refs nm = t->new_metrics, nw = t->new_watch;
    t->new_metrics = (refs){0}, t->new_watch = (refs){0};
    atomic_store(&t->requests, 0);
    uv_mutex_unlock(&t->mu);
    int resets = 0;
    for (pending_edit *pe = edits; pe; pe = pe->next) {
        cJSON *o = apply_edit(t, r, s, pe, &resets);
        srv_run_post(r, o);
    }
    edits_free(edits);
    if (config) {
        if (t->n_pend) send_step(t, uv_hrtime()); /* the points of the old metrics */
        refs_free(&t->metrics);
        refs_free(&t->watch);
        t->metrics = nm, t->watch = nw;
        pend_alloc(t);
        uv_mutex_lock(&t->mu);
        series_follow(t, &t->metrics);
        uv_mutex_unlock(&t->mu);
    }
    if (reset) {
        if (t->n_pend) send_step(t, uv_hrtime());
        bf_error e = {0};
        bf_status st = bf_session_reset(s, &e);
        uv_mutex_lock(&t->mu);
        t->step = bf_session_step_count(s);
        series_follow(t, &(refs){0});
        series_follow(t, &t->metrics);
        uv_mutex_unlock(&t->mu);
        cJSON *o = srv_run_event(r, "train_reset");
        cJSON_AddNumberToObject(o, "step", (double)bf_session_step_count(s));
        if (st) cJSON_AddStringToObject(o, "error", e.message);
        srv_run_post(r, o);
        t->rate_ns = 0;
    }
    if (resets || reset || config) snap_publish(t, snap_take(s, &t->watch, NULL));
    return pause;
}

/* End the segment with event `type` (worker): the last step first, a fresh copy of the views. */
static void end_segment(srv_trainer *t, srv_run *r, bf_session *s, const char *type,
                        bf_status st, const bf_error *e, const bf_diags *d) {
    uint64_t now = uv_hrtime();
    if (t->n_pend) {
        client_may_send(t->app, t->client, now, true);
        snap_publish(t, snap_take(s, &t->watch, NULL));
        send_step(t, now);
    } else {
        snap_publish(t, snap_take(s, &t->watch, NULL));
    }
    cJSON *o = srv_run_event(r, type);
    int64_t step = bf_session_step_count(s);
    cJSON_AddNumberToObject(o, "step", (double)step);
    add_snapshot(t, o, step);
    if (st) {
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        const bf_error *first = e;
        for (size_t i = 0; d && i < bf_diags_count(d) && !e->message[0]; i++)
            if (bf_diags_at(d, i)->status) first = bf_diags_at(d, i);
        cJSON_AddStringToObject(err, "code", first->code[0] ? first->code
                                                            : bf_status_name(first->status));
        cJSON_AddStringToObject(err, "status", bf_status_name(st));
        cJSON_AddStringToObject(err, "message", first->message[0] ? first->message
                                                                  : bf_strerror(st));
        if (first->block_id[0]) cJSON_AddStringToObject(err, "block", first->block_id);
    }
    uv_mutex_lock(&t->mu);
    t->step = step;
    uv_mutex_unlock(&t->mu);
    t->seg_started = false;
    t->run = NULL;
    srv_run_finish(r, o); /* the page is the loop's again: nothing of r or s after this */
}

/* The fetches of a step: the metrics, then the watched refs that are not Variables. */
static int step_fetches(srv_trainer *t, bf_session *s, const char **out) {
    int n = 0;
    const bf_page *page = bf_session_page(s);
    for (int pass = 0; pass < 2; pass++) {
        const refs *list = pass ? &t->watch : &t->metrics;
        for (int i = 0; i < list->n; i++) {
            char block[REF_BYTES];
            ref_block(list->v[i], block, sizeof(block));
            if (bf_page_find_block(page, block) < 0) { /* an edit removed it */
                if (!pass) out[n++] = NULL;  /* keeps the metrics' positions: skipped below */
                continue;
            }
            if (pass && is_variable(s, block)) continue;
            out[n++] = list->v[i];
        }
    }
    return n;
}

static void train_exec(srv_run *r, void *user) {
    srv_trainer *t = user;
    bf_session *s = srv_run_session(r);
    t->run = r;
    if (!t->seg_started) {
        t->seg_started = true;
        t->n_pend = 0;
        t->last_event_ns = 0;
        t->last_snap_ns = uv_hrtime();
        t->rate_ns = 0;
        t->snap_fresh = false;
        cJSON *o = srv_run_event(r, "train_started");
        cJSON_AddStringToObject(o, "mode", t->seg_kind == SEG_PLAY    ? "play"
                                           : t->seg_kind == SEG_STEP  ? "step"
                                           : t->seg_kind == SEG_RESET ? "reset"
                                                                      : "view");
        cJSON_AddNumberToObject(o, "step", (double)bf_session_step_count(s));
        uv_mutex_lock(&t->mu);
        if (t->target >= 0) cJSON_AddNumberToObject(o, "target", (double)t->target);
        uv_mutex_unlock(&t->mu);
        cJSON_AddItemToObject(o, "metrics", refs_json(&t->metrics));
        cJSON_AddItemToObject(o, "watch", refs_json(&t->watch));
        srv_run_post(r, o);
    }
    if (srv_run_cancelled(r)) {
        bf_error e = {.status = BF_ECANCELED};
        snprintf(e.message, sizeof(e.message), "training was cancelled after step %lld",
                 (long long)bf_session_step_count(s));
        end_segment(t, r, s, "run_cancelled", BF_ECANCELED, &e, NULL);
        return;
    }
    bool pause = take_requests(t, r, s);
    uv_mutex_lock(&t->mu);
    int64_t target = t->target;
    double rate = t->rate;
    uv_mutex_unlock(&t->mu);
    int64_t step = bf_session_step_count(s);
    if (t->seg_kind == SEG_RESET || t->seg_kind == SEG_VIEW || pause) {
        end_segment(t, r, s, "train_paused", BF_OK, NULL, NULL);
        return;
    }
    if (t->seg_kind == SEG_PLAY && target >= 0 && step >= target) {
        end_segment(t, r, s, "train_finished", BF_OK, NULL, NULL);
        return;
    }
    if (rate > 0 && t->seg_kind == SEG_PLAY && t->last_step_ns) { /* paced: wait for the turn */
        uint64_t due = t->last_step_ns + (uint64_t)(1e9 / rate), now = uv_hrtime();
        if (now < due) {
            /* never hold a worker another page could use; alone, nap a little (no spinning) */
            if (!srv_jobs_waiting(t->app)) {
                uint64_t ms = (due - now) / 1000000;
                uv_sleep((unsigned)(ms > 20 ? 20 : ms < 1 ? 1 : ms));
            }
            srv_run_requeue(r);
            return;
        }
    }
    if (!t->pend_steps || !t->pend_vals) pend_alloc(t);
    const char *fetches[2 * MAX_REFS + 1];
    int nf = step_fetches(t, s, fetches);
    /* a removed metric keeps its place as a NaN: fetch the first metric in its place */
    const char *fallback = NULL;
    for (int i = 0; i < nf && !fallback; i++) fallback = fetches[i];
    for (int i = 0; i < t->metrics.n; i++) {
        if (!fetches[i]) fetches[i] = fallback;
    }
    bf_step_options o;
    bf_step_options_init(&o);
    o.fetches = nf && fallback ? fetches : NULL;
    o.n_fetches = nf && fallback ? nf : 0;
    o.timeout_s = t->app->lim.run_timeout_s;
    step_ctx c = {t, r, rate > 0};
    o.on_step = on_step;
    o.user = &c;
    int64_t n = t->seg_kind == SEG_STEP ? 1 : target >= 0 ? target - step : INT64_MAX / 4;
    t->slice_ns = uv_hrtime();
    t->last_step_ns = t->slice_ns;
    bf_diags *d = bf_diags_new();
    bf_error e = {0};
    bf_status st = d && t->pend_steps && t->pend_vals ? bf_session_step(s, n, &o, d, &e)
                                                      : BF_ENOMEM;
    if (st == BF_ENOMEM && !e.message[0]) snprintf(e.message, sizeof(e.message), "out of memory");
    if (st) {
        end_segment(t, r, s, st == BF_ECANCELED ? "run_cancelled" : "run_failed", st, &e, d);
        bf_diags_free(d);
        return;
    }
    bf_diags_free(d);
    uint64_t now = uv_hrtime();
    if (now - t->last_snap_ns >= SNAP_GAP_NS) {
        t->last_snap_ns = now;
        snap_publish(t, snap_take(s, &t->watch, NULL));
    }
    step = bf_session_step_count(s);
    if (t->seg_kind == SEG_STEP) {
        end_segment(t, r, s, "train_paused", BF_OK, NULL, NULL);
        return;
    }
    if (target >= 0 && step >= target) {
        end_segment(t, r, s, "train_finished", BF_OK, NULL, NULL);
        return;
    }
    srv_run_requeue(r); /* round-robin: the other pages' steps first */
}

/* ---- trainers (loop) ----------------------------------------------------------------------- */

static srv_train_hub *hub(srv_app *app) {
    if (!app->train && (app->train = calloc(1, sizeof(srv_train_hub))))
        uv_mutex_init(&app->train->mu);
    return app->train;
}

static srv_trainer *trainer_find(srv_app *app, const srv_page *p) {
    for (srv_trainer *t = app->train ? app->train->list : NULL; t; t = t->next)
        if (t->page == p) return t;
    return NULL;
}

static void trainer_free(srv_trainer *t) {
    edits_free(t->edits);
    refs_free(&t->new_metrics);
    refs_free(&t->new_watch);
    refs_free(&t->metrics);
    refs_free(&t->watch);
    series_clear(t);
    snap_free(t->snap_new);
    snap_free(t->snap);
    cJSON_Delete(t->views);
    free(t->pend_steps);
    free(t->pend_vals);
    uv_mutex_destroy(&t->mu);
    free(t);
}

void srv_train_page_closed(srv_app *app, srv_page *p) {
    if (!app->train) return;
    for (srv_trainer **tt = &app->train->list; *tt; tt = &(*tt)->next)
        if ((*tt)->page == p) {
            srv_trainer *t = *tt;
            *tt = t->next;
            trainer_free(t);
            return;
        }
}

void srv_train_free(srv_app *app) {
    srv_train_hub *h = app->train;
    if (!h) return;
    while (h->list) {
        srv_trainer *t = h->list;
        h->list = t->next;
        trainer_free(t);
    }
    free(h->gaps);
    uv_mutex_destroy(&h->mu);
    free(h);
    app->train = NULL;
}

/* Whether t's latest segment is still queued or running. */
static bool playing(srv_trainer *t) {
    srv_run *r = t->run_id[0] ? srv_run_find(t->app, t->run_id) : NULL;
    return r && !srv_run_over(r);
}

static srv_trainer *trainer_new(srv_app *app, srv_page *p, const char *client) {
    srv_train_hub *h = hub(app);
    srv_trainer *t = h ? calloc(1, sizeof(*t)) : NULL;
    if (!t) return NULL;
    t->app = app;
    t->page = p;
    snprintf(t->client, sizeof(t->client), "%s", client);
    uv_mutex_init(&t->mu);
    atomic_init(&t->requests, 0);
    t->target = -1;
    bf_session *s = srv_page_session(p);
    t->step = bf_session_step_count(s);
    if (!refs_outputs(bf_session_page(s), &t->metrics)) {
        trainer_free(t);
        return NULL;
    }
    series_follow(t, &t->metrics);
    t->next = h->list;
    h->list = t;
    return t;
}

static const char usage[] =
    "train takes {\"action\": \"start\"|\"resume\"|\"pause\"|\"step\"|\"reset\"|\"watch\"|"
    "\"view\", "
    "\"steps\"?: N, \"rate\"?: steps a second, \"metrics\"?: [ref], \"watch\"?: [ref]}";

/* Set t's metrics and watch from the body (loop): now while paused, at the next boundary
 * while playing. false with res filled. */
static bool configure(srv_trainer *t, const cJSON *body, bool now, srv_response *res) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "metrics");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(body, "watch");
    if (!m && !w) return true;
    const bf_page *page = bf_session_page(srv_page_session(t->page)); /* parsing only */
    refs nm = {0}, nw = {0};
    if (m && !refs_parse(m, page, "metrics", &nm, res)) return false;
    if (w && !refs_parse(w, page, "watch", &nw, res)) {
        refs_free(&nm);
        return false;
    }
    uv_mutex_lock(&t->mu);
    refs *cur_m = t->config_req ? &t->new_metrics : &t->metrics;
    refs *cur_w = t->config_req ? &t->new_watch : &t->watch;
    if (!m) { /* keep the other list: copy it */
        nm.n = cur_m->n;
        if (nm.n && (nm.v = calloc((size_t)nm.n, REF_BYTES))) memcpy(nm.v, cur_m->v, (size_t)nm.n * REF_BYTES);
        else nm.n = 0;
    }
    if (!w) {
        nw.n = cur_w->n;
        if (nw.n && (nw.v = calloc((size_t)nw.n, REF_BYTES))) memcpy(nw.v, cur_w->v, (size_t)nw.n * REF_BYTES);
        else nw.n = 0;
    }
    if (now) {
        refs_free(&t->metrics);
        refs_free(&t->watch);
        t->metrics = nm, t->watch = nw;
        series_follow(t, &t->metrics);
    } else {
        refs_free(&t->new_metrics);
        refs_free(&t->new_watch);
        t->new_metrics = nm, t->new_watch = nw;
        t->config_req = true;
        atomic_store(&t->requests, 1);
    }
    uv_mutex_unlock(&t->mu);
    if (now) { /* a copy of what is readable now (paused: the loop holds the session) */
        loop_refresh(t, srv_page_session(t->page));
        free(t->pend_steps), free(t->pend_vals);
        t->pend_steps = NULL, t->pend_vals = NULL; /* sized for the metrics at the next step */
    }
    return true;
}

static void start_segment(srv_trainer *t, int kind, const char *client, srv_response *res) {
    t->seg_kind = kind;
    snprintf(t->client, sizeof(t->client), "%s", client);
    srv_run *r = srv_job_start(t->app, t->page, client, train_exec, t, train_tensor, res);
    if (!r) return;
    snprintf(t->run_id, sizeof(t->run_id), "%s", srv_run_id(r));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run_id", t->run_id);
    cJSON_AddStringToObject(o, "page", srv_page_name(t->page));
    cJSON_AddStringToObject(o, "state", kind == SEG_PLAY ? "running" : "stepping");
    cJSON_AddStringToObject(o, "mode", kind == SEG_PLAY    ? "play"
                                       : kind == SEG_STEP  ? "step"
                                       : kind == SEG_RESET ? "reset"
                                                           : "view");
    uv_mutex_lock(&t->mu);
    cJSON_AddNumberToObject(o, "step", (double)t->step);
    uv_mutex_unlock(&t->mu);
    srv_json(res, 202, print(o));
}

static void status(srv_app *app, srv_store *st, const char *name, srv_response *res) {
    srv_page *p = srv_page_find(app, st, name);
    srv_trainer *t = p ? trainer_find(app, p) : NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "page", name);
    if (!t) {
        cJSON_AddStringToObject(o, "state", "idle");
        if (p && !srv_page_busy(p))
            cJSON_AddNumberToObject(o, "step", (double)bf_session_step_count(srv_page_session(p)));
        srv_json(res, 200, print(o));
        return;
    }
    bool play = playing(t);
    cJSON_AddStringToObject(o, "state", play ? "running" : "paused");
    cJSON_AddStringToObject(o, "run_id", t->run_id);
    uv_mutex_lock(&t->mu);
    cJSON_AddNumberToObject(o, "step", (double)t->step);
    if (t->target >= 0) cJSON_AddNumberToObject(o, "target", (double)t->target);
    else cJSON_AddNullToObject(o, "target");
    cJSON_AddNumberToObject(o, "steps_per_s", play ? t->steps_per_s : 0);
    cJSON *names = cJSON_AddArrayToObject(o, "metrics");
    cJSON *hist = cJSON_AddObjectToObject(o, "history");
    for (int i = 0; i < t->n_series; i++) {
        const series *se = &t->series[i];
        cJSON_AddItemToArray(names, cJSON_CreateString(se->name));
        cJSON *a = cJSON_AddArrayToObject(hist, se->name);
        for (int k = 0; se->steps && k < se->n; k++) {
            cJSON *pt = cJSON_CreateArray();
            cJSON_AddItemToArray(pt, cJSON_CreateNumber((double)se->steps[k]));
            cJSON_AddItemToArray(pt, num(se->vals[k]));
            cJSON_AddItemToArray(a, pt);
        }
    }
    uv_mutex_unlock(&t->mu);
    if (!play) cJSON_AddItemToObject(o, "watch", refs_json(&t->watch));
    if (!play && t->views) cJSON_AddItemToObject(o, "views", cJSON_Duplicate(t->views, 1));
    srv_json(res, 200, print(o));
}

static void train(srv_app *app, srv_store *st, const char *name, const char *client,
                  const srv_request *req, srv_response *res) {
    cJSON *body = parse_json(app, req);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(body, "action");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(body, "steps");
    const cJSON *rate = cJSON_GetObjectItemCaseSensitive(body, "rate");
    if (!cJSON_IsObject(body) || !cJSON_IsString(act) ||
        (rate && !(cJSON_IsNumber(rate) && rate->valuedouble >= 0 && rate->valuedouble <= 1e6)) ||
        (steps && !cJSON_IsNull(steps) &&
         !(cJSON_IsNumber(steps) && steps->valuedouble >= 1 && steps->valuedouble <= 1e15 &&
           steps->valuedouble == floor(steps->valuedouble)))) {
        srv_error(res, 400, "bad_request", "%s (steps: a whole number >= 1; rate: steps a "
                  "second, 0 for all)", usage);
        cJSON_Delete(body);
        return;
    }
    const char *a = act->valuestring;
    bool start = !strcmp(a, "start") || !strcmp(a, "play"), resume = !strcmp(a, "resume");
    bool pause = !strcmp(a, "pause"), step = !strcmp(a, "step"), reset = !strcmp(a, "reset");
    bool watch = !strcmp(a, "watch"), view = !strcmp(a, "view");
    if (!start && !resume && !pause && !step && !reset && !watch && !view) {
        srv_error(res, 400, "bad_request", "%s", usage);
        cJSON_Delete(body);
        return;
    }
    srv_page *p = srv_page_find(app, st, name);
    srv_trainer *t = p ? trainer_find(app, p) : NULL;
    bool play = t && playing(t);
    if (t && rate) { /* any action may set the pace; it applies at the next step */
        uv_mutex_lock(&t->mu);
        t->rate = rate->valuedouble;
        uv_mutex_unlock(&t->mu);
    }
    if (pause) {
        if (play) {
            uv_mutex_lock(&t->mu);
            t->pause_req = true;
            atomic_store(&t->requests, 1);
            uv_mutex_unlock(&t->mu);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "page", name);
        cJSON_AddStringToObject(o, "state", play ? "pausing" : "paused");
        if (t) cJSON_AddStringToObject(o, "run_id", t->run_id);
        srv_json(res, play ? 202 : 200, print(o));
        cJSON_Delete(body);
        return;
    }
    if (play && (reset || watch)) { /* at the next step boundary; the job plays on */
        if (watch && !configure(t, body, false, res)) {
            cJSON_Delete(body);
            return;
        }
        if (reset) {
            uv_mutex_lock(&t->mu);
            t->reset_req = true;
            atomic_store(&t->requests, 1);
            uv_mutex_unlock(&t->mu);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "page", name);
        cJSON_AddStringToObject(o, "run_id", t->run_id);
        cJSON_AddBoolToObject(o, "queued", true);
        srv_json(res, 202, print(o));
        cJSON_Delete(body);
        return;
    }
    if (play || (p && srv_page_busy(p))) {
        srv_error(res, 409, "busy", play ? "page \"%s\" is training; pause it first"
                                         : "page \"%s\" is running; wait for it or cancel it",
                  name);
        cJSON_Delete(body);
        return;
    }
    if (!p && !(p = srv_page_open(app, st, name, client, res))) {
        cJSON_Delete(body);
        return;
    }
    if (!t && !(t = trainer_new(app, p, client))) {
        srv_error(res, 500, "out_of_memory", "out of memory");
        cJSON_Delete(body);
        return;
    }
    if (rate) t->rate = rate->valuedouble; /* not playing: no worker reads it now */
    if (!configure(t, body, true, res)) {
        cJSON_Delete(body);
        return;
    }
    if (watch) {
        cJSON_Delete(body);
        status(app, st, name, res);
        return;
    }
    int64_t now_step = bf_session_step_count(srv_page_session(p));
    uv_mutex_lock(&t->mu);
    t->step = now_step;
    if (start) t->target = cJSON_IsNumber(steps) ? now_step + (int64_t)steps->valuedouble : -1;
    else if (resume && cJSON_IsNumber(steps)) t->target = now_step + (int64_t)steps->valuedouble;
    else if (resume && t->target >= 0 && t->target <= now_step) t->target = -1;
    if (reset) t->reset_req = true;
    uv_mutex_unlock(&t->mu);
    cJSON_Delete(body);
    if ((start || resume || step) && !srv_app_room_for_run(app, p, res)) return; /* --max-memory */
    start_segment(t, start || resume ? SEG_PLAY : step ? SEG_STEP : reset ? SEG_RESET : SEG_VIEW,
                  client, res);
    if (res->status != 202 && reset) {
        uv_mutex_lock(&t->mu);
        t->reset_req = false;
        uv_mutex_unlock(&t->mu);
    }
}

/* POST .../edits on a page with a trainer: queued while it plays, applied now while paused. */
static bool edits(srv_app *app, srv_store *st, const char *name, const srv_request *req,
                  srv_response *res) {
    srv_page *p = srv_page_find(app, st, name);
    srv_trainer *t = p ? trainer_find(app, p) : NULL;
    if (!t) return false;
    bool play = playing(t);
    if (!play && srv_page_busy(p)) return false; /* another run holds it: the router's 409 */
    cJSON *body = parse_json(app, req);
    cJSON *list = cJSON_IsArray(body) ? body : cJSON_GetObjectItemCaseSensitive(body, "edits");
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(body);
        return false; /* the router answers the malformed body as for any page */
    }
    pending_edit *pe = calloc(1, sizeof(*pe));
    if (pe) pe->text = cJSON_PrintUnformatted(list);
    cJSON_Delete(body);
    if (!pe || !pe->text) {
        edits_free(pe);
        srv_error(res, 500, "out_of_memory", "out of memory");
        return true;
    }
    pe->len = strlen(pe->text);
    uv_mutex_lock(&t->mu);
    pe->id = ++t->next_edit;
    bool full = play && t->n_edits >= MAX_PENDING_EDITS;
    if (play && !full) {
        if (t->edits_tail) t->edits_tail->next = pe;
        else t->edits = pe;
        t->edits_tail = pe;
        t->n_edits++;
        atomic_store(&t->requests, 1);
    }
    uv_mutex_unlock(&t->mu);
    if (full) {
        edits_free(pe);
        srv_error(res, 429, "limit", "%d edits of page \"%s\" wait for the next step already",
                  MAX_PENDING_EDITS, name);
        return true;
    }
    if (play) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "page", name);
        cJSON_AddStringToObject(o, "run_id", t->run_id);
        cJSON_AddBoolToObject(o, "queued", true);
        cJSON_AddNumberToObject(o, "edit", (double)pe->id);
        srv_json(res, 202, print(o));
        return true;
    }
    /* paused: now, as the router would, plus the event and a fresh copy of the views */
    bf_session *s = srv_page_session(p);
    int resets = 0;
    cJSON *ev = apply_edit(t, NULL, s, pe, &resets);
    edits_free(pe);
    bool ok = !strcmp(cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring, "edits_applied");
    if (ok) {
        srv_page_changed(p);
        if (resets) loop_refresh(t, s);
        cJSON *check = cJSON_DetachItemFromObject(ev, "check");
        cJSON *reset = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "state_reset"), 1);
        if (!check) check = cJSON_CreateObject();
        cJSON_AddItemToObject(check, "state_reset", reset);
        srv_json(res, 200, print(check));
    } else {
        cJSON *o = cJSON_CreateObject(), *pr = cJSON_GetObjectItemCaseSensitive(ev, "problems");
        cJSON *first = cJSON_GetArrayItem(pr, 0);
        cJSON *err = first ? cJSON_Duplicate(first, 1) : cJSON_CreateObject();
        cJSON_AddItemToObject(o, "error", err);
        cJSON_AddItemToObject(o, "problems", cJSON_Duplicate(pr, 1));
        srv_json(res, 422, print(o));
    }
    loop_emit(t, ev);
    return true;
}

/* ---- the backward pass ----------------------------------------------------------------------- */

typedef struct check_job {
    char loss[REF_BYTES];
    bf_gradcheck_options o;
} check_job;

static void check_exec(srv_run *r, void *user) {
    check_job *j = user;
    cJSON *o = srv_run_event(r, "run_started");
    cJSON_AddStringToObject(o, "kind", "check_backward");
    srv_run_post(r, o);
    char *json = NULL;
    bf_error e = {0};
    bf_status st = srv_run_cancelled(r) ? BF_ECANCELED
                                        : bf_session_check_gradients(srv_run_session(r), j->loss,
                                                                     &j->o, &json, &e);
    o = srv_run_event(r, st == BF_OK          ? "backward_checked"
                         : st == BF_ECANCELED ? "run_cancelled"
                                              : "run_failed");
    cJSON_AddStringToObject(o, "kind", "check_backward");
    cJSON_AddStringToObject(o, "loss", j->loss);
    if (st == BF_OK) {
        cJSON *res = cJSON_Parse(json);
        if (res) cJSON_AddItemToObject(o, "result", res);
    } else {
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(err, "code", e.code[0] ? e.code : bf_status_name(st));
        cJSON_AddStringToObject(err, "message", e.message[0] ? e.message : bf_strerror(st));
        if (e.block_id[0]) cJSON_AddStringToObject(err, "block", e.block_id);
    }
    bf_string_free(json);
    free(j);
    srv_run_finish(r, o);
}

/* The open, idle page `name` with the body's "loss"; NULL with res filled. */
static srv_page *backward_page(srv_app *app, srv_store *st, const char *name,
                               const char *client, const cJSON *body, srv_response *res) {
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(body, "loss");
    if (!cJSON_IsString(loss) || strlen(loss->valuestring) >= REF_BYTES) {
        srv_error(res, 400, "bad_request", "this takes {\"loss\": \"block\" or \"block:port\", "
                  "...}");
        return NULL;
    }
    srv_page *p = srv_page_find(app, st, name);
    if (p && srv_page_busy(p)) {
        srv_error(res, 409, "busy", "page \"%s\" is running or training; pause it first", name);
        return NULL;
    }
    return srv_page_open(app, st, name, client, res);
}

static void backward(srv_app *app, srv_store *st, const char *name, const char *client,
                     const srv_request *req, bool check, srv_response *res) {
    cJSON *body = parse_json(app, req);
    srv_page *p = backward_page(app, st, name, client, body, res);
    if (!p) {
        cJSON_Delete(body);
        return;
    }
    const char *loss = cJSON_GetObjectItemCaseSensitive(body, "loss")->valuestring;
    bf_session *s = srv_page_session(p);
    if (check) {
        check_job *j = calloc(1, sizeof(*j));
        if (!j) {
            srv_error(res, 500, "out_of_memory", "out of memory");
            cJSON_Delete(body);
            return;
        }
        snprintf(j->loss, sizeof(j->loss), "%s", loss);
        bf_gradcheck_options_init(&j->o);
        const cJSON *v;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(body, "samples")))
            j->o.samples = v->valuedouble > 1024 ? 1024 : v->valuedouble >= 1 ? (int)v->valuedouble : 0;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(body, "tolerance")) &&
            v->valuedouble > 0)
            j->o.tolerance = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(body, "eps")) &&
            v->valuedouble > 0 && v->valuedouble <= 1)
            j->o.eps = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(body, "seed")) &&
            v->valuedouble > 0 && v->valuedouble < 9e15)
            j->o.seed = (uint64_t)v->valuedouble;
        j->o.timeout_s = app->lim.run_timeout_s;
        cJSON_Delete(body);
        srv_run *r = srv_job_start(app, p, client, check_exec, j, NULL, res);
        if (!r) {
            free(j);
            return;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run_id", srv_run_id(r));
        cJSON_AddStringToObject(o, "page", name);
        cJSON_AddStringToObject(o, "kind", "check_backward");
        srv_json(res, 202, print(o));
        return;
    }
    const cJSON *opt = cJSON_GetObjectItemCaseSensitive(body, "optimizer");
    const cJSON *wrt = cJSON_GetObjectItemCaseSensitive(body, "wrt");
    refs w = {0};
    if ((opt && !cJSON_IsString(opt) && !cJSON_IsNull(opt)) ||
        (wrt && !cJSON_IsNull(wrt) && !refs_parse(wrt, bf_session_page(s), "wrt", &w, res))) {
        if (!res->body)
            srv_error(res, 400, "bad_request", "optimizer takes \"sgd:LR\", \"momentum:LR:M\" "
                      "or \"adam:LR\"");
        cJSON_Delete(body);
        return;
    }
    const char *ids[MAX_REFS];
    for (int i = 0; i < w.n; i++) ids[i] = w.v[i];
    char *created = NULL;
    bf_error e = {0};
    bf_status bst = bf_session_build_gradients(s, loss, w.n ? ids : NULL, w.n,
                                              cJSON_IsString(opt) ? opt->valuestring : NULL,
                                              &created, &e);
    refs_free(&w);
    cJSON_Delete(body);
    if (bst) {
        srv_error_bf(res, bst == BF_ENOTFOUND ? 404 : bst == BF_ENOMEM ? 500 : 422, &e);
        return;
    }
    srv_gradients_built(p, s, created, res);
}

bool srv_train_route(srv_app *app, srv_store *st, const char *act, const char *name,
                     const char *client, const srv_request *req, srv_response *res) {
    const char *m = req->method ? req->method : "";
    bool post = !strcmp(m, "POST");
    if (!strcmp(act, "edits")) return post && edits(app, st, name, req, res);
    bool is_train = !strcmp(act, "train"), is_back = !strcmp(act, "backward"),
         is_check = !strcmp(act, "check_backward");
    if (!is_train && !is_back && !is_check) return false;
    if (is_train && !strcmp(m, "GET")) status(app, st, name, res);
    else if (!post) srv_error(res, 405, "method_not_allowed", "%s is not allowed here", m);
    else if (is_train) train(app, st, name, client, req, res);
    else backward(app, st, name, client, req, is_check, res);
    return true;
}
