/*
 * server.h - the pieces of `blockflow serve` and the seams between them.
 *
 * The server is three layers, so that everything that reads hostile input can be tested and
 * fuzzed without a network:
 *
 *   http.c     libwebsockets on libuv's loop: sockets, HTTP framing, WebSocket frames, per-client
 *              send queues. It turns each request into an srv_request and writes the
 *              srv_response back. The only file that sees lws types.
 *   router.c   srv_route(): method, path, query, headers, body -> status, type, body. Security
 *              checks (token, Host, Origin), then the API. Runs on the loop thread, never blocks
 *              on a kernel.
 *   store.c    the pages folder: safe names, confined opens, atomic writes, revisions.
 *   runs.c     open pages (sessions), the run worker threads (jobs taken round-robin across
 *              clients) and the event queue that carries per-block events to the loop thread.
 *   reply.c    answers as JSON, errors through bf_error_json: a leaf every other file uses.
 *   classroom.c  --classroom: who a token is (teacher, class, student), the students' copies,
 *              the roster.
 *   teach_routes.c, import_routes.c, static.c  explain/gradcheck/grad jobs, the enuSpace
 *              import, the editor's files.
 *
 * Everything here uses only include/blockflow.h from the library (plus cJSON and libuv).
 * Names are srv_ (the server program's own; the library keeps bf_).
 */
#ifndef BF_SERVER_H
#define BF_SERVER_H

#include "blockflow.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* ---- limits: each one a flag of `blockflow serve` (see srv_usage in serve.c) -------------- */
typedef struct srv_limits {
    size_t max_body;         /* --max-body: bytes of one HTTP request body (1 MiB) */
    size_t max_ws_message;   /* --max-ws-message: bytes of one WebSocket message (64 KiB) */
    size_t max_upload;       /* --max-upload: decoded .npy bytes fed by one run request (64 MiB) */
    int max_open_pages;      /* --max-open-pages: open pages per client (16) */
    int max_runs;            /* --max-runs: runs queued or running at once, all clients (64) */
    double idle_s;           /* --idle-timeout: seconds before an unused open page closes (900) */
    double run_timeout_s;    /* --run-timeout: seconds one run may take (300) */
    size_t max_values;       /* --max-values: elements in a ?view=values answer (65536) */
    size_t max_ws_queue;     /* --max-ws-queue: bytes waiting for one slow WebSocket client
                                before it is dropped (8 MiB) */
    size_t max_ws_total;     /* --max-ws-total: bytes waiting for all WebSocket clients
                                together; past it the client with the longest queue is
                                dropped (64 MiB) */
    int workers;             /* --workers: run threads (default: the CPU cores) */
    int max_connections;     /* --max-connections: open TCP connections (512) */
    int max_unauth;          /* --max-unauthenticated: connections that have not yet shown
                                the token (256) */
    double header_timeout_s; /* --header-timeout: seconds for a request's headers (10) */
    double body_timeout_s;   /* --body-timeout: seconds for a whole request body (30) */
    int max_pages_total;     /* --max-open-pages-total: open pages, all clients (256) */
    uint64_t max_memory;     /* --max-memory: tensor bytes held by all open pages together
                                (idle pages are closed first; default 1/2 of the RAM) */
    int max_students;        /* --max-students: students who may join a classroom (500) */
} srv_limits;

void srv_limits_init(srv_limits *l);

/* ---- one HTTP request and its answer (no lws types) --------------------------------------- */
typedef struct srv_request {
    const char *method;        /* "GET", "POST", "PUT", "DELETE", ... */
    const char *path;          /* as received (percent-decoding, if any, already done by the
                                  HTTP layer); never trusted */
    const char *query;         /* "a=b&c=d" without '?', or "" */
    const char *host;          /* Host header or NULL */
    const char *origin;        /* Origin header or NULL */
    const char *authorization; /* Authorization header or NULL */
    const char *cookie;        /* Cookie header or NULL */
    const char *client;        /* X-Blockflow-Client header or NULL */
    const char *body;          /* may be NULL when body_len is 0 */
    size_t body_len;
} srv_request;

