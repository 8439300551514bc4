/*
 * pipeline.c - the parts of enuSpace pages that have no one-to-one blockflow block, recognised
 * as the patterns FORMAT.md 7.9 describes and rewritten in the graph before it is mapped:
 *
 *   reader pipeline  a DecodeRaw of ReaderReadUpTo.values, whose reader is a
 *                    FixedLengthRecordReader (record_bytes, header_bytes_) and whose queue a
 *                    FIFOQueue fed by QueueEnqueue <- InputList <- [Switch.output_true <-] a
 *                    DT_STRING Const_ex holding the file's path: one Dataset on that IDX file
 *                    (batch_size = num_records, the file's path rewritten: data_dir/NAME, or
 *                    PARENT/NAME relative to the page), reshaped to [-1, record_bytes] as
 *                    DecodeRaw's [k, record_bytes]. The reader advanced once a step and
 *                    restarted the file at its end; the Dataset does the same (drop_remainder,
 *                    so that the page's fixed batch shapes hold).
 *   one-hot chain    SparseToDense(Transpose(Cast(Reshape(TensorArrayGather(TensorArray with
 *                    TensorArrayWrite(1, labels), TensorArrayWrite(0, 0..n-1))))), [n, depth],
 *                    ones, 0): OneHot(Reshape(labels, [-1]), depth, on, off), exactly.
 *   gated Assign     Assign(V, Switch(data, pred).output_true) with V a float Variable: the
 *                    Switch is bypassed, V takes `data` every step (blockflow has no dead
 *                    branches: the page's load schedule, every K steps, is not kept; noted).
 *   Save chains      Save <- InputList <- Switch: dropped (blockflow train --checkpoint saves
 *                    every Variable; noted with the file and tensor names).
 *   InputList        wired into a list input (AddN's inputs): its wires go there directly.
 *   leftovers        what then only feeds dropped blocks (the load and save counters: int32
 *                    Variables, their Add/Assign/Mod/Equal) is dropped too; a block that
 *                    nothing reads and whose required inputs are unwired (the plugin fails to
 *                    create it, harmlessly) is dropped.
 */
#include "graph.h"
#include "idmap.h"
#include "ops.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rw {
    enu_graph *g;
    enu_idmap ids;
    const enu_options *o;
    cJSON *maps;
    char *err;
    size_t errsz;
} rw;

/* Block ids do not change here, so one map (g->index) serves every lookup. */
static int find(const enu_graph *g, const char *id) {
    return enu_idmap_get(g->index, id);
}

/* The source block of the first wire into (block i, pin); -1 when unwired. *w gets the wire. */
static int src(const enu_graph *g, int i, const char *pin, int *w) {
    for (int k = 0; k < g->n_wires; k++)
        if (!strcmp(g->wires[k].to, g->blocks[i].id) && !strcmp(g->wires[k].to_pin, pin)) {
            if (w) *w = k;
            return find(g, g->wires[k].from);
        }
    return -1;
}

static bool is(const enu_graph *g, int i, const char *sym) {
    return i >= 0 && !strcmp(g->blocks[i].symbol, sym);
}

static const char *pinv(const enu_graph *g, int i, const char *pin) {
    const enu_pin *p = enu_block_pin(&g->blocks[i], pin);
    return p ? p->value : "";
}

