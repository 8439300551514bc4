/*
 * session.c - a loaded page made runnable: the graph, checking and shape inference, the
 * scheduler, device placement, result caching and cancellation.
 *
 * Check: a topological sort (Kahn) finds cycles; then every block's infer() runs in that
 * order on what is known before running (dtypes, shapes, and the values of constants and
 * feeds), and every problem is reported with its block, port or attribute, and JSON pointer.
 *
 * Run: the blocks the fetches need are found by walking the inputs backwards (TensorFlow's
 * fetch pruning). Blocks whose cached results are still valid are reused; the others form a
 * dependency count graph. Ready blocks go to libuv's thread pool with uv_queue_work(); each
 * completion (after_work_cb, on this thread's private loop) releases its consumers. So
 * independent blocks run concurrently while all graph bookkeeping stays on one thread
 * (STYLE R12). Inside a kernel, bf_parallel_for() splits the work over the context's pool.
 *
 * Incremental runs: a feed or an attribute change invalidates that block and everything
 * downstream of it; nothing else is recomputed. A failed or cancelled run keeps the results
 * of the blocks that completed, and the session stays usable.
 *
 * Devices: a block runs where its "device" (or the run's override) says: "auto" picks the GPU
 * when one is present and the block has a GPU kernel that supports the shapes, else the CPU;
 * "gpu" insists (a clear error when no GPU can be used) but still falls back, with the reason
 * recorded, for a block that has no GPU kernel. Tensors stay where they were produced and are
 * copied only when a consumer on another device, or a fetch, needs them.
 */
#include "page.h"

#include <stdio.h>
#include <string.h>
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
    int n;
    int *order;                /* topological order; n_order < n when there is a cycle */
    int n_order;
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

/* ---- errors ------------------------------------------------------------------------------ */

