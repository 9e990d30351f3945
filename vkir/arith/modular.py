"""Modular-set analysis: every integer value of an expression is `coeff * k + base` for some k.

Passes use it to prove divisibility and alignment (e.g. that the base of `Ramp(b, 1, 4)` is a
multiple of 4). `coeff == 0` means the value is exactly `base`; `ModularSet(1, 0)` says nothing.
For a vector expression the set covers every lane.

Wrap-around: vkir integers wrap at their width, so `x + y`, `x - y`, `x * y` (and a Ramp's
lanes, `shift_left`, a narrowing or sign-changing cast) compute the mathematical result minus
some multiple t * 2**bits. The set describes the value actually computed: after such an
operation the coefficient becomes gcd(coeff, 2**bits) (an exact value is wrapped to the type).
A coefficient that divides 2**bits -- every power of two up to the width, so the alignments 2,
4, 8, 16 the vector passes ask about -- survives unchanged, which is why `i*4 + 8` is a multiple
of 4 for every int32 i, wrapped or not; a coefficient 3 does not: `i * 3` wraps to 2**32 * t +
3i, which need not be a multiple of 3, so `i * 6` is only known to be even. Division, modulo,
min, max and select never wrap for the divisors the analysis uses (floor division by a positive
constant), so their sets need no such reduction.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Mapping

from ..ir import expr as E
from ..ir.dtype import DataType
from .analyzer import EnvAnalyzer
from .linear import wrap


@dataclass(frozen=True, slots=True)
class ModularSet:
    """The set {coeff * k + base | k integer}; normalized so that coeff >= 0 and, when coeff > 0,
    0 <= base < coeff."""

    coeff: int
    base: int

    def __post_init__(self):
        coeff = abs(int(self.coeff))
        base = int(self.base)
        if coeff:
            base %= coeff
        object.__setattr__(self, "coeff", coeff)
        object.__setattr__(self, "base", base)

    @staticmethod
    def everything() -> "ModularSet":
        """The set of every integer (no knowledge)."""
        return ModularSet(1, 0)

    @staticmethod
    def exact(value: int) -> "ModularSet":
        """The set holding `value` only."""
        return ModularSet(0, value)

    @property
    def is_exact(self) -> bool:
        """True when the set holds a single value (`base`)."""
        return self.coeff == 0

    def is_multiple_of(self, n: int) -> bool:
        """True when every value of the set is divisible by `n`."""
        assert n != 0
        return self.coeff % n == 0 and self.base % n == 0

    def residue(self, n: int) -> int | None:
        """The common value of `x mod n` (floor modulo) over the set, or None if not constant."""
        assert n > 0
        if self.coeff % n == 0:
            return self.base % n
        return None

    # --- the algebra --------------------------------------------------------------------------

    def __add__(self, other: "ModularSet") -> "ModularSet":
        return ModularSet(gcd(self.coeff, other.coeff), self.base + other.base)

    def __neg__(self) -> "ModularSet":
        return ModularSet(self.coeff, -self.base)

    def __sub__(self, other: "ModularSet") -> "ModularSet":
        return self + (-other)

    def __mul__(self, other: "ModularSet") -> "ModularSet":
        # (c1 k + b1)(c2 m + b2) = c1 c2 k m + c1 b2 k + c2 b1 m + b1 b2
        c = gcd(gcd(self.coeff * other.coeff, self.coeff * other.base), other.coeff * self.base)
        return ModularSet(c, self.base * other.base)

    def union(self, other: "ModularSet") -> "ModularSet":
        """The smallest modular set containing both."""
        return ModularSet(gcd(gcd(self.coeff, other.coeff), self.base - other.base), self.base)

    def floordiv(self, d: int) -> "ModularSet":
        """The set of `x // d` for a constant d != 0."""
        if self.is_exact:
            return ModularSet.exact(self.base // d)
        if d > 0 and self.coeff % d == 0:
            # floor((c k + b) / d) = (c/d) k + floor(b / d) because d divides c k
            return ModularSet(self.coeff // d, self.base // d)
        return ModularSet.everything()

    def floormod(self, d: int) -> "ModularSet":
        """The set of `x % d` (floor modulo) for a constant d != 0."""
        if self.is_exact:
            return ModularSet.exact(self.base % d)
        g = gcd(self.coeff, d)
        if g == abs(d):
            return ModularSet.exact(self.base % d)
        # x % d = x - d * q, and g divides both d and coeff: x % d = base (mod g)
        return ModularSet(g, self.base)


_EVERYTHING = ModularSet(1, 0)


def wrapped(ms: ModularSet, dt: DataType) -> ModularSet:
    """The set of the values of an operation of integer type `dt` whose mathematical results lie
    in `ms`: they are reduced modulo 2**bits into the type's range."""
    if ms.is_exact:
        return ModularSet.exact(wrap(ms.base, dt))
    return ModularSet(gcd(ms.coeff, 1 << dt.bits), ms.base)


