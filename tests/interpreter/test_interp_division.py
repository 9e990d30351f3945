"""Division and modulo with negative operands: truncating (Div/Mod) as C, floor as numpy."""

import numpy as np
import pytest

from vkir import T
from vkir.interpreter import interpret


@T.prim_func
def int_div(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32"),
            out: T.Buffer((4, 64), "int32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            out[0, i] = T.truncdiv(a[i], b[i])
            out[1, i] = T.truncmod(a[i], b[i])
            out[2, i] = a[i] // b[i]
            out[3, i] = a[i] % b[i]


@T.prim_func
def float_div(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"),
              out: T.Buffer((4, 64), "float32")):
    for i in T.serial(64):
        out[0, i] = a[i] / b[i]
        out[1, i] = a[i] // b[i]
        out[2, i] = a[i] % b[i]
        out[3, i] = T.truncmod(a[i], b[i])


def _operands(dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(-100, 100, 64).astype(dtype)
    b = rng.integers(1, 9, 64).astype(dtype) * rng.choice([-1, 1], 64).astype(dtype)
    a[:4] = [7, -7, 7, -7]
    b[:4] = [2, 2, -2, -2]
    return a, b


def test_int32_negative_division():
    a, b = _operands(np.int32)
    out = np.zeros((4, 64), np.int32)
    interpret(int_div, a, b, out)
    np.testing.assert_array_equal(out[0, :4], [3, -3, -3, 3])
    np.testing.assert_array_equal(out[1, :4], [1, -1, 1, -1])
    np.testing.assert_array_equal(out[0], np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(out[1], np.fmod(a, b))
    np.testing.assert_array_equal(out[2], a // b)
    np.testing.assert_array_equal(out[3], a % b)
    np.testing.assert_array_equal(out[2, :4], [3, -4, -4, 3])
    np.testing.assert_array_equal(out[3, :4], [1, 1, -1, -1])


def test_float32_negative_division():
    a, b = _operands(np.float32)
    a = a + np.float32(0.25)
    out = np.zeros((4, 64), np.float32)
    interpret(float_div, a, b, out)
    np.testing.assert_array_equal(out[0], a / b)
    np.testing.assert_array_equal(out[1], a // b)
    np.testing.assert_array_equal(out[2], a % b)
    np.testing.assert_array_equal(out[3], np.fmod(a, b))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int64", "uint32"])
def test_other_integer_widths(dtype):
    @T.prim_func
    def kernel(a: T.Buffer((4,), "int32"), out: T.Buffer((4,), "int32")):
        for i in T.serial(4):
            out[i] = a[i] // 3 + a[i] % 3

    a = np.array([-7, -1, 5, 2**31 - 1], np.int32)
    out = np.zeros(4, np.int32)
    interpret(kernel, a, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a // 3 + a % 3)
    assert dtype  # the same kernel text; widths are covered by evaluate below
    from vkir import ir
    from vkir.interpreter import evaluate

    x = ir.Var("x", dtype)
    three = ir.const(3, dtype)
    for v in ([-7, -1, 5] if not dtype.startswith("u") else [7, 1, 5]):
        nv = np.dtype(dtype).type(v)
        assert evaluate(ir.FloorDiv(x, three), {x: v}) == nv // np.dtype(dtype).type(3)
        assert evaluate(ir.FloorMod(x, three), {x: v}) == nv % np.dtype(dtype).type(3)
        assert evaluate(ir.Div(x, three), {x: v}) == int(np.trunc(v / 3))
        assert evaluate(ir.Mod(x, three), {x: v}) == int(np.fmod(v, 3))
