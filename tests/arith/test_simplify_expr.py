"""simplify_expr: folding with int32 wrap-around and exact floor/trunc semantics, integer
identities, the canonical vector forms the vector passes rely on, bound- and modular-set-based
division and comparison rewrites (only where no term can wrap around, or for residues modulo a
divisor of 2**32), and no reassociation of floats. Property tests check that simplification
preserves the value of random integer expressions on small ranges here, and on random int32
values, extreme ones included, in tests/arith/test_wrapping.py."""

from hypothesis import given, settings, strategies as st

from vkir.arith import ModularSet, simplify_expr
from vkir.ir import (EQ, LT, NE, And, Broadcast, Call, Cast, Div, FloatImm, FloorDiv, FloorMod,
                     Let, Max, Min, Mod, Not, Or, Ramp, Select, Sub, Var, const,
                     decl_buffer)

i, j, n = Var("i"), Var("j"), Var("n")
x, y = Var("x", "float32"), Var("y", "float32")
TRUE, FALSE = const(True, "bool"), const(False, "bool")


def test_int32_folding_wraps():
    assert simplify_expr(const(2**31 - 1) + 1) == const(-2**31)
    assert simplify_expr(const(65536) * 65536) == const(0)
    assert simplify_expr(const(200, "uint8") + const(100, "uint8")) == const(44, "uint8")
    assert simplify_expr(const(-128, "int8") - const(1, "int8")) == const(127, "int8")


def test_floor_and_trunc_division_fold_exactly():
    assert simplify_expr(FloorDiv(const(-7), 2)) == const(-4)
    assert simplify_expr(FloorMod(const(-7), 2)) == const(1)
    assert simplify_expr(Div(const(-7), 2)) == const(-3)
    assert simplify_expr(Mod(const(-7), 2)) == const(-1)
    assert simplify_expr(FloorMod(const(7), -2)) == const(-1)
    # division by zero is left alone
    assert simplify_expr(FloorDiv(const(7), 0)) == FloorDiv(const(7), const(0))


def test_integer_identities():
    assert simplify_expr(i + 0) is i
    assert simplify_expr(i * 1) is i
    assert simplify_expr(i * 0) == const(0)
    assert simplify_expr(i - i) == const(0)
    assert simplify_expr(FloorDiv(i, 1)) is i
    assert simplify_expr(FloorMod(i, 1)) == const(0)
    assert simplify_expr((i + 1) * 4 - 4) == i * 4
    assert simplify_expr(i + 2 + j - 2) == i + j
    assert simplify_expr(5 - i) == Sub(const(5), i)


def test_float_is_not_reassociated():
    e = (x + 1.0) - 1.0
    assert simplify_expr(e) == e
    assert simplify_expr(x + 0.0) == x + 0.0      # -0.0 + 0.0 is +0.0: not an identity
    assert simplify_expr(x * 0.0) == x * 0.0      # NaN * 0 is NaN
    assert simplify_expr(x * 1.0) is x
    assert simplify_expr(x - 0.0) is x
    assert simplify_expr(x - x) == x - x
    # constants fold in float32 precision
    assert simplify_expr(FloatImm("float32", 0.1) + FloatImm("float32", 0.2)) == \
        FloatImm("float32", 0.30000001192092896)


def test_vector_canonical_forms():
    assert simplify_expr(Broadcast(i * 4, 4) + Ramp(0, 1, 4)) == Ramp(i * 4, 1, 4)
    assert simplify_expr(Ramp(i, 2, 4) + Broadcast(n, 4)) == Ramp(i + n, 2, 4)
    assert simplify_expr(Broadcast(i, 4) * Broadcast(n, 4)) == Broadcast(i * n, 4)
    assert simplify_expr(Ramp(i, 1, 4) * Broadcast(const(4), 4)) == Ramp(i * 4, 4, 4)
    assert simplify_expr(Broadcast(x, 4) * Broadcast(y, 4)) == Broadcast(x * y, 4)
    assert simplify_expr(Ramp(i, 0, 4)) == Broadcast(i, 4)
    assert simplify_expr(Ramp(i * 4, 1, 4) - Ramp(i * 4, 1, 4)) == Broadcast(const(0), 4)
    # (i*4 + j) with j vectorized
    assert simplify_expr(Broadcast(i, 4) * Broadcast(const(4), 4) + Ramp(0, 1, 4)) == \
        Ramp(i * 4, 1, 4)


