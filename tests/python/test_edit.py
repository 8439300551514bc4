"""Editing a live page from Python: every editing call, refused edits that change nothing,
what each edit re-runs, batches all or nothing, check() after edits, incomplete pages, and
save/load round trips."""
import json
import os
import stat

import numpy as np
import pytest

import blockflow
from test_page import X, grad_page, ran

DY = np.ones((1, 3, 3, 1), np.float32)
FEEDS = {"x": X, "dy": DY}
DW = [[160, 210, 176], [250, 325, 270], [240, 310, 256]]  # dw[:, :, 0, 0] of X and SAME, ones
# VALID with dy all ones: dw[i, j] is the sum of X's 3x3 window at (i, j)
DW_VALID = [[float(X[0, i:i + 3, j:j + 3, 0].sum()) for j in range(3)] for i in range(3)]


def ran_page(**kw):
    """grad_page() fed and run once: every later run reuses what no edit touched."""
    page = blockflow.loads(grad_page(**kw))
    page.run(feeds=FEEDS, fetch=["dw", "total"])
    return page


def test_every_editing_call():
    page = blockflow.loads(grad_page())
    page.add_block("scale", "Const", {"dtype": "float32", "value": np.float32(2)},
                   device="cpu", ui={"x": np.int64(40), "y": 10})
    page.add_block("twice", "Mul", ui=[1, 2])
    page.connect("twice", "x", "total:output")
    page.connect("twice", "y", "scale")
    page.set_outputs(["dw", "twice"])
    page.name = "edited"
    page.description = "a gradient, summed, doubled"
    page.set_device("dw", "cpu")
    page.set_ui("dw", {"x": 1.5})
    page.set_ui(None, {"zoom": 2})
    page.set_attr("dw", "data_format", "NHWC")
    page.set_attr("dw", "data_format", None)  # back to the default: gone from the page
    doc = json.loads(page.to_json())
    assert doc["name"] == "edited" and doc["description"] == "a gradient, summed, doubled"
    assert doc["ui"] == {"zoom": 2} and doc["outputs"] == ["dw", "twice"]
    blocks = {b["id"]: b for b in doc["blocks"]}
    assert list(blocks) == ["x", "dy", "fs", "dw", "total", "scale", "twice"]
    assert blocks["dw"]["device"] == "cpu" and blocks["dw"]["ui"] == {"x": 1.5}
    assert "data_format" not in blocks["dw"]["attrs"]
    assert blocks["scale"] == {"id": "scale", "type": "Const", "device": "cpu",
                               "attrs": {"dtype": "float32", "value": 2.0},
                               "ui": {"x": 40, "y": 10}}
    assert blocks["twice"]["inputs"] == {"x": "total:output", "y": "scale"}
    assert page.name == "edited" and page.outputs == ["dw", "twice"]
    out = page.run(feeds=FEEDS)
    assert out["dw"][:, :, 0, 0].tolist() == DW_VALID
    assert out["twice"] == 2 * out["dw"].sum()

    page.rename_block("twice", "doubled")
    assert page.outputs == ["dw", "doubled"]
    assert page.run()["doubled"] == 2 * out["dw"].sum()
    page.disconnect("doubled", "y")
    page.disconnect("doubled", "y")  # already unconnected: a no-op
    assert json.loads(page.to_json())["blocks"][-1]["inputs"] == {"x": "total:output"}
    page.remove_block("doubled")
    page.remove_block("scale")
    assert page.outputs == ["dw"] and [b["id"] for b in page.blocks] == [
        "x", "dy", "fs", "dw", "total"]
    page.description = ""
    page.set_ui(None, None)
    page.set_ui("dw", None)
    page.set_device("dw", "auto")
    page.name = "grad"
    # Everything undone: the page is the one it was loaded as, in canonical form.
    assert page.to_json() == blockflow.loads(grad_page()).to_json()


