/*
 * state.c - training: state that lives between runs (Variables, datasets), the step loop that
 * commits it, reset, reading and writing state, and checkpoints.
 *
 * A step is a run that also fetches every update block (a block with a BF_PORT_REF input),
 * followed by a commit. Kernels never touch a Variable's state: an update block writes the
 * next value into an output of its own, so every block of the step reads the start-of-step
 * value, whatever the order blocks run in. The commit then copies each next value into its
 * Variable and advances each dataset that ran, after checking every value first, so it
 * happens whole or not at all; a failed or cancelled run commits nothing.
 *
 * A committed node is marked stale rather than invalidated at once: what it feeds (the loss,
 * the metrics) keeps the results of the step just run, readable with bf_session_output, until
 * the next run starts and invalidates the stale nodes and everything downstream
 * (bf_sess_state_settle). The rest of the page (constants, their products) stays cached.
 * During a step, results downstream of a Variable or dataset are "transient": they will be
 * recomputed next step anyway, so they are freed after their last reader instead of filling
 * the cache, and a training step holds no more memory than a run's plan.
 */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool has_state(const snode *n) { return n->pb->desc->state != NULL; }

/* ---- the job: agreement and the same state on every rank ---------------------------------- */

static bool multi_rank(const bf_session *s) { return s->ctx->coll.size > 1 && !s->local; }

bf_status bf_sess_job_agree(bf_session *s, bf_status local, bool want_stop, bool *stop,
                            const char *what, bf_error *err) {
    if (stop) *stop = false;
    if (!multi_rank(s)) return local;
    bf_coll_verdict v;
    bf_error e = {0};
    bool failed = local != BF_OK && local != BF_ECANCELED;
    bf_status st = bf_coll_agree(&s->ctx->coll, failed, want_stop || local == BF_ECANCELED, 0, 0,
                                 &v, &e);
    if (local) return local; /* this rank's own error says more */
    if (st) {
        if (err) *err = e;
        return st;
    }
    if (stop) *stop = v.stop_rank >= 0;
    if (v.failed_rank >= 0) {
        bf_err(err, BF_EDEVICE, "rank_failed", "rank %d of the job failed %s, so it stops on "
               "every rank (rank %d's error says why)", v.failed_rank, what, v.failed_rank);
        if (err) bf_strlcpy(err->page, s->page->file, sizeof(err->page));
        return BF_EDEVICE;
    }
    return BF_OK;
}

/* After the state was made or restored on every rank (`local`: how it went here): agree, then
 * give every rank rank 0's state, so that the replicas start identical. */
static bf_status sync_states(bf_session *s, bf_status local, const char *what, bf_error *err) {
    if (!multi_rank(s)) return local;
    int ns = bf_session_state_count(s), k = 0;
    bf_tensor **ts = local ? NULL : bf_calloc((size_t)ns + 1, sizeof(bf_tensor *));
    if (!local && !ts) local = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    for (int i = 0; local == BF_OK && i < s->n; i++)
        if (has_state(&s->nodes[i])) {
            local = s->nodes[i].pb->desc->state->save(&s->nodes[i].node, &ts[k++], err);
            if (local) bf_sess_where(s, i, err);
        }
    bf_status st = bf_sess_job_agree(s, local, false, NULL, what, err);
    k = 0;
    for (int i = 0; st == BF_OK && i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!has_state(n)) continue;
        bf_tensor *t = ts[k++];
        bf_coll *c = &s->ctx->coll;
        st = c->ops->broadcast(c, t->data, t->nbytes, 0, err);
        if (st == BF_OK && c->rank != 0) {
            st = n->pb->desc->state->load(&n->node, t, err);
            n->stale = false;
            bf_sess_invalidate(s, i);
        }
    }
    int64_t steps = s->steps;
    if (st == BF_OK) st = s->ctx->coll.ops->broadcast(&s->ctx->coll, &steps, sizeof(steps), 0, err);
    if (st == BF_OK) s->steps = steps;
    for (int i = 0; ts && i < ns; i++) bf_tensor_free(ts[i]);
    bf_free(ts);
    return st;
}

