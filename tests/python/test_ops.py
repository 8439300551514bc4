"""blockflow.ops: each of the six convolution ops against a float64 numpy reference, the C
library's own result through the CLI (bit for bit), and PyTorch when it is installed."""
import itertools
import json
import subprocess

import numpy as np
import pytest

import blockflow
import reference as ref

OPS = ["conv2d", "conv2d_backprop_filter", "conv2d_backprop_input", "depthwise_conv2d_native",
       "depthwise_conv2d_native_backprop_filter", "depthwise_conv2d_native_backprop_input"]
TF_NAMES = {"conv2d": "Conv2D", "conv2d_backprop_filter": "Conv2DBackpropFilter",
            "conv2d_backprop_input": "Conv2DBackpropInput",
            "depthwise_conv2d_native": "DepthwiseConv2dNative",
            "depthwise_conv2d_native_backprop_filter": "DepthwiseConv2dNativeBackpropFilter",
            "depthwise_conv2d_native_backprop_input": "DepthwiseConv2dNativeBackpropInput"}

# (padding, stride, dilation, data_format[, (pad_h, pad_w) for EXPLICIT, symmetric]): every
# padding and layout, with stride and dilation. EXPLICIT without pads is asymmetric.
GEOMS = [("VALID", 1, 1, "NHWC"), ("SAME", 2, 1, "NHWC"), ("SAME", 1, 2, "NCHW"),
         ("EXPLICIT", 2, 1, "NCHW"), ("EXPLICIT", 1, 2, "NHWC"), ("VALID", 2, 2, "NCHW"),
         ("SAME", 3, 1, "NHWC"), ("EXPLICIT", 2, 1, "NHWC", (1, 2)),
         ("EXPLICIT", 1, 2, "NCHW", (2, 1))]