static bool absorb(rw *r, int i, const char *fmt, ...) {
    enu_block *b = &r->g->blocks[i];
    if (b->absorbed) return true;
    char buf[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    b->absorbed = strdup(buf);
    return b->absorbed != NULL;
}

static bool set_pin(enu_block *b, const char *name, const char *value) {
    enu_pin *p = enu_block_pin(b, name);
    if (!p) return enu_block_add_pin(b, name, "", "string", value) != NULL;
    char *v = strdup(value);
    if (!v) return false;
    free(p->value);
    p->value = v;
    p->binary = false;
    return true;
}

static bool set_symbol(enu_block *b, const char *sym) {
    char *s = strdup(sym);
    if (!s) return false;
    free(b->symbol);
    b->symbol = s;
    return true;
}

/* The attribute `name_` of an attribute text ("header_bytes_ = 16;..."), or def. */
static long long attr_int(const char *text, const char *name, long long def) {
    char key[64];
    snprintf(key, sizeof key, "%s_", name);
    const char *p = strstr(text, key);
    if (!p) return def;
    p = strchr(p, '=');
    return p ? strtoll(p + 1, NULL, 10) : def;
}

/* The path of a DT_STRING Const_ex as the Dataset names it. */
static void data_path(const rw *r, const char *text, char *out, size_t size) {
    char t[1024];
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < sizeof t; p++) {
        if (*p == '\\' && p[1] == '\\') p++; /* doubled backslashes */
        t[n++] = *p == '\\' ? '/' : *p;
    }
    t[n] = '\0';
    while (n && t[n - 1] == '/') t[--n] = '\0';
    char *base = strrchr(t, '/');
    const char *name = base ? base + 1 : t;
    if (r->o->data_dir && *r->o->data_dir) {
        snprintf(out, size, "%s/%s", r->o->data_dir, name);
        return;
    }
    if (base) { /* PARENT/NAME, relative to the page */
        *base = '\0';
        char *parent = strrchr(t, '/');
        parent = parent ? parent + 1 : t;
        if (*parent && !strchr(parent, ':')) {
            snprintf(out, size, "%s/%s", parent, name);
            return;
        }
    }
    snprintf(out, size, "%s", name);
}