bf_status bf_sess_state_sync(bf_session *s, bf_status local, bf_error *err) {
    return sync_states(s, local, "while making the session", err);
}

static bool is_update(const bf_block_desc *d) {
    for (int k = 0; k < d->n_inputs; k++)
        if (d->inputs[k].flags & BF_PORT_REF) return true;
    return false;
}

/* ---- check --------------------------------------------------------------------------------- */

void bf_sess_state_check(bf_session *s, bf_sess_report_fn report, void *user) {
    int *owner = NULL; /* Variable -> the update block writing it, -1 */
    for (int b = 0; b < s->n; b++) {
        const bf_page_block *pb = &s->page->blocks[b];
        const bf_block_desc *d = pb->desc;
        for (int k = 0; k < d->n_inputs; k++) {
            int v = pb->inputs[k].src_block;
            if (!(d->inputs[k].flags & BF_PORT_REF) || v < 0) continue;
            const bf_page_block *vb = &s->page->blocks[v];
            bf_error e = {0};
            bf_err_at(&e, d->inputs[k].name, NULL);
            if (!vb->desc->state || !vb->desc->state->variable) {
                bf_err(&e, BF_ESCHEMA, "ref_not_variable", "input \"%s\" of %s takes a "
                       "Variable's ref: wire it straight to a Variable, not to \"%.60s\" (%s)",
                       d->inputs[k].name, d->type, vb->id, vb->desc->type);
                report(s, b, &e, user);
                continue;
            }
            if (!owner) {
                owner = bf_malloc((size_t)s->n * sizeof(int));
                if (!owner) return; /* out of memory: the rule is checked again next time */
                for (int i = 0; i < s->n; i++) owner[i] = -1;
            }
            if (owner[v] >= 0) {
                bf_err(&e, BF_ESCHEMA, "double_update", "Variable \"%.60s\" is already updated "
                       "by \"%.60s\": a Variable takes one update per step (sum the changes "
                       "first, e.g. with AddN)", vb->id, s->page->blocks[owner[v]].id);
                report(s, b, &e, user);
                continue;
            }
            owner[v] = b;
        }
    }
    bf_free(owner);
}

/* ---- settling, warnings -------------------------------------------------------------------- */

bool bf_sess_state_settle(bf_session *s) {
    if (!s->any_stale) return true;
    bool ok = true;
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].stale) {
            s->nodes[i].stale = false;
            ok &= bf_sess_invalidate(s, i);
        }
    s->any_stale = false;
    return ok;
}

void bf_sess_state_was_reset(bf_session *s, int b, const char *attr) {
    if (s->dry_run || !s->edit_diags) return;
    bf_error e = {0};
    bf_err(&e, BF_OK, "state_reset", "%s \"%.60s\" was re-initialised: its attribute \"%.40s\" "
           "changed", s->page->blocks[b].desc->type, s->page->blocks[b].id, attr);
    bf_err_at(&e, NULL, attr);
    bf_sess_where(s, b, &e);
    bf_diags_push(s->edit_diags, &e);
}

/* ---- steps --------------------------------------------------------------------------------- */

void bf_step_options_init(bf_step_options *o) {
    if (o) memset(o, 0, sizeof(*o));
}

/* Mark every node downstream of a stateful one (Variables, datasets) transient. */
static bool mark_transient(bf_session *s) {
    int *stack = bf_malloc((size_t)BF_MAX(s->n, 1) * sizeof(int));
    if (!stack) return false;
    int top = 0;
    for (int i = 0; i < s->n; i++) {
        s->nodes[i].transient = has_state(&s->nodes[i]);
        if (s->nodes[i].transient) stack[top++] = i;
    }
    while (top) {
        snode *n = &s->nodes[stack[--top]];
        for (int c = 0; c < n->n_consumers; c++) {
            snode *m = &s->nodes[n->consumers[c]];
            if (!m->transient) {
                m->transient = true;
                stack[top++] = m->index;
            }
        }
    }
    bf_free(stack);
    return true;
}

