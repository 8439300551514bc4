"""Training from Python: Page.step, train, variables, reset, save_state/load_state,
build_gradients and check_gradients (python/blockflow/_train.py).

The page is the smallest one that trains: a Const input x, a Variable filter w, a Conv2D and
an Identity "loss" (a non-scalar loss means its sum, as in tf.gradients). The loss is linear
in w, so its gradient G = d sum(conv(x, w)) / dw does not change from step to step: it is the
filter gradient of a dy of ones, computed below in float64 numpy from the definition of the
convolution, and k steps of each optimizer have a closed form checked against the Variable
values the page commits.
"""
import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import blockflow

LR = 0.05


def same_pads(size, k, stride):
    """TensorFlow's SAME padding: (output size, padding before)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return out, total // 2


def sum_conv_grad(x, kh, kw, cout, stride, padding):
    """G[i, j, c, o] = d/dw[i, j, c, o] of sum over (n, oh, ow, o) of conv2d(x, w): the sum of
    the input taps that filter element (i, j, c) multiplies, over every output position."""
    n, h, w, cin = x.shape
    if padding == "SAME":
        (oh, ph), (ow, pw) = same_pads(h, kh, stride), same_pads(w, kw, stride)
    else:
        oh, ph = (h - kh) // stride + 1, 0
        ow, pw = (w - kw) // stride + 1, 0
    g = np.zeros((kh, kw, cin, cout))
    for i in range(kh):
        for j in range(kw):
            for y in range(oh):
                for z in range(ow):
                    r, c = y * stride + i - ph, z * stride + j - pw
                    if 0 <= r < h and 0 <= c < w:
                        g[i, j, :, :] += x[:, r, c, :].sum(axis=0)[:, None]
    return g


def conv_loss_page(dtype="float64", padding="SAME", stride=1, seed=3):
    """(page, x, w0): x [2, 5, 6, 2] -> conv with w [3, 3, 2, 3] -> Identity "loss"."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, 6, 2))
    w0 = rng.standard_normal((3, 3, 2, 3)).astype(dtype)
    page = {"format": "blockflow.page", "version": 1, "name": "train", "blocks": [
        {"id": "x", "type": "Const", "attrs": {"dtype": dtype, "shape": list(x.shape),
                                               "value": x.ravel().tolist()}},
        {"id": "w", "type": "Variable", "attrs": {"dtype": dtype, "shape": list(w0.shape),
                                                  "value": w0.ravel().tolist()}},
        {"id": "conv", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
         "attrs": {"strides": [1, stride, stride, 1], "padding": padding}},
        {"id": "loss", "type": "Identity", "inputs": {"input": "conv"}}], "outputs": ["loss"]}
    return blockflow.loads(json.dumps(page)), x.astype(dtype), w0


def conv_ref(x, w, stride=1, padding="SAME"):
    """conv2d(x, w) in float64 from the definition (NHWC, HWIO)."""
    n, h, wd, _ = x.shape
    kh, kw, _, cout = w.shape
    (oh, ph), (ow, pw) = same_pads(h, kh, stride), same_pads(wd, kw, stride)
    xp = np.zeros((n, h + kh, wd + kw, x.shape[3]))
    xp[:, ph:ph + h, pw:pw + wd, :] = x
    out = np.zeros((n, oh, ow, cout))
    for y in range(oh):
        for z in range(ow):
            patch = xp[:, y * stride:y * stride + kh, z * stride:z * stride + kw, :]
            out[:, y, z, :] = np.einsum("nijc,ijco->no", patch, w.astype(np.float64))
    return out


TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5)}


@pytest.mark.parametrize("dtype,padding,stride", [("float64", "SAME", 1),
                                                  ("float32", "SAME", 2),
                                                  ("float64", "VALID", 1)])
