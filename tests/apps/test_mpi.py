"""test_mpi.py - data-parallel runs under Open MPI: `mpirun -np 2` and `-np 3 --oversubscribe`
of `blockflow run` and `blockflow train` against the same pages in one process.

Exits 77 (ctest: "Not Run", reported as skipped) when blockflow was built without Open MPI
(BF_HAVE_MPI=0, set by CMake) or when mpirun or numpy is missing. Run by ctest; by hand:
BF_BINARY=build/blockflow BF_HAVE_MPI=1 BLOCKFLOW_LIBRARY=build/libblockflow.so \
python3 tests/apps/test_mpi.py -v

What is compared, and how closely:
- a filter gradient (Conv2DBackpropFilter) of a sharded batch of 10 (parts 5+5, 4+3+3) summed
  by an AllReduce: the one-process result within 1e-5 of its largest element (float32 sums in
  another order); with --deterministic-reduce the bits of (p0 + p1) + p2 in float32, p_r being
  rank r's part computed by a one-process run of that part alone, and the same bits from one
  process whose 3 ranks are threads (--ranks 3);
- learn_a_filter (24 sharded images, sgd) and digits_cnn (batches of 48, adam) trained for a
  few dozen steps with gradients built by `grad --data-parallel --ranks K`: the loss curve
  within 1e-4 relative and every Variable within 1e-5 of the one-process run; with
  --deterministic-reduce two runs give the same bits (log and checkpoint), and the one
  process with --ranks 3 gives those bits too (the single-process run of the job);
- a rank that fails (NaN cast to int32 in its part of the batch; a Placeholder one rank was
  not fed; a feed file only one rank lacks): the job ends, in seconds, with the rank named; Ctrl-C (SIGINT to mpirun) stops every
  rank at the same step boundary and the checkpoint holds that step;
- a batch that does not divide: a forward run splits it as numpy.array_split does (checked
  through the sum), a data-parallel build refuses it naming the block, a page built for 2
  ranks refuses a job of 3.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

from data_parallel_pages import SOURCE, InFolder, page, read

BINARY = os.path.abspath(os.environ.get("BF_BINARY", "build/blockflow"))
MPIRUN = shutil.which("mpirun")

try:
    import numpy as np
except ImportError:
    np = None


def env():
    e = dict(os.environ)
    if os.getuid() == 0:  # CI runs as root: Open MPI refuses that unless told
        e["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    e.setdefault("ASAN_OPTIONS", "")
    e["ASAN_OPTIONS"] += ":detect_leaks=0"  # Open MPI's own allocations at exit
    return e


def mpirun(k, args, timeout=120, **kw):
    """`mpirun -np k` (k = 1: the program alone, no MPI), in the test's folder."""
    cmd = [BINARY] + args
    if k > 1:
        # ranks that wait yield the core: several ranks share the 2 cores of a CI machine
        cmd = [MPIRUN, "-np", str(k), "--oversubscribe", "--bind-to", "none",
               "--mca", "mpi_yield_when_idle", "1"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env(), **kw)


def ok(r):
    if r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def load_json(path):
    with open(path) as f:
        return json.load(f)