def make_case(op, padding, stride, dilation, fmt, sym=None, *, dtype, seed=0, groups=1):
    """Random arguments for `op` as (args, kwargs) in TensorFlow's order, plus the reference."""
    rng = np.random.default_rng(seed)
    n, h, w, c, kh, kw = 2, 7, 6, 4, 3, 2
    depthwise = op.startswith("depthwise")
    out_c = 3 if depthwise else 6  # channel multiplier, or output channels
    fshape = (kh, kw, c, out_c) if depthwise else (kh, kw, c // groups, out_c)
    strides = [1, stride, stride, 1] if fmt == "NHWC" else [1, 1, stride, stride]
    dilations = [1, dilation, dilation, 1] if fmt == "NHWC" else [1, 1, dilation, dilation]
    explicit = []
    if padding == "EXPLICIT":
        ph, pw = sym or (None, None)
        hw = [ph, ph, pw, pw] if sym else [1, 2, 0, 1]
        explicit = [0, 0] + hw + [0, 0] if fmt == "NHWC" else [0, 0, 0, 0] + hw
    xshape = (n, h, w, c) if fmt == "NHWC" else (n, c, h, w)
    oh, ow = ref.output_hw((h, w), (kh, kw), strides, padding, explicit, fmt, dilations)
    yc = c * out_c if depthwise else out_c
    yshape = (n, oh, ow, yc) if fmt == "NHWC" else (n, yc, oh, ow)
    x = rng.standard_normal(xshape).astype(dtype)
    f = rng.standard_normal(fshape).astype(dtype)
    dy = rng.standard_normal(yshape).astype(dtype)
    attrs = dict(explicit_paddings=explicit, data_format=fmt, dilations=dilations)
    if op.endswith("backprop_filter"):
        args = (x, list(fshape), dy, strides, padding)
    elif op.endswith("backprop_input"):
        args = (list(xshape), f, dy, strides, padding)
    else:
        args = (x, f, strides, padding)
    expected = getattr(ref, op)(*args, **attrs)
    return args, attrs, expected


CASES = list(itertools.product(OPS, GEOMS))


def geom_id(g):
    return "-".join(map(str, g[:4])) + ("-sym" if len(g) > 4 else "")


@pytest.mark.parametrize("op,geom", CASES, ids=[f"{o}-{geom_id(g)}" for o, g in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_op_against_reference(op, geom, dtype):
    args, attrs, expected = make_case(op, *geom, dtype=dtype)
    got = getattr(blockflow.ops, op)(*args, **attrs)
    assert got.dtype == np.dtype(dtype)
    assert got.shape == expected.shape
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * np.abs(expected).max())


@pytest.mark.parametrize("op", ["conv2d", "conv2d_backprop_filter", "conv2d_backprop_input"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_grouped_against_reference(op, fmt):
    args, attrs, expected = make_case(op, "SAME", 1, 1, fmt, dtype="float64", seed=3, groups=2)
    got = getattr(blockflow.ops, op)(*args, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", OPS)
def test_low_precision(op, dtype):
    """float16 (and bfloat16 fed as float32 where ml_dtypes is absent) within their rounding."""
    if dtype == "bfloat16" and blockflow.bfloat16 is None:
        pytest.skip("ml_dtypes is not installed (bfloat16 pages are covered in test_tensors)")
    np_dtype = np.float16 if dtype == "float16" else blockflow.bfloat16
    args, attrs, _ = make_case(op, "SAME", 1, 1, "NHWC", dtype=np.float32, seed=5)
    args = tuple(a.astype(np_dtype) if isinstance(a, np.ndarray) else a for a in args)
    exact = getattr(ref, op)(*[a.astype(np.float64) if isinstance(a, np.ndarray) else a
                               for a in args], **attrs)
    got = getattr(blockflow.ops, op)(*args, **attrs)
    assert got.dtype == np.dtype(np_dtype)
    eps = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=0,
                               atol=2 * eps * np.abs(exact).max())


@pytest.mark.parametrize("op", OPS)
def test_op_matches_cli(op, cli, tmp_path):
    """The same one-block page through `blockflow run`: the Python path adds no arithmetic, so
    the results are identical to the bit. Both on one thread: with several, a reduction's
    partial sums may be added in another order from run to run (the last bit moves)."""
    args, attrs, _ = make_case(op, "SAME", 2, 1, "NHWC", dtype="float32", seed=7)
    got = getattr(blockflow.ops, op)(*args, **attrs, threads=1)
    ports = (["input", "filter_sizes", "out_backprop"] if op.endswith("backprop_filter") else
             ["input_sizes", "filter", "out_backprop"] if op.endswith("backprop_input") else
             ["input", "filter"])
    blocks, feeds = [], []
    for port, value in zip(ports, args):
        if port.endswith("_sizes"):
            blocks.append({"id": port, "type": "Const",
                           "attrs": {"dtype": "int32", "shape": [4], "value": value}})
        else:
            np.save(tmp_path / f"{port}.npy", value)
            blocks.append({"id": port, "type": "Placeholder", "attrs": {"dtype": "float32"}})
            feeds += ["--feed", f"{port}={tmp_path / (port + '.npy')}"]
    blocks.append({"id": "op", "type": TF_NAMES[op], "inputs": {p: p for p in ports},
                   "attrs": dict(attrs, strides=args[len(ports)], padding=args[len(ports) + 1])})
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"format": "blockflow.page", "version": 1, "blocks": blocks,
                                "outputs": ["op"]}))
    subprocess.run([str(cli), "run", str(page), "--out", str(tmp_path), "--threads", "1",
                    *feeds], check=True, capture_output=True)
    want = np.load(tmp_path / "op.npy")
    assert want.dtype == got.dtype and want.shape == got.shape
    assert np.array_equal(want.view(np.uint32), got.view(np.uint32))


# ---- PyTorch, where installed -----------------------------------------------------------------
def _torch_op(op, args, attrs):
    """The op through torch.nn.functional / torch.nn.grad, computed in float64."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    fmt = attrs["data_format"]
    t = lambda a: torch.from_numpy(np.asarray(a, np.float64))  # noqa: E731
    nchw = (lambda a: t(a).permute(0, 3, 1, 2)) if fmt == "NHWC" else t
    back = (lambda a: a.permute(0, 2, 3, 1)) if fmt == "NHWC" else (lambda a: a)
    hw = lambda v: (v[1], v[2]) if fmt == "NHWC" else (v[2], v[3])  # noqa: E731
    strides, padding = hw(args[-2]), args[-1]
    dil = hw(attrs["dilations"])
    # torch pads symmetrically: VALID and symmetric EXPLICIT cases only
    ex = attrs["explicit_paddings"]
    pad = (0, 0) if padding == "VALID" else hw(ex[::2])
    assert padding == "VALID" or list(ex[::2]) == list(ex[1::2])
    def oihw(f, depthwise):
        f = t(f)
        if depthwise:  # [kh, kw, C, M] -> [C*M, 1, kh, kw]
            kh, kw, c, m = f.shape
            return f.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)
        return f.permute(3, 2, 0, 1)
    depthwise = op.startswith("depthwise")
    kw_args = dict(stride=strides, padding=pad, dilation=dil)
    if op in ("conv2d", "depthwise_conv2d_native"):
        x = nchw(args[0])
        groups = x.shape[1] if depthwise else 1
        return back(F.conv2d(x, oihw(args[1], depthwise), groups=groups, **kw_args)).numpy()
    if op.endswith("backprop_input"):
        sizes = list(args[0])
        size = ([sizes[0], sizes[3], sizes[1], sizes[2]] if fmt == "NHWC" else sizes)
        groups = size[1] if depthwise else 1
        return back(torch.nn.grad.conv2d_input(size, oihw(args[1], depthwise), nchw(args[2]),
                                               groups=groups, **kw_args)).numpy()
    x, fs, dy = nchw(args[0]), list(args[1]), nchw(args[2])
    if depthwise:
        kh, kw, c, m = fs
        dw = torch.nn.grad.conv2d_weight(x, [c * m, 1, kh, kw], dy, groups=c, **kw_args)
        return dw.reshape(c, m, kh, kw).permute(2, 3, 0, 1).numpy()
    dw = torch.nn.grad.conv2d_weight(x, [fs[3], fs[2], fs[0], fs[1]], dy, **kw_args)
    return dw.permute(2, 3, 1, 0).numpy()


TORCH_GEOMS = [g for g in GEOMS if g[0] == "VALID" or len(g) == 5]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", TORCH_GEOMS, ids=[geom_id(g) for g in TORCH_GEOMS])
def test_op_against_torch(op, geom):
    args, attrs, expected = make_case(op, *geom, dtype="float64", seed=11)
    want = _torch_op(op, args, attrs)
    got = getattr(blockflow.ops, op)(*args, **attrs)
    np.testing.assert_allclose(want, expected, rtol=1e-10, atol=1e-10)  # the reference, too
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_signature_defaults_are_tensorflows():
    """Omitted attributes take TensorFlow's defaults (NHWC, no dilation, no explicit pads)."""
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1)
    dw = blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], np.ones((1, 5, 5, 1), np.float32),
                                              [1, 1, 1, 1], "SAME")
    assert dw[:, :, 0, 0].tolist() == [[160, 210, 176], [250, 325, 270], [240, 310, 256]]


