"""test_serve.py - API, event-order, concurrency and hostile-request tests of `blockflow serve`.

Each test class starts a real server (`blockflow serve --listen 127.0.0.1:0`) on a fresh pages
folder and drives it over HTTP and WebSocket (serve_client.py). Run by ctest (BF_BINARY names
the program); `python3 tests/apps/test_serve.py -v` works too with BF_BINARY set.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import Closed, Server, WebSocket  # noqa: E402

BINARY = os.environ.get("BF_BINARY", "build/blockflow")
SLOW = float(os.environ.get("BF_SERVE_SLOW", "1"))  # > 1 under sanitizers


def teach_page(stride=1):
    return {
        "format": "blockflow.page", "version": 1, "name": "teach",
        "description": "a 3x3 convolution of an 8x8 image",
        "blocks": [
            {"id": "x", "type": "RandomUniform", "attrs": {"shape": [1, 8, 8, 1], "seed": 1}},
            {"id": "w", "type": "RandomNormal", "attrs": {"shape": [3, 3, 1, 2], "seed": 2}},
            {"id": "y", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
             "attrs": {"strides": [1, stride, stride, 1], "padding": "SAME"}},
        ],
        "outputs": ["y"],
    }


def long_page(n=48):
    blocks = [{"id": "x", "type": "RandomUniform", "attrs": {"shape": [1, 128, 128, 64], "seed": 1}},
              {"id": "w", "type": "RandomNormal",
               "attrs": {"shape": [7, 7, 64, 64], "seed": 2, "stddev": 0.02}}]
    prev = "x"
    for i in range(n):
        blocks.append({"id": "c%d" % i, "type": "Conv2D",
                       "inputs": {"input": prev, "filter": "w"},
                       "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}})
        prev = "c%d" % i
    return {"format": "blockflow.page", "version": 1, "name": "long", "blocks": blocks,
            "outputs": [prev]}


def feed_page():
    return {"format": "blockflow.page", "version": 1, "name": "feed",
            "blocks": [{"id": "p", "type": "Placeholder",
                        "attrs": {"dtype": "float32", "shape": [2, 2]}},
                       {"id": "q", "type": "Add", "inputs": {"x": "p", "y": "p"}}],
            "outputs": ["q"]}


def npy_bytes(values, shape):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() +
            struct.pack("<%df" % len(values), *values))


class ServeCase(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bf-serve-")
        cls.pages = os.path.join(cls.tmp, "pages")
        os.mkdir(cls.pages)
        # files outside the pages folder that no request may read or change
        cls.secret = os.path.join(cls.tmp, "secret.json")
        with open(cls.secret, "w") as f:
            json.dump(teach_page(), f)
        with open(os.path.join(cls.tmp, "secret.npy"), "wb") as f:
            f.write(npy_bytes([1, 2, 3, 4], [2, 2]))
        for name, page in (("teach", teach_page()), ("long", long_page()),
                           ("feed", feed_page())):
            with open(os.path.join(cls.pages, name + ".json"), "w") as f:
                json.dump(page, f)
        os.symlink(cls.secret, os.path.join(cls.pages, "evil.json"))
        cls.srv = Server(BINARY, cls.pages, extra=cls.extra)

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "server exit %s: %s" % (rc, err)

    def api(self, method, path, body=None, **kw):
        return self.srv.request(method, path, body, **kw)

    def ws(self, **kw):
        kw.setdefault("token", self.srv.token)
        ws = WebSocket(self.srv.port, **kw)
        self.addCleanup(ws.close)
        return ws

    def run_page(self, name, ws, body=None, client=True):
        hdr = {"X-Blockflow-Client": ws.client} if client else None
        st, j, _ = self.api("POST", "/api/pages/%s/run" % name, body or {}, headers=hdr)
        self.assertEqual(st, 202, j)
        return j["run_id"], ws.run_events(j["run_id"], timeout=300 * SLOW)


class TestApi(ServeCase):
    def test_health_and_catalogue(self):
        st, j, _ = self.api("GET", "/api/health")
        self.assertEqual(st, 200)
        self.assertTrue(j["ok"])
        st, j, _ = self.api("GET", "/api/blocks")
        self.assertEqual(st, 200)
        import subprocess
        cli = json.loads(subprocess.run([BINARY, "blocks", "--json"], capture_output=True,
                                        text=True, check=True).stdout)
        self.assertEqual(j, cli)

    def test_index_sets_cookie(self):
        st, body, h = self.api("GET", "/?token=" + self.srv.token, token=False)
        # the cookie is this server's (named by its port), scoped to the random path the
        # answer sends the browser to: no other server, on any port, ever receives it
        self.assertEqual(st, 303)
        loc = h["location"]
        self.assertRegex(loc, r"^/s/[0-9a-f]{16}/$")
        self.assertIn("HttpOnly", h["set-cookie"])
        self.assertIn("SameSite=Strict", h["set-cookie"])
        self.assertIn("Path=" + loc, h["set-cookie"])
        cookie = h["set-cookie"].split(";")[0]
        self.assertTrue(cookie.startswith("blockflow_%d=" % self.srv.port), cookie)
        st, j, _ = self.api("GET", loc + "api/health", token=False, headers={"Cookie": cookie})
        self.assertEqual(st, 200)
        st, body, _ = self.api("GET", loc, token=False)
        self.assertEqual(st, 200)
        self.assertIn(b"blockflow", body)
        st, _, h = self.api("GET", "/", token=False)
        self.assertEqual(st, 200)
        self.assertNotIn("set-cookie", h)

    def test_pages_crud(self):
        st, j, _ = self.api("GET", "/api/pages")
        self.assertEqual(st, 200)
        self.assertIn("teach", j["pages"])
        self.assertNotIn("evil", j["pages"])  # a link is not a page
        st, j, _ = self.api("GET", "/api/pages/teach")
        self.assertEqual(st, 200)
        self.assertEqual(j["page"]["name"], "teach")
        rev = j["revision"]
        # create: revision null; creating over an existing page is a conflict
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": teach_page(), "revision": None})
        self.assertEqual(st, 201, j)
        rev1 = j["revision"]
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": teach_page(), "revision": None})
        self.assertEqual(st, 409)
        self.assertEqual(j["revision"], rev1)
        # update with the right revision, then a stale one
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": teach_page(2), "revision": rev1})
        self.assertEqual(st, 200, j)
        rev2 = j["revision"]
        self.assertNotEqual(rev1, rev2)
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": teach_page(1), "revision": rev1})
        self.assertEqual(st, 409)
        self.assertEqual(j["error"]["code"], "stale_revision")
        self.assertEqual(j["revision"], rev2)
        # another program changes the file: the revision follows the bytes
        with open(os.path.join(self.pages, "crud.json"), "a") as f:
            f.write("\n")
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": teach_page(1), "revision": rev2})
        self.assertEqual(st, 409)
        rev3 = j["revision"]
        # an invalid page is refused with every problem, and nothing is written
        bad = teach_page()
        bad["blocks"][2]["attrs"]["stride"] = [1, 1, 1]  # no such attribute
        bad["blocks"][1]["type"] = "NoSuchBlock"
        st, j, _ = self.api("PUT", "/api/pages/crud", {"page": bad, "revision": rev3})
        self.assertEqual(st, 422, j)
        self.assertEqual({p["block"] for p in j["problems"]}, {"w", "y"})
        self.assertEqual(rev3, self.api("GET", "/api/pages/crud")[1]["revision"])
        # rename, duplicate, delete
        st, j, _ = self.api("POST", "/api/pages/crud/rename", {"to": "crud2"})
        self.assertEqual(st, 200, j)
        st, j, _ = self.api("POST", "/api/pages/crud2/duplicate", {"to": "teach"})
        self.assertEqual(st, 409)
        st, j, _ = self.api("POST", "/api/pages/crud2/duplicate", {"to": "crud3"})
        self.assertEqual(st, 201)
        st, j, _ = self.api("DELETE", "/api/pages/crud3?revision=0000000000000000")
        self.assertEqual(st, 409)
        for n in ("crud2", "crud3"):
            st, j, _ = self.api("DELETE", "/api/pages/" + n)
            self.assertEqual(st, 200, j)
        st, j, _ = self.api("GET", "/api/pages/crud2")
        self.assertEqual(st, 404)
        self.assertEqual(rev, self.api("GET", "/api/pages/teach")[1]["revision"])

    def test_atomic_write_leaves_no_temp(self):
        st, j, _ = self.api("PUT", "/api/pages/atomic", {"page": teach_page(), "revision": None})
        self.assertEqual(st, 201)
        self.assertEqual([f for f in os.listdir(self.pages) if f.startswith(".")], [])
        self.api("DELETE", "/api/pages/atomic")

    def test_check(self):
        st, j, _ = self.api("POST", "/api/pages/teach/check", teach_page(2))
        self.assertEqual(st, 200)
        self.assertTrue(j["ok"])
        y = j["blocks"]["y"]["outputs"]["output"]
        self.assertEqual(y["shape"], [1, 4, 4, 2])
        self.assertEqual(y["label"], "float32[1,4,4,2]")
        bad = teach_page()
        bad["blocks"][2]["attrs"]["strides"] = [1, 0, 1, 1]
        bad["blocks"][1]["attrs"]["shape"] = [3, 3, 2, 2]
        st, j, _ = self.api("POST", "/api/pages/teach/check", bad)
        self.assertEqual(st, 200)
        self.assertFalse(j["ok"])
        self.assertTrue(j["problems"])
        self.assertTrue(all(p["block"] == "y" for p in j["problems"]), j)
        st, j, _ = self.api("POST", "/api/pages/teach/check", "{not json")
        self.assertEqual(st, 200)
        self.assertFalse(j["ok"])

    def test_run_events_cached_rerun_and_tensors(self):
        ws = self.ws()
        self.api("POST", "/api/pages/teach/close")
        rid, evs = self.run_page("teach", ws)
        types = [e["type"] for e in evs]
        self.assertEqual(types[0], "run_started")
        self.assertEqual(types[-1], "run_finished")
        self.assertTrue(all(e["run_id"] == rid and e["page"] == "teach" for e in evs))
        started = [e["block"] for e in evs if e["type"] == "block_started"]
        finished = [e for e in evs if e["type"] == "block_finished"]
        self.assertEqual(sorted(started), ["w", "x", "y"])
        self.assertEqual(sorted(e["block"] for e in finished), ["w", "x", "y"])
        for e in evs:  # each block starts before it finishes
            if e["type"] == "block_finished":
                self.assertLess(types.index("block_started"), evs.index(e))
        y = [e for e in finished if e["block"] == "y"][0]
        self.assertEqual(y["outputs"][0], {"dtype": "float32", "shape": [1, 8, 8, 2]})
        self.assertEqual(y["device"], "cpu")
        self.assertIn("ms", y)
        # tensors of the run
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y" % rid)
        self.assertEqual(st, 200)
        self.assertEqual(j["shape"], [1, 8, 8, 2])
        for k in ("min", "max", "mean", "std", "nan", "inf"):
            self.assertIn(k, j)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y:output?view=values&slice=0,0:2,:,1"
                            % rid)
        self.assertEqual(st, 200, j)
        self.assertEqual(j["window"], [1, 2, 8, 1])
        self.assertEqual(len(j["values"]), 16)
        st, data, h = self.api("GET", "/api/runs/%s/tensors/y?view=npy" % rid, raw=True)
        self.assertEqual(st, 200)
        self.assertTrue(data.startswith(b"\x93NUMPY"))
        self.assertEqual(len(data) % 16, (128 + 8 * 8 * 2 * 4) % 16)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y?view=values" % rid)
        self.assertEqual(st, 200)
        self.assertAlmostEqual(j["values"][0], self.api(
            "GET", "/api/runs/%s/tensors/y?view=values&slice=0,0,0,0" % rid)[1]["values"][0])
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/nope" % rid)
        self.assertEqual(st, 404)
        # a cached re-run: every block reused, none started
        rid2, evs = self.run_page("teach", ws)
        types = [e["type"] for e in evs]
        self.assertEqual(types[0], "run_started")
        self.assertEqual(types[-1], "run_finished")
        self.assertNotIn("block_started", types)
        self.assertIn("block_cached", types)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y" % rid)
        self.assertEqual(st, 410)  # replaced by the later run

    def test_edit_then_incremental_run(self):
        ws = self.ws()
        self.run_page("teach", ws)
        st, j, _ = self.api("POST", "/api/pages/teach/edits",
                            [{"op": "set_attr", "block": "y", "attr": "strides",
                              "value": [1, 2, 2, 1]}])
        self.assertEqual(st, 200, j)
        self.assertEqual(j["blocks"]["y"]["outputs"]["output"]["shape"], [1, 4, 4, 2])
        rid, evs = self.run_page("teach", ws)
        started = [e["block"] for e in evs if e["type"] == "block_started"]
        self.assertEqual(started, ["y"])
        st, j, _ = self.api("POST", "/api/pages/teach/edits",
                            [{"op": "set_attr", "block": "y", "attr": "strides",
                              "value": [1, 2, 2]}])
        # refused: bf_session_set_attr checks the value as the block does (issue 26), and
        # the error names the block and the attribute; the page keeps its strides
        self.assertEqual(st, 422, j)
        self.assertEqual((j["error"]["block"], j["error"]["attr"]), ("y", "strides"))
        st, j, _ = self.api("POST", "/api/pages/teach/edits",
                            [{"op": "set_attr", "block": "nope", "attr": "strides",
                              "value": [1, 2, 2, 1]}])
        self.assertEqual(st, 422)
        self.assertEqual(j["error"]["pointer"], "/0")
        self.api("POST", "/api/pages/teach/edits",
                 [{"op": "set_attr", "block": "y", "attr": "strides", "value": [1, 1, 1, 1]}])

    def test_live_edits_all_or_nothing_then_save(self):
        st, j, _ = self.api("PUT", "/api/pages/live", {"page": teach_page(), "revision": None})
        self.assertEqual(st, 201, j)
        rev = j["revision"]
        ws = self.ws()
        self.run_page("live", ws)
        # a batch whose second edit fails changes nothing
        st, j, _ = self.api("POST", "/api/pages/live/edits", [
            {"op": "add_block", "id": "z", "type": "Identity"},
            {"op": "connect", "block": "z", "port": "nope", "source": "y"}])
        self.assertEqual(st, 422, j)
        self.assertTrue(j["error"]["pointer"].startswith("/1"), j)
        st, j, _ = self.api("POST", "/api/pages/live/check", teach_page())
        # unfinished wiring is allowed and reported
        st, j, _ = self.api("POST", "/api/pages/live/edits", [
            {"op": "add_block", "id": "z", "type": "Identity"}])
        self.assertEqual(st, 200, j)
        self.assertFalse(j["ok"])
        self.assertIn("z", [p.get("block") for p in j["problems"]])
        st, j, _ = self.api("POST", "/api/pages/live/edits", {"edits": [
            {"op": "connect", "block": "z", "port": "input", "source": "y"},
            {"op": "set_outputs", "outputs": ["z"]},
            {"op": "set_ui", "block": "z", "ui": {"x": 10, "y": 20}}]})
        self.assertEqual(st, 200, j)
        self.assertTrue(j["ok"], j)
        self.assertEqual(j["blocks"]["z"]["inputs"]["input"]["source"], "y")
        self.assertEqual(j["blocks"]["z"]["outputs"]["output"]["label"], "float32[1,8,8,2]")
        rid, evs = self.run_page("live", ws)
        self.assertEqual([e["block"] for e in evs if e["type"] == "block_started"], ["z"])
        # save what the session holds: written canonical, and the session stays open (cached)
        st, j, _ = self.api("GET", "/api/pages/live?view=session")
        page = j.get("session_page")
        self.assertIsNotNone(page, j)
        st, j, _ = self.api("PUT", "/api/pages/live", {"page": page, "revision": rev})
        self.assertEqual(st, 200, j)
        self.assertTrue(j["open"])
        import subprocess
        fmt = subprocess.run([BINARY, "fmt", "--check", os.path.join(self.pages, "live.json")],
                             capture_output=True, text=True)
        self.assertEqual(fmt.returncode, 0, fmt.stdout + fmt.stderr)
        rid, evs = self.run_page("live", ws)
        self.assertNotIn("block_started", [e["type"] for e in evs])
        # a page saved with wiring problems opens and lists them
        loose = teach_page()
        del loose["blocks"][2]["inputs"]["filter"]
        st, j, _ = self.api("PUT", "/api/pages/loose", {"page": loose, "revision": None})
        self.assertEqual(st, 201, j)
        st, j, _ = self.api("POST", "/api/pages/loose/open")
        self.assertEqual(st, 200, j)
        self.assertFalse(j["ok"])
        self.assertEqual(j["problems"][0]["block"], "y")
        for n in ("live", "loose"):
            self.api("POST", "/api/pages/%s/close" % n)
            self.api("DELETE", "/api/pages/" + n)

    def test_failing_run(self):
        ws = self.ws()
        rid, evs = self.run_page("feed", ws)  # the placeholder is not fed
        self.assertEqual(evs[0]["type"], "run_started")
        self.assertEqual(evs[-1]["type"], "run_failed")
        self.assertIn("error", evs[-1])
        # fed, it runs
        b64 = base64.b64encode(npy_bytes([1, 2, 3, 4], [2, 2])).decode()
        rid, evs = self.run_page("feed", ws, {"feeds": {"p": b64}})
        self.assertEqual(evs[-1]["type"], "run_finished", evs)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/q?view=values" % rid)
        self.assertEqual(j["values"], [2, 4, 6, 8])
        # a feed that is not .npy, or not base64
        st, j, _ = self.api("POST", "/api/pages/feed/run", {"feeds": {"p": "aGVsbG8="}})
        self.assertEqual(st, 422, j)
        self.assertEqual(j["error"]["block"], "p")
        st, j, _ = self.api("POST", "/api/pages/feed/run", {"feeds": {"p": "!!!"}})
        self.assertEqual(st, 422)
        # a failing block: the fetch names nothing
        st, j, _ = self.api("POST", "/api/pages/teach/run", {"fetch": ["nope"]},
                            headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, 202)
        evs = ws.run_events(j["run_id"])
        self.assertEqual(evs[-1]["type"], "run_failed")

    def test_cancel_long_run_and_requests_meanwhile(self):
        ws = self.ws()
        st, j, _ = self.api("POST", "/api/pages/long/run", {},
                            headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, 202)
        rid = j["run_id"]
        ev = ws.recv_json()
        self.assertEqual(ev["type"], "run_started")
        # while it runs: other requests are answered at once, another page runs
        t0 = time.time()
        for _ in range(5):
            self.assertEqual(self.api("GET", "/api/health")[0], 200)
        self.assertLess(time.time() - t0, 2 * SLOW)
        ws2 = self.ws()
        _, evs = self.run_page("teach", ws2)
        self.assertEqual(evs[-1]["type"], "run_finished")
        # the busy page refuses edits and runs
        st, j, _ = self.api("POST", "/api/pages/long/run", {})
        self.assertEqual((st, j["error"]["code"]), (409, "busy"))
        st, j, _ = self.api("POST", "/api/pages/long/edits",
                            [{"op": "set_attr", "block": "c0", "attr": "padding",
                              "value": "VALID"}])
        self.assertEqual(st, 409)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/c0" % rid)
        self.assertEqual(st, 409)
        st, j, _ = self.api("POST", "/api/runs/%s/cancel" % rid)
        self.assertEqual(st, 202)
        self.assertTrue(j["cancelled"])
        rest = ws.run_events(rid, timeout=120 * SLOW)
        self.assertEqual(rest[-1]["type"], "run_cancelled")
        self.assertLess(time.time() - t0, 60 * SLOW)
        st, j, _ = self.api("POST", "/api/runs/%s/cancel" % rid)
        self.assertEqual((st, j["cancelled"]), (200, False))

    def test_two_clients_edit_and_run_at_once(self):
        for n in ("a", "b"):
            self.api("PUT", "/api/pages/two_" + n, {"page": teach_page(), "revision": None})
        results = {}

        def work(n):
            ws = WebSocket(self.srv.port, token=self.srv.token)
            try:
                out = []
                for stride in (2, 1, 2, 1):
                    st, j, _ = self.srv.request(
                        "POST", "/api/pages/two_%s/edits" % n,
                        [{"op": "set_attr", "block": "y", "attr": "strides",
                          "value": [1, stride, stride, 1]}],
                        headers={"X-Blockflow-Client": ws.client})
                    out.append(st)
                    st, j, _ = self.srv.request("POST", "/api/pages/two_%s/run" % n, {},
                                                headers={"X-Blockflow-Client": ws.client})
                    out.append(st)
                    evs = ws.run_events(j["run_id"])
                    out.append(evs[-1]["type"])
                    # a client sees only its own runs
                    out.extend("other" for e in evs if e["page"] != "two_" + n)
                results[n] = out
            finally:
                ws.close()
        ts = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
        for t in ts:
            t.start()
        for t in ts:
            t.join(300)
        for n in ("a", "b"):
            self.assertEqual(results.get(n), [200, 202, "run_finished"] * 4)
            self.api("DELETE", "/api/pages/two_" + n)

    def test_batched_events(self):
        # /ws?batch=1: the same events in the same order, in frames of JSON arrays
        plain, batched = self.ws(), self.ws(batch=True)
        self.assertTrue(batched.client)
        runs = {}
        for ws in (plain, batched):
            self.api("POST", "/api/pages/teach/close")
            rid, evs = self.run_page("teach", ws)
            runs[ws is batched] = [(e["type"], e.get("block")) for e in evs]
        self.assertEqual(runs[True], runs[False])
        self.assertEqual(runs[True][-1][0], "run_finished")
        # hello, then the events in frames of arrays (how many per frame depends on timing)
        self.assertLessEqual(batched.frames, len(runs[True]) + 1)

    def test_ws_ping(self):
        ws = self.ws()
        ws.send(json.dumps({"type": "ping"}))
        self.assertEqual(ws.recv_json()["type"], "pong")
        ws.send("nonsense")
        self.assertEqual(ws.recv_json()["error"]["code"], "bad_json")


class TestHostile(ServeCase):
    extra = ("--max-body", "65536", "--max-ws-message", "4096", "--max-ws-queue", "65536",
             "--max-values", "100")

    def outside_unchanged(self):
        with open(self.secret) as f:
            self.assertEqual(json.load(f), teach_page())

    def test_tokens(self):
        for tok in (False, "wrong-token-xyz"):
            for m, p, b in (("GET", "/api/health", None), ("GET", "/api/pages", None),
                            ("PUT", "/api/pages/x", {"page": teach_page(), "revision": None}),
                            ("POST", "/api/pages/teach/run", {}),
                            ("DELETE", "/api/pages/teach", None)):
                st, j, _ = self.api(m, p, b, token=tok)
                self.assertEqual(st, 401, (m, p))
                self.assertEqual(j["error"]["code"], "unauthorized")
        self.assertFalse(os.path.exists(os.path.join(self.pages, "x.json")))
        self.assertTrue(os.path.exists(os.path.join(self.pages, "teach.json")))
        st, _, _ = self.api("GET", "/api/health", token=False,
                            headers={"Cookie": "blockflow_token=nope"})
        self.assertEqual(st, 401)
        for tok in (None, "wrong"):
            ws = WebSocket(self.srv.port, token=tok)
            ws.close()
            self.assertEqual(ws.status, 401)

    def test_host_and_origin(self):
        for host in ("evil.example:80", "127.0.0.1", "attacker.com:%d" % self.srv.port, None):
            st, j, _ = self.api("GET", "/api/health", headers={"Host": host})
            self.assertIn(st, (400, 403), host)
        st, j, _ = self.api("GET", "/api/health", headers={"Host": "localhost:%d" % self.srv.port})
        self.assertEqual(st, 200)
        st, j, _ = self.api("POST", "/api/pages/teach/run", {},
                            headers={"Origin": "http://evil.example"})
        self.assertEqual(st, 403)
        for kw in ({"origin": "http://evil.example"}, {"host": "evil.example"},
                   {"origin": "null"}, {"origin": "http://127.0.0.1.evil.example:%d" % self.srv.port}):
            ws = WebSocket(self.srv.port, token=self.srv.token, **kw)
            ws.close()
            self.assertEqual(ws.status, 403, kw)
        ws = WebSocket(self.srv.port, token=self.srv.token, origin="http://" + self.srv.host)
        ws.close()
        self.assertEqual(ws.status, 101)

    def test_path_traversal(self):
        # ("a%2fb" is page b of subfolder a: TestSubfolders)
        names = ["..", "%2e%2e", "..%2f..%2fsecret", "%2e%2e%2fsecret", ".hidden",
                 "%2fetc%2fpasswd", "..%5csecret", "evil", "secret%00", "x" * 101,
                 "..;", "%252e%252e"]
        for n in names:
            for m, suffix, body in (("GET", "", None),
                                    ("PUT", "", {"page": teach_page(), "revision": None}),
                                    ("DELETE", "", None), ("POST", "/run", {}),
                                    ("POST", "/check", teach_page())):
                try:
                    st, j, _ = self.api(m, "/api/pages/" + n + suffix, body)
                except (ConnectionError, http.client.HTTPException):
                    st, j = 0, None  # refused by libwebsockets itself (a NUL in the URI)
                if n == "evil" and m == "POST" and suffix == "/check":
                    continue  # checking a body touches no file
                if n == "evil" and m == "PUT":
                    # a planted link: the write replaces the link itself, never its target
                    self.assertIn(st, (403, 409), (n, m))
                    continue
                if n == "%2fetc%2fpasswd" and st in (200, 201, 202):
                    # libwebsockets decodes %2f and folds "//": page passwd of subfolder etc
                    # of the pages folder, made by the PUT, never /etc/passwd
                    self.assertTrue(os.path.isdir(os.path.join(self.pages, "etc")), (m, j))
                    continue
                self.assertIn(st, (0, 400, 403, 404, 405, 409), (n, m, suffix, j))
        st, j, _ = self.api("GET", "/api/pages/evil")
        self.assertEqual(st, 403)
        self.assertNotIn("teach", json.dumps(j))
        st, j, _ = self.api("POST", "/api/pages/teach/rename", {"to": "../escaped"})
        self.assertEqual(st, 400)
        st, j, _ = self.api("POST", "/api/pages/teach/duplicate", {"to": "/tmp/escaped"})
        self.assertEqual(st, 400)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escaped.json")))
        self.outside_unchanged()
        self.assertTrue(os.path.islink(os.path.join(self.pages, "evil.json")))

    def test_file_attr_confined(self):
        page = feed_page()
        page["blocks"][0] = {"id": "p", "type": "Const", "attrs": {"file": "../secret.npy"}}
        st, j, _ = self.api("POST", "/api/pages/conf/check", page)
        self.assertFalse(j["ok"])
        self.assertIn("outside", json.dumps(j))
        page["blocks"][0]["attrs"]["file"] = os.path.join(self.tmp, "secret.npy")
        st, j, _ = self.api("PUT", "/api/pages/conf", {"page": page, "revision": None})
        self.assertEqual(st, 422, j)
        self.assertFalse(os.path.exists(os.path.join(self.pages, "conf.json")))

    def test_malformed_and_nested_json(self):
        for body in ("{", "[1,2", "nul", '{"page": 1}', "\x00\x01", '"str"', "[]"):
            st, j, _ = self.api("PUT", "/api/pages/bad", body)
            self.assertEqual(st, 400, body)
            self.assertIn("error", j)
        deep = "[" * 10000 + "]" * 10000
        for path in ("/api/pages/bad", "/api/pages/teach/check", "/api/pages/teach/edits",
                     "/api/pages/teach/run"):
            st, j, _ = self.api("PUT" if path.endswith("bad") else "POST", path, deep)
            self.assertEqual(st, 400, path)
            self.assertIn("max_json_depth", j["error"]["message"])
        st, j, _ = self.api("POST", "/api/pages/teach/edits", [{"op": "explode"}])
        self.assertIn(st, (400, 422, 501))
        self.assertIn("pointer", j["error"])
        st, j, _ = self.api("GET", "/api/nothing")
        self.assertEqual(st, 404)
        st, j, _ = self.api("PATCH", "/api/pages/teach", "{}")
        self.assertEqual(st, 405)

    def test_oversized_body_and_values(self):
        st, j, _ = self.api("PUT", "/api/pages/big", "x" * 70000)
        self.assertEqual(st, 413)
        self.assertIn("--max-body", j["error"]["message"])
        self.assertEqual(j["error"]["code"], "limit")
        ws = self.ws()
        rid, _ = self.run_page("teach", ws)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y?view=values" % rid)
        self.assertEqual(st, 413)
        self.assertIn("--max-values", j["error"]["message"])
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y?view=values&slice=0:9x" % rid)
        self.assertEqual(st, 400)

    def test_oversized_ws_message(self):
        ws = self.ws()
        ws.send("[" + "0," * 4000 + "0]")
        with self.assertRaises(Closed) as c:
            ws.recv_json()
        self.assertEqual(c.exception.code, 1009)
        self.assertIn("max_ws_message", c.exception.reason)
        self.assertEqual(self.api("GET", "/api/health")[0], 200)

    def test_disconnect_mid_run(self):
        ws = self.ws()
        st, j, _ = self.api("POST", "/api/pages/long/run", {},
                            headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, 202)
        ws.recv_json()
        ws.close()  # gone while its run goes on
        time.sleep(0.2)
        self.assertEqual(self.api("GET", "/api/health")[0], 200)
        self.api("POST", "/api/runs/%s/cancel" % j["run_id"])
        # a raw HTTP client that sends half a request and leaves
        s = socket.create_connection(("127.0.0.1", self.srv.port))
        s.sendall(b"PUT /api/pages/x HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{"
                  % self.srv.host.encode())
        s.close()
        deadline = time.time() + 60 * SLOW
        while time.time() < deadline:
            if self.api("GET", "/api/health")[1]["active_runs"] == 0:
                break
            time.sleep(0.1)
        self.assertEqual(self.api("GET", "/api/health")[1]["active_runs"], 0)

    def test_slow_client_is_dropped(self):
        slow = self.ws(rcvbuf=4096)
        before = self.api("GET", "/api/health")[1]["ws_dropped"]
        # 4 KB pongs pile up at a client that never reads (beyond what the kernel buffers):
        # past --max-ws-queue it is dropped, and nobody else waits for it
        ping = json.dumps({"type": "ping", "data": "x" * 4000})
        try:
            for i in range(4000):
                slow.send(ping)
        except OSError:
            pass  # the server closed it while we were still sending
        fast = self.ws()
        _, evs = self.run_page("teach", fast)
        self.assertEqual(evs[-1]["type"], "run_finished")
        self.assertGreater(self.api("GET", "/api/health")[1]["ws_dropped"], before)
        # and the slow client's socket ends (EOF or reset), it does not hang
        with self.assertRaises((Closed, OSError)):
            for _ in range(100000):
                slow.recv_frame(timeout=30 * SLOW)
        self.assertTrue(self.srv.alive())


class TestLimits(ServeCase):
    extra = ("--max-open-pages", "2", "--max-runs", "1", "--idle-timeout", "1",
             "--max-upload", "100")

    def test_open_pages_runs_upload_idle(self):
        alice, bob = self.ws(), self.ws()  # client ids are given by the server to a socket
        hdr = {"X-Blockflow-Client": alice.client}
        for n in ("teach", "feed"):
            st, j, _ = self.api("POST", "/api/pages/%s/open" % n, headers=hdr)
            self.assertEqual(st, 200, j)
        st, j, _ = self.api("POST", "/api/pages/long/open", headers=hdr)
        self.assertEqual(st, 429)
        self.assertIn("--max-open-pages", j["error"]["message"])
        bob_hdr = {"X-Blockflow-Client": bob.client}
        st, j, _ = self.api("POST", "/api/pages/long/open", headers=bob_hdr)
        self.assertEqual(st, 200)
        b64 = base64.b64encode(npy_bytes([0] * 64, [8, 8])).decode()
        st, j, _ = self.api("POST", "/api/pages/feed/run", {"feeds": {"p": b64}}, headers=hdr)
        self.assertEqual(st, 413)
        self.assertIn("--max-upload", j["error"]["message"])
        st, j, _ = self.api("POST", "/api/pages/long/run", {}, headers=bob_hdr)
        self.assertEqual(st, 202)
        st, j2, _ = self.api("POST", "/api/pages/teach/run", {}, headers=hdr)
        self.assertEqual(st, 429)
        self.assertIn("--max-runs", j2["error"]["message"])
        self.api("POST", "/api/runs/%s/cancel" % j["run_id"])
        # idle pages close by themselves
        deadline = time.time() + 30 * SLOW
        while time.time() < deadline and self.api("GET", "/api/health")[1]["open_pages"]:
            time.sleep(0.2)
        self.assertEqual(self.api("GET", "/api/health")[1]["open_pages"], 0)



class TestEditorFiles(ServeCase):
    """The built editor's files (--web DIR): served without the token, confined to the folder."""

    @classmethod
    def setUpClass(cls):
        cls.web = tempfile.mkdtemp(prefix="bf-web-")
        os.mkdir(os.path.join(cls.web, "assets"))
        with open(os.path.join(cls.web, "index.html"), "w") as f:
            f.write("<!doctype html><title>editor shell</title>")
        with open(os.path.join(cls.web, "assets", "main.js"), "w") as f:
            f.write("console.log(1)")
        with open(os.path.join(cls.web, "assets", ".hidden.js"), "w") as f:
            f.write("secret")
        cls.outside = tempfile.mkdtemp(prefix="bf-out-")
        with open(os.path.join(cls.outside, "x.js"), "w") as f:
            f.write("outside")
        os.symlink(os.path.join(cls.outside, "x.js"), os.path.join(cls.web, "assets", "link.js"))
        os.symlink(cls.outside, os.path.join(cls.web, "assets", "dir"))
        cls.extra = ("--web", cls.web)
        super().setUpClass()
        with open(os.path.join(cls.pages, "dy.npy"), "wb") as f:
            f.write(npy_bytes([1, 2, 3, 4], [2, 2]))

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.web, ignore_errors=True)
        shutil.rmtree(cls.outside, ignore_errors=True)

    def test_shell_and_assets_without_token(self):
        st, body, h = self.api("GET", "/?token=" + self.srv.token, token=False)
        self.assertEqual(st, 303)
        self.assertIn("HttpOnly", h.get("set-cookie", ""))
        loc = h["location"]
        st, body, h = self.api("GET", loc, token=False)
        self.assertEqual(st, 200)
        self.assertIn(b"editor shell", body)
        self.assertTrue(h["content-type"].startswith("text/html"))
        st, body, h = self.api("GET", loc + "assets/main.js", token=False)
        self.assertEqual((st, body), (200, b"console.log(1)"))
        st, body, h = self.api("GET", "/assets/main.js", token=False)
        self.assertEqual((st, body), (200, b"console.log(1)"))
        self.assertTrue(h["content-type"].startswith("text/javascript"))
        self.assertEqual(h["x-content-type-options"], "nosniff")
        self.assertEqual(self.api("GET", "/api/pages", token=False)[0], 401)

    def test_no_escape_from_the_folder(self):
        for path in ("/assets/../index.html", "/assets/%2e%2e/index.html", "/assets/.hidden.js",
                     "/assets/link.js", "/assets/dir/x.js", "/assets/",
                     "/assets/nope.js", "/assets/a/b/c/d/e.js"):
            st, body, _ = self.api("GET", path, token=False)
            if st == 200:  # libwebsockets resolves ".." itself: still inside the folder
                self.assertEqual(body, b"<!doctype html><title>editor shell</title>", path)
            else:
                self.assertIn(st, (400, 403, 404), path)
            self.assertNotIn(b"outside", body if isinstance(body, bytes) else b"")
            self.assertNotIn(b"secret", body if isinstance(body, bytes) else b"")
        self.assertEqual(self.api("POST", "/assets/main.js", token=False)[0], 405)

    def test_files_lists_npy(self):
        st, body, _ = self.api("GET", "/api/files")
        self.assertEqual(st, 200)
        self.assertEqual(body["files"], ["dy.npy"])
        self.assertEqual(self.api("GET", "/api/files", token=False)[0], 401)


