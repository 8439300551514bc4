#!/usr/bin/env python3
"""README.md's sample outputs, generated from the program (issue 26: they had drifted).

A sample is a fenced block right after a marker line

    <!-- sample: ARGS [| NAME=PATH ...] -->

whose text is what `blockflow ARGS` prints (stdout, then stderr), run in a scratch folder that
holds `examples` (the repository's) and each NAME, a copy of the repository file PATH, with no
GPU visible (CUDA_VISIBLE_DEVICES=""), so the sample is the CPU run a reader makes.

    readme_samples.py --binary build/blockflow          check: exit 1 on a difference
    readme_samples.py --binary build/blockflow --write  rewrite README.md's samples

Kernel times vary from run to run, so numbers with three decimals (the ms column, "N ms of
kernels") are compared as #.###; everything else, peak memory included, must match.
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


def generate(binary, spec):
    args, _, files = spec.partition("|")
    with tempfile.TemporaryDirectory(prefix="bf_readme.") as tmp:
        os.symlink(ROOT / "examples", Path(tmp) / "examples")
        for item in files.split():
            name, _, path = item.partition("=")
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
        out.append(text[last:m.start(2)] + got)
        last = m.end(2)
        if TIMES.sub("#.###", got) != TIMES.sub("#.###", m.group(2)):
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
