/*
 * literal.c - enuSpace's value texts (FORMAT.md 3.6 and 7.3): typed arrays ("1;2;3;4" or
 * "{1,2,3,4}" with the shape from the pin), tensor literals (dtype from the characters: an
 * 'f' is float32, a '.', 'e' or 'E' float64, else int32; shape from the brace nesting) and
 * shape suffixes ("[2][3]"). Sizes are checked against the options' limits before anything
 * is allocated, and brace nesting against max_depth.
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void enu_value_free(enu_value *v) {
    free(v->d);
    free(v->s);
    memset(v, 0, sizeof(*v));
}

const char *enu_dtype_name(enu_dtype t) {
    switch (t) {
    case ENU_F32: return "float32";
    case ENU_F64: return "float64";
    case ENU_I32: return "int32";
    case ENU_I64: return "int64";
    case ENU_BOOL: return "bool";
    default: return "string";
    }
}

int enu_dtype_from_var_type(const char *t) {
    if (!strcmp(t, "double")) return ENU_F64;
    if (!strcmp(t, "float")) return ENU_F32;
    if (!strcmp(t, "int")) return ENU_I32;
    if (!strcmp(t, "bool")) return ENU_BOOL;
    return -1;
}

int enu_dtype_from_tf(const char *t, char *err, size_t errsz) {
    static const struct { const char *tf; int dt; } names[] = {
        {"DT_FLOAT", ENU_F32}, {"DT_DOUBLE", ENU_F64}, {"DT_INT32", ENU_I32},
        {"DT_INT64", ENU_I64}, {"DT_BOOL", ENU_BOOL},  {"DT_STRING", ENU_STRING},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(t, names[i].tf)) return names[i].dt;
    snprintf(err, errsz, "dtype \"%.40s\" is not one blockflow has (DT_FLOAT, DT_DOUBLE, "
             "DT_INT32, DT_INT64)", t);
    return -1;
}

static int set_dims(enu_value *v, const int64_t *dims, int rank, const enu_options *o, char *err,
                    size_t errsz) {
    if (rank > ENU_MAX_RANK) {
        snprintf(err, errsz, "rank %d is more than %d", rank, ENU_MAX_RANK);
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n) || n > o->max_elements) {
            snprintf(err, errsz, "the shape declares more than %lld elements",
                     (long long)o->max_elements);
            return -1;
        }
        v->dims[i] = dims[i];
    }
    v->rank = rank;
    v->n = n;
    return 0;
}

int enu_parse_shape_suffix(const char *s, const enu_options *o, enu_value *v, char *err,
                           size_t errsz) {
    int64_t dims[ENU_MAX_RANK + 1];
    int rank = 0;
    const char *p = s;
    while (*p == ' ') p++;
    while (*p) {
        if (*p != '[') goto bad;
        p++;
        if (*p < '0' || *p > '9') goto bad;
        int64_t d = 0;
        while (*p >= '0' && *p <= '9') {
            if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, *p - '0', &d)) {
                snprintf(err, errsz, "shape \"%.40s\" has a dimension too large", s);
                return -1;
            }
            p++;
        }
        if (*p != ']') goto bad;
        p++;
        if (rank == ENU_MAX_RANK) {
            snprintf(err, errsz, "shape \"%.40s\" has more than %d dimensions", s, ENU_MAX_RANK);
            return -1;
        }
        dims[rank++] = d;
    }
    if (set_dims(v, dims, rank, o, err, errsz)) {
        char why[200];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errsz, "shape \"%.40s\": %s", s, why);
        return -1;
    }
    return 0;
bad:
    snprintf(err, errsz, "shape \"%.40s\" is not of the form [d0][d1]...", s);
    return -1;
}

/* Count the numbers of a text split on ';' and ',' (braces and spaces ignored); false on
 * overflow. */
static int64_t count_items(const char *t) {
    int64_t n = 0;
    bool in = false;
    for (const char *p = t; *p; p++) {
        bool sep = *p == ';' || *p == ',' || *p == '{' || *p == '}' || *p == ' ' ||
                   *p == '\t' || *p == '\n' || *p == '\r';
        if (!sep && !in) n++;
        in = !sep;
    }
    return n;
}

/* The number in [s, e): characters other than digits, '.', '+', '-', 'e', 'E' dropped, as
 * the plugin does ("0.5f" is 0.5); true/false are 1/0. */
