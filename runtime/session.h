/*
 * session.h - the internal layout of a session, shared by the files that make one up:
 *
 *   session.c  construction, destruction, and reading results and statistics
 *   graph.c    the graph over the page: consumers, topological order, keeping the nodes in
 *              step with the page after edits, invalidation, and what a run needs
 *   check.c    checking and inference without running: every problem at once, every port's
 *              dtype and shape (bf_session_check, the port shapes, bf_session_check_json)
 *   place.c    devices: choosing where a block runs, tensors on devices and copies between
 *              them, kernel workspaces
 *   sched.c    the run: the scheduler on libuv's thread pool, executing one block,
 *              cancellation and time limits
 *   edit.c     changing the page in place (the editing calls, feeds and attribute changes)
 *              with exactly the invalidation each change needs
 *
 * A session's nodes are parallel to its page's blocks: node i is block i, always (edits that
 * add or remove blocks move both together, graph.c).
 */
#ifndef BF_SESSION_H
#define BF_SESSION_H

#include "page.h"

#include <uv.h>

typedef struct snode {
    bf_node node;              /* what the block sees */
    bf_page_block *pb;         /* the page's block (attrs, links) */
    int index;
    bf_port_info *info;        /* [n_outputs] check-time inference */
    bool info_ok;              /* infer succeeded at the last check */
    bf_tensor **outs;          /* [n_outputs] cached results (host or device) */
    bf_tensor **host_outs;     /* [n_outputs] host copies of device results, for fetches */
    bool valid;                /* outs are up to date (false once evicted from the cache) */
    bf_tensor *feed;           /* session-owned copy of the fed tensor */
    int *consumers;            /* nodes that read any output of this one */
    int n_consumers;
    void *ws;                  /* CPU workspace, kept across runs */
    size_t ws_size;
    void *dws;                 /* GPU workspace, kept across runs */
    size_t dws_size;
    bf_device *dws_dev;
    bf_block_stats stats;
    bool ordered;              /* in the topological order (not on or behind a cycle) */
    /* the result cache (graph.c): a valid node that is neither pinned nor read by a block of
     * the current run sits on the session's LRU list, least recently used first */
    bool cached;               /* on the LRU list */
    int lru_prev, lru_next;    /* neighbours on the list, -1 at its ends */
    uint64_t bytes;            /* bytes of outs and host_outs, counted while cached */
    /* per run */
    bool needed, scheduled;    /* needed: the fetches read it, directly or not */
    bool runs;                 /* needed and not valid, and read by a fetch or a running block:
                                  executed by this run */
    bool pinned;               /* fetched by this run or a page output: never released */
    bool stale;                /* a step committed a new state into this stateful node: it
                                  and what it feeds are invalidated when the next run starts
                                  (so the last step's results stay readable until then) */
    bool transient;            /* in a step: depends on a Variable or dataset, so its result is
                                  recomputed next step and freed after its last reader rather
                                  than cached */
    int uses;                  /* blocks of this run still to read its outputs */
    uint32_t fetched;          /* bit p: output p is fetched by this run */
    int pending;               /* inputs not yet produced in this run */
    bf_device *dev;            /* NULL = CPU */
    bf_status status;
    bf_error *err;             /* the failure of this run, allocated only when it fails */
    uv_work_t work;
    struct bf_session *s;
} snode;

typedef struct gpu_state {
    bool ready;                /* session_init done */
    void *stream, *ctx;
} gpu_state;

