# %% [markdown]
# # Learning a 3x3 filter by gradient descent, from Python
#
# Sixteen random 12x12 images go through a fixed Sobel filter: those are the targets. A 3x3
# filter `w` that starts at zero is trained so that its own convolution of the images matches
# them; the loss is the mean squared difference. After a few dozen steps `w` *is* the Sobel
# filter. From the repository, after `make`:
#
#     PYTHONPATH=python python3 examples/python/train_filter.py

# %%
import os
import tempfile

import numpy as np

import blockflow

SOBEL = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]


def block(id, type, inputs=None, **attrs):
    return {"id": id, "type": type, "inputs": inputs or {}, "attrs": attrs}


def conv(id, input, filter):
    return block(id, "Conv2D", {"input": input, "filter": filter},
                 strides=[1, 1, 1, 1], padding="VALID")


# %% [markdown]
# The forward pass only: targets = conv(images, sobel), loss = mean((conv(images, w) -
# targets)^2). Every block is a TensorFlow op of the same name.

# %%
blocks = [
    block("images", "RandomUniform", shape=[16, 12, 12, 1], minval=-1, maxval=1, seed=7),
    block("sobel", "Const", shape=[3, 3, 1, 1], value=SOBEL),
    conv("targets", "images", "sobel"),
    block("w", "Variable", shape=[3, 3, 1, 1]),  # starts at zero
    conv("predictions", "images", "w"),
    block("error", "Sub", {"x": "predictions", "y": "targets"}),
    block("squared", "Square", {"x": "error"}),
    block("all_axes", "Const", dtype="int32", value=[0, 1, 2, 3]),
    block("loss", "Mean", {"input": "squared", "reduction_indices": "all_axes"}),
]
page = blockflow.loads({"format": "blockflow.page", "version": 1, "name": "learn-a-filter",
                        "blocks": blocks, "outputs": ["loss"]})

# %% [markdown]
# The backward pass, built as blocks the way tf.gradients builds it (Mean's, Square's and
# Sub's gradients, then Conv2DBackpropFilter for `w`), and an SGD update of `w` with a
# learning rate of 0.5. `check_gradients` compares the gradient the update applies with
# finite differences of the loss, in float64.

# %%
made = page.build_gradients("loss", optimizer="sgd:0.5")
print("added", len(made["blocks"]), "blocks; the gradient of w is", made["gradients"]["w"])
check = page.check_gradients("loss")
print("gradient check passed:", check["pass"],
      f"(max relative error {check['variables'][0]['max_rel_error']:.1e})")

# %% [markdown]
# Train: the callback prints the loss every 5 steps (the loss a step reports is the one it
# started from). Ctrl-C would stop cleanly after the last finished step.

# %%
def report(step, metrics):
    if step % 5 == 0:
        print(f"step {step:3d}  loss {metrics['loss']:.2e}")


history = page.train(steps=30, callback=report)
print(f"{page.step_count} steps, loss {history['loss'][0]:.3f} -> {history['loss'][-1]:.2e}")

# %% [markdown]
# The learned filter: the Sobel filter the targets were made with.

# %%
w = page.variables()["w"][:, :, 0, 0]
print(np.round(w, 3) + 0.0)  # + 0.0: no "-0."
print("Sobel recovered:", np.allclose(w, SOBEL, atol=1e-3))

# %% [markdown]
# Start again: `reset()` puts `w` back to zeros and the step count to 0; a checkpoint saved
# before brings the trained filter back.

# %%
with tempfile.TemporaryDirectory() as folder:
    checkpoint = page.save_state(os.path.join(folder, "learned_filter.npz"))
    page.reset()
    print("after reset:", page.step_count, "steps, w all zero:", not page.variables()["w"].any())
    page.load_state(checkpoint)
    with np.load(checkpoint) as saved:  # a plain numpy archive: one array per Variable
        print("restored:", page.step_count, "steps; the file holds", sorted(saved.files))
