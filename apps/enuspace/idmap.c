/*
 * idmap.c - the hash map of idmap.h (FNV-1a, linear probing, grown at half full).
 */
#include "idmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static bool grow(enu_idmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(cap, sizeof(*keys));
    int *vals = calloc(cap, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = hash(m->keys[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool enu_idmap_put(enu_idmap *m, const char *key, int val) {
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
    size_t j = hash(key) & (m->cap - 1);
    while (m->keys[j] && strcmp(m->keys[j], key)) j = (j + 1) & (m->cap - 1);
    if (!m->keys[j]) m->n++;
    m->keys[j] = key;
    m->vals[j] = val;
    return true;
}

int enu_idmap_get(const enu_idmap *m, const char *key) {
    if (!m->cap) return -1;
    size_t j = hash(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (!strcmp(m->keys[j], key)) return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void enu_idmap_free(enu_idmap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}
