/*
 * runs.c - open pages, the run workers, and the events they send back to the loop.
 *
 * An open page is a bf_session held by the server, keyed by page name, owned by the client
 * that opened it (for the per-client limit), closed after --idle-timeout unused. A session is
 * touched by one thread at a time: by the loop thread while it is idle, by one worker while a
 * run of it is queued or running (`busy`); the hand-over goes through the mutex-protected job
 * queue, so the two never overlap. An edit or a run of a busy page gets 409 "busy".
 *
 * Runs go to our own worker threads, not to uv_queue_work: bf_session_run blocks its thread
 * while the blocks run on libuv's thread pool, so running it *on* that pool could take every
 * pool thread and deadlock. Each worker calls bf_session_run; the on_event callback (on the
 * worker) formats the event as JSON and appends it to a queue under the mutex, then wakes the
 * loop with uv_async_send. The loop drains the queue in order and hands each event to the
 * WebSocket layer; the worker's last record finishes the run on the loop. Events of one run
 * are therefore delivered in the order they happened: run_started, the block events, and one
 * of run_finished / run_failed / run_cancelled.
 *
 * The teaching calls (bf_session_explain, bf_session_gradcheck) run kernels and float64 finite
 * differences, so they are jobs on the same workers with the same rules (srv_teach_start):
 * run_started, the block events of the runs they make (each with the job's "kind"), then
 * explain_finished / gradcheck_finished carrying the library's JSON as "result", or
 * run_failed / run_cancelled. Every finished run keeps its terminal event for
 * GET /api/runs/{id}/result, within a memory budget (the oldest are dropped first); an event
 * whose result is too large for one WebSocket message of a slow client's queue is sent
 * without it ("result_omitted"), and the client fetches it.
 */
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

struct srv_page {
    char name[128];
    srv_store *store;      /* the folder it was read from: the teacher's, or a student's */
    char owner[64];        /* client id that opened it ("" = anonymous) */
    bf_session *s;
    bool busy;             /* a run is queued or running: the session belongs to a worker */
    uint64_t last_used;    /* uv_now() of the last request */
    uint64_t gen;          /* bumped by every change: tensors of older runs are gone */
    srv_run *last_run;     /* the run whose tensors the session holds, or NULL */
    srv_page *next;
};

enum { RUN_QUEUED, RUN_DONE }; /* queued covers running: the loop cannot tell */

struct srv_run {
    char id[24];
    char owner[64];        /* the student it belongs to ("" the teacher: classroom.c) */
    char page_name[128];
    char client[64];
    srv_app *app;
    srv_page *page;        /* NULL once the page was closed after the run */
    uint64_t gen;          /* the page's gen when the run finished */
    char **fetches;
    int n_fetches;
    bf_device_kind device;
    srv_teach_job *job;    /* a teaching job (malloc'd), or NULL for a run */
    srv_job_fn fn;         /* a job of another file (srv_job_start), or NULL */
    void *fn_user;
    srv_tensor_fn tensors; /* answers srv_run_tensor for such a job, or NULL */
    char *result;          /* the terminal event, kept for srv_run_result (NULL: not yet, or
                              dropped for the budget) */
    size_t result_len;
    int state;             /* RUN_QUEUED or RUN_DONE, read and written on the loop thread */
    atomic_int cancel;     /* set by srv_run_cancel (loop), read by the worker */
    bf_status status;      /* outcome, written by the worker before it hands the run back */
    bf_error err;
    bf_diags *diags;
    double ms;
    /* its tensors, kept when another client's run or edit replaced them in the session, so
       the requester reads them until their own next run (srv_keep_results) */
    struct srv_kept *kept;
    int n_kept;
    size_t kept_bytes;
    srv_run *next;         /* app->runs */
    srv_run *next_job;     /* app->jobs_* */
};

typedef struct srv_event {
    char client[64];
    char *json;            /* NULL for the record that finishes `run` */
    size_t len;
    srv_run *run;
    struct srv_event *next;
} srv_event;

/* ---- open pages ---------------------------------------------------------------------------- */

srv_page *srv_page_find(srv_app *app, const srv_store *st, const char *name) {
    for (srv_page *p = app->pages; p; p = p->next)
        if (p->store == st && !strcmp(p->name, name)) return p;
    return NULL;
}

bool srv_page_busy(const srv_page *p) { return p->busy; }
bf_session *srv_page_session(srv_page *p) { return p->s; }
const char *srv_page_name(const srv_page *p) { return p->name; }


void srv_page_changed(srv_page *p) {
    p->gen++;
    p->last_run = NULL;
}

void srv_page_event(srv_app *app, srv_page *p, const char *type, const char *edits,
                    size_t edits_len, const char *by) {
    if (!app->emit_view) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "page", p->name);
    cJSON_AddStringToObject(o, "space", p->store ? p->store->label : "");
    cJSON_AddNumberToObject(o, "revision", (double)p->gen);
    cJSON *e = edits ? cJSON_ParseWithLength(edits, edits_len) : NULL;
    if (e) cJSON_AddItemToObject(o, "edits", e);
    cJSON_AddStringToObject(o, "by", by ? by : "");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text) app->emit_view(app->emit_user, p->store ? p->store->label : "", p->name, false,
                             text, strlen(text));
    free(text);
}

