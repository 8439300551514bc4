"""Pages and sessions from Python: load, check, feed, edit, run, stats, save.

A Page is one bf_session (which owns its bf_page) plus the context it was made in. It keeps the
session's results between runs, so after a feed or an attribute change the next run recomputes
only the blocks downstream of it, exactly as the C API does. One lock per Page serialises the
calls, because a C session must be used by one thread at a time.

Runs happen on a helper thread while the calling (main) thread waits: ctypes releases the GIL
during the C call, and a Ctrl-C delivered to the waiting thread calls bf_session_cancel(), waits
for the run to stop (kernels stop at their next check), then raises KeyboardInterrupt. The
session stays usable afterwards, as after any failed run.

Contexts (kernel thread pool, limits, devices) are created on first use for each distinct
configuration and kept for the life of the process; a Page holds a reference to its own, so a
context is never freed before the sessions made from it.

Editing (add_block, connect, set_attr, ..., edit for a batch) changes the session's page in
place, as an editor's live page: each call is one C call that validates what it touches and
either succeeds or raises and changes nothing; the next run recomputes exactly what the edit
affected. save() writes the edited page back as canonical JSON.

Teaching (explain, gradcheck, add_gradients) wraps runtime/teach.c: the first two run what
they need, like run() (on a helper thread, Ctrl-C cancels), and return the library's JSON as a
dict; add_gradients is an edit.

Training (step, train, variables, reset, save_state, build_gradients, ...) is in _train.py,
which Page derives from.
"""
from __future__ import annotations

import ctypes
import json
import os
import stat
import tempfile
import threading
from typing import NamedTuple

from . import _errors, _tensor
from ._errors import InvalidArgumentError, IoError, LimitError, python_error
from ._lib import (BF_MAX_RANK, DEVICE_KINDS, LOAD_INCOMPLETE, BfConfig, BfExplainOptions,
                   BfRunOptions, cstr, lib, new, split_ref, take_string, text)
from ._train import Training, gradcheck_options

_LIMITS = ("max_session_bytes", "max_tensor_elements", "max_page_bytes", "max_blocks",
           "max_json_depth", "confine_files", "deterministic_reduce")


class _Context:
    """A bf_context and the configuration it was made with."""

    def __init__(self, threads, gpu, limits):
        cfg = new(BfConfig)  # spare room after it: see _lib.new
        lib.bf_config_init(ctypes.byref(cfg))
        cfg.threads = threads or 0
        cfg.disable_gpu = 0 if gpu else 1
        for name, value in limits.items():
            setattr(cfg, name, int(value))
        self.ptr = ctypes.c_void_p()
        err = _errors.new_error()
        _errors.check(lib.bf_context_new(ctypes.byref(cfg), ctypes.byref(self.ptr),
                                         ctypes.byref(err)), err)
        self.threads = lib.bf_context_config(self.ptr).contents.threads
        self._free = lib.bf_context_free  # still reachable while the interpreter shuts down

    def __del__(self):
        if getattr(self, "ptr", None):
            self._free(self.ptr)
            self.ptr = None


_contexts = {}
_contexts_lock = threading.Lock()


def context(threads=None, gpu=True, **limits):
    """The shared context for this configuration (made on first use)."""
    for name in limits:
        if name not in _LIMITS:
            raise TypeError(f"unknown option {name!r} (expected threads, gpu, "
                            f"{', '.join(_LIMITS)})")
    if threads is not None and (not isinstance(threads, int) or threads < 0):
        raise python_error(InvalidArgumentError, "bad_threads",
                           f"threads must be a non-negative int, got {threads!r}")
    key = (threads or 0, bool(gpu), tuple(sorted(limits.items())))
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _contexts[key] = _Context(threads, gpu, limits)
        return ctx


class PortInfo(NamedTuple):
    """A port's inferred dtype (None: unknown) and shape (None: unknown rank; None dims)."""
    dtype: str | None
    shape: tuple | None


class _CheckResult(NamedTuple):
    problems: list
    shapes: dict  # "block:port" -> PortInfo, output ports


