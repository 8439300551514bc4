"""Seeded random graphs of blockflow's differentiable blocks, each built twice: as a page (JSON)
and, step by step beside it, as the same computation in PyTorch (float64), the reference that
test_grad_reference.py compares blockflow's gradients with.

    g = graphgen.generate(seed)            # deterministic: random.Random(seed) only
    g.page                                 # {"format": "blockflow.page", ..., "outputs": [loss]}
    g.variables                            # {id: numpy value as given to the Variable}
    g.loss                                 # the loss ref; g.loss_t its torch value
    g.reference_gradients()                # {id: float64 numpy gradient of the loss}

A graph has 1 to 3 Variables and 2 to 8 chosen ops (plus the blocks that make a scalar loss of
every branch), each op picked among OPS so that shapes fit: the generator tracks every value's
shape, dtype and reference value. The reference value is also how it avoids the points where a
gradient is not defined (Relu/Abs at 0, Relu6 at 6, Maximum/Minimum ties, Log/Sqrt/Div near 0)
and near-ties of Max/Min/MaxPool, which blockflow and torch could break differently. Exact ties
are made on purpose: "quantised" Variables hold multiples of 1/4, and a max over them (MaxPool,
Max, Min) then has windows with equal maxima, where TensorFlow's rules apply (MaxPool: the whole
gradient goes to the first maximum in the window's row-major order; Max/Min: it is shared
equally); such ties are only kept when both implementations see them as ties, i.e. when the
value was computed from quantised values by ops that are exact functions of their inputs
(`exact` below: +, -, *, /, sqrt, max, min, shape ops), never through a sum whose order may
differ.

Each graph records `tags`, the features it exercises ("bcast:operand_lower_rank",
"NCHW:MaxPool", "same_odd_pad:Conv2D", "pool_ties", "fanout", "loss:xent", ...), so the test
can assert the seed list covers every feature it claims to.

Reference semantics are TensorFlow's, written with torch ops in float64: NHWC/NCHW by permuting
to torch's NCHW, SAME padding as TF pads (the odd pixel after), AvgPool dividing by the number
of non-padded taps, MaxPool padding with -inf, depthwise and grouped convolutions as torch's
grouped conv2d, softmax cross entropy as -sum(labels * log_softmax(logits)).
"""
from __future__ import annotations

import json
import math
import random

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
MAX_ELEMENTS = 320          # largest tensor a graph makes
BIG_ELEMENTS = 6000         # ... a "big" one (15 % of graphs): many channels, vector paths
INLINE_MAX = 4000           # larger Variables and Consts go in .npy files (Graph.files)
MAX_ABS = 200.0             # values beyond this make the op be chosen again

# Every op the generator can place: its input ports and the attrs it sets, as written in the
# page (the test checks these names against the block catalogue before anything runs).
OPS = {
    "Identity": (["input"], []),
    "Neg": (["x"], []), "Square": (["x"], []), "Sqrt": (["x"], []), "Rsqrt": (["x"], []),
    "Exp": (["x"], []), "Log": (["x"], []), "Reciprocal": (["x"], []), "Abs": (["x"], []),
    "Sigmoid": (["x"], []), "Tanh": (["x"], []),
    "Relu": (["features"], []), "Relu6": (["features"], []), "Softplus": (["features"], []),
    "Add": (["x", "y"], []), "AddV2": (["x", "y"], []), "Sub": (["x", "y"], []),
    "Mul": (["x", "y"], []), "Div": (["x", "y"], []), "RealDiv": (["x", "y"], []),
    "Maximum": (["x", "y"], []), "Minimum": (["x", "y"], []),
    "SquaredDifference": (["x", "y"], []),
    "AddN": (["inputs_0", "inputs_1", "inputs_2", "inputs_3"], []),
    "MatMul": (["a", "b"], ["transpose_a", "transpose_b"]),
    "BiasAdd": (["value", "bias"], ["data_format"]),
    "Reshape": (["tensor", "shape"], []),
    "Transpose": (["x", "perm"], []),
    "Cast": (["x"], ["SrcT", "DstT"]),
    "ExpandDims": (["input", "dim"], []),
    "Squeeze": (["input"], ["squeeze_dims"]),
    "BroadcastTo": (["input", "shape"], []),
    "Tile": (["input", "multiples"], []),
    "Sum": (["input", "reduction_indices"], ["keep_dims"]),
    "Mean": (["input", "reduction_indices"], ["keep_dims"]),
    "Max": (["input", "reduction_indices"], ["keep_dims"]),
    "Min": (["input", "reduction_indices"], ["keep_dims"]),
    "Conv2D": (["input", "filter"], ["strides", "padding", "data_format", "dilations"]),
    "DepthwiseConv2dNative": (["input", "filter"],
                              ["strides", "padding", "data_format", "dilations"]),
    "MaxPool": (["input"], ["ksize", "strides", "padding", "data_format"]),
    "AvgPool": (["value"], ["ksize", "strides", "padding", "data_format"]),
    "Softmax": (["logits"], []),
    "LogSoftmax": (["logits"], []),
    "L2Loss": (["t"], []),
    "SoftmaxCrossEntropyWithLogits": (["features", "labels"], []),
    "SparseSoftmaxCrossEntropyWithLogits": (["features", "labels"], []),
}
# Output ports the generator reads by name (the first output otherwise).
OUTPUT_PORTS = {"SoftmaxCrossEntropyWithLogits": "loss",
                "SparseSoftmaxCrossEntropyWithLogits": "loss"}
# ... and their second output, used as a value too
SECOND_PORTS = {"SoftmaxCrossEntropyWithLogits": "backprop",
                "SparseSoftmaxCrossEntropyWithLogits": "backprop"}
# Blocks the generator uses that need no gradient of their own.
SUPPORT_BLOCKS = ("Variable", "Const")

UNARY = {
    # name: (torch fn, domain check on the input, exact)
    "Identity": (lambda x: x, None, True),
    "Neg": (torch.neg, None, True),
    "Square": (lambda x: x * x, lambda x: x.abs().max() < 12, True),
    "Sqrt": (torch.sqrt, lambda x: x.min() > 0.1, True),
    "Rsqrt": (torch.rsqrt, lambda x: x.min() > 0.1, False),
    "Exp": (torch.exp, lambda x: x.max() < 3.5, False),
    "Log": (torch.log, lambda x: x.min() > 0.1, False),
    "Reciprocal": (torch.reciprocal, lambda x: x.abs().min() > 0.2, True),
    "Abs": (torch.abs, lambda x: x.abs().min() > 0.02, True),
    "Sigmoid": (torch.sigmoid, None, False),
    "Tanh": (torch.tanh, None, False),
    "Relu": (torch.relu, lambda x: x.abs().min() > 0.02, True),
    "Relu6": (lambda x: torch.clamp(x, 0.0, 6.0),
              lambda x: x.abs().min() > 0.02 and (x - 6).abs().min() > 0.02, True),
    "Softplus": (F.softplus, lambda x: x.abs().max() < 15, False),
}
BINARY = {
    # name: (torch fn, check(x, y), exact)
    "Add": (torch.add, None, True),
    "AddV2": (torch.add, None, True),
    "Sub": (torch.sub, None, True),
    "Mul": (torch.mul, None, True),
    "Div": (torch.div, lambda x, y: y.abs().min() > 0.25, True),
    "RealDiv": (torch.div, lambda x, y: y.abs().min() > 0.25, True),
    "Maximum": (torch.maximum, lambda x, y: (x - y).abs().min() > 0.02, True),
    "Minimum": (torch.minimum, lambda x, y: (x - y).abs().min() > 0.02, True),
    "SquaredDifference": (lambda x, y: (x - y) * (x - y), None, True),
}
REDUCE = {"Sum": torch.sum, "Mean": torch.mean, "Max": torch.amax, "Min": torch.amin}

