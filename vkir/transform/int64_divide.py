"""64-bit division and modulo on pairs of 32-bit words, for EmulateInt64.

Pairs are as in vkir.transform.int64_pairs (uint32x2: lane 0 the low word, lane 1 the high
word). The quotient and remainder are what the interpreter computes for the 64-bit operation:
`Div`/`Mod` truncate toward zero, `FloorDiv`/`FloorMod` round toward minus infinity (the
remainder takes the divisor's sign), unsigned division is both; a zero divisor gives 0 for the
quotient and the remainder, and -2**63 divided by -1 wraps to -2**63 (remainder 0).

The unsigned division is straight-line code on 32-bit words (no loop, so it fits inside any
expression), after Hacker's Delight's `divDu`/`divlu` (chapter 9): a divisor whose high word is
0 needs two 64-by-32-bit divisions; a larger one a single 64-by-32-bit division of the
dividend's top bits by the divisor's normalized top word, whose estimate is low by at most one.
Each 64-by-32-bit division works in 16-bit digits with the device's 32-bit division, with the
(at most two) corrections of each digit estimate unrolled into selects. Every 32-bit division
the code evaluates has a nonzero divisor, whichever case is taken (the other case's divisor is
replaced by 1), so no device ever divides by zero.
"""

from __future__ import annotations

from ..ir import expr as E
from . import int64_pairs as P

WORD = P.WORD
_B = 1 << 16   # the digit base


class Lets:
    """Straight-line code as nested expression-level lets: `let(value)` names a value (a fresh
    variable, or the value itself where it is a variable or a constant) and `wrap(result)`
    binds every named value around `result`, in order."""

    def __init__(self):
        self.bound = []

    def let(self, value: E.PrimExpr) -> E.PrimExpr:
        """A name for `value`, usable any number of times inside `wrap`'s result."""
        if P._simple(value):
            return value
        var = E.Var(f"w{next(P._names)}", value.dtype)
        self.bound.append((var, value))
        return var

    def wrap(self, result: E.PrimExpr) -> E.PrimExpr:
        """`result` inside the lets of every named value."""
        for var, value in reversed(self.bound):
            result = E.Let(var, value, result)
        return result


def _w(op: str, *args) -> E.PrimExpr:
    return E.Call(WORD, op, tuple(args))


def _shr(v, k):
    return _w("shift_right", v, k)


def _shl(v, k):
    return _w("shift_left", v, k)


def _bit(cond):
    return E.Select(cond, P.word(1), P.word(0))


def _nonzero(lets: Lets, v: E.PrimExpr) -> E.PrimExpr:
    """`v`, or 1 where `v` is 0 (a divisor that is safe to divide by)."""
    return lets.let(E.Select(E.EQ(v, P.word(0)), P.word(1), v))


def _digit(lets: Lets, q, rhat, un, vn1, vn0):
    """A quotient digit estimate `q` (with `rhat` = the dividend's top minus q * vn1) corrected
    down, at most twice, while it is one too large for the next dividend digit `un`."""
    for first in (True, False):
        # rhat < 2**16 wherever the test is evaluated for real (always the first time, and the
        # second time only where rhat is still below the base), so rhat << 16 is exact
        too_big = E.Or(E.GE(q, P.word(_B)), E.GT(E.Mul(q, vn0), E.Add(_shl(rhat, P.word(16)), un)))
        if not first:
            too_big = E.And(E.LT(rhat, P.word(_B)), too_big)
        c = lets.let(too_big)
        q = lets.let(E.Sub(q, _bit(c)))
        rhat = lets.let(E.Add(rhat, E.Select(c, vn1, P.word(0))))
    return q


def divide_words(lets: Lets, u1, u0, v) -> tuple:
    """(quotient, remainder) as uint32 words of the 64-bit number u1:u0 divided by the uint32
    `v`, for u1 < v and v != 0 (the quotient then fits 32 bits)."""
    s = lets.let(_w("clz", v))
    vn = lets.let(_shl(v, s))
    vn1, vn0 = lets.let(_shr(vn, P.word(16))), lets.let(_w("bitwise_and", vn, P.word(0xFFFF)))
    spill = E.Select(E.EQ(s, P.word(0)), P.word(0), _shr(u0, E.Sub(P.word(32), s)))
    un32 = lets.let(_w("bitwise_or", _shl(u1, s), spill))
    un10 = lets.let(_shl(u0, s))
    un1, un0 = lets.let(_shr(un10, P.word(16))), lets.let(_w("bitwise_and", un10, P.word(0xFFFF)))
    q1 = lets.let(E.Div(un32, vn1))
    q1 = _digit(lets, q1, lets.let(E.Sub(un32, E.Mul(q1, vn1))), un1, vn1, vn0)
    un21 = lets.let(E.Sub(E.Add(_shl(un32, P.word(16)), un1), E.Mul(q1, vn)))
    q0 = lets.let(E.Div(un21, vn1))
    q0 = _digit(lets, q0, lets.let(E.Sub(un21, E.Mul(q0, vn1))), un0, vn1, vn0)
    r = _shr(E.Sub(E.Add(_shl(un21, P.word(16)), un0), E.Mul(q0, vn)), s)
    return lets.let(E.Add(_shl(q1, P.word(16)), q0)), lets.let(r)


