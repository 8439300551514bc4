/*
 * xml.c - the hardened XML reader of xml.h. The grammar is XML 1.0's element structure:
 * prolog (declaration, processing instructions, comments), one root element, attributes in
 * single or double quotes, CDATA sections and text (skipped). Whatever could make a reader do
 * more work than the size of its input is refused: a DOCTYPE (entity declarations, the
 * "billion laughs"), an undefined entity, nesting past the limit.
 */
#include "xml.h"
#include "graph.h" /* enu_put_utf8 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    char *s, *end, *base;
    int max_depth;
    char *err;
    size_t errsz;
} parser;

static int line_of(const parser *p, const char *at) {
    int line = 1;
    for (const char *c = p->base; c < at && c < p->end; c++) line += *c == '\n';
    return line;
}

static int fail(parser *p, const char *at, const char *what) {
    snprintf(p->err, p->errsz, "XML line %d: %s", line_of(p, at), what);
    return -1;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_name_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
}
static bool is_name(unsigned char c) {
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static void skip_space(parser *p) {
    while (p->s < p->end && is_space(*p->s)) p->s++;
}

/* Skip past `close` ("?>", "-->", "]]>"); -1 when it never comes. */
static int skip_past(parser *p, const char *close, const char *what) {
    char *at = p->s;
    char *q = strstr(p->s, close);
    if (!q || q >= p->end) return fail(p, at, what);
    p->s = q + strlen(close);
    return 0;
}

/* Read a name at p->s; returns its start (NUL-terminated later by the caller) and its end. */
static char *read_name(parser *p, char **name_end) {
    if (p->s >= p->end || !is_name_start((unsigned char)*p->s)) return NULL;
    char *start = p->s;
    while (p->s < p->end && is_name((unsigned char)*p->s)) p->s++;
    *name_end = p->s;
    return start;
}

/* Decode the attribute value [v, vend) in place (references can only shrink it). */
static int decode_value(parser *p, char *v, char *vend) {
    char *o = v;
    for (char *c = v; c < vend;) {
        if (*c == '<') return fail(p, c, "'<' inside an attribute value");
        if (*c != '&') {
            *o++ = *c++;
            continue;
        }
        char *semi = memchr(c, ';', (size_t)(vend - c));
        if (!semi || semi - c > 12) return fail(p, c, "'&' that starts no reference");
        size_t n = (size_t)(semi - c - 1);
        const char *r = c + 1;
        if (n == 2 && !memcmp(r, "lt", 2)) *o++ = '<';
        else if (n == 2 && !memcmp(r, "gt", 2)) *o++ = '>';
        else if (n == 3 && !memcmp(r, "amp", 3)) *o++ = '&';
        else if (n == 4 && !memcmp(r, "quot", 4)) *o++ = '"';
        else if (n == 4 && !memcmp(r, "apos", 4)) *o++ = '\'';
        else if (n >= 2 && r[0] == '#') {
            bool hex = r[1] == 'x';
            unsigned long cp = 0;
            size_t k = hex ? 2 : 1;
            if (k >= n) return fail(p, c, "an empty character reference");
            for (; k < n; k++) {
                char d = r[k];
                int dv = d >= '0' && d <= '9' ? d - '0'
                         : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                         : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10 : -1;
                if (dv < 0) return fail(p, c, "a malformed character reference");
                cp = cp * (hex ? 16 : 10) + (unsigned long)dv;
                if (cp > 0x10ffff) break;
            }
            if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return fail(p, c, "a character reference to no valid character");
            o += enu_put_utf8(o, cp);
        } else {
            return fail(p, c, "an undefined entity (only &lt; &gt; &amp; &quot; &apos; and "
                              "character references; entities are never expanded)");
        }
        c = semi + 1;
    }
    *o = '\0';
    return 0;
}

/* The element at p->s (just past '<'). */
static int element(parser *p, const enu_xml_handler *h, int depth) {
    if (depth >= p->max_depth) return fail(p, p->s, "elements nested too deeply");
    char *name_end, *name = read_name(p, &name_end);
    if (!name) return fail(p, p->s, "a malformed element name");
    enu_xml_attr attrs[ENU_XML_MAX_ATTRS];
    int n = 0;
    bool empty = false;
    for (;;) {
        char *before = p->s;
        skip_space(p);
        if (p->s >= p->end) return fail(p, p->s, "the document ends inside a start tag");
        if (*p->s == '/') {
            if (p->s + 1 >= p->end || p->s[1] != '>') return fail(p, p->s, "'/' not before '>'");
            p->s += 2;
            empty = true;
            break;
        }
        if (*p->s == '>') {
            p->s++;
            break;
        }
        if (p->s == before) return fail(p, p->s, "attributes must be separated by spaces");
        char *an_end, *an = read_name(p, &an_end);
        if (!an) return fail(p, p->s, "a malformed attribute name");
        skip_space(p);
        if (p->s >= p->end || *p->s != '=') return fail(p, p->s, "an attribute without '='");
        p->s++;
        skip_space(p);
        if (p->s >= p->end || (*p->s != '"' && *p->s != '\''))
            return fail(p, p->s, "an attribute value not in quotes");
        char q = *p->s++;
        char *v = p->s, *vend = memchr(v, q, (size_t)(p->end - v));
        if (!vend) return fail(p, v, "an attribute value that never ends");
        p->s = vend + 1;
        if (n == ENU_XML_MAX_ATTRS) return fail(p, an, "too many attributes on one element");
        *an_end = '\0';
        if (decode_value(p, v, vend)) return -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(attrs[i].name, an)) return fail(p, an, "an attribute given twice");
        attrs[n].name = an;
        attrs[n].value = v;
        n++;
    }
    char saved = *name_end;
    *name_end = '\0';
    /* name_end may be the '/' or '>' just consumed; the name is copied by nobody, so keep
     * it terminated only for the callbacks */
    if (h->start && h->start(h->user, name, attrs, n, depth, p->err, p->errsz)) return -1;
    if (empty) {
        int r = h->end ? h->end(h->user, name, depth, p->err, p->errsz) : 0;
        return r;
    }
    (void)saved;
    /* content */
    for (;;) {
        char *lt = memchr(p->s, '<', (size_t)(p->end - p->s));
        if (!lt) return fail(p, p->end, "the document ends inside an element");
        p->s = lt + 1;
        if (p->s >= p->end) return fail(p, lt, "the document ends after '<'");
        if (*p->s == '/') {
            p->s++;
            char *ce, *cn = read_name(p, &ce);
            if (!cn || (size_t)(ce - cn) != strlen(name) || memcmp(cn, name, (size_t)(ce - cn)))
                return fail(p, lt, "an end tag that does not match its start tag");
            skip_space(p);
            if (p->s >= p->end || *p->s != '>') return fail(p, p->s, "a malformed end tag");
            p->s++;
            return h->end ? h->end(h->user, name, depth, p->err, p->errsz) : 0;
        }
        if (*p->s == '!') {
            if (!strncmp(p->s, "!--", 3)) {
                if (skip_past(p, "-->", "a comment that never ends")) return -1;
            } else if (!strncmp(p->s, "![CDATA[", 8)) {
                if (skip_past(p, "]]>", "a CDATA section that never ends")) return -1;
            } else {
                return fail(p, lt, "a declaration inside an element");
            }
            continue;
        }
        if (*p->s == '?') {
            if (skip_past(p, "?>", "a processing instruction that never ends")) return -1;
            continue;
        }
        if (element(p, h, depth + 1)) return -1;
    }
}

