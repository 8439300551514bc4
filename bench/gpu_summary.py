#!/usr/bin/env python3
"""gpu_summary.py - read the table `blockflow bench --device gpu` prints and judge it against
the GPU targets of issue 5:

  - our cuDNN path within 10% of cuDNN called directly with the best algorithm: the default
    (heuristic, deterministic) path against the best deterministic algorithm, and the
    BF_CUDNN_AUTOTUNE=1 BF_CUDNN_DETERMINISTIC=0 path against the best algorithm of any kind;
  - our own kernels within 3x of cuDNN on the Conv2D gradients;
  - our own kernels at least at cuDNN's speed on the depthwise gradients, aiming at 60% of
    the bandwidth floor.

usage: bench/gpu_summary.py BENCH_OUTPUT.txt   (prints a Markdown table and the verdicts)
"""
import math
import sys


def rows(path):
    for line in open(path):
        f = line.split()
        if len(f) < 8 or not f[1][0].isupper():
            continue
        try:
            t = [float(x) for x in f[2:8]]
        except ValueError:
            continue
        yield f[0], f[1], dict(zip(["cudnn", "fastest", "own", "best_d", "best", "floor"], t))


def gmean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(path):
    r = [x for x in rows(path) if not x[0].startswith("tiny")]  # the tiny case is launch overhead
    print("| case | op | cudnn / best-d | fastest / best | own / cuDNN | own % of floor |")
    print("|---|---|---|---|---|---|")
    dense_path, tuned_path, own_grad, dw_grad, dw_bw = [], [], [], [], []
    for case, op, t in r:
        dw = op.startswith("Depthwise")
        ref = min(v for v in (t["cudnn"], t["best_d"], t["best"]) if v > 0) if not dw else t["best"]
        own = t["own"] / ref if ref > 0 else float("nan")
        pct = 100 * t["floor"] / t["own"] if t["own"] > 0 else float("nan")
        a = t["cudnn"] / t["best_d"] if not dw and t["best_d"] > 0 else float("nan")
        b = t["fastest"] / t["best"] if not dw and t["best"] > 0 else float("nan")
        print(f"| {case} | {op} | {a:.2f} | {b:.2f} | {own:.2f} | {pct:.0f}% |")
        if not dw:
            dense_path.append(a), tuned_path.append(b)
            if "Backprop" in op:
                own_grad.append(own)
        elif "Backprop" in op:
            dw_grad.append(own), dw_bw.append(pct)
    print()
    print(f"cuDNN path (heuristic, deterministic) / best deterministic: geomean "
          f"{gmean(dense_path):.2f}, worst {max(dense_path):.2f} (target <= 1.10)")
    print(f"cuDNN path (fastest, any) / best: geomean {gmean(tuned_path):.2f}, worst "
          f"{max(tuned_path):.2f} (target <= 1.10)")
    print(f"own Conv2D gradients / cuDNN: geomean {gmean(own_grad):.2f}, worst "
          f"{max(own_grad):.2f} (target <= 3)")
    print(f"own depthwise gradients / cuDNN: geomean {gmean(dw_grad):.2f}, worst "
          f"{max(dw_grad):.2f} (target <= 1); bandwidth floor reached: "
          f"{min(dw_bw):.0f}-{max(dw_bw):.0f}% (aim 60%)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
