"""Pages from Python: load, check, run, fetch, incremental re-runs, stats, life cycle, Ctrl-C."""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import blockflow
from conftest import identity_page

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def grad_page(padding="VALID"):
    """x (Placeholder) and dy (Placeholder) into a filter gradient, plus a Sum of the gradient."""
    return {"format": "blockflow.page", "version": 1, "name": "grad",
            "blocks": [
                {"id": "x", "type": "Placeholder", "attrs": {"dtype": "float32",
                                                             "shape": [1, 5, 5, 1]}},
                {"id": "dy", "type": "Placeholder", "attrs": {"dtype": "float32"}},
                {"id": "fs", "type": "Const", "attrs": {"dtype": "int32", "value": [3, 3, 1, 1]}},
                {"id": "dw", "type": "Conv2DBackpropFilter",
                 "inputs": {"input": "x", "filter_sizes": "fs", "out_backprop": "dy"},
                 "attrs": {"strides": [1, 1, 1, 1], "padding": padding}},
                {"id": "total", "type": "Sum", "inputs": {"input": "dw"}}],
            "outputs": ["dw"]}


X = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1)


def ran(page):
    return {s["id"]: "ran" if s["ran"] else "reused" if s["reused"] else "-"
            for s in page.stats()}


def test_load_example_and_run():
    page = blockflow.load(EXAMPLES / "filter_grad_same.json")
    assert page.name == "filter-gradient-same" and page.outputs == ["dw"]
    assert page.file.endswith("filter_grad_same.json")
    assert [b["id"] for b in page.blocks] == ["x", "fs", "dy", "dw"]
    assert page.blocks[3] == {"id": "dw", "type": "Conv2DBackpropFilter", "outputs": ["output"]}
    out = page.run()
    assert list(out) == ["dw"]
    assert out["dw"][:, :, 0, 0].tolist() == [[160, 210, 176], [250, 325, 270], [240, 310, 256]]
    assert repr(page) == "<blockflow.Page 'filter-gradient-same': 4 blocks>"


def test_every_example_page_runs():
    for path in sorted(EXAMPLES.glob("*.json")):
        page = blockflow.load(path)
        assert page.check().ok, path
        out = page.run()
        assert set(out) == set(page.outputs) and all(isinstance(a, np.ndarray)
                                                      for a in out.values())


def test_check_reports_shapes_and_unknowns():
    page = blockflow.loads(grad_page())
    result = page.check()
    assert result.ok and result.problems == []
    assert result.shapes["x:output"] == blockflow.PortInfo("float32", (1, 5, 5, 1))
    assert result.shapes["fs:output"] == ("int32", (4,))
    assert result.shapes["dy:output"] == ("float32", None)  # not fed yet: any shape
    assert result.shapes["dw:output"] == ("float32", (3, 3, 1, 1))  # from fs's value
    page.feed("dy", np.ones((1, 3, 3, 1), np.float32))
    assert page.check().shapes["dy:output"].shape == (1, 3, 3, 1)


def test_check_returns_every_problem_without_raising():
    doc = grad_page()
    doc["blocks"][3]["attrs"]["strides"] = [1, 1, 1]
    doc["blocks"][3]["attrs"]["data_format"] = "NHWC"
    doc["blocks"][0]["attrs"]["shape"] = [1, 5, 5]  # rank 3 input
    page = blockflow.loads(doc)
    result = page.check()
    assert not result.ok
    assert {(p.block, p.attr) for p in result.errors} >= {("dw", "strides")}
    assert all(p.severity == "error" and p.text.startswith("<string>: block") for p in
               result.errors)


def test_run_with_feeds_and_fetches():
    page = blockflow.loads(grad_page())
    out = page.run(feeds={"x": X, "dy": np.ones((1, 3, 3, 1), np.float32)},
                   fetch=["dw", "total:output", "fs"])
    assert list(out) == ["dw", "total:output", "fs"]
    assert out["total:output"].shape == () and out["total:output"] == out["dw"].sum()
    assert out["fs"].dtype == np.int32 and out["fs"].tolist() == [3, 3, 1, 1]
    assert list(page.run(fetch="total")) == ["total"]  # a single name is a list of one