class CheckResult(_CheckResult):
    """What Page.check() found: every problem (errors and warnings) and the inferred shapes.

    A 2-tuple (problems, shapes) as before: `shapes` maps every output port, "block:port", to
    its PortInfo. `inputs` (an attribute, not a tuple item) maps every input port the same way,
    "block:port" -> PortInfo (what arrives there: unknown when it is not connected or its source
    has a problem), and `sources` maps each input port to its link ("block" or "block:port") or
    None when it is not connected.
    """

    def __new__(cls, problems, shapes, inputs=None, sources=None):
        self = super().__new__(cls, problems, shapes)
        self.inputs = dict(inputs or {})
        self.sources = dict(sources or {})
        return self

    @property
    def ok(self):
        """True when no problem is an error (warnings allowed)."""
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self):
        return [p for p in self.problems if p.severity == "error"]


def _json_default(v):
    if hasattr(v, "tolist"):  # numpy arrays and scalars (np.int64, np.bool_, ...)
        return v.tolist()
    raise TypeError(f"{type(v).__name__} is not a JSON value")


def _json_value(value):
    """A Python value as the JSON text the editing calls take (numpy accepted); None stays None
    (NULL: "back to the default" for an attribute, "remove" for a layout)."""
    if value is None:
        return None
    return json.dumps(value, default=_json_default, allow_nan=False).encode("utf-8")


def _port_info(d):
    shape = d.get("shape")
    return PortInfo(d.get("dtype"), None if shape is None else tuple(shape))


_take_string = take_string
_split_fetch = split_ref


