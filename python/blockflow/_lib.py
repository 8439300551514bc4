"""The ctypes binding of include/blockflow.h: finding libblockflow.so, its structs and signatures.

Everything here mirrors the C header one to one and holds no policy; the Pythonic layer is in
_page.py, _tensor.py and ops.py. ctypes.CDLL releases the GIL around every foreign call, so a
long bf_session_run lets other Python threads go on.

The library is looked for, first found wins:
  1. the file named by the environment variable BLOCKFLOW_LIBRARY;
  2. libblockflow.so inside this package (a `pip install ./python` made after a build bundles it);
  3. the library installed with this package by CMake's install target (_install_paths.py holds
     its path relative to this folder, so an install under any --prefix finds its own copy);
  4. the repository's build tree, build/libblockflow.so next to python/ (PYTHONPATH=python);
  5. the system loader (LD_LIBRARY_PATH, ldconfig's cache).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_ubyte, c_uint, c_uint64, c_void_p)
from pathlib import Path

BF_MAX_RANK = 8


class BfError(Structure):
    """struct bf_error: filled by the library, read by _errors.py."""
    _fields_ = [
        ("status", c_int),
        ("code", c_char * 32),
        ("page", c_char * 256),
        ("block_id", c_char * 64),
        ("port", c_char * 32),
        ("attr", c_char * 32),
        ("pointer", c_char * 256),
        ("line", c_int),
        ("column", c_int),
        ("message", c_char * 256),
    ]


class BfConfig(Structure):
    """struct bf_config: zeros mean "default"."""
    _fields_ = [
        ("max_session_bytes", c_uint64),
        ("max_tensor_elements", c_uint64),
        ("max_page_bytes", c_uint64),
        ("max_blocks", c_int),
        ("max_json_depth", c_int),
        ("threads", c_int),
        ("disable_gpu", c_int),
        ("confine_files", c_int),
        ("cudnn_autotune", c_int),
        ("cudnn_nondeterministic", c_int),
        ("cudnn_workspace_mb", c_int),
        ("max_cache_bytes", c_uint64),
        ("no_cache", c_int),
        ("distributed", c_int),
        ("deterministic_reduce", c_int),
        ("group", c_void_p),  # bf_group *: a job of threads (not used from Python)
        ("group_rank", c_int),
    ]


class BfGradOptions(Structure):
    """struct bf_grad_options."""
    _fields_ = [
        ("optimizer", c_char_p),
        ("data_parallel", c_int),
        ("ranks", c_int),
    ]


class BfBlockStats(Structure):
    """struct bf_block_stats: what the last check or run says about one block."""
    _fields_ = [
        ("id", c_char_p),
        ("type", c_char_p),
        ("device", c_char * 16),
        ("note", c_char * 96),
        ("ms", c_double),
        ("ran", c_int),
        ("reused", c_int),
        ("n_outputs", c_int),
        ("rank", c_int * 4),
        ("dims", (c_int64 * BF_MAX_RANK) * 4),
        ("dtype", c_int * 4),
        ("status", c_int),
    ]


EVENT_CB = ctypes.CFUNCTYPE(None, c_int, POINTER(BfBlockStats), c_void_p)


class BfRunOptions(Structure):
    """struct bf_run_options."""
    _fields_ = [
        ("fetches", POINTER(c_char_p)),
        ("n_fetches", c_int),
        ("device", c_int),
        ("timeout_s", c_double),
        ("on_event", EVENT_CB),
        ("user", c_void_p),
    ]


class BfPortShape(Structure):
    """struct bf_port_shape: a port's dtype and shape as a check inferred them."""
    _fields_ = [
        ("dtype", c_int),
        ("rank", c_int),
        ("dims", c_int64 * BF_MAX_RANK),
    ]


class BfExplainOptions(Structure):
    """struct bf_explain_options."""
    _fields_ = [
        ("port", c_char_p),
        ("max_terms", c_int64),
        ("device", c_int),
        ("timeout_s", c_double),
        ("on_event", EVENT_CB),
        ("user", c_void_p),
    ]


class BfGradcheckOptions(Structure):
    """struct bf_gradcheck_options."""
    _fields_ = [
        ("eps", c_double),
        ("tolerance", c_double),
        ("full_below", c_int),
        ("samples", c_int),
        ("seed", c_uint64),
        ("compare_gpu", c_int),
        ("timeout_s", c_double),
        ("on_event", EVENT_CB),
        ("user", c_void_p),
    ]


