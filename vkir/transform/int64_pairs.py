"""64-bit integer arithmetic on pairs of 32-bit words, for EmulateInt64.

An int64 or uint64 scalar is held as a uint32x2 value: lane 0 the low word, lane 1 the high word
(the bytes of the 64-bit number in little-endian order, so a uint32x2 buffer element has the
bytes of the int64 element the host passes). Each function here takes and returns such pair
expressions (or uint32/bool/float32 scalars) and computes what the interpreter computes for the
64-bit operation: two's complement wrap-around, shift amounts modulo 64, float conversions that
saturate (float -> int) or round correctly to nearest even (int -> float32).

Operands that a result uses more than once are bound to fresh variables (expression-level
`Let`), so that a chain of operations grows linearly, not exponentially.
"""

from __future__ import annotations

import itertools

from ..ir import expr as E
from ..ir.dtype import DataType

WORD = DataType("uint", 32)
INT32 = DataType("int", 32)
PAIR = DataType("uint", 32, 2)
FLOAT32 = DataType("float", 32)

_names = itertools.count()


def word(value: int) -> E.IntImm:
    """The uint32 constant `value` (taken modulo 2**32)."""
    return E.IntImm(WORD, value & 0xFFFFFFFF)


def pair(low: E.PrimExpr, high: E.PrimExpr) -> E.PrimExpr:
    """The pair value of two uint32 words."""
    return E.Shuffle((low, high), (0, 1))


def constant(value: int) -> E.PrimExpr:
    """The pair of the 64-bit constant `value` (two's complement)."""
    return pair(word(value), word(value >> 32))


def lo(value: E.PrimExpr) -> E.PrimExpr:
    """The low word of a pair."""
    return _lane(value, 0)


def hi(value: E.PrimExpr) -> E.PrimExpr:
    """The high word of a pair."""
    return _lane(value, 1)


def _lane(value: E.PrimExpr, k: int) -> E.PrimExpr:
    if isinstance(value, E.Shuffle) and value.indices == (0, 1) and len(value.vectors) == 2 \
            and all(v.dtype.lanes == 1 for v in value.vectors):
        return value.vectors[k]
    if isinstance(value, E.Broadcast):
        return value.value
    return E.Shuffle((value,), (k,))


def _call(dt: DataType, op: str, *args) -> E.Call:
    return E.Call(dt, op, tuple(args))


def _simple(value: E.PrimExpr) -> bool:
    if isinstance(value, (E.Var, E.IntImm, E.FloatImm)):
        return True
    if isinstance(value, E.Shuffle):
        return all(_simple(v) for v in value.vectors)
    return False


def bind(value: E.PrimExpr, body) -> E.PrimExpr:
    """`body(v)` with `v` a variable bound to `value` (or `value` itself where it is a variable
    or a constant): `body` may then use `v` many times without copying `value`."""
    if _simple(value):
        return body(value)
    var = E.Var(f"w{next(_names)}", value.dtype)
    return E.Let(var, value, body(var))


def bind_all(values, body) -> E.PrimExpr:
    """`bind` for several values at once: `body(*vars)`."""
    values = tuple(values)
    if not values:
        return body()
    return bind(values[0], lambda v: bind_all(values[1:], lambda *rest: body(v, *rest)))


def _select(cond, a, b):
    return E.Select(cond, a, b)


def _bit(cond: E.PrimExpr) -> E.PrimExpr:
    return _select(cond, word(1), word(0))


