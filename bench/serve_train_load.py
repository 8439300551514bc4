#!/usr/bin/env python3
"""bench/serve_train_load.py - a class training at once on `blockflow serve`.

30 WebSocket clients on loopback, each training its own copy of examples/train/digits_cnn.json
(Conv2D, BiasAdd, Relu, MaxPool, MatMul, softmax cross-entropy and its backward pass with Adam,
batches of 32 8x8 digits) with POST /api/pages/NAME/train {"action": "start"} for a fixed time,
then pausing. Meanwhile a thread asks GET /api/health every 100 ms and another samples the
server's resident memory. Reported:

  - steps per second of each client (its page's step count over the time it trained): min,
    median, max, and min/max (fairness: round-robin by step gives every page its turn);
  - the same page trained alone by one client, measured first in the same run: the reference
    for the aggregate;
  - event latency: the time from a step's commit (the "t" of step_finished, server wall clock)
    to its arrival at the client, p50 / p99, and step events per second per client (at most
    about 20: coalesced);
  - /api/health latency p50 / p99 / max (the loop thread stays free: kernels never run there),
    asked by a process of its own, so the client threads' interpreter lock is not in it, and
    first with the server idle for the same time (the machine's own latency, the reference);
  - the server's RSS (VmRSS) at start, peak and end.

A benchmark, not a test: the figures go to bench/RESULTS.md ("Live training load").

    python3 bench/serve_train_load.py [--binary build/blockflow] [--clients 30] [--seconds 60]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "apps"))
from serve_client import Server, WebSocket  # noqa: E402


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


PROBE = r'''
import http.client, json, sys, time
port, token, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
out, end = [], time.time() + seconds
while time.time() < end:
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/api/health", headers={"Host": "127.0.0.1:%d" % port,
                                              "Authorization": "Bearer " + token})
    r = c.getresponse()
    r.read()
    c.close()
    out.append([(time.perf_counter() - t0) * 1000, r.status])
    time.sleep(0.1)
print(json.dumps(out))
'''


def train(srv, name, seconds, out, key):
    """Train page `name` for `seconds` on its own WebSocket; out[key] = result dict."""
    res = {"steps": 0, "seconds": 0.0, "latency_ms": [], "events": 0, "errors": []}
    ws = None
    try:
        ws = WebSocket(srv.port, token=srv.token, path="/ws?client=%s" % name)
        ws.sock.settimeout(120)
        hdr = {"X-Blockflow-Client": ws.client}
        st, j, _ = srv.request("POST", "/api/pages/%s/train" % name, {"action": "start"},
                               headers=hdr)
        if st != 202:
            res["errors"].append(("start", st, j))
            return
        t0 = time.time()
        first_step_at = None
        paused = False
        while True:
            left = t0 + seconds - time.time()
            if left <= 0 and not paused:
                srv.request("POST", "/api/pages/%s/train" % name, {"action": "pause"},
                            headers=hdr)
                paused = True
            try:
                ev = ws.recv_json(max(left, 0.05) if not paused else 120)
            except TimeoutError:
                continue
            now_ms = time.time() * 1000
            if ev.get("page") != name:
                continue
            if ev["type"] == "step_finished":
                res["events"] += 1
                res["latency_ms"].append(now_ms - ev["t"])
                if first_step_at is None:
                    first_step_at = time.time()
            elif ev["type"] in ("train_paused", "train_finished", "run_failed",
                                "run_cancelled"):
                if ev["type"] != "train_paused":
                    res["errors"].append(("end", ev))
                res["steps"] = ev.get("step", 0)
                res["seconds"] = time.time() - t0
                break
    except Exception as e:  # noqa: BLE001 - every failure is reported
        res["errors"].append(("exception", repr(e)))
    finally:
        if ws:
            ws.close()
        out[key] = res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "blockflow"))
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--alone", type=float, default=10, help="seconds of the one-client reference")
    ap.add_argument("--workers", default="4")
    ap.add_argument("--threads", default="1", help="kernel threads of the server's library")
    ap.add_argument("--data", default=os.path.join(ROOT, "examples", "train", "data"))
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.data, "digits_train_x.npy")):
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "data", "make_digits.py"),
                        a.data], check=True)
    with open(os.path.join(ROOT, "examples", "train", "digits_cnn.json")) as f:
        page = json.load(f)
    tmp = tempfile.mkdtemp(prefix="bf-train-load-")
    try:
        shutil.copytree(a.data, os.path.join(tmp, "data"))
        names = ["digits_%02d" % i for i in range(a.clients)] + ["alone"]
        for n in names:
            with open(os.path.join(tmp, n + ".json"), "w") as f:
                json.dump(page, f)
        load_before = os.getloadavg()[0]
        srv = Server(a.binary, tmp, extra=("--workers", a.workers, "--threads", a.threads,
                                           "--max-runs", "256", "--max-open-pages", "64"))
        pid = srv.proc.pid
        rss = {"start": rss_kib(pid), "peak": 0, "end": 0}
        # the machine's own latency: /api/health of the idle server, same probe, same run
        idle = subprocess.run([sys.executable, "-c", PROBE, str(srv.port), srv.token,
                               str(a.alone)], stdout=subprocess.PIPE, text=True).stdout
        idle = [h[0] for h in json.loads(idle or "[]")]
        # the reference: one client alone
        alone = {}
        train(srv, "alone", a.alone, alone, 0)
        ref = alone[0]
        # the class
        stop = threading.Event()
        # /api/health from a process of its own: the 30 client threads' GIL is not in it
        probe = subprocess.Popen([sys.executable, "-c", PROBE, str(srv.port), srv.token,
                                  str(a.seconds)], stdout=subprocess.PIPE, text=True)

        def sample_rss():
            while not stop.is_set():
                rss["peak"] = max(rss["peak"], rss_kib(pid))
                time.sleep(0.5)
        out = {}
        helpers = [threading.Thread(target=sample_rss)]
        for t in helpers:
            t.start()
        ts = [threading.Thread(target=train, args=(srv, n, a.seconds, out, i))
              for i, n in enumerate(names[:-1])]
        start = time.time()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        elapsed = time.time() - start
        stop.set()
        for t in helpers:
            t.join()
        health = json.loads(probe.communicate()[0] or "[]")
        rss["end"] = rss_kib(pid)
        rc, err = srv.stop()

        rates = [r["steps"] / r["seconds"] for r in out.values() if r["seconds"] > 0]
        lat = [x for r in out.values() for x in r["latency_ms"]]
        evrate = [r["events"] / r["seconds"] for r in out.values() if r["seconds"] > 0]
        hl = [h[0] for h in health]
        errors = [e for r in out.values() for e in r["errors"]] + ref["errors"] + \
            [h for h in health if h[1] != 200]
        ref_rate = ref["steps"] / ref["seconds"] if ref["seconds"] else float("nan")
        print("machine load average before: %.1f; server --workers %s --threads %s"
              % (load_before, a.workers, a.threads))
        print("alone: %d steps in %.1f s = %.1f steps/s" % (ref["steps"], ref["seconds"], ref_rate))
        print("class: %d clients, %.1f s" % (len(rates), elapsed))
        print("steps/s per client: min %.2f, median %.2f, max %.2f (min/max %.2f); "
              "sum %.1f = %.2f x alone"
              % (min(rates), statistics.median(rates), max(rates), min(rates) / max(rates),
                 sum(rates), sum(rates) / ref_rate))
        print("step events per client: %.1f/s median, %.1f/s max (coalesced to ~20/s)"
              % (statistics.median(evrate), max(evrate)))
        print("event latency (commit -> client): p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d events)"
              % (pct(lat, 0.5), pct(lat, 0.99), max(lat) if lat else float("nan"), len(lat)))
        print("GET /api/health, server idle (the machine's own latency): p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms (%d requests)"
              % (pct(idle, 0.5), pct(idle, 0.99), max(idle) if idle else float("nan"), len(idle)))
        print("GET /api/health, class training: p50 %.1f ms, p99 %.1f ms, max %.1f ms "
              "(%d requests)"
              % (pct(hl, 0.5), pct(hl, 0.99), max(hl) if hl else float("nan"), len(hl)))
        print("server RSS: start %.1f MiB, peak %.1f MiB, end %.1f MiB"
              % (rss["start"] / 1024, rss["peak"] / 1024, rss["end"] / 1024))
        print("errors %d%s; server exit %d" % (len(errors), (": " + repr(errors[:3])) if errors
                                                else "", rc))
        return 1 if errors or rc else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
