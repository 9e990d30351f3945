"""ModularSet algebra and the modular-set analysis (divisibility proofs used by the vector
passes), checked against brute-force enumeration. The analysis describes wrapped values: after
+, -, * the coefficient keeps only its factors common with 2**bits."""

import itertools

from hypothesis import given, settings, strategies as st

from vkir.arith import ModularSet, modular_set
from vkir.ir import (Broadcast, Cast, FloorDiv, FloorMod, Let, Max, Min, Ramp, Select, Var,
                     const)

i, j = Var("i"), Var("j")


def test_normalization():
    assert ModularSet(-4, 6) == ModularSet(4, 2)
    assert ModularSet(0, -3).is_exact and ModularSet(0, -3).base == -3
    assert ModularSet(8, 0).is_multiple_of(4)
    assert not ModularSet(8, 2).is_multiple_of(4)
    assert ModularSet(8, 6).residue(4) == 2
    assert ModularSet(6, 1).residue(4) is None


def test_linear_index_expressions():
    assert modular_set(i * 8 + 4) == ModularSet(8, 4)
    assert modular_set(i * 8 + j * 12) == ModularSet(4, 0)
    # (i*8 + 4) * 3 is 24*i + 12 mathematically, but wraps modulo 2**32: only "4 mod 8" survives
    assert modular_set((i * 8 + 4) * 3) == ModularSet(8, 4)
    assert modular_set(i * 3) == ModularSet(1, 0)
    assert modular_set(i * 4 - 1) == ModularSet(4, 3)
    assert modular_set(i) == ModularSet(1, 0)
    assert modular_set(const(7)) == ModularSet(0, 7)


def test_division_and_modulo():
    assert modular_set(FloorDiv(i * 16 + 4, 4)) == ModularSet(4, 1)
    assert modular_set(FloorMod(i * 16 + 5, 4)) == ModularSet(0, 1)
    assert modular_set(FloorMod(i * 6 + 1, 4)) == ModularSet(2, 1)
    assert modular_set(FloorDiv(i * 6, 4)) == ModularSet(1, 0)  # nothing known


def test_var_sets_let_select_minmax():
    assert modular_set(i + 2, {i: ModularSet(4, 2)}) == ModularSet(4, 0)
    v = Var("v")
    assert modular_set(Let(v, i * 8, v + 4)) == ModularSet(8, 4)
    assert modular_set(Select(i < j, i * 8, i * 12 + 4)) == ModularSet(4, 0)
    # i * 6 is only known to be even (it wraps: 6 * 715827883 is 2 modulo 2**32), i * 9 + 3 nothing
    assert modular_set(Min(i * 6, i * 9 + 3)) == ModularSet(1, 0)
    assert modular_set(Min(i * 6, i * 10 + 4)) == ModularSet(2, 0)
    # min, max, select and floor division never wrap: a coefficient 3 survives them
    assert modular_set(Select(i < j, const(0), const(3))) == ModularSet(3, 0)
    assert modular_set(FloorDiv(Select(i < j, const(0), const(6)), 2)) == ModularSet(3, 0)
    assert modular_set(Max(i * 4, j * 4)) == ModularSet(4, 0)


def test_vectors_cover_every_lane():
    assert modular_set(Broadcast(i * 4, 4)) == ModularSet(4, 0)
    assert modular_set(Ramp(i * 8, 2, 4)) == ModularSet(2, 0)
    assert modular_set(Ramp(i * 8, 8, 4)) == ModularSet(8, 0)


def test_wrapped_constants_and_casts():
    assert modular_set(const(2**31 - 1) + 1) == ModularSet(0, -2**31)
    assert modular_set(FloorDiv(const(-2**31), -1)) == ModularSet(0, -2**31)
    assert modular_set(Cast("int8", i * 4 + 1)) == ModularSet(4, 1)
    assert modular_set(Cast("int8", const(300))) == ModularSet(0, 44)
    assert modular_set(Cast("uint32", Cast("int8", i) * 6)) == ModularSet(2, 0)
    b = Var("b", "int8")
    assert modular_set(Cast("int32", b * 4)) == ModularSet(4, 0)


def test_float_is_unknown():
    x = Var("x", "float32")
    assert modular_set(x * 2.0) == ModularSet(1, 0)


sets = st.builds(ModularSet, st.integers(0, 12), st.integers(-20, 20))


def _members(s, n=6):
    if s.coeff == 0:
        return [s.base]
    return [s.coeff * k + s.base for k in range(-n, n)]


def _contains(s, v):
    return v == s.base if s.coeff == 0 else (v - s.base) % s.coeff == 0


@settings(max_examples=30, deadline=None)
@given(sets, sets)
def test_algebra_is_sound(a, b):
    for x, y in itertools.product(_members(a), _members(b)):
        assert _contains(a + b, x + y)
        assert _contains(a - b, x - y)
        assert _contains(a * b, x * y)
        assert _contains(a.union(b), x) and _contains(a.union(b), y)
    for d in (1, 2, 3, 4, 8, -4):
        for x in _members(a):
            assert _contains(a.floordiv(d), x // d)
            assert _contains(a.floormod(d), x % d)
