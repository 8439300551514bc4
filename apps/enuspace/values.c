/*
 * values.c - the values of Const, Const_ex and Variable blocks (FORMAT.md 7.5): dtype, shape
 * and numbers from the pin's text or the .dat, a Variable's initial value by rules 1-3 (the
 * wired Const, a literal read with the dtype pin, the typed array), and how a value is
 * written on the page: inline, or as a .npy file beside it.
 */
#include "conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

cJSON *conv_shape_json(const enu_value *v) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < v->rank; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->dims[i]));
    return a;
}

/* dtype and value (inline, or a .npy file named after `id`) of a Const or Variable. */
int conv_put_value(conv *c, cJSON *attrs, const char *id, const enu_value *v) {
    cJSON_AddStringToObject(attrs, "dtype", enu_dtype_name(v->dtype));
    if (v->n == 0) cJSON_AddItemToObject(attrs, "shape", conv_shape_json(v));
    if (v->n <= c->o->inline_limit) {
        int64_t k = 0;
        cJSON *val = nested(v, 0, &k);
        if (!val) return conv_oom(c);
        cJSON_AddItemToObject(attrs, "value", val);
        return 0;
    }
    if (c->n_files == c->cap_files) {
        int nc = c->cap_files ? c->cap_files * 2 : 8;
        enu_file *p = realloc(c->files, (size_t)nc * sizeof(*p));
        if (!p) return conv_oom(c);
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
        return conv_oom(c);
    }
    if (enu_npy_bytes(v, &f->data, &f->size)) {
        free(f->name);
        return conv_oom(c);
    }
    c->n_files++;
    cJSON_AddStringToObject(attrs, "file", f->name);
    return 0;
}


