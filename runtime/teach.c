/*
 * teach.c - the teaching views of a session (issue #15): explain one output element as the
 * terms of its sum, check a gradient block against finite differences and the adjoint
 * identity, and add the gradient blocks of a forward block as tf.gradients builds them.
 *
 * The runtime stays ignorant of convolutions: the terms come from the block's optional
 * `explain` descriptor function (blocks/nn_ops/conv_explain.c, on the kernels' geometry), and
 * the gradient relations from the optional `grad` descriptor data (which forward type, which
 * of its inputs, which port holds the shape, which the output gradient). Gradient checks run
 * block kernels directly on float64 copies of the operands (run_cpu on standalone nodes that
 * share the page block's parsed attributes), outside the session's graph and caches.
 */
#include "session.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void bf_explain_options_init(bf_explain_options *o) {
    if (!o) return;
    memset(o, 0, sizeof(*o));
}

void bf_gradcheck_options_init(bf_gradcheck_options *o) {
    if (o) memset(o, 0, sizeof(*o));
}

/* ---- shared helpers ---------------------------------------------------------------------- */

static bf_status oom(bf_error *err) {
    return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}

/* Block index of `id`, or BF_ENOTFOUND in err. */
static int find_block(bf_session *s, const char *id, bf_error *err) {
    int b = id ? bf_page_find(s->page, id) : -1;
    if (b < 0) {
        bf_err(err, BF_ENOTFOUND, "not_found", "no block \"%s\" on the page", id ? id : "");
        if (err) bf_strlcpy(err->block_id, id ? id : "", sizeof(err->block_id));
    }
    return b;
}

/* How a teaching call runs the page: device, time limit, and whom to tell of each block. */
typedef struct run_how {
    bf_device_kind device;
    double timeout_s;
    bf_event_cb on_event;
    void *user;
} run_how;

/*
 * Run what block b and each of its inputs need, fetching b and every input's source so that
 * all of them are host tensors afterwards; in[k] then borrows input k (valid until the next
 * run or edit). Errors: a missing input (BF_ESCHEMA) and anything bf_session_run returns.
 */
static bf_status run_block(bf_session *s, int b, const run_how *how, const bf_tensor **in,
                           bf_error *err) {
    bf_page_block *pb = &s->page->blocks[b];
    const bf_block_desc *d = pb->desc;
    const char *fetches[1 + 8];
    int nf = 0;
    fetches[nf++] = pb->id;
    for (int k = 0; k < d->n_inputs && k < 8; k++) {
        if (!pb->inputs[k].text || pb->inputs[k].src_block < 0) {
            bf_err(err, BF_ESCHEMA, "missing_input", "input \"%s\" is not connected",
                   d->inputs[k].name);
            bf_err_at(err, d->inputs[k].name, NULL);
            bf_sess_where(s, b, err);
            return BF_ESCHEMA;
        }
        fetches[nf++] = pb->inputs[k].text;
    }
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = fetches, o.n_fetches = nf, o.device = how->device, o.timeout_s = how->timeout_s;
    o.on_event = how->on_event, o.user = how->user;
    bf_status st = bf_session_run(s, &o, NULL, err);
    if (st) return st;
    for (int k = 0; k < d->n_inputs; k++) {
        const bf_page_input *pi = &pb->inputs[k];
        const bf_page_block *src = &s->page->blocks[pi->src_block];
        in[k] = bf_session_output(s, src->id, src->desc->outputs[pi->src_port].name);
        if (!in[k])
            return bf_err(err, BF_EINTERNAL, "internal", "input \"%s\" has no host result",
                          d->inputs[k].name);
    }
    return BF_OK;
}

/* Port infos from host tensors (BF_PORT_HOST ports carry their value). */
static void infos_of(const bf_block_desc *d, const bf_tensor *const *in, bf_port_info *info) {
    for (int k = 0; k < d->n_inputs; k++) {
        bf_port_set(&info[k], in[k]->dtype, in[k]->rank, in[k]->dims);
        if (d->inputs[k].flags & BF_PORT_HOST) info[k].value = in[k];
    }
}