/* The next value an update block computed for its ref input k (a host tensor). */
static const bf_tensor *next_value(const snode *u, int k) {
    int p = BF_PORT_REF_OUTPUT(u->pb->desc->inputs[k].flags);
    const bf_tensor *t = u->host_outs[p] ? u->host_outs[p] : u->outs[p];
    return t && !t->device ? t : NULL;
}

/* Commit the step that just ran: check every next value, then assign them all and advance
 * the datasets that ran. */
static bf_status commit(bf_session *s, bf_error *err) {
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < s->n; i++) {
            snode *u = &s->nodes[i];
            const bf_block_desc *d = u->pb->desc;
            if (!is_update(d) || !u->valid) continue;
            for (int k = 0; k < d->n_inputs; k++) {
                if (!(d->inputs[k].flags & BF_PORT_REF)) continue;
                snode *v = &s->nodes[u->pb->inputs[k].src_block];
                const bf_tensor *t = next_value(u, k);
                const bf_port_info *vi = &v->info[0];
                bf_error e = {0};
                if (pass == 0) {
                    bool same = t && t->dtype == vi->dtype && t->rank == vi->rank;
                    for (int a = 0; same && a < t->rank; a++) same = t->dims[a] == vi->dims[a];
                    if (!same) {
                        bf_err(&e, BF_EINTERNAL, "bad_update", "%s's next value for "
                               "\"%.60s\" does not match the Variable", d->type, v->pb->id);
                        bf_sess_where(s, i, &e);
                        if (err) *err = e;
                        return BF_EINTERNAL;
                    }
                    continue;
                }
                bf_status st = v->pb->desc->state->assign(&v->node, t, &e);
                BF_ASSERT(st == BF_OK); /* checked in the first pass */
                v->stale = true;
            }
        }
    }
    for (int i = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        /* every dataset the step read, whether it ran or its batch was reused from a plain
         * run before the step */
        if (has_state(n) && n->pb->desc->state->advance && n->needed &&
            (n->valid || n->stats.ran)) {
            n->pb->desc->state->advance(&n->node);
            n->stale = true;
        }
    }
    s->any_stale = true;
    s->steps++;
    return BF_OK;
}

/* In a job of several ranks, the metrics a step reports are the mean over the ranks of each
 * rank's value: the whole batch's loss when the loss is a mean over equal parts of it (summed
 * as the gradients are, so --deterministic-reduce logs the same bits on every run). */
static bf_status metrics_mean(bf_session *s, double *values, int n, bf_error *err) {
    bf_status st = bf_sess_coll_sum(s, values, n, BF_DTYPE_F64, err);
    for (int i = 0; st == BF_OK && i < n; i++) values[i] /= s->ctx->coll.size;
    return st;
}

