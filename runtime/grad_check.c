/*
 * grad_check.c - checking the backward pass of a training page against finite differences
 * (bf_session_check_gradients), whether bf_session_build_gradients built it or a person wired
 * it by hand.
 *
 * The gradient a page applies to Variable v is the `delta` (ApplyGradientDescent) or `grad`
 * (ApplyMomentum, ApplyAdam) input of the update block whose ref input is v. Everything is
 * recomputed in a float64 re-run of the page: a second session on the same page text, made
 * with promote_f64 so that every float dtype an attribute chooses becomes float64, with the
 * Variables' and datasets' states and the feeds copied (converted) from this session, so it
 * sees the same values and the same batch. There, for sampled elements i of each Variable,
 * fd_i = (L(v + h e_i) - L(v - h e_i)) / 2h with h = eps * max(1, |v_i|), against the applied
 * gradient's element i; relative error = |fd - an| / max(|fd|, |an|, 1e-4 * max|an|): an element
 * four orders of magnitude below the Variable's largest gradient is compared at that scale,
 * where the differences' rounding (about 1e-16 |L| / h) would otherwise dominate. The loss
 * is not linear in v, so the step is small (default eps 1e-6: in float64 the truncation error
 * ~h^2 and the rounding error ~1e-16/h are both near 1e-10). Only the blocks that depend on
 * v run again for each difference (the session's cache keeps the rest). Nothing is committed,
 * and this session is left as it was.
 */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The input of update block d that carries the gradient, or -1. */
static int gradient_port(const bf_block_desc *d) {
    bool update = false;
    for (int k = 0; k < d->n_inputs; k++) update |= (d->inputs[k].flags & BF_PORT_REF) != 0;
    for (int k = 0; update && k < d->n_inputs; k++)
        if (!strcmp(d->inputs[k].name, "delta") || !strcmp(d->inputs[k].name, "grad")) return k;
    return -1;
}

