"""test_serve_attacks.py - the attacks of issue 25 on `blockflow serve`, each reproduced.

Every test here failed before its fix (checked by reverting the fix once): reading a body
before the token check, body deadlines restarted by every byte, unbounded connections, one
WebSocket message per writable callback, a cookie shared by every server of the machine, an
8 KB Cookie header refused, Content-Length with Transfer-Encoding (a smuggled request),
sequential and claimable client ids, open pages without a server-wide bound, NUL in a `file`
attribute, three spellings of a cancel, temporary files of a killed server, four workers on
two cores. Loopback only, short: the load figures are in bench/ (serve_load.py).
"""
import base64
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import Closed, Server, WebSocket  # noqa: E402
from test_serve import BINARY, SLOW, feed_page, long_page, teach_page  # noqa: E402


def chain_page(n=100):
    """n tiny blocks in a row: many events per run, little work."""
    blocks = [{"id": "b0", "type": "RandomUniform", "attrs": {"shape": [2, 2], "seed": 1}}]
    for i in range(1, n):
        blocks.append({"id": "b%d" % i, "type": "Relu", "inputs": {"features": "b%d" % (i - 1)}})
    return {"format": "blockflow.page", "version": 1, "name": "chain", "blocks": blocks,
            "outputs": ["b%d" % (n - 1)]}


def big_page(n):
    return {"format": "blockflow.page", "version": 1, "name": "big",
            "blocks": [{"id": "x", "type": "RandomUniform",
                        "attrs": {"shape": [n, 1024], "seed": 1}},
                       {"id": "y", "type": "Relu", "inputs": {"features": "x"}}],
            "outputs": ["y"]}


class Case(unittest.TestCase):
    extra = ()
    pages = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bf-attack-")
        cls.dir = os.path.join(cls.tmp, "pages")
        os.mkdir(cls.dir)
        for name, page in dict({"teach": teach_page(), "victim": teach_page(),
                                "chain": chain_page(), "long": long_page(),
                                "feed": feed_page()}, **cls.pages).items():
            with open(os.path.join(cls.dir, name + ".json"), "w") as f:
                json.dump(page, f)
        cls.before_start()
        cls.srv = Server(BINARY, cls.dir, extra=cls.extra)

    @classmethod
    def before_start(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "server exit %s: %s" % (rc, err)

    def api(self, method, path, body=None, **kw):
        return self.srv.request(method, path, body, **kw)

    def health(self):
        st, j, _ = self.api("GET", "/api/health")
        self.assertEqual(st, 200, j)
        return j

    def raw(self, data=b""):
        s = socket.create_connection(("127.0.0.1", self.srv.port))
        s.settimeout(10 * SLOW)
        self.addCleanup(s.close)
        if data:
            s.sendall(data)
        return s

    def head(self, method, path, token=True, extra=""):
        h = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, self.srv.host)
        if token:
            h += "Authorization: Bearer %s\r\n" % self.srv.token
        return (h + extra + "\r\n").encode()

    @staticmethod
    def read_answer(s, timeout=10):
        """(status, the bytes read) of one answer; status 0 when the socket closed first."""
        s.settimeout(timeout)
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            m = re.match(rb"HTTP/1\.1 (\d+)", buf)
            if m:
                length = re.search(rb"(?i)content-length: *(\d+)", buf)
                body_at = buf.index(b"\r\n\r\n") + 4
                want = body_at + (int(length.group(1)) if length else 0)
                while len(buf) < want:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        m = re.match(rb"HTTP/1\.1 (\d+)", buf)
        return (int(m.group(1)) if m else 0), buf

    @staticmethod
    def closed(s, within):
        """True when the server closes s within `within` seconds (we keep not sending)."""
        deadline = time.time() + within
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                if not s.recv(65536):
                    return True
            except socket.timeout:
                return False
            except OSError:
                return True
        return False