bf_status bf_session_step(bf_session *s, int64_t n, const bf_step_options *opts,
                          bf_diags *diags, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_error_clear(err);
    if (!s || n < 1) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL or n < 1");
    bf_step_options defaults;
    if (!opts) {
        bf_step_options_init(&defaults);
        opts = &defaults;
    }
    const char *const *metrics = opts->fetches ? opts->fetches
                                               : (const char *const *)s->page->outputs;
    int n_metrics = opts->fetches ? opts->n_fetches : s->page->n_outputs;
    int n_updates = 0;
    for (int i = 0; i < s->n; i++) n_updates += is_update(s->page->blocks[i].desc);
    const char **fetches = bf_calloc((size_t)(n_metrics + n_updates + 1), sizeof(char *));
    double *values = bf_calloc((size_t)n_metrics + 1, sizeof(double));
    if (!fetches || !values || !mark_transient(s)) {
        bf_free(fetches), bf_free(values);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    int nf = 0;
    for (int i = 0; i < n_metrics; i++) fetches[nf++] = metrics[i];
    for (int i = 0; i < s->n; i++)
        if (is_update(s->page->blocks[i].desc)) fetches[nf++] = s->page->blocks[i].id;
    bf_run_options ro;
    bf_run_options_init(&ro);
    ro.fetches = fetches, ro.n_fetches = nf, ro.device = opts->device;
    ro.timeout_s = opts->timeout_s, ro.on_event = opts->on_event, ro.user = opts->user;
    bf_status st = BF_OK;
    atomic_store(&s->stop_steps, 0);
    s->stepping = true;
    bool multi = multi_rank(s), cb_stop = false;
    char what[64];
    for (int64_t i = 0; i < n; i++) {
        if (multi) {
            /* a step boundary: every rank learns whether one was cancelled (its `failed`
             * here) or its callback asked to stop, and they all stop together */
            bf_coll_verdict v;
            if ((st = bf_coll_agree(&s->ctx->coll, atomic_load(&s->stop_steps) != 0, cb_stop,
                                    0, 0, &v, err)))
                break;
            if (v.failed_rank >= 0) {
                st = bf_err(err, BF_ECANCELED, "cancelled", "stopped after step %lld (cancelled "
                            "on rank %d of the job)", (long long)s->steps, v.failed_rank);
                break;
            }
            if (v.stop_rank >= 0) break;
        } else if (atomic_load(&s->stop_steps)) {
            st = bf_err(err, BF_ECANCELED, "cancelled", "stopped after step %lld",
                        (long long)s->steps);
            break;
        }
        st = bf_session_run(s, &ro, diags, err);
        if (multi) { /* commit only a step that succeeded on every rank */
            bool stop = false;
            snprintf(what, sizeof(what), "in step %lld", (long long)s->steps + 1);
            st = bf_sess_job_agree(s, st, false, &stop, what, err);
            if (st == BF_OK && stop)
                st = bf_err(err, BF_ECANCELED, "cancelled", "step %lld was cancelled on another "
                            "rank of the job", (long long)s->steps + 1);
        }
        if (st) break;
        for (int m = 0; m < n_metrics; m++) {
            int b, p;
            const bf_tensor *t = NULL;
            if (bf_page_resolve(s->page, metrics[m], &b, &p))
                t = bf_session_output(s, s->page->blocks[b].id,
                                      s->page->blocks[b].desc->outputs[p].name);
            values[m] = t && t->numel ? bf_tensor_get_f64(t, 0) : NAN;
        }
        if (multi && n_metrics && (st = metrics_mean(s, values, n_metrics, err))) break;
        if ((st = commit(s, err))) break;
        if (opts->on_step && opts->on_step(s->steps, values, n_metrics, opts->user)) {
            if (!multi) break;
            cb_stop = true; /* the others learn it at the next step boundary */
        }
    }
    s->stepping = false;
    for (int i = 0; i < s->n; i++) s->nodes[i].transient = false;
    bf_free(fetches);
    bf_free(values);
    return st;
}

int64_t bf_session_step_count(const bf_session *s) { return s ? s->steps : 0; }

/* ---- reset, reading and writing state ------------------------------------------------------ */

int bf_session_state_count(const bf_session *s) {
    if (!s) return 0;
    int c = 0;
    for (int i = 0; s && i < s->n; i++) c += has_state(&s->nodes[i]);
    return c;
}

const char *bf_session_state_id(const bf_session *s, int i) {
    for (int b = 0; s && b < s->n; b++)
        if (has_state(&s->nodes[b]) && i-- == 0) return s->page->blocks[b].id;
    return NULL;
}

/* Block `id`, which must keep state. */
static int find_stateful(bf_session *s, const char *id, bf_error *err) {
    int b = id ? bf_page_find(s->page, id) : -1;
    if (b < 0) {
        bf_err(err, BF_ENOTFOUND, "unknown_block", "no block \"%.60s\" on this page",
               id ? id : "(null)");
        if (err) {
            bf_strlcpy(err->page, s->page->file, sizeof(err->page));
            bf_strlcpy(err->block_id, id ? id : "", sizeof(err->block_id));
        }
        return -1;
    }
    if (!has_state(&s->nodes[b])) {
        bf_err(err, BF_EINVAL, "no_state", "%s keeps no state (Variables and datasets do)",
               s->page->blocks[b].desc->type);
        if (err) bf_sess_where(s, b, err);
        return -1;
    }
    return b;
}

bf_status bf_session_reset(bf_session *s, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_error_clear(err);
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    int ns = bf_session_state_count(s);
    void **fresh = bf_calloc((size_t)ns + 1, sizeof(void *));
    if (!fresh) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    /* Make every new state first, so that a failing initializer changes nothing. */
    bf_status st = BF_OK;
    int made = 0;
    for (int i = 0; i < s->n && st == BF_OK; i++) {
        snode *n = &s->nodes[i];
        if (!has_state(n)) continue;
        void *old = n->node.state;
        n->node.state = NULL;
        st = n->pb->desc->init ? n->pb->desc->init(&n->node, err) : BF_OK;
        fresh[made++] = n->node.state;
        n->node.state = old;
        if (st) bf_sess_where(s, i, err);
    }
    for (int i = 0, k = 0; i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!has_state(n) || k >= made) continue;
        void *nw = fresh[k++];
        if (st) { /* give back what was made */
            void *old = n->node.state;
            n->node.state = nw;
            if (n->pb->desc->fini) n->pb->desc->fini(&n->node);
            n->node.state = old;
            continue;
        }
        if (n->pb->desc->fini) n->pb->desc->fini(&n->node);
        n->node.state = nw;
        n->stale = false;
        bf_sess_invalidate(s, i);
    }
    bf_free(fresh);
    if (st == BF_OK) s->steps = 0;
    return sync_states(s, st, "resetting its state", err);
}