def test_sgd_steps_match_numpy(dtype, padding, stride):
    page, x, w0 = conv_loss_page(dtype, padding, stride)
    made = page.build_gradients("loss", optimizer=f"sgd:{LR}")
    assert made["loss"] == "loss"
    assert set(made["gradients"]) == {"w"} and set(made["updates"]) == {"w"}
    assert set(made["blocks"]) <= {b["id"] for b in page.blocks}
    g = sum_conv_grad(x.astype(np.float64), 3, 3, 3, stride, padding)
    assert page.step_count == 0

    out = page.step()
    assert list(out) == ["loss"] and out["loss"].dtype == np.dtype(dtype)
    if padding == "SAME":  # the loss a step reports is computed from the start-of-step w
        np.testing.assert_allclose(out["loss"], conv_ref(x, w0, stride), **TOL[dtype])
    assert page.step_count == 1
    np.testing.assert_allclose(page.variables()["w"], w0 - LR * g, **TOL[dtype])

    out = page.step(3, fetches=["conv", made["gradients"]["w"]])
    assert list(out) == ["conv", made["gradients"]["w"]]
    np.testing.assert_allclose(out[made["gradients"]["w"]], g, **TOL[dtype])
    assert page.step_count == 4
    w = page.variables()["w"]
    assert w.dtype == np.dtype(dtype) and w.shape == w0.shape
    np.testing.assert_allclose(w, w0 - 4 * LR * g, **TOL[dtype])
    assert page.step(fetches=[]) == {} and page.step_count == 5


@pytest.mark.parametrize("optimizer", ["momentum:0.05", "momentum:0.05:0.5", "adam:0.05",
                                       "adam:0.05:0.8:0.9:1e-4"])
def test_momentum_and_adam_match_numpy(optimizer):
    page, x, w0 = conv_loss_page()
    made = page.build_gradients("loss", "w", optimizer)
    g = sum_conv_grad(x, 3, 3, 3, 1, "SAME")
    page.step(4)
    name, *args = optimizer.split(":")
    args = [float(a) for a in args]
    w, acc, m, v = w0.copy(), np.zeros_like(g), np.zeros_like(g), np.zeros_like(g)
    for t in range(1, 5):
        if name == "momentum":  # ApplyMomentum: accum = accum * momentum + grad
            lr, mom = args[0], (args[1] if len(args) > 1 else 0.9)
            acc = acc * mom + g
            w = w - lr * acc
        else:  # ApplyAdam with the beta powers of step t
            lr, b1, b2, eps = args if len(args) == 4 else (args[0], 0.9, 0.999, 1e-8)
            lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            w = w - lr_t * m / (np.sqrt(v) + eps)
    variables = page.variables()
    np.testing.assert_allclose(variables["w"], w, rtol=1e-11, atol=1e-11)
    assert list(variables)[0] == "w" and len(variables) > 1  # the slots are Variables too
    assert set(made["updates"]) == {"w"}


def test_train_callback_history_and_early_stop():
    page, x, w0 = conv_loss_page()
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    g = sum_conv_grad(x, 3, 3, 3, 1, "SAME")
    seen = []

    def callback(step, metrics):
        seen.append((step, dict(metrics)))
        # reading the page from the callback is allowed, and sees the committed step
        np.testing.assert_allclose(page.variables()["w"], w0 - step * LR * g, rtol=1e-12)
        assert page.step_count == step
        return step == 3

    history = page.train(steps=10, callback=callback)
    assert isinstance(history, blockflow.History) and page.history is history
    assert [s for s, _ in seen] == [1, 2, 3] and history.steps == [1, 2, 3]
    assert page.step_count == 3
    assert list(history) == ["loss"] and len(history["loss"]) == 3
    for k, (step, metrics) in enumerate(seen):
        assert list(metrics) == ["loss"]
        # a metric is the fetched tensor's first element, from the start-of-step w
        want = conv_ref(x, w0 - k * LR * g)[0, 0, 0, 0]
        assert metrics["loss"] == pytest.approx(want, rel=1e-12)
        assert history["loss"][k] == metrics["loss"]

    # no callback: every step recorded; steps count on from the session's count
    history = page.train(steps=4, metrics=["conv:output", "w"])
    assert history.steps == [4, 5, 6, 7] and list(history) == ["conv:output", "w"]
    assert history["w"] == pytest.approx([(w0 - k * LR * g).flat[0] for k in (3, 4, 5, 6)])
    assert page.step_count == 7
    assert "History" in repr(history)


