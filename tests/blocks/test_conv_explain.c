/*
 * test_conv_explain.c - the teaching view of the six convolution blocks (conv_explain.c)
 * against brute-force enumeration from the definition (tf-semantics.md §3): on 300 random
 * geometries (shapes, strides, dilations, SAME/VALID/EXPLICIT with asymmetric pads, NHWC and
 * NCHW, groups for Conv2D, multipliers for depthwise), every output element of every op gets
 * exactly the set of (operand A, operand B) pairs that the plain loops below visit, the same
 * set of taps in the padding (their positions on x's padded grid, x's whole index and the
 * operand B element each would have multiplied; none for dX, whose grid is x's and whose
 * terms all sit on the element itself), and the sum of the products equals the kernel's
 * output element within the dtype's tolerance (float64 1e-12, float32 2e-6, relative to
 * sum |terms|).
 *
 * The brute force never calls conv_geom: sizes and pads are computed here from the formula
 * and every (n, oh, ow, co, kh, kw, j) of the domain is visited once, each in-bounds tuple
 * dropped into the bucket of the y, dW and dX element it contributes to, and each tuple that
 * reads padding into the padded bucket of its y and dW elements.
 */
#include "conv_geo.h"
#include "conv_harness.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Conv2D problems here have 1 or 2 input and output channels per group, as this test has always
 * drawn them (test_conv_random.c draws up to 3); every pair of every element is enumerated. */
#define MAX_PER_GROUP 2

/* ---- pairs --------------------------------------------------------------------------------- */

typedef struct triple {
    int64_t out, a, b;
} triple;

typedef struct tlist {
    triple *t;
    int64_t n, cap;
} tlist;

static void push(tlist *l, int64_t out, int64_t a, int64_t b) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->t = realloc(l->t, sizeof(triple) * (size_t)l->cap);
        ck_assert_ptr_nonnull(l->t);
    }
    l->t[l->n++] = (triple){out, a, b};
}

static int cmp_triple(const void *pa, const void *pb) {
    const triple *a = pa, *b = pb;
    if (a->out != b->out) return a->out < b->out ? -1 : 1;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* A tap in the padding: x[n, h, w, c] (h or w outside x) times operand B's element b. */
typedef struct ptap {
    int64_t out, n, h, w, c, b;
} ptap;

typedef struct plist {
    ptap *t;
    int64_t n, cap;
} plist;

static void ppush(plist *l, ptap t) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->t = realloc(l->t, sizeof(ptap) * (size_t)l->cap);
        ck_assert_ptr_nonnull(l->t);
    }
    l->t[l->n++] = t;
}

