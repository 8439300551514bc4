/*
 * test_conv_random.c - the six convolution blocks on random geometries (shapes, strides,
 * dilations, SAME/VALID/EXPLICIT with asymmetric pads, NHWC and NCHW, groups for Conv2D, a
 * channel multiplier for depthwise) in all four dtypes, against a float64 reference written
 * plainly here (a scatter over every (output position, tap) pair, independent of conv_ref.c).
 * Also the adjoint identity sum(y*dy) == sum(x*dX) == sum(w*dW) and central finite differences
 * of the forward op against both gradients.
 *
 * Tolerances, per output element with S = sum of |terms| of that element:
 *   float64 |err| <= 1e-12 * S,  float32 <= 2e-6 * S (f32 accumulation),
 *   float16 <= 2e-3 * S (one rounding of inputs shared with the reference, f32 accumulation,
 *   one rounding of the output at 2^-11), bfloat16 <= 1.6e-2 * S (output rounding at 2^-8).
 */
#include "conv_geo.h"
#include "conv_harness.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Conv2D problems have 1 to 3 input and output channels per group. */
#define MAX_PER_GROUP 3

/*
 * The reference: visit every (n, oh, ow, co, kh, kw, j) once, where j runs over the input
 * channels that output channel co reads, and accumulate all three results and their |terms|.
 */
typedef struct refs {
    double *y, *dx, *dw, *ay, *adx, *adw;
} refs;

static void reference(const ct_geo *c, const double *x, const double *w, const double *dy,
                      refs *o) {
    int64_t ny = c->N * c->OH * c->OW * c->O, nx = c->N * c->H * c->W * c->C;
    int64_t nw = c->KH * c->KW * c->F2 * c->F3;
    o->y = calloc((size_t)ny, 8), o->ay = calloc((size_t)ny, 8);
    o->dx = calloc((size_t)nx, 8), o->adx = calloc((size_t)nx, 8);
    o->dw = calloc((size_t)nw, 8), o->adw = calloc((size_t)nw, 8);
    int64_t per = c->dw ? 1 : c->F2; /* input channels per output channel */
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oh = 0; oh < c->OH; oh++)
            for (int64_t ow = 0; ow < c->OW; ow++)
                for (int64_t co = 0; co < c->O; co++)
                    for (int64_t kh = 0; kh < c->KH; kh++)
                        for (int64_t kw = 0; kw < c->KW; kw++)
                            for (int64_t j = 0; j < per; j++) {
                                int64_t ih = oh * c->sh - c->pt + kh * c->dh;
                                int64_t iw = ow * c->sw - c->pl + kw * c->dwl;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                int64_t ch, fi;
                                if (c->dw) {
                                    int64_t k = co / c->F3, q = co % c->F3;
                                    ch = k, fi = ((kh * c->KW + kw) * c->C + k) * c->F3 + q;
                                } else {
                                    int64_t g = co / (c->O / c->G);
                                    ch = g * c->F2 + j;
                                    fi = ((kh * c->KW + kw) * c->F2 + j) * c->O + co;
                                }
                                int64_t xi = ct_geo_index(c, c->H, c->W, c->C, n, ih, iw, ch);
                                int64_t yi = ct_geo_index(c, c->OH, c->OW, c->O, n, oh, ow, co);
                                o->y[yi] += x[xi] * w[fi], o->ay[yi] += fabs(x[xi] * w[fi]);
                                o->dx[xi] += w[fi] * dy[yi], o->adx[xi] += fabs(w[fi] * dy[yi]);
                                o->dw[fi] += x[xi] * dy[yi], o->adw[fi] += fabs(x[xi] * dy[yi]);
                            }
}

static void refs_free(refs *o) {
    free(o->y), free(o->dx), free(o->dw), free(o->ay), free(o->adx), free(o->adw);
}

/* Random values, already rounded to dt so that the reference sees what the block sees. */
static double *rand_vals(bf_rng *r, int64_t n, bf_dtype dt) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double d = bf_rng_nonzero(r);
        if (dt == BF_DTYPE_F16) d = bf_f16_to_f32(bf_f32_to_f16((float)d));
        if (dt == BF_DTYPE_BF16) d = bf_bf16_to_f32(bf_f32_to_bf16((float)d));
        if (dt == BF_DTYPE_F32) d = (float)d;
        v[i] = d;
    }
    return v;
}