class Page(Training):
    """A loaded page with its session: check it, feed it, change it, run it, train it
    (step, train, variables, reset, save_state, build_gradients: see _train.py).

    Made by blockflow.load() or blockflow.loads(); close() (or a `with` block, or the garbage
    collector) frees it.
    """

    def __init__(self, ctx, page_ptr, warnings=(), path=None):
        self._ctx = ctx
        self._path = path  # absolute path of the file it was loaded from (save()'s default)
        self._s = ctypes.c_void_p()
        self._lock = threading.RLock()
        self._placeholder_dtypes = None
        self._fed = {}            # placeholder id -> the numpy array its feed borrows
        self._stepping = False  # inside a step loop: only reads are allowed (see _session)
        self.history = None     # the History of the latest train() (_train.py)
        self._free = lib.bf_session_free
        self.warnings = list(warnings)  # problems the loader reported that were not errors
        err = _errors.new_error()
        # bf_session_new owns the page from here on, on failure too.
        _errors.check(lib.bf_session_new(ctx.ptr, page_ptr, ctypes.byref(self._s),
                                         ctypes.byref(err)), err)

    # ---- life ----------------------------------------------------------------------------
    def close(self):
        """Free the session, its page and its results. Further calls raise. Idempotent."""
        with self._lock:
            if self._s:
                self._session(change=True)  # not from a train() callback
                self._free(self._s)
                self._s = ctypes.c_void_p()
                self._fed.clear()  # the session no longer reads them

    def __del__(self):
        if getattr(self, "_s", None):
            self._free(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _session(self, change=False):
        """The bf_session; change=True for a call that runs, edits or changes state, which a
        train() callback (running while the C step loop waits for it) must not make."""
        if not self._s:
            raise python_error(InvalidArgumentError, "closed", "the page is closed")
        if change and self._stepping:
            raise python_error(InvalidArgumentError, "busy",
                               "the page is in the middle of a step loop: a train() callback "
                               "may read (variables(), state(), step_count, save_state()) but "
                               "not run, edit or change the page; return True to stop first")
        return self._s

    def __repr__(self):
        if not self._s:
            return "<blockflow.Page (closed)>"
        return f"<blockflow.Page {self.name!r}: {len(self.blocks)} blocks>"

    # ---- what the page is ----------------------------------------------------------------
    @property
    def _page(self):
        return lib.bf_session_page(self._session())

    @property
    def name(self):
        """The page's name; assigning it renames the page (invalidates nothing)."""
        return text(lib.bf_page_name(self._page))

    @name.setter
    def name(self, value):
        self._edit(lib.bf_session_set_name, cstr(value))

    @property
    def description(self):
        """The page's description; assignable, like name."""
        return text(lib.bf_page_description(self._page))

    @description.setter
    def description(self, value):
        self._edit(lib.bf_session_set_description, cstr(value))

    @property
    def file(self):
        """The page's file name ("" for a page loaded from a string)."""
        return text(lib.bf_page_file(self._page))

    @property
    def threads(self):
        """Kernel threads of the context this page runs in (fixed at load)."""
        return self._ctx.threads

    @property
    def blocks(self):
        """[{"id", "type", "outputs": [port names]}] in page order."""
        s, p = self._session(), self._page
        return [{"id": text(lib.bf_page_block_id(p, i)),
                 "type": text(lib.bf_page_block_type(p, i)),
                 "outputs": [text(lib.bf_session_block_output_name(s, i, j))
                             for j in range(lib.bf_session_block_output_count(s, i))]}
                for i in range(lib.bf_page_block_count(p))]

    @property
    def outputs(self):
        """The page's declared outputs ("block" or "block:port"): what run() fetches by default."""
        p = self._page
        return [text(lib.bf_page_output(p, i)) for i in range(lib.bf_page_output_count(p))]

    # ---- checking ----------------------------------------------------------------------------
    def check(self):
        """Validate the page and infer every port's dtype and shape, without running a kernel.

        Returns CheckResult(problems, shapes): every problem at once (a list of Problem, empty
        when the page is fine; an edited page's unconnected inputs and cycles included) and
        {"block:port": PortInfo(dtype, shape)} for every output port; .inputs the same for every
        input port, .sources their links. Unknown parts are None: the dtype, the shape (unknown
        rank) or single dims known only at run time (a Placeholder not yet fed has no shape).
        Read from bf_session_check_json, so it reflects the page as edited. Never raises for a
        bad page; see .ok.
        """
        with self._lock:
            doc = self._check_json()
            page = self.file
            problems = [_errors.problem_from_json(d, page) for d in doc["problems"]]
            shapes, inputs, sources = {}, {}, {}
            for block, b in doc["blocks"].items():
                for port, d in b["inputs"].items():
                    inputs[f"{block}:{port}"] = _port_info(d)
                    sources[f"{block}:{port}"] = d.get("source")
                for port, d in b["outputs"].items():
                    shapes[f"{block}:{port}"] = _port_info(d)
            return CheckResult(problems, shapes, inputs, sources)

    def _check_json(self):
        out = ctypes.c_void_p()
        err = _errors.new_error()
        _errors.check(lib.bf_session_check_json(self._session(True), ctypes.byref(out),
                                                ctypes.byref(err)), err)
        return json.loads(_take_string(out))

    def stats(self):
        """What the last run (or check) did, per block in page order: a list of dicts with id,
        type, device ("cpu", "gpu:0", "" when it did not run), note, ms, ran, reused, status."""
        with self._lock:
            s, p = self._session(), self._page
            out = []
            for i in range(lib.bf_page_block_count(p)):
                st = lib.bf_session_block_stats(s, i).contents
                out.append({"id": text(st.id), "type": text(st.type), "device": text(st.device),
                            "note": text(st.note), "ms": st.ms, "ran": bool(st.ran),
                            "reused": bool(st.reused),
                            "status": text(lib.bf_status_name(st.status))})
            return out

    # ---- changing ----------------------------------------------------------------------------
    # Each call below is one bf_session_* editing function: it succeeds, or raises the
    # blockflow.Error naming the block, port or attribute and changes nothing. Ids, ports and
    # sources are strings; attribute values and layouts are Python values (numpy accepted),
    # passed as JSON. Results stay valid for what an edit does not affect (see the module doc).
    def _edit(self, fn, *args):
        """Call one session-editing C function `fn(session, *args, err)` and raise its error.

        An edit may change what a Placeholder accepts, so the cached dtypes are dropped.
        """
        with self._lock:
            err = _errors.new_error()
            status = fn(self._session(True), *args, ctypes.byref(err))
            self._placeholder_dtypes = None
            _errors.check(status, err)

    def add_block(self, id, type, attrs=None, device=None, ui=None):
        """Add a block at the end of the page, its inputs unconnected (connect() them).

        attrs: {"name": value} (None: the defaults); device: "auto" (None), "cpu", "gpu",
        "gpu:N"; ui: its layout, any JSON value the page keeps as written (e.g. {"x": 10}).
        Raises SchemaError (bad or duplicate id, unknown type, bad device), AttrError, IoError
        (a file attribute that cannot be read).
        """
        self._edit(lib.bf_session_add_block, cstr(id), cstr(type), _json_value(attrs),
                   cstr(device), _json_value(ui))

    def remove_block(self, id):
        """Remove a block: the inputs it fed become unconnected, it leaves the page's outputs
        and its results are freed."""
        self._edit(lib.bf_session_remove_block, cstr(id))

    def rename_block(self, id, new_id):
        """Rename a block; every link and output naming it follows. Recomputes nothing."""
        self._edit(lib.bf_session_rename_block, cstr(id), cstr(new_id))

    def connect(self, block, port, source):
        """Connect input `port` of `block` to `source` ("block" or "block:port"), replacing any
        earlier link. A link that closes a cycle is allowed; check() reports it."""
        self._edit(lib.bf_session_connect, cstr(block), cstr(port), cstr(source))

    def disconnect(self, block, port):
        """Leave input `port` of `block` unconnected (nothing happens when it already is)."""
        self._edit(lib.bf_session_disconnect, cstr(block), cstr(port))

    def set_attr(self, block, attr, value):
        """Set one attribute of a block (a Python value: "SAME", [1, 2, 2, 1], True, ...), or
        with value=None take it back to its default.

        The next run recomputes that block and what depends on it, nothing else (nothing when
        the value is the one it has). Raises NotFoundError (no such block or attribute) or
        AttrError (bad value) and changes nothing.
        """
        self._edit(lib.bf_session_set_attr, cstr(block), cstr(attr), _json_value(value))

    def set_device(self, block, device):
        """Where a block runs: "auto", "cpu", "gpu" or "gpu:N" (recomputes it and downstream)."""
        self._edit(lib.bf_session_set_device, cstr(block), cstr(device))

    def set_ui(self, block, ui):
        """A block's layout (block None: the page's), any JSON value; None removes it.
        Recomputes nothing."""
        self._edit(lib.bf_session_set_ui, cstr(block), _json_value(ui))

    def set_outputs(self, outputs):
        """The page's outputs, what run() fetches by default: ["block" or "block:port", ...]."""
        if isinstance(outputs, (str, bytes)):
            raise TypeError("set_outputs takes a list of \"block\" or \"block:port\" strings")
        refs = [cstr(r) for r in outputs]
        arr = (ctypes.c_char_p * max(len(refs), 1))(*refs)
        self._edit(lib.bf_session_set_outputs, arr, len(refs))

    def edit(self, edits):
        """Apply a list of edits all or nothing (bf_session_apply_edits), each a dict with "op":

            {"op": "add_block", "id", "type", "attrs"?, "device"?, "ui"?}
            {"op": "remove_block", "id"}     {"op": "rename_block", "id", "new_id"}
            {"op": "connect", "block", "port", "source"}   {"op": "disconnect", "block", "port"}
            {"op": "set_attr", "block", "attr", "value"}   (value None: back to the default)
            {"op": "set_device", "block", "device"}  {"op": "set_ui", "block"?, "ui"}
            {"op": "set_outputs", "outputs": [...]}  {"op": "set_name", "name"}
            {"op": "set_description", "description"}

        A failing edit raises with its block, port and attribute, the message prefixed
        "edit N (op): " and .pointer "/N" (its index in the list); the page is then unchanged.
        """
        data = _json_value(list(edits))
        with self._lock:
            diags = lib.bf_diags_new()
            if not diags:
                raise MemoryError("blockflow: out of memory")
            try:
                err = _errors.new_error()
                status = lib.bf_session_apply_edits(self._session(True), data, len(data), diags,
                                                    ctypes.byref(err))
                self._placeholder_dtypes = None
                _errors.check(status, err, diags)
            finally:
                lib.bf_diags_free(diags)

    # ---- writing -----------------------------------------------------------------------------
    def to_json(self):
        """The page as canonical JSON text (bf_page_to_json): keys in a fixed order, only the
        attributes the page gives, layout kept, 2-space indentation, a final newline."""
        with self._lock:
            out = ctypes.c_void_p()
            err = _errors.new_error()
            _errors.check(lib.bf_page_to_json(self._page, ctypes.byref(out), ctypes.byref(err)),
                          err)
            return _take_string(out)

    def save(self, path=None):
        """Write to_json() to `path` (None: the file the page was loaded from), atomically: a
        temporary file in the same folder, fsync, then os.replace, so a failure leaves any older
        file as it was and never a partial one. An existing file keeps its permissions.
        Relative "file" attributes are written as given: saved elsewhere, they resolve against
        the new file's folder. Returns the path written. Raises IoError (with the system's reason), or
        InvalidArgumentError when path is None and the page was not loaded from a file.
        """
        if path is None:
            if self._path is None:
                raise python_error(InvalidArgumentError, "no_file",
                                   "this page was not loaded from a file: save(path)")
            path = self._path
        path = os.fspath(path)
        data = self.to_json().encode("utf-8")
        folder = os.path.dirname(os.path.abspath(path))
        tmp = None
        try:
            try:
                mode = os.stat(path).st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                       suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
            try:  # make the rename itself durable
                dfd = os.open(folder, os.O_RDONLY)
            except OSError:
                pass
            else:
                try:
                    os.fsync(dfd)
                except OSError:
                    pass
                finally:
                    os.close(dfd)
        except OSError as e:
            raise _io_error(path, f"cannot write the page: {e.strerror or e}") from e
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        return path

    def _placeholder_dtype(self, block):
        """The dtype a Placeholder declares (bf_dtype), from a check; cached until an edit."""
        if self._placeholder_dtypes is None:
            doc = self._check_json()
            self._placeholder_dtypes = {
                block_id: lib.bf_dtype_from_name(cstr(b["outputs"]["output"]["dtype"]))
                for block_id, b in doc["blocks"].items()
                if b["type"] == "Placeholder" and b["outputs"]["output"].get("dtype")}
        return self._placeholder_dtypes.get(block)

    def feed(self, block, value, *, cast="same_kind", copy=False):
        """Feed a Placeholder with an array (anything np.asarray takes). Blocks downstream are
        recomputed on the next run.

        Zero-copy: a C-contiguous, aligned, native-endian array of the Placeholder's dtype is
        lent to the page, not copied: the page reads it until this block is fed again or the
        page is closed (it keeps a reference), so do not change it in place meanwhile, or pass
        copy=True to give the page its own copy. Other arrays are copied once.
        cast: an array of another dtype is converted when numpy's casting rule allows it
        ("same_kind", the default: float64 feeds a float32 Placeholder, float never feeds int;
        "unsafe" converts anything; "no" refuses any difference). A bfloat16 Placeholder takes
        float32 arrays rounded to nearest even whatever the rule. Raises DtypeError.
        """
        with self._lock:
            s = self._session(True)
            want = self._placeholder_dtype(block) if cast != "no" else None
            t, keep = _tensor.feed_tensor(self._ctx.ptr, value, want=want, block=block,
                                          cast=cast, copy=copy)
            err = _errors.new_error()
            # The session takes t, on failure too (then it is freed at once).
            status = lib.bf_session_feed_tensor(s, cstr(block), t, ctypes.byref(err))
            _errors.check(status, err)
            self._fed[block] = keep  # the array the feed reads (None: the page's own copy)

    # ---- running -----------------------------------------------------------------------------
    def run(self, feeds=None, fetch=None, *, device="auto", threads=None, timeout=None,
            cast="same_kind"):
        """Feed, run what the fetches need and is not up to date, and return the results.

        feeds:   {"placeholder id": array}, fed first (as feed(): zero-copy when the array
                 allows it, converted as `cast` allows: numpy's "same_kind" by default).
        fetch:   "block", "block:port", or a list of them; None = the page's outputs.
        device:  "auto" (each block's own choice), "cpu" or "gpu" (for every block).
        threads: must equal the page's (the kernel pool belongs to the context, chosen at
                 blockflow.load(..., threads=N)); None = the page's.
        timeout: seconds; the run fails with TimedOutError after that long.
        Returns {fetch: numpy array}, arrays owned by the caller (writeable; later runs never
        change them). A result of 1 MiB or more is handed over without a copy, so a later run
        that fetches it again runs that block again (what it reads stays cached); smaller ones
        are copied and stay cached. Errors raise a blockflow.Error naming the block; completed
        blocks keep their results. Ctrl-C cancels the run.
        """
        if device not in DEVICE_KINDS:
            raise python_error(InvalidArgumentError, "bad_device",
                               f"device must be one of {', '.join(DEVICE_KINDS)}, "
                               f"got {device!r}")
        if threads is not None and threads != self._ctx.threads:
            raise python_error(
                InvalidArgumentError, "bad_threads",
                f"this page runs with {self._ctx.threads} kernel threads; the thread pool is "
                f"chosen when the page is loaded: blockflow.load(path, threads={threads})")
        with self._lock:
            s = self._session(True)
            for block, value in (feeds or {}).items():
                self.feed(block, value, cast=cast)
            names = [fetch] if isinstance(fetch, str) else (
                list(fetch) if fetch is not None else self.outputs)
            opts = new(BfRunOptions)
            lib.bf_run_options_init(ctypes.byref(opts))
            if fetch is not None:
                refs = [cstr(f) for f in names]
                opts.fetches = (ctypes.c_char_p * max(len(refs), 1))(*refs)
                opts.n_fetches = len(refs)
            opts.device = DEVICE_KINDS[device]
            opts.timeout_s = float(timeout or 0)
            diags = lib.bf_diags_new()
            if not diags:
                raise MemoryError("blockflow: out of memory")
            try:
                err = _errors.new_error()
                status = self._run_interruptible(s, opts, diags, err)
                _errors.check(status, err, diags)
                found = []
                for ref in names:
                    block, port = _split_fetch(ref)
                    t = lib.bf_session_output(s, cstr(block), cstr(port))
                    if not t:  # the run succeeded, so this is a library bug
                        raise python_error(_errors.InternalError, "no_output",
                                           f"no result for fetch {ref!r}", block=block)
                    found.append((ref, block, port, t))
                results, arrays = {}, {}  # arrays: tensor address -> its array (refs alias)
                for ref, block, port, t in found:
                    if t in arrays:  # "b" and "b:output": one tensor, a copy each
                        results[ref] = arrays[t].copy()
                    elif lib.bf_tensor_nbytes(t) >= _tensor.TAKE_MIN:
                        results[ref] = arrays[t] = _tensor.take(s, cstr(block), cstr(port))
                    else:
                        results[ref] = arrays[t] = _tensor.from_tensor(t)
                return results
            finally:
                lib.bf_diags_free(diags)

    # ---- teaching (runtime/teach.c) ----------------------------------------------------------
    def explain(self, block, index, port=None, max_terms=None, *, device="auto", timeout=None):
        """Where one output element of a convolution block comes from: the terms of its sum.

        Runs the block and its inputs (what is up to date is reused), then lists the products
        that make element `index` (a sequence of ints in the output's own layout) of output
        `port` (None: the first). max_terms: how many terms to list (None: 10000, -1: all);
        "sum" always covers every term. Returns bf_session_explain's JSON as a dict: "value",
        "terms" [{"a": {"tensor", "index", "value"}, "b": {...}}], "n_terms", "n_padded",
        "padded_taps" [{"h", "w", "a", "b"}] (where each padded tap fell, capped by max_terms
        as the terms are), "padding", "sum", "abs_sum", "max_abs_diff", ... Raises NotFoundError (block or port),
        UnsupportedError (no teaching view), InvalidArgumentError (index), or what run() raises.
        """
        if device not in DEVICE_KINDS:
            raise python_error(InvalidArgumentError, "bad_device",
                               f"device must be one of {', '.join(DEVICE_KINDS)}, "
                               f"got {device!r}")
        idx = [int(i) for i in index]
        if len(idx) > BF_MAX_RANK:
            raise python_error(InvalidArgumentError, "bad_index",
                               f"an index has at most {BF_MAX_RANK} entries", block=block)
        opts = new(BfExplainOptions)
        lib.bf_explain_options_init(ctypes.byref(opts))
        c_port = cstr(port)  # kept alive for the call: opts.port borrows it
        opts.port = c_port
        opts.max_terms = 0 if max_terms is None else int(max_terms)
        opts.device = DEVICE_KINDS[device]
        opts.timeout_s = float(timeout or 0)
        c_index = (ctypes.c_int64 * max(len(idx), 1))(*idx)
        with self._lock:
            s = self._session(True)
            out, err = ctypes.c_void_p(), _errors.new_error()
            status = self._interruptible(s, lambda: lib.bf_session_explain(
                s, cstr(block), c_index, len(idx), ctypes.byref(opts), ctypes.byref(out),
                ctypes.byref(err)))
            _errors.check(status, err)
            return json.loads(_take_string(out))

    def gradcheck(self, block, *, eps=None, tolerance=None, full_below=None, samples=None,
                  seed=None, compare_gpu=False, timeout=None):
        """Check a gradient block, or both gradients of a forward block, in float64 against
        central finite differences and the adjoint identity (bf_session_gradcheck).

        Options, None for the library's defaults: eps (relative step, 1e-2), tolerance (1e-6),
        full_below (check every element of tensors with at most this many, 4096), samples (else
        a seeded sample of this many, 256), seed (1), compare_gpu (also run the block on the
        CPU and the GPU), timeout (seconds, for the whole check). Returns the JSON as a dict;
        a failed check is {"pass": False, ...}, not an exception. Raises NotFoundError,
        UnsupportedError (not a gradient or forward block), or what run() raises.
        """
        opts = gradcheck_options(eps, tolerance, full_below, samples, seed, compare_gpu,
                                 timeout)
        with self._lock:
            s = self._session(True)
            out, err = ctypes.c_void_p(), _errors.new_error()
            status = self._interruptible(s, lambda: lib.bf_session_gradcheck(
                s, cstr(block), ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err)))
            _errors.check(status, err)
            return json.loads(_take_string(out))

    def add_gradients(self, forward_block, dy=None):
        """Add the gradient blocks of a forward block, as tf.gradients builds them (one edit:
        all or nothing). dy: the source of out_backprop ("block" or "block:port"), or None
        for a new Placeholder of the forward output's dtype and shape. Returns the ids made:
        {"dy": id, "gradients": {"filter": id, "input": id}, "blocks": [every new id]}.
        Raises NotFoundError, UnsupportedError (no gradient types), ShapeError (a shape not
        known before running), or what edit() raises.
        """
        with self._lock:
            out, err = ctypes.c_void_p(), _errors.new_error()
            status = lib.bf_session_add_gradients(self._session(True), cstr(forward_block),
                                                  cstr(dy), ctypes.byref(out),
                                                  ctypes.byref(err))
            self._placeholder_dtypes = None
            _errors.check(status, err)
            return json.loads(_take_string(out))

    @staticmethod
    def _run_interruptible(s, opts, diags, err):
        """bf_session_run on a helper thread; Ctrl-C here cancels it. Returns the status."""
        return Page._interruptible(
            s, lambda: lib.bf_session_run(s, ctypes.byref(opts), diags, ctypes.byref(err)))

    @staticmethod
    def _interruptible(s, call):
        """call() (a C call on session s returning a status) on a helper thread; Ctrl-C here
        cancels it with bf_session_cancel and raises KeyboardInterrupt once it has stopped."""
        box = {}

        def work():
            box["status"] = call()

        if threading.current_thread() is not threading.main_thread():
            work()  # signals only reach the main thread: nothing to wait for here
            return box["status"]
        # Wait on an Event, not on Thread.join(): in CPython 3.11 a KeyboardInterrupt inside
        # join() marks the thread stopped while it still runs (the bpo-45274 fix), and the
        # session would then be freed or reused under the running C call.
        finished = threading.Event()

        def work_then_signal():
            try:
                work()
            finally:
                finished.set()

        worker = threading.Thread(target=work_then_signal, name="blockflow-run", daemon=True)
        interrupted = False
        worker.start()
        while not finished.is_set():
            try:
                finished.wait(0.25)
            except KeyboardInterrupt:
                interrupted = True
                lib.bf_session_cancel(s)  # the session must not be left running: wait for it
        if interrupted:
            raise KeyboardInterrupt
        return box["status"]