def test_edit_batch_of_every_op():
    page = blockflow.loads(grad_page())
    page.edit([
        {"op": "add_block", "id": "scale", "type": "Const",
         "attrs": {"dtype": "float32", "value": np.float64(3)}, "device": "cpu", "ui": {"x": 1}},
        {"op": "add_block", "id": "m", "type": "Mul"},
        {"op": "connect", "block": "m", "port": "x", "source": "total"},
        {"op": "connect", "block": "m", "port": "y", "source": "scale"},
        {"op": "set_attr", "block": "dw", "attr": "padding", "value": "SAME"},
        {"op": "set_attr", "block": "dw", "attr": "data_format", "value": None},
        {"op": "set_device", "block": "dw", "device": "cpu"},
        {"op": "set_ui", "ui": {"zoom": 1}},
        {"op": "set_ui", "block": "m", "ui": [3, 4]},
        {"op": "rename_block", "id": "m", "new_id": "tripled"},
        {"op": "set_outputs", "outputs": ["dw", "tripled"]},
        {"op": "set_name", "name": "batch"},
        {"op": "set_description", "description": "all at once"},
        {"op": "add_block", "id": "gone", "type": "Identity"},
        {"op": "disconnect", "block": "tripled", "port": "y"},
        {"op": "connect", "block": "tripled", "port": "y", "source": "scale:output"},
        {"op": "remove_block", "id": "gone"},
    ])
    assert page.name == "batch" and page.description == "all at once"
    assert page.outputs == ["dw", "tripled"]
    out = page.run(feeds={"x": X, "dy": np.ones((1, 5, 5, 1), np.float32)})
    assert out["dw"][:, :, 0, 0].tolist() == DW
    assert out["tripled"] == pytest.approx(3 * out["dw"].sum())
    assert page.edit([]) is None  # an empty batch is fine


# (call, args, exception, code, block, port, attr)
REFUSED = [
    ("add_block", ("dw", "Identity"), blockflow.SchemaError, "duplicate_id", "dw", "", ""),
    ("add_block", ("q", "NoSuchType"), blockflow.SchemaError, "unknown_block_type", "q", "", ""),
    ("add_block", ("q", "Identity", None, "tpu"), blockflow.SchemaError, "bad_device", "q", "",
     ""),
    ("add_block", ("q", "Conv2D", {"strides": [1, 1, 1, 1]}), blockflow.AttrError,
     "missing_attr", "q", "", "padding"),
    ("add_block", ("a:b", "Identity"), blockflow.SchemaError, "bad_id", "a:b", "", ""),
    ("remove_block", ("nowhere",), blockflow.NotFoundError, "unknown_block", "", "", ""),
    ("rename_block", ("dw", "x"), blockflow.SchemaError, "duplicate_id", "dw", "", ""),
    ("rename_block", ("dw", "a/b"), blockflow.SchemaError, "bad_id", "dw", "", ""),
    ("rename_block", ("nowhere", "y2"), blockflow.NotFoundError, "unknown_block", "", "", ""),
    ("connect", ("dw", "nope", "x"), blockflow.NotFoundError, "unknown_port", "dw", "nope", ""),
    ("connect", ("dw", "input", "nowhere"), blockflow.SchemaError, "bad_link", "dw", "input",
     ""),
    ("connect", ("dw", "input", "x:nope"), blockflow.SchemaError, "bad_link", "dw", "input", ""),
    ("disconnect", ("dw", "nope"), blockflow.NotFoundError, "unknown_port", "dw", "nope", ""),
    ("set_attr", ("dw", "padding", "WEIRD"), blockflow.AttrError, "bad_attr", "dw", "",
     "padding"),
    ("set_attr", ("dw", "strides", "wide"), blockflow.AttrError, "bad_attr", "dw", "",
     "strides"),
    ("set_attr", ("dw", "nope", 1), blockflow.NotFoundError, "unknown_attr", "dw", "", "nope"),
    ("set_attr", ("dw", "padding", None), blockflow.AttrError, "missing_attr", "dw", "",
     "padding"),  # required: no default to go back to
    ("set_device", ("dw", "tpu"), blockflow.SchemaError, "bad_device", "dw", "", ""),
    ("set_ui", ("nowhere", {"x": 1}), blockflow.NotFoundError, "unknown_block", "", "", ""),
    ("set_outputs", (["dw", "nowhere"],), blockflow.SchemaError, "bad_output", "", "", ""),
]


@pytest.mark.parametrize("call,args,exc,code,block,port,attr", REFUSED,
                         ids=[f"{r[0]}-{r[3]}-{i}" for i, r in enumerate(REFUSED)])
def test_refused_edit_changes_nothing(call, args, exc, code, block, port, attr):
    page = ran_page()
    before = page.to_json()
    with pytest.raises(exc) as e:
        getattr(page, call)(*args)
    err = e.value
    assert (err.code, err.block, err.port, err.attr) == (code, block, port, attr), err
    assert isinstance(err, blockflow.Error) and err.message and str(err).startswith("<string>:")
    assert err.problems and err.problems[-1].code == code
    assert page.to_json() == before
    out = page.run(fetch=["dw", "total"])  # nothing was invalidated either
    assert set(ran(page).values()) == {"reused"}
    assert out["dw"][:, :, 0, 0].tolist() == DW_VALID