STEP_CB = ctypes.CFUNCTYPE(c_int, c_int64, POINTER(c_double), c_int, c_void_p)


class BfStepOptions(Structure):
    """struct bf_step_options."""
    _fields_ = [
        ("fetches", POINTER(c_char_p)),
        ("n_fetches", c_int),
        ("device", c_int),
        ("timeout_s", c_double),
        ("on_event", EVENT_CB),
        ("on_step", STEP_CB),
        ("user", c_void_p),
    ]


class BfTensorStats(Structure):
    """struct bf_tensor_stats (bf_tensor_stats_of)."""
    _fields_ = [
        ("count", c_int64),
        ("finite", c_int64),
        ("nan", c_int64),
        ("inf", c_int64),
        ("min", c_double),
        ("max", c_double),
        ("mean", c_double),
        ("std", c_double),
    ]


# Every struct above is also declared in include/blockflow.h; tests/python/test_structs.py
# parses the header and fails when a field list here no longer matches it.
STRUCTS = {"bf_error": BfError, "bf_config": BfConfig, "bf_block_stats": BfBlockStats,
           "bf_run_options": BfRunOptions, "bf_port_shape": BfPortShape,
           "bf_explain_options": BfExplainOptions, "bf_gradcheck_options": BfGradcheckOptions,
           "bf_step_options": BfStepOptions, "bf_grad_options": BfGradOptions,
           "bf_tensor_stats": BfTensorStats}

DEVICE_KINDS = {"auto": 0, "cpu": 1, "gpu": 2}   # enum bf_device_kind

_ERR = POINTER(BfError)
_PTR = POINTER(c_void_p)

