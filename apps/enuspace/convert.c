/*
 * convert.c - an enuSpace page (graph.h) -> a blockflow page (JSON) and the import report.
 *
 * Each block of the plugin's task becomes a block: Const and Const_ex with their typed value,
 * a Variable with its saved initial value (FORMAT.md 7.5, rules 1-3), the ops of the mapping
 * table (ops.c) with their wires, unwired literal pins as Consts (7.3), const pins and the
 * attribute text ("transpose_b_ = true;") as typed attributes. Display blocks (task `logic`)
 * and result caches (`result_*`) are dropped; the ClientSession's fetches become the page's
 * outputs, its run targets and loop setting are noted in "x-enuspace". Arrays larger than
 * inline_limit go to .npy files beside the page. What cannot be mapped fails the import,
 * listed with what it feeds, or with `partial` becomes a Placeholder.
 *
 * This file wires and emits the blocks; the values are values.c's, the attribute text
 * attr_text.c's, the patterns (reader pipeline, one-hot chain, gates, Saves) pipeline.c's,
 * and AddSymbolicGradients is left as Placeholders listed for symgrad.c.
 */
#include "conv.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- wiring -------------------------------------------------------------------------------- */

static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *s = p;
        while (*p && *p != ' ') p++;
        if ((size_t)(p - s) == n && !strncmp(s, name, n)) return true;
    }
    return false;
}

static const char *first_word(const char *list, char *buf, size_t size) {
    size_t n = strcspn(list, " ");
    snprintf(buf, size, "%.*s", (int)n, list);
    return buf;
}

/* A Placeholder standing in for output `port` of unsupported block `i` (partial imports):
 * the block's own id for the first port used, "<id>_<port>" for others. */
static const char *placeholder(conv *c, int i, const char *port) {
    enu_block *b = &c->g->blocks[i];
    char key[300], mark[300];
    snprintf(key, sizeof key, "%s\x1f%s", b->id, port);
    snprintf(mark, sizeof mark, "%s\x1f", b->id);
    int k = enu_idmap_get(&c->ph, key);
    if (k >= 0) return c->strs[k];
    const char *id = c->newid[i];
    if (enu_idmap_get(&c->ph, mark) >= 0) {
        char want[200];
        snprintf(want, sizeof want, "%s_%s", c->newid[i], port);
        id = conv_take_id(c, want);
        if (!id) return NULL;
    }
    if (!conv_own(c, strdup(id))) return NULL;
    int idx = c->n_strs - 1;
    id = c->strs[idx];
    const char *kk = conv_own(c, strdup(key)), *mm = conv_own(c, strdup(mark));
    if (!kk || !mm || !enu_idmap_put(&c->ph, kk, idx) || !enu_idmap_put(&c->ph, mm, idx))
        return NULL;
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "id", id);
    cJSON_AddStringToObject(blk, "type", "Placeholder");
    char rp[140];
    snprintf(rp, sizeof rp, "result_%s", port);
    enu_pin *cache = enu_block_pin(b, rp);
    enu_value shp = {0};
    char why[200];
    int dt = cache ? enu_dtype_from_var_type(cache->type) : -1;
    cJSON_AddStringToObject(attrs, "dtype", dt == ENU_F64 ? "float64" : dt == ENU_I32 ? "int32"
                                                                                   : "float32");
    if (cache && !enu_parse_shape_suffix(cache->shape, c->o, &shp, why, sizeof why) && *cache->shape)
        cJSON_AddItemToObject(attrs, "shape", conv_shape_json(&shp));
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (b->has_pos) {
        cJSON *ui = cJSON_CreateObject();
        cJSON_AddNumberToObject(ui, "x", round(b->x));
        cJSON_AddNumberToObject(ui, "y", round(b->y));
        cJSON_AddItemToObject(blk, "ui", ui);
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "type", b->symbol);
    cJSON_AddStringToObject(x, "id", b->id);
    cJSON_AddStringToObject(x, "placeholder_for", port);
    cJSON_AddItemToObject(blk, "x-enuspace", x);
    cJSON_AddItemToArray(c->blocks, blk);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "for", b->id);
    cJSON_AddStringToObject(e, "port", port);
    cJSON_AddStringToObject(e, "placeholder", id);
    if (c->kind[i] == K_SYMGRAD) cJSON_Delete(e); /* built, not left as a Placeholder */
    else cJSON_AddItemToArray(c->r_placeholders, e);
    return id;
}

/* The blockflow source ("id" or "id:port") of wire `w`; NULL with the error set. */
static const char *source(conv *c, int w, char *buf, size_t size) {
    const enu_wire *wi = &c->g->wires[w];
    int s = enu_idmap_get(&c->ids, wi->from);
    const enu_block *sb = &c->g->blocks[s];
    char first[64];
    switch (c->kind[s]) {
    case K_CONST:
    case K_VARIABLE:
    case K_DATASET:
    case K_ONEHOT:
    case K_MAPPED: {
        const char *outs = c->kind[s] == K_CONST ? "output"
                           : c->kind[s] == K_VARIABLE ? "ref"
                           : c->kind[s] == K_DATASET ? "output"
                           : c->kind[s] == K_ONEHOT ? "dense" : c->op[s]->outputs;
        if (!in_list(outs, wi->from_pin)) {
            conv_fail(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" pin \"%.40s\", which "
                  "%s has no output of that name (outputs: %s)", wi->to, wi->to_pin, wi->from,
                  wi->from_pin, sb->symbol, outs);
            return NULL;
        }
        if (!strcmp(first_word(outs, first, sizeof first), wi->from_pin))
            snprintf(buf, size, "%s", c->newid[s]);
        else
            snprintf(buf, size, "%s:%s", c->newid[s], wi->from_pin);
        return buf;
    }
    case K_SYMGRAD:
        if (strncmp(wi->from_pin, "grad_outputs[", 13)) {
            conv_fail(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" pin \"%.40s\": "
                  "AddSymbolicGradients gives only grad_outputs[i]", wi->to, wi->to_pin, wi->from,
                  wi->from_pin);
            return NULL;
        }
        /* fall through - a Placeholder, replaced by the gradient when the page is built */
    case K_UNSUPPORTED: {
        const char *id = placeholder(c, s, wi->from_pin);
        if (!id) {
            conv_oom(c);
            return NULL;
        }
        snprintf(buf, size, "%s", id);
        return buf;
    }
    case K_ABSORBED:
        conv_fail(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" (%s), which is %s",
              wi->to, wi->to_pin, wi->from, sb->symbol, sb->absorbed);
        return NULL;
    default:
        conv_fail(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" (%s), which computes "
              "nothing a block can read", wi->to, wi->to_pin, wi->from, sb->symbol);
        return NULL;
    }
}