static void dims_act(const ct_geo *c, int64_t h, int64_t w, int64_t ch, int64_t *d) {
    if (c->nchw)
        d[0] = c->N, d[1] = ch, d[2] = h, d[3] = w;
    else
        d[0] = c->N, d[1] = h, d[2] = w, d[3] = ch;
}

/* Run one op of c on (x, w, dy) in dtype dt; returns the output values (caller frees). */
static double *run_op(const ct_geo *c, int op, bf_dtype dt, const double *x, const double *w,
                      const double *dy, int two_sizes) {
    int64_t xd[4], wd[4] = {c->KH, c->KW, c->F2, c->F3}, yd[4];
    dims_act(c, c->H, c->W, c->C, xd);
    dims_act(c, c->OH, c->OW, c->O, yd);
    char a[512];
    ct_geo_attrs(c, a, sizeof(a));
    bf_tensor *in[3] = {NULL, NULL, NULL}, *out = NULL;
    const bf_block_desc *d;
    if (op == 0) {
        d = c->dw ? &bf_block_depthwise_conv2d_native : &bf_block_conv2d;
        in[0] = ct_tensor(dt, 4, xd, x), in[1] = ct_tensor(dt, 4, wd, w);
    } else if (op == 1) {
        d = c->dw ? &bf_block_depthwise_conv2d_native_backprop_filter
                  : &bf_block_conv2d_backprop_filter;
        in[0] = ct_tensor(dt, 4, xd, x), in[1] = ct_i32(4, wd), in[2] = ct_tensor(dt, 4, yd, dy);
    } else {
        d = c->dw ? &bf_block_depthwise_conv2d_native_backprop_input
                  : &bf_block_conv2d_backprop_input;
        int64_t hw[2] = {c->H, c->W};
        /* The [H, W] form takes C from filter dim 2, so it only fits when groups == 1. */
        in[0] = two_sizes && (c->dw || c->G == 1) ? ct_i32(2, hw) : ct_i32(4, xd);
        in[1] = ct_tensor(dt, 4, wd, w), in[2] = ct_tensor(dt, 4, yd, dy);
    }
    bf_error err = {0};
    bf_status st = ct_run(d, a, in, 2, &out, &err);
    ck_assert_msg(st == BF_OK, "%s %s %s: %s", d->type, bf_dtype_name(dt), a, err.message);
    double *v = ct_values(out);
    for (int i = 0; i < 3; i++) bf_tensor_free(in[i]);
    bf_tensor_free(out);
    return v;
}

static double tol_of(bf_dtype dt) {
    switch (dt) {
    case BF_DTYPE_F64: return 1e-12;
    case BF_DTYPE_F32: return 2e-6;
    case BF_DTYPE_F16: return 2e-3;
    default: return 1.6e-2;
    }
}

static const bf_dtype dtypes[4] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16, BF_DTYPE_BF16};

