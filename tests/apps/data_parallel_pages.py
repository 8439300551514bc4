"""data_parallel_pages.py - what test_mpi.py (ranks as mpirun's processes) and
test_local_ranks.py (ranks as threads, --ranks K) share: a test case in its own folder, and the
pages both run (a sharded filter gradient, learn_a_filter with a fed sharded batch, a Cast that
fails on one rank's part)."""
import json
import os
import shutil
import tempfile
import unittest

SOURCE = os.environ.get("BF_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def read(path):
    with open(path) as f:
        return f.read()


def page(blocks, outputs):
    return {"format": "blockflow.page", "version": 1, "blocks": blocks, "outputs": outputs}


class InFolder(unittest.TestCase):
    """Each test runs in a fresh folder, removed afterwards."""
    prefix = "bf_dp_"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.cwd = os.getcwd()
        os.chdir(self.dir)

    def tearDown(self):
        os.chdir(self.cwd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, obj):
        with open(name, "w") as f:
            json.dump(obj, f)
        return name

    def filter_page(self):
        """fg.json: dw_sum = AllReduce(Conv2DBackpropFilter(x, dy)), x [-1,8,8,2] and dy
        [-1,8,8,3] fed and sharded by batch."""
        return self.write("fg.json", page([
            {"id": "x", "type": "Placeholder",
             "attrs": {"shape": [-1, 8, 8, 2], "shard": "batch"}},
            {"id": "dy", "type": "Placeholder",
             "attrs": {"shape": [-1, 8, 8, 3], "shard": "batch"}},
            {"id": "fs", "type": "Const", "attrs": {"dtype": "int32", "value": [3, 3, 2, 3]}},
            {"id": "dw", "type": "Conv2DBackpropFilter",
             "inputs": {"input": "x", "filter_sizes": "fs", "out_backprop": "dy"},
             "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
            {"id": "dw_sum", "type": "AllReduce", "inputs": {"input": "dw"}}], ["dw_sum"]))

    def learn_a_filter_forward(self, n):
        """laf.forward.json: examples/train/learn_a_filter.forward.json with its random batch
        replaced by n fed images (images.npy, written here), sharded by batch."""
        import numpy as np
        with open(os.path.join(SOURCE, "examples/train/learn_a_filter.forward.json")) as f:
            fwd = json.load(f)
        rng = np.random.default_rng(7)
        np.save("images.npy", rng.uniform(-1, 1, (n, 12, 12, 1)).astype(np.float32))
        for b in fwd["blocks"]:
            if b["id"] == "images":
                b["type"] = "Placeholder"
                b["attrs"] = {"shape": [n, 12, 12, 1], "shard": "batch"}
        return self.write("laf.forward.json", fwd)

    def cast_page(self):
        """cast.json: the sum of x [10,4] through int32, summed across ranks: a NaN in one
        rank's rows fails that rank alone."""
        return self.write("cast.json", page([
            {"id": "x", "type": "Placeholder", "attrs": {"shape": [10, 4], "shard": "batch"}},
            {"id": "xi", "type": "Cast", "inputs": {"x": "x"}, "attrs": {"DstT": "int32"}},
            {"id": "xf", "type": "Cast", "inputs": {"x": "xi"}, "attrs": {"DstT": "float32"}},
            {"id": "total", "type": "Sum", "inputs": {"input": "xf"}},
            {"id": "all", "type": "AllReduce", "inputs": {"input": "total"}}], ["all"]))
