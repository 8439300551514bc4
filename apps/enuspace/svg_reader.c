/*
 * svg_reader.c - an enuSpace SVG picture page into a graph (graph.h): each <use> with an
 * xlink:href is a block (its symbol, task `type`, `translate` position and <pg-set-pin>
 * values), each <pg-link> a wire, kept in document order (list inputs take their wires in
 * that order). Drawings, comments and scripts are skipped. 3.x pages name a pin's type
 * `var-type`, 4.x pages `type`.
 */
#include "graph.h"
#include "xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct svg_state {
    enu_graph *g;
    int use_block;  /* index of the <use> being read, -1 */
    int use_depth;
    bool root_seen;
} svg_state;

static const char *attr(const enu_xml_attr *a, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i].name, name)) return a[i].value;
    return NULL;
}

/* translate(x,y) of a transform; false when there is none. */
static bool translate(const char *t, double *x, double *y) {
    const char *p = t ? strstr(t, "translate(") : NULL;
    if (!p) return false;
    char *e;
    p += 10;
    *x = strtod(p, &e);
    if (e == p) return false;
    p = e;
    while (*p == ',' || *p == ' ') p++;
    *y = strtod(p, &e);
    return e != p && *x == *x && *y == *y && *x < 1e9 && *x > -1e9 && *y < 1e9 && *y > -1e9;
}

static int on_start(void *user, const char *name, const enu_xml_attr *a, int n, int depth,
                    char *err, size_t errsz) {
    svg_state *st = user;
    enu_graph *g = st->g;
    if (depth == 0) {
        if (strcmp(name, "svg")) {
            snprintf(err, errsz, "the root element is <%.40s>, not <svg>: not an enuSpace page",
                     name);
            return -1;
        }
        const char *v = attr(a, n, "enuspace-version");
        g->version = strdup(v ? v : "");
        if (!g->version) return snprintf(err, errsz, "out of memory"), -1;
        return 0;
    }
    if (!strcmp(name, "use")) {
        const char *href = attr(a, n, "xlink:href"), *id = attr(a, n, "id");
        if (!href || href[0] != '#' || !href[1]) return 0; /* a drawing, not a block */
        if (!id || !*id) {
            snprintf(err, errsz, "a <use> of \"%.60s\" has no id", href + 1);
            return -1;
        }
        if (st->use_block >= 0) {
            snprintf(err, errsz, "block \"%.60s\" is nested inside block \"%.60s\"", id,
                     g->blocks[st->use_block].id);
            return -1;
        }
        for (int i = 0; i < g->n_blocks; i++)
            if (!strcmp(g->blocks[i].id, id)) {
                snprintf(err, errsz, "block id \"%.60s\" is used twice", id);
                return -1;
            }
        const char *task = attr(a, n, "type");
        enu_block *b = enu_graph_add_block(g, id, href + 1, task ? task : "");
        if (!b) return snprintf(err, errsz, "out of memory"), -1;
        b->has_pos = translate(attr(a, n, "transform"), &b->x, &b->y);
        st->use_block = g->n_blocks - 1;
        st->use_depth = depth;
        return 0;
    }
    if (!strcmp(name, "pg-set-pin")) {
        if (st->use_block < 0) return 0;
        enu_block *b = &g->blocks[st->use_block];
        const char *var = attr(a, n, "variable");
        if (!var || var[0] != '#' || !var[1]) {
            snprintf(err, errsz, "block \"%.60s\": a <pg-set-pin> without a \"#name\" variable",
                     b->id);
            return -1;
        }
        char pin[128];
        size_t k = strcspn(var + 1, "[");
        if (k == 0 || k >= sizeof pin) {
            snprintf(err, errsz, "block \"%.60s\": pin name \"%.60s\" is empty or too long",
                     b->id, var);
            return -1;
        }
        memcpy(pin, var + 1, k);
        pin[k] = '\0';
        if (enu_block_pin(b, pin)) {
            snprintf(err, errsz, "block \"%.60s\": pin \"%s\" is given twice", b->id, pin);
            return -1;
        }
        const char *type = attr(a, n, "var-type");
        if (!type) type = attr(a, n, "type");
        const char *save = attr(a, n, "save-type");
        const char *shape = attr(a, n, "shape");
        enu_pin *p = enu_block_add_pin(b, pin, shape ? shape : "", type ? type : "string",
                                       attr(a, n, "value"));
        if (!p) return snprintf(err, errsz, "out of memory"), -1;
        if (save && !strcmp(save, "binary")) {
            const char *pos = attr(a, n, "binary-pos");
            char *e;
            errno = 0;
            long long v = pos ? strtoll(pos, &e, 10) : -1;
            if (!pos || !*pos || *e || v < 0 || errno == ERANGE) {
                snprintf(err, errsz, "block \"%.60s\" pin \"%s\": a binary value needs a "
                         "binary-pos of 0 or more (got \"%.30s\")", b->id, pin, pos ? pos : "");
                return -1;
            }
            p->binary = true;
            p->pos = v;
        }
        return 0;
    }
    if (!strcmp(name, "pg-link")) {
        const char *f = attr(a, n, "from-id"), *fp = attr(a, n, "param-from"),
                   *t = attr(a, n, "to-id"), *tp = attr(a, n, "param-to");
        if (!f || !fp || !t || !tp || !*f || !*fp || !*t || !*tp) {
            const char *id = attr(a, n, "id");
            snprintf(err, errsz, "wire \"%.60s\" lacks from-id, param-from, to-id or param-to",
                     id ? id : "?");
            return -1;
        }
        if (!enu_graph_add_wire(g, f, fp, t, tp)) return snprintf(err, errsz, "out of memory"), -1;
    }
    return 0;
}

static int on_end(void *user, const char *name, int depth, char *err, size_t errsz) {
    svg_state *st = user;
    (void)name, (void)err, (void)errsz;
    if (st->use_block >= 0 && depth == st->use_depth) st->use_block = -1;
    return 0;
}

int enu_read_svg(const char *utf8, size_t len, const enu_options *o, enu_graph *g, char *err,
                 size_t errsz) {
    char *text = malloc(len + 1);
    if (!text) return snprintf(err, errsz, "out of memory"), -1;
    memcpy(text, utf8, len);
    text[len] = '\0';
    svg_state st = {.g = g, .use_block = -1};
    enu_xml_handler h = {.start = on_start, .end = on_end, .user = &st};
    int r = enu_xml_parse(text, len, o->max_depth, &h, err, errsz);
    free(text);
    if (!r && !g->version) {
        g->version = strdup("");
        if (!g->version) return snprintf(err, errsz, "out of memory"), -1;
    }
    return r;
}