def test_train_arguments_and_callback_errors():
    page, _, _ = conv_loss_page()
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    with pytest.raises(TypeError):
        page.train()
    with pytest.raises(TypeError):
        page.train(steps=2, callback=5)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(blockflow.InvalidArgumentError) as e:
            page.train(steps=bad)
        assert e.value.code == "bad_count"
        with pytest.raises(blockflow.InvalidArgumentError):
            page.step(bad)
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.train(epochs=1)  # no dataset on this page
    assert e.value.code == "no_dataset"
    with pytest.raises(blockflow.InvalidArgumentError):
        page.step(device="tpu")
    assert page.step_count == 0

    # an exception in the callback stops after that (committed) step and comes out of train
    def boom(step, metrics):
        if step == 2:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        page.train(steps=10, callback=boom)
    assert page.step_count == 2 and page.history.steps == [1, 2]

    # the callback may read but not run, edit or reset the page
    for act in (lambda: page.run(), lambda: page.step(), lambda: page.reset(),
                lambda: page.set_attr("conv", "padding", "VALID"), lambda: page.close(),
                lambda: page.set_variable("w", page.variables()["w"])):
        def callback(step, metrics, act=act):
            act()

        with pytest.raises(blockflow.InvalidArgumentError) as e:
            page.train(steps=3, callback=callback)
        assert e.value.code == "busy"
    assert page.step_count == 2 + 6  # each stopped after its first step
    # and the page works as before afterwards
    page.step()
    assert page.step_count == 9 and page.run()["loss"].shape == (2, 5, 6, 3)

    # a metric that names nothing fails the first step, which commits nothing
    with pytest.raises(blockflow.NotFoundError):
        page.train(steps=2, metrics=["nope"])
    assert page.step_count == 9


def test_train_from_another_thread():
    """Off the main thread the loop runs in the calling thread, the callback too."""
    page, _, _ = conv_loss_page()
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    result, threads = {}, []

    def work():
        result["h"] = page.train(steps=3, callback=lambda s, m: threads.append(
            threading.current_thread()))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert result["h"].steps == [1, 2, 3] and threads == [t] * 3


def consistent(page, x, w0):
    """The Variable equals the closed form for the committed step count: nothing half done."""
    g = sum_conv_grad(x, 3, 3, 3, 1, "SAME")
    np.testing.assert_allclose(page.variables()["w"], w0 - page.step_count * LR * g,
                               rtol=1e-11, atol=1e-11)


def interrupt_soon(delay):
    """Ctrl-C as the terminal sends it: SIGINT to this process, from another thread."""
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="SIGINT is not Python's KeyboardInterrupt here")
def test_ctrl_c_cancels_at_a_step_boundary():
    page, x, w0 = conv_loss_page()
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    # while the C loop runs (no Python callback)
    timer = interrupt_soon(0.3)
    with pytest.raises(KeyboardInterrupt):
        page.step(10 ** 9)
    timer.join()
    assert page.step_count > 0
    consistent(page, x, w0)
    # while a train() with a callback runs: the signal lands in the loop or in the callback
    start = page.step_count
    timers = []
    with pytest.raises(KeyboardInterrupt):
        page.train(steps=10 ** 9, callback=lambda step, m: step == start + 2 and
                   timers.append(interrupt_soon(0.2)))
    for timer in timers:
        timer.join()
    assert page.step_count > start + 2
    assert page.history.steps == list(range(start + 1, page.step_count + 1))
    consistent(page, x, w0)
    # a KeyboardInterrupt raised by the callback itself stops the same way
    start = page.step_count

    def stop_at_2(step, metrics):
        if step == start + 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        page.train(steps=10, callback=stop_at_2)
    assert page.step_count == start + 2
    consistent(page, x, w0)
    # the page goes on working
    page.step(2)
    consistent(page, x, w0)