def test_incremental_reruns():
    page = blockflow.loads(grad_page())
    dy = np.ones((1, 3, 3, 1), np.float32)
    first = page.run(feeds={"x": X, "dy": dy}, fetch=["dw", "total"])
    assert ran(page) == {"x": "ran", "dy": "ran", "fs": "ran", "dw": "ran", "total": "ran"}
    page.run(fetch=["dw", "total"])  # nothing changed: everything reused
    assert ran(page) == {"x": "reused", "dy": "reused", "fs": "reused", "dw": "reused",
                         "total": "reused"}
    page.feed("dy", 2 * dy)  # a feed recomputes what is downstream of it, only
    second = page.run(fetch=["dw", "total"])
    assert ran(page) == {"x": "reused", "dy": "ran", "fs": "reused", "dw": "ran", "total": "ran"}
    np.testing.assert_array_equal(second["dw"], 2 * first["dw"])
    page.set_attr("dw", "padding", "SAME")  # so dy must now be 5x5
    page.feed("dy", np.ones((1, 5, 5, 1), np.float32))
    page.run(fetch="total")
    assert ran(page) == {"x": "reused", "dy": "ran", "fs": "reused", "dw": "ran", "total": "ran"}
    # numpy values are accepted; setting the value an attribute already has changes nothing
    page.set_attr("dw", "strides", np.array([1, 1, 1, 1]))
    same = page.run(fetch="dw")
    assert ran(page)["dw"] == "reused" and ran(page)["x"] == "reused"
    page.set_attr("dw", "strides", [1, 2, 2, 1])
    page.set_attr("dw", "strides", [1, 1, 1, 1])  # changed and back: recomputed
    same = page.run(fetch="dw")
    assert ran(page)["dw"] == "ran" and ran(page)["x"] == "reused"
    assert same["dw"][:, :, 0, 0].tolist() == [[160, 210, 176], [250, 325, 270], [240, 310, 256]]


def test_results_are_owned_copies():
    """A returned array stays valid and unchanged after later runs, feeds and close()."""
    page = blockflow.loads(identity_page())
    a = page.run(feeds={"x": np.full(1000, 1, np.float32)})["y"]
    b = page.run(feeds={"x": np.full(1000, 2, np.float32)})["y"]
    page.close()
    assert a.flags.owndata and a.flags.writeable and (a == 1).all() and (b == 2).all()
    a[0] = 5  # writeable, and nobody else's memory


def test_feed_lends_the_array_and_copy_true_copies_it():
    """A C-contiguous array of the Placeholder's dtype is lent, not copied (the page reads it
    while fed, and keeps it alive); copy=True, another dtype or a non-contiguous view copy."""
    import gc
    import weakref
    page = blockflow.loads(identity_page())
    x = np.zeros(4, np.float32)
    page.feed("x", x)
    x[:] = 7
    assert page.run()["y"].tolist() == [7, 7, 7, 7]  # the placeholder's output is x itself
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is not None  # the page keeps what it reads
    page.feed("x", np.ones(4, np.float32))
    gc.collect()
    assert ref() is None  # fed again: let go
    for x, copy in ((np.zeros(4, np.float32), True), (np.zeros(4, np.float64), False),
                    (np.zeros(8, np.float32)[::2], False)):
        page.feed("x", x, copy=copy)
        x[:] = 7
        assert page.run()["y"].tolist() == [0, 0, 0, 0]


def test_large_results_are_handed_over_without_a_copy():
    """A result of TAKE_MIN bytes or more becomes a numpy array over the library's memory: its
    base owns the tensor, it is writeable, and later runs and close() leave it alone."""
    from blockflow import _tensor
    n = _tensor.TAKE_MIN // 4
    page = blockflow.loads(identity_page())
    a = page.run(feeds={"x": np.full(n, 1, np.float32)})["y"]
    assert isinstance(a.base, _tensor.Result) and not a.flags.owndata and a.flags.writeable
    b = page.run(feeds={"x": np.full(n, 2, np.float32)})["y"]
    page.run()
    assert ran(page)["y"] == "ran"  # handed over: fetching it again runs the block again
    page.close()
    a[0] = 5
    assert (a[1:] == 1).all() and (b == 2).all() and a[0] == 5