/* A JSON array of `rank` indices: flat offset f unravelled over dims. */
static cJSON *index_json(int rank, const int64_t *dims, int64_t f) {
    int64_t idx[BF_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
        idx[i] = dims[i] ? f % dims[i] : 0;
        f = dims[i] ? f / dims[i] : 0;
    }
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rank; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateNumber((double)idx[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* Serialise `root` (consumed) into *out. */
static bf_status emit(cJSON *root, char **out, bf_error *err) {
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return oom(err);
    *out = text; /* cJSON allocates through bf_malloc (hooks), so bf_string_free frees it */
    return BF_OK;
}

/* ---- explain ----------------------------------------------------------------------------- */

typedef struct explain_acc {
    const bf_tensor *a, *b;
    const char *a_name, *b_name;
    int64_t n, max;      /* terms seen; how many to list (-1: all) */
    int64_t n_pad;       /* padded taps seen (listed up to max as well) */
    double sum, abs_sum;
    cJSON *terms, *pads;
    bool oom;
} explain_acc;

static cJSON *operand_json(const char *name, const bf_tensor *t, int64_t f, double v) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "tensor", name) ||
        !bf_json_add(o, "index", index_json(t->rank, t->dims, f)) ||
        !cJSON_AddNumberToObject(o, "value", v)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void explain_term(int64_t af, int64_t bf, void *user) {
    explain_acc *acc = user;
    double va = bf_tensor_get_f64(acc->a, af), vb = bf_tensor_get_f64(acc->b, bf);
    acc->sum += va * vb, acc->abs_sum += fabs(va * vb);
    if (acc->max < 0 || acc->n < acc->max) {
        cJSON *t = cJSON_CreateObject();
        if (!t || !bf_json_add(t, "a", operand_json(acc->a_name, acc->a, af, va)) ||
            !bf_json_add(t, "b", operand_json(acc->b_name, acc->b, bf, vb)) ||
            !cJSON_AddItemToArray(acc->terms, t)) {
            if (t && !t->string) cJSON_Delete(t);
            acc->oom = true;
        }
    }
    acc->n++;
}

/* A padded tap: {"h", "w", "a": {"tensor", "index" (spatial entries outside), "value": 0},
 * "b": {"tensor", "index", "value"}}, listed while fewer than max are. */
static void explain_pad(const bf_explain_pad_tap *tap, void *user) {
    explain_acc *acc = user;
    if (acc->max < 0 || acc->n_pad < acc->max) {
        cJSON *t = cJSON_CreateObject(), *a = cJSON_CreateObject();
        cJSON *idx = cJSON_CreateArray();
        bool ok = t && a && idx;
        for (int i = 0; ok && i < acc->a->rank; i++)
            ok = cJSON_AddItemToArray(idx, cJSON_CreateNumber((double)tap->a_index[i]));
        ok = ok && cJSON_AddStringToObject(a, "tensor", acc->a_name) &&
             cJSON_AddItemToObject(a, "index", idx) && (idx = NULL, true) &&
             cJSON_AddNumberToObject(a, "value", 0) &&
             cJSON_AddNumberToObject(t, "h", (double)tap->h) &&
             cJSON_AddNumberToObject(t, "w", (double)tap->w) &&
             cJSON_AddItemToObject(t, "a", a) && (a = NULL, true) &&
             bf_json_add(t, "b", operand_json(acc->b_name, acc->b, tap->b_flat,
                                              bf_tensor_get_f64(acc->b, tap->b_flat))) &&
             cJSON_AddItemToArray(acc->pads, t) && (t = NULL, true);
        cJSON_Delete(idx), cJSON_Delete(a), cJSON_Delete(t);
        if (!ok) acc->oom = true;
    }
    acc->n_pad++;
}

bf_status bf_session_explain(bf_session *s, const char *block_id, const int64_t *index,
                             int rank, const bf_explain_options *opts, char **json_out,
                             bf_error *err) {
    if (!json_out) return bf_err(err, BF_EINVAL, "bad_argument", "json_out is NULL");
    *json_out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (rank > 0 && !index) return bf_err(err, BF_EINVAL, "bad_argument", "index is NULL");
    bf_error_clear(err);
    if (json_out) *json_out = NULL;
    if (!s || !json_out || (rank > 0 && !index))
        return bf_err(err, BF_EINVAL, "bad_argument", "invalid argument");
    bf_explain_options dflt;
    if (!opts) bf_explain_options_init(&dflt), opts = &dflt;
    int b = find_block(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    const bf_block_desc *d = s->page->blocks[b].desc;
    int port = 0;
    if (opts->port) {
        while (port < d->n_outputs && strcmp(d->outputs[port].name, opts->port)) port++;
        if (port == d->n_outputs) {
            bf_err(err, BF_ENOTFOUND, "not_found", "block has no output \"%s\"", opts->port);
            bf_sess_where(s, b, err);
            return BF_ENOTFOUND;
        }
    }
    if (!d->explain || d->n_inputs > 8) {
        bf_err(err, BF_EUNSUPPORTED, "unsupported", "%s blocks have no teaching view", d->type);
        bf_sess_where(s, b, err);
        return BF_EUNSUPPORTED;
    }
    const bf_tensor *in[8];
    const run_how how = {opts->device, opts->timeout_s, opts->on_event, opts->user};
    bf_status st = run_block(s, b, &how, in, err);
    if (st) return st;
    const bf_tensor *out = bf_session_output(s, block_id, d->outputs[port].name);
    if (!out) return bf_err(err, BF_EINTERNAL, "internal", "the block has no host result");
    if (rank != out->rank) {
        char buf[96];
        bf_err(err, BF_EINVAL, "bad_index", "the index has %d entries; output \"%s\" has shape %s",
               rank, d->outputs[port].name, bf_shape_str(out->rank, out->dims, buf, sizeof(buf)));
        bf_sess_where(s, b, err);
        return BF_EINVAL;
    }
    int64_t flat = 0;
    for (int i = 0; i < rank; i++) {
        if (index[i] < 0 || index[i] >= out->dims[i]) {
            bf_err(err, BF_EINVAL, "bad_index",
                   "index %" PRId64 " of axis %d is outside [0, %" PRId64 ")", index[i], i,
                   out->dims[i]);
            bf_sess_where(s, b, err);
            return BF_EINVAL;
        }
        flat = flat * out->dims[i] + index[i];
    }

    bf_port_info info[8];
    infos_of(d, in, info);
    bf_explain_geom geom;
    explain_acc acc = {.max = opts->max_terms ? opts->max_terms : 10000};
    acc.terms = cJSON_CreateArray(), acc.pads = cJSON_CreateArray();
    if (!acc.terms || !acc.pads) {
        cJSON_Delete(acc.terms), cJSON_Delete(acc.pads);
        return oom(err);
    }
    /* First the geometry alone (no callbacks: which inputs are the operands), then the terms
     * and the padded taps. */
    bf_node *node = &s->nodes[b].node;
    st = d->explain(node, info, port, flat, NULL, NULL, NULL, &geom, err);
    if (st) {
        cJSON_Delete(acc.terms), cJSON_Delete(acc.pads);
        bf_sess_where(s, b, err);
        return st;
    }
    acc.a = in[geom.a_input], acc.b = in[geom.b_input];
    acc.a_name = d->inputs[geom.a_input].name, acc.b_name = d->inputs[geom.b_input].name;
    st = d->explain(node, info, port, flat, explain_term, explain_pad, &acc, &geom, err);
    if (st || acc.oom) {
        cJSON_Delete(acc.terms), cJSON_Delete(acc.pads);
        if (st) bf_sess_where(s, b, err);
        return st ? st : oom(err);
    }
    BF_ASSERT(acc.n_pad == geom.n_padded);

    double value = bf_tensor_get_f64(out, flat);
    cJSON *root = cJSON_CreateObject(), *pad = cJSON_CreateObject(), *odd = cJSON_CreateArray();
    cJSON *ops = cJSON_CreateObject();
    bool ok = root && pad && odd && ops;
    ok = ok && cJSON_AddStringToObject(root, "block", block_id);
    ok = ok && cJSON_AddStringToObject(root, "type", d->type);
    ok = ok && cJSON_AddStringToObject(root, "port", d->outputs[port].name);
    ok = ok && cJSON_AddStringToObject(root, "dtype", bf_dtype_name(out->dtype));
    ok = ok && bf_json_add(root, "index", index_json(rank, out->dims, flat));
    ok = ok && cJSON_AddNumberToObject(root, "value", value);
    if (ok) {
        cJSON_AddStringToObject(pad, "mode", geom.padding ? geom.padding : "none");
        cJSON_AddNumberToObject(pad, "top", (double)geom.pad_before[0]);
        cJSON_AddNumberToObject(pad, "bottom", (double)geom.pad_after[0]);
        cJSON_AddNumberToObject(pad, "left", (double)geom.pad_before[1]);
        cJSON_AddNumberToObject(pad, "right", (double)geom.pad_after[1]);
        if (geom.odd_after[0]) cJSON_AddItemToArray(odd, cJSON_CreateString("bottom"));
        if (geom.odd_after[1]) cJSON_AddItemToArray(odd, cJSON_CreateString("right"));
        ok = cJSON_AddItemToObject(pad, "odd", odd) && (odd = NULL, true);
        ok = ok && cJSON_AddItemToObject(root, "padding", pad) && (pad = NULL, true);
        ok = ok && cJSON_AddStringToObject(ops, "a", acc.a_name) &&
             cJSON_AddStringToObject(ops, "b", acc.b_name);
        ok = ok && cJSON_AddItemToObject(root, "operands", ops) && (ops = NULL, true);
        ok = ok && cJSON_AddItemToObject(root, "terms", acc.terms) && (acc.terms = NULL, true);
        ok = ok && cJSON_AddNumberToObject(root, "n_terms", (double)acc.n);
        ok = ok && cJSON_AddNumberToObject(root, "n_padded", (double)geom.n_padded);
        ok = ok && cJSON_AddItemToObject(root, "padded_taps", acc.pads) && (acc.pads = NULL, true);
        ok = ok && cJSON_AddBoolToObject(root, "truncated", acc.max >= 0 && acc.n > acc.max);
        ok = ok && cJSON_AddBoolToObject(root, "padded_truncated",
                                         acc.max >= 0 && acc.n_pad > acc.max);
        ok = ok && cJSON_AddNumberToObject(root, "sum", acc.sum);
        ok = ok && cJSON_AddNumberToObject(root, "abs_sum", acc.abs_sum);
        ok = ok && cJSON_AddNumberToObject(root, "max_abs_diff", fabs(acc.sum - value));
    }
    cJSON_Delete(pad), cJSON_Delete(odd), cJSON_Delete(ops), cJSON_Delete(acc.terms);
    cJSON_Delete(acc.pads);
    if (!ok) {
        cJSON_Delete(root);
        return oom(err);
    }
    return emit(root, json_out, err);
}

/* ---- running block kernels on float64 copies (gradient checks) ---------------------------- */

/* splitmix64, for seeded samples and random operands. */
static uint64_t mix(uint64_t *st) {
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform(uint64_t *st) { return (double)(mix(st) >> 11) * 0x1.0p-53 * 2.0 - 1.0; }

static void free_all(bf_tensor **t, int n) {
    for (int i = 0; i < n; i++) bf_tensor_free(t[i]), t[i] = NULL;
}

/* A float64 copy of t (host). */
static bf_status to_f64(const bf_tensor *t, bf_tensor **out, bf_error *err) {
    *out = NULL;
    bf_status st = bf_tensor_alloc(NULL, 0, BF_DTYPE_F64, t->rank, t->dims, false, out, err);
    if (!st && (st = bf_tensor_convert(t, *out, err))) bf_tensor_free(*out), *out = NULL;
    return st;
}

/* A float64 tensor of dims filled with seeded values in [-1, 1). */
static bf_status random_f64(int rank, const int64_t *dims, uint64_t *rng, bf_tensor **out,
                            bf_error *err) {
    bf_status st = bf_tensor_alloc(NULL, 0, BF_DTYPE_F64, rank, dims, false, out, err);
    if (st) return st;
    double *v = (*out)->data;
    for (int64_t i = 0; i < (*out)->numel; i++) v[i] = uniform(rng);
    return BF_OK;
}

/*
 * Run one single-output block kernel on host tensors: infer, allocate *out when it is NULL
 * (else reuse it: it must have the inferred shape), plan the workspace, run_cpu.
 */
static bf_status node_run(const bf_node *node, const bf_tensor *const *in, const bf_exec *ex,
                          bf_tensor **out, bf_error *err) {
    const bf_block_desc *d = node->desc;
    bf_port_info info[8], oinfo[1];
    infos_of(d, in, info);
    bf_status st = d->infer(node, info, oinfo, err);
    if (st) return st;
    if (!*out && (st = bf_tensor_alloc(NULL, node->max_elements, oinfo[0].dtype, oinfo[0].rank,
                                       oinfo[0].dims, true, out, err)))
        return st;
    bf_exec kex = *ex;
    size_t ws = d->workspace_cpu ? d->workspace_cpu(node, info, oinfo, ex) : 0;
    void *buf = NULL;
    if (ws) {
        if (ws == SIZE_MAX || !(buf = bf_aligned_alloc(ws, false))) return oom(err);
        kex.workspace = buf, kex.workspace_size = ws;
    }
    bf_tensor *outs[1] = {*out};
    st = d->run_cpu(node, in, outs, &kex, err);
    bf_aligned_free(buf);
    if (!st && bf_exec_cancelled(ex)) {
        /* the session's flag: 1 is bf_session_cancel(); otherwise the deadline passed */
        if (ex->cancel && atomic_load(ex->cancel) == 1)
            st = bf_err(err, BF_ECANCELED, "cancelled", "the gradient check was cancelled");
        else
            st = bf_err(err, BF_ETIMEDOUT, "timeout",
                        "the gradient check exceeded its time limit");
    }
    return st;
}

static double dot(const bf_tensor *a, const bf_tensor *b) {
    const double *x = a->data, *y = b->data;
    double s = 0;
    for (int64_t i = 0; i < a->numel; i++) s += x[i] * y[i];
    return s;
}

static int port_index(const bf_block_desc *d, const char *name) {
    for (int k = 0; k < d->n_inputs; k++)
        if (!strcmp(d->inputs[k].name, name)) return k;
    return -1;
}

/* The two descriptors take the same attributes, in the same order. */
static bool same_attrs(const bf_block_desc *a, const bf_block_desc *b) {
    if (a->n_attrs != b->n_attrs) return false;
    for (int i = 0; i < a->n_attrs; i++)
        if (strcmp(a->attrs[i].name, b->attrs[i].name) || a->attrs[i].kind != b->attrs[i].kind)
            return false;
    return true;
}

/* The gradient block types of forward type F, up to max; returns how many. */
static int gradients_of(const bf_block_desc *f, const bf_block_desc **g, int max) {
    int n = 0;
    for (int i = 0; i < bf_registry_count() && n < max; i++) {
        const bf_block_desc *d = bf_registry_at(i);
        if (d->grad && !strcmp(d->grad->forward, f->type) && d->n_outputs == 1 && !d->init &&
            same_attrs(d, f))
            g[n++] = d;
    }
    return n;
}

/*
 * A forward block of type f on the page reading the same sources as gradient block b on
 * every port they share (input, filter), or -1.
 */
static int forward_on_page(bf_session *s, int b, const bf_block_desc *f) {
    const bf_page_block *gb = &s->page->blocks[b];
    const bf_grad_desc *gd = gb->desc->grad;
    for (int i = 0; i < s->page->n_blocks; i++) {
        const bf_page_block *fb = &s->page->blocks[i];
        if (fb->desc != f) continue;
        bool match = true;
        for (int k = 0; k < gb->desc->n_inputs && match; k++) {
            const char *q = gb->desc->inputs[k].name;
            if (!strcmp(q, gd->shape_port) || !strcmp(q, gd->dy_port)) continue;
            int fk = port_index(f, q);
            match = fk >= 0 && fb->inputs[fk].src_block >= 0 &&
                    fb->inputs[fk].src_block == gb->inputs[k].src_block &&
                    fb->inputs[fk].src_port == gb->inputs[k].src_port;
        }
        if (match) return i;
    }
    return -1;
}

/* Tolerance of a block's own output against its float64 recomputation, per dtype. */
static double dtype_tolerance(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12;
    case BF_DTYPE_F32: return 1e-5;
    case BF_DTYPE_F16: return 4e-3;
    default: return 3e-2;
    }
}

typedef struct fd_result {
    int64_t n_checked, worst;
    double max_rel, fd, an;
} fd_result;

/*
 * Central differences of L(v) = sum(forward(X) * dy) over the elements of X[wi] (float64,
 * changed in place and restored), against the analytical gradient an.
 */
static bf_status finite_differences(const bf_node *fnode, bf_tensor **X, int wi,
                                    const bf_tensor *dy, const bf_tensor *an,
                                    const bf_gradcheck_options *o, const bf_exec *ex,
                                    fd_result *r, bf_error *err) {
    double *v = X[wi]->data;
    const double *g = an->data;
    const int64_t n = X[wi]->numel;
    double gmax = 0;
    for (int64_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
    const double floor_ = fmax(1e-8 * gmax, 1e-300);
    uint64_t rng = o->seed ^ 0x5eedull;
    const bool all = n <= o->full_below;
    const int64_t count = all ? n : o->samples;
    bf_tensor *y = NULL;
    memset(r, 0, sizeof(*r));
    r->worst = -1;
    bf_status st = BF_OK;
    for (int64_t k = 0; k < count && !st; k++) {
        int64_t i = all ? k : (int64_t)(mix(&rng) % (uint64_t)n);
        const double vi = v[i], h = o->eps * fmax(1.0, fabs(vi));
        double L[2];
        for (int side = 0; side < 2 && !st; side++) {
            v[i] = side ? vi - h : vi + h;
            st = node_run(fnode, (const bf_tensor *const *)X, ex, &y, err);
            if (!st) L[side] = dot(y, dy);
        }
        v[i] = vi;
        if (st) break;
        double fd = (L[0] - L[1]) / (2 * h);
        double rel = fabs(fd - g[i]) / fmax(fmax(fabs(fd), fabs(g[i])), floor_);
        if (r->worst < 0 || rel > r->max_rel) r->max_rel = rel, r->worst = i, r->fd = fd, r->an = g[i];
        r->n_checked++;
    }
    bf_tensor_free(y);
    return st;
}

/* {"available": ..., ...}: the block on the CPU and on the GPU, side by side. */
static cJSON *gpu_compare(bf_session *s, int b, const run_how *how) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (!bf_context_has_gpu(s->ctx)) {
        cJSON_AddBoolToObject(o, "available", 0);
        cJSON_AddStringToObject(o, "reason", bf_context_devices(s->ctx));
        return o;
    }
    bf_page_block *pb = &s->page->blocks[b];
    char id[256], dev[16];
    bf_strlcpy(id, pb->id, sizeof(id));
    if (pb->device == BF_DEVICE_CPU) snprintf(dev, sizeof(dev), "cpu");
    else if (pb->device == BF_DEVICE_GPU && pb->gpu_ordinal) snprintf(dev, sizeof(dev), "gpu:%d", pb->gpu_ordinal);
    else if (pb->device == BF_DEVICE_GPU) snprintf(dev, sizeof(dev), "gpu");
    else snprintf(dev, sizeof(dev), "auto");
    bf_tensor *res[2] = {NULL, NULL};
    char where[2][16] = {"", ""}, note[96] = "";
    bf_error e = {0};
    bf_status st = BF_OK;
    const char *devs[2] = {"cpu", "gpu"};
    for (int k = 0; k < 2 && !st; k++) {
        const bf_tensor *in[8];
        if (!(st = bf_session_set_device(s, id, devs[k], &e)) &&
            !(st = run_block(s, b, how, in, &e))) {
            const bf_tensor *t = bf_session_output(s, id, NULL);
            st = t ? to_f64(t, &res[k], &e) : BF_EINTERNAL;
            bf_strlcpy(where[k], s->nodes[b].stats.device, sizeof(where[k]));
            if (k) bf_strlcpy(note, s->nodes[b].stats.note, sizeof(note));
        }
    }
    bf_session_set_device(s, id, dev, NULL);
    cJSON_AddBoolToObject(o, "available", 1);
    if (st) {
        char line[512];
        bf_error_format(&e, line, sizeof(line));
        cJSON_AddStringToObject(o, "error", line);
    } else {
        const double *c = res[0]->data, *g = res[1]->data;
        double mabs = 0, cmax = 0;
        for (int64_t i = 0; i < res[0]->numel; i++)
            mabs = fmax(mabs, fabs(c[i] - g[i])), cmax = fmax(cmax, fabs(c[i]));
        cJSON_AddStringToObject(o, "cpu_device", where[0]);
        cJSON_AddStringToObject(o, "gpu_device", where[1]);
        cJSON_AddStringToObject(o, "gpu_note", note);
        cJSON_AddNumberToObject(o, "max_abs_diff", mabs);
        cJSON_AddNumberToObject(o, "max_rel_diff", cmax > 0 ? mabs / cmax : 0);
    }
    free_all(res, 2);
    return o;
}

bf_status bf_session_gradcheck(bf_session *s, const char *block_id,
                               const bf_gradcheck_options *opts, char **json_out,
                               bf_error *err) {
    if (!json_out) return bf_err(err, BF_EINVAL, "bad_argument", "json_out is NULL");
    *json_out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_error_clear(err);
    if (json_out) *json_out = NULL;
    if (!s || !json_out) return bf_err(err, BF_EINVAL, "bad_argument", "invalid argument");
    bf_gradcheck_options o;
    if (opts) o = *opts;
    else bf_gradcheck_options_init(&o);
    if (o.eps <= 0) o.eps = 1e-2;
    if (o.tolerance <= 0) o.tolerance = 1e-6;
    if (o.full_below <= 0) o.full_below = 4096;
    if (o.samples <= 0) o.samples = 256;
    if (!o.seed) o.seed = 1;
    int b = find_block(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    bf_page_block *pb = &s->page->blocks[b];
    const bf_block_desc *d = pb->desc;
    const bf_block_desc *own = d->grad ? d : NULL;
    const bf_block_desc *f = own ? bf_registry_find(own->grad->forward) : d;
    const bf_block_desc *gs[8];
    int ng = f && f->n_outputs == 1 && !f->init && f->n_inputs <= 8 ? gradients_of(f, gs, 8) : 0;
    if (!ng || (own && !same_attrs(own, f))) {
        bf_err(err, BF_EUNSUPPORTED, "unsupported",
               "%s is neither a gradient block nor a forward block with gradient blocks",
               d->type);
        bf_sess_where(s, b, err);
        return BF_EUNSUPPORTED;
    }
    /* timeout_s bounds the whole check: the run of the block, the float64 kernels and the
     * finite differences, and the GPU comparison */
    const double deadline = o.timeout_s > 0 ? bf_now() + o.timeout_s : 0;
    const bf_tensor *in[8];
    const run_how how = {BF_DEVICE_AUTO, o.timeout_s, o.on_event, o.user};
    bf_status st = run_block(s, b, &how, in, err);
    if (st) return st;
    const bf_tensor *out = bf_session_output(s, block_id, NULL);
    if (!out) return bf_err(err, BF_EINTERNAL, "internal", "the block has no host result");

    /* bf_session_cancel() reaches the float64 work through the session's flag, which the run
     * above left at 0 (it succeeded); a cancel from now on stops the next kernel task */
    bf_exec ex = {.pool = s->ctx->pool, .n_threads = bf_pool_threads(s->ctx->pool),
                  .cancel = &s->cancel, .deadline = deadline};
    uint64_t rng = o.seed;
    const uint64_t max_el = s->ctx->cfg.max_tensor_elements;

    /* The forward op: the page's forward block on the same operands, else this block's attrs. */
    int fb = own ? forward_on_page(s, b, f) : b;
    const bf_attr_value *fattrs = fb >= 0 ? s->page->blocks[fb].attrs : pb->attrs;
    bf_node fnode = {.id = fb >= 0 ? s->page->blocks[fb].id : pb->id, .desc = f,
                     .attrs = fattrs, .max_elements = max_el};

    /* float64 operands: X[i] for the forward inputs, DY for its output. */
    bf_tensor *X[8] = {0}, *AX[8] = {0}, *DY = NULL, *ADY = NULL, *Y = NULL, *AY = NULL;
    bf_tensor *AN[8] = {0}, *SZ = NULL, *OWN64 = NULL;
    cJSON *root = NULL, *checks = NULL, *adj = NULL;
    for (int i = 0; i < f->n_inputs && !st; i++) {
        const char *p = f->inputs[i].name;
        if (own && !strcmp(p, own->grad->wrt)) {
            st = random_f64(out->rank, out->dims, &rng, &X[i], err);
        } else {
            int k = own ? port_index(d, p) : i;
            st = k < 0 ? bf_err(err, BF_EUNSUPPORTED, "unsupported", "no input \"%s\"", p)
                       : to_f64(in[k], &X[i], err);
        }
    }
    if (!st) {
        const bf_tensor *dyt = own ? in[port_index(d, own->grad->dy_port)] : out;
        st = own ? to_f64(dyt, &DY, err) : random_f64(dyt->rank, dyt->dims, &rng, &DY, err);
    }
    if (!st) st = node_run(&fnode, (const bf_tensor *const *)X, &ex, &Y, err);
    if (!st && !bf_tensor_same_shape(Y, DY)) {
        char a[96], c[96];
        st = bf_err(err, BF_ESHAPE, "shape_mismatch",
                    "the forward op gives %s but out_backprop is %s",
                    bf_shape_str(Y->rank, Y->dims, a, sizeof(a)),
                    bf_shape_str(DY->rank, DY->dims, c, sizeof(c)));
    }
    /* sum over all terms of |x * w * dy|: the scale of the adjoint identity */
    for (int i = 0; i < f->n_inputs && !st; i++) {
        if (!(st = bf_tensor_copy(X[i], &AX[i], err)))
            for (int64_t j = 0; j < AX[i]->numel; j++)
                ((double *)AX[i]->data)[j] = fabs(((double *)AX[i]->data)[j]);
    }
    if (!st && !(st = bf_tensor_copy(DY, &ADY, err)))
        for (int64_t j = 0; j < ADY->numel; j++)
            ((double *)ADY->data)[j] = fabs(((double *)ADY->data)[j]);
    if (!st) st = node_run(&fnode, (const bf_tensor *const *)AX, &ex, &AY, err);
    if (st) goto done;

    const double L0 = dot(Y, DY), Labs = dot(AY, ADY);
    root = cJSON_CreateObject(), checks = cJSON_CreateArray(), adj = cJSON_CreateObject();
    if (!root || !checks || !adj) {
        st = oom(err);
        goto done;
    }
    cJSON_AddStringToObject(root, "block", pb->id);
    cJSON_AddStringToObject(root, "type", d->type);
    if (own && fb >= 0) cJSON_AddStringToObject(root, "forward", s->page->blocks[fb].id);
    else cJSON_AddNullToObject(root, "forward");
    cJSON_AddNumberToObject(root, "eps", o.eps);
    cJSON_AddNumberToObject(root, "tolerance", o.tolerance);
    cJSON_AddNumberToObject(adj, "forward", L0);
    bool pass = true;
    double adj_err = 0;
    for (int k = 0; k < ng && !st; k++) {
        const bf_block_desc *g = gs[k];
        const int wi = port_index(f, g->grad->wrt);
        if (wi < 0) continue;
        bf_node gnode = {.id = pb->id, .desc = g, .max_elements = max_el,
                         .attrs = g == own ? pb->attrs : fattrs};
        const bf_tensor *gin[8];
        int64_t sz[BF_MAX_RANK];
        for (int r = 0; r < X[wi]->rank; r++) sz[r] = X[wi]->dims[r];
        bf_tensor_free(SZ), SZ = NULL;
        int64_t szn = X[wi]->rank;
        if ((st = bf_tensor_alloc(NULL, 0, BF_DTYPE_I32, 1, &szn, false, &SZ, err))) break;
        for (int r = 0; r < X[wi]->rank; r++) ((int32_t *)SZ->data)[r] = (int32_t)sz[r];
        for (int q = 0; q < g->n_inputs; q++) {
            const char *name = g->inputs[q].name;
            gin[q] = !strcmp(name, g->grad->shape_port) ? SZ
                     : !strcmp(name, g->grad->dy_port)  ? DY
                     : port_index(f, name) >= 0         ? X[port_index(f, name)]
                                                        : NULL;
            if (!gin[q]) st = bf_err(err, BF_EUNSUPPORTED, "unsupported", "no input \"%s\"", name);
        }
        if (st || (st = node_run(&gnode, gin, &ex, &AN[k], err))) break;
        if (!bf_tensor_same_shape(AN[k], X[wi])) {
            st = bf_err(err, BF_ESHAPE, "shape_mismatch", "the %s gradient's shape differs "
                        "from the operand's", g->grad->wrt);
            break;
        }
        const double ip = dot(X[wi], AN[k]);
        cJSON_AddNumberToObject(adj, g->grad->wrt, ip);
        adj_err = fmax(adj_err, fabs(ip - L0) / fmax(Labs, 1e-300));
        if (own && g != own) continue;

        fd_result r;
        if ((st = finite_differences(&fnode, X, wi, DY, AN[k], &o, &ex, &r, err))) break;
        const bool ok = r.max_rel <= o.tolerance;
        pass = pass && ok;
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(checks, c)) {
            cJSON_Delete(c);
            st = oom(err);
            break;
        }
        cJSON_AddStringToObject(c, "wrt", g->grad->wrt);
        cJSON_AddStringToObject(c, "gradient_type", g->type);
        cJSON_AddNumberToObject(c, "n_elements", (double)X[wi]->numel);
        cJSON_AddNumberToObject(c, "n_checked", (double)r.n_checked);
        cJSON_AddBoolToObject(c, "sampled", X[wi]->numel > o.full_below);
        cJSON_AddNumberToObject(c, "max_rel_error", r.max_rel);
        if (r.worst >= 0) bf_json_add(c, "worst_index", index_json(X[wi]->rank, X[wi]->dims, r.worst));
        cJSON_AddNumberToObject(c, "fd", r.fd);
        cJSON_AddNumberToObject(c, "analytic", r.an);
        cJSON_AddBoolToObject(c, "pass", ok);

        if (g == own && !(st = to_f64(out, &OWN64, err))) {
            /* the block's own output (its dtype, its device) against the float64 kernel */
            const double *u = OWN64->data, *a = AN[k]->data;
            double diff = 0, amax = 0;
            for (int64_t i = 0; i < OWN64->numel; i++)
                diff = fmax(diff, fabs(u[i] - a[i])), amax = fmax(amax, fabs(a[i]));
            const double rel = amax > 0 ? diff / amax : diff, tol = dtype_tolerance(out->dtype);
            cJSON *v = cJSON_AddObjectToObject(root, "output_vs_f64");
            if (v) {
                cJSON_AddStringToObject(v, "dtype", bf_dtype_name(out->dtype));
                cJSON_AddNumberToObject(v, "max_rel_diff", rel);
                cJSON_AddNumberToObject(v, "tolerance", tol);
                cJSON_AddBoolToObject(v, "pass", rel <= tol);
            }
            pass = pass && rel <= tol;
        }
    }
    if (st) goto done;
    const bool adj_ok = adj_err <= o.tolerance;
    pass = pass && adj_ok;
    cJSON_AddNumberToObject(adj, "abs_sum", Labs);
    cJSON_AddNumberToObject(adj, "max_rel_error", adj_err);
    cJSON_AddBoolToObject(adj, "pass", adj_ok);
    cJSON_AddBoolToObject(root, "pass", pass);
    cJSON_AddItemToObject(root, "checks", checks), checks = NULL;
    cJSON_AddItemToObject(root, "adjoint", adj), adj = NULL;
    if (o.compare_gpu) {
        /* what is left of the time limit (a tiny positive value when it has run out) */
        const run_how left = {BF_DEVICE_AUTO, deadline > 0 ? fmax(deadline - bf_now(), 1e-3) : 0,
                              o.on_event, o.user};
        cJSON *gj = gpu_compare(s, b, &left);
        if (gj) cJSON_AddItemToObject(root, "gpu", gj);
        if (atomic_load(&s->cancel) == 1) /* the comparison records errors; not this one */
            st = bf_err(err, BF_ECANCELED, "cancelled", "the gradient check was cancelled");
    }
done:
    free_all(X, 8), free_all(AX, 8), free_all(AN, 8);
    bf_tensor_free(DY), bf_tensor_free(ADY), bf_tensor_free(Y), bf_tensor_free(AY);
    bf_tensor_free(SZ), bf_tensor_free(OWN64);
    cJSON_Delete(checks), cJSON_Delete(adj);
    if (st) {
        cJSON_Delete(root);
        if (!err || !err->block_id[0]) bf_sess_where(s, b, err);
        return st;
    }
    return emit(root, json_out, err);
}

/* ---- gradient blocks from a forward block --------------------------------------------------- */

/* `base`, or base_2, base_3, ... : an id free on the page and not in taken[0..nt). */
static void fresh_id(const bf_session *s, const char *base, char taken[][128], int nt, char *out,
                     size_t size) {
    for (int k = 1;; k++) {
        if (k == 1) snprintf(out, size, "%s", base);
        else snprintf(out, size, "%s_%d", base, k);
        bool used = bf_page_find(s->page, out) >= 0;
        for (int i = 0; i < nt && !used; i++) used = !strcmp(taken[i], out);
        if (!used) return;
    }
}





bf_status bf_session_add_gradients(bf_session *s, const char *forward_block_id,
                                   const char *dy_source, char **created_json, bf_error *err) {
    if (!created_json) return bf_err(err, BF_EINVAL, "bad_argument", "created_json is NULL");
    *created_json = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    bf_error_clear(err);
    if (created_json) *created_json = NULL;
    if (!s || !created_json) return bf_err(err, BF_EINVAL, "bad_argument", "invalid argument");
    int b = find_block(s, forward_block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    const bf_page_block *pb = &s->page->blocks[b];
    const bf_block_desc *f = pb->desc;
    const bf_block_desc *gs[8];
    int ng = gradients_of(f, gs, 8);
    if (!ng) {
        bf_err(err, BF_EUNSUPPORTED, "unsupported", "%s has no gradient blocks", f->type);
        bf_sess_where(s, b, err);
        return BF_EUNSUPPORTED;
    }
    if (dy_source) {
        int sb, sp;
        if (!bf_page_resolve(s->page, dy_source, &sb, &sp)) {
            bf_err(err, BF_ENOTFOUND, "not_found", "out_backprop source \"%s\" names no output "
                   "on the page", dy_source);
            return BF_ENOTFOUND;
        }
    }
    /* where the forward block sits */
    double x = 0, y = 0;
    const cJSON *ux = pb->ui ? cJSON_GetObjectItemCaseSensitive(pb->ui, "x") : NULL;
    const cJSON *uy = pb->ui ? cJSON_GetObjectItemCaseSensitive(pb->ui, "y") : NULL;
    if (cJSON_IsNumber(ux)) x = ux->valuedouble;
    if (cJSON_IsNumber(uy)) y = uy->valuedouble;

    char ids[1 + 2 * 8][128], base[96];
    int nid = 0;
    bf_status st = BF_OK;
    cJSON *edits = cJSON_CreateArray(), *res = cJSON_CreateObject(), *grads = NULL, *list = NULL;
    bool ok = edits && res;
    const char *fid = pb->id;
    char dy[256];
    if (ok && dy_source) {
        bf_strlcpy(dy, dy_source, sizeof(dy));
        ok = cJSON_AddStringToObject(res, "dy", dy) != NULL;
    } else if (ok) {
        /* a Placeholder of the forward output's dtype and shape */
        bf_port_shape ps;
        bf_session_port_shape(s, fid, NULL, 1, &ps, NULL);
        snprintf(base, sizeof(base), "%.60s_dy", fid);
        fresh_id(s, base, ids, nid, ids[nid], sizeof(ids[0]));
        bf_strlcpy(dy, ids[nid++], sizeof(dy));
        cJSON *e = bf_sess_add_edit(edits, "add_block"), *at = cJSON_CreateObject();
        ok = e && at && cJSON_AddStringToObject(e, "id", dy) &&
             cJSON_AddStringToObject(e, "type", "Placeholder") &&
             cJSON_AddStringToObject(at, "dtype", bf_dtype_name(ps.dtype != BF_DTYPE_INVALID
                                                                    ? ps.dtype
                                                                    : BF_DTYPE_F32));
        if (ok && ps.rank >= 0) {
            cJSON *shape = cJSON_AddArrayToObject(at, "shape");
            for (int i = 0; shape && i < ps.rank; i++)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)ps.dims[i]));
            ok = shape != NULL;
        }
        ok = ok && cJSON_AddItemToObject(e, "attrs", at) && (at = NULL, true);
        ok = ok && bf_json_add(e, "ui", bf_sess_ui_at(x + 260, y));
        cJSON_Delete(at);
        ok = ok && cJSON_AddStringToObject(res, "dy", dy);
    }
    ok = ok && (grads = cJSON_AddObjectToObject(res, "gradients"));
    for (int k = 0; ok && k < ng; k++) {
        const bf_block_desc *g = gs[k];
        /* the shape of the differentiated input, known at check time */
        bf_port_shape ps;
        bf_session_port_shape(s, fid, g->grad->wrt, 0, &ps, NULL);
        bool known = ps.rank >= 0;
        for (int i = 0; known && i < ps.rank; i++) known = ps.dims[i] >= 0;
        if (!known) {
            st = bf_err(err, BF_ESHAPE, "shape_unknown", "the shape of input \"%s\" is not "
                        "known before running, so no %s constant can be made",
                        g->grad->wrt, g->grad->shape_port);
            bf_err_at(err, g->grad->wrt, NULL);
            bf_sess_where(s, b, err);
            break;
        }
        char cid[128], gid[128];
        snprintf(base, sizeof(base), "%.60s_%.20s", fid, g->grad->shape_port);
        fresh_id(s, base, ids, nid, cid, sizeof(cid));
        bf_strlcpy(ids[nid++], cid, sizeof(ids[0]));
        snprintf(base, sizeof(base), "%.60s_grad_%.20s", fid, g->grad->wrt);
        fresh_id(s, base, ids, nid, gid, sizeof(gid));
        bf_strlcpy(ids[nid++], gid, sizeof(ids[0]));
        double row = y + 140.0 * (k + 1);
        cJSON *e = bf_sess_add_edit(edits, "add_block"), *at = cJSON_CreateObject();
        cJSON *val = at ? cJSON_AddArrayToObject(at, "value") : NULL;
        for (int i = 0; val && i < ps.rank; i++)
            cJSON_AddItemToArray(val, cJSON_CreateNumber((double)ps.dims[i]));
        cJSON *shp = at ? cJSON_AddArrayToObject(at, "shape") : NULL;
        if (shp) cJSON_AddItemToArray(shp, cJSON_CreateNumber(ps.rank));
        ok = e && at && val && shp && cJSON_AddStringToObject(e, "id", cid) &&
             cJSON_AddStringToObject(e, "type", "Const") &&
             cJSON_AddStringToObject(at, "dtype", "int32") &&
             cJSON_AddItemToObject(e, "attrs", at) && (at = NULL, true) &&
             bf_json_add(e, "ui", bf_sess_ui_at(x + 260, row));
        cJSON_Delete(at);
        e = ok ? bf_sess_add_edit(edits, "add_block") : NULL;
        ok = e && cJSON_AddStringToObject(e, "id", gid) &&
             cJSON_AddStringToObject(e, "type", g->type) &&
             bf_json_add(e, "attrs", bf_sess_attrs_like(pb, g)) &&
             bf_json_add(e, "ui", bf_sess_ui_at(x + 520, row));
        if (ok && pb->device != BF_DEVICE_AUTO) {
            char dev[16];
            if (pb->device == BF_DEVICE_CPU) snprintf(dev, sizeof(dev), "cpu");
            else if (pb->gpu_ordinal) snprintf(dev, sizeof(dev), "gpu:%d", pb->gpu_ordinal);
            else snprintf(dev, sizeof(dev), "gpu");
            ok = cJSON_AddStringToObject(e, "device", dev) != NULL;
        }
        for (int q = 0; ok && q < g->n_inputs; q++) {
            const char *name = g->inputs[q].name;
            int fk = port_index(f, name);
            const char *src = !strcmp(name, g->grad->shape_port) ? cid
                              : !strcmp(name, g->grad->dy_port)  ? dy
                              : fk >= 0                          ? pb->inputs[fk].text
                                                                 : NULL;
            if (!src) {
                st = bf_err(err, BF_ESCHEMA, "missing_input", "input \"%s\" of %s is not "
                            "connected", name, fid);
                break;
            }
            ok = bf_sess_connect_edit(edits, gid, name, src);
        }
        ok = ok && cJSON_AddStringToObject(grads, g->grad->wrt, gid);
    }
    if (st || !ok) goto fail;
    ok = (list = cJSON_AddArrayToObject(res, "blocks")) != NULL;
    for (int i = 0; ok && i < nid; i++) ok = cJSON_AddItemToArray(list, cJSON_CreateString(ids[i]));
    if (!ok) goto fail;
    char *text = cJSON_PrintUnformatted(edits);
    if (!text) {
        ok = false;
        goto fail;
    }
    st = bf_session_apply_edits(s, text, strlen(text), NULL, err);
    bf_free(text);
    if (st) goto fail;
    cJSON_Delete(edits);
    return emit(res, created_json, err);
fail:
    cJSON_Delete(edits), cJSON_Delete(res);
    return st ? st : oom(err);
}