void srv_file_event(srv_app *app, const srv_store *st, const char *name, const char *revision,
                    const char *by) {
    if (!app->emit_view) return;
    bool teacher = !st->label[0];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", teacher ? "teacher_page_saved" : "page_saved");
    cJSON_AddStringToObject(o, "page", name);
    cJSON_AddStringToObject(o, "space", st->label);
    cJSON_AddStringToObject(o, "revision", revision);
    cJSON_AddStringToObject(o, "by", by ? by : "");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    /* the teacher's page saved: every student viewing that page, copy or not, is told (their
       editor offers "update my copy") */
    if (text) app->emit_view(app->emit_user, st->label, name, teacher, text, strlen(text));
    free(text);
}

void srv_page_rename(srv_page *p, const char *to) { snprintf(p->name, sizeof(p->name), "%s", to); }

static int pages_of(srv_app *app, const char *client) {
    int n = 0;
    for (srv_page *p = app->pages; p; p = p->next) n += !strcmp(p->owner, client);
    return n;
}

/*
 * Load page text into a session, leniently (BF_LOAD_INCOMPLETE): a page whose only problems
 * are its wiring opens, so the editor can be told every problem by the check and fix them
 * with edits. Syntax, format and attribute errors still refuse it.
 */
static bf_status load_session(srv_app *app, const char *name, const char *text, size_t len,
                              bf_session **out, bf_diags *diags, bf_error *err) {
    bf_page *page = NULL;
    char fname[128];
    *out = NULL;
    char dir[sizeof(app->store.dir) + 128];
    snprintf(fname, sizeof(fname), "%.100s.json", name);
    srv_store_page_dir(&app->store, name, dir, sizeof(dir)); /* files beside the page */
    bf_status st = bf_page_parse(app->ctx, text, len, fname, dir, BF_LOAD_INCOMPLETE, &page,
                                 diags, err);
    if (st) return st;
    return bf_session_new(app->ctx, page, out, err);
}

/* Tensor bytes held by the open pages: what each session held at its peak (its last run). */
static uint64_t pages_bytes(const srv_app *app) {
    uint64_t n = 0;
    for (const srv_page *p = app->pages; p; p = p->next) n += bf_session_peak_bytes(p->s);
    return n;
}

/* The open page unused the longest that no run holds, other than `keep`; NULL when none. */
static srv_page *least_recent_idle(srv_app *app, const srv_page *keep) {
    srv_page *best = NULL;
    for (srv_page *p = app->pages; p; p = p->next)
        if (p != keep && !p->busy && (!best || p->last_used < best->last_used)) best = p;
    return best;
}

/*
 * Server-wide room for one more open page (`adding`) or a run of `keep`: while the open pages
 * are past --max-open-pages-total or their tensors past --max-memory, close the idle page
 * unused the longest. false with res filled (503 naming the flag) when that is not enough.
 */
static bool make_room(srv_app *app, const srv_page *keep, int adding, srv_response *res) {
    for (;;) {
        bool pages_full = app->n_pages + adding > app->lim.max_pages_total;
        bool mem_full = pages_bytes(app) > app->lim.max_memory;
        if (!pages_full && !mem_full) return true;
        srv_page *victim = least_recent_idle(app, keep);
        if (!victim) {
            if (pages_full)
                srv_error(res, 503, "limit", "the server has %d open pages, the most allowed "
                          "(--max-open-pages-total); try again when one closes",
                          app->lim.max_pages_total);
            else
                srv_error(res, 503, "limit", "the open pages hold more tensor memory than "
                          "%llu bytes (--max-memory); try again when a run ends",
                          (unsigned long long)app->lim.max_memory);
            return false;
        }
        app->pages_evicted++;
        srv_page_close(app, victim);
    }
}

bool srv_app_room_for_run(srv_app *app, srv_page *p, srv_response *res) {
    return make_room(app, p, 0, res);
}

srv_page *srv_page_open(srv_app *app, srv_store *st, const char *name, const char *client,
                        srv_response *res) {
    srv_page *p = srv_page_find(app, st, name);
    if (p) {
        p->last_used = uv_now(app->loop);
        return p;
    }
    if (pages_of(app, client) >= app->lim.max_open_pages) {
        srv_error(res, 429, "limit",
                  "this client has %d open pages, the most allowed (--max-open-pages); close "
                  "one first (POST /api/pages/NAME/close)",
                  app->lim.max_open_pages);
        return NULL;
    }
    if (!make_room(app, NULL, 1, res)) return NULL;
    char *text;
    size_t len;
    int rc = srv_store_read(st, name, &text, &len);
    if (rc) {
        if (rc == -ENOENT) srv_error(res, 404, "not_found", "no page named \"%s\"", name);
        else if (rc == -EFBIG)
            srv_error(res, 413, "limit", "page \"%s\" is larger than max_page_bytes", name);
        else if (rc == -ELOOP || rc == -EINVAL)
            srv_error(res, 403, "forbidden", "\"%s\" is not a regular file in the pages folder",
                      name);
        else srv_error(res, 500, "io_error", "cannot read page \"%s\": %s", name, strerror(-rc));
        return NULL;
    }
    bf_diags *diags = bf_diags_new();
    bf_error e = {0};
    bf_session *s = NULL;
    bf_status lst = diags ? load_session(app, name, text, len, &s, diags, &e) : BF_ENOMEM;
    free(text);
    if (lst) {
        if (!diags) e.status = BF_ENOMEM;
        srv_problems(res, 0, &e, diags);
        bf_diags_free(diags);
        return NULL;
    }
    bf_diags_free(diags);
    p = calloc(1, sizeof(*p));
    if (!p) {
        bf_session_free(s);
        srv_error(res, 500, "out_of_memory", "out of memory");
        return NULL;
    }
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->owner, sizeof(p->owner), "%s", client);
    p->store = st;
    p->s = s;
    p->last_used = uv_now(app->loop);
    p->next = app->pages;
    app->pages = p;
    app->n_pages++;
    return p;
}

