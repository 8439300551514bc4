/*
 * json_check.c - the one check every JSON text from outside passes before it is parsed:
 * nesting depth within bf_config.max_json_depth (cJSON recurses per level, and a tree of
 * "[[[[..." costs memory per byte), and no NUL in a string ("\u0000" or a raw 0 byte: C
 * strings would silently cut the text there, e.g. a `file` attribute "a.npy\u0000.json").
 * The page loader and the server (bodies, WebSocket messages) use it, so there is one rule.
 */
#include "common.h"

#include <ctype.h>

static void where(const char *s, size_t off, bf_error *err) {
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') line++, col = 1;
        else col++;
    }
    if (err) err->line = line, err->column = col;
}

bf_status bf_json_check(const char *text, size_t len, int max_depth, bf_error *err) {
    if (!text && len) return bf_err(err, BF_EINVAL, "bad_argument", "no JSON text");
    if (max_depth <= 0) max_depth = 64;
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\0') {
            bf_err(err, BF_EPARSE, "nul_in_string", "the JSON text holds a NUL byte");
            where(text, i, err);
            return BF_EPARSE;
        }
        if (in_string) {
            if (c == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && i + 5 < len && text[i + 2] == '0' && text[i + 3] == '0' &&
                    text[i + 4] == '0' && text[i + 5] == '0') {
                    bf_err(err, BF_EPARSE, "nul_in_string",
                           "a JSON string holds \\u0000 (NUL), which names and attributes may "
                           "not contain");
                    where(text, i, err);
                    return BF_EPARSE;
                }
                i++;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                bf_err(err, BF_ELIMIT, "too_deep",
                       "JSON nested deeper than %d levels (bf_config.max_json_depth)",
                       max_depth);
                where(text, i, err);
                return BF_ELIMIT;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return BF_OK;
}
