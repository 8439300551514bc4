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
 */
#include "graph.h"
#include "idmap.h"
#include "ops.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_MAPPED, K_CONST, K_VARIABLE, K_DISPLAY, K_SESSION, K_OPERATION, K_UNSUPPORTED };

typedef struct conv {
    enu_graph *g;
    const enu_options *o;
    const unsigned char *dat;
    size_t dat_len;
    enu_idmap ids;      /* enuSpace id -> block index */
    enu_idmap used;     /* blockflow ids taken */
    char **newid;       /* per block */
    int *kind;
    char **why;         /* per block: why it is unsupported */
    enu_value *vals;    /* per block: the value of a Const or the initial value of a Variable */
    const enu_op **op;
    int *in_first, *in_last, *in_next; /* wires into each block, in document order */
    char **strs;        /* strings owned for `used` */
    int n_strs, cap_strs;
    cJSON *blocks, *report, *r_mapped, *r_dropped, *r_unsup, *r_dat, *r_lits, *r_notes,
        *r_placeholders;
    enu_idmap ph;       /* "id\x1fport" -> placeholder string index */
    enu_idmap fnames;   /* .npy file names taken */
    enu_file *files;
    int n_files, cap_files;
    char *err;
    size_t errsz;
    int n_caches;
} conv;

static int failf(conv *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errsz, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(conv *c) { return failf(c, "out of memory"); }

static void note(conv *c, const char *fmt, ...) {
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(c->r_notes, cJSON_CreateString(buf));
}

/* Keep `s` (a new string) alive until the end; NULL on OOM. */
static const char *own(conv *c, char *s) {
    if (!s) return NULL;
    if (c->n_strs == c->cap_strs) {
        int nc = c->cap_strs ? c->cap_strs * 2 : 64;
        char **p = realloc(c->strs, (size_t)nc * sizeof(*p));
        if (!p) {
            free(s);
            return NULL;
        }
        c->strs = p;
        c->cap_strs = nc;
    }
    c->strs[c->n_strs++] = s;
    return s;
}

static bool id_ok(const char *id) {
    size_t n = strlen(id);
    if (n == 0 || n > 63 || id[0] == '.') return false;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == ':' || *p == '/' || *p == '\\' || *p == '"')
            return false;
    return true;
}

/* A blockflow id for `want` not taken yet: `want` itself when valid and free, else made
 * valid (bad characters to '_', at most 55 bytes) and numbered. */
static const char *take_id(conv *c, const char *want) {
    char base[64];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)want; *p && n < 55; p++) {
        unsigned char ch = *p;
        if (ch >= 0x80) { /* keep whole UTF-8 sequences only if they fit */
            size_t k = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : 2;
            if (n + k > 55) break;
            for (size_t i = 0; i < k && p[i]; i++) base[n++] = (char)p[i];
            p += k - 1;
            continue;
        }
        base[n++] = ch < 0x20 || ch == 0x7f || ch == ':' || ch == '/' || ch == '\\' || ch == '"'
                        ? '_' : (char)ch;
    }
    base[n] = '\0';
    if (n == 0 || base[0] == '.') {
        memmove(base + 1, base, n + 1);
        base[0] = 'b';
    }
    char cand[80];
    snprintf(cand, sizeof cand, "%s", base);
    for (int k = 2; enu_idmap_get(&c->used, cand) >= 0 || !id_ok(cand); k++) {
        if (k > 1000000) return NULL;
        snprintf(cand, sizeof cand, "%s_%d", base, k);
    }
    const char *s = own(c, strdup(cand));
    if (!s || !enu_idmap_put(&c->used, s, 1)) return NULL;
    return s;
}

/* ---- values ------------------------------------------------------------------------------ */

static cJSON *nested(const enu_value *v, int dim, int64_t *k) {
    if (dim == v->rank) return cJSON_CreateNumber(v->d[(*k)++]);
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; a && i < v->dims[dim]; i++) {
        cJSON *e = nested(v, dim + 1, k);
        if (!e) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static cJSON *shape_json(const enu_value *v) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < v->rank; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->dims[i]));
    return a;
}