# name: (restype, argtypes). Opaque handles (bf_context, bf_page, bf_session, bf_tensor,
# bf_diags) are plain c_void_p; a status is c_int.
_SIGNATURES = {
    "bf_status_name": (c_char_p, [c_int]),
    "bf_error_codes": (c_size_t, [POINTER(POINTER(c_char_p))]),
    "bf_error_code_meaning": (c_char_p, [c_char_p]),
    "bf_tensor_stats_of": (None, [c_void_p, POINTER(BfTensorStats)]),
    "bf_tensor_load_npy_mem": (c_int, [c_void_p, c_void_p, c_size_t, c_char_p, _PTR, _ERR]),
    "bf_strerror": (c_char_p, [c_int]),
    "bf_error_format": (c_int, [_ERR, c_char_p, c_size_t]),
    "bf_diags_new": (c_void_p, []),
    "bf_diags_free": (None, [c_void_p]),
    "bf_diags_clear": (None, [c_void_p]),
    "bf_diags_count": (c_size_t, [c_void_p]),
    "bf_diags_at": (_ERR, [c_void_p, c_size_t]),
    "bf_dtype_name": (c_char_p, [c_int]),
    "bf_dtype_size": (c_size_t, [c_int]),
    "bf_dtype_from_name": (c_int, [c_char_p]),
    "bf_tensor_new": (c_int, [c_void_p, c_int, c_int, POINTER(c_int64), _PTR, _ERR]),
    "bf_tensor_new_uninit": (c_int, [c_void_p, c_int, c_int, POINTER(c_int64), _PTR, _ERR]),
    "bf_tensor_wrap": (c_int, [c_void_p, c_int, c_int, POINTER(c_int64), c_void_p, c_size_t,
                               c_void_p, c_void_p, _PTR, _ERR]),
    "bf_tensor_free": (None, [c_void_p]),
    "bf_tensor_dtype": (c_int, [c_void_p]),
    "bf_tensor_rank": (c_int, [c_void_p]),
    "bf_tensor_dims": (POINTER(c_int64), [c_void_p]),
    "bf_tensor_nbytes": (c_size_t, [c_void_p]),
    "bf_tensor_data": (c_void_p, [c_void_p]),
    "bf_tensor_cdata": (c_void_p, [c_void_p]),
    "bf_config_init": (None, [POINTER(BfConfig)]),
    "bf_context_new": (c_int, [POINTER(BfConfig), _PTR, _ERR]),
    "bf_context_free": (None, [c_void_p]),
    "bf_context_config": (POINTER(BfConfig), [c_void_p]),
    "bf_context_has_gpu": (c_int, [c_void_p]),
    "bf_context_devices": (c_char_p, [c_void_p]),
    "bf_context_rank": (c_int, [c_void_p]),
    "bf_context_size": (c_int, [c_void_p]),
    "bf_context_job": (c_char_p, [c_void_p]),
    "bf_block_catalog_json": (c_int, [c_char_p, POINTER(c_void_p), _ERR]),
    "bf_string_free": (None, [c_void_p]),
    "bf_page_load_file": (c_int, [c_void_p, c_char_p, _PTR, c_void_p, _ERR]),
    "bf_page_load_string": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p, c_char_p, _PTR,
                                    c_void_p, _ERR]),
    "bf_page_parse": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p, c_char_p, c_uint,
                              _PTR, c_void_p, _ERR]),
    "bf_page_to_json": (c_int, [c_void_p, POINTER(c_void_p), _ERR]),
    "bf_page_free": (None, [c_void_p]),
    "bf_page_name": (c_char_p, [c_void_p]),
    "bf_page_description": (c_char_p, [c_void_p]),
    "bf_page_file": (c_char_p, [c_void_p]),
    "bf_page_block_count": (c_int, [c_void_p]),
    "bf_page_block_id": (c_char_p, [c_void_p, c_int]),
    "bf_page_block_type": (c_char_p, [c_void_p, c_int]),
    "bf_page_output_count": (c_int, [c_void_p]),
    "bf_page_output": (c_char_p, [c_void_p, c_int]),
    "bf_run_options_init": (None, [POINTER(BfRunOptions)]),
    "bf_session_new": (c_int, [c_void_p, c_void_p, _PTR, _ERR]),
    "bf_session_free": (None, [c_void_p]),
    "bf_session_page": (c_void_p, [c_void_p]),
    "bf_session_check": (c_int, [c_void_p, c_void_p, _ERR]),
    "bf_session_feed": (c_int, [c_void_p, c_char_p, c_void_p, _ERR]),
    "bf_session_feed_tensor": (c_int, [c_void_p, c_char_p, c_void_p, _ERR]),
    "bf_session_take_output": (c_int, [c_void_p, c_char_p, c_char_p, _PTR, _ERR]),
    "bf_session_add_block": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, c_char_p,
                                     c_char_p, _ERR]),
    "bf_session_remove_block": (c_int, [c_void_p, c_char_p, _ERR]),
    "bf_session_rename_block": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "bf_session_connect": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, _ERR]),
    "bf_session_disconnect": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "bf_session_set_attr": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, _ERR]),
    "bf_session_set_device": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "bf_session_set_ui": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "bf_session_set_outputs": (c_int, [c_void_p, POINTER(c_char_p), c_int, _ERR]),
    "bf_session_set_name": (c_int, [c_void_p, c_char_p, _ERR]),
    "bf_session_set_description": (c_int, [c_void_p, c_char_p, _ERR]),
    "bf_session_apply_edits": (c_int, [c_void_p, c_char_p, c_size_t, c_void_p, _ERR]),
    "bf_session_check_json": (c_int, [c_void_p, POINTER(c_void_p), _ERR]),
    "bf_session_run": (c_int, [c_void_p, POINTER(BfRunOptions), c_void_p, _ERR]),
    "bf_session_cancel": (None, [c_void_p]),
    "bf_session_output": (c_void_p, [c_void_p, c_char_p, c_char_p]),
    "bf_session_block_stats": (POINTER(BfBlockStats), [c_void_p, c_int]),
    "bf_session_block_output_count": (c_int, [c_void_p, c_int]),
    "bf_session_block_output_name": (c_char_p, [c_void_p, c_int, c_int]),
    "bf_explain_options_init": (None, [POINTER(BfExplainOptions)]),
    "bf_session_explain": (c_int, [c_void_p, c_char_p, POINTER(c_int64), c_int,
                                   POINTER(BfExplainOptions), POINTER(c_void_p), _ERR]),
    "bf_gradcheck_options_init": (None, [POINTER(BfGradcheckOptions)]),
    "bf_session_gradcheck": (c_int, [c_void_p, c_char_p, POINTER(BfGradcheckOptions),
                                     POINTER(c_void_p), _ERR]),
    "bf_session_add_gradients": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p),
                                         _ERR]),
    "bf_step_options_init": (None, [POINTER(BfStepOptions)]),
    "bf_session_step": (c_int, [c_void_p, c_int64, POINTER(BfStepOptions), c_void_p, _ERR]),
    "bf_session_step_count": (c_int64, [c_void_p]),
    "bf_session_reset": (c_int, [c_void_p, _ERR]),
    "bf_session_state_count": (c_int, [c_void_p]),
    "bf_session_state_id": (c_char_p, [c_void_p, c_int]),
    "bf_session_read_state": (c_int, [c_void_p, c_char_p, _PTR, _ERR]),
    "bf_session_write_state": (c_int, [c_void_p, c_char_p, c_void_p, _ERR]),
    "bf_session_save_state": (c_int, [c_void_p, c_char_p, _ERR]),
    "bf_session_load_state": (c_int, [c_void_p, c_char_p, _ERR]),
    "bf_session_build_gradients": (c_int, [c_void_p, c_char_p, POINTER(c_char_p), c_int,
                                           c_char_p, POINTER(c_void_p), _ERR]),
    "bf_session_build_gradients_opts": (c_int, [c_void_p, c_char_p, POINTER(c_char_p), c_int,
                                                POINTER(BfGradOptions), POINTER(c_void_p),
                                                _ERR]),
    "bf_session_check_gradients": (c_int, [c_void_p, c_char_p, POINTER(BfGradcheckOptions),
                                           POINTER(c_void_p), _ERR]),
}