/* Complete an error about node `b`: page, block id, and a JSON pointer to the port or attr. */
static void where(bf_session *s, int b, bf_error *e) {
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

/* ---- tensors on devices ---------------------------------------------------------------- */

static bf_status tensor_alloc(bf_session *s, bf_device *dev, const bf_port_info *p,
                              bf_tensor **out, bf_error *err) {
    if (!dev)
        return bf_tensor_alloc(&s->budget, s->ctx->cfg.max_tensor_elements, p->dtype, p->rank,
                               p->dims, false, out, err);
    *out = NULL;
    int64_t numel;
    size_t nbytes;
    bf_status st = bf_shape_size(p->dtype, p->rank, p->dims, s->ctx->cfg.max_tensor_elements,
                                 &numel, &nbytes, err);
    if (st || (st = bf_budget_charge(&s->budget, nbytes, err))) return st;
    bf_tensor *t = bf_calloc(1, sizeof(*t));
    void *data = t ? dev->ops->alloc(dev, nbytes ? nbytes : 1, err) : NULL;
    if (!data) {
        bf_free(t);
        bf_budget_release(&s->budget, nbytes);
        return t ? (err ? err->status : BF_EDEVICE)
                 : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    t->dtype = p->dtype;
    t->rank = p->rank;
    memcpy(t->dims, p->dims, sizeof(t->dims));
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = data;
    t->device = dev;
    t->budget = &s->budget;
    *out = t;
    return BF_OK;
}

static void tensor_free(bf_tensor *t) {
    if (!t) return;
    if (!t->device) {
        bf_tensor_free(t);
        return;
    }
    t->device->ops->free(t->device, t->data);
    bf_budget_release(t->budget, t->nbytes);
    bf_free(t);
}

/* The session's state on `dev`, set up on first use. Caller holds gpu_mu (or runs alone). */
static gpu_state *gpu_of(bf_session *s, bf_device *dev, bf_error *err) {
    gpu_state *g = &s->gpu[dev->ordinal];
    if (!g->ready) {
        if (dev->ops->session_init(dev, &g->stream, &g->ctx, err)) return NULL;
        g->ready = true;
    }
    return g;
}

/* Copy `src` to device `dev` (NULL = host) as a new tensor. */
static bf_status tensor_move(bf_session *s, const bf_tensor *src, bf_device *dev,
                             bf_tensor **out, bf_error *err) {
    bf_port_info p;
    bf_port_set(&p, src->dtype, src->rank, src->dims);
    bf_status st = tensor_alloc(s, dev, &p, out, err);
    if (st) return st;
    bf_device *io = dev ? dev : src->device;
    gpu_state *g = gpu_of(s, io, err);
    if (!g) st = err ? err->status : BF_EDEVICE;
    else if (dev && !src->device)
        st = io->ops->upload(io, (*out)->data, src->data, src->nbytes, g->stream, err);
    else if (!dev && src->device)
        st = io->ops->download(io, (*out)->data, src->data, src->nbytes, g->stream, err);
    else
        st = bf_err(err, BF_EUNSUPPORTED, "device_copy", "copies between two GPUs go through "
                    "the host");
    if (st == BF_OK) st = io->ops->sync(io, g->stream, err);
    if (st) {
        tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- construction ------------------------------------------------------------------------ */

static void node_drop_results(snode *n) {
    for (int i = 0; i < n->pb->desc->n_outputs; i++) {
        tensor_free(n->outs[i]);
        tensor_free(n->host_outs[i]);
        n->outs[i] = n->host_outs[i] = NULL;
    }
    n->valid = false;
}

/*
 * Invalidate node b and everything downstream of it. A valid node only ever has valid
 * sources (it was computed after them, and invalidation always flows downstream), so the walk
 * stops at nodes already invalid. Iterative: a chain of a million blocks must not overflow
 * the stack. Returns false when out of memory (then everything is dropped, which is safe).
 */
static bool invalidate(bf_session *s, int b) {
    int *stack = bf_malloc((size_t)BF_MAX(s->n, 1) * sizeof(int));
    if (!stack) {
        for (int i = 0; i < s->n; i++) node_drop_results(&s->nodes[i]);
        return false;
    }
    int top = 0;
    node_drop_results(&s->nodes[b]);
    stack[top++] = b;
    while (top) {
        snode *n = &s->nodes[stack[--top]];
        for (int i = 0; i < n->n_consumers; i++) {
            snode *m = &s->nodes[n->consumers[i]];
            if (!m->valid) continue;
            node_drop_results(m);
            stack[top++] = m->index;
        }
    }
    bf_free(stack);
    return true;
}

void bf_session_free(bf_session *s) {
    if (!s) return;
    for (int i = 0; s->nodes && i < s->n; i++) {
        snode *n = &s->nodes[i];
        /* both arrays: bf_session_new may have failed between the two (nothing ran then) */
        if (n->pb->desc && n->outs && n->host_outs) node_drop_results(n);
        if (n->pb->desc && n->pb->desc->fini) n->pb->desc->fini(&n->node);
        tensor_free(n->feed);
        bf_free(n->err);
        bf_aligned_free(n->ws);
        bf_budget_release(&s->budget, n->ws_size);
        if (n->dws) n->dws_dev->ops->free(n->dws_dev, n->dws);
        bf_budget_release(&s->budget, n->dws_size);
        bf_free(n->info);
        bf_free(n->outs);
        bf_free(n->host_outs);
        bf_free(n->consumers);
    }
    for (int g = 0; g < BF_MAX_GPUS; g++) {
        if (s->gpu[g].ready) {
            bf_device *dev = &s->ctx->gpus[g];
            dev->ops->session_free(dev, s->gpu[g].stream, s->gpu[g].ctx);
        }
    }
    if (s->gpu_mu_ok) uv_mutex_destroy(&s->gpu_mu);
    bf_free(s->nodes);
    bf_free(s->order);
    bf_free(s->ready);
    bf_page_free(s->page);
    bf_free(s);
}

/* Kahn's algorithm; nodes left out of `order` sit on or behind a cycle. False: no memory. */
static bool topo_sort(bf_session *s) {
    int *indeg = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(int));
    int *queue = s->order;
    int head = 0, tail = 0;
    if (!indeg) return false;
    for (int i = 0; i < s->n; i++) indeg[i] = s->nodes[i].pb->desc->n_inputs;
    for (int i = 0; i < s->n; i++)
        if (indeg[i] == 0) queue[tail++] = i;
    while (head < tail) {
        snode *n = &s->nodes[queue[head++]];
        for (int c = 0; c < n->n_consumers; c++) {
            snode *m = &s->nodes[n->consumers[c]];
            for (int k = 0; k < m->pb->desc->n_inputs; k++)
                if (m->pb->inputs[k].src_block == n->index && --indeg[m->index] == 0)
                    queue[tail++] = m->index;
        }
    }
    s->n_order = tail;
    for (int k = 0; k < tail; k++) s->nodes[queue[k]].ordered = true;
    bf_free(indeg);
    return true;
}

bf_status bf_session_new(bf_context *ctx, bf_page *page, bf_session **out, bf_error *err) {
    if (!out) {
        bf_page_free(page);
        return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    }
    *out = NULL;
    if (!ctx || !page) {
        bf_page_free(page);
        return bf_err(err, BF_EINVAL, "bad_argument", "ctx or page is NULL");
    }
    bf_session *s = bf_calloc(1, sizeof(*s));
    if (!s) {
        bf_page_free(page);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    s->ctx = ctx;
    s->page = page;
    s->n = page->n_blocks;
    s->budget.limit = ctx->cfg.max_session_bytes;
    atomic_init(&s->cancel, 0);
    s->nodes = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(snode));
    s->order = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(int));
    s->ready = bf_calloc((size_t)BF_MAX(s->n, 1), sizeof(int));
    if (!s->nodes || !s->order || !s->ready) goto oom;
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        bf_page_block *pb = &page->blocks[i];
        const bf_block_desc *d = pb->desc;
        n->pb = pb;
        n->index = i;
        n->s = s;
        n->node = (bf_node){.id = pb->id, .desc = d, .attrs = pb->attrs, .budget = &s->budget,
                            .max_elements = ctx->cfg.max_tensor_elements};
        size_t no = (size_t)BF_MAX(d->n_outputs, 1);
        n->info = bf_calloc(no, sizeof(bf_port_info));
        n->outs = bf_calloc(no, sizeof(bf_tensor *));
        n->host_outs = bf_calloc(no, sizeof(bf_tensor *));
        if (!n->info || !n->outs || !n->host_outs) goto oom;
        n->stats.id = pb->id;
        n->stats.type = d->type;
        n->stats.n_outputs = d->n_outputs;
    }
    /* Consumer lists, sized exactly (an upper bound: a source read twice is listed once). */
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < page->blocks[i].desc->n_inputs; k++)
            s->nodes[page->blocks[i].inputs[k].src_block].n_consumers++;
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        n->consumers = bf_calloc((size_t)BF_MAX(n->n_consumers, 1), sizeof(int));
        if (!n->consumers) goto oom;
        n->n_consumers = 0;
    }
    for (int i = 0; i < s->n; i++) {
        bf_page_block *pb = &page->blocks[i];
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            snode *src = &s->nodes[pb->inputs[k].src_block];
            /* i only grows, so a repeat can only be the last entry (O(1): a block may feed
             * a million others) */
            if (!src->n_consumers || src->consumers[src->n_consumers - 1] != i)
                src->consumers[src->n_consumers++] = i;
        }
    }
    /* Per-node state (Const builds its tensor here). */
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (n->pb->desc->init) {
            bf_status st = n->pb->desc->init(&n->node, err);
            if (st) {
                if (err) where(s, i, err);
                bf_session_free(s); /* fini of every block; states not made yet are NULL */
                return st;
            }
        }
    }
    if (!topo_sort(s)) goto oom;
    if (uv_mutex_init(&s->gpu_mu) != 0) goto oom;
    s->gpu_mu_ok = true;
    *out = s;
    return BF_OK;