/* dtype and value (inline, or a .npy file named after `id`) of a Const or Variable. */
static int put_value(conv *c, cJSON *attrs, const char *id, const enu_value *v) {
    cJSON_AddStringToObject(attrs, "dtype", enu_dtype_name(v->dtype));
    if (v->n == 0) cJSON_AddItemToObject(attrs, "shape", shape_json(v));
    if (v->n <= c->o->inline_limit) {
        int64_t k = 0;
        cJSON *val = nested(v, 0, &k);
        if (!val) return oom(c);
        cJSON_AddItemToObject(attrs, "value", val);
        return 0;
    }
    if (c->n_files == c->cap_files) {
        int nc = c->cap_files ? c->cap_files * 2 : 8;
        enu_file *p = realloc(c->files, (size_t)nc * sizeof(*p));
        if (!p) return oom(c);
        c->files = p;
        c->cap_files = nc;
    }
    enu_file *f = &c->files[c->n_files];
    memset(f, 0, sizeof(*f));
    /* prefix + id with [A-Za-z0-9._-] only, numbered when two ids give one name */
    char base[160], name[200];
    const char *pre = c->o->file_prefix ? c->o->file_prefix : "";
    size_t k = 0;
    for (const char *q = pre; *q && k < 60; q++) base[k++] = *q;
    for (const unsigned char *q = (const unsigned char *)id; *q && k < 120; q++)
        base[k++] = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                            (*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '_'
                        ? (char)*q : '_';
    base[k] = '\0';
    if (base[0] == '.') base[0] = '_';
    snprintf(name, sizeof name, "%s.npy", base);
    for (int i = 2; enu_idmap_get(&c->fnames, name) >= 0; i++)
        snprintf(name, sizeof name, "%s_%d.npy", base, i);
    f->name = strdup(name);
    if (!f->name || !enu_idmap_put(&c->fnames, f->name, 1)) {
        free(f->name);
        return oom(c);
    }
    if (enu_npy_bytes(v, &f->data, &f->size)) {
        free(f->name);
        return oom(c);
    }
    c->n_files++;
    cJSON_AddStringToObject(attrs, "file", f->name);
    return 0;
}

static const char *pin_value_text(const enu_block *b, const char *pin) {
    const enu_pin *p = enu_block_pin(b, pin);
    return p ? p->value : "";
}

/* Read a binary or text pin, recording .dat reads in the report; errors name block and pin. */
static int read_pin(conv *c, const enu_block *b, const enu_pin *p, enu_value *v) {
    char why[400];
    if (enu_pin_value(c->dat, c->dat_len, p, c->o, v, why, sizeof why))
        return failf(c, "block \"%.60s\" (%.40s) pin \"%.40s\": %s", b->id, b->symbol, p->name,
                     why);
    if (p->binary) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "block", b->id);
        cJSON_AddStringToObject(e, "pin", p->name);
        cJSON_AddNumberToObject(e, "offset", (double)p->pos);
        cJSON_AddNumberToObject(e, "values", (double)v->n);
        cJSON_AddStringToObject(e, "dtype", enu_dtype_name(v->dtype));
        cJSON_AddItemToArray(c->r_dat, e);
    }
    return 0;
}