struct bf_session {
    bf_context *ctx;
    bf_page *page;
    snode *nodes;
    int n;                     /* == page->n_blocks */
    int cap;                   /* allocated length of nodes, order and ready */
    int *order;                /* topological order; n_order < n when there is a cycle */
    int n_order;
    bool checked;              /* the nodes' info is up to date with the page */
    bf_budget budget;
    uint64_t cache_limit;      /* bytes the LRU list may hold; 0 with no_cache */
    bool no_cache;             /* bf_config.no_cache: release results as soon as they are read */
    uint64_t cache_used;       /* bytes on the LRU list */
    int lru_head, lru_tail;    /* least and most recently used, -1 when empty */
    atomic_int cancel;         /* 0 running, 1 cancelled, 2 timed out, 3 failed */
    gpu_state gpu[BF_MAX_GPUS];
    uv_mutex_t gpu_mu;         /* GPU work (kernels, copies, set-up) is serialised: a stream
                                  and a cuDNN handle belong to one thread at a time */
    bool gpu_mu_ok;
    /* run state, touched only on the running thread */
    uv_loop_t loop;            /* made when a run first hands a block to the thread pool */
    bool loop_ready;
    double deadline;           /* bf_now() past it: the run times out (0: no limit) */
    int *ready;                /* blocks whose inputs are all produced, not yet started */
    int n_ready;
    int inflight;              /* blocks on libuv's thread pool */
    bf_status run_status;
    bf_error run_err;
    const bf_run_options *opts;
    /* training (state.c) */
    int64_t steps;             /* steps committed since made, reset or restored */
    bool any_stale;            /* some node is stale */
    bool stepping;             /* inside bf_session_step: transient results are not cached */
    atomic_int stop_steps;     /* bf_session_cancel: stop the step loop */
    bool dry_run;              /* a copy that tries an edit batch: reports nothing */
    bool promote_f64;          /* a float64 re-run (grad_check.c): bf_node.promote_f64 */
    bool local;                /* this process's copy only: no collective calls (fuse.c,
                                  state.c), its AllReduce blocks the identity */
    bf_diags *edit_diags;      /* the diags of the bf_session_apply_edits in progress */
    /* collective rounds of the run in progress (fuse.c); all zero in one process */
    int *round_of;             /* [n] a collective node's round (1-based) in this run, else 0 */
    int *round_left;           /* [rounds + 1] members of each round not yet done locally */
    int *held;                 /* nodes done locally, waiting for their round */
    int n_held;
    int rounds, rounds_done;   /* rounds this run needs; rounds negotiated so far */
    bool rounds_stopped;       /* a round found a rank failed or cancelled: no more rounds */
};

/* session.c */
/* bf_session_new, optionally as a float64 re-run of the page (every float dtype an attribute
 * chooses becomes float64: bf_node_float), or `local`: a copy for this process alone (an edit
 * batch's trial, a gradient check's re-run) that takes no part in the job's collectives. */
bf_status bf_sess_make(bf_context *ctx, bf_page *page, bool promote_f64, bool local,
                       bf_session **out, bf_error *err);
/* Complete an error about node b (page, block id, JSON pointer to the port or attribute). */
void bf_sess_where(bf_session *s, int b, bf_error *e);
/* Allocate node i's per-port arrays (its block already bound). False when out of memory. */
bool bf_sess_node_alloc(bf_session *s, int i);

/* graph.c */
/* Set node i up for page block i (a new block, or after blocks moved): pointers, stats. */
void bf_sess_node_bind(bf_session *s, int i);
/* Consumers and topological order from the page's links. False when out of memory. */
bool bf_sess_graph_build(bf_session *s);
/* Drop node n's cached results (frees its tensors, takes it off the LRU list). */
void bf_sess_drop_results(snode *n);
/* Invalidate node b and everything downstream, valid or not (an evicted node may sit between
 * b and valid nodes). False when out of memory (then every result is dropped, which is safe). */
bool bf_sess_invalidate(bf_session *s, int b);
/* Mark b and everything it reads from as needed by this run, and, walking only through nodes
 * that are not valid, those that must execute (`runs`). */
bf_status bf_sess_mark_needed(bf_session *s, int b, bf_error *err);
/* Put valid node n on the LRU list as the most recently used (a no-op when it is on it), or
 * free its results at once when the session keeps no cache; then evict the least recently
 * used until the list fits the cache limit. */
void bf_sess_cache_put(bf_session *s, snode *n);
/* Take node n off the LRU list (it is in use, pinned or dropped). */
void bf_sess_cache_take(bf_session *s, snode *n);
/* Evict the least recently used results until the list holds at most `keep` bytes. Returns
 * the bytes freed. */
uint64_t bf_sess_cache_evict(bf_session *s, uint64_t keep);
/* Node `b` left the nodes array (those after it moved down one): fix the list's links. */
void bf_sess_cache_removed(bf_session *s, int b);
/* Free what node n owns (its results, feed, workspaces, block state, arrays). */
void bf_sess_node_free(bf_session *s, snode *n);
/* Give nodes, order and ready room for `n` blocks. False when out of memory. */
bool bf_sess_reserve(bf_session *s, int n);

/* check.c */
/* Gather node b's input infos from its sources' check-time results. False: a source failed
 * or an input is not connected. */
bool bf_sess_gather_infos(bf_session *s, int b, bf_port_info *in);

/* A problem as the JSON object of bf_session_check_json (NULL when out of memory). */
cJSON *bf_sess_error_json(const bf_error *e);

