"""numpy arrays to bf_tensor and back: dtypes, and exactly where data is copied.

Feeding (numpy -> library). bf_session_feed() copies the tensor it is given into the session,
so a feed can never be zero-copy through the public C API. What this module does is keep the
Python side to a single pass: it allocates the bf_tensor with bf_tensor_new() and fills it with
one np.copyto() into a numpy view of bf_tensor_data(). That one pass also does what would
otherwise need a second copy: it gathers non-contiguous arrays (slices, transposes, broadcasts),
reads misaligned buffers and swaps the bytes of big-endian arrays. The staging tensor is freed
right after the feed. Total: numpy -> staging (here), staging -> session (the library).

Fetching (library -> numpy). bf_session_output() lends a tensor that stays valid only until the
next run, feed or edit of the session, and the library may reuse that memory for the next run.
A numpy view of it would silently change or dangle, so every fetched array is copied once
(memmove into a fresh, owned, writeable numpy array). Nothing else is copied.

dtypes: float16, float32, float64, int32 and int64 map to the numpy dtypes of the same name.
bfloat16 maps to ml_dtypes.bfloat16 when that package can be imported. Without it, bfloat16
results come back as float32 (exact widening, as the CLI writes .npy files). A bfloat16
Placeholder accepts a float32 array either way, rounded to nearest even (as a bfloat16 Const
reads a float32 file). Any other numpy dtype (bool, uint8, complex, object...) raises
blockflow.DtypeError.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import _errors
from ._lib import lib, text

try:  # optional: numpy's bfloat16, from the ml_dtypes package (JAX, TensorFlow)
    import ml_dtypes
    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the machine
    BFLOAT16 = None

# enum bf_dtype <-> its name, read from the library rather than copied from the header.
BF_DTYPE = {}
for _i in range(1, 64):
    _name = text(lib.bf_dtype_name(_i))
    if _name == "invalid":
        break
    BF_DTYPE[_name] = _i
BF_NAME = {v: k for k, v in BF_DTYPE.items()}

_NUMPY = {"float16": np.dtype(np.float16), "float32": np.dtype(np.float32),
          "float64": np.dtype(np.float64), "int32": np.dtype(np.int32),
          "int64": np.dtype(np.int64)}


def bf_dtype_of(dtype):
    """The bf_dtype value for a numpy dtype (any byte order), or None when unsupported."""
    dtype = np.dtype(dtype)
    if BFLOAT16 is not None and dtype == BFLOAT16:
        return BF_DTYPE["bfloat16"]
    if dtype.kind in "fi" and dtype.isnative is False:
        dtype = dtype.newbyteorder("=")
    for name, np_dtype in _NUMPY.items():
        if dtype == np_dtype:
            return BF_DTYPE[name]
    return None


def numpy_dtype(bf_dtype):
    """The numpy dtype results of bf_dtype come back as."""
    name = BF_NAME.get(bf_dtype, "invalid")
    if name == "bfloat16":
        return BFLOAT16 if BFLOAT16 is not None else np.dtype(np.float32)
    return _NUMPY[name]


def f32_to_bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, rounded to nearest even (runtime/half.h)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    out = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype(np.uint16)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def _view(t, dtype, shape):
    """A numpy view of a bf_tensor's data: valid only while the tensor lives."""
    nbytes = lib.bf_tensor_nbytes(t)
    if nbytes == 0:
        return np.empty(shape, dtype)
    buf = (ctypes.c_char * nbytes).from_address(lib.bf_tensor_data(t))
    return np.ndarray(shape, dtype=dtype, buffer=buf)


def to_tensor(ctx, value, *, want=None, block=""):
    """A new bf_tensor (the caller frees it with lib.bf_tensor_free) holding `value`.

    `value` is anything np.asarray accepts. `want` is the bf_dtype the receiving Placeholder
    declared, when known: it only matters for bfloat16 (float32 arrays are rounded to it).
    Raises DtypeError for an unsupported dtype and the library's error for a bad shape.
    """
    arr = np.asarray(value)
    bf16 = BF_DTYPE["bfloat16"]
    src = arr
    if want == bf16 and arr.dtype.kind == "f" and arr.dtype.itemsize == 4:
        dt, src, fill = bf16, f32_to_bf16_bits(arr), np.dtype(np.uint16)
    else:
        dt = bf_dtype_of(arr.dtype)
        if dt is None:
            raise _errors.python_error(
                _errors.DtypeError, "unsupported_dtype",
                f"numpy dtype {arr.dtype} is not supported (use float16, float32, float64, "
                f"int32, int64{', bfloat16' if BFLOAT16 is not None else ''})",
                block=block, port="output" if block else "")
        fill = arr.dtype.newbyteorder("=") if dt != bf16 else arr.dtype
    dims = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    t = ctypes.c_void_p()
    err = _errors.new_error()
    _errors.check(lib.bf_tensor_new(ctx, dt, arr.ndim, dims, ctypes.byref(t),
                                    ctypes.byref(err)), err)
    try:
        if arr.size:
            # The one copy: gathers strides, reads misaligned data, fixes the byte order.
            np.copyto(_view(t, fill, arr.shape), src, casting="equiv")
    except BaseException:
        lib.bf_tensor_free(t)
        raise
    return t


def from_tensor(t):
    """A new numpy array (owned, writeable) with the contents of the borrowed bf_tensor `t`."""
    dt = lib.bf_tensor_dtype(t)
    rank = lib.bf_tensor_rank(t)
    dims = lib.bf_tensor_dims(t)
    shape = tuple(dims[i] for i in range(rank))
    nbytes = lib.bf_tensor_nbytes(t)
    bf16_as_f32 = BF_NAME.get(dt) == "bfloat16" and BFLOAT16 is None
    out = np.empty(shape, np.uint16 if bf16_as_f32 else numpy_dtype(dt))
    if nbytes:
        ctypes.memmove(out.ctypes.data, lib.bf_tensor_cdata(t), nbytes)
    if bf16_as_f32:
        out = (out.astype(np.uint32) << 16).view(np.float32)
    return out
