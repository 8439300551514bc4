/*
 * idmap.h - a string -> int hash map (open addressing), for block ids: pages may hold many
 * blocks, and hostile ones many more, so no lookup is a linear scan.
 */
#ifndef BF_ENU_IDMAP_H
#define BF_ENU_IDMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct enu_idmap {
    const char **keys; /* borrowed strings */
    int *vals;
    size_t cap, n;
} enu_idmap;

/* Insert or replace; false on OOM. */
bool enu_idmap_put(enu_idmap *m, const char *key, int val);
/* The value, or -1. */
int enu_idmap_get(const enu_idmap *m, const char *key);
void enu_idmap_free(enu_idmap *m);

#endif /* BF_ENU_IDMAP_H */
