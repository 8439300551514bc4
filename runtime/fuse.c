/*
 * fuse.c - the AllReduce blocks of a run in a job of several ranks, fused as Horovod fuses
 * them: one buffer and one collective call for every AllReduce ready together, rather than a
 * call per block.
 *
 * Which blocks go together is decided from the graph, not from timing, so that every rank
 * makes the same calls in the same order whatever order its threads finish in: a collective
 * block that runs is in round k when k-1 other collective blocks that run lie on its deepest
 * path from the page's inputs. A data-parallel page (an AllReduce on each Variable's
 * gradient, none feeding another) has one round per step, so one call. The scheduler holds a
 * collective block once its kernel (this rank's contribution) is done; when the round's last
 * member is held, the round runs on the scheduler's thread while other blocks go on:
 *   1. the agreement (bf_coll_agree: one all-reduce of six integers): did a rank fail or was
 *      it cancelled, and do all ranks reduce the same element counts;
 *   2. the members' outputs in page order, copied into one float32 buffer (float16 and
 *      bfloat16 widened) and one float64 buffer, each reduced in one call: an all-reduce sum,
 *      or with bf_config.deterministic_reduce a gather on rank 0, a sum in rank order
 *      (rank 0's + rank 1's + ...) and a broadcast, whose bits depend on nothing else;
 *   3. each member's output gets its part of the sum and its block's finish (mean: / ranks).
 * A rank whose run fails or is cancelled before a round still takes part in that round's
 * agreement (bf_sess_fuse_end), so the others stop too, with an error naming it, instead of
 * waiting for it for ever.
 */
#include "session.h"

#include "half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_collective(const snode *n) { return n->pb->desc->collective_finish != NULL; }

void bf_sess_fuse_check(bf_session *s, bf_sess_report_fn report, void *user) {
    for (int b = 0; b < s->n; b++) {
        const bf_page_block *pb = &s->page->blocks[b];
        if (!pb->desc->collective_finish) continue;
        for (int a = 0; a < pb->desc->n_attrs; a++) {
            int64_t want = pb->attrs[a].i, have = s->nodes[b].node.ranks;
            if (strcmp(pb->desc->attrs[a].name, "ranks") || want <= 0 || want == have) continue;
            bf_error e = {0};
            bf_err_at(&e, NULL, "ranks");
            bf_err(&e, BF_EINVAL, "wrong_rank_count", "this page was built for %lld rank%s (its "
                   "backward pass has the shapes of one rank's part of the batch) but the job "
                   "has %lld: run it with mpirun -np %lld, or build the gradients again for "
                   "this job", (long long)want, want == 1 ? "" : "s", (long long)have,
                   (long long)want);
            report(s, b, &e, user);
        }
    }
}

static void plan_free(bf_session *s) {
    bf_free(s->round_of), bf_free(s->round_left), bf_free(s->held);
    s->round_of = s->round_left = s->held = NULL;
    s->n_held = s->rounds = s->rounds_done = 0;
    s->rounds_stopped = false;
}

