"""The teaching calls from Python: Page.explain, Page.gradcheck, Page.add_gradients.

They wrap runtime/teach.c (bf_session_explain, bf_session_gradcheck, bf_session_add_gradients)
and return its JSON as dicts; these tests check what a student would: the terms of an element
add up to its value, a right gradient passes the check and a wrong one fails it, and the
gradient blocks added to a page compute what a float64 numpy reference computes.
"""
import json

import numpy as np
import pytest

import blockflow
import reference


def teach_page(root, name):
    return blockflow.load(str(root / "examples" / "teach" / (name + ".json")))


@pytest.mark.parametrize("name,block", [("stride2_odd_input", "conv"), ("valid_vs_same", "same"),
                                        ("finite_difference_check", "dw"),
                                        ("finite_difference_check", "dx")])
def test_explain_terms_add_up_to_the_value(root, name, block):
    page = teach_page(root, name)
    out = page.run(fetch=block)[block]
    for index in np.ndindex(*out.shape):
        j = page.explain(block, index, max_terms=-1)
        assert j["block"] == block and j["index"] == list(index)
        assert j["value"] == pytest.approx(float(out[index]), abs=0)
        assert not j["truncated"] and len(j["terms"]) == j["n_terms"]
        assert not j["padded_truncated"] and len(j["padded_taps"]) == j["n_padded"]
        total = sum(t["a"]["value"] * t["b"]["value"] for t in j["terms"])
        tol = 1e-12 if out.dtype == np.float64 else 2e-6
        assert abs(total - j["value"]) <= tol * max(j["abs_sum"], 1e-30) + 1e-30, j
        assert abs(j["sum"] - total) <= 1e-12 * max(j["abs_sum"], 1e-30)


def test_explain_options_and_errors(root):
    page = teach_page(root, "stride2_odd_input")
    j = page.explain("conv", (0, 1, 1, 0), max_terms=1)
    assert len(j["terms"]) == 1 and j["truncated"] == (j["n_terms"] > 1)
    assert j["port"] == "output"
    assert page.explain("conv", [0, 1, 1, 0], port="output")["value"] == j["value"]
    with pytest.raises(blockflow.NotFoundError) as e:
        page.explain("nope", (0, 0, 0, 0))
    assert e.value.block == "nope"
    with pytest.raises(blockflow.NotFoundError):
        page.explain("conv", (0, 0, 0, 0), port="nope")
    with pytest.raises(blockflow.UnsupportedError) as e:
        page.explain("x", (0, 0, 0, 0))
    assert e.value.block == "x"
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.explain("conv", (0, 9, 0, 0))
    assert e.value.code == "bad_index"
    with pytest.raises(blockflow.InvalidArgumentError):
        page.explain("conv", (0, 0, 0))  # rank
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        page.explain("conv", (0,) * 9)


def test_gradcheck_passes_on_a_teaching_page(root):
    page = teach_page(root, "finite_difference_check")
    for block in ("dw", "dx", "conv"):
        j = page.gradcheck(block)
        assert j["pass"], j
        assert j["block"] == block
        assert all(c["pass"] for c in j["checks"])
        assert j["adjoint"]["pass"]
    j = page.gradcheck("dw", samples=3, full_below=1, seed=7, eps=1e-3, tolerance=1e-5)
    assert j["checks"][0]["sampled"] and j["checks"][0]["n_checked"] == 3
    assert j["tolerance"] == 1e-5 and j["eps"] == 1e-3


def test_gradcheck_fails_on_wrong_padding(root):
    page = blockflow.load(str(root / "tests" / "data" / "teach_wrong_padding.json"))
    j = page.gradcheck("dw")
    assert j["pass"] is False
    assert j["forward"] == "conv"
    assert not j["checks"][0]["pass"]
    assert j["checks"][0]["max_rel_error"] > 1e-3


def test_gradcheck_errors(root):
    page = teach_page(root, "finite_difference_check")
    with pytest.raises(blockflow.NotFoundError):
        page.gradcheck("nope")
    with pytest.raises(blockflow.UnsupportedError):
        page.gradcheck("x")
    with pytest.raises(blockflow.InvalidArgumentError):
        page.gradcheck("dw", samples=0)
    with pytest.raises(TypeError):
        page.gradcheck("dw", unknown_option=1)


def forward_page(padding, strides):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 6, 3))
    w = rng.standard_normal((3, 2, 3, 4))
    page = {"format": "blockflow.page", "version": 1, "name": "fwd", "blocks": [
        {"id": "x", "type": "Const", "attrs": {"dtype": "float64", "shape": list(x.shape),
                                               "value": x.ravel().tolist()}},
        {"id": "w", "type": "Const", "attrs": {"dtype": "float64", "shape": list(w.shape),
                                               "value": w.ravel().tolist()}},
        {"id": "conv", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
         "attrs": {"strides": strides, "padding": padding}}], "outputs": ["conv"]}
    return blockflow.loads(json.dumps(page)), x, w


@pytest.mark.parametrize("padding,strides", [("SAME", [1, 2, 2, 1]), ("VALID", [1, 1, 1, 1])])
def test_add_gradients_then_run_matches_numpy(padding, strides):
    page, x, w = forward_page(padding, strides)
    made = page.add_gradients("conv")
    assert set(made) == {"dy", "gradients", "blocks"}
    assert set(made["gradients"]) == {"filter", "input"}
    assert made["dy"] in made["blocks"]
    assert set(made["blocks"]) <= {b["id"] for b in page.blocks}
    y = page.run(fetch="conv")["conv"]
    dy = np.random.default_rng(6).standard_normal(y.shape)
    gf, gi = made["gradients"]["filter"], made["gradients"]["input"]
    got = page.run({made["dy"]: dy}, fetch=[gf, gi])
    want_w = reference.conv2d_backprop_filter(x, w.shape, dy, strides, padding)
    want_x = reference.conv2d_backprop_input(x.shape, w, dy, strides, padding)
    np.testing.assert_allclose(got[gf], want_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[gi], want_x, rtol=1e-12, atol=1e-12)
    # an existing source as dy: fresh ids, the same numbers with dy = conv's own output
    made2 = page.add_gradients("conv", dy="conv")
    assert made2["dy"] == "conv"
    assert not set(made2["blocks"]) & set(made["blocks"])
    gf2 = made2["gradients"]["filter"]
    np.testing.assert_allclose(page.run(fetch=gf2)[gf2],
                               reference.conv2d_backprop_filter(x, w.shape, y, strides, padding),
                               rtol=1e-12, atol=1e-12)


def test_add_gradients_errors():
    page, _, _ = forward_page("SAME", [1, 1, 1, 1])
    before = page.to_json()
    with pytest.raises(blockflow.NotFoundError):
        page.add_gradients("nope")
    with pytest.raises(blockflow.UnsupportedError):
        page.add_gradients("x")
    with pytest.raises(blockflow.Error):
        page.add_gradients("conv", dy="nope")
    assert page.to_json() == before  # all or nothing