bf_status bf_session_read_state(bf_session *s, const char *block_id, bf_tensor **out,
                                bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_error_clear(err);
    if (out) *out = NULL;
    if (!s || !out) return bf_err(err, BF_EINVAL, "bad_argument", "session or out is NULL");
    int b = find_stateful(s, block_id, err);
    if (b < 0) return err ? err->status : BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    bf_status st = n->pb->desc->state->save(&n->node, out, err);
    if (st) bf_sess_where(s, b, err);
    return st;
}

bf_status bf_session_write_state(bf_session *s, const char *block_id, const bf_tensor *value,
                                 bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!value) return bf_err(err, BF_EINVAL, "bad_argument", "value is NULL");
    bf_error_clear(err);
    if (!s || !value) return bf_err(err, BF_EINVAL, "bad_argument", "session or value is NULL");
    int b = find_stateful(s, block_id, err);
    if (b < 0) return err ? err->status : BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    bf_status st = n->pb->desc->state->load(&n->node, value, err);
    if (st) {
        bf_sess_where(s, b, err);
        return st;
    }
    n->stale = false;
    bf_sess_invalidate(s, b);
    return BF_OK;
}

/* ---- checkpoints --------------------------------------------------------------------------- */

#define STEP_KEY ".step" /* cannot be a block id: ids do not start with '.' */

/* FNV-1a of a tensor's bytes, 62 bits (so that its negation fits an int64 too). */
static int64_t checksum(const bf_tensor *t) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++) h = (h ^ p[i]) * 1099511628211ull;
    return (int64_t)(h >> 2);
}

/* In a job of several ranks: whether every Variable is the same on every rank (a cheap
 * checksum of each, compared in one all-reduce); a divergence is an error naming the first
 * Variable that differs. `local`: this rank's status so far. */
