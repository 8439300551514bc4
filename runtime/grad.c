/*
 * grad.c - the backward pass of a whole page as blocks (bf_session_build_gradients), and the
 * optimizer's update blocks, as tf.gradients and tf.train's optimizers build them.
 *
 * The blocks between the differentiated Variables and the loss (those reachable forwards from
 * a Variable and backwards from the loss) are visited in reverse topological order. Each
 * output's incoming gradients are summed (AddN, or a chain of Add when there are more than
 * AddN takes), then the block's own `gradient` function (block.h) adds the blocks of its
 * gradient through the bf_grad_* calls below and declares the gradient of each input; those
 * become contributions to the inputs' sources. A Variable's summed contributions are its
 * gradient. Nothing touches the page until the end: the build is one list of edits, applied
 * all or nothing by bf_session_apply_edits.
 *
 * Layout: the backward blocks mirror the forward ones across a vertical line right of the
 * page (the gradient of a block at x sits at 2M - x, M being right of every forward block),
 * each block's gradient blocks stacked below one another; the update blocks go further right.
 */
#include "session.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- edits (shared with teach.c) ----------------------------------------------------------- */

cJSON *bf_sess_ui_at(double x, double y) {
    cJSON *u = cJSON_CreateObject();
    if (u && (!cJSON_AddNumberToObject(u, "x", x) || !cJSON_AddNumberToObject(u, "y", y))) {
        cJSON_Delete(u);
        return NULL;
    }
    return u;
}

cJSON *bf_sess_add_edit(cJSON *edits, const char *op) {
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddItemToArray(edits, e)) {
        cJSON_Delete(e);
        return NULL;
    }
    return cJSON_AddStringToObject(e, "op", op) ? e : NULL;
}

bool bf_sess_connect_edit(cJSON *edits, const char *block, const char *port, const char *src) {
    cJSON *e = bf_sess_add_edit(edits, "connect");
    return e && cJSON_AddStringToObject(e, "block", block) &&
           cJSON_AddStringToObject(e, "port", port) && cJSON_AddStringToObject(e, "source", src);
}

