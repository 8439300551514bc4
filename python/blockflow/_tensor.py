"""numpy arrays to bf_tensor and back: dtypes, casts, and exactly where data is copied.

Feeding (numpy -> library): zero-copy when possible. A C-contiguous, aligned, native-endian
array of the Placeholder's dtype is lent to the library as it is (bf_tensor_wrap, then
bf_session_feed_tensor, which takes the tensor): the Placeholder's output is then the array's
memory itself, and the Page keeps a reference to the array until that block is fed again or
the page is closed. The library never writes into it; the caller must not change it in place
while it is fed (feed(..., copy=True) gives the library its own copy). Any other array
(non-contiguous, misaligned, big-endian, or of another dtype to convert) is copied once, by a
single np.copyto into an uninitialised tensor (bf_tensor_new_uninit) that the session then owns:
the copy gathers strides, reads misaligned data, swaps bytes and converts the dtype in one pass.

Casts: an array of another supported dtype is converted to the Placeholder's when numpy's
casting rule `cast` allows it ("same_kind" by default, as TensorFlow's feed_dict converts: a
float64 array feeds a float32 Placeholder; a float array never feeds an int one); cast="no"
passes the array as it is, so a dtype mismatch is the library's error. A bfloat16 Placeholder
takes float arrays rounded to nearest even (runtime/half.h's rule).

Fetching (library -> numpy): zero-copy. bf_session_take_output hands the result's tensor over
and the numpy array views it through __array_interface__, its .base an owner object that frees
the tensor when the last array using it goes. The array is writeable and nobody else's memory.
The session gave the result up, so fetching it again later runs that block again; Page.run
therefore copies small results (below TAKE_MIN bytes, a few microseconds) and keeps them cached.

dtypes: float16, float32, float64, int32 and int64 map to the numpy dtypes of the same name.
bfloat16 maps to ml_dtypes.bfloat16 when that package can be imported. Without it, bfloat16
results come back as float32 (exact widening, as the CLI writes .npy files; a copy). Any other
numpy dtype (bool, uint8, int16, complex, object...) raises blockflow.DtypeError.
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


_DTYPE_OF = {}  # numpy dtype -> bf_dtype or None, filled as dtypes are met


def bf_dtype_of(dtype):
    """The bf_dtype value for a numpy dtype (any byte order), or None when unsupported."""
    try:
        return _DTYPE_OF[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable (a dtype given as a list)
        pass
    found = _bf_dtype_of(dtype)
    try:
        _DTYPE_OF[dtype] = found
    except TypeError:
        pass
    return found


def _bf_dtype_of(dtype):
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


TAKE_MIN = 1 << 20  # Page.run hands results of at least this many bytes over, else copies


def _view(t, dtype, shape):
    """A numpy view of a bf_tensor's data: valid only while the tensor lives."""
    nbytes = lib.bf_tensor_nbytes(t)
    if nbytes == 0:
        return np.empty(shape, dtype)
    buf = (ctypes.c_char * nbytes).from_address(lib.bf_tensor_data(t))
    return np.ndarray(shape, dtype=dtype, buffer=buf)


def _unsupported(dtype, block):
    return _errors.python_error(
        _errors.DtypeError, "unsupported_dtype",
        f"numpy dtype {dtype} is not supported (use float16, float32, float64, "
        f"int32, int64{', bfloat16' if BFLOAT16 is not None else ''})",
        block=block, port="output" if block else "")


_CASTS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _plan(arr, want, block, cast):
    """(bf_dtype, numpy dtype to fill, source array) to feed `arr` where bf_dtype `want` (None:
    unknown) is expected, converting as numpy's casting rule `cast` allows."""
    if cast not in _CASTS:
        raise _errors.python_error(_errors.InvalidArgumentError, "bad_argument",
                                   f"cast must be one of {', '.join(_CASTS)}, got {cast!r}",
                                   block=block)
    have = bf_dtype_of(arr.dtype)
    if have is None:
        raise _unsupported(arr.dtype, block)
    bf16 = BF_DTYPE["bfloat16"]
    if want is None or want == have or cast == "no":
        if have == bf16:
            return have, arr.dtype, arr
        return have, arr.dtype.newbyteorder("="), arr
    target = np.dtype(np.float32) if want == bf16 else numpy_dtype(want)
    # float32 always fed a bfloat16 Placeholder (rounded), whatever `cast` says.
    float32_to_bf16 = want == bf16 and arr.dtype.kind == "f" and arr.dtype.itemsize == 4
    if not float32_to_bf16 and not np.can_cast(arr.dtype, target, casting=cast):
        raise _errors.python_error(
            _errors.DtypeError, "dtype_mismatch",
            f"fed a {BF_NAME[have]} array, expected {BF_NAME[want]}; numpy's cast rule "
            f"{cast!r} does not convert {BF_NAME[have]} to {BF_NAME[want]} "
            f"(convert it first, or pass cast=\"unsafe\")", block=block, port="output")
    if want == bf16:
        if BFLOAT16 is not None:
            return bf16, BFLOAT16, arr.astype(BFLOAT16) if arr.dtype.kind == "f" \
                else arr.astype(np.float32).astype(BFLOAT16)
        return bf16, np.dtype(np.uint16), f32_to_bf16_bits(arr.astype(np.float32))
    return want, target, arr


