"""TVM's dlight default GPU schedules run through vkir (vkir.from_tvm), vkir's own rules
(vkir.tvm.rules, what `tvm.compile(mod, "vulkan")` schedules with after `vkir.tvm.install()`)
and vkir.ops on the same shapes and device: wall and CPU time per call on device arrays
(medians), every result checked against numpy first.

    python -m benchmarks.tvm_dlight [--repeat N]

Needs the `vkir[tvm]` extra (apache-tvm 0.27).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def cases():
    """name -> (TE function, input shapes, output shape, vkir.ops call, numpy reference)."""
    from tvm import te, topi

    import vkir

    def matmul(n):
        A = te.placeholder((n, n), "float32", name="A")
        B = te.placeholder((n, n), "float32", name="B")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return (te.create_prim_func([A, B, C]), [(n, n), (n, n)], (n, n),
                lambda a, b: vkir.ops.matmul(a, b), lambda a, b: a @ b)

    X = te.placeholder((1024, 1024), "float32", name="X")

    def softmax_ref(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    G = te.placeholder((1024,), "float32", name="G")
    Bt = te.placeholder((1024,), "float32", name="Bt")

    def ln_ref(x, g, b):
        return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b

    def conv(c, h, o, k, stride, pad):
        Xc = te.placeholder((1, c, h, h), "float32", name="X")
        Wc = te.placeholder((o, c, k, k), "float32", name="W")
        n = (h + 2 * pad - k) // stride + 1

        def ref(x, w):
            from benchmarks.conv_dlight import numpy_conv

            return numpy_conv(x, w, stride, pad)
        return (te.create_prim_func([Xc, Wc, topi.nn.conv2d_nchw(Xc, Wc, stride, pad, 1)]),
                [(1, c, h, h), (o, c, k, k)], (1, o, n, n),
                lambda x, w: vkir.ops.conv2d(x, w, stride=stride, padding=pad), ref)

    def dense(m, k, n):   # nn.Linear: x @ W^T
        A = te.placeholder((m, k), "float32", name="A")
        W = te.placeholder((n, k), "float32", name="W")
        r = te.reduce_axis((0, k), name="k")
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * W[j, r], axis=r), name="C")
        return (te.create_prim_func([A, W, C]), [(m, k), (n, k)], (m, n),
                lambda a, w: vkir.ops.matmul(a, vkir.array(w.numpy().T.copy(), device=a.device)),
                lambda a, w: a @ w.T)

    return {
        "conv 64x56x56 3x3": conv(64, 56, 64, 3, 1, 1),
        "conv 3x224x224 7x7 s2": conv(3, 224, 64, 7, 2, 3),
        "conv 16x128x128 3x3": conv(16, 128, 16, 3, 1, 1),
        "dense 196x256->1024": dense(196, 256, 1024),
        "matmul 1024^3": matmul(1024),
        "softmax 1024x1024": (te.create_prim_func([X, topi.nn.softmax(X)]),
                              [(1024, 1024)], (1024, 1024),
                              lambda x: vkir.ops.softmax(x, axis=-1), softmax_ref),
        "layer_norm 1024x1024": (
            te.create_prim_func([X, G, Bt, topi.nn.layer_norm(X, G, Bt, axis=[1],
                                                              epsilon=1e-5)]),
            [(1024, 1024), (1024,), (1024,)], (1024, 1024),
            lambda x, g, b: vkir.ops.layer_norm(x, g, b, eps=1e-5), ln_ref),
    }


def _median_wall(fn, repeat: int) -> tuple:
    """(median wall s, median CPU s of the process) of `fn` after a warm-up call."""
    fn()
    times, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpus)


def _scheduled(func, dev, rules):
    """`func` scheduled by `rules` (vkir's and TVM's, in order) for `dev`'s target."""
    import tvm
    from tvm.s_tir import dlight as dl

    import vkir

    with vkir.tvm.target(dev):
        return dl.ApplyDefaultSchedule(*rules)(tvm.IRModule({"main": func}))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    import vkir

    dev = vkir.device()
    rng = np.random.default_rng(0)
    print(f"device: {dev.info.name}")
    from vkir.tvm.rules import default_rules

    print(f"{'kernel':24} {'dlight ms':>10} {'rules ms':>9} {'ops ms':>9} {'dlight cpu':>10} "
          f"{'rules cpu':>9} {'ops cpu':>9} {'dlight/rules':>12}")
    for name, (func, shapes, out_shape, op, ref) in cases().items():
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want = ref(*[x.astype(np.float64) for x in inputs])
        d_in = [vkir.array(x, device=dev) for x in inputs]
        d_out = vkir.empty(out_shape, "float32", device=dev)
        times = {}
        for label, mod in (("dlight", vkir.tvm.dlight(func, dev)),
                           ("rules", _scheduled(func, dev, default_rules(dev.info)))):
            kernel = vkir.build(vkir.from_tvm(mod, device=dev), device=dev)
            kernel(*d_in, d_out)
            np.testing.assert_allclose(d_out.numpy(), want, rtol=2e-3, atol=2e-3,
                                       err_msg=f"{label} {name}")
            times[label] = _median_wall(lambda: kernel(*d_in, d_out) or d_out.numpy(),
                                        args.repeat)
        np.testing.assert_allclose(np.asarray(op(*d_in).numpy()), want, rtol=2e-3, atol=2e-3)
        times["ops"] = _median_wall(lambda: op(*d_in).numpy(), args.repeat)
        (dw, dc), (rw, rc), (ow, oc) = times["dlight"], times["rules"], times["ops"]
        print(f"{name:24} {dw * 1e3:10.2f} {rw * 1e3:9.2f} {ow * 1e3:9.2f} {dc * 1e3:10.2f} "
              f"{rc * 1e3:9.2f} {oc * 1e3:9.2f} {dc / rc:12.2f}", flush=True)


if __name__ == "__main__":
    main()