def test_variables_are_copies_and_set_variable():
    page, x, w0 = conv_loss_page()
    v = page.variables()
    assert list(v) == ["w"] and list(page.state()) == ["w"]
    np.testing.assert_array_equal(v["w"], w0)
    v["w"][...] = 7
    np.testing.assert_array_equal(page.variables()["w"], w0)
    page.run()  # computes with the old w, and caches the conv
    w1 = np.arange(w0.size, dtype=np.float64).reshape(w0.shape) / 10
    page.set_variable("w", w1)
    w1[...] = 0  # the value was copied in
    np.testing.assert_allclose(page.variables()["w"], np.arange(w0.size).reshape(w0.shape) / 10)
    np.testing.assert_allclose(page.run()["loss"],  # the conv was recomputed
                               conv_ref(x, np.arange(w0.size).reshape(w0.shape) / 10),
                               rtol=1e-12, atol=1e-12)
    page.set_variable("w", w0.astype(np.float32))  # a same-kind dtype is converted
    assert page.variables()["w"].dtype == np.float64
    np.testing.assert_allclose(page.variables()["w"], w0, rtol=1e-7)
    page.set_variable("w", np.ones(w0.shape, np.int32))
    np.testing.assert_array_equal(page.variables()["w"], 1)

    with pytest.raises(blockflow.NotFoundError) as e:
        page.set_variable("nope", w0)
    assert e.value.block == "nope" and "nope" in str(e.value)
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.set_variable("conv", w0)
    assert e.value.block == "conv" and e.value.code == "no_state"
    with pytest.raises(blockflow.ShapeError) as e:
        page.set_variable("w", np.zeros(3))
    assert e.value.block == "w"
    with pytest.raises(blockflow.DtypeError):
        page.set_variable("w", np.zeros(w0.shape, np.complex128))
    np.testing.assert_array_equal(page.variables()["w"], 1)  # unchanged by the failures


def test_reset_restores_the_initial_values():
    page, x, w0 = conv_loss_page()
    page.build_gradients("loss", optimizer="momentum:0.05")
    first = page.step()["loss"]
    initial = {k: v for k, v in page.variables().items() if k != "w"}
    page.step(3)
    assert page.step_count == 4
    assert not np.array_equal(page.variables()["w"], w0)
    page.reset()
    assert page.step_count == 0
    v = page.variables()
    np.testing.assert_array_equal(v["w"], w0)
    for k, slot in initial.items():  # the slots are zeros again
        np.testing.assert_array_equal(v[k], np.zeros_like(slot))
    np.testing.assert_array_equal(page.step()["loss"], first)  # the same first step again
    assert page.step_count == 1


def test_random_initializer_is_the_same_after_reset():
    page = blockflow.loads(json.dumps({
        "format": "blockflow.page", "version": 1, "name": "init", "blocks": [
            {"id": "w", "type": "Variable", "attrs": {"shape": [3, 3, 1, 4],
                                                      "initializer": "glorot_uniform"}}],
        "outputs": ["w"]}))
    w = page.variables()["w"]
    assert w.dtype == np.float32 and np.abs(w).max() <= np.sqrt(6 / (9 + 36))
    assert np.unique(w).size == w.size
    page.set_variable("w", np.zeros_like(w))
    page.reset()
    np.testing.assert_array_equal(page.variables()["w"], w)


