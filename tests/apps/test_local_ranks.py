"""test_local_ranks.py - `blockflow run|train --ranks K`: a data-parallel job whose ranks are
threads of one process (bf_group), without MPI, so it runs wherever blockflow builds.

What is compared, and how closely:
- a filter gradient (Conv2DBackpropFilter) of a sharded batch of 10 summed by an AllReduce, at
  --ranks 2 and 3: the bits of (p0 + p1) [+ p2] in float32, p_r being rank r's part computed by a
  one-process run of that part alone (the group sums in rank order), with and without
  --deterministic-reduce; within 1e-5 of its largest element of the one-process run of the
  whole batch (float32 sums in another order);
- learn_a_filter (24 sharded images, sgd) trained 30 steps with gradients built by
  `grad --data-parallel --ranks K`: loss curve within 1e-4 relative and Variables within 1e-5
  of the one-process run; two runs give the same bits (log and checkpoint);
- a rank that fails (NaN cast to int32 in its part): the job ends in seconds, the failing rank
  and the others' "rank 1 of the job failed" both printed; Ctrl-C stops every rank at a step
  boundary and the checkpoint holds the last logged step;
- bad --ranks values are usage errors, and a page built for 2 ranks refuses --ranks 3.
The bits of an MPI job (mpirun -np K --deterministic-reduce) against --ranks K are compared in
tests/apps/test_mpi.py.
Exits 77 ("Not Run" in ctest) without numpy. By hand:
BF_BINARY=build/blockflow python3 tests/apps/test_local_ranks.py -v
"""
import os
import signal
import subprocess
import sys
import time
import unittest

from data_parallel_pages import InFolder, read

BINARY = os.path.abspath(os.environ.get("BF_BINARY", "build/blockflow"))

try:
    import numpy as np
except ImportError:
    np = None


def blockflow(args, timeout=300):
    env = dict(os.environ)
    for v in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"):  # not under a launcher
        env.pop(v, None)
    return subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=timeout,
                          env=env)


def ok(r):
    if r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


