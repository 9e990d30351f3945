"""Constant integer bounds: an inclusive interval (lo, hi) holding every value of an expression.

vkir integers wrap at their width (the interpreter, which defines the semantics, and the GPU
both compute modulo 2**bits), so the bound of an integer node is the bound of the value it
actually computes. Each operation is first bounded in mathematical integers from the bounds of
its operands; when that interval fits the node's type the operation cannot have wrapped and the
interval is the answer, otherwise the value may have wrapped to anywhere and the answer is the
whole range of the type (`(x + 1)` with x unknown spans all of int32, so `x + 1 > x` is not
decided). Bounds are therefore sound for every input, overflowing ones included.

Two spellings of a bound:
- `value_range(expr, var_ranges)` is the internal, finite one: integer and bool expressions
  always get two ints (the type's limits where nothing better is known).
- `const_int_bound(expr, var_ranges)` is the contract's: a side that is only bounded by the
  limit of a 32- or 64-bit type is reported as None ("unbounded"), as `dtype_bound` does (an
  unsigned type's 0 stays 0); narrow types (int8, uint16, bool, ...) keep their finite limits.

Known ranges of free Vars come in `var_ranges` as inclusive (lo, hi) pairs (None for an
unbounded side) and are clipped to the Var's type; a loop `for i in range(m, m + n)` gives
`(m, m + n - 1)`. For a vector expression the interval covers every lane.
"""

from __future__ import annotations

from typing import Mapping

from ..ir.dtype import type_range
from .analyzer import EnvAnalyzer

Bound = tuple  # (lo: int | None, hi: int | None)
_UNBOUNDED = (None, None)


def dtype_bound(dt) -> Bound:
    """The range of a type: finite for bool and narrow ints, None for 32/64-bit sides."""
    full = type_range(dt)
    if full is None:
        return _UNBOUNDED
    return _public(full, dt)


def fits(interval, dt) -> bool:
    """True when the mathematical integer interval lies inside the range of `dt`."""
    full = type_range(dt)
    return (full is not None and interval[0] is not None and interval[1] is not None
            and full[0] <= interval[0] and interval[1] <= full[1])


def _public(b, dt) -> Bound:
    """A finite bound as reported by const_int_bound: the limits of 32/64-bit types become None,
    except an unsigned type's 0."""
    if dt.bits < 32 or dt.is_bool:
        return b
    full = type_range(dt)
    lo = None if b[0] <= full[0] and dt.is_int else b[0]
    return (lo, None if b[1] >= full[1] else b[1])


def mul_interval(a, b):
    """Product of two finite intervals."""
    products = [x * y for x in a for y in b]
    return (min(products), max(products))


def truncdiv(x: int, d: int) -> int:
    """Python-int division rounding toward zero (vkir's Div on integers)."""
    q = abs(x) // abs(d)
    return q if (x >= 0) == (d > 0) else -q


def _union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1]))


def _shift_amounts(k, bits: int) -> tuple:
    """The amounts a shift of a `bits`-wide value applies for amount values in interval `k`:
    taken modulo the width (vkir's definition), so [0, bits) unless k lies in one period."""
    if k[0] // bits == k[1] // bits:
        return (k[0] % bits, k[1] % bits)
    return (0, bits - 1)


_BITWISE = {"bitwise_and": int.__and__, "bitwise_or": int.__or__, "bitwise_xor": int.__xor__}