static int cmp_ptap(const void *pa, const void *pb) {
    const int64_t *a = &((const ptap *)pa)->out, *b = &((const ptap *)pb)->out;
    for (int i = 0; i < 6; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* What explain reports for one element: its terms and its padded taps (x's layout: nchw). */
typedef struct got_t {
    tlist terms;
    plist pads;
    int nchw;
} got_t;

static void collect(int64_t a, int64_t b, void *user) { push(&((got_t *)user)->terms, 0, a, b); }

static void collect_pad(const bf_explain_pad_tap *t, void *user) {
    got_t *g = user;
    const int64_t *i = t->a_index;
    ptap p = g->nchw ? (ptap){0, i[0], i[2], i[3], i[1], t->b_flat}
                     : (ptap){0, i[0], i[1], i[2], i[3], t->b_flat};
    /* (h, w) and the index agree */
    ck_assert_int_eq(p.h, t->h);
    ck_assert_int_eq(p.w, t->w);
    ppush(&g->pads, p);
}

/* ---- the test ------------------------------------------------------------------------------ */

START_TEST(enumeration_matches_definition) {
    bf_rng r = {0xe4a1 + (uint64_t)_i * 7919};
    ct_geo c;
    ct_geo_draw(&r, _i % 3 == 2, MAX_PER_GROUP, &c);
    const bf_dtype dt = _i % 2 ? BF_DTYPE_F32 : BF_DTYPE_F64;
    const int64_t nx = c.N * c.H * c.W * c.C, ny = c.N * c.OH * c.OW * c.O;
    const int64_t nw = c.KH * c.KW * c.F2 * c.F3;
    /* brute force: the buckets of y (op 0), dW (op 1) and dX (op 2) */
    tlist bucket[3] = {{0}};
    plist padded[3] = {{0}}; /* dX's stays empty */
    const int64_t per = c.dw ? 1 : c.F2;
    for (int64_t n = 0; n < c.N; n++)
        for (int64_t oh = 0; oh < c.OH; oh++)
            for (int64_t ow = 0; ow < c.OW; ow++)
                for (int64_t co = 0; co < c.O; co++)
                    for (int64_t kh = 0; kh < c.KH; kh++)
                        for (int64_t kw = 0; kw < c.KW; kw++)
                            for (int64_t j = 0; j < per; j++) {
                                int64_t ih = oh * c.sh - c.pt + kh * c.dh;
                                int64_t iw = ow * c.sw - c.pl + kw * c.dwl;
                                int64_t ch, fi;
                                if (c.dw) {
                                    int64_t k = co / c.F3, q = co % c.F3;
                                    ch = k, fi = ((kh * c.KW + kw) * c.C + k) * c.F3 + q;
                                } else {
                                    int64_t g = co / (c.O / c.G);
                                    ch = g * c.F2 + j;
                                    fi = ((kh * c.KW + kw) * c.F2 + j) * c.O + co;
                                }
                                int64_t yi = ct_geo_index(&c, c.OH, c.OW, c.O, n, oh, ow, co);
                                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) {
                                    ppush(&padded[0], (ptap){yi, n, ih, iw, ch, fi});
                                    ppush(&padded[1], (ptap){fi, n, ih, iw, ch, yi});
                                    continue;
                                }
                                int64_t xi = ct_geo_index(&c, c.H, c.W, c.C, n, ih, iw, ch);
                                push(&bucket[0], yi, xi, fi);
                                push(&bucket[1], fi, xi, yi);
                                push(&bucket[2], xi, yi, fi);
                            }
    for (int op = 0; op < 3; op++) {
        if (bucket[op].n) qsort(bucket[op].t, (size_t)bucket[op].n, sizeof(triple), cmp_triple);
        if (padded[op].n) qsort(padded[op].t, (size_t)padded[op].n, sizeof(ptap), cmp_ptap);
    }

    /* the blocks: values, kernels and explain */
    double *x = malloc(8 * (size_t)nx), *w = malloc(8 * (size_t)nw), *dy = malloc(8 * (size_t)ny);
    for (int64_t i = 0; i < nx; i++) x[i] = bf_rng_nonzero(&r);
    for (int64_t i = 0; i < nw; i++) w[i] = bf_rng_nonzero(&r);
    for (int64_t i = 0; i < ny; i++) dy[i] = bf_rng_nonzero(&r);
    if (dt == BF_DTYPE_F32) {
        for (int64_t i = 0; i < nx; i++) x[i] = (float)x[i];
        for (int64_t i = 0; i < nw; i++) w[i] = (float)w[i];
        for (int64_t i = 0; i < ny; i++) dy[i] = (float)dy[i];
    }
    int64_t xd[4], yd[4], wd[4] = {c.KH, c.KW, c.F2, c.F3};
    if (c.nchw) {
        xd[0] = c.N, xd[1] = c.C, xd[2] = c.H, xd[3] = c.W;
        yd[0] = c.N, yd[1] = c.O, yd[2] = c.OH, yd[3] = c.OW;
    } else {
        xd[0] = c.N, xd[1] = c.H, xd[2] = c.W, xd[3] = c.C;
        yd[0] = c.N, yd[1] = c.OH, yd[2] = c.OW, yd[3] = c.O;
    }
    char a[512];
    ct_geo_attrs(&c, a, sizeof(a));
    const double tol = dt == BF_DTYPE_F64 ? 1e-12 : 2e-6;
    for (int op = 0; op < 3; op++) {
        const bf_block_desc *d;
        bf_tensor *in[3] = {NULL, NULL, NULL};
        const double *va, *vb; /* operand values as conv_kernels.h orders them */
        if (op == 0) {
            d = c.dw ? &bf_block_depthwise_conv2d_native : &bf_block_conv2d;
            in[0] = ct_tensor(dt, 4, xd, x), in[1] = ct_tensor(dt, 4, wd, w);
            va = x, vb = w;
        } else if (op == 1) {
            d = c.dw ? &bf_block_depthwise_conv2d_native_backprop_filter
                     : &bf_block_conv2d_backprop_filter;
            in[0] = ct_tensor(dt, 4, xd, x), in[1] = ct_i32(4, wd);
            in[2] = ct_tensor(dt, 4, yd, dy);
            va = x, vb = dy;
        } else {
            d = c.dw ? &bf_block_depthwise_conv2d_native_backprop_input
                     : &bf_block_conv2d_backprop_input;
            in[0] = ct_i32(4, xd), in[1] = ct_tensor(dt, 4, wd, w);
            in[2] = ct_tensor(dt, 4, yd, dy);
            va = dy, vb = w;
        }
        bf_error err = {0};
        bf_tensor *out = NULL;
        ck_assert_msg(ct_run(d, a, in, 2, &out, &err) == BF_OK, "%s %s: %s", d->type, a,
                      err.message);
        double *vo = ct_values(out);
        bf_node *node = NULL;
        ck_assert_int_eq(bf_node_make(d, a, &node, &err), BF_OK);
        bf_port_info info[3];
        for (int k = 0; k < d->n_inputs; k++) {
            bf_port_set(&info[k], bf_tensor_dtype(in[k]), 4, bf_tensor_dims(in[k]));
            if (d->inputs[k].flags & BF_PORT_HOST) {
                bf_port_set(&info[k], BF_DTYPE_I32, 1, bf_tensor_dims(in[k]));
                info[k].value = in[k];
            }
        }
        ck_assert_ptr_nonnull(d->explain);
        int64_t pos = 0, ppos = 0;
        const int64_t numel = bf_tensor_numel(out);
        ck_assert_int_eq(numel, op == 0 ? ny : op == 1 ? nw : nx);
        for (int64_t e = 0; e < numel; e++) {
            got_t got = {.nchw = c.nchw};
            bf_explain_geom geom;
            ck_assert_int_eq(d->explain(node, info, 0, e, collect, collect_pad, &got, &geom, &err),
                             BF_OK);
            ck_assert_int_eq(geom.a_input, op == 2 ? 2 : 0);
            ck_assert_int_eq(geom.b_input, op == 1 ? 2 : 1);
            ck_assert_int_eq(geom.pad_before[0], c.pt);
            ck_assert_int_eq(geom.pad_before[1], c.pl);
            tlist *gt = &got.terms;
            for (int64_t k = 0; k < gt->n; k++) gt->t[k].out = e;
            if (gt->n) qsort(gt->t, (size_t)gt->n, sizeof(triple), cmp_triple);
            int64_t end = pos;
            while (end < bucket[op].n && bucket[op].t[end].out == e) end++;
            ck_assert_msg(gt->n == end - pos, "%s %s element %ld: %ld terms, expected %ld",
                          d->type, a, (long)e, (long)gt->n, (long)(end - pos));
            double sum = 0, abs_sum = 0;
            for (int64_t k = 0; k < gt->n; k++) {
                ck_assert_msg(!cmp_triple(&gt->t[k], &bucket[op].t[pos + k]),
                              "%s %s element %ld: term %ld differs", d->type, a, (long)e,
                              (long)k);
                double p = va[gt->t[k].a] * vb[gt->t[k].b];
                sum += p, abs_sum += fabs(p);
            }
            ck_assert_msg(fabs(sum - vo[e]) <= tol * abs_sum + 1e-300,
                          "%s %s element %ld: sum of products %.17g, kernel %.17g", d->type, a,
                          (long)e, sum, vo[e]);
            pos = end;
            /* the padded taps: the same set as the brute force's, on the ring */
            plist *gp = &got.pads;
            for (int64_t k = 0; k < gp->n; k++) gp->t[k].out = e;
            if (gp->n) qsort(gp->t, (size_t)gp->n, sizeof(ptap), cmp_ptap);
            end = ppos;
            while (end < padded[op].n && padded[op].t[end].out == e) end++;
            ck_assert_msg(geom.n_padded == end - ppos && gp->n == end - ppos,
                          "%s %s element %ld: %ld padded taps (%ld reported), expected %ld",
                          d->type, a, (long)e, (long)geom.n_padded, (long)gp->n,
                          (long)(end - ppos));
            for (int64_t k = 0; k < gp->n; k++) {
                const ptap *p = &gp->t[k];
                ck_assert_msg(!cmp_ptap(p, &padded[op].t[ppos + k]),
                              "%s %s element %ld: padded tap %ld at (%ld, %ld) differs", d->type,
                              a, (long)e, (long)k, (long)p->h, (long)p->w);
                ck_assert(p->h < 0 || p->h >= c.H || p->w < 0 || p->w >= c.W);
                ck_assert(p->h >= -geom.pad_before[0] && p->h < c.H + geom.pad_after[0]);
                ck_assert(p->w >= -geom.pad_before[1] && p->w < c.W + geom.pad_after[1]);
            }
            ppos = end;
            free(gt->t), free(gp->t);
        }
        ck_assert_int_eq(pos, bucket[op].n);
        ck_assert_int_eq(ppos, padded[op].n);
        bf_error e2 = {0};
        ck_assert_int_eq(d->explain(node, info, 0, numel, NULL, NULL, NULL,
                                    &(bf_explain_geom){0}, &e2),
                         BF_EINVAL);
        bf_node_destroy(node);
        free(vo);
        bf_tensor_free(out);
        for (int k = 0; k < 3; k++) bf_tensor_free(in[k]);
    }
    for (int op = 0; op < 3; op++) free(bucket[op].t), free(padded[op].t);
    free(x), free(w), free(dy);
}
END_TEST

/* SAME's odd pixel goes after: 3x3 filter, stride 2, on a 6-wide input needs 1 pixel of
 * padding, all of it on the right/bottom, and the view says so. */
START_TEST(same_odd_pixel_is_after) {
    int64_t xd[4] = {1, 6, 6, 1}, wd[4] = {3, 3, 1, 1};
    bf_tensor *in[2] = {ct_tensor(BF_DTYPE_F32, 4, xd, NULL), ct_tensor(BF_DTYPE_F32, 4, wd, NULL)};
    bf_node *node = NULL;
    bf_error err = {0};
    ck_assert_int_eq(bf_node_make(&bf_block_conv2d,
                                  "{\"strides\":[1,2,2,1],\"padding\":\"SAME\"}", &node, &err),
                     BF_OK);
    bf_port_info info[2];
    for (int k = 0; k < 2; k++) bf_port_set(&info[k], BF_DTYPE_F32, 4, bf_tensor_dims(in[k]));
    bf_explain_geom g;
    got_t got = {0};
    ck_assert_int_eq(bf_block_conv2d.explain(node, info, 0, 8, NULL, collect_pad, &got, &g, &err),
                     BF_OK);
    ck_assert_str_eq(g.padding, "SAME");
    ck_assert_int_eq(g.pad_before[0], 0);
    ck_assert_int_eq(g.pad_after[0], 1);
    ck_assert_int_eq(g.odd_after[0], 1);
    ck_assert_int_eq(g.odd_after[1], 1);
    /* element 8 = (oh 2, ow 2): taps at rows/cols 4, 5, 6: the last is padding, 5 taps */
    ck_assert_int_eq(g.n_padded, 5);
    /* and where, in loop order (kh, kw): column 6 (the column after the 6 data columns) of
     * rows 4 and 5, then row 6 at columns 4..6, each with the filter tap it would have met */
    const int64_t want[5][3] = {{4, 6, 2}, {5, 6, 5}, {6, 4, 6}, {6, 5, 7}, {6, 6, 8}};
    ck_assert_int_eq(got.pads.n, 5);
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(got.pads.t[k].h, want[k][0]);
        ck_assert_int_eq(got.pads.t[k].w, want[k][1]);
        ck_assert_int_eq(got.pads.t[k].b, want[k][2]);
    }
    free(got.pads.t);
    bf_node_destroy(node);
    bf_tensor_free(in[0]), bf_tensor_free(in[1]);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("conv_explain");
    TCase *tc = tcase_create("explain");
    tcase_add_loop_test(tc, enumeration_matches_definition, 0, 300);
    tcase_add_test(tc, same_odd_pixel_is_after);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