def test_stats_and_devices():
    page = blockflow.load(EXAMPLES / "filter_grad_same.json")
    page.run(device="cpu")
    st = {s["id"]: s for s in page.stats()}
    assert st["dw"]["device"] == "cpu" and st["dw"]["status"] == "OK" and st["dw"]["ms"] >= 0
    assert "cpu" in blockflow.devices()


def test_threads_belong_to_the_load():
    page = blockflow.load(EXAMPLES / "filter_grad_same.json", threads=1)
    assert page.threads == 1
    page.run(threads=1)
    with pytest.raises(blockflow.InvalidArgumentError, match="threads=3"):
        page.run(threads=3)
    assert blockflow.load(EXAMPLES / "filter_grad_same.json", threads=2).threads == 2


def test_close_and_context_manager():
    with blockflow.load(EXAMPLES / "filter_grad_same.json") as page:
        page.run()
    assert repr(page) == "<blockflow.Page (closed)>"
    page.close()  # idempotent
    with pytest.raises(blockflow.InvalidArgumentError, match="closed"):
        page.run()


def test_pages_in_threads():
    """Distinct pages run concurrently from threads (the GIL is released during runs)."""
    errors, results = [], []

    def work(k):
        try:
            page = blockflow.loads(identity_page("int64"))
            for i in range(20):
                results.append(page.run(feeds={"x": np.full(8, k * 100 + i, np.int64)})["y"][0]
                               == k * 100 + i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80 and all(results)


def test_one_page_from_many_threads_is_serialised():
    page = blockflow.loads(identity_page("int64"))
    errors = []

    def work(k):
        try:
            for i in range(20):
                v = k * 1000 + i
                assert page.run(feeds={"x": np.array([v], np.int64)})["y"][0] == v
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


HEAVY = {"format": "blockflow.page", "version": 1, "name": "heavy", "blocks": [
    {"id": "x", "type": "RandomNormal", "attrs": {"shape": [32, 128, 128, 64],
                                                  "dtype": "float64"}},
    {"id": "w", "type": "RandomNormal", "attrs": {"shape": [5, 5, 64, 64], "dtype": "float64"}},
    {"id": "y", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
    {"id": "s", "type": "Sum", "inputs": {"input": "y"}}], "outputs": ["s"]}


def test_gil_is_released_during_runs():
    """While one thread is inside a run, Python code in another keeps going."""
    page = blockflow.loads(HEAVY, threads=2)
    box = {}

    def run():
        try:
            page.run(timeout=1.0)
        except blockflow.TimedOutError as e:
            box["error"] = e

    worker = threading.Thread(target=run)
    worker.start()
    spins = 0
    while worker.is_alive():
        spins += 1
    worker.join()
    assert "error" in box and spins > 10000, spins


def test_timeout():
    page = blockflow.loads(HEAVY, threads=2)
    with pytest.raises(blockflow.TimedOutError) as e:
        page.run(timeout=0.2)
    assert e.value.code == "timeout"
    assert page.run(fetch="w")["w"].shape == (5, 5, 64, 64)  # still usable


CTRL_C = r"""
import json, os, signal, threading, time, sys
import blockflow
page = blockflow.loads(json.loads(sys.argv[1]), threads=2)

def impatient_user():  # Ctrl-C twice: the second must not abandon the run being cancelled
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)

timer = threading.Timer(1.0, impatient_user)
timer.start()
t0 = time.monotonic()
try:
    page.run()
    print(json.dumps({"interrupted": False}))
    sys.exit()
except KeyboardInterrupt:
    stopped = time.monotonic() - t0
try:  # when the run stopped before the second Ctrl-C, that one lands here
    timer.join()
    time.sleep(0.1)
except KeyboardInterrupt:
    pass
w = page.run(fetch="w")["w"]  # the page is still usable
print(json.dumps({"interrupted": True, "seconds": stopped, "w": list(w.shape)}))
"""


def test_ctrl_c_cancels_the_run():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", CTRL_C, json.dumps(HEAVY)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["interrupted"] and result["w"] == [5, 5, 64, 64]
    # The whole run takes over 5 s on two cores; cancelled, it returns soon after the signal.
    assert result["seconds"] < 4.0, result
