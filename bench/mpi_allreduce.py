#!/usr/bin/env python3
"""mpi_allreduce.py - the cost of the all-reduce of a data-parallel step against the step's
compute, at 2 ranks (mpirun -np 2), and the ring all-reduce model for more machines
(bench/RESULTS.md, "More than one machine").

    /usr/bin/python3 bench/mpi_allreduce.py [BLOCKFLOW] [--rounds R] [--ways]

--ways compares only the three ways of summing at 2 ranks, interleaved: mpirun's
MPI_Allreduce, mpirun with --deterministic-reduce, and --ranks 2 (threads of one process).

Cases:
  - digits: examples/train/digits_cnn.forward.json, batch 32 (16 per rank), its backward pass
    and Adam built by `grad --data-parallel --ranks 2`: 4 gradients, 2,730 float32 (10.7 KiB)
    fused into one all-reduce per step;
  - resnet50: the filter gradient of a ResNet-50 conv4_x 3x3 layer (14x14x256 -> 256, SAME),
    Conv2DBackpropFilter of a sharded Dataset batch of 16 (8 per rank) -> AllReduce (sum) ->
    ApplyGradientDescent: 589,824 float32 (2.25 MiB) per step.
Each is timed `blockflow train PAGE --steps N --json --threads 1` under mpirun -np 2 for
N = N0 and N0 + S, R times interleaved with a one-process run of one rank's share (batch 16,
resp. 8); the difference of two runs removes start-up, so per step:
  step       = d(seconds) / S                    (the whole data-parallel step, rank 0)
  allreduce  = d(job.allreduce_seconds) / S      (rank 0's time inside MPI_Allreduce, the
                                                   fused gradients and the metrics, waiting
                                                   for the other rank included)
  compute    = one rank's share in one process    (its step time, nothing to reduce)
Medians over R. The machine is 2 cores shared with other jobs: the ranks' waits for each
other are part of "allreduce", so it is an upper bound of the transfer itself.

The model (printed as a table): a step of global batch B on K machines takes
  T(K) = c * B / K + 2 (K - 1) / K * bytes / BW + 2 (K - 1) * alpha
(a ring all-reduce, no overlap of the reduction with compute), with c the compute per sample
measured here, BW 10 or 100 Gbit/s and alpha = 25 us per message (TCP over Ethernet). It prints
the speed-up T(1)/T(K) at the measured batch and the smallest batch from which K machines
beat one (break-even) and reach 80% efficiency.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "examples", "train", "data")
ALPHA = 25e-6


def env():
    e = dict(os.environ)
    if os.getuid() == 0:
        e["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def train(prog, page, steps, ranks, cwd, extra=(), threads=False):
    """`train` at `ranks` ranks: mpirun's processes, or with threads=True one process whose
    ranks are threads (--ranks); extra: more options (--deterministic-reduce)."""
    cmd = [prog, "train", page, "--steps", str(steps), "--json", "--threads", "1"] + list(extra)
    if threads:
        cmd += ["--ranks", str(ranks)]
    elif ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               "--mca", "mpi_yield_when_idle", "1"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env(), timeout=900)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout)


def grad(prog, fwd, out, opt, cwd, ranks=None):
    cmd = [prog, "grad", fwd, "--loss", "loss", "--optimizer", opt, "-o", out, "-q"]
    if ranks:
        cmd += ["--data-parallel", "--ranks", str(ranks)]
    subprocess.run(cmd, check=True, cwd=cwd)


def digits_pages(prog, d):
    with open(os.path.join(ROOT, "examples", "train", "digits_cnn.forward.json")) as f:
        fwd = json.load(f)
    for b in fwd["blocks"]:
        if b["id"] == "data":
            b["attrs"].update(file=os.path.join(DATA, "digits_train_x.npy"),
                              file2=os.path.join(DATA, "digits_train_y.npy"),
                              shard="batch", batch_size=32)
    with open(os.path.join(d, "digits32.json"), "w") as f:
        json.dump(fwd, f)
    for b in fwd["blocks"]:
        if b["id"] == "data":
            b["attrs"]["batch_size"] = 16
    with open(os.path.join(d, "digits16.json"), "w") as f:
        json.dump(fwd, f)
    grad(prog, "digits32.json", "dp.json", "adam:0.01", d, ranks=2)
    grad(prog, "digits16.json", "one.json", "adam:0.01", d)
    return "dp.json", "one.json", 16


def resnet_pages(d, batch=16):
    rng = np.random.default_rng(1)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal((4 * batch, 14, 14, 256), np.float32))
    np.save(os.path.join(d, "dy.npy"), rng.standard_normal((4 * batch, 14, 14, 256), np.float32))

    def page(b, shard):
        attrs = {"file": "x.npy", "file2": "dy.npy", "batch_size": b}
        if shard:
            attrs["shard"] = "batch"
        return {"format": "blockflow.page", "version": 1, "name": "resnet50 conv4 filter grad",
                "blocks": [
                    {"id": "data", "type": "Dataset", "attrs": attrs},
                    {"id": "w", "type": "Variable", "attrs": {"shape": [3, 3, 256, 256]}},
                    {"id": "fs", "type": "Const",
                     "attrs": {"dtype": "int32", "value": [3, 3, 256, 256]}},
                    {"id": "dw", "type": "Conv2DBackpropFilter",
                     "inputs": {"input": "data:batch", "filter_sizes": "fs",
                                "out_backprop": "data:batch2"},
                     "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
                    {"id": "dw_all", "type": "AllReduce", "inputs": {"input": "dw"},
                     "attrs": {"op": "mean"}},
                    {"id": "lr", "type": "Const", "attrs": {"value": 1e-6}},
                    {"id": "w_update", "type": "ApplyGradientDescent",
                     "inputs": {"var": "w", "alpha": "lr", "delta": "dw_all"}}],
                "outputs": []}
    with open(os.path.join(d, "rn_dp.json"), "w") as f:
        json.dump(page(batch, True), f)
    with open(os.path.join(d, "rn_one.json"), "w") as f:
        json.dump(page(batch // 2, False), f)
    return "rn_dp.json", "rn_one.json", batch // 2


def alone_page(d, n):
    """A step that is one all-reduce of n float32 and nothing else (Assign of the mean of
    identical Variables: the value stays, the step recomputes it)."""
    name = f"alone{n}.json"
    with open(os.path.join(d, name), "w") as f:
        json.dump({"format": "blockflow.page", "version": 1, "name": "all-reduce alone",
                   "blocks": [
                       {"id": "w", "type": "Variable", "attrs": {"shape": [n], "value": 1}},
                       {"id": "w_all", "type": "AllReduce", "inputs": {"input": "w"},
                        "attrs": {"op": "mean"}},
                       {"id": "w_set", "type": "Assign",
                        "inputs": {"ref": "w", "value": "w_all"}}],
                   "outputs": []}, f)
    return name


def measure_alone(prog, d, name, n0, s, rounds):
    out = []
    for _ in range(rounds):
        a = train(prog, name, n0, 2, d)
        b = train(prog, name, n0 + s, 2, d)
        out.append((b["job"]["allreduce_seconds"] - a["job"]["allreduce_seconds"]) / s)
    return statistics.median(out)


def measure(prog, d, dp, one, n0, s, rounds):
    rows = {"step": [], "allreduce": [], "compute": [], "bytes": []}
    for _ in range(rounds):
        a = train(prog, dp, n0, 2, d)
        b = train(prog, dp, n0 + s, 2, d)
        rows["step"].append((b["seconds"] - a["seconds"]) / s)
        ar = (b["job"]["allreduce_seconds"] - a["job"]["allreduce_seconds"]) / s
        rows["allreduce"].append(ar)
        rows["bytes"].append((b["job"]["allreduce_bytes"] - a["job"]["allreduce_bytes"]) / s)
        a = train(prog, one, n0, 1, d)
        b = train(prog, one, n0 + s, 1, d)
        rows["compute"].append((b["seconds"] - a["seconds"]) / s)
    return {k: statistics.median(v) for k, v in rows.items()}


WAYS = [("mpirun -np 2 (MPI_Allreduce)", [], False),
        ("mpirun -np 2 --deterministic-reduce (gather, sum in rank order, broadcast)",
         ["--deterministic-reduce"], False),
        ("--ranks 2 (threads of one process, sums in rank order)", [], True)]


def measure_ways(prog, d, dp, n0, s, rounds):
    """The step and its all-reduce at 2 ranks, each way, interleaved round by round."""
    got = {w[0]: {"step": [], "allreduce": []} for w in WAYS}
    for _ in range(rounds):
        for name, extra, threads in WAYS:
            a = train(prog, dp, n0, 2, d, extra, threads)
            b = train(prog, dp, n0 + s, 2, d, extra, threads)
            got[name]["step"].append((b["seconds"] - a["seconds"]) / s)
            got[name]["allreduce"].append(
                (b["job"]["allreduce_seconds"] - a["job"]["allreduce_seconds"]) / s)
    return {n: {k: statistics.median(v) for k, v in m.items()} for n, m in got.items()}


def model(c, nbytes, k, gbit):
    bw = gbit * 1e9 / 8
    ar = 2 * (k - 1) / k * nbytes / bw + 2 * (k - 1) * ALPHA
    speedup = [c * b / (c * b / k + ar) for b in (256, 4096)]
    even = ar / (c * (1 - 1 / k))          # c B (1 - 1/K) > ar
    eff80 = 4 * k * ar / c                 # c B / K >= 4 ar: efficiency >= 80%
    return ar, speedup, even, eff80


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("blockflow", nargs="?", default=os.path.join(ROOT, "build", "blockflow"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ways", action="store_true",
                    help="only compare the ways of summing at 2 ranks (MPI, deterministic, "
                         "threads)")
    args = ap.parse_args()
    prog = os.path.abspath(args.blockflow)
    if not shutil.which("mpirun"):
        sys.exit("mpirun not found (Debian: openmpi-bin)")
    d = tempfile.mkdtemp(prefix="bf_mpi_bench_")
    try:
        cases = [("digits_cnn, batch 32 (16 per rank)", digits_pages(prog, d), 50, 200),
                 ("ResNet-50 conv4_x 3x3 filter gradient, batch 16 (8 per rank)",
                  resnet_pages(d), 2, 10)]
        if args.ways:
            print("| case | way | step at 2 ranks (ms) | all-reduce (ms) |")
            print("|---|---|---:|---:|")
            for name, (dp, _one, _per_rank), n0, s in cases:
                for way, m in measure_ways(prog, d, dp, n0, s, args.rounds).items():
                    print(f"| {name.split(',')[0]} | {way} | {m['step'] * 1e3:.3f} | "
                          f"{m['allreduce'] * 1e3:.3f} |")
            return
        print("| case | bytes reduced per step | step at 2 ranks (ms) | all-reduce (ms) | "
              "one rank's compute (ms) | all-reduce / compute |")
        print("|---|---:|---:|---:|---:|---:|")
        found = []
        for name, (dp, one, per_rank), n0, s in cases:
            m = measure(prog, d, dp, one, n0, s, args.rounds)
            found.append((name, m, per_rank))
            print(f"| {name} | {m['bytes']:,.0f} | {m['step'] * 1e3:.3f} | "
                  f"{m['allreduce'] * 1e3:.3f} | {m['compute'] * 1e3:.3f} | "
                  f"{m['allreduce'] / m['compute']:.3f} |")
        print()
        print("| an all-reduce alone at 2 ranks (one step of AllReduce + Assign) | bytes | "
              "ms | GB/s |")
        print("|---|---:|---:|---:|")
        for n in (2730, 589824):
            t = measure_alone(prog, d, alone_page(d, n), 50, 200 if n < 10000 else 50,
                              args.rounds)
            print(f"| {n:,} float32 | {4 * n:,} | {t * 1e3:.3f} | {4 * n / t / 1e9:.2f} |")
        print()
        print("Ring all-reduce model, alpha = 25 us, no overlap; c = one rank's compute / its "
              "samples; speed-up T(1)/T(K) at a global batch B:")
        print()
        print("| case | c (ms/sample) | K | link | all-reduce (ms) | speed-up, B = 256 | "
              "speed-up, B = 4096 | break-even B | B for 80% efficiency |")
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        for name, m, per_rank in found:
            c = m["compute"] / per_rank
            for k in (4, 8, 64):
                for gbit in (10, 100):
                    ar, sp, even, e80 = model(c, m["bytes"], k, gbit)
                    print(f"| {name.split(',')[0]} | {c * 1e3:.3f} | {k} | {gbit} Gbit/s | "
                          f"{ar * 1e3:.3f} | {sp[0]:.2f} | {sp[1]:.2f} | {even:.1f} | "
                          f"{e80:.0f} |")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
