/*
 * sched.c - the run: the blocks the fetches need are found by walking the inputs backwards
 * (TensorFlow's fetch pruning). Blocks whose cached results are still valid are reused; the
 * others form a dependency count graph. Ready blocks go to libuv's thread pool with
 * uv_queue_work(); each completion (after_work_cb, on this thread's private loop) releases its
 * consumers. So independent blocks run concurrently while all graph bookkeeping stays on one
 * thread (STYLE R12). Inside a kernel, bf_parallel_for() splits the work over the context's
 * pool.
 *
 * Memory: a run counts, for each result, the blocks of the run that read it (`uses`); when
 * the last of them completes, the result is released to the session's cache (graph.c), unless
 * the run fetches it or it is a page output. So a chain of blocks holds about two results at
 * a time instead of all of them. A block that cannot get memory while the cache holds some is
 * retried once the cache is emptied: the cache never makes a run fail.
 *
 * A run checks the page first and refuses to start when a block it needs has a problem;
 * problems of blocks it does not need (an editor's half-wired corner) do not stop it. A
 * failed or cancelled run keeps the results of the blocks that completed, and the session
 * stays usable.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

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
    if (!s) return;
    if (s) {
        atomic_store(&s->stop_steps, 1);
        int expected = 0;
        atomic_compare_exchange_strong(&s->cancel, &expected, 1);
    }
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
        locked |= n->pb->inputs[k].src_block >= 0 &&
                  s->nodes[n->pb->inputs[k].src_block].outs[n->pb->inputs[k].src_port]->device
                      != NULL;
    if (locked) uv_mutex_lock(&s->gpu_mu);
    if (n->dev && !(g = bf_sess_gpu(s, n->dev, e))) {
        st = e->status ? e->status : BF_EDEVICE;
        goto unlock;
    }
    for (int k = 0; k < d->n_inputs; k++) {
        if (n->pb->inputs[k].src_block < 0) { /* an optional input left unconnected */
            in[k] = NULL;
            bf_port_set(&info[k], BF_DTYPE_INVALID, -1, NULL);
            info[k].rank = BF_PORT_ABSENT_RANK;
            continue;
        }
        snode *src = &s->nodes[n->pb->inputs[k].src_block];
        const bf_tensor *t = src->outs[n->pb->inputs[k].src_port];
        bf_device *want = (d->inputs[k].flags & BF_PORT_HOST) ? NULL : n->dev;
        if (t->device != want) {
            st = bf_sess_tensor_move(s, t, want, &moved[k], e);
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
    for (int i = 0; i < d->n_outputs; i++) { /* left by bf_session_take_output */
        bf_sess_tensor_free(n->outs[i]);
        bf_sess_tensor_free(n->host_outs[i]);
        n->outs[i] = n->host_outs[i] = NULL;
    }
    bool whole = n->feed && out_info[0].rank == n->feed->rank &&
                 !memcmp(out_info[0].dims, n->feed->dims, sizeof(int64_t) * (size_t)n->feed->rank);
    if ((d->flags & BF_BLOCK_FEEDABLE) && !n->dev && n->feed && whole) {
        /* A placeholder's output is its feed itself: no copy (the feed outlives it). A part
         * of it (shard "batch" in a job of several ranks) is copied by its kernel. */
        st = bf_tensor_view(n->feed, &n->outs[0], e);
        n->stats.ms = 0;
        goto stats;
    }
    for (int i = 0; i < d->n_outputs; i++) {
        st = bf_sess_tensor_alloc(s, n->dev, &out_info[i], &n->outs[i], e);
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
    if (ws && (st = bf_sess_workspace(s, n, ws, e))) goto unlock;
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
stats:
    for (int i = 0; i < d->n_outputs && i < 4; i++) {
        n->stats.rank[i] = out_info[i].rank;
        n->stats.dtype[i] = out_info[i].dtype;
        memcpy(n->stats.dims[i], out_info[i].dims, sizeof(n->stats.dims[i]));
    }
unlock:
    if (locked) uv_mutex_unlock(&s->gpu_mu);
    for (int k = 0; k < 16; k++) bf_sess_tensor_free(moved[k]);
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

/* Node n completed: each distinct source it read has one reader less, and a source no block of
 * this run reads any more is released to the cache unless it is pinned. */
static void release_sources(bf_session *s, snode *n) {
    const bf_page_block *pb = n->pb;
    for (int k = 0; k < pb->desc->n_inputs; k++) {
        int src = pb->inputs[k].src_block, j = 0;
        while (j < k && pb->inputs[j].src_block != src) j++;
        if (src < 0 || j < k) continue; /* read twice: counted once */
        snode *m = &s->nodes[src];
        if (m->uses > 0 && --m->uses == 0 && !m->pinned) bf_sess_cache_put(s, m);
    }
}

/* True when node n failed only for want of memory under the session's limit while the cache
 * holds results: then the cache is emptied and n queued again. */
static bool retry_without_cache(bf_session *s, snode *n) {
    if (n->status != BF_ELIMIT || !n->err || strcmp(n->err->code, "memory_limit") != 0 ||
        s->cache_used == 0 || atomic_load(&s->cancel) != 0)
        return false;
    bf_sess_drop_results(n);
    bf_sess_cache_evict(s, 0);
    bf_free(n->err);
    n->err = NULL;
    n->status = BF_OK;
    n->stats.note[0] = '\0';
    push_ready(s, n);
    return true;
}

/*
 * Book-keeping after node n ran (on the loop thread): record its result, release its
 * consumers (those now complete become ready) and the sources no one reads any more, or
 * record the failure and stop the run.
 */
static void run_round(bf_session *s);

/* Node n's result is final: record it and release its consumers and sources. */
static void complete_ok(bf_session *s, snode *n) {
    n->stats.status = BF_OK;
    n->valid = true;
    n->stats.ran = 1;
    bf_strlcpy(n->stats.device, n->dev ? n->dev->label : "cpu", sizeof(n->stats.device));
    if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_DONE, &n->stats, s->opts->user);
    for (int c = 0; c < n->n_consumers; c++) {
        snode *m = &s->nodes[n->consumers[c]];
        if (m->runs && !m->scheduled) {
            for (int k = 0; k < m->pb->desc->n_inputs; k++)
                if (m->pb->inputs[k].src_block == n->index) m->pending--;
            if (m->pending == 0) push_ready(s, m);
        }
    }
    release_sources(s, n);
}

static void complete(bf_session *s, snode *n) {
    if (retry_without_cache(s, n)) return;
    if (n->status == BF_OK && bf_sess_fuse_hold(s, n)) { /* completed after its round */
        if (bf_sess_fuse_ready(s)) run_round(s);
        return;
    }
    n->stats.status = n->status;
    if (n->status == BF_OK) {
        complete_ok(s, n);
        return;
    }
    bf_sess_drop_results(n);
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
            bf_sess_where(s, n->index, &s->run_err);
        }
    }
    bf_free(n->err);
    n->err = NULL;
    if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_DONE, &n->stats, s->opts->user);
    int expected = 0;
    atomic_compare_exchange_strong(&s->cancel, &expected, 3); /* stop the rest */
}

