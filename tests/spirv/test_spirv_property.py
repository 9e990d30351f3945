"""Property: random well-typed expression trees over int32/float32 scalars and 2/3/4-lane vectors,
wrapped in a kernel, always produce a module that SPIRV-Tools accepts (Vulkan 1.1 and 1.3)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vkir.ir import (Add, And, Broadcast, BufferLoad, BufferStore, Call, Cast, DataType, Div, EQ,
                     FloorDiv, FloorMod, For, GE, GT, IfThenElse, LE, LT, Let, LetStmt, Max, Min,
                     Mod, Mul, NE, Not, Or, Ramp, Select, Shuffle, Sub, Var, const, decl_buffer)
from vkir.spirv import Target, codegen
from vkir.spirv.tools import diagnose

import spirv_kernels as K

N = Var("n")
A = decl_buffer((N,), "int32", "A")
F = decl_buffer((N,), "float32", "F")
I = Var("i")

ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
CMP = (EQ, NE, LT, LE, GT, GE)
FLOAT_MATH = ("exp", "sqrt", "tanh", "erf", "sigmoid", "fabs", "floor", "sin", "log2", "rsqrt")
INT_BITS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")


def _leaf(draw, dt: DataType):
    lanes = dt.lanes
    scalar = dt.element_of()
    if dt.is_bool:
        return LT(_leaf(draw, DataType("int", 32, lanes)), _leaf(draw, DataType("int", 32, lanes)))
    choice = draw(st.integers(0, 3))
    if choice == 0:  # constant
        value = draw(st.integers(-9, 9)) if dt.is_int else draw(st.floats(-4, 4, width=32))
        return const(value, dt)
    buf = A if dt.is_int else F
    if choice == 1 and lanes > 1:  # contiguous vector load on a scalar buffer
        return BufferLoad(buf, (Ramp(Mul(I, lanes), 1, lanes),))
    load = BufferLoad(buf, (I,))
    if choice == 2 and dt.is_int:
        load = I
    return load if lanes == 1 else Broadcast(load, lanes)


@st.composite
def exprs(draw, dt: DataType, depth: int = 3):
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return _leaf(draw, dt)
    sub = lambda t: draw(exprs(t, depth - 1))  # noqa: E731
    lanes = dt.lanes
    if dt.is_bool:
        kind = draw(st.sampled_from(("cmp", "cmp", "logic", "not")))
        if kind == "cmp":
            operand = DataType(draw(st.sampled_from(("int", "float"))), 32, lanes)
            return draw(st.sampled_from(CMP))(sub(operand), sub(operand))
        if kind == "logic":
            return draw(st.sampled_from((And, Or)))(sub(dt), sub(dt))
        return Not(sub(dt))
    other = DataType("float" if dt.is_int else "int", 32, lanes)
    kinds = ["arith", "arith", "select", "cast", "let", "shuffle", "ite"]
    kinds.append("bits" if dt.is_int else "math")
    kind = draw(st.sampled_from(kinds))
    if kind == "arith":
        return draw(st.sampled_from(ARITH))(sub(dt), sub(dt))
    if kind == "select":
        cond_lanes = draw(st.sampled_from((1, lanes)))
        return Select(sub(DataType("bool", 1, cond_lanes)), sub(dt), sub(dt))
    if kind == "cast":
        source = draw(st.sampled_from((other, DataType("bool", 1, lanes))))
        return Cast(dt, sub(source))
    if kind == "let":
        v = Var(draw(st.sampled_from(("x", "y", "tmp"))), dt)
        return Let(v, sub(dt), Add(v, sub(dt)))
    if kind == "shuffle":
        wide = DataType(dt.code, 32, draw(st.integers(2, 4)))
        indices = draw(st.lists(st.integers(0, 2 * wide.lanes - 1), min_size=lanes,
                                max_size=lanes))
        return Shuffle((sub(wide), sub(wide)), tuple(indices))
    if kind == "ite":
        return Call(dt, "if_then_else", (sub(DataType("bool", 1, draw(st.sampled_from(
            (1, lanes))))), sub(dt), sub(dt)))
    if kind == "bits":
        return Call(dt, draw(st.sampled_from(INT_BITS)), (sub(dt), sub(dt)))
    return Call(dt, draw(st.sampled_from(FLOAT_MATH)), (sub(dt),))


@st.composite
def kernels(draw):
    code = draw(st.sampled_from(("int", "float", "bool")))
    lanes = draw(st.sampled_from((1, 2, 3, 4)))
    dt = DataType(code, 1 if code == "bool" else 32, lanes)
    e = draw(exprs(dt))
    if dt.is_bool:
        e = Cast(DataType("int", 32, lanes), e)
    out = decl_buffer((N,), str(e.dtype.element_of()), "Out")
    index = I if lanes == 1 else Ramp(Mul(I, lanes), 1, lanes)
    return K.kernel("prop", [A, F, out], _wrap(out, e, index))


def _wrap(out, e, index):
    """grid1d with the generator's own `I` as the bounded index var."""
    bx, tx = Var("bx"), Var("tx")
    body = LetStmt(I, Add(Mul(bx, 64), tx), IfThenElse(LT(I, N), BufferStore(out, e, (index,))))
    return For(bx, 0, FloorDiv(Add(N, 63), 64), "thread_binding",
               For(tx, 0, 64, "thread_binding", body, thread="threadIdx.x"),
               thread="blockIdx.x")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_random_expressions_validate(func):
    for target in (Target(), Target.vulkan13()):   # vulkan1.1, and vulkan1.3 / SPIR-V 1.6
        module = codegen(func, target)              # (codegen validates, raising on a bug)
        problem = diagnose(module.words, target.env)
        assert problem is None, problem.report()