void srv_page_close(srv_app *app, srv_page *p) {
    if (p->busy) return; /* a worker holds it: closed when the run is over, or at exit */
    for (srv_page **pp = &app->pages; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    for (srv_run *r = app->runs; r; r = r->next)
        if (r->page == p) r->page = NULL;
    srv_train_page_closed(app, p);
    app->n_pages--;
    bf_session_free(p->s);
    free(p);
}

static void idle_cb(uv_timer_t *t) {
    srv_app *app = t->data;
    uint64_t now = uv_now(app->loop), idle_ms = (uint64_t)(app->lim.idle_s * 1000);
    srv_page *p = app->pages;
    while (p) {
        srv_page *next = p->next;
        if (!p->busy && now - p->last_used >= idle_ms) srv_page_close(app, p);
        p = next;
    }
}

/* ---- runs ---------------------------------------------------------------------------------- */

const char *srv_run_id(const srv_run *r) { return r->id; }
void srv_run_set_owner(srv_run *r, const char *student) {
    snprintf(r->owner, sizeof(r->owner), "%s", student ? student : "");
}
const char *srv_run_owner(const srv_run *r) { return r->owner; }

srv_run *srv_run_find(srv_app *app, const char *id) {
    for (srv_run *r = app->runs; r; r = r->next)
        if (!strcmp(r->id, id)) return r;
    return NULL;
}

/* Tensors kept for their requesters after another client replaced them (keep_results). */
enum { KEEP_TENSOR_BYTES = 64 << 20 };

typedef struct srv_kept {
    char block[128];
    char port[64];
    bf_tensor *t;
} srv_kept;

static void drop_kept(srv_run *r) {
    for (int i = 0; i < r->n_kept; i++) bf_tensor_free(r->kept[i].t);
    free(r->kept);
    if (r->app) r->app->kept_bytes -= r->kept_bytes;
    r->kept = NULL;
    r->n_kept = 0;
    r->kept_bytes = 0;
}

/* Whether the session of r's page still holds r's tensors. */
static bool holds(const srv_run *r) {
    return r->state == RUN_DONE && r->page && r->page->last_run == r && r->page->gen == r->gen &&
           !r->page->busy;
}

/* Copy one tensor of r's session into r (false: not there, or past the budget). */
static bool keep_one(srv_run *r, const char *ref) {
    char block[128], port[64] = "";
    snprintf(block, sizeof(block), "%s", ref);
    char *colon = strchr(block, ':');
    if (colon) {
        *colon = '\0';
        snprintf(port, sizeof(port), "%s", colon + 1);
    }
    const bf_tensor *t = bf_session_output(r->page->s, block, port[0] ? port : NULL);
    if (!t) return false;
    size_t bytes = bf_tensor_nbytes(t);
    if (r->app->kept_bytes + bytes > KEEP_TENSOR_BYTES) return false;
    srv_kept *grown = realloc(r->kept, (size_t)(r->n_kept + 1) * sizeof(*grown));
    if (!grown) return false;
    r->kept = grown;
    bf_tensor *copy = NULL;
    if (bf_tensor_copy(t, &copy, NULL) != BF_OK) return false;
    srv_kept *k = &r->kept[r->n_kept++];
    snprintf(k->block, sizeof(k->block), "%s", block);
    snprintf(k->port, sizeof(k->port), "%s", port);
    k->t = copy;
    r->kept_bytes += bytes;
    r->app->kept_bytes += bytes;
    return true;
}

/*
 * Before p's session changes for `client` (a run or an edit): when it holds the tensors of a
 * run of another client, copy that run's fetched tensors (or the page's outputs) into the run,
 * so its requester can still read them (no 410 because someone else ran), within
 * KEEP_TENSOR_BYTES for the whole server.
 */
static void keep_results(srv_page *p, const char *client) {
    srv_run *r = p->last_run;
    if (!r || !holds(r) || r->n_kept || r->status != BF_OK || !strcmp(r->client, client ? client : ""))
        return;
    if (r->n_fetches)
        for (int i = 0; i < r->n_fetches; i++) keep_one(r, r->fetches[i]);
    else
        for (int i = 0; i < bf_page_output_count(bf_session_page(p->s)); i++)
            keep_one(r, bf_page_output(bf_session_page(p->s), i));
}

void srv_page_changing(srv_page *p, const char *client) { keep_results(p, client); }

/* A new run of `client`: their older runs' kept tensors are no longer theirs to read. */
static void forget_kept(srv_app *app, const char *client) {
    for (srv_run *r = app->runs; r; r = r->next)
        if (r->n_kept && !strcmp(r->client, client)) drop_kept(r);
}

static void run_free(srv_run *r) {
    drop_kept(r);
    for (int i = 0; i < r->n_fetches; i++) free(r->fetches[i]);
    free(r->fetches);
    free(r->job);
    free(r->result);
    bf_diags_free(r->diags);
    free(r);
}


/* Keep at most this many finished runs listed (for cancel answers and tensors). */
enum { KEEP_FINISHED = 256 };

static void prune_finished(srv_app *app) {
    if (app->n_finished <= KEEP_FINISHED) return;
    /* runs are prepended: the oldest finished ones are at the tail */
    srv_run *last_keep = NULL;
    int kept = 0;
    for (srv_run *r = app->runs; r; r = r->next) {
        if (r->state == RUN_DONE && ++kept > KEEP_FINISHED / 2) break;
        last_keep = r;
    }
    if (!last_keep) return;
    srv_run **link = &last_keep->next;
    while (*link) {
        srv_run *r = *link;
        if (r->state == RUN_DONE && (!r->page || r->page->last_run != r)) {
            *link = r->next;
            app->n_finished--;
            app->result_bytes -= r->result_len;
            run_free(r);
        } else {
            link = &r->next;
        }
    }
}

/*
 * Keep the terminal events of finished runs within this many bytes: past it, the oldest
 * results are dropped (GET .../result then answers 410). An explain capped at 100000 terms is
 * about 15 MB, so this keeps a few of the largest and thousands of ordinary ones.
 */
enum { KEEP_RESULT_BYTES = 64 << 20 };

static void prune_results(srv_app *app) {
    while (app->result_bytes > KEEP_RESULT_BYTES) {
        srv_run *oldest = NULL; /* runs are prepended: the last one holding a result */
        for (srv_run *r = app->runs; r; r = r->next)
            if (r->state == RUN_DONE && r->result) oldest = r;
        if (!oldest) break;
        app->result_bytes -= oldest->result_len;
        free(oldest->result);
        oldest->result = NULL;
        oldest->result_len = 0;
    }
}

/* Queue an event for the loop (any thread). `json` is taken. */
static void post_event(srv_app *app, srv_run *r, char *json, bool finish) {
    srv_event *ev = calloc(1, sizeof(*ev));
    if (!ev && !finish) {
        free(json); /* an event lost to memory exhaustion; the run goes on */
        return;
    }
    /* the finishing record must arrive: wait for the allocator (it is tiny) */
    while (!ev && !(ev = calloc(1, sizeof(*ev)))) uv_sleep(1);
    ev->json = json;
    ev->len = json ? strlen(json) : 0;
    ev->run = finish ? r : NULL;
    snprintf(ev->client, sizeof(ev->client), "%s", r->client);
    uv_mutex_lock(&app->mu);
    if (app->ev_tail) app->ev_tail->next = ev;
    else app->ev_head = ev;
    app->ev_tail = ev;
    uv_mutex_unlock(&app->mu);
    uv_async_send(&app->async);
}

static cJSON *event_new(const srv_run *r, const char *type) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "run_id", r->id);
    cJSON_AddStringToObject(o, "page", r->page_name);
    return o;
}