/* grad.c: building edit lists (also teach.c) */
cJSON *bf_sess_ui_at(double x, double y);                  /* {"x", "y"}, NULL: no memory */
cJSON *bf_sess_add_edit(cJSON *edits, const char *op);     /* a new {"op"} on the list */
bool bf_sess_connect_edit(cJSON *edits, const char *block, const char *port, const char *src);
/* The attributes block pb sets (defaults stay implicit) that type `to` also has, as a JSON
 * object (NULL: no memory). */
cJSON *bf_sess_attrs_like(const bf_page_block *pb, const bf_block_desc *to);

/* state.c */
/* Invalidate the stale nodes (a committed step's Variables and datasets): called when a run
 * starts. False when out of memory (then every result is dropped, which is safe). */
bool bf_sess_state_settle(bf_session *s);
/* An edit re-initialised stateful block b (its attribute `attr` changed): a warning in the
 * edit batch's diags, code "state_reset". */
void bf_sess_state_was_reset(bf_session *s, int b, const char *attr);
/* The wiring rules of training pages, reported as check problems: a ref input must come
 * straight from a Variable, and no Variable may have two update blocks. */
typedef void (*bf_sess_report_fn)(bf_session *s, int b, bf_error *e, void *user);
void bf_sess_state_check(bf_session *s, bf_sess_report_fn report, void *user);

/* fuse.c: the AllReduce blocks of a run, fused (a job of several ranks only) */
/* Check problems of collective blocks, before inference: one built for another rank count
 * (its attribute `ranks`) than the job has ("wrong_rank_count"). */
void bf_sess_fuse_check(bf_session *s, bf_sess_report_fn report, void *user);
/* Plan the run's rounds: round k holds the collective blocks that run after k-1 others on
 * their deepest path. Call after placement, before the first block starts. */
bf_status bf_sess_fuse_plan(bf_session *s, bf_error *err);
/* Node n's kernel succeeded: when it is collective (and the job has several ranks), keep it
 * until its round and return true (the caller completes it later); else false. */
bool bf_sess_fuse_hold(bf_session *s, snode *n);
/* Whether every member of the next round is held. */
bool bf_sess_fuse_ready(const bf_session *s);
/* Negotiate the next round with the other ranks and reduce its members' outputs in one
 * buffer; `failed_here`: this rank's run has failed or was cancelled (the others learn it and
 * stop). On BF_OK every held node holds the reduced value; either way the caller completes
 * the held nodes (s->held, in page order) and sets n_held to 0. */
bf_status bf_sess_fuse_round(bf_session *s, bool failed_here, bf_error *err);
/* Sum buf[0..count) (float32 or float64) over the ranks, as bf_config.deterministic_reduce
 * asks: an all-reduce, or a gather on rank 0, a sum in rank order and a broadcast. */
bf_status bf_sess_coll_sum(bf_session *s, void *buf, int64_t count, bf_dtype dt, bf_error *err);
/* The run ended: if it stopped before its rounds were done, tell the other ranks in the next
 * round's negotiation; drop held results and free the plan. */
void bf_sess_fuse_end(bf_session *s, bool failed_here);
/* The job's agreement after a step or a state change (a checkpoint, the state a session
 * starts from): `local` is this rank's status; returns it, or BF_EDEVICE "rank_failed"
 * naming the lowest rank that failed when this one did not. *stop: some rank asked to stop
 * (may be NULL). A no-op in one process. */
bf_status bf_sess_job_agree(bf_session *s, bf_status local, bool want_stop, bool *stop,
                            const char *what, bf_error *err);

/* state.c: in a job of several ranks, agree on how making the state went (`local`) and give
 * every rank rank 0's state. Returns `local` or the agreement's error. */
bf_status bf_sess_state_sync(bf_session *s, bf_status local, bf_error *err);

/* place.c */
bf_status bf_sess_place(bf_session *s, snode *n, bf_port_info *in, bf_error *err);
bf_status bf_sess_tensor_alloc(bf_session *s, bf_device *dev, const bf_port_info *p,
                               bf_tensor **out, bf_error *err);
void bf_sess_tensor_free(bf_tensor *t);
bf_status bf_sess_tensor_move(bf_session *s, const bf_tensor *src, bf_device *dev,
                              bf_tensor **out, bf_error *err);
gpu_state *bf_sess_gpu(bf_session *s, bf_device *dev, bf_error *err);
bf_status bf_sess_workspace(bf_session *s, snode *n, size_t bytes, bf_error *err);
void bf_sess_workspace_free(bf_session *s, snode *n);

#endif /* BF_SESSION_H */
