#!/usr/bin/env python3
"""test_serve_train.py - live training jobs of `blockflow serve` (apps/server/train_jobs.c).

A real server on an ephemeral loopback port, driven over HTTP and WebSocket by the standard-
library client in serve_client.py. The pages are tiny (a 3x3 filter learnt from a few 6x6
images; the learn_a_filter example), so a step costs well under a millisecond and the tests
stay short on a shared machine. What is checked: the order of a job's events, coalescing of
step_finished (a 10,000-step job sends far fewer, and its last step arrives), exact step counts
across pause / step / resume, reset, edits applied at step boundaries keeping the state (and a
Variable's re-initialisation said as state_reset), the views of a Variable while it learns, the
run rules (one job per page, --max-runs, cancel, --run-timeout per step), and round-robin
fairness across 30 pages training at once.
"""
import copy
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import Server, WebSocket  # noqa: E402

BINARY = os.environ.get("BF_BINARY", "build/blockflow")
SLOW = float(os.environ.get("BF_SERVE_SLOW", "1"))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERMINAL = ("train_paused", "train_finished", "run_failed", "run_cancelled")


def tiny_page():
    """learn_a_filter made small: 2 random 6x6 images, a 3x3 Variable learns the Sobel filter."""
    with open(os.path.join(ROOT, "examples", "train", "learn_a_filter.json")) as f:
        page = json.load(f)
    for b in page["blocks"]:
        if b["id"] == "images":
            b["attrs"]["shape"] = [2, 6, 6, 1]
        if b["id"] == "loss_count":  # the Mean's count: 2 x 4 x 4 x 1 outputs
            b["attrs"]["value"] = 32
        if b["id"] == "loss_input_shape":
            b["attrs"]["value"] = [2, 4, 4, 1]
    return page


def slow_page(n=1024):
    """A Variable through a large MatMul: each step takes milliseconds (for --run-timeout)."""
    return {"format": "blockflow.page", "version": 1, "blocks": [
        {"id": "x", "type": "RandomUniform", "attrs": {"shape": [n, n], "seed": 1}},
        {"id": "v", "type": "Variable", "attrs": {"shape": [n, n], "initializer": "ones"}},
        {"id": "p", "type": "MatMul", "inputs": {"a": "x", "b": "v"}},
        {"id": "q", "type": "MatMul", "inputs": {"a": "p", "b": "v"}},
        {"id": "one", "type": "Const", "attrs": {"value": 1e-9}},
        {"id": "upd", "type": "ApplyGradientDescent",
         "inputs": {"var": "v", "alpha": "one", "delta": "q"}}],
        "outputs": ["one"]}