class MpiTest(InFolder):
    prefix = "bf_mpi_"

    # ---- a sharded filter gradient, summed ----------------------------------------------

    def run_filter(self, k, out, extra=(), x="x.npy", dy="dy.npy"):
        os.makedirs(out, exist_ok=True)
        r = ok(mpirun(k, ["run", "fg.json", "--feed", f"x={x}", "--feed", f"dy={dy}",
                          "--out", out, "--threads", "1"] + list(extra)))
        self.assertEqual(r.stdout.count("wrote "), 1, r.stdout)  # rank 0 alone writes
        return np.load(f"{out}/dw_sum.npy")

    def test_sharded_filter_gradient(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((10, 8, 8, 2)).astype(np.float32)
        dy = rng.standard_normal((10, 8, 8, 3)).astype(np.float32)
        np.save("x.npy", x), np.save("dy.npy", dy)
        self.filter_page()
        one = self.run_filter(1, "one")
        scale = np.abs(one).max()
        for k in (2, 3):
            got = self.run_filter(k, f"k{k}")
            self.assertLessEqual(np.abs(got - one).max(), 1e-5 * scale, f"-np {k}")
        # deterministic: the float32 sum of the ranks' parts in rank order, bit for bit
        parts = []
        for r, (a, b) in enumerate([(0, 4), (4, 7), (7, 10)]):  # numpy.array_split(10, 3)
            np.save(f"x{r}.npy", x[a:b]), np.save(f"dy{r}.npy", dy[a:b])
            parts.append(self.run_filter(1, f"p{r}", x=f"x{r}.npy", dy=f"dy{r}.npy"))
        want = (parts[0] + parts[1]) + parts[2]
        for run in ("d1", "d2"):
            got = self.run_filter(3, run, ["--deterministic-reduce"])
            self.assertEqual(got.tobytes(), want.tobytes(), run)
        # one process whose 3 ranks are threads: the same bits
        self.assertEqual(self.run_filter(1, "t3", ["--ranks", "3"]).tobytes(), want.tobytes())
        # --ranks under mpirun would be K threads in each of mpirun's processes: refused
        r = mpirun(2, ["run", "fg.json", "--feed", "x=x.npy", "--feed", "dy=dy.npy",
                       "--no-save", "--ranks", "2"], timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("leave --ranks out", r.stderr)

    # ---- training: learn_a_filter and digits_cnn ----------------------------------------

    def train(self, k, pg, steps, tag, extra=()):
        r = ok(mpirun(k, ["train", pg, "--steps", str(steps), "--log", f"{tag}.csv",
                          "--checkpoint", f"{tag}.npz", "--threads", "1"] + list(extra),
                      timeout=600))
        log = np.loadtxt(f"{tag}.csv", delimiter=",", skiprows=1, ndmin=2)
        self.assertEqual(len(log), steps)
        return log, dict(np.load(f"{tag}.npz")), r

    def grad(self, fwd, out, opt, ranks=None):
        args = ["grad", fwd, "--loss", "loss", "--optimizer", opt, "-o", out, "-q"]
        if ranks:
            args += ["--data-parallel", "--ranks", str(ranks)]
        return mpirun(1, args)

    def compare_training(self, fwd, opt, steps, feed=()):
        ok(self.grad(fwd, "one.json", opt))
        base, base_state, _ = self.train(1, "one.json", steps, "one", feed)
        for k in (2, 3):
            ok(self.grad(fwd, f"dp{k}.json", opt, ranks=k))
            log, state, _ = self.train(k, f"dp{k}.json", steps, f"dp{k}", feed)
            np.testing.assert_allclose(log[:, 2:], base[:, 2:], rtol=1e-4, atol=1e-6,
                                       err_msg=f"loss curve at -np {k}")
            for name, v in base_state.items():
                self.assertLessEqual(np.abs(state[name] - v).max(), 1e-5, f"{name} at -np {k}")
            self.assertEqual(int(state[".step"]), steps)
        a_log, a_state, _ = self.train(3, "dp3.json", steps, "det_a",
                                       list(feed) + ["--deterministic-reduce"])
        b_log, b_state, _ = self.train(3, "dp3.json", steps, "det_b",
                                       list(feed) + ["--deterministic-reduce"])
        # the same job in one process, its 3 ranks threads (--ranks 3): the same bits
        c_log, c_state, _ = self.train(1, "dp3.json", steps, "det_c",
                                       list(feed) + ["--ranks", "3"])
        for log, state, how in ((b_log, b_state, "again"), (c_log, c_state, "--ranks 3")):
            self.assertEqual(a_log[:, 2:].tobytes(), log[:, 2:].tobytes(), how)
            for name in a_state:
                self.assertEqual(a_state[name].tobytes(), state[name].tobytes(), (name, how))
        return base

    def test_learn_a_filter(self):
        fwd = self.learn_a_filter_forward(24)
        base = self.compare_training(fwd, "sgd:0.5", 40, ["--feed", "images=images.npy"])
        self.assertLess(base[-1, 2], base[0, 2] / 10)  # it learns

    def test_digits_cnn(self):
        data = os.path.join(SOURCE, "examples/train/data")
        if not os.path.exists(os.path.join(data, "digits_train_x.npy")):
            self.skipTest("examples/train/data not built (python3-sklearn missing)")
        fwd = load_json(os.path.join(SOURCE, "examples/train/digits_cnn.forward.json"))
        for b in fwd["blocks"]:
            if b["id"] == "data":
                b["attrs"].update(shard="batch", batch_size=48,
                                  file=os.path.join(data, "digits_train_x.npy"),
                                  file2=os.path.join(data, "digits_train_y.npy"))
        self.write("digits.forward.json", fwd)
        base = self.compare_training("digits.forward.json", "adam:0.01", 30)
        self.assertLess(base[-1, 2], base[0, 2])

    # ---- failures and cancellation ------------------------------------------------------

    def test_a_rank_that_fails(self):
        x = np.arange(40, dtype=np.float32).reshape(10, 4)
        np.save("good.npy", x)
        total = int(x.sum())
        x[8, 1] = np.nan  # row 8: rank 1's part of 10 rows between 2 ranks
        np.save("bad.npy", x)
        self.cast_page()
        r = ok(mpirun(2, ["run", "cast.json", "--feed", "x=good.npy", "--no-save", "--print"]))
        self.assertIn(str(total), r.stdout)  # 0 + 1 + ... + 39, from both parts
        t0 = time.monotonic()
        r = mpirun(2, ["run", "cast.json", "--feed", "x=bad.npy", "--no-save"], timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(time.monotonic() - t0, 50)
        self.assertRegex(r.stderr, r"rank 1: cast.json: block \"xi\".*nan does not fit")
        self.assertRegex(r.stderr, r"rank 0: cast.json: block \"all\": rank 1 of the job failed")
        # a rank whose run stops before its first block (a Placeholder it was not fed): the
        # others learn it in their first round instead of waiting there
        cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none",
               "-np", "1", BINARY, "run", "cast.json", "--feed", "x=good.npy", "--no-save", ":",
               "-np", "1", BINARY, "run", "cast.json", "--no-save"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env())
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r'rank 1: cast.json: block "x": "x" is needed but was not fed')
        self.assertIn("rank 1 of the job failed", r.stderr)
        # a feed file that one rank alone lacks: it cannot tell the others, so the job ends
        shutil.copy("good.npy", "only0.npy")
        cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none",
               "-np", "1", BINARY, "run", "cast.json", "--feed", "x=only0.npy", "--no-save", ":",
               "-np", "1", BINARY, "run", "cast.json", "--feed", "x=missing.npy", "--no-save"]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env())
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(time.monotonic() - t0, 50)
        self.assertIn("missing.npy", r.stderr)
        self.assertIn("rank 1", r.stderr)

    def test_ctrl_c_stops_every_rank_at_a_step_boundary(self):
        fwd = self.learn_a_filter_forward(24)
        ok(self.grad(fwd, "dp2.json", "sgd:0.1", ranks=2))
        cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none", "--mca",
               "mpi_yield_when_idle", "1", BINARY, "train", "dp2.json", "--steps", "100000000",
               "--feed", "images=images.npy", "--log", "c.csv", "--checkpoint", "c.npz",
               "--threads", "1"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists("c.csv") and read("c.csv").count("\n") > 5:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertIn("interrupted after step", err)
        state = np.load("c.npz")
        rows = read("c.csv").count("\n") - 1
        self.assertGreater(rows, 5)
        self.assertEqual(int(state[".step"]), rows)  # the checkpoint is the last logged step

    # ---- a batch that does not divide ---------------------------------------------------

    def test_a_batch_that_does_not_divide(self):
        x = np.arange(40, dtype=np.float32).reshape(10, 4)
        np.save("x.npy", x)
        self.write("sum.json", page([
            {"id": "x", "type": "Placeholder", "attrs": {"shape": [10, 4], "shard": "batch"}},
            {"id": "rows", "type": "Shape", "inputs": {"input": "x"}},
            {"id": "rows_f", "type": "Cast", "inputs": {"x": "rows"}, "attrs": {"DstT": "float32"}},
            {"id": "part", "type": "Sum", "inputs": {"input": "x"}},
            {"id": "all", "type": "AllReduce", "inputs": {"input": "part"}},
            {"id": "shapes", "type": "AllReduce", "inputs": {"input": "rows_f"}}],
            ["all", "shapes"]))
        os.makedirs("o", exist_ok=True)
        ok(mpirun(3, ["run", "sum.json", "--feed", "x=x.npy", "--out", "o"]))
        self.assertEqual(float(np.load("o/all.npy")), float(x.sum()))
        self.assertEqual(np.load("o/shapes.npy").tolist(), [10, 12])  # 4+3+3 rows of 4
        # a data-parallel build needs equal parts
        fwd = self.learn_a_filter_forward(16)
        r = self.grad(fwd, "dp3.json", "sgd:0.5", ranks=3)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('block "images"', r.stderr)
        self.assertIn("does not divide among 3 ranks", r.stderr)
        # a page built for 2 ranks refuses a job of 3, naming the rank count
        ok(self.grad(fwd, "dp2.json", "sgd:0.5", ranks=2))
        r = mpirun(3, ["train", "dp2.json", "--steps", "2", "--feed", "images=images.npy"],
                   timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("built for 2 ranks", r.stderr)
        self.assertIn("mpirun -np 2", r.stderr)

    # ---- Python --------------------------------------------------------------------------

    def test_python_rank_and_size(self):
        if os.environ.get("BF_MPI_PYTHON", "1") != "1":
            self.skipTest("a sanitizer build's library does not load into python")
        script = os.path.join(self.dir, "ranks.py")
        with open(script, "w") as f:
            # each rank writes its own file: mpirun may interleave the ranks' stdout
            f.write("import json, blockflow\n"
                    "with open('rank%d.json' % blockflow.rank(), 'w') as f:\n"
                    "    json.dump([blockflow.rank(), blockflow.size(), blockflow.job()], f)\n")
        ok(subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none",
                           sys.executable, script], capture_output=True, text=True,
                          timeout=120, env=env()))
        got = [json.loads(read(f"rank{r}.json")) for r in range(2)]
        self.assertEqual([g[:2] for g in got], [[0, 2], [1, 2]])
        self.assertIn("rank 1 of 2", got[1][2])


if __name__ == "__main__":
    why = None
    if os.environ.get("BF_HAVE_MPI", "1") != "1":
        why = "blockflow was built without Open MPI (libopenmpi-dev, -DBLOCKFLOW_MPI=ON)"
    elif not MPIRUN:
        why = "mpirun not found (Debian: openmpi-bin)"
    elif np is None:
        why = "numpy not found (Debian: python3-numpy)"
    if why:
        print(f"test_mpi skipped: {why}")
        sys.exit(77)
    unittest.main()