class TestPreAuth(Case):
    """Fault 1: nothing before the token; a body has a total deadline; connections capped."""
    extra = ("--body-timeout", "2", "--header-timeout", "2", "--max-connections", "40",
             "--max-unauthenticated", "12")

    def test_no_token_no_body_read(self):
        # headers of a large body and one byte of it: answered at once, the body never awaited
        for tok, host, want in ((False, None, 401), ("wrong", None, 401),
                                (True, "evil.example:80", 403)):
            h = "POST /api/pages/x/check HTTP/1.1\r\nHost: %s\r\nContent-Length: 900000\r\n" % (
                host or self.srv.host)
            if tok:
                h += "Authorization: Bearer %s\r\n" % (self.srv.token if tok is True else tok)
            s = self.raw((h + "\r\n{").encode())
            t0 = time.time()
            st, _ = self.read_answer(s, timeout=5)
            self.assertEqual(st, want, (tok, host))
            self.assertLess(time.time() - t0, 3)
            self.assertTrue(self.closed(s, 5), "a refused request's connection is closed")
        self.assertEqual(self.health()["active_runs"], 0)

    def test_body_total_deadline(self):
        # one byte every 0.25 s restarts no timer: the whole body has --body-timeout (2 s)
        s = self.raw(self.head("POST", "/api/pages/x/check", extra="Content-Length: 5000\r\n"))
        t0 = time.time()
        gone = False
        while time.time() - t0 < 15:
            try:
                s.sendall(b" ")
            except OSError:
                gone = True
                break
            if self.closed(s, 0.25):
                gone = True
                break
        took = time.time() - t0
        health = self.health()
        self.assertTrue(gone, "a body trickled past --body-timeout is cut off (after %.1f s: "
                        "%s)" % (took, health))
        self.assertLess(took, 6 * SLOW, health)
        self.assertGreaterEqual(health["connections_timed_out"], 1)

    def test_header_deadline(self):
        s = self.raw(b"GET /api/health HTTP/1.1\r\n")
        t0 = time.time()
        gone = False
        while time.time() - t0 < 8:
            try:
                s.sendall(b"X")
            except OSError:
                gone = True
                break
            if self.closed(s, 0.25):
                gone = True
                break
        self.assertTrue(gone, "headers trickled past --header-timeout are cut off")
        self.assertLess(time.time() - t0, 6)

    def test_connection_caps(self):
        time.sleep(3)  # the other tests' connections are gone
        idle = [self.raw() for _ in range(12)]  # unauthenticated: nothing sent
        time.sleep(0.3)
        s = self.raw()
        st, body = self.read_answer(s, timeout=5)
        self.assertEqual(st, 503, body)
        self.assertIn(b"--max-unauthenticated", body)
        for c in idle:
            c.close()
        time.sleep(0.5)
        self.assertEqual(self.health()["unauthenticated"], 0)
        # authenticated keep-alive connections count against --max-connections
        kept = []
        for _ in range(40):
            c = self.raw(self.head("GET", "/api/health"))
            self.assertEqual(self.read_answer(c, timeout=5)[0], 200)
            kept.append(c)
        s = self.raw()
        st, body = self.read_answer(s, timeout=5)
        self.assertEqual(st, 503, body)
        self.assertIn(b"--max-connections", body)
        for c in kept:
            c.close()
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                st, j, _ = self.api("GET", "/api/health")
                if st == 200 and j["connections"] <= 2:
                    break
            except (ConnectionError, OSError):
                pass
            time.sleep(0.2)
        self.assertGreaterEqual(self.health()["connections_refused"], 2)


