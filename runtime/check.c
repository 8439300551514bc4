/*
 * check.c - checking and inference without running: every problem of the page at once, and
 * every port's dtype and shape.
 *
 * One pass reports the wiring (inputs not connected or naming nothing, outputs naming
 * nothing), every block on or behind a cycle, and then, in topological order, each block's
 * port dtypes and its infer() on what is known before running (dtypes, shapes, and the values
 * of constants and feeds). A block whose source failed is skipped without a second report.
 * What is unknown until run time stays unknown (-1, shown as "?").
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

static void report(bf_session *s, bf_diags *diags, bf_error *first, int *n_errors, int b,
                   bf_error *e) {
    bf_sess_where(s, b, e);
    if (e->status != BF_OK && (*n_errors)++ == 0 && first) *first = *e;
    bf_diags_push(diags, e);
}

bool bf_sess_gather_infos(bf_session *s, int b, bf_port_info *in) {
    bf_page_block *pb = s->nodes[b].pb;
    for (int k = 0; k < pb->desc->n_inputs; k++) {
        if (pb->inputs[k].src_block < 0 && !pb->inputs[k].text &&
            (pb->desc->inputs[k].flags & BF_PORT_OPTIONAL)) {
            bf_port_set(&in[k], BF_DTYPE_INVALID, -1, NULL);
            in[k].rank = BF_PORT_ABSENT_RANK;
            continue;
        }
        if (pb->inputs[k].src_block < 0) return false;
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

typedef struct report_to {
    bf_diags *diags;
    bf_error *first;
    int *n_errors;
} report_to;

static void report_cb(bf_session *s, int b, bf_error *e, void *user) {
    report_to *r = user;
    report(s, r->diags, r->first, r->n_errors, b, e);
}

/* The wiring problems: unconnected inputs, links and outputs that name nothing, cycles, and
 * the training rules (state.c). */
static void check_wiring(bf_session *s, bf_diags *diags, bf_error *first, int *n_errors) {
    for (int b = 0; b < s->n; b++) {
        bf_page_block *pb = &s->page->blocks[b];
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            const bf_page_input *in = &pb->inputs[k];
            if (in->src_block >= 0) continue;
            if (!in->text && (pb->desc->inputs[k].flags & BF_PORT_OPTIONAL)) continue;
            const char *port = pb->desc->inputs[k].name;
            bf_error e = {0};
            bf_err_at(&e, port, NULL);
            if (!in->text) {
                snprintf(e.pointer, sizeof(e.pointer), "/blocks/%d/inputs", b);
                bf_err(&e, BF_ESCHEMA, "missing_input", "input \"%s\" of %s is not connected",
                       port, pb->desc->type);
            } else {
                bf_err(&e, BF_ESCHEMA, "bad_link", "\"%.80s\" names no block output on this "
                       "page", in->text);
            }
            report(s, diags, first, n_errors, b, &e);
        }
    }
    for (int b = 0; s->n_order < s->n && b < s->n; b++) {
        if (s->nodes[b].ordered) continue;
        bf_error e = {0};
        bf_err(&e, BF_ESCHEMA, "cycle",
               "this block is on (or fed by) a cycle: a block's inputs cannot depend on its "
               "own output");
        report(s, diags, first, n_errors, b, &e);
    }
    for (int i = 0; i < s->page->n_outputs; i++) {
        int b, p;
        if (bf_page_resolve(s->page, s->page->outputs[i], &b, &p)) continue;
        bf_error e = {0};
        snprintf(e.pointer, sizeof(e.pointer), "/outputs/%d", i);
        bf_err(&e, BF_ESCHEMA, "bad_output", "output %d (\"%.80s\") names no block output on "
               "this page", i, s->page->outputs[i]);
        report(s, diags, first, n_errors, -1, &e);
    }
    report_to r = {diags, first, n_errors};
    bf_sess_state_check(s, report_cb, &r);
    bf_sess_fuse_check(s, report_cb, &r);
}