def to_tensor(ctx, value, *, want=None, block="", cast="same_kind"):
    """A new bf_tensor (the caller frees it with lib.bf_tensor_free) holding a copy of `value`.

    `value` is anything np.asarray accepts. `want` is the bf_dtype expected, when known: the
    array is converted to it as `cast` allows (see the module doc). Raises DtypeError for an
    unsupported dtype and the library's error for a bad shape.
    """
    arr = np.asarray(value)
    dt, fill, src = _plan(arr, want, block, cast)
    return _new_filled(ctx, dt, fill, src)


def _new_filled(ctx, dt, fill, src):
    dims = (ctypes.c_int64 * max(src.ndim, 1))(*src.shape)
    t = ctypes.c_void_p()
    err = _errors.new_error()
    _errors.check(lib.bf_tensor_new_uninit(ctx, dt, src.ndim, dims, ctypes.byref(t),
                                           ctypes.byref(err)), err)
    try:
        if src.size:
            # The one copy: gathers strides, reads misaligned data, fixes the byte order.
            np.copyto(_view(t, fill, src.shape), src, casting="unsafe")
    except BaseException:
        lib.bf_tensor_free(t)
        raise
    return t


def feed_tensor(ctx, value, *, want=None, block="", cast="same_kind", copy=False):
    """(bf_tensor, keep) for bf_session_feed_tensor: the tensor lends the memory of `keep`
    (the array, which must stay alive and unchanged while fed), or owns a copy (keep None)."""
    arr = np.asarray(value)
    dt, fill, src = _plan(arr, want, block, cast)
    if not copy and src.dtype == fill and src.flags.c_contiguous and src.flags.aligned:
        dims = (ctypes.c_int64 * max(src.ndim, 1))(*src.shape)
        t = ctypes.c_void_p()
        err = _errors.new_error()
        _errors.check(lib.bf_tensor_wrap(ctx, dt, src.ndim, dims, src.ctypes.data, src.nbytes,
                                         None, None, ctypes.byref(t), ctypes.byref(err)), err)
        return t, src
    return _new_filled(ctx, dt, fill, src), None


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


class Result:
    """The owner of a tensor the library handed over (bf_session_take_output): numpy arrays
    view its memory through __array_interface__ and keep it alive as their .base; the tensor is
    freed when the last of them goes."""

    def __init__(self, t, shape, typestr):
        self._t = t
        self._free = lib.bf_tensor_free  # still reachable while the interpreter shuts down
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                    "data": (lib.bf_tensor_data(t) or 0, False)}

    def __del__(self):
        if self._t:
            self._free(self._t)
            self._t = None


def adopt(t):
    """A numpy array over the bf_tensor `t`, whose ownership passes to it (no copy)."""
    dt = BF_NAME.get(lib.bf_tensor_dtype(t))
    rank = lib.bf_tensor_rank(t)
    dims = lib.bf_tensor_dims(t)
    shape = tuple(dims[i] for i in range(rank))
    if dt == "bfloat16" and BFLOAT16 is None:  # widened to float32: a copy
        try:
            return from_tensor(t)
        finally:
            lib.bf_tensor_free(t)
    owner = Result(t, shape, "<u2" if dt == "bfloat16" else numpy_dtype(
        BF_DTYPE[dt]).newbyteorder("<").str)
    arr = np.asarray(owner)
    return arr.view(BFLOAT16) if dt == "bfloat16" else arr


def take(s, block, port, err=None):
    """The result of output `port` (bytes or None) of `block` (bytes), handed over by the
    session (bf_session_take_output) as a numpy array, without a copy. `err`: a BfError to
    reuse (None: a new one)."""
    t = ctypes.c_void_p()
    err = err if err is not None else _errors.new_error()
    _errors.check(lib.bf_session_take_output(s, block, port, ctypes.byref(t),
                                             ctypes.byref(err)), err)
    return adopt(t)
