#!/usr/bin/env python3
"""Write scikit-learn's 8x8 digits as MNIST IDX files, for the imported enuSpace MNIST pages.

enuSpace-Tensorflow's MNIST pages read train-images.idx3-ubyte / train-labels.idx1-ubyte
(28 x 28 uint8 images, one uint8 label each); the MNIST images are not in its repository and
nothing is downloaded here. Instead the 1797 digits that scikit-learn ships (Debian's
python3-sklearn) are scaled to MNIST's format: each 8x8 image (0..16) repeated 3x3 into
24x24, centred in 28x28 with a 2-pixel border (as MNIST centres its digits in a 20x20 box
inside 28x28), times 255/16 rounded to uint8. Usage:

    /usr/bin/python3 examples/data/make_mnist_idx.py OUTPUT_FOLDER

writes, in OUTPUT_FOLDER (made if missing):

    train-images.idx3-ubyte  [1400, 28, 28]   the first 1400 of the training four fifths
    train-labels.idx1-ubyte  [1400]
    t10k-images.idx3-ubyte   [359, 28, 28]    the held-out fifth (every 5th sample)
    t10k-labels.idx1-ubyte   [359]

The training and test split is make_digits.py's (every 5th sample held out); 1400 training
images are 14 batches of 100, the batch of the enuSpace CNN page. Same output on every run.
"""
import struct
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits


def idx(path, array):
    header = struct.pack(">BBBB", 0, 0, 8, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(header + array.astype(np.uint8).tobytes())
    tmp.replace(path)


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUTPUT_FOLDER", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    img = np.kron(digits.images, np.ones((3, 3)))             # [1797, 24, 24], 0..16
    img = np.pad(img, ((0, 0), (2, 2), (2, 2)))                # [1797, 28, 28]
    img = np.rint(img * (255.0 / 16.0)).astype(np.uint8)
    y = digits.target.astype(np.uint8)
    test = np.arange(len(y)) % 5 == 4
    train_x, train_y = img[~test][:1400], y[~test][:1400]
    idx(out / "train-images.idx3-ubyte", train_x)
    idx(out / "train-labels.idx1-ubyte", train_y)
    idx(out / "t10k-images.idx3-ubyte", img[test])
    idx(out / "t10k-labels.idx1-ubyte", y[test])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