def test_op_error_names_block_and_attr():
    x = np.zeros((1, 5, 5, 1), np.float32)
    with pytest.raises(blockflow.AttrError) as e:
        blockflow.ops.conv2d(x, np.zeros((3, 3, 1, 1), np.float32), [1, 1, 1], "VALID")
    assert e.value.block == "Conv2D" and e.value.attr == "strides"
    with pytest.raises(blockflow.ShapeError) as e:
        blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], np.zeros((1, 4, 4, 1), np.float32),
                                             [1, 1, 1, 1], "VALID")
    assert e.value.block == "Conv2DBackpropFilter" and e.value.port == "out_backprop"
    with pytest.raises(blockflow.DtypeError) as e:
        blockflow.ops.conv2d(x.astype(np.uint8), np.zeros((3, 3, 1, 1)), [1] * 4, "VALID")
    assert e.value.port == "input"


def test_sessions_are_cached_per_signature_and_results_handed_over():
    """A second call of a signature reuses its session (shapes may change between calls);
    another attribute or dtype is another session; the result is a writeable array over the
    library's memory, not touched by later calls; clear_cache() frees the sessions."""
    from blockflow import _tensor, ops
    ops.clear_cache()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    a = ops.conv2d(x, w, [1, 1, 1, 1], "VALID")
    entry = next(iter(ops._cache.values()))
    x2 = rng.standard_normal((2, 9, 7, 2)).astype(np.float32)
    b = ops.conv2d(x2, w, [1, 1, 1, 1], "VALID")
    assert len(ops._cache) == 1 and next(iter(ops._cache.values())) is entry
    assert isinstance(a.base, _tensor.Result) and a.flags.writeable and b.shape == (2, 7, 5, 4)
    want = lambda x: ref.conv2d(x.astype(np.float64), w.astype(np.float64), [1, 1, 1, 1],
                                "VALID", [], "NHWC", [1, 1, 1, 1])  # noqa: E731
    np.testing.assert_allclose(a, want(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, want(x2), rtol=1e-5, atol=1e-5)
    ops.conv2d(x, w, [1, 1, 1, 1], "SAME")
    ops.conv2d(x.astype(np.float64), w.astype(np.float64), [1, 1, 1, 1], "VALID")
    assert len(ops._cache) == 3
    a[...] = 0  # the caller's own memory: the next call is not affected
    np.testing.assert_allclose(ops.conv2d(x, w, [1, 1, 1, 1], "VALID"), want(x), rtol=1e-5,
                               atol=1e-5)
    xs = x[:, ::-1]  # a view that is not C-contiguous: copied once, same answer
    np.testing.assert_allclose(ops.conv2d(xs, w, [1, 1, 1, 1], "VALID"), want(xs), rtol=1e-5,
                               atol=1e-5)
    ops.clear_cache()
    assert not ops._cache
