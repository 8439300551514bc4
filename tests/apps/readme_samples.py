#!/usr/bin/env python3
"""README.md's sample outputs, generated from the program (issue 26: they had drifted).

A sample is a fenced block right after a marker line

    <!-- sample: ARGS [| NAME=PATH ...] -->

whose text is what `blockflow ARGS` prints (stdout, then stderr; after a first line
"$ blockflow ARGS" when the sample shows its command), run in a scratch folder that
holds `examples` (the repository's) and each NAME, a copy of the repository file PATH, with no
GPU visible (CUDA_VISIBLE_DEVICES=""), so the sample is the CPU run a reader makes.

    readme_samples.py --binary build/blockflow          check: exit 1 on a difference
    readme_samples.py --binary build/blockflow --write  rewrite README.md's samples

Kernel times vary from run to run, so numbers with three decimals (the ms column, "N ms of
kernels") are compared as #.###; everything else, peak memory included, must match. A marker
may name the instruction set its sample was made with (`| isa=avx2`): the kernels' choice and
workspaces follow the CPU, so on a CPU that runs another one (AVX-512) the peak memory and
the kernel's note are left out of the comparison, and said so.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"^<!-- sample: (.*?) -->\n```[a-z]*\n(.*?)```\n", re.M | re.S)
TIMES = re.compile(r"\b\d+\.\d{3}\b")


PEAK = re.compile(r"peak memory [0-9.]+ [KMG]?i?B \([0-9]+ bytes\)")
NOTE = re.compile(r"(  (ran|reused))  .*$", re.M)


def this_isa():
    """The instruction set our kernels pick on this CPU: avx512 or avx2 (or generic)."""
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
    except (OSError, StopIteration):
        return "generic"
    if all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        return "avx512"
    return "avx2" if "avx2" in flags and "fma" in flags else "generic"


def generate(binary, spec):
    args, _, files = spec.partition("|")
    with tempfile.TemporaryDirectory(prefix="bf_readme.") as tmp:
        os.symlink(ROOT / "examples", Path(tmp) / "examples")
        for item in files.split():
            name, _, path = item.partition("=")
            if name == "isa":
                continue
            shutil.copy(ROOT / path, Path(tmp) / name)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        p = subprocess.run([binary, *args.split()], cwd=tmp, env=env, capture_output=True,
                           text=True, timeout=300)
        return p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    text = Path(a.readme).read_text()
    out, last, bad, n = [], 0, 0, 0
    for m in MARK.finditer(text):
        n += 1
        got = generate(a.binary, m.group(1))
        if m.group(2).startswith("$ "):  # a sample that shows its command line
            got = f"$ blockflow {m.group(1).split('|')[0].strip()}\n{got}"
        out.append(text[last:m.start(2)] + got)
        last = m.end(2)
        norm = lambda t: TIMES.sub("#.###", t)  # noqa: E731
        isa = re.search(r"\bisa=(\w+)", m.group(1))
        if isa and isa.group(1) != this_isa():
            print(f"README.md sample `blockflow {m.group(1).split('|')[0].strip()}` was made "
                  f"on {isa.group(1)}, this CPU runs {this_isa()}: peak memory and the "
                  "kernel's note not compared")
            norm = lambda t: NOTE.sub(r"\1", PEAK.sub("peak memory #", TIMES.sub("#.###", t)))  # noqa: E731,E501
        if norm(got) != norm(m.group(2)):
            bad += 1
            print(f"README.md sample `blockflow {m.group(1).strip()}` differs from the "
                  "program's output:")
            sys.stdout.writelines(difflib.unified_diff(
                m.group(2).splitlines(True), got.splitlines(True), "README.md", "program"))
    out.append(text[last:])
    if n == 0:
        print("no <!-- sample: ... --> marker in README.md")
        return 1
    if a.write:
        Path(a.readme).write_text("".join(out))
        print(f"wrote {n} samples into {a.readme}")
        return 0
    if bad:
        print(f"{bad} of {n} samples differ: tests/apps/readme_samples.py --binary "
              "build/blockflow --write regenerates them")
        return 1
    print(f"{n} README samples match the program")
    return 0


if __name__ == "__main__":
    sys.exit(main())