cJSON *bf_sess_attrs_like(const bf_page_block *pb, const bf_block_desc *to) {
    cJSON *a = cJSON_CreateObject();
    for (int i = 0; a && i < pb->desc->n_attrs; i++) {
        const bf_attr_value *v = &pb->attrs[i];
        bool known = false;
        for (int j = 0; j < to->n_attrs; j++)
            known = known || !strcmp(to->attrs[j].name, pb->desc->attrs[i].name);
        if (!v->set || v->defaulted || !known) continue;
        if (!bf_json_add(a, pb->desc->attrs[i].name, bf_attr_to_json(&pb->desc->attrs[i], v))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* ---- the build ----------------------------------------------------------------------------- */

typedef struct ref_list {
    char **refs;
    int n, cap;
} ref_list;

typedef struct builder {
    bf_session *s;
    cJSON *edits;
    char **strings;           /* everything handed out, freed at the end */
    int n_strings, cap_strings;
    char **ids;               /* new block ids, in order (also in strings) */
    int n_ids, cap_ids;
    bool failed;
    bf_error err;
    int *pidx;                /* [n] index into lists / on-path marker, -1 off the path */
    ref_list *lists;          /* [n_lists] contributions per (on-path block, output) */
    int n_lists;
    double mirror;            /* the mirror line M */
    double x, y;              /* where the next block of the current forward block goes */
} builder;

#define BF_GRAD_MAX_OUT 16

struct bf_grad_ctx {
    builder *B;
    int b;                    /* the forward block */
    const char *dy[BF_GRAD_MAX_OUT];
    bool wants[16];
    const char *set[16];
    char out_refs[BF_GRAD_MAX_OUT][200];
};

static bool fail(builder *B, bf_status st, const char *code, const char *fmt, ...)
    BF_PRINTF(4, 5);
static bool fail(builder *B, bf_status st, const char *code, const char *fmt, ...) {
    if (B->failed) return false;
    B->failed = true;
    va_list ap;
    va_start(ap, fmt);
    bf_verr(&B->err, st, code, fmt, ap);
    va_end(ap);
    return false;
}

static bool oom_fail(builder *B) { return fail(B, BF_ENOMEM, "out_of_memory", "out of memory"); }

/* Keep `s` (NULL: out of memory) for the build's lifetime. */
static char *keep(builder *B, char *s) {
    if (!s) {
        oom_fail(B);
        return NULL;
    }
    if (B->n_strings == B->cap_strings) {
        int cap = B->cap_strings ? 2 * B->cap_strings : 64;
        char **a = bf_realloc(B->strings, (size_t)cap * sizeof(char *));
        if (!a) {
            bf_free(s);
            oom_fail(B);
            return NULL;
        }
        B->strings = a, B->cap_strings = cap;
    }
    return B->strings[B->n_strings++] = s;
}

static bool id_taken(const builder *B, const char *id) {
    if (bf_page_find(B->s->page, id) >= 0) return true;
    for (int i = 0; i < B->n_ids; i++)
        if (!strcmp(B->ids[i], id)) return true;
    return false;
}

/* A new block id from `base` ("conv1_grad_filter", then "_2", ...), valid as an id. */
static const char *fresh(builder *B, const char *base) {
    char id[64], clean[56];
    size_t n = 0;
    for (const char *p = base; *p && n < sizeof(clean) - 1; p++)
        clean[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'
                                ? *p
                                : '_');
    clean[n] = '\0';
    for (int k = 1;; k++) {
        if (k == 1) snprintf(id, sizeof(id), "%s", clean);
        else snprintf(id, sizeof(id), "%.50s_%d", clean, k);
        if (!id_taken(B, id)) break;
    }
    char *s = keep(B, bf_strdup(id));
    if (!s) return NULL;
    if (B->n_ids == B->cap_ids) {
        int cap = B->cap_ids ? 2 * B->cap_ids : 64;
        char **a = bf_realloc(B->ids, (size_t)cap * sizeof(char *));
        if (!a) {
            oom_fail(B);
            return NULL;
        }
        B->ids = a, B->cap_ids = cap;
    }
    B->ids[B->n_ids++] = s;
    return s;
}

/* Add a block of `type` with attributes `attrs` (taken; may be NULL) and inputs (port, ref)
 * from the NULL-terminated va_list, at (B->x, B->y), moving B->y down one row. */
static const char *add_block(builder *B, const char *base, const char *type, cJSON *attrs,
                             va_list ap) {
    const char *id = B->failed ? NULL : fresh(B, base);
    cJSON *e = id ? bf_sess_add_edit(B->edits, "add_block") : NULL;
    bool ok = e && cJSON_AddStringToObject(e, "id", id) && cJSON_AddStringToObject(e, "type", type);
    if (ok && attrs) {
        ok = cJSON_AddItemToObject(e, "attrs", attrs);
        if (ok) attrs = NULL;
    }
    ok = ok && bf_json_add(e, "ui", bf_sess_ui_at(B->x, B->y));
    cJSON_Delete(attrs);
    B->y += 90;
    for (const char *port; ok && (port = va_arg(ap, const char *));) {
        const char *src = va_arg(ap, const char *);
        if (!src) return fail(B, BF_EINTERNAL, "bad_gradient", "input \"%s\" of the %s block "
                              "%s has no source", port, type, id), NULL;
        ok = bf_sess_connect_edit(B->edits, id, port, src);
    }
    if (!ok) {
        oom_fail(B);
        return NULL;
    }
    return id;
}

static const char *add(builder *B, const char *base, const char *type, cJSON *attrs, ...) {
    va_list ap;
    va_start(ap, attrs);
    const char *id = add_block(B, base, type, attrs, ap);
    va_end(ap);
    return id;
}

/* The sum of refs[0..n) (n >= 1): the ref itself, an AddN, or a chain of Add past AddN's
 * inputs. */
static const char *sum_refs(builder *B, const char *base, char **refs, int n) {
    if (n == 1) return refs[0];
    const bf_block_desc *addn = bf_registry_find("AddN");
    if (addn && n <= addn->n_inputs) {
        const char *id = B->failed ? NULL : fresh(B, base);
        cJSON *e = id ? bf_sess_add_edit(B->edits, "add_block") : NULL;
        bool ok = e && cJSON_AddStringToObject(e, "id", id) &&
                  cJSON_AddStringToObject(e, "type", "AddN") &&
                  bf_json_add(e, "ui", bf_sess_ui_at(B->x, B->y));
        B->y += 90;
        for (int i = 0; ok && i < n; i++)
            ok = bf_sess_connect_edit(B->edits, id, addn->inputs[i].name, refs[i]);
        if (!ok) oom_fail(B);
        return ok ? id : NULL;
    }
    const char *acc = refs[0];
    for (int i = 1; acc && i < n; i++) acc = add(B, base, "Add", NULL, "x", acc, "y", refs[i], NULL);
    return acc;
}

static bool contribute(builder *B, int block, int port, const char *ref) {
    ref_list *l = &B->lists[B->pidx[block] * BF_GRAD_MAX_OUT + port];
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        char **a = bf_realloc(l->refs, (size_t)cap * sizeof(char *));
        if (!a) return oom_fail(B);
        l->refs = a, l->cap = cap;
    }
    l->refs[l->n++] = (char *)ref;
    return true;
}

/* "block" for output 0, else "block:port". */
static const char *out_ref(bf_session *s, int b, int p, char *buf, size_t size) {
    const bf_page_block *pb = &s->page->blocks[b];
    if (p == 0) snprintf(buf, size, "%s", pb->id);
    else snprintf(buf, size, "%s:%s", pb->id, pb->desc->outputs[p].name);
    return buf;
}

/* ---- what block gradient functions call (block.h) ------------------------------------------ */

const bf_node *bf_grad_node(const bf_grad_ctx *g) { return &g->B->s->nodes[g->b].node; }

const char *bf_grad_input(const bf_grad_ctx *g, int k) {
    const bf_page_block *pb = &g->B->s->page->blocks[g->b];
    return k >= 0 && k < pb->desc->n_inputs ? pb->inputs[k].text : NULL;
}

const bf_port_info *bf_grad_input_info(const bf_grad_ctx *g, int k) {
    const bf_session *s = g->B->s;
    const bf_page_block *pb = &s->page->blocks[g->b];
    if (k < 0 || k >= pb->desc->n_inputs || pb->inputs[k].src_block < 0) return NULL;
    return &s->nodes[pb->inputs[k].src_block].info[pb->inputs[k].src_port];
}

const char *bf_grad_output(const bf_grad_ctx *g, int p) {
    return p >= 0 && p < g->B->s->page->blocks[g->b].desc->n_outputs ? g->out_refs[p] : NULL;
}

const bf_port_info *bf_grad_output_info(const bf_grad_ctx *g, int p) {
    const bf_session *s = g->B->s;
    return p >= 0 && p < s->page->blocks[g->b].desc->n_outputs ? &s->nodes[g->b].info[p] : NULL;
}

const char *bf_grad_dy(const bf_grad_ctx *g, int p) {
    return p >= 0 && p < BF_GRAD_MAX_OUT ? g->dy[p] : NULL;
}

bool bf_grad_wants(const bf_grad_ctx *g, int k) { return k >= 0 && k < 16 && g->wants[k]; }

void bf_grad_set(bf_grad_ctx *g, int k, const char *ref) {
    if (k >= 0 && k < 16 && ref) g->set[k] = ref;
}

/* "<forward id>_<name>" */
static const char *base_of(bf_grad_ctx *g, const char *name, char *buf, size_t size) {
    snprintf(buf, size, "%.40s_%.40s", g->B->s->page->blocks[g->b].id, name);
    return buf;
}

const char *bf_grad_add(bf_grad_ctx *g, const char *name, const char *type,
                        const char *attrs_json, ...) {
    builder *B = g->B;
    const bf_block_desc *d = bf_registry_find(type);
    if (!d) return fail(B, BF_EINTERNAL, "bad_gradient", "the gradient of %s needs a %s "
                        "block, which this build does not have",
                        B->s->page->blocks[g->b].desc->type, type), NULL;
    cJSON *attrs = NULL;
    if (attrs_json && !strcmp(attrs_json, BF_GRAD_SAME_ATTRS)) {
        if (!(attrs = bf_sess_attrs_like(&B->s->page->blocks[g->b], d))) return oom_fail(B), NULL;
    } else if (attrs_json && !(attrs = cJSON_Parse(attrs_json))) {
        return fail(B, BF_EINTERNAL, "bad_gradient", "bad attributes for %s: %s", type,
                    attrs_json), NULL;
    }
    char base[96];
    va_list ap;
    va_start(ap, attrs_json);
    const char *id = add_block(B, base_of(g, name, base, sizeof(base)), type, attrs, ap);
    va_end(ap);
    return id;
}

/* A Const of dtype `dt`, shape [n] (n >= 0) or a scalar (n < 0), values v. */
static const char *add_const(bf_grad_ctx *g, const char *name, bf_dtype dt, int n,
                             const double *v) {
    cJSON *a = cJSON_CreateObject(), *val = NULL, *shape = NULL;
    bool ok = a && cJSON_AddStringToObject(a, "dtype", bf_dtype_name(dt));
    if (ok && n >= 0) {
        ok = (val = cJSON_AddArrayToObject(a, "value")) && (shape = cJSON_AddArrayToObject(a, "shape")) &&
             cJSON_AddItemToArray(shape, cJSON_CreateNumber(n));
        for (int i = 0; ok && i < n; i++) ok = cJSON_AddItemToArray(val, cJSON_CreateNumber(v[i]));
    } else if (ok) {
        ok = cJSON_AddNumberToObject(a, "value", v[0]) != NULL;
    }
    if (!ok) {
        cJSON_Delete(a);
        return oom_fail(g->B), NULL;
    }
    char base[96];
    return add(g->B, base_of(g, name, base, sizeof(base)), "Const", a, NULL);
}

const char *bf_grad_const_i32(bf_grad_ctx *g, const char *name, int n, const int64_t *v) {
    double d[BF_MAX_RANK * 2];
    if (n < 0 || n > BF_COUNT(d)) return fail(g->B, BF_EINTERNAL, "bad_gradient", "bad const"), NULL;
    for (int i = 0; i < n; i++) d[i] = (double)v[i];
    return add_const(g, name, BF_DTYPE_I32, n, d);
}

const char *bf_grad_const_scalar(bf_grad_ctx *g, const char *name, bf_dtype dt, double v) {
    return add_const(g, name, dt, -1, &v);
}

const char *bf_grad_unbroadcast(bf_grad_ctx *g, const char *name, const char *dy,
                                const bf_port_info *dy_info, int k) {
    const bf_port_info *in = bf_grad_input_info(g, k);
    if (!in || !bf_port_known(in) || !bf_port_known(dy_info))
        return fail(g->B, BF_ESHAPE, "shape_unknown", "the shapes of %s's inputs must be known "
                    "before running to build its gradient",
                    g->B->s->page->blocks[g->b].id), NULL;
    if (in->rank == dy_info->rank &&
        !memcmp(in->dims, dy_info->dims, sizeof(int64_t) * (size_t)in->rank))
        return dy;
    /* The axes of dy that input k broadcast: the leading ones it lacks, and those where it has
     * a 1 against a larger size (BroadcastGradientArgs). */
    int64_t axes[BF_MAX_RANK];
    int na = 0, lead = dy_info->rank - in->rank;
    for (int a = 0; a < dy_info->rank; a++)
        if (a < lead || (in->dims[a - lead] == 1 && dy_info->dims[a] != 1)) axes[na++] = a;
    char nm[64];
    snprintf(nm, sizeof(nm), "%s_axes", name);
    const char *ax = bf_grad_const_i32(g, nm, na, axes);
    snprintf(nm, sizeof(nm), "%s_sum", name);
    const char *sum = ax ? bf_grad_add(g, nm, "Sum", NULL, "input", dy, "reduction_indices", ax,
                                       NULL)
                         : NULL;
    snprintf(nm, sizeof(nm), "%s_shape", name);
    const char *shape = sum ? bf_grad_const_i32(g, nm, in->rank, in->dims) : NULL;
    return shape ? bf_grad_add(g, name, "Reshape", NULL, "tensor", sum, "shape", shape, NULL)
                 : NULL;
}

/* ---- the walk ------------------------------------------------------------------------------ */

static bool is_variable(const bf_page_block *pb) {
    return pb->desc->state && pb->desc->state->variable;
}

static bool trainable(const bf_page_block *pb) {
    for (int a = 0; a < pb->desc->n_attrs; a++)
        if (!strcmp(pb->desc->attrs[a].name, "trainable")) return pb->attrs[a].b;
    return true;
}

static double ui_num(const cJSON *ui, const char *key) {
    const cJSON *v = ui ? cJSON_GetObjectItemCaseSensitive(ui, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Mark the blocks on a path from a differentiated Variable (wrt[b]) to the loss L. */
static bool mark_path(builder *B, const bool *wrt, int L, int *n_path) {
    bf_session *s = B->s;
    bool *fwd = bf_calloc((size_t)s->n, sizeof(bool)), *bwd = bf_calloc((size_t)s->n, sizeof(bool));
    int *stack = bf_malloc((size_t)s->n * sizeof(int));
    if (!fwd || !bwd || !stack) {
        bf_free(fwd), bf_free(bwd), bf_free(stack);
        return oom_fail(B);
    }
    int top = 0;
    for (int i = 0; i < s->n; i++)
        if (wrt[i]) fwd[i] = true, stack[top++] = i;
    while (top) {
        const snode *n = &s->nodes[stack[--top]];
        for (int c = 0; c < n->n_consumers; c++)
            if (!fwd[n->consumers[c]]) fwd[n->consumers[c]] = true, stack[top++] = n->consumers[c];
    }
    bwd[L] = true;
    stack[top++] = L;
    while (top) {
        const bf_page_block *pb = &s->page->blocks[stack[--top]];
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            int src = pb->inputs[k].src_block;
            if (src >= 0 && !bwd[src]) bwd[src] = true, stack[top++] = src;
        }
    }
    *n_path = 0;
    for (int i = 0; i < s->n; i++) B->pidx[i] = fwd[i] && bwd[i] ? (*n_path)++ : -1;
    bf_free(fwd), bf_free(bwd), bf_free(stack);
    return true;
}

/* Differentiate block b: sum its outputs' contributions, then call its gradient function
 * (or, for a Variable, record its gradient). */
static bool visit(builder *B, int b, const char **grad_of) {
    bf_session *s = B->s;
    const bf_page_block *pb = &s->page->blocks[b];
    const bf_block_desc *d = pb->desc;
    bf_grad_ctx g = {.B = B, .b = b};
    B->x = 2 * B->mirror - ui_num(pb->ui, "x");
    B->y = ui_num(pb->ui, "y");
    bool any = false;
    for (int p = 0; p < d->n_outputs && p < BF_GRAD_MAX_OUT; p++) {
        ref_list *l = &B->lists[B->pidx[b] * BF_GRAD_MAX_OUT + p];
        out_ref(s, b, p, g.out_refs[p], sizeof(g.out_refs[p]));
        if (!l->n) continue;
        char base[96];
        snprintf(base, sizeof(base), "%.40s%s%.20s_grad_sum", pb->id, p ? "_" : "",
                 p ? d->outputs[p].name : "");
        if (!(g.dy[p] = sum_refs(B, base, l->refs, l->n))) return false;
        any = true;
    }
    if (!any) return true; /* its outputs reach the loss only through non-differentiated paths */
    if (is_variable(pb)) {
        grad_of[b] = g.dy[0];
        return true;
    }
    if (!d->gradient) {
        fail(B, BF_EUNSUPPORTED, "no_gradient", "the loss depends on a Variable through "
             "\"%.60s\", but %s has no gradient", pb->id, d->type);
        bf_strlcpy(B->err.block_id, pb->id, sizeof(B->err.block_id));
        return false;
    }
    for (int k = 0; k < d->n_inputs && k < 16; k++) {
        int src = pb->inputs[k].src_block;
        g.wants[k] = src >= 0 && B->pidx[src] >= 0;
        if (g.wants[k]) {
            const bf_port_info *in = bf_grad_input_info(&g, k);
            g.wants[k] = in && (in->dtype == BF_DTYPE_INVALID ||
                                (BF_DT_FLOATS & (1u << in->dtype))); /* ints carry no gradient */
        }
    }
    bf_error e = {0};
    bf_status st = d->gradient(&g, &e);
    if (B->failed) return false;
    if (st) {
        B->failed = true;
        B->err = e;
        bf_strlcpy(B->err.block_id, pb->id, sizeof(B->err.block_id));
        return false;
    }
    for (int k = 0; k < d->n_inputs && k < 16; k++) {
        if (!g.wants[k]) continue;
        if (!g.set[k]) {
            fail(B, BF_EUNSUPPORTED, "no_gradient", "the loss depends on a Variable through "
                 "input \"%s\" of \"%.60s\", but %s gives no gradient for it",
                 d->inputs[k].name, pb->id, d->type);
            bf_strlcpy(B->err.block_id, pb->id, sizeof(B->err.block_id));
            bf_strlcpy(B->err.port, d->inputs[k].name, sizeof(B->err.port));
            return false;
        }
        if (!contribute(B, pb->inputs[k].src_block, pb->inputs[k].src_port, g.set[k]))
            return false;
    }
    return true;
}

/* ---- the optimizer ------------------------------------------------------------------------- */

typedef struct opt_spec {
    enum { OPT_SGD, OPT_MOMENTUM, OPT_ADAM } kind;
    double lr, momentum, beta1, beta2, eps;
} opt_spec;

static bool parse_optimizer(const char *text, opt_spec *o) {
    char name[16];
    double v[4];
    int n = 0;
    const char *p = strchr(text, ':');
    if (!p || p - text >= (long)sizeof(name)) return false;
    memcpy(name, text, (size_t)(p - text));
    name[p - text] = '\0';
    while (p && *p == ':' && n < 4) {
        char *end;
        v[n] = strtod(p + 1, &end);
        if (end == p + 1 || !isfinite(v[n])) return false;
        n++;
        p = end;
    }
    if (*p) return false;
    *o = (opt_spec){.lr = v[0], .momentum = 0.9, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (!strcmp(name, "sgd") && n == 1) o->kind = OPT_SGD;
    else if (!strcmp(name, "momentum") && (n == 1 || n == 2)) {
        o->kind = OPT_MOMENTUM;
        if (n == 2) o->momentum = v[1];
    } else if (!strcmp(name, "adam") && (n == 1 || n == 4)) {
        o->kind = OPT_ADAM;
        if (n == 4) o->beta1 = v[1], o->beta2 = v[2], o->eps = v[3];
    } else return false;
    return o->lr > 0;
}

/* A Const or Variable holding one number (a scalar of dtype dt). */
static const char *scalar_block(builder *B, const char *base, const char *type, bf_dtype dt,
                                double v) {
    cJSON *a = cJSON_CreateObject();
    if (!a || !cJSON_AddStringToObject(a, "dtype", bf_dtype_name(dt)) ||
        !cJSON_AddNumberToObject(a, "value", v) ||
        (!strcmp(type, "Variable") && !cJSON_AddFalseToObject(a, "trainable"))) {
        cJSON_Delete(a);
        return oom_fail(B), NULL;
    }
    return add(B, base, type, a, NULL);
}

/* A Variable of zeros shaped like `var`'s output, not trainable: an optimizer's slot. */
static const char *slot_like(builder *B, int var, const char *suffix) {
    const bf_port_info *vi = &B->s->nodes[var].info[0];
    cJSON *a = cJSON_CreateObject(), *shape = a ? cJSON_AddArrayToObject(a, "shape") : NULL;
    bool ok = shape && cJSON_AddStringToObject(a, "dtype", bf_dtype_name(vi->dtype)) &&
              cJSON_AddFalseToObject(a, "trainable");
    for (int i = 0; ok && i < vi->rank; i++)
        ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)vi->dims[i]));
    if (!ok) {
        cJSON_Delete(a);
        return oom_fail(B), NULL;
    }
    char base[96];
    snprintf(base, sizeof(base), "%.50s_%s", B->s->page->blocks[var].id, suffix);
    return add(B, base, "Variable", a, NULL);
}

static bool add_optimizer(builder *B, const opt_spec *o, const char **grad_of, cJSON *updates) {
    bf_session *s = B->s;
    bf_dtype dt = BF_DTYPE_INVALID;
    double top = 1e300;
    for (int i = 0; i < s->n; i++)
        if (grad_of[i]) {
            bf_dtype v = s->nodes[i].info[0].dtype;
            if (dt && v != dt)
                return fail(B, BF_EDTYPE, "dtype_mismatch", "the Variables are of different "
                            "dtypes (%s, %s): one optimizer takes one dtype",
                            bf_dtype_name(dt), bf_dtype_name(v));
            dt = v;
            top = BF_MIN(top, ui_num(s->page->blocks[i].ui, "y"));
        }
    B->x = 2 * B->mirror + 300;
    B->y = top - 180;
    const char *lr = scalar_block(B, "learning_rate", "Const", dt, o->lr);
    const char *mom = NULL, *b1 = NULL, *b2 = NULL, *eps = NULL, *b1p = NULL, *b2p = NULL;
    if (o->kind == OPT_MOMENTUM) mom = scalar_block(B, "momentum", "Const", dt, o->momentum);
    if (o->kind == OPT_ADAM) {
        b1 = scalar_block(B, "beta1", "Const", dt, o->beta1);
        b2 = scalar_block(B, "beta2", "Const", dt, o->beta2);
        eps = scalar_block(B, "epsilon", "Const", dt, o->eps);
        /* tf.train.AdamOptimizer's beta powers: used by this step's updates, then multiplied */
        b1p = scalar_block(B, "beta1_power", "Variable", dt, o->beta1);
        b2p = scalar_block(B, "beta2_power", "Variable", dt, o->beta2);
        const char *n1 = b1p ? add(B, "beta1_power_next", "Mul", NULL, "x", b1p, "y", b1, NULL) : NULL;
        const char *n2 = b2p ? add(B, "beta2_power_next", "Mul", NULL, "x", b2p, "y", b2, NULL) : NULL;
        if (n1) add(B, "beta1_power_update", "Assign", NULL, "ref", b1p, "value", n1, NULL);
        if (n2) add(B, "beta2_power_update", "Assign", NULL, "ref", b2p, "value", n2, NULL);
    }
    for (int i = 0; !B->failed && i < s->n; i++) {
        if (!grad_of[i]) continue;
        const char *var = s->page->blocks[i].id, *upd = NULL;
        char base[96];
        snprintf(base, sizeof(base), "%.50s_update", var);
        B->x = 2 * B->mirror + 300;
        B->y = ui_num(s->page->blocks[i].ui, "y");
        if (o->kind == OPT_SGD) {
            upd = add(B, base, "ApplyGradientDescent", NULL, "var", var, "alpha", lr, "delta",
                      grad_of[i], NULL);
        } else if (o->kind == OPT_MOMENTUM) {
            const char *acc = slot_like(B, i, "momentum");
            upd = acc ? add(B, base, "ApplyMomentum", NULL, "var", var, "accum", acc, "lr", lr,
                            "grad", grad_of[i], "momentum", mom, NULL)
                      : NULL;
        } else {
            const char *m = slot_like(B, i, "adam_m"), *v = m ? slot_like(B, i, "adam_v") : NULL;
            upd = v ? add(B, base, "ApplyAdam", NULL, "var", var, "m", m, "v", v, "beta1_power",
                          b1p, "beta2_power", b2p, "lr", lr, "beta1", b1, "beta2", b2,
                          "epsilon", eps, "grad", grad_of[i], NULL)
                    : NULL;
        }
        if (upd && !cJSON_AddStringToObject(updates, var, upd)) return oom_fail(B);
    }
    return !B->failed;
}

/* ---- the call ------------------------------------------------------------------------------ */

static void builder_free(builder *B) {
    for (int i = 0; i < B->n_strings; i++) bf_free(B->strings[i]);
    bf_free(B->strings);
    bf_free(B->ids);
    if (B->lists)
        for (int i = 0; i < B->n_lists; i++) bf_free(B->lists[i].refs);
    bf_free(B->lists);
    bf_free(B->pidx);
    cJSON_Delete(B->edits);
}

/* ---- data parallelism ---------------------------------------------------------------------- */

/* Check the page as rank `rank` of a job of `ranks` would (its shard "batch" blocks' parts). */
static void check_as(bf_session *s, int rank, int ranks) {
    for (int i = 0; i < s->n; i++) s->nodes[i].node.rank = rank, s->nodes[i].node.ranks = ranks;
    bf_session_check(s, NULL, NULL);
}

/*
 * Check the page as rank 0 of a job of `ranks` (the shapes the backward pass is built for),
 * after making sure that every rank's part has those shapes: the last rank's part is the
 * smallest, so a block whose output differs there has a batch that does not divide.
 */
static bool check_for_ranks(builder *B, int ranks) {
    bf_session *s = B->s;
    if (ranks <= 1) {
        check_as(s, 0, 1);
        return true;
    }
    enum { KEEP = 4 };
    bf_port_info *last = bf_calloc((size_t)s->n * KEEP, sizeof(bf_port_info));
    bool *ok = bf_calloc((size_t)s->n, sizeof(bool));
    if (!last || !ok) {
        bf_free(last), bf_free(ok);
        return oom_fail(B);
    }
    check_as(s, ranks - 1, ranks);
    for (int i = 0; i < s->n; i++) {
        ok[i] = s->nodes[i].info_ok;
        for (int p = 0; p < KEEP && p < s->nodes[i].pb->desc->n_outputs; p++)
            last[i * KEEP + p] = s->nodes[i].info[p];
    }
    check_as(s, 0, ranks);
    for (int k = 0; k < s->n_order && !B->failed; k++) {
        int i = s->order[k];
        const snode *n = &s->nodes[i];
        if (!ok[i] || !n->info_ok) continue;
        for (int p = 0; p < KEEP && p < n->pb->desc->n_outputs; p++) {
            const bf_port_info *a = &n->info[p], *b = &last[i * KEEP + p];
            if (a->rank < 1 || a->rank != b->rank || a->dims[0] == b->dims[0]) continue;
            fail(B, BF_ESHAPE, "batch_not_divisible", "the batch of \"%.60s\" does not divide "
                 "among %d ranks (rank 0 would take %lld rows, rank %d %lld): a data-parallel "
                 "backward pass has the shapes of one rank's part, so every part must be the "
                 "same size; make the batch a multiple of %d", n->pb->id, ranks,
                 (long long)a->dims[0], ranks - 1, (long long)b->dims[0], ranks);
            bf_strlcpy(B->err.block_id, n->pb->id, sizeof(B->err.block_id));
            break;
        }
    }
    bf_free(last), bf_free(ok);
    return !B->failed;
}

/* An AllReduce (mean) after each Variable's gradient: the gradient then applied. */
static bool add_all_reduce(builder *B, const char **grad_of, cJSON *reduced, int ranks) {
    bf_session *s = B->s;
    char attrs[64];
    snprintf(attrs, sizeof(attrs), "{\"op\": \"mean\", \"ranks\": %d}", ranks);
    for (int i = 0; !B->failed && i < s->n; i++) {
        if (!grad_of[i]) continue;
        char base[96];
        snprintf(base, sizeof(base), "%.50s_grad_allreduce", s->page->blocks[i].id);
        B->x = 2 * B->mirror + 80;
        B->y = ui_num(s->page->blocks[i].ui, "y") + 60;
        const char *r = add(B, base, "AllReduce", cJSON_Parse(attrs), "input", grad_of[i], NULL);
        if (r && !cJSON_AddStringToObject(reduced, s->page->blocks[i].id, r)) return oom_fail(B);
        grad_of[i] = r;
    }
    return !B->failed;
}

void bf_grad_options_init(bf_grad_options *o) {
    if (o) memset(o, 0, sizeof(*o));
}

bf_status bf_session_build_gradients(bf_session *s, const char *loss, const char *const *wrt,
                                     int n_wrt, const char *optimizer, char **created_json,
                                     bf_error *err) {
    bf_grad_options o;
    bf_grad_options_init(&o);
    o.optimizer = optimizer;
    return bf_session_build_gradients_opts(s, loss, wrt, n_wrt, &o, created_json, err);
}

bf_status bf_session_build_gradients_opts(bf_session *s, const char *loss,
                                          const char *const *wrt, int n_wrt,
                                          const bf_grad_options *opts, char **created_json,
                                          bf_error *err) {
    bf_error_clear(err);
    if (created_json) *created_json = NULL;
    bf_grad_options defaults;
    if (!opts) {
        bf_grad_options_init(&defaults);
        opts = &defaults;
    }
    const char *optimizer = opts->optimizer;
    if (!s || !loss || !created_json || n_wrt < 0 || (n_wrt && !wrt) || opts->ranks < 0)
        return bf_err(err, BF_EINVAL, "bad_argument", "invalid argument");
    int ranks = opts->data_parallel ? (opts->ranks ? opts->ranks : s->ctx->coll.size) : 0;
    opt_spec opt = {0};
    if (optimizer && !parse_optimizer(optimizer, &opt))
        return bf_err(err, BF_EINVAL, "bad_optimizer", "optimizer \"%.60s\" is not one of "
                      "sgd:LR, momentum:LR[:MOMENTUM], adam:LR[:BETA1:BETA2:EPSILON] (LR > 0)",
                      optimizer);
    int L, Lp;
    if (!bf_page_resolve(s->page, loss, &L, &Lp)) {
        bf_err(err, BF_ENOTFOUND, "not_found", "loss \"%.80s\" names no block output", loss);
        if (err) {
            bf_strlcpy(err->page, s->page->file, sizeof(err->page));
            bf_strlcpy(err->block_id, loss, sizeof(err->block_id));
        }
        return BF_ENOTFOUND;
    }
    builder B = {.s = s, .edits = cJSON_CreateArray(),
                 .pidx = bf_malloc((size_t)s->n * sizeof(int))};
    if (ranks) check_for_ranks(&B, ranks); /* the shapes of one rank's part of the batch */
    else bf_session_check(s, NULL, NULL);
    bool *want = bf_calloc((size_t)s->n, sizeof(bool));
    const char **grad_of = bf_calloc((size_t)s->n, sizeof(char *));
    cJSON *res = cJSON_CreateObject(), *grads = NULL, *updates = NULL, *list = NULL;
    int n_path = 0;
    if (!B.edits || !B.pidx || !want || !grad_of || !res) oom_fail(&B);
    /* which Variables */
    for (int i = 0; !B.failed && i < n_wrt; i++) {
        int v = wrt[i] ? bf_page_find(s->page, wrt[i]) : -1;
        if (v < 0 || !is_variable(&s->page->blocks[v])) {
            fail(&B, v < 0 ? BF_ENOTFOUND : BF_EINVAL, v < 0 ? "not_found" : "not_variable",
                 "\"%.60s\" is not a Variable on this page", wrt[i] ? wrt[i] : "(null)");
            bf_strlcpy(B.err.block_id, wrt[i] ? wrt[i] : "", sizeof(B.err.block_id));
        } else {
            want[v] = true;
        }
    }
    for (int i = 0; !B.failed && !n_wrt && i < s->n; i++)
        want[i] = is_variable(&s->page->blocks[i]) && trainable(&s->page->blocks[i]);
    if (!B.failed && !s->nodes[L].info_ok)
        fail(&B, BF_ESHAPE, "loss_unknown", "the loss \"%.60s\" has a problem: check the page "
             "first", loss);
    const bf_port_info *li = B.failed ? NULL : &s->nodes[L].info[Lp];
    if (li && (!bf_port_known(li) || !(BF_DT_FLOATS & (1u << li->dtype))))
        fail(&B, BF_ESHAPE, "loss_unknown", "the loss \"%.60s\" must be a float tensor whose "
             "shape is known before running", loss);
    if (!B.failed) mark_path(&B, want, L, &n_path);
    for (int i = 0; !B.failed && i < s->n; i++)
        if (want[i] && B.pidx[i] < 0 && n_wrt)
            fail(&B, BF_EINVAL, "no_dependency", "the loss \"%.60s\" does not depend on "
                 "Variable \"%.60s\"", loss, s->page->blocks[i].id);
    bool any = false;
    for (int i = 0; i < s->n && !B.failed; i++) any |= want[i] && B.pidx[i] >= 0;
    if (!B.failed && !any)
        fail(&B, BF_EINVAL, "no_dependency", "the loss \"%.60s\" depends on no trainable "
             "Variable", loss);
    B.n_lists = BF_MAX(n_path, 1) * BF_GRAD_MAX_OUT;
    if (!B.failed && !(B.lists = bf_calloc((size_t)B.n_lists, sizeof(ref_list)))) oom_fail(&B);
    /* the mirror line: right of every forward block */
    double maxx = 0;
    for (int i = 0; i < s->n; i++) maxx = BF_MAX(maxx, ui_num(s->page->blocks[i].ui, "x"));
    B.mirror = maxx + 260;
    /* the seed: ones shaped like the loss */
    if (!B.failed) {
        const bf_page_block *lb = &s->page->blocks[L];
        cJSON *a = cJSON_CreateObject(), *shape = a ? cJSON_AddArrayToObject(a, "shape") : NULL;
        bool ok = shape && cJSON_AddStringToObject(a, "dtype", bf_dtype_name(li->dtype)) &&
                  cJSON_AddNumberToObject(a, "value", 1);
        for (int i = 0; ok && i < li->rank; i++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)li->dims[i]));
        if (!ok) cJSON_Delete(a), oom_fail(&B);
        B.x = 2 * B.mirror - ui_num(lb->ui, "x") - 200;
        B.y = ui_num(lb->ui, "y");
        char base[96];
        snprintf(base, sizeof(base), "%.60s_grad_seed", lb->id);
        const char *seed = ok ? add(&B, base, "Const", a, NULL) : NULL;
        if (seed) contribute(&B, L, Lp, seed);
    }
    for (int k = s->n_order - 1; !B.failed && k >= 0; k--)
        if (B.pidx[s->order[k]] >= 0) visit(&B, s->order[k], grad_of);
    if (!B.failed) {
        grads = cJSON_AddObjectToObject(res, "gradients");
        updates = cJSON_AddObjectToObject(res, "updates");
        if (!grads || !updates || !cJSON_AddStringToObject(res, "loss", loss)) oom_fail(&B);
    }
    for (int i = 0; !B.failed && i < s->n; i++)
        if (want[i] && grad_of[i] && !cJSON_AddStringToObject(grads, s->page->blocks[i].id,
                                                              grad_of[i]))
            oom_fail(&B);
    if (!B.failed && ranks) {
        cJSON *reduced = cJSON_AddObjectToObject(res, "all_reduce");
        if (!reduced) oom_fail(&B);
        else add_all_reduce(&B, grad_of, reduced, ranks);
    }
    if (!B.failed && optimizer) add_optimizer(&B, &opt, grad_of, updates);
    if (!B.failed && !(list = cJSON_AddArrayToObject(res, "blocks"))) oom_fail(&B);
    for (int i = 0; !B.failed && i < B.n_ids; i++)
        if (!cJSON_AddItemToArray(list, cJSON_CreateString(B.ids[i]))) oom_fail(&B);
    if (ranks) check_as(s, s->ctx->coll.rank, s->ctx->coll.size); /* back to this job's */
    bf_status st = B.failed ? B.err.status : BF_OK;
    if (B.failed && err) {
        *err = B.err;
        int b = B.err.block_id[0] ? bf_page_find(s->page, B.err.block_id) : -1;
        bf_sess_where(s, b, err);
    }
    if (!st) {
        char *text = cJSON_PrintUnformatted(B.edits);
        st = text ? bf_session_apply_edits(s, text, strlen(text), NULL, err)
                  : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
        bf_free(text);
    }
    if (!st) {
        *created_json = cJSON_PrintUnformatted(res);
        if (!*created_json) st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    cJSON_Delete(res);
    bf_free(want);
    bf_free(grad_of);
    builder_free(&B);
    return st;
}
