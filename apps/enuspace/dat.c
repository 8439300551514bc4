/*
 * dat.c - values saved in the page's .dat side file (FORMAT.md 6): the raw little-endian,
 * row-major array of a binary pin at its byte offset, `double` 8 bytes, `float` and `int` 4,
 * `bool` 1. The pin's declared shape is checked against the limits and its bytes against the
 * end of the file before anything is allocated.
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int enu_read_dat_value(const unsigned char *dat, size_t dat_len, const enu_pin *pin,
                       const enu_options *o, enu_value *v, char *err, size_t errsz) {
    memset(v, 0, sizeof(*v));
    int dt = enu_dtype_from_var_type(pin->type);
    if (dt < 0) {
        snprintf(err, errsz, "a binary value of type \"%.20s\" (only double, float, int and "
                 "bool are saved in the .dat)", pin->type);
        return -1;
    }
    v->dtype = (enu_dtype)dt;
    if (enu_parse_shape_suffix(pin->shape, o, v, err, errsz)) return -1;
    int es = dt == ENU_F64 ? 8 : dt == ENU_BOOL ? 1 : 4;
    if (!dat) {
        snprintf(err, errsz, "its value is in the page's .dat file (offset %lld, %lld values), "
                 "which was not given", (long long)pin->pos, (long long)v->n);
        return -1;
    }
    uint64_t bytes = (uint64_t)v->n * (uint64_t)es, end;
    if (__builtin_add_overflow((uint64_t)pin->pos, bytes, &end) || end > dat_len) {
        snprintf(err, errsz, "its %llu bytes at offset %lld of the .dat run past the end of the "
                 "file (%zu bytes)", (unsigned long long)bytes, (long long)pin->pos, dat_len);
        return -1;
    }
    v->d = malloc(v->n ? (size_t)v->n * sizeof(double) : 1);
    if (!v->d) {
        snprintf(err, errsz, "out of memory for %lld values", (long long)v->n);
        return -1;
    }
    const unsigned char *p = dat + pin->pos;
    for (int64_t i = 0; i < v->n; i++, p += es) {
        uint64_t u = le(p, es);
        if (dt == ENU_F64) {
            double d;
            memcpy(&d, &u, 8);
            v->d[i] = d;
        } else if (dt == ENU_F32) {
            uint32_t w = (uint32_t)u;
            float f;
            memcpy(&f, &w, 4);
            v->d[i] = f;
        } else if (dt == ENU_I32) {
            v->d[i] = (double)(int32_t)(uint32_t)u;
        } else {
            v->d[i] = u != 0;
        }
    }
    return 0;
}

int enu_pin_value(const unsigned char *dat, size_t dat_len, const enu_pin *pin,
                  const enu_options *o, enu_value *v, char *err, size_t errsz) {
    if (pin->binary) return enu_read_dat_value(dat, dat_len, pin, o, v, err, errsz);
    int dt = enu_dtype_from_var_type(pin->type);
    if (dt < 0) {
        memset(v, 0, sizeof(*v));
        snprintf(err, errsz, "a value of type \"%.20s\" where numbers were expected", pin->type);
        return -1;
    }
    return enu_parse_typed_text(pin->value, pin->shape, (enu_dtype)dt, o, v, err, errsz);
}