/* The reader pipelines into DecodeRaw blocks. */
static int datasets(rw *r) {
    enu_graph *g = r->g;
    for (int d = 0; d < g->n_blocks; d++) {
        if (!is(g, d, "DecodeRaw")) continue;
        int rr = src(g, d, "bytes", NULL);
        if (!is(g, rr, "ReaderReadUpTo")) continue;
        int rd = src(g, rr, "reader_handle", NULL), q = src(g, rr, "queue_handle", NULL);
        if (!is(g, rd, "FixedLengthRecordReader") || !is(g, q, "FIFOQueue")) continue;
        /* the enqueue of q, and the file name it enqueues */
        int enq = -1, list = -1, sw = -1, name = -1;
        for (int w = 0; w < g->n_wires && enq < 0; w++)
            if (!strcmp(g->wires[w].from, g->blocks[q].id) && !strcmp(g->wires[w].to_pin, "handle")) {
                int t = find(g, g->wires[w].to);
                if (is(g, t, "QueueEnqueue")) enq = t;
            }
        if (enq < 0) continue;
        list = src(g, enq, "components", NULL);
        if (is(g, list, "InputList")) {
            int s = src(g, list, "outputlist", NULL);
            if (is(g, s, "Switch")) sw = s, name = src(g, s, "data", NULL);
            else name = s;
        } else {
            name = list, list = -1;
        }
        if (!is(g, name, "Const_ex") || strcmp(pinv(g, name, "dtype"), "DT_STRING")) continue;
        long long rec = strtoll(pinv(g, rd, "record_bytes"), NULL, 10);
        long long hdr = attr_int(pinv(g, rd, "attrs"), "header_bytes", 0);
        long long n = strtoll(pinv(g, rr, "num_records"), NULL, 10);
        if (rec <= 0 || n <= 0) continue;
        char path[1100], buf[64];
        data_path(r, pinv(g, name, "val"), path, sizeof path);
        enu_block *b = &g->blocks[d];
        char rb[32], dn[80];
        snprintf(buf, sizeof buf, "%lld", n);
        snprintf(rb, sizeof rb, "%lld", rec);
        snprintf(dn, sizeof dn, "%s", b->id);
        if (!set_symbol(b, "blockflow.Dataset") || !set_pin(b, "file", path) ||
            !set_pin(b, "batch_size", buf) || !set_pin(b, "record_bytes", rb))
            goto oom;
        const int parts[] = {rr, rd, q, enq, list, sw, name};
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
            if (parts[k] >= 0 && !absorb(r, parts[k], "part of the input pipeline read by Dataset %s",
                                         dn))
                goto oom;
        /* the queue's size and its test only decide when to enqueue again */
        for (int w = 0; w < g->n_wires; w++) {
            if (strcmp(g->wires[w].from, g->blocks[q].id)) continue;
            int t = find(g, g->wires[w].to);
            if (is(g, t, "QueueSize") && !absorb(r, t, "part of the input pipeline read by Dataset %s", dn))
                goto oom;
        }
        char line[1400];
        snprintf(line, sizeof line, "reader pipeline %s <- %s (%s, %lld-byte records after a "
                 "%lld-byte header, %lld a step) -> Dataset %s_data {file: %s, batch_size: "
                 "%lld} reshaped to [-1, %lld]", b->id, g->blocks[rr].id, g->blocks[rd].id, rec,
                 hdr, n, b->id, path, n, rec);
        cJSON_AddItemToArray(r->maps, cJSON_CreateString(line));
    }
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

/* The one-hot chains into SparseToDense blocks. */
static int one_hots(rw *r) {
    enu_graph *g = r->g;
    for (int d = 0; d < g->n_blocks; d++) {
        if (!is(g, d, "SparseToDense")) continue;
        int tr = src(g, d, "sparse_indices", NULL);
        int shape = src(g, d, "output_shape", NULL), vals = src(g, d, "sparse_values", NULL),
            dflt = src(g, d, "default_value", NULL);
        if (!is(g, tr, "Transpose") || !is(g, shape, "Const_ex") || !is(g, vals, "Const_ex") ||
            !is(g, dflt, "Const_ex"))
            continue;
        int perm = src(g, tr, "perm", NULL), c64 = src(g, tr, "x", NULL);
        int rs = is(g, c64, "Cast") ? src(g, c64, "x", NULL) : -1;
        int ga = is(g, rs, "Reshape") ? src(g, rs, "tensor", NULL) : -1;
        if (!is(g, ga, "TensorArrayGather")) continue;
        int ta = src(g, ga, "handle", NULL), w0 = src(g, ga, "flow_in", NULL);
        int w1 = is(g, w0, "TensorArrayWrite") ? src(g, w0, "flow_in", NULL) : -1;
        if (!is(g, ta, "TensorArray") || !is(g, w0, "TensorArrayWrite") ||
            !is(g, w1, "TensorArrayWrite"))
            continue;
        /* write 1 holds the labels, write 0 the row numbers */
        int lw = atoi(pinv(g, w1, "index")) == 1 ? w1 : w0;
        int rows = lw == w1 ? w0 : w1, wire = -1;
        int labels = src(g, lw, "value", &wire), rowc = src(g, rows, "value", NULL);
        if (labels < 0) continue;
        /* depth from output_shape [n, depth]; on from the values (all equal), off the default */
        const char *sv = pinv(g, shape, "val");
        const char *comma = strpbrk(sv, ";,");
        if (!comma) continue;
        long long depth = strtoll(comma + 1, NULL, 10);
        double on = strtod(pinv(g, vals, "val"), NULL), off = strtod(pinv(g, dflt, "val"), NULL);
        if (depth <= 0) continue;
        enu_block *b = &g->blocks[d];
        char buf[64], dn[80];
        snprintf(dn, sizeof dn, "%s", b->id);
        if (!set_symbol(b, "blockflow.OneHot")) goto oom;
        snprintf(buf, sizeof buf, "%lld", depth);
        if (!set_pin(b, "depth", buf)) goto oom;
        snprintf(buf, sizeof buf, "%.17g", on);
        if (!set_pin(b, "on", buf)) goto oom;
        snprintf(buf, sizeof buf, "%.17g", off);
        if (!set_pin(b, "off", buf)) goto oom;
        if (!enu_graph_add_wire(g, g->wires[wire].from, g->wires[wire].from_pin, b->id, "indices"))
            goto oom;
        const int parts[] = {tr, shape, vals, dflt, perm, c64, rs, ga, ta, w0, w1, rowc};
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
            if (parts[k] >= 0 && !absorb(r, parts[k], "part of the one-hot chain mapped to OneHot %s", dn))
                goto oom;
        char line[600];
        snprintf(line, sizeof line, "one-hot chain (TensorArray %s, TensorArrayGather, Transpose, "
                 "SparseToDense %s) -> OneHot(%s, depth %lld, on %g, off %g)",
                 g->blocks[ta].id, b->id, g->wires[g->n_wires - 1].from, depth, on, off);
        cJSON_AddItemToArray(r->maps, cJSON_CreateString(line));
    }
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

/* Whether block i is a Variable of a float dtype (what a blockflow Variable holds). */
static bool float_variable(const enu_graph *g, int i) {
    if (!is(g, i, "Variable")) return false;
    const char *dt = pinv(g, i, "dtype");
    if (*dt) return !strcmp(dt, "DT_FLOAT") || !strcmp(dt, "DT_DOUBLE");
    const enu_pin *iv = enu_block_pin(&g->blocks[i], "initvalues");
    return iv && (!strcmp(iv->type, "float") || !strcmp(iv->type, "double"));
}

/* Switches that gate an Assign of a float Variable; Save chains. */
static int gates_and_saves(rw *r) {
    enu_graph *g = r->g;
    for (int a = 0; a < g->n_blocks; a++) {
        if (!is(g, a, "Assign") || g->blocks[a].absorbed) continue;
        int w = -1, sw = src(g, a, "value", &w), v = src(g, a, "ref", NULL);
        if (!is(g, sw, "Switch") || !float_variable(g, v) || strcmp(g->wires[w].from_pin, "output_true"))
            continue;
        int dw = -1, data = src(g, sw, "data", &dw), pred = src(g, sw, "pred", NULL);
        if (data < 0) continue;
        char *f = strdup(g->wires[dw].from), *fp = strdup(g->wires[dw].from_pin);
        if (!f || !fp) {
            free(f);
            free(fp);
            goto oom;
        }
        free(g->wires[w].from);
        free(g->wires[w].from_pin);
        g->wires[w].from = f;
        g->wires[w].from_pin = fp;
        /* the Switch goes when nothing else reads it */
        bool other = false;
        for (int k = 0; k < g->n_wires; k++)
            other |= !strcmp(g->wires[k].from, g->blocks[sw].id);
        if (!other && !absorb(r, sw, "gated Assign %s, which now assigns every step",
                              g->blocks[a].id))
            goto oom;
        char line[600];
        snprintf(line, sizeof line, "Assign %s of %s through Switch %s (pred %s): assigns %s every "
                 "step (blockflow has no dead branches: the page's schedule is not kept)",
                 g->blocks[a].id, g->blocks[v].id, g->blocks[sw].id,
                 pred >= 0 ? g->blocks[pred].id : "?", g->wires[w].from);
        cJSON_AddItemToArray(r->maps, cJSON_CreateString(line));
    }
    for (int s = 0; s < g->n_blocks; s++) {
        if (!is(g, s, "Save")) continue;
        int list = src(g, s, "data", NULL);
        if (!absorb(r, s, "a Save (V1 checkpoint): blockflow train --checkpoint saves every "
                    "Variable"))
            goto oom;
        char line[600];
        snprintf(line, sizeof line, "Save %s of %s to \"%.200s\" dropped: use blockflow train "
                 "--checkpoint FILE.npz [--save-every K]", g->blocks[s].id,
                 pinv(g, s, "tensor_names"), pinv(g, s, "filename"));
        cJSON_AddItemToArray(r->maps, cJSON_CreateString(line));
        if (is(g, list, "InputList")) {
            if (!absorb(r, list, "the data of Save %s", g->blocks[s].id)) goto oom;
            for (int k = 0; k < g->n_wires; k++) {
                if (strcmp(g->wires[k].to, g->blocks[list].id)) continue;
                int x = find(g, g->wires[k].from);
                if (is(g, x, "Switch") && !absorb(r, x, "the gate of Save %s", g->blocks[s].id))
                    goto oom;
            }
        }
    }
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

/* An update block writing a float Variable: kept whatever reads it (it runs every step). */
static bool keeps_state(const enu_graph *g, int i) {
    static const char *const upd[] = {"Assign", "ApplyGradientDescent", "AssignAdd", "AssignSub"};
    for (size_t k = 0; k < sizeof upd / sizeof *upd; k++)
        if (is(g, i, upd[k])) {
            int v = src(g, i, is(g, i, "ApplyGradientDescent") ? "var" : "ref", NULL);
            return float_variable(g, v);
        }
    return false;
}

/* What only fed dropped blocks goes too (fixpoint); the session's fetch of such a block and
 * the Operations that ran it do not keep it. */
static int sweep(rw *r) {
    enu_graph *g = r->g;
    bool any_absorbed = false;
    for (int i = 0; i < g->n_blocks; i++) any_absorbed |= g->blocks[i].absorbed != NULL;
    if (!any_absorbed) return 0;
    int *readers = calloc((size_t)g->n_blocks + 1, sizeof(int));
    int *dead = calloc((size_t)g->n_blocks + 1, sizeof(int));
    if (!readers || !dead) {
        free(readers);
        free(dead);
        goto oom;
    }
    for (bool changed = true; changed;) {
        changed = false;
        memset(readers, 0, (size_t)g->n_blocks * sizeof(int));
        memset(dead, 0, (size_t)g->n_blocks * sizeof(int));
        for (int w = 0; w < g->n_wires; w++) {
            int f = find(g, g->wires[w].from), t = find(g, g->wires[w].to);
            if (f < 0 || t < 0) continue;
            readers[f]++;
            bool fetch_only = is(g, t, "ClientSession") || is(g, t, "Operation");
            bool display = *g->blocks[t].task && strcmp(g->blocks[t].task, "tensorflow") &&
                           strncmp(g->blocks[t].task, "enu_tensorflow", 14);
            if (g->blocks[t].absorbed || display ||
                (fetch_only && (is(g, f, "Variable") || is(g, f, "Assign") || is(g, t, "Operation"))))
                dead[f]++;
        }
        for (int i = 0; i < g->n_blocks; i++) {
            enu_block *b = &g->blocks[i];
            if (b->absorbed || keeps_state(g, i) || float_variable(g, i) ||
                is(g, i, "ClientSession") || is(g, i, "Operation") ||
                (*b->task && strcmp(b->task, "tensorflow") && strncmp(b->task, "enu_tensorflow", 14)))
                continue;
            /* a block read by dropped blocks only; a fetched int counter */
            if (readers[i] && dead[i] == readers[i]) {
                if (!absorb(r, i, "read only by dropped blocks (the page's schedules)")) {
                    free(readers);
                    free(dead);
                    goto oom;
                }
                changed = true;
            }
        }
    }
    free(readers);
    free(dead);
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

/* Whether `pin` is a list input ("*pin") of the op of block i. */
static bool list_input(const enu_graph *g, int i, const char *pin) {
    const enu_op *op = enu_op_find(g->blocks[i].symbol);
    if (!op) return false;
    size_t n = strlen(pin);
    for (const char *p = op->inputs; (p = strchr(p, '*')); p++)
        if (!strncmp(p + 1, pin, n) && (p[1 + n] == ' ' || p[1 + n] == ':' || !p[1 + n])) return true;
    return false;
}

/* An InputList wired into a list input (AddN's inputs): its wires, in order, go straight in. */
static int input_lists(rw *r) {
    enu_graph *g = r->g;
    for (int w = 0; w < g->n_wires; w++) {
        int l = find(g, g->wires[w].from), t = find(g, g->wires[w].to);
        if (!is(g, l, "InputList") || t < 0 || !list_input(g, t, g->wires[w].to_pin)) continue;
        /* the list's own wires, in document order */
        int n = 0;
        for (int k = 0; k < g->n_wires; k++) n += !strcmp(g->wires[k].to, g->blocks[l].id);
        if (!n) continue;
        enu_wire *nw = malloc((size_t)(g->n_wires + n) * sizeof(enu_wire));
        if (!nw) goto oom;
        int o = 0;
        for (int k = 0; k < w; k++) nw[o++] = g->wires[k];
        for (int k = 0; k < g->n_wires; k++) {
            if (strcmp(g->wires[k].to, g->blocks[l].id)) continue;
            enu_wire x = {strdup(g->wires[k].from), strdup(g->wires[k].from_pin),
                          strdup(g->wires[w].to), strdup(g->wires[w].to_pin)};
            if (!x.from || !x.from_pin || !x.to || !x.to_pin) {
                free(x.from), free(x.from_pin), free(x.to), free(x.to_pin);
                for (int j = w; j < o; j++)
                    free(nw[j].from), free(nw[j].from_pin), free(nw[j].to), free(nw[j].to_pin);
                free(nw);
                goto oom;
            }
            nw[o++] = x;
        }
        int added = o - w;
        free(g->wires[w].from), free(g->wires[w].from_pin), free(g->wires[w].to),
            free(g->wires[w].to_pin);
        for (int k = w + 1; k < g->n_wires; k++) nw[o++] = g->wires[k];
        free(g->wires);
        g->wires = nw;
        g->n_wires = o;
        g->cap_wires = o;
        char line[400];
        snprintf(line, sizeof line, "InputList %s: its %d wires go straight into %s's list "
                 "input %s", g->blocks[l].id, added, g->blocks[t].id, g->wires[w].to_pin);
        cJSON_AddItemToArray(r->maps, cJSON_CreateString(line));
        bool other = false;
        for (int k = 0; k < g->n_wires; k++) other |= !strcmp(g->wires[k].from, g->blocks[l].id);
        if (!other && !absorb(r, l, "expanded into %s's list input", g->blocks[t].id)) goto oom;
        w += added - 1;
    }
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

/* Blocks nothing reads whose required inputs are unwired and empty: the plugin fails to
 * create them (harmlessly, since nothing reads them). */
static int orphans(rw *r) {
    enu_graph *g = r->g;
    bool *read = calloc((size_t)g->n_blocks + 1, sizeof(bool));
    if (!read) goto oom;
    for (int w = 0; w < g->n_wires; w++) {
        int f = find(g, g->wires[w].from);
        if (f >= 0) read[f] = true;
    }
    for (int i = 0; i < g->n_blocks; i++) {
        enu_block *b = &g->blocks[i];
        const enu_op *op = enu_op_find(b->symbol);
        if (b->absorbed || !op || read[i]) continue;
        char missing[64] = "";
        for (const char *p = op->inputs; *p && !*missing;) {
            while (*p == ' ') p++;
            size_t n = strcspn(p, " :>");
            char pin[48];
            snprintf(pin, sizeof pin, "%.*s", (int)n, *p == '*' ? p + 1 : p);
            p += strcspn(p, " ");
            if (!strcmp(pin, "axis")) continue;
            if (src(g, i, pin, NULL) < 0 && !*pinv(g, i, pin)) snprintf(missing, sizeof missing, "%s", pin);
        }
        if (*missing && !absorb(r, i, "input %s is unwired, so the plugin never created it, and "
                                "nothing reads it", missing)) {
            free(read);
            goto oom;
        }
    }
    free(read);
    return 0;
oom:
    snprintf(r->err, r->errsz, "out of memory");
    return -1;
}

int enu_rewrite_pipelines(enu_graph *g, const enu_options *o, cJSON *mappings, char *err,
                          size_t errsz) {
    rw r = {.g = g, .o = o, .maps = mappings, .err = err, .errsz = errsz};
    for (int i = 0; i < g->n_blocks; i++)
        if (!enu_idmap_put(&r.ids, g->blocks[i].id, i)) {
            enu_idmap_free(&r.ids);
            snprintf(err, errsz, "out of memory");
            return -1;
        }
    g->index = &r.ids;
    int st = datasets(&r) || one_hots(&r) || gates_and_saves(&r) || input_lists(&r) ||
             sweep(&r) || orphans(&r);
    g->index = NULL;
    enu_idmap_free(&r.ids);
    return st ? -1 : 0;
}
