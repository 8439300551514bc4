"""Pages and sessions from Python: load, check, feed, set_attr, run, stats.

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
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import NamedTuple

from . import _errors, _tensor
from ._errors import InvalidArgumentError, python_error
from ._lib import DEVICE_KINDS, BfConfig, BfRunOptions, cstr, lib, text

_LIMITS = ("max_session_bytes", "max_tensor_elements", "max_page_bytes", "max_blocks",
           "max_json_depth", "confine_files")


class _Context:
    """A bf_context and the configuration it was made with."""

    def __init__(self, threads, gpu, limits):
        cfg = BfConfig()
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


class CheckResult(NamedTuple):
    """What Page.check() found: every problem (errors and warnings) and the inferred shapes."""
    problems: list
    shapes: dict  # "block:port" -> PortInfo

    @property
    def ok(self):
        """True when no problem is an error (warnings allowed)."""
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self):
        return [p for p in self.problems if p.severity == "error"]


def _json_value(value):
    """An attribute value as the JSON text bf_session_set_attr() takes (numpy accepted)."""
    def default(v):
        if hasattr(v, "tolist"):
            return v.tolist()
        raise TypeError(f"{type(v).__name__} is not an attribute value")
    return json.dumps(value, default=default)


def _split_fetch(ref):
    """"block" or "block:port" -> (block, port or None), split at the last colon as in C."""
    block, colon, port = ref.rpartition(":")
    return (block, port) if colon else (ref, None)


class Page:
    """A loaded page with its session: check it, feed it, change it, run it.

    Made by blockflow.load() or blockflow.loads(); close() (or a `with` block, or the garbage
    collector) frees it.
    """

    def __init__(self, ctx, page_ptr, warnings=()):
        self._ctx = ctx
        self._s = ctypes.c_void_p()
        self._lock = threading.RLock()
        self._placeholder_dtypes = None
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
                self._free(self._s)
                self._s = ctypes.c_void_p()

    def __del__(self):
        if getattr(self, "_s", None):
            self._free(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _session(self):
        if not self._s:
            raise python_error(InvalidArgumentError, "closed", "the page is closed")
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
        return text(lib.bf_page_name(self._page))

    @property
    def description(self):
        return text(lib.bf_page_description(self._page))

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
        when the page is fine) and {"block:port": PortInfo(dtype, shape)}, unknown parts None
        (a Placeholder not yet fed has no shape). Never raises for a bad page; see .ok.
        """
        with self._lock:
            s = self._session()
            diags = lib.bf_diags_new()
            if not diags:
                raise MemoryError("blockflow: out of memory")
            try:
                lib.bf_session_check(s, diags, None)
                problems = _errors.diags_list(diags)
            finally:
                lib.bf_diags_free(diags)
            return CheckResult(problems, self._shapes())

    def _shapes(self):
        s, p = self._session(), self._page
        shapes = {}
        for i in range(lib.bf_page_block_count(p)):
            st = lib.bf_session_block_stats(s, i).contents
            block = text(lib.bf_page_block_id(p, i))
            for j in range(min(st.n_outputs, 4)):
                port = text(lib.bf_session_block_output_name(s, i, j))
                dtype = _tensor.BF_NAME.get(st.dtype[j])
                rank = st.rank[j]
                shape = (None if rank < 0 or dtype is None else
                         tuple(d if d >= 0 else None for d in st.dims[j][:rank]))
                shapes[f"{block}:{port}"] = PortInfo(dtype, shape)
        return shapes

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
    def _edit(self, fn, *args):
        """Call one session-editing C function `fn(session, *args, err)` and raise its error.

        Every editing call is this one line plus its argument conversion (set_attr below; the
        live-page calls of issue #12 will be the same). An edit may change what a Placeholder
        accepts, so the cached dtypes are dropped.
        """
        with self._lock:
            err = _errors.new_error()
            status = fn(self._session(), *args, ctypes.byref(err))
            self._placeholder_dtypes = None
            _errors.check(status, err)

    def set_attr(self, block, attr, value):
        """Set one attribute of a block (a Python value: "SAME", [1, 2, 2, 1], True, ...).

        The next run recomputes that block and what depends on it, nothing else. Raises
        NotFoundError (no such block or attribute) or AttrError (bad value) and changes nothing.
        """
        self._edit(lib.bf_session_set_attr, cstr(block), cstr(attr), cstr(_json_value(value)))

    def _placeholder_dtype(self, block):
        """The dtype a Placeholder declares (bf_dtype), from a check's stats; cached."""
        if self._placeholder_dtypes is None:
            s, p = self._session(), self._page
            lib.bf_session_check(s, None, None)  # fills every source block's stats
            self._placeholder_dtypes = {
                text(lib.bf_page_block_id(p, i)): lib.bf_session_block_stats(s, i).contents.dtype[0]
                for i in range(lib.bf_page_block_count(p))
                if text(lib.bf_page_block_type(p, i)) == "Placeholder"}
        return self._placeholder_dtypes.get(block)

    def feed(self, block, value):
        """Feed a Placeholder with an array (anything np.asarray takes). The dtype must be the one
        the Placeholder declares (a float32 array may feed a bfloat16 one); the data is copied,
        so the array may change afterwards. Blocks downstream are recomputed on the next run."""
        with self._lock:
            s = self._session()
            want = None
            if getattr(value, "dtype", None) is not None and value.dtype.kind == "f" \
                    and value.dtype.itemsize == 4:
                want = self._placeholder_dtype(block)
            t = _tensor.to_tensor(self._ctx.ptr, value, want=want, block=block)
            try:
                err = _errors.new_error()
                _errors.check(lib.bf_session_feed(s, cstr(block), t, ctypes.byref(err)), err)
            finally:
                lib.bf_tensor_free(t)

    # ---- running -----------------------------------------------------------------------------
    def run(self, feeds=None, fetch=None, *, device="auto", threads=None, timeout=None):
        """Feed, run what the fetches need and is not up to date, and return the results.

        feeds:   {"placeholder id": array}, fed first (as feed()).
        fetch:   "block", "block:port", or a list of them; None = the page's outputs.
        device:  "auto" (each block's own choice), "cpu" or "gpu" (for every block).
        threads: must equal the page's (the kernel pool belongs to the context, chosen at
                 blockflow.load(..., threads=N)); None = the page's.
        timeout: seconds; the run fails with TimedOutError after that long.
        Returns {fetch: numpy array}, arrays owned by the caller. Errors raise a blockflow.Error
        naming the block; completed blocks keep their results. Ctrl-C cancels the run.
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
            s = self._session()
            for block, value in (feeds or {}).items():
                self.feed(block, value)
            names = [fetch] if isinstance(fetch, str) else (
                list(fetch) if fetch is not None else self.outputs)
            opts = BfRunOptions()
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
                results = {}
                for ref in names:
                    block, port = _split_fetch(ref)
                    t = lib.bf_session_output(s, cstr(block), cstr(port))
                    if not t:  # the run succeeded, so this is a library bug
                        raise python_error(_errors.InternalError, "no_output",
                                           f"no result for fetch {ref!r}", block=block)
                    results[ref] = _tensor.from_tensor(t)
                return results
            finally:
                lib.bf_diags_free(diags)

    @staticmethod
    def _run_interruptible(s, opts, diags, err):
        """bf_session_run on a helper thread; Ctrl-C here cancels it. Returns the status."""
        box = {}

        def work():
            box["status"] = lib.bf_session_run(s, ctypes.byref(opts), diags, ctypes.byref(err))

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


def _load(ctx, loader, *args):
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
    return Page(ctx, page, warnings)


def load(path, *, threads=None, gpu=True, **limits):
    """Load a page file and make its session.

    threads: kernel threads (None: one per CPU core). gpu=False never uses a GPU. Limits, as
    the CLI's options: max_session_bytes, max_tensor_elements, max_page_bytes, max_blocks,
    max_json_depth, confine_files. Raises a blockflow.Error whose .problems lists every problem
    of the page (IoError, ParseError with line and column, SchemaError, AttrError, ...).
    """
    ctx = context(threads, gpu, **limits)
    return _load(ctx, lib.bf_page_load_file, cstr(os.fspath(path)))


def loads(page, *, name="<string>", dir=None, threads=None, gpu=True, **limits):
    """Load a page from JSON text (str or bytes) or from a dict; `dir` resolves "file" attributes
    (default: the current folder). Otherwise as load()."""
    if isinstance(page, dict):
        page = json.dumps(page)
    data = cstr(page)
    ctx = context(threads, gpu, **limits)
    return _load(ctx, lib.bf_page_load_string, data, len(data), cstr(name),
                 cstr(os.fspath(dir) if dir is not None else os.getcwd()))


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
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.bf_string_free(out)


def devices():
    """A one-line description of the devices ("cpu: 2 threads, avx512; gpu: none ...")."""
    return text(lib.bf_context_devices(context().ptr))