def _select_pair(lets: Lets, cond, a, b):
    return lets.let(P.pair(E.Select(cond, P.lo(a), P.lo(b)), E.Select(cond, P.hi(a), P.hi(b))))


def _by_word(lets: Lets, ul, uh, d) -> tuple:
    """(quotient, remainder) pairs of uh:ul divided by the nonzero uint32 `d`: the high word of
    the quotient, then the low word from the rest."""
    qh = lets.let(E.Div(uh, d))
    ql, rl = divide_words(lets, lets.let(E.Sub(uh, E.Mul(qh, d))), ul, d)
    return P.pair(ql, qh), P.pair(rl, P.word(0))


def unsigned_divmod(lets: Lets, u: E.PrimExpr, v: E.PrimExpr, known: int | None = None) -> tuple:
    """(quotient, remainder) pairs of the uint64 division u / v (0 and 0 where v is 0);
    `known` is v's value where it is a constant (below 2**32, only that case is emitted)."""
    if known == 0:
        return P.constant(0), P.constant(0)
    if known is not None and known < 2 ** 32:
        u = lets.let(u)
        return _by_word(lets, lets.let(P.lo(u)), lets.let(P.hi(u)), P.word(known))
    u, v = lets.let(u), lets.let(v)
    ul, uh, vl, vh = (lets.let(x) for x in (P.lo(u), P.hi(u), P.lo(v), P.hi(v)))
    small = lets.let(E.EQ(vh, P.word(0)))
    # a divisor below 2**32 (one that is 0 divides by 1: its result is replaced by 0)
    narrow_q, narrow_r = _by_word(lets, ul, uh, _nonzero(lets, vl))
    # a larger divisor: the quotient fits 32 bits; estimate it from the top 32 bits of the
    # divisor normalized (n leading zeros shifted out) and the dividend halved
    h = _nonzero(lets, vh)
    n = lets.let(_w("clz", h))
    top = lets.let(_w("bitwise_or", _shl(h, n), E.Select(
        E.EQ(n, P.word(0)), P.word(0), _shr(vl, E.Sub(P.word(32), n)))))
    half_lo = _w("bitwise_or", _shr(ul, P.word(1)), _shl(uh, P.word(31)))
    q1, _ = divide_words(lets, lets.let(_shr(uh, P.word(1))), lets.let(half_lo), top)
    q0 = lets.let(_shr(q1, E.Sub(P.word(31), n)))
    q0 = lets.let(E.Sub(q0, _bit(E.NE(q0, P.word(0)))))   # now low by 0 or 1
    rest = lets.let(P.sub(u, P.mul(P.pair(q0, P.word(0)), v)))
    fix = lets.let(E.Not(P.less(rest, v, False)))
    big_q = P.pair(E.Add(q0, _bit(fix)), P.word(0))
    big_r = _select_pair(lets, fix, lets.let(P.sub(rest, v)), rest)
    zero = lets.let(E.And(small, E.EQ(vl, P.word(0))))
    q = _select_pair(lets, small, narrow_q, big_q)
    r = _select_pair(lets, small, narrow_r, big_r)
    return (_select_pair(lets, zero, P.constant(0), q), _select_pair(lets, zero, P.constant(0), r))


def divide(a: E.PrimExpr, b: E.PrimExpr, signed: bool, floor: bool, remainder: bool,
           known: int | None = None) -> E.PrimExpr:
    """The quotient (or with `remainder` the remainder) pair of the 64-bit division a / b:
    truncating or (`floor`) flooring for `signed` operands, unsigned otherwise. `known` is b's
    value where it is a constant (its sign and magnitude then need no code)."""
    lets = Lets()
    if not signed:
        q, r = unsigned_divmod(lets, a, b, None if known is None else known % 2 ** 64)
        return lets.wrap(r if remainder else q)
    a, b = lets.let(a), lets.let(b)
    na = lets.let(P.is_negative(a))
    ua = _select_pair(lets, na, lets.let(P.negate(a)), a)
    if known is None:
        nb = lets.let(P.is_negative(b))
        ub = _select_pair(lets, nb, lets.let(P.negate(b)), b)
        q, r = unsigned_divmod(lets, ua, ub)
        differ = lets.let(E.NE(na, nb))
    else:
        magnitude = abs(known) % 2 ** 64
        q, r = unsigned_divmod(lets, ua, P.constant(magnitude), magnitude)
        differ = lets.let(E.Not(na)) if known < 0 else na
    q = _select_pair(lets, differ, lets.let(P.negate(q)), q)   # truncated toward zero
    r = _select_pair(lets, na, lets.let(P.negate(r)), r)       # the dividend's sign
    if floor:   # one less where the signs differ and the division is not exact
        inexact = lets.let(E.And(differ, E.Not(P.equal(r, P.constant(0)))))
        if remainder:
            r = _select_pair(lets, inexact, lets.let(P.add(r, b)), r)
        else:
            q = _select_pair(lets, inexact, lets.let(P.sub(q, P.constant(1))), q)
    return lets.wrap(r if remainder else q)
