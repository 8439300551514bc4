#!/usr/bin/env python3
"""Write the 8x8 handwritten digits as .npy files a Dataset block reads.

The digits are the 1797 images that scikit-learn ships inside its package
(sklearn.datasets.load_digits() reads sklearn/datasets/data/digits.csv.gz: nothing is
downloaded; Debian's python3-sklearn has them). Usage:

    /usr/bin/python3 examples/data/make_digits.py OUTPUT_FOLDER

writes, in OUTPUT_FOLDER (made if missing):

    digits_train_x.npy  float32 [1438, 8, 8, 1]  pixels 0..16 divided by 16, so 0..1 (NHWC)
    digits_train_y.npy  int32   [1438]           the digit, 0..9
    digits_test_x.npy   float32 [359, 8, 8, 1]
    digits_test_y.npy   int32   [359]

The test set is a fixed held-out fifth: every 5th sample (indices 4, 9, 14, ...) in
scikit-learn's order; the other four fifths are the training set, in that order too (a
Dataset block shuffles them with its own seed). The output is the same on every run.
"""
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print(f"usage: {argv[0]} OUTPUT_FOLDER", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    x = (digits.images.astype(np.float64) / 16.0).astype(np.float32)[..., np.newaxis]
    y = digits.target.astype(np.int32)
    assert x.shape == (1797, 8, 8, 1) and y.shape == (1797,)
    test = np.arange(len(y)) % 5 == 4
    arrays = {
        "digits_train_x": x[~test],
        "digits_train_y": y[~test],
        "digits_test_x": x[test],
        "digits_test_y": y[test],
    }
    for name, a in arrays.items():
        np.save(out / f"{name}.npy", np.ascontiguousarray(a))
        print(f"{out / (name + '.npy')}: {a.dtype} {list(a.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
