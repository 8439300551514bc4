#!/usr/bin/env python3
"""report.py - turn `blockflow bench --json` output into the markdown tables of RESULTS.md.

    build/blockflow bench --threads 2 --json > run.json
    python3 bench/report.py run.json [more.json ...]

One table per file: every row with our median, min-max, GFLOP/s, each peer's median (oneDNN
with the layout mode it kept), ours / best peer; then the geometric means of that ratio per
group (Conv2D forward, Conv2D gradients, depthwise forward, depthwise gradients, and each
kind over both families) with the
per-call overhead case (below 10 MFLOP, the tiny 5x5 teaching case) left out, and the worst
row of each group. With --f32 F (for an f64 run), a column compares each row with our f32
median of the same row in run F. With --minima, the tables of bench/RESULTS.md "Issue 30"
instead: ours / oneDNN on medians and on minima (`onednn_min_ms`; the minimum is the call
least disturbed on a shared machine), the group geo-means and worst rows of both.
"""
import json
import math
import sys

TINY_GFLOP = 0.01  # rows below 10 MFLOP measure per-call overhead, not kernels
SHORT = {
    "Conv2D": "Conv2D", "Conv2DBackpropFilter": "BackpropFilter",
    "Conv2DBackpropInput": "BackpropInput", "DepthwiseConv2dNative": "Depthwise",
    "DepthwiseConv2dNativeBackpropFilter": "Depthwise BackpropFilter",
    "DepthwiseConv2dNativeBackpropInput": "Depthwise BackpropInput",
}


def group(op):
    dw = op.startswith("Depthwise")
    grad = "Backprop" in op
    return ("depthwise " if dw else "Conv2D ") + ("gradients" if grad else "forward")


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def fmt(v, nd=3):
    return "n/a" if v is None else ("%.*f" % (nd, v))


def table(rows, f32=None):
    head = "| case | op | ours ms | min-max | GFLOP/s | oneDNN ms (mode) | PyTorch ms | ours / best |"
    sep = "|---|---|---:|---:|---:|---:|---:|---:|"
    if f32 is not None:
        head += " f64 / our f32 |"
        sep += "---:|"
    out = [head, sep]
    for r in rows:
        od = r.get("onednn_median_ms")
        mode = r.get("onednn_mode")
        odc = "n/a" if od is None else "%s (%s)" % (fmt(od), mode)
        ratio = r.get("ratio_best_peer")
        line = "| %s | %s | %s | %s-%s | %.1f | %s | %s | %s |" % (
            r["case"], SHORT.get(r["op"], r["op"]), fmt(r["median_ms"]), fmt(r["min_ms"]),
            fmt(r["max_ms"]), r["gflops"], odc, fmt(r.get("torch_median_ms")),
            "n/a" if ratio is None else "%.2fx" % ratio)
        if f32 is not None:
            base = f32.get((r["case"], r["op"]))
            line += " %s |" % ("n/a" if not base else "%.2fx" % (r["median_ms"] / base))
        out.append(line)
    return "\n".join(out)


def summary(rows):
    groups = {}
    for r in rows:
        ratio = r.get("ratio_best_peer")
        if ratio is None:
            continue
        gflop = r["gflops"] * r["median_ms"] * 1e-3
        if gflop < TINY_GFLOP:
            continue
        groups.setdefault(group(r["op"]), []).append((ratio, r))
    out = ["| group (tiny case left out) | rows | geo-mean ours / best | worst row |",
           "|---|---:|---:|---|"]
    for name in ("forward", "gradients"):  # the issue-16 groupings: both families together
        groups["all " + name] = groups.get("Conv2D " + name, []) + \
            groups.get("depthwise " + name, [])
    order = ["Conv2D forward", "Conv2D gradients", "depthwise forward", "depthwise gradients",
             "all forward", "all gradients"]
    for name in order:
        g = groups.get(name)
        if not g:
            continue
        gm = math.exp(sum(math.log(x) for x, _ in g) / len(g))
        worst = max(g, key=lambda t: t[0])
        out.append("| %s | %d | %.3fx | %.2fx %s %s |" % (
            name, len(g), gm, worst[0], worst[1]["case"], SHORT.get(worst[1]["op"])))
    return "\n".join(out)


def ratios(r):
    """ours / oneDNN on medians and on minima (None where oneDNN has no figure)"""
    od, om = r.get("onednn_median_ms"), r.get("onednn_min_ms")
    return (r["median_ms"] / od if od else None, r["min_ms"] / om if om else None)


def table_minima(rows):
    out = ["| case | op | ours median ms (min) | oneDNN median ms (min), mode | "
           "ours / oneDNN, medians | ours / oneDNN, minima |",
           "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        rm, rn = ratios(r)
        od = r.get("onednn_median_ms")
        odc = "n/a" if od is None else "%s (%s), %s" % (
            fmt(od), fmt(r.get("onednn_min_ms")), r.get("onednn_mode"))
        out.append("| %s | %s | %s (%s) | %s | %s | %s |" % (
            r["case"], SHORT.get(r["op"], r["op"]), fmt(r["median_ms"]), fmt(r["min_ms"]), odc,
            "n/a" if rm is None else "%.2fx" % rm, "n/a" if rn is None else "%.2fx" % rn))
    return "\n".join(out)


def summary_minima(rows):
    groups = {}
    for r in rows:
        rm, rn = ratios(r)
        if rm is None or rn is None or r["gflops"] * r["median_ms"] * 1e-3 < TINY_GFLOP:
            continue
        groups.setdefault(group(r["op"]), []).append((rm, rn, r))
    for name in ("forward", "gradients"):
        groups["all " + name] = groups.get("Conv2D " + name, []) + \
            groups.get("depthwise " + name, [])
    out = ["| group (tiny case left out) | rows | geo-mean, medians | worst row, medians | "
           "geo-mean, minima | worst row, minima |", "|---|---:|---:|---|---:|---|"]
    for name in ["Conv2D forward", "Conv2D gradients", "depthwise forward",
                 "depthwise gradients", "all forward", "all gradients"]:
        g = groups.get(name)
        if not g:
            continue
        cells = []
        for k in (0, 1):
            gm = math.exp(sum(math.log(t[k]) for t in g) / len(g))
            w = max(g, key=lambda t: t[k])
            cells.append("%.3fx | %.2fx %s %s" % (gm, w[k], w[2]["case"], SHORT.get(w[2]["op"])))
        out.append("| %s | %d | %s | %s |" % (name, len(g), cells[0], cells[1]))
    return "\n".join(out)


def main(argv):
    f32 = None
    minima = False
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] == "--minima":
            minima = True
            i += 1
        elif argv[i] == "--f32" and i + 1 < len(argv):
            f32 = {(r["case"], r["op"]): r["median_ms"] for r in load(argv[i + 1])}
            i += 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for p in paths:
        rows = load(p)
        if not rows:
            print("report.py: %s: no JSON rows" % p, file=sys.stderr)
            return 1
        r0 = rows[0]
        print("### %s: %s, %s, %d thread%s\n" % (p, r0.get("dtype", "f32"), r0.get("isa", "?"),
                                                 r0["threads"], "s" if r0["threads"] > 1 else ""))
        print(table_minima(rows) if minima else table(rows, f32))
        print()
        print(summary_minima(rows) if minima else summary(rows))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
