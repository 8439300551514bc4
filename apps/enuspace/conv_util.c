/*
 * conv_util.c - what every part of a conversion needs (conv.h): the error, the report's notes,
 * strings kept until the end, and blockflow ids (valid, unique; enuSpace ids kept when they
 * can be).
 */
#include "conv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int conv_fail(conv *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errsz, fmt, ap);
    va_end(ap);
    return -1;
}

int conv_oom(conv *c) { return conv_fail(c, "out of memory"); }

void conv_note(conv *c, const char *fmt, ...) {
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(c->r_notes, cJSON_CreateString(buf));
}

/* Keep `s` (a new string) alive until the end; NULL on OOM. */
const char *conv_own(conv *c, char *s) {
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
const char *conv_take_id(conv *c, const char *want) {
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
    const char *s = conv_own(c, strdup(cand));
    if (!s || !enu_idmap_put(&c->used, s, 1)) return NULL;
    return s;
}

const char *conv_pin_text(const enu_block *b, const char *pin) {
    const enu_pin *p = enu_block_pin(b, pin);
    return p ? p->value : "";
}

void conv_unsupported(conv *c, int i, const char *fmt, ...) {
    char buf[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->kind[i] = K_UNSUPPORTED;
    free(c->why[i]);
    c->why[i] = strdup(buf);
}

int conv_wires_into(const conv *c, int i, const char *pin, int *first) {
    int n = 0;
    *first = -1;
    for (int w = c->in_first[i]; w >= 0; w = c->in_next[w])
        if (!strcmp(c->g->wires[w].to_pin, pin)) {
            if (*first < 0) *first = w;
            n++;
        }
    return n;
}
