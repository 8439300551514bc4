"""The notebook-style example runs as a script and prints what its cells promise."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_filter_gradient_example():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(ROOT / "examples/python/filter_gradient.py")],
                          env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ok: True" in out and "[240. 310. 256.]]" in out
    assert "ShapeError: block 'dw', port 'out_backprop'" in out
    assert "{'x': 'reused', 'fs': 'reused', 'dy': 'reused', 'dw': 'ran'}" in out
    assert out.rstrip().endswith("float64 True")
