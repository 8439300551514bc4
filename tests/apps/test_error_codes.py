"""test_error_codes.py - one list of stable error codes, and every code in the tree is in it.

The list is BF_ERROR_CODE_MAP in include/blockflow.h (the library, the server, the CLI); the
Python module reads it from the library (blockflow.error_codes()) and the editor has it as
web/src/api/codes.js. This test collects every error code used in the C sources (bf_err and
friends, the page loader's problems, the server's srv_error, codes copied into a bf_error),
the Python module (code="...") and the editor (code === '...', code: '...') and checks that
each one is in the list, so "canceled" next to "cancelled" or "oom" next to "out_of_memory"
cannot come back; and that the editor's copy and the library's agree. Run by ctest with
BLOCKFLOW_LIBRARY naming the built library.
"""
import os
import re
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

C = r"\.(c|h|cu)$"
PATTERNS = [
    (C, r'\bbf_v?err\(\s*[^,()]+,\s*[A-Za-z_]+,\s*"([a-z_0-9]+)"'),
    (C, r'\bBF_E[A-Z]+,\s*"([a-z_0-9]+)"'),
    (C, r'\bproblem\(\s*&?[A-Za-z_]+,\s*BF_[A-Z]+,\s*"([a-z_0-9]+)"'),
    (C, r'\bsrv_error\(\s*[a-z_&>-]+,\s*[0-9]+,\s*"([a-z_0-9]+)"'),
    (C, r'strlcpy\([a-z_.>-]*code,\s*"([a-z_0-9]+)"'),
    (C, r'snprintf\([a-z_.>-]*code,\s*sizeof\([a-z_.>-]*code\),\s*"([a-z_0-9]+)"'),
    (C, r'AddStringToObject\([^,]+,\s*"code",\s*"([a-z_0-9]+)"'),
    (r"\.py$", r'\bcode="([a-z_0-9]+)"'),
    (r"\.(js|jsx|mjs)$", r"\bcode\s*===?\s*'([a-z_0-9]+)'"),
    (r"\.(js|jsx|mjs)$", r"\bcode:\s*'([a-z_0-9]+)'"),
]
DIRS = ("runtime", "blocks", "apps", "python/blockflow", "web/src")


def codes_in_tree():
    found = {}
    for d in DIRS:
        for dp, dn, fn in os.walk(os.path.join(ROOT, d)):
            dn[:] = [x for x in dn if x not in ("node_modules", "dist")]
            for f in fn:
                if f == "codes.js":
                    continue
                path = os.path.join(dp, f)
                text = None
                for fre, cre in PATTERNS:
                    if not re.search(fre, f):
                        continue
                    if text is None:
                        with open(path, errors="replace") as fh:
                            text = fh.read()
                    for m in re.finditer(cre, text):
                        line = text.count("\n", 0, m.start()) + 1
                        found.setdefault(m.group(1), []).append(
                            "%s:%d" % (os.path.relpath(path, ROOT), line))
    return found


def header_codes():
    with open(os.path.join(ROOT, "include", "blockflow.h")) as f:
        text = f.read()
    body = text[text.index("#define BF_ERROR_CODE_MAP(XX)"):]
    body = body[:body.index("\n\n")]
    return re.findall(r"XX\(([a-z_0-9]+),", body)


class TestErrorCodes(unittest.TestCase):
    def test_every_code_used_is_in_the_list(self):
        known = set(header_codes())
        found = codes_in_tree()
        self.assertGreater(len(found), 50, "the collector finds the codes")
        unknown = {c: where[:3] for c, where in found.items() if c not in known}
        self.assertEqual(unknown, {}, "codes used but not in BF_ERROR_CODE_MAP "
                         "(include/blockflow.h): add them there and to web/src/api/codes.js, or "
                         "use the listed spelling")

    def test_no_two_spellings(self):
        known = header_codes()
        self.assertEqual(len(known), len(set(known)))
        for a, b in (("canceled", "cancelled"), ("oom", "out_of_memory"),
                     ("no_memory", "out_of_memory"), ("io", "io_error")):
            self.assertNotIn(a, known, "%s is spelt %s" % (a, b))
            self.assertIn(b, known)

    def test_editor_copy_equals_the_library(self):
        with open(os.path.join(ROOT, "web", "src", "api", "codes.js")) as f:
            js = re.findall(r"^  ([a-z_0-9]+): '", f.read(), re.M)
        self.assertEqual(js, header_codes())

    def test_python_reads_the_library(self):
        if not os.environ.get("BLOCKFLOW_LIBRARY"):
            self.skipTest("BLOCKFLOW_LIBRARY not set (a sanitizer build leaves this to test_python)")
        import blockflow
        codes = blockflow.error_codes()
        self.assertEqual(list(codes), header_codes())
        self.assertEqual(codes["cancelled"], "the run or job was cancelled")


if __name__ == "__main__":
    unittest.main()
