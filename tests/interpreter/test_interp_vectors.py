"""Vector lanes: Ramp/Broadcast/Shuffle, the N*M lane rule on vector-typed buffers, and explicit
pointer casts (DeclBuffer views over the same bytes)."""

import numpy as np
import pytest

from vkir import T, ir
from vkir.interpreter import interpret

rng = np.random.default_rng(3)


@T.prim_func
def vec_add4(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"),
             c: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        c[T.ramp(tx * 4, 1, 4)] = a[T.ramp(tx * 4, 1, 4)] + b[T.ramp(tx * 4, 1, 4)] \
            * T.broadcast(T.float32(2), 4)


def test_ramp_loads_and_stores_on_scalar_buffers():
    a, b = rng.random(64, dtype=np.float32), rng.random(64, dtype=np.float32)
    c = np.zeros(64, np.float32)
    interpret(vec_add4, a, b, c)
    np.testing.assert_array_equal(c, a + b * np.float32(2))


@T.prim_func
def strided_gather(a: T.Buffer((32,), "int32"), c: T.Buffer((32,), "int32")):
    for i in T.serial(4):
        c[T.ramp(i * 8, 1, 8)] = a[T.ramp(i, 4, 8)]


def test_strided_ramp_gather():
    a = np.arange(32, dtype=np.int32)
    c = np.zeros(32, np.int32)
    interpret(strided_gather, a, c)
    np.testing.assert_array_equal(c, np.concatenate([a[i::4] for i in range(4)]))


# The lane table, row by row: element lanes M x index lanes L gives M*L lanes.
@pytest.mark.parametrize("m,l", [(1, 1), (1, 4), (4, 1), (4, 2), (2, 4)])
def test_lane_table_access(m, l):
    elem = "float32" if m == 1 else f"float32x{m}"
    n = 8
    a = ir.decl_buffer((n,), elem, "a")
    c = ir.decl_buffer((n,), elem, "c")
    i = ir.Var("i")
    idx = i * l if l == 1 else ir.Ramp(i * l, 1, l)
    load = a[idx]
    assert load.dtype == ir.DataType.parse("float32").with_lanes(m * l)
    body = ir.For(i, 0, n // l, "serial", ir.BufferStore(c, load + load, (idx,)))
    f = ir.PrimFunc((a.data, c.data), body, {a.data: a, c.data: c})
    x = rng.random(n * m, dtype=np.float32)
    out = np.zeros(n * m, np.float32)
    interpret(f, x, out)
    np.testing.assert_array_equal(out, 2 * x)
    # the same buffers accept arrays with an explicit trailing lanes axis
    if m > 1:
        out2 = np.zeros((n, m), np.float32)
        interpret(f, x.reshape(n, m), out2)
        np.testing.assert_array_equal(out2.ravel(), 2 * x)


@T.prim_func
def as_vec4(a: T.Buffer((32,), "float32"), b: T.Buffer((32,), "float32")):
    a4 = T.decl_buffer((8,), "float32x4", data=a.data)
    b4 = T.decl_buffer((8,), "float32x4", data=b.data)
    for i in T.serial(8):
        b4[i] = a4[i] * T.broadcast(T.float32(3), 4)


def test_pointer_cast_to_vector_view():
    a = rng.random(32, dtype=np.float32)
    b = np.zeros(32, np.float32)
    interpret(as_vec4, a, b)
    np.testing.assert_array_equal(b, a * np.float32(3))


@T.prim_func
def bits_of(a: T.Buffer((8,), "int32"), out: T.Buffer((8,), "float32")):
    af = T.decl_buffer((8,), "float32", data=a.data)
    for i in T.serial(8):
        out[i] = af[i]


def test_pointer_cast_between_types_views_bytes():
    x = rng.random(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    interpret(bits_of, x.view(np.int32), out)
    np.testing.assert_array_equal(out, x)


def test_alias_writes_are_visible_through_the_original_buffer():
    a = ir.decl_buffer((16,), "float32", "a")
    a2 = ir.decl_buffer((4, 4), "float32", "a2", data=a.data)
    i, j = ir.Var("i"), ir.Var("j")
    body = ir.DeclBuffer(a2, ir.For(i, 0, 4, "serial", ir.For(j, 0, 4, "serial",
                         ir.BufferStore(a2, ir.Cast("float32", i * 4 + j) + a[i * 4 + j], (i, j)))))
    f = ir.PrimFunc((a.data,), body, {a.data: a})
    x = np.ones(16, np.float32)
    interpret(f, x)
    np.testing.assert_array_equal(x, np.arange(16) + 1)


def test_shuffle_and_vector_select():
    a = ir.decl_buffer((8,), "int32", "a")
    c = ir.decl_buffer((8,), "int32", "c")
    lo, hi = a[ir.Ramp(0, 1, 4)], a[ir.Ramp(4, 1, 4)]
    shuffled = ir.Shuffle((lo, hi), (7, 6, 5, 4, 3, 2, 1, 0))
    mask = ir.LT(ir.Ramp(0, 1, 8), ir.Broadcast(3, 8))
    body = ir.BufferStore(c, ir.Select(mask, ir.Broadcast(-1, 8), shuffled), (ir.Ramp(0, 1, 8),))
    f = ir.PrimFunc((a.data, c.data), body, {a.data: a, c.data: c})
    x = np.arange(8, dtype=np.int32) * 10
    out = np.zeros(8, np.int32)
    interpret(f, x, out)
    np.testing.assert_array_equal(out, np.where(np.arange(8) < 3, -1, x[::-1]))


def test_vector_lets_across_invocations():
    a = ir.decl_buffer((64,), "float32", "a")
    c = ir.decl_buffer((16,), "float32", "c")
    tx, v = ir.Var("tx"), ir.Var("v", "float32x4")
    body = ir.For(tx, 0, 16, "thread_binding", ir.LetStmt(
        v, a[ir.Ramp(tx * 4, 1, 4)],
        ir.BufferStore(c, ir.Shuffle((v,), (0,)) + ir.Shuffle((v,), (3,)), (tx,))),
        thread="threadIdx.x")
    f = ir.PrimFunc((a.data, c.data), body, {a.data: a, c.data: c})
    x = rng.random(64, dtype=np.float32)
    out = np.zeros(16, np.float32)
    interpret(f, x, out)
    np.testing.assert_array_equal(out, x[0::4] + x[3::4])


def test_vector_cast_and_reinterpret():
    a = ir.decl_buffer((4,), "float32", "a")
    c = ir.decl_buffer((4,), "int32", "c")
    d = ir.decl_buffer((4,), "int32", "d")
    r = ir.Ramp(0, 1, 4)
    body = ir.seq(ir.BufferStore(c, ir.Cast("int32x4", a[r]), (r,)),
                  ir.BufferStore(d, ir.Call("int32x4", "reinterpret", (a[r],)), (r,)))
    f = ir.PrimFunc((a.data, c.data, d.data), body, {a.data: a, c.data: c, d.data: d})
    x = np.array([1.5, -2.7, 3.2, -0.1], np.float32)
    out_c, out_d = np.zeros(4, np.int32), np.zeros(4, np.int32)
    interpret(f, x, out_c, out_d)
    np.testing.assert_array_equal(out_c, [1, -2, 3, 0])
    np.testing.assert_array_equal(out_d, x.view(np.int32))