class TestSubfolders(ServeCase):
    """Pages in subfolders of the pages folder ("teach/conv"), and feeds named by a .npy file of
    the folder: listed, read, written, run; no link, no '..', no hidden folder is a way out."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        P = cls.pages
        for d in ("teach", "a/b/c/d", "data"):
            os.makedirs(os.path.join(P, d))
        page = feed_page()
        page["blocks"].append({"id": "w", "type": "Const", "attrs": {"file": "w.npy"}})
        page["outputs"].append("w")
        for name, pg in (("teach/conv", teach_page()), ("teach/fed", page),
                         ("a/b/c/deep", teach_page()), ("a/b/c/d/too_deep", teach_page()),
                         ("teach/run", teach_page())):
            with open(os.path.join(P, name + ".json"), "w") as f:
                json.dump(pg, f)
        with open(os.path.join(P, "teach", "w.npy"), "wb") as f:  # beside teach/fed.json
            f.write(npy_bytes([5, 6], [2]))
        with open(os.path.join(P, "data", "x.npy"), "wb") as f:
            f.write(npy_bytes([1, 2, 3, 4], [2, 2]))
        os.makedirs(os.path.join(cls.tmp, "outside"))
        with open(os.path.join(cls.tmp, "outside", "o.json"), "w") as f:
            json.dump(teach_page(), f)
        with open(os.path.join(cls.tmp, "outside", "o.npy"), "wb") as f:
            f.write(npy_bytes([9, 9, 9, 9], [2, 2]))
        os.symlink(os.path.join(cls.tmp, "outside"), os.path.join(P, "linked"))
        os.makedirs(os.path.join(P, ".hidden"))
        with open(os.path.join(P, ".hidden", "h.json"), "w") as f:
            json.dump(teach_page(), f)

    def test_listed_with_their_folders(self):
        st, j, _ = self.api("GET", "/api/pages")
        self.assertEqual(st, 200)
        for name in ("teach/conv", "teach/fed", "a/b/c/deep", "teach", "feed"):
            self.assertIn(name, j["pages"])
        # too deep, through a link, hidden, or named like an API action: not pages
        for name in ("a/b/c/d/too_deep", "linked/o", ".hidden/h", "teach/run"):
            self.assertNotIn(name, j["pages"])
        st, j, _ = self.api("GET", "/api/files")
        self.assertIn("data/x.npy", j["files"])
        self.assertIn("teach/w.npy", j["files"])
        self.assertNotIn("linked/o.npy", j["files"])

    def test_read_write_rename_delete(self):
        st, j, _ = self.api("GET", "/api/pages/teach/conv")
        self.assertEqual((st, j["name"]), (200, "teach/conv"))
        st2, j2, _ = self.api("GET", "/api/pages/teach%2Fconv")  # encoded: the same page
        self.assertEqual((st2, j2["revision"]), (200, j["revision"]))
        page = j["page"]
        page["description"] = "changed"
        st, j, _ = self.api("PUT", "/api/pages/teach/conv", {"page": page,
                                                             "revision": j["revision"]})
        self.assertEqual(st, 200, j)
        with open(os.path.join(self.pages, "teach", "conv.json")) as f:
            self.assertEqual(json.load(f)["description"], "changed")
        self.assertEqual([n for n in os.listdir(os.path.join(self.pages, "teach"))
                          if n.startswith(".")], [])  # no temporary file left
        # a new page in a new folder: the folder is made
        st, j, _ = self.api("PUT", "/api/pages/new/sub/p", {"page": teach_page(), "revision": None})
        self.assertEqual(st, 201, j)
        self.assertTrue(os.path.isfile(os.path.join(self.pages, "new", "sub", "p.json")))
        st, j, _ = self.api("POST", "/api/pages/new/sub/p/rename", {"to": "teach/moved"})
        self.assertEqual((st, j.get("name")), (200, "teach/moved"), j)
        self.assertTrue(os.path.isfile(os.path.join(self.pages, "teach", "moved.json")))
        st, j, _ = self.api("POST", "/api/pages/teach/moved/duplicate", {"to": "../escaped"})
        self.assertEqual(st, 400)
        st, j, _ = self.api("DELETE", "/api/pages/teach/moved")
        self.assertEqual(st, 200, j)
        self.assertFalse(os.path.exists(os.path.join(self.pages, "teach", "moved.json")))

    def test_no_way_out(self):
        for m, body in (("GET", None), ("PUT", {"page": teach_page(), "revision": None}),
                        ("DELETE", None)):
            for name in ("linked/o", "linked/new", ".hidden/h", "teach/.x", "a/b/c/d/too_deep",
                         "teach%2F..%2F..%2Foutside%2Fo", "teach/%2e%2e/%2e%2e/outside/o",
                         "x" * 60 + "/" + "y" * 60):
                st, j, _ = self.api(m, "/api/pages/" + name, body)
                self.assertIn(st, (400, 403, 404, 405, 409), (m, name, j))
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, "outside"))), ["o.json", "o.npy"])
        with open(os.path.join(self.tmp, "outside", "o.json")) as f:
            self.assertEqual(json.load(f), teach_page())
        # the training of page "teach", never a page "teach/train"
        st, j, _ = self.api("GET", "/api/pages/teach/train")
        self.assertEqual((st, j.get("page")), (200, "teach"), j)

    def test_run_files_beside_the_page_and_feeds_from_files(self):
        ws = self.ws()
        rid, evs = self.run_page("teach/fed", ws, {"feeds": {"p": {"file": "data/x.npy"}}})
        self.assertEqual(evs[-1]["type"], "run_finished", evs)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/q?view=values" % rid)
        self.assertEqual(j["values"], [2, 4, 6, 8])
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/w?view=values" % rid)
        self.assertEqual(j["values"], [5, 6])  # teach/w.npy, beside the page
        st, j, _ = self.api("GET", "/api/files/data/x.npy")  # what the editor checks first
        self.assertEqual((st, j), (200, {"file": "data/x.npy", "dtype": "float32",
                                         "shape": [2, 2], "bytes": 144}), j)
        for path in ("linked/o.npy", "nope.npy", "teach/conv.json", "..%2fsecret.npy"):
            st, j, _ = self.api("GET", "/api/files/" + path)
            self.assertIn(st, (400, 403, 404), (path, j))
        for bad in ({"file": "../secret.npy"}, {"file": "linked/o.npy"}, {"file": "nope.npy"},
                    {"file": "teach/conv.json"}, {"file": "/etc/passwd"}, {"file": 1},
                    {"file": "data/x.npy", "more": 1}, 7):
            st, j, _ = self.api("POST", "/api/pages/teach/fed/run", {"feeds": {"p": bad}},
                                headers={"X-Blockflow-Client": ws.client})
            self.assertIn(st, (400, 422), (bad, j))
            self.assertNotIn("9", json.dumps(j.get("values", "")))


class TestEditorMissing(ServeCase):
    extra = ("--web", "/nonexistent-editor-dir")

    def test_root_says_how_to_build_and_api_works(self):
        st, body, _ = self.api("GET", "/", token=False)
        self.assertEqual(st, 200)
        self.assertIn(b"make editor", body)
        self.assertEqual(self.api("GET", "/api/pages")[0], 200)

    def test_no_npy_files_is_an_empty_list(self):
        # a folder without .npy files (this one) once handed qsort a NULL array: UBSan stops
        # the server on that, and tearDownClass then sees a failed exit
        st, body, _ = self.api("GET", "/api/files")
        self.assertEqual((st, body), (200, {"files": []}))

class TestShutdown(unittest.TestCase):
    def test_sigint_cancels_runs_and_exits(self):
        tmp = tempfile.mkdtemp(prefix="bf-serve-")
        try:
            with open(os.path.join(tmp, "long.json"), "w") as f:
                json.dump(long_page(), f)
            srv = Server(BINARY, tmp)
            ws = WebSocket(srv.port, token=srv.token)
            st, j, _ = srv.request("POST", "/api/pages/long/run", {})
            self.assertEqual(st, 202)
            self.assertEqual(ws.recv_json()["type"], "run_started")
            ws.close()
            t0 = time.time()
            rc, err = srv.stop(signal.SIGINT)
            self.assertEqual(rc, 0, err)
            self.assertIn("stopped", err)
            self.assertLess(time.time() - t0, 60 * SLOW)
            self.assertEqual(sorted(os.listdir(tmp)), ["long.json"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def gradcheck_page(h, c=16):
    """A Conv2D whose full gradient check (1024 samples) takes seconds: 2 x 2 x 1024 float64
    forward convolutions of a [1, h, h, c] image."""
    page = teach_page()
    page["name"] = "gc"
    page["blocks"][0]["attrs"]["shape"] = [1, h, h, c]
    page["blocks"][1]["attrs"]["shape"] = [3, 3, c, c]
    return page


class TestTeach(ServeCase):
    """POST /api/pages/{name}/explain, /gradcheck and /grad (apps/server/teach_routes.c):
    explain and gradcheck are jobs on the run workers (202, then the run's events)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        page = teach_page(stride=2)
        page["name"] = "grads"
        for name, pg in (("grads", page), ("grads2", page), ("gclong", gradcheck_page(48))):
            with open(os.path.join(cls.pages, name + ".json"), "w") as f:
                json.dump(pg, f)

    def job(self, page, act, body, ws, status=202):
        """Start a job; its run id and events (run_started ... the terminal one)."""
        st, j, _ = self.api("POST", "/api/pages/%s/%s" % (page, act), body,
                            headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, status, j)
        self.assertEqual((j["kind"], j["page"]), (act, page))
        evs = ws.run_events(j["run_id"], timeout=300 * SLOW)
        self.assertEqual(evs[0]["type"], "run_started")
        self.assertEqual(evs[0]["kind"], act)
        for e in evs[1:-1]:  # the block events of the job's runs, marked with its kind
            self.assertIn(e["type"], ("block_started", "block_finished", "block_cached",
                                      "block_failed"), e)
            self.assertEqual(e["kind"], act, e)
        return j["run_id"], evs

    def test_explain(self):
        ws = self.ws()
        rid, evs = self.job("grads", "explain",
                            {"block": "y", "index": [0, 3, 3, 1], "max_terms": 2}, ws)
        self.assertEqual(evs[-1]["type"], "explain_finished")
        # the run it made is told as a run's is: y computed (or kept from before), with where
        ys = [e for e in evs[1:-1] if e["block"] == "y" and e["type"] != "block_started"]
        self.assertEqual(len(ys), 1, evs)
        if ys[0]["type"] == "block_finished":
            self.assertEqual(ys[0]["device"], "cpu")
        else:
            self.assertEqual(ys[0]["type"], "block_cached")
        _, again = self.job("grads", "explain", {"block": "y", "index": [0, 0, 0, 0]}, ws)
        self.assertEqual([e["type"] for e in again[1:-1] if e["block"] == "y"],
                         ["block_cached"])
        j = evs[-1]["result"]
        self.assertEqual(j["padding"], {"mode": "SAME", "top": 0, "bottom": 1, "left": 0,
                                        "right": 1, "odd": ["bottom", "right"]})
        self.assertEqual(j["n_terms"], 4)  # 9 taps, 5 of them in the padding
        self.assertEqual(j["n_padded"], 5)
        self.assertTrue(j["truncated"])
        self.assertEqual(len(j["terms"]), 2)
        # the padded taps are listed under the same cap, each where it fell on the ring
        self.assertTrue(j["padded_truncated"])
        self.assertEqual(len(j["padded_taps"]), 2)
        for t in j["padded_taps"]:
            self.assertEqual(t["a"]["tensor"], "input")
            self.assertEqual(t["a"]["value"], 0)
            self.assertEqual(t["a"]["index"][1:3], [t["h"], t["w"]])
            self.assertTrue(t["h"] == 8 or t["w"] == 8, t)  # row or column 8: after the 8x8 data
            self.assertEqual(t["b"]["tensor"], "filter")
        self.assertEqual(j["terms"][0]["a"]["tensor"], "input")
        self.assertEqual(j["terms"][0]["b"]["tensor"], "filter")
        self.assertLessEqual(abs(j["sum"] - j["value"]), 2e-6 * j["abs_sum"])
        # the same terminal event, result included, while the run is kept
        st, got, _ = self.api("GET", "/api/runs/%s/result" % rid)
        self.assertEqual((st, got), (200, evs[-1]))
        self.assertEqual(self.api("GET", "/api/runs/r999999/result")[0], 404)
        # what needs no kernel is answered at once
        for body, code in (({"block": "nope", "index": [0, 0, 0, 0]}, 404),
                           ({"block": "y", "index": "0"}, 400),
                           ({"block": "y", "index": [0, 0, 0, 0], "port": 3}, 400),
                           ({"index": [0, 0, 0, 0]}, 400)):
            st, j, _ = self.api("POST", "/api/pages/grads/explain", body)
            self.assertEqual(st, code, (body, j))
            self.assertIn("error", j)
        # what the library finds ends the job with run_failed
        for body, code in (({"block": "y", "index": [0, 4, 0, 0]}, "bad_index"),
                           ({"block": "x", "index": [0, 0, 0, 0]}, "unsupported")):
            rid, evs = self.job("grads", "explain", body, ws)
            self.assertEqual(evs[-1]["type"], "run_failed", evs)
            self.assertEqual(evs[-1]["error"]["code"], code, evs)
            self.assertEqual(self.api("GET", "/api/runs/%s/result" % rid)[1], evs[-1])

    def test_grad_then_gradcheck(self):
        ws = self.ws()
        _, evs = self.job("grads2", "gradcheck", {"block": "y", "gpu": True}, ws)
        self.assertEqual(evs[-1]["type"], "gradcheck_finished", evs)
        j = evs[-1]["result"]
        self.assertTrue(j["pass"], j)
        self.assertEqual(sorted(c["wrt"] for c in j["checks"]), ["filter", "input"])
        self.assertIn("available", j["gpu"])
        st, j, _ = self.api("POST", "/api/pages/grads2/grad", {"block": "y"})
        self.assertEqual(st, 200, j)
        self.assertEqual(j["created"]["gradients"], {"filter": "y_grad_filter",
                                                     "input": "y_grad_input"})
        self.assertIn("y_grad_input", j["page"]["blocks"])
        _, evs = self.job("grads2", "gradcheck", {"block": "y_grad_filter"}, ws)
        self.assertEqual(evs[-1]["type"], "run_failed", evs)  # out_backprop: a Placeholder
        st, j, _ = self.api("POST", "/api/pages/grads2/grad", {"block": "y", "dy": "y"})
        self.assertEqual(st, 200, j)
        _, evs = self.job("grads2", "gradcheck",
                          {"block": j["created"]["gradients"]["input"]}, ws)
        j = evs[-1]["result"]
        self.assertTrue(j["pass"], j)
        self.assertEqual(j["forward"], "y")
        st, j, _ = self.api("POST", "/api/pages/grads2/grad", {"block": "x"})
        self.assertEqual(st, 422, j)

    def test_long_gradcheck_blocks_nobody_then_cancel(self):
        ws = self.ws()
        other = self.ws()
        # long, but well inside the server's --run-timeout (300 s) on a loaded sanitizer build
        # too (1024 samples ran past it under ASan at load 6-8, and the job was cancelled)
        body = {"block": "y", "samples": int(1024 / SLOW)}
        t0 = time.time()
        st, j, _ = self.api("POST", "/api/pages/gclong/gradcheck", body,
                            headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, 202, j)
        rid = j["run_id"]
        self.assertEqual(ws.recv_json(timeout=60 * SLOW)["type"], "run_started")
        # meanwhile: health, another page's explain, and the busy page's refusals
        lat = []
        for _ in range(3):
            t = time.time()
            self.assertEqual(self.api("GET", "/api/health")[0], 200)
            lat.append(time.time() - t)
        t = time.time()
        st, j, _ = self.api("POST", "/api/pages/grads/explain",
                            {"block": "y", "index": [0, 0, 0, 0]},
                            headers={"X-Blockflow-Client": other.client})
        self.assertEqual(st, 202, j)
        evs = other.run_events(j["run_id"], timeout=60 * SLOW)
        self.assertEqual(evs[-1]["type"], "explain_finished")
        lat.append(time.time() - t)
        for act, b in (("gradcheck", body), ("explain", {"block": "y", "index": [0, 0, 0, 0]}),
                       ("run", {}), ("grad", {"block": "y"})):
            st, j, _ = self.api("POST", "/api/pages/gclong/" + act, b)
            self.assertEqual((st, j["error"]["code"]), (409, "busy"), act)
        st, j, _ = self.api("GET", "/api/runs/%s/result" % rid)
        self.assertEqual((st, j["error"]["code"]), (409, "busy"))
        evs = ws.run_events(rid, timeout=300 * SLOW)
        duration = time.time() - t0
        self.assertEqual(evs[-1]["type"], "gradcheck_finished", evs)
        self.assertTrue(evs[-1]["result"]["pass"], evs[-1])
        # every other request took a small part of the job's time
        self.assertLess(max(lat), duration / 5, (lat, duration))
        # the same job again, cancelled: it stops long before it would have finished
        st, j, _ = self.api("POST", "/api/pages/gclong/gradcheck", body,
                            headers={"X-Blockflow-Client": ws.client})
        rid = j["run_id"]
        self.assertEqual(ws.recv_json(timeout=60 * SLOW)["type"], "run_started")
        time.sleep(duration / 10)
        t = time.time()
        st, j, _ = self.api("POST", "/api/runs/%s/cancel" % rid)
        self.assertEqual((st, j["cancelled"]), (202, True))
        evs = ws.run_events(rid, timeout=300 * SLOW)
        self.assertEqual(evs[-1]["type"], "run_cancelled", evs)
        self.assertEqual(evs[-1]["error"]["status"], "ECANCELED", evs)
        self.assertLess(time.time() - t, duration / 3)
        self.assertEqual(self.api("GET", "/api/runs/%s/result" % rid)[1], evs[-1])
        # the page is free again
        self.assertEqual(self.api("POST", "/api/pages/gclong/explain",
                                  {"block": "y", "index": [0, 0, 0, 0]})[0], 202)

    def test_large_result_is_fetched_not_pushed(self):
        srv = Server(BINARY, self.pages, extra=("--max-ws-queue", "16K"))
        try:
            ws = WebSocket(srv.port, token=srv.token)
            st, j, _ = srv.request("POST", "/api/pages/gclong/explain",
                                   {"block": "y", "index": [0, 5, 5, 3]},
                                   headers={"X-Blockflow-Client": ws.client})
            self.assertEqual(st, 202, j)
            evs = ws.run_events(j["run_id"], timeout=120 * SLOW)
            self.assertEqual(evs[-1]["type"], "explain_finished")
            self.assertTrue(evs[-1]["result_omitted"])  # 144 terms: more than 8 KiB
            self.assertNotIn("result", evs[-1])
            st, got, _ = srv.request("GET", "/api/runs/%s/result" % j["run_id"])
            self.assertEqual(st, 200)
            self.assertEqual(got["result"]["n_terms"], 3 * 3 * 16)
            self.assertEqual(len(got["result"]["terms"]), 144)
            ws.close()
        finally:
            rc, err = srv.stop()
            self.assertEqual(rc, 0, err)

    def test_cancel_before_it_starts_and_run_limit(self):
        srv = Server(BINARY, self.pages, extra=("--workers", "1", "--max-runs", "2"))
        try:
            ws = WebSocket(srv.port, token=srv.token)
            hdr = {"X-Blockflow-Client": ws.client}
            body = {"block": "y", "samples": 1024}
            st, a, _ = srv.request("POST", "/api/pages/gclong/gradcheck", body, headers=hdr)
            self.assertEqual(st, 202, a)
            st, b, _ = srv.request("POST", "/api/pages/grads/gradcheck", {"block": "y"},
                                   headers=hdr)
            self.assertEqual(st, 202, b)  # queued behind the first (one worker)
            st, j, _ = srv.request("POST", "/api/pages/grads2/explain",
                                   {"block": "y", "index": [0, 0, 0, 0]}, headers=hdr)
            self.assertEqual((st, j["error"]["code"]), (429, "limit"))
            for rid in (b["run_id"], a["run_id"]):
                st, j, _ = srv.request("POST", "/api/runs/%s/cancel" % rid)
                self.assertEqual(st, 202, j)
            # a was running: the blocks it got to, then the cancel (the block it stopped
            # reads cancelled); b, queued behind it, never ran a block
            evs = ws.run_events(a["run_id"], timeout=120 * SLOW)
            self.assertEqual((evs[0]["type"], evs[-1]["type"]), ("run_started", "run_cancelled"))
            for e in evs[1:-1]:
                self.assertEqual(e["kind"], "gradcheck", e)
                if e["type"] == "block_failed":
                    self.assertEqual(e["code"], "ECANCELED", e)
            evs = ws.run_events(b["run_id"], timeout=120 * SLOW)
            self.assertEqual([e["type"] for e in evs], ["run_started", "run_cancelled"])
            ws.close()
        finally:
            rc, err = srv.stop()
            self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
