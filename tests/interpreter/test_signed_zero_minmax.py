"""T.min/T.max of 0.0 and -0.0 (and NaN) give one documented answer: `a < b or a is NaN ? a : b`
(max: `>`), the interpreter whether one or many invocations run at once, and every device."""

import numpy as np
import pytest

import vkir
from vkir import T


SOURCE = """
@T.prim_func
def minmax(a: T.Buffer((N,), DT), b: T.Buffer((N,), DT), lo: T.Buffer((N,), DT),
           hi: T.Buffer((N,), DT)):
    for i in T.thread_binding(N, "threadIdx.x"):
        lo[i] = T.min(a[i], b[i])
        hi[i] = T.max(a[i], b[i])
"""


def kernel(n, dtype):
    return vkir.from_script(SOURCE, env={"N": n, "DT": dtype})


@T.prim_func
def uniform_minmax(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32"),
                   lo: T.Buffer((4,), "float32"), hi: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        lo[i] = T.min(a[i], b[i])
        hi[i] = T.max(a[i], b[i])


A = [0.0, -0.0, np.nan, 1.0]
B = [-0.0, 0.0, 1.0, np.nan]
LO = [-0.0, 0.0, np.nan, np.nan]   # the second of two equal operands; a NaN wins
HI = [-0.0, 0.0, np.nan, np.nan]


def expect(got, want):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.array(want)))


def arrays(dtype, n=4):
    a = np.resize(np.array(A, dtype), n)
    b = np.resize(np.array(B, dtype), n)
    return a, b, np.zeros(n, dtype), np.zeros(n, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("n", [1, 4, 64])
def test_the_interpreter_gives_one_answer(dtype, n):
    a, b, lo, hi = arrays(dtype, n)
    vkir.interpret(kernel(n, dtype), a, b, lo, hi)
    expect(lo, np.resize(np.array(LO, dtype), n))
    expect(hi, np.resize(np.array(HI, dtype), n))


def test_one_invocation_on_scalars_gives_the_same():
    a, b, lo, hi = arrays("float32")
    vkir.interpret(uniform_minmax, a, b, lo, hi)
    expect(lo, np.array(LO, np.float32))
    expect(hi, np.array(HI, np.float32))


def test_numpy_agrees_for_float32_and_float64():
    for dtype in ("float32", "float64"):
        a, b, _, _ = arrays(dtype)
        expect(np.minimum(a, b), np.array(LO, dtype))
        expect(np.maximum(a, b), np.array(HI, dtype))


@pytest.mark.device
def test_the_device_gives_the_same():
    a, b, lo, hi = arrays("float32", 64)
    vkir.build(kernel(64, "float32"))(a, b, lo, hi)
    expect(lo, np.resize(np.array(LO, np.float32), 64))
    expect(hi, np.resize(np.array(HI, np.float32), 64))
