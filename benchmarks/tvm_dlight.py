"""TVM's dlight default GPU schedules run through vkir (vkir.from_tvm) against vkir.ops on the same
shapes and device: wall time per call on device arrays (median), both results checked against
numpy first.

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

    return {
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


def _median_wall(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    import vkir

    dev = vkir.device()
    rng = np.random.default_rng(0)
    print(f"device: {dev.info.name}")
    print(f"{'kernel':24} {'dlight ms':>10} {'vkir.ops ms':>12} {'dlight/ops':>11}")
    for name, (func, shapes, out_shape, op, ref) in cases().items():
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want = ref(*[x.astype(np.float64) for x in inputs])
        kernel = vkir.build(vkir.from_tvm(vkir.tvm.dlight(func, dev), device=dev), device=dev)
        d_in = [vkir.array(x, device=dev) for x in inputs]
        d_out = vkir.empty(out_shape, "float32", device=dev)
        kernel(*d_in, d_out)
        np.testing.assert_allclose(d_out.numpy(), want, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(np.asarray(op(*d_in).numpy()), want, rtol=2e-3, atol=2e-3)
        t_dlight = _median_wall(lambda: kernel(*d_in, d_out) or d_out.numpy(), args.repeat)
        t_ops = _median_wall(lambda: op(*d_in).numpy(), args.repeat)
        print(f"{name:24} {t_dlight * 1e3:10.2f} {t_ops * 1e3:12.2f} {t_dlight / t_ops:11.2f}")


if __name__ == "__main__":
    main()
