/*
 * npy.c - a value as the bytes of a .npy file (format 1.0, little-endian, C order), for the
 * arrays the importer writes beside the page instead of inline.
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int enu_npy_bytes(const enu_value *v, unsigned char **out, size_t *size) {
    const char *descr;
    int es;
    switch (v->dtype) {
    case ENU_F32: descr = "<f4", es = 4; break;
    case ENU_F64: descr = "<f8", es = 8; break;
    case ENU_I32: descr = "<i4", es = 4; break;
    case ENU_I64: descr = "<i8", es = 8; break;
    default: return -1;
    }
    char hdr[256], shape[200] = "";
    size_t k = 0;
    for (int i = 0; i < v->rank; i++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%lld,%s", (long long)v->dims[i],
                              i + 1 < v->rank ? " " : "");
    if (v->rank > 1) shape[k - 1] = '\0'; /* (2, 3) not (2, 3,) */
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr, shape);
    size_t hl = (size_t)n + 1, total = 10 + hl;
    size_t pad = (64 - total % 64) % 64;
    hl += pad;
    size_t data = (size_t)v->n * (size_t)es;
    unsigned char *b = malloc(10 + hl + data);
    if (!b) return -1;
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + 10, hdr, (size_t)n);
    memset(b + 10 + n, ' ', pad);
    b[10 + hl - 1] = '\n';
    unsigned char *p = b + 10 + hl;
    for (int64_t i = 0; i < v->n; i++, p += es) {
        uint64_t u;
        if (v->dtype == ENU_F32) {
            float f = (float)v->d[i];
            uint32_t w;
            memcpy(&w, &f, 4);
            u = w;
        } else if (v->dtype == ENU_F64) {
            memcpy(&u, &v->d[i], 8);
        } else if (v->dtype == ENU_I32) {
            u = (uint32_t)(int32_t)v->d[i];
        } else {
            u = (uint64_t)(int64_t)v->d[i];
        }
        for (int j = 0; j < es; j++) p[j] = (unsigned char)(u >> (8 * j));
    }
    *out = b;
    *size = 10 + hl + data;
    return 0;
}