# How often each op is tried (relative weights).
WEIGHTS = dict({k: 1.0 for k in UNARY}, **{k: 1.4 for k in BINARY})
WEIGHTS.update({"Identity": 0.4, "AddN": 1.0, "MatMul": 3.0, "BiasAdd": 2.0, "Reshape": 1.0,
                "Transpose": 1.0, "Cast": 0.6, "ExpandDims": 1.0, "Squeeze": 1.0,
                "BroadcastTo": 0.8, "Tile": 0.8, "Sum": 1.0, "Mean": 1.0, "Max": 1.0,
                "Min": 0.8, "Conv2D": 7.0, "DepthwiseConv2dNative": 5.0, "MaxPool": 3.0,
                "AvgPool": 4.0, "Softmax": 1.2, "LogSoftmax": 1.2, "L2Loss": 0.3,
                "SoftmaxCrossEntropyWithLogits": 2.5,
                "SparseSoftmaxCrossEntropyWithLogits": 2.0})
IMAGE_OPS = ("Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool")


class Node:
    """A value of the graph: where it comes from in the page and what it is in torch."""

    def __init__(self, ref, t, dtype, exact, kind="op"):
        self.ref = ref            # "block" or "block:port"
        self.t = t                # torch float64 tensor (the reference value)
        self.dtype = dtype        # blockflow dtype name: "float32" or "float64"
        self.exact = exact        # equal values here are equal in blockflow too (see module doc)
        self.kind = kind          # "variable", "const" or "op"
        self.uses = 0

    @property
    def shape(self):
        return tuple(self.t.shape)


