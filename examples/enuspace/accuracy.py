#!/usr/bin/env python3
"""Train cnn_handwired.json and cnn_grad.json the same number of steps on the same data and
print each one's accuracy on the held-out digits.

    PYTHONPATH=python /usr/bin/python3 examples/enuspace/accuracy.py [STEPS]   (default 700)

Both pages start from the same weights (the same glorot_uniform seeds) and read the same
batches (dataset/train-*.idx, in order, 14 batches of 100 an epoch). After STEPS steps the
trained W1, W2, W3 and B are read back and the forward pass of the page (Conv2D+Relu+MaxPool
twice, MatMul with W3 transposed, Add B) is computed here with numpy on dataset/t10k-*.idx
(the 359 held-out digits); the accuracy is the share whose largest logit is the label.
"""
import os
import sys
import time

import numpy as np

import blockflow

HERE = os.path.dirname(os.path.abspath(__file__))
W1, W2, W3, B = "ID_W1", "ID_W2", "ID_1eQnn4809", "ID_1eQnn4833"


def idx(path):
    with open(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * nd).reshape(dims)


def conv_same(x, w):
    """NHWC x, HWIO 3x3 w, stride 1, SAME."""
    n, h, wd, _ = x.shape
    p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, h, wd, w.shape[3]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,co->nhwo", p[:, i:i + h, j:j + wd, :], w[i, j])
    return out


def pool(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def accuracy(v, images, labels):
    x = images.reshape(-1, 28, 28, 1).astype(np.float64) / 255.0
    a = pool(np.maximum(conv_same(x, v[W1].astype(np.float64)), 0))
    a = pool(np.maximum(conv_same(a, v[W2].astype(np.float64)), 0))
    logits = a.reshape(len(x), -1) @ v[W3].astype(np.float64).T + v[B].astype(np.float64)
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def main(argv):
    steps = int(argv[1]) if len(argv) > 1 else 700
    images = idx(os.path.join(HERE, "dataset", "t10k-images.idx3-ubyte"))
    labels = idx(os.path.join(HERE, "dataset", "t10k-labels.idx1-ubyte"))
    for name in ("cnn_handwired", "cnn_grad"):
        page = blockflow.load(os.path.join(HERE, name + ".json"), threads=2)
        before = accuracy(page.variables(), images, labels)
        t0 = time.time()
        page.train(steps=steps, metrics=["ID_1eQnn4891"])
        took = time.time() - t0
        after = accuracy(page.variables(), images, labels)
        cost = page.history["ID_1eQnn4891"][-1]
        print(f"{name:14s} {steps} steps in {took:6.1f} s: held-out accuracy "
              f"{100 * before:5.1f}% -> {100 * after:5.1f}%, mean(CE^2) of the last batch "
              f"{cost:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
