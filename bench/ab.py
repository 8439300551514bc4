#!/usr/bin/env python3
"""ab.py - compare two builds of blockflow on the CPU kernels, interleaved (bench/RESULTS.md).

    python3 bench/ab.py A/blockflow B/blockflow CASES.json OPS [REPS] [THREADS] [FLAG...]

Runs `blockflow bench --no-peers --json --time 0.6` on CASES.json (the format of
bench/shapes.json) for the ops OPS (e.g. fwd,bwd_filter,bwd_input), alternating A and B,
A first in even repetitions and B first in odd ones, REPS times (default 5) on THREADS
threads (default 2), so that a burst of load from the machine's neighbours falls on both
builds. FLAGs go to both runs as they are (e.g. --isa avx2, --dtype f64). Prints, per
row, the median of each build's per-run medians, B / A, and every run's median. Each run's
output is read only when the run has ended.
"""
import json
import statistics
import subprocess
import sys


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b, cases, ops = argv[:4]
    reps = int(argv[4]) if len(argv) > 4 else 5
    threads = argv[5] if len(argv) > 5 else "2"
    extra = argv[6:]
    res = {}
    for r in range(reps):
        order = (("A", a), ("B", b)) if r % 2 == 0 else (("B", b), ("A", a))
        for tag, prog in order:
            out = subprocess.run([prog, "bench", "--threads", threads, "--cases", cases,
                                  "--ops", ops, "--no-peers", "--json", "--time", "0.6"]
                                 + extra,
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    j = json.loads(line)
                    res.setdefault((j["case"], j["op"]), {}).setdefault(tag, []).append(
                        j["median_ms"])
    for (case, op), d in res.items():
        ma, mb = statistics.median(d["A"]), statistics.median(d["B"])
        print("%-24s %-38s A %8.3f  B %8.3f  B/A %.3f   A %s  B %s" % (
            case, op, ma, mb, mb / ma, " ".join("%.3f" % v for v in d["A"]),
            " ".join("%.3f" % v for v in d["B"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