static bf_status check_replicas(bf_session *s, bf_status local, bf_error *err) {
    if (!multi_rank(s)) return local;
    int nv = 0;
    for (int i = 0; i < s->n; i++) nv += has_state(&s->nodes[i]);
    int64_t *h = bf_calloc((size_t)nv * 2 + 2, sizeof(int64_t));
    if (!h && !local) local = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    for (int i = 0, k = 0; h && !local && i < s->n; i++) {
        if (!has_state(&s->nodes[i])) continue;
        bf_tensor *t = NULL;
        local = s->nodes[i].pb->desc->state->save(&s->nodes[i].node, &t, err);
        if (!local) h[2 * k] = checksum(t), h[2 * k + 1] = -h[2 * k];
        bf_tensor_free(t);
        k++;
    }
    bf_status st = bf_sess_job_agree(s, local, false, NULL, "while saving a checkpoint", err);
    if (st == BF_OK) st = s->ctx->coll.ops->allreduce_max(&s->ctx->coll, h, 2 * nv, err);
    for (int i = 0, k = 0; st == BF_OK && i < s->n; i++) {
        if (!has_state(&s->nodes[i])) continue;
        if (h[2 * k] != -h[2 * k + 1]) {
            bf_err(err, BF_EINTERNAL, "diverged", "%s \"%.60s\" is not the same on every rank "
                   "of the job (its checksums differ): the replicas diverged (a state set on one "
                   "rank only?); the checkpoint was not written",
                   s->nodes[i].pb->desc->state->variable ? "Variable" : "Dataset",
                   s->page->blocks[i].id);
            bf_sess_where(s, i, err);
            st = BF_EINTERNAL;
        }
        k++;
    }
    bf_free(h);
    return st;
}

static bf_status write_state(bf_session *s, const char *path, bf_error *err);

bf_status bf_session_save_state(bf_session *s, const char *path, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!path) return bf_err(err, BF_EINVAL, "bad_argument", "path is NULL");
    bf_error_clear(err);
    if (!s || !path) return bf_err(err, BF_EINVAL, "bad_argument", "session or path is NULL");
    if (multi_rank(s)) { /* compare the replicas; rank 0 writes, and all learn how it went */
        bf_status st = check_replicas(s, BF_OK, err);
        if (st) return st;
        if (s->ctx->coll.rank == 0) st = write_state(s, path, err);
        return bf_sess_job_agree(s, st, false, NULL, "writing the checkpoint", err);
    }
    return write_state(s, path, err);
}

/* The checkpoint of this process's state. */
static bf_status write_state(bf_session *s, const char *path, bf_error *err) {
    int ns = bf_session_state_count(s), k = 0;
    const char **keys = bf_calloc((size_t)ns + 1, sizeof(char *));
    bf_tensor **ts = bf_calloc((size_t)ns + 1, sizeof(bf_tensor *));
    bf_status st = keys && ts ? BF_OK : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    for (int i = 0; st == BF_OK && i < s->n; i++) {
        snode *n = &s->nodes[i];
        if (!has_state(n)) continue;
        keys[k] = n->pb->id;
        st = n->pb->desc->state->save(&n->node, &ts[k], err);
        if (st == BF_OK && ts[k]->dtype == BF_DTYPE_BF16) { /* numpy has no bfloat16 */
            bf_tensor *wide = NULL;
            st = bf_tensor_new_uninit(s->ctx, BF_DTYPE_F32, ts[k]->rank, ts[k]->dims, &wide, err);
            if (st == BF_OK) st = bf_tensor_convert(ts[k], wide, err);
            bf_tensor_free(ts[k]);
            ts[k] = wide;
        }
        if (st) bf_sess_where(s, i, err);
        k++;
    }
    if (st == BF_OK) {
        keys[k] = STEP_KEY;
        st = bf_tensor_new(s->ctx, BF_DTYPE_I64, 0, NULL, &ts[k], err);
        if (st == BF_OK) *(int64_t *)ts[k]->data = s->steps;
        k++;
    }
    if (st == BF_OK) st = bf_npz_save(path, keys, (const bf_tensor *const *)ts, k, err);
    for (int i = 0; ts && i <= ns; i++) bf_tensor_free(ts[i]);
    bf_free(keys);
    bf_free(ts);
    return st;
}

typedef struct loaded {
    bf_session *s;
    char (*keys)[64];
    bf_tensor **ts;
    int n, cap;
    const char *path;
} loaded;