static char *event_text(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

static void add_shape(cJSON *o, const char *key, int rank, const int64_t *dims) {
    if (rank < 0) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; i < rank; i++)
        cJSON_AddItemToArray(a, dims[i] < 0 ? cJSON_CreateNull()
                                            : cJSON_CreateNumber((double)dims[i]));
}

/* on_event: on the worker thread, between kernels. */
static void on_event(bf_event_kind kind, const bf_block_stats *st, void *user) {
    srv_run *r = user;
    /* a cancel that raced the start of bf_session_run is applied at the next event */
    if (atomic_load(&r->cancel) && r->page) bf_session_cancel(r->page->s);
    const char *type = kind == BF_EVENT_BLOCK_START ? "block_started"
                       : kind == BF_EVENT_BLOCK_REUSED ? "block_cached"
                       : st->status ? "block_failed"
                                    : "block_finished";
    cJSON *o = event_new(r, type);
    if (r->job) /* a teaching job's run: the editor shows it on the canvas, not as a page run */
        cJSON_AddStringToObject(o, "kind", r->job->kind == SRV_JOB_EXPLAIN ? "explain"
                                                                          : "gradcheck");
    cJSON_AddStringToObject(o, "block", st->id);
    cJSON_AddStringToObject(o, "block_type", st->type);
    if (kind == BF_EVENT_BLOCK_DONE && !st->status) {
        cJSON_AddStringToObject(o, "device", st->device);
        cJSON_AddStringToObject(o, "kernel", st->note);
        cJSON_AddNumberToObject(o, "ms", st->ms);
    }
    if (kind != BF_EVENT_BLOCK_START && !st->status) {
        cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
        for (int i = 0; i < st->n_outputs && i < 4; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "dtype", st->dtype[i] ? bf_dtype_name(st->dtype[i]) : "?");
            add_shape(p, "shape", st->rank[i], st->dims[i]);
            cJSON_AddItemToArray(outs, p);
        }
    }
    if (kind == BF_EVENT_BLOCK_DONE && st->status) {
        cJSON_AddStringToObject(o, "code", bf_status_name(st->status));
        cJSON_AddStringToObject(o, "message", st->note[0] ? st->note : bf_strerror(st->status));
    }
    post_event(r->app, r, event_text(o), false);
}

