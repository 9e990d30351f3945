"""const_int_bound: inclusive intervals (None = unbounded) of the values expressions actually
compute, wrap-around included, checked by exhaustive evaluation on small ranges. (Random int32
expressions at extreme values: tests/arith/test_wrapping.py.)"""

import itertools

import pytest

from vkir.arith import const_int_bound
from vkir.ir import (Broadcast, Cast, Div, FloorDiv, FloorMod, Let, Max, Min, Mod, Ramp, Select,
                     Var, const, decl_buffer)

i, j, n = Var("i"), Var("j"), Var("n")


def test_leaves():
    assert const_int_bound(const(5)) == (5, 5)
    assert const_int_bound(i) == (None, None)
    assert const_int_bound(i, {i: (0, 7)}) == (0, 7)
    assert const_int_bound(Var("b", "uint8")) == (0, 255)
    assert const_int_bound(Var("c", "int8")) == (-128, 127)
    assert const_int_bound(Var("u", "uint32")) == (0, None)
    assert const_int_bound(i < j) == (0, 1)
    A = decl_buffer((4,), "int16", "A")
    assert const_int_bound(A[0]) == (-32768, 32767)


def test_arithmetic():
    r = {i: (0, 7), j: (0, 3)}
    assert const_int_bound(i * 4 + j, r) == (0, 31)
    assert const_int_bound(i - j, r) == (-3, 7)
    assert const_int_bound(FloorDiv(i * 4 + j, 4), r) == (0, 7)
    assert const_int_bound(FloorMod(i * 4 + j, 4), r) == (0, 3)
    assert const_int_bound(FloorMod(n, 8)) == (0, 7)
    assert const_int_bound(Mod(n, 8)) == (-7, 7)
    assert const_int_bound(Div(i - 10, 3), r) == (-3, -1)
    assert const_int_bound(Div(i - 4, 3), r) == (-1, 1)
    assert const_int_bound(Min(i, j), r) == (0, 3)
    assert const_int_bound(Max(i, 5), r) == (5, 7)
    assert const_int_bound(Select(i < j, i, j * 10), r) == (0, 30)
    assert const_int_bound(i * n, {i: (0, 7), n: (0, 1000)}) == (0, 7000)
    assert const_int_bound(i + n, {i: (0, 7)}) == (None, None)


def test_wrap_around():
    """An operation whose mathematical interval leaves the type may wrap to anywhere in it (the
    old answer (0, None) for i * n was wrong: 7 * (2**31 - 1) wraps to -2**31 + 7 ... )."""
    nonneg = {i: (0, 7), n: (0, None)}
    assert const_int_bound(i * n, nonneg) == (None, None)
    assert const_int_bound(n + 1, nonneg) == (None, None)          # 2**31 - 1 + 1 wraps
    assert const_int_bound(n - 1, nonneg) == (-1, 2**31 - 2)        # cannot wrap
    assert const_int_bound(FloorDiv(n + 63, 64), nonneg) == (-2**25, 2**25 - 1)
    assert const_int_bound(Div(const(-2**31), -1)) == (None, None)  # INT_MIN / -1 wraps
    assert const_int_bound(Cast("int8", i * 100), {i: (0, 1)}) == (0, 100)
    assert const_int_bound(Cast("int8", i * 100), {i: (0, 2)}) == (-128, 127)
    u = Var("u", "uint32")
    assert const_int_bound(u - 1, {u: (1, 10)}) == (0, 9)
    assert const_int_bound(u - 1, {u: (0, 10)}) == (0, None)        # 0 - 1 wraps to 2**32 - 1
    b8 = Var("b", "int8")
    assert const_int_bound(b8 + 1) == (-128, 127)
    assert const_int_bound(b8 + 1, {b8: (-5, 5)}) == (-4, 6)


def test_vectors_let_cast():
    r = {i: (0, 7)}
    assert const_int_bound(Ramp(i * 4, 1, 4), r) == (0, 31)
    assert const_int_bound(Ramp(i, -2, 4), r) == (-6, 7)
    assert const_int_bound(Broadcast(i, 8), r) == (0, 7)
    v = Var("v")
    assert const_int_bound(Let(v, i * 2, v + 1), r) == (1, 15)
    assert const_int_bound(Cast("int8", i), r) == (0, 7)
    assert const_int_bound(Cast("int8", i * 100), r) == (-128, 127)
    assert const_int_bound(Cast("float32", i), r) == (None, None)


OPS = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
       lambda a, b: FloorDiv(a, b), lambda a, b: FloorMod(a, b), lambda a, b: Div(a, b),
       lambda a, b: Mod(a, b), Min, Max]
PY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a // b,
      lambda a, b: a % b, lambda a, b: int(a / b), lambda a, b: a - b * int(a / b), min, max]


@pytest.mark.parametrize("k", range(len(OPS)))
def test_sound_on_small_ranges(k):
    ranges = [(-5, 3), (0, 6), (2, 4), (-3, -1)]
    for ra, rb in itertools.product(ranges, ranges):
        if k in (3, 4, 5, 6) and rb[0] <= 0 <= rb[1]:
            continue
        lo, hi = const_int_bound(OPS[k](i, j), {i: ra, j: rb})
        for x in range(ra[0], ra[1] + 1):
            for y in range(rb[0], rb[1] + 1):
                v = PY[k](x, y)
                assert lo is None or lo <= v, (k, ra, rb, x, y)
                assert hi is None or v <= hi, (k, ra, rb, x, y)