typedef struct srv_response {
    int status;
    const char *content_type;  /* static string */
    char *body;                /* malloc'd (free()), may be NULL */
    size_t body_len;
    char set_cookie[256];      /* "" or a Set-Cookie value */
    char location[64];         /* "" or a Location value (303) */
    char disposition[160];     /* "" or a Content-Disposition value */
} srv_response;

void srv_response_free(srv_response *r);

/* ---- the pages folder (store.c) ------------------------------------------------------------ */
typedef struct srv_store {
    int dirfd;          /* the pages folder, O_DIRECTORY */
    char dir[4096];     /* its absolute path (for the library's "file" resolution) */
    uint64_t max_bytes; /* largest page file read */
    unsigned n_temps;   /* temporary files made so far: part of the next one's name */
    unsigned swept;     /* temporary files of dead processes removed when it was opened */
    char label[64];     /* whose pages: "" the teacher's (the folder), else a student's name */
} srv_store;

/* 1 when `name` is one safe path segment: [A-Za-z0-9._-]{1,100}, no leading dot. */
bool srv_name_ok(const char *name);
/* Segments of a page name: a page may lie in subfolders of the pages folder, 3 deep at most. */
#define SRV_PAGE_MAX_DEPTH 4
/* 1 when `name` names a page (or a file) of the pages folder: 1 to SRV_PAGE_MAX_DEPTH segments
 * that pass srv_name_ok joined by '/' ("teach/conv_grad"), at most 100 characters in all. */
bool srv_page_name_ok(const char *name);
int srv_store_open(srv_store *st, const char *dir, uint64_t max_bytes, char *why, size_t n);
void srv_store_close(srv_store *st);
/* Remove the temporary files that a process no longer running (a server killed in the middle
 * of a write) left in the folder; returns how many. srv_store_open calls it. */
unsigned srv_store_sweep(srv_store *st);
/*
 * Read page `name` (".json" implied) into a malloc'd NUL-terminated buffer. Symbolic links (as
 * the page or as one of its folders) and anything but a regular file are refused. Returns 0,
 * or -ENOENT, -EFBIG, -ELOOP (a link), -EINVAL (not a regular file, a bad name) or -errno.
 */
int srv_store_read(srv_store *st, const char *name, char **text, size_t *len);
/* The same for file `path` of the folder ("data/x.npy", a srv_page_name_ok path) ending in
 * `ext`, of at most `max` bytes (-EFBIG beyond). */
int srv_store_read_file(srv_store *st, const char *path, const char *ext, uint64_t max,
                        char **data, size_t *len);
/* The folder page `name` lies in, as an absolute path into buf (the store's folder, or a
 * subfolder of it): where its relative `file` attributes resolve, as the CLI resolves them. */
void srv_store_page_dir(const srv_store *st, const char *name, char *buf, size_t n);
/*
 * Write page `name` atomically (temporary file, fsync, rename, fsync of the folder); the
 * folders of a name in a subfolder are made when missing. With `exclusive`, fail with -EEXIST
 * when the page exists (no overwrite, no race).
 */
int srv_store_write(srv_store *st, const char *name, const char *text, size_t len,
                    bool exclusive);
int srv_store_delete(srv_store *st, const char *name);
/* Rename without replacing: -EEXIST when `to` exists. */
int srv_store_rename(srv_store *st, const char *from, const char *to);
/* The sorted list of page names as a JSON array text (malloc'd); pages in subfolders are
 * named with their folders ("teach/conv_grad"). */
char *srv_store_list_json(srv_store *st);
/* The sorted names (with the extension, with their folders) of the files ending in `ext`, e.g.
 * ".npy": the files a page's `file` attribute may name and a run may be fed, for the editor's
 * file pickers. JSON array text (malloc'd). */
char *srv_store_list_files_json(srv_store *st, const char *ext);
/* The revision of `len` bytes: 16 hex digits (FNV-1a 64) into rev[17]. */
void srv_revision(const char *text, size_t len, char rev[17]);

/* ---- who a request is (classroom.c) ------------------------------------------------------- */
typedef struct srv_app srv_app;
typedef struct srv_student srv_student;
typedef enum srv_role {
    SRV_NOBODY = 0,
    SRV_TEACHER,   /* the server's token: everything (a plain server's only role) */
    SRV_JOINING,   /* a classroom's class token: may only join */
    SRV_STUDENT,   /* a student's own token: reads the teacher's pages, writes own copies */
} srv_role;
typedef struct srv_who {
    srv_role role;
    srv_student *student; /* SRV_STUDENT */
} srv_who;

