/*
 * catalog.c - the block catalogue, printed from the registry (STYLE R17): JSON for editors
 * (described by graph_schemas/block_catalog.schema.json, and compared with the committed
 * graph_schemas/block_catalog.json by a test) and text for people (`blockflow blocks`).
 */
#include "block.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {"int",   "float", "bool",   "enum",   "string",
                                         "int_list", "shape", "dtype", "tensor", "file",
                                         "path"};

static cJSON *dtype_list(unsigned mask) {
    cJSON *a = cJSON_CreateArray();
    for (int t = 1; a && t < BF_DTYPE_COUNT; t++)
        if (mask & (1u << t)) cJSON_AddItemToArray(a, cJSON_CreateString(bf_dtype_name(t)));
    return a;
}

static cJSON *ports_json(const bf_port_desc *p, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p[i].name);
        cJSON_AddItemToObject(o, "dtypes", dtype_list(p[i].dtypes));
        if (p[i].flags & BF_PORT_HOST) cJSON_AddTrueToObject(o, "host_memory");
        if (p[i].flags & BF_PORT_OPTIONAL) cJSON_AddTrueToObject(o, "optional");
        if (p[i].flags & BF_PORT_REF) cJSON_AddTrueToObject(o, "ref");
        cJSON_AddStringToObject(o, "doc", p[i].doc ? p[i].doc : "");
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *block_json(const bf_block_desc *d) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "type", d->type);
    cJSON_AddStringToObject(o, "category", d->category ? d->category : "");
    cJSON_AddStringToObject(o, "synopsis", d->synopsis ? d->synopsis : "");
    cJSON_AddStringToObject(o, "doc", d->doc ? d->doc : "");
    cJSON_AddItemToObject(o, "inputs", ports_json(d->inputs, d->n_inputs));
    cJSON_AddItemToObject(o, "outputs", ports_json(d->outputs, d->n_outputs));
    cJSON *attrs = cJSON_AddArrayToObject(o, "attrs");
    for (int i = 0; attrs && i < d->n_attrs; i++) {
        const bf_attr_desc *a = &d->attrs[i];
        cJSON *ja = cJSON_CreateObject();
        cJSON_AddStringToObject(ja, "name", a->name);
        cJSON_AddStringToObject(ja, "kind", kind_names[a->kind]);
        if (a->def) cJSON_AddItemToObject(ja, "default", cJSON_Parse(a->def));
        cJSON_AddBoolToObject(ja, "required", !a->def && !(a->flags & BF_ATTR_OPTIONAL));
        if (a->values) {
            cJSON *v = cJSON_AddArrayToObject(ja, "values");
            for (int k = 0; v && a->values[k]; k++)
                cJSON_AddItemToArray(v, cJSON_CreateString(a->values[k]));
        }
        if (BF_ATTR_LENGTH_OF(a->flags))
            cJSON_AddNumberToObject(ja, "length", BF_ATTR_LENGTH_OF(a->flags));
        cJSON_AddStringToObject(ja, "doc", a->doc ? a->doc : "");
        cJSON_AddItemToArray(attrs, ja);
    }
    cJSON *dev = cJSON_AddArrayToObject(o, "devices");
    cJSON_AddItemToArray(dev, cJSON_CreateString("cpu"));
    if (d->run_cuda) cJSON_AddItemToArray(dev, cJSON_CreateString("gpu"));
    cJSON_AddBoolToObject(o, "feedable", (d->flags & BF_BLOCK_FEEDABLE) != 0);
    if (d->gradient) cJSON_AddTrueToObject(o, "differentiable");
    if (d->state) cJSON_AddStringToObject(o, "state", d->state->variable ? "variable" : "cursor");
    return o;
}

bf_status bf_block_catalog_json(const char *type, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    cJSON *root = NULL;
    if (type) {
        const bf_block_desc *d = bf_registry_find(type);
        if (!d) {
            char dym[96];
            return bf_err(err, BF_ENOTFOUND, "unknown_block_type", "unknown block type "
                          "\"%.60s\"%s", type,
                          bf_suggest_text(bf_suggest_type(type), dym, sizeof(dym)));
        }
        root = block_json(d);
    } else {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "format", "blockflow.catalog");
        cJSON_AddNumberToObject(root, "version", 1);
        cJSON *blocks = cJSON_AddArrayToObject(root, "blocks");
        for (int i = 0; blocks && i < bf_registry_count(); i++)
            cJSON_AddItemToArray(blocks, block_json(bf_registry_at(i)));
    }
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    *out = text;
    return BF_OK;
}

/* A growable text buffer for the people's catalogue. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) BF_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    for (int tries = 0; tries < 2 && !b->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = BF_MAX(b->cap * 2, b->n + (size_t)k + 256);
        char *p = bf_realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

static void text_block(sbuf *b, const bf_block_desc *d, bool full) {
    sb_printf(b, "%-38s %s\n", d->type, d->synopsis ? d->synopsis : "");
    if (!full) return;
    sb_printf(b, "\n  %s\n\n  inputs:\n", d->doc ? d->doc : "");
    for (int i = 0; i < d->n_inputs; i++) {
        sb_printf(b, "    %-16s", d->inputs[i].name);
        for (int t = 1; t < BF_DTYPE_COUNT; t++)
            if (d->inputs[i].dtypes & (1u << t)) sb_printf(b, " %s", bf_dtype_name(t));
        unsigned fl = d->inputs[i].flags;
        sb_printf(b, "%s%s%s  %s\n", fl & BF_PORT_HOST ? " (host)" : "",
                  fl & BF_PORT_OPTIONAL ? " (optional)" : "", fl & BF_PORT_REF ? " (ref)" : "",
                  d->inputs[i].doc ? d->inputs[i].doc : "");
    }
    if (!d->n_inputs) sb_printf(b, "    (none)\n");
    sb_printf(b, "  outputs:\n");
    for (int i = 0; i < d->n_outputs; i++)
        sb_printf(b, "    %-16s %s\n", d->outputs[i].name, d->outputs[i].doc ? d->outputs[i].doc
                                                                           : "");
    sb_printf(b, "  attributes:\n");
    for (int i = 0; i < d->n_attrs; i++) {
        const bf_attr_desc *a = &d->attrs[i];
        sb_printf(b, "    %-20s %-9s %s%s  %s\n", a->name, kind_names[a->kind],
                  a->def ? "default " : (a->flags & BF_ATTR_OPTIONAL) ? "optional" : "required",
                  a->def ? a->def : "", a->doc ? a->doc : "");
    }
    if (!d->n_attrs) sb_printf(b, "    (none)\n");
    sb_printf(b, "  devices: cpu%s\n", d->run_cuda ? ", gpu" : "");
}

bf_status bf_block_catalog_text(const char *type, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    sbuf b = {0};
    if (type) {
        const bf_block_desc *d = bf_registry_find(type);
        if (!d) {
            char dym[96];
            return bf_err(err, BF_ENOTFOUND, "unknown_block_type", "unknown block type "
                          "\"%.60s\"%s", type,
                          bf_suggest_text(bf_suggest_type(type), dym, sizeof(dym)));
        }
        text_block(&b, d, true);
    } else {
        for (int i = 0; i < bf_registry_count(); i++) text_block(&b, bf_registry_at(i), false);
    }
    if (b.oom || !b.p) {
        bf_free(b.p);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    *out = b.p;
    return BF_OK;
}
