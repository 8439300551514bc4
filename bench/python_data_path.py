#!/usr/bin/env python3
"""The Python data path (issue 26): what a numpy array costs on its way through blockflow.

Measured in one run, medians of repeated timings (the machine may be shared and noisy: compare
ratios within a run, never numbers across runs):

  tiny      blockflow.ops.conv2d on a 1x5x5x1 input and a 3x3 filter: microseconds per call,
            against torch.nn.functional.conv2d on the same data (tensors made beforehand).
  vgg       blockflow.ops.conv2d_backprop_filter on VGG's conv1 (x [4,224,224,3],
            dy [4,224,224,64], SAME): the whole call, against the block's own kernel time in
            that same call (what `blockflow run` prints for the block; the session's stats),
            the median of the per-call ratios, and torch.nn.grad.conv2d_weight on NCHW tensors
            made beforehand.
  copy      a 51 MB float32 array through Page.run (Placeholder -> Identity, result handed
            over) against numpy's copy of it.
  shapes    every row of bench/shapes.json through blockflow.ops (random arrays of the row's
            shapes): each call against its block's kernel time in that call (median ratio).

  /usr/bin/python3 bench/python_data_path.py [--quick] [--only tiny,vgg,copy,shapes]
      [--threads N] [--clock wall|cpu] [--json FILE]

PYTHONPATH=python picks the repository's module and build/libblockflow.so.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
import blockflow  # noqa: E402
from blockflow import ops  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - the figures then leave PyTorch out
    torch = None


CLOCK = time.perf_counter  # --clock cpu: time.process_time (this process's CPU time)


def median_time(fn, repeat, number=1):
    """Median seconds of one call of fn over `repeat` timings of `number` calls each."""
    fn()  # warm: caches, first-touch, a session per signature
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        for _ in range(number):
            fn()
        times.append((CLOCK() - t0) / number)
    return statistics.median(times)


def single(fn, n):
    """Median seconds of n single calls of fn (each timed alone: on a shared machine, a loop's
    mean also counts the time other programs hold the core)."""
    fn()
    times = []
    for _ in range(n):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return statistics.median(times)


def paired(fn, op, repeat):
    """Per call of fn: its wall time and its block's kernel time (the same call), as medians
    (ms) and the median of the per-call ratio wall / kernel."""
    fn()
    walls, kernels, ratios = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        wall = (time.perf_counter() - t0) * 1e3
        k = block_ms(op)
        walls.append(wall)
        kernels.append(k)
        ratios.append(wall / k if k > 0 else float("inf"))
    return statistics.median(walls), statistics.median(kernels), statistics.median(ratios)


def block_ms(op):
    """The kernel time of the op's block in the last call: the stats of the most recently
    used cached session of that op."""
    for entry in reversed(list(ops._cache.values())):
        if entry.op == op.encode():
            ms = [s["ms"] for s in entry.page.stats() if s["id"] == op]
            if ms:
                return ms[0]
    return float("nan")


def bench_tiny(args, rng, res):
    x = rng.standard_normal((1, 5, 5, 1)).astype(np.float32)
    w = rng.standard_normal((3, 3, 1, 1)).astype(np.float32)
    n = 200 if args.quick else 2000
    call = lambda: ops.conv2d(x, w, [1, 1, 1, 1], "VALID")  # noqa: E731
    ours = median_time(call, 7, n)
    row = {"blockflow_us": ours * 1e6, "blockflow_single_call_median_us": single(call, n) * 1e6}
    if torch is not None:
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
        wt = torch.from_numpy(w.transpose(3, 2, 0, 1).copy())
        with torch.no_grad():
            tcall = lambda: F.conv2d(xt, wt)  # noqa: E731
            row["torch_us"] = median_time(tcall, 7, n) * 1e6
            row["torch_single_call_median_us"] = single(tcall, n) * 1e6
        got = ops.conv2d(x, w, [1, 1, 1, 1], "VALID")
        want = F.conv2d(xt, wt).numpy().transpose(0, 2, 3, 1)
        row["max_abs_diff_vs_torch"] = float(np.abs(got - want).max())
    res["tiny"] = row
    print(f"tiny 5x5 conv through blockflow.ops: {row['blockflow_us']:.1f} us/call in loops, "
          f"{row['blockflow_single_call_median_us']:.1f} us median single call"
          + (f"; PyTorch {row['torch_us']:.1f} / {row['torch_single_call_median_us']:.1f} us"
             if "torch_us" in row else ""))


def bench_vgg(args, rng, res):
    x = rng.standard_normal((4, 224, 224, 3)).astype(np.float32)
    dy = rng.standard_normal((4, 224, 224, 64)).astype(np.float32)
    sizes = [3, 3, 3, 64]
    call = lambda: ops.conv2d_backprop_filter(x, sizes, dy, [1, 1, 1, 1], "SAME")  # noqa: E731
    repeat = 5 if args.quick else 21
    total, kernel, ratio = paired(call, "Conv2DBackpropFilter", repeat)
    row = {"ops_ms": total, "kernel_ms": kernel, "ratio_ops_to_kernel": ratio}
    if torch is not None:
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
        dyt = torch.from_numpy(dy.transpose(0, 3, 1, 2).copy())
        f = lambda: torch.nn.grad.conv2d_weight(xt, (64, 3, 3, 3), dyt, padding=1)  # noqa: E731
        row["torch_ms"] = median_time(f, repeat) * 1e3
        got = call()
        want = f().numpy().transpose(2, 3, 1, 0)
        row["max_rel_diff_vs_torch"] = float(np.abs(got - want).max() / np.abs(want).max())
    res["vgg"] = row
    print(f"VGG conv1 filter gradient: blockflow.ops {row['ops_ms']:.2f} ms, its kernel "
          f"{kernel:.2f} ms (ratio {row['ratio_ops_to_kernel']:.2f})"
          + (f", PyTorch {row['torch_ms']:.2f} ms" if "torch_ms" in row else ""))


def bench_copy(args, rng, res):
    a = rng.standard_normal((32, 112, 112, 32)).astype(np.float32)  # 51.4 MB
    page = blockflow.loads({"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "x", "type": "Placeholder", "attrs": {"dtype": "float32"}},
        {"id": "y", "type": "Identity", "inputs": {"input": "x"}}], "outputs": ["y"]})
    repeat = 5 if args.quick else 15
    ours = median_time(lambda: page.run(feeds={"x": a}), repeat)
    numpy = median_time(lambda: a.copy(), repeat)
    kernel = statistics.median(
        [page.run(feeds={"x": a}) and next(s["ms"] for s in page.stats() if s["id"] == "y")
         for _ in range(repeat)])
    row = {"mb": a.nbytes / 1e6, "page_run_ms": ours * 1e3, "identity_kernel_ms": kernel,
           "numpy_copy_ms": numpy * 1e3}
    res["copy"] = row
    print(f"{row['mb']:.1f} MB Placeholder -> Identity via Page.run: {row['page_run_ms']:.2f} ms "
          f"(the Identity's copy {kernel:.2f} ms); numpy's copy {row['numpy_copy_ms']:.2f} ms")


OP_FN = {
    "Conv2D": "conv2d", "Conv2DBackpropFilter": "conv2d_backprop_filter",
    "Conv2DBackpropInput": "conv2d_backprop_input",
    "DepthwiseConv2dNative": "depthwise_conv2d_native",
    "DepthwiseConv2dNativeBackpropFilter": "depthwise_conv2d_native_backprop_filter",
    "DepthwiseConv2dNativeBackpropInput": "depthwise_conv2d_native_backprop_input",
}


def out_shape(case):
    n, h, w, c = case["input"]
    fh, fw, _, m = case["filter"]
    s, d = case["strides"][1], case["dilations"][1]
    oc = c * m if case["depthwise"] else m
    if case["padding"] == "SAME":
        return [n, -(-h // s), -(-w // s), oc]
    eh, ew = (fh - 1) * d + 1, (fw - 1) * d + 1
    return [n, (h - eh) // s + 1, (w - ew) // s + 1, oc]


def bench_shapes(args, rng, res):
    cases = json.loads((HERE / "shapes.json").read_text())["cases"]
    rows = []
    for case in cases:
        x = rng.standard_normal(case["input"]).astype(np.float32)
        w = rng.standard_normal(case["filter"]).astype(np.float32)
        dy = rng.standard_normal(out_shape(case)).astype(np.float32)
        kw = dict(strides=case["strides"], padding=case["padding"],
                  dilations=case["dilations"])
        for op in case["ops"]:
            fn = getattr(ops, OP_FN[op])
            if op.endswith("BackpropFilter"):
                call = lambda: fn(x, case["filter"], dy, **kw)  # noqa: E731
            elif op.endswith("BackpropInput"):
                call = lambda: fn(case["input"], w, dy, **kw)  # noqa: E731
            else:
                call = lambda: fn(x, w, **kw)  # noqa: E731
            tiny = case["name"].startswith("tiny")
            repeat = 3 if args.quick else (9 if not tiny else 201)
            wall, kernel, ratio = paired(call, op, repeat)
            rows.append({"case": case["name"], "op": op, "ops_ms": wall, "kernel_ms": kernel,
                         "ratio": ratio})
            print(f"  {case['name']:<24} {op:<36} ops {wall:9.3f} ms  kernel {kernel:9.3f} ms"
                  f"  ratio {rows[-1]['ratio']:6.2f}", flush=True)
        ops.clear_cache()
    res["shapes"] = rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--only", default="tiny,vgg,copy,shapes")
    p.add_argument("--threads", type=int, default=None, help="PyTorch's threads (blockflow "
                   "uses one per core)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="tiny and copy: wall time, or this process's CPU time per call (less "
                        "disturbed by other programs on a shared machine)")
    args = p.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.threads is not None and torch is not None:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(26)
    res = {"library": blockflow.library_path, "devices": blockflow.devices(),
           "torch": torch.__version__ if torch is not None else None,
           "threads_torch": torch.get_num_threads() if torch is not None else None,
           "load_average": os.getloadavg()}
    print(f"library {res['library']}; {res['devices']}; PyTorch {res['torch']}; "
          f"load average {res['load_average'][0]:.1f}")
    for name in args.only.split(","):
        {"tiny": bench_tiny, "vgg": bench_vgg, "copy": bench_copy,
         "shapes": bench_shapes}[name](args, rng, res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
