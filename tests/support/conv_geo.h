/*
 * conv_geo.h - random convolution problems for the brute-force tests (test_conv_random.c,
 * test_conv_explain.c): shapes, strides, dilations, SAME/VALID/EXPLICIT with asymmetric pads,
 * NHWC and NCHW, groups for Conv2D and a channel multiplier for depthwise, with the output size
 * and leading pads computed here from the definition (tf-semantics.md §3), independently of
 * conv_geom.c, so that the tests never check the library against itself.
 */
#ifndef BF_CONV_GEO_H
#define BF_CONV_GEO_H

#include "bf_test.h"

/* One random problem, in logical terms. Filter dims as passed to the block. */
typedef struct ct_geo {
    int dw, nchw;           /* depthwise (else Conv2D); NCHW (else NHWC) */
    int64_t N, H, W, C;     /* input */
    int64_t KH, KW, F2, F3; /* filter: conv [KH,KW,Cg,O]; depthwise [KH,KW,C,M] */
    int64_t G, O;           /* groups, output channels */
    int64_t sh, sw, dh, dwl;
    int pad;                /* 0 SAME, 1 VALID, 2 EXPLICIT */
    int64_t ep[4];          /* explicit top, bottom, left, right */
    int64_t OH, OW, pt, pl; /* output size and leading pads, computed by ct_geo_draw */
} ct_geo;

/*
 * Output size *out and leading pad *before of one spatial dim (pad: 0 SAME, 1 VALID,
 * 2 EXPLICIT with b before and a after), for input size `in`, kernel k, stride s, dilation d.
 * Returns 0 when VALID/EXPLICIT leave no output (then *out is not set), else 1.
 */
int ct_geo_out_dim(int pad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t b, int64_t a,
                   int64_t *out, int64_t *before);

/*
 * Draw a problem with at least one output (redrawing until there is one): depthwise when dw,
 * else Conv2D. N in [1,2], H and W in [1,7], KH and KW in [1,3], dilations in [1,2], strides
 * in [1,3] (equal for depthwise), padding any of the three with explicit pads in [0,2].
 * Depthwise: C in [1,3], multiplier in [1,3]. Conv2D: groups in [1,3], and both the input
 * channels per group (F2) and the output channels per group in [1, max_per_group]; a test that
 * visits every (output, tap) pair keeps this small. The draws from r are always the same ones,
 * in the same order, so a seed names one sequence of problems for a given max_per_group.
 */
void ct_geo_draw(bf_rng *r, int dw, int64_t max_per_group, ct_geo *c);

/* Flat index of activation (n, h, w, ch) with spatial size (h_, w_) and ch_ channels, in the
 * problem's layout. */
int64_t ct_geo_index(const ct_geo *c, int64_t h_, int64_t w_, int64_t ch_, int64_t n, int64_t h,
                     int64_t w, int64_t ch);

/* The blocks' attribute JSON (strides, dilations, padding, data_format, explicit_paddings)
 * into buf. */
void ct_geo_attrs(const ct_geo *c, char *buf, size_t size);

#endif /* BF_CONV_GEO_H */
