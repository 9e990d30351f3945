"""Comparisons of scalar linear forms for the software pipeline: iteration indices, guards, wait
counts. The forms are vkir.arith's `ScalarLinear` (named `Lin` here).

The pipeline builds every index it introduces (`i + 2`, guards like `1 <= i`, in-flight counts
like `2 - i`) from linear forms `sum(coeff * atom) + const`, so that what it emits is already in
the canonical shape the worked examples show, and so that it can decide facts such as "this guard
always holds on the loop range" or "this wait count is smaller than that one" by checking that a
difference of two forms is a constant. Atoms are the non-linear sub-expressions (usually Vars).
"""

from __future__ import annotations

from ..arith.linear import ScalarLinear as Lin
from ..ir import expr as E


def const_diff(a, b) -> int | None:
    """`a - b` when it is a known constant, else None."""
    d = Lin.of(a) - Lin.of(b)
    return d.const if d.is_const else None


def compare(lhs: Lin, rhs: Lin, strict: bool, var, dtype) -> E.PrimExpr:
    """`lhs < rhs` (strict) or `lhs <= rhs`, with `var` isolated on one side when its coefficient
    is +-1 (so guards read `1 <= i`, `i < n - 2`), else constants on the left."""
    diff = rhs - lhs  # the comparison says diff > 0 (strict) or diff >= 0
    cls = E.LT if strict else E.LE
    k = diff.coeff(var) if var is not None else 0
    if k == 1:  # rest + var > 0  <=>  -rest < var
        return cls(diff.without(var).scale(-1).expr(dtype), var)
    if k == -1:  # rest - var > 0  <=>  var < rest
        return cls(var, diff.without(var).expr(dtype))
    rest = Lin(diff.terms)
    return cls(E.const(-diff.const, dtype), rest.expr(dtype))
