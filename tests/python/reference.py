"""A plain float64 numpy reference of the six convolution ops, independent of blockflow's C code.

Written from TensorFlow's definitions, not from blockflow's kernels: data is brought to NHWC,
padded explicitly (TF's SAME rule: total = max((out-1)*s + (k-1)*d + 1 - in, 0), the odd pixel
after), and each output is a sum over filter taps, one (kh, kw) tap at a time. The gradients are
the literal adjoints: the filter gradient correlates input patches with out_backprop, the input
gradient scatters filter * out_backprop back into the padded input and crops it. Grouped Conv2D
(filter depth dividing the input depth) and the depthwise channel multiplier are covered.
Slow but obvious; meant for the small shapes of the tests.
"""
import numpy as np


def _hw(v, data_format):
    """(h, w) entries of a 4-element strides/dilations list in data_format order."""
    return (v[1], v[2]) if data_format == "NHWC" else (v[2], v[3])


def _to_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 3, 1, 2)


def _geometry(in_hw, k_hw, strides, dilations, padding, explicit, data_format):
    """Output size and (before, after) pads per spatial dim, TensorFlow's rules."""
    s, d = _hw(strides, data_format), _hw(dilations, data_format)
    out, pads = [], []
    for i in range(2):
        eff = (k_hw[i] - 1) * d[i] + 1
        if padding == "VALID":
            before = after = 0
        elif padding == "SAME":
            o = -(-in_hw[i] // s[i])
            total = max((o - 1) * s[i] + eff - in_hw[i], 0)
            before, after = total // 2, total - total // 2
        else:  # EXPLICIT: pairs in data_format order
            dim = (1 + i) if data_format == "NHWC" else (2 + i)
            before, after = explicit[2 * dim], explicit[2 * dim + 1]
        out.append((in_hw[i] + before + after - eff) // s[i] + 1)
        pads.append((before, after))
    return out, pads, s, d


def _patch(xp, kh, kw, out, s, d):
    """xp[:, oh*s+kh*d, ow*s+kw*d, :] for every (oh, ow): [N, OH, OW, C]."""
    h0, w0 = kh * d[0], kw * d[1]
    return xp[:, h0:h0 + (out[0] - 1) * s[0] + 1:s[0], w0:w0 + (out[1] - 1) * s[1] + 1:s[1], :]


def _pad(x, pads):
    return np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))