/* The error of a failed run or job, as the terminal event's "error" object. */
static void add_run_error(cJSON *o, const srv_run *r) {
    const bf_error *e = bf_diags_errors(r->diags) ? NULL : &r->err;
    for (size_t i = 0; !e && i < bf_diags_count(r->diags); i++)
        if (bf_diags_at(r->diags, i)->status) e = bf_diags_at(r->diags, i);
    bf_error copy = *e;
    /* one code per outcome, wherever the cancel landed (before the start, in a kernel, in
       the scheduler): "cancelled" */
    if (r->status == BF_ECANCELED) snprintf(copy.code, sizeof(copy.code), "cancelled");
    cJSON *err = srv_error_object(&copy);
    if (err) cJSON_AddItemToObject(o, "error", err);
}

/*
 * Post the terminal event of r (on the worker) and keep a copy for srv_run_result. `result`
 * (bf_string_free, may be NULL) is spliced in as "result": it is the library's JSON text, so
 * it is not parsed again. When the event with it would not fit in half of a client's queue
 * (--max-ws-queue), the event sent says "result_omitted": true instead.
 */
static void finish(srv_run *r, cJSON *o, char *result) {
    srv_app *app = r->app;
    char *head = event_text(o), *full = NULL;
    size_t hl = head ? strlen(head) : 0, rl = result ? strlen(result) : 0;
    if (head && result && (full = malloc(hl + rl + 16)))
        snprintf(full, hl + rl + 16, "%.*s,\"result\":%s}", (int)(hl - 1), head, result);
    else if (head && !result) full = strdup(head);
    bf_string_free(result);
    char *sent = full;
    if (full && rl && hl + rl > app->lim.max_ws_queue / 2) {
        size_t n = hl + 32;
        if ((sent = malloc(n))) snprintf(sent, n, "%.*s,\"result_omitted\":true}", (int)(hl - 1),
                                         head);
    } else if (full) {
        sent = strdup(full);
    }
    free(head);
    r->result = full; /* NULL when memory ran out: srv_run_result says "gone" */
    r->result_len = full ? strlen(full) : 0;
    post_event(app, r, sent, true);
}

/* A teaching job (srv_teach_start), on the worker: run_started, then the terminal event. */
static void execute_teach(srv_run *r) {
    const srv_teach_job *j = r->job;
    const bool explain = j->kind == SRV_JOB_EXPLAIN;
    const char *kind = explain ? "explain" : "gradcheck";
    bf_session *s = r->page->s;
    cJSON *o = event_new(r, "run_started");
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "block", j->block);
    post_event(r->app, r, event_text(o), false);
    uint64_t t0 = uv_hrtime();
    char *text = NULL;
    if (atomic_load(&r->cancel)) {
        r->status = BF_ECANCELED;
        r->err.status = BF_ECANCELED;
        snprintf(r->err.code, sizeof(r->err.code), "cancelled");
        snprintf(r->err.message, sizeof(r->err.message), "the job was cancelled before it started");
    } else if (explain) {
        bf_explain_options eo;
        bf_explain_options_init(&eo);
        eo.port = j->port[0] ? j->port : NULL;
        eo.max_terms = j->max_terms;
        eo.timeout_s = r->app->lim.run_timeout_s;
        eo.on_event = on_event, eo.user = r;
        r->status = bf_session_explain(s, j->block, j->index, j->rank, &eo, &text, &r->err);
    } else {
        bf_gradcheck_options go = j->gc;
        go.timeout_s = r->app->lim.run_timeout_s;
        go.on_event = on_event, go.user = r;
        r->status = bf_session_gradcheck(s, j->block, &go, &text, &r->err);
    }
    r->ms = (double)(uv_hrtime() - t0) / 1e6;
    char type[32];
    snprintf(type, sizeof(type), "%s_finished", kind);
    o = event_new(r, r->status == BF_OK            ? type
                     : r->status == BF_ECANCELED ? "run_cancelled"
                                                 : "run_failed");
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "block", j->block);
    cJSON_AddNumberToObject(o, "ms", r->ms);
    if (r->status) add_run_error(o, r);
    finish(r, o, r->status ? NULL : text);
    if (r->status) bf_string_free(text);
}

static void execute(srv_run *r) {
    if (r->fn) {
        r->fn(r, r->fn_user);
        return;
    }
    if (r->job) {
        execute_teach(r);
        return;
    }
    bf_session *s = r->page->s;
    post_event(r->app, r, event_text(event_new(r, "run_started")), false);
    uint64_t t0 = uv_hrtime();
    if (atomic_load(&r->cancel)) {
        r->status = BF_ECANCELED;
        snprintf(r->err.message, sizeof(r->err.message), "run was cancelled before it started");
        snprintf(r->err.code, sizeof(r->err.code), "cancelled");
        r->err.status = BF_ECANCELED;
    } else {
        bf_run_options o;
        bf_run_options_init(&o);
        o.fetches = r->n_fetches ? (const char *const *)r->fetches : NULL;
        o.n_fetches = r->n_fetches;
        o.device = r->device;
        o.timeout_s = r->app->lim.run_timeout_s;
        o.on_event = on_event;
        o.user = r;
        r->status = bf_session_run(s, &o, r->diags, &r->err);
    }
    r->ms = (double)(uv_hrtime() - t0) / 1e6;
    cJSON *o = event_new(r, r->status == BF_OK          ? "run_finished"
                            : r->status == BF_ECANCELED ? "run_cancelled"
                                                        : "run_failed");
    cJSON_AddNumberToObject(o, "ms", r->ms);
    if (r->status) add_run_error(o, r);
    finish(r, o, NULL);
}

