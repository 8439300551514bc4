/*
 * registry.c - the constant table of block types, built from block_list.h and sorted by type
 * once (the sort order is checked by a test, so lookups can bisect). The registry is the only
 * process-wide table, and it is immutable.
 */
#include "block.h"

#include <string.h>

#define BF_BLOCK(name) extern const bf_block_desc bf_block_##name;
#include "block_list.h"
#undef BF_BLOCK

static const bf_block_desc *const table[] = {
#define BF_BLOCK(name) &bf_block_##name,
#include "block_list.h"
#undef BF_BLOCK
};

/*
 * The table is listed in file order; lookups scan it. With a few dozen types a linear scan of
 * pointers is as fast as a bisection and needs no sorted copy; bf_registry_at() presents the
 * types sorted by name for the catalogue.
 */
const bf_block_desc *bf_registry_find(const char *type) {
    if (!type) return NULL;
    for (int i = 0; i < BF_COUNT(table); i++)
        if (!strcmp(table[i]->type, type)) return table[i];
    return NULL;
}

int bf_registry_count(void) { return BF_COUNT(table); }

/* The i-th type in name order: the rank of each entry is computed by counting, O(n^2) over a
 * tiny constant table, which avoids any mutable sorted copy. */
const bf_block_desc *bf_registry_at(int i) {
    for (int k = 0; k < BF_COUNT(table); k++) {
        int rank = 0;
        for (int m = 0; m < BF_COUNT(table); m++)
            rank += strcmp(table[m]->type, table[k]->type) < 0;
        if (rank == i) return table[k];
    }
    return NULL;
}

int bf_block_type_count(void) { return BF_COUNT(table); }

const char *bf_block_type_name(int i) {
    const bf_block_desc *d = bf_registry_at(i);
    return d ? d->type : NULL;
}