class TestEvents(Case):
    """Fault 2: a reader that keeps up is never dropped."""
    extra = ("--max-ws-queue", "65536", "--max-ws-total", "262144")

    def test_reader_that_keeps_up_is_not_dropped(self):
        dropped = self.health()["ws_dropped"]
        ws = WebSocket(self.srv.port, token=self.srv.token)
        self.addCleanup(ws.close)
        got = {"finished": 0, "closed": None}

        def read():
            try:
                while True:
                    ev = ws.recv_json(timeout=60)
                    if ev.get("type") == "run_finished":
                        got["finished"] += 1
            except Closed as e:
                got["closed"] = e
            except (TimeoutError, OSError) as e:
                got["closed"] = got["closed"] or e

        t = threading.Thread(target=read, daemon=True)
        t.start()
        # a script re-running a 100-block page without X-Blockflow-Client: every socket
        # receives every event; the reader reads as fast as it can
        runs = 0
        t0 = time.time()
        while time.time() - t0 < 4:
            st, j, _ = self.api("POST", "/api/pages/chain/run", {})
            if st == 202:
                runs += 1
            else:
                self.assertIn(st, (409,), j)  # the page is busy with the previous run
                time.sleep(0.005)
        deadline = time.time() + 30 * SLOW
        while time.time() < deadline and got["finished"] < runs and got["closed"] is None:
            time.sleep(0.05)
        self.assertIsNone(got["closed"], "the reader was dropped after %d of %d runs" %
                          (got["finished"], runs))
        self.assertEqual(got["finished"], runs)
        self.assertEqual(self.health()["ws_dropped"], dropped)



class TestEventsTotal(Case):
    """Fault 2: sockets that do not read are bounded together, not only each one."""
    extra = ("--max-ws-queue", "4M", "--max-ws-total", "256K")

    def test_non_readers_bounded_in_total(self):
        before = self.health()["ws_dropped"]
        sleepers = [WebSocket(self.srv.port, token=self.srv.token, rcvbuf=4096)
                    for _ in range(6)]
        for w in sleepers:
            self.addCleanup(w.close)
        # the kernel takes a few MB per socket before the server's queues grow: run until a
        # sleeper is dropped (about 150 runs of 30 KB of events each), at most 20 s
        t0 = time.time()
        while time.time() - t0 < 20 * SLOW and self.health()["ws_dropped"] - before < 1:
            self.api("POST", "/api/pages/chain/run", {})
            time.sleep(0.01)
        # the queues together never pass --max-ws-total: the ones furthest behind went
        h = self.health()
        self.assertGreaterEqual(h["ws_dropped"] - before, 1)
        self.assertLessEqual(h["ws_queued_peak"], 256 << 10)
        t1 = time.time()
        self.health()
        self.assertLess(time.time() - t1, 1.0)


class TestCookies(Case):
    """Fault 3: one cookie per server, scoped to its random path; 8 KB Cookie headers."""

    def login(self, srv):
        st, body, h = srv.request("GET", "/?token=" + srv.token, token=False, raw=True)
        self.assertEqual(st, 303, body)
        return h["set-cookie"], h["location"]

    def test_cookie_named_and_scoped_per_server(self):
        other_dir = os.path.join(self.tmp, "other")
        os.mkdir(other_dir)
        other = Server(BINARY, other_dir, token="other-token-0123456789")
        try:
            a_cookie, a_loc = self.login(self.srv)
            b_cookie, b_loc = self.login(other)
            a_name = a_cookie.split("=")[0]
            b_name = b_cookie.split("=")[0]
            self.assertEqual(a_name, "blockflow_%d" % self.srv.port)
            self.assertNotEqual(a_name, b_name, "two servers, two cookies")
            self.assertIn("Path=%s" % a_loc, a_cookie)
            self.assertRegex(a_loc, r"^/s/[0-9a-f]{16}/$")
            self.assertNotEqual(a_loc, b_loc)
            for attr in ("HttpOnly", "SameSite=Strict"):
                self.assertIn(attr, a_cookie)
            a_pair = a_cookie.split(";")[0]
            # the editor's calls go under its path, where the browser sends the cookie
            st, j, _ = self.srv.request("GET", a_loc + "api/health", token=False,
                                        headers={"Cookie": a_pair})
            self.assertEqual(st, 200, j)
            # server B does not take server A's cookie (its name is not B's)
            st, _, _ = other.request("GET", "/api/health", token=False,
                                     headers={"Cookie": a_pair})
            self.assertEqual(st, 401)
        finally:
            other.stop()

    def test_large_cookie_header(self):
        a_cookie, loc = self.login(self.srv)
        pair = a_cookie.split(";")[0]
        filler = "; ".join("other_app_%d=%s" % (i, "v" * 40) for i in range(140))
        header = filler + "; " + pair
        self.assertGreater(len(header), 6000)
        self.assertLess(len(header), 8192)
        st, j, _ = self.srv.request("GET", loc + "api/health", token=False,
                                    headers={"Cookie": header})
        self.assertEqual(st, 200, j)
        ws = WebSocket(self.srv.port, cookie=header, path=loc + "ws",
                       origin="http://" + self.srv.host)
        ws.close()
        self.assertEqual(ws.status, 101)