/*
 * Fair scheduling (under app->mu): the next job is the queued one whose client was served
 * least recently (a client never served first), earlier jobs first among equals. So one
 * client's many or long jobs take turns with everybody else's instead of going first.
 */
static uint64_t last_served(const srv_app *app, const char *client) {
    for (int i = 0; i < app->n_served; i++)
        if (!strcmp(app->served[i].client, client)) return app->served[i].seq;
    return 0;
}

static void mark_served(srv_app *app, const char *client) {
    int at = -1, oldest = 0;
    for (int i = 0; i < app->n_served && at < 0; i++)
        if (!strcmp(app->served[i].client, client)) at = i;
    if (at < 0 && app->n_served < SRV_SERVED_CAP) at = app->n_served++;
    if (at < 0) { /* full: forget the client served longest ago */
        for (int i = 1; i < app->n_served; i++)
            if (app->served[i].seq < app->served[oldest].seq) oldest = i;
        at = oldest;
    }
    snprintf(app->served[at].client, sizeof(app->served[at].client), "%s", client);
    app->served[at].seq = ++app->serve_seq;
}

static srv_run *pick_job(srv_app *app) {
    srv_run *best = NULL, *best_prev = NULL, *prev = NULL;
    uint64_t best_seq = 0;
    for (srv_run *r = app->jobs_head; r; prev = r, r = r->next_job) {
        uint64_t seq = last_served(app, r->client);
        if (!best || seq < best_seq) best = r, best_prev = prev, best_seq = seq;
        if (seq == 0) break; /* nobody comes before a client never served */
    }
    if (!best) return NULL;
    if (best_prev) best_prev->next_job = best->next_job;
    else app->jobs_head = best->next_job;
    if (app->jobs_tail == best) app->jobs_tail = best_prev;
    best->next_job = NULL;
    mark_served(app, best->client);
    return best;
}

static void worker_main(void *arg) {
    srv_app *app = arg;
    srv_worker_nice(); /* train_jobs.c: the loop thread first */
    for (;;) {
        uv_mutex_lock(&app->mu);
        while (!app->jobs_head && !app->quit) uv_cond_wait(&app->cv, &app->mu);
        srv_run *r = pick_job(app);
        uv_mutex_unlock(&app->mu);
        if (!r) return;
        execute(r);
    }
}

/*
 * A new run of p, not yet queued, or NULL with res filled: the server is stopping (503), too
 * many runs (429), or no memory (500). The caller fills what its kind needs and calls
 * enqueue().
 */
static srv_run *run_new(srv_app *app, srv_page *p, const char *client, srv_response *res) {
    if (app->stopping) {
        srv_error(res, 503, "stopping", "the server is shutting down");
        return NULL;
    }
    if (app->n_active >= app->lim.max_runs) {
        srv_error(res, 429, "limit",
                  "%d runs are queued or running, the most allowed (--max-runs)",
                  app->lim.max_runs);
        return NULL;
    }
    srv_run *r = calloc(1, sizeof(*r));
    if (!r || !(r->diags = bf_diags_new())) {
        free(r);
        srv_error(res, 500, "out_of_memory", "out of memory");
        return NULL;
    }
    snprintf(r->id, sizeof(r->id), "r%llu", (unsigned long long)++app->next_run);
    snprintf(r->page_name, sizeof(r->page_name), "%s", p->name);
    snprintf(r->client, sizeof(r->client), "%s", client);
    /* a run belongs to whose page it runs: a student's copy, or the teacher's pages ("") */
    snprintf(r->owner, sizeof(r->owner), "%s", p->store ? p->store->label : "");
    r->app = app;
    r->page = p;
    r->state = RUN_QUEUED;
    atomic_init(&r->cancel, 0);
    return r;
}

/* Hand r to the workers: from now on the session is theirs until the run is over. */
static void enqueue(srv_app *app, srv_page *p, srv_run *r) {
    keep_results(p, r->client);
    forget_kept(app, r->client);
    r->next = app->runs;
    app->runs = r;
    app->n_active++;
    p->busy = true;
    p->last_run = NULL;
    p->gen++;
    p->last_used = uv_now(app->loop);
    srv_run_requeue(r);
}

srv_run *srv_run_start(srv_app *app, srv_page *p, const char *client, char **fetches, int n,
                       bf_device_kind device, srv_response *res) {
    srv_run *r = run_new(app, p, client, res);
    if (!r) {
        for (int i = 0; i < n; i++) free(fetches[i]);
        free(fetches);
        return NULL;
    }
    r->fetches = fetches;
    r->n_fetches = n;
    r->device = device;
    enqueue(app, p, r);
    return r;
}

