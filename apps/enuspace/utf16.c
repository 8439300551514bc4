/*
 * utf16.c - the text of an enuSpace file as UTF-8. enuSpace writes UTF-16LE with a BOM; a
 * UTF-16BE or UTF-8 file is accepted too. Decoding is strict: a lone or reversed surrogate,
 * an odd number of bytes, a NUL character or invalid UTF-8 is an error naming the byte offset
 * (a NUL would cut every later string short unseen).
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t enu_put_utf8(char *o, unsigned long c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

static char *from_utf16(const unsigned char *b, size_t len, bool be, size_t *out_len, char *err,
                        size_t errsz) {
    if (len % 2) {
        snprintf(err, errsz, "malformed UTF-16: an odd number of bytes (%zu)", len + 2);
        return NULL;
    }
    /* at most 3 UTF-8 bytes per UTF-16 unit (a pair of units: 4 bytes) */
    size_t cap;
    if (__builtin_mul_overflow(len / 2, (size_t)3, &cap) || cap > SIZE_MAX - 1) {
        snprintf(err, errsz, "the page is too large");
        return NULL;
    }
    char *out = malloc(cap + 1);
    if (!out) {
        snprintf(err, errsz, "out of memory decoding the page (%zu bytes)", len);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i += 2) {
        unsigned long u = be ? ((unsigned long)b[i] << 8 | b[i + 1])
                             : ((unsigned long)b[i + 1] << 8 | b[i]);
        if (u >= 0xdc00 && u <= 0xdfff) {
            snprintf(err, errsz, "malformed UTF-16 at byte %zu: a low surrogate without a high one",
                     i + 2);
            free(out);
            return NULL;
        }
        if (u >= 0xd800 && u <= 0xdbff) {
            unsigned long lo = 0;
            if (i + 3 < len)
                lo = be ? ((unsigned long)b[i + 2] << 8 | b[i + 3])
                        : ((unsigned long)b[i + 3] << 8 | b[i + 2]);
            if (lo < 0xdc00 || lo > 0xdfff) {
                snprintf(err, errsz,
                         "malformed UTF-16 at byte %zu: a high surrogate without a low one", i + 2);
                free(out);
                return NULL;
            }
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            i += 2;
        }
        if (u == 0) {
            snprintf(err, errsz, "malformed text at byte %zu: a NUL character", i + 2);
            free(out);
            return NULL;
        }
        o += enu_put_utf8(out + o, u);
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k;
    unsigned long v;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) k = 2, v = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) k = 3, v = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) k = 4, v = c & 0x07;
    else return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if ((k == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (k == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    return k;
}

char *enu_decode_text(const unsigned char *bytes, size_t len, size_t *out_len, char *err,
                      size_t errsz) {
    if (len >= 2 && bytes[0] == 0xff && bytes[1] == 0xfe)
        return from_utf16(bytes + 2, len - 2, false, out_len, err, errsz);
    if (len >= 2 && bytes[0] == 0xfe && bytes[1] == 0xff)
        return from_utf16(bytes + 2, len - 2, true, out_len, err, errsz);
    size_t skip = len >= 3 && !memcmp(bytes, "\xef\xbb\xbf", 3) ? 3 : 0;
    for (size_t i = skip; i < len;) {
        size_t k = bytes[i] ? utf8_len(bytes + i, len - i) : 0;
        if (!k) {
            snprintf(err, errsz,
                     "malformed text at byte %zu: neither UTF-16 with a byte-order mark nor "
                     "UTF-8 without NUL characters", i);
            return NULL;
        }
        i += k;
    }
    char *out = malloc(len - skip + 1);
    if (!out) {
        snprintf(err, errsz, "out of memory reading the page (%zu bytes)", len);
        return NULL;
    }
    memcpy(out, bytes + skip, len - skip);
    out[len - skip] = '\0';
    *out_len = len - skip;
    return out;
}