class TrainCase(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bf-train-")
        cls.pages = os.path.join(cls.tmp, "pages")
        os.mkdir(cls.pages)
        page = tiny_page()
        for name in ["tiny", "edit", "reset", "order", "cancel", "busy", "views"] + \
                ["class%02d" % i for i in range(30)]:
            with open(os.path.join(cls.pages, name + ".json"), "w") as f:
                json.dump(page, f)
        with open(os.path.join(cls.pages, "slow.json"), "w") as f:
            json.dump(slow_page(), f)
        cls.srv = Server(BINARY, cls.pages, extra=cls.extra)

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "server exit %s: %s" % (rc, err)

    def ws(self):
        ws = WebSocket(self.srv.port, token=self.srv.token)
        self.addCleanup(ws.close)
        return ws

    def train(self, name, body, ws=None, expect=202):
        hdr = {"X-Blockflow-Client": ws.client} if ws else None
        st, j, _ = self.srv.request("POST", "/api/pages/%s/train" % name, body, headers=hdr)
        self.assertEqual(st, expect, j)
        return j

    def status(self, name):
        st, j, _ = self.srv.request("GET", "/api/pages/%s/train" % name)
        self.assertEqual(st, 200, j)
        return j

    def events(self, ws, page, until=TERMINAL, timeout=60):
        """The events of `page` up to the first whose type is in `until` (that one included)."""
        out = []
        while True:
            ev = ws.recv_json(timeout * SLOW)
            if ev.get("page") != page:
                continue
            out.append(ev)
            if ev["type"] in until:
                return out


class TestTrainJobs(TrainCase):
    def test_order_and_coalescing_of_a_10000_step_job(self):
        ws = self.ws()
        t0 = time.time()
        j = self.train("order", {"action": "start", "steps": 10000}, ws)
        evs = self.events(ws, "order")
        took = time.time() - t0
        self.assertEqual([e["run_id"] for e in evs], [j["run_id"]] * len(evs))
        self.assertEqual(evs[0]["type"], "train_started")
        self.assertEqual((evs[0]["step"], evs[0]["target"], evs[0]["metrics"]), (0, 10000, ["loss"]))
        self.assertEqual(evs[-1]["type"], "train_finished", evs[-1])
        self.assertEqual(evs[-1]["step"], 10000)
        steps = [e for e in evs if e["type"] == "step_finished"]
        self.assertEqual(len(steps), len(evs) - 2, [e["type"] for e in evs])
        # coalesced: about 20 a second, and the last step always arrives
        self.assertLess(len(steps), 20 * took + 5, (len(steps), took))
        self.assertLess(len(steps), 1000)
        self.assertEqual(steps[-1]["step"], 10000)
        got = [e["step"] for e in steps]
        self.assertEqual(got, sorted(set(got)))
        # each carries the points since the previous one (at most 64), in order, ending at it
        pts = [p for e in steps for p in e["points"]]
        self.assertTrue(all(len(e["points"]) <= 64 for e in steps))
        self.assertEqual([p[0] for p in pts], sorted(set(p[0] for p in pts)))
        self.assertTrue(all(e["points"][-1][0] == e["step"] for e in steps))
        # the loss fell: the filter was learnt
        self.assertLess(steps[-1]["metrics"]["loss"], 1e-3 * pts[0][1])
        s = self.status("order")
        self.assertEqual((s["state"], s["step"]), ("paused", 10000))
        hist = s["history"]["loss"]
        self.assertEqual(hist[-1][0], 10000)
        self.assertLessEqual(len(hist), 4096)

    def test_pause_step_resume_counts_are_exact(self):
        ws = self.ws()
        self.train("tiny", {"action": "start"}, ws)
        evs = self.events(ws, "tiny", until=("step_finished",))
        self.assertEqual(evs[0]["type"], "train_started")
        st, j, _ = self.srv.request("POST", "/api/pages/tiny/train", {"action": "pause"})
        self.assertIn(st, (200, 202), j)
        evs = self.events(ws, "tiny")
        self.assertEqual(evs[-1]["type"], "train_paused", evs[-1])
        paused = evs[-1]["step"]
        last_step_event = [e for e in evs if e["type"] == "step_finished"][-1]
        self.assertEqual(last_step_event["step"], paused)  # the last step arrived first
        time.sleep(0.3)
        self.assertEqual(self.status("tiny")["step"], paused)
        self.assertEqual(self.status("tiny")["state"], "paused")
        # single steps: exactly +1 each
        for k in (1, 2):
            self.train("tiny", {"action": "step"}, ws)
            evs = self.events(ws, "tiny")
            self.assertEqual([e["type"] for e in evs], ["train_started", "step_finished",
                                                        "train_paused"])
            self.assertEqual(evs[1]["step"], paused + k)
            self.assertEqual(evs[-1]["step"], paused + k)
        # resume for 5 more
        self.train("tiny", {"action": "resume", "steps": 5}, ws)
        evs = self.events(ws, "tiny")
        self.assertEqual(evs[-1]["type"], "train_finished")
        self.assertEqual(evs[-1]["step"], paused + 7)
        self.assertEqual(self.status("tiny")["step"], paused + 7)
        # the history is one curve over all of it
        hist = self.status("tiny")["history"]["loss"]
        self.assertEqual([p[0] for p in hist], list(range(1, paused + 8)))

    def test_rate_paces_the_steps(self):
        ws = self.ws()
        t0 = time.time()
        self.train("cancel", {"action": "start", "rate": 40}, ws)
        time.sleep(0.5)
        self.srv.request("POST", "/api/pages/cancel/train", {"action": "pause"})
        evs = self.events(ws, "cancel")
        took = time.time() - t0
        self.assertEqual(evs[-1]["type"], "train_paused")
        self.assertLessEqual(evs[-1]["step"], 40 * took + 2, (evs[-1]["step"], took))
        self.assertGreater(evs[-1]["step"], 0)
        self.train("cancel", {"action": "watch", "rate": 0}, ws, expect=200)
        self.train("cancel", {"action": "start", "rate": -1}, ws, expect=400)

    def test_reset_paused_and_while_playing(self):
        ws = self.ws()
        self.train("reset", {"action": "start", "steps": 50, "watch": ["w"]}, ws)
        self.events(ws, "reset")
        self.assertEqual(self.status("reset")["step"], 50)
        j = self.train("reset", {"action": "reset"}, ws)
        evs = self.events(ws, "reset")
        self.assertEqual([e["type"] for e in evs], ["train_started", "train_reset",
                                                    "train_paused"])
        self.assertEqual(evs[-1]["step"], 0)
        s = self.status("reset")
        self.assertEqual((s["step"], s["history"]["loss"]), (0, []))
        st, v, _ = self.srv.request("GET", "/api/runs/%s/tensors/w?view=values" % j["run_id"])
        self.assertEqual(st, 200, v)
        self.assertEqual(v["values"], [0.0] * 9)  # w starts at zeros
        # while playing: reset at the next boundary, and it plays on from 0
        self.train("reset", {"action": "start"}, ws)
        self.events(ws, "reset", until=("step_finished",))
        self.train("reset", {"action": "reset"}, ws)
        evs = self.events(ws, "reset", until=("train_reset",))
        self.assertEqual(evs[-1]["step"], 0)
        evs = self.events(ws, "reset", until=("step_finished",))
        self.srv.request("POST", "/api/pages/reset/train", {"action": "pause"})
        evs = self.events(ws, "reset")
        self.assertEqual(evs[-1]["type"], "train_paused")
        self.assertLess(evs[-1]["step"], 100000)
        hist = self.status("reset")["history"]["loss"]
        self.assertEqual(hist[0][0], 1)  # the curve restarted at the reset

    def test_edits_apply_at_step_boundaries_and_keep_the_state(self):
        ws = self.ws()
        self.train("edit", {"action": "start", "watch": ["w"]}, ws)
        self.events(ws, "edit", until=("step_finished",))
        # a learning rate change while playing: queued, applied between two steps
        st, j, _ = self.srv.request("POST", "/api/pages/edit/edits", [
            {"op": "set_attr", "block": "learning_rate", "attr": "value", "value": 0.25}])
        self.assertEqual(st, 202, j)
        self.assertTrue(j["queued"])
        evs = self.events(ws, "edit", until=("edits_applied", "edits_failed"))
        applied = evs[-1]
        self.assertEqual(applied["type"], "edits_applied", applied)
        self.assertEqual(applied["edit"], j["edit"])
        self.assertEqual(applied["state_reset"], [])
        self.assertTrue(applied["check"]["ok"])
        before = [e["step"] for e in evs if e["type"] == "step_finished"]
        evs = self.events(ws, "edit", until=("step_finished",))
        # the state was kept: the step count goes on from where it was
        self.assertGreater(evs[-1]["step"], applied["step"])
        self.assertGreaterEqual(applied["step"], before[-1] if before else 1)
        # a refused edit changes nothing and says why
        st, j, _ = self.srv.request("POST", "/api/pages/edit/edits", [
            {"op": "set_attr", "block": "nope", "attr": "value", "value": 1}])
        self.assertEqual(st, 202, j)
        evs = self.events(ws, "edit", until=("edits_applied", "edits_failed"))
        self.assertEqual(evs[-1]["type"], "edits_failed")
        self.assertEqual(evs[-1]["problems"][0]["code"], "unknown_block", evs[-1])
        # a Variable's own attribute: re-initialised, and said so
        st, j, _ = self.srv.request("POST", "/api/pages/edit/edits", [
            {"op": "set_attr", "block": "w", "attr": "initializer", "value": "ones"}])
        self.assertEqual(st, 202, j)
        evs = self.events(ws, "edit", until=("edits_applied", "edits_failed"))
        self.assertEqual(evs[-1]["type"], "edits_applied", evs[-1])
        self.assertEqual(evs[-1]["state_reset"], ["w"])
        self.srv.request("POST", "/api/pages/edit/train", {"action": "pause"})
        evs = self.events(ws, "edit")
        paused = evs[-1]["step"]
        self.assertGreater(paused, applied["step"])
        # while paused an edit applies at once, answered as any edit, with the event too
        st, j, _ = self.srv.request("POST", "/api/pages/edit/edits", [
            {"op": "set_attr", "block": "learning_rate", "attr": "value", "value": 0.5}])
        self.assertEqual(st, 200, j)
        self.assertTrue(j["ok"])
        self.assertEqual(j["state_reset"], [])
        ev = self.events(ws, "edit", until=("edits_applied",))[-1]
        self.assertEqual(ev["step"], paused)
        self.assertEqual(self.status("edit")["step"], paused)
        st, page, _ = self.srv.request("GET", "/api/pages/edit?view=session")
        lr = [b for b in page["session_page"]["blocks"] if b["id"] == "learning_rate"][0]
        self.assertEqual(lr["attrs"]["value"], 0.5)

    def test_views_of_a_variable_while_it_learns(self):
        ws = self.ws()
        j = self.train("views", {"action": "start", "steps": 400,
                                 "watch": ["w", "predictions_grad_filter"]}, ws)
        snaps = 0
        while True:
            ev = self.events(ws, "views", until=("step_finished",) + TERMINAL)[-1]
            if ev.get("snapshot") is not None:
                snaps += 1
                st, v, _ = self.srv.request(
                    "GET", "/api/runs/%s/tensors/w?view=values" % j["run_id"])
                self.assertEqual(st, 200, v)
                self.assertEqual(v["shape"], [3, 3, 1, 1])
            if ev["type"] in TERMINAL:
                break
        self.assertGreaterEqual(snaps, 1)
        st, v, _ = self.srv.request("GET", "/api/runs/%s/tensors/w?view=values" % j["run_id"])
        sobel = [-1, 0, 1, -2, 0, 2, -1, 0, 1]
        self.assertLess(max(abs(a - b) for a, b in zip(v["values"], sobel)), 1e-2, v)
        st, g, _ = self.srv.request(
            "GET", "/api/runs/%s/tensors/predictions_grad_filter?view=summary" % j["run_id"])
        self.assertEqual(st, 200, g)
        self.assertLess(abs(g["max"]), 1e-2)
        st, x, _ = self.srv.request("GET", "/api/runs/%s/tensors/loss" % j["run_id"])
        self.assertEqual(st, 404, x)  # not watched

    def test_one_job_per_page_cancel_and_busy_rules(self):
        ws = self.ws()
        j = self.train("busy", {"action": "start"}, ws)
        self.events(ws, "busy", until=("step_finished",))
        self.train("busy", {"action": "start"}, ws, expect=409)
        self.train("busy", {"action": "step"}, ws, expect=409)
        st, r, _ = self.srv.request("POST", "/api/pages/busy/run", {})
        self.assertEqual(st, 409, r)
        st, r, _ = self.srv.request("POST", "/api/runs/%s/cancel" % j["run_id"])
        self.assertEqual(st, 202, r)
        evs = self.events(ws, "busy")
        self.assertEqual(evs[-1]["type"], "run_cancelled", evs[-1])
        step = evs[-1]["step"]
        self.assertEqual(self.status("busy")["state"], "paused")
        # the state survives a cancel: step goes on from there
        self.train("busy", {"action": "step"}, ws)
        self.assertEqual(self.events(ws, "busy")[-1]["step"], step + 1)
        # bad requests
        self.train("busy", {"action": "fly"}, expect=400)
        self.train("busy", {"action": "start", "steps": -3}, expect=400)
        self.train("busy", {"action": "start", "watch": ["nope"]}, expect=404)
        self.train("nosuchpage", {"action": "start"}, expect=404)

    def test_fair_round_robin_across_30_pages(self):
        names = ["class%02d" % i for i in range(30)]
        students = [self.ws() for _ in names]  # a client id is a connected WebSocket's
        for i, n in enumerate(names):
            hdr = {"X-Blockflow-Client": students[i].client}
            st, j, _ = self.srv.request("POST", "/api/pages/%s/train" % n, {"action": "start"},
                                        headers=hdr)
            self.assertEqual(st, 202, j)
        time.sleep(2.0 * SLOW)
        health = []
        for _ in range(10):
            t0 = time.time()
            st, _, _ = self.srv.request("GET", "/api/health")
            health.append(time.time() - t0)
            self.assertEqual(st, 200)
        for n in names:
            self.srv.request("POST", "/api/pages/%s/train" % n, {"action": "pause"})
        deadline = time.time() + 30 * SLOW
        while time.time() < deadline and any(self.status(n)["state"] == "running" for n in names):
            time.sleep(0.05)
        steps = sorted(self.status(n)["step"] for n in names)
        # every page advanced, and by about the same number of steps (round-robin by step)
        self.assertGreater(steps[0], 0, steps)
        self.assertGreater(steps[0], steps[-1] / 3, steps)
        self.assertLess(sorted(health)[len(health) // 2], 0.5 * SLOW, health)


class TestTrainLimits(TrainCase):
    extra = ("--max-runs", "2", "--run-timeout", "0.05")

    def test_max_runs_and_per_step_timeout(self):
        ws = self.ws()
        self.train("tiny", {"action": "start"}, ws)
        self.train("edit", {"action": "start"}, ws)
        j = self.train("reset", {"action": "start"}, ws, expect=429)
        self.assertEqual(j["error"]["code"], "limit")
        for n in ("tiny", "edit"):
            self.train(n, {"action": "pause"}, ws)
        ends = {}
        while len(ends) < 2:
            ev = ws.recv_json(60 * SLOW)
            if ev["type"] in TERMINAL:
                ends[ev["page"]] = ev
        for ev in ends.values():  # a tiny step may pass 50 ms on a loaded machine: a timeout
            self.assertTrue(ev["type"] == "train_paused" or
                            (ev["type"] == "run_failed" and ev["error"]["code"] == "timeout"), ev)
        # a step longer than --run-timeout fails, naming the limit; nothing is committed
        self.train("slow", {"action": "start"}, ws)
        evs = self.events(ws, "slow")
        self.assertEqual(evs[-1]["type"], "run_failed", evs[-1])
        self.assertEqual(evs[-1]["error"]["code"], "timeout", evs[-1])
        self.assertEqual(evs[-1]["step"], 0)


class TestTrainClassroom(unittest.TestCase):
    """--classroom: a student who looks at the training state makes no copy; one who trains,
    trains their own copy, and the teacher's page keeps its step count."""

    @classmethod
    def setUpClass(cls):
        import re
        cls.tmp = tempfile.mkdtemp(prefix="bf-train-class-")
        cls.dir = os.path.join(cls.tmp, "pages")
        os.mkdir(cls.dir)
        with open(os.path.join(cls.dir, "tiny.json"), "w") as f:
            json.dump(tiny_page(), f)
        cls.srv = Server(BINARY, cls.dir, extra=("--classroom",))
        class_token = None
        for _ in range(6):
            m = re.search(r"\?token=([0-9a-f]+)$", cls.srv.proc.stdout.readline().strip())
            if m and m.group(1) != cls.srv.token:
                class_token = m.group(1)
                break
        assert class_token, "the student URL is printed"
        st, j, _ = cls.srv.request("POST", "/api/class/join", {"name": "ana"}, token=class_token)
        assert st == 201, j
        cls.ana = j["token"]

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "server exit %s: %s" % (rc, err)

    def test_student_trains_own_copy(self):
        copy = os.path.join(self.dir, ".students", "ana", "tiny.json")
        st, j, _ = self.srv.request("GET", "/api/pages/tiny/train", token=self.ana)
        self.assertEqual((st, j["state"]), (200, "idle"), j)
        self.assertFalse(os.path.exists(copy), "a look at the training state makes no copy")
        ws = WebSocket(self.srv.port, token=self.ana)
        self.addCleanup(ws.close)
        st, j, _ = self.srv.request("POST", "/api/pages/tiny/train",
                                    {"action": "start", "steps": 20}, token=self.ana,
                                    headers={"X-Blockflow-Client": ws.client})
        self.assertEqual(st, 202, j)
        while True:
            ev = ws.recv_json(60 * SLOW)
            if ev.get("type") in TERMINAL:
                break
        self.assertEqual((ev["type"], ev["step"]), ("train_finished", 20), ev)
        self.assertTrue(os.path.exists(copy), "training is a change: the student's own copy")
        st, j, _ = self.srv.request("GET", "/api/pages/tiny/train", token=self.ana)
        self.assertEqual(j["step"], 20)
        st, j, _ = self.srv.request("GET", "/api/pages/tiny/train")  # the teacher's page
        self.assertNotEqual(j.get("step"), 20, j)


if __name__ == "__main__":
    unittest.main(verbosity=2)