def _const_int(e) -> int | None:
    if isinstance(e, E.IntImm) and not e.dtype.is_bool:
        return e.value
    if isinstance(e, E.Broadcast):
        return _const_int(e.value)
    return None


class _Analyzer(EnvAnalyzer):
    join = staticmethod(ModularSet.union)

    def visit(self, e) -> ModularSet:
        if not isinstance(e.dtype, DataType) or not e.dtype.is_integer:
            return _EVERYTHING
        method = getattr(self, "visit_" + type(e).__name__, None)
        ms = method(e) if method is not None else _EVERYTHING
        # every value of the type is in range: an exact result out of range can only be the
        # mathematical result of an operation that wrapped (e.g. INT_MIN // -1)
        return ModularSet.exact(wrap(ms.base, e.dtype)) if ms.is_exact else ms

    def visit_IntImm(self, e):
        return ModularSet.exact(e.value)

    def visit_Var(self, e):
        return self.env.get(e, _EVERYTHING)

    def visit_Add(self, e):
        return wrapped(self.visit(e.a) + self.visit(e.b), e.dtype)

    def visit_Sub(self, e):
        return wrapped(self.visit(e.a) - self.visit(e.b), e.dtype)

    def visit_Mul(self, e):
        return wrapped(self.visit(e.a) * self.visit(e.b), e.dtype)

    def visit_FloorDiv(self, e):
        d = _const_int(e.b)
        if d is None or d == 0:
            return _EVERYTHING
        return self.visit(e.a).floordiv(d)

    def visit_FloorMod(self, e):
        d = _const_int(e.b)
        if d is None or d == 0:
            return _EVERYTHING
        return self.visit(e.a).floormod(d)

    def visit_Min(self, e):
        return self.visit(e.a).union(self.visit(e.b))

    visit_Max = visit_Min

    def visit_Cast(self, e):
        src = e.value.dtype
        if not src.is_integer:
            return _EVERYTHING
        if src.bits <= e.dtype.bits and (src.is_int == e.dtype.is_int or
                                         (src.is_uint and src.bits < e.dtype.bits)):
            return self.visit(e.value)  # value-preserving widening
        # two's complement conversion: the value modulo 2**bits of the target
        return wrapped(self.visit(e.value), e.dtype)

    def visit_Ramp(self, e):
        # lanes base + i*stride for i in [0, lanes): a union of (base) and (base + stride*k)
        if e.lanes == 1:
            return self.visit(e.base)
        return wrapped(self.visit(e.base) + self.visit(e.stride) * _EVERYTHING, e.dtype)

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self.branches(e.args[1], e.args[2])
        if e.op == "shift_left":
            k = _const_int(e.args[1])
            if k is not None and 0 <= k < e.dtype.bits:
                return wrapped(self.visit(e.args[0]) * ModularSet.exact(1 << k), e.dtype)
        return _EVERYTHING


def modular_set(expr, var_sets: Mapping = {}) -> ModularSet:
    """The modular set of an integer expression (every lane for vectors); `var_sets` gives known
    sets of free Vars (e.g. a let-bound var's value set, or a loop var `min + stride*k`)."""
    return _Analyzer(var_sets).visit(expr)