def _io_error(path, message):
    return IoError(message, code="io_error", page=str(path),
                   problems=[_errors.Problem("error", "EIO", "io_error", "", "", "", message,
                                             text=f"{path}: {message}")],
                   text=f"{path}: {message}")


def _load(ctx, loader, *args, path=None):
    diags = lib.bf_diags_new()
    if not diags:
        raise MemoryError("blockflow: out of memory")
    try:
        page = ctypes.c_void_p()
        err = _errors.new_error()
        status = loader(ctx.ptr, *args, ctypes.byref(page), diags, ctypes.byref(err))
        _errors.check(status, err, diags)
        warnings = _errors.diags_list(diags)
    finally:
        lib.bf_diags_free(diags)
    return Page(ctx, page, warnings, path=path)


def load(path, *, incomplete=False, threads=None, gpu=True, **limits):
    """Load a page file and make its session.

    incomplete=True opens a page whose only problems are its wiring (inputs not connected,
    links or outputs naming nothing, cycles) for editing: check() then lists those problems,
    and a run refuses only the fetches that need a block with one. threads: kernel threads
    (None: one per CPU core). gpu=False never uses a GPU. Limits, as the CLI's options:
    max_session_bytes, max_tensor_elements, max_page_bytes, max_blocks, max_json_depth,
    confine_files. Raises a blockflow.Error whose .problems lists every problem of the page
    (IoError, ParseError with line and column, SchemaError, AttrError, ...).
    """
    ctx = context(threads, gpu, **limits)
    name = os.fspath(path)
    full = os.path.abspath(name)
    if not incomplete:
        return _load(ctx, lib.bf_page_load_file, cstr(name), path=full)
    # bf_page_load_file with flags: read the file here (as it does), then bf_page_parse.
    limit = lib.bf_context_config(ctx.ptr).contents.max_page_bytes
    try:
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise _io_error(name, "cannot read the page: not a regular file")
            if st.st_size > limit:
                message = (f"the page is {st.st_size} bytes, above the limit of {limit} "
                           "(bf_config.max_page_bytes)")
                raise LimitError(message, code="page_too_large", page=name,
                                 problems=[_errors.Problem("error", "ELIMIT", "page_too_large",
                                                           "", "", "", message,
                                                           text=f"{name}: {message}")],
                                 text=f"{name}: {message}")
            data = f.read(limit + 1)
    except OSError as e:
        raise _io_error(name, f"cannot read the page: {e.strerror or e}") from e
    folder = os.path.dirname(name) or "."
    return _load(ctx, lib.bf_page_parse, data, len(data), cstr(name), cstr(folder),
                 LOAD_INCOMPLETE, path=full)


