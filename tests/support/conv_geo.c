/*
 * conv_geo.c - random convolution problems (see conv_geo.h).
 */
#include "conv_geo.h"

#include <stdio.h>
#include <string.h>

static int64_t eff(int64_t k, int64_t d) { return (k - 1) * d + 1; }

int ct_geo_out_dim(int pad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t b, int64_t a,
                   int64_t *out, int64_t *before) {
    int64_t e = eff(k, d);
    if (pad == 0) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + e - in;
        *before = total > 0 ? total / 2 : 0;
        return 1;
    }
    int64_t span = in + (pad == 2 ? b + a : 0);
    *before = pad == 2 ? b : 0;
    if (span < e) return 0; /* we only draw problems with at least one output */
    *out = (span - e) / s + 1;
    return 1;
}

void ct_geo_draw(bf_rng *r, int dw, int64_t max_per_group, ct_geo *c) {
    for (;;) {
        memset(c, 0, sizeof(*c));
        c->dw = dw;
        c->nchw = (int)bf_rng_int(r, 0, 1);
        c->N = bf_rng_int(r, 1, 2), c->H = bf_rng_int(r, 1, 7), c->W = bf_rng_int(r, 1, 7);
        c->KH = bf_rng_int(r, 1, 3), c->KW = bf_rng_int(r, 1, 3);
        if (dw) {
            c->C = bf_rng_int(r, 1, 3), c->F2 = c->C, c->F3 = bf_rng_int(r, 1, 3);
            c->G = c->C, c->O = c->C * c->F3;
            c->sh = c->sw = bf_rng_int(r, 1, 3);
        } else {
            c->G = bf_rng_int(r, 1, 3);
            c->F2 = bf_rng_int(r, 1, max_per_group);
            c->C = c->G * c->F2;
            c->O = c->G * bf_rng_int(r, 1, max_per_group), c->F3 = c->O;
            c->sh = bf_rng_int(r, 1, 3), c->sw = bf_rng_int(r, 1, 3);
        }
        c->dh = bf_rng_int(r, 1, 2), c->dwl = bf_rng_int(r, 1, 2);
        c->pad = (int)bf_rng_int(r, 0, 2);
        for (int i = 0; i < 4; i++) c->ep[i] = c->pad == 2 ? bf_rng_int(r, 0, 2) : 0;
        if (ct_geo_out_dim(c->pad, c->H, c->KH, c->sh, c->dh, c->ep[0], c->ep[1], &c->OH, &c->pt) &&
            ct_geo_out_dim(c->pad, c->W, c->KW, c->sw, c->dwl, c->ep[2], c->ep[3], &c->OW, &c->pl))
            return;
    }
}

int64_t ct_geo_index(const ct_geo *c, int64_t h_, int64_t w_, int64_t ch_, int64_t n, int64_t h,
                     int64_t w, int64_t ch) {
    return c->nchw ? ((n * ch_ + ch) * h_ + h) * w_ + w : ((n * h_ + h) * w_ + w) * ch_ + ch;
}

void ct_geo_attrs(const ct_geo *c, char *buf, size_t size) {
    const char *pads[3] = {"SAME", "VALID", "EXPLICIT"};
    int n;
    if (c->nchw)
        n = snprintf(buf, size,
                     "{\"strides\":[1,1,%ld,%ld],\"dilations\":[1,1,%ld,%ld],\"padding\":\"%s\","
                     "\"data_format\":\"NCHW\"",
                     (long)c->sh, (long)c->sw, (long)c->dh, (long)c->dwl, pads[c->pad]);
    else
        n = snprintf(buf, size,
                     "{\"strides\":[1,%ld,%ld,1],\"dilations\":[1,%ld,%ld,1],\"padding\":\"%s\"",
                     (long)c->sh, (long)c->sw, (long)c->dh, (long)c->dwl, pads[c->pad]);
    if (c->pad == 2) {
        if (c->nchw)
            n += snprintf(buf + n, size - (size_t)n,
                          ",\"explicit_paddings\":[0,0,0,0,%ld,%ld,%ld,%ld]", (long)c->ep[0],
                          (long)c->ep[1], (long)c->ep[2], (long)c->ep[3]);
        else
            n += snprintf(buf + n, size - (size_t)n,
                          ",\"explicit_paddings\":[0,0,%ld,%ld,%ld,%ld,0,0]", (long)c->ep[0],
                          (long)c->ep[1], (long)c->ep[2], (long)c->ep[3]);
    }
    snprintf(buf + n, size - (size_t)n, "}");
}