/* Who `token` is; false when it is nobody's. */
bool srv_identify(srv_app *app, const char *token, srv_who *who);
const char *srv_who_name(const srv_who *who);
srv_student *srv_student_find(srv_app *app, const char *name);
srv_store *srv_student_store(srv_student *s);
void srv_class_join(srv_app *app, const char *name, srv_response *res);
void srv_class_me(srv_app *app, const srv_who *who, srv_response *res);
void srv_class_roster(srv_app *app, srv_response *res);
/* The student's copy of teacher page `name`, made when missing; 0 or -errno. */
int srv_class_ensure_copy(srv_app *app, srv_student *s, const char *name);
/* Replace the student's copy with the teacher's page now; 0 or -errno. */
int srv_class_update_copy(srv_app *app, srv_student *s, const char *name);
void srv_class_socket(srv_app *app, const srv_who *who, int delta);
void srv_class_viewing(srv_app *app, const srv_who *who, const char *page);
void srv_class_run_done(srv_app *app, const char *student, const char *run_id,
                        const char *page, const char *status, const char *code,
                        const char *message);
void srv_class_free(srv_app *app);

/* ---- open pages, runs and events (runs.c) -------------------------------------------------- */
typedef struct srv_page srv_page;
typedef struct srv_run srv_run;

/*
 * Where events go: called on the loop thread with one JSON text per event, for the WebSocket
 * clients whose client id is `client` ("" = every client). The text is borrowed.
 */
/* Clients remembered by the fair scheduler (the one served longest ago is forgotten). */
#define SRV_SERVED_CAP 512

typedef void (*srv_emit_cb)(void *user, const char *client, const char *json, size_t len);

struct srv_app {
    uv_loop_t *loop;
    bf_context *ctx;
    srv_store store;
    srv_limits lim;
    char token[80];
    char cookie_name[40];  /* "blockflow_PORT": one cookie per server */
    bool classroom;        /* --classroom: teacher, class and student tokens (classroom.c) */
    char class_token[80];  /* the students' URL: may only join */
    srv_student **students;
    int n_students;
    char prefix[40];       /* "/s/RANDOM": the editor's URL path; the cookie is scoped to it */
    char hosts[8][300];    /* accepted Host values ("127.0.0.1:8470", "localhost:8470") */
    int n_hosts;
    srv_emit_cb emit;
    /* to every socket viewing page `page` of space `space` ("" the teacher's); with
       any_space, to the viewers of that page name in every space */
    void (*emit_view)(void *emit_user, const char *space, const char *page, bool any_space,
                      const char *json, size_t len);
    bool (*client_known)(void *emit_user, const char *client); /* a connected socket's id */
    void *emit_user;
    /* open pages: a short list (bounded by clients x max_open_pages) */
    srv_page *pages;
    int n_pages;
    /* runs: queued or running, plus the recent finished ones (for cancel and tensors) */
    srv_run *runs;
    int n_active;          /* queued or running */
    int n_finished;        /* finished runs still listed */
    uint64_t next_run;
    uint64_t next_client;
    bool stopping;
    int ws_clients;        /* WebSocket clients connected (http.c) */
    uint64_t ws_dropped;   /* clients dropped for not reading (http.c) */
    size_t ws_queued;      /* bytes queued for all WebSocket clients, after the last event */
    size_t ws_queued_peak; /* the most they held after an event (--max-ws-total bounds it) */
    uint64_t pages_evicted; /* idle open pages closed to make room (--max-memory, ...) */
    int n_conns;           /* TCP connections open (http.c) */
    int n_unauth;          /* of which have not shown the token */
    uint64_t conns_refused;   /* refused at accept past --max-connections/-unauthenticated */
    uint64_t conns_timed_out; /* closed past --header-timeout / --body-timeout */
    /* the worker threads and their job queue */
    uv_thread_t *threads;
    int n_threads;
    uv_mutex_t mu;         /* guards jobs, events, quit */
    uv_cond_t cv;
    srv_run *jobs_head, *jobs_tail;
    /* fair scheduling: when each client's job was last taken (runs.c, under mu) */
    struct { char client[64]; uint64_t seq; } served[SRV_SERVED_CAP];
    int n_served;
    uint64_t serve_seq;
    struct srv_event *ev_head, *ev_tail;
    bool quit;
    uv_async_t async;      /* workers -> loop: events and finished runs */
    uv_timer_t idle_timer; /* closes idle open pages */
    uv_timer_t cancel_timer; /* repeats the cancel of runs not yet over (see srv_run_cancel) */
    size_t result_bytes;   /* bytes of the kept terminal events (srv_run_result) */
    size_t kept_bytes;     /* bytes of tensors kept for their requesters (runs.c) */
    bool handles_open;
    void (*on_drained)(srv_app *app); /* called when stopping and no run is left */
    /* the built editor (static.c): web_fd is its folder when have_web */
    bool have_web;
    int web_fd;
    char web_dir[4096];
    struct srv_train_hub *train; /* training jobs (train_jobs.c), made on first use */
};