def test_ramp_div_mod_by_lanes():
    four = Broadcast(const(4), 4)
    r = {i: (0, 1023)}
    assert simplify_expr(FloorDiv(Ramp(i * 4, 1, 4), four), r) == Broadcast(i, 4)
    assert simplify_expr(FloorMod(Ramp(i * 4, 1, 4), four)) == Ramp(0, 1, 4)
    assert simplify_expr(FloorDiv(Ramp(i * 8 + 4, 1, 4), four), r) == Broadcast(i * 2 + 1, 4)
    # with i unknown, i*4 may wrap (i = 2**30 gives lanes 0..3, quotient 0): kept; the remainder
    # needs no bound (4 divides 2**32, so wrapping keeps residues mod 4)
    assert simplify_expr(FloorDiv(Ramp(i * 4, 1, 4), four)) == FloorDiv(Ramp(i * 4, 1, 4), four)
    # provable through a modular set of a let-bound var
    v = Var("v")
    assert simplify_expr(FloorMod(Ramp(v, 1, 4), four), var_sets={v: ModularSet(8, 0)}) == \
        Ramp(0, 1, 4)
    assert simplify_expr(Let(v, i * 8, FloorMod(Ramp(v, 1, 4), four))) == \
        Let(v, i * 8, Ramp(0, 1, 4))
    # unaligned base: stays a vector division
    e = FloorDiv(Ramp(i * 4 + 1, 1, 4), four)
    assert simplify_expr(e) != Broadcast(i, 4)
    assert isinstance(simplify_expr(e), (FloorDiv, type(Broadcast(i, 4) + Broadcast(i, 4))))


def test_div_mod_by_constant_with_bounds():
    r = {i: (0, 1023), j: (0, 3)}
    assert simplify_expr(FloorDiv(i * 4 + j, 4), r) is i
    assert simplify_expr(FloorMod(i * 4 + j, 4), r) is j
    assert simplify_expr(FloorDiv(j, 4), r) == const(0)
    assert simplify_expr(FloorDiv(i * 4 + j + 4, 4), r) == i + 1
    # unknown n: the multiple of 4 is split off
    assert simplify_expr(FloorDiv(i * 4 + n, 4), {**r, n: (0, 2**20)}) == i + FloorDiv(n, 4)
    assert simplify_expr(FloorMod(i * 4 + n, 4)) == FloorMod(n, 4)
    # truncating division is the floor one on nonnegative values only
    assert simplify_expr(Div(i * 4 + j, 4), {i: (0, 10), j: (0, 3)}) is i
    assert simplify_expr(Div(i * 4 + j, 4), {i: (-10, 10), j: (0, 3)}) == Div(i * 4 + j, 4)
    assert simplify_expr(Mod(i * 4 + j, 4), {i: (0, 10), j: (0, 3)}) is j


def test_division_is_kept_where_terms_may_wrap():
    """The rewrites above change results once a term wraps around int32, so without bounds
    proving that none does they are not applied (the cases of the strict test in
    tests/test_property_pipeline.py)."""
    r = {j: (0, 3)}
    for e in [FloorDiv(i * 4 + 1, 4),              # i = 2**30: (0 + 1) // 4 is 0, not i
              FloorDiv(i * 4 + j, 4),
              FloorDiv(i + (2**31 - 1), 2),         # not (i + 1) // 2 + 2**30 - 1
              FloorDiv(i * 4 + n, 4),
              FloorMod(i * 3 + 1, 3)]:              # 3 does not divide 2**32
        assert simplify_expr(e, r) == e
    # residues modulo a power of two survive wrap-around
    assert simplify_expr(FloorMod(i * 4 + 1, 4)) == const(1)
    assert simplify_expr(FloorMod(i * 4 + j, 4), r) is j
    assert simplify_expr(FloorMod(i * 8 + n * 2, 4)) == FloorMod(n * 2, 4)
    assert simplify_expr(FloorMod(i * 8 + n * 4 + j, 4), r) is j
    # ... and with bounds the same rewrites apply, 3 included
    assert simplify_expr(FloorMod(i * 3 + 1, 3), {i: (0, 2**20)}) == const(1)
    assert simplify_expr(FloorDiv(i + (2**31 - 1), 2), {i: (-2**20, 0)}) == \
        FloorDiv(i + 1, 2) + (2**30 - 1)
    # a uint32 sum that always wraps by the same amount: x + (2**32 - 1) is x - 1 for x >= 1
    x = Var("x", "uint32")
    e = FloorDiv(x + const(2**32 - 1, "uint32"), const(2, "uint32"))
    assert simplify_expr(e, {x: (1, 100)}) == \
        FloorDiv(x + const(1, "uint32"), const(2, "uint32")) - const(1, "uint32")
    assert simplify_expr(e, {x: (0, 100)}) == \
        FloorDiv(x - const(1, "uint32"), const(2, "uint32"))  # the same in the ring


