/*
 * conv_explain.c - the teaching view of the six convolution blocks: for one output element,
 * the terms of its sum, as pairs (operand A element, operand B element), and the padding.
 *
 * It runs on the very bf_conv_geom the kernels run (bf_conv_geom_from_tensors -> bf_conv_infer),
 * so the view and the kernels cannot disagree about sizes, pads, strides, dilations, groups or
 * layouts. Each op is the position rule of conv_kernels.h read from one side:
 *
 *   FWD         y[n,oh,ow,co]  = sum_{kh,kw,j}  x[n, ih, iw, g*Cg+j] * w[kh,kw,j,co]
 *   BWD_FILTER  dW[kh,kw,j,co] = sum_{n,oh,ow}  x[n, ih, iw, g*Cg+j] * dy[n,oh,ow,co]
 *   BWD_INPUT   dX[n,ih,iw,c]  = sum_{kh,kw,co in group(c)} dy[n,oh,ow,co] * w[kh,kw,c%Cg,co]
 *               where oh*sh - pt + kh*dh == ih (only where that solves for an integer oh)
 *
 * with ih = oh*sh - pt + kh*dh, iw = ow*sw - pl + kw*dw and g = co / (out_c / groups). A tap
 * whose input position falls in the padding reads a zero: it is no term, but it is counted and
 * reported (pad_cb) with its position and the element it would have multiplied:
 *
 *   FWD         x[n, ih, iw, g*Cg+j] outside x, times w[kh,kw,j,co]   (Conv2D, depthwise)
 *   BWD_FILTER  x[n, ih, iw, g*Cg+j] outside x, times dy[n,oh,ow,co]  (the BackpropFilters)
 *   BWD_INPUT   none
 *
 * Positions are (ih, iw) on x's grid, the grid the editor's padding view draws with its ring,
 * counted from the unpadded data: ih = -1 is the row before it, ih = in_h the row after, and
 * -pt <= ih < in_h + pb always. For BWD_INPUT the padding view draws dX itself (x's grid,
 * which dX shares), and on that grid every term of dX[n,ih,iw,c] sits at (ih, iw), the
 * element's own position inside the data: the forward taps that read padding belong to no
 * dX element, so a dX element has no padded taps (n_padded 0, none reported). The taps of
 * the transposed convolution that miss dy (its implicit border, or the zeros between strides)
 * have no position on that grid and are neither counted nor reported.
 *
 * A depthwise filter [fh, fw, C, M] is byte for byte the HWIO filter [fh, fw, 1, C*M]
 * (conv_kernels.h), so flat offsets need no special case. Terms and padded taps come out in
 * loop order (the order of the sums above, last index fastest).
 */
#include "conv_geom.h"

#include <inttypes.h>
#include <string.h>

static int64_t act(const bf_conv_geom *g, int64_t H, int64_t W, int64_t C, int64_t n, int64_t h,
                   int64_t w, int64_t c) {
    return g->nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

/* Split a flat activation offset into (n, h, w, c) for spatial size H x W with C channels. */
static void act_split(const bf_conv_geom *g, int64_t H, int64_t W, int64_t C, int64_t f,
                      int64_t *n, int64_t *h, int64_t *w, int64_t *c) {
    if (g->nchw) {
        *w = f % W, f /= W, *h = f % H, f /= H, *c = f % C, *n = f / C;
    } else {
        *c = f % C, f /= C, *w = f % W, f /= W, *h = f % H, *n = f / H;
    }
}

static void no_term(int64_t a_flat, int64_t b_flat, void *user) {
    (void)a_flat, (void)b_flat, (void)user;
}

/*
 * Report the padded tap x[n, h, w, c] (h, w outside the data) times operand B's element
 * b_flat to pad_cb, when there is one. The index is x's own: [n, c, h, w] for NCHW.
 */
static void pad_tap(const bf_conv_geom *g, bf_explain_pad_cb pad_cb, void *user, int64_t n,
                    int64_t h, int64_t w, int64_t c, int64_t b_flat) {
    if (!pad_cb) return;
    bf_explain_pad_tap t = {.h = h, .w = w, .b_flat = b_flat};
    t.a_index[0] = n;
    if (g->nchw) t.a_index[1] = c, t.a_index[2] = h, t.a_index[3] = w;
    else t.a_index[1] = h, t.a_index[2] = w, t.a_index[3] = c;
    pad_cb(&t, user);
}

int64_t bf_conv_explain_terms(bf_conv_op op, const bf_conv_geom *g, int64_t out_flat,
                              bf_explain_term_cb cb, bf_explain_pad_cb pad_cb, void *user) {
    if (!cb) cb = no_term;
    const int64_t opg = g->out_c / g->groups; /* output channels per group */
    const int64_t Cg = g->k_in_c;
    int64_t padded = 0;
    if (op == BF_CONV_FWD) {
        int64_t n, oh, ow, co;
        act_split(g, g->out_h, g->out_w, g->out_c, out_flat, &n, &oh, &ow, &co);
        const int64_t grp = co / opg;
        for (int64_t kh = 0; kh < g->k_h; kh++)
            for (int64_t kw = 0; kw < g->k_w; kw++)
                for (int64_t j = 0; j < Cg; j++) {
                    int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                    int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;
                    const int64_t wf = ((kh * g->k_w + kw) * Cg + j) * g->out_c + co;
                    if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) {
                        pad_tap(g, pad_cb, user, n, ih, iw, grp * Cg + j, wf);
                        padded++;
                        continue;
                    }
                    cb(act(g, g->in_h, g->in_w, g->in_c, n, ih, iw, grp * Cg + j), wf, user);
                }
    } else if (op == BF_CONV_BWD_FILTER) {
        /* out_flat indexes the HWIO filter [k_h, k_w, Cg, out_c] */
        int64_t f = out_flat;
        const int64_t co = f % g->out_c;
        f /= g->out_c;
        const int64_t j = f % Cg;
        f /= Cg;
        const int64_t kw = f % g->k_w, kh = f / g->k_w;
        const int64_t c = (co / opg) * Cg + j;
        for (int64_t n = 0; n < g->n; n++)
            for (int64_t oh = 0; oh < g->out_h; oh++)
                for (int64_t ow = 0; ow < g->out_w; ow++) {
                    int64_t ih = oh * g->stride_h - g->pad_top + kh * g->dil_h;
                    int64_t iw = ow * g->stride_w - g->pad_left + kw * g->dil_w;
                    const int64_t yf = act(g, g->out_h, g->out_w, g->out_c, n, oh, ow, co);
                    if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) {
                        pad_tap(g, pad_cb, user, n, ih, iw, c, yf);
                        padded++;
                        continue;
                    }
                    cb(act(g, g->in_h, g->in_w, g->in_c, n, ih, iw, c), yf, user);
                }
    } else {
        /* every term is at (ih, iw) itself, inside the data: nothing here reads padding */
        int64_t n, ih, iw, c;
        act_split(g, g->in_h, g->in_w, g->in_c, out_flat, &n, &ih, &iw, &c);
        const int64_t grp = c / Cg, j = c % Cg;
        for (int64_t kh = 0; kh < g->k_h; kh++) {
            /* oh*sh = ih + pt - kh*dh must have a solution 0 <= oh < out_h */
            int64_t th = ih + g->pad_top - kh * g->dil_h;
            if (th < 0 || th % g->stride_h) continue;
            int64_t oh = th / g->stride_h;
            if (oh >= g->out_h) continue;
            for (int64_t kw = 0; kw < g->k_w; kw++) {
                int64_t tw = iw + g->pad_left - kw * g->dil_w;
                if (tw < 0 || tw % g->stride_w) continue;
                int64_t ow = tw / g->stride_w;
                if (ow >= g->out_w) continue;
                for (int64_t co = grp * opg; co < (grp + 1) * opg; co++)
                    cb(act(g, g->out_h, g->out_w, g->out_c, n, oh, ow, co),
                       ((kh * g->k_w + kw) * Cg + j) * g->out_c + co, user);
            }
        }
    }
    return padded;
}

