# %% [markdown]
# # The filter gradient of a convolution, from Python
#
# A notebook-style script: each `# %%` cell runs in Jupyter, VS Code or Spyder, and the whole
# file runs as a script. From the repository, after `make`:
#
#     PYTHONPATH=python python3 examples/python/filter_gradient.py
#
# It loads a saved page, checks it, runs it, changes one attribute and re-runs only what that
# changed, then calls one TensorFlow op directly on numpy arrays.

# %%
from pathlib import Path

import numpy as np

import blockflow

here = Path(__file__).resolve().parent if "__file__" in globals() else Path("examples/python")
page = blockflow.load(here.parent / "filter_grad_same.json")
print(page.description[:120], "...")

# %% [markdown]
# `check()` validates every block and infers every shape without running a kernel.

# %%
result = page.check()
print("ok:", result.ok)
for port, info in result.shapes.items():
    print(f"  {port:12} {info.dtype:8} {info.shape}")

# %% [markdown]
# `run()` returns numpy arrays. `dy` is all ones, so each weight of the gradient is the sum of
# the pixels it touched; the corners saw only 16 of the 25 because of SAME's zero padding.

# %%
dw = page.run(fetch=["dw"])["dw"]
print(dw[:, :, 0, 0])

# %% [markdown]
# Change one attribute: the next run recomputes `dw` and reuses the three constants.
# VALID padding needs a 3x3 `dy`, so the page's 5x5 one is now refused, naming the port.

# %%
page.set_attr("dw", "padding", "VALID")
try:
    page.run()
except blockflow.ShapeError as e:
    print(f"{type(e).__name__}: block {e.block!r}, port {e.port!r}:\n  {e.message}")
page.set_attr("dw", "padding", "SAME")
page.run()
print({s["id"]: "ran" if s["ran"] else "reused" for s in page.stats()})

# %% [markdown]
# The same computation as one TensorFlow op, with `tf.raw_ops.Conv2DBackpropFilter`'s
# signature, on any numpy arrays (here float64).

# %%
x = np.arange(1, 26, dtype=np.float64).reshape(1, 5, 5, 1)
dw64 = blockflow.ops.conv2d_backprop_filter(x, [3, 3, 1, 1], np.ones((1, 5, 5, 1)),
                                            strides=[1, 1, 1, 1], padding="SAME")
print(dw64.dtype, np.array_equal(dw64, dw))
