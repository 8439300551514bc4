#!/usr/bin/env python3
"""Make the two pages of examples/enuspace/ from enuSpace-Tensorflow's CNN training page.

    /usr/bin/python3 examples/enuspace/make_pages.py ENUSPACE_CHECKOUT [BLOCKFLOW]

ENUSPACE_CHECKOUT is a checkout of github.com/EXPNUNI/enuSpace-Tensorflow (the page is
enu_Tensorflow(1.5)/samples/model_samples/mnist/convolution neural network/
convolution_neural_network_train.svg; its .dat is not in the repository, so the weights start
from glorot_uniform); BLOCKFLOW is the program (default build/blockflow). Writes, here:

  cnn_handwired.json  `blockflow import` of the page, unchanged but for its name and
                      description and one block: `loss`, the sum over the batch of the
                      softmax cross-entropy, the loss the page's hand-wired backward pass
                      differentiates (dW3 = backprop^T . flat is a batch sum), so that
                      `blockflow gradcheck cnn_handwired.json --loss loss` can measure it.
  cnn_grad.json       the same forward pass with the hand-wired backward pass (the
                      MatMuls of `backprop`, the Conv2DBackprop* blocks, the Mean and the
                      four ApplyGradientDescent) removed and the true one built by
                      `blockflow grad --loss loss --optimizer sgd:0.0001` (the page's
                      learning rate) instead.

Both read dataset/train-images.idx3-ubyte and dataset/train-labels.idx1-ubyte (written at
build time from scikit-learn's digits: examples/data/make_mnist_idx.py).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = ("enu_Tensorflow(1.5)/samples/model_samples/mnist/convolution neural network/"
        "convolution_neural_network_train.svg")
CE = "ID_1eQnn4969"  # SoftmaxCrossEntropyWithLogits


def run(*args):
    subprocess.run(args, check=True)


def save(path, page, blockflow):
    with open(path, "w") as f:
        json.dump(page, f, indent=2)
    run(blockflow, "fmt", "--in-place", path)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    blockflow = argv[2] if len(argv) == 3 else os.path.join(HERE, "..", "..", "build", "blockflow")
    with tempfile.TemporaryDirectory() as tmp:
        imported = os.path.join(tmp, "imported.json")
        run(blockflow, "import", os.path.join(argv[1], PAGE), "-o", imported, "--quiet")
        with open(imported) as f:
            page = json.load(f)
    ce = next(b for b in page["blocks"] if b["id"] == CE)
    page["blocks"].append({"id": "loss", "type": "Sum", "inputs": {"input": CE + ":loss"},
                           "ui": {"x": ce["ui"]["x"] + 160, "y": ce["ui"]["y"] + 120}})
    page["name"] = "cnn_handwired"
    page["description"] = (
        "enuSpace-Tensorflow's MNIST CNN training page (convolution_neural_network_train.svg), "
        "imported by blockflow import: two Conv2D+Relu+MaxPool stages, a MatMul and an Add, "
        "softmax cross-entropy, and its backward pass wired by hand, as the page has it: each "
        "conv+ReLU+max-pool stage differentiated as one stride-2 convolution, dB a batch mean "
        "where dW3 is a batch sum. `loss` (the batch sum of the cross-entropy) is the one block "
        "added: blockflow gradcheck cnn_handwired.json --loss loss measures how far that "
        "backward pass is from the true gradient. The page's .dat is not in its repository, so "
        "the weights start from glorot_uniform. Data: dataset/*.idx (scikit-learn's digits in "
        "MNIST's format, examples/data/make_mnist_idx.py).")
    save(os.path.join(HERE, "cnn_handwired.json"), page, blockflow)

    # the forward pass: drop the ApplyGradientDescent blocks and what only they need
    blocks = {b["id"]: b for b in page["blocks"]}
    keep_roots = ["loss", "ID_1eQnn4891"] + [b["id"] for b in page["blocks"]
                                             if b["type"] == "Assign"]
    keep, todo = set(), list(keep_roots)
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        keep.add(i)
        for src in blocks[i].get("inputs", {}).values():
            todo.append(src.split(":")[0])
    fwd = dict(page, blocks=[b for b in page["blocks"] if b["id"] in keep],
               outputs=["loss", "ID_1eQnn4891"], name="cnn_grad")
    fwd["description"] = (
        "The forward pass of enuSpace's MNIST CNN training page (see cnn_handwired.json) with "
        "the true backward pass, built by `blockflow grad --loss loss --optimizer sgd:0.0001` "
        "(the page's learning rate) in place of the page's hand-wired one: ReluGrad and "
        "MaxPoolGrad where the page had none, and dB the batch sum the loss gives.")
    forward = os.path.join(HERE, "cnn_grad.json")
    save(forward, fwd, blockflow)
    run(blockflow, "grad", forward, "--loss", "loss", "--optimizer", "sgd:0.0001", "--in-place",
        "--quiet")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