def test_comparisons_decided_by_bounds():
    assert simplify_expr(i < n) == LT(i, n)
    assert simplify_expr(i < 10, {i: (0, 7)}) == TRUE
    assert simplify_expr(i >= 8, {i: (0, 7)}) == FALSE
    assert simplify_expr(i * 4 + j < i * 4 + 4, {i: (0, 1023), j: (0, 3)}) == TRUE
    assert simplify_expr(EQ(i, i)) == TRUE
    assert simplify_expr(NE(i + 1, i)) == TRUE  # exact in the ring: i + 1 != i even wrapped
    assert simplify_expr(EQ(i * 4 + 1, j * 8)) == FALSE  # residues mod 4 differ, wrapped or not
    assert simplify_expr(Ramp(i, 1, 4) < Broadcast(i + 4, 4), {i: (0, 1023)}) == \
        Broadcast(TRUE, 4)
    assert simplify_expr(x < x) == LT(x, x)  # NaN: not decided


def test_comparisons_kept_where_terms_may_wrap():
    # i + 1 > i is false for i = 2**31 - 1 (i + 1 wraps to -2**31)
    assert simplify_expr(i + 1 > i) == (i + 1 > i)
    assert simplify_expr(i + 1 > i, {i: (None, 2**31 - 2)}) == TRUE
    e = i * 4 + j < i * 4 + 4
    assert simplify_expr(e, {j: (0, 3)}) == e
    e = Ramp(i, 1, 4) < Broadcast(i + 4, 4)
    assert simplify_expr(e) == e
    assert simplify_expr(Min(i * 4 + j, i * 4 + 3), {i: (0, 9), j: (0, 3)}) == i * 4 + j
    assert simplify_expr(Min(i * 4 + j, i * 4 + 3), {j: (0, 3)}) == Min(i * 4 + j, i * 4 + 3)


def test_logic_select_cast_minmax():
    c = i < n
    assert simplify_expr(And(c, TRUE)) == c
    assert simplify_expr(Or(c, TRUE)) == TRUE
    assert simplify_expr(Not(Not(c))) == c
    assert simplify_expr(Select(TRUE, i, j)) is i
    assert simplify_expr(Call("int32", "if_then_else", (FALSE, i, j))) is j
    assert simplify_expr(Cast("int32", i)) is i
    assert simplify_expr(Cast("int8", const(300))) == const(44, "int8")
    assert simplify_expr(Cast("int32", FloatImm("float32", -2.7))) == const(-2)
    assert simplify_expr(Cast("bool", const(5, "int8"))) == TRUE
    assert simplify_expr(Cast("float32", Broadcast(i, 4))) == Broadcast(Cast("float32", i), 4)
    assert simplify_expr(Min(i, j), {i: (0, 3), j: (4, 9)}) is i
    assert simplify_expr(Max(i, j), {i: (0, 3), j: (4, 9)}) is j
    assert simplify_expr(Min(i, n)) == Min(i, n)


def test_loads_are_atoms():
    A = decl_buffer((16,), "int32", "A")
    assert simplify_expr(A[i] + A[i]) == A[i] * 2
    assert simplify_expr(A[i + 0]) == A[i]


# --- property: random integer expressions keep their value ------------------------------------

