"""test_serve_classroom.py - `blockflow serve --classroom`: roles, copies, live edits, roster.

A teacher (the server's token), a class token that may only join, and two students who join
by name and get tokens of their own. Students read the teacher's pages and write only their own
copies (made on first edit or run, under .students/NAME/); the teacher's page and the other
student's copy never change; runs and their events stay with their student; every edit of an
open page reaches every socket viewing it, and a saved teacher page reaches the students
viewing it, who can "update my copy"; the roster shows who is connected and their last run.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import Server, WebSocket  # noqa: E402
from test_serve import BINARY, SLOW, long_page, teach_page  # noqa: E402


class Classroom(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bf-class-")
        cls.dir = os.path.join(cls.tmp, "pages")
        os.mkdir(cls.dir)
        for name, page in (("teach", teach_page()), ("long", long_page(8))):
            with open(os.path.join(cls.dir, name + ".json"), "w") as f:
                json.dump(page, f)
        cls.srv = Server(BINARY, cls.dir, extra=("--classroom",))
        cls.class_token = None
        for _ in range(6):
            line = cls.srv.proc.stdout.readline()
            m = re.search(r"\?token=([0-9a-f]+)$", line.strip())
            if m and m.group(1) != cls.srv.token:
                cls.class_token = m.group(1)
                break
        assert cls.class_token, "the student URL is printed"
        cls.students = {}
        for name in ("ana", "bob"):
            st, j, _ = cls.srv.request("POST", "/api/class/join", {"name": name},
                                       token=cls.class_token)
            assert st == 201, j
            cls.students[name] = j["token"]

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "server exit %s: %s" % (rc, err)

    def as_(self, who, method, path, body=None, **kw):
        tok = self.srv.token if who == "teacher" else (
            self.class_token if who == "class" else self.students[who])
        return self.srv.request(method, path, body, token=tok, **kw)

    def ws(self, who, view=None, space=""):
        tok = self.srv.token if who == "teacher" else self.students[who]
        w = WebSocket(self.srv.port, token=tok)
        self.addCleanup(w.close)
        if view:
            w.send(json.dumps({"type": "view", "page": view, "space": space}))
            self.assertEqual(w.recv_json(timeout=10)["type"], "viewing")
        return w

    def teacher_file(self, name="teach"):
        with open(os.path.join(self.dir, name + ".json")) as f:
            return json.load(f)

    def copy_path(self, student, name="teach"):
        return os.path.join(self.dir, ".students", student, name + ".json")

    @staticmethod
    def until(ws, kind, timeout=30):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            ev = ws.recv_json(timeout=max(0.1, deadline - time.time()))
            if ev.get("type") == kind:
                return ev
        raise TimeoutError(kind)

    def test_1_tokens_and_roles(self):
        st, j, _ = self.as_("class", "GET", "/api/pages")
        self.assertEqual(st, 403)
        st, j, _ = self.as_("class", "POST", "/api/class/join", {"name": "ana"})
        self.assertEqual(st, 409, "a name is taken once")
        st, j, _ = self.as_("class", "GET", "/api/class/me")
        self.assertEqual(j["role"], "joining")
        st, j, _ = self.as_("ana", "GET", "/api/class/me")
        self.assertEqual((j["role"], j["name"]), ("student", "ana"))
        st, j, _ = self.as_("teacher", "GET", "/api/class/me")
        self.assertEqual(j["role"], "teacher")
        st, j, _ = self.as_("ana", "GET", "/api/class/roster")
        self.assertEqual(st, 403)
        st, j, _ = self.as_("ana", "POST", "/api/class/join", {"name": "eve"})
        self.assertEqual(st, 403)
        for who in ("ana", "bob"):
            st, _, _ = self.as_(who, "POST", "/api/pages/teach/rename", {"to": "mine"})
            self.assertEqual(st, 403)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "teach.json")))

    def test_2_copies_on_first_edit_and_run(self):
        before = self.teacher_file()
        st, j, _ = self.as_("ana", "GET", "/api/pages/teach")
        self.assertEqual((st, j["space"]), (200, ""), "the teacher's page, read-only")
        edit = [{"op": "set_attr", "block": "y", "attr": "padding", "value": "VALID"}]
        st, j, _ = self.as_("ana", "POST", "/api/pages/teach/edits", edit)
        self.assertEqual(st, 200, j)
        self.assertTrue(os.path.exists(self.copy_path("ana")))
        self.assertEqual(self.teacher_file(), before, "the teacher's page is unchanged")
        st, j, _ = self.as_("ana", "GET", "/api/pages/teach")
        self.assertEqual(j["space"], "ana")
        st, j, _ = self.as_("bob", "GET", "/api/pages/teach")
        self.assertEqual(j["space"], "", "bob still reads the teacher's page")
        st, j, _ = self.as_("ana", "GET", "/api/pages")
        self.assertIn("teach", j["copies"])
        # a save by ana writes her copy; the teacher's file stays
        st, cur, _ = self.as_("ana", "GET", "/api/pages/teach")
        page = cur["page"]
        page["description"] = "ana's version"
        st, j, _ = self.as_("ana", "PUT", "/api/pages/teach",
                            {"page": page, "revision": cur["revision"]})
        self.assertEqual(st, 200, j)
        with open(self.copy_path("ana")) as f:
            self.assertEqual(json.load(f)["description"], "ana's version")
        self.assertEqual(self.teacher_file(), before)
        # a new page of a student's own goes to their folder only
        st, j, _ = self.as_("ana", "PUT", "/api/pages/mine", {"page": teach_page(),
                                                              "revision": None})
        self.assertEqual(st, 201, j)
        self.assertTrue(os.path.exists(self.copy_path("ana", "mine")))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "mine.json")))
        st, j, _ = self.as_("bob", "GET", "/api/pages/mine")
        self.assertEqual(st, 404, "bob does not see ana's page")
        # a student's DELETE removes only their copy
        st, j, _ = self.as_("bob", "DELETE", "/api/pages/teach")
        self.assertEqual(st, 404, "bob has no copy to delete")
        self.assertTrue(os.path.exists(os.path.join(self.dir, "teach.json")))

    def test_3_runs_stay_with_their_student(self):
        a, b = self.ws("ana"), self.ws("bob")
        st, j, _ = self.as_("ana", "POST", "/api/pages/long/run", {},
                            headers={"X-Blockflow-Client": a.client})
        self.assertEqual(st, 202, j)
        self.assertTrue(os.path.exists(self.copy_path("ana", "long")), "copy made on run")
        self.assertEqual(a.recv_json(timeout=30)["type"], "run_started")
        # bob's run of the same page is not busy: it is his own copy
        st, jb, _ = self.as_("bob", "POST", "/api/pages/long/run", {})
        self.assertEqual(st, 202, jb)
        # bob cannot see or cancel ana's run; no event of ana's reaches bob
        st, _, _ = self.as_("bob", "GET", "/api/runs/%s/result" % j["run_id"])
        self.assertEqual(st, 404)
        st, _, _ = self.as_("bob", "POST", "/api/runs/%s/cancel" % j["run_id"])
        self.assertEqual(st, 404)
        evs = a.run_events(j["run_id"], timeout=300 * SLOW)
        self.assertEqual(evs[-1]["type"], "run_finished")
        b.send(json.dumps({"type": "ping"}))
        while True:
            ev = b.recv_json(timeout=30)
            self.assertNotEqual(ev.get("run_id"), j["run_id"], "ana's event reached bob")
            if ev["type"] == "pong":
                break
        st, r, _ = self.as_("ana", "GET", "/api/runs/%s/result" % j["run_id"])
        self.assertEqual(st, 200)
        # the roster: who is connected, their page, their last run
        deadline = time.time() + 60 * SLOW
        while time.time() < deadline:
            st, ro, _ = self.as_("teacher", "GET", "/api/class/roster")
            byname = {s["name"]: s for s in ro["students"]}
            if byname["bob"]["last_run"] and byname["ana"]["last_run"]:
                break
            time.sleep(0.2)
        self.assertTrue(byname["ana"]["connected"])
        self.assertEqual(byname["ana"]["last_run"]["status"], "finished")
        self.assertEqual(byname["ana"]["last_run"]["page"], "long")
        self.assertIn("long", byname["bob"]["copies"])
        # the teacher looks over ana's shoulder (read-only)
        st, j, _ = self.as_("teacher", "GET", "/api/class/students/ana/pages/long")
        self.assertEqual((st, j["space"]), (200, "ana"))

    def test_4_live_edits_and_update_my_copy(self):
        tab1 = self.ws("teacher", view="teach")
        tab2 = self.ws("teacher", view="teach")
        bob = self.ws("bob", view="teach")             # bob reads the teacher's page
        ana = self.ws("ana", view="teach", space="ana")  # ana has her own copy
        st, j, _ = self.as_("bob", "GET", "/api/pages/teach")
        self.assertEqual(j["space"], "")
        edit = [{"op": "set_attr", "block": "y", "attr": "strides", "value": [1, 2, 2, 1]}]
        st, j, _ = self.as_("teacher", "POST", "/api/pages/teach/edits", edit,
                            headers={"X-Blockflow-Client": tab1.client})
        self.assertEqual(st, 200, j)
        for w in (tab1, tab2, bob):
            ev = self.until(w, "page_edited")
            self.assertEqual((ev["page"], ev["space"]), ("teach", ""))
            self.assertEqual(ev["edits"], edit)
            self.assertIn("revision", ev)
        # the teacher saves: ana, on her copy, is told and updates her copy
        st, cur, _ = self.as_("teacher", "GET", "/api/pages/teach")
        page = cur["page"]
        page["description"] = "pushed by the teacher"
        st, j, _ = self.as_("teacher", "PUT", "/api/pages/teach",
                            {"page": page, "revision": cur["revision"]})
        self.assertEqual(st, 200, j)
        ev = self.until(ana, "teacher_page_saved")
        self.assertEqual(ev["page"], "teach")
        st, j, _ = self.as_("ana", "POST", "/api/pages/teach/update-copy")
        self.assertEqual(st, 200, j)
        with open(self.copy_path("ana")) as f:
            self.assertEqual(json.load(f)["description"], "pushed by the teacher")
        # a student may not view another student's copy
        bob.send(json.dumps({"type": "view", "page": "teach", "space": "ana"}))
        self.assertEqual(self.until(bob, "error")["error"]["code"], "forbidden")


if __name__ == "__main__":
    unittest.main()