class TestSmuggling(Case):
    """Fault 4: Content-Length with Transfer-Encoding is refused, nothing smuggled runs."""

    def test_cl_and_te_refused(self):
        inner = self.head("DELETE", "/api/pages/victim")
        chunk = b"0\r\n\r\n" + inner
        req = self.head("POST", "/api/pages/teach/check",
                        extra="Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + chunk
        s = self.raw(req)
        st, body = self.read_answer(s)
        self.assertEqual(st, 400, body)
        self.assertIn(b"Transfer-Encoding", body)
        rest = b""
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                rest += c
        except OSError:
            pass
        self.assertNotIn(b"deleted", rest)
        time.sleep(0.3)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "victim.json")),
                        "the smuggled DELETE ran")
        # chunked alone is refused too (no request body is ever read without a length)
        s = self.raw(self.head("POST", "/api/pages/teach/check",
                               extra="Transfer-Encoding: chunked\r\n") + b"2\r\n{}\r\n0\r\n\r\n")
        self.assertEqual(self.read_answer(s)[0], 400)


class TestClients(Case):
    """Fault 5: random client ids bound to their socket; server-wide page and memory caps."""
    extra = ("--max-open-pages-total", "3", "--max-memory", "24M", "--workers", "1")
    pages = {"big1": big_page(2048), "big2": big_page(2048), "big3": big_page(2048)}

    def test_ids_random_and_bound_to_their_socket(self):
        a = WebSocket(self.srv.port, token=self.srv.token)
        self.addCleanup(a.close)
        self.assertRegex(a.client, r"^[0-9a-f]{32}$")
        # asking for a's id gets a socket its own id, and none of a's events
        b = WebSocket(self.srv.port, token=self.srv.token, path="/ws?client=" + a.client)
        self.addCleanup(b.close)
        self.assertNotEqual(b.client, a.client)
        st, j, _ = self.api("POST", "/api/pages/teach/run", {},
                            headers={"X-Blockflow-Client": a.client})
        self.assertEqual(st, 202, j)
        a.run_events(j["run_id"], timeout=60 * SLOW)
        b.send(json.dumps({"type": "ping"}))
        ev = b.recv_json(timeout=10)
        self.assertEqual(ev["type"], "pong", "b received a's events")
        # a self-chosen id is refused: no new page quota per request
        for cid in ("alice", "c1", "0" * 32):
            st, j, _ = self.api("POST", "/api/pages/feed/open",
                                headers={"X-Blockflow-Client": cid})
            self.assertEqual(st, 400, cid)
            self.assertEqual(j["error"]["code"], "unknown_client")

    def test_server_wide_pages_and_memory(self):
        ws = WebSocket(self.srv.port, token=self.srv.token)
        self.addCleanup(ws.close)
        hdr = {"X-Blockflow-Client": ws.client}
        for name in ("teach", "feed"):
            self.api("POST", "/api/pages/%s/close" % name)
        before = self.health()["pages_evicted"]
        # 8 MiB each: the third run needs an idle page closed (--max-memory 24M)
        for name in ("big1", "big2", "big3"):
            st, j, _ = self.api("POST", "/api/pages/%s/run" % name, {}, headers=hdr)
            self.assertEqual(st, 202, j)
            evs = ws.run_events(j["run_id"], timeout=60 * SLOW)
            self.assertEqual(evs[-1]["type"], "run_finished", evs[-1])
        h = self.health()
        self.assertGreater(h["pages_evicted"], before)
        self.assertLessEqual(h["open_pages"], 3)
        # every open page busy: a fourth is refused, naming the flag
        for name in ("big1", "big2", "big3", "feed"):
            self.api("POST", "/api/pages/%s/close" % name)
        st, j, _ = self.api("POST", "/api/pages/long/run", {}, headers=hdr)
        self.assertEqual(st, 202, j)
        opened = ["long"]
        for name in ("teach", "feed"):
            st, j2, _ = self.api("POST", "/api/pages/%s/run" % name, {}, headers=hdr)
            self.assertEqual(st, 202, j2)  # queued behind long (one worker): busy
            opened.append(name)
        st, j3, _ = self.api("POST", "/api/pages/victim/open", headers=hdr)
        self.assertEqual(st, 503, j3)
        self.assertIn("--max-open-pages-total", j3["error"]["message"])
        self.api("POST", "/api/runs/%s/cancel" % j["run_id"])