/* A Const for the literal text of unwired pin `pin` of block `i`. */
static const char *literal_const(conv *c, int i, const char *pin, int dt, int k) {
    enu_block *b = &c->g->blocks[i];
    const char *text = conv_pin_text(b, pin);
    enu_value v;
    char why[400];
    if (enu_parse_literal(text, dt, c->o, &v, why, sizeof why)) {
        conv_fail(c, "block \"%.60s\" (%s) pin \"%s\": %s", b->id, b->symbol, pin, why);
        return NULL;
    }
    if (v.dtype == ENU_STRING || v.dtype == ENU_BOOL) {
        conv_fail(c, "block \"%.60s\" (%s) pin \"%s\": a %s literal, and blockflow has no such dtype",
              b->id, b->symbol, pin, enu_dtype_name(v.dtype));
        enu_value_free(&v);
        return NULL;
    }
    char want[200];
    snprintf(want, sizeof want, "%s_%s", c->newid[i], pin);
    const char *id = conv_take_id(c, want);
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!id || !blk || !attrs) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        enu_value_free(&v);
        conv_oom(c);
        return NULL;
    }
    cJSON_AddStringToObject(blk, "id", id);
    cJSON_AddStringToObject(blk, "type", "Const");
    if (conv_put_value(c, attrs, id, &v)) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        enu_value_free(&v);
        return NULL;
    }
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (b->has_pos) {
        cJSON *ui = cJSON_CreateObject();
        cJSON_AddNumberToObject(ui, "x", round(b->x) - 170);
        cJSON_AddNumberToObject(ui, "y", round(b->y) + 50.0 * k - 30);
        cJSON_AddItemToObject(blk, "ui", ui);
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "literal_of", b->id);
    cJSON_AddStringToObject(x, "pin", pin);
    cJSON_AddStringToObject(x, "text", text);
    cJSON_AddItemToObject(blk, "x-enuspace", x);
    cJSON_AddItemToArray(c->blocks, blk);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "block", b->id);
    cJSON_AddStringToObject(e, "pin", pin);
    cJSON_AddStringToObject(e, "text", text);
    cJSON_AddStringToObject(e, "const", id);
    cJSON_AddStringToObject(e, "dtype", enu_dtype_name(v.dtype));
    cJSON_AddItemToObject(e, "shape", conv_shape_json(&v));
    cJSON_AddItemToArray(c->r_lits, e);
    enu_value_free(&v);
    return id;
}

static void add_ui(cJSON *blk, const enu_block *b) {
    if (!b->has_pos) return;
    cJSON *ui = cJSON_CreateObject();
    cJSON_AddNumberToObject(ui, "x", round(b->x));
    cJSON_AddNumberToObject(ui, "y", round(b->y));
    cJSON_AddItemToObject(blk, "ui", ui);
}

static cJSON *x_enuspace(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "type", b->symbol);
    if (strcmp(b->id, c->newid[i])) cJSON_AddStringToObject(x, "id", b->id);
    return x;
}