def loads(page, *, name="<string>", dir=None, incomplete=False, threads=None, gpu=True,
          **limits):
    """Load a page from JSON text (str or bytes) or from a dict; `dir` resolves "file" attributes
    (default: the current folder). Otherwise as load(); save() then needs a path."""
    if isinstance(page, dict):
        page = json.dumps(page)
    data = cstr(page)
    ctx = context(threads, gpu, **limits)
    return _load(ctx, lib.bf_page_parse, data, len(data), cstr(name),
                 cstr(os.fspath(dir) if dir is not None else os.getcwd()),
                 LOAD_INCOMPLETE if incomplete else 0)


def blocks():
    """The block catalogue: one dict per block type (ports, dtypes, attributes, defaults)."""
    return _catalog(None)["blocks"]


def block(type_name):
    """The catalogue entry of one block type; NotFoundError if there is none."""
    return _catalog(type_name)


def _catalog(type_name):
    out = ctypes.c_void_p()
    err = _errors.new_error()
    _errors.check(lib.bf_block_catalog_json(cstr(type_name), ctypes.byref(out),
                                            ctypes.byref(err)), err)
    return json.loads(_take_string(out))


def devices():
    """A one-line description of the devices ("cpu: 2 threads, avx512; gpu: none ...")."""
    return text(lib.bf_context_devices(context().ptr))


def rank():
    """This process's rank in its MPI job (`mpirun -np K python3 script.py`); 0 in one process.
    Every rank of a job must make the same calls (load, run, step, save_state) in the same order:
    the library's collective calls pair them up. Rank 0 writes checkpoints."""
    return lib.bf_context_rank(context().ptr)


def size():
    """The number of ranks in this process's MPI job; 1 in one process."""
    return lib.bf_context_size(context().ptr)


def job():
    """A one-line description of the job ("one process", "Open MPI v4.1.4: rank 0 of 2")."""
    return text(lib.bf_context_job(context().ptr))