/* Every member of the next collective round is held: reduce them across the ranks in one
 * fused call (fuse.c), then complete each, in page order, with the round's outcome. */
static void run_round(bf_session *s) {
    bf_error e = {0};
    bool failed_here = s->run_status != BF_OK || atomic_load(&s->cancel) != 0;
    double t0 = bf_now();
    bf_status st = bf_sess_fuse_round(s, failed_here, &e);
    double ms = (bf_now() - t0) * 1e3;
    int n_held = s->n_held, held[64], *list = held;
    if (n_held > BF_COUNT(held)) list = bf_malloc((size_t)n_held * sizeof(int));
    if (list) memcpy(list, s->held, (size_t)n_held * sizeof(int));
    else list = s->held; /* no memory for a copy: nothing adds to s->held meanwhile */
    s->n_held = 0;
    for (int h = 0; h < n_held; h++) {
        snode *n = &s->nodes[list[h]];
        n->status = st;
        if (st == BF_OK) { /* the run report shows the round's time and its fusion */
            n->stats.ms += ms;
            size_t len = strlen(n->stats.note);
            snprintf(n->stats.note + len, sizeof(n->stats.note) - len, "%sone all-reduce of %d "
                     "block%s over %d ranks", len ? "; " : "", n_held, n_held == 1 ? "" : "s",
                     s->ctx->coll.size);
            complete_ok(s, n);
            continue;
        }
        keep_error(n, &e);
        complete(s, n);
    }
    if (list != held && list != s->held) bf_free(list);
}