srv_run *srv_teach_start(srv_app *app, srv_page *p, const char *client,
                         const srv_teach_job *job, srv_response *res) {
    srv_run *r = run_new(app, p, client, res);
    if (!r) return NULL;
    if (!(r->job = malloc(sizeof(*job)))) {
        run_free(r);
        srv_error(res, 500, "out_of_memory", "out of memory");
        return NULL;
    }
    *r->job = *job;
    enqueue(app, p, r);
    return r;
}

srv_run *srv_job_start(srv_app *app, srv_page *p, const char *client, srv_job_fn fn,
                       void *user, srv_tensor_fn tensors, srv_response *res) {
    srv_run *r = run_new(app, p, client, res);
    if (!r) return NULL;
    r->fn = fn;
    r->fn_user = user;
    r->tensors = tensors;
    enqueue(app, p, r);
    return r;
}

bf_session *srv_run_session(srv_run *r) { return r->page->s; }
srv_page *srv_run_page(srv_run *r) { return r->page; }
bool srv_run_over(const srv_run *r) { return r->state == RUN_DONE; }
bool srv_run_cancelled(const srv_run *r) { return atomic_load(&r->cancel) != 0; }
cJSON *srv_run_event(const srv_run *r, const char *type) { return event_new(r, type); }
void srv_run_post(srv_run *r, cJSON *o) { post_event(r->app, r, event_text(o), false); }
void srv_run_finish(srv_run *r, cJSON *o) { finish(r, o, NULL); }

void srv_run_requeue(srv_run *r) { /* also the first queueing (enqueue) */
    srv_app *app = r->app;
    r->next_job = NULL;
    uv_mutex_lock(&app->mu);
    if (app->jobs_tail) app->jobs_tail->next_job = r;
    else app->jobs_head = r;
    app->jobs_tail = r;
    uv_cond_signal(&app->cv);
    uv_mutex_unlock(&app->mu);
}

bool srv_jobs_waiting(srv_app *app) {
    uv_mutex_lock(&app->mu);
    bool any = app->jobs_head != NULL;
    uv_mutex_unlock(&app->mu);
    return any;
}

/*
 * On the loop, every few milliseconds while a cancelled run is not over: cancel its session
 * again. bf_session_run (also inside the teaching calls, which may run it twice) clears the
 * session's flag as it starts, so a cancel that landed just before would otherwise be lost;
 * repeating it costs nothing once the run stops. Stops itself when no such run is left.
 */
static void recancel_cb(uv_timer_t *t) {
    srv_app *app = t->data;
    bool any = false;
    for (srv_run *r = app->runs; r; r = r->next)
        if (r->state != RUN_DONE && atomic_load(&r->cancel) && r->page) {
            bf_session_cancel(r->page->s);
            any = true;
        }
    if (!any) uv_timer_stop(t);
}

bool srv_run_cancel(srv_run *r) {
    if (r->state == RUN_DONE) return false;
    srv_app *app = r->app;
    atomic_store(&r->cancel, 1);
    if (r->page) bf_session_cancel(r->page->s); /* any thread, any time */
    if (app->handles_open && !uv_is_active((uv_handle_t *)&app->cancel_timer))
        uv_timer_start(&app->cancel_timer, recancel_cb, 5, 5);
    return true;
}

const char *srv_run_result(const srv_run *r, size_t *len, const char **why) {
    if (r->state != RUN_DONE) {
        *why = "running";
        return NULL;
    }
    if (!r->result) {
        *why = "gone";
        return NULL;
    }
    *len = r->result_len;
    return r->result;
}

const bf_tensor *srv_run_tensor(srv_run *r, const char *block, const char *port,
                                const char **why) {
    if (r->tensors && !r->page) {
        *why = "gone";
        return NULL;
    }
    if (r->tensors) return r->tensors(r, r->fn_user, block, port, why);
    if (r->state != RUN_DONE) {
        *why = "running";
        return NULL;
    }
    if (!holds(r)) {
        for (int i = 0; i < r->n_kept; i++) /* kept for its requester (keep_results) */
            if (!strcmp(r->kept[i].block, block) &&
                (!strcmp(r->kept[i].port, port ? port : "") || !port || !port[0]))
                return r->kept[i].t;
        *why = r->n_kept ? "not_found" : "gone";
        return NULL;
    }
    const bf_tensor *t = bf_session_output(r->page->s, block, port && port[0] ? port : NULL);
    if (!t) *why = "not_found";
    return t;
}

/* The loop side: deliver queued events, finish runs. */
static void async_cb(uv_async_t *a) {
    srv_app *app = a->data;
    uv_mutex_lock(&app->mu);
    srv_event *ev = app->ev_head;
    app->ev_head = app->ev_tail = NULL;
    uv_mutex_unlock(&app->mu);
    while (ev) {
        srv_event *next = ev->next;
        srv_run *r = ev->run;
        if (r) { /* the run is over: the session is the loop's again */
            r->state = RUN_DONE;
            if (r->owner[0])
                srv_class_run_done(app, r->owner, r->id, r->page_name,
                                   r->status == BF_OK            ? "finished"
                                   : r->status == BF_ECANCELED ? "cancelled"
                                                               : "failed",
                                   r->status ? (r->status == BF_ECANCELED ? "cancelled"
                                                : r->err.code[0] ? r->err.code
                                                                 : bf_status_name(r->status))
                                             : NULL,
                                   r->status ? r->err.message : NULL);
            app->n_active--;
            app->n_finished++;
            app->result_bytes += r->result_len;
            if (r->page) {
                r->page->busy = false;
                r->page->gen++;
                r->gen = r->page->gen;
                r->page->last_run = r;
                r->page->last_used = uv_now(app->loop);
            }
        }
        if (ev->json && app->emit) app->emit(app->emit_user, ev->client, ev->json, ev->len);
        free(ev->json);
        free(ev);
        ev = next;
    }
    prune_finished(app);
    prune_results(app);
    if (app->stopping && app->n_active == 0 && app->on_drained) {
        void (*cb)(srv_app *) = app->on_drained;
        app->on_drained = NULL;
        cb(app);
    }
}