bf_status bf_sess_fuse_plan(bf_session *s, bf_error *err) {
    plan_free(s);
    if (s->ctx->coll.size <= 1 || s->local) return BF_OK;
    bool any = false;
    for (int i = 0; i < s->n && !any; i++) any = s->nodes[i].runs && is_collective(&s->nodes[i]);
    if (!any) return BF_OK;
    int *depth = bf_calloc((size_t)s->n, sizeof(int));
    s->round_of = bf_calloc((size_t)s->n, sizeof(int));
    s->held = bf_calloc((size_t)s->n, sizeof(int));
    if (!depth || !s->round_of || !s->held) {
        bf_free(depth);
        plan_free(s);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    for (int k = 0; k < s->n_order; k++) {
        int i = s->order[k], d = 0;
        const snode *n = &s->nodes[i];
        if (!n->runs) continue; /* a reused result carries no round of this run */
        for (int j = 0; j < n->pb->desc->n_inputs; j++) {
            int src = n->pb->inputs[j].src_block;
            if (src >= 0) d = BF_MAX(d, depth[src]);
        }
        if (is_collective(n)) s->round_of[i] = ++d;
        depth[i] = d;
        s->rounds = BF_MAX(s->rounds, d);
    }
    bf_free(depth);
    s->round_left = bf_calloc((size_t)s->rounds + 1, sizeof(int));
    if (!s->round_left) {
        plan_free(s);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    for (int i = 0; i < s->n; i++) s->round_left[s->round_of[i]] += s->round_of[i] > 0;
    return BF_OK;
}

bool bf_sess_fuse_hold(bf_session *s, snode *n) {
    if (!s->round_of || !s->round_of[n->index]) return false;
    s->held[s->n_held++] = n->index;
    s->round_left[s->round_of[n->index]]--;
    return true;
}

bool bf_sess_fuse_ready(const bf_session *s) {
    return s->round_of && !s->rounds_stopped && s->rounds_done < s->rounds && s->n_held > 0 &&
           s->round_left[s->rounds_done + 1] == 0;
}

static int by_index(const void *a, const void *b) {
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static bool wide(bf_dtype dt) { return dt == BF_DTYPE_F64; }

/* Element i of a float tensor of any float dtype, as float / back. */
static float get_f32(const bf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case BF_DTYPE_F16: return bf_f16_to_f32(((const uint16_t *)t->data)[i]);
    case BF_DTYPE_BF16: return bf_bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

static void put_f32(bf_tensor *t, int64_t i, float v) {
    switch (t->dtype) {
    case BF_DTYPE_F16: ((uint16_t *)t->data)[i] = bf_f32_to_f16(v); break;
    case BF_DTYPE_BF16: ((uint16_t *)t->data)[i] = bf_f32_to_bf16(v); break;
    default: ((float *)t->data)[i] = v; break;
    }
}

/* The error of a round some rank stopped. */
static bf_status stopped(bf_session *s, const bf_coll_verdict *v, bool failed_here,
                         bf_error *err) {
    s->rounds_stopped = true;
    if (failed_here) /* this rank's own failure is the run's error */
        return bf_err(err, BF_ECANCELED, "cancelled", "the run was stopped");
    if (v->failed_rank >= 0)
        return bf_err(err, BF_EDEVICE, "rank_failed", "rank %d of the job failed during this run, "
                      "so it stops on every rank (rank %d's error says why)", v->failed_rank,
                      v->failed_rank);
    return bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled on rank %d of the "
                  "job, so it stops on every rank", v->stop_rank);
}

bf_status bf_sess_coll_sum(bf_session *s, void *buf, int64_t count, bf_dtype dt, bf_error *err) {
    bf_coll *c = &s->ctx->coll;
    if (!count) return BF_OK;
    if (!s->ctx->cfg.deterministic_reduce) return c->ops->allreduce_sum(c, buf, count, dt, err);
    /* gather on rank 0, sum in rank order, broadcast */
    size_t esz = bf_dtype_size(dt), bytes = (size_t)count * esz, all = 0;
    bool ok = bf_size_mul(bytes, (size_t)c->size, &all);
    void *recv = c->rank == 0 && ok ? bf_malloc(all) : NULL;
    bf_coll_verdict v;
    bf_status st = bf_coll_agree(c, c->rank == 0 && !recv, false, 0, 0, &v, err);
    if (st) return st;
    if (v.failed_rank >= 0)
        return bf_err(err, BF_ENOMEM, "out_of_memory", "rank 0 has no memory to gather %zu "
                      "bytes for a deterministic reduce", all);
    double t0 = bf_now();
    st = c->ops->gather(c, buf, bytes, recv, 0, err);
    if (st == BF_OK && c->rank == 0) {
        for (int r = 1; r < c->size; r++) {
            const char *part = (const char *)recv + (size_t)r * bytes;
            if (dt == BF_DTYPE_F64) {
                double *acc = recv;
                for (int64_t i = 0; i < count; i++) acc[i] += ((const double *)part)[i];
            } else {
                float *acc = recv;
                for (int64_t i = 0; i < count; i++) acc[i] += ((const float *)part)[i];
            }
        }
        memcpy(buf, recv, bytes);
    }
    bf_free(recv);
    if (st == BF_OK) st = c->ops->broadcast(c, buf, bytes, 0, err);
    c->calls++;
    c->bytes += (int64_t)bytes;
    c->seconds += bf_now() - t0;
    return st;
}

bf_status bf_sess_fuse_round(bf_session *s, bool failed_here, bf_error *err) {
    bf_coll *c = &s->ctx->coll;
    qsort(s->held, (size_t)s->n_held, sizeof(int), by_index);
    int64_t n32 = 0, n64 = 0;
    for (int h = 0; h < s->n_held; h++) {
        const bf_tensor *t = s->nodes[s->held[h]].outs[0];
        *(wide(t->dtype) ? &n64 : &n32) += t->numel;
    }
    float *b32 = n32 && !failed_here ? bf_malloc((size_t)n32 * sizeof(float)) : NULL;
    double *b64 = n64 && !failed_here ? bf_malloc((size_t)n64 * sizeof(double)) : NULL;
    bool oom = !failed_here && ((n32 && !b32) || (n64 && !b64));
    bf_coll_verdict v;
    /* the sizes, and the way of reducing, must be the same on every rank */
    bf_status st = bf_coll_agree(c, failed_here || oom, false, n32,
                                 2 * n64 + (s->ctx->cfg.deterministic_reduce != 0), &v, err);
    s->rounds_done++;
    if (st == BF_OK && (v.failed_rank >= 0 || v.stop_rank >= 0)) {
        st = oom ? bf_err(err, BF_ENOMEM, "out_of_memory", "no memory for the fused "
                          "all-reduce buffer (%lld elements)", (long long)(n32 + n64))
                 : stopped(s, &v, failed_here, err);
        s->rounds_stopped = true;
    } else if (st == BF_OK && !v.same) {
        s->rounds_stopped = true;
        st = bf_err(err, BF_EINTERNAL, "round_mismatch", "the ranks of the job reduce different "
                    "amounts in round %d (%lld float32 and %lld float64 elements here), or some "
                    "reduce deterministically and some not: every rank must run the same page "
                    "with the same shapes and options", s->rounds_done, (long long)n32,
                    (long long)n64);
    }
    if (st == BF_OK) {
        int64_t o32 = 0, o64 = 0;
        for (int h = 0; h < s->n_held; h++) {
            const bf_tensor *t = s->nodes[s->held[h]].outs[0];
            if (wide(t->dtype)) {
                memcpy(b64 + o64, t->data, t->nbytes);
                o64 += t->numel;
            } else {
                for (int64_t i = 0; i < t->numel; i++) b32[o32 + i] = get_f32(t, i);
                o32 += t->numel;
            }
        }
        st = bf_sess_coll_sum(s, b32, n32, BF_DTYPE_F32, err);
        if (st == BF_OK) st = bf_sess_coll_sum(s, b64, n64, BF_DTYPE_F64, err);
        o32 = o64 = 0;
        for (int h = 0; st == BF_OK && h < s->n_held; h++) {
            snode *n = &s->nodes[s->held[h]];
            bf_tensor *t = n->outs[0];
            if (wide(t->dtype)) {
                memcpy(t->data, b64 + o64, t->nbytes);
                o64 += t->numel;
            } else {
                for (int64_t i = 0; i < t->numel; i++) put_f32(t, i, b32[o32 + i]);
                o32 += t->numel;
            }
            n->pb->desc->collective_finish(&n->node, t, c->size);
        }
    }
    bf_free(b32);
    bf_free(b64);
    return st;
}

void bf_sess_fuse_end(bf_session *s, bool failed_here) {
    if (s->round_of && !s->rounds_stopped && s->rounds_done < s->rounds) {
        /* this rank stopped before its rounds were done: say so in the next round's agreement,
         * where the other ranks are (or will be) waiting */
        bf_coll_verdict v;
        bf_error ignored;
        (void)failed_here;
        bf_coll_agree(&s->ctx->coll, true, false, 0, 0, &v, &ignored);
    }
    for (int h = 0; h < s->n_held; h++) { /* contributions never reduced: not results */
        snode *n = &s->nodes[s->held[h]];
        bf_sess_drop_results(n);
        n->valid = false;
    }
    plan_free(s);
}