def test_save_and_load_state(tmp_path):
    page, x, w0 = conv_loss_page()
    page.build_gradients("loss", optimizer="adam:0.05")
    page.step(2)
    saved = page.state()
    path = tmp_path / "ckpt.npz"
    assert page.save_state(path) == str(path)
    with np.load(path) as f:  # numpy reads it: one array per stateful block, and ".step"
        assert set(f.files) == set(saved) | {".step"}
        assert f[".step"].dtype == np.int64 and f[".step"].shape == () and f[".step"] == 2
        for k, v in saved.items():
            np.testing.assert_array_equal(f[k], v)
    page.step(3)
    assert page.step_count == 5
    page.load_state(str(path))
    assert page.step_count == 2
    for k, v in page.state().items():
        np.testing.assert_array_equal(v, saved[k])
    # and training goes on as if it had never stopped
    after = page.step(3)
    other, _, _ = conv_loss_page()
    other.build_gradients("loss", optimizer="adam:0.05")
    other.step(2)
    np.testing.assert_array_equal(after["loss"], other.step(3)["loss"])
    np.testing.assert_array_equal(page.variables()["w"], other.variables()["w"])

    # a numpy-written archive with some of the keys: the others keep their state
    part = tmp_path / "part.npz"
    np.savez(part, w=w0)
    page.load_state(part)
    np.testing.assert_array_equal(page.variables()["w"], w0)
    assert page.step_count == 5

    # errors, all changing nothing
    before = page.state()
    np.savez(tmp_path / "bad_key.npz", w=w0, nope=w0)
    with pytest.raises(blockflow.NotFoundError) as e:
        page.load_state(tmp_path / "bad_key.npz")
    assert "nope" in str(e.value)
    np.savez(tmp_path / "bad_shape.npz", w=w0[:2])
    with pytest.raises(blockflow.ShapeError):
        page.load_state(tmp_path / "bad_shape.npz")
    np.savez(tmp_path / "bad_dtype.npz", w=w0.astype(np.float32))
    with pytest.raises(blockflow.DtypeError):
        page.load_state(tmp_path / "bad_dtype.npz")
    with pytest.raises(blockflow.IoError):
        page.load_state(tmp_path / "missing.npz")
    with pytest.raises(blockflow.IoError):
        page.save_state(tmp_path / "no_such_folder" / "x.npz")
    assert page.step_count == 5
    for k, v in page.state().items():
        np.testing.assert_array_equal(v, before[k])


def test_check_gradients():
    page, _, _ = conv_loss_page()
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        page.check_gradients("loss")  # no update block yet
    assert e.value.code == "no_update"
    made = page.build_gradients("loss", optimizer="sgd:0.1")
    j = page.check_gradients("loss")
    assert j["pass"] is True and j["loss"] == "loss"
    (rec,) = j["variables"]
    assert rec["variable"] == "w" and rec["gradient"] == made["gradients"]["w"]
    assert rec["update"] == made["updates"]["w"]
    assert rec["n_elements"] == 54 and rec["n_checked"] == 54 and rec["pass"]
    j = page.check_gradients("loss", samples=5, full_below=1, seed=3, tolerance=1e-4)
    assert j["variables"][0]["n_checked"] == 5 and j["tolerance"] == 1e-4
    assert page.step_count == 0  # nothing committed
    # a wrong gradient wired by hand fails the check (a result, not an exception)
    page.connect(made["updates"]["w"], "delta", "w")
    j = page.check_gradients("loss")
    assert j["pass"] is False and j["variables"][0]["max_rel_error"] > 1e-3
    with pytest.raises(blockflow.NotFoundError) as e:
        page.check_gradients("nope")
    assert e.value.block == "nope"
    with pytest.raises(blockflow.InvalidArgumentError):
        page.check_gradients("loss", eps=0)


