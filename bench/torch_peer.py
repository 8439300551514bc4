#!/usr/bin/env python3
"""torch_peer.py - the PyTorch comparator for `blockflow bench` (benchmark only).

Run as `/usr/bin/python3 bench/torch_peer.py THREADS`. Speaks the text protocol described in
bench/bench.c: prints "ready PyTorch <version>", then answers each "conv ..." request line with
"ok <count> <ms>..." or "err <message>". The request's trailing dtype token (f32 or f64; an
older request without it is f32) picks torch.float32 or torch.float64 tensors.

Each timed call starts from the NHWC activations / HWIO filter a TensorFlow user holds and ends
with the NHWC / HWIO result, so every layout conversion is counted: activations enter as
channels_last views (free), the HWIO filter is permuted to OIHW (torch copies it), asymmetric
TF SAME padding is an explicit F.pad, and gradients are permuted back and made contiguous.
Backprops use aten.convolution_backward, as autograd does.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

# blockflow bench --clock cpu sets BF_BENCH_CLOCK=cpu: time each call in process CPU time
CPU_CLOCK = os.environ.get("BF_BENCH_CLOCK") == "cpu"


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    print("ready PyTorch %s" % torch.__version__, flush=True)
    key, state = None, None
    for line in sys.stdin:
        f = line.split()
        if len(f) not in (22, 23) or f[0] != "conv" or (len(f) == 23 and
                                                        f[22] not in ("f32", "f64")):
            print("err bad request", flush=True)
            continue
        dtype = torch.float64 if len(f) == 23 and f[22] == "f64" else torch.float32
        try:
            k = tuple(int(v) for v in f[1:21]) + (dtype,)
            secs = float(f[21])
        except ValueError:
            print("err bad request", flush=True)
            continue
        try:
            if k != key:
                state = setup(k)
                key = k
                state()  # warm-up
            times = []
            t0 = time.perf_counter()
            while len(times) < 512:
                a, ca = time.perf_counter(), time.process_time()
                state()
                b, cb = time.perf_counter(), time.process_time()
                # $BF_BENCH_CLOCK=cpu (blockflow bench --clock cpu): process CPU time
                times.append(((cb - ca) if CPU_CLOCK else (b - a)) * 1e3)
                if b - t0 >= secs:
                    break
            print("ok %d %s" % (len(times), " ".join("%.6f" % t for t in times)), flush=True)
        except Exception as e:  # report, keep serving
            key = None
            print("err %s" % str(e).replace("\n", " ")[:200], flush=True)


def setup(k):
    op, n, h, w, c, kh, kw, cg, o, oh, ow, sh, sw, dh, dw, pt, pb, pl, pr, g, dt = k
    torch.manual_seed(0)
    x = torch.rand(n, h, w, c, dtype=dt) - 0.5            # NHWC
    wt = torch.rand(kh, kw, cg, o, dtype=dt) - 0.5        # HWIO
    dy = torch.rand(n, oh, ow, o, dtype=dt) - 0.5         # NHWC
    sym = pt == pb and pl == pr
    pad = (pt, pl) if sym else (0, 0)
    hp, wp = h + pt + pb, w + pl + pr
    shape_only = torch.empty(n, c, h if sym else hp, w if sym else wp, dtype=dt).contiguous(
        memory_format=torch.channels_last)
    stride, dil = (sh, sw), (dh, dw)
    conv_bwd = torch.ops.aten.convolution_backward

    def x_in():
        xt = x.permute(0, 3, 1, 2)               # channels_last view, no copy
        return xt if sym else F.pad(xt, (pl, pr, pt, pb))

    def w_in():
        return wt.permute(3, 2, 0, 1).contiguous()  # HWIO -> OIHW

    @torch.no_grad()
    def fwd():
        y = F.conv2d(x_in(), w_in(), None, stride, pad, dil, g)
        return y.permute(0, 2, 3, 1).contiguous()

    @torch.no_grad()
    def bwd_filter():
        dyt = dy.permute(0, 3, 1, 2)
        gw = conv_bwd(dyt, x_in(), w_in(), None, stride, pad, dil, False, [0, 0], g,
                      [False, True, False])[1]
        return gw.permute(2, 3, 1, 0).contiguous()  # OIHW -> HWIO

    @torch.no_grad()
    def bwd_input():
        dyt = dy.permute(0, 3, 1, 2)
        gx = conv_bwd(dyt, shape_only, w_in(), None, stride, pad, dil, False, [0, 0], g,
                      [True, False, False])[0]
        if not sym:
            gx = gx[:, :, pt:pt + h, pl:pl + w]
        return gx.permute(0, 2, 3, 1).contiguous()

    return (fwd, bwd_filter, bwd_input)[op]


if __name__ == "__main__":
    main()
