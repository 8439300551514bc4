"""The ctypes mirrors in python/blockflow/_lib.py against include/blockflow.h.

A struct that grows in the header while its mirror does not makes the library write past the
Python object (bf_config_init once did, and crashed the interpreter). These tests parse the
header's typedefs and fail as soon as a field list, a field's type or an array size differs.
"""
import ctypes
import re
import sys
from pathlib import Path

import pytest

import blockflow  # noqa: F401  (loads the library)

_lib = sys.modules["blockflow._lib"]
HEADER = Path(__file__).resolve().parents[2] / "include" / "blockflow.h"

# C type in the header -> ctypes type of the mirror (enums are ints; opaque or function
# pointers are compared by size only, see below).
SCALARS = {"char": ctypes.c_char, "int": ctypes.c_int, "double": ctypes.c_double,
           "uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "bf_status": ctypes.c_int,
           "bf_dtype": ctypes.c_int, "bf_device_kind": ctypes.c_int}
POINTERS = {"const char *": ctypes.c_char_p, "void *": ctypes.c_void_p}


def header_structs(text):
    """{"bf_config": [(field, C type, [array sizes])]} for every `typedef struct X {...} X;`."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    macros = {m[0]: int(m[1]) for m in re.findall(r"#define\s+(\w+)\s+(\d+)\s*$", text, re.M)}
    structs = {}
    for name, body in re.findall(r"typedef struct (\w+) \{(.*?)\} \1;", text, re.S):
        fields = []
        for decl in body.split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            m = re.match(r"(.*?[\w*])\s*((?:\*?\s*\w+(?:\[\w+\])*\s*,\s*)*\*?\s*\w+(?:\[\w+\])*)$",
                         decl)
            assert m, f"cannot parse {decl!r} in struct {name}"
            base, declarators = m.groups()
            for d in declarators.split(","):
                d = d.strip()
                stars = d.count("*")
                ident = re.match(r"\*?\s*(\w+)", d).group(1)
                dims = [int(macros.get(x, x)) for x in re.findall(r"\[(\w+)\]", d)]
                ctype = base.strip() + (" " + "*" * stars if stars else "")
                fields.append((ident, " ".join(ctype.replace("*", " * ").split()), dims))
        structs[name] = fields
    return structs


def expected_ctype(ctype, dims, name):
    """The ctypes type a C declaration needs (None: any pointer-sized type will do)."""
    ctype = ctype.replace(" *", "*").replace("* ", "*").replace("*", " *").strip()
    if ctype in SCALARS:
        t = SCALARS[ctype]
    elif ctype in POINTERS:
        t = POINTERS[ctype]
    elif ctype.endswith("*") or ctype.endswith("_cb") or ctype.endswith("_fn"):
        return None  # a pointer to pointers or a function pointer: checked by size
    else:
        raise AssertionError(f"{name}: no ctypes equivalent known for {ctype!r}; extend "
                             "SCALARS in this test")
    for n in reversed(dims):
        t = t * n
    return t


def same_type(a, b):
    """ctypes array types are made anew each time: compare them structurally."""
    if a is b:
        return True
    if issubclass(a, ctypes.Array) and issubclass(b, ctypes.Array):
        return a._length_ == b._length_ and same_type(a._type_, b._type_)
    return False


STRUCTS = header_structs(HEADER.read_text())


def test_header_declares_every_mirrored_struct():
    assert set(_lib.STRUCTS) <= set(STRUCTS), set(_lib.STRUCTS) - set(STRUCTS)
    # and every struct of the header that the library reads or writes is mirrored
    assert set(STRUCTS) == set(_lib.STRUCTS), set(STRUCTS) ^ set(_lib.STRUCTS)


@pytest.mark.parametrize("name", sorted(_lib.STRUCTS))
def test_mirror_matches_header(name):
    mirror = _lib.STRUCTS[name]
    c_fields = STRUCTS[name]
    py_fields = mirror._fields_
    assert [f[0] for f in py_fields] == [f[0] for f in c_fields], \
        f"struct {name}: the header's fields and _lib.py's differ"
    for (field, ctype, dims), (_, pytype) in zip(c_fields, py_fields):
        want = expected_ctype(ctype, dims, f"{name}.{field}")
        if want is None:
            assert ctypes.sizeof(pytype) == ctypes.sizeof(ctypes.c_void_p), f"{name}.{field}"
        else:
            assert same_type(pytype, want), f"{name}.{field}: {ctype}{dims} vs {pytype}"


def test_the_parser_notices_a_grown_struct():
    """The check above really fails when the header changes and the mirror does not."""
    grown = HEADER.read_text().replace("} bf_config;", "    int new_field;\n} bf_config;")
    fields = header_structs(grown)["bf_config"]
    assert fields[-1][0] == "new_field"
    assert [f[0] for f in fields] != [f[0] for f in _lib.BfConfig._fields_]
    # a two-declarator line and a 2-D array are read as the header means them
    err = dict((f[0], f) for f in STRUCTS["bf_error"])
    assert err["line"][1] == "int" and err["column"][1] == "int"
    stats = dict((f[0], f) for f in STRUCTS["bf_block_stats"])
    assert stats["dims"][2] == [4, 8] and stats["id"][1] == "const char *"


def test_sizes_the_library_writes_match_the_mirrors():
    """bf_config_init and bf_run_options_init memset the whole struct: measured sizes."""
    assert _lib._c_size(_lib.lib.bf_config_init) == ctypes.sizeof(_lib.BfConfig)
    assert _lib._c_size(_lib.lib.bf_run_options_init) == ctypes.sizeof(_lib.BfRunOptions)


def test_a_short_mirror_is_refused_at_import(monkeypatch):
    """The import-time guard turns a too-small mirror into an ImportError, not a crash."""
    class Short(ctypes.Structure):
        _fields_ = _lib.BfConfig._fields_[:-3]

    full = ctypes.sizeof(_lib.BfConfig)
    monkeypatch.setattr(_lib, "BfConfig", Short)
    monkeypatch.setitem(_lib.STRUCTS, "bf_config", Short)
    with pytest.raises(ImportError, match=f"struct bf_config of {full} "
                                          f"bytes but the Python mirror Short has "
                                          f"{ctypes.sizeof(Short)}"):
        _lib._check_layouts()


def test_structs_the_library_writes_have_room():
    for cls in (_lib.BfConfig, _lib.BfError, _lib.BfRunOptions, _lib.BfPortShape):
        obj = _lib.new(cls)
        (buffer,) = obj._objects.values()  # the memoryview from_buffer() keeps alive
        assert buffer.nbytes == ctypes.sizeof(cls) + _lib.SLACK
        assert bytes(buffer) == bytes(buffer.nbytes)  # zeroed