def test_build_gradients_errors_change_nothing():
    page, _, _ = conv_loss_page()
    before = page.to_json()
    with pytest.raises(blockflow.NotFoundError) as e:
        page.build_gradients("nope", optimizer="sgd:0.1")
    assert e.value.block == "nope"
    with pytest.raises(blockflow.NotFoundError) as e:
        page.build_gradients("loss", wrt=["w", "nope"], optimizer="sgd:0.1")
    assert e.value.block == "nope" and e.value.problems[0].block == "nope"
    with pytest.raises(LookupError):  # NotFoundError is a LookupError
        page.build_gradients("loss", wrt="nope")
    for text in ("rmsprop:0.1", "sgd", "sgd:", "sgd:-1", "sgd:x", "momentum:0.1:0.9:3",
                 "adam:0.1:0.9"):
        with pytest.raises(blockflow.InvalidArgumentError) as e:
            page.build_gradients("loss", optimizer=text)
        assert e.value.code == "bad_optimizer" and text in e.value.message
    with pytest.raises(blockflow.Error) as e:
        page.build_gradients("x")  # a loss that depends on no Variable
    assert page.to_json() == before
    # gradients without an optimizer: no update block, so a step changes nothing
    made = page.build_gradients("loss")
    assert made["updates"] == {} and set(made["gradients"]) == {"w"}
    w = page.variables()["w"]
    page.step(2)
    np.testing.assert_array_equal(page.variables()["w"], w)