def _bitwise(op: str, a, b):
    """Bounds of `a & b`, `a | b` or `a ^ b` on operands of intervals `a` and `b` (signed values
    as two's complement, which Python's ints follow): exact for two constants; within the
    smallest [0, 2**p) or [-2**p, 2**p) holding both operands otherwise, as no bit above them
    changes, and nearer where the operands' signs say more."""
    if a[0] == a[1] and b[0] == b[1]:
        v = _BITWISE[op](a[0], b[0])
        return (v, v)
    if op == "bitwise_and":
        if a[0] >= 0 and b[0] >= 0:
            return (0, min(a[1], b[1]))   # the result's bits are a subset of each operand's
        for x in (a, b):
            if x[0] >= 0:
                return (0, x[1])
    p = max(_magnitude_bits(a), _magnitude_bits(b))
    if a[0] >= 0 and b[0] >= 0:
        if op == "bitwise_or":   # the result's bits include each operand's
            return (max(a[0], b[0]), (1 << p) - 1)
        return (0, (1 << p) - 1)
    if op == "bitwise_or" and (a[1] < 0 or b[1] < 0):
        return (-(1 << p), -1)   # a negative operand's sign bit stays set
    return (-(1 << p), (1 << p) - 1)


_BIT_COUNTS = ("popcount", "clz", "ctz")


def _bit_count(op: str, x, bits: int):
    """Bounds of popcount, clz or ctz of a `bits`-wide value in interval `x`: exact for a
    constant (counted on its two's complement bits), else anything from 0 to the width."""
    if x[0] != x[1]:
        return (0, bits)
    u = x[0] & ((1 << bits) - 1)
    if op == "popcount":
        n = bin(u).count("1")
    elif op == "clz":
        n = bits - u.bit_length()
    else:
        n = (u & -u).bit_length() - 1 if u else bits
    return (n, n)


def _magnitude_bits(x) -> int:
    """The fewest bits p with both ends of interval `x` in [-2**p, 2**p)."""
    return max(x[0].bit_length() if x[0] >= 0 else (-x[0] - 1).bit_length(),
               x[1].bit_length() if x[1] >= 0 else (-x[1] - 1).bit_length())


