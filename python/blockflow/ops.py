"""One-block helpers with TensorFlow's raw-op signatures: tf.raw_ops.X(...) -> blockflow.ops.x(...).

Each call builds a tiny page as JSON text (a Placeholder per tensor input, a Const for the
int32 `filter_sizes` / `input_sizes`, the op block), loads it with bf_page_load_string, feeds it,
runs it and returns the result as a new numpy array. Attribute names, order and defaults are
TensorFlow's (and graph_schemas/block_catalog.json's). The page is freed on return; contexts
are shared, so repeated calls do not restart the thread pool.

    dw = blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], dy, strides=[1, 1, 1, 1],
                                              padding="SAME")

Keyword-only extras: device ("auto", "cpu", "gpu") and threads (None: one per core).
Errors raise the same blockflow.Error subclasses as a page would, naming the op's block
(its id is the op's TensorFlow name, e.g. "Conv2DBackpropFilter") and port.
"""
from __future__ import annotations

import json

import numpy as np

from . import _errors, _tensor
from ._page import loads

__all__ = ["conv2d", "conv2d_backprop_filter", "conv2d_backprop_input",
           "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_filter",
           "depthwise_conv2d_native_backprop_input"]

_SIZES = ("filter_sizes", "input_sizes")  # int32 shape vectors: Const blocks


def _list(v):
    """An attribute list from a list, tuple or numpy array."""
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _run_op(op, inputs, attrs, device, threads):
    """Build, load, feed and run the one-block page of `op`; return its output array."""
    blocks, feeds = [], {}
    for port, value in inputs.items():
        if port in _SIZES:
            sizes = _list(value)
            blocks.append({"id": port, "type": "Const",
                           "attrs": {"dtype": "int32", "shape": [len(sizes)], "value": sizes}})
        else:
            arr = np.asarray(value)
            dt = _tensor.bf_dtype_of(arr.dtype)
            if dt is None:
                raise _errors.python_error(
                    _errors.DtypeError, "unsupported_dtype",
                    f"numpy dtype {arr.dtype} is not supported", block=op, port=port)
            dtype = _tensor.BF_NAME[dt]
            blocks.append({"id": port, "type": "Placeholder", "attrs": {"dtype": dtype}})
            feeds[port] = arr
    blocks.append({"id": op, "type": op, "inputs": {p: p for p in inputs}, "attrs": attrs,
                   "device": device})
    page = {"format": "blockflow.page", "version": 1, "name": op, "blocks": blocks,
            "outputs": [op]}
    with loads(json.dumps(page), name=op, threads=threads) as p:
        return p.run(feeds)[op]


def _conv_attrs(strides, padding, explicit_paddings, data_format, dilations, **extra):
    attrs = {"strides": _list(strides), "padding": padding,
             "explicit_paddings": _list(explicit_paddings), "data_format": data_format,
             "dilations": _list(dilations)}
    attrs.update(extra)
    return attrs


def conv2d(input, filter, strides, padding, use_cudnn_on_gpu=True, explicit_paddings=(),
           data_format="NHWC", dilations=(1, 1, 1, 1), *, device="auto", threads=None):
    """tf.raw_ops.Conv2D: output [N, OH, OW, out_c] (NHWC) of input and an HWIO filter."""
    return _run_op("Conv2D", {"input": input, "filter": filter},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations,
                               use_cudnn_on_gpu=bool(use_cudnn_on_gpu)), device, threads)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                           use_cudnn_on_gpu=True, explicit_paddings=(), data_format="NHWC",
                           dilations=(1, 1, 1, 1), *, device="auto", threads=None):
    """tf.raw_ops.Conv2DBackpropFilter: the gradient of Conv2D with respect to its filter."""
    return _run_op("Conv2DBackpropFilter",
                   {"input": input, "filter_sizes": filter_sizes, "out_backprop": out_backprop},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations,
                               use_cudnn_on_gpu=bool(use_cudnn_on_gpu)), device, threads)


def conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding,
                          use_cudnn_on_gpu=True, explicit_paddings=(), data_format="NHWC",
                          dilations=(1, 1, 1, 1), *, device="auto", threads=None):
    """tf.raw_ops.Conv2DBackpropInput: the gradient of Conv2D with respect to its input."""
    return _run_op("Conv2DBackpropInput",
                   {"input_sizes": input_sizes, "filter": filter, "out_backprop": out_backprop},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations,
                               use_cudnn_on_gpu=bool(use_cudnn_on_gpu)), device, threads)


def depthwise_conv2d_native(input, filter, strides, padding, explicit_paddings=(),
                            data_format="NHWC", dilations=(1, 1, 1, 1), *, device="auto",
                            threads=None):
    """tf.raw_ops.DepthwiseConv2dNative: filter [fh, fw, C, M], output channel c*M + m."""
    return _run_op("DepthwiseConv2dNative", {"input": input, "filter": filter},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations),
                   device, threads)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,
                                            padding, explicit_paddings=(), data_format="NHWC",
                                            dilations=(1, 1, 1, 1), *, device="auto",
                                            threads=None):
    """tf.raw_ops.DepthwiseConv2dNativeBackpropFilter."""
    return _run_op("DepthwiseConv2dNativeBackpropFilter",
                   {"input": input, "filter_sizes": filter_sizes, "out_backprop": out_backprop},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations),
                   device, threads)


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,
                                           padding, explicit_paddings=(), data_format="NHWC",
                                           dilations=(1, 1, 1, 1), *, device="auto",
                                           threads=None):
    """tf.raw_ops.DepthwiseConv2dNativeBackpropInput."""
    return _run_op("DepthwiseConv2dNativeBackpropInput",
                   {"input_sizes": input_sizes, "filter": filter, "out_backprop": out_backprop},
                   _conv_attrs(strides, padding, explicit_paddings, data_format, dilations),
                   device, threads)
