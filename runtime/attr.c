/*
 * attr.c - block attributes: from JSON (or enuSpace's attribute text) to bf_attr_value, by
 * kind, with defaults, and every problem reported with the attribute's name and its JSON
 * pointer. Also the standalone nodes (bf_node_make) that tests and tools use.
 */
#include "attr.h"
#include "page.h"
#include "tensor.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 4096 /* int lists and inline tensors longer than this belong in a .npy file */

void bf_attr_value_free(bf_attr_value *v) {
    bf_free(v->s);
    bf_free(v->list);
    bf_free(v->numbers);
    bf_tensor_free(v->tensor);
    bf_free(v->path);
    memset(v, 0, sizeof(*v));
}

void bf_attrs_free(bf_attr_value *vals, int n) {
    for (int i = 0; vals && i < n; i++) bf_attr_value_free(&vals[i]);
}

static const char *kind_name(bf_attr_kind k) {
    static const char *const names[] = {"int", "float", "bool", "enum", "string", "int list",
                                        "shape", "dtype", "tensor", "file", "path"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* An integer held exactly by a JSON number. */
static bool json_int(const cJSON *j, int64_t *out) {
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(fabs(d) <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

/* Parse "1,2,2,1", "{1,2,2,1}" or "[1, 2]" into list; false when malformed. */
static bool text_int_list(const char *s, int64_t *list, int cap, int *n) {
    while (isspace((unsigned char)*s)) s++;
    char close = 0;
    if (*s == '{') close = '}';
    if (*s == '[') close = ']';
    if (close) s++;
    *n = 0;
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (close && *s == close && *n == 0) {
            s++;
            break;
        }
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno) return false;
        if (*n >= cap) return false;
        list[(*n)++] = v;
        s = end;
        while (isspace((unsigned char)*s)) s++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (close) {
            if (*s != close) return false;
            s++;
        }
        break;
    }
    while (isspace((unsigned char)*s)) s++;
    return *s == '\0';
}

/* Flatten a nested JSON list of numbers; records the nesting shape (must be rectangular). */
static bool flatten_numbers(const cJSON *j, int depth, bf_attr_value *v, double *buf, int cap,
                            int *n) {
    if (cJSON_IsNumber(j) || cJSON_IsBool(j)) {
        if (*n >= cap || (cJSON_IsNumber(j) && !isfinite(j->valuedouble))) return false;
        buf[(*n)++] = cJSON_IsBool(j) ? (cJSON_IsTrue(j) ? 1.0 : 0.0) : j->valuedouble;
        if (depth > v->nest_rank) v->nest_rank = depth;
        return depth == v->nest_rank;
    }
    if (!cJSON_IsArray(j) || depth >= BF_MAX_RANK) return false;
    int64_t len = cJSON_GetArraySize(j);
    if (v->nest_dims[depth] < 0) v->nest_dims[depth] = len;
    if (v->nest_dims[depth] != len) return false;
    for (const cJSON *e = j->child; e; e = e->next)
        if (!flatten_numbers(e, depth + 1, v, buf, cap, n)) return false;
    if (len == 0 && depth + 1 > v->nest_rank) v->nest_rank = depth + 1;
    return true;
}

bf_status bf_attr_parse_one(const bf_attr_desc *d, const cJSON *j, bf_attr_value *v,
                            bool *legacy, bf_error *err) {
    bf_attr_value_free(v);
    bf_err_at(err, NULL, d->name);
    int64_t iv;
    switch (d->kind) {
    case BF_ATTR_INT:
        if (!json_int(j, &iv)) goto wrong_kind;
        v->i = iv;
        break;
    case BF_ATTR_FLOAT:
        if (!cJSON_IsNumber(j)) goto wrong_kind;
        if (!isfinite(j->valuedouble))
            return bf_err(err, BF_EATTR, "bad_attr", "must be a finite number");
        v->f = j->valuedouble;
        break;
    case BF_ATTR_BOOL:
        if (!cJSON_IsBool(j)) goto wrong_kind;
        v->b = cJSON_IsTrue(j);
        break;
    case BF_ATTR_ENUM: {
        if (!cJSON_IsString(j)) goto wrong_kind;
        int k = 0;
        while (d->values[k] && strcmp(d->values[k], j->valuestring)) k++;
        if (!d->values[k]) {
            char allowed[160] = "";
            size_t n = 0;
            for (int m = 0; d->values[m] && n < sizeof(allowed); m++)
                n += (size_t)snprintf(allowed + n, sizeof(allowed) - n, "%s\"%s\"",
                                      m ? ", " : "", d->values[m]);
            return bf_err(err, BF_EATTR, "bad_attr", "\"%.60s\" is not one of %s",
                          j->valuestring, allowed);
        }
        v->i = k;
        if (!(v->s = bf_strdup(j->valuestring))) goto oom;
        break;
    }
    case BF_ATTR_STRING:
    case BF_ATTR_FILE:
    case BF_ATTR_PATH:
        if (!cJSON_IsString(j)) goto wrong_kind;
        if (d->kind != BF_ATTR_STRING && !j->valuestring[0])
            return bf_err(err, BF_EATTR, "bad_attr", "the file name is empty");
        if (!(v->s = bf_strdup(j->valuestring))) goto oom;
        break;
    case BF_ATTR_DTYPE:
        if (!cJSON_IsString(j)) goto wrong_kind;
        v->dtype = bf_dtype_from_name(j->valuestring);
        if (v->dtype == BF_DTYPE_INVALID)
            return bf_err(err, BF_EATTR, "bad_attr",
                          "\"%.60s\" is not a dtype (float16, bfloat16, float32, float64, "
                          "int32, int64)",
                          j->valuestring);
        break;
    case BF_ATTR_INT_LIST:
    case BF_ATTR_SHAPE: {
        int64_t tmp[64];
        int n = 0;
        if (cJSON_IsString(j)) {
            if (!text_int_list(j->valuestring, tmp, BF_COUNT(tmp), &n))
                return bf_err(err, BF_EATTR, "bad_attr",
                              "\"%.60s\" is not a list of integers", j->valuestring);
            if (legacy) *legacy = true;
        } else if (cJSON_IsArray(j)) {
            for (const cJSON *e = j->child; e; e = e->next) {
                if (n >= BF_COUNT(tmp))
                    return bf_err(err, BF_ELIMIT, "bad_attr", "more than %d elements",
                                  BF_COUNT(tmp));
                if (!json_int(e, &tmp[n]))
                    return bf_err(err, BF_EATTR, "bad_attr",
                                  "element %d is not an integer", n);
                n++;
            }
        } else {
            goto wrong_kind;
        }
        if (d->kind == BF_ATTR_SHAPE) {
            if (n > BF_MAX_RANK)
                return bf_err(err, BF_EATTR, "bad_attr", "a shape has at most %d dimensions, "
                              "got %d", BF_MAX_RANK, n);
            for (int k = 0; k < n; k++)
                if (tmp[k] < -1)
                    return bf_err(err, BF_EATTR, "bad_attr",
                                  "dimension %d is %lld; dimensions are >= 0 (or -1: unknown)",
                                  k, (long long)tmp[k]);
        }
        v->n = n;
        if (!(v->list = bf_calloc((size_t)(n ? n : 1), sizeof(int64_t)))) goto oom;
        memcpy(v->list, tmp, (size_t)n * sizeof(int64_t));
        break;
    }
    case BF_ATTR_TENSOR: {
        if (!cJSON_IsArray(j) && !cJSON_IsNumber(j)) goto wrong_kind;
        if (!(v->numbers = bf_calloc(MAX_LIST, sizeof(double)))) goto oom;
        for (int k = 0; k < BF_MAX_RANK; k++) v->nest_dims[k] = -1;
        int n = 0;
        if (!flatten_numbers(j, 0, v, v->numbers, MAX_LIST, &n))
            return bf_err(err, BF_EATTR, "bad_attr",
                          "must be a finite number or a rectangular nested list of at most %d "
                          "finite numbers (put larger tensors in a .npy file)",
                          MAX_LIST);
        v->n = n;
        break;
    }
    }
    v->set = true;
    return BF_OK;
wrong_kind:
    return bf_err(err, BF_EATTR, "bad_attr", "must be %s %s", d->kind == BF_ATTR_INT ||
                  d->kind == BF_ATTR_INT_LIST || d->kind == BF_ATTR_ENUM ? "an" : "a",
                  kind_name(d->kind));
oom:
    return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
}

bool bf_attr_set_default(const bf_attr_desc *d, bf_attr_value *v) {
    bf_attr_value_free(v);
    if (!d->def) return true;
    cJSON *j = cJSON_Parse(d->def);
    bf_error e = {0};
    bf_status st = j ? bf_attr_parse_one(d, j, v, NULL, &e) : BF_ENOMEM;
    cJSON_Delete(j);
    BF_ASSERT(st == BF_OK || st == BF_ENOMEM); /* defaults are ours: they must parse */
    v->defaulted = st == BF_OK;
    return st == BF_OK;
}

/* A nested JSON list of v->numbers[*pos...] over nest_dims[depth...]. */
static cJSON *numbers_to_json(const bf_attr_value *v, int depth, int *pos) {
    if (depth == v->nest_rank) return cJSON_CreateNumber(v->numbers[(*pos)++]);
    cJSON *a = cJSON_CreateArray();
    for (int64_t k = 0; a && k < v->nest_dims[depth]; k++) {
        cJSON *e = numbers_to_json(v, depth + 1, pos);
        if (!e) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

cJSON *bf_attr_to_json(const bf_attr_desc *d, const bf_attr_value *v) {
    if (!v->set) return NULL;
    switch (d->kind) {
    case BF_ATTR_INT: return cJSON_CreateNumber((double)v->i);
    case BF_ATTR_FLOAT: return cJSON_CreateNumber(v->f);
    case BF_ATTR_BOOL: return cJSON_CreateBool(v->b);
    case BF_ATTR_ENUM:
    case BF_ATTR_STRING:
    case BF_ATTR_FILE:
    case BF_ATTR_PATH: return cJSON_CreateString(v->s ? v->s : "");
    case BF_ATTR_DTYPE: return cJSON_CreateString(bf_dtype_name(v->dtype));
    case BF_ATTR_INT_LIST:
    case BF_ATTR_SHAPE: {
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; a && k < v->n; k++) {
            cJSON *e = cJSON_CreateNumber((double)v->list[k]);
            if (!e) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, e);
        }
        return a;
    }
    case BF_ATTR_TENSOR: {
        int pos = 0;
        return numbers_to_json(v, 0, &pos);
    }
    }
    return NULL;
}

/* ---- enuSpace attribute text ------------------------------------------------------------- */

/* Make the JSON value that `text` means for an attribute of kind `k`. NULL when malformed. */
static cJSON *legacy_value(bf_attr_kind k, const char *text) {
    switch (k) {
    case BF_ATTR_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1")) return cJSON_CreateTrue();
        if (!strcmp(text, "false") || !strcmp(text, "0")) return cJSON_CreateFalse();
        return NULL;
    case BF_ATTR_INT:
    case BF_ATTR_FLOAT: {
        char *end;
        double d = strtod(text, &end);
        return *text && *end == '\0' ? cJSON_CreateNumber(d) : NULL;
    }
    default: {
        size_t n = strlen(text);
        if (n >= 2 && (text[0] == '"' || text[0] == '\'') && text[n - 1] == text[0]) {
            char buf[256];
            if (n - 2 >= sizeof(buf)) return NULL;
            memcpy(buf, text + 1, n - 2);
            buf[n - 2] = '\0';
            return cJSON_CreateString(buf);
        }
        return cJSON_CreateString(text);
    }
    }
}

static void trim(char *s) {
    char *b = s;
    while (isspace((unsigned char)*b)) b++;
    size_t n = strlen(b);
    while (n && isspace((unsigned char)b[n - 1])) n--;
    memmove(s, b, n);
    s[n] = '\0';
}

/* Push a problem built from the report's template. */
static void report(bf_attr_report *rep, const bf_error *e, const char *ptr_suffix) {
    bf_error full = *rep->tmpl;
    full.status = e->status;
    bf_strlcpy(full.code, e->code, sizeof(full.code));
    bf_strlcpy(full.attr, e->attr, sizeof(full.attr));
    bf_strlcpy(full.message, e->message, sizeof(full.message));
    size_t n = strlen(full.pointer);
    if (ptr_suffix && n < sizeof(full.pointer))
        snprintf(full.pointer + n, sizeof(full.pointer) - n, "%s", ptr_suffix);
    if (e->status != BF_OK && rep->n_errors++ == 0) rep->first = full;
    if (!bf_diags_push(rep->diags, &full)) rep->oom = true;
}

static void warn_legacy(bf_attr_report *rep, const bf_attr_desc *d, const bf_attr_value *v,
                        const char *suffix) {
    bf_error w = {0};
    bf_strlcpy(w.code, "legacy_attr_form", sizeof(w.code));
    bf_strlcpy(w.attr, d->name, sizeof(w.attr));
    char canon[160] = "";
    size_t n = 0;
    if (v->list) {
        n += (size_t)snprintf(canon, sizeof(canon), "[");
        for (int k = 0; k < v->n && n < sizeof(canon); k++)
            n += (size_t)snprintf(canon + n, sizeof(canon) - n, "%s%lld", k ? ", " : "",
                                  (long long)v->list[k]);
        if (n < sizeof(canon)) snprintf(canon + n, sizeof(canon) - n, "]");
    } else if (d->kind == BF_ATTR_BOOL) {
        snprintf(canon, sizeof(canon), "%s", v->b ? "true" : "false");
    } else if (d->kind == BF_ATTR_DTYPE) {
        snprintf(canon, sizeof(canon), "\"%s\"", bf_dtype_name(v->dtype));
    } else if (v->s) {
        snprintf(canon, sizeof(canon), "\"%s\"", v->s);
    } else if (d->kind == BF_ATTR_INT) {
        snprintf(canon, sizeof(canon), "%lld", (long long)v->i);
    } else {
        snprintf(canon, sizeof(canon), "%g", v->f);
    }
    snprintf(w.message, sizeof(w.message), "enuSpace form accepted; write \"%s\": %s", d->name,
             canon);
    report(rep, &w, suffix);
}

static int find_attr(const bf_block_desc *desc, const char *name) {
    for (int i = 0; i < desc->n_attrs; i++)
        if (!strcmp(desc->attrs[i].name, name)) return i;
    return -1;
}

/* Parse "key_ = value; key2 = {1,2};" into vals. */
static void parse_legacy_text(const bf_block_desc *desc, const char *text,
                              bf_attr_value *vals, bool *given, bf_attr_report *rep) {
    size_t len = strlen(text);
    char *buf = bf_malloc(len + 1);
    if (!buf) {
        rep->oom = true;
        return;
    }
    memcpy(buf, text, len + 1);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        bf_error e = {0};
        trim(item);
        if (!item[0]) continue;
        char *eq = strchr(item, '=');
        if (!eq) {
            bf_err(&e, BF_EATTR, "bad_attr", "\"%.60s\" is not of the form key = value", item);
            report(rep, &e, "/attrs");
            continue;
        }
        *eq = '\0';
        char *key = item, *val = eq + 1;
        trim(key);
        trim(val);
        size_t kn = strlen(key);
        while (kn && key[kn - 1] == '_') key[--kn] = '\0';
        int idx = find_attr(desc, key);
        if (idx < 0) {
            char dym[96];
            bf_err(&e, BF_EATTR, "unknown_attr", "%s has no attribute \"%.40s\"%s", desc->type,
                   key, bf_suggest_text(bf_suggest_attr(desc, key), dym, sizeof(dym)));
            bf_err_at(&e, NULL, key);
            report(rep, &e, "/attrs");
            continue;
        }
        const bf_attr_desc *d = &desc->attrs[idx];
        given[idx] = true;
        unsigned failures = bf_alloc_failures();
        cJSON *j = legacy_value(d->kind, val);
        if (!j && bf_alloc_failures() != failures) {
            rep->oom = true; /* not a malformed value: cJSON ran out of memory */
            continue;
        }
        bf_status st = j ? bf_attr_parse_one(d, j, &vals[idx], NULL, &e)
                         : bf_err(&e, BF_EATTR, "bad_attr", "\"%.60s\" is not a valid %s", val,
                                  kind_name(d->kind));
        bf_err_at(&e, NULL, d->name);
        cJSON_Delete(j);
        if (st)
            report(rep, &e, "/attrs");
        else
            warn_legacy(rep, d, &vals[idx], "/attrs");
    }
    bf_free(buf);
}

/* JSON pointer escaping of one reference token (RFC 6901): ~ -> ~0, / -> ~1. */
static void pointer_token(char *dst, size_t size, const char *tok) {
    size_t n = 0;
    for (; *tok && n + 3 < size; tok++) {
        if (*tok == '~' || *tok == '/') {
            dst[n++] = '~';
            dst[n++] = *tok == '~' ? '0' : '1';
        } else {
            dst[n++] = *tok;
        }
    }
    dst[n] = '\0';
}

bf_status bf_attrs_parse(const bf_block_desc *desc, const cJSON *attrs, bf_attr_value *vals,
                         bf_attr_report *rep) {
    /* Attributes present in the page, parsed or not: a malformed one is reported as such,
     * never also as missing, and never silently replaced by its default. */
    bool given[64] = {false};
    BF_ASSERT(desc->n_attrs <= BF_COUNT(given));
    if (attrs && cJSON_IsString(attrs)) {
        parse_legacy_text(desc, attrs->valuestring, vals, given, rep);
        bf_error w = {0};
        bf_strlcpy(w.code, "legacy_attr_form", sizeof(w.code));
        bf_strlcpy(w.message, "enuSpace attribute text accepted; write \"attrs\" as a JSON "
                   "object", sizeof(w.message));
        report(rep, &w, "/attrs");
    } else if (attrs && cJSON_IsObject(attrs)) {
        for (const cJSON *j = attrs->child; j; j = j->next) {
            char tok[96], suffix[128];
            pointer_token(tok, sizeof(tok), j->string);
            snprintf(suffix, sizeof(suffix), "/attrs/%s", tok);
            bf_error e = {0};
            int idx = find_attr(desc, j->string);
            if (idx < 0) {
                if (!strncmp(j->string, "x-", 2)) continue; /* editors' own data */
                char dym[96];
                bf_err(&e, BF_EATTR, "unknown_attr", "%s has no attribute \"%.40s\"%s",
                       desc->type, j->string,
                       bf_suggest_text(bf_suggest_attr(desc, j->string), dym, sizeof(dym)));
                bf_err_at(&e, NULL, j->string);
                report(rep, &e, suffix);
                continue;
            }
            bool legacy = false;
            given[idx] = true;
            if (bf_attr_parse_one(&desc->attrs[idx], j, &vals[idx], &legacy, &e))
                report(rep, &e, suffix);
            else if (legacy)
                warn_legacy(rep, &desc->attrs[idx], &vals[idx], suffix);
        }
    } else if (attrs && !cJSON_IsNull(attrs)) {
        bf_error e = {0};
        bf_err(&e, BF_ESCHEMA, "bad_attr", "\"attrs\" must be an object");
        report(rep, &e, "/attrs");
    }
    /* Defaults, and required attributes that are missing. */
    for (int i = 0; i < desc->n_attrs; i++) {
        const bf_attr_desc *d = &desc->attrs[i];
        if (vals[i].set || given[i]) continue;
        if (d->def) {
            if (!bf_attr_set_default(d, &vals[i])) rep->oom = true;
        } else if (!(d->flags & BF_ATTR_OPTIONAL)) {
            bf_error e = {0};
            bf_err(&e, BF_EATTR, "missing_attr", "%s requires the attribute \"%s\" (%s)",
                   desc->type, d->name, kind_name(d->kind));
            bf_err_at(&e, NULL, d->name);
            report(rep, &e, "/attrs");
        }
    }
    if (rep->oom) {
        /* Out of memory trumps whatever else was found: those findings may be its effects
         * (an attribute that could not be stored looks missing). */
        bf_error e = {0};
        bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory while reading attributes");
        report(rep, &e, "");
        rep->first = *rep->tmpl;
        rep->first.status = BF_ENOMEM;
        bf_strlcpy(rep->first.code, e.code, sizeof(rep->first.code));
        bf_strlcpy(rep->first.message, e.message, sizeof(rep->first.message));
    }
    return rep->n_errors ? rep->first.status : BF_OK;
}

/* ---- standalone nodes --------------------------------------------------------------------- */

bf_status bf_node_make(const bf_block_desc *desc, const char *attrs_json, bf_node **out,
                       bf_error *err) {
    *out = NULL;
    bf_node *node = bf_calloc(1, sizeof(*node));
    bf_attr_value *vals = bf_calloc((size_t)(desc->n_attrs ? desc->n_attrs : 1), sizeof(*vals));
    if (!node || !vals) {
        bf_free(node);
        bf_free(vals);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    node->id = "node";
    node->desc = desc;
    node->attrs = vals;
    node->max_elements = BF_DEFAULT_MAX_ELEMENTS;
    cJSON *j = NULL;
    if (attrs_json && attrs_json[0]) {
        j = cJSON_Parse(attrs_json);
        if (!j) {
            bf_node_destroy(node);
            return bf_err(err, BF_EPARSE, "bad_json", "attributes are not valid JSON");
        }
    }
    bf_error tmpl = {0};
    bf_attr_report rep = {.tmpl = &tmpl};
    bf_file_scope files = {.max_elements = node->max_elements};
    bf_status st = bf_attrs_parse(desc, j, vals, &rep);
    cJSON_Delete(j);
    if (st == BF_OK) st = bf_attrs_load_files(desc, vals, &files, &rep.first);
    if (st == BF_OK && desc->init) st = desc->init(node, &rep.first);
    if (st) {
        if (err) *err = rep.first;
        bf_node_destroy(node);
        return st;
    }
    *out = node;
    return BF_OK;
}

void bf_node_destroy(bf_node *node) {
    if (!node) return;
    if (node->desc->fini) node->desc->fini(node);
    bf_attrs_free((bf_attr_value *)node->attrs, node->desc->n_attrs);
    bf_free((void *)node->attrs);
    bf_free(node);
}