oom:
    for (int i = 0; s->nodes && i < s->n; i++) s->nodes[i].pb = &page->blocks[i];
    bf_session_free(s);
    return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}

const bf_page *bf_session_page(const bf_session *s) { return s->page; }

/* ---- check ------------------------------------------------------------------------------- */

static void report(bf_session *s, bf_diags *diags, bf_error *first, int *n_errors, int b,
                   bf_error *e) {
    where(s, b, e);
    if (e->status != BF_OK && (*n_errors)++ == 0 && first) *first = *e;
    bf_diags_push(diags, e);
}

/* Gather node b's input infos from its sources' check-time results. False: a source failed. */
static bool gather_infos(bf_session *s, int b, bf_port_info *in) {
    bf_page_block *pb = s->nodes[b].pb;
    for (int k = 0; k < pb->desc->n_inputs; k++) {
        snode *src = &s->nodes[pb->inputs[k].src_block];
        if (!src->info_ok) return false;
        in[k] = src->info[pb->inputs[k].src_port];
    }
    return true;
}

/* The generic port checks every block gets: input dtypes against the port masks. */
static bf_status check_dtypes(const bf_block_desc *d, const bf_port_info *in, bf_error *e) {
    for (int k = 0; k < d->n_inputs; k++) {
        if (in[k].dtype == BF_DTYPE_INVALID || (d->inputs[k].dtypes & (1u << in[k].dtype)))
            continue;
        char allowed[96] = "";
        size_t n = 0;
        for (int t = 1; t < BF_DTYPE_COUNT && n < sizeof(allowed); t++)
            if (d->inputs[k].dtypes & (1u << t))
                n += (size_t)snprintf(allowed + n, sizeof(allowed) - n, "%s%s", n ? ", " : "",
                                      bf_dtype_name((bf_dtype)t));
        bf_err_at(e, d->inputs[k].name, NULL);
        return bf_err(e, BF_EDTYPE, "dtype_mismatch", "%s takes %s for \"%s\", got %s", d->type,
                      allowed, d->inputs[k].name, bf_dtype_name(in[k].dtype));
    }
    return BF_OK;
}

static void stats_shapes(snode *n) {
    for (int i = 0; i < n->pb->desc->n_outputs && i < 4; i++) {
        n->stats.rank[i] = n->info[i].rank;
        n->stats.dtype[i] = n->info[i].dtype;
        memcpy(n->stats.dims[i], n->info[i].dims, sizeof(n->stats.dims[i]));
    }
}