def _n(shape):
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def _bcast(a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def same_pads(size, k_eff, stride):
    """TF's SAME: out = ceil(size / stride), the odd padding pixel after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k_eff - size, 0)
    return total // 2, total - total // 2, out


def _nchw(t, fmt):
    return t if fmt == "NCHW" else t.permute(0, 3, 1, 2)


def _from_nchw(t, fmt):
    return t if fmt == "NCHW" else t.permute(0, 2, 3, 1)


def _spatial(fmt, a, b, fill=1):
    """A 4-list in data_format order with (a, b) at H and W."""
    return [fill, fill, a, b] if fmt == "NCHW" else [fill, a, b, fill]


class Graph:
    def __init__(self, seed, available=None, float32=None, attempt=0, tdtype=F64):
        self.seed = seed
        self.tdtype = tdtype      # torch's dtype: float64, or float32 to measure conditioning
        self.attempt = attempt
        self.rng = random.Random(seed if attempt == 0 else f"{seed}/{attempt}")
        self.available = set(OPS) if available is None else set(available) & set(OPS)
        self.dtype = ("float32" if self.rng.random() < 0.12 else "float64") \
            if float32 is None else ("float32" if float32 else "float64")
        self.blocks = []
        self.nodes = []           # values ops may take as their main input (not Consts)
        self.all_nodes = []
        self.variables = {}       # id -> numpy value (in the Variable's dtype)
        self.leaves = {}          # id -> torch leaf (float64, requires_grad)
        self.max_vars = self.rng.choices((1, 2, 3), (1, 2, 2))[0]
        self.tags = set()
        self.ops = []             # types of the ops chosen, in order
        self.counter = 0
        self.f32_used = self.dtype == "float32"
        self.labels_variable = False  # a cross entropy's labels: always from a Variable
        self.prefer_variables = False  # operands: Variables while the budget allows
        self.big = self.rng.random() < 0.15
        self.max_elements = BIG_ELEMENTS if self.big else MAX_ELEMENTS
        self.files = {}           # .npy file name -> array, for the page's folder

    # ---- blocks and values ------------------------------------------------------------------
    def _id(self, stem):
        self.counter += 1
        return f"{stem}{self.counter}"

    def _add_block(self, type_, inputs=None, attrs=None, stem=None):
        bid = self._id(stem or type_.lower())
        blk = {"id": bid, "type": type_}
        if inputs:
            blk["inputs"] = inputs
        if attrs:
            blk["attrs"] = attrs
        self.blocks.append(blk)
        return bid

    def _rand_values(self, shape, kind, dtype):
        r = self.rng
        n = _n(shape)
        if kind == "quant":     # multiples of 1/4, never 0: windows with equal maxima
            vals = [r.choice((-1, 1)) * r.randint(1, 6) / 4 for _ in range(n)]
        elif kind == "positive":
            vals = [r.uniform(0.5, 2.0) for _ in range(n)]
        elif kind == "denominator":
            vals = [r.choice((-1, 1)) * r.uniform(0.5, 2.0) for _ in range(n)]
        else:                   # away from 0, both signs
            vals = [r.choice((-1, 1)) * r.uniform(0.2, 1.5) for _ in range(n)]
        a = np.array(vals, dtype=np.float64).reshape(shape)
        return a.astype(np.float32) if dtype == "float32" else a

    def _value_attrs(self, value, dtype):
        """The attrs of a Variable or Const holding `value`: inline, or a .npy file."""
        if value.size > INLINE_MAX:
            name = f"v{len(self.files) + 1}.npy"
            self.files[name] = value
            return {"file": name}
        return {"dtype": dtype, "shape": list(value.shape),
                "value": [float(v) for v in value.reshape(-1)]}

    def _source(self, shape, dtype, kind="normal", variable=None, p_var=0.7):
        """A new Variable (with probability p_var while the budget allows, or when `variable`
        says so) or Const."""
        if variable is None:
            variable = len(self.variables) < self.max_vars and (
                self.prefer_variables or self.rng.random() < p_var)
        value = self._rand_values(shape, kind, dtype)
        attrs = self._value_attrs(value, dtype)
        t = torch.tensor(value.astype(np.float64), dtype=self.tdtype)
        if variable:
            bid = self._add_block("Variable", attrs=attrs, stem="var")
            t.requires_grad_(True)
            self.variables[bid] = value
            self.leaves[bid] = t
            node = Node(bid, t, dtype, True, "variable")
            self.nodes.append(node)
        else:
            bid = self._add_block("Const", attrs=attrs, stem="const")
            node = Node(bid, t, dtype, True, "const")
        self.all_nodes.append(node)
        return node

    def variable(self, shape, kind="normal"):
        """A new Variable of the graph's dtype (for the hand-written graphs)."""
        return self._source(tuple(shape), self.dtype, kind, variable=True)

    def _int_const(self, values, scalar=False):
        dt = self.rng.choice(("int32", "int64"))
        vals = [int(v) for v in values]
        attrs = {"dtype": dt, "shape": [] if scalar else [len(vals)], "value": vals}
        return self._add_block("Const", attrs=attrs, stem="const")

    def _op(self, type_, inputs, t, dtype, exact, attrs=None, port=None):
        """Place an op block whose inputs are {port: Node or block id}; returns its Node."""
        wired = {}
        for p, src in inputs.items():
            if isinstance(src, Node):
                src.uses += 1
                wired[p] = src.ref
            else:
                wired[p] = src
        bid = self._add_block(type_, wired, attrs)
        node = Node(f"{bid}:{port}" if port else bid, t, dtype, exact)
        self.nodes.append(node)
        self.all_nodes.append(node)
        self.ops.append(type_)
        self.tags.add("op:" + type_)
        if dtype == "float32":
            self.f32_used = True
        return node

    def _ok_values(self, t):
        return bool(torch.isfinite(t).all()) and float(t.abs().max()) < MAX_ABS \
            if t.numel() else True

    def _gap_ok(self, groups, exact):
        """groups: [G, k] values a max or min picks from. False when two candidates are close
        but not equal (the two implementations could pick differently), or equal while the
        value is not exact. Returns (ok, has_ties)."""
        if groups.shape[1] < 2 or groups.shape[0] == 0:
            return True, False
        top2 = torch.topk(groups, 2, dim=1).values
        gap = top2[:, 0] - top2[:, 1]
        scale = torch.clamp(top2[:, 0].abs(), min=1.0)
        rel = 1e-4 if self.f32_used else 1e-7
        ties = gap == 0
        if bool(((gap > 0) & (gap < rel * scale)).any()):
            return False, False
        if bool(ties.any()) and not exact:
            return False, False
        return True, bool(ties.any())

    # ---- choosing an operand --------------------------------------------------------------
    def _operand_shape(self, s):
        """A shape that broadcasts with s: the same, a scalar, a suffix of s (lower rank), a
        suffix with some dims 1, or a higher rank one that also widens s's dims of size 1 and
        may have 1 where s has not (both broadcast)."""
        r = self.rng
        rank = len(s)
        choice = r.choices(("same", "scalar", "lower", "ones", "higher"),
                           (2, 1, 3 if rank else 0, 3 if rank else 0, 3))[0]
        if choice == "same":
            return tuple(s)
        if choice == "scalar":
            return ()
        if choice == "lower":
            return tuple(s[r.randint(1, rank):])
        if choice == "ones":
            return tuple(1 if (r.random() < 0.5 and d > 1) else d
                         for d in s[r.randint(0, rank - 1):])
        hi = max(0, min(2, 4 - rank))
        lead = [r.randint(2, 3) for _ in range(r.randint(min(hi, 0 if 1 in s else 1), hi))]
        body = []
        for d in s:
            if d == 1 and r.random() < 0.8:
                body.append(r.randint(2, 3))
            elif d > 1 and r.random() < 0.25:
                body.append(1)
            else:
                body.append(d)
        return tuple(lead + body)

    def _bcast_tags(self, x, y, out):
        """Tags of a broadcasting binary op x (op) y -> out."""
        tags = set()
        for u, v in ((x, y), (y, x)):
            if len(u) == 0 and len(v):
                tags.add("bcast:scalar")
            elif len(u) < len(v):
                tags.add("bcast:rank_difference")
            if u != out:
                tags.add("bcast:input_expanded")
            if 1 in u and u != out and len(u):
                tags.add("bcast:operand_has_ones")
        if x != out and y != out and len(x) and len(y):
            tags.add("bcast:both_ways")     # e.g. [3,1] + [2,1,4] -> [2,3,4]
        return tags

    def _pick_existing(self, pred):
        cands = [n for n in self.nodes if pred(n)]
        return self.rng.choice(cands) if cands else None

    # ---- ops ------------------------------------------------------------------------------
    def op_unary(self, name, a):
        fn, check, exact = UNARY[name]
        if a.t.numel() and check is not None and not check(a.t.detach()):
            return None
        t = fn(a.t)
        if not self._ok_values(t):
            return None
        return self._op(name, {OPS[name][0][0]: a}, t, a.dtype, exact and a.exact)

    def op_binary(self, name, a, b=None):
        """a (op) b, or b (op) a; b: a value already in the graph (fan-out) or a new Variable
        or Const of a shape that broadcasts with a's. With b given: exactly a (op) b."""
        fn, check, exact = BINARY[name]
        r = self.rng
        given = b is not None
        if not given and r.random() < 0.3:  # a value already in the graph: fan-out
            b = self._pick_existing(lambda n: n.dtype == a.dtype and (
                (s := _bcast(a.shape, n.shape)) is not None and _n(s) <= self.max_elements))
        tags = set()
        if b is None:
            shape = self._operand_shape(a.shape)
            out = _bcast(a.shape, shape)
            if out is None or _n(out) > self.max_elements:
                return None
            b = self._source(shape, a.dtype, "denominator" if name in ("Div", "RealDiv")
                             else r.choice(("normal", "normal", "positive")))
        if b.uses or b is a:
            tags.add("fanout")
        x, y = (a, b) if given or r.random() < 0.6 else (b, a)
        if check is not None and not check(x.t.detach(), y.t.detach()):
            return None
        t = fn(x.t, y.t)
        if not self._ok_values(t):
            return None
        tags |= self._bcast_tags(x.shape, y.shape, tuple(t.shape))
        if x is y:
            tags.add("fanout:same_value_twice")
        self.tags |= tags
        return self._op(name, {"x": x, "y": y}, t, a.dtype, exact and x.exact and y.exact)

    def op_AddN(self, a):
        r = self.rng
        terms = [a]
        for _ in range(r.randint(1, 3)):
            if r.random() < 0.4:
                b = self._pick_existing(lambda n: n.dtype == a.dtype and n.shape == a.shape)
                if b is not None:
                    self.tags.add("fanout")
                    terms.append(b)
                    continue
            terms.append(self._source(a.shape, a.dtype))
        r.shuffle(terms)
        t = terms[0].t
        for n in terms[1:]:
            t = t + n.t
        if not self._ok_values(t):
            return None
        return self._op("AddN", {f"inputs_{i}": n for i, n in enumerate(terms)}, t, a.dtype,
                        len(terms) == 2 and all(n.exact for n in terms))

    def op_MatMul(self, a, b=None, transpose_a=False, transpose_b=False):
        if len(a.shape) != 2:
            return None
        r = self.rng
        if b is not None:       # exactly this product
            at = a.t.T if transpose_a else a.t
            bt = b.t.T if transpose_b else b.t
            return self._op("MatMul", {"a": a, "b": b}, at @ bt, a.dtype, False,
                            {"transpose_a": transpose_a, "transpose_b": transpose_b})
        p, q = a.shape
        ta = r.random() < 0.4
        m, k = (q, p) if ta else (p, q)
        if r.random() < 0.2:     # a times itself: a^T a or a a^T
            ta2, tb = (True, False) if r.random() < 0.5 else (False, True)
            at = a.t.T if ta2 else a.t
            bt = a.t.T if tb else a.t
            if _n((at.shape[0], bt.shape[1])) > self.max_elements:
                return None
            self.tags |= {"fanout", "fanout:same_value_twice"}
            t = at @ bt
            if not self._ok_values(t):
                return None
            return self._op("MatMul", {"a": a, "b": a}, t, a.dtype, False,
                            {"transpose_a": ta2, "transpose_b": tb})
        n = r.randint(1, 4)
        tb = r.random() < 0.4
        b = None
        if r.random() < 0.25:   # a value already in the graph as b
            b = self._pick_existing(lambda v: v.dtype == a.dtype and len(v.shape) == 2 and k in (
                v.shape[1] if tb else v.shape[0],) and _n(v.shape) <= 64)
            if b is not None:
                n = b.shape[0] if tb else b.shape[1]
                self.tags.add("fanout")
        if b is None:
            b = self._source((n, k) if tb else (k, n), a.dtype, p_var=0.8)
        at = a.t.T if ta else a.t
        bt = b.t.T if tb else b.t
        t = at @ bt
        if not self._ok_values(t):
            return None
        if ta or tb:
            self.tags.add("matmul:transpose")
        return self._op("MatMul", {"a": a, "b": b}, t, a.dtype, False,
                        {"transpose_a": ta, "transpose_b": tb})

    def op_BiasAdd(self, a, fmt=None):
        rank = len(a.shape)
        if rank < 2:
            return None
        fmt = self.rng.choice(("NHWC", "NCHW")) if fmt is None else fmt
        c = a.shape[1] if fmt == "NCHW" else a.shape[-1]
        b = self._pick_existing(lambda n: n.dtype == a.dtype and n.shape == (c,)) \
            if self.rng.random() < 0.2 else None
        if b is None:
            b = self._source((c,), a.dtype, p_var=0.8)
        else:
            self.tags.add("fanout")
        view = [1] * rank
        view[1 if fmt == "NCHW" else -1] = c
        t = a.t + b.t.reshape(view)
        if not self._ok_values(t):
            return None
        self.tags.add(f"{fmt}:BiasAdd")
        if fmt == "NCHW" and rank > 2:
            self.tags.add("NCHW:BiasAdd_channel_not_last")
        return self._op("BiasAdd", {"value": a, "bias": b}, t, a.dtype, a.exact and b.exact,
                        {"data_format": fmt})

    def _factor_shape(self, n):
        r = self.rng
        if n == 1 and r.random() < 0.3:
            return []           # a scalar
        rank = r.randint(1, 4)
        dims = []
        rest = n
        for _ in range(rank - 1):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = r.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        r.shuffle(dims)
        return dims

    def op_Reshape(self, a):
        dims = self._factor_shape(a.t.numel())
        spec = list(dims)
        if spec and self.rng.random() < 0.4:
            spec[self.rng.randrange(len(spec))] = -1
            self.tags.add("reshape:minus_one")
        t = a.t.reshape(dims)
        return self._op("Reshape", {"tensor": a, "shape": self._int_const(spec)}, t, a.dtype,
                        a.exact)

    def op_Transpose(self, a):
        rank = len(a.shape)
        if rank < 2:
            return None
        perm = list(range(rank))
        while perm == list(range(rank)):
            self.rng.shuffle(perm)
        t = a.t.permute(perm)
        return self._op("Transpose", {"x": a, "perm": self._int_const(perm)}, t, a.dtype,
                        a.exact)

    def op_Cast(self, a):
        if a.dtype == "float64" and self.dtype == "float64":
            dst = "float64"    # float64 graphs keep float64 precision: a same-type cast
            t = a.t * 1.0
        elif a.dtype == "float32":
            dst = "float64"
            t = a.t * 1.0
            self.tags.add("cast:float32_to_float64")
        else:
            dst = "float32"    # rounded as blockflow rounds; torch sends the gradient back
            t = a.t.to(torch.float32).to(self.tdtype)  # rounded to float32, as TF's Cast grad
            self.tags.add("cast:float64_to_float32")
        attrs = {"DstT": dst}
        if self.rng.random() < 0.5:
            attrs["SrcT"] = a.dtype
        return self._op("Cast", {"x": a}, t, dst, a.exact, attrs)

    def op_ExpandDims(self, a):
        rank = len(a.shape)
        if rank >= 4:
            return None
        axis = self.rng.randint(-rank - 1, rank)
        t = a.t.unsqueeze(axis)
        if axis < 0:
            self.tags.add("negative_axis")
        return self._op("ExpandDims", {"input": a,
                                       "dim": self._int_const([axis], scalar=True)},
                        t, a.dtype, a.exact)

    def op_Squeeze(self, a):
        ones = [i for i, d in enumerate(a.shape) if d == 1]
        if not ones:
            return None
        r = self.rng
        if r.random() < 0.3:
            dims = []
            t = a.t.reshape([d for d in a.shape if d != 1])
        else:
            pick = sorted(r.sample(ones, r.randint(1, len(ones))))
            keep = [d for i, d in enumerate(a.shape) if i not in pick]
            t = a.t.reshape(keep)
            rank = len(a.shape)
            dims = [i - rank if r.random() < 0.3 else i for i in pick]
        return self._op("Squeeze", {"input": a}, t, a.dtype, a.exact, {"squeeze_dims": dims})

    def op_BroadcastTo(self, a):
        r = self.rng
        s = list(a.shape)
        lead = [r.randint(2, 3) for _ in range(r.randint(0, max(0, min(2, 4 - len(s)))))]
        body = [r.randint(2, 3) if d == 1 and r.random() < 0.7 else d for d in s]
        target = lead + body
        if target == s or _n(target) > self.max_elements:
            return None
        t = a.t.expand(target)
        self.tags.add("broadcast_to")
        return self._op("BroadcastTo", {"input": a, "shape": self._int_const(target)}, t,
                        a.dtype, a.exact)

    def op_Tile(self, a):
        if not a.shape:
            return None
        mult = [self.rng.choice((1, 1, 2, 3)) for _ in a.shape]
        if all(m == 1 for m in mult):
            mult[self.rng.randrange(len(mult))] = 2
        if _n(a.shape) * _n(mult) > self.max_elements:
            return None
        t = a.t.repeat(mult)
        return self._op("Tile", {"input": a, "multiples": self._int_const(mult)}, t, a.dtype,
                        a.exact)

    def op_reduce(self, name, a, axes=None, keep=None):
        r = self.rng
        rank = len(a.shape)
        if axes is None:
            if rank == 0 or r.random() < 0.06:
                axes = []       # TF: no axis reduced, the value passes through
                self.tags.add("reduce:no_axes")
            else:
                axes = sorted(r.sample(range(rank), r.randint(1, rank)))
        if keep is None:
            keep = r.random() < 0.4
        spec = [ax - rank if r.random() < 0.3 else ax for ax in axes]
        scalar_form = len(spec) == 1 and r.random() < 0.5
        exact = a.exact
        if name in ("Max", "Min"):
            others = [d for d in range(rank) if d not in axes]
            groups = a.t.detach().permute(others + axes).reshape(-1, _n([a.shape[i]
                                                                          for i in axes]))
            ok, ties = self._gap_ok(groups if name == "Max" else -groups, a.exact)
            if not ok:
                return None
            if ties:
                self.tags.add(f"ties:{name}")
        else:
            exact = False
        # (torch reads dim=[] as every dim: no axis is the value itself)
        t = REDUCE[name](a.t, dim=axes, keepdim=keep) if axes else a.t * 1.0
        if any(ax < 0 for ax in spec):
            self.tags.add("negative_axis")
        if keep:
            self.tags.add("keep_dims")
        return self._op(name, {"input": a,
                               "reduction_indices": self._int_const(spec, scalar_form)},
                        t, a.dtype, exact, {"keep_dims": keep})

    def _image_geometry(self, a, k_max=4, allow_dilation=True, equal_strides=False,
                        fixed=None):
        """Common choices of the windowed ops on a rank-4 value (`fixed` overrides some:
        fmt, k, s, d, padding); None when nothing fits."""
        if len(a.shape) != 4:
            return None
        r = self.rng
        fixed = fixed or {}
        fmt = fixed.get("fmt") or r.choice(("NHWC", "NCHW"))
        # contiguous: torch 1.13's float32 conv2d backward crashes (double free) on a permuted
        # input (a 1x1 filter, strides 1x3)
        x = _nchw(a.t, fmt).contiguous()
        _, c, h, w = x.shape
        kh, kw = r.randint(1, min(k_max, h + 1)), r.randint(1, min(k_max, w + 1))
        sh, sw = r.choice((1, 1, 2, 2, 3)), r.choice((1, 1, 2, 2, 3))
        if equal_strides:       # TF's depthwise: the same stride in rows and columns
            sw = sh
        dh = dw = 1
        if allow_dilation and sh == sw == 1 and r.random() < 0.5:
            dh, dw = r.choice((1, 2)), r.choice((1, 2))
        padding = r.choice(("SAME", "SAME", "VALID"))
        kh, kw = fixed.get("k", (kh, kw))
        sh, sw = fixed.get("s", (sh, sw))
        dh, dw = fixed.get("d", (dh, dw))
        padding = fixed.get("padding", padding)
        ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
        if padding == "VALID":
            if ekh > h or ekw > w:
                return None
            pads = (0, 0, 0, 0)
            oh, ow = (h - ekh) // sh + 1, (w - ekw) // sw + 1
        else:
            pt, pb, oh = same_pads(h, ekh, sh)
            pl, pr, ow = same_pads(w, ekw, sw)
            pads = (pl, pr, pt, pb)
        return dict(fmt=fmt, x=x, c=c, h=h, w=w, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw,
                    padding=padding, pads=pads, oh=oh, ow=ow)

    def _image_tags(self, name, g):
        self.tags.add(f"{g['fmt']}:{name}")
        if g["c"] >= 8:
            self.tags.add(f"wide:{g['fmt']}:{name}")   # channels in vector blocks
        if g["padding"] == "SAME":
            if g["h"] % 2 or g["w"] % 2:
                self.tags.add(f"same_odd_size:{name}")
            pl, pr, pt, pb = g["pads"]
            if pl != pr or pt != pb:
                self.tags.add(f"same_uneven_pad:{name}")
            if (g["sh"] > 1 and g["h"] % 2) or (g["sw"] > 1 and g["w"] % 2):
                self.tags.add(f"same_odd_size_strided:{name}")   # 5x5, 2x2 s2 and the like
        else:
            self.tags.add(f"valid:{name}")
        if g["sh"] > 1 or g["sw"] > 1:
            self.tags.add(f"strides:{name}")
        if g["dh"] > 1 or g["dw"] > 1:
            self.tags.add(f"dilations:{name}")

    def _conv_attrs(self, g):
        return {"strides": _spatial(g["fmt"], g["sh"], g["sw"]), "padding": g["padding"],
                "data_format": g["fmt"], "dilations": _spatial(g["fmt"], g["dh"], g["dw"])}

    def op_Conv2D(self, a, fixed=None):
        g = self._image_geometry(a, fixed=fixed)
        if g is None:
            return None
        r = self.rng
        c = g["c"]
        groups = 1
        if c % 2 == 0 and r.random() < 0.5:
            groups = 2
        cout = r.choice((3, 8, 16, 17) if self.big else (1, 2, 3)) * groups
        if fixed:
            groups = fixed.get("groups", groups)
            cout = fixed.get("cout", cout)
        f = None
        if not fixed and r.random() < 0.3:
            # a filter already in the graph (a convolution applied twice, or a Variable that
            # is also an input): its gradient sums both uses
            f = self._pick_existing(lambda v: len(v.shape) == 4 and v.dtype == a.dtype
                                    and c % v.shape[2] == 0 and v.shape[3] % (c // v.shape[2])
                                    == 0 and v.shape[0] <= 4 and v.shape[1] <= 4)
            if f is not None:
                groups, cout = c // f.shape[2], f.shape[3]
                g = self._image_geometry(a, fixed=dict(
                    fmt=g["fmt"], k=f.shape[:2], s=(g["sh"], g["sw"]), d=(g["dh"], g["dw"]),
                    padding=g["padding"]))
                if g is None:
                    return None
                self.tags.add("fanout:filter")
        if a.shape[0] * cout * g["oh"] * g["ow"] > self.max_elements:
            return None
        if f is None:
            f = self._source((g["kh"], g["kw"], c // groups, cout), a.dtype, p_var=0.85)
        x = F.pad(g["x"], g["pads"]) if g["padding"] == "SAME" else g["x"]
        y = F.conv2d(x, f.t.permute(3, 2, 0, 1).contiguous(), stride=(g["sh"], g["sw"]),
                     dilation=(g["dh"], g["dw"]), groups=groups)
        t = _from_nchw(y, g["fmt"])
        if not self._ok_values(t):
            return None
        self._image_tags("Conv2D", g)
        if groups > 1:
            self.tags.add("grouped:Conv2D")
        return self._op("Conv2D", {"input": a, "filter": f}, t, a.dtype, False,
                        self._conv_attrs(g))

    def op_DepthwiseConv2dNative(self, a, fixed=None):
        g = self._image_geometry(a, equal_strides=True, fixed=fixed)
        if g is None:
            return None
        c = g["c"]
        mult = self.rng.randint(1, 2)
        if fixed:
            mult = fixed.get("mult", mult)
        if a.shape[0] * c * mult * g["oh"] * g["ow"] > self.max_elements:
            return None
        f = self._source((g["kh"], g["kw"], c, mult), a.dtype, p_var=0.85)
        weight = f.t.permute(2, 3, 0, 1).contiguous().reshape(c * mult, 1, g["kh"], g["kw"])
        x = F.pad(g["x"], g["pads"]) if g["padding"] == "SAME" else g["x"]
        y = F.conv2d(x, weight, stride=(g["sh"], g["sw"]), dilation=(g["dh"], g["dw"]),
                     groups=c)
        t = _from_nchw(y, g["fmt"])
        if not self._ok_values(t):
            return None
        self._image_tags("DepthwiseConv2dNative", g)
        return self._op("DepthwiseConv2dNative", {"input": a, "filter": f}, t, a.dtype, False,
                        self._conv_attrs(g))

    def _pool(self, name, a, fixed=None):
        g = self._image_geometry(a, allow_dilation=False, fixed=fixed)
        if g is None or (g["kh"] == 1 and g["kw"] == 1):
            return None
        k, s = (g["kh"], g["kw"]), (g["sh"], g["sw"])
        if name == "MaxPool":
            x = F.pad(g["x"], g["pads"], value=-math.inf) if g["padding"] == "SAME" else g["x"]
            # ties: the windows as [windows, taps]
            win = x.detach().unfold(2, k[0], s[0]).unfold(3, k[1], s[1])
            ok, ties = self._gap_ok(win.reshape(-1, k[0] * k[1]), a.exact)
            if not ok:
                return None
            y = F.max_pool2d(x, k, s)   # first maximum of a window (row-major) wins, as TF
            if ties:
                self.tags |= {"pool_ties", f"pool_ties:{g['fmt']}"}
            exact = a.exact
        else:
            x = F.pad(g["x"], g["pads"])
            ones = F.pad(torch.ones_like(g["x"]), g["pads"])
            y = F.avg_pool2d(x, k, s) / F.avg_pool2d(ones, k, s)
            exact = False
        t = _from_nchw(y, g["fmt"])
        self._image_tags(name, g)
        port = OPS[name][0][0]
        return self._op(name, {port: a}, t, a.dtype, exact,
                        {"ksize": _spatial(g["fmt"], *k), "strides": _spatial(g["fmt"], *s),
                         "padding": g["padding"], "data_format": g["fmt"]})

    def op_softmax(self, name, a):
        if len(a.shape) < 1 or a.shape[-1] < 2:
            return None
        t = torch.softmax(a.t, -1) if name == "Softmax" else torch.log_softmax(a.t, -1)
        return self._op(name, {"logits": a}, t, a.dtype, False)

    def op_L2Loss(self, a):
        t = (a.t * a.t).sum() / 2
        if not self._ok_values(t):
            return None
        return self._op("L2Loss", {"t": a}, t, a.dtype, False)

    def op_SoftmaxCrossEntropyWithLogits(self, a, head=False, label_rows=None, backprop=None):
        """Its loss output, or (not as the loss head) its backprop output, whose gradient TF
        also sends back to the features; labels [b, c] or one row [1, c] broadcast, or a row of
        features against several rows of labels; labels from a Variable (through a Softmax)
        where only the loss is used (TF sends nothing from backprop to the labels)."""
        if len(a.shape) != 2 or a.shape[1] < 2:
            return None
        r = self.rng
        b, c = a.shape
        if backprop is None:
            backprop = not head and r.random() < 0.3
        lb = b
        u = r.random()
        if u < 0.2 and b > 1:
            lb = 1
        elif u < 0.35 and b == 1:
            lb = r.randint(2, 3)
        lb = lb if label_rows is None else label_rows
        if lb != b:
            self.tags.add("xent:labels_broadcast" if lb == 1 else "xent:features_broadcast")
        if not backprop and "Softmax" in self.available and len(self.variables) < self.max_vars \
                and (self.labels_variable or r.random() < 0.5):
            # labels that depend on a Variable: their gradient is checked too
            v = self._source((lb, c), a.dtype, variable=True)
            labels = self._op("Softmax", {"logits": v}, torch.softmax(v.t, -1), a.dtype, False)
            self.tags.add("xent:labels_gradient")
        else:
            p = self._rand_values((lb, c), "positive", "float64")
            p = p / p.sum(1, keepdims=True)
            if a.dtype == "float32":
                p = p.astype(np.float32)
            lid = self._add_block("Const", attrs=self._value_attrs(p, a.dtype), stem="labels")
            labels = Node(lid, torch.tensor(p.astype(np.float64), dtype=self.tdtype), a.dtype, True,
                          "const")
        name = "SoftmaxCrossEntropyWithLogits"
        if backprop:
            t = torch.softmax(a.t, -1) - labels.t
            self.tags.add("xent:backprop_output")
            port = SECOND_PORTS[name]
        else:
            t = -(labels.t * torch.log_softmax(a.t, -1)).sum(-1)
            port = OUTPUT_PORTS[name]
        return self._op(name, {"features": a, "labels": labels}, t, a.dtype, False, port=port)

    def op_SparseSoftmaxCrossEntropyWithLogits(self, a, head=False, backprop=None):
        if len(a.shape) != 2 or a.shape[1] < 2:
            return None
        b, c = a.shape
        lab = [self.rng.randrange(c) for _ in range(b)]
        dt = self.rng.choice(("int32", "int64"))
        lid = self._add_block("Const", attrs={"dtype": dt, "shape": [b], "value": lab},
                              stem="labels")
        name = "SparseSoftmaxCrossEntropyWithLogits"
        if backprop is None:
            backprop = not head and self.rng.random() < 0.3
        if backprop:
            t = torch.softmax(a.t, -1) - F.one_hot(torch.tensor(lab), c).to(self.tdtype)
            self.tags.add("xent:backprop_output")
            port = SECOND_PORTS[name]
        else:
            t = -torch.log_softmax(a.t, -1)[torch.arange(b), torch.tensor(lab)]
            port = OUTPUT_PORTS[name]
        return self._op(name, {"features": a, "labels": lid}, t, a.dtype, False, port=port)

    def apply(self, name, a):
        """Place op `name` on `a`; None (and the graph as it was) when it does not fit."""
        saved = (len(self.blocks), len(self.nodes), len(self.all_nodes), dict(self.variables),
                 dict(self.leaves), set(self.tags), self.counter, self.f32_used,
                 dict(self.files), [n.uses for n in self.all_nodes])
        node = self._apply(name, a)
        if node is None:
            (nb, nn, na, self.variables, self.leaves, self.tags, self.counter, self.f32_used,
             self.files, uses) = saved
            del self.blocks[nb:], self.nodes[nn:], self.all_nodes[na:]
            for n, u in zip(self.all_nodes, uses):
                n.uses = u
        return node

    def _apply(self, name, a):
        if name in UNARY:
            return self.op_unary(name, a)
        if name in BINARY:
            return self.op_binary(name, a)
        if name in REDUCE:
            return self.op_reduce(name, a)
        if name in ("MaxPool", "AvgPool"):
            return self._pool(name, a)
        if name in ("Softmax", "LogSoftmax"):
            return self.op_softmax(name, a)
        return getattr(self, "op_" + name)(a)

    # ---- the whole graph --------------------------------------------------------------------
    def _first_variable(self):
        r = self.rng
        img = any(op in self.available for op in IMAGE_OPS)
        form = r.choices(("image", "matrix", "any"), (4 if img else 0, 2, 3))[0]
        if form == "image" and self.big:   # channel counts past the vector blocks' widths
            n = r.choice((1, 2))
            h, w = r.randint(3, 11), r.randint(3, 11)
            c = r.choice((8, 9, 16, 20))
            shape = (n, c, h, w) if r.random() < 0.5 else (n, h, w, c)
        elif form == "image":
            n = r.choice((1, 1, 2, 3))
            h, w = r.choice((2, 3, 4, 5, 5, 6, 7, 8)), r.choice((2, 3, 4, 5, 5, 6, 7, 8))
            c = r.randint(1, 4)
            shape = (n, c, h, w) if r.random() < 0.5 else (n, h, w, c)
        elif form == "matrix":
            shape = (r.randint(1, 40), r.randint(2, 40)) if self.big else \
                (r.randint(1, 5), r.randint(2, 6))
        else:
            dims = (1, 2, 3, 5, 8, 12) if self.big else (1, 2, 3, 4)
            shape = tuple(r.choice(dims) for _ in range(r.randint(0, 4)))
        kind = r.choices(("normal", "positive", "quant"), (5, 2, 3))[0]
        return self._source(shape, self.dtype, kind, variable=True)

    def build(self):
        r = self.rng
        a = self._first_variable()
        target = r.randint(2, 8)
        tries = 0
        names = sorted(self.available)
        weights = [WEIGHTS.get(nm, 1.0) for nm in names]
        while len(self.ops) < target and tries < 400:
            tries += 1
            # a windowed max right on a quantised value is where ties happen
            if a.exact and len(a.shape) == 4 and "MaxPool" in self.available \
                    and r.random() < 0.25:
                name = "MaxPool"
            elif a.exact and a.t.numel() > 1 and r.random() < 0.06 \
                    and self.available & {"Max", "Min"}:
                name = r.choice(sorted(self.available & {"Max", "Min"}))
            elif self.dtype == "float32" and "Cast" in self.available and r.random() < 0.15:
                name = "Cast"   # float32 graphs go through float64 and back
            else:
                name = r.choices(names, weights)[0]
            n = self.apply(name, a)
            if n is None:
                continue
            # the next op mostly continues the chain, sometimes branches off an earlier value
            if r.random() < 0.8 or not self.available & {"AddN", "AddV2"}:
                a = n
            else:
                a = r.choice(self.nodes)
                self.tags.add("branch")
        self._finish()
        return self

    def _scalar_head(self, node, main, kind=None):
        """Blocks that make a scalar of `node` whose gradient is not all ones."""
        r = self.rng
        rank = len(node.shape)
        if rank == 0:
            self.tags.add("loss:scalar")
            return node
        kinds = ["wsum", "wmean"]
        if main:
            if "L2Loss" in self.available:
                kinds.append("l2")
            if rank == 2 and node.shape[1] >= 2:
                kinds += [k for k in ("SoftmaxCrossEntropyWithLogits",
                                      "SparseSoftmaxCrossEntropyWithLogits")
                          if k in self.available]
        if kind is None:
            kind = r.choice(kinds if len(kinds) < 4 else kinds + kinds[3:])   # xent: twice
        axes = list(range(rank))
        if kind == "l2":
            self.tags.add("loss:L2Loss")
            return self._op("L2Loss", {"t": node}, (node.t * node.t).sum() / 2, node.dtype,
                            False)
        if kind.startswith(("Softmax", "Sparse")):
            self.tags.add("loss:xent")
            x = getattr(self, "op_" + kind)(node, head=True)
            return self.op_reduce("Mean", x, axes=[0], keep=False)
        # a weighted sum or mean: a random Const of the same shape (upstream gradients vary)
        prod = node
        if "Mul" in self.available:
            w = self._source(node.shape, node.dtype, "normal", variable=False)
            prod = self._op("Mul", {"x": node, "y": w}, node.t * w.t, node.dtype, False)
        red = "Sum" if kind == "wsum" else "Mean"
        self.tags.add("loss:" + red)
        return self.op_reduce(red, prod, axes=axes, keep=False)

    def _finish(self):
        final = self.nodes[-1]
        sinks = [n for n in self.nodes if n.uses == 0 and n is not final]
        scalars = [self._scalar_head(final, True)]
        for n in sinks:
            self.tags.add("loss:several_branches")
            scalars.append(self._scalar_head(n, False))
        dts = {s.dtype for s in scalars}
        if len(dts) > 1:   # a float32 branch and a float64 one: cast to float64 to add them
            scalars = [s if s.dtype == "float64" else self._op(
                "Cast", {"x": s}, s.t * 1.0, "float64", False, {"DstT": "float64"})
                for s in scalars]
        loss = scalars[0]
        if len(scalars) > 1:
            t = sum((s.t for s in scalars[1:]), scalars[0].t)
            if "AddN" in self.available and len(scalars) <= 16:
                loss = self._op("AddN", {f"inputs_{i}": s for i, s in enumerate(scalars)},
                                t, scalars[0].dtype, False)
            else:
                for s in scalars[1:]:
                    loss = self._op("AddV2", {"x": loss, "y": s}, loss.t + s.t, s.dtype,
                                    False)
        self.loss_node = loss
        self.loss = loss.ref
        self.loss_t = loss.t
        self.page = {"format": "blockflow.page", "version": 1, "name": f"grad_ref_{self.seed}",
                     "description": f"graphgen seed {self.seed}"
                                    + (f" (draw {self.attempt})" if self.attempt else ""),
                     "blocks": self.blocks,
                     "outputs": [loss.ref]}
        if self.f32_used:
            self.tags.add("float32")

    def reference_gradients(self):
        """d loss / d Variable for every Variable, float64 numpy arrays (torch autograd)."""
        leaves = list(self.leaves.values())
        grads = torch.autograd.grad(self.loss_t, leaves, allow_unused=True)
        return {vid: (g if g is not None else torch.zeros_like(t)).detach().numpy()
                .astype(np.float64) for (vid, t), g in zip(self.leaves.items(), grads)}

    def page_text(self):
        """The page as JSON, one block a line (what a failure message prints)."""
        head = {k: v for k, v in self.page.items() if k != "blocks"}
        lines = ",\n  ".join(json.dumps(b, separators=(",", ":")) for b in self.blocks)
        return (json.dumps(head)[:-1] + ',\n "blocks": [\n  ' + lines + "\n ]}")


def _image(fmt, n, h, w, c):
    return (n, c, h, w) if fmt == "NCHW" else (n, h, w, c)


def _d_bcast_suffix(g):           # [2,3,4] * [4]
    g.op_binary("Mul", g.variable((2, 3, 4)), g.variable((4,)))


def _d_bcast_both_ways(g):        # [2,1,4] + [3,1] -> [2,3,4], then [3,1] - [2,3,4]
    x, y = g.variable((2, 1, 4)), g.variable((3, 1))
    s = g.op_binary("Add", x, y)
    g.op_binary("Sub", y, s)


def _d_bcast_scalar(g):           # a scalar Variable scales a matrix, and divides it
    x, k = g.variable((3, 4)), g.variable((), "positive")
    g.op_binary("RealDiv", g.op_binary("Mul", k, x), k)


def _d_fanout(g):                 # x * x + x: three uses of one Variable, gradients summed
    x = g.variable((2, 3))
    g.op_binary("AddV2", g.op_binary("Mul", x, x), x)


def _d_maxpool_ties(fmt):         # 5x5, 2x2 stride 2 SAME on multiples of 1/4: tied maxima
    def build(g):
        x = g.variable(_image(fmt, 2, 5, 5, 3), "quant")
        g._pool("MaxPool", x, dict(fmt=fmt, k=(2, 2), s=(2, 2), padding="SAME"))
    return build


def _d_maxpool_overlap_ties(g):   # 3x3 stride 1 windows overlap: one input is the first
    x = g.variable((1, 2, 6, 5), "quant")   # maximum of several windows
    g._pool("MaxPool", x, dict(fmt="NCHW", k=(3, 3), s=(1, 1), padding="VALID"))


def _d_avgpool_same_odd(fmt):     # 5x5, 2x2 stride 2 SAME: edge windows average fewer taps
    def build(g):
        x = g.variable(_image(fmt, 1, 5, 5, 2))
        g._pool("AvgPool", x, dict(fmt=fmt, k=(2, 2), s=(2, 2), padding="SAME"))
    return build


def _d_conv_same_odd(fmt):        # 3x3 stride 2 SAME on 5x5, filter and input Variables
    def build(g):
        x = g.variable(_image(fmt, 2, 5, 5, 3))
        g.op_Conv2D(x, dict(fmt=fmt, k=(3, 3), s=(2, 2), d=(1, 1), padding="SAME", cout=2,
                            groups=1))
    return build


def _d_conv_dilated(g):           # 3x3 dilation 2 VALID on 7x6, then SAME with dilations
    x = g.variable(_image("NHWC", 1, 7, 6, 2))
    y = g.op_Conv2D(x, dict(fmt="NHWC", k=(3, 3), s=(1, 1), d=(2, 2), padding="VALID",
                            cout=2, groups=1))
    g.op_Conv2D(y, dict(fmt="NHWC", k=(2, 3), s=(1, 1), d=(2, 1), padding="SAME", cout=1,
                        groups=1))


def _d_depthwise_same_odd(fmt):   # 3x3 stride 2 SAME on 5x5, channel multiplier 2
    def build(g):
        x = g.variable(_image(fmt, 1, 5, 5, 2))
        g.op_DepthwiseConv2dNative(x, dict(fmt=fmt, k=(3, 3), s=(2, 2), d=(1, 1),
                                           padding="SAME", mult=2))
    return build


def _d_bias_nchw(g):              # NCHW bias on dim 1 of a rank-4 value
    g.op_BiasAdd(g.variable((2, 3, 2, 2)), "NCHW")


def _d_xent_labels(g):            # softmax cross entropy; the labels a softmax of a Variable
    g.labels_variable = True
    x = g.variable((3, 4))
    g._scalar_head(x, True, "SoftmaxCrossEntropyWithLogits")


def _d_wide_maxpool_ties(g):      # 20 channels: whole vector blocks and a tail, with ties
    x = g.variable((2, 7, 7, 20), "quant")
    g._pool("MaxPool", x, dict(fmt="NHWC", k=(3, 3), s=(2, 2), padding="SAME"))


def _d_wide_avgpool(g):
    x = g.variable((1, 9, 8, 17))
    g._pool("AvgPool", x, dict(fmt="NHWC", k=(3, 2), s=(2, 2), padding="SAME"))


def _d_wide_conv(g):              # 16 channels in, 17 out
    x = g.variable((2, 8, 8, 16))
    g.op_Conv2D(x, dict(fmt="NHWC", k=(3, 3), s=(1, 1), d=(1, 1), padding="SAME", cout=17,
                        groups=1))


def _d_wide_depthwise(g):
    x = g.variable((1, 9, 9, 12))
    g.op_DepthwiseConv2dNative(x, dict(fmt="NHWC", k=(3, 3), s=(2, 2), d=(1, 1),
                                       padding="SAME", mult=2))


def _d_big_elementwise(g):        # 75000 elements: the threaded elementwise and sum paths
    x, b = g.variable((300, 250)), g.variable((250,))
    y = g.op_binary("Mul", g.op_binary("AddV2", x, b), g._source((300, 1), g.dtype,
                                                                  variable=False))
    g.op_reduce("Sum", g.op_unary("Tanh", y), axes=[0], keep=True)


def _d_big_matmul(g):
    a, b = g.variable((64, 80)), g.variable((48, 80))
    y = g.op_MatMul(a, b, transpose_b=True)
    g.op_BiasAdd(y, "NHWC")


def _d_xent_broadcast(g):         # labels [1, c] against features [3, c]; one row of
    x, y = g.variable((3, 5)), g.variable((1, 4))   # features against labels [2, c]
    a = g.op_SoftmaxCrossEntropyWithLogits(x, label_rows=1, backprop=False)
    b = g.op_SoftmaxCrossEntropyWithLogits(y, label_rows=2, backprop=False)
    g.op_binary("Mul", a, g.op_reduce("Sum", b, axes=[0], keep=True))


def _d_xent_backprop(g):          # the backprop outputs used as values, labels [1, c] too
    x = g.variable((3, 4))
    a = g.op_SoftmaxCrossEntropyWithLogits(x, label_rows=1, backprop=True)
    s = g.op_SparseSoftmaxCrossEntropyWithLogits(x, backprop=True)
    g.op_binary("Mul", a, s)


# Graphs written out by hand: the cases the issue names, present whatever the seeds draw.
DIRECTED = {
    "wide_maxpool_ties": _d_wide_maxpool_ties, "wide_avgpool": _d_wide_avgpool,
    "wide_conv": _d_wide_conv, "wide_depthwise": _d_wide_depthwise,
    "big_elementwise": _d_big_elementwise, "big_matmul": _d_big_matmul,
    "bcast_suffix": _d_bcast_suffix, "bcast_both_ways": _d_bcast_both_ways,
    "bcast_scalar": _d_bcast_scalar, "fanout": _d_fanout,
    "maxpool_ties_NHWC": _d_maxpool_ties("NHWC"), "maxpool_ties_NCHW": _d_maxpool_ties("NCHW"),
    "maxpool_overlap_ties": _d_maxpool_overlap_ties,
    "avgpool_same_odd_NHWC": _d_avgpool_same_odd("NHWC"),
    "avgpool_same_odd_NCHW": _d_avgpool_same_odd("NCHW"),
    "conv_same_odd_NHWC": _d_conv_same_odd("NHWC"), "conv_same_odd_NCHW": _d_conv_same_odd("NCHW"),
    "conv_dilated": _d_conv_dilated,
    "depthwise_same_odd_NHWC": _d_depthwise_same_odd("NHWC"),
    "depthwise_same_odd_NCHW": _d_depthwise_same_odd("NCHW"),
    "bias_nchw": _d_bias_nchw, "xent_labels": _d_xent_labels,
    "xent_broadcast": _d_xent_broadcast, "xent_backprop": _d_xent_backprop,
}


class _Directed(Graph):
    """A hand-written graph: an op that does not fit is an error, not a redraw."""


def _strict(fn):
    def call(self, *args, **kwargs):
        node = fn(self, *args, **kwargs)
        if node is None:
            raise RuntimeError(f"{fn.__name__}{args[:1]}: does not fit in this graph")
        return node
    return call


for _m in ("op_unary", "op_binary", "op_MatMul", "op_BiasAdd", "op_Conv2D",
           "op_DepthwiseConv2dNative", "_pool", "op_reduce", "_scalar_head",
           "op_SoftmaxCrossEntropyWithLogits", "op_SparseSoftmaxCrossEntropyWithLogits"):
    setattr(_Directed, _m, _strict(getattr(Graph, _m)))


def generate_directed(name, available=None):
    """The hand-written graph `name` of DIRECTED, with .ref_grads; its loss is made as the
    random graphs' is (a weighted sum, mean, L2Loss or cross entropy)."""
    g = _Directed(name, available, float32=False)
    g.max_vars = 3
    g.prefer_variables = True
    g.max_elements = 100000
    DIRECTED[name](g)
    g._finish()
    g.ref_grads = g.reference_gradients()
    return g


def _rel_error(got, want):
    return float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-6)


# How much a graph may lose to rounding, measured by replaying it in float32 with torch (its
# float32 gradients against its float64 ones, relative to max |gradient|): float32 graphs up to
# 2e-6 (10 times under the test's float32 tolerance); float64 graphs up to 2e-2, which in
# float64 (2^29 times finer) is about 4e-11, 25 times under the test's 1e-9.
F32_CONDITION = 2e-6
F64_CONDITION = 2e-2


def generate(seed, available=None, float32=None):
    """The graph of `seed` (always the same for the same seed and available blocks), with its
    reference gradients in .ref_grads. Drawn again (attempt 1, 2, ...: still deterministic):
    - a graph where the loss does not depend on some Variable after all (a gradient below
      1e-6: zero up to rounding, as for x / x or a softmax of values equal along its axis);
      comparing rounding noise checks nothing;
    - an ill-conditioned graph: replayed in float32 by torch, its gradients are further from
      the float64 ones than F32_CONDITION (a graph with float32 values) or F64_CONDITION
      allow (.f32_error: that distance). Cancellation such as 1 - softmax near 1 leaves no
      implementation, torch's included, within the test's tolerance of the exact gradient;
      keeping such graphs out keeps the tolerances well above what rounding loses."""
    for attempt in range(50):
        g = Graph(seed, available, float32, attempt).build()
        g.ref_grads = g.reference_gradients()
        if not all(float(np.max(np.abs(v))) > 1e-6 for v in g.ref_grads.values()):
            continue
        g32 = Graph(seed, available, float32, attempt, tdtype=torch.float32).build()
        if g32.page != g.page:   # a choice fell differently: call it ill-conditioned
            continue
        r32 = g32.reference_gradients()
        g.f32_error = max(_rel_error(r32[v], g.ref_grads[v]) for v in g.ref_grads)
        if g.f32_error <= (F32_CONDITION if g.f32_used else F64_CONDITION):
            return g
    raise RuntimeError(f"seed {seed}: no well-conditioned graph in 50 attempts")
