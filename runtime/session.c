/*
 * session.c - a page made runnable and editable: making and freeing a session (its nodes,
 * one per block, each with its cached results), and reading results and statistics.
 *
 * The session's other jobs each have their file (session.h lists them): the graph, checking
 * and inference, devices, the scheduler, and edits.
 */
#include "session.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Complete an error about node `b`: page, block id, and a JSON pointer to the port or attr. */
void bf_sess_where(bf_session *s, int b, bf_error *e) {
    bf_strlcpy(e->page, s->page->file, sizeof(e->page));
    if (b < 0) return;
    bf_page_block *pb = &s->page->blocks[b];
    bf_strlcpy(e->block_id, pb->id, sizeof(e->block_id));
    if (e->pointer[0]) return;
    bool is_input = false;
    for (int i = 0; e->port[0] && i < pb->desc->n_inputs; i++)
        is_input |= !strcmp(pb->desc->inputs[i].name, e->port);
    if (e->attr[0])
        snprintf(e->pointer, sizeof(e->pointer), "/blocks/%d/attrs/%s", pb->json_index, e->attr);
    else if (is_input)
        snprintf(e->pointer, sizeof(e->pointer), "/blocks/%d/inputs/%s", pb->json_index,
                 e->port);
    else
        snprintf(e->pointer, sizeof(e->pointer), "/blocks/%d", pb->json_index);
}

/* Allocate node i's per-port arrays (its block already bound). False when out of memory. */
bool bf_sess_node_alloc(bf_session *s, int i) {
    snode *n = &s->nodes[i];
    size_t no = (size_t)BF_MAX(n->pb->desc->n_outputs, 1);
    n->info = bf_calloc(no, sizeof(bf_port_info));
    n->outs = bf_calloc(no, sizeof(bf_tensor *));
    n->host_outs = bf_calloc(no, sizeof(bf_tensor *));
    return n->info && n->outs && n->host_outs;
}

void bf_session_free(bf_session *s) {
    if (!s) return;
    for (int i = 0; s->nodes && i < s->n; i++) bf_sess_node_free(s, &s->nodes[i]);
    for (int g = 0; g < BF_MAX_GPUS; g++) {
        if (s->gpu[g].ready) {
            bf_device *dev = &s->ctx->gpus[g];
            dev->ops->session_free(dev, s->gpu[g].stream, s->gpu[g].ctx);
        }
    }
    if (s->gpu_mu_ok) uv_mutex_destroy(&s->gpu_mu);
    if (s->loop_ready) uv_loop_close(&s->loop);
    bf_free(s->nodes);
    bf_free(s->order);
    bf_free(s->ready);
    bf_page_free(s->page);
    bf_free(s);
}

bf_status bf_session_new(bf_context *ctx, bf_page *page, bf_session **out, bf_error *err) {
    return bf_sess_make(ctx, page, false, false, out, err);
}