VARS = [(i, (0, 7)), (j, (-4, 4)), (n, (0, 20))]


def _leaf():
    return st.one_of(st.sampled_from([v for v, _ in VARS]),
                     st.integers(-6, 9).map(const))


def _node(children):
    binop = st.sampled_from(["add", "sub", "mul", "min", "max"])
    divop = st.sampled_from(["fdiv", "fmod", "div", "mod"])
    return st.one_of(
        st.tuples(binop, children, children),
        st.tuples(divop, children, st.sampled_from([1, 2, 3, 4, 8, -3])),
        st.tuples(st.sampled_from(["lt", "eq"]), children, children),
    ).map(_build)


def _build(t):
    op, a, b = t
    if op == "lt":
        return Select(LT(a, b), a, b)
    if op == "eq":
        return Select(EQ(a, b), a + 1, b)
    ctor = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "min": lambda: Min(a, b), "max": lambda: Max(a, b),
            "fdiv": lambda: FloorDiv(a, b), "fmod": lambda: FloorMod(a, b),
            "div": lambda: Div(a, b), "mod": lambda: Mod(a, b)}
    return ctor[op]()


exprs = st.recursive(_leaf(), _node, max_leaves=8)


def _eval(e, env):
    """Reference semantics (small values, no overflow) of the int subset used here."""
    t = type(e).__name__
    if t == "Var":
        return env[e]
    if t == "IntImm":
        return e.value
    if t == "Select":
        return _eval(e.true_value if _eval(e.condition, env) else e.false_value, env)
    if t == "Let":
        return _eval(e.body, {**env, e.var: _eval(e.value, env)})
    a, b = _eval(e.a, env), _eval(e.b, env)
    trunc = lambda p, q: abs(p) // abs(q) * (1 if (p >= 0) == (q > 0) else -1)
    return {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b,
            "Min": lambda: min(a, b), "Max": lambda: max(a, b),
            "FloorDiv": lambda: a // b, "FloorMod": lambda: a % b,
            "Div": lambda: trunc(a, b), "Mod": lambda: a - b * trunc(a, b),
            "LT": lambda: a < b, "EQ": lambda: a == b, "LE": lambda: a <= b,
            "GT": lambda: a > b, "GE": lambda: a >= b, "NE": lambda: a != b}[t]()


@settings(max_examples=30, deadline=None)
@given(exprs, st.lists(st.integers(0, 1000), min_size=3, max_size=3))
def test_simplify_preserves_value(e, seeds):
    ranges = {v: r for v, r in VARS}
    s = simplify_expr(e, ranges)
    for k, seed in enumerate(seeds):
        env = {v: r[0] + (seed * (k + 7) + 3 * idx) % (r[1] - r[0] + 1)
               for idx, (v, r) in enumerate(VARS)}
        assert _eval(s, env) == _eval(e, env), (e, s, env)


# --- property: random vector index expressions keep every lane (checked by the interpreter) ------

def _vleaf():
    return st.one_of(
        st.tuples(st.sampled_from([i, j, n]), st.integers(-2, 3)).map(lambda t: Ramp(t[0], t[1], 4)),
        st.sampled_from([i, j, n]).map(lambda v: Broadcast(v, 4)),
        st.integers(-3, 8).map(lambda c: Broadcast(const(c), 4)))


def _vnode(children):
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul"]), children, children),
        st.tuples(st.sampled_from(["fdiv", "fmod"]), children,
                  st.sampled_from([1, 2, 4, 8]).map(lambda c: Broadcast(const(c), 4))),
    ).map(_build)


@settings(max_examples=30, deadline=None)
@given(st.recursive(_vleaf(), _vnode, max_leaves=6), st.integers(0, 1000))
def test_simplify_preserves_vector_lanes(e, seed):
    import numpy as np
    from vkir.interpreter import evaluate

    ranges = {v: r for v, r in VARS}
    s = simplify_expr(e, ranges)
    assert s.dtype == e.dtype
    env = {v: r[0] + (seed + 5 * idx) % (r[1] - r[0] + 1) for idx, (v, r) in enumerate(VARS)}
    np.testing.assert_array_equal(np.asarray(evaluate(s, env)), np.asarray(evaluate(e, env)))
