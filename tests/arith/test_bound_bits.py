"""value_range of shifts by a run-time amount, bitwise and/or/xor/not and bit counts: sound on
every value of small ranges (wrap-around and negative amounts included), exact where every
operand is one value and nothing wraps (a call's scalars: the loop budget bounds `1 << s`,
`m ^ k` by them)."""

import itertools

import pytest

from vkir.arith.bound import value_range
from vkir.interpreter import evaluate
from vkir.ir import Call, Var

OPS = ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor")
RANGES = {"int8": [(-5, 3), (0, 6), (2, 4), (-3, -1), (-128, -120), (120, 127), (5, 5),
                   (-7, -7), (-1, 9), (7, 12)],
          "uint8": [(0, 6), (2, 4), (5, 5), (250, 255), (7, 12), (0, 0), (100, 140)],
          "int32": [(-5, 3), (30, 33), (-33, -30), (17, 17), (2**30, 2**30 + 3), (-1, 1)]}


def _wrap(v: int, dtype: str) -> int:
    bits = int(dtype.lstrip("uint"))
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype.startswith("int") and v >> (bits - 1) else v


def _wraps(op: str, x: int, y: int, dtype: str) -> bool:
    """Whether the shift x << y leaves the type (its bound is then the whole type)."""
    bits = int(dtype.lstrip("uint"))
    return op == "shift_left" and _wrap(x << (y % bits), dtype) != x << (y % bits)


def _reference(op: str, x: int, y: int, dtype: str) -> int:
    """vkir's definition (docs/semantics.md): shift amounts modulo the width, values wrap."""
    bits = int(dtype.lstrip("uint"))
    if op == "shift_left":
        return _wrap(x << (y % bits), dtype)
    if op == "shift_right":
        return x >> (y % bits)
    return _wrap({"bitwise_and": x & y, "bitwise_or": x | y, "bitwise_xor": x ^ y}[op], dtype)


@pytest.mark.parametrize("dtype", sorted(RANGES))
@pytest.mark.parametrize("op", OPS)
def test_binary_bounds_hold_for_every_value(op, dtype):
    a, b = Var("a", dtype), Var("b", dtype)
    e = Call(dtype, op, (a, b))
    for ra, rb in itertools.product(RANGES[dtype], repeat=2):
        lo, hi = value_range(e, {a: ra, b: rb})
        got = {_reference(op, x, y, dtype) for x in range(ra[0], ra[1] + 1)
               for y in range(rb[0], rb[1] + 1)}
        assert lo <= min(got) and max(got) <= hi, (op, dtype, ra, rb, (lo, hi))
        if ra[0] == ra[1] and rb[0] == rb[1] and not _wraps(op, ra[0], rb[0], dtype):
            assert (lo, hi) == (min(got), max(got)), (op, dtype, ra, rb)


@pytest.mark.parametrize("op", OPS)
def test_the_reference_is_the_interpreter(op):
    for dtype in ("int8", "uint8"):
        for x, y in [(-128, 1), (127, 3), (-3, 9), (-3, -1), (100, 7), (5, 200)]:
            x, y = _wrap(x, dtype), _wrap(y, dtype)
            a, b = Var("a", dtype), Var("b", dtype)
            assert int(evaluate(Call(dtype, op, (a, b)), {a: x, b: y})) == \
                _reference(op, x, y, dtype), (op, dtype, x, y)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_unary_bounds_hold_for_every_value(dtype):
    a = Var("a", dtype)
    for op in ("bitwise_not", "popcount", "clz", "ctz"):
        e = Call(dtype, op, (a,))
        for r in RANGES[dtype]:
            lo, hi = value_range(e, {a: r})
            got = {int(evaluate(e, {a: x})) for x in range(r[0], r[1] + 1)}
            assert lo <= min(got) and max(got) <= hi, (op, dtype, r, (lo, hi))
            if r[0] == r[1] or op == "bitwise_not":
                assert (lo, hi) == (min(got), max(got)), (op, dtype, r)


def test_bounds_of_call_scalars_are_their_values():
    s, m, k = Var("s"), Var("m"), Var("k")
    n = Var("n", "int64")
    t, u = Var("t", "int64"), Var("u")
    one = {s: (17, 17), m: (70000, 70000), k: (5, 5), n: (3, 3), t: (40, 40), u: (1, 1)}
    assert value_range(Call("int32", "shift_left", (u, s)), one) == (1 << 17, 1 << 17)
    assert value_range(Call("int32", "shift_left", (m, s)), one) == (-2**31, 2**31 - 1)  # wraps
    r = Var("r")
    assert value_range(Call("int32", "shift_right", (m, r)), {**one, r: (0, 1)}) == (35000, 70000)
    assert value_range(Call("int32", "bitwise_xor", (m, k)), one) == (70005, 70005)
    assert value_range(Call("int32", "bitwise_or", (m, k)), {m: (0, 70000), k: (5, 5)}) == \
        (5, 131071)
    assert value_range(Call("int64", "shift_left", (n, t)), one) == (3 << 40, 3 << 40)
