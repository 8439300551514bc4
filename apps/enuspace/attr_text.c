/*
 * attr_text.c - enuSpace's attribute text ("transpose_a_ = false;transpose_b_ = true;",
 * FORMAT.md 7.4) and const pins (strides, padding, ksize, DstT) as typed attributes.
 */
#include "conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int conv_typed_attr(conv *c, const enu_block *b, cJSON *attrs, const char *name, char kind,
                      const char *val, const char *pin) {
    char why[300];
    if (kind == 'b') {
        cJSON_AddBoolToObject(attrs, name, !strcmp(val, "true") || !strcmp(val, "TRUE") ||
                                               !strcmp(val, "1"));
    } else if (kind == 'i') {
        char *e;
        long long x = strtoll(val, &e, 10);
        if (e == val || *e)
            return conv_fail(c, "block \"%.60s\" (%s) %s \"%s\": \"%.40s\" is not an integer", b->id,
                         b->symbol, pin, name, val);
        cJSON_AddNumberToObject(attrs, name, (double)x);
    } else if (kind == 'l' || kind == 'L') {
        int64_t xs[16];
        int n;
        if (enu_parse_int_list(val, xs, 16, &n, why, sizeof why))
            return conv_fail(c, "block \"%.60s\" (%s) %s \"%s\": %s", b->id, b->symbol, pin, name,
                         why);
        if (kind == 'L' && !strncmp(c->g->version, "4.", 2)) {
            conv_note(c, "block \"%s\": %s is not read by the 2.0 plugin (default used)", b->id, name);
            return 0;
        }
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; k < n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)xs[k]));
        cJSON_AddItemToObject(attrs, name, a);
    } else if (kind == 't') {
        int dt = enu_dtype_from_tf(val, why, sizeof why);
        if (dt < 0 || dt == ENU_STRING || dt == ENU_BOOL)
            return conv_fail(c, "block \"%.60s\" (%s) %s \"%s\": %s", b->id, b->symbol, pin, name,
                         dt < 0 ? why : "blockflow has no bool or string dtype");
        cJSON_AddStringToObject(attrs, name, enu_dtype_name((enu_dtype)dt));
    } else if (kind == 's') {
        cJSON_AddStringToObject(attrs, name, val);
    }
    return 0;
}

/* "transpose_a_ = false;transpose_b_ = true;" (7.4): spaces, CR and LF removed, split on ';'
 * and the first '=', first occurrence kept, trailing '_' dropped, empty values unset. */
int conv_attr_text(conv *c, const enu_block *b, const enu_op *op, cJSON *attrs,
                     const char *text) {
    size_t n = strlen(text);
    char *t = malloc(n + 1), *o = t;
    if (!t) return conv_oom(c);
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
                conv_note(c, "block \"%s\": attribute %s_ given twice, the first kept", b->id, name);
            } else if (kind == '-') {
                conv_note(c, "block \"%s\": %s_ is read and discarded by the plugin", b->id, name);
            } else if (kind) {
                r = conv_typed_attr(c, b, attrs, name, kind, val, "attribute");
            } else if (strcmp(name, "container") && strcmp(name, "shared_name")) {
                conv_note(c, "block \"%s\": attribute text \"%s_\" is not one %s reads (ignored, as "
                     "the plugin ignores it)", b->id, name, b->symbol);
            }
        }
        item = semi ? semi + 1 : NULL;
    }
    free(t);
    return r;
}
