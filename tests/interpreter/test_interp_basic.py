"""Interpreter vs numpy: elementwise and 2-D kernels, scalars, lets, selects, casts, intrinsics."""

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.tools.demo import vadd
from vkir.interpreter import OutOfBoundsError, evaluate, interpret

rng = np.random.default_rng(0)


@pytest.mark.parametrize("n", [1, 63, 64, 1000, 65536])
def test_vadd_symbolic_size(n):
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    vkir.interpret(vadd, a, b, c)
    np.testing.assert_array_equal(c, a + b)


@T.prim_func
def transpose_scale(a: T.Buffer(("m", "n"), "float32"), b: T.Buffer(("n", "m"), "float32"),
                    alpha: T.float32):
    for i, j in T.grid(m, n):
        b[j, i] = a[i, j] * alpha


def test_2d_with_scalar_param():
    a = rng.random((5, 7), dtype=np.float32)
    b = np.zeros((7, 5), np.float32)
    interpret(transpose_scale, a, b, 2.5)
    np.testing.assert_array_equal(b, a.T * np.float32(2.5))


@T.prim_func
def matmul(a: T.Buffer((64, 64), "float32"), b: T.Buffer((64, 64), "float32"),
           c: T.Buffer((64, 64), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(256, "threadIdx.x"):
            i = (bx * 256 + tx) // 64
            j = (bx * 256 + tx) % 64
            c[i, j] = T.float32(0)
            for k in T.serial(64):
                c[i, j] = c[i, j] + a[i, k] * b[k, j]


@T.prim_func
def matmul_serial(a: T.Buffer((64, 32), "float32"), b: T.Buffer((32, 64), "float32"),
                  c: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        c[i, j] = T.float32(0)
        for k in T.serial(32):
            c[i, j] = c[i, j] + a[i, k] * b[k, j]


@pytest.mark.parametrize("kernel,k", [(matmul, 64), (matmul_serial, 32)])
def test_matmul(kernel, k):
    a, b = rng.random((64, k), dtype=np.float32), rng.random((k, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    interpret(kernel, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@T.prim_func
def int_ops(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32"), out: T.Buffer((8, 8), "int32")):
    for i in T.serial(8):
        out[0, i] = a[i] * b[i]
        out[1, i] = a[i] + b[i]
        out[2, i] = a[i] & b[i]
        out[3, i] = a[i] | b[i]
        out[4, i] = a[i] ^ b[i]
        out[5, i] = a[i] << (b[i] & 7)
        out[6, i] = a[i] >> (b[i] & 7)
        out[7, i] = T.max(a[i], b[i]) - T.min(a[i], b[i])


def test_int32_wraps_and_bitwise():
    a = np.array([2**31 - 1, -2**31, 12345678, -7, 0, 1, 99999, -99999], np.int32)
    b = np.array([2, -1, 1000, 3, 5, -5, 77777, 31], np.int32)
    out = np.zeros((8, 8), np.int32)
    interpret(int_ops, a, b, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out[0], a * b)
        np.testing.assert_array_equal(out[1], a + b)
        np.testing.assert_array_equal(out[7], np.maximum(a, b) - np.minimum(a, b))
    np.testing.assert_array_equal(out[2], a & b)
    np.testing.assert_array_equal(out[3], a | b)
    np.testing.assert_array_equal(out[4], a ^ b)
    np.testing.assert_array_equal(out[5], a << (b & 7))
    np.testing.assert_array_equal(out[6], a >> (b & 7))


@T.prim_func
def casts(x: T.Buffer((6,), "float32"), i: T.Buffer((6,), "int32"), u: T.Buffer((6,), "uint8"),
          bits: T.Buffer((6,), "int32"), back: T.Buffer((6,), "float32")):
    for k in T.serial(6):
        i[k] = T.cast(x[k], "int32")
        u[k] = T.cast(T.cast(x[k], "int32"), "uint8")
        bits[k] = T.reinterpret(x[k], "int32")
        back[k] = T.reinterpret(bits[k], "float32")


def test_casts_truncate_and_reinterpret():
    x = np.array([1.9, -1.9, -0.5, 300.7, -2.5, 1e-3], np.float32)
    i, u, bits, back = (np.zeros(6, d) for d in ("int32", "uint8", "int32", "float32"))
    interpret(casts, x, i, u, bits, back)
    np.testing.assert_array_equal(i, [1, -1, 0, 300, -2, 0])
    np.testing.assert_array_equal(u, np.array([1, -1, 0, 300, -2, 0]).astype(np.uint8))
    np.testing.assert_array_equal(bits, x.view(np.int32))
    np.testing.assert_array_equal(back, x)


@T.prim_func
def math_ops(x: T.Buffer((16,), "float32"), out: T.Buffer((6, 16), "float32")):
    for k in T.serial(16):
        out[0, k] = T.exp(x[k])
        out[1, k] = T.sqrt(T.fabs(x[k]))
        out[2, k] = T.tanh(x[k])
        out[3, k] = T.floor(x[k])
        out[4, k] = T.pow(T.fabs(x[k]), T.float32(1.5))
        out[5, k] = T.fma(x[k], x[k], T.float32(1))


def test_math_in_float32():
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros((6, 16), np.float32)
    interpret(math_ops, x, out)
    np.testing.assert_array_equal(out[0], np.exp(x))
    np.testing.assert_array_equal(out[1], np.sqrt(np.abs(x)))
    np.testing.assert_array_equal(out[2], np.tanh(x))
    np.testing.assert_array_equal(out[3], np.floor(x))
    np.testing.assert_allclose(out[4], np.abs(x) ** np.float32(1.5), rtol=1e-6)
    np.testing.assert_allclose(out[5], x * x + 1, rtol=1e-6)


@T.prim_func
def guarded(a: T.Buffer((8,), "float32"), out: T.Buffer((10,), "float32")):
    for i in T.serial(10):
        out[i] = T.if_then_else(i < 8, a[T.min(i, 7)] * 2.0, T.float32(-1)) \
            + T.if_then_else(i < 8, a[i % 8], T.float32(0))


@T.prim_func
def lazy_if_then_else(a: T.Buffer((8,), "float32"), out: T.Buffer((10,), "float32")):
    for tx in T.thread_binding(10, "threadIdx.x"):
        out[tx] = T.if_then_else(tx < 8, a[tx], T.float32(-1))


@T.prim_func
def eager_select(a: T.Buffer((8,), "float32"), out: T.Buffer((10,), "float32")):
    for tx in T.thread_binding(10, "threadIdx.x"):
        out[tx] = T.select(tx < 8, a[tx], T.float32(-1))


def test_if_then_else_is_lazy_select_is_eager():
    a = rng.random(8, dtype=np.float32)
    out = np.zeros(10, np.float32)
    interpret(lazy_if_then_else, a, out)
    np.testing.assert_array_equal(out, np.concatenate([a, [-1, -1]]))
    out2 = np.zeros(10, np.float32)
    interpret(guarded, a, out2)
    np.testing.assert_allclose(out2[:8], a * 3)
    with pytest.raises(OutOfBoundsError):
        interpret(eager_select, a, np.zeros(10, np.float32))


def test_out_of_bounds_store_is_reported():
    a = ir.decl_buffer((4,), "int32", "a")
    i = ir.Var("i")
    f = ir.PrimFunc((a.data,), ir.For(i, 0, 5, "serial", ir.BufferStore(a, i, (i,))),
                    {a.data: a})
    with pytest.raises(OutOfBoundsError, match="a"):
        interpret(f, np.zeros(4, np.int32))


def test_let_expression_and_let_stmt():
    a = ir.decl_buffer((4,), "int32", "a")
    i, x, y = ir.Var("i"), ir.Var("x"), ir.Var("y")
    body = ir.For(i, 0, 4, "serial",
                  ir.LetStmt(x, i * 3, ir.BufferStore(a, ir.Let(y, x + 1, y * y), (i,))))
    f = ir.PrimFunc((a.data,), body, {a.data: a})
    out = np.zeros(4, np.int32)
    interpret(f, out)
    np.testing.assert_array_equal(out, (np.arange(4) * 3 + 1) ** 2)


def test_bool_buffer_and_logic():
    a = ir.decl_buffer((6,), "int32", "a")
    m = ir.decl_buffer((6,), "bool", "m")
    i = ir.Var("i")
    cond = ir.Or(ir.And(ir.GT(a[i], 0), ir.LT(a[i], 10)), ir.Not(ir.NE(a[i], -5)))
    f = ir.PrimFunc((a.data, m.data), ir.For(i, 0, 6, "serial", ir.BufferStore(m, cond, (i,))),
                    {a.data: a, m.data: m})
    x = np.array([-5, 0, 3, 9, 10, 20], np.int32)
    out = np.zeros(6, bool)
    interpret(f, x, out)
    np.testing.assert_array_equal(out, ((x > 0) & (x < 10)) | (x == -5))


def test_strided_and_offset_buffer():
    data = ir.Var("d", ir.PointerType(ir.DataType.parse("float32")))
    a = ir.Buffer("a", data, "float32", (3, 2), strides=(4, 2), elem_offset=1)
    i, j = ir.Var("i"), ir.Var("j")
    f = ir.PrimFunc((data,), ir.For(i, 0, 3, "serial", ir.For(j, 0, 2, "serial",
                    ir.BufferStore(a, a[i, j] + ir.Cast("float32", i * 10 + j), (i, j)))),
                    {data: a})
    x = np.ones((3, 2), np.float32)
    interpret(f, x)
    np.testing.assert_array_equal(x, 1 + np.arange(3)[:, None] * 10 + np.arange(2))


def test_non_contiguous_argument_written_back():
    base = np.zeros((8, 2), np.float32)
    view = base[:, 0]
    a = np.arange(8, dtype=np.float32)
    interpret(vadd, a, a, view)
    np.testing.assert_array_equal(base[:, 0], 2 * a)
    np.testing.assert_array_equal(base[:, 1], 0)


def test_evaluate_closed_expressions():
    n = ir.Var("n")
    assert evaluate((n + 63) // 64, {n: 1000}) == 16
    assert evaluate(ir.Div(ir.const(-7), ir.const(2))) == -3
    assert evaluate(ir.FloorDiv(ir.const(-7), ir.const(2))) == -4
    assert evaluate(ir.LT(n, 3), {n: 1}) is True
    x = ir.Var("x", "float32")
    assert evaluate(x * 2.0, {x: 1.25}) == 2.5
    np.testing.assert_array_equal(evaluate(ir.Ramp(n, 2, 4), {n: 1}), [1, 3, 5, 7])
    assert isinstance(evaluate(n * 2, {n: 3}), int)


@pytest.mark.timing
def test_matmul_is_fast():
    import time

    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    start = time.perf_counter()
    interpret(matmul, a, b, c)
    assert time.perf_counter() - start < 1.0


@T.prim_func
def loop_kinds(a: T.Buffer((16,), "int32"), out: T.Buffer((3, 16), "int32")):
    g = T.alloc_buffer((16,), "int32", scope="global")
    for i in T.unroll(16):
        g[i] = a[i] * 2
    for i in T.vectorized(16):
        out[0, i] = g[i]
    for i in T.serial(4, 12):
        out[1, i] = a[i] + 1
    for i in T.serial(16):
        out[2, i] = T.cast(a[i] == 3, "int32") + T.cast(a[i] != 3, "int32") * 2 \
            + T.cast(a[i] <= 3, "int32") * 4 + T.cast(a[i] >= 3, "int32") * 8 \
            + T.cast(a[i] > 3, "int32") * 16


def test_loop_kinds_global_alloc_and_comparisons():
    a = np.arange(16, dtype=np.int32)
    out = np.zeros((3, 16), np.int32)
    interpret(loop_kinds, a, out)
    np.testing.assert_array_equal(out[0], 2 * a)
    np.testing.assert_array_equal(out[1], np.where((a >= 4) & (a < 12), a + 1, 0))
    want = (a == 3) + (a != 3) * 2 + (a <= 3) * 4 + (a >= 3) * 8 + (a > 3) * 16
    np.testing.assert_array_equal(out[2], want)


def test_float16_and_uint8_arithmetic_stays_in_width():
    a = ir.decl_buffer((4,), "float16", "a")
    u = ir.decl_buffer((4,), "uint8", "u")
    i = ir.Var("i")
    body = ir.For(i, 0, 4, "serial", ir.seq(
        ir.BufferStore(a, a[i] * ir.const(3.0, "float16") + ir.const(0.1, "float16"), (i,)),
        ir.BufferStore(u, u[i] + ir.const(200, "uint8"), (i,))))
    f = ir.PrimFunc((a.data, u.data), body, {a.data: a, u.data: u})
    x = np.array([1.0, 1000.0, 30000.0, -2.5], np.float16)
    y = np.array([0, 55, 56, 255], np.uint8)
    with np.errstate(over="ignore"):
        want_x = x * np.float16(3) + np.float16(0.1)
        want_y = y + np.uint8(200)
    interpret(f, x, y)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, want_y)