static void after_work_cb(uv_work_t *w, int status) {
    snode *n = w->data;
    bf_session *s = n->s;
    s->inflight--;
    if (status == UV_ECANCELED) n->status = BF_ECANCELED;
    complete(s, n);
    drain(s);
}

/* Whether node n's outputs, as checked, hold at most 32 Ki elements in all: a kernel that
 * small takes less time than handing it to another thread (20-50 us of futex wake-ups). */
static bool small(const snode *n) {
    int64_t total = 0;
    for (int p = 0; p < n->pb->desc->n_outputs; p++) {
        int64_t k = n->info_ok ? bf_port_numel(&n->info[p]) : -1;
        if (k < 0) return false;
        total += k;
    }
    return total <= 32768;
}

/*
 * Start every ready block. A block that is the only one ready while nothing else runs, or a
 * small one, is executed right here, on the loop thread: no other block could run beside it
 * anyway, or it would not gain from it, and a chain of small blocks (a training step) then
 * costs no thread hand-off per block. Otherwise blocks go to libuv's thread pool and run
 * concurrently (their kernels still split their work over the kernel pool). Iterative (no
 * recursion), so a chain of a million blocks needs no stack.
 */
static void drain(bf_session *s) {
    while (s->n_ready > 0) {
        snode *n = &s->nodes[s->ready[--s->n_ready]];
        if (cancelled(s)) continue; /* never started: reported as not run */
        if (s->opts->on_event) s->opts->on_event(BF_EVENT_BLOCK_START, &n->stats, s->opts->user);
        if ((s->inflight == 0 && s->n_ready == 0) || small(n)) {
            execute(n);
            complete(s, n);
            continue;
        }
        if (!s->loop_ready) { /* made on first use, kept until the session is freed */
            int rc = uv_loop_init(&s->loop);
            if (rc) {
                bf_error e = {0};
                n->status = bf_err(&e, BF_EINTERNAL, "scheduler", "uv_loop_init: %s",
                                   uv_strerror(rc));
                keep_error(n, &e);
                complete(s, n);
                continue;
            }
            s->loop_ready = true;
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

void bf_run_options_init(bf_run_options *o) {
    if (o) memset(o, 0, sizeof(*o));
}

/*
 * Bring the cache in line with this run. Before it (`starting`): pin the page's outputs and
 * the fetches, count each result's readers among the blocks that run, take the pinned and
 * the read results off the LRU list (a result in use is never evicted), then put the others
 * back (results the previous run pinned), evicting past the limit. After it: every result left
 * with readers (a failed or cancelled run) or unpinned goes to the cache.
 */
static void settle_cache(bf_session *s, bool starting) {
    if (starting) {
        for (int o = 0; o < s->page->n_outputs; o++) {
            int b, p;
            if (bf_page_resolve(s->page, s->page->outputs[o], &b, &p)) s->nodes[b].pinned = true;
        }
        for (int i = 0; i < s->n; i++) {
            snode *n = &s->nodes[i];
            n->pinned |= n->fetched != 0;
            if (!n->runs) continue;
            for (int k = 0; k < n->pb->desc->n_inputs; k++) {
                int src = n->pb->inputs[k].src_block, j = 0;
                while (j < k && n->pb->inputs[j].src_block != src) j++;
                if (src >= 0 && j == k) s->nodes[src].uses++;
            }
        }
        for (int i = 0; i < s->n; i++)
            if (s->nodes[i].pinned || s->nodes[i].uses) bf_sess_cache_take(s, &s->nodes[i]);
    }
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!starting) n->uses = 0;
        if (n->valid && !n->pinned && !n->uses && !n->cached) bf_sess_cache_put(s, n);
    }
}

/* Make host copies of the fetched results that live on a GPU (intermediate results stay). */
static bf_status download_fetches(bf_session *s, bf_error *err) {
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!n->fetched) continue;
        for (int p = 0; p < n->pb->desc->n_outputs && p < 32; p++) {
            bf_tensor *t = n->outs[p];
            if (!(n->fetched & (1u << p)) || !t || !t->device || n->host_outs[p]) continue;
            bf_status st = bf_sess_tensor_move(s, t, NULL, &n->host_outs[p], err);
            if (st) {
                bf_sess_where(s, i, err);
                return st;
            }
        }
    }
    return BF_OK;
}