def conv2d(x, w, strides, padding, explicit_paddings=(), data_format="NHWC",
           dilations=(1, 1, 1, 1)):
    x = _to_nhwc(np.asarray(x, np.float64), data_format)
    w = np.asarray(w, np.float64)
    n, h, wd, c = x.shape
    kh_, kw_, cg, o = w.shape
    groups = c // cg
    og = o // groups
    out, pads, s, d = _geometry((h, wd), (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    xp = _pad(x, pads)
    y = np.zeros((n, out[0], out[1], o))
    for kh in range(kh_):
        for kw in range(kw_):
            p = _patch(xp, kh, kw, out, s, d)
            for g in range(groups):
                y[..., g * og:(g + 1) * og] += np.einsum(
                    "nhwc,co->nhwo", p[..., g * cg:(g + 1) * cg], w[kh, kw, :, g * og:(g + 1) * og])
    return _from_nhwc(y, data_format)


def conv2d_backprop_filter(x, filter_sizes, dy, strides, padding, explicit_paddings=(),
                           data_format="NHWC", dilations=(1, 1, 1, 1)):
    x = _to_nhwc(np.asarray(x, np.float64), data_format)
    dy = _to_nhwc(np.asarray(dy, np.float64), data_format)
    kh_, kw_, cg, o = filter_sizes
    groups = x.shape[3] // cg
    og = o // groups
    out, pads, s, d = _geometry(x.shape[1:3], (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    assert tuple(out) == dy.shape[1:3], (out, dy.shape)
    xp = _pad(x, pads)
    dw = np.zeros((kh_, kw_, cg, o))
    for kh in range(kh_):
        for kw in range(kw_):
            p = _patch(xp, kh, kw, out, s, d)
            for g in range(groups):
                dw[kh, kw, :, g * og:(g + 1) * og] = np.einsum(
                    "nhwc,nhwo->co", p[..., g * cg:(g + 1) * cg], dy[..., g * og:(g + 1) * og])
    return dw


def conv2d_backprop_input(input_sizes, w, dy, strides, padding, explicit_paddings=(),
                          data_format="NHWC", dilations=(1, 1, 1, 1)):
    w = np.asarray(w, np.float64)
    dy = _to_nhwc(np.asarray(dy, np.float64), data_format)
    n, h, wd, c = _to_nhwc(np.empty(input_sizes, np.int8), data_format).shape
    kh_, kw_, cg, o = w.shape
    groups = c // cg
    og = o // groups
    out, pads, s, d = _geometry((h, wd), (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    assert tuple(out) == dy.shape[1:3], (out, dy.shape)
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c))
    for kh in range(kh_):
        for kw in range(kw_):
            p = _patch(dxp, kh, kw, out, s, d)  # a view: += scatters into dxp
            for g in range(groups):
                p[..., g * cg:(g + 1) * cg] += np.einsum(
                    "nhwo,co->nhwc", dy[..., g * og:(g + 1) * og],
                    w[kh, kw, :, g * og:(g + 1) * og])
    dx = dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]
    return _from_nhwc(dx, data_format)


def depthwise_conv2d_native(x, w, strides, padding, explicit_paddings=(), data_format="NHWC",
                            dilations=(1, 1, 1, 1)):
    x = _to_nhwc(np.asarray(x, np.float64), data_format)
    w = np.asarray(w, np.float64)
    n, h, wd, c = x.shape
    kh_, kw_, _, m = w.shape
    out, pads, s, d = _geometry((h, wd), (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    xp = _pad(x, pads)
    y = np.zeros((n, out[0], out[1], c, m))
    for kh in range(kh_):
        for kw in range(kw_):
            y += _patch(xp, kh, kw, out, s, d)[..., None] * w[kh, kw]
    return _from_nhwc(y.reshape(n, out[0], out[1], c * m), data_format)


def depthwise_conv2d_native_backprop_filter(x, filter_sizes, dy, strides, padding,
                                            explicit_paddings=(), data_format="NHWC",
                                            dilations=(1, 1, 1, 1)):
    x = _to_nhwc(np.asarray(x, np.float64), data_format)
    dy = _to_nhwc(np.asarray(dy, np.float64), data_format)
    kh_, kw_, c, m = filter_sizes
    out, pads, s, d = _geometry(x.shape[1:3], (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    dy = dy.reshape(dy.shape[0], out[0], out[1], c, m)
    xp = _pad(x, pads)
    dw = np.zeros((kh_, kw_, c, m))
    for kh in range(kh_):
        for kw in range(kw_):
            dw[kh, kw] = np.einsum("nhwc,nhwcm->cm", _patch(xp, kh, kw, out, s, d), dy)
    return dw


def depthwise_conv2d_native_backprop_input(input_sizes, w, dy, strides, padding,
                                           explicit_paddings=(), data_format="NHWC",
                                           dilations=(1, 1, 1, 1)):
    w = np.asarray(w, np.float64)
    dy = _to_nhwc(np.asarray(dy, np.float64), data_format)
    n, h, wd, c = _to_nhwc(np.empty(input_sizes, np.int8), data_format).shape
    kh_, kw_, _, m = w.shape
    out, pads, s, d = _geometry((h, wd), (kh_, kw_), strides, dilations, padding,
                                explicit_paddings, data_format)
    dy = dy.reshape(n, out[0], out[1], c, m)
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c))
    for kh in range(kh_):
        for kw in range(kw_):
            _patch(dxp, kh, kw, out, s, d)[...] += np.einsum("nhwcm,cm->nhwc", dy, w[kh, kw])
    dx = dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]
    return _from_nhwc(dx, data_format)


def output_hw(in_hw, k_hw, strides, padding, explicit_paddings, data_format, dilations):
    """(OH, OW) for the tests to size out_backprop."""
    return tuple(_geometry(in_hw, k_hw, strides, dilations, padding, explicit_paddings,
                           data_format)[0])