/* Emit mapped block `i`. */
static int emit_op(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    const enu_op *op = c->op[i];
    cJSON *blk = cJSON_CreateObject(), *ins = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!blk || !ins || !attrs) {
        cJSON_Delete(blk);
        cJSON_Delete(ins);
        cJSON_Delete(attrs);
        return conv_oom(c);
    }
    cJSON_AddStringToObject(blk, "id", c->newid[i]);
    cJSON_AddStringToObject(blk, "type", op->op);
    cJSON_AddItemToObject(blk, "inputs", ins);
    cJSON_AddItemToObject(blk, "attrs", attrs);
    int n_lit = 0;
    for (const char *p = op->inputs; *p;) {
        while (*p == ' ') p++;
        char spec[80], pin[40], port[40];
        size_t n = strcspn(p, " ");
        snprintf(spec, sizeof spec, "%.*s", (int)n, p);
        p += n;
        bool list = spec[0] == '*', optional = strchr(spec, '?') != NULL;
        char *s = spec + list, *colon = strchr(s, ':'), *gt = strchr(s, '>');
        int dt = -1;
        if (colon) {
            *colon = '\0';
            dt = !strncmp(colon + 1, "int32", 5) ? ENU_I32 : -1;
        }
        if (gt) *gt = '\0';
        snprintf(pin, sizeof pin, "%s", s);
        snprintf(port, sizeof port, "%s", gt ? gt + 1 : s);
        int w, nw = conv_wires_into(c, i, pin, &w);
        char ref[200];
        if (list) {
            int k = 0;
            for (int x = c->in_first[i]; x >= 0; x = c->in_next[x]) {
                if (strcmp(c->g->wires[x].to_pin, pin)) continue;
                char name[60];
                snprintf(name, sizeof name, "%s_%d", port, k++);
                const char *src = source(c, x, ref, sizeof ref);
                if (!src) goto fail;
                cJSON_AddStringToObject(ins, name, src);
            }
            if (k == 0) {
                conv_fail(c, "block \"%.60s\" (%s) list pin \"%s\" has no wire", b->id, b->symbol, pin);
                goto fail;
            }
        } else if (nw > 1) {
            conv_fail(c, "block \"%.60s\" (%s) pin \"%s\" takes one wire and has %d", b->id, b->symbol,
                  pin, nw);
            goto fail;
        } else if (nw == 1) {
            const char *src = source(c, w, ref, sizeof ref);
            if (!src) goto fail;
            cJSON_AddStringToObject(ins, port, src);
        } else if (*conv_pin_text(b, pin)) {
            const char *id = literal_const(c, i, pin, dt, n_lit++);
            if (!id) goto fail;
            cJSON_AddStringToObject(ins, port, id);
        } else if (!optional && !(!strcmp(port, "reduction_indices"))) {
            conv_fail(c, "block \"%.60s\" (%s) pin \"%s\" has neither a wire nor a value", b->id,
                  b->symbol, pin);
            goto fail;
        }
    }
    /* const pins and the attribute text */
    for (const char *p = op->consts; *p;) {
        while (*p == ' ') p++;
        char name[40];
        size_t n = strcspn(p, ":");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        char kind = p[n + 1];
        p += n + 2;
        const enu_pin *pp = enu_block_pin(b, name);
        if (!pp || !*pp->value) {
            conv_fail(c, "block \"%.60s\" (%s) pin \"%s\" is not set", b->id, b->symbol, name);
            goto fail;
        }
        if (conv_typed_attr(c, b, attrs, name, kind, pp->value, "pin")) goto fail;
    }
    const enu_pin *at = enu_block_pin(b, "attrs");
    if (at && *at->value && conv_attr_text(c, b, op, attrs, at->value)) goto fail;
    if (!cJSON_GetArraySize(ins)) cJSON_DeleteItemFromObject(blk, "inputs");
    if (!cJSON_GetArraySize(attrs)) cJSON_DeleteItemFromObject(blk, "attrs");
    add_ui(blk, b);
    cJSON_AddItemToObject(blk, "x-enuspace", x_enuspace(c, i));
    cJSON_AddItemToArray(c->blocks, blk);
    return 0;
fail:
    cJSON_Delete(blk);
    return -1;
}

/* Whether the `value` input of Assign block `a` depends on block `v` (1), not (0), -1 OOM. */
static int reaches(conv *c, int a, int v) {
    int n = c->g->n_blocks, *stack = malloc((size_t)n * sizeof(int) + sizeof(int));
    bool *seen = calloc((size_t)n + 1, sizeof(bool));
    if (!stack || !seen) {
        free(stack);
        free(seen);
        return conv_oom(c);
    }
    int top = 0, found = 0;
    for (int w = c->in_first[a]; w >= 0; w = c->in_next[w]) {
        int f = enu_idmap_get(&c->ids, c->g->wires[w].from);
        if (!strcmp(c->g->wires[w].to_pin, "value") && f >= 0 && !seen[f]) seen[f] = true, stack[top++] = f;
    }
    while (top && !found) {
        int b = stack[--top];
        if (b == v) found = 1;
        for (int w = c->in_first[b]; w >= 0; w = c->in_next[w]) {
            int f = enu_idmap_get(&c->ids, c->g->wires[w].from);
            if (f >= 0 && !seen[f]) seen[f] = true, stack[top++] = f;
        }
    }
    free(stack);
    free(seen);
    return found;
}

/* Emit Const or Variable `i`. */
static int emit_value_block(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!blk || !attrs) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        return conv_oom(c);
    }
    cJSON_AddStringToObject(blk, "id", c->newid[i]);
    cJSON_AddStringToObject(blk, "type", c->kind[i] == K_CONST ? "Const" : "Variable");
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (c->init[i]) {
        cJSON_AddStringToObject(attrs, "dtype", enu_dtype_name(c->vals[i].dtype));
        cJSON_AddItemToObject(attrs, "shape", conv_shape_json(&c->vals[i]));
        cJSON_AddStringToObject(attrs, "initializer", c->init[i]);
        if (strcmp(c->init[i], "zeros")) cJSON_AddNumberToObject(attrs, "seed", i + 1);
    } else if (conv_put_value(c, attrs, c->newid[i], &c->vals[i])) {
        cJSON_Delete(blk);
        return -1;
    }
    if (c->kind[i] == K_VARIABLE) {
        /* a Variable that an Assign sets to something not computed from itself holds data
           (a batch): it is not trained */
        for (int w = 0; w < c->g->n_wires; w++) {
            const enu_wire *wi = &c->g->wires[w];
            int t = strcmp(wi->from, b->id) ? -1 : enu_idmap_get(&c->ids, wi->to);
            if (t >= 0 && c->kind[t] == K_MAPPED && !strcmp(c->op[t]->op, "Assign") &&
                !strcmp(wi->to_pin, "ref")) {
                int r = reaches(c, t, i);
                if (r < 0) {
                    cJSON_Delete(blk);
                    return -1;
                }
                if (!r) cJSON_AddFalseToObject(attrs, "trainable");
                break;
            }
        }
        const enu_pin *at = enu_block_pin(b, "attrs");
        cJSON *scratch = cJSON_CreateObject();
        int r = at && *at->value ? conv_attr_text(c, b, NULL, scratch, at->value) : 0;
        cJSON_Delete(scratch);
        if (r) {
            cJSON_Delete(blk);
            return -1;
        }
    }
    add_ui(blk, b);
    cJSON_AddItemToObject(blk, "x-enuspace", x_enuspace(c, i));
    cJSON_AddItemToArray(c->blocks, blk);
    return 0;
}