bf_status bf_conv_desc_explain(const bf_node *node, const bf_port_info *in, int out_port,
                               int64_t out_flat, bf_explain_term_cb cb, bf_explain_pad_cb pad_cb,
                               void *user, bf_explain_geom *geom, bf_error *err) {
    const bf_conv_spec *spec = node->desc->impl;
    bf_conv_attrs a;
    bf_conv_geom g;
    bf_port_info out;
    int complete = 0;
    bf_status st = bf_conv_parse_attrs(node, spec, &a, err);
    if (st || (st = bf_conv_infer(node, spec, in, &out, &g, &complete, err))) return st;
    if (!complete)
        return bf_err(err, BF_EINVAL, "shape_unknown", "the input shapes are not all known");
    int64_t numel = bf_port_numel(&out);
    if (out_port != 0 || out_flat < 0 || out_flat >= numel)
        return bf_err(err, BF_EINVAL, "bad_index", "element %" PRId64 " is outside the output "
                      "(%" PRId64 " elements)", out_flat, numel);
    static const char *const names[] = {"SAME", "VALID", "EXPLICIT"};
    memset(geom, 0, sizeof(*geom));
    /* operands as in conv_kernels.h: FWD x, w; BWD_FILTER x, dy; BWD_INPUT dy, w */
    geom->a_input = spec->op == BF_CONV_BWD_INPUT ? 2 : 0;
    geom->b_input = spec->op == BF_CONV_BWD_FILTER ? 2 : 1;
    geom->padding = names[a.padding];
    geom->pad_before[0] = g.pad_top, geom->pad_after[0] = g.pad_bottom;
    geom->pad_before[1] = g.pad_left, geom->pad_after[1] = g.pad_right;
    geom->odd_after[0] = a.padding == BF_CONV_PADDING_SAME && g.pad_bottom > g.pad_top;
    geom->odd_after[1] = a.padding == BF_CONV_PADDING_SAME && g.pad_right > g.pad_left;
    geom->n_padded = bf_conv_explain_terms(spec->op, &g, out_flat, cb, pad_cb, user);
    return BF_OK;
}

/* ---- the gradient relations (tf.gradients: nn_grad.py _Conv2DGrad, _DepthwiseConv2dNativeGrad) */

const bf_grad_desc bf_conv2d_grad_filter = {"Conv2D", "filter", "filter_sizes", "out_backprop"};
const bf_grad_desc bf_conv2d_grad_input = {"Conv2D", "input", "input_sizes", "out_backprop"};
const bf_grad_desc bf_depthwise_grad_filter = {"DepthwiseConv2dNative", "filter", "filter_sizes",
                                               "out_backprop"};
const bf_grad_desc bf_depthwise_grad_input = {"DepthwiseConv2dNative", "input", "input_sizes",
                                              "out_backprop"};