def _candidates():
    """Paths to try, in the order of the module docstring (the loader's name last)."""
    env = os.environ.get("BLOCKFLOW_LIBRARY")
    if env:
        return [env]  # an explicit choice is never silently replaced by another library
    here = Path(__file__).resolve().parent
    paths = [here / "libblockflow.so"]
    try:
        from . import _install_paths  # written by CMake's install target only
        paths.append(here / _install_paths.LIBRARY)  # relative to here (absolute stays so)
    except ImportError:
        pass
    paths.append(here.parent.parent / "build" / "libblockflow.so")
    return [str(p) for p in paths if p.is_file()] + ["libblockflow.so"]


def _load():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        lib.path = path
        return lib
    raise ImportError("blockflow: cannot load libblockflow.so (build it with `make`, or set "
                      "BLOCKFLOW_LIBRARY to its path); tried: " + "; ".join(tried))


lib = _load()

LOAD_INCOMPLETE = 1  # bf_page_parse flags
LOAD_SKIP_FILES = 2

# Room left after every struct the library writes into: a mirror that fell behind the header
# then costs a wrong value, not the interpreter (bf_config_init once wrote past a BfConfig).
SLACK = 256


def new(cls):
    """A zeroed `cls` with SLACK spare bytes after it (the buffer lives as long as the struct)."""
    return cls.from_buffer((c_ubyte * (ctypes.sizeof(cls) + SLACK))())


def _c_size(init):
    """sizeof the C struct that `init` fills, measured: the _init functions memset it to zero,
    so on a buffer of 0xA5 bytes the first byte left untouched is where the struct ends."""
    buf = (c_ubyte * 4096)(*([0xA5] * 4096))
    init(ctypes.cast(buf, init.argtypes[0]))
    return next((i for i, b in enumerate(buf) if b != 0), len(buf))


def _check_layouts():
    for cls, init in ((BfConfig, lib.bf_config_init), (BfRunOptions, lib.bf_run_options_init),
                      (BfExplainOptions, lib.bf_explain_options_init),
                      (BfGradcheckOptions, lib.bf_gradcheck_options_init),
                      (BfStepOptions, lib.bf_step_options_init)):
        size = _c_size(init)
        if size != ctypes.sizeof(cls):
            name = next(k for k, v in STRUCTS.items() if v is cls)
            raise ImportError(
                f"blockflow: {lib.path} declares struct {name} of "
                f"{size} bytes but the Python mirror {cls.__name__} has "
                f"{ctypes.sizeof(cls)}: the library and python/blockflow/_lib.py disagree "
                "(update _lib.py to include/blockflow.h, or use the matching library)")


_check_layouts()


def text(b):
    """A C string (bytes or None) as str; "" for NULL. Undecodable bytes are replaced."""
    return b.decode("utf-8", "replace") if b else ""


def take_string(out):
    """The text of a string the library allocated (a c_void_p), freed here."""
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.bf_string_free(out)


def split_ref(ref):
    """"block" or "block:port" -> (block, port or None), split at the last colon as in C."""
    block, colon, port = ref.rpartition(":")
    return (block, port) if colon else (ref, None)


def cstr(s):
    """A Python str as a NUL-terminated UTF-8 C string; None stays NULL."""
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")