class TestFairScheduling(Case):
    """Classroom: jobs are taken round-robin across clients, not first come first served."""
    extra = ("--workers", "1")
    pages = {"a2": long_page(4), "a3": long_page(4), "b1": teach_page()}

    def test_round_robin_across_clients(self):
        a = WebSocket(self.srv.port, token=self.srv.token)
        b = WebSocket(self.srv.port, token=self.srv.token)
        for w in (a, b):
            self.addCleanup(w.close)
        ha, hb = {"X-Blockflow-Client": a.client}, {"X-Blockflow-Client": b.client}
        st, first, _ = self.api("POST", "/api/pages/long/run", {}, headers=ha)
        self.assertEqual(st, 202, first)
        self.assertEqual(a.recv_json(timeout=30)["type"], "run_started")  # a holds the worker
        ids = {}
        for name, hdr in (("a2", ha), ("a3", ha), ("b1", hb)):  # b asks last
            st, j, _ = self.api("POST", "/api/pages/%s/run" % name, {}, headers=hdr)
            self.assertEqual(st, 202, j)
            ids[j["run_id"]] = name
        self.api("POST", "/api/runs/%s/cancel" % first["run_id"])
        a2 = next(k for k, v in ids.items() if v == "a2")
        b1 = next(k for k, v in ids.items() if v == "b1")
        # when a's second job starts, b's job (asked for after it, short) has already run:
        # one worker, a was served last, so b went first
        deadline = time.time() + 120 * SLOW
        while time.time() < deadline:
            ev = a.recv_json(timeout=max(0.1, deadline - time.time()))
            if ev.get("type") == "run_started" and ev["run_id"] == a2:
                break
        st, j, _ = self.api("GET", "/api/runs/%s/result" % b1)
        self.assertEqual(st, 200, "b's job still waited behind a's: %s" % j)
        self.assertEqual(j["type"], "run_finished")
        for rid in ids:
            self.api("POST", "/api/runs/%s/cancel" % rid)


