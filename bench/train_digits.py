#!/usr/bin/env python3
"""train_digits.py - steps per second of examples/train/digits_cnn.json against the same model
in PyTorch eager on the CPU, measured interleaved (bench/RESULTS.md, "Training").

    /usr/bin/python3 bench/train_digits.py [BLOCKFLOW] [--rounds R] [--threads T] [--batches 32,128]

For each batch size the forward page examples/train/digits_cnn.forward.json is given that
batch, its backward pass and Adam(0.01) are built by `blockflow grad --loss loss` (as the
committed page was), and then, R times, alternating which goes first:
  - blockflow: `blockflow train PAGE --steps N --json` for N = 50 and N = 50 + S; the time of
    the S extra steps (the difference of the two runs' "seconds") is the steady-state step
    time, without loading, the first step's allocations or start-up;
  - PyTorch 1.13 eager, torch.set_num_threads(T): the same network (Conv2d 1->16 3x3 same,
    bias, ReLU, MaxPool 2x2, Linear 256->10, cross entropy, Adam(0.01)) on the same shuffled
    batches of the same .npy files, 20 warm-up steps, then S timed steps.
Prints the median step time of each (ms), steps/s, and ours / PyTorch's per batch size, plus
the peak tensor memory of our step at each batch ("peak_bytes" of train --json) and the run-
time overhead per block measured on a page of 200 tiny blocks (bench_overhead below).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "examples", "train", "data")


def make_page(prog, batch, folder):
    with open(os.path.join(ROOT, "examples", "train", "digits_cnn.forward.json")) as f:
        page = json.load(f)
    for b in page["blocks"]:
        if b["id"] == "data":
            b["attrs"]["batch_size"] = batch
            b["attrs"]["file"] = os.path.join(DATA, "digits_train_x.npy")
            b["attrs"]["file2"] = os.path.join(DATA, "digits_train_y.npy")
    fwd = os.path.join(folder, f"fwd{batch}.json")
    out = os.path.join(folder, f"digits{batch}.json")
    with open(fwd, "w") as f:
        json.dump(page, f)
    subprocess.run([prog, "grad", fwd, "--loss", "loss", "--optimizer", "adam:0.01", "-o", out,
                    "--quiet"], check=True)
    return out


def ours(prog, page, steps, threads):
    def run(n):
        r = subprocess.run([prog, "train", page, "--steps", str(n), "--threads", str(threads),
                            "--json", "--quiet"],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)
    a, b = run(50), run(50 + steps)
    return (b["seconds"] - a["seconds"]) / steps, b["peak_bytes"]


def theirs(batch, steps, threads):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = torch.from_numpy(np.load(os.path.join(DATA, "digits_train_x.npy"))).permute(0, 3, 1, 2)
    y = torch.from_numpy(np.load(os.path.join(DATA, "digits_train_y.npy")).astype(np.int64))
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x.shape[0] // batch
    perm = torch.randperm(x.shape[0])

    def step(i):
        idx = perm[(i % n) * batch:(i % n + 1) * batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx].contiguous()), y[idx])
        loss.backward()
        opt.step()
        return loss

    for i in range(20):
        step(i)
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    return (time.perf_counter() - t0) / steps


def bench_overhead(prog, folder, threads):
    """Step time of a page of 200 tiny blocks (a chain of Adds on a [2] Variable), per block."""
    blocks = [{"id": "w", "type": "Variable", "attrs": {"value": [1, 2]}},
              {"id": "c", "type": "Const", "attrs": {"value": [0.5, 0.5]}}]
    prev = "w"
    for i in range(197):
        blocks.append({"id": f"a{i}", "type": "Add", "inputs": {"x": prev, "y": "c"}})
        prev = f"a{i}"
    blocks.append({"id": "up", "type": "AssignAdd", "inputs": {"ref": "w", "value": "c"}})
    page = {"format": "blockflow.page", "version": 1, "blocks": blocks, "outputs": [prev]}
    path = os.path.join(folder, "chain.json")
    with open(path, "w") as f:
        json.dump(page, f)
    t, _ = ours(prog, path, 2000, threads)
    return t / len(blocks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("blockflow", nargs="?", default=os.path.join(ROOT, "build", "blockflow"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batches", default="32,128")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(DATA, "digits_train_x.npy")):
        sys.exit(f"{DATA} has no digits: build first (make), or run examples/data/make_digits.py")
    import torch
    print(f"torch {torch.__version__}, {a.threads} threads, {a.rounds} rounds, {a.steps} "
          f"timed steps a round")
    with tempfile.TemporaryDirectory() as folder:
        for batch in [int(b) for b in a.batches.split(",")]:
            page = make_page(a.blockflow, batch, folder)
            mine, peer, peak = [], [], 0
            for r in range(a.rounds):
                order = ("ours", "torch") if r % 2 == 0 else ("torch", "ours")
                for who in order:
                    if who == "ours":
                        t, peak = ours(a.blockflow, page, a.steps, a.threads)
                        mine.append(t)
                    else:
                        peer.append(theirs(batch, a.steps, a.threads))
            m, p = statistics.median(mine), statistics.median(peer)
            print(f"batch {batch:4d}: blockflow {m * 1e3:.3f} ms/step ({1 / m:.0f} steps/s), "
                  f"PyTorch {p * 1e3:.3f} ms/step ({1 / p:.0f} steps/s), ours/PyTorch "
                  f"{m / p:.2f}x; our peak tensor memory {peak / 1024:.0f} KiB")
            print(f"           ours per round  {' '.join(f'{t * 1e3:.3f}' for t in mine)}")
            print(f"           torch per round {' '.join(f'{t * 1e3:.3f}' for t in peer)}")
        per_block = [bench_overhead(a.blockflow, folder, a.threads) for _ in range(3)]
        print(f"runtime overhead per block in a step (200 blocks of [2] Adds): median "
              f"{statistics.median(per_block) * 1e6:.2f} us "
              f"({' '.join(f'{t * 1e6:.2f}' for t in per_block)})")


if __name__ == "__main__":
    main()
