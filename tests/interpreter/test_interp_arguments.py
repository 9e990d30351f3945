"""Argument checking: count, dtypes, shapes and symbolic sizes raise vkir.ArgumentError."""

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.interpreter import interpret


@T.prim_func
def axpy(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), alpha: T.float32,
         count: T.int32):
    for i in T.serial(count):
        y[i] = alpha * x[i] + y[i]


def _xy(n=8):
    return np.arange(n, dtype=np.float32), np.ones(n, np.float32)


def test_scalars_accept_python_and_numpy_numbers():
    x, y = _xy()
    interpret(axpy, x, y, 2, np.int64(8))
    np.testing.assert_array_equal(y, 2 * x + 1)
    x, y = _xy()
    interpret(axpy, x, y, np.float32(0.5), np.array(4))
    np.testing.assert_array_equal(y, np.where(np.arange(8) < 4, 0.5 * x + 1, 1))


@pytest.mark.parametrize("args,match", [
    ((), "takes 4 arguments, got 0"),
    (("x", "y", 1.0), "takes 4 arguments, got 3"),
    (("x", "y", 1.0, 8, 9), "takes 4 arguments, got 5"),
    (("x64", "y", 1.0, 8), "float32"),
    (("x", "y", 1.0, 2.5), "non-integer"),
    (("x", "y", 1.0, 2**40), "does not fit"),
    (("x", "y", "a", 8), "float32"),
    (("x", "y", True, 8), "float32"),
    (("x", "short", 1.0, 8), "dim 0"),
    (("x2d", "y", 1.0, 8), "1 dims"),
    (([0.0] * 8, "y", 1.0, 8), "numpy array"),
])
def test_argument_errors(args, match):
    x, y = _xy()
    values = {"x": x, "y": y, "x64": x.astype(np.float64), "short": y[:4],
              "x2d": x.reshape(2, 4)}
    real = [values[a] if isinstance(a, str) and a in values else a for a in args]
    with pytest.raises(vkir.ArgumentError, match=match):
        interpret(axpy, *real)


@T.prim_func
def tiles(a: T.Buffer(("m", "n"), "float32"), b: T.Buffer(("n", "m"), "float32")):
    for i, j in T.grid(m, n):
        b[j, i] = a[i, j]


def test_inconsistent_symbolic_sizes():
    interpret(tiles, np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    with pytest.raises(vkir.ArgumentError, match="argument 'b' dim 0 = 2 but n = 3"):
        interpret(tiles, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))


def test_vector_buffer_shapes():
    a = ir.decl_buffer((4,), "float32x4", "a")
    f = ir.PrimFunc((a.data,), ir.Evaluate(ir.const(0)), {a.data: a})
    interpret(f, np.zeros(16, np.float32))
    interpret(f, np.zeros((4, 4), np.float32))
    with pytest.raises(vkir.ArgumentError):
        interpret(f, np.zeros(15, np.float32))
    with pytest.raises(vkir.ArgumentError):
        interpret(f, np.zeros(12, np.float32))
    with pytest.raises(vkir.ArgumentError):
        interpret(f, np.zeros(16, np.int32))


def test_symbolic_vector_size_is_inferred_in_elements():
    n = ir.Var("n")
    a = ir.decl_buffer((n,), "int32x4", "a")
    i = ir.Var("i")
    body = ir.For(i, 0, n, "serial", ir.BufferStore(a, ir.Broadcast(i, 4), (i,)))
    f = ir.PrimFunc((a.data,), body, {a.data: a})
    x = np.zeros(12, np.int32)
    interpret(f, x)
    np.testing.assert_array_equal(x, np.repeat(np.arange(3), 4))


def test_bool_parameter():
    a = ir.decl_buffer((1,), "int32", "a")
    flag = ir.Var("flag", "bool")
    f = ir.PrimFunc((a.data, flag), ir.IfThenElse(flag, ir.BufferStore(a, 7, (0,))), {a.data: a})
    x = np.zeros(1, np.int32)
    interpret(f, x, True)
    assert x[0] == 7
    with pytest.raises(vkir.ArgumentError):
        interpret(f, x, 1)


def test_read_only_array_for_a_written_buffer_is_refused():
    """A store to a read-only array would be silently lost: refuse it, as the device call does."""
    from vkir.tools.demo import vadd

    a, b = np.ones(8, "float32"), np.ones(8, "float32")
    c = np.zeros(8, "float32")
    c.flags.writeable = False
    with pytest.raises(vkir.ArgumentError, match="argument 'c' is written by vadd, but its array is read-only"):
        vkir.interpret(vadd, a, b, c)
    a.flags.writeable = False  # read-only inputs are fine
    out = np.zeros(8, "float32")
    vkir.interpret(vadd, a, b, out)
    np.testing.assert_array_equal(out, a + b)
