/*
 * graph.c - the session's graph over its page: each node's consumers, the topological order
 * (Kahn's algorithm, page.c; nodes left out sit on or behind a cycle), keeping the nodes in
 * step with the page when edits add, remove or rewire blocks, invalidation, and the set of
 * blocks a run needs (TensorFlow's fetch pruning).
 *
 * Invalidation walks every node downstream, valid or not: the result cache evicts results
 * that later blocks were computed from, so a valid node may have an evicted (invalid) source,
 * and stopping at invalid nodes would leave stale results behind it. Walks are iterative: a
 * chain of a million blocks must not overflow the stack.
 *
 * The result cache: after a run, and as soon as the last block of a run that reads it has
 * completed, a result that is neither fetched by the run nor a page output is "released": put
 * on an LRU list charged against bf_config.max_cache_bytes (or freed at once with
 * bf_config.no_cache). Past the limit, the least recently used results are freed. An evicted
 * node is simply not valid: a later run that needs it executes it again. The list is linked
 * by node index (O(1) to add, take and evict), and fixed up when a removed block moves the
 * nodes after it.
 */
#include "session.h"

#include <string.h>

void bf_sess_node_bind(bf_session *s, int i) {
    snode *n = &s->nodes[i];
    bf_page_block *pb = &s->page->blocks[i];
    n->pb = pb;
    n->index = i;
    n->s = s;
    n->node.id = pb->id;
    n->node.desc = pb->desc;
    n->node.attrs = pb->attrs;
    n->node.budget = &s->budget;
    n->node.max_elements = s->ctx->cfg.max_tensor_elements;
    n->node.promote_f64 = s->promote_f64;
    n->node.rank = s->ctx->coll.rank;
    n->node.ranks = s->ctx->coll.size;
    n->stats.id = pb->id;
    n->stats.type = pb->desc->type;
    n->stats.n_outputs = pb->desc->n_outputs;
}

bool bf_sess_reserve(bf_session *s, int n) {
    if (n <= s->cap) return true;
    int cap = BF_MAX(n, s->cap * 2);
    snode *nodes = bf_realloc(s->nodes, (size_t)cap * sizeof(snode));
    if (!nodes) return false;
    s->nodes = nodes;
    memset(nodes + s->cap, 0, (size_t)(cap - s->cap) * sizeof(snode));
    int *order = bf_realloc(s->order, (size_t)cap * sizeof(int));
    if (!order) return false;
    s->order = order;
    int *ready = bf_realloc(s->ready, (size_t)cap * sizeof(int));
    if (!ready) return false;
    s->ready = ready;
    s->cap = cap;
    return true;
}

bool bf_sess_graph_build(bf_session *s) {
    const bf_page *page = s->page;
    for (int i = 0; i < s->n; i++) {
        bf_sess_node_bind(s, i);
        s->nodes[i].n_consumers = 0;
    }
    /* Consumer lists, sized exactly (an upper bound: a source read twice is listed once). */
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < page->blocks[i].desc->n_inputs; k++)
            if (page->blocks[i].inputs[k].src_block >= 0)
                s->nodes[page->blocks[i].inputs[k].src_block].n_consumers++;
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        bf_free(n->consumers);
        n->consumers = bf_calloc((size_t)BF_MAX(n->n_consumers, 1), sizeof(int));
        if (!n->consumers) return false;
        n->n_consumers = 0;
    }
    for (int i = 0; i < s->n; i++) {
        const bf_page_block *pb = &page->blocks[i];
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            if (pb->inputs[k].src_block < 0) continue;
            snode *src = &s->nodes[pb->inputs[k].src_block];
            /* i only grows, so a repeat can only be the last entry (O(1): a block may feed
             * a million others) */
            if (!src->n_consumers || src->consumers[src->n_consumers - 1] != i)
                src->consumers[src->n_consumers++] = i;
        }
    }
    bool *ordered = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(bool));
    int done = ordered ? bf_page_topo(page, s->order, ordered) : -1;
    for (int i = 0; done >= 0 && i < s->n; i++) s->nodes[i].ordered = ordered[i];
    bf_free(ordered);
    if (done < 0) return false;
    s->n_order = done;
    s->checked = false;
    return true;
}

void bf_sess_drop_results(snode *n) {
    if (n->cached) bf_sess_cache_take(n->s, n);
    for (int i = 0; n->outs && n->host_outs && i < n->pb->desc->n_outputs; i++) {
        bf_sess_tensor_free(n->outs[i]);
        bf_sess_tensor_free(n->host_outs[i]);
        n->outs[i] = n->host_outs[i] = NULL;
    }
    n->valid = false;
}

