/*
 * page.h - the internal form of a loaded page: blocks with their descriptors, parsed
 * attributes and resolved input links. The loader (page.c) guarantees that every input
 * link names an existing block and output port; the session adds the graph on top.
 */
#ifndef BF_PAGE_H
#define BF_PAGE_H

#include "attr.h"
#include "context.h"

typedef struct bf_page_input {
    char *text;      /* as written: "block" or "block:port" */
    int src_block;   /* index into page->blocks */
    int src_port;    /* output port index of that block */
} bf_page_input;

typedef struct bf_page_block {
    char *id;
    const bf_block_desc *desc;
    bf_attr_value *attrs;    /* desc->n_attrs values */
    bf_page_input *inputs;   /* desc->n_inputs links */
    bf_device_kind device;   /* "auto", "cpu", "gpu", "gpu:N" */
    int gpu_ordinal;
    int json_index;          /* position in the page's "blocks" array (JSON pointers) */
} bf_page_block;

struct bf_page {
    char *file;              /* file name as given, or the name passed for a string */
    char *dir;               /* folder that relative "file" attributes resolve against */
    char *name;
    char *description;
    bf_page_block *blocks;
    int n_blocks;
    char **outputs;
    int n_outputs;
    uint64_t max_elements;   /* the loading context's limit, for attribute changes */
    bool confine_files;      /* the loading context's confine_files, likewise */
    int *index;              /* [index_cap] open-addressing hash of block ids: block index
                                or -1 (empty); NULL while there is none (linear search) */
    size_t index_cap;        /* a power of two, at least twice the block count */
};

/* Index of block `id`, or -1. O(1) on average: pages may hold a million blocks. */
int bf_page_find(const bf_page *page, const char *id);
/* Resolve "block" / "block:port" to (block, output port); false when it names nothing. */
bool bf_page_resolve(const bf_page *page, const char *ref, int *block, int *port);

#endif /* BF_PAGE_H */