bf_status bf_session_check(bf_session *s, bf_diags *diags, bf_error *err) {
    int n_errors = 0;
    bf_error first = {0};
    bf_port_info in[16];
    for (int i = 0; i < s->n; i++) s->nodes[i].info_ok = false;
    if (s->n_order < s->n) {
        for (int i = 0; i < s->n; i++) {
            if (s->nodes[i].ordered) continue;
            bf_error e = {0};
            bf_err(&e, BF_ESCHEMA, "cycle",
                   "this block is on (or fed by) a cycle: a block's inputs cannot depend on "
                   "its own output");
            report(s, diags, &first, &n_errors, i, &e);
        }
    }
    for (int k = 0; k < s->n_order; k++) {
        int b = s->order[k];
        snode *n = &s->nodes[b];
        const bf_block_desc *d = n->pb->desc;
        BF_ASSERT(d->n_inputs <= BF_COUNT(in));
        if (!gather_infos(s, b, in)) continue; /* a source failed: reported there */
        bf_error e = {0};
        n->node.feed = n->feed;
        bf_status st = check_dtypes(d, in, &e);
        if (st == BF_OK) st = d->infer(&n->node, in, n->info, &e);
        /* Outputs whose size is known must fit the limits now, not when the run gets there. */
        for (int p = 0; st == BF_OK && p < d->n_outputs; p++)
            if (bf_port_known(&n->info[p]) &&
                (st = bf_shape_size(n->info[p].dtype, n->info[p].rank, n->info[p].dims,
                                    s->ctx->cfg.max_tensor_elements, NULL, NULL, &e)))
                bf_err_at(&e, d->outputs[p].name, NULL);
        if (st) {
            report(s, diags, &first, &n_errors, b, &e);
            continue;
        }
        n->info_ok = true;
        stats_shapes(n);
    }
    if (n_errors) {
        if (err) *err = first;
        return first.status;
    }
    return BF_OK;
}

/* ---- feeds and attribute changes --------------------------------------------------------- */

static int find_node(bf_session *s, const char *id, bf_error *err) {
    int b = id ? bf_page_find(s->page, id) : -1;
    if (b < 0) {
        bf_error e = {0};
        bf_err(&e, BF_ENOTFOUND, "unknown_block", "no block \"%.60s\" on this page",
               id ? id : "(null)");
        bf_strlcpy(e.page, s->page->file, sizeof(e.page));
        if (err) *err = e;
    }
    return b;
}

bf_status bf_session_feed(bf_session *s, const char *block_id, const bf_tensor *t,
                          bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    bf_error e = {0};
    if (!(n->pb->desc->flags & BF_BLOCK_FEEDABLE) || !t) {
        bf_err(&e, BF_EINVAL, "not_feedable", "%s blocks cannot be fed; feed a Placeholder",
               n->pb->desc->type);
        where(s, b, &e);
        if (err) *err = e;
        return BF_EINVAL;
    }
    bf_tensor *copy = NULL;
    bf_port_info p;
    bf_port_set(&p, t->dtype, t->rank, t->dims);
    bf_status st = tensor_alloc(s, NULL, &p, &copy, &e);
    if (st) {
        where(s, b, &e);
        if (err) *err = e;
        return st;
    }
    memcpy(copy->data, t->data, t->nbytes);
    /* Check it against the placeholder's declared dtype and shape right away. */
    const bf_tensor *old = n->node.feed;
    n->node.feed = copy;
    bf_port_info out[4];
    st = n->pb->desc->infer(&n->node, NULL, out, &e);
    n->node.feed = old;
    if (st) {
        tensor_free(copy);
        where(s, b, &e);
        if (err) *err = e;
        return st;
    }
    tensor_free(n->feed);
    n->feed = NULL;
    invalidate(s, b);
    n->feed = copy;
    n->node.feed = copy;
    return BF_OK;
}

bf_status bf_session_set_attr(bf_session *s, const char *block_id, const char *attr,
                              const char *json_value, bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    const bf_block_desc *d = n->pb->desc;
    bf_error e = {0};
    int a = -1;
    for (int i = 0; attr && i < d->n_attrs; i++)
        if (!strcmp(d->attrs[i].name, attr)) a = i;
    if (a < 0) {
        bf_err(&e, BF_ENOTFOUND, "unknown_attr", "%s has no attribute \"%.40s\"", d->type,
               attr ? attr : "(null)");
        bf_err_at(&e, NULL, attr);
        where(s, b, &e);
        if (err) *err = e;
        return BF_ENOTFOUND;
    }
    cJSON *j = json_value ? cJSON_Parse(json_value) : NULL;
    bf_attr_value v = {0};
    bf_file_scope files = {s->page->dir, s->page->confine_files, s->page->max_elements};
    bf_status st = j ? bf_attr_parse_one(&d->attrs[a], j, &files, &v, NULL, &e)
                     : bf_err(&e, BF_EPARSE, "bad_json", "the value is not valid JSON");
    cJSON_Delete(j);
    if (st == BF_OK) {
        bf_attr_value old = n->pb->attrs[a];
        if (d->fini) d->fini(&n->node);
        n->pb->attrs[a] = v;
        if (d->init && (st = d->init(&n->node, &e))) {
            n->pb->attrs[a] = old; /* keep the block as it was */
            bf_attr_value_free(&v);
            bf_error ignored;
            d->init(&n->node, &ignored);
        } else {
            bf_attr_value_free(&old);
            invalidate(s, b);
        }
    } else {
        bf_attr_value_free(&v);
    }
    if (st) {
        bf_err_at(&e, NULL, attr);
        where(s, b, &e);
        if (err) *err = e;
    }
    return st;
}