/* Read a binary or text pin, recording .dat reads in the report; errors name block and pin. */
int conv_read_pin(conv *c, const enu_block *b, const enu_pin *p, enu_value *v) {
    char why[400];
    if (enu_pin_value(c->dat, c->dat_len, p, c->o, v, why, sizeof why))
        return conv_fail(c, "block \"%.60s\" (%.40s) pin \"%.40s\": %s", b->id, b->symbol, p->name,
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


/* The value of Const / Const_ex `i` (7.5). 0, or -1 on a hard error; an unsupported dtype
 * marks the block. */
int conv_const_value(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    enu_pin *val = enu_block_pin(b, "val");
    if (!val) return conv_fail(c, "block \"%.60s\" (%s) has no \"val\" pin", b->id, b->symbol);
    enu_value *v = &c->vals[i];
    char why[400];
    int dt = -1;
    if (!strcmp(b->symbol, "Const_ex") && !val->binary) {
        const char *d = conv_pin_text(b, "dtype");
        dt = *d ? enu_dtype_from_tf(d, why, sizeof why) : ENU_F64;
        if (dt < 0) {
            conv_unsupported(c, i, "%s", why);
            return 0;
        }
    }
    if (val->binary) return conv_read_pin(c, b, val, v);
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
    if (r) return conv_fail(c, "block \"%.60s\" (%s) pin \"val\": %s", b->id, b->symbol, why);
    if (v->dtype == ENU_STRING)
        conv_unsupported(c, i, "a string constant (\"%.60s\"): blockflow has no string dtype", v->s);
    else if (v->dtype == ENU_BOOL)
        conv_unsupported(c, i, "a bool constant: blockflow has no bool dtype");
    return 0;
}


/* The initial value of Variable `i` (7.5, rules 1-3). */
int conv_variable_value(conv *c, int i) {
    enu_block *b = &c->g->blocks[i];
    enu_value *v = &c->vals[i];
    char why[400];
    const char *dtype = conv_pin_text(b, "dtype");
    enu_pin *iv = enu_block_pin(b, "initvalues");
    int w, nw = conv_wires_into(c, i, "initvalues", &w);
    if (nw > 1) return conv_fail(c, "block \"%.60s\" (Variable) pin \"initvalues\" has %d wires", b->id, nw);
    if (nw == 1) { /* rule 1: the wired constant */
        int s = enu_idmap_get(&c->ids, c->g->wires[w].from);
        if (s < 0 || c->kind[s] != K_CONST) {
            conv_unsupported(c, i, "its initvalues are wired from \"%.60s\", not from a Const",
                        c->g->wires[w].from);
            return 0;
        }
        if (!c->vals[s].d) return 0; /* that Const is unsupported itself */
        *v = c->vals[s];
        v->d = malloc((size_t)(v->n ? v->n : 1) * sizeof(double));
        v->s = NULL;
        if (!v->d) return conv_oom(c);
        memcpy(v->d, c->vals[s].d, (size_t)v->n * sizeof(double));
        conv_note(c, "Variable \"%s\": initial value from Const \"%s\" (the wire is not kept)", b->id,
             c->g->wires[w].from);
    } else if (!iv) {
        return conv_fail(c, "block \"%.60s\" (Variable) has no \"initvalues\" pin", b->id);
    } else if (!iv->binary && enu_dtype_from_var_type(iv->type) < 0) { /* rule 2: a literal */
        if (!*dtype)
            return conv_fail(c, "block \"%.60s\" (Variable) pin \"initvalues\": a literal needs the "
                         "\"dtype\" pin", b->id);
        int dt = enu_dtype_from_tf(dtype, why, sizeof why);
        if (dt < 0) {
            conv_unsupported(c, i, "%s", why);
            return 0;
        }
        if (enu_parse_literal(iv->value, dt, c->o, v, why, sizeof why))
            return conv_fail(c, "block \"%.60s\" (Variable) pin \"initvalues\": %s", b->id, why);
        const char *shape = conv_pin_text(b, "shape");
        int64_t dims[ENU_MAX_RANK + 1];
        int n;
        if (*shape) {
            if (enu_parse_int_list(shape, dims, ENU_MAX_RANK + 1, &n, why, sizeof why))
                return conv_fail(c, "block \"%.60s\" (Variable) pin \"shape\": %s", b->id, why);
            bool same = n == v->rank;
            for (int k = 0; same && k < n; k++) same = dims[k] == v->dims[k];
            if (!same)
                return conv_fail(c, "block \"%.60s\" (Variable): pin \"shape\" %.40s differs from the "
                             "shape of its initvalues %.60s (TensorFlow's Assign refuses it)",
                             b->id, shape, iv->value);
        }
    } else { /* rule 3: a typed value, text or binary */
        if (*dtype)
            return conv_fail(c, "block \"%.60s\" (Variable): typed initvalues together with dtype "
                         "%.20s (the plugin creates no Variable then: clear the dtype pin)",
                         b->id, dtype);
        if (iv->binary && !c->dat) {
            /* no .dat at all (too large for some copies of the samples): a Variable trained by
               gradient descent starts from glorot_uniform, any other from zeros */
            int dt = enu_dtype_from_var_type(iv->type);
            if (dt < 0 || enu_parse_shape_suffix(iv->shape, c->o, v, why, sizeof why))
                return conv_fail(c, "block \"%.60s\" (Variable) pin \"initvalues\": %s", b->id,
                             dt < 0 ? "a binary value of an unknown type" : why);
            v->dtype = (enu_dtype)dt;
            bool trained = false;
            for (int k = 0; k < c->g->n_wires && !trained; k++) {
                const enu_wire *wi = &c->g->wires[k];
                int t = strcmp(wi->from, b->id) ? -1 : enu_idmap_get(&c->ids, wi->to);
                trained = t >= 0 && !strcmp(wi->to_pin, "var") &&
                          !strcmp(c->g->blocks[t].symbol, "ApplyGradientDescent");
            }
            c->init[i] = trained ? "glorot_uniform" : "zeros";
            conv_note(c, "Variable \"%s\": its initial value is in the .dat, which was not given: it "
                 "starts from %s", b->id, c->init[i]);
        } else if (conv_read_pin(c, b, iv, v)) {
            return -1;
        }
    }
    if (v->dtype != ENU_F32 && v->dtype != ENU_F64)
        conv_unsupported(c, i, "a %s Variable: blockflow's Variables hold floats",
                    v->dtype == ENU_I32 ? "int32" : enu_dtype_name(v->dtype));
    return 0;
}
