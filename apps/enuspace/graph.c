/*
 * graph.c - the enuSpace page as read (graph.h): growing arrays of blocks, pins and wires.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static char *dup(const char *s) {
    size_t n = strlen(s ? s : "");
    char *p = malloc(n + 1);
    if (p) memcpy(p, s ? s : "", n + 1);
    return p;
}

/* Make room for one more element of `size` bytes in *arr (count n, capacity *cap). */
static bool grow(void **arr, int n, int *cap, size_t size) {
    if (n < *cap) return true;
    if (*cap > (1 << 24)) return false;
    int nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

enu_block *enu_graph_add_block(enu_graph *g, const char *id, const char *symbol,
                               const char *task) {
    if (!grow((void **)&g->blocks, g->n_blocks, &g->cap_blocks, sizeof(enu_block))) return NULL;
    enu_block *b = &g->blocks[g->n_blocks];
    memset(b, 0, sizeof(*b));
    b->id = dup(id);
    b->symbol = dup(symbol);
    b->task = dup(task);
    if (!b->id || !b->symbol || !b->task) {
        free(b->id);
        free(b->symbol);
        free(b->task);
        return NULL;
    }
    g->n_blocks++;
    return b;
}

enu_pin *enu_block_add_pin(enu_block *b, const char *name, const char *shape, const char *type,
                           const char *value) {
    if (!grow((void **)&b->pins, b->n_pins, &b->cap_pins, sizeof(enu_pin))) return NULL;
    enu_pin *p = &b->pins[b->n_pins];
    memset(p, 0, sizeof(*p));
    p->name = dup(name);
    p->shape = dup(shape);
    p->type = dup(type);
    p->value = dup(value);
    if (!p->name || !p->shape || !p->type || !p->value) {
        free(p->name);
        free(p->shape);
        free(p->type);
        free(p->value);
        return NULL;
    }
    b->n_pins++;
    return p;
}

bool enu_graph_add_wire(enu_graph *g, const char *from, const char *from_pin, const char *to,
                        const char *to_pin) {
    if (!grow((void **)&g->wires, g->n_wires, &g->cap_wires, sizeof(enu_wire))) return false;
    enu_wire *w = &g->wires[g->n_wires];
    w->from = dup(from);
    w->from_pin = dup(from_pin);
    w->to = dup(to);
    w->to_pin = dup(to_pin);
    if (!w->from || !w->from_pin || !w->to || !w->to_pin) {
        free(w->from);
        free(w->from_pin);
        free(w->to);
        free(w->to_pin);
        return false;
    }
    g->n_wires++;
    return true;
}

enu_pin *enu_block_pin(const enu_block *b, const char *name) {
    for (int i = 0; i < b->n_pins; i++)
        if (!strcmp(b->pins[i].name, name)) return &b->pins[i];
    return NULL;
}

void enu_graph_free(enu_graph *g) {
    for (int i = 0; i < g->n_blocks; i++) {
        enu_block *b = &g->blocks[i];
        for (int k = 0; k < b->n_pins; k++) {
            free(b->pins[k].name);
            free(b->pins[k].shape);
            free(b->pins[k].type);
            free(b->pins[k].value);
        }
        free(b->pins);
        free(b->absorbed);
        free(b->id);
        free(b->symbol);
        free(b->task);
    }
    for (int i = 0; i < g->n_wires; i++) {
        free(g->wires[i].from);
        free(g->wires[i].from_pin);
        free(g->wires[i].to);
        free(g->wires[i].to_pin);
    }
    free(g->blocks);
    free(g->wires);
    free(g->version);
    memset(g, 0, sizeof(*g));
}