/* ---- run ------------------------------------------------------------------------------------ */

/* True once the run is cancelled, failed, or past its deadline (which it then records). */
static bool cancelled(bf_session *s) {
    if (atomic_load(&s->cancel) != 0) return true;
    if (s->deadline > 0 && bf_now() > s->deadline) {
        int expected = 0;
        atomic_compare_exchange_strong(&s->cancel, &expected, 2);
        return true;
    }
    return false;
}

void bf_session_cancel(bf_session *s) {
    if (s) {
        int expected = 0;
        atomic_compare_exchange_strong(&s->cancel, &expected, 1);
    }
}

/* Mark b and its sources as needed. Iterative over the topological order would do; the
 * recursion depth is bounded by the page's block count limit via an explicit stack. */
static bf_status mark_needed(bf_session *s, int b, bf_error *err) {
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
            if (!s->nodes[src].needed) {
                s->nodes[src].needed = true;
                stack[top++] = src;
            }
        }
    }
    bf_free(stack);
    return BF_OK;
}

/* Choose the device of node n for this run; fills the stats note on fallback. */
static bf_status place(bf_session *s, snode *n, bf_port_info *in, bf_error *err) {
    bf_device_kind want = s->opts->device != BF_DEVICE_AUTO ? s->opts->device : n->pb->device;
    const bf_block_desc *d = n->pb->desc;
    n->dev = NULL;
    n->stats.note[0] = '\0';
    if (want == BF_DEVICE_CPU) return BF_OK;
    if (!d->run_cuda) {
        if (want == BF_DEVICE_GPU)
            snprintf(n->stats.note, sizeof(n->stats.note), "no GPU kernel: ran on the CPU");
        return BF_OK;
    }
    bool have = bf_context_has_gpu(s->ctx);
    int ordinal = s->opts->device == BF_DEVICE_GPU ? 0 : n->pb->gpu_ordinal;
    if (want == BF_DEVICE_GPU && (!have || ordinal >= s->ctx->n_gpus)) {
        bf_err_at(err, NULL, NULL);
        return bf_err(err, BF_EDEVICE, "no_gpu",
                      "the block asks for gpu:%d but no GPU can be used (%s)", ordinal,
                      have ? "no such device" : s->ctx->gpu_why);
    }
    if (!have) return BF_OK;
    const char *why = d->gpu_unsupported ? d->gpu_unsupported(&n->node, in) : NULL;
    if (why) {
        snprintf(n->stats.note, sizeof(n->stats.note), "CPU fallback: %s", why);
        return BF_OK;
    }
    n->dev = &s->ctx->gpus[ordinal];
    return BF_OK;
}

/* Ensure n's workspace on its device is at least `bytes`; kept across runs. */
static bf_status ensure_workspace(bf_session *s, snode *n, size_t bytes, bf_error *err) {
    if (!n->dev) {
        if (bytes <= n->ws_size) return BF_OK;
        bf_aligned_free(n->ws);
        bf_budget_release(&s->budget, n->ws_size);
        n->ws = NULL;
        n->ws_size = 0;
        bf_status st = bf_budget_charge(&s->budget, bytes, err);
        if (st) return st;
        n->ws = bf_aligned_alloc(bytes, false);
        if (!n->ws) {
            bf_budget_release(&s->budget, bytes);
            return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate %zu bytes of "
                          "workspace", bytes);
        }
        n->ws_size = bytes;
        return BF_OK;
    }
    if (bytes <= n->dws_size && n->dws_dev == n->dev) return BF_OK;
    if (n->dws) n->dws_dev->ops->free(n->dws_dev, n->dws);
    bf_budget_release(&s->budget, n->dws_size);
    n->dws = NULL;
    n->dws_size = 0;
    bf_status st = bf_budget_charge(&s->budget, bytes, err);
    if (st) return st;
    n->dws = n->dev->ops->alloc(n->dev, bytes, err);
    if (!n->dws) {
        bf_budget_release(&s->budget, bytes);
        return err ? err->status : BF_EDEVICE;
    }
    n->dws_size = bytes;
    n->dws_dev = n->dev;
    return BF_OK;
}

/*
 * Execute node n: gather (and move) its inputs, re-infer with everything known, allocate its
 * outputs and workspace, run the kernel. Runs on a libuv worker thread; touches only n, its
 * sources' finished results, the atomic budget and (under a mutex) its GPU.
 */
/* Keep a copy of node n's failure `e` for complete() (a session holds millions of nodes, so
 * none carries an error record until it needs one; without memory, the status alone stays). */
static void keep_error(snode *n, const bf_error *e) {
    bf_free(n->err);
    n->err = bf_malloc(sizeof(*e));
    if (n->err) *n->err = *e;
}