static int number(const char *s, const char *e, double *out, char *err, size_t errsz) {
    char buf[64];
    size_t n = 0, len = (size_t)(e - s);
    if ((len == 4 && (!strncmp(s, "true", 4) || !strncmp(s, "TRUE", 4))) ||
        (len == 5 && (!strncmp(s, "false", 5) || !strncmp(s, "FALSE", 5)))) {
        *out = len == 4;
        return 0;
    }
    for (const char *p = s; p < e; p++) {
        char c = *p;
        if ((c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' || c == 'e' || c == 'E') {
            if (n + 1 >= sizeof buf) goto bad;
            buf[n++] = c;
        }
    }
    buf[n] = '\0';
    char *end;
    *out = strtod(buf, &end);
    if (!n || *end || *out != *out) goto bad;
    return 0;
bad:
    snprintf(err, errsz, "\"%.*s\" is not a number", (int)(len > 40 ? 40 : len), s);
    return -1;
}

/* Fill v->d from the numbers of `t` (exactly v->n of them). */
static int fill_numbers(const char *t, enu_value *v, char *err, size_t errsz) {
    int64_t k = 0;
    const char *p = t;
    while (*p) {
        while (*p && strchr(";,{} \t\r\n", *p)) p++;
        if (!*p) break;
        const char *s = p;
        while (*p && !strchr(";,{} \t\r\n", *p)) p++;
        if (k >= v->n) {
            snprintf(err, errsz, "more values than the shape holds (%lld)", (long long)v->n);
            return -1;
        }
        if (number(s, p, &v->d[k], err, errsz)) return -1;
        double x = v->d[k];
        if ((v->dtype == ENU_I32 && (x != (double)(int32_t)x || x < -2147483648.0 ||
                                     x > 2147483647.0)) ||
            (v->dtype == ENU_I64 && (x != (double)(long long)x))) {
            /* TensorFlow's integer literals are whole numbers; a fraction is truncated by
             * the plugin's stoll: keep its integer part, as it does */
            if (x >= -9.2e18 && x <= 9.2e18) v->d[k] = (double)(long long)x;
            if (v->dtype == ENU_I32 && (v->d[k] < -2147483648.0 || v->d[k] > 2147483647.0)) {
                snprintf(err, errsz, "%.40s does not fit an int32", s);
                return -1;
            }
        }
        if (v->dtype == ENU_F32) v->d[k] = (double)(float)v->d[k];
        k++;
    }
    if (k != v->n) {
        snprintf(err, errsz, "%lld values for a shape of %lld elements", (long long)k,
                 (long long)v->n);
        return -1;
    }
    return 0;
}

static int alloc_numbers(enu_value *v, char *err, size_t errsz) {
    v->d = calloc(v->n ? (size_t)v->n : 1, sizeof(double));
    if (!v->d) {
        snprintf(err, errsz, "out of memory for %lld values", (long long)v->n);
        return -1;
    }
    return 0;
}

int enu_parse_typed_text(const char *text, const char *shape, enu_dtype dt, const enu_options *o,
                         enu_value *v, char *err, size_t errsz) {
    memset(v, 0, sizeof(*v));
    v->dtype = dt;
    if (dt == ENU_STRING) {
        v->s = strdup(text);
        return v->s ? 0 : (snprintf(err, errsz, "out of memory"), -1);
    }
    if (enu_parse_shape_suffix(shape, o, v, err, errsz)) return -1;
    if (count_items(text) > v->n) {
        snprintf(err, errsz, "more values than the shape %s holds (%lld)",
                 *shape ? shape : "[] (a scalar)", (long long)v->n);
        return -1;
    }
    if (alloc_numbers(v, err, errsz) || fill_numbers(text, v, err, errsz)) {
        enu_value_free(v);
        return -1;
    }
    return 0;
}

/* The shape of a brace literal: each nesting level a dimension, every list at a level the
 * same length, every number at the same depth. */
static int brace_shape(const char *t, const enu_options *o, int64_t *dims, int *rank, char *err,
                       size_t errsz) {
    int64_t count[ENU_MAX_RANK + 1] = {0};
    bool item[ENU_MAX_RANK + 1] = {false}, seen[ENU_MAX_RANK + 1] = {false};
    int depth = 0, leaf = -1, deepest = 0;
    const char *p = t;
    while (*p == ' ') p++;
    if (*p != '{') {
        *rank = 0;
        return 0;
    }
    for (; *p; p++) {
        char c = *p;
        if (c == '{') {
            if (depth > 0 && item[depth - 1]) goto ragged; /* "{1 {2}}" */
            if ((leaf >= 0 && leaf <= depth) || depth >= ENU_MAX_RANK || depth >= o->max_depth) {
                if (leaf >= 0 && leaf <= depth) goto ragged;
                snprintf(err, errsz, "braces nested more than %d deep", ENU_MAX_RANK);
                return -1;
            }
            depth++;
            if (depth > deepest) deepest = depth;
            count[depth - 1] = 0;
            item[depth - 1] = false;
        } else if (c == '}') {
            if (depth == 0) goto unbalanced;
            int lvl = depth - 1;
            if (count[lvl] > 0 && !item[lvl]) goto empty;
            int64_t n = count[lvl] + (item[lvl] ? 1 : 0);
            if (seen[lvl] && dims[lvl] != n) goto ragged;
            dims[lvl] = n;
            seen[lvl] = true;
            depth--;
            if (depth > 0) item[depth - 1] = true;
            if (depth == 0) {
                p++;
                while (*p == ' ') p++;
                if (*p) goto unbalanced;
                break;
            }
        } else if (c == ',' || c == ';') {
            if (depth == 0) goto unbalanced;
            if (!item[depth - 1]) goto empty;
            count[depth - 1]++;
            item[depth - 1] = false;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        } else {
            if (depth == 0) goto unbalanced;
            if (leaf < 0) leaf = depth;
            if (leaf != depth) goto ragged;
            if (item[depth - 1] && (p[-1] == ' ' || p[-1] == '}')) goto ragged;
            item[depth - 1] = true;
        }
    }
    if (depth != 0) goto unbalanced;
    *rank = leaf >= 0 ? leaf : deepest;
    for (int i = 0; i < *rank; i++)
        if (!seen[i]) dims[i] = 0;
    return 0;
ragged:
    snprintf(err, errsz, "\"%.40s\": the lists inside the braces differ in length or depth", t);
    return -1;
empty:
    snprintf(err, errsz, "\"%.40s\": an empty item between separators", t);
    return -1;
unbalanced:
    snprintf(err, errsz, "\"%.40s\": unbalanced braces", t);
    return -1;
}

int enu_parse_literal(const char *text, int dt, const enu_options *o, enu_value *v, char *err,
                      size_t errsz) {
    memset(v, 0, sizeof(*v));
    if (dt < 0) {
        if (strchr(text, '"')) dt = ENU_STRING;
        else if (strpbrk(text, "jJ")) {
            snprintf(err, errsz, "\"%.40s\" is a complex literal: blockflow has no complex dtype",
                     text);
            return -1;
        } else if (strchr(text, 'f')) dt = ENU_F32;
        else if (strpbrk(text, ".eE")) dt = ENU_F64;
        else dt = ENU_I32;
    }
    v->dtype = (enu_dtype)dt;
    if (dt == ENU_STRING) {
        /* {W2} -> "W2"; quotes dropped */
        size_t n = strlen(text);
        v->s = malloc(n + 1);
        if (!v->s) return snprintf(err, errsz, "out of memory"), -1;
        size_t k = 0;
        for (const char *p = text; *p; p++)
            if (*p != '{' && *p != '}' && *p != '"') v->s[k++] = *p;
        v->s[k] = '\0';
        return 0;
    }
    int64_t dims[ENU_MAX_RANK + 1];
    int rank;
    if (brace_shape(text, o, dims, &rank, err, errsz) || set_dims(v, dims, rank, o, err, errsz))
        return -1;
    if (count_items(text) != v->n) {
        snprintf(err, errsz, "\"%.40s\": %lld values for a shape of %lld elements (the lists "
                 "inside the braces differ in depth)", text, (long long)count_items(text),
                 (long long)v->n);
        return -1;
    }
    if (alloc_numbers(v, err, errsz) || fill_numbers(text, v, err, errsz)) {
        enu_value_free(v);
        return -1;
    }
    return 0;
}

int enu_parse_int_list(const char *text, int64_t *out, int max, int *n, char *err, size_t errsz) {
    *n = 0;
    const char *p = text;
    while (*p) {
        while (*p && strchr(";,{} \t\r\n", *p)) p++;
        if (!*p) break;
        char *e;
        long long x = strtoll(p, &e, 10);
        if (e == p || (*e && !strchr(";,{} \t\r\n", *e))) {
            snprintf(err, errsz, "\"%.40s\" is not a list of integers", text);
            return -1;
        }
        if (*n == max) {
            snprintf(err, errsz, "\"%.40s\" has more than %d integers", text, max);
            return -1;
        }
        out[(*n)++] = x;
        p = e;
    }
    return 0;
}