/* A Const block of `n` numbers (rank 0 or 1) near block i; its id, or NULL. */
static const char *small_const(conv *c, int i, const char *suffix, enu_dtype dt, int rank,
                               const double *vals, int n) {
    char want[200];
    snprintf(want, sizeof want, "%s_%s", c->newid[i], suffix);
    const char *id = conv_take_id(c, want);
    if (!id) {
        conv_oom(c);
        return NULL;
    }
    enu_value v = {.dtype = dt, .rank = rank, .n = n, .d = (double *)vals};
    v.dims[0] = n;
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "id", id);
    cJSON_AddStringToObject(blk, "type", "Const");
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (conv_put_value(c, attrs, id, &v)) {
        cJSON_Delete(blk);
        return NULL;
    }
    const enu_block *b = &c->g->blocks[i];
    if (b->has_pos) {
        cJSON *ui = cJSON_CreateObject();
        cJSON_AddNumberToObject(ui, "x", round(b->x) - 170);
        cJSON_AddNumberToObject(ui, "y", round(b->y) + 60);
        cJSON_AddItemToObject(blk, "ui", ui);
    }
    cJSON_AddItemToArray(c->blocks, blk);
    return id;
}

static cJSON *op_block(const char *id, const char *type, const enu_block *b, double dx) {
    cJSON *blk = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "id", id);
    cJSON_AddStringToObject(blk, "type", type);
    if (b->has_pos) {
        cJSON *ui = cJSON_CreateObject();
        cJSON_AddNumberToObject(ui, "x", round(b->x) + dx);
        cJSON_AddNumberToObject(ui, "y", round(b->y));
        cJSON_AddItemToObject(blk, "ui", ui);
    }
    return blk;
}

/* The reader pipeline of DecodeRaw block i: Dataset + Reshape [-1, record_bytes] (7.9). */
static int emit_dataset(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    char want[200];
    snprintf(want, sizeof want, "%s_data", c->newid[i]);
    const char *data = conv_take_id(c, want);
    if (!data) return conv_oom(c);
    cJSON *ds = op_block(data, "Dataset", b, -170), *attrs = cJSON_CreateObject();
    cJSON_AddStringToObject(attrs, "file", conv_pin_text(b, "file"));
    cJSON_AddNumberToObject(attrs, "batch_size", atof(conv_pin_text(b, "batch_size")));
    cJSON_AddBoolToObject(attrs, "drop_remainder", true);
    cJSON_AddItemToObject(ds, "attrs", attrs);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "reader_of", b->id);
    cJSON_AddItemToObject(ds, "x-enuspace", x);
    cJSON_AddItemToArray(c->blocks, ds);
    double shape[2] = {-1, atof(conv_pin_text(b, "record_bytes"))};
    const char *sh = small_const(c, i, "shape", ENU_I32, 1, shape, 2);
    if (!sh) return -1;
    cJSON *rs = op_block(c->newid[i], "Reshape", b, 0), *ins = cJSON_CreateObject();
    char ref[220];
    snprintf(ref, sizeof ref, "%s:batch", data);
    cJSON_AddStringToObject(ins, "tensor", ref);
    cJSON_AddStringToObject(ins, "shape", sh);
    cJSON_AddItemToObject(rs, "inputs", ins);
    cJSON_AddItemToObject(rs, "x-enuspace", x_enuspace(c, i));
    cJSON_AddItemToArray(c->blocks, rs);
    return 0;
}

/* The one-hot chain ending in SparseToDense block i: OneHot(Reshape(labels, [-1]), ...). */
static int emit_one_hot(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    int w;
    if (conv_wires_into(c, i, "indices", &w) != 1)
        return conv_fail(c, "block \"%.60s\": the one-hot chain has no labels", b->id);
    char ref[200];
    const char *labels = source(c, w, ref, sizeof ref);
    if (!labels) return -1;
    char want[200];
    snprintf(want, sizeof want, "%s_indices", c->newid[i]);
    const char *flat = conv_take_id(c, want);
    if (!flat) return conv_oom(c);
    double minus1 = -1, depth = atof(conv_pin_text(b, "depth")),
           on = atof(conv_pin_text(b, "on")), off = atof(conv_pin_text(b, "off"));
    const char *sh = small_const(c, i, "flat", ENU_I32, 1, &minus1, 1);
    const char *dc = sh ? small_const(c, i, "depth", ENU_I32, 0, &depth, 1) : NULL;
    const char *onc = dc ? small_const(c, i, "on", ENU_I32, 0, &on, 1) : NULL;
    const char *offc = onc ? small_const(c, i, "off", ENU_I32, 0, &off, 1) : NULL;
    if (!offc) return -1;
    cJSON *rs = op_block(flat, "Reshape", b, -170), *ins = cJSON_CreateObject();
    cJSON_AddStringToObject(ins, "tensor", labels);
    cJSON_AddStringToObject(ins, "shape", sh);
    cJSON_AddItemToObject(rs, "inputs", ins);
    cJSON_AddItemToArray(c->blocks, rs);
    cJSON *oh = op_block(c->newid[i], "OneHot", b, 0);
    ins = cJSON_CreateObject();
    cJSON_AddStringToObject(ins, "indices", flat);
    cJSON_AddStringToObject(ins, "depth", dc);
    cJSON_AddStringToObject(ins, "on_value", onc);
    cJSON_AddStringToObject(ins, "off_value", offc);
    cJSON_AddItemToObject(oh, "inputs", ins);
    cJSON_AddItemToObject(oh, "x-enuspace", x_enuspace(c, i));
    cJSON_AddItemToArray(c->blocks, oh);
    return 0;
}

