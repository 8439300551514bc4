#!/usr/bin/env python3
"""fuzz/make_corpus.py - (re)generate the seed corpora in fuzz/corpus/<target>/.

Seeds are small valid inputs plus every malformed or hostile case we could think of; the
fuzzers mutate from them. The .npy images are built byte for byte as numpy >= 1.23 writes them
(the same layout bf_tensor_save_npy produces and tests/test_npy.c checks), so numpy is not
needed. Run from anywhere: python3 fuzz/make_corpus.py
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- .npy ----------------------------------------------------------------------------------

def npy(descr, shape, payload, version=1, order="False", header=None, pad=True):
    if header is None:
        sh = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, order, sh)
    h = header.encode()
    lenbytes = 2 if version == 1 else 4
    if pad:
        total = 6 + 2 + lenbytes + len(h) + 1
        h += b" " * ((64 - total % 64) % 64) + b"\n"
    else:
        h += b"\n"
    ln = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + h + payload


f32 = lambda *v: struct.pack("<%df" % len(v), *v)
put("npy", "f32_3", npy("<f4", [3], f32(1, 2, 3)))
put("npy", "f32_scalar", npy("<f4", [], f32(3.5)))
put("npy", "f32_2x3", npy("<f4", [2, 3], f32(1, 2, 3, 4, 5, 6)))
put("npy", "f32_nan_inf", npy("<f4", [4], f32(float("nan"), float("inf"), -float("inf"), -0.0)))
put("npy", "f64_2", npy("<f8", [2], struct.pack("<2d", 1.5, -2.5)))
put("npy", "f16_3", npy("<f2", [3], struct.pack("<3e", 1, -2, 65504)))
put("npy", "i32_4", npy("<i4", [4], struct.pack("<4i", 1, -2, 3, 2**31 - 1)))
put("npy", "i64_2x2", npy("<i8", [2, 2], struct.pack("<4q", 1, -2, 3, -2**40), version=2))
put("npy", "bf16_v3", npy("|V2", [2], b"\x80\x3f\x40\xc0", version=3,
                          header='{"shape": (2,), "fortran_order": False, "descr": "|V2"}'))
put("npy", "bf16_lt", npy("<V2", [1], b"\x80\x3f"))
put("npy", "py2_long", npy("<f2", [1, 3], b"\x00\x3c\x00\xc0\xff\x7b",
                           header="{'descr': '<f2', 'fortran_order': False, 'shape': (1L, 3L), }"))
put("npy", "empty_0", npy("<f4", [0], b""))
put("npy", "empty_3x0", npy("<f4", [3, 0], b""))
put("npy", "rank8", npy("<f4", [1] * 8, f32(7)))
put("npy", "fortran_1d", npy("<f4", [3], f32(1, 2, 3), order="True"))
# hostile and malformed
put("npy", "bad_magic", b"\x93NUMPX\x01\x00\x10\x00{}              \n")
put("npy", "truncated_magic", b"\x93NUM")
put("npy", "bad_version", npy("<f4", [1], f32(1), version=4))
put("npy", "hlen_4gib", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4'")
put("npy", "hlen_past_eof", b"\x93NUMPY\x01\x00\xff\x7f{'descr': '<f4', }")
put("npy", "shape_overflow", npy("<f4", [2**62, 2**62], b""))
put("npy", "shape_huge_dim", npy("<f4", [1], b"",
                                 header="{'descr': '<f4', 'fortran_order': False, "
                                        "'shape': (99999999999999999999999,), }"))
put("npy", "shape_2p40", npy("<f4", [2**20, 2**20], b""))
put("npy", "shape_negative", npy("<f4", [1], f32(1), header="{'descr': '<f4', "
                                 "'fortran_order': False, 'shape': (-1,), }"))
put("npy", "rank9", npy("<f4", [1] * 9, f32(1)))
put("npy", "data_short", npy("<f4", [4], f32(1, 2)))
put("npy", "data_long", npy("<f4", [1], f32(1, 2)))
put("npy", "big_endian", npy(">f4", [1], f32(1)))
put("npy", "structured", npy("", [1], f32(1), header="{'descr': [('a', '<f4')], "
                             "'fortran_order': False, 'shape': (1,), }"))
put("npy", "fortran_2d", npy("<f4", [2, 2], f32(1, 2, 3, 4), order="True"))
put("npy", "dup_key", npy("<f4", [1], f32(1), header="{'descr': '<f4', 'descr': '<f4', "
                          "'fortran_order': False, 'shape': (1,), }"))
put("npy", "missing_shape", npy("<f4", [1], f32(1), header="{'descr': '<f4', "
                                "'fortran_order': False, }"))
put("npy", "extra_key", npy("<f4", [1], f32(1), header="{'descr': '<f4', 'x': 1, "
                            "'fortran_order': False, 'shape': (1,), }"))
put("npy", "unterminated", npy("<f4", [1], f32(1), header="{'descr': '<f4"))
put("npy", "one_no_comma", npy("<f4", [5], f32(1, 2, 3, 4, 5), header="{'descr': '<f4', "
                               "'fortran_order': False, 'shape': (5), }"))
put("npy", "escape", npy("<f4", [1], f32(1), header="{'descr': '<f\\4', "
                         "'fortran_order': False, 'shape': (1,), }"))
put("npy", "empty_file", b"")

# ---- enuSpace attribute texts (first byte: block index in the registry; bit 7: raw JSON) ---
# Registry order is by type name: Const, Identity, Placeholder, RandomNormal, RandomUniform,
# then the convolution family; an index past the end wraps, so every byte is meaningful.
enu = [
    "dtype_ = float32;shape_ = {1,5,5,-1};",
    "dtype = float32; shape = 1,2,3",
    "dtype=DT_FLOAT;shape=[2, 2];",
    "use_cudnn_on_gpu_ = true;data_format_ = NHWC;dilations_ = {1,1,1,1};strides_ = {1,2,2,1};"
    "padding_ = SAME;",
    "padding = 'VALID'; strides = \"1,1,1,1\"",
    "shape = {9223372036854775807, 9223372036854775807}; dtype = float32",
    "shape = {99999999999999999999}",
    "shape = {}; dtype = int64",
    "shape = {-2}",
    "seed = 7; seed2 = 3; mean = 0.5; stddev = 2; shape = {2,3}; dtype = float16",
    "value = 70000; dtype = float16; shape = 2",
    "value = 1; shape = {1048576, 1048576}",
    "file = a.npy",
    "x = 1",
    "novalue",
    "=;=;;;==",
    "dtype = ;shape = {",
    "shape = {1,2,3,4,5,6,7,8,9}",
    "shape = " + ",".join(["1"] * 80),
    "'" + "a" * 300 + "'",
]
types = [0, 2, 2, 5, 6, 2, 2, 2, 2, 3, 0, 0, 0, 1, 1, 2, 2, 2, 2, 0]
for i, (t, text) in enumerate(zip(types, enu)):
    put("enuspace", "text_%02d" % i, bytes([t]) + text.encode())
for t in range(12):
    put("enuspace", "legacy_all_%02d" % t, bytes([t]) + enu[3].encode())
json_attrs = [
    (0, {"value": [[1, 2, 3], [4, 5, 6]]}),
    (0, {"dtype": "int32", "shape": [4], "value": [3, 3, 1, 1]}),
    (0, {"dtype": "float16", "value": 70000}),
    (0, {"dtype": "bfloat16", "value": [1e39, -1e39]}),
    (0, {"shape": [2**62, 4], "value": 1}),
    (0, {"shape": [1024, 1024, 1024], "value": 0}),
    (0, {"value": [[1, 2], [3]]}),
    (0, {"value": [[[[[[[[[1]]]]]]]]]}),
    (0, {"dtype": "int32", "value": [1.5]}),
    (0, {"dtype": "int32", "value": [3e10]}),
    (2, {"dtype": "float32", "shape": "1,-1,3"}),
    (3, {"shape": [2, 2], "dtype": "float64", "seed": 1}),
    (3, {"shape": [2**31, 2**31, 2**31]}),
    (4, {"shape": [2, 2], "minval": 1, "maxval": 0}),
]
for i, (t, a) in enumerate(json_attrs):
    put("enuspace", "json_%02d" % i, bytes([t | 0x80]) + json.dumps(a).encode())

# ---- pages -------------------------------------------------------------------------------

def page(blocks, outputs, **extra):
    p = {"format": "blockflow.page", "version": 1, "blocks": blocks, "outputs": outputs}
    p.update(extra)
    return json.dumps(p, indent=1)


C = lambda i, **a: {"id": i, "type": "Const", "attrs": a}
I = lambda i, src: {"id": i, "type": "Identity", "inputs": {"input": src}}
put("page", "const_identity", page([C("c", value=[[1, 2], [3, 4]]), I("i", "c")], ["i"]))
put("page", "chain", page([C("c", value=1.5)] + [I("i%d" % k, "c" if k == 0 else "i%d" % (k - 1))
                                                  for k in range(8)], ["i7", "c"]))
put("page", "random", page([{"id": "r", "type": "RandomNormal",
                             "attrs": {"shape": [2, 3], "dtype": "float32", "seed": 7}},
                            {"id": "u", "type": "RandomUniform",
                             "attrs": {"shape": [4], "dtype": "float64", "seed": 1}}],
                           ["r", "u:output"]))
put("page", "file_const", page([{"id": "f", "type": "Const", "attrs": {"file": "a.npy"}}], ["f"]))
put("page", "file_missing", page([{"id": "f", "type": "Const", "attrs": {"file": "nope.npy"}}],
                                 ["f"]))
put("page", "file_abs", page([{"id": "f", "type": "Const", "attrs": {"file": "/etc/passwd"}}],
                             ["f"]))
put("page", "placeholder", page([{"id": "x", "type": "Placeholder",
                                  "attrs": {"dtype": "float32", "shape": [1, -1]}},
                                 I("y", "x")], ["y"]))
put("page", "enuspace_attrs", page([{"id": "x", "type": "Placeholder",
                                     "attrs": "dtype_ = float32;shape_ = {1,5,5,-1};"},
                                    C("c", dtype="float16", value=70000)], ["c"]))
put("page", "fill", page([C("c", shape=[4, 4], value=2)], ["c"]))
put("page", "fill_huge", page([C("c", shape=[2**31, 2**31], value=2)], ["c"]))
put("page", "fill_overflow", page([C("c", shape=[2**62, 2**62], value=2)], ["c"]))
put("page", "random_huge", page([{"id": "r", "type": "RandomNormal",
                                  "attrs": {"shape": [2**40, 2**40]}}], ["r"]))
put("page", "cycle", page([I("a", "b"), I("b", "a")], ["a"]))
put("page", "self_cycle", page([I("a", "a")], ["a"]))
put("page", "dup_id", page([C("a", value=1), C("a", value=2)], ["a"]))
put("page", "bad_link", page([I("a", "nope:port")], ["a"]))
put("page", "bad_port", page([C("a", value=1), {"id": "b", "type": "Identity",
                                                "inputs": {"x": "a"}}], ["b"]))
put("page", "unknown_type", page([{"id": "a", "type": "Conv9D"}], ["a"]))
put("page", "unknown_keys", page([{"id": "a", "type": "Const", "attrs": {"value": 1},
                                   "zzz": 1, "x-ui": {}}], ["a"], zzz=2))
put("page", "bad_device", page([{"id": "a", "type": "Const", "attrs": {"value": 1},
                                 "device": "gpu:99999"}], ["a"]))
put("page", "gpu_device", page([{"id": "a", "type": "Const", "attrs": {"value": 1},
                                 "device": "gpu:1"}], ["a"]))
put("page", "no_outputs", page([C("a", value=1)], []))
put("page", "bad_output", page([C("a", value=1)], ["zz", 3]))
put("page", "bad_format", '{"format": "x", "version": 2, "blocks": {}}')
put("page", "not_object", "[1, 2, 3]")
put("page", "empty", "")
put("page", "garbage", "{\"format\": \"blockflow.page\", \"blocks\": [{\"id\": ")
put("page", "deep", "[" * 200 + "]" * 200)
put("page", "deep_attrs", page([C("a", value=1, shape=[1])], ["a"]).replace(
    '"value": 1', '"value": ' + "[" * 70 + "1" + "]" * 70))
put("page", "long_id", page([C("a" * 100, value=1)], ["a" * 100]))
put("page", "colon_id", page([C("a:b", value=1)], ["a:b"]))
put("page", "big_inline", page([C("a", value=list(range(5000)))], ["a"]))
put("page", "dtype_mismatch", page([C("a", dtype="int32", value=[1]), I("b", "a")], ["b"]))
put("page", "unicode", page([C("\u00e9\u4e2d", value=1)], ["\u00e9\u4e2d"],
                            name="\u0000nul", description="\ud83d\ude00"))
print("corpus written to", ROOT)