static void execute(snode *n) {
    bf_session *s = n->s;
    const bf_block_desc *d = n->pb->desc;
    bf_tensor *moved[16] = {0};
    const bf_tensor *in[16];
    bf_port_info info[16], out_info[16];
    bf_error err = {0}, *e = &err;
    bf_status st = BF_OK;
    gpu_state *g = NULL;
    char knote[96] = ""; /* the kernel's own note, after placement's (a fallback reason) */
    BF_ASSERT(d->n_inputs <= 16 && d->n_outputs <= 16);

    bool locked = n->dev != NULL;
    for (int k = 0; k < d->n_inputs; k++)
        locked |= s->nodes[n->pb->inputs[k].src_block].outs[n->pb->inputs[k].src_port]->device
                  != NULL;
    if (locked) uv_mutex_lock(&s->gpu_mu);
    if (n->dev && !(g = gpu_of(s, n->dev, e))) {
        st = e->status ? e->status : BF_EDEVICE;
        goto unlock;
    }
    for (int k = 0; k < d->n_inputs; k++) {
        snode *src = &s->nodes[n->pb->inputs[k].src_block];
        const bf_tensor *t = src->outs[n->pb->inputs[k].src_port];
        bf_device *want = (d->inputs[k].flags & BF_PORT_HOST) ? NULL : n->dev;
        if (t->device != want) {
            st = tensor_move(s, t, want, &moved[k], e);
            if (st) goto unlock;
            t = moved[k];
        }
        in[k] = t;
        bf_port_set(&info[k], t->dtype, t->rank, t->dims);
        info[k].value = t->device ? NULL : t;
    }
    n->node.feed = n->feed;
    st = d->infer(&n->node, info, out_info, e);
    if (st) goto unlock;
    for (int i = 0; i < d->n_outputs; i++) {
        st = tensor_alloc(s, n->dev, &out_info[i], &n->outs[i], e);
        if (st) goto unlock;
    }
    bf_exec ex = {.pool = s->ctx->pool,
                  .n_threads = s->ctx->cfg.threads,
                  .cancel = &s->cancel,
                  .deadline = s->deadline,
                  .device = n->dev,
                  .stream = g ? g->stream : NULL,
                  .device_ctx = g ? g->ctx : NULL,
                  .note = knote,
                  .note_size = sizeof(knote)};
    size_t ws = 0;
    if (!n->dev && d->workspace_cpu) ws = d->workspace_cpu(&n->node, info, out_info, &ex);
    if (n->dev && d->workspace_cuda) ws = d->workspace_cuda(&n->node, info, out_info, &ex);
    if (ws && (st = ensure_workspace(s, n, ws, e))) goto unlock;
    ex.workspace = ws ? (n->dev ? n->dws : n->ws) : NULL;
    ex.workspace_size = ws;
    double t0 = bf_now();
    st = n->dev ? d->run_cuda(&n->node, in, n->outs, &ex, e) : d->run_cpu(&n->node, in, n->outs,
                                                                           &ex, e);
    if (st == BF_OK && n->dev) st = n->dev->ops->sync(n->dev, g->stream, e);
    n->stats.ms = (bf_now() - t0) * 1e3;
    if (knote[0]) {
        size_t len = strlen(n->stats.note);
        snprintf(n->stats.note + len, sizeof(n->stats.note) - len, "%s%s", len ? "; " : "",
                 knote);
    }
    if (st == BF_OK && cancelled(s)) /* tasks may have been skipped: the output is partial */
        st = bf_err(e, BF_ECANCELED, "cancelled", "the run was cancelled");
    for (int i = 0; i < d->n_outputs && i < 4; i++) {
        n->stats.rank[i] = out_info[i].rank;
        n->stats.dtype[i] = out_info[i].dtype;
        memcpy(n->stats.dims[i], out_info[i].dims, sizeof(n->stats.dims[i]));
    }
unlock:
    if (locked) uv_mutex_unlock(&s->gpu_mu);
    for (int k = 0; k < 16; k++) tensor_free(moved[k]);
    n->status = st;
    if (st) keep_error(n, e);
}

static void work_cb(uv_work_t *w) {
    snode *n = w->data;
    if (cancelled(n->s)) {
        n->status = BF_ECANCELED;
        return;
    }
    execute(n);
}

static void drain(bf_session *s);

static void push_ready(bf_session *s, snode *n) {
    n->scheduled = true;
    s->ready[s->n_ready++] = n->index;
}

/*
 * Book-keeping after node n ran (on the loop thread): record its result, release its
 * consumers (those now complete become ready), or record the failure and stop the run.
 */
