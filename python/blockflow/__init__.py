"""blockflow from Python: run pages and single blocks on numpy arrays.

    import blockflow
    page = blockflow.load("examples/filter_grad_same.json")
    page.check()                                # CheckResult(problems, shapes)
    out = page.run(fetch=["dw"])                # {"dw": numpy array}
    page.set_attr("dw", "padding", "VALID")     # the next run recomputes dw only
    page.add_block("total", "Sum"); page.connect("total", "input", "dw")
    page.save("edited.json")                    # canonical JSON, written atomically
    blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], dy, [1, 1, 1, 1], "SAME")

    page.build_gradients("loss", optimizer="sgd:0.1")   # training (see _train.py)
    history = page.train(steps=100, callback=lambda step, m: print(step, m["loss"]))
    page.variables(); page.save_state("ckpt.npz"); page.reset()
    blockflow.rank(), blockflow.size()          # under mpirun -np K: this rank, K

A thin layer over libblockflow.so (include/blockflow.h) through ctypes: no compiler needed.
Errors raise blockflow.Error subclasses carrying code, block, port, attr, message and every
problem of the page; a bad page never crashes the interpreter. See README.md, "From Python".
"""
from . import ops
from ._errors import (AttrError, CancelledError, DeviceError, DtypeError, Error,
                      InternalError, InvalidArgumentError, IoError, LimitError, NotFoundError,
                      OutOfMemoryError, ParseError, Problem, SchemaError, ShapeError,
                      TimedOutError, UnsupportedError, error_codes)
from ._lib import lib as _lib
from ._page import (CheckResult, Page, PortInfo, block, blocks, devices, job, load, loads,
                    rank, size)
from ._tensor import BFLOAT16 as bfloat16
from ._train import History

__version__ = "0.1.0"
library_path = _lib.path  # the libblockflow.so in use

__all__ = ["AttrError", "CancelledError", "CheckResult", "DeviceError", "DtypeError", "Error",
           "History", "InternalError", "InvalidArgumentError", "IoError", "LimitError",
           "NotFoundError", "OutOfMemoryError", "Page", "ParseError", "PortInfo", "Problem", "SchemaError",
           "ShapeError", "TimedOutError", "UnsupportedError", "block", "blocks", "bfloat16",
           "devices", "error_codes", "job", "library_path", "load", "loads", "ops", "rank",
           "size"]

# Tracebacks and reprs say blockflow.ShapeError, not blockflow._errors.ShapeError.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = __name__
del _name, _obj