static bf_status collect(const char *key, bf_tensor *t, void *user, bf_error *err) {
    loaded *l = user;
    bool step = !strcmp(key, STEP_KEY);
    int b = step ? -1 : bf_page_find(l->s->page, key);
    bf_status st = BF_OK;
    if (step) {
        if (t->rank != 0 || (t->dtype != BF_DTYPE_I64 && t->dtype != BF_DTYPE_I32) ||
            bf_tensor_get_f64(t, 0) < 0)
            st = bf_err(err, BF_EPARSE, "bad_checkpoint", "%s: \"%s\" must be a non-negative "
                        "integer scalar", l->path, STEP_KEY);
    } else if (b < 0 || !has_state(&l->s->nodes[b])) {
        st = bf_err(err, BF_ENOTFOUND, "unknown_state", "%s: \"%.60s\" names no Variable or "
                    "dataset on this page", l->path, key);
    } else {
        for (int i = 0; i < l->n && st == BF_OK; i++)
            if (!strcmp(l->keys[i], key))
                st = bf_err(err, BF_EPARSE, "bad_checkpoint", "%s: \"%.60s\" is there twice",
                            l->path, key);
    }
    if (st == BF_OK && l->n == l->cap)
        st = bf_err(err, BF_EPARSE, "bad_checkpoint", "%s: more arrays than the page has "
                    "states", l->path);
    if (st) {
        bf_tensor_free(t);
        return st;
    }
    bf_strlcpy(l->keys[l->n], key, sizeof(l->keys[0]));
    l->ts[l->n++] = t;
    return BF_OK;
}

bf_status bf_session_load_state(bf_session *s, const char *path, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!path) return bf_err(err, BF_EINVAL, "bad_argument", "path is NULL");
    bf_error_clear(err);
    if (!s || !path) return bf_err(err, BF_EINVAL, "bad_argument", "session or path is NULL");
    if (multi_rank(s) && s->ctx->coll.rank != 0) /* rank 0 reads it, and gives it to all */
        return sync_states(s, BF_OK, "restoring a checkpoint", err);
    int ns = bf_session_state_count(s);
    loaded l = {s, bf_calloc((size_t)ns + 2, 64), bf_calloc((size_t)ns + 2, sizeof(bf_tensor *)),
                0, ns + 1, path};
    bf_tensor **backup = bf_calloc((size_t)ns + 2, sizeof(bf_tensor *));
    bf_status st = l.keys && l.ts && backup
                       ? bf_npz_each(path, s->ctx->cfg.max_tensor_elements, collect, &l, err)
                       : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    /* Load each state, keeping the old one to put back should a later one be refused. */
    int done = 0;
    int64_t steps = s->steps;
    for (; st == BF_OK && done < l.n; done++) {
        if (!strcmp(l.keys[done], STEP_KEY)) {
            steps = (int64_t)bf_tensor_get_f64(l.ts[done], 0);
            continue;
        }
        snode *n = &s->nodes[bf_page_find(s->page, l.keys[done])];
        st = n->pb->desc->state->save(&n->node, &backup[done], err);
        if (st == BF_OK) st = n->pb->desc->state->load(&n->node, l.ts[done], err);
        if (st) {
            char msg[sizeof(err->message) + 64];
            if (err) {
                snprintf(msg, sizeof(msg), "%.60s: %s", path, err->message);
                bf_strlcpy(err->message, msg, sizeof(err->message));
                bf_sess_where(s, n->index, err);
            }
            break;
        }
    }
    for (int i = 0; i < done + (st != BF_OK && done < l.n); i++) {
        if (!backup[i]) continue;
        snode *n = &s->nodes[bf_page_find(s->page, l.keys[i])];
        bf_error ignored;
        if (st) n->pb->desc->state->load(&n->node, backup[i], &ignored);
        else {
            n->stale = false;
            bf_sess_invalidate(s, n->index);
        }
    }
    if (st == BF_OK) s->steps = steps;
    for (int i = 0; i <= ns + 1; i++) {
        if (l.ts) bf_tensor_free(l.ts[i]);
        if (backup) bf_tensor_free(backup[i]);
    }
    bf_free(l.keys), bf_free(l.ts), bf_free(backup);
    return sync_states(s, st, "restoring a checkpoint", err);
}