def test_refused_edit_pointer():
    page = blockflow.loads(grad_page())
    with pytest.raises(blockflow.AttrError) as e:
        page.set_attr("dw", "padding", "WEIRD")
    assert e.value.pointer == "/blocks/3/attrs/padding"
    with pytest.raises(blockflow.SchemaError) as e:
        page.connect("dw", "input", "nowhere")
    assert e.value.pointer == "/blocks/3/inputs/input"


def test_python_values_that_are_not_json():
    page = blockflow.loads(grad_page())
    before = page.to_json()
    with pytest.raises(TypeError):
        page.set_attr("dw", "strides", object())
    with pytest.raises(ValueError):
        page.set_ui("dw", {"x": float("nan")})  # not JSON
    with pytest.raises(TypeError):
        page.set_outputs("dw")  # a list is needed, not one string
    assert page.to_json() == before


def test_reruns_after_edits():
    page = ran_page()
    everything = {"x", "dy", "fs", "dw", "total"}

    def after(edit, *args, fetch=("dw", "total")):
        getattr(page, edit)(*args)
        page.run(fetch=list(fetch))
        return {b for b, how in ran(page).items() if how == "ran"}

    # an attribute re-runs that block and what is downstream, nothing upstream
    page.set_attr("dw", "padding", "SAME")
    page.feed("dy", np.ones((1, 5, 5, 1), np.float32))
    page.run(fetch=["dw", "total"])
    assert ran(page) == {"x": "reused", "dy": "ran", "fs": "reused", "dw": "ran",
                         "total": "ran"}
    page = ran_page()
    assert after("set_attr", "dw", "data_format", "NHWC") == {"dw", "total"}
    assert after("set_attr", "dw", "data_format", "NHWC") == set()  # the value it has
    assert after("set_attr", "dw", "data_format", None) == {"dw", "total"}  # the default
    # layout, names, renames and outputs re-run nothing
    assert after("set_ui", "dw", {"x": 3}) == set()
    assert after("set_ui", None, {"zoom": 2}) == set()
    page.name = "renamed"
    page.description = "d"
    assert after("set_outputs", ["total"]) == set()
    assert after("rename_block", "dw", "grad", fetch=("grad", "total")) == set()
    assert ran(page)["grad"] == "reused"
    assert after("rename_block", "grad", "dw") == set()
    # a device re-runs the block and downstream
    assert after("set_device", "dw", "cpu") == {"dw", "total"}
    # a new block runs alone; wiring it re-runs it (and not its source)
    page.add_block("copy", "Identity")
    page.connect("copy", "input", "dw")
    assert after("set_outputs", ["dw", "copy"], fetch=("dw", "total", "copy")) == {"copy"}
    assert after("connect", "copy", "input", "total", fetch=("dw", "total", "copy")) == {"copy"}
    # removing a block re-runs nothing that remains
    assert after("remove_block", "copy") == set()
    assert set(ran(page)) == everything
    # a wire re-runs its block: disconnected then connected again
    page.disconnect("total", "input")
    with pytest.raises(blockflow.SchemaError) as e:
        page.run(fetch="total")
    assert (e.value.code, e.value.block, e.value.port) == ("missing_input", "total", "input")
    assert page.run(fetch="dw")["dw"][:, :, 0, 0].tolist() == DW_VALID  # dw is fine
    assert after("connect", "total", "input", "dw") == {"total"}


def test_attr_rerun_gives_new_results():
    page = ran_page()
    first = page.run(fetch="total")["total"]
    page.set_attr("dw", "padding", "SAME")
    page.feed("dy", np.ones((1, 5, 5, 1), np.float32))
    out = page.run(fetch=["dw", "total"])
    assert out["dw"][:, :, 0, 0].tolist() == DW and out["total"] != first


def test_batch_that_fails_halfway_changes_nothing():
    page = ran_page()
    before = page.to_json()
    with pytest.raises(blockflow.NotFoundError) as e:
        page.edit([
            {"op": "set_name", "name": "half"},
            {"op": "set_attr", "block": "dw", "attr": "padding", "value": "SAME"},
            {"op": "remove_block", "id": "total"},
            {"op": "connect", "block": "dw", "port": "nope", "source": "x"},
            {"op": "set_description", "description": "never"},
        ])
    err = e.value
    assert (err.code, err.block, err.port, err.pointer) == ("unknown_port", "dw", "nope", "/3")
    assert "edit 3 (connect): " in err.message and err.problems
    assert page.to_json() == before and page.name == "grad"
    page.run(fetch=["dw", "total"])
    assert set(ran(page).values()) == {"reused"}
    with pytest.raises(blockflow.AttrError) as e:
        page.edit([{"op": "add_block", "id": "c", "type": "Const",
                    "attrs": {"dtype": "int32", "value": [1]}},
                   {"op": "set_attr", "block": "dw", "attr": "padding", "value": "WEIRD"}])
    assert (e.value.block, e.value.attr, e.value.pointer) == ("dw", "padding", "/1")
    assert page.to_json() == before
    with pytest.raises(blockflow.SchemaError) as e:
        page.edit([{"op": "frobnicate"}])
    assert (e.value.code, e.value.pointer) == ("bad_edit", "/0")
    assert page.to_json() == before


