/*
 * conv_ref64.c - the float64 reference of conv_ref64.h: a scatter over the definition, with
 * no blocking, no vectors and no threads, so that it is obviously right.
 */
#include "conv_ref64.h"

#include <string.h>

/* Element offset of (n, h, w, c) in an activation of H x W and C channels, NHWC or NCHW. */
static int64_t act_at(const bf_conv_geom *g, int64_t n, int64_t h, int64_t w, int64_t c,
                      int64_t H, int64_t W, int64_t C) {
    return g->nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

void bf_test_conv_ref64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                        double *out, int64_t out_n) {
    memset(out, 0, (size_t)out_n * sizeof(double));
    int64_t og = g->out_c / g->groups, cg = g->k_in_c;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oh = 0; oh < g->out_h; oh++)
            for (int64_t ow = 0; ow < g->out_w; ow++)
                for (int64_t kh = 0; kh < g->k_h; kh++)
                    for (int64_t kw = 0; kw < g->k_w; kw++) {
                        int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                        int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;
                        if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) continue;
                        for (int64_t co = 0; co < g->out_c; co++)
                            for (int64_t ci = 0; ci < cg; ci++) {
                                int64_t c = co / og * cg + ci;
                                int64_t xi = act_at(g, n, ih, iw, c, g->in_h, g->in_w, g->in_c);
                                int64_t yi =
                                    act_at(g, n, oh, ow, co, g->out_h, g->out_w, g->out_c);
                                int64_t wi = ((kh * g->k_w + kw) * cg + ci) * g->out_c + co;
                                if (op == BF_CONV_FWD) out[yi] += a[xi] * b[wi];
                                else if (op == BF_CONV_BWD_FILTER) out[wi] += a[xi] * b[yi];
                                else out[xi] += a[yi] * b[wi];
                            }
                    }
}
