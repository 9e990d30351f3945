"""vkir kernels through torch: what `vkir.torch.op` costs per call, and a training step three ways.

    python -m vkir.benchmarks.torch_op [--repeat 20] [--elements 20]

Per call, y = x * 2 + 1 over 2^elements float32 (wall seconds, median of `repeat`):

  kernel-device   the kernel called on DeviceArrays
  kernel-torch    the kernel called on torch tensors (their memory imported in place)
  op              the same kernel as `vkir.torch.op` (allocates its output tensor)

A training step of a dense tanh layer, x (1024 x 32) -> y (1024 x 16), mean squared error:
forward and backward to the gradients of w and b (the torch op's adjoint computes only the
gradients torch asks for; vkir.Tape's computes x's too):

  torch.op        the layer as `vkir.torch.op`, the loss and its gradient in torch
  vkir.Tape       the layer kernel on DeviceArrays recorded by a vkir.Tape; the loss's gradient
                  (2 (y - target) / size) made on the host and given as the seed
  torch           torch.tanh(x @ w + b) on the CPU

No result here is asserted to be fast; tests/test_bench_torch_op.py checks that every form
computes the same thing.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from .host_numpy import timed_calls

SCALE = '''
@T.prim_func
def scale_shift(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = x[i] * T.float32(2) + T.float32(1)
'''

DENSE = '''
@T.prim_func
def bench_dense_tanh(x: T.Buffer(("n", "k"), "float32"), w: T.Buffer(("k", "m"), "float32"),
                     b: T.Buffer(("m",), "float32"), y: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(m):
            acc = T.float32(0)
            for p in T.serial(k):
                acc += x[i, p] * w[p, j]
            y[i, j] = T.tanh(acc + b[j])
'''


def _func(vkir, source: str):
    from vkir import T   # noqa: F401 - the script reads T from its environment

    return vkir.from_script(source)


def call_forms(vkir, torch, n: int) -> tuple:
    """({form: zero-argument call}, check): the per-call forms over n elements."""
    func = _func(vkir, SCALE)
    k = vkir.build(func)
    op = vkir.torch.op(func, outputs=("y",))
    x = torch.rand(n)
    y = torch.empty(n)
    xd, yd = vkir.asarray(x.clone()), vkir.empty(n)
    forms = {"kernel-device": lambda: k(xd, yd), "kernel-torch": lambda: k(x, y),
             "op": lambda: op(x)}

    def check():
        expect = x * 2 + 1
        for form in forms.values():
            form()
        assert torch.allclose(y, expect) and torch.allclose(op(x), expect)
        assert np.allclose(yd.numpy(), expect.numpy())
    return forms, check


def step_forms(vkir, torch, n: int = 1024, k: int = 32, m: int = 16) -> tuple:
    """({form: one training step returning (dw, db) as numpy}, the data)."""
    func = _func(vkir, DENSE)
    op = vkir.torch.op(func, outputs=("y",))
    kernel = vkir.build(func)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(n, k, generator=gen) * 2 - 1
    target = torch.rand(n, m, generator=gen) * 2 - 1
    w0 = torch.randn(k, m, generator=gen) / k ** 0.5
    b0 = torch.zeros(m)

    def through_op():
        w, b = w0.clone().requires_grad_(), b0.clone().requires_grad_()
        torch.nn.functional.mse_loss(op(x, w, b), target).backward()
        return w.grad.numpy(), b.grad.numpy()

    xd, wd, bd, td = (vkir.array(t.numpy()) for t in (x, w0, b0, target))

    def through_tape():
        y = vkir.empty((n, m))
        with vkir.Tape() as tape:
            kernel(xd, wd, bd, y)
        seed = 2 * (y.numpy() - td.numpy()) / (n * m)
        tape.backward({y: seed})
        return tape.grad(wd).numpy(), tape.grad(bd).numpy()

    def through_torch():
        w, b = w0.clone().requires_grad_(), b0.clone().requires_grad_()
        torch.nn.functional.mse_loss(torch.tanh(x @ w + b), target).backward()
        return w.grad.numpy(), b.grad.numpy()

    return {"torch.op": through_op, "vkir.Tape": through_tape, "torch": through_torch}


def median(fn, repeat: int) -> float:
    wall, _ = timed_calls(fn, repeat)
    return statistics.median(wall)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--elements", type=int, default=20, help="log2 of the per-call size")
    args = parser.parse_args(argv)
    import torch

    import vkir

    forms, check = call_forms(vkir, torch, 1 << args.elements)
    check()
    print(f"per call, 2^{args.elements} float32 (median wall ms of {args.repeat}):")
    times = {name: median(fn, args.repeat) for name, fn in forms.items()}
    for name, t in times.items():
        print(f"  {name:14s} {t * 1e3:8.3f} ms  ({t / times['kernel-torch']:.2f}x kernel-torch)")
    print("training step, 1024x32 -> 16 tanh layer (median wall ms):")
    steps = step_forms(vkir, torch)
    ref = steps["torch"]()
    for name, fn in steps.items():
        dw, db = fn()
        assert np.allclose(dw, ref[0], atol=1e-4) and np.allclose(db, ref[1], atol=1e-4), name
        print(f"  {name:14s} {median(fn, args.repeat) * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
