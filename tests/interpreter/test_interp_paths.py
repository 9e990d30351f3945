"""The interpreter evaluates uniform values as numpy scalars and per-invocation values as arrays;
random integer and float expressions must give bit-identical results on both paths, and vector
lanes must agree with scalar evaluation lane by lane."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vkir import ir
from vkir.interpreter import interpret

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
N = 16

INT_OPS = [ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Mod, ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max]
FLOAT_OPS = [ir.Add, ir.Sub, ir.Mul, ir.Div, ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max]


def _tree(dtype, leaf_var, ops):
    const = st.integers(-9, 9).map(lambda c: ir.const(c, dtype))
    leaf = st.one_of(st.just(leaf_var), const)

    def grow(children):
        return st.one_of(
            st.builds(lambda op, a, b: op(a, b), st.sampled_from(ops), children, children),
            st.builds(lambda a, b, c, d: ir.Select(ir.LT(a, b), c, d), children, children,
                      children, children),
            st.builds(lambda c, a, b: ir.Call(dtype, "if_then_else", (ir.GE(c, c * 0), a, b)),
                      children, children, children),
        )
    return st.recursive(leaf, grow, max_leaves=12)


def _kernels(expr_of, dtype):
    """The same expression of a[i], once per invocation (arrays) and once per serial iteration
    (scalars)."""
    out = []
    for kind in ("thread_binding", "serial"):
        a = ir.decl_buffer((N,), dtype, "a")
        b = ir.decl_buffer((N,), dtype, "b")
        i, x = ir.Var("i"), ir.Var("x", dtype)
        body = ir.LetStmt(x, a[i], ir.BufferStore(b, expr_of(x), (i,)))
        thread = "threadIdx.x" if kind == "thread_binding" else None
        loop = ir.For(i, 0, N, kind, body, thread=thread)
        out.append(ir.PrimFunc((a.data, b.data), loop, {a.data: a, b.data: b}))
    return out


X_INT = ir.Var("x_int")
X_FLOAT = ir.Var("x_float", "float32")


@SETTINGS
@given(_tree("int32", X_INT, INT_OPS), st.lists(st.integers(-2**31, 2**31 - 1), min_size=N,
                                                 max_size=N))
def test_int32_paths_agree(expr, values):
    def expr_of(x):
        return ir.Let(X_INT, x, expr)
    simt, serial = _kernels(expr_of, "int32")
    a = np.array(values, np.int32)
    out1, out2 = np.zeros(N, np.int32), np.zeros(N, np.int32)
    interpret(simt, a, out1)
    interpret(serial, a, out2)
    np.testing.assert_array_equal(out1, out2)


@SETTINGS
@given(_tree("float32", X_FLOAT, FLOAT_OPS),
       st.lists(st.floats(-100, 100, width=32), min_size=N, max_size=N))
def test_float32_paths_agree(expr, values):
    def expr_of(x):
        return ir.Let(X_FLOAT, x, expr)
    simt, serial = _kernels(expr_of, "float32")
    a = np.array(values, np.float32)
    out1, out2 = np.zeros(N, np.float32), np.zeros(N, np.float32)
    interpret(simt, a, out1)
    interpret(serial, a, out2)
    np.testing.assert_array_equal(out1, out2)


@SETTINGS
@given(_tree("int32", X_INT, INT_OPS), st.lists(st.integers(-1000, 1000), min_size=N,
                                                 max_size=N))
def test_vector_lanes_agree_with_scalars(expr, values):
    """Rewriting x into a 4-lane vector (constants broadcast) computes each lane as the scalar."""
    vx = ir.Var("vx", "int32x4")

    class Widen(ir.Mutator):
        def visit_Var(self, v):
            return vx if v is X_INT else v

        def visit_IntImm(self, c):
            return ir.Broadcast(c, 4)

        def visit_Call(self, c):
            args = tuple(self.visit(x) for x in c.args)
            return ir.Call(ir.DataType.parse("int32x4"), c.op, args)

    vexpr = Widen().visit(expr)
    a = ir.decl_buffer((N,), "int32", "a")
    b = ir.decl_buffer((N,), "int32", "b")
    i = ir.Var("i")
    r = ir.Ramp(i * 4, 1, 4)
    body = ir.For(i, 0, N // 4, "serial", ir.LetStmt(vx, a[r], ir.BufferStore(b, vexpr, (r,))))
    vec = ir.PrimFunc((a.data, b.data), body, {a.data: a, b.data: b})
    _, serial = _kernels(lambda x: ir.Let(X_INT, x, expr), "int32")
    arr = np.array(values, np.int32)
    out1, out2 = np.zeros(N, np.int32), np.zeros(N, np.int32)
    interpret(vec, arr, out1)
    interpret(serial, arr, out2)
    np.testing.assert_array_equal(out1, out2)