def test_dataset_epochs_and_cursor(tmp_path):
    """train(epochs=N) follows the page's Dataset: 12 samples in batches of 4 are 3 steps an
    epoch; the cursor is state (state(), save_state) but not a Variable."""
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((12, 5, 6, 2))
    np.save(tmp_path / "x.npy", xs)
    w0 = rng.standard_normal((3, 3, 2, 3))
    page = blockflow.loads(json.dumps({
        "format": "blockflow.page", "version": 1, "name": "data", "blocks": [
            {"id": "data", "type": "Dataset", "attrs": {"file": "x.npy", "batch_size": 4}},
            {"id": "w", "type": "Variable", "attrs": {"dtype": "float64", "shape": list(w0.shape),
                                                      "value": w0.ravel().tolist()}},
            {"id": "conv", "type": "Conv2D", "inputs": {"input": "data:batch", "filter": "w"},
             "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
            {"id": "loss", "type": "Identity", "inputs": {"input": "conv"}}],
        "outputs": ["loss"]}), dir=tmp_path)
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    assert list(page.variables()) == ["w"] and list(page.state()) == ["data", "w"]
    np.testing.assert_array_equal(page.state()["data"], [0, 0])

    metrics = ["loss", "data:epoch", "data:index"]
    h = page.train(epochs=1, metrics=metrics)
    assert h.steps == [1, 2, 3] and h["data:index"] == [0, 1, 2] and h["data:epoch"] == [0] * 3
    np.testing.assert_array_equal(page.state()["data"], [1, 0])
    # one epoch of a loss linear in w: the gradients of the three batches add up to all of xs's
    g = sum_conv_grad(xs, 3, 3, 3, 1, "SAME")
    np.testing.assert_allclose(page.variables()["w"], w0 - LR * g, rtol=1e-12, atol=1e-12)

    h = page.train(epochs=5, steps=4, metrics=metrics)  # steps come first here
    assert h.steps == [4, 5, 6, 7] and h["data:index"] == [0, 1, 2, 0]
    np.testing.assert_array_equal(page.state()["data"], [2, 1])
    h = page.train(epochs=1, metrics=metrics)  # from mid-epoch: the rest of it
    assert h.steps == [8, 9] and h["data:index"] == [1, 2] and h["data:epoch"] == [2, 2]
    saved = page.save_state(tmp_path / "ckpt.npz")
    with np.load(saved) as f:
        np.testing.assert_array_equal(f["data"], [3, 0])
        assert f[".step"] == 9
    page.train(steps=2)
    page.load_state(saved)
    np.testing.assert_array_equal(page.state()["data"], [3, 0])
    page.set_variable("data", [0, 2])  # the cursor can be moved like a Variable
    assert page.step(fetches=["data:epoch", "data:index"]) == {"data:epoch": 0,
                                                               "data:index": 2}
    page.reset()
    np.testing.assert_array_equal(page.state()["data"], [0, 0])

    # a dataset no step reads never finishes an epoch: the first step says so
    idle = blockflow.loads(json.dumps({
        "format": "blockflow.page", "version": 1, "name": "idle", "blocks": [
            {"id": "data", "type": "Dataset", "attrs": {"file": "x.npy", "batch_size": 4}},
            {"id": "c", "type": "Const", "attrs": {"value": 1.0}},
            {"id": "out", "type": "Identity", "inputs": {"input": "c"}}],
        "outputs": ["out"]}), dir=tmp_path)
    with pytest.raises(blockflow.InvalidArgumentError) as e:
        idle.train(epochs=1, steps=50)  # steps: a bound if the check ever goes
    assert e.value.code == "dataset_idle" and e.value.block == "data"
    assert idle.step_count == 1 and idle.history.steps == [1]


def test_train_filter_example(root):
    """examples/python/train_filter.py runs as a script and learns the Sobel filter."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(root / "examples/python/train_filter.py")],
                          env=env, capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "gradient check passed: True" in out
    assert "step  30  loss" in out and "Sobel recovered: True" in out
    assert "after reset: 0 steps" in out and "restored: 30 steps" in out


def test_feeds_for_steps():
    """A Placeholder input: feeds= of step() and train() hold for every step they run."""
    rng = np.random.default_rng(8)
    w0 = rng.standard_normal((3, 3, 2, 3))
    page = blockflow.loads(json.dumps({
        "format": "blockflow.page", "version": 1, "name": "fed", "blocks": [
            {"id": "x", "type": "Placeholder", "attrs": {"dtype": "float64",
                                                         "shape": [2, 5, 6, 2]}},
            {"id": "w", "type": "Variable", "attrs": {"dtype": "float64", "shape": list(w0.shape),
                                                      "value": w0.ravel().tolist()}},
            {"id": "conv", "type": "Conv2D", "inputs": {"input": "x", "filter": "w"},
             "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}},
            {"id": "loss", "type": "Identity", "inputs": {"input": "conv"}}],
        "outputs": ["loss"]}))
    page.build_gradients("loss", optimizer=f"sgd:{LR}")
    x1, x2 = rng.standard_normal((2, 2, 5, 6, 2))
    np.testing.assert_allclose(page.step(feeds={"x": x1})["loss"], conv_ref(x1, w0),
                               rtol=1e-12, atol=1e-12)
    page.train(steps=2, feeds={"x": x2})
    want = w0 - LR * sum_conv_grad(x1, 3, 3, 3, 1, "SAME") \
        - 2 * LR * sum_conv_grad(x2, 3, 3, 3, 1, "SAME")
    np.testing.assert_allclose(page.variables()["w"], want, rtol=1e-12, atol=1e-12)
    with pytest.raises(blockflow.DtypeError):
        page.step(feeds={"x": x1 > 0})  # bool: no dtype of the library
    assert page.step_count == 3


def test_one_process_job_and_data_parallel_build():
    """In one process the job is rank 0 of 1; a data-parallel build adds an AllReduce (mean)
    per Variable gradient, the identity here, so training gives the same numbers as without."""
    assert blockflow.rank() == 0 and blockflow.size() == 1
    assert blockflow.job() == "one process"
    page, x, w0 = conv_loss_page()
    plain, _, _ = conv_loss_page()
    made = page.build_gradients("loss", optimizer="sgd:0.01", data_parallel=True)
    plain.build_gradients("loss", optimizer="sgd:0.01")
    assert made["all_reduce"] == {"w": "w_grad_allreduce"}
    doc = json.loads(page.to_json())
    ar = [b for b in doc["blocks"] if b["type"] == "AllReduce"]
    assert len(ar) == 1 and ar[0]["attrs"] == {"op": "mean", "ranks": 1}
    page.train(steps=3)
    plain.train(steps=3)
    np.testing.assert_array_equal(page.variables()["w"], plain.variables()["w"])
    with pytest.raises(blockflow.InvalidArgumentError) as e:  # built for 2: refused here
        other, _, _ = conv_loss_page()
        other.build_gradients("loss", optimizer="sgd:0.01", data_parallel=True, ranks=2)
        other.step()
    assert e.value.code == "wrong_rank_count"