static void complete(bf_session *s, snode *n) {
    n->stats.status = n->status;
    if (n->status == BF_OK) {
        n->valid = true;
        n->stats.ran = 1;
        bf_strlcpy(n->stats.device, n->dev ? n->dev->label : "cpu", sizeof(n->stats.device));
        if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_DONE, &n->stats, s->opts->user);
        for (int c = 0; c < n->n_consumers; c++) {
            snode *m = &s->nodes[n->consumers[c]];
            if (m->needed && !m->scheduled) {
                for (int k = 0; k < m->pb->desc->n_inputs; k++)
                    if (m->pb->inputs[k].src_block == n->index) m->pending--;
                if (m->pending == 0) push_ready(s, m);
            }
        }
        return;
    }
    node_drop_results(n);
    (void)cancelled(s); /* records a passed deadline (2) before the failure stops the rest (3) */
    if (s->run_status == BF_OK || s->run_status == BF_ECANCELED) {
        if (n->status != BF_ECANCELED || s->run_status == BF_OK) {
            s->run_status = n->status;
            if (n->err)
                s->run_err = *n->err;
            else if (n->status == BF_ECANCELED)
                bf_err(&s->run_err, BF_ECANCELED, "cancelled", "the run was cancelled");
            else
                bf_err(&s->run_err, n->status, "failed", "%s", bf_strerror(n->status));
            where(s, n->index, &s->run_err);
        }
    }
    bf_free(n->err);
    n->err = NULL;
    if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_DONE, &n->stats, s->opts->user);
    int expected = 0;
    atomic_compare_exchange_strong(&s->cancel, &expected, 3); /* stop the rest */
}

static void after_work_cb(uv_work_t *w, int status) {
    snode *n = w->data;
    bf_session *s = n->s;
    s->inflight--;
    if (status == UV_ECANCELED) n->status = BF_ECANCELED;
    complete(s, n);
    drain(s);
}

/*
 * Start every ready block. A block that is the only one ready while nothing else runs is
 * executed right here, on the loop thread: no other block could run beside it anyway, and a
 * chain of small blocks then costs no thread hand-off per block. Otherwise blocks go to
 * libuv's thread pool and run concurrently. Iterative (no recursion), so a chain of a million
 * blocks needs no stack.
 */
static void drain(bf_session *s) {
    while (s->n_ready > 0) {
        snode *n = &s->nodes[s->ready[--s->n_ready]];
        if (cancelled(s)) continue; /* never started: reported as not run */
        if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_START, &n->stats, s->opts->user);
        if (s->inflight == 0 && s->n_ready == 0) {
            execute(n);
            complete(s, n);
            continue;
        }
        n->work.data = n;
        int rc = uv_queue_work(&s->loop, &n->work, work_cb, after_work_cb);
        if (rc) {
            bf_error e = {0};
            n->status = bf_err(&e, BF_EINTERNAL, "scheduler", "cannot queue work: %s",
                               uv_strerror(rc));
            keep_error(n, &e);
            complete(s, n);
            continue;
        }
        s->inflight++;
    }
}

void bf_run_options_init(bf_run_options *o) { memset(o, 0, sizeof(*o)); }

/* Make host copies of the fetched results that live on a GPU (intermediate results stay). */
static bf_status download_fetches(bf_session *s, bf_error *err) {
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!n->fetched) continue;
        for (int p = 0; p < n->pb->desc->n_outputs && p < 32; p++) {
            bf_tensor *t = n->outs[p];
            if (!(n->fetched & (1u << p)) || !t || !t->device || n->host_outs[p]) continue;
            bf_status st = tensor_move(s, t, NULL, &n->host_outs[p], err);
            if (st) {
                where(s, i, err);
                return st;
            }
        }
    }
    return BF_OK;
}