bool bf_sess_invalidate(bf_session *s, int b) {
    s->checked = false;
    int *stack = bf_malloc((size_t)BF_MAX(s->n, 1) * sizeof(int));
    if (!stack) {
        for (int i = 0; i < s->n; i++) bf_sess_drop_results(&s->nodes[i]);
        return false;
    }
    bool *seen = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(bool));
    if (!seen) {
        bf_free(stack);
        for (int i = 0; i < s->n; i++) bf_sess_drop_results(&s->nodes[i]);
        return false;
    }
    int top = 0;
    bf_sess_drop_results(&s->nodes[b]);
    seen[b] = true;
    stack[top++] = b;
    while (top) {
        snode *n = &s->nodes[stack[--top]];
        for (int i = 0; i < n->n_consumers; i++) {
            snode *m = &s->nodes[n->consumers[i]];
            if (seen[m->index]) continue;
            seen[m->index] = true;
            bf_sess_drop_results(m);
            stack[top++] = m->index;
        }
    }
    bf_free(seen);
    bf_free(stack);
    return true;
}

bf_status bf_sess_mark_needed(bf_session *s, int b, bf_error *err) {
    int *stack = bf_malloc((size_t)BF_MAX(s->n, 1) * sizeof(int));
    if (!stack) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    int top = 0;
    if (!s->nodes[b].needed) {
        s->nodes[b].needed = true;
        stack[top++] = b;
    }
    while (top) {
        bf_page_block *pb = s->nodes[stack[--top]].pb;
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            int src = pb->inputs[k].src_block;
            if (src >= 0 && !s->nodes[src].needed) {
                s->nodes[src].needed = true;
                stack[top++] = src;
            }
        }
    }
    /* What executes: from b through nodes that are not valid (a valid node's sources are not
     * read again, even when they were evicted). */
    if (!s->nodes[b].valid && !s->nodes[b].runs) {
        s->nodes[b].runs = true;
        stack[top++] = b;
    }
    while (top) {
        bf_page_block *pb = s->nodes[stack[--top]].pb;
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            int src = pb->inputs[k].src_block;
            if (src >= 0 && !s->nodes[src].valid && !s->nodes[src].runs) {
                s->nodes[src].runs = true;
                stack[top++] = src;
            }
        }
    }
    bf_free(stack);
    return BF_OK;
}

/* ---- the result cache ------------------------------------------------------------------------ */

void bf_sess_cache_take(bf_session *s, snode *n) {
    if (!n->cached) return;
    if (n->lru_prev >= 0) s->nodes[n->lru_prev].lru_next = n->lru_next;
    else s->lru_head = n->lru_next;
    if (n->lru_next >= 0) s->nodes[n->lru_next].lru_prev = n->lru_prev;
    else s->lru_tail = n->lru_prev;
    s->cache_used -= n->bytes;
    n->cached = false;
    n->lru_prev = n->lru_next = -1;
}

uint64_t bf_sess_cache_evict(bf_session *s, uint64_t keep) {
    uint64_t freed = 0;
    while (s->cache_used > keep && s->lru_head >= 0) {
        snode *n = &s->nodes[s->lru_head];
        freed += n->bytes;
        bf_sess_drop_results(n); /* takes it off the list */
    }
    return freed;
}

void bf_sess_cache_put(bf_session *s, snode *n) {
    if (n->cached || !n->valid) return;
    if (s->no_cache || (s->stepping && n->transient)) {
        bf_sess_drop_results(n);
        return;
    }
    uint64_t bytes = 0;
    for (int i = 0; i < n->pb->desc->n_outputs; i++) {
        if (n->outs[i] && !n->outs[i]->borrowed) bytes += n->outs[i]->nbytes; /* not a view */
        if (n->host_outs[i]) bytes += n->host_outs[i]->nbytes;
    }
    n->bytes = bytes;
    n->cached = true;
    n->lru_next = -1;
    n->lru_prev = s->lru_tail;
    if (s->lru_tail >= 0) s->nodes[s->lru_tail].lru_next = n->index;
    else s->lru_head = n->index;
    s->lru_tail = n->index;
    s->cache_used += bytes;
    bf_sess_cache_evict(s, s->cache_limit);
}

void bf_sess_cache_removed(bf_session *s, int b) {
    if (s->lru_head > b) s->lru_head--;
    if (s->lru_tail > b) s->lru_tail--;
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!n->cached) continue;
        if (n->lru_prev > b) n->lru_prev--;
        if (n->lru_next > b) n->lru_next--;
    }
}

void bf_sess_node_free(bf_session *s, snode *n) {
    bf_sess_drop_results(n);
    if (n->pb && n->pb->desc->fini) n->pb->desc->fini(&n->node);
    n->node.state = NULL;
    bf_sess_tensor_free(n->feed);
    bf_free(n->err);
    bf_sess_workspace_free(s, n);
    bf_free(n->info);
    bf_free(n->outs);
    bf_free(n->host_outs);
    bf_free(n->consumers);
    memset(n, 0, sizeof(*n));
}
