"""Wrap-around: vkir integers wrap at their width, and the arithmetic analysis must be exact for
every input, overflowing ones included. Random int32 expressions (sums, products, shifts, floor
and truncating division and modulo, min/max, comparisons, selects, narrowing casts, vector ramps)
are evaluated by the interpreter (`vkir.interpreter.evaluate`, the definition of the semantics) at
random values, the extremes of int32 among them:

- `simplify_expr(e, ranges)` computes what `e` computes, with and without known var ranges (the
  ranges are what enable the division and comparison rewrites, so values are drawn inside them,
  endpoints included);
- the value lies in `const_int_bound(e, ranges)` and in `modular_set(e)`.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vkir.arith import const_int_bound, modular_set, simplify_expr, type_range
from vkir.interpreter import evaluate
from vkir.ir import (EQ, GE, GT, LE, LT, NE, Broadcast, Call, Cast, DataType, Div, FloorDiv,
                     FloorMod, Max, Min, Mod, Ramp, Select, Var, const)

INT_MIN, INT_MAX = -2**31, 2**31 - 1
X, Y, Z = Var("x"), Var("y"), Var("z")
VARS = (X, Y, Z)
EXTREMES = [INT_MIN, INT_MIN + 1, -2**30, -65, -1, 0, 1, 3, 63, 64, 2**30 - 1, 2**30,
            INT_MAX - 63, INT_MAX - 1, INT_MAX]
CONSTS = [0, 1, -1, 2, 3, 4, 7, 8, 16, 63, 64, 1000, 1024, 2**30, INT_MAX, INT_MIN, INT_MAX - 3]
DIVISORS = [1, 2, 3, 4, 8, 64, 1024, 7, -1, -4, 2**30, INT_MAX, INT_MIN]
COMPARE = [LT, LE, GT, GE, EQ, NE]


def _leaf():
    return st.one_of(st.sampled_from(VARS),
                     st.sampled_from(CONSTS).map(const),
                     st.integers(INT_MIN, INT_MAX).map(const))


def _node(children):
    def binary(t):
        op, a, b = t
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "min": lambda: Min(a, b), "max": lambda: Max(a, b)}[op]()

    def division(t):
        op, a, d = t
        return op(a, const(d))

    def index(t):  # the shape of index arithmetic: (a * d + b) // d, % d
        op, a, b, d = t
        return op(a * const(d) + b, const(d))

    def select(t):
        cmp, a, b, c, d = t
        return Select(cmp(a, b), c, d)

    def other(t):
        op, a, k = t
        if op == "shl":
            return Call("int32", "shift_left", (a, const(k % 32)))
        if op == "shr":
            return Call("int32", "shift_right", (a, const(k % 32)))
        if op == "and":
            return Call("int32", "bitwise_and", (a, const(k)))
        return Cast("int32", Cast(op, a))  # a narrowing cast wraps

    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), children, children).map(binary),
        st.tuples(st.sampled_from([FloorDiv, FloorMod, Div, Mod]), children,
                  st.sampled_from(DIVISORS)).map(division),
        st.tuples(st.sampled_from([FloorDiv, FloorMod, Div, Mod]), children, children,
                  st.sampled_from([2, 3, 4, 64, 1024])).map(index),
        st.tuples(st.sampled_from(COMPARE), children, children, children, children).map(select),
        st.tuples(st.sampled_from(["shl", "shr", "and", "int8", "int16", "uint8"]), children,
                  st.sampled_from([0, 1, 2, 3, 7, 31, 255, 1023])).map(other),
    )


exprs = st.recursive(_leaf(), _node, max_leaves=10)
values = st.one_of(st.sampled_from(EXTREMES), st.integers(INT_MIN, INT_MAX))


@st.composite
def ranges_and_envs(draw):
    """Random ranges for some of the vars (None: unknown) and three environments inside them,
    range endpoints favoured."""
    ranges = {}
    for v in VARS:
        kind = draw(st.sampled_from(["unknown", "loop", "narrow", "any"]))
        if kind == "loop":  # the ranges loops, thread extents and sizes give
            ranges[v] = (0, draw(st.sampled_from([0, 3, 63, 1023, 2**20, 2**25 - 2, INT_MAX])))
        elif kind != "unknown":
            a, b = draw(values), draw(values)
            if kind == "narrow":
                b = a + draw(st.integers(0, 2000))
            ranges[v] = (min(a, b), min(max(a, b), INT_MAX))
    envs = []
    for _ in range(3):
        env = {}
        for v in VARS:
            lo, hi = ranges.get(v, (INT_MIN, INT_MAX))
            env[v] = draw(st.one_of(st.sampled_from([lo, hi]), st.integers(lo, hi),
                                    st.sampled_from([x for x in EXTREMES if lo <= x <= hi]
                                                    or [lo])))
        envs.append(env)
    return ranges, envs


def _check_facts(e, ranges, env, value):
    lo, hi = const_int_bound(e, ranges)
    assert (lo is None or lo <= value) and (hi is None or value <= hi), (e, ranges, env, value)
    ms = modular_set(e)
    if ms.coeff == 0:
        assert value == ms.base, (e, env, value, ms)
    else:
        assert (value - ms.base) % ms.coeff == 0, (e, env, value, ms)


@settings(max_examples=200, deadline=None)
@given(exprs, ranges_and_envs())
def test_simplify_is_exact_on_int32(e, ranges_envs):
    ranges, envs = ranges_envs
    plain = simplify_expr(e)
    bounded = simplify_expr(e, ranges)
    assert plain.dtype == e.dtype and bounded.dtype == e.dtype
    for env in envs:
        want = evaluate(e, env)
        assert evaluate(plain, {v: env[v] for v in VARS}) == want, (e, plain, env)
        assert evaluate(bounded, env) == want, (e, bounded, ranges, env)
        _check_facts(e, ranges, env, want)
        _check_facts(bounded, ranges, env, want)


# --- other widths: unsigned and narrow types wrap at their own width ------------------------

def _typed_exprs(dt):
    lo, hi = type_range(DataType.parse(dt))
    names = [Var(n, dt) for n in "uvw"]
    special = [x for x in (lo, lo + 1, -1, 0, 1, 3, 4, hi // 2 + 1, hi - 1, hi) if lo <= x <= hi]
    width = st.one_of(st.sampled_from(special), st.integers(lo, hi))
    leaf = st.one_of(st.sampled_from(names), width.map(lambda v: const(v, dt)))

    def build(t):
        op, a, b, d = t
        d = const(d, dt)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "min": lambda: Min(a, b), "max": lambda: Max(a, b),
                "//": lambda: FloorDiv(a * d + b, d), "%": lambda: FloorMod(a * d + b, d),
                "/": lambda: Div(a, d), "mod": lambda: Mod(a + b, d),
                "<": lambda: Select(LT(a, b), a + d, b), "==": lambda: Select(EQ(a, b + d), a, b)
                }[op]()

    node = lambda children: st.tuples(  # noqa: E731
        st.sampled_from(["+", "-", "*", "min", "max", "//", "%", "/", "mod", "<", "=="]),
        children, children, st.sampled_from([1, 2, 3, 4, 16, 100])).map(build)
    exprs_ = st.recursive(leaf, node, max_leaves=8)

    @st.composite
    def case(draw):
        e = draw(exprs_)
        ranges = {}
        for v in names:
            if draw(st.booleans()):
                a = draw(width)
                ranges[v] = (a, min(hi, a + draw(st.sampled_from([0, 3, 100, hi - lo]))))
        envs = [{v: draw(st.one_of(st.sampled_from(list(ranges.get(v, (lo, hi)))),
                                   st.integers(*ranges.get(v, (lo, hi)))))
                 for v in names} for _ in range(3)]
        return e, ranges, envs

    return case()


@pytest.mark.parametrize("dt", ["uint32", "int8", "uint8", "int16", "int64"])
def test_simplify_is_exact_on_other_widths(dt):
    @settings(max_examples=40, deadline=None)
    @given(_typed_exprs(dt))
    def check(case):
        e, ranges, envs = case
        for s in (simplify_expr(e), simplify_expr(e, ranges)):
            assert s.dtype == e.dtype
            for env in envs:
                want = evaluate(e, env)
                assert evaluate(s, env) == want, (e, s, ranges, env)
        for env in envs:
            _check_facts(e, ranges, env, evaluate(e, env))

    check()


# --- vectors: ramps whose lanes wrap, divided and compared lane-wise --------------------------

def _vector(t):
    base, stride, lanes, op, d, other = t
    v = Ramp(base, stride, lanes)
    if op == "div":
        return FloorDiv(v, Broadcast(const(d), lanes))
    if op == "mod":
        return FloorMod(v, Broadcast(const(d), lanes))
    if op == "lt":
        return Select(LT(v, Broadcast(other, lanes)), v, Broadcast(other, lanes))
    return v * Broadcast(const(d), lanes) + Broadcast(other, lanes)


vectors = st.tuples(exprs, st.sampled_from([const(1), const(-1), const(2), X, const(2**30)]),
                    st.sampled_from([2, 4]), st.sampled_from(["div", "mod", "lt", "mul"]),
                    st.sampled_from([1, 2, 4, 8, 3, 64]), exprs).map(_vector)


@settings(max_examples=100, deadline=None)
@given(vectors, ranges_and_envs())
def test_vector_simplify_is_exact_on_int32(e, ranges_envs):
    ranges, envs = ranges_envs
    for s in (simplify_expr(e), simplify_expr(e, ranges)):
        assert s.dtype == e.dtype
        for env in envs:
            np.testing.assert_array_equal(np.asarray(evaluate(s, env)),
                                          np.asarray(evaluate(e, env)), err_msg=str((e, s, env)))
    for env in envs:
        lanes = np.asarray(evaluate(e, env), dtype=np.int64)
        lo, hi = const_int_bound(e, ranges)
        assert lo is None or lanes.min() >= lo
        assert hi is None or lanes.max() <= hi
        ms = modular_set(e)
        assert all((int(x) - ms.base) % ms.coeff == 0 if ms.coeff else int(x) == ms.base
                   for x in lanes)


# --- the index arithmetic of typical kernels still simplifies --------------------------------

def test_kernel_index_arithmetic_is_provably_free_of_wrap_around():
    """vadd's `bx * 64 + tx` under `T.thread_binding((n + 63) // 64)` and matmul's `i * 1024 + k`
    never wrap: their divisions and comparisons simplify (see also tests/transform/
    test_simplify.py); products a range does not bound stay."""
    n, bx, tx = Var("n"), Var("bx"), Var("tx")
    grid = const_int_bound(FloorDiv(n + 63, 64), {n: (0, None)})
    assert grid == (-2**25, 2**25 - 1)  # n + 63 may wrap to a negative value: then no block runs
    r = {n: (0, None), bx: (0, grid[1] - 1), tx: (0, 63)}
    assert const_int_bound(bx * 64 + tx, r) == (0, 2**31 - 65)
    assert simplify_expr(FloorDiv(bx * 64 + tx, 64), r) is bx
    assert simplify_expr(FloorMod(bx * 64 + tx, 64), r) is tx
    assert simplify_expr(bx * 64 + tx < INT_MAX, r) == const(True, "bool")
    e = FloorDiv(bx * 256 + tx * 4, 4)  # bx * 256 may wrap
    assert simplify_expr(e, r) == e
    i, k = Var("i"), Var("k")
    r = {i: (0, 1023), k: (0, 1023)}
    assert simplify_expr(FloorDiv(i * 1024 + k, 1024), r) is i
    assert simplify_expr(FloorMod(i * 1024 + k, 1024), r) is k
    assert simplify_expr(FloorDiv(i * 1024 + k + 5, 32), r) == i * 32 + FloorDiv(k + 5, 32)