def add(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a + b modulo 2**64: the carry out of the low words goes into the high word."""
    def body(a, b):
        return bind(E.Add(lo(a), lo(b)), lambda low: pair(
            low, E.Add(E.Add(hi(a), hi(b)), _bit(E.LT(low, lo(a))))))
    return bind_all((a, b), body)


def sub(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a - b modulo 2**64: the borrow of the low words comes out of the high word."""
    def body(a, b):
        return pair(E.Sub(lo(a), lo(b)),
                    E.Sub(E.Sub(hi(a), hi(b)), _bit(E.LT(lo(a), lo(b)))))
    return bind_all((a, b), body)


def negate(a: E.PrimExpr) -> E.PrimExpr:
    """-a modulo 2**64."""
    return sub(constant(0), a)


def _wide_product(x: E.PrimExpr, y: E.PrimExpr) -> tuple:
    """The 64-bit product of two uint32 words as (low, high), from 16-bit halves (each partial
    product fits 32 bits)."""
    mask, sixteen = word(0xFFFF), word(16)
    def half(v, upper):
        return _call(WORD, "shift_right", v, sixteen) if upper else _call(WORD, "bitwise_and", v, mask)
    def parts(x, y):
        x0, x1, y0, y1 = half(x, False), half(x, True), half(y, False), half(y, True)
        return bind_all((E.Mul(x0, y0), E.Mul(x0, y1), E.Mul(x1, y0)), lambda p00, p01, p10: bind(
            E.Add(E.Add(half(p00, True), half(p01, False)), half(p10, False)), lambda mid: pair(
                _call(WORD, "bitwise_or", _call(WORD, "shift_left", mid, sixteen), half(p00, False)),
                E.Add(E.Add(E.Add(E.Mul(x1, y1), half(p01, True)), half(p10, True)),
                      half(mid, True)))))
    return bind_all((x, y), parts)


def mul(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a * b modulo 2**64 (the same for signed and unsigned): the full product of the low
    words, plus the two cross products of low and high words into the high word."""
    def body(a, b):
        return bind(_wide_product(lo(a), lo(b)), lambda p: pair(lo(p), E.Add(
            hi(p), E.Add(E.Mul(lo(a), hi(b)), E.Mul(hi(a), lo(b))))))
    return bind_all((a, b), body)


def bitwise(op: str, a: E.PrimExpr, b: E.PrimExpr | None = None) -> E.PrimExpr:
    """A bitwise operation ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not") word by
    word: the uint32x2 operation itself."""
    return _call(PAIR, op, a) if b is None else _call(PAIR, op, a, b)


def equal(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a == b."""
    return bind_all((a, b), lambda a, b: E.And(E.EQ(lo(a), lo(b)), E.EQ(hi(a), hi(b))))


def less(a: E.PrimExpr, b: E.PrimExpr, signed: bool, or_equal: bool = False) -> E.PrimExpr:
    """a < b (a <= b with `or_equal`): the high words decide (as int32 for signed values), the
    low words (unsigned) where they are equal."""
    def body(a, b):
        ha, hb = (E.Cast(INT32, hi(a)), E.Cast(INT32, hi(b))) if signed else (hi(a), hi(b))
        low = E.LE(lo(a), lo(b)) if or_equal else E.LT(lo(a), lo(b))
        return E.Or(E.LT(ha, hb), E.And(E.EQ(hi(a), hi(b)), low))
    return bind_all((a, b), body)


def is_negative(a: E.PrimExpr) -> E.PrimExpr:
    """Whether the signed value of pair `a` is below 0."""
    return E.LT(E.Cast(INT32, hi(a)), E.IntImm(INT32, 0))


def _amount(s: E.PrimExpr) -> E.PrimExpr:
    """A pair shift amount modulo 64, as a uint32."""
    return _call(WORD, "bitwise_and", lo(s), word(63))


def shift_left(a: E.PrimExpr, s: E.PrimExpr) -> E.PrimExpr:
    """a << (s mod 64)."""
    def body(a, n, m):   # n = s mod 64, m = n mod 32
        shl = lambda v, k: _call(WORD, "shift_left", v, k)
        carry = _select(E.EQ(m, word(0)), word(0),
                        _call(WORD, "shift_right", lo(a), E.Sub(word(32), m)))
        big = E.GE(n, word(32))
        return pair(_select(big, word(0), shl(lo(a), m)),
                    _select(big, shl(lo(a), m), _call(WORD, "bitwise_or", shl(hi(a), m), carry)))
    return bind_all((a, _amount(s)), lambda a, n: bind(
        _call(WORD, "bitwise_and", n, word(31)), lambda m: body(a, n, m)))


def shift_right(a: E.PrimExpr, s: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """a >> (s mod 64): arithmetic (sign-filling) for signed values, logical for unsigned."""
    def top(v, k):   # the high word shifted by k < 32, as the value's signedness says
        if signed:
            return E.Cast(WORD, _call(INT32, "shift_right", E.Cast(INT32, v), E.Cast(INT32, k)))
        return _call(WORD, "shift_right", v, k)

    def body(a, n, m):
        carry = _select(E.EQ(m, word(0)), word(0),
                        _call(WORD, "shift_left", hi(a), E.Sub(word(32), m)))
        low = _call(WORD, "bitwise_or", _call(WORD, "shift_right", lo(a), m), carry)
        fill = top(hi(a), word(31)) if signed else word(0)
        big = E.GE(n, word(32))
        return pair(_select(big, top(hi(a), m), low), _select(big, fill, top(hi(a), m)))
    return bind_all((a, _amount(s)), lambda a, n: bind(
        _call(WORD, "bitwise_and", n, word(31)), lambda m: body(a, n, m)))


def from_int32(value: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """The pair of a 32-bit integer: sign-extended from int32, zero-extended from uint32."""
    if not signed:
        return pair(value if value.dtype == WORD else E.Cast(WORD, value), word(0))
    return bind(value, lambda v: pair(E.Cast(WORD, v), E.Cast(WORD, _call(
        INT32, "shift_right", v, E.IntImm(INT32, 31)))))


def to_float32(a: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """The float32 nearest the 64-bit value (ties to even), as the interpreter rounds it. The
    magnitude, when its high word is not zero, is shifted right to 32 bits with a sticky bit
    for every bit shifted out: that word rounds to float32 as the whole number does, and
    scaling by the power of two shifted out is exact."""
    def unsigned(a):
        def big(high, low):
            s = E.Sub(word(32), _call(WORD, "clz", high))
            return bind(s, lambda s: _scaled(high, low, s))
        return bind(a, lambda a: bind_all((hi(a), lo(a)), lambda high, low: _select(
            E.EQ(high, word(0)), E.Cast(FLOAT32, low), big(high, low))))
    if not signed:
        return unsigned(a)
    return bind(a, lambda a: bind(is_negative(a), lambda neg: bind(
        unsigned(_select(neg, negate(a), a)), lambda f: _select(neg, E.Sub(E.FloatImm(FLOAT32, 0.0), f), f))))


def _scaled(high: E.PrimExpr, low: E.PrimExpr, s: E.PrimExpr) -> E.PrimExpr:
    """(high:low >> s, with a sticky bit) as float32 times 2**s, for 1 <= s <= 32."""
    rest = E.Sub(word(32), s)   # 0..31
    top = _call(WORD, "shift_left", high, rest)
    down = _select(E.EQ(s, word(32)), word(0), _call(WORD, "shift_right", low, s))
    sticky = _bit(E.NE(_call(WORD, "shift_left", low, rest), word(0)))
    w = _call(WORD, "bitwise_or", _call(WORD, "bitwise_or", top, down), sticky)
    scale = _call(FLOAT32, "reinterpret", _call(WORD, "shift_left", E.Add(s, word(127)), word(23)))
    return E.Mul(E.Cast(FLOAT32, w), scale)


def from_float(f: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """The 64-bit integer of a float32 or float64, truncated toward zero and saturated (NaN
    gives 0), as the interpreter converts. Below 2**31 in magnitude (2**32 unsigned) a 32-bit
    conversion is exact; above it the float, truncated (a float32 there is an integer already),
    splits exactly into 2**32 * high + low."""
    dt = f.dtype
    fl = lambda v: E.FloatImm(dt, v)
    def body(f):
        whole = f if dt.bits == 32 else _call(dt, "trunc", f)
        high_f = bind(whole, lambda t: bind(_call(dt, "floor", E.Mul(t, fl(2.0 ** -32))), lambda h: pair(
            E.Cast(WORD, E.Sub(t, E.Mul(h, fl(2.0 ** 32)))),
            E.Cast(WORD, E.Cast(INT32, h)) if signed else E.Cast(WORD, h))))
        if signed:
            small = from_int32(E.Cast(INT32, f), True)
            fits = E.And(E.LT(f, fl(2.0 ** 31)), E.GT(f, fl(-2.0 ** 31)))
            limits = (E.GE(f, fl(2.0 ** 63)), constant(2 ** 63 - 1),
                      E.LT(f, fl(-2.0 ** 63)), constant(-2 ** 63))
        else:
            small = pair(E.Cast(WORD, f), word(0))
            fits = E.LT(f, fl(2.0 ** 32))
            limits = (E.GE(f, fl(2.0 ** 64)), constant(-1), E.LT(f, fl(0.0)), constant(0))
        over, top, under, bottom = limits
        return _select(fits, small, _select(over, top, _select(under, bottom, high_f)))
    return bind(f, body)


def to_float64(a: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """The float64 nearest the 64-bit value (ties to even): 2**32 * high + low, both exact in
    float64, rounded once by the addition (of the magnitude, for a signed value)."""
    f64 = DataType("float", 64)
    def unsigned(a):
        return bind(a, lambda a: E.Add(E.Mul(E.Cast(f64, hi(a)), E.FloatImm(f64, 2.0 ** 32)),
                                       E.Cast(f64, lo(a))))
    if not signed:
        return unsigned(a)
    return bind(a, lambda a: bind(is_negative(a), lambda neg: bind(
        unsigned(_select(neg, negate(a), a)),
        lambda f: _select(neg, E.Sub(E.FloatImm(f64, 0.0), f), f))))


def bit_count(op: str, a: E.PrimExpr) -> E.PrimExpr:
    """`popcount`, `clz` or `ctz` of the 64-bit value (64 for clz and ctz of 0), as a pair:
    from the words' own counts."""
    def body(a):
        count = lambda v: _call(WORD, op, v)
        if op == "popcount":
            n = E.Add(count(lo(a)), count(hi(a)))
        elif op == "clz":    # the high word's, or 32 more than the low word's where it is 0
            n = _select(E.EQ(hi(a), word(0)), E.Add(word(32), count(lo(a))), count(hi(a)))
        else:
            n = _select(E.EQ(lo(a), word(0)), E.Add(word(32), count(hi(a))), count(lo(a)))
        return pair(n, word(0))
    return bind(a, body)


def absolute(a: E.PrimExpr, signed: bool) -> E.PrimExpr:
    """|a| modulo 2**64 (-2**63 stays -2**63, as integers wrap); a itself unsigned."""
    if not signed:
        return a
    return bind(a, lambda a: bind(negate(a), lambda n: pair(
        _select(is_negative(a), lo(n), lo(a)), _select(is_negative(a), hi(n), hi(a)))))