/*
 * Set up the app on `loop`: the pages folder, the context (confine_files on), the workers.
 * `cfg` is the library configuration to use. Returns 0 or -1 with a message in why.
 */
int srv_app_init(srv_app *app, uv_loop_t *loop, const char *pages_dir, const bf_config *cfg,
                 const srv_limits *lim, char *why, size_t n);
/* Begin stopping: cancel every run; on_drained is called once none is left. */
void srv_app_stop(srv_app *app);
/* Close the libuv handles (after srv_app_stop has drained); the loop must then run them out. */
void srv_app_close_handles(srv_app *app);
/* Join the workers and free everything (after the loop has finished). */
void srv_app_free(srv_app *app);

/* ---- the editor's files (static.c) --------------------------------------------------------- */
/*
 * Use `dir` (the editor's built files: index.html and assets/) for GET / and /assets/...
 * Returns 0, or -1 with why filled when dir is not a folder holding index.html; the server
 * then answers / with how to build the editor and still serves the API.
 */
int srv_web_open(srv_app *app, const char *dir, char *why, size_t n);
void srv_web_close(srv_app *app);
/*
 * Answer GET `path` ("/" means index.html) from the editor's folder: each segment must pass
 * srv_name_ok (so no "..", no hidden files), no segment may be a symbolic link, and only
 * regular files are served, with their content type. 404 for anything else.
 */
void srv_static(srv_app *app, const char *path, srv_response *res);

/* The router (router.c): answers one request. Never blocks on a kernel. */
void srv_route(srv_app *app, const srv_request *req, srv_response *res);
/*
 * The checks every request passes first (Host, Origin, and the token when need_token; on
 * "/ws" the token may also come as ?token=). 0 when allowed, else -1 with res filled (403, 401).
 * The WebSocket upgrade calls it alone.
 */
int srv_route_access(srv_app *app, const srv_request *req, bool need_token, srv_who *who,
                     srv_response *res);

/* What the router needs from runs.c. */
srv_page *srv_page_find(srv_app *app, const srv_store *st, const char *name);
/* Open `name` (load it into a session) for `client`, or return it when already open. On
 * failure fills res with the error answer and returns NULL. */
srv_page *srv_page_open(srv_app *app, srv_store *st, const char *name, const char *client,
                        srv_response *res);
bool srv_page_busy(const srv_page *p);
/* Room for a run of open page p under --max-memory (idle pages closed first); false with res
 * filled (503) when there is none. */
bool srv_app_room_for_run(srv_app *app, srv_page *p, srv_response *res);
bf_session *srv_page_session(srv_page *p);
const char *srv_page_name(const srv_page *p);
/* Before a change of the session by `client`: the tensors of another client's last run are
 * kept for that client (until their next run). */
void srv_page_changing(srv_page *p, const char *client);
/* A change made to the session: tensors of earlier runs are gone. */
void srv_page_changed(srv_page *p);
/* Tell every socket viewing p: {"type", "page", "space", "revision" (p's edit count),
 * "edits" (the batch, JSON text, may be NULL), "by" (the client id)}. */
