"""The interpreter backend checks and compiles a kernel once, at build: calls only bind the
arguments and run (vkir.interpreter.Prepared)."""

import importlib

import numpy as np

import vkir
from vkir import T

# the module that holds interpret() and the run helpers the test counts
interp_module = importlib.import_module("vkir.interpreter.execution")


@T.prim_func
def scale(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"), s: T.float32):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            if i < n:
                b[i] = a[i] * s


def _counting(monkeypatch, name):
    calls = []
    real = getattr(interp_module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(interp_module, name, counted)
    return calls


def test_interp_kernel_compiles_at_build_not_per_call(monkeypatch):
    compiles = _counting(monkeypatch, "_compile")
    checks = _counting(monkeypatch, "verify_types")
    k = vkir.build(scale, device="interp")
    assert len(compiles) == 1 and len(checks) == 1
    a = np.arange(100, dtype=np.float32)
    for s in (2.0, 3.0, 0.5):
        b = np.zeros(100, np.float32)
        k(a, b, s)
        np.testing.assert_array_equal(b, a * np.float32(s))
    b = np.zeros(40, np.float32)
    k(a[:40].copy(), b, 1.5)                         # another size: the same compiled kernel
    np.testing.assert_array_equal(b, a[:40] * np.float32(1.5))
    k.profile(a, np.zeros(100, np.float32), 1.0, repeat=2, warmup=0)
    assert len(compiles) == 1 and len(checks) == 1


def test_interpret_prepares_per_call(monkeypatch):
    """vkir.interpret (no build) checks and compiles on each call, as before."""
    compiles = _counting(monkeypatch, "_compile")
    a = np.ones(8, np.float32)
    b = np.zeros(8, np.float32)
    vkir.interpret(scale, a, b, 2.0)
    vkir.interpret(scale, a, b, 3.0)
    np.testing.assert_array_equal(b, 3.0)
    assert len(compiles) == 2