/* AddSymbolicGradients block i: an entry of the page's x-enuspace "symbolic_gradients" (its
 * outputs, its inputs and the Placeholder standing for each grad_outputs[k] read), which
 * enu_build_symbolic_gradients (symgrad.c) replaces by blockflow's own gradient blocks. */
static int symgrad_entry(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    cJSON *e = cJSON_CreateObject(), *outs = cJSON_CreateArray(), *ins = cJSON_CreateArray(),
          *ph = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "id", b->id);
    cJSON_AddItemToObject(e, "outputs", outs);
    cJSON_AddItemToObject(e, "inputs", ins);
    cJSON_AddItemToObject(e, "placeholders", ph);
    cJSON_AddItemToArray(c->r_symgrad, e);
    char ref[200];
    for (int w = c->in_first[i]; w >= 0; w = c->in_next[w]) {
        const char *pin = c->g->wires[w].to_pin;
        if (strcmp(pin, "outputs") && strcmp(pin, "inputs")) continue;
        const char *src = source(c, w, ref, sizeof ref);
        if (!src) return -1;
        cJSON_AddItemToArray(!strcmp(pin, "outputs") ? outs : ins, cJSON_CreateString(src));
    }
    for (int w = 0; w < c->g->n_wires; w++) {
        const enu_wire *wi = &c->g->wires[w];
        if (strcmp(wi->from, b->id) || cJSON_GetObjectItemCaseSensitive(ph, wi->from_pin)) continue;
        const char *id = placeholder(c, i, wi->from_pin);
        if (!id) return conv_oom(c);
        cJSON_AddStringToObject(ph, wi->from_pin, id);
    }
    char line[300];
    snprintf(line, sizeof line, "AddSymbolicGradients %s: d(outputs)/d(inputs) built by blockflow's "
             "gradient builder (grad --loss) when the page is written", b->id);
    cJSON_AddItemToArray(c->r_maps, cJSON_CreateString(line));
    return 0;
}

static void report_block(cJSON *arr, const enu_block *b, const char *key, const char *val) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "id", b->id);
    cJSON_AddStringToObject(e, "type", b->symbol);
    cJSON_AddStringToObject(e, key, val);
    cJSON_AddItemToArray(arr, e);
}

/* ---- the whole page ------------------------------------------------------------------------ */

static int classify(conv *c) {
    enu_graph *g = c->g;
    for (int i = 0; i < g->n_blocks; i++) {
        enu_block *b = &g->blocks[i];
        for (int k = 0; k < b->n_pins; k++) c->n_caches += !strncmp(b->pins[k].name, "result_", 7);
        if (b->absorbed)
            c->kind[i] = K_ABSORBED;
        else if (*b->task && strcmp(b->task, "tensorflow") && strncmp(b->task, "enu_tensorflow", 14))
            c->kind[i] = K_DISPLAY;
        else if (!strcmp(b->symbol, "blockflow.Dataset"))
            c->kind[i] = K_DATASET;
        else if (!strcmp(b->symbol, "blockflow.OneHot"))
            c->kind[i] = K_ONEHOT;
        else if (!strcmp(b->symbol, "ClientSession"))
            c->kind[i] = K_SESSION;
        else if (!strcmp(b->symbol, "Const") || !strcmp(b->symbol, "Const_ex"))
            c->kind[i] = K_CONST;
        else if (!strcmp(b->symbol, "Variable"))
            c->kind[i] = K_VARIABLE;
        else if (!strcmp(b->symbol, "Operation"))
            c->kind[i] = K_OPERATION;
        else if (!strcmp(b->symbol, "AddSymbolicGradients"))
            c->kind[i] = K_SYMGRAD;
        else if ((c->op[i] = enu_op_find(b->symbol)))
            c->kind[i] = K_MAPPED;
        else
            conv_unsupported(c, i, "no blockflow block for enuSpace's %s", b->symbol);
    }
    /* Consts first: a Variable's rule 1 reads them */
    for (int i = 0; i < g->n_blocks; i++)
        if (c->kind[i] == K_CONST && conv_const_value(c, i)) return -1;
    for (int i = 0; i < g->n_blocks; i++)
        if (c->kind[i] == K_VARIABLE && conv_variable_value(c, i)) return -1;
    return 0;
}