void srv_page_event(srv_app *app, srv_page *p, const char *type, const char *edits,
                    size_t edits_len, const char *by);
/* The same for a page file saved by PUT (open or not); the teacher's reach every space. */
void srv_file_event(srv_app *app, const srv_store *st, const char *name, const char *revision,
                    const char *by);
/* The student (name, "" for the teacher) a run belongs to; set once after it starts. */
void srv_run_set_owner(srv_run *r, const char *student);
const char *srv_run_owner(const srv_run *r);
/* Close an open page (not busy). */
void srv_page_close(srv_app *app, srv_page *p);
/* Follow a rename of the page file. */
void srv_page_rename(srv_page *p, const char *to);
/*
 * Start a run of `p` (not busy). Takes `fetches` (malloc'd strings, n) whatever happens.
 * Returns the run, or NULL with res filled (a limit).
 */
srv_run *srv_run_start(srv_app *app, srv_page *p, const char *client, char **fetches, int n,
                       bf_device_kind device, srv_response *res);
/*
 * A teaching job (teach_routes.c fills it): bf_session_explain or bf_session_gradcheck on a
 * run worker, with a run's rules: it counts against --max-runs, holds the page (busy) until
 * it is over, is bounded by --run-timeout and cancelled by srv_run_cancel. Its events are
 * run_started (with "kind"), then one of explain_finished / gradcheck_finished (with
 * "result"), run_failed or run_cancelled.
 */
typedef enum srv_job_kind { SRV_JOB_RUN, SRV_JOB_EXPLAIN, SRV_JOB_GRADCHECK } srv_job_kind;

typedef struct srv_teach_job {
    srv_job_kind kind;            /* SRV_JOB_EXPLAIN or SRV_JOB_GRADCHECK */
    char block[256];              /* the block id */
    char port[64];                /* explain: output port, "" = the first */
    int64_t index[BF_MAX_RANK];   /* explain: the element, in the output's own layout */
    int rank;
    int64_t max_terms;            /* explain: terms listed */
    bf_gradcheck_options gc;      /* gradcheck (timeout_s is --run-timeout, set by runs.c) */
} srv_teach_job;

/* Queue a teaching job on `p` (not busy); the job is copied. NULL with res filled (a limit). */
srv_run *srv_teach_start(srv_app *app, srv_page *p, const char *client,
                         const srv_teach_job *job, srv_response *res);
srv_run *srv_run_find(srv_app *app, const char *id);
const char *srv_run_id(const srv_run *r);
/*
 * The terminal event of finished run r as JSON text (borrowed, valid until the next return to
 * the loop), with the whole "result" of a teaching job even when the event sent on the
 * WebSocket left it out for its size. NULL with *why "running", or "gone" (the oldest results
 * are dropped past a memory budget).
 */
const char *srv_run_result(const srv_run *r, size_t *len, const char **why);
/*
 * Cancel a queued or running run; returns false when it had already finished. The cancel is
 * repeated every few milliseconds until the run is over, so a cancel that lands while the
 * worker is between jobs of the library (which clear the session's flag as they start) is not
 * lost.
 */
bool srv_run_cancel(srv_run *r);
/*
 * The tensor `block`:`port` of finished run `r`, or NULL with *why set: "running", "gone"
 * (a later run or an edit replaced it), "not_found".
 */
const bf_tensor *srv_run_tensor(srv_run *r, const char *block, const char *port,
                                const char **why);

/*
 * A job of another file on the run workers (train_jobs.c), with a run's rules: it counts
 * against --max-runs, holds the page (busy) until it is over and is cancelled by
 * srv_run_cancel. `fn` is called on a worker; it posts events with srv_run_post and ends with
 * exactly one of srv_run_finish (the terminal event: the page is the loop's again) or
 * srv_run_requeue (the job goes to the tail of the queue, so jobs of many pages take turns,
 * and `fn` is called again later, perhaps on another worker). After either, `fn` must not
 * touch r. `tensors`, when set, answers srv_run_tensor for the job's runs (on the loop).
 */
typedef void (*srv_job_fn)(srv_run *r, void *user);
typedef const bf_tensor *(*srv_tensor_fn)(srv_run *r, void *user, const char *block,
                                          const char *port, const char **why);