static void unsupported(conv *c, int i, const char *fmt, ...) {
    char buf[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->kind[i] = K_UNSUPPORTED;
    free(c->why[i]);
    c->why[i] = strdup(buf);
}

/* The value of Const / Const_ex `i` (7.5). 0, or -1 on a hard error; an unsupported dtype
 * marks the block. */
static int const_value(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    enu_pin *val = enu_block_pin(b, "val");
    if (!val) return failf(c, "block \"%.60s\" (%s) has no \"val\" pin", b->id, b->symbol);
    enu_value *v = &c->vals[i];
    char why[400];
    int dt = -1;
    if (!strcmp(b->symbol, "Const_ex") && !val->binary) {
        const char *d = pin_value_text(b, "dtype");
        dt = *d ? enu_dtype_from_tf(d, why, sizeof why) : ENU_F64;
        if (dt < 0) {
            unsupported(c, i, "%s", why);
            return 0;
        }
    }
    if (val->binary) return read_pin(c, b, val, v);
    int vt = enu_dtype_from_var_type(val->type);
    if (dt < 0) dt = vt;
    int r;
    if (dt == ENU_STRING) {
        r = enu_parse_literal(val->value, ENU_STRING, c->o, v, why, sizeof why);
    } else if (vt < 0 && !*val->shape) {
        /* a string-typed pin: the text is a literal ("{1,2}", "0.1") */
        r = enu_parse_literal(val->value, dt, c->o, v, why, sizeof why);
    } else {
        r = enu_parse_typed_text(val->value, val->shape, (enu_dtype)(dt < 0 ? ENU_F64 : dt), c->o,
                                 v, why, sizeof why);
    }
    if (r) return failf(c, "block \"%.60s\" (%s) pin \"val\": %s", b->id, b->symbol, why);
    if (v->dtype == ENU_STRING)
        unsupported(c, i, "a string constant (\"%.60s\"): blockflow has no string dtype", v->s);
    else if (v->dtype == ENU_BOOL)
        unsupported(c, i, "a bool constant: blockflow has no bool dtype");
    return 0;
}

static int wires_into(const conv *c, int i, const char *pin, int *first) {
    int n = 0;
    *first = -1;
    for (int w = c->in_first[i]; w >= 0; w = c->in_next[w])
        if (!strcmp(c->g->wires[w].to_pin, pin)) {
            if (*first < 0) *first = w;
            n++;
        }
    return n;
}

/* The initial value of Variable `i` (7.5, rules 1-3). */
static int variable_value(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    enu_value *v = &c->vals[i];
    char why[400];
    const char *dtype = pin_value_text(b, "dtype");
    enu_pin *iv = enu_block_pin(b, "initvalues");
    int w, nw = wires_into(c, i, "initvalues", &w);
    if (nw > 1) return failf(c, "block \"%.60s\" (Variable) pin \"initvalues\" has %d wires", b->id, nw);
    if (nw == 1) { /* rule 1: the wired constant */
        int s = enu_idmap_get(&c->ids, c->g->wires[w].from);
        if (s < 0 || c->kind[s] != K_CONST) {
            unsupported(c, i, "its initvalues are wired from \"%.60s\", not from a Const",
                        c->g->wires[w].from);
            return 0;
        }
        if (!c->vals[s].d) return 0; /* that Const is unsupported itself */
        *v = c->vals[s];
        v->d = malloc((size_t)(v->n ? v->n : 1) * sizeof(double));
        v->s = NULL;
        if (!v->d) return oom(c);
        memcpy(v->d, c->vals[s].d, (size_t)v->n * sizeof(double));
        note(c, "Variable \"%s\": initial value from Const \"%s\" (the wire is not kept)", b->id,
             c->g->wires[w].from);
    } else if (!iv) {
        return failf(c, "block \"%.60s\" (Variable) has no \"initvalues\" pin", b->id);
    } else if (!iv->binary && enu_dtype_from_var_type(iv->type) < 0) { /* rule 2: a literal */
        if (!*dtype)
            return failf(c, "block \"%.60s\" (Variable) pin \"initvalues\": a literal needs the "
                         "\"dtype\" pin", b->id);
        int dt = enu_dtype_from_tf(dtype, why, sizeof why);
        if (dt < 0) {
            unsupported(c, i, "%s", why);
            return 0;
        }
        if (enu_parse_literal(iv->value, dt, c->o, v, why, sizeof why))
            return failf(c, "block \"%.60s\" (Variable) pin \"initvalues\": %s", b->id, why);
        const char *shape = pin_value_text(b, "shape");
        int64_t dims[ENU_MAX_RANK + 1];
        int n;
        if (*shape) {
            if (enu_parse_int_list(shape, dims, ENU_MAX_RANK + 1, &n, why, sizeof why))
                return failf(c, "block \"%.60s\" (Variable) pin \"shape\": %s", b->id, why);
            bool same = n == v->rank;
            for (int k = 0; same && k < n; k++) same = dims[k] == v->dims[k];
            if (!same)
                return failf(c, "block \"%.60s\" (Variable): pin \"shape\" %.40s differs from the "
                             "shape of its initvalues %.60s (TensorFlow's Assign refuses it)",
                             b->id, shape, iv->value);
        }
    } else { /* rule 3: a typed value, text or binary */
        if (*dtype)
            return failf(c, "block \"%.60s\" (Variable): typed initvalues together with dtype "
                         "%.20s (the plugin creates no Variable then: clear the dtype pin)",
                         b->id, dtype);
        if (read_pin(c, b, iv, v)) return -1;
    }
    if (v->dtype != ENU_F32 && v->dtype != ENU_F64)
        unsupported(c, i, "a %s Variable: blockflow's Variables hold floats",
                    v->dtype == ENU_I32 ? "int32" : enu_dtype_name(v->dtype));
    return 0;
}

/* ---- attribute text ------------------------------------------------------------------------ */

/* The type letter `name` has in spec "a:b c:l", or 0. */
static char spec_kind(const char *spec, const char *name, size_t len) {
    const char *p = spec;
    while (*p) {
        while (*p == ' ') p++;
        const char *s = p;
        while (*p && *p != ':' && *p != ' ') p++;
        if ((size_t)(p - s) == len && !strncmp(s, name, len) && *p == ':') return p[1];
        while (*p && *p != ' ') p++;
    }
    return 0;
}

static int typed_attr(conv *c, const enu_block *b, cJSON *attrs, const char *name, char kind,
                      const char *val, const char *pin) {
    char why[300];
    if (kind == 'b') {
        cJSON_AddBoolToObject(attrs, name, !strcmp(val, "true") || !strcmp(val, "TRUE") ||
                                               !strcmp(val, "1"));
    } else if (kind == 'i') {
        char *e;
        long long x = strtoll(val, &e, 10);
        if (e == val || *e)
            return failf(c, "block \"%.60s\" (%s) %s \"%s\": \"%.40s\" is not an integer", b->id,
                         b->symbol, pin, name, val);
        cJSON_AddNumberToObject(attrs, name, (double)x);
    } else if (kind == 'l' || kind == 'L') {
        int64_t xs[16];
        int n;
        if (enu_parse_int_list(val, xs, 16, &n, why, sizeof why))
            return failf(c, "block \"%.60s\" (%s) %s \"%s\": %s", b->id, b->symbol, pin, name,
                         why);
        if (kind == 'L' && !strncmp(c->g->version, "4.", 2)) {
            note(c, "block \"%s\": %s is not read by the 2.0 plugin (default used)", b->id, name);
            return 0;
        }
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; k < n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)xs[k]));
        cJSON_AddItemToObject(attrs, name, a);
    } else if (kind == 't') {
        int dt = enu_dtype_from_tf(val, why, sizeof why);
        if (dt < 0 || dt == ENU_STRING || dt == ENU_BOOL)
            return failf(c, "block \"%.60s\" (%s) %s \"%s\": %s", b->id, b->symbol, pin, name,
                         dt < 0 ? why : "blockflow has no bool or string dtype");
        cJSON_AddStringToObject(attrs, name, enu_dtype_name((enu_dtype)dt));
    } else if (kind == 's') {
        cJSON_AddStringToObject(attrs, name, val);
    }
    return 0;
}