/* _i = op (0..2) * 8 + depthwise * 4 + dtype index; 10 random problems each. */
START_TEST(random_against_reference) {
    int op = _i / 8, dw = (_i / 4) % 2;
    bf_dtype dt = dtypes[_i % 4];
    bf_rng r = {.s = 0x5eed0000u + (uint64_t)_i};
    for (int rep = 0; rep < 10; rep++) {
        ct_geo c;
        ct_geo_draw(&r, dw, MAX_PER_GROUP, &c);
        int64_t nx = c.N * c.H * c.W * c.C, nw = c.KH * c.KW * c.F2 * c.F3;
        int64_t ny = c.N * c.OH * c.OW * c.O;
        double *x = rand_vals(&r, nx, dt), *w = rand_vals(&r, nw, dt), *dy = rand_vals(&r, ny, dt);
        refs ref;
        reference(&c, x, w, dy, &ref);
        double *got = run_op(&c, op, dt, x, w, dy, rep % 3 == 0);
        const double *want = op == 0 ? ref.y : op == 1 ? ref.dw : ref.dx;
        const double *scale = op == 0 ? ref.ay : op == 1 ? ref.adw : ref.adx;
        int64_t n = op == 0 ? ny : op == 1 ? nw : nx;
        for (int64_t i = 0; i < n; i++) {
            double lim = tol_of(dt) * scale[i] + 1e-30;
            ck_assert_msg(fabs(got[i] - want[i]) <= lim,
                          "op %d dw %d %s rep %d elem %ld: got %.9g want %.9g (N%ld H%ld W%ld "
                          "C%ld K%ldx%ld O%ld G%ld s%ld,%ld d%ld,%ld pad %d nchw %d)",
                          op, dw, bf_dtype_name(dt), rep, (long)i, got[i], want[i], (long)c.N,
                          (long)c.H, (long)c.W, (long)c.C, (long)c.KH, (long)c.KW, (long)c.O,
                          (long)c.G, (long)c.sh, (long)c.sw, (long)c.dh, (long)c.dwl, c.pad,
                          c.nchw);
        }
        free(got), free(x), free(w), free(dy);
        refs_free(&ref);
    }
}
END_TEST

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* sum(Conv(x,w)*dy) == sum(x*dX) == sum(w*dW), blocks only (no reference involved). */
START_TEST(adjoint_identity) {
    bf_rng r = {.s = 0xad70u + (uint64_t)_i};
    for (int rep = 0; rep < 6; rep++) {
        ct_geo c;
        ct_geo_draw(&r, _i % 2, MAX_PER_GROUP, &c);
        int64_t nx = c.N * c.H * c.W * c.C, nw = c.KH * c.KW * c.F2 * c.F3;
        int64_t ny = c.N * c.OH * c.OW * c.O;
        double *x = rand_vals(&r, nx, BF_DTYPE_F64), *w = rand_vals(&r, nw, BF_DTYPE_F64);
        double *dy = rand_vals(&r, ny, BF_DTYPE_F64);
        double *y = run_op(&c, 0, BF_DTYPE_F64, x, w, dy, 0);
        double *gw = run_op(&c, 1, BF_DTYPE_F64, x, w, dy, 0);
        double *gx = run_op(&c, 2, BF_DTYPE_F64, x, w, dy, 0);
        double a = dot(y, dy, ny), b = dot(x, gx, nx), d = dot(w, gw, nw);
        double s = 1e-11 * (1 + fabs(a));
        ck_assert_msg(fabs(a - b) <= s && fabs(a - d) <= s, "adjoint: %.15g %.15g %.15g", a, b, d);
        free(x), free(w), free(dy), free(y), free(gw), free(gx);
    }
}
END_TEST

/* Central differences of L(x, w) = sum(Conv(x, w) * dy) against dX and dW (float64). */
START_TEST(finite_differences) {
    bf_rng r = {.s = 0xfd00u + (uint64_t)_i};
    ct_geo c;
    do ct_geo_draw(&r, _i % 2, MAX_PER_GROUP, &c);
    while (c.N * c.H * c.W * c.C > 40 || c.KH * c.KW * c.F2 * c.F3 > 40);
    int64_t nx = c.N * c.H * c.W * c.C, nw = c.KH * c.KW * c.F2 * c.F3;
    int64_t ny = c.N * c.OH * c.OW * c.O;
    double *x = rand_vals(&r, nx, BF_DTYPE_F64), *w = rand_vals(&r, nw, BF_DTYPE_F64);
    double *dy = rand_vals(&r, ny, BF_DTYPE_F64);
    double *gw = run_op(&c, 1, BF_DTYPE_F64, x, w, dy, 0);
    double *gx = run_op(&c, 2, BF_DTYPE_F64, x, w, dy, 0);
    const double h = 1e-3;
    for (int which = 0; which < 2; which++) {
        double *p = which ? w : x, *g = which ? gw : gx;
        int64_t n = which ? nw : nx;
        for (int64_t i = 0; i < n; i++) {
            double keep = p[i], l[2];
            for (int s = 0; s < 2; s++) {
                p[i] = keep + (s ? -h : h);
                double *y = run_op(&c, 0, BF_DTYPE_F64, x, w, dy, 0);
                l[s] = dot(y, dy, ny);
                free(y);
            }
            p[i] = keep;
            double fd = (l[0] - l[1]) / (2 * h);
            ck_assert_msg(fabs(fd - g[i]) <= 1e-8 * (1 + fabs(g[i])),
                          "%s[%ld]: finite difference %.12g, gradient block %.12g",
                          which ? "filter" : "input", (long)i, fd, g[i]);
        }
    }
    free(x), free(w), free(dy), free(gw), free(gx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("conv_random");
    TCase *tc = tcase_create("random");
    tcase_add_loop_test(tc, random_against_reference, 0, 24);
    tcase_add_loop_test(tc, adjoint_identity, 0, 4);
    tcase_add_loop_test(tc, finite_differences, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
