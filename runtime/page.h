/*
 * page.h - the internal form of a page: blocks with their descriptors, parsed attributes,
 * input links, layout (`ui`) and editors' own keys (`x-...`), in page order.
 *
 * A page is either *complete* (every input connected to an existing output, no cycle: what
 * bf_page_load_file guarantees) or, when loaded with BF_LOAD_INCOMPLETE or edited in a
 * session, possibly *incomplete*: an input may be unconnected (text NULL) or name nothing on
 * the page (text kept, src_block -1), and the links may form cycles. The session's check
 * reports those problems together with everything else (graph.c, check.c).
 *
 * Files: page.c loads (JSON -> page), page_json.c writes the canonical JSON back, page_edit.c
 * changes a page one edit at a time, files.c resolves `file` attributes.
 */
#ifndef BF_PAGE_H
#define BF_PAGE_H

#include "attr.h"
#include "context.h"

typedef struct bf_page_input {
    char *text;      /* "block" or "block:port" as written; NULL: not connected */
    int src_block;   /* index into page->blocks; -1 when unconnected or naming nothing */
    int src_port;    /* output port index of that block */
} bf_page_input;

typedef struct bf_page_block {
    char *id;
    const bf_block_desc *desc;
    bf_attr_value *attrs;    /* desc->n_attrs values */
    bf_page_input *inputs;   /* desc->n_inputs links */
    bf_device_kind device;   /* "auto", "cpu", "gpu", "gpu:N" */
    int gpu_ordinal;
    cJSON *ui;               /* the "ui" value as written, or NULL */
    cJSON *ext;              /* an object holding the block's "x-..." keys in order, or NULL */
    cJSON *attr_ext;         /* the "x-..." keys inside its "attrs" object, or NULL */
    int json_index;          /* position in the page's "blocks" array (JSON pointers) */
} bf_page_block;

struct bf_page {
    char *file;              /* file name as given, or the name passed for a string */
    char *dir;               /* folder that relative "file" attributes resolve against */
    char *name;
    char *description;
    char *checkpoint;        /* "checkpoint": the .npz a session starts its state from, or NULL */
    cJSON *ui;               /* the page's "ui" value, or NULL */
    cJSON *ext;              /* the page's "x-..." keys, or NULL */
    bf_page_block *blocks;
    int n_blocks;
    int cap_blocks;          /* allocated length of blocks */
    char **outputs;
    int n_outputs;
    uint64_t max_elements;   /* the loading context's limit, for attribute changes */
    bool confine_files;      /* the loading context's confine_files, likewise */
    bool files_skipped;      /* loaded with BF_LOAD_SKIP_FILES: not runnable */
    int max_blocks;          /* the loading context's block limit, for added blocks */
    int *index;              /* [index_cap] open-addressing hash of block ids: block index
                                or -1 (empty); NULL while there is none (linear search) */
    size_t index_cap;        /* a power of two, at least twice the block count */
};

/* Index of block `id`, or -1. O(1) on average: pages may hold a million blocks. */
int bf_page_find(const bf_page *page, const char *id);
/* Resolve "block" / "block:port" to (block, output port); false when it names nothing. */
bool bf_page_resolve(const bf_page *page, const char *ref, int *block, int *port);
/*
 * Topological order of the blocks over their resolved links (Kahn's algorithm): fills
 * order[0..return) and, when `ordered` is not NULL, ordered[i] = block i is in the order.
 * Blocks left out sit on or behind a cycle. Returns -1 when out of memory.
 */
int bf_page_topo(const bf_page *page, int *order, bool *ordered);
/* Rebuild the id index after blocks were added, removed or renamed. False: out of memory
 * (the page then searches linearly, which stays correct). */
bool bf_page_reindex(bf_page *page);
/* Resolve every input text again (after blocks were removed or renamed). */
void bf_page_relink(bf_page *page);

/* The rule for block ids, shared by the loader and the editing calls: 1-63 bytes of
 * [A-Za-z0-9_.-], not starting with '.' or '-', so that an id is also a safe file name
 * (results are written as ID.npy). NULL when `id` is fine, else why it is not. */
const char *bf_page_bad_id(const char *id);

/* "auto", "cpu", "gpu", "gpu:N" -> kind and ordinal; -1 when `s` is none of those. */
int bf_page_parse_device(const char *s, int *ordinal);

/* Add `item` to `obj` under `key`; on failure (out of memory: cJSON copies the key) free the
 * item and return false. NULL item: false. */
bool bf_json_add(cJSON *obj, const char *key, cJSON *item);

/* Free what one block owns (not the block struct itself). */
void bf_page_block_clear(bf_page_block *b);

/* ---- files.c: `file` attributes -------------------------------------------------------- */

/*
 * Load the .npy file of every set FILE attribute of `desc` in vals (into v->tensor), resolving
 * relative names against `scope->dir` and, with scope->confine, refusing any name that
 * reaches outside that folder (absolute, "..", or a link leading out). The one place where a
 * page's attributes read files. Errors name the attribute.
 */
/* Resolve a file name of the page against scope->dir into path[size], applying the
 * confinement rule (scope->confine). Errors: BF_EATTR "file_outside_page", BF_EIO. */
bf_status bf_file_resolve(const char *name, const bf_file_scope *scope, char *path, size_t size,
                          bf_error *err);

bf_status bf_attrs_load_files(const bf_block_desc *desc, bf_attr_value *vals,
                              const bf_file_scope *scope, bf_error *err);

#endif /* BF_PAGE_H */