def test_check_after_edits():
    page = blockflow.loads(grad_page())
    page.set_attr("x", "shape", [-1, 5, 5, 1])  # batch size known only at run time
    result = page.check()
    assert result.ok
    assert result.shapes["x:output"] == blockflow.PortInfo("float32", (None, 5, 5, 1))
    assert result.inputs["dw:input"] == ("float32", (None, 5, 5, 1))
    assert result.shapes["dy:output"] == ("float32", None)  # any shape: rank unknown
    assert result.shapes["dw:output"] == ("float32", (3, 3, 1, 1))
    assert result.sources["dw:input"] == "x" and result.sources["total:input"] == "dw"
    problems, shapes = result  # still the 2-tuple it was
    assert shapes is result.shapes

    page.disconnect("dw", "out_backprop")
    result = page.check()
    assert not result.ok
    (p,) = result.errors
    assert (p.code, p.block, p.port, p.status) == ("missing_input", "dw", "out_backprop",
                                                   "ESCHEMA")
    assert p.text == ('<string>: block "dw": port "out_backprop": ' + p.message)
    assert result.inputs["dw:out_backprop"] == (None, None)
    assert result.sources["dw:out_backprop"] is None
    assert result.shapes["dw:output"] == (None, None)  # its block has a problem: unknown
    assert result.shapes["x:output"].shape == (None, 5, 5, 1)  # the rest is still inferred

    page.add_block("w", "Placeholder", {"dtype": "float64", "shape": [2, -1]})
    page.connect("dw", "out_backprop", "w")
    assert page.check().shapes["w:output"] == ("float64", (2, None))
    assert page.check().inputs["dw:out_backprop"] == ("float64", (2, None))
    assert not page.check().ok  # float64 into a float32 gradient

    page.add_block("a", "Identity")  # a cycle: a -> b -> a
    page.add_block("b", "Identity")
    page.connect("a", "input", "b")
    page.connect("b", "input", "a")
    codes = {p.code for p in page.check().errors}
    assert "cycle" in codes, codes


def test_placeholder_dtype_follows_edits():
    page = blockflow.loads(grad_page())
    page.add_block("h", "Placeholder", {"dtype": "bfloat16"})
    page.add_block("o", "Identity")
    page.connect("o", "input", "h")
    # float32 feeds a bfloat16 Placeholder (rounded): the dtype is read after the edits
    out = page.run(feeds={"h": np.array([1.0, 2.0], np.float32)}, fetch="o")
    assert np.asarray(out["o"], np.float32).tolist() == [1.0, 2.0]
    page.set_attr("h", "dtype", "float64")
    out = page.run(feeds={"h": np.array([1.5], np.float64)}, fetch="o")
    assert out["o"].dtype == np.float64


def write_page(path, doc):
    path.write_text(json.dumps(doc))
    return path


def test_save_load_round_trip(tmp_path):
    path = write_page(tmp_path / "grad.json", grad_page())
    page = blockflow.load(path)
    page.add_block("copy", "Identity", ui={"x": 3})
    page.connect("copy", "input", "total")
    page.set_attr("dw", "padding", "SAME")
    page.set_outputs(["dw", "copy"])
    page.name = "saved"
    feeds = {"x": X, "dy": np.ones((1, 5, 5, 1), np.float32)}
    before = page.run(feeds=feeds)
    assert page.save() == str(path)
    assert path.read_text() == page.to_json()
    assert not [p for p in os.listdir(tmp_path) if p != "grad.json"]  # no temporary left

    again = blockflow.load(path)
    assert again.to_json() == page.to_json() and again.name == "saved"
    after = again.run(feeds=feeds)
    assert list(after) == list(before)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    assert after["dw"][:, :, 0, 0].tolist() == DW

    # save to another path; a relative one and a pathlib one alike
    other = tmp_path / "sub"
    other.mkdir()
    assert again.save(other / "copy.json") == str(other / "copy.json")
    assert (other / "copy.json").read_text() == page.to_json()
    cwd = os.getcwd()
    os.chdir(other)
    try:
        again.save("rel.json")
    finally:
        os.chdir(cwd)
    assert blockflow.load(other / "rel.json").to_json() == page.to_json()