bf_status bf_session_check(bf_session *s, bf_diags *diags, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    int n_errors = 0;
    bf_error first = {0};
    bf_port_info in[16];
    for (int i = 0; i < s->n; i++) s->nodes[i].info_ok = false;
    check_wiring(s, diags, &first, &n_errors);
    for (int k = 0; k < s->n_order; k++) {
        int b = s->order[k];
        snode *n = &s->nodes[b];
        const bf_block_desc *d = n->pb->desc;
        BF_ASSERT(d->n_inputs <= BF_COUNT(in));
        if (!bf_sess_gather_infos(s, b, in)) continue; /* reported at the source */
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
    s->checked = true;
    if (n_errors) {
        if (err) *err = first;
        return first.status;
    }
    return BF_OK;
}

/* ---- port shapes --------------------------------------------------------------------------- */

static void shape_from(bf_port_shape *out, const bf_port_info *p) {
    memset(out, 0, sizeof(*out));
    out->rank = -1;
    if (!p) return;
    out->dtype = p->dtype;
    out->rank = p->rank;
    for (int i = 0; i < BF_MAX_RANK; i++) out->dims[i] = i < p->rank ? p->dims[i] : -1;
}

/* Find port `port` of block b; *output tells which side. -1 when there is no such port. */
static int find_port(const bf_block_desc *d, const char *port, int output) {
    int n = output ? d->n_outputs : d->n_inputs;
    const bf_port_desc *ports = output ? d->outputs : d->inputs;
    if (!port) return output && n ? 0 : -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(ports[i].name, port)) return i;
    return -1;
}

bf_status bf_session_port_shape(bf_session *s, const char *block_id, const char *port,
                                int output, bf_port_shape *out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!s || !out) return bf_err(err, BF_EINVAL, "bad_argument", "session or out is NULL");
    shape_from(out, NULL);
    int b = block_id ? bf_page_find(s->page, block_id) : -1;
    int p = b >= 0 ? find_port(s->page->blocks[b].desc, port, output) : -1;
    if (p < 0) {
        bf_err(err, BF_ENOTFOUND, b < 0 ? "unknown_block" : "unknown_port",
               b < 0 ? "no block \"%.60s\" on this page" : "block \"%.60s\" has no such port",
               block_id ? block_id : "(null)");
        if (err) {
            bf_strlcpy(err->page, s->page->file, sizeof(err->page));
            if (b >= 0) bf_sess_where(s, b, err);
        }
        return BF_ENOTFOUND;
    }
    if (!s->checked) bf_session_check(s, NULL, NULL);
    const snode *n = &s->nodes[b];
    if (output) {
        shape_from(out, n->info_ok ? &n->info[p] : NULL);
    } else {
        const bf_page_input *in = &n->pb->inputs[p];
        const snode *src = in->src_block >= 0 ? &s->nodes[in->src_block] : NULL;
        shape_from(out, src && src->info_ok ? &src->info[in->src_port] : NULL);
    }
    return BF_OK;
}

int bf_port_shape_format(const bf_port_shape *p, char *buf, size_t size) {
    if (!p) return snprintf(buf, size, "?");
    char text[32 + BF_MAX_RANK * 24];
    size_t n = (size_t)snprintf(text, sizeof(text), "%s[",
                                p->dtype == BF_DTYPE_INVALID ? "?" : bf_dtype_name(p->dtype));
    if (p->rank < 0) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "...");
    } else {
        for (int i = 0; i < p->rank && i < BF_MAX_RANK; i++) {
            if (p->dims[i] < 0) n += (size_t)snprintf(text + n, sizeof(text) - n, "%s?",
                                                      i ? "," : "");
            else n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%lld", i ? "," : "",
                                       (long long)p->dims[i]);
        }
    }
    snprintf(text + n, sizeof(text) - n, "]");
    return snprintf(buf, size, "%s", text);
}

/* ---- the check as JSON (servers, bindings) --------------------------------------------- */

/* {"dtype", "shape", "label"} of a port; NULL when out of memory. */
static cJSON *shape_json(const bf_port_shape *p) {
    char label[256];
    bf_port_shape_format(p, label, sizeof(label));
    cJSON *o = cJSON_CreateObject(), *shape = p->rank < 0 ? cJSON_CreateNull()
                                                          : cJSON_CreateArray();
    for (int i = 0; shape && p->rank >= 0 && i < p->rank; i++) {
        cJSON *d = p->dims[i] < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)p->dims[i]);
        if (!d) {
            cJSON_Delete(shape);
            shape = NULL;
        } else {
            cJSON_AddItemToArray(shape, d);
        }
    }
    if (!o || !shape) {
        cJSON_Delete(o);
        cJSON_Delete(shape);
        return NULL;
    }
    if (!bf_json_add(o, "dtype", p->dtype == BF_DTYPE_INVALID
                                     ? cJSON_CreateNull()
                                     : cJSON_CreateString(bf_dtype_name(p->dtype)))) {
        cJSON_Delete(o);
        cJSON_Delete(shape);
        return NULL;
    }
    if (!bf_json_add(o, "shape", shape) || !bf_json_add(o, "label", cJSON_CreateString(label))) {
        cJSON_Delete(o); /* shape is freed by bf_json_add or with o */
        return NULL;
    }
    return o;
}

