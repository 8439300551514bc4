#!/usr/bin/env python3
"""bench/serve_load.py - load on `blockflow serve`: 50 WebSocket clients on loopback.

Each client opens its own small teaching page (a 3x3 convolution of an 8x8 image), then for a
bounded time edits the stride (1 <-> 2) and runs the page, waiting for run_finished on its
WebSocket. Reports requests per second (edits + runs), p50/p99 latency from sending the edit to
receiving run_finished, and errors (anything but 2xx answers and run_finished; must be 0).
A benchmark, not a test: the figures go to bench/RESULTS.md.

    python3 bench/serve_load.py [--binary build/blockflow] [--clients 50] [--seconds 20]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "apps"))
from serve_client import Server, WebSocket  # noqa: E402


def page(i):
    return {"format": "blockflow.page", "version": 1, "name": "teach-%02d" % i,
            "description": "a 3x3 convolution of an 8x8 image",
            "blocks": [
                {"id": "x", "type": "RandomUniform", "attrs": {"shape": [1, 8, 8, 1], "seed": i}},
                {"id": "w", "type": "RandomNormal", "attrs": {"shape": [3, 3, 1, 2], "seed": 7}},
                {"id": "y", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
                 "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}}],
            "outputs": ["y"]}


def client(srv, i, deadline, out):
    lat, requests, errors = [], 0, []
    ws = None
    try:
        ws = WebSocket(srv.port, token=srv.token, path="/ws?client=load%02d" % i)
        hdr = {"X-Blockflow-Client": ws.client}
        name = "load_%02d" % i
        st, j, _ = srv.request("POST", "/api/pages/%s/open" % name, headers=hdr)
        requests += 1
        if st != 200:
            errors.append(("open", st, j))
        stride = 1
        while time.time() < deadline:
            stride = 3 - stride
            t0 = time.perf_counter()
            st, j, _ = srv.request("POST", "/api/pages/%s/edits" % name,
                                   [{"op": "set_attr", "block": "y", "attr": "strides",
                                     "value": [1, stride, stride, 1]}], headers=hdr)
            requests += 1
            if st != 200:
                errors.append(("edit", st, j))
                continue
            st, j, _ = srv.request("POST", "/api/pages/%s/run" % name, {}, headers=hdr)
            requests += 1
            if st != 202:
                errors.append(("run", st, j))
                continue
            evs = ws.run_events(j["run_id"], timeout=60)
            if evs[-1]["type"] != "run_finished":
                errors.append(("event", evs[-1]))
                continue
            lat.append(time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - every failure is an error to report
        errors.append(("exception", repr(e)))
    finally:
        if ws:
            ws.close()
    out[i] = (lat, requests, errors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/blockflow")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--workers", default="4")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bf-serve-load-")
    try:
        for i in range(a.clients):
            with open(os.path.join(tmp, "load_%02d.json" % i), "w") as f:
                json.dump(page(i), f)
        srv = Server(a.binary, tmp, extra=("--workers", a.workers, "--max-runs", "256"))
        out = {}
        start = time.time()
        deadline = start + a.seconds
        ts = [threading.Thread(target=client, args=(srv, i, deadline, out))
              for i in range(a.clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        elapsed = time.time() - start
        rc, err = srv.stop()
        lat = sorted(x for v in out.values() for x in v[0])
        reqs = sum(v[1] for v in out.values())
        errors = [e for v in out.values() for e in v[2]]

        def pct(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
        print("clients %d, %.1f s, workers %s" % (a.clients, elapsed, a.workers))
        print("edit+run cycles %d, requests %d (%.0f/s), cycles/s %.0f"
              % (len(lat), reqs, reqs / elapsed, len(lat) / elapsed))
        print("edit -> run_finished latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (pct(0.50), pct(0.99), lat[-1] * 1000 if lat else float("nan")))
        print("errors %d%s" % (len(errors), (": " + repr(errors[:5])) if errors else ""))
        print("server exit %d" % rc)
        return 1 if errors or rc else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