/*
 * Check the page, and fail when a block this run needs has a problem: those problems go to
 * `diags` and the first to `err`. Problems elsewhere on the page do not stop the run.
 */
static bf_status check_needed(bf_session *s, bf_diags *diags, bf_error *err) {
    bf_diags *all = bf_diags_new();
    if (!all) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    bf_session_check(s, all, NULL);
    bf_status st = BF_OK;
    for (size_t i = 0; i < bf_diags_count(all); i++) {
        const bf_error *e = bf_diags_at(all, i);
        int b = e->block_id[0] ? bf_page_find(s->page, e->block_id) : -1;
        if (e->status == BF_OK || b < 0 || !s->nodes[b].needed) continue;
        if (st == BF_OK) {
            st = e->status;
            if (err) *err = *e;
        }
        bf_diags_push(diags, e);
    }
    bf_diags_free(all);
    return st;
}

/* The run stops before its first block, its blocks marked: in a job of several ranks the
 * others may already wait in this run's first collective round, so tell them there (fuse.c),
 * as a run that fails later does. */
static bf_status stop_early(bf_session *s, bf_status st) {
    bf_error ignored;
    if (bf_sess_fuse_plan(s, &ignored) == BF_OK) bf_sess_fuse_end(s, true);
    s->opts = NULL;
    return st;
}

