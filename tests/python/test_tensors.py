"""Feeds and results of every dtype; non-contiguous, misaligned, big-endian, empty and scalar
arrays; bfloat16 with and without ml_dtypes."""
import numpy as np
import pytest

import blockflow
from blockflow import _tensor
from conftest import identity_page

DTYPES = ["float16", "float32", "float64", "int32", "int64"]


def roundtrip(arr, dtype=None):
    page = blockflow.loads(identity_page(dtype or np.asarray(arr).dtype.name))
    return page.run(feeds={"x": arr})["y"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_roundtrips(dtype):
    rng = np.random.default_rng(1)
    arr = (rng.standard_normal((2, 3, 4)) * 1000).astype(dtype)
    out = roundtrip(arr)
    assert out.dtype == np.dtype(dtype) and out.shape == arr.shape
    assert np.array_equal(out, arr)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_feeds(dtype):
    base = np.arange(2 * 6 * 8, dtype=dtype).reshape(2, 6, 8)
    for view in (base[:, ::2, 1::3], base.transpose(2, 0, 1), base[..., ::-1],
                 np.broadcast_to(base[:1], (3, 6, 8)), np.asfortranarray(base)):
        assert not view.flags.c_contiguous or view is not base
        np.testing.assert_array_equal(roundtrip(view), view)


@pytest.mark.parametrize("dtype", DTYPES)
def test_misaligned_feeds(dtype):
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(10 * itemsize + 1, np.uint8)
    raw[1:] = np.arange(10, dtype=dtype).view(np.uint8)
    arr = np.frombuffer(raw.data, dtype=dtype, count=10, offset=1)  # off by one byte
    assert not arr.flags.aligned
    np.testing.assert_array_equal(roundtrip(arr), np.arange(10, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_big_endian_feeds(dtype):
    arr = np.arange(12, dtype=dtype).reshape(3, 4)
    swapped = arr.astype(np.dtype(dtype).newbyteorder(">"))
    out = roundtrip(swapped, dtype)
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, arr)


def test_scalars_lists_and_empty():
    assert roundtrip(np.float64(2.5)).shape == () and roundtrip(np.float64(2.5)) == 2.5
    assert roundtrip(7, "int64").tolist() == 7  # a Python int is int64
    assert roundtrip([[1.5, 2.5]], "float64").tolist() == [[1.5, 2.5]]
    empty = roundtrip(np.zeros((2, 0, 3), np.float32))
    assert empty.shape == (2, 0, 3) and empty.dtype == np.float32


def test_rank_limit():
    with pytest.raises(blockflow.InvalidArgumentError):
        roundtrip(np.zeros((1,) * 9, np.float32))


@pytest.mark.parametrize("bad", [np.zeros(3, np.uint8), np.zeros(3, bool), np.zeros(3, complex),
                                 np.array(["a"]), np.zeros(3, np.int16)])
def test_unsupported_dtypes(bad):
    page = blockflow.loads(identity_page())
    with pytest.raises(blockflow.DtypeError) as e:
        page.run(feeds={"x": bad})
    assert e.value.code == "unsupported_dtype" and e.value.block == "x"
    assert isinstance(e.value, TypeError)


def test_dtype_must_match_placeholder_with_cast_no():
    page = blockflow.loads(identity_page("float32"))
    with pytest.raises(blockflow.DtypeError, match="fed a float64 tensor, expected float32"):
        page.run(feeds={"x": np.zeros(3)}, cast="no")


def test_feeds_cast_by_numpys_same_kind_rule():
    """float64 feeds a float32 Placeholder (rounded as numpy's astype), int32 an int64 one;
    float never feeds int, and cast="unsafe" allows it (truncation, as astype)."""
    x = np.array([0.1, 1 / 3, -2.5, 1e30], np.float64)
    out = blockflow.loads(identity_page("float32")).run(feeds={"x": x})["y"]
    assert out.dtype == np.float32
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x.astype(np.float32))
    i = np.array([1, -2, 3], np.int32)
    out = blockflow.loads(identity_page("int64")).run(feeds={"x": i})["y"]
    assert out.dtype == np.int64 and out.tolist() == [1, -2, 3]
    page = blockflow.loads(identity_page("int32"))
    with pytest.raises(blockflow.DtypeError, match="'same_kind' does not convert float64"):
        page.run(feeds={"x": np.array([1.5])})
    assert page.run(feeds={"x": np.array([1.5, -2.7])}, cast="unsafe")["y"].tolist() == [1, -2]
    with pytest.raises(blockflow.InvalidArgumentError, match="cast must be one of"):
        page.run(feeds={"x": i}, cast="sometimes")


def test_bfloat16_page_with_float32_arrays():
    """A bfloat16 Placeholder takes float32 (rounded to nearest even, NaN kept); results come
    back as ml_dtypes.bfloat16, or as float32 (exact widening) without ml_dtypes."""
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, np.inf, np.nan, 3e38, 1e-40],
                 np.float32)
    out = roundtrip(x, "bfloat16")
    want = np.array([1.0, 1.0, 1 + 2 ** -6, -2.5, np.inf, np.nan, 2.9913653e38, 0.0], np.float32)
    if blockflow.bfloat16 is None:
        assert out.dtype == np.float32
    else:
        assert out.dtype == blockflow.bfloat16
        out = out.astype(np.float32)
    np.testing.assert_array_equal(out[:6], want[:6])
    assert abs(out[6] - 3e38) / 3e38 < 2 ** -8 and abs(out[7]) < 1.1e-40


def test_bfloat16_rounding_matches_the_library():
    """f32_to_bf16_bits against the C rounding, through a Const converting a float32 file."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(4096).astype(np.float32) * 1e3
    got = roundtrip(x, "bfloat16").astype(np.float32)
    bits = _tensor.f32_to_bf16_bits(x)
    np.testing.assert_array_equal(got, (bits.astype(np.uint32) << 16).view(np.float32))


def test_bfloat16_native_arrays(monkeypatch):
    """The ml_dtypes path: arrays of numpy's bfloat16 dtype go in and come out as raw bfloat16.
    Without ml_dtypes a stand-in two-byte dtype exercises the same code."""
    standin = blockflow.bfloat16 or np.dtype([("bf16", "<u2")])
    monkeypatch.setattr(_tensor, "BFLOAT16", standin)
    bits = np.array([0x3F80, 0xC020, 0x7F80], np.uint16)  # 1, -2.5, inf
    arr = bits.view(standin)
    out = roundtrip(arr, "bfloat16")
    assert out.dtype == standin
    assert out.view(np.uint16).tolist() == bits.tolist()


def test_ops_in_float64_keep_float64():
    x = np.ones((1, 3, 3, 1))
    assert blockflow.ops.conv2d(x, np.ones((3, 3, 1, 1)), [1] * 4, "VALID").dtype == np.float64
