#!/usr/bin/env python3
"""bench/classroom_load.py - a class of 100 students on `blockflow serve --classroom`.

The teacher's folder holds one teaching page (a 3x3 convolution of an 8x8 image). Each student
joins with the class token, gets a personal token, opens a WebSocket viewing the page, and for
a bounded time edits the convolution's stride (1 <-> 2) and runs the page, waiting for
run_finished: the first edit makes the student's personal copy, every later cycle works on it.
Every 5 s the teacher saves a change to the page (PUT); each student's socket should show
"teacher_page_saved" at once. Each student has a reader thread (as a browser reads its socket
while it waits for HTTP answers) and a worker thread.

Reports: cycles/s (edit + run), p50/p99 from sending the edit to receiving run_finished, the
fraction of (student, teacher save) pairs whose event arrived within 1 s, the server's RSS
(now and its peak, VmHWM), and errors (anything but 2xx answers and run_finished; must be 0).
A benchmark, not a test: the figures go to bench/RESULTS.md ("Classroom load").

    python3 bench/classroom_load.py [--binary build/blockflow] [--students 100] [--seconds 30]
"""
import argparse
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "apps"))
from serve_client import Closed, Server, WebSocket  # noqa: E402

PAGE = {"format": "blockflow.page", "version": 1, "name": "teach",
        "description": "a 3x3 convolution of an 8x8 image",
        "blocks": [
            {"id": "x", "type": "RandomUniform", "attrs": {"shape": [1, 8, 8, 1], "seed": 1}},
            {"id": "w", "type": "RandomNormal", "attrs": {"shape": [3, 3, 1, 2], "seed": 7}},
            {"id": "y", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
             "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}}],
        "outputs": ["y"]}


def rss(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    return out


class Student:
    def __init__(self, srv, name, token, pushes, deadline):
        self.srv, self.name, self.token = srv, name, token
        self.pushes, self.deadline = pushes, deadline
        self.lat, self.cycles, self.errors = [], 0, []
        self.seen = {}  # teacher save revision -> when this student's socket got it
        self.finished = queue.Queue()

    def read(self):
        try:
            while time.time() < self.deadline + 5:
                ev = self.ws.recv_json(timeout=self.deadline + 5 - time.time())
                t = ev.get("type")
                if t in ("run_finished", "run_failed", "run_cancelled"):
                    self.finished.put((time.perf_counter(), ev))
                elif t == "teacher_page_saved":  # compared with the save's time at the end
                    self.seen.setdefault(ev["revision"], time.time())
        except (Closed, TimeoutError, OSError):
            pass

    def work(self):
        hdr = {"X-Blockflow-Client": self.ws.client}
        stride = 1
        while time.time() < self.deadline:
            stride = 3 - stride
            t0 = time.perf_counter()
            st, j, _ = self.srv.request("POST", "/api/pages/teach/edits",
                                        [{"op": "set_attr", "block": "y", "attr": "strides",
                                          "value": [1, stride, stride, 1]}],
                                        headers=hdr, token=self.token)
            if st != 200:
                self.errors.append(("edit", st, j))
                continue
            st, j, _ = self.srv.request("POST", "/api/pages/teach/run", {}, headers=hdr,
                                        token=self.token)
            if st != 202:
                self.errors.append(("run", st, j))
                continue
            try:
                t1, ev = self.finished.get(timeout=60)
            except queue.Empty:
                self.errors.append(("run", "no run_finished in 60 s"))
                continue
            if ev["type"] != "run_finished":
                self.errors.append(("run", ev))
                continue
            self.lat.append(t1 - t0)
            self.cycles += 1

    def start(self):
        self.ws = WebSocket(self.srv.port, token=self.token)
        self.ws.send(json.dumps({"type": "view", "page": "teach", "space": self.name}))
        self.threads = [threading.Thread(target=self.read, daemon=True),
                        threading.Thread(target=self.work, daemon=True)]
        for t in self.threads:
            t.start()


def teacher(srv, pushes, deadline, every, errors):
    n = 0
    start = time.time()
    while start + (n + 1) * every < deadline:  # at 5 s, 10 s, ... however long a save takes
        time.sleep(max(0.0, start + (n + 1) * every - time.time()))
        st, cur, _ = srv.request("GET", "/api/pages/teach")
        page = cur["page"]
        n += 1
        page["description"] = "a 3x3 convolution of an 8x8 image (change %d)" % n
        t = time.time()
        st, j, _ = srv.request("PUT", "/api/pages/teach", {"page": page,
                                                           "revision": cur["revision"]})
        if st != 200:
            errors.append(("teacher save", st, j))
            continue
        pushes[j["revision"]] = t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "blockflow"))
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--push-every", type=float, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bf-class-load-")
    try:
        with open(os.path.join(tmp, "teach.json"), "w") as f:
            json.dump(PAGE, f)
        srv = Server(args.binary, tmp, extra=("--classroom",))
        class_token = None
        for _ in range(8):
            m = re.search(r"\?token=([0-9a-f]+)$", srv.proc.stdout.readline().strip())
            if m and m.group(1) != srv.token:
                class_token = m.group(1)
                break
        students, pushes, errors = [], {}, []
        for i in range(args.students):
            st, j, _ = srv.request("POST", "/api/class/join", {"name": "s%03d" % i},
                                   token=class_token)
            if st != 201:
                errors.append(("join", st, j))
                continue
            students.append((j["name"], j["token"]))
        t_start = time.time()
        deadline = t_start + args.seconds
        objs = [Student(srv, n, tok, pushes, deadline) for n, tok in students]
        for s in objs:
            s.start()
        th = threading.Thread(target=teacher, args=(srv, pushes, deadline, args.push_every,
                                                    errors))
        th.start()
        peak = {}
        while time.time() < deadline:
            time.sleep(1)
            r = rss(srv.proc.pid)
            peak = {k: max(v, peak.get(k, 0)) for k, v in r.items()}
        th.join()
        for s in objs:
            s.threads[1].join(timeout=90)
        time.sleep(1.5)  # the last save's events
        elapsed = time.time() - t_start
        st, health, _ = srv.request("GET", "/api/health")
        st, roster, _ = srv.request("GET", "/api/class/roster")
        for s in objs:
            s.ws.close()
        lat = sorted(x for s in objs for x in s.lat)
        cycles = sum(s.cycles for s in objs)
        errs = errors + [e for s in objs for e in s.errors]
        pairs = [(s, r) for s in objs for r in pushes]
        delay = lambda s, r: s.seen[r] - pushes[r] if r in s.seen else 99.0
        within = sum(1 for s, r in pairs if delay(s, r) <= 1.0)
        late = sorted(delay(s, r) for s, r in pairs)
        rc, err = srv.stop()
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
        print(json.dumps({
            "students": len(objs), "seconds": round(elapsed, 1), "cycles": cycles,
            "cycles_per_s": round(cycles / args.seconds, 1),
            "p50_ms": round(q(0.50), 1), "p99_ms": round(q(0.99), 1),
            "teacher_saves": len(pushes),
            "saves_seen_within_1s": "%d/%d" % (within, len(pairs)),
            "save_seen_p99_ms": round(late[int(0.99 * (len(late) - 1))] * 1000, 1) if late else None,
            "rss_mb_end": round(rss_end, 1) if (rss_end := peak.get("VmRSS")) else None,
            "rss_mb_peak": round(peak.get("VmHWM", 0), 1),
            "students_with_last_run": sum(1 for s in roster["students"] if s["last_run"]),
            "ws_dropped": health["ws_dropped"], "errors": len(errs),
            "first_errors": errs[:3], "server_exit": rc}, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
