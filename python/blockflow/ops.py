"""One-block helpers with TensorFlow's raw-op signatures: tf.raw_ops.X(...) -> blockflow.ops.x(...).

The first call of an op signature (the op, its attributes, the dtypes of its tensor inputs,
the int32 `filter_sizes` / `input_sizes`, device and threads) builds a tiny page as JSON text (a
Placeholder per tensor input, a Const per size vector, the op block) and makes its session;
later calls with that signature reuse the session (up to CACHE_SIZE signatures, least recently
used dropped first), so a call costs a feed per input, a run and the hand-over of the result.
Inputs are lent to the library without a copy when they are C-contiguous arrays of a supported
dtype (others are copied once), and the result is handed over without a copy (a writeable numpy
array owning its memory). Attribute names, order and defaults are TensorFlow's (and
graph_schemas/block_catalog.json's). Contexts are shared, so calls do not restart the thread
pool. A cached session keeps the arrays of its last call alive (it reads them: they are
lent, not copied) until the next call of its signature, or clear_cache().

    dw = blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], dy, strides=[1, 1, 1, 1],
                                              padding="SAME")

Keyword-only extras: device ("auto", "cpu", "gpu") and threads (None: one per core).
Ctrl-C cancels a call whose inputs total 64 MiB or more; a smaller call finishes first.
Errors raise the same blockflow.Error subclasses as a page would, naming the op's block
(its id is the op's TensorFlow name, e.g. "Conv2DBackpropFilter") and port.
"""
from __future__ import annotations

import ctypes
import json
import threading
from collections import OrderedDict

import numpy as np

from . import _errors, _tensor
from ._lib import BfRunOptions, cstr, lib, new
from ._page import Page, loads

__all__ = ["conv2d", "conv2d_backprop_filter", "conv2d_backprop_input",
           "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_filter",
           "depthwise_conv2d_native_backprop_input", "CACHE_SIZE", "clear_cache"]

_SIZES = ("filter_sizes", "input_sizes")  # int32 shape vectors: Const blocks
CACHE_SIZE = 64          # op signatures whose session is kept
# Inputs of at least this many bytes run on a helper thread, where Ctrl-C can cancel them
# (Page.run's way); smaller calls run on the calling thread: handing a run to another thread
# and back costs two wake-ups, 4 ms on a loaded 2-core machine (bench/RESULTS.md), and a
# Ctrl-C then waits for the call to end.
_INTERRUPTIBLE = 64 << 20


def _list(v):
    """An attribute list from a list, tuple or numpy array."""
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(x) for x in np.asarray(v).reshape(-1)]


class _Op:
    """A cached session for one op signature: its page, run options, and the arrays the
    last call lent it (kept alive until the next call of this signature or clear_cache())."""

    def __init__(self, op, blocks, ports, device, threads):
        page = {"format": "blockflow.page", "version": 1, "name": op, "blocks": blocks,
                "outputs": [op]}
        self.page = loads(json.dumps(page), name=op, threads=threads)
        self.lock = threading.Lock()
        self.op = cstr(op)
        # (port name, C name, bf_dtype, numpy dtype) per tensor input
        self.ports = [(p, cstr(p), _tensor.bf_dtype_of(d), d.newbyteorder("="))
                      for p, d in ports.items()]
        self.opts = new(BfRunOptions)
        lib.bf_run_options_init(ctypes.byref(self.opts))
        self.err = _errors.new_error()
        self.dims = {}  # shape -> its ctypes int64 array
        self.keep = None

    def _dims(self, shape):
        d = self.dims.get(shape)
        if d is None:
            if len(self.dims) > 256:
                self.dims.clear()
            d = self.dims[shape] = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        return d

    def __call__(self, arrays):
        s = self.page._session(True)
        ctx = self.page._ctx.ptr
        err = self.err
        t = ctypes.c_void_p()
        # Until every input is fed, the session may still read the last call's arrays too.
        self.keep = (self.keep, arrays)
        for port, c_port, dt, np_dtype in self.ports:
            a = arrays[port]
            flags = a.flags
            if flags.c_contiguous and flags.aligned and a.dtype == np_dtype:  # lent as is
                _errors.check(lib.bf_tensor_wrap(ctx, dt, a.ndim, self._dims(a.shape),
                                                 a.ctypes.data, a.nbytes, None, None,
                                                 ctypes.byref(t), ctypes.byref(err)), err)
            else:  # copied once (non-contiguous, misaligned or byte-swapped)
                t = _tensor.feed_tensor(ctx, a, block=port, cast="no", copy=True)[0]
            # The session takes t, on failure too.
            _errors.check(lib.bf_session_feed_tensor(s, c_port, t, ctypes.byref(err)), err)
        self.keep = arrays  # what the session's feeds read from now on
        nbytes = 0
        for a in arrays.values():
            nbytes += a.nbytes
        if nbytes >= _INTERRUPTIBLE:
            status = Page._run_interruptible(s, self.opts, None, err)
        else:
            status = lib.bf_session_run(s, ctypes.byref(self.opts), None, ctypes.byref(err))
        _errors.check(status, err)
        return _tensor.take(s, self.op, None, err)


_cache = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache():
    """Free every cached op session."""
    with _cache_lock:
        for op in _cache.values():
            with op.lock:
                op.page.close()
        _cache.clear()


def _freeze(v):
    return tuple(v) if isinstance(v, list) else v


def _run_op(op, inputs, attrs, device, threads):
    """Feed and run the cached one-block page of `op` for this signature; return its output."""
    arrays, ports, sizes = {}, {}, []
    for port, value in inputs.items():
        if port in _SIZES:
            sizes.append((port, tuple(_list(value))))
            continue
        arr = np.asarray(value)
        if _tensor.bf_dtype_of(arr.dtype) is None:
            raise _errors.python_error(
                _errors.DtypeError, "unsupported_dtype",
                f"numpy dtype {arr.dtype} is not supported", block=op, port=port)
        arrays[port] = arr
        ports[port] = arr.dtype
    key = (op, tuple([(k, _freeze(v)) for k, v in attrs.items()]), tuple(ports.items()),
           tuple(sizes), device, threads)
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        blocks = [{"id": port, "type": "Const",
                   "attrs": {"dtype": "int32", "shape": [len(v)], "value": list(v)}}
                  for port, v in sizes]
        blocks += [{"id": port, "type": "Placeholder",
                    "attrs": {"dtype": _tensor.BF_NAME[_tensor.bf_dtype_of(d)]}}
                   for port, d in ports.items()]
        blocks.append({"id": op, "type": op, "inputs": {p: p for p in inputs}, "attrs": attrs,
                       "device": device})
        entry = _Op(op, blocks, ports, device, threads)
        with _cache_lock:
            _cache[key] = entry
            while len(_cache) > CACHE_SIZE:
                old = _cache.popitem(last=False)[1]
                with old.lock:  # not while a call uses it
                    old.page.close()
    with entry.lock:  # one call at a time per session (another thread's call waits)
        return entry(arrays)


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