srv_run *srv_job_start(srv_app *app, srv_page *p, const char *client, srv_job_fn fn,
                       void *user, srv_tensor_fn tensors, srv_response *res);
/* The session of a job's page (on the worker, while the job holds it). */
bf_session *srv_run_session(srv_run *r);
/* The page of a run; NULL once the page was closed. */
srv_page *srv_run_page(srv_run *r);
/* Whether the run is over (on the loop). */
bool srv_run_over(const srv_run *r);
/* Whether srv_run_cancel was called (any thread). */
bool srv_run_cancelled(const srv_run *r);
/* A new event object {"type", "run_id", "page"} of r. */
struct cJSON *srv_run_event(const srv_run *r, const char *type);
/* Send event `o` (taken) to r's client (worker). */
void srv_run_post(srv_run *r, struct cJSON *o);
/* Send the terminal event `o` (taken) and hand the run back to the loop (worker). */
void srv_run_finish(srv_run *r, struct cJSON *o);
/* Put r at the tail of the job queue (the loop, queueing a new run; a worker, requeueing). */
void srv_run_requeue(srv_run *r);
/* Whether some job waits in the queue (any thread). */
bool srv_jobs_waiting(srv_app *app);

/* teach_routes.c: gradient blocks were added to page p's session s: mark the page changed and
 * answer {"created": created (freed here), "page": the session's check}. */
void srv_gradients_built(srv_page *p, bf_session *s, char *created, srv_response *res);

/* ---- training jobs (train_jobs.c) --------------------------------------------------------- */
/*
 * The training routes on page `name` of pages folder `st`: POST/GET .../train, POST .../backward,
 * .../check_backward, and .../edits while a training job holds the page. false when `act`
 * is none of these (the router goes on).
 */
bool srv_train_route(srv_app *app, srv_store *st, const char *act, const char *name,
                     const char *client, const srv_request *req, srv_response *res);
/* Page p is closing (loop, p not busy): forget its training job. */
void srv_train_page_closed(srv_app *app, srv_page *p);
/* Free what train_jobs.c holds (after the workers have stopped). */
void srv_train_free(srv_app *app);
/* Lower the calling run worker's priority a little (Linux: per thread), so that the loop
 * thread answers quickly while every worker trains. */
void srv_worker_nice(void);

/* import_routes.c: POST /api/import, an enuSpace page into the pages folder. */
void srv_import(srv_app *app, const srv_request *req, srv_response *res);

/* ---- JSON answers (reply.c, a leaf: every other file uses it) ----------------------------- */
/* `e` as bf_error_json's object (the one form of an error everywhere), or NULL (no memory). */
struct cJSON *srv_error_object(const bf_error *e);
/* res <- status with {"error": {"code", "message", and the fields of e that are set}}. */
void srv_error(srv_response *res, int status, const char *code, const char *fmt, ...);
void srv_error_bf(srv_response *res, int status, const bf_error *e);
/* res <- status (0: from e's status) with {"error": e, "problems": [every record of d]}. */
void srv_problems(srv_response *res, int status, const bf_error *e, const bf_diags *d);
/* Every problem of `d` (or `e` alone when `d` holds none) as a JSON array of bf_error_json
 * objects: the one form problems take in every answer. */
struct cJSON *srv_problems_json(const bf_diags *d, const bf_error *e);
/* res <- status with the given JSON text (takes ownership of `json`, malloc'd). */
void srv_json(srv_response *res, int status, char *json);

/* Base64 (RFC 4648, standard alphabet, padding optional). Returns bytes or -1. */
long srv_base64_decode(const char *in, size_t n, unsigned char *out, size_t cap);
/* `n - 1` random lowercase hex digits into out[n] (n - 1 even). */
void srv_random_hex(char *out, size_t n);
/* `path` without the server's own prefix (app->prefix) when it starts with it. */
const char *srv_route_strip(const srv_app *app, const char *path);
/* Whether `path` is served without the token (the editor's files: /, /index.html, /assets/). */
bool srv_route_is_open(const srv_app *app, const char *path);
/* Constant-time comparison of two NUL-terminated strings. */
bool srv_secret_eq(const char *a, const char *b);

#endif /* BF_SERVER_H */