class LocalRanks(InFolder):
    prefix = "bf_ranks_"

    # ---- a sharded filter gradient -------------------------------------------------------

    def run_filter(self, out, extra=(), x="x.npy", dy="dy.npy"):
        os.makedirs(out, exist_ok=True)
        r = ok(blockflow(["run", "fg.json", "--feed", f"x={x}", "--feed", f"dy={dy}",
                          "--out", out, "--threads", "1"] + list(extra)))
        self.assertEqual(r.stdout.count("wrote "), 1, r.stdout)  # rank 0 alone writes
        return np.load(f"{out}/dw_sum.npy")

    def test_sharded_filter_gradient(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((10, 8, 8, 2)).astype(np.float32)
        dy = rng.standard_normal((10, 8, 8, 3)).astype(np.float32)
        np.save("x.npy", x), np.save("dy.npy", dy)
        self.filter_page()
        one = self.run_filter("one")
        scale = np.abs(one).max()
        for k, parts in ((2, [(0, 5), (5, 10)]), (3, [(0, 4), (4, 7), (7, 10)])):
            p = []
            for r, (a, b) in enumerate(parts):  # numpy.array_split(10, k)
                np.save(f"x{r}.npy", x[a:b]), np.save(f"dy{r}.npy", dy[a:b])
                p.append(self.run_filter(f"p{k}{r}", x=f"x{r}.npy", dy=f"dy{r}.npy"))
            want = p[0]
            for q in p[1:]:
                want = want + q  # float32, in rank order
            for extra in ([], ["--deterministic-reduce"]):
                got = self.run_filter(f"k{k}{len(extra)}", ["--ranks", str(k)] + extra)
                self.assertEqual(got.tobytes(), want.tobytes(), f"--ranks {k} {extra}")
                self.assertLessEqual(np.abs(got - one).max(), 1e-5 * scale)

    # ---- training ------------------------------------------------------------------------

    def grad(self, fwd, out, opt, ranks=None):
        args = ["grad", fwd, "--loss", "loss", "--optimizer", opt, "-o", out, "-q"]
        if ranks:
            args += ["--data-parallel", "--ranks", str(ranks)]
        return ok(blockflow(args))

    def train(self, pg, steps, tag, extra=()):
        r = ok(blockflow(["train", pg, "--steps", str(steps), "--log", f"{tag}.csv",
                          "--checkpoint", f"{tag}.npz", "--threads", "1",
                          "--feed", "images=images.npy"] + list(extra)))
        log = np.loadtxt(f"{tag}.csv", delimiter=",", skiprows=1, ndmin=2)
        self.assertEqual(len(log), steps)
        return log, dict(np.load(f"{tag}.npz")), r

    def test_learn_a_filter(self):
        fwd = self.learn_a_filter_forward(24)
        self.grad(fwd, "one.json", "sgd:0.5")
        base, base_state, _ = self.train("one.json", 30, "one")
        self.assertLess(base[-1, 2], base[0, 2] / 10)  # it learns
        for k in (2, 3):
            self.grad(fwd, f"dp{k}.json", "sgd:0.5", ranks=k)
            log, state, r = self.train(f"dp{k}.json", 30, f"dp{k}", ["--ranks", str(k)])
            self.assertIn("trained 30 steps", r.stdout)
            self.assertEqual(r.stdout.count("trained"), 1, "rank 0 alone prints")
            np.testing.assert_allclose(log[:, 2:], base[:, 2:], rtol=1e-4, atol=1e-6,
                                       err_msg=f"loss curve at --ranks {k}")
            for name, v in base_state.items():
                self.assertLessEqual(np.abs(state[name] - v).max(), 1e-5, f"{name}, {k} ranks")
            again, again_state, _ = self.train(f"dp{k}.json", 30, f"again{k}",
                                               ["--ranks", str(k)])
            self.assertEqual(again[:, 2:].tobytes(), log[:, 2:].tobytes())
            for name in state:
                self.assertEqual(again_state[name].tobytes(), state[name].tobytes(), name)
        # a page built for 2 ranks refuses 3, naming the count
        r = blockflow(["train", "dp2.json", "--steps", "2", "--ranks", "3",
                       "--feed", "images=images.npy"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("built for 2 ranks", r.stderr)

    # ---- failures, Ctrl-C, usage ---------------------------------------------------------

    def test_a_rank_that_fails(self):
        x = np.arange(40, dtype=np.float32).reshape(10, 4)
        x[8, 1] = np.nan  # row 8: rank 1's part of 10 rows between 2 ranks
        np.save("bad.npy", x)
        self.cast_page()
        t0 = time.monotonic()
        r = blockflow(["run", "cast.json", "--feed", "x=bad.npy", "--no-save", "--ranks", "2"],
                      timeout=60)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertLess(time.monotonic() - t0, 50)
        self.assertRegex(r.stderr, r"rank 1: cast.json: block \"xi\".*nan does not fit")
        self.assertRegex(r.stderr, r"rank 0: cast.json: block \"all\": rank 1 of the job failed")

    def test_ctrl_c_stops_every_rank_at_a_step_boundary(self):
        fwd = self.learn_a_filter_forward(24)
        self.grad(fwd, "dp2.json", "sgd:0.1", ranks=2)
        p = subprocess.Popen([BINARY, "train", "dp2.json", "--steps", "100000000", "--ranks",
                              "2", "--feed", "images=images.npy", "--log", "c.csv",
                              "--checkpoint", "c.npz", "--threads", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists("c.csv") and read("c.csv").count("\n") > 5:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted after step", err)
        rows = read("c.csv").count("\n") - 1
        self.assertGreater(rows, 5)
        self.assertEqual(int(np.load("c.npz")[".step"]), rows)  # the last logged step

    def test_usage(self):
        for bad in ("0", "257", "two"):
            r = blockflow(["train", "x.json", "--ranks", bad])
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("--ranks", r.stderr)
        r = blockflow(["run", "x.json", "--ranks"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--ranks needs a value", r.stderr)
        r = blockflow(["help", "train"])
        self.assertIn("--ranks K", r.stdout)


if __name__ == "__main__":
    if np is None:
        print("numpy is missing: not run")
        sys.exit(77)
    unittest.main()