/* ---- the app ------------------------------------------------------------------------------- */

void srv_limits_init(srv_limits *l) {
    l->max_body = 1 << 20;
    l->max_ws_message = 64 << 10;
    l->max_upload = 64 << 20;
    l->max_open_pages = 16;
    l->max_runs = 64;
    l->idle_s = 900;
    l->run_timeout_s = 300;
    l->max_values = 65536;
    l->max_ws_queue = 8 << 20;
    l->max_ws_total = (size_t)64 << 20;
    /* one run thread per core: more only make each run slower (kernels use every core) */
    unsigned cores = uv_available_parallelism();
    l->workers = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
    l->max_connections = 512;
    l->max_unauth = 256;
    l->header_timeout_s = 10;
    l->body_timeout_s = 30;
    l->max_pages_total = 256;
    uint64_t ram = uv_get_total_memory();
    l->max_memory = ram ? ram / 2 : (uint64_t)4 << 30;
    l->max_students = 500;
}

int srv_app_init(srv_app *app, uv_loop_t *loop, const char *pages_dir, const bf_config *cfg,
                 const srv_limits *lim, char *why, size_t n) {
    memset(app, 0, sizeof(*app));
    app->loop = loop;
    app->lim = *lim;
    bf_config c = *cfg;
    c.confine_files = 1; /* pages are other people's: "file" stays in the pages folder */
    if (srv_store_open(&app->store, pages_dir, c.max_page_bytes, why, n)) return -1;
    bf_error e = {0};
    if (bf_context_new(&c, &app->ctx, &e)) {
        bf_error_format(&e, why, n);
        srv_store_close(&app->store);
        return -1;
    }
    uv_mutex_init(&app->mu);
    uv_cond_init(&app->cv);
    uv_async_init(loop, &app->async, async_cb);
    app->async.data = app;
    uv_timer_init(loop, &app->idle_timer);
    app->idle_timer.data = app;
    uint64_t every = (uint64_t)(app->lim.idle_s * 1000 / 4);
    if (every < 50) every = 50;
    if (every > 10000) every = 10000;
    uv_timer_start(&app->idle_timer, idle_cb, every, every);
    uv_timer_init(loop, &app->cancel_timer);
    app->cancel_timer.data = app;
    app->handles_open = true;
    app->n_threads = lim->workers > 0 ? lim->workers : 1;
    app->threads = calloc((size_t)app->n_threads, sizeof(uv_thread_t));
    for (int i = 0; app->threads && i < app->n_threads; i++)
        if (uv_thread_create(&app->threads[i], worker_main, app)) {
            app->n_threads = i;
            break;
        }
    if (!app->threads || app->n_threads == 0) {
        snprintf(why, n, "cannot start the run threads");
        return -1;
    }
    return 0;
}

void srv_app_stop(srv_app *app) {
    app->stopping = true;
    for (srv_run *r = app->runs; r; r = r->next) srv_run_cancel(r);
    if (app->n_active == 0 && app->on_drained) {
        void (*cb)(srv_app *) = app->on_drained;
        app->on_drained = NULL;
        cb(app);
    }
}

void srv_app_close_handles(srv_app *app) {
    if (!app->handles_open) return;
    app->handles_open = false;
    uv_timer_stop(&app->idle_timer);
    uv_close((uv_handle_t *)&app->idle_timer, NULL);
    uv_timer_stop(&app->cancel_timer);
    uv_close((uv_handle_t *)&app->cancel_timer, NULL);
    uv_close((uv_handle_t *)&app->async, NULL);
}

void srv_app_free(srv_app *app) {
    uv_mutex_lock(&app->mu);
    app->quit = true;
    uv_cond_broadcast(&app->cv);
    uv_mutex_unlock(&app->mu);
    for (int i = 0; i < app->n_threads; i++) uv_thread_join(&app->threads[i]);
    free(app->threads);
    /* events nobody delivered (stopping) */
    for (srv_event *ev = app->ev_head, *next; ev; ev = next) {
        next = ev->next;
        free(ev->json);
        free(ev);
    }
    while (app->pages) {
        app->pages->busy = false;
        srv_page_close(app, app->pages);
    }
    for (srv_run *r = app->runs, *next; r; r = next) {
        next = r->next;
        run_free(r);
    }
    srv_train_free(app);
    uv_cond_destroy(&app->cv);
    uv_mutex_destroy(&app->mu);
    bf_context_free(app->ctx);
    srv_class_free(app);
    srv_store_close(&app->store);
}
