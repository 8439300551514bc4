/*
 * task_reader.c - an enuSpace Task JSON export (Task/Tensorflow/<page>.json) into a graph
 * (graph.h). Each object is a block; each `input` entry a pin, an entry that names an
 * `in-symbol-id` also a wire (a list input appears once per wire, in wire order). The
 * `output` entries are ignored, as the plugin ignores them, except `result_*` values.
 * Positions are not exported.
 */
#include "graph.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int read_pin(enu_graph *g, enu_block *b, const cJSON *e, bool output, char *err,
                    size_t errsz) {
    const char *name = str(e, "pin-name");
    if (!name || !*name || strlen(name) > 120) {
        snprintf(err, errsz, "block \"%.60s\": a pin without a valid \"pin-name\"", b->id);
        return -1;
    }
    if (output && strncmp(name, "result_", 7)) return 0;
    const char *from = output ? NULL : str(e, "in-symbol-id");
    if (from && *from) {
        const char *fp = str(e, "in-symbol-pin-name");
        if (!fp || !*fp) {
            snprintf(err, errsz, "block \"%.60s\" pin \"%s\": wired from \"%.60s\" without "
                     "\"in-symbol-pin-name\"", b->id, name, from);
            return -1;
        }
        if (!enu_graph_add_wire(g, from, fp, b->id, name))
            return snprintf(err, errsz, "out of memory"), -1;
    }
    if (enu_block_pin(b, name)) return 0; /* a list input's later wire */
    const char *shape = str(e, "pin-shape"), *type = str(e, "pin-type"),
               *init = str(e, "pin-initial"), *save = str(e, "pin-save");
    enu_pin *p = enu_block_pin(b, name) ? NULL
                                        : enu_block_add_pin(b, name, shape ? shape : "",
                                                            type ? type : "string", init);
    if (!p) return snprintf(err, errsz, "out of memory"), -1;
    if (save && !strcmp(save, "binary")) {
        const char *pos = str(e, "pin-binary-pos");
        char *end;
        errno = 0;
        long long v = pos ? strtoll(pos, &end, 10) : -1;
        if (!pos || !*pos || *end || v < 0 || errno == ERANGE) {
            snprintf(err, errsz, "block \"%.60s\" pin \"%s\": a binary value needs a "
                     "pin-binary-pos of 0 or more (got \"%.30s\")", b->id, name, pos ? pos : "");
            return -1;
        }
        p->binary = true;
        p->pos = v;
    }
    return 0;
}

int enu_read_task_json(const char *utf8, size_t len, const enu_options *o, enu_graph *g,
                       char *err, size_t errsz) {
    (void)o;
    cJSON *root = cJSON_ParseWithLength(utf8, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= utf8 && at <= utf8 + len ? (long)(at - utf8) : -1;
        snprintf(err, errsz, "the Task JSON does not parse (near byte %ld)", off);
        return -1;
    }
    int r = -1;
    const cJSON *objs = cJSON_GetObjectItemCaseSensitive(root, "object");
    g->is_json = true;
    g->version = strdup("");
    if (!g->version) {
        snprintf(err, errsz, "out of memory");
        goto done;
    }
    if (!cJSON_IsArray(objs)) {
        snprintf(err, errsz, "the Task JSON has no \"object\" list: not an enuSpace export");
        goto done;
    }
    const cJSON *ob;
    cJSON_ArrayForEach(ob, objs) {
        const char *sym = str(ob, "symbol-name"), *id = str(ob, "id");
        if (!id || !*id || strlen(id) > 200) {
            snprintf(err, errsz, "object %d of the Task JSON has no valid \"id\"", g->n_blocks);
            goto done;
        }
        if (!sym || sym[0] != '#' || !sym[1]) {
            snprintf(err, errsz, "block \"%.60s\": \"symbol-name\" is not \"#Type\"", id);
            goto done;
        }
        for (int i = 0; i < g->n_blocks; i++)
            if (!strcmp(g->blocks[i].id, id)) {
                snprintf(err, errsz, "block id \"%.60s\" is used twice", id);
                goto done;
            }
        enu_block *b = enu_graph_add_block(g, id, sym + 1, "tensorflow");
        if (!b) {
            snprintf(err, errsz, "out of memory");
            goto done;
        }
        const char *lists[2] = {"input", "output"};
        for (int k = 0; k < 2; k++) {
            const cJSON *arr = cJSON_GetObjectItemCaseSensitive(ob, lists[k]), *e;
            if (arr && !cJSON_IsArray(arr)) {
                snprintf(err, errsz, "block \"%.60s\": \"%s\" is not a list", id, lists[k]);
                goto done;
            }
            cJSON_ArrayForEach(e, arr) {
                if (read_pin(g, &g->blocks[g->n_blocks - 1], e, k == 1, err, errsz)) goto done;
            }
        }
    }
    r = 0;
done:
    cJSON_Delete(root);
    return r;
}

int enu_read_page(const unsigned char *bytes, size_t len, const enu_options *o, enu_graph *g,
                  char *err, size_t errsz) {
    memset(g, 0, sizeof(*g));
    g->opt = o;
    if (len > o->max_input_bytes) {
        snprintf(err, errsz, "the page is %zu bytes, more than the limit of %zu", len,
                 o->max_input_bytes);
        return -1;
    }
    size_t n;
    char *text = enu_decode_text(bytes, len, &n, err, errsz);
    if (!text) return -1;
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    int r;
    if (*p == '{') {
        r = enu_read_task_json(text, n, o, g, err, errsz);
    } else if (*p == '<') {
        r = enu_read_svg(text, n, o, g, err, errsz);
    } else {
        snprintf(err, errsz, "neither an SVG page (\"<\") nor a Task JSON export (\"{\")");
        r = -1;
    }
    free(text);
    return r;
}