def test_save_keeps_permissions_and_fails_cleanly(tmp_path):
    path = write_page(tmp_path / "p.json", grad_page())
    os.chmod(path, 0o640)
    page = blockflow.load(path)
    page.name = "chmod"
    page.save()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert json.loads(path.read_text())["name"] == "chmod"
    with pytest.raises(blockflow.IoError) as e:
        page.save(tmp_path / "missing" / "p.json")
    assert e.value.code == "io_error" and "cannot write the page" in e.value.message
    if os.geteuid() != 0:  # root writes into read-only folders
        os.chmod(tmp_path, 0o500)
        try:
            page.name = "refused"
            with pytest.raises(blockflow.IoError):
                page.save()
        finally:
            os.chmod(tmp_path, 0o700)
        assert json.loads(path.read_text())["name"] == "chmod"  # the old file untouched
    assert sorted(os.listdir(tmp_path)) == ["p.json"]


def test_save_of_a_page_from_a_string_needs_a_path(tmp_path):
    page = blockflow.loads(grad_page())
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.save()
    assert e.value.code == "no_file"
    page.save(tmp_path / "out.json")
    assert blockflow.load(tmp_path / "out.json").to_json() == page.to_json()


def test_to_json_is_canonical_and_reloads():
    page = blockflow.loads(grad_page())
    text = page.to_json()
    assert text.endswith("\n") and text.startswith('{\n  "format": "blockflow.page"')
    assert blockflow.loads(text).to_json() == text


def unfinished_page():
    doc = grad_page()
    del doc["blocks"][3]["inputs"]["out_backprop"]
    doc["blocks"][4]["inputs"]["input"] = "nowhere"
    return doc


def test_load_incomplete(tmp_path):
    path = write_page(tmp_path / "unfinished.json", unfinished_page())
    with pytest.raises(blockflow.SchemaError) as e:
        blockflow.load(path)
    assert {p.code for p in e.value.problems} >= {"missing_input", "bad_link"}
    page = blockflow.load(path, incomplete=True)
    problems = page.check().errors
    assert {(p.code, p.block, p.port) for p in problems} >= {
        ("missing_input", "dw", "out_backprop"), ("bad_link", "total", "input")}, problems
    assert all(p.text.startswith(str(path) + ": ") for p in problems)
    page.connect("dw", "out_backprop", "dy")
    page.connect("total", "input", "dw")
    assert page.check().ok
    out = page.run(feeds=FEEDS, fetch=["dw", "total"])
    assert out["dw"][:, :, 0, 0].tolist() == DW_VALID
    page.save()
    assert blockflow.load(path).to_json() == page.to_json()  # complete now

    same = blockflow.loads(unfinished_page(), incomplete=True)
    assert {p.code for p in same.check().errors} >= {"missing_input", "bad_link"}


def test_load_incomplete_still_refuses_other_problems(tmp_path):
    doc = unfinished_page()
    doc["blocks"][3]["attrs"]["padding"] = "WEIRD"
    path = write_page(tmp_path / "bad.json", doc)
    with pytest.raises(blockflow.AttrError) as e:
        blockflow.load(path, incomplete=True)
    assert e.value.attr == "padding"
    (tmp_path / "syntax.json").write_text("{,")
    with pytest.raises(blockflow.ParseError):
        blockflow.load(tmp_path / "syntax.json", incomplete=True)
    with pytest.raises(blockflow.IoError) as e:
        blockflow.load(tmp_path / "absent.json", incomplete=True)
    assert e.value.code == "io_error" and e.value.page.endswith("absent.json")
    with pytest.raises(blockflow.IoError):
        blockflow.load(tmp_path, incomplete=True)  # a folder
    with pytest.raises(blockflow.LimitError) as e:
        blockflow.load(path, incomplete=True, max_page_bytes=100)
    assert e.value.code == "page_too_large"


def test_incomplete_page_resolves_files_against_its_folder(tmp_path):
    np.save(tmp_path / "w.npy", np.arange(4, dtype=np.float32))
    doc = {"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "w", "type": "Const", "attrs": {"file": "w.npy"}},
        {"id": "y", "type": "Identity"}], "outputs": ["y"]}
    path = write_page(tmp_path / "files.json", doc)
    page = blockflow.load(path, incomplete=True)
    page.connect("y", "input", "w")
    assert page.run()["y"].tolist() == [0, 1, 2, 3]