/* "transpose_a_ = false;transpose_b_ = true;" (7.4): spaces, CR and LF removed, split on ';'
 * and the first '=', first occurrence kept, trailing '_' dropped, empty values unset. */
static int attr_text(conv *c, const enu_block *b, const enu_op *op, cJSON *attrs,
                     const char *text) {
    size_t n = strlen(text);
    char *t = malloc(n + 1), *o = t;
    if (!t) return oom(c);
    for (const char *p = text; *p; p++)
        if (*p != ' ' && *p != '\r' && *p != '\n' && *p != '\t') *o++ = *p;
    *o = '\0';
    int r = 0;
    for (char *item = t; item && *item && !r;) {
        char *semi = strchr(item, ';');
        if (semi) *semi = '\0';
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = '\0';
            char *name = item, *val = eq + 1;
            size_t len = strlen(name);
            if (len && name[len - 1] == '_') name[--len] = '\0';
            char kind = op ? spec_kind(op->attrs, name, len) : 0;
            if (!*val) {
            } else if (cJSON_GetObjectItemCaseSensitive(attrs, name)) {
                note(c, "block \"%s\": attribute %s_ given twice, the first kept", b->id, name);
            } else if (kind == '-') {
                note(c, "block \"%s\": %s_ is read and discarded by the plugin", b->id, name);
            } else if (kind) {
                r = typed_attr(c, b, attrs, name, kind, val, "attribute");
            } else if (strcmp(name, "container") && strcmp(name, "shared_name")) {
                note(c, "block \"%s\": attribute text \"%s_\" is not one %s reads (ignored, as "
                     "the plugin ignores it)", b->id, name, b->symbol);
            }
        }
        item = semi ? semi + 1 : NULL;
    }
    free(t);
    return r;
}

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
        id = take_id(c, want);
        if (!id) return NULL;
    }
    if (!own(c, strdup(id))) return NULL;
    int idx = c->n_strs - 1;
    id = c->strs[idx];
    const char *kk = own(c, strdup(key)), *mm = own(c, strdup(mark));
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
        cJSON_AddItemToObject(attrs, "shape", shape_json(&shp));
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
    cJSON_AddItemToArray(c->r_placeholders, e);
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
    case K_MAPPED: {
        const char *outs = c->kind[s] == K_CONST ? "output"
                           : c->kind[s] == K_VARIABLE ? "ref" : c->op[s]->outputs;
        if (!in_list(outs, wi->from_pin)) {
            failf(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" pin \"%.40s\", which "
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
    case K_UNSUPPORTED: {
        const char *id = placeholder(c, s, wi->from_pin);
        if (!id) {
            oom(c);
            return NULL;
        }
        snprintf(buf, size, "%s", id);
        return buf;
    }
    default:
        failf(c, "block \"%.60s\" pin \"%.40s\" is wired from \"%.60s\" (%s), which computes "
              "nothing a block can read", wi->to, wi->to_pin, wi->from, sb->symbol);
        return NULL;
    }
}

/* A Const for the literal text of unwired pin `pin` of block `i`. */
static const char *literal_const(conv *c, int i, const char *pin, int dt, int k) {
    enu_block *b = &c->g->blocks[i];
    const char *text = pin_value_text(b, pin);
    enu_value v;
    char why[400];
    if (enu_parse_literal(text, dt, c->o, &v, why, sizeof why)) {
        failf(c, "block \"%.60s\" (%s) pin \"%s\": %s", b->id, b->symbol, pin, why);
        return NULL;
    }
    if (v.dtype == ENU_STRING || v.dtype == ENU_BOOL) {
        failf(c, "block \"%.60s\" (%s) pin \"%s\": a %s literal, and blockflow has no such dtype",
              b->id, b->symbol, pin, enu_dtype_name(v.dtype));
        enu_value_free(&v);
        return NULL;
    }
    char want[200];
    snprintf(want, sizeof want, "%s_%s", c->newid[i], pin);
    const char *id = take_id(c, want);
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!id || !blk || !attrs) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        enu_value_free(&v);
        oom(c);
        return NULL;
    }
    cJSON_AddStringToObject(blk, "id", id);
    cJSON_AddStringToObject(blk, "type", "Const");
    if (put_value(c, attrs, id, &v)) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        enu_value_free(&v);
        return NULL;
    }
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (b->has_pos) {
        cJSON *ui = cJSON_CreateObject();
        cJSON_AddNumberToObject(ui, "x", round(b->x) - 140);
        cJSON_AddNumberToObject(ui, "y", round(b->y) + 60.0 * k);
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
    cJSON_AddItemToObject(e, "shape", shape_json(&v));
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
        return oom(c);
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
        int w, nw = wires_into(c, i, pin, &w);
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
                failf(c, "block \"%.60s\" (%s) list pin \"%s\" has no wire", b->id, b->symbol, pin);
                goto fail;
            }
        } else if (nw > 1) {
            failf(c, "block \"%.60s\" (%s) pin \"%s\" takes one wire and has %d", b->id, b->symbol,
                  pin, nw);
            goto fail;
        } else if (nw == 1) {
            const char *src = source(c, w, ref, sizeof ref);
            if (!src) goto fail;
            cJSON_AddStringToObject(ins, port, src);
        } else if (*pin_value_text(b, pin)) {
            const char *id = literal_const(c, i, pin, dt, n_lit++);
            if (!id) goto fail;
            cJSON_AddStringToObject(ins, port, id);
        } else if (!optional && !(!strcmp(port, "reduction_indices"))) {
            failf(c, "block \"%.60s\" (%s) pin \"%s\" has neither a wire nor a value", b->id,
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
            failf(c, "block \"%.60s\" (%s) pin \"%s\" is not set", b->id, b->symbol, name);
            goto fail;
        }
        if (typed_attr(c, b, attrs, name, kind, pp->value, "pin")) goto fail;
    }
    const enu_pin *at = enu_block_pin(b, "attrs");
    if (at && *at->value && attr_text(c, b, op, attrs, at->value)) goto fail;
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

