/*
 * page_json.c - writing a page back as its canonical JSON text (bf_page_to_json): what
 * `blockflow fmt` prints, what an editor saves, and the round trip load -> write -> load that
 * gives the identical page.
 *
 * The canonical form: keys in a fixed order (page: format, version, name, description, ui,
 * x- keys, blocks, outputs; block: id, type, inputs in port order, attrs in the block type's
 * order, device, ui, x- keys), attributes in their typed JSON form (enuSpace text comes back
 * as typed values) and only those the page gives (defaults are left out), "auto" devices and
 * empty members left out, UTF-8 as is, 2-space indentation, containers that hold only scalars
 * on one line ("strides": [1, 2, 2, 1]), numbers in their shortest exact form, and a final
 * newline.
 */
#include "page.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable text buffer ---------------------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap;
    bool oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = bf_realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void indent(buf *b, int depth) {
    for (int i = 0; i < depth; i++) put(b, "  ", 2);
}

/* A JSON string: UTF-8 bytes as they are, quotes, backslashes and control characters escaped. */
static void put_string(buf *b, const char *s) {
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(b, "\\\""); break;
        case '\\': puts_(b, "\\\\"); break;
        case '\n': puts_(b, "\\n"); break;
        case '\r': puts_(b, "\\r"); break;
        case '\t': puts_(b, "\\t"); break;
        case '\b': puts_(b, "\\b"); break;
        case '\f': puts_(b, "\\f"); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof(esc), "\\u%04x", *p);
                puts_(b, esc);
            } else {
                put(b, (const char *)p, 1);
            }
        }
    }
    put(b, "\"", 1);
}

/* The shortest text that reads back as exactly `d`; integers without a fraction. */
static void put_number(buf *b, double d) {
    char s[40];
    if (!isfinite(d)) {
        puts_(b, "null"); /* attribute parsing refuses non-finite numbers: never reached */
        return;
    }
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        snprintf(s, sizeof(s), "%.0f", d);
        if (!strcmp(s, "-0")) snprintf(s, sizeof(s), "-0.0");
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(s, sizeof(s), "%.*g", prec, d);
            if (strtod(s, NULL) == d) break;
        }
    }
    puts_(b, s);
}

static bool scalar(const cJSON *j) { return !cJSON_IsArray(j) && !cJSON_IsObject(j); }

static bool all_scalars(const cJSON *j) {
    for (const cJSON *c = j->child; c; c = c->next)
        if (!scalar(c)) return false;
    return true;
}

static void put_value(buf *b, const cJSON *j, int depth) {
    if (cJSON_IsString(j)) {
        put_string(b, j->valuestring);
    } else if (cJSON_IsNumber(j)) {
        put_number(b, j->valuedouble);
    } else if (cJSON_IsTrue(j)) {
        puts_(b, "true");
    } else if (cJSON_IsFalse(j)) {
        puts_(b, "false");
    } else if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
        bool obj = cJSON_IsObject(j), inline_ = all_scalars(j);
        put(b, obj ? "{" : "[", 1);
        for (const cJSON *c = j->child; c; c = c->next) {
            if (inline_) {
                if (c != j->child) puts_(b, ", ");
            } else {
                puts_(b, c == j->child ? "\n" : ",\n");
                indent(b, depth + 1);
            }
            if (obj) {
                put_string(b, c->string);
                puts_(b, ": ");
            }
            put_value(b, c, depth + 1);
        }
        if (!inline_ && j->child) {
            puts_(b, "\n");
            indent(b, depth);
        }
        put(b, obj ? "}" : "]", 1);
    } else {
        puts_(b, "null");
    }
}

/* ---- the page as a tree in canonical order ------------------------------------------------ */

/* Append copies of the members of `ext` (x- keys) to `obj`. False when out of memory. */
static bool add_ext(cJSON *obj, const cJSON *ext) {
    for (const cJSON *k = ext ? ext->child : NULL; k; k = k->next)
        if (!bf_json_add(obj, k->string, cJSON_Duplicate(k, 1))) return false;
    return true;
}

static bool add_copy(cJSON *obj, const char *key, const cJSON *v) {
    return !v || bf_json_add(obj, key, cJSON_Duplicate(v, 1));
}

