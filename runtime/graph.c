/*
 * graph.c - the session's graph over its page: each node's consumers, the topological order
 * (Kahn's algorithm, page.c; nodes left out sit on or behind a cycle), keeping the nodes in
 * step with the page when edits add, remove or rewire blocks, invalidation, and the set of
 * blocks a run needs (TensorFlow's fetch pruning).
 *
 * Invalidation: a valid node only ever has valid sources (it was computed after them, and
 * invalidation always flows downstream), so the walk stops at nodes already invalid. Walks
 * are iterative: a chain of a million blocks must not overflow the stack.
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
    int top = 0;
    bf_sess_drop_results(&s->nodes[b]);
    stack[top++] = b;
    while (top) {
        snode *n = &s->nodes[stack[--top]];
        for (int i = 0; i < n->n_consumers; i++) {
            snode *m = &s->nodes[n->consumers[i]];
            if (!m->valid) continue;
            bf_sess_drop_results(m);
            stack[top++] = m->index;
        }
    }
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
    bf_free(stack);
    return BF_OK;
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