class TestResultsPerRequester(Case):
    """Classroom: a run's tensors stay readable by its requester until their own next run."""

    def test_results_survive_another_clients_run(self):
        a = WebSocket(self.srv.port, token=self.srv.token)
        b = WebSocket(self.srv.port, token=self.srv.token)
        for w in (a, b):
            self.addCleanup(w.close)
        ha, hb = {"X-Blockflow-Client": a.client}, {"X-Blockflow-Client": b.client}
        st, ra, _ = self.api("POST", "/api/pages/teach/run", {}, headers=ha)
        a.run_events(ra["run_id"], timeout=60 * SLOW)
        st, before, _ = self.api("GET", "/api/runs/%s/tensors/y" % ra["run_id"])
        self.assertEqual(st, 200, before)
        # b edits and runs the same page: a's result is still a's to read
        self.api("POST", "/api/pages/teach/edits",
                 [{"op": "set_attr", "block": "y", "attr": "padding", "value": "VALID"}],
                 headers=hb)
        st, rb, _ = self.api("POST", "/api/pages/teach/run", {}, headers=hb)
        self.assertEqual(st, 202, rb)
        b.run_events(rb["run_id"], timeout=60 * SLOW)
        st, after, _ = self.api("GET", "/api/runs/%s/tensors/y" % ra["run_id"])
        self.assertEqual(st, 200, after)
        self.assertEqual(after["shape"], before["shape"], "a's own tensor, not b's")
        self.assertEqual(after["mean"], before["mean"])
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y" % rb["run_id"])
        self.assertNotEqual(j["shape"], before["shape"], "b's run is VALID padding")
        # a's next run: a's old result goes
        st, ra2, _ = self.api("POST", "/api/pages/teach/run", {}, headers=ha)
        a.run_events(ra2["run_id"], timeout=60 * SLOW)
        st, j, _ = self.api("GET", "/api/runs/%s/tensors/y" % ra["run_id"])
        self.assertEqual(st, 410, j)


class TestSmallOnes(Case):
    """Fault 6: NUL in a file name, one cancel code, temporary files swept, workers = cores."""
    extra = ("--workers", "1")

    @classmethod
    def before_start(cls):
        # left by a server killed while writing: its pid is gone
        cls.dead = os.path.join(cls.dir, ".teach.999999999.0.tmp")
        cls.live = os.path.join(cls.dir, ".teach.%d.0.tmp" % os.getpid())
        for p in (cls.dead, cls.live):
            with open(p, "w") as f:
                f.write("{")

    def test_temp_files_of_dead_servers_swept(self):
        self.assertFalse(os.path.exists(self.dead))
        self.assertTrue(os.path.exists(self.live), "a live process's temporary file stays")

    def test_nul_in_file_attr_refused(self):
        page = feed_page()
        page["blocks"][0] = {"id": "p", "type": "Const", "attrs": {"file": "x.npy\u0000.json"}}
        text = json.dumps(page)
        self.assertIn("\\u0000", text)
        st, j, _ = self.api("PUT", "/api/pages/nul", json.dumps({"page": page,
                                                                 "revision": None}))
        self.assertEqual(st, 400, j)
        self.assertEqual(j["error"]["code"], "nul_in_string")
        st, j, _ = self.api("POST", "/api/pages/nul/check", text)
        self.assertEqual(st, 400, j)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "nul.json")))

    def test_one_cancel_code(self):
        ws = WebSocket(self.srv.port, token=self.srv.token)
        self.addCleanup(ws.close)
        hdr = {"X-Blockflow-Client": ws.client}
        st, j, _ = self.api("POST", "/api/pages/long/run", {}, headers=hdr)
        self.assertEqual(st, 202, j)
        st, q, _ = self.api("POST", "/api/pages/teach/run", {}, headers=hdr)
        self.assertEqual(st, 202, q)  # queued behind long: one worker
        self.api("POST", "/api/runs/%s/cancel" % q["run_id"])  # before it starts
        ws.recv_json()
        time.sleep(0.3)
        self.api("POST", "/api/runs/%s/cancel" % j["run_id"])  # while it runs
        codes = set()
        for rid in (j["run_id"], q["run_id"]):
            ev = ws.run_events(rid, timeout=120 * SLOW)[-1]
            self.assertEqual(ev["type"], "run_cancelled", ev)
            codes.add(ev["error"]["code"])
        self.assertEqual(codes, {"cancelled"})

    def test_workers_default_to_cores(self):
        d = os.path.join(self.tmp, "w")
        os.mkdir(d)
        srv = Server(BINARY, d)
        try:
            st, j, _ = srv.request("GET", "/api/health")
            self.assertEqual(j["workers"], len(os.sched_getaffinity(0)))
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