static int build(conv *c, cJSON *page) {
    enu_graph *g = c->g;
    if (enu_rewrite_pipelines(g, c->o, c->r_maps, c->err, c->errsz)) return -1;
    int nb = g->n_blocks, nw = g->n_wires;
    size_t nb1 = (size_t)(nb ? nb : 1), nw1 = (size_t)(nw ? nw : 1);
    c->newid = calloc(nb1, sizeof(char *));
    c->kind = calloc(nb1, sizeof(int));
    c->why = calloc(nb1, sizeof(char *));
    c->vals = calloc(nb1, sizeof(enu_value));
    c->init = calloc(nb1, sizeof(char *));
    c->op = calloc(nb1, sizeof(*c->op));
    c->in_first = malloc(nb1 * sizeof(int));
    c->in_last = malloc(nb1 * sizeof(int));
    c->in_next = malloc(nw1 * sizeof(int));
    if (!c->newid || !c->kind || !c->why || !c->vals || !c->init || !c->op || !c->in_first ||
        !c->in_last || !c->in_next)
        return conv_oom(c);
    for (int i = 0; i < nb; i++) {
        c->in_first[i] = c->in_last[i] = -1;
        if (!enu_idmap_put(&c->ids, g->blocks[i].id, i)) return conv_oom(c);
    }
    for (int w = 0; w < nw; w++) {
        enu_wire *wi = &g->wires[w];
        int f = enu_idmap_get(&c->ids, wi->from), t = enu_idmap_get(&c->ids, wi->to);
        if (f < 0 || t < 0)
            return conv_fail(c, "a wire from \"%.60s\" pin \"%.40s\" to \"%.60s\" pin \"%.40s\" names "
                         "no block \"%.60s\"", wi->from, wi->from_pin, wi->to, wi->to_pin,
                         f < 0 ? wi->from : wi->to);
        c->in_next[w] = -1;
        if (c->in_last[t] < 0) c->in_first[t] = w;
        else c->in_next[c->in_last[t]] = w;
        c->in_last[t] = w;
    }
    if (classify(c)) return -1;
    /* ids */
    for (int i = 0; i < nb; i++) {
        if (c->kind[i] == K_DISPLAY || c->kind[i] == K_SESSION || c->kind[i] == K_OPERATION ||
            c->kind[i] == K_ABSORBED)
            continue;
        c->newid[i] = (char *)conv_take_id(c, g->blocks[i].id);
        if (!c->newid[i]) return conv_oom(c);
    }
    /* unsupported blocks, with what they feed */
    int n_unsup = 0;
    for (int i = 0; i < nb; i++) {
        if (c->kind[i] != K_UNSUPPORTED) continue;
        n_unsup++;
        cJSON *e = cJSON_CreateObject(), *feeds = cJSON_CreateArray();
        cJSON_AddStringToObject(e, "id", g->blocks[i].id);
        cJSON_AddStringToObject(e, "type", g->blocks[i].symbol);
        cJSON_AddStringToObject(e, "why", c->why[i] ? c->why[i] : "");
        for (int w = 0; w < nw; w++) {
            if (strcmp(g->wires[w].from, g->blocks[i].id)) continue;
            char buf[300];
            snprintf(buf, sizeof buf, "%s:%s <- %s", g->wires[w].to, g->wires[w].to_pin,
                     g->wires[w].from_pin);
            cJSON_AddItemToArray(feeds, cJSON_CreateString(buf));
        }
        cJSON_AddItemToObject(e, "feeds", feeds);
        cJSON_AddItemToArray(c->r_unsup, e);
    }
    if (n_unsup && !c->o->partial) {
        char list[300] = "";
        size_t k = 0;
        for (int i = 0, shown = 0; i < nb && k < sizeof list - 1; i++)
            if (c->kind[i] == K_UNSUPPORTED && shown++ < 4)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s\"%.40s\" (%.40s)",
                                      shown > 1 ? ", " : "", g->blocks[i].id, g->blocks[i].symbol);
        return conv_fail(c, "%d block%s cannot be mapped: %s%s (the report lists each with what it "
                     "feeds; a partial import puts a Placeholder in place of each)", n_unsup,
                     n_unsup > 1 ? "s" : "", list, n_unsup > 4 ? ", ..." : "");
    }
    /* blocks, in document order */
    for (int i = 0; i < nb; i++) {
        enu_block *b = &g->blocks[i];
        switch (c->kind[i]) {
        case K_MAPPED:
            if (emit_op(c, i)) return -1;
            report_block(c->r_mapped, b, "op", c->op[i]->op);
            cJSON_AddStringToObject(cJSON_GetArrayItem(c->r_mapped,
                                                       cJSON_GetArraySize(c->r_mapped) - 1),
                                    "block", c->newid[i]);
            break;
        case K_CONST:
        case K_VARIABLE:
            if (emit_value_block(c, i)) return -1;
            report_block(c->r_mapped, b, "op", c->kind[i] == K_CONST ? "Const" : "Variable");
            cJSON_AddStringToObject(cJSON_GetArrayItem(c->r_mapped,
                                                       cJSON_GetArraySize(c->r_mapped) - 1),
                                    "block", c->newid[i]);
            break;
        case K_DATASET:
        case K_ONEHOT:
            if ((c->kind[i] == K_DATASET ? emit_dataset : emit_one_hot)(c, i)) return -1;
            report_block(c->r_mapped, b, "op", c->kind[i] == K_DATASET ? "Dataset" : "OneHot");
            cJSON_AddStringToObject(cJSON_GetArrayItem(c->r_mapped,
                                                       cJSON_GetArraySize(c->r_mapped) - 1),
                                    "block", c->newid[i]);
            break;
        case K_ABSORBED:
            report_block(c->r_dropped, b, "why", b->absorbed);
            break;
        case K_SYMGRAD:
            if (symgrad_entry(c, i)) return -1;
            report_block(c->r_mapped, b, "op", "grad (blockflow's gradient builder)");
            cJSON_AddStringToObject(cJSON_GetArrayItem(c->r_mapped,
                                                       cJSON_GetArraySize(c->r_mapped) - 1),
                                    "block", c->newid[i]);
            break;
        case K_DISPLAY:
            report_block(c->r_dropped, b, "why", "a display block (enuSpace's own, not the plugin's)");
            break;
        case K_SESSION:
            report_block(c->r_dropped, b, "why", "the ClientSession: its fetches are the page's "
                                                  "outputs, its targets run every step");
            break;
        case K_OPERATION:
            report_block(c->r_dropped, b, "why", "an Operation (a run target): the update blocks "
                                                  "it runs run every step in blockflow");
            break;
        default:
            break;
        }
    }
    /* outputs and the training step, from the ClientSession(s) */
    /* every object is attached as soon as it is made: an early error frees it with the page */
    cJSON *outputs = cJSON_CreateArray(), *sessions = cJSON_CreateArray(), *x = cJSON_CreateObject();
    cJSON_AddItemToObject(page, "outputs", outputs);
    cJSON_AddItemToObject(page, "x-enuspace", x);
    cJSON_AddStringToObject(x, "source", g->is_json ? "task-json" : "svg");
    if (*g->version) cJSON_AddStringToObject(x, "enuspace_version", g->version);
    cJSON_AddItemToObject(x, "sessions", sessions);
    int n_sessions = 0;
    for (int i = 0; i < nb; i++) {
        if (c->kind[i] != K_SESSION) continue;
        n_sessions++;
        enu_block *b = &g->blocks[i];
        cJSON *s = cJSON_CreateObject(), *targets = cJSON_CreateArray();
        cJSON_AddItemToArray(sessions, s);
        cJSON_AddStringToObject(s, "id", b->id);
        const char *loop = conv_pin_text(b, "INFINITE_LOOP"), *dbg = conv_pin_text(b, "SHOW_DEBUG");
        cJSON_AddBoolToObject(s, "infinite_loop", !strcmp(loop, "TRUE") || !strcmp(loop, "true") ||
                                                      !strcmp(loop, "1"));
        cJSON_AddBoolToObject(s, "show_debug", !strcmp(dbg, "TRUE") || !strcmp(dbg, "true") ||
                                                   !strcmp(dbg, "1"));
        cJSON_AddStringToObject(s, "device", conv_pin_text(b, "device"));
        for (int w = c->in_first[i]; w >= 0; w = c->in_next[w]) {
            enu_wire *wi = &g->wires[w];
            char ref[200];
            if (!strcmp(wi->to_pin, "fetch_outputs")) {
                int f = enu_idmap_get(&c->ids, wi->from);
                if (c->kind[f] == K_OPERATION || c->kind[f] == K_DISPLAY || c->kind[f] == K_SESSION) {
                    conv_note(c, "fetch of \"%s\" (%s) dropped: not a tensor", wi->from,
                         g->blocks[f].symbol);
                    continue;
                }
                if (c->kind[f] == K_ABSORBED) {
                    conv_note(c, "fetch of \"%s\" (%s) dropped: it is %s", wi->from,
                         g->blocks[f].symbol, g->blocks[f].absorbed);
                    continue;
                }
                const char *src = source(c, w, ref, sizeof ref);
                if (!src) {
                    cJSON_Delete(targets);
                    return -1;
                }
                bool dup = false;
                cJSON *o;
                cJSON_ArrayForEach(o, outputs) dup = dup || !strcmp(o->valuestring, src);
                if (!dup) cJSON_AddItemToArray(outputs, cJSON_CreateString(src));
            } else if (!strcmp(wi->to_pin, "run_outputs")) {
                cJSON_AddItemToArray(targets, cJSON_CreateString(wi->from));
            } else if (!strcmp(wi->to_pin, "inputs")) {
                conv_note(c, "ClientSession \"%s\": the feed from \"%s\" is not kept (feed it with "
                     "--feed)", b->id, wi->from);
            }
        }
        cJSON_AddItemToObject(s, "run_targets", targets);
    }
    if (n_sessions > 1) conv_note(c, "%d ClientSessions: their fetches are merged", n_sessions);
    if (n_sessions == 0) {
        /* no session: every block nothing reads is an output */
        for (int i = 0; i < nb; i++) {
            if (c->kind[i] != K_MAPPED && c->kind[i] != K_CONST && c->kind[i] != K_VARIABLE)
                continue;
            bool read = false;
            for (int w = 0; w < nw && !read; w++) {
                int t = enu_idmap_get(&c->ids, g->wires[w].to);
                read = !strcmp(g->wires[w].from, g->blocks[i].id) && c->kind[t] != K_DISPLAY;
            }
            if (!read) cJSON_AddItemToArray(outputs, cJSON_CreateString(c->newid[i]));
        }
        conv_note(c, "no ClientSession: the blocks nothing reads are the outputs");
    }
    if (cJSON_GetArraySize(c->r_symgrad))
        cJSON_AddItemToObject(x, "symbolic_gradients", cJSON_Duplicate(c->r_symgrad, true));
    cJSON *idmap = cJSON_CreateObject(); /* enuSpace ids blockflow could not keep */
    for (int i = 0; i < nb; i++)
        if (c->newid[i] && strcmp(c->newid[i], g->blocks[i].id))
            cJSON_AddStringToObject(idmap, g->blocks[i].id, c->newid[i]);
    if (cJSON_GetArraySize(idmap)) cJSON_AddItemToObject(x, "ids", idmap);
    else cJSON_Delete(idmap);
    cJSON_AddItemToObject(c->report, "outputs", cJSON_Duplicate(outputs, true));
    cJSON_AddItemToObject(c->report, "sessions", cJSON_Duplicate(sessions, true));
    return 0;
}