/* A float64 copy of t (other dtypes: a plain copy). */
static bf_status to_f64(const bf_context *ctx, const bf_tensor *t, bf_tensor **out,
                        bf_error *err) {
    if (!(BF_DT_FLOATS & (1u << t->dtype))) return bf_tensor_copy(t, out, err);
    bf_status st = bf_tensor_new_uninit(ctx, BF_DTYPE_F64, t->rank, t->dims, out, err);
    if (st == BF_OK && (st = bf_tensor_convert(t, *out, err))) {
        bf_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* The float64 re-run: a session on this page's text with every state and feed copied. */
static bf_status make_f64(bf_session *s, bf_session **out, bf_error *err) {
    char *text = NULL;
    bf_page *copy = NULL;
    bf_session *t = NULL;
    bf_status st = bf_page_to_json(s->page, &text, err);
    if (st == BF_OK)
        st = bf_page_parse(s->ctx, text, strlen(text), s->page->file, s->page->dir, 0, &copy,
                           NULL, err);
    bf_string_free(text);
    if (st == BF_OK) { /* its state is copied below, converted: not read from a checkpoint */
        bf_free(copy->checkpoint);
        copy->checkpoint = NULL;
    }
    if (st == BF_OK) st = bf_sess_make(s->ctx, copy, true, true, &t, err);
    for (int i = 0; st == BF_OK && i < s->n; i++) {
        snode *n = &s->nodes[i];
        bf_tensor *v = NULL, *w = NULL;
        if (n->pb->desc->state) {
            st = n->pb->desc->state->save(&n->node, &v, err);
            if (st == BF_OK) st = to_f64(s->ctx, v, &w, err);
            if (st == BF_OK) st = t->nodes[i].pb->desc->state->load(&t->nodes[i].node, w, err);
        } else if (n->feed) {
            st = to_f64(s->ctx, n->feed, &w, err);
            if (st == BF_OK) st = bf_session_feed(t, n->pb->id, w, err);
        }
        if (st) bf_sess_where(s, i, err);
        bf_tensor_free(v);
        bf_tensor_free(w);
    }
    if (st) {
        bf_session_free(t);
        return st;
    }
    *out = t;
    return BF_OK;
}

static bf_status loss_value(bf_session *t, const char *loss, double *out, bf_error *err) {
    const char *f[1] = {loss};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f, o.n_fetches = 1;
    bf_status st = bf_session_run(t, &o, NULL, err);
    if (st) return st;
    int b, p;
    bf_page_resolve(t->page, loss, &b, &p);
    const bf_tensor *v = bf_session_output(t, t->page->blocks[b].id,
                                           t->page->blocks[b].desc->outputs[p].name);
    double sum = 0; /* the loss is a scalar; a larger one counts as its sum, as tf.gradients */
    for (int64_t i = 0; v && i < v->numel; i++) sum += bf_tensor_get_f64(v, i);
    *out = sum;
    return v ? BF_OK : bf_err(err, BF_EINTERNAL, "internal", "the loss has no result");
}

/* Check one Variable (block v) against its applied gradient `grad` (a ref). The runs are in
 * the float64 copy `t`: a cancel of the page's own session `s` stops between two of them. */
static bf_status check_one(bf_session *s, bf_session *t, const char *loss, int v,
                           const char *grad, const bf_gradcheck_options *o, cJSON *rec,
                           bf_error *err) {
    bf_tensor *an = NULL, *val = NULL;
    const char *f[1] = {grad};
    bf_run_options ro;
    bf_run_options_init(&ro);
    ro.fetches = f, ro.n_fetches = 1;
    bf_status st = bf_session_run(t, &ro, NULL, err);
    int gb, gp;
    if (st == BF_OK && bf_page_resolve(t->page, grad, &gb, &gp)) {
        const bf_tensor *g = bf_session_output(t, t->page->blocks[gb].id,
                                               t->page->blocks[gb].desc->outputs[gp].name);
        st = g ? bf_tensor_copy(g, &an, err) : bf_err(err, BF_EINTERNAL, "internal", "no result");
    }
    const char *vid = t->page->blocks[v].id;
    if (st == BF_OK) st = bf_session_read_state(t, vid, &val, err);
    if (st == BF_OK && val->dtype != BF_DTYPE_F64)
        st = bf_err(err, BF_EINTERNAL, "internal", "the float64 re-run holds %s for \"%.60s\"",
                    bf_dtype_name(val->dtype), vid);
    if (st == BF_OK && an->numel != val->numel)
        st = bf_err(err, BF_ESHAPE, "shape_mismatch", "the gradient \"%.60s\" has %lld "
                    "elements but Variable \"%.60s\" has %lld", grad, (long long)an->numel, vid,
                    (long long)val->numel);
    if (st) {
        bf_tensor_free(an), bf_tensor_free(val);
        return st;
    }
    int64_t n = val->numel, n_check = n <= o->full_below ? n : BF_MIN(n, o->samples);
    double max_an = 0, worst = 0, worst_fd = 0, worst_an = 0;
    int64_t worst_i = -1;
    for (int64_t i = 0; i < n; i++) max_an = BF_MAX(max_an, fabs(bf_tensor_get_f64(an, i)));
    uint64_t rng = o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)v + 1;
    double *data = bf_tensor_data(val);
    for (int64_t c = 0; st == BF_OK && c < n_check; c++) {
        int64_t i = c;
        if (n_check < n) { /* splitmix64 picks */
            uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            i = (int64_t)((z ^ (z >> 31)) % (uint64_t)n);
        }
        if (atomic_load(&s->stop_steps)) {
            st = bf_err(err, BF_ECANCELED, "cancelled", "the gradient check was cancelled");
            break;
        }
        double x = data[i], h = o->eps * BF_MAX(1.0, fabs(x)), lp = 0, lm = 0;
        data[i] = x + h;
        st = bf_session_write_state(t, vid, val, err);
        if (st == BF_OK) st = loss_value(t, loss, &lp, err);
        data[i] = x - h;
        if (st == BF_OK) st = bf_session_write_state(t, vid, val, err);
        if (st == BF_OK) st = loss_value(t, loss, &lm, err);
        data[i] = x;
        double fd = (lp - lm) / (2 * h), a = bf_tensor_get_f64(an, i);
        double rel = fabs(fd - a) / BF_MAX(BF_MAX(fabs(fd), fabs(a)), BF_MAX(1e-4 * max_an, 1e-300));
        if (fd == a) rel = 0;
        if (worst_i < 0 || rel > worst) worst = rel, worst_i = i, worst_fd = fd, worst_an = a;
    }
    if (st == BF_OK) st = bf_session_write_state(t, vid, val, err); /* as it was */
    if (st == BF_OK) {
        int64_t idx[BF_MAX_RANK], rem = worst_i < 0 ? 0 : worst_i;
        const int64_t *dims = bf_tensor_dims(val);
        for (int a = val->rank - 1; a >= 0; a--) idx[a] = rem % dims[a], rem /= dims[a];
        cJSON *wi = cJSON_AddArrayToObject(rec, "worst_index");
        for (int a = 0; wi && a < val->rank; a++)
            cJSON_AddItemToArray(wi, cJSON_CreateNumber((double)idx[a]));
        cJSON_AddNumberToObject(rec, "n_elements", (double)n);
        cJSON_AddNumberToObject(rec, "n_checked", (double)n_check);
        cJSON_AddNumberToObject(rec, "max_rel_error", worst);
        cJSON_AddNumberToObject(rec, "fd", worst_fd);
        cJSON_AddNumberToObject(rec, "analytic", worst_an);
        cJSON_AddBoolToObject(rec, "pass", worst <= o->tolerance);
    }
    bf_tensor_free(an), bf_tensor_free(val);
    return st;
}

bf_status bf_session_check_gradients(bf_session *s, const char *loss,
                                     const bf_gradcheck_options *opts, char **json_out,
                                     bf_error *err) {
    if (!json_out) return bf_err(err, BF_EINVAL, "bad_argument", "json_out is NULL");
    *json_out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!loss) return bf_err(err, BF_EINVAL, "bad_argument", "loss is NULL");
    bf_error_clear(err);
    if (json_out) *json_out = NULL;
    if (!s || !loss || !json_out) return bf_err(err, BF_EINVAL, "bad_argument", "invalid argument");
    bf_gradcheck_options o;
    if (opts) o = *opts;
    else bf_gradcheck_options_init(&o);
    if (o.eps <= 0) o.eps = 1e-6;
    if (o.tolerance <= 0) o.tolerance = 1e-5;
    if (o.full_below <= 0) o.full_below = 64;
    if (o.samples <= 0) o.samples = 32;
    if (o.seed == 0) o.seed = 1;
    int L, Lp;
    if (!bf_page_resolve(s->page, loss, &L, &Lp))
        return bf_err(err, BF_ENOTFOUND, "not_found", "loss \"%.80s\" names no block output",
                      loss);
    int n_upd = 0;
    for (int i = 0; i < s->n; i++) n_upd += gradient_port(s->page->blocks[i].desc) >= 0;
    if (!n_upd)
        return bf_err(err, BF_EINVAL, "no_update", "the page has no update block with a "
                      "gradient input (ApplyGradientDescent, ApplyMomentum, ApplyAdam)");
    bf_session *t = NULL;
    atomic_store(&s->stop_steps, 0); /* bf_session_cancel(s) from here stops the check */
    bf_status st = make_f64(s, &t, err);
    cJSON *res = cJSON_CreateObject(), *vars = res ? cJSON_AddArrayToObject(res, "variables") : NULL;
    if (st == BF_OK && !vars) st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    double t0 = bf_now();
    bool pass = true;
    for (int i = 0; st == BF_OK && i < s->n; i++) {
        const bf_page_block *pb = &s->page->blocks[i];
        int k = gradient_port(pb->desc);
        if (k < 0 || !pb->inputs[k].text) continue;
        int v = -1;
        for (int q = 0; q < pb->desc->n_inputs && v < 0; q++)
            if (pb->desc->inputs[q].flags & BF_PORT_REF) v = pb->inputs[q].src_block;
        if (v < 0) continue;
        cJSON *rec = cJSON_CreateObject();
        if (!rec || !cJSON_AddItemToArray(vars, rec)) {
            cJSON_Delete(rec);
            st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
            break;
        }
        cJSON_AddStringToObject(rec, "variable", s->page->blocks[v].id);
        cJSON_AddStringToObject(rec, "gradient", pb->inputs[k].text);
        cJSON_AddStringToObject(rec, "update", pb->id);
        st = check_one(s, t, loss, v, pb->inputs[k].text, &o, rec, err);
        if (st) bf_sess_where(s, i, err);
        pass = pass && cJSON_IsTrue(cJSON_GetObjectItem(rec, "pass"));
        if (st == BF_OK && o.timeout_s > 0 && bf_now() - t0 > o.timeout_s)
            st = bf_err(err, BF_ETIMEDOUT, "timeout", "the gradient check took longer than "
                        "%g s", o.timeout_s);
    }
    bf_session_free(t);
    if (st == BF_OK && (!cJSON_AddStringToObject(res, "loss", loss) ||
                        !cJSON_AddBoolToObject(res, "pass", pass) ||
                        !cJSON_AddNumberToObject(res, "eps", o.eps) ||
                        !cJSON_AddNumberToObject(res, "tolerance", o.tolerance)))
        st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    if (st == BF_OK && !(*json_out = cJSON_PrintUnformatted(res)))
        st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    cJSON_Delete(res);
    return st;
}