static cJSON *block_tree(const bf_page_block *b) {
    const bf_block_desc *d = b->desc;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "id", b->id) ||
        !cJSON_AddStringToObject(o, "type", d->type))
        goto oom;
    cJSON *in = NULL, *at = NULL;
    for (int k = 0; k < d->n_inputs; k++) {
        if (!b->inputs[k].text) continue;
        if (!in && !(in = cJSON_AddObjectToObject(o, "inputs"))) goto oom;
        if (!cJSON_AddStringToObject(in, d->inputs[k].name, b->inputs[k].text)) goto oom;
    }
    for (int a = 0; a < d->n_attrs; a++) {
        const bf_attr_value *v = &b->attrs[a];
        if (!v->set || v->defaulted) continue;
        if (!at && !(at = cJSON_AddObjectToObject(o, "attrs"))) goto oom;
        if (!bf_json_add(at, d->attrs[a].name, bf_attr_to_json(&d->attrs[a], v))) goto oom;
    }
    if (b->attr_ext && b->attr_ext->child) {
        if (!at && !(at = cJSON_AddObjectToObject(o, "attrs"))) goto oom;
        if (!add_ext(at, b->attr_ext)) goto oom;
    }
    if (b->device != BF_DEVICE_AUTO) {
        char dev[16];
        if (b->device == BF_DEVICE_CPU) snprintf(dev, sizeof(dev), "cpu");
        else if (b->gpu_ordinal) snprintf(dev, sizeof(dev), "gpu:%d", b->gpu_ordinal);
        else snprintf(dev, sizeof(dev), "gpu");
        if (!cJSON_AddStringToObject(o, "device", dev)) goto oom;
    }
    if (!add_copy(o, "ui", b->ui) || !add_ext(o, b->ext)) goto oom;
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *page_tree(const bf_page *page) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "format", "blockflow.page") ||
        !cJSON_AddNumberToObject(o, "version", 1))
        goto oom;
    if (page->name && page->name[0] && !cJSON_AddStringToObject(o, "name", page->name)) goto oom;
    if (page->description && page->description[0] &&
        !cJSON_AddStringToObject(o, "description", page->description))
        goto oom;
    if (page->checkpoint && !cJSON_AddStringToObject(o, "checkpoint", page->checkpoint)) goto oom;
    if (!add_copy(o, "ui", page->ui) || !add_ext(o, page->ext)) goto oom;
    cJSON *blocks = cJSON_AddArrayToObject(o, "blocks");
    if (!blocks) goto oom;
    for (int i = 0; i < page->n_blocks; i++) {
        cJSON *b = block_tree(&page->blocks[i]);
        if (!b) goto oom;
        cJSON_AddItemToArray(blocks, b);
    }
    if (page->n_outputs) {
        cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
        if (!outs) goto oom;
        for (int i = 0; i < page->n_outputs; i++) {
            cJSON *s = cJSON_CreateString(page->outputs[i]);
            if (!s) goto oom;
            cJSON_AddItemToArray(outs, s);
        }
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

bf_status bf_page_to_json(const bf_page *page, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!page) return bf_err(err, BF_EINVAL, "bad_argument", "page is NULL");
    cJSON *tree = page_tree(page);
    buf b = {0};
    if (tree) {
        put_value(&b, tree, 0);
        puts_(&b, "\n");
    }
    cJSON_Delete(tree);
    if (!tree || b.oom) {
        bf_free(b.p);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory while writing the page");
    }
    *out = b.p;
    return BF_OK;
}

/* ---- a page's text laid out, uninterpreted (bf_page_format_json) --------------------------- */

/* Move the member `key` of `src`, if any, to the end of `dst`. */
static void move_member(cJSON *dst, cJSON *src, const char *key) {
    cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(src, key);
    if (v) cJSON_AddItemToObject(dst, key, v); /* cannot fail: the key is copied first */
}

/* Move the members of `src` whose key starts with "x-" (x_keys) or does not (!x_keys), in
 * their order, to the end of `dst`. */
static void move_rest(cJSON *dst, cJSON *src, bool x_keys) {
    for (cJSON *c = src->child, *next; c; c = next) {
        next = c->next;
        if (!c->string || (!strncmp(c->string, "x-", 2)) != x_keys) continue;
        cJSON_DetachItemViaPointer(src, c);
        cJSON_AddItemToArray(dst, c); /* keeps c->string: dst is an object */
    }
}

/* `src` (consumed) as a new object with its members in the canonical order: `first` keys,
 * then x- keys, then `then` keys, then anything else as written. NULL when out of memory. */
static cJSON *reordered(cJSON *src, const char *const *first, const char *const *then) {
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(src);
        return NULL;
    }
    for (int i = 0; first[i]; i++) move_member(o, src, first[i]);
    move_rest(o, src, true);
    for (int i = 0; then[i]; i++) move_member(o, src, then[i]);
    move_rest(o, src, false);
    cJSON_Delete(src);
    return o;
}

bf_status bf_page_format_json(const char *json, size_t len, char **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!json) return bf_err(err, BF_EINVAL, "bad_argument", "json is NULL");
    unsigned failures = bf_alloc_failures();
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        if (bf_alloc_failures() != failures)
            return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
        int line = 1, col = 1;
        for (const char *p = json; end && p < end && p < json + len; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        bf_status st = bf_err(err, BF_EPARSE, "bad_json", "not valid JSON");
        if (err) err->line = line, err->column = col;
        return st;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return bf_err(err, BF_ESCHEMA, "bad_page", "a page is a JSON object");
    }
    static const char *const page_first[] = {"format", "version", "name", "description",
                                             "checkpoint", "ui", NULL};
    static const char *const page_then[] = {"blocks", "outputs", NULL};
    static const char *const block_first[] = {"id", "type", "inputs", "attrs", "device", "ui",
                                               NULL};
    static const char *const none[] = {NULL};
    cJSON *page = reordered(root, page_first, page_then);
    cJSON *blocks = page ? cJSON_GetObjectItemCaseSensitive(page, "blocks") : NULL;
    bool oom = !page;
    if (cJSON_IsArray(blocks)) { /* each block object in its canonical order, in place */
        cJSON *list = cJSON_CreateArray();
        oom = !list;
        while (!oom && blocks->child) {
            cJSON *b = cJSON_DetachItemViaPointer(blocks, blocks->child);
            if (cJSON_IsObject(b) && !(b = reordered(b, block_first, none))) oom = true;
            else cJSON_AddItemToArray(list, b);
        }
        if (list && !oom) cJSON_ReplaceItemInObjectCaseSensitive(page, "blocks", list);
        else cJSON_Delete(list);
    }
    buf b = {0};
    if (!oom) {
        put_value(&b, page, 0);
        puts_(&b, "\n");
    }
    cJSON_Delete(page);
    if (oom || b.oom) {
        bf_free(b.p);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory while writing the page");
    }
    *out = b.p;
    return BF_OK;
}