bf_status bf_session_run(bf_session *s, const bf_run_options *opts, bf_diags *diags,
                         bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_run_options defaults;
    if (!opts) {
        bf_run_options_init(&defaults);
        opts = &defaults;
    }
    bf_status st;
    if (!bf_sess_state_settle(s))
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    s->opts = opts;
    atomic_store(&s->cancel, 0);
    s->run_status = BF_OK;
    memset(&s->run_err, 0, sizeof(s->run_err));
    bf_budget_reset_peak(&s->budget);
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        n->needed = n->scheduled = n->runs = n->pinned = false;
        n->fetched = 0;
        n->pending = 0;
        n->uses = 0;
        n->stats.ran = n->stats.reused = 0;
        n->stats.status = BF_OK;
        n->stats.device[0] = '\0';
    }
    /* Fetches. */
    int n_fetch = opts->fetches ? opts->n_fetches : s->page->n_outputs;
    if (n_fetch == 0 && (st = bf_session_check(s, diags, err))) { /* problems first */
        s->opts = NULL;
        return st;
    }
    if (n_fetch == 0) {
        bf_error e = {0};
        bf_err(&e, BF_EINVAL, "no_fetch", "nothing to compute: the page has no \"outputs\" and "
               "no block was fetched");
        bf_strlcpy(e.page, s->page->file, sizeof(e.page));
        if (err) *err = e;
        bf_diags_push(diags, &e);
        s->opts = NULL;
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
            bf_diags_push(diags, &e);
            s->opts = NULL;
            return BF_ENOTFOUND;
        }
        if ((st = bf_sess_mark_needed(s, b, err))) {
            s->opts = NULL;
            return st;
        }
        if (p < 32) s->nodes[b].fetched |= 1u << p;
    }
    if ((st = check_needed(s, diags, err))) return stop_early(s, st);
    /* Every input the fetches need must have been fed. */
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (n->needed && (n->pb->desc->flags & BF_BLOCK_FEEDABLE) && !n->feed) {
            bf_error e = {0};
            bf_err(&e, BF_EINVAL, "missing_feed", "\"%s\" is needed but was not fed",
                   n->pb->id);
            bf_sess_where(s, i, &e);
            if (err) *err = e;
            bf_diags_push(diags, &e);
            return stop_early(s, BF_EINVAL);
        }
    }
    settle_cache(s, true);
    bf_budget_reset_peak(&s->budget);
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
        if (!n->runs) continue; /* upstream of a valid block: its result is not read again */
        bf_sess_gather_infos(s, n->index, in);
        bf_error e = {0};
        if ((st = bf_sess_place(s, n, in, &e))) {
            bf_sess_where(s, n->index, &e);
            if (err) *err = e;
            return stop_early(s, st);
        }
        for (int i = 0; i < n->pb->desc->n_inputs; i++)
            n->pending += n->pb->inputs[i].src_block >= 0 &&
                          !s->nodes[n->pb->inputs[i].src_block].valid;
    }
    if ((st = bf_sess_fuse_plan(s, err))) { /* the collective rounds, in a job of several */
        s->opts = NULL;
        return st;
    }
    s->deadline = opts->timeout_s > 0 ? bf_now() + opts->timeout_s : 0;
    s->inflight = 0;
    s->n_ready = 0;
    for (int k = s->n_order - 1; k >= 0; k--) { /* popped in page order */
        snode *n = &s->nodes[s->order[k]];
        if (n->runs && n->pending == 0) push_ready(s, n);
    }
    drain(s);
    if (s->loop_ready) uv_run(&s->loop, UV_RUN_DEFAULT); /* until the last block completes */

    (void)cancelled(s); /* a kernel may have stopped at the deadline without recording it */
    bf_sess_fuse_end(s, s->run_status != BF_OK || atomic_load(&s->cancel) != 0);
    int why = atomic_load(&s->cancel);
    if (s->run_status == BF_OK && why == 1) {
        s->run_status = BF_ECANCELED;
        bf_err(&s->run_err, BF_ECANCELED, "cancelled", "the run was cancelled");
    }
    if ((s->run_status == BF_OK || s->run_status == BF_ECANCELED) && why == 2) {
        s->run_status = BF_ETIMEDOUT;
        memset(&s->run_err, 0, sizeof(s->run_err));
        bf_err(&s->run_err, BF_ETIMEDOUT, "timeout",
               "the run took longer than its limit of %g s", opts->timeout_s);
    }
    if (s->run_status == BF_OK) {
        for (int i = 0; i < s->n; i++)
            BF_ASSERT(!s->nodes[i].fetched || s->nodes[i].valid);
        s->run_status = download_fetches(s, &s->run_err);
    }
    settle_cache(s, false);
    if (s->run_status != BF_OK) {
        bf_strlcpy(s->run_err.page, s->page->file, sizeof(s->run_err.page));
        if (err) *err = s->run_err;
        bf_diags_push(diags, &s->run_err);
    }
    s->opts = NULL;
    return s->run_status;
}