bf_status bf_sess_make(bf_context *ctx, bf_page *page, bool promote_f64, bool local,
                       bf_session **out, bf_error *err) {
    if (!out) {
        bf_page_free(page);
        return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    }
    *out = NULL;
    if (!ctx || !page) {
        bf_page_free(page);
        return bf_err(err, BF_EINVAL, "bad_argument", "ctx or page is NULL");
    }
    if (page->files_skipped) {
        bf_page_free(page);
        return bf_err(err, BF_EINVAL, "bad_argument", "a page loaded with BF_LOAD_SKIP_FILES "
                      "cannot be run");
    }
    bf_session *s = bf_calloc(1, sizeof(*s));
    if (!s) {
        bf_page_free(page);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    s->ctx = ctx;
    s->page = page;
    s->promote_f64 = promote_f64;
    s->local = local || promote_f64;
    s->budget.limit = ctx->cfg.max_session_bytes;
    s->no_cache = ctx->cfg.no_cache != 0;
    s->cache_limit = s->no_cache ? 0 : ctx->cfg.max_cache_bytes;
    s->lru_head = s->lru_tail = -1;
    atomic_init(&s->cancel, 0);
    atomic_init(&s->stop_steps, 0);
    if (!bf_sess_reserve(s, BF_MAX(page->n_blocks, 1))) goto oom;
    for (int i = 0; i < page->n_blocks; i++) {
        s->n = i + 1; /* freed by bf_session_free from here on */
        bf_sess_node_bind(s, i);
        if (!bf_sess_node_alloc(s, i)) goto oom;
    }
    if (!bf_sess_graph_build(s)) goto oom;
    /* Per-node state (Const builds its tensor here); in a job of several ranks, every rank
     * then takes rank 0's Variables. */
    bf_status init_st = BF_OK;
    for (int i = 0; i < s->n && init_st == BF_OK; i++) {
        snode *n = &s->nodes[i];
        if (n->pb->desc->init && (init_st = n->pb->desc->init(&n->node, err)) && err)
            bf_sess_where(s, i, err);
    }
    if ((init_st = bf_sess_state_sync(s, init_st, err))) {
        bf_session_free(s); /* fini of every block; states not made yet are NULL */
        return init_st;
    }
    if (uv_mutex_init(&s->gpu_mu) != 0) goto oom;
    s->gpu_mu_ok = true;
    if (page->checkpoint) { /* the state a training page starts from */
        char path[PATH_MAX];
        bf_file_scope scope = {page->dir, page->confine_files, page->max_elements};
        bf_status st = bf_file_resolve(page->checkpoint, &scope, path, sizeof(path), err);
        if (st == BF_OK) st = bf_session_load_state(s, path, err);
        if (st) {
            if (err) {
                bf_strlcpy(err->page, page->file, sizeof(err->page));
                if (!err->block_id[0]) bf_strlcpy(err->pointer, "/checkpoint", sizeof(err->pointer));
            }
            bf_session_free(s);
            return st;
        }
    }
    *out = s;
    return BF_OK;
oom:
    bf_session_free(s);
    return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}

const bf_page *bf_session_page(const bf_session *s) { return s ? s->page : NULL; }

/* ---- results ---------------------------------------------------------------------------- */

/* Node and output port of (block_id, port), or -1 for the node. */
static int find_output(bf_session *s, const char *block_id, const char *port, int *p) {
    int b = block_id ? bf_page_find(s->page, block_id) : -1;
    if (b < 0) return -1;
    const bf_block_desc *d = s->nodes[b].pb->desc;
    if (d->n_outputs == 0) return -1;
    *p = 0;
    if (port) {
        for (*p = 0; *p < d->n_outputs; (*p)++)
            if (!strcmp(d->outputs[*p].name, port)) break;
        if (*p == d->n_outputs) return -1;
    }
    return b;
}

/* A node's results are valid, or were partly handed over (bf_session_take_output: the node is
 * no longer valid but its other ports stay readable until the next run). */
const bf_tensor *bf_session_output(bf_session *s, const char *block_id, const char *port) {
    int p = 0, b = s ? find_output(s, block_id, port, &p) : -1;
    if (b < 0) return NULL;
    snode *n = &s->nodes[b];
    return n->host_outs[p] ? n->host_outs[p] : (n->outs[p] && !n->outs[p]->device ? n->outs[p]
                                                                                  : NULL);
}

bf_status bf_session_take_output(bf_session *s, const char *block_id, const char *port,
                                 bf_tensor **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    int p = 0, b = find_output(s, block_id, port, &p);
    if (b < 0)
        return bf_err(err, BF_ENOTFOUND, "not_found", "no output \"%.60s%s%.30s\" on this page",
                      block_id ? block_id : "(null)", port ? ":" : "", port ? port : "");
    snode *n = &s->nodes[b];
    bf_tensor **slot = n->host_outs[p] ? &n->host_outs[p]
                                       : (n->outs[p] && !n->outs[p]->device ? &n->outs[p] : NULL);
    if (!slot) {
        bf_error e = {0};
        bf_err(&e, BF_ENOTFOUND, "not_found", "output \"%s\" has no result in host memory to "
               "hand over (run the page with it fetched first)", n->pb->desc->outputs[p].name);
        bf_sess_where(s, b, &e);
        if (err) *err = e;
        return BF_ENOTFOUND;
    }
    bf_tensor *t = *slot;
    if (t->borrowed) /* a view of a feed: the feed stays the session's */
        return bf_tensor_copy(t, out, err);
    if (n->cached) bf_sess_cache_take(s, n);
    *slot = NULL;
    if (slot == &n->outs[p]) n->valid = false; /* the block must run again to have it */
    bf_budget_release(t->budget, t->nbytes);
    t->budget = NULL;
    *out = t;
    return BF_OK;
}

uint64_t bf_session_peak_bytes(const bf_session *s) {
    return s ? atomic_load(&s->budget.peak) : 0;
}

uint64_t bf_session_cached_bytes(const bf_session *s) { return s ? s->cache_used : 0; }

const bf_block_stats *bf_session_block_stats(const bf_session *s, int i) {
    return s && i >= 0 && i < s->n ? &s->nodes[i].stats : NULL;
}

int bf_session_block_output_count(const bf_session *s, int i) {
    return s && i >= 0 && i < s->n ? s->nodes[i].pb->desc->n_outputs : 0;
}

const char *bf_session_block_output_name(const bf_session *s, int i, int j) {
    if (!s || i < 0 || i >= s->n || j < 0 || j >= s->nodes[i].pb->desc->n_outputs) return NULL;
    return s->nodes[i].pb->desc->outputs[j].name;
}
