"""Training from Python: steps, the variables, reset, checkpoints, whole-page gradients.

These are Page methods (Page derives from Training); they wrap the "Training" section of
include/blockflow.h (runtime/state.c, runtime/grad.c, runtime/grad_check.c).

A *step* runs the page once together with its update blocks (ApplyGradientDescent, ...) and
then commits, all at once: every Variable takes its new value, every dataset moves to its next
batch, the step count grows by one. Every read in a step sees the values of the start of the
step, so the loss a step reports is the loss *before* that step's update. A failed or
cancelled step commits nothing.

    page.build_gradients("loss", optimizer="sgd:0.1")   # adds the backward pass and updates
    history = page.train(steps=100, callback=lambda step, m: print(step, m["loss"]))
    page.variables()["w"]                               # a numpy copy of Variable w
    page.save_state("ckpt.npz"); page.reset(); page.load_state("ckpt.npz")

Threads, callbacks and Ctrl-C. As Page.run() does, step() and train() run the C step loop on
a helper thread while the calling (main) thread waits, so Ctrl-C reaches Python. The C loop
calls back after every committed step; train() hands each call over to the waiting thread
and runs your callback *there*, so the callback runs in the thread that called train() (your
main thread: plotting and printing behave as usual) while the C loop waits for its answer.
The callback may read the page (variables(), state(), step_count, save_state(), outputs of
the last step via the metrics), but not run, edit or reset it: those raise
InvalidArgumentError "busy" (return True to stop first). Ctrl-C, whether it lands while a
step runs or while your callback runs, calls bf_session_cancel: the step in flight commits
nothing, so the page is left exactly at the end of its last committed step, and train()
raises KeyboardInterrupt once the C loop has returned. page.history keeps what was recorded
up to there.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import queue
import threading

from . import _errors, _tensor
from ._errors import InvalidArgumentError, NotFoundError, python_error
from ._lib import (DEVICE_KINDS, STEP_CB, BfGradcheckOptions, BfGradOptions, BfStepOptions,
                   cstr, lib, new, split_ref, take_string, text)

_MAX_STEPS = 1 << 62  # "until the callback or the epoch count stops it"


def gradcheck_options(eps=None, tolerance=None, full_below=None, samples=None, seed=None,
                      compare_gpu=False, timeout=None):
    """A BfGradcheckOptions from keyword values (None: the library's default), checked."""
    opts = new(BfGradcheckOptions)
    lib.bf_gradcheck_options_init(ctypes.byref(opts))
    for name, value in (("eps", eps), ("tolerance", tolerance)):
        if value is not None:
            if not value > 0:
                raise python_error(InvalidArgumentError, "bad_option",
                                   f"{name} must be a positive number, got {value!r}")
            setattr(opts, name, float(value))
    for name, value in (("full_below", full_below), ("samples", samples), ("seed", seed)):
        if value is not None:
            if int(value) <= 0:
                raise python_error(InvalidArgumentError, "bad_option",
                                   f"{name} must be a positive integer, got {value!r}")
            setattr(opts, name, int(value))
    opts.compare_gpu = 1 if compare_gpu else 0
    opts.timeout_s = float(timeout or 0)
    return opts


class History(dict):
    """What train() recorded: {metric: [value after step 1, 2, ...]}, one list per metric in
    the order asked for, and .steps, the step count after each of those steps (the session's
    count, so a second train() goes on from where the first stopped).

    A metric's value is the first element of the fetched tensor as a float: the value itself
    for a scalar loss (NaN for an empty tensor). It is computed during the step from the
    start-of-step values, so history["loss"][k] is the loss the (k+1)-th step descended from.
    A dict of lists, as Keras' History.history, so plotting is plt.plot(h.steps, h["loss"]).
    """

    def __init__(self, names):
        super().__init__((name, []) for name in names)
        self.steps = []

    def _add(self, step, values):
        self.steps.append(step)
        for name, value in zip(self, values):
            self[name].append(value)

    def __repr__(self):
        return f"History(steps={self.steps!r}, {dict.__repr__(self)})"


class _Call:
    """One on_step call handed from the C loop's thread to the thread waiting in train()."""

    def __init__(self, step, metrics):
        self.step = step
        self.metrics = metrics
        self.stop = True  # until answered
        self.answered = threading.Event()

    def answer(self, stop):
        self.stop = stop
        self.answered.set()


class Training:
    """The training half of Page (see the module docstring). Relies on Page's _lock,
    _session(), _ctx, _interruptible() and outputs."""

    # ---- stepping -----------------------------------------------------------------------
    @property
    def step_count(self):
        """Steps committed since the page was loaded, reset() or load_state()."""
        with self._lock:
            return int(lib.bf_session_step_count(self._session()))

    def step(self, n=1, fetches=None, *, feeds=None, device="auto", timeout=None):
        """Run `n` training steps (each one run of the page with its update blocks, then the
        commit) and return the last step's fetched outputs as {ref: numpy array}.

        fetches: "block", "block:port" or a list of them, read from the last step; None = the
        page's outputs (its loss and metrics); [] = nothing. Like every read in a step they
        were computed from the start-of-step values: the loss returned is the one the last
        step descended from. feeds: {"placeholder": array}, fed first (the same batch for
        every step). device: "auto", "cpu" or "gpu" for every block. timeout: seconds per
        step. Errors raise the blockflow.Error naming the block (the failing step commits
        nothing; the steps before it stay committed). Ctrl-C cancels the step in flight,
        which commits nothing, and raises KeyboardInterrupt.
        """
        n = _count("n", n)
        with self._lock:
            s = self._session(True)
            for block, value in (feeds or {}).items():
                self.feed(block, value)
            refs = _refs(fetches, self.outputs)
            self._step_loop(s, n, refs if fetches is not None else None, device, timeout, None)
            out = {}
            for ref in refs:
                block, port = split_ref(ref)
                t = lib.bf_session_output(s, cstr(block), cstr(port))
                if not t:  # the step succeeded, so this is a library bug
                    raise python_error(_errors.InternalError, "no_output",
                                       f"no result for fetch {ref!r}", block=block)
                out[ref] = _tensor.from_tensor(t)
            return out

    def train(self, steps=None, epochs=None, callback=None, metrics=None, *, feeds=None,
              device="auto", timeout=None):
        """Run training steps until `steps` steps are done, `epochs` epochs of the page's
        dataset are done, or `callback` returns True, whichever comes first; returns the
        History ({metric: [value per step]}, .steps) of the steps it ran.

        steps:    how many steps to run now (not a total).
        epochs:   how many epochs of the page's first dataset (in page order) to run: steps
                  go on until its cursor's epoch has grown by `epochs` (from mid-epoch, the
                  first one is the rest of the current epoch). The page needs a dataset.
        callback: callback(step, metrics) after each committed step, with `step` the step
                  count (1 after the first step ever) and `metrics` {name: float} as in the
                  History; returning True stops after this step. It runs in the calling
                  thread while the step loop waits (see the module docstring); an exception
                  it raises stops training and is raised by train() once the loop stopped.
        metrics:  what to record, "block", "block:port" or a list; None = the page's outputs.
        feeds, device, timeout: as step().

        page.history is the same History, filled as the steps commit, so after Ctrl-C
        (KeyboardInterrupt, raised once the step in flight was cancelled: the page stays at
        its last committed step) or an error it still holds every step that was committed.
        """
        if steps is None and epochs is None:
            raise TypeError("train() needs steps=N, epochs=N, or both")
        n = _MAX_STEPS if steps is None else _count("steps", steps)
        if epochs is not None:
            epochs = _count("epochs", epochs)
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        with self._lock:
            s = self._session(True)
            for block, value in (feeds or {}).items():
                self.feed(block, value)
            refs = _refs(metrics, self.outputs)
            cursor_of, target, last = None, None, None
            if epochs is not None:
                cursor_of = self._dataset()
                last = self._read(s, cursor_of)
                target = int(last[0]) + epochs
            history = self.history = History(refs)

            def on_step(step, values):
                """In the C loop's thread: record, then decide whether to stop."""
                nonlocal last
                history._add(step, values)
                if cursor_of is None:
                    return False
                cursor = self._read(s, cursor_of)
                if (cursor == last).all():  # a dataset that ran moved on: this one did not
                    raise python_error(
                        InvalidArgumentError, "dataset_idle",
                        f"the dataset did not advance: nothing a step computes reads it, "
                        f"so epochs={epochs} would never end (use steps=N)", block=cursor_of)
                last = cursor
                return int(cursor[0]) >= target

            user = None
            if callback is not None:
                def user(step, values):
                    return bool(callback(step, dict(zip(refs, values))))
            self._step_loop(s, n, refs if metrics is not None else None, device, timeout,
                            on_step, user)
            return history

    def _step_loop(self, s, n, refs, device, timeout, on_step, user=None):
        """bf_session_step(n) with fetches `refs` (None: the page's outputs), on a helper thread
        when called from the main thread. on_step(step, values) runs in the C loop's thread,
        user(step, values) in this one; either returning True stops after that step."""
        if device not in DEVICE_KINDS:
            raise python_error(InvalidArgumentError, "bad_device",
                               f"device must be one of {', '.join(DEVICE_KINDS)}, "
                               f"got {device!r}")
        opts = new(BfStepOptions)
        lib.bf_step_options_init(ctypes.byref(opts))
        if refs is not None:
            c_refs = [cstr(r) for r in refs]
            opts.fetches = (ctypes.c_char_p * max(len(c_refs), 1))(*c_refs)
            opts.n_fetches = len(c_refs)
        opts.device = DEVICE_KINDS[device]
        opts.timeout_s = float(timeout or 0)
        threaded = threading.current_thread() is threading.main_thread()
        calls = queue.Queue()   # _Call, or `done` once the C loop returned
        done = object()
        failure = []            # an exception raised by on_step or user (the first one)
        stopping = threading.Event()  # set by this thread on Ctrl-C: answer "stop" at once

        def c_on_step(step, values, n_values, _user):
            # Called by the C loop; an exception must never go back into C.
            try:
                vals = [float(values[i]) for i in range(n_values)]
                stop = bool(on_step(step, vals)) if on_step else False
                if user is not None and not stop and not stopping.is_set():
                    if not threaded:
                        stop = user(step, vals)
                    else:
                        call = _Call(step, vals)
                        calls.put(call)
                        while not call.answered.wait(0.1):
                            if stopping.is_set():
                                return 1
                        stop = call.stop
                return 1 if stop or stopping.is_set() else 0
            except BaseException as e:  # noqa: B902 - handed to the caller of train()
                failure.append(e)
                return 1

        if on_step is not None or user is not None:
            cb = STEP_CB(c_on_step)  # kept alive by this frame for the whole C call
            opts.on_step = cb
        diags = lib.bf_diags_new()
        if not diags:
            raise MemoryError("blockflow: out of memory")
        err = _errors.new_error()
        box = {}
        self._stepping = True
        try:
            def call():
                return lib.bf_session_step(s, n, ctypes.byref(opts), diags, ctypes.byref(err))

            if not threaded or user is None:
                # No callback to run here: Page._interruptible waits (and cancels on Ctrl-C).
                status = self._interruptible(s, call)
            else:
                def work():
                    try:
                        box["status"] = call()
                    finally:
                        calls.put(done)

                worker = threading.Thread(target=work, name="blockflow-step", daemon=True)
                interrupted = False
                current = None
                worker.start()
                while True:
                    try:
                        item = calls.get(timeout=0.25)
                        if item is done:
                            break
                        current = item
                        stop = True
                        try:
                            if not interrupted and not failure:
                                stop = user(item.step, item.metrics)
                        except KeyboardInterrupt:
                            raise
                        except BaseException as e:  # noqa: B902 - raised after the loop
                            failure.append(e)
                        item.answer(stop)
                        current = None
                    except queue.Empty:
                        continue
                    except KeyboardInterrupt:
                        # Stop the loop, whatever it is doing, and wait for it to return:
                        # the session must not be used or freed under a running C call.
                        interrupted = True
                        stopping.set()
                        lib.bf_session_cancel(s)
                        if current is not None:
                            current.answer(True)
                            current = None
                if interrupted:
                    raise KeyboardInterrupt
                status = box["status"]
            if failure:
                raise failure[0]
            _errors.check(status, err, diags)
        finally:
            self._stepping = False
            lib.bf_diags_free(diags)

    # ---- state ----------------------------------------------------------------------------
    def _state_ids(self, kind=None):
        """Ids of the stateful blocks in page order; kind "variable" or "cursor" filters by
        what the block type's catalogue entry says its state is."""
        s = self._session()
        ids = [text(lib.bf_session_state_id(s, i)) for i in range(lib.bf_session_state_count(s))]
        if kind is None:
            return ids
        types = {b["id"]: b["type"] for b in self.blocks}
        return [i for i in ids if _state_kind(types[i]) == kind]

    def _dataset(self):
        ids = self._state_ids("cursor")
        if not ids:
            raise python_error(InvalidArgumentError, "no_dataset",
                               "train(epochs=...) needs a dataset block on the page (a "
                               "Dataset); use steps=N")
        return ids[0]

    def _read(self, s, block, with_dtype=False):
        """A numpy copy of one block's state (bf_session_read_state); with_dtype: and its
        bf_dtype, (bf_dtype, array)."""
        t, err = ctypes.c_void_p(), _errors.new_error()
        with _naming([block]):
            _errors.check(lib.bf_session_read_state(s, cstr(block), ctypes.byref(t),
                                                    ctypes.byref(err)), err)
        try:
            arr = _tensor.from_tensor(t)
            return (lib.bf_tensor_dtype(t), arr) if with_dtype else arr
        finally:
            lib.bf_tensor_free(t)

    def variables(self):
        """{id: numpy array} for every Variable in page order (an optimizer's slots, such as
        momentum's accumulators, included), each a copy: changing it changes nothing on the
        page (set_variable() does). bfloat16 Variables come back as numpy_dtype() says."""
        with self._lock:
            s = self._session()
            return {i: self._read(s, i) for i in self._state_ids("variable")}

    def state(self):
        """{id: numpy array} for every stateful block in page order: the Variables' values
        and each dataset's cursor, int64 [epoch, batch index] (what save_state() writes)."""
        with self._lock:
            s = self._session()
            return {i: self._read(s, i) for i in self._state_ids()}

    def set_variable(self, id, value):
        """Set Variable `id` to `value` (anything np.asarray takes, the Variable's shape), or
        move a dataset's cursor ([epoch, batch index]); what depends on it is recomputed by the
        next run or step. A value of another float or int
        dtype is converted to the Variable's when numpy calls that a same-kind cast (float64
        to float32: yes; float to int: no). Raises NotFoundError (no such block),
        InvalidArgumentError (a block without state), ShapeError, DtypeError."""
        import numpy as np
        with self._lock:
            s = self._session(True)
            dtype, current = self._read(s, id, with_dtype=True)
            arr = np.asarray(value)
            if arr.dtype != current.dtype and arr.dtype.kind in "fiu" \
                    and np.can_cast(arr.dtype, current.dtype, casting="same_kind"):
                arr = arr.astype(current.dtype)
            # want: a bfloat16 Variable takes float32 arrays, rounded (without ml_dtypes it
            # also reads back as float32).
            t = _tensor.to_tensor(self._ctx.ptr, arr, want=dtype, block=id)
            try:
                err = _errors.new_error()
                _errors.check(lib.bf_session_write_state(s, cstr(id), t, ctypes.byref(err)),
                              err)
            finally:
                lib.bf_tensor_free(t)

    def reset(self):
        """Put every Variable back to its initial value (its initializer, seeded: the same
        numbers again), every dataset back to its first batch, and the step count to 0."""
        with self._lock:
            err = _errors.new_error()
            _errors.check(lib.bf_session_reset(self._session(True), ctypes.byref(err)), err)

    def save_state(self, path):
        """Write every state (Variables, dataset cursors) and the step count to one .npz file,
        atomically: numpy.load(path) has one array per block id and ".step" (int64). A
        bfloat16 Variable is written as float32. Returns the path. Raises IoError."""
        path = os.fspath(path)
        with self._lock:
            err = _errors.new_error()
            _errors.check(lib.bf_session_save_state(self._session(), cstr(path),
                                                    ctypes.byref(err)), err)
            return path

    def load_state(self, path):
        """Restore a save_state() file (or any numpy.savez archive of the same keys): all of it
        or nothing. Every array must name a stateful block of the same dtype and shape; blocks
        it does not name keep their state; ".step", when there, sets the step count.
        Raises IoError, ParseError, NotFoundError, DtypeError, ShapeError."""
        path = os.fspath(path)
        with self._lock:
            err = _errors.new_error()
            _errors.check(lib.bf_session_load_state(self._session(True), cstr(path),
                                                    ctypes.byref(err)), err)

    # ---- gradients --------------------------------------------------------------------------
    def build_gradients(self, loss, wrt=None, optimizer=None, *, data_parallel=False,
                        ranks=None):
        """Add the backward pass of the whole page, as tf.gradients builds it, and optionally
        the optimizer's update blocks (one edit: all or nothing).

        loss:      "block" or "block:port" (a non-scalar loss means its sum, as tf.gradients).
        wrt:       a Variable id or a list of them; None = every trainable Variable the loss
                   depends on.
        optimizer: None (gradients only), "sgd:LR", "momentum:LR:MOMENTUM", "adam:LR" or
                   "adam:LR:BETA1:BETA2:EPSILON".
        data_parallel: an AllReduce (mean) on every Variable's gradient, for a job of `ranks`
                   ranks (None: this job's, blockflow.size()); the page's data blocks marked
                   shard "batch" give each rank its part of the batch.
        Returns {"loss", "gradients": {variable: gradient ref}, "updates": {variable: update
        block}, "blocks": [every new id]} (and "all_reduce": {variable: block} when
        data_parallel). Raises NotFoundError, ShapeError, UnsupportedError
        (a block on the way without a gradient, named), InvalidArgumentError (bad optimizer
        text, a loss that depends on no Variable).
        """
        ids = [wrt] if isinstance(wrt, str) else (list(wrt) if wrt is not None else None)
        c_ids = None
        if ids is not None:
            c_ids = (ctypes.c_char_p * max(len(ids), 1))(*[cstr(i) for i in ids])
        with self._lock:
            out, err = ctypes.c_void_p(), _errors.new_error()
            opts = BfGradOptions(cstr(optimizer), 1 if data_parallel else 0, int(ranks or 0))
            status = lib.bf_session_build_gradients_opts(
                self._session(True), cstr(loss), c_ids, len(ids) if ids is not None else 0,
                ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
            self._placeholder_dtypes = None
            with _naming([loss] + (ids or [])):
                _errors.check(status, err)
            return json.loads(take_string(out))

    def check_gradients(self, loss, *, eps=None, tolerance=None, full_below=None, samples=None,
                        seed=None, timeout=None):
        """Check the gradient each update block applies against central finite differences of
        `loss`, in a float64 re-run of the page on the same batch (nothing is committed).

        Options, None for the library's defaults: eps (relative step, 1e-6), tolerance
        (1e-5), full_below (check every element of Variables with at most this many, 64),
        samples (else a seeded sample of this many, 32), seed (1), timeout (seconds, for the
        whole check). Returns {"loss", "pass", "tolerance", "eps", "variables": [{"variable",
        "gradient", "update", "n_elements", "n_checked", "max_rel_error", "worst_index",
        "fd", "analytic", "pass"}]}; a failed check is "pass": False, not an exception.
        Raises NotFoundError, InvalidArgumentError (no update block), or what step() raises.
        """
        opts = gradcheck_options(eps, tolerance, full_below, samples, seed, False, timeout)
        with self._lock:
            s = self._session(True)
            out, err = ctypes.c_void_p(), _errors.new_error()
            status = self._interruptible(s, lambda: lib.bf_session_check_gradients(
                s, cstr(loss), ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err)))
            with _naming([loss]):
                _errors.check(status, err)
            return json.loads(take_string(out))


@contextlib.contextmanager
def _naming(refs):
    """Fill in the block (and port) of a NotFoundError the library left without one, from the
    ref among `refs` that its message quotes: an unknown Variable or loss is then named like an
    unknown block anywhere else (e.block)."""
    try:
        yield
    except NotFoundError as e:
        if not e.block:
            ref = next((r for r in refs if r and f'"{r}"' in e.message), None)
            if ref is not None:
                e.block, port = split_ref(ref)
                e.port = port or ""
                e.problems = [p._replace(block=e.block, port=e.port) if not p.block else p
                              for p in e.problems]
        raise


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise python_error(InvalidArgumentError, "bad_count",
                           f"{name} must be a positive int, got {value!r}")
    return value


def _refs(fetches, default):
    if fetches is None:
        return list(default)
    return [fetches] if isinstance(fetches, str) else list(fetches)


_STATE_KINDS = {}


def _state_kind(type_name):
    """"variable", "cursor" or None: what the catalogue says a block type keeps."""
    if type_name not in _STATE_KINDS:
        out, err = ctypes.c_void_p(), _errors.new_error()
        _errors.check(lib.bf_block_catalog_json(cstr(type_name), ctypes.byref(out),
                                                ctypes.byref(err)), err)
        _STATE_KINDS[type_name] = json.loads(take_string(out)).get("state")
    return _STATE_KINDS[type_name]
