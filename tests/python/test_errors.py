"""Errors: every status maps to its blockflow.Error subclass with code, block, port, attr,
pointer and message; bad and hostile pages raise and never crash the interpreter."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import blockflow
from conftest import identity_page


def page_with(**attrs):
    doc = {"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "x", "type": "Placeholder", "attrs": {"shape": [1, 5, 5, 1]}},
        {"id": "w", "type": "Placeholder", "attrs": {"shape": [3, 3, 1, 1]}},
        {"id": "conv3", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
         "attrs": dict({"strides": [1, 1, 1, 1], "padding": "VALID"}, **attrs)}],
        "outputs": ["conv3"]}
    return doc


def test_hierarchy():
    for cls in (blockflow.ParseError, blockflow.SchemaError, blockflow.AttrError,
                blockflow.ShapeError, blockflow.InvalidArgumentError):
        assert issubclass(cls, blockflow.Error) and issubclass(cls, ValueError)
    assert issubclass(blockflow.DtypeError, TypeError)
    assert issubclass(blockflow.NotFoundError, LookupError)
    assert issubclass(blockflow.OutOfMemoryError, MemoryError)
    assert blockflow.ShapeError.__module__ == "blockflow"


def test_parse_error_has_line_and_column():
    with pytest.raises(blockflow.ParseError) as e:
        blockflow.loads('{"format": "blockflow.page",\n "version": 1,\n "blocks": [,]}',
                        name="bad.json")
    err = e.value
    assert err.code and err.line == 3 and err.column > 0 and err.page == "bad.json"
    assert str(err).startswith("bad.json:")


def test_schema_errors_report_every_problem():
    doc = page_with()
    doc["blocks"].append({"id": "q", "type": "NoSuchBlock"})
    doc["blocks"].append({"id": "x", "type": "Identity", "inputs": {"input": "w"}})
    doc["blocks"].append({"id": "z", "type": "Identity", "inputs": {"input": "nowhere"}})
    with pytest.raises(blockflow.SchemaError) as e:
        blockflow.loads(doc)
    problems = e.value.problems
    assert len(problems) >= 3
    assert all(isinstance(p, blockflow.Problem) and p.severity == "error" for p in problems)
    codes = {p.code for p in problems}
    assert codes >= {"unknown_block_type", "duplicate_id", "bad_link"}, problems


def test_attr_error_fields():
    page = blockflow.loads(page_with(strides=[1, 1, 1]))
    feeds = {"x": np.zeros((1, 5, 5, 1), np.float32), "w": np.zeros((3, 3, 1, 1), np.float32)}
    with pytest.raises(blockflow.AttrError) as e:
        page.run(feeds)
    err = e.value
    assert (err.block, err.attr, err.status) == ("conv3", "strides", "EATTR")
    assert err.pointer == "/blocks/2/attrs/strides" and err.code
    assert "4 dimensions" in err.message
    assert str(err) == f'<string>: block "conv3": attribute "strides": {err.message}'
    assert err.problems and err.problems[0].block == "conv3"


def test_attr_errors_at_load_and_set_attr():
    with pytest.raises(blockflow.AttrError) as e:
        blockflow.loads(page_with(padding="SOMETIMES"))
    assert e.value.attr == "padding" and e.value.block == "conv3"
    page = blockflow.loads(page_with())
    with pytest.raises(blockflow.AttrError) as e:
        page.set_attr("conv3", "padding", "SOMETIMES")
    assert e.value.attr == "padding"
    with pytest.raises(blockflow.NotFoundError) as e:
        page.set_attr("conv3", "no_such_attr", 1)
    assert e.value.code == "unknown_attr"
    with pytest.raises(blockflow.NotFoundError) as e:
        page.set_attr("nope", "padding", "SAME")
    assert e.value.code == "unknown_block"
    with pytest.raises(TypeError):
        page.set_attr("conv3", "padding", object())
    assert page.check().ok  # failed edits changed nothing


def test_shape_and_dtype_errors_name_the_port():
    page = blockflow.loads(page_with())
    with pytest.raises(blockflow.ShapeError) as e:
        page.feed("x", np.zeros((1, 4, 4, 1), np.float32))
    assert (e.value.block, e.value.code) == ("x", "shape_mismatch")
    with pytest.raises(blockflow.DtypeError) as e:  # cast="no": the library's check
        page.feed("w", np.zeros((3, 3, 1, 1), np.float64), cast="no")
    assert (e.value.block, e.value.attr) == ("w", "dtype")


def test_run_errors():
    page = blockflow.loads(page_with())
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.run()
    assert e.value.code == "missing_feed" and e.value.block in ("x", "w")
    with pytest.raises(blockflow.NotFoundError) as e:
        page.run(fetch=["conv3:nope"])
    assert e.value.code == "bad_fetch"
    with pytest.raises(blockflow.NotFoundError):
        page.feed("nope", np.zeros(1, np.float32))
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.feed("conv3", np.zeros(1, np.float32))
    assert e.value.code == "not_feedable"
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.run(device="tpu")
    assert e.value.code == "bad_device"
    with pytest.raises(blockflow.NotFoundError):
        blockflow.block("NoSuchBlock")


def test_gpu_without_gpu():
    if "gpu: none" not in blockflow.devices():
        pytest.skip("a GPU is present")
    x = np.zeros((1, 3, 3, 1), np.float32)
    with pytest.raises(blockflow.DeviceError) as e:
        blockflow.ops.conv2d(x, np.zeros((1, 1, 1, 1), np.float32), [1] * 4, "VALID",
                             device="gpu")
    assert e.value.code == "no_gpu" and e.value.block == "Conv2D"
    page = blockflow.loads(identity_page())  # no GPU kernel: falls back, and says so
    page.run(feeds={"x": x}, device="gpu")
    assert page.stats()[1]["note"] == "no GPU kernel: ran on the CPU"


def test_limits(tmp_path):
    page = blockflow.loads({"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "x", "type": "RandomNormal", "attrs": {"shape": [1 << 20, 1 << 20, 1 << 20]}}],
        "outputs": ["x"]})
    with pytest.raises(blockflow.LimitError) as e:
        page.run()
    assert e.value.block == "x"
    path = tmp_path / "page.json"
    path.write_text(json.dumps(identity_page()))
    with pytest.raises(blockflow.LimitError):
        blockflow.load(path, max_page_bytes=10)
    with pytest.raises(TypeError):
        blockflow.load(path, no_such_limit=1)


def test_io_error():
    with pytest.raises(blockflow.IoError) as e:
        blockflow.load("/nonexistent/page.json")
    assert "No such file" in e.value.message


def test_warnings_are_kept():
    doc = page_with()
    doc["blocks"][2]["attrs"]["strides"] = "1,1,1,1"  # an enuSpace form, accepted with a warning
    page = blockflow.loads(doc)
    assert page.warnings and page.warnings[0].severity == "warning"
    assert page.warnings[0].attr == "strides"


HOSTILE = [
    b"", b"\x00\xff\xfe", b"[" * 100000, b'{"format": "blockflow.page"}', b"null",
    b'{"format": "blockflow.page", "version": 1, "blocks": [{"id": "a", "type": "Const", '
    b'"attrs": {"file": "../../../../etc/passwd"}}], "outputs": ["a"]}',
    json.dumps({"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "a", "type": "Const", "attrs": {"shape": [-1, 3], "value": [1]}}]}).encode(),
    json.dumps({"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "a", "type": "Identity", "inputs": {"input": "b"}},
        {"id": "b", "type": "Identity", "inputs": {"input": "a"}}], "outputs": ["a"]}).encode(),
    json.dumps({"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "s", "type": "Const", "attrs": {"dtype": "int32", "value": [2 ** 31 - 1] * 4}},
        {"id": "x", "type": "Const", "attrs": {"shape": [1, 1, 1, 1], "value": 1}},
        {"id": "g", "type": "Conv2DBackpropInput",
         "inputs": {"input_sizes": "s", "filter": "x", "out_backprop": "x"},
         "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}}], "outputs": ["g"]}).encode(),
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_bad_pages_raise_and_never_crash(text, tmp_path):
    """Every bad page gives a blockflow.Error: at load, at check or at run."""
    with pytest.raises(blockflow.Error) as e:
        page = blockflow.loads(text, dir=tmp_path, confine_files=1)
        result = page.check()
        page.run()
    assert e.value.problems and all(p.message for p in e.value.problems)
    if "page" in locals():
        assert not result.ok or e.value.status in ("ELIMIT", "EIO")


BAD_PAGE_SCRIPT = r"""
import sys, blockflow
for path in sys.argv[1:]:
    try:
        blockflow.load(path).run()
        print("ran", path)
    except blockflow.Error as e:
        print("error", e.status, e.code)
print("alive")
"""


def test_bad_page_files_in_a_fresh_interpreter(tmp_path):
    """Load and run bad files in a child process: it must end normally, printing an error each."""
    paths = []
    for i, text in enumerate(HOSTILE):
        path = tmp_path / f"bad{i}.json"
        path.write_bytes(text)
        paths.append(str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", BAD_PAGE_SCRIPT, *paths], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "alive" and sum(ln.startswith("error ") for ln in lines) == len(HOSTILE)


def test_error_codes_are_the_headers_list():
    """The module reads the library's one list (BF_ERROR_CODE_MAP), in its order; this also
    runs in the sanitizer build, where tests/apps/test_error_codes.py leaves it out."""
    import re
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "include", "blockflow.h")) as f:
        text = f.read()
    body = text[text.index("#define BF_ERROR_CODE_MAP(XX)"):]
    body = body[:body.index("\n\n")]
    codes = blockflow.error_codes()
    assert list(codes) == re.findall(r"XX\(([a-z_0-9]+),", body)
    assert codes["cancelled"] == "the run or job was cancelled"