void enu_options_init(enu_options *o) {
    memset(o, 0, sizeof(*o));
    o->max_elements = (int64_t)1 << 26;
    o->max_input_bytes = (size_t)256 << 20;
    o->max_depth = 64;
    o->inline_limit = 100;
}

int enu_import(const unsigned char *page, size_t page_len, const unsigned char *dat,
               size_t dat_len, const enu_options *opt, enu_result *out) {
    memset(out, 0, sizeof(*out));
    enu_options o;
    if (opt) o = *opt;
    else enu_options_init(&o);
    if (o.max_elements <= 0) o.max_elements = (int64_t)1 << 26;
    if (!o.max_input_bytes) o.max_input_bytes = (size_t)256 << 20;
    if (o.max_depth <= 0) o.max_depth = 64;
    if (o.inline_limit < 0) o.inline_limit = 100;
    if (dat && dat_len > o.max_input_bytes) {
        snprintf(out->error, sizeof out->error, "the .dat file is %zu bytes, more than the limit "
                 "of %zu", dat_len, o.max_input_bytes);
        return -1;
    }
    enu_graph g;
    if (enu_read_page(page, page_len, &o, &g, out->error, sizeof out->error)) {
        enu_graph_free(&g);
        return -1;
    }
    conv c = {.g = &g, .o = &o, .dat = dat, .dat_len = dat_len, .err = out->error,
              .errsz = sizeof out->error};
    cJSON *pg = cJSON_CreateObject();
    c.blocks = cJSON_CreateArray();
    c.report = cJSON_CreateObject();
    c.r_mapped = cJSON_CreateArray();
    c.r_dropped = cJSON_CreateArray();
    c.r_unsup = cJSON_CreateArray();
    c.r_dat = cJSON_CreateArray();
    c.r_lits = cJSON_CreateArray();
    c.r_notes = cJSON_CreateArray();
    c.r_placeholders = cJSON_CreateArray();
    c.r_maps = cJSON_CreateArray();
    c.r_symgrad = cJSON_CreateArray();
    int r = -1;
    bool attached = false;
    if (!pg || !c.blocks || !c.report || !c.r_mapped || !c.r_dropped || !c.r_unsup || !c.r_dat ||
        !c.r_lits || !c.r_notes || !c.r_placeholders || !c.r_maps || !c.r_symgrad) {
        conv_oom(&c);
        goto done;
    }
    const char *name = o.page_name && *o.page_name ? o.page_name : "page";
    cJSON_AddStringToObject(pg, "format", "blockflow.page");
    cJSON_AddNumberToObject(pg, "version", 1);
    cJSON_AddStringToObject(pg, "name", name);
    char desc[300];
    snprintf(desc, sizeof desc, "Imported from the enuSpace-Tensorflow %s \"%s\" by blockflow import.",
             g.is_json ? "Task JSON export" : "page", name);
    cJSON_AddStringToObject(pg, "description", desc);
    cJSON_AddItemToObject(pg, "blocks", c.blocks);
    attached = true;
    cJSON_AddStringToObject(c.report, "page", name);
    cJSON_AddStringToObject(c.report, "source", g.is_json ? "task-json" : "svg");
    cJSON_AddStringToObject(c.report, "enuspace_version", g.version ? g.version : "");
    cJSON_AddNumberToObject(c.report, "blocks_read", g.n_blocks);
    cJSON_AddNumberToObject(c.report, "wires_read", g.n_wires);
    cJSON_AddItemToObject(c.report, "mapped", c.r_mapped);
    cJSON_AddItemToObject(c.report, "mappings", c.r_maps);
    cJSON_AddItemToObject(c.report, "literals", c.r_lits);
    cJSON_AddItemToObject(c.report, "dropped", c.r_dropped);
    cJSON_AddItemToObject(c.report, "unsupported", c.r_unsup);
    cJSON_AddItemToObject(c.report, "placeholders", c.r_placeholders);
    cJSON_AddItemToObject(c.report, "dat_values", c.r_dat);
    cJSON_AddItemToObject(c.report, "notes", c.r_notes);
    r = build(&c, pg);
    cJSON_AddNumberToObject(c.report, "result_caches_dropped", c.n_caches);
    cJSON_AddBoolToObject(c.report, "ok", r == 0);
    if (r) cJSON_AddStringToObject(c.report, "error", out->error);
    out->report_json = cJSON_PrintUnformatted(c.report);
    if (!r) {
        out->page_json = cJSON_Print(pg);
        if (!out->page_json || !out->report_json) {
            snprintf(out->error, sizeof out->error, "out of memory");
            r = -1;
        }
    }
    if (!r) {
        out->files = c.files;
        out->n_files = c.n_files;
        c.files = NULL;
        c.n_files = 0;
    }
done:
    if (!attached) {
        cJSON_Delete(c.blocks);
        cJSON_Delete(c.r_mapped);
        cJSON_Delete(c.r_dropped);
        cJSON_Delete(c.r_unsup);
        cJSON_Delete(c.r_dat);
        cJSON_Delete(c.r_lits);
        cJSON_Delete(c.r_notes);
        cJSON_Delete(c.r_placeholders);
        cJSON_Delete(c.r_maps);
    }
    cJSON_Delete(pg);
    cJSON_Delete(c.r_symgrad);
    cJSON_Delete(c.report);
    for (int i = 0; i < c.n_files; i++) {
        free(c.files[i].name);
        free(c.files[i].data);
    }
    free(c.files);
    for (int i = 0; i < g.n_blocks && c.vals; i++) {
        enu_value_free(&c.vals[i]);
        free(c.why[i]);
    }
    for (int i = 0; i < c.n_strs; i++) free(c.strs[i]);
    free(c.strs);
    free(c.newid);
    free(c.kind);
    free(c.why);
    free(c.vals);
    free(c.init);
    free(c.op);
    free(c.in_first);
    free(c.in_last);
    free(c.in_next);
    enu_idmap_free(&c.ids);
    enu_idmap_free(&c.used);
    enu_idmap_free(&c.ph);
    enu_idmap_free(&c.fnames);
    enu_graph_free(&g);
    if (r) {
        free(out->page_json);
        out->page_json = NULL;
    }
    return r;
}

void enu_result_free(enu_result *r) {
    free(r->page_json);
    free(r->report_json);
    for (int i = 0; i < r->n_files; i++) {
        free(r->files[i].name);
        free(r->files[i].data);
    }
    free(r->files);
    memset(r, 0, sizeof(*r));
}