bf_status bf_session_run(bf_session *s, const bf_run_options *opts, bf_diags *diags,
                         bf_error *err) {
    bf_run_options defaults;
    if (!opts) {
        bf_run_options_init(&defaults);
        opts = &defaults;
    }
    bf_status st = bf_session_check(s, diags, err);
    if (st) return st;
    s->opts = opts;
    atomic_store(&s->cancel, 0);
    s->run_status = BF_OK;
    memset(&s->run_err, 0, sizeof(s->run_err));
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        n->needed = n->scheduled = false;
        n->fetched = 0;
        n->pending = 0;
        n->stats.ran = n->stats.reused = 0;
        n->stats.status = BF_OK;
        n->stats.device[0] = '\0';
    }
    /* Fetches. */
    int n_fetch = opts->fetches ? opts->n_fetches : s->page->n_outputs;
    if (n_fetch == 0) {
        bf_error e = {0};
        bf_err(&e, BF_EINVAL, "no_fetch", "nothing to compute: the page has no \"outputs\" and "
               "no block was fetched");
        bf_strlcpy(e.page, s->page->file, sizeof(e.page));
        if (err) *err = e;
        return BF_EINVAL;
    }
    for (int f = 0; f < n_fetch; f++) {
        const char *ref = opts->fetches ? opts->fetches[f] : s->page->outputs[f];
        int b, p;
        if (!ref || !bf_page_resolve(s->page, ref, &b, &p)) {
            bf_error e = {0};
            bf_err(&e, BF_ENOTFOUND, "bad_fetch", "fetch \"%.80s\" names no block output",
                   ref ? ref : "(null)");
            bf_strlcpy(e.page, s->page->file, sizeof(e.page));
            if (err) *err = e;
            return BF_ENOTFOUND;
        }
        if ((st = mark_needed(s, b, err))) return st;
        if (p < 32) s->nodes[b].fetched |= 1u << p;
    }
    /* Every input the fetches need must have been fed. */
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (n->needed && (n->pb->desc->flags & BF_BLOCK_FEEDABLE) && !n->feed) {
            bf_error e = {0};
            bf_err(&e, BF_EINVAL, "missing_feed",
                   "\"%s\" is needed but was not fed (blockflow run --feed %s=FILE.npy)",
                   n->pb->id, n->pb->id);
            where(s, i, &e);
            if (err) *err = e;
            bf_diags_push(diags, &e);
            return BF_EINVAL;
        }
    }
    /* Placement and dependency counts, in topological order. */
    bf_port_info in[16];
    for (int k = 0; k < s->n_order; k++) {
        snode *n = &s->nodes[s->order[k]];
        if (!n->needed) continue;
        if (n->valid) {
            n->stats.reused = 1;
            if (opts->on_event) opts->on_event(BF_EVENT_BLOCK_REUSED, &n->stats, opts->user);
            continue;
        }
        gather_infos(s, n->index, in);
        bf_error e = {0};
        if ((st = place(s, n, in, &e))) {
            where(s, n->index, &e);
            if (err) *err = e;
            return st;
        }
        for (int i = 0; i < n->pb->desc->n_inputs; i++)
            n->pending += !s->nodes[n->pb->inputs[i].src_block].valid;
    }
    if (uv_loop_init(&s->loop)) return bf_err(err, BF_EINTERNAL, "scheduler", "uv_loop_init");
    s->deadline = opts->timeout_s > 0 ? bf_now() + opts->timeout_s : 0;
    s->inflight = 0;
    s->n_ready = 0;
    for (int k = s->n_order - 1; k >= 0; k--) { /* popped in page order */
        snode *n = &s->nodes[s->order[k]];
        if (n->needed && !n->valid && n->pending == 0) push_ready(s, n);
    }
    drain(s);
    uv_run(&s->loop, UV_RUN_DEFAULT); /* until the last queued block completes */
    uv_loop_close(&s->loop);

    (void)cancelled(s); /* a kernel may have stopped at the deadline without recording it */
    int why = atomic_load(&s->cancel);
    if (s->run_status == BF_OK && why == 1) {
        s->run_status = BF_ECANCELED;
        bf_err(&s->run_err, BF_ECANCELED, "cancelled", "the run was cancelled");
    }
    if ((s->run_status == BF_OK || s->run_status == BF_ECANCELED) && why == 2) {
        s->run_status = BF_ETIMEDOUT;
        memset(&s->run_err, 0, sizeof(s->run_err));
        bf_err(&s->run_err, BF_ETIMEDOUT, "timeout",
               "the run took longer than its limit of %g s (--timeout)", opts->timeout_s);
    }
    if (s->run_status == BF_OK) {
        for (int i = 0; i < s->n; i++)
            BF_ASSERT(!s->nodes[i].needed || s->nodes[i].valid);
        s->run_status = download_fetches(s, &s->run_err);
    }
    if (s->run_status != BF_OK) {
        bf_strlcpy(s->run_err.page, s->page->file, sizeof(s->run_err.page));
        if (err) *err = s->run_err;
        bf_diags_push(diags, &s->run_err);
    }
    s->opts = NULL;
    return s->run_status;
}

/* ---- results ---------------------------------------------------------------------------- */

const bf_tensor *bf_session_output(bf_session *s, const char *block_id, const char *port) {
    int b = block_id ? bf_page_find(s->page, block_id) : -1;
    if (b < 0) return NULL;
    snode *n = &s->nodes[b];
    int p = 0;
    if (port) {
        for (p = 0; p < n->pb->desc->n_outputs; p++)
            if (!strcmp(n->pb->desc->outputs[p].name, port)) break;
        if (p == n->pb->desc->n_outputs) return NULL;
    }
    if (!n->valid || n->pb->desc->n_outputs == 0) return NULL;
    return n->host_outs[p] ? n->host_outs[p] : (n->outs[p] && !n->outs[p]->device ? n->outs[p]
                                                                                  : NULL);
}

const bf_block_stats *bf_session_block_stats(const bf_session *s, int i) {
    return i >= 0 && i < s->n ? &s->nodes[i].stats : NULL;
}

int bf_session_block_output_count(const bf_session *s, int i) {
    return i >= 0 && i < s->n ? s->nodes[i].pb->desc->n_outputs : 0;
}

const char *bf_session_block_output_name(const bf_session *s, int i, int j) {
    if (i < 0 || i >= s->n || j < 0 || j >= s->nodes[i].pb->desc->n_outputs) return NULL;
    return s->nodes[i].pb->desc->outputs[j].name;
}