int enu_xml_parse(char *text, size_t len, int max_depth, const enu_xml_handler *h, char *err,
                  size_t errsz) {
    parser p = {.s = text, .end = text + len, .base = text, .max_depth = max_depth,
                .err = err, .errsz = errsz};
    bool root_seen = false;
    for (;;) {
        skip_space(&p);
        if (p.s >= p.end) break;
        if (*p.s != '<') return fail(&p, p.s, "text outside the root element");
        p.s++;
        if (p.s < p.end && *p.s == '?') {
            if (skip_past(&p, "?>", "a processing instruction that never ends")) return -1;
        } else if (!strncmp(p.s, "!--", 3)) {
            if (skip_past(&p, "-->", "a comment that never ends")) return -1;
        } else if (!strncmp(p.s, "!DOCTYPE", 8)) {
            return fail(&p, p.s, "a DOCTYPE: document type definitions (and so entity "
                                 "declarations) are not accepted");
        } else if (p.s < p.end && *p.s == '!') {
            return fail(&p, p.s, "a declaration outside the root element");
        } else {
            if (root_seen) return fail(&p, p.s, "a second root element");
            root_seen = true;
            if (element(&p, h, 0)) return -1;
        }
    }
    if (!root_seen) return fail(&p, p.s, "no root element");
    return 0;
}