/* Emit Const or Variable `i`. */
static int emit_value_block(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    cJSON *blk = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!blk || !attrs) {
        cJSON_Delete(blk);
        cJSON_Delete(attrs);
        return oom(c);
    }
    cJSON_AddStringToObject(blk, "id", c->newid[i]);
    cJSON_AddStringToObject(blk, "type", c->kind[i] == K_CONST ? "Const" : "Variable");
    cJSON_AddItemToObject(blk, "attrs", attrs);
    if (put_value(c, attrs, c->newid[i], &c->vals[i])) {
        cJSON_Delete(blk);
        return -1;
    }
    if (c->kind[i] == K_VARIABLE) {
        const enu_pin *at = enu_block_pin(b, "attrs");
        cJSON *scratch = cJSON_CreateObject();
        int r = at && *at->value ? attr_text(c, b, NULL, scratch, at->value) : 0;
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
        if (*b->task && strcmp(b->task, "tensorflow") && strncmp(b->task, "enu_tensorflow", 14))
            c->kind[i] = K_DISPLAY;
        else if (!strcmp(b->symbol, "ClientSession"))
            c->kind[i] = K_SESSION;
        else if (!strcmp(b->symbol, "Const") || !strcmp(b->symbol, "Const_ex"))
            c->kind[i] = K_CONST;
        else if (!strcmp(b->symbol, "Variable"))
            c->kind[i] = K_VARIABLE;
        else if (!strcmp(b->symbol, "Operation"))
            c->kind[i] = K_OPERATION;
        else if ((c->op[i] = enu_op_find(b->symbol)))
            c->kind[i] = K_MAPPED;
        else
            unsupported(c, i, "no blockflow block for enuSpace's %s", b->symbol);
    }
    /* Consts first: a Variable's rule 1 reads them */
    for (int i = 0; i < g->n_blocks; i++)
        if (c->kind[i] == K_CONST && const_value(c, i)) return -1;
    for (int i = 0; i < g->n_blocks; i++)
        if (c->kind[i] == K_VARIABLE && variable_value(c, i)) return -1;
    return 0;
}

