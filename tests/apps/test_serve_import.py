"""test_serve_import.py - POST /api/import of `blockflow serve`: an enuSpace page uploaded as
the editor uploads it (base64 .svg or .json, with its .dat) becomes a page of the pages folder.

Checks: the imported page opens and runs ([[19], [-3]] for the basic sample); the report comes
back; large arrays land as NAME.<block>.npy beside it; an unsupported block is a 422 with the
report and writes nothing (or a Placeholder with "partial"); an existing name is never
replaced (409), nor a file of the same name; bad names, bad base64, a body past --max-body and
uploads past --max-upload are refused; nothing is ever written outside the pages folder.
Run by ctest with BF_BINARY; `python3 tests/apps/test_serve_import.py -v` works too.
"""
import base64
import json
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import ServeCase  # noqa: E402

SRC = os.environ.get("BF_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DATA = os.path.join(SRC, "tests", "data", "enuspace")


def b64(data):
    return base64.b64encode(data).decode()


def svg(body):
    text = ('<?xml version="1.0" encoding="UTF-16"?>\n<svg id="r" enuspace-version="3.0.3.0">\n'
            + body + '</svg>\n')
    return b"\xff\xfe" + text.encode("utf-16-le")


BIG = svg('<use id="w" type="tensorflow" xlink:href="#Const"><pg-set-pin variable="#val[20][20]"'
          ' save-type="binary" shape="[20][20]" var-type="float" binary-pos="0"/></use>\n'
          '<use id="n" type="tensorflow" xlink:href="#Negate"><pg-set-pin variable="#x" '
          'shape="" var-type="string" value=""/></use>\n'
          '<polyline><pg-link from-id="w" param-from="output" to-id="n" param-to="x"></pg-link>'
          '</polyline>\n')
BIG_DAT = struct.pack("<400f", *[i / 4 for i in range(400)])
GRADS = svg('<use id="g" type="tensorflow" xlink:href="#Unstack"></use>\n'
            '<use id="n" type="tensorflow" xlink:href="#Negate"></use>\n'
            '<polyline><pg-link from-id="g" param-from="output[3]" to-id="n" param-to="x">'
            '</pg-link></polyline>\n')


class TestImport(ServeCase):
    extra = ("--max-body", "300000", "--max-upload", "200000")

    def files(self):
        return sorted(os.listdir(self.pages))

    def test_basic_sample_imports_and_runs(self):
        with open(os.path.join(DATA, "1.5", "basic.svg"), "rb") as f:
            page = f.read()
        st, j, _ = self.api("POST", "/api/import", {"name": "basic", "page": b64(page)})
        self.assertEqual(st, 201, j)
        self.assertEqual(j["report"]["outputs"], ["ID_MUL"])
        st, j, _ = self.api("GET", "/api/pages/basic")
        self.assertEqual(st, 200, j)
        self.assertEqual(j["page"]["outputs"], ["ID_MUL"])
        ws = self.ws()
        _, evs = self.run_page("basic", ws)
        self.assertEqual(evs[-1]["type"], "run_finished", evs[-1])
        st, t, _ = self.api("GET", "/api/runs/%s/tensors/ID_MUL?view=values" % evs[-1]["run_id"])
        self.assertEqual(st, 200, t)
        self.assertEqual(t["values"], [19, -3])
        # the same name again: refused, nothing replaced
        st, j, _ = self.api("POST", "/api/import", {"name": "basic", "page": b64(page)})
        self.assertEqual(st, 409, j)

    def test_large_arrays_beside_the_page(self):
        st, j, _ = self.api("POST", "/api/import",
                            {"name": "big", "page": b64(BIG), "dat": b64(BIG_DAT)})
        self.assertEqual(st, 201, j)
        self.assertEqual(j["files"], ["big.w.npy"])
        self.assertIn("big.w.npy", self.files())
        st, j, _ = self.api("POST", "/api/pages/big/open")  # loads big.w.npy
        self.assertEqual(st, 200, j)
        # without the .dat: a clean error naming the block and pin, nothing written
        before = self.files()
        st, j, _ = self.api("POST", "/api/import", {"name": "big2", "page": b64(BIG)})
        self.assertEqual(st, 422, j)
        self.assertIn('"w"', j["error"]["message"])
        self.assertIn('"val"', j["error"]["message"])
        self.assertEqual(self.files(), before)
        # a file of the name the array would take already exists: 409, nothing written
        with open(os.path.join(self.pages, "big3.w.npy"), "wb") as f:
            f.write(b"keep")
        before = self.files()
        st, j, _ = self.api("POST", "/api/import",
                            {"name": "big3", "page": b64(BIG), "dat": b64(BIG_DAT)})
        self.assertEqual(st, 409, j)
        self.assertEqual(self.files(), before)
        with open(os.path.join(self.pages, "big3.w.npy"), "rb") as f:
            self.assertEqual(f.read(), b"keep")

    def test_symbolic_gradients_are_built(self):
        with open(os.path.join(DATA, "1.5", "addsymbolicgradients.svg"), "rb") as f:
            page = f.read()
        st, j, _ = self.api("POST", "/api/import", {"name": "asg", "page": b64(page)})
        self.assertEqual(st, 201, j)
        st, j, _ = self.api("GET", "/api/pages/asg")
        types = [b["type"] for b in j["page"]["blocks"]]
        self.assertNotIn("Placeholder", types)
        self.assertIn("TanhGrad", types)
        apply = next(b for b in j["page"]["blocks"] if b["id"] == "ID_1eYR9T0")
        self.assertTrue(apply["inputs"]["delta"].startswith("ID_W1"), apply)

    def test_unsupported_and_partial(self):
        before = self.files()
        st, j, _ = self.api("POST", "/api/import", {"name": "grads", "page": b64(GRADS)})
        self.assertEqual(st, 422, j)
        self.assertEqual(j["report"]["unsupported"][0]["id"], "g")
        self.assertEqual(j["report"]["unsupported"][0]["feeds"], ["n:x <- output[3]"])
        self.assertEqual(self.files(), before)
        st, j, _ = self.api("POST", "/api/import",
                            {"name": "grads", "page": b64(GRADS), "partial": True})
        self.assertEqual(st, 201, j)
        self.assertEqual(j["report"]["placeholders"][0]["placeholder"], "g")

    def test_hostile_requests(self):
        before = self.files()
        page = b64(svg(""))
        for name in ("../evil", ".hidden", "a/b", "", "x" * 61, 7):
            st, j, _ = self.api("POST", "/api/import", {"name": name, "page": page})
            self.assertEqual(st, 400, (name, j))
        st, j, _ = self.api("POST", "/api/import", {"name": "p", "page": "%%%"})
        self.assertEqual(st, 400, j)
        st, j, _ = self.api("POST", "/api/import", {"name": "p"})
        self.assertEqual(st, 400, j)
        st, j, _ = self.api("GET", "/api/import")
        self.assertEqual(st, 405, j)
        # past --max-upload (decoded) and past --max-body (the request)
        st, j, _ = self.api("POST", "/api/import", {"name": "p", "page": b64(b"<" * 210000)})
        self.assertEqual(st, 413, j)
        self.assertIn("--max-upload", j["error"]["message"])
        st, j, _ = self.api("POST", "/api/import", {"name": "p", "page": "A" * 400000})
        self.assertEqual(st, 413, j)
        # an entity bomb and malformed UTF-16
        bomb = b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa">]><svg>&a;</svg>'
        st, j, _ = self.api("POST", "/api/import", {"name": "p", "page": b64(bomb)})
        self.assertEqual(st, 422, j)
        self.assertIn("DOCTYPE", j["error"]["message"])
        st, j, _ = self.api("POST", "/api/import", {"name": "p", "page": b64(b"\xff\xfe<\x00\x00\xd8")})
        self.assertEqual(st, 422, j)
        self.assertEqual(self.files(), before)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["pages", "secret.json", "secret.npy"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
