"""pytest setup for the Python module's tests (run by ctest as test_python, or by hand:
`PYTHONPATH=python python3 -m pytest tests/python` after a build).

The module is imported from the repository's python/ folder unless one is importable already,
and finds the library as it documents (ctest sets BLOCKFLOW_LIBRARY to the one just built).
BF_BINARY names the CLI, for the tests that compare with it; by default build/blockflow.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # reference.py
try:
    import blockflow  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def cli():
    path = Path(os.environ.get("BF_BINARY", ROOT / "build" / "blockflow"))
    if not path.is_file():
        pytest.skip(f"no blockflow program at {path}")
    return path


def identity_page(dtype="float32", shape=None):
    """A Placeholder "x" of `dtype` (any shape unless given) feeding an Identity "y"."""
    attrs = {"dtype": dtype}
    if shape is not None:
        attrs["shape"] = list(shape)
    return {"format": "blockflow.page", "version": 1, "name": "identity",
            "blocks": [{"id": "x", "type": "Placeholder", "attrs": attrs},
                       {"id": "y", "type": "Identity", "inputs": {"input": "x"}}],
            "outputs": ["y"]}
