/*
 * suggest.c - "did you mean": the nearest known name to a misspelt block type or attribute,
 * for the library's own messages (so the CLI, the server and bindings all show it).
 *
 * Names are compared case-insensitively by edit distance (Levenshtein: insertions, deletions
 * and substitutions of one character each cost 1). A name is suggested when it is the closest
 * and close enough to be a typo: at most 1 edit for names of up to 3 characters, 2 up to 6,
 * and 3 beyond. "conv2d" gives "Conv2D" (distance 0 ignoring case), "Conv2DBackpropFilte"
 * gives "Conv2DBackpropFilter"; "xyz" gives nothing.
 */
#include "block.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Case-insensitive edit distance of a and b, or a large number when either is longer than 63
 * characters (no block type or attribute is). */
static int distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 1000;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The closest of `n` names (name(i, ctx) gives each) to `word`, within the typo threshold. */
static const char *nearest(const char *word, int n, const char *(*name)(int, const void *),
                           const void *ctx) {
    if (!word || !*word) return NULL;
    size_t len = strlen(word);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3, best = limit + 1;
    const char *pick = NULL;
    for (int i = 0; i < n; i++) {
        int d = distance(word, name(i, ctx));
        if (d < best) best = d, pick = name(i, ctx);
    }
    return pick;
}

static const char *type_name(int i, const void *ctx) {
    (void)ctx;
    return bf_registry_at(i)->type;
}

static const char *attr_name(int i, const void *ctx) {
    return ((const bf_block_desc *)ctx)->attrs[i].name;
}

const char *bf_suggest_type(const char *type) {
    return nearest(type, bf_registry_count(), type_name, NULL);
}

const char *bf_suggest_attr(const bf_block_desc *desc, const char *attr) {
    return nearest(attr, desc->n_attrs, attr_name, desc);
}

const char *bf_suggest_text(const char *name, char *buf, size_t size) {
    if (!name) return "";
    snprintf(buf, size, " (did you mean \"%s\"?)", name);
    return buf;
}