/* Add the string member when `v` is not empty. False when out of memory. */
static bool add_text(cJSON *o, const char *key, const char *v) {
    return !v || !v[0] || bf_json_add(o, key, cJSON_CreateString(v));
}

cJSON *bf_sess_error_json(const bf_error *e) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !add_text(o, "severity", e->status == BF_OK ? "warning" : "error") ||
        !add_text(o, "code", e->code[0] ? e->code : bf_status_name(e->status)) ||
        !add_text(o, "status", bf_status_name(e->status)) ||
        !add_text(o, "message", e->message) || !add_text(o, "page", e->page) ||
        !add_text(o, "block", e->block_id) || !add_text(o, "port", e->port) ||
        !add_text(o, "attr", e->attr) ||
        !bf_json_add(o, "pointer", cJSON_CreateString(e->pointer)) ||
        (e->line && !bf_json_add(o, "line", cJSON_CreateNumber(e->line))) ||
        (e->column && !bf_json_add(o, "column", cJSON_CreateNumber(e->column)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

bf_status bf_error_json(const bf_error *e, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!e) return bf_err(err, BF_EINVAL, "bad_argument", "the error record is NULL");
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!e) return bf_err(err, BF_EINVAL, "bad_argument", "e is NULL");
    cJSON *o = bf_sess_error_json(e);
    *out = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return *out ? BF_OK : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}

bf_status bf_session_check_json(bf_session *s, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    bf_diags *diags = bf_diags_new();
    cJSON *root = diags ? cJSON_CreateObject() : NULL;
    if (!root) goto oom;
    bf_status st = bf_session_check(s, diags, NULL);
    cJSON *problems = cJSON_AddBoolToObject(root, "ok", st == BF_OK)
                          ? cJSON_AddArrayToObject(root, "problems") : NULL;
    cJSON *blocks = problems ? cJSON_AddObjectToObject(root, "blocks") : NULL;
    if (!blocks) goto oom;
    for (size_t i = 0; i < bf_diags_count(diags); i++) {
        cJSON *p = bf_sess_error_json(bf_diags_at(diags, i));
        if (!p) goto oom;
        cJSON_AddItemToArray(problems, p);
    }
    for (int b = 0; b < s->n; b++) {
        const bf_page_block *pb = &s->page->blocks[b];
        const bf_block_desc *d = pb->desc;
        cJSON *jb = cJSON_AddObjectToObject(blocks, pb->id);
        cJSON *ji = jb ? cJSON_AddObjectToObject(jb, "inputs") : NULL;
        cJSON *jo = ji ? cJSON_AddObjectToObject(jb, "outputs") : NULL;
        if (!jo || !cJSON_AddStringToObject(jb, "type", d->type)) goto oom;
        bf_port_shape ps;
        for (int k = 0; k < d->n_inputs; k++) {
            bf_session_port_shape(s, pb->id, d->inputs[k].name, 0, &ps, NULL);
            cJSON *j = shape_json(&ps);
            if (!j || !bf_json_add(ji, d->inputs[k].name, j) ||
                !bf_json_add(j, "source", pb->inputs[k].text
                                              ? cJSON_CreateString(pb->inputs[k].text)
                                              : cJSON_CreateNull()))
                goto oom;
        }
        for (int k = 0; k < d->n_outputs; k++) {
            bf_session_port_shape(s, pb->id, d->outputs[k].name, 1, &ps, NULL);
            if (!bf_json_add(jo, d->outputs[k].name, shape_json(&ps))) goto oom;
        }
    }
    *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    bf_diags_free(diags);
    if (!*out) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    return BF_OK;
oom:
    cJSON_Delete(root);
    bf_diags_free(diags);
    return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}