static int build(conv *c, cJSON *page) {
    enu_graph *g = c->g;
    int nb = g->n_blocks, nw = g->n_wires;
    size_t nb1 = (size_t)(nb ? nb : 1), nw1 = (size_t)(nw ? nw : 1);
    c->newid = calloc(nb1, sizeof(char *));
    c->kind = calloc(nb1, sizeof(int));
    c->why = calloc(nb1, sizeof(char *));
    c->vals = calloc(nb1, sizeof(enu_value));
    c->op = calloc(nb1, sizeof(*c->op));
    c->in_first = malloc(nb1 * sizeof(int));
    c->in_last = malloc(nb1 * sizeof(int));
    c->in_next = malloc(nw1 * sizeof(int));
    if (!c->newid || !c->kind || !c->why || !c->vals || !c->op || !c->in_first || !c->in_last ||
        !c->in_next)
        return oom(c);
    for (int i = 0; i < nb; i++) {
        c->in_first[i] = c->in_last[i] = -1;
        if (!enu_idmap_put(&c->ids, g->blocks[i].id, i)) return oom(c);
    }
    for (int w = 0; w < nw; w++) {
        enu_wire *wi = &g->wires[w];
        int f = enu_idmap_get(&c->ids, wi->from), t = enu_idmap_get(&c->ids, wi->to);
        if (f < 0 || t < 0)
            return failf(c, "a wire from \"%.60s\" pin \"%.40s\" to \"%.60s\" pin \"%.40s\" names "
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
        if (c->kind[i] == K_DISPLAY || c->kind[i] == K_SESSION || c->kind[i] == K_OPERATION)
            continue;
        c->newid[i] = (char *)take_id(c, g->blocks[i].id);
        if (!c->newid[i]) return oom(c);
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
        return failf(c, "%d block%s cannot be mapped: %s%s (the report lists each with what it "
                     "feeds; --partial writes the page with Placeholders instead)", n_unsup,
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
    cJSON *outputs = cJSON_CreateArray(), *sessions = cJSON_CreateArray();
    cJSON_AddItemToObject(page, "outputs", outputs);
    int n_sessions = 0;
    for (int i = 0; i < nb; i++) {
        if (c->kind[i] != K_SESSION) continue;
        n_sessions++;
        enu_block *b = &g->blocks[i];
        cJSON *s = cJSON_CreateObject(), *targets = cJSON_CreateArray();
        cJSON_AddStringToObject(s, "id", b->id);
        const char *loop = pin_value_text(b, "INFINITE_LOOP"), *dbg = pin_value_text(b, "SHOW_DEBUG");
        cJSON_AddBoolToObject(s, "infinite_loop", !strcmp(loop, "TRUE") || !strcmp(loop, "true") ||
                                                      !strcmp(loop, "1"));
        cJSON_AddBoolToObject(s, "show_debug", !strcmp(dbg, "TRUE") || !strcmp(dbg, "true") ||
                                                   !strcmp(dbg, "1"));
        cJSON_AddStringToObject(s, "device", pin_value_text(b, "device"));
        for (int w = c->in_first[i]; w >= 0; w = c->in_next[w]) {
            enu_wire *wi = &g->wires[w];
            char ref[200];
            if (!strcmp(wi->to_pin, "fetch_outputs")) {
                int f = enu_idmap_get(&c->ids, wi->from);
                if (c->kind[f] == K_OPERATION || c->kind[f] == K_DISPLAY || c->kind[f] == K_SESSION) {
                    note(c, "fetch of \"%s\" (%s) dropped: not a tensor", wi->from,
                         g->blocks[f].symbol);
                    continue;
                }
                const char *src = source(c, w, ref, sizeof ref);
                if (!src) return -1;
                bool dup = false;
                cJSON *o;
                cJSON_ArrayForEach(o, outputs) dup = dup || !strcmp(o->valuestring, src);
                if (!dup) cJSON_AddItemToArray(outputs, cJSON_CreateString(src));
            } else if (!strcmp(wi->to_pin, "run_outputs")) {
                cJSON_AddItemToArray(targets, cJSON_CreateString(wi->from));
            } else if (!strcmp(wi->to_pin, "inputs")) {
                note(c, "ClientSession \"%s\": the feed from \"%s\" is not kept (feed it with "
                     "--feed)", b->id, wi->from);
            }
        }
        cJSON_AddItemToObject(s, "run_targets", targets);
        cJSON_AddItemToArray(sessions, s);
    }
    if (n_sessions > 1) note(c, "%d ClientSessions: their fetches are merged", n_sessions);
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
        note(c, "no ClientSession: the blocks nothing reads are the outputs");
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "source", g->is_json ? "task-json" : "svg");
    if (*g->version) cJSON_AddStringToObject(x, "enuspace_version", g->version);
    cJSON_AddItemToObject(x, "sessions", sessions);
    cJSON_AddItemToObject(page, "x-enuspace", x);
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
    int r = -1;
    bool attached = false;
    if (!pg || !c.blocks || !c.report || !c.r_mapped || !c.r_dropped || !c.r_unsup || !c.r_dat ||
        !c.r_lits || !c.r_notes || !c.r_placeholders) {
        oom(&c);
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
    }
    cJSON_Delete(pg);
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