class _Analyzer(EnvAnalyzer):
    """Finite bounds of actual (wrapped) values. A visit_ method returns the mathematical
    interval of the operation on its operands' bounds, None for a side it knows nothing about;
    `visit` turns an interval that leaves the type's range into the whole range."""

    join = staticmethod(_union)

    def __init__(self, env: Mapping, memo: dict | None = None):
        super().__init__(env)
        self.memo = memo

    def visit(self, e):
        if self.memo is None:
            return self._visit(e)
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._visit(e)
        self.memo[id(e)] = (e, r)  # the node is kept alive, so its id stays its own
        return r

    def visit_Let(self, e):
        # the body is analysed with the let var bound: its bounds are not the outer scope's
        outer = self.memo
        self.memo = None if outer is None else {}
        try:
            return EnvAnalyzer.visit_Let(self, e)
        finally:
            self.memo = outer

    def _visit(self, e):
        full = type_range(e.dtype)
        if full is None:
            return _UNBOUNDED
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            return full
        lo, hi = method(e)
        lo = full[0] if lo is None else lo
        hi = full[1] if hi is None else hi
        if lo < full[0] or hi > full[1]:
            return full  # the operation may wrap around
        return (lo, hi)

    def visit_IntImm(self, e):
        return (e.value, e.value)

    def visit_Var(self, e):
        r = self.env.get(e)
        if r is None:
            return _UNBOUNDED
        full = type_range(e.dtype)
        lo = full[0] if r[0] is None else max(r[0], full[0])
        hi = full[1] if r[1] is None else min(r[1], full[1])
        return (lo, hi)

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (a[0] + b[0], a[1] + b[1])

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (a[0] - b[1], a[1] - b[0])

    def visit_Mul(self, e):
        return mul_interval(self.visit(e.a), self.visit(e.b))

    def _division(self, e, div):
        """Quotient bounds for a divisor of one sign: `x div y` is monotone in x for a fixed
        y, and in y for a fixed x, so the extremes are at the corners. A divisor range
        containing 0 says nothing (the interpreter's x // 0 is 0; a GPU's is undefined)."""
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] <= 0 <= b[1]:
            return _UNBOUNDED
        ends = [div(x, y) for x in a for y in b]
        return (min(ends), max(ends))

    def visit_FloorDiv(self, e):
        return self._division(e, lambda x, y: x // y)

    def visit_Div(self, e):
        return self._division(e, truncdiv)

    def visit_FloorMod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] > 0:
            if b[0] == b[1] and a[0] // b[0] == a[1] // b[0]:
                return (a[0] % b[0], a[1] % b[0])  # the whole range lies in one period
            hi = b[1] - 1
            if a[0] >= 0:
                hi = min(hi, a[1])
            return (0, hi)
        if b[1] < 0:
            return (b[0] + 1, 0)
        return _UNBOUNDED

    def visit_Mod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] <= 0 <= b[1]:
            return _UNBOUNDED
        m = max(abs(b[0]), abs(b[1])) - 1
        if a[0] >= 0:
            return (0, min(m, a[1]))
        if a[1] <= 0:
            return (max(-m, a[0]), 0)
        return (-m, m)

    def visit_Min(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (min(a[0], b[0]), min(a[1], b[1]))

    def visit_Max(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (max(a[0], b[0]), max(a[1], b[1]))

    def visit_Cast(self, e):
        src = e.value.dtype
        if e.dtype.is_bool:
            return (0, 1)
        if src.is_integer or src.is_bool:
            inner = self.visit(e.value)
            if fits(inner, e.dtype.element_of()):
                return inner  # value-preserving
        return _UNBOUNDED  # wrapped to the target width, or converted from a float

    def visit_Ramp(self, e):
        # lane l is base + l * stride, wrapped: bound every lane at once
        base = self.visit(e.base)
        steps = mul_interval(self.visit(e.stride), (0, e.lanes - 1))
        return (base[0] + steps[0], base[1] + steps[1])

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self.branches(e.args[1], e.args[2])
        if e.op in _BITWISE:
            return _bitwise(e.op, *(self.visit(a) for a in e.args))
        if e.op == "bitwise_not":
            a = self.visit(e.args[0])
            if e.dtype.is_uint:   # ~x is max - x
                top = type_range(e.dtype)[1]
                return (top - a[1], top - a[0])
            return (-a[1] - 1, -a[0] - 1)   # ~x is -x - 1 in two's complement
        if e.op in _BIT_COUNTS:
            return _bit_count(e.op, self.visit(e.args[0]), e.dtype.bits)
        if e.op in ("shift_right", "shift_left"):
            a = self.visit(e.args[0])
            k = _shift_amounts(self.visit(e.args[1]), e.dtype.bits)
            if e.op == "shift_left":   # x * 2**k, wrapped
                return mul_interval(a, (1 << k[0], 1 << k[1]))
            # x >> k (arithmetic for signed types) moves x toward 0 or -1 as k grows
            ends = [x >> s for x in a for s in k]
            return (min(ends), max(ends))
        return _UNBOUNDED

    def _bool(self, e):
        return (0, 1)

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _bool
    visit_And = visit_Or = visit_Not = _bool


def value_range(expr, var_ranges: Mapping = {}, memo: dict | None = None) -> Bound:
    """Finite inclusive (lo, hi) of the actual values of an integer or bool expression, the
    type's limits where nothing better is known; (None, None) for other types.

    `memo`, when given, caches the bound of every node visited (by node identity) across calls
    that share it; the caller must pass a fresh dict whenever `var_ranges` changes. A caller
    that asks for the bounds of each subexpression of a deep tree in turn (codegen) stays
    linear that way instead of re-walking every subtree."""
    return _Analyzer(var_ranges, memo).visit(expr)


def const_int_bound(expr, var_ranges: Mapping = {}) -> Bound:
    """Inclusive (lo, hi) bounds of an integer or bool expression; None for an unbounded side
    (one only bounded by a 32- or 64-bit type's limit).

    `var_ranges` maps Vars to inclusive (lo, hi) ranges (None sides allowed). Non-integer
    expressions are unbounded. Sound under wrap-around (see the module docstring).
    """
    b = value_range(expr, var_ranges)
    if b[0] is None:
        return _UNBOUNDED
    return _public(b, expr.dtype)
