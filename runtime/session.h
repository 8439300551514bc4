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
    bool valid;                /* outs are up to date */
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
    /* per run */
    bool needed, scheduled;
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
    atomic_int cancel;         /* 0 running, 1 cancelled, 2 timed out, 3 failed */
    gpu_state gpu[BF_MAX_GPUS];
    uv_mutex_t gpu_mu;         /* GPU work (kernels, copies, set-up) is serialised: a stream
                                  and a cuDNN handle belong to one thread at a time */
    bool gpu_mu_ok;
    /* run state, touched only on the running thread */
    uv_loop_t loop;
    double deadline;           /* bf_now() past it: the run times out (0: no limit) */
    int *ready;                /* blocks whose inputs are all produced, not yet started */
    int n_ready;
    int inflight;              /* blocks on libuv's thread pool */
    bf_status run_status;
    bf_error run_err;
    const bf_run_options *opts;
};

/* session.c */
/* Complete an error about node b (page, block id, JSON pointer to the port or attribute). */
void bf_sess_where(bf_session *s, int b, bf_error *e);
/* Allocate node i's per-port arrays (its block already bound). False when out of memory. */
bool bf_sess_node_alloc(bf_session *s, int i);

/* graph.c */
/* Set node i up for page block i (a new block, or after blocks moved): pointers, stats. */
void bf_sess_node_bind(bf_session *s, int i);
/* Consumers and topological order from the page's links. False when out of memory. */
bool bf_sess_graph_build(bf_session *s);
/* Drop node n's cached results (frees its tensors). */
void bf_sess_drop_results(snode *n);
/* Invalidate node b and everything downstream. False when out of memory (then every result
 * is dropped, which is safe). */
bool bf_sess_invalidate(bf_session *s, int b);
/* Mark b and everything it reads from as needed by this run. */
bf_status bf_sess_mark_needed(bf_session *s, int b, bf_error *err);
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
