"""Small scalar linear forms for the software pipeline: iteration indices, guards, wait counts.

The pipeline builds every index it introduces (`i + 2`, guards like `1 <= i`, in-flight counts
like `2 - i`) from linear forms `sum(coeff * atom) + const`, so that what it emits is already in
the canonical shape the RFC's examples show, and so that it can decide facts such as "this guard
always holds on the loop range" or "this wait count is smaller than that one" by checking that a
difference of two forms is a constant. Atoms are the non-linear sub-expressions (usually Vars).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dtype import DataType


class Lin:
    """`sum(terms[atom] * atom) + const`; immutable by convention. Terms keep insertion order."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const: int = 0):
        self.terms = {a: c for a, c in (terms or {}).items() if c}
        self.const = int(const)

    @staticmethod
    def of(expr) -> "Lin":
        """The linear form of a scalar integer expression (Python ints allowed)."""
        if isinstance(expr, int):
            return Lin(const=expr)
        if isinstance(expr, Lin):
            return expr
        if isinstance(expr, E.IntImm) and not expr.dtype.is_bool:
            return Lin(const=expr.value)
        if isinstance(expr, E.Add):
            return Lin.of(expr.a) + Lin.of(expr.b)
        if isinstance(expr, E.Sub):
            return Lin.of(expr.a) - Lin.of(expr.b)
        if isinstance(expr, E.Mul):
            a, b = Lin.of(expr.a), Lin.of(expr.b)
            if a.is_const:
                return b.scale(a.const)
            if b.is_const:
                return a.scale(b.const)
        return Lin({expr: 1})

    def __add__(self, other) -> "Lin":
        other = Lin.of(other)
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + c
        return Lin(terms, self.const + other.const)

    def __sub__(self, other) -> "Lin":
        return self + Lin.of(other).scale(-1)

    def scale(self, k: int) -> "Lin":
        return Lin({a: c * k for a, c in self.terms.items()}, self.const * k)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __eq__(self, other) -> bool:
        return isinstance(other, Lin) and self.const == other.const and self.terms == other.terms

    def __hash__(self) -> int:
        return hash((frozenset(self.terms.items()), self.const))

    def coeff(self, atom) -> int:
        return self.terms.get(atom, 0)

    def without(self, atom) -> "Lin":
        return Lin({a: c for a, c in self.terms.items() if a is not atom}, self.const)

    def subst(self, atom, value: "Lin") -> "Lin":
        """Replace `atom` by the linear form `value`."""
        k = self.coeff(atom)
        return self.without(atom) + Lin.of(value).scale(k) if k else self

    def expr(self, dtype: DataType | str = "int32") -> E.PrimExpr:
        """Rebuild as `a + b*2 - c + 3`: positive terms, then negative ones, then the const."""
        pos = [(a, c) for a, c in self.terms.items() if c > 0]
        neg = [(a, -c) for a, c in self.terms.items() if c < 0]

        def term(a, c):
            return a if c == 1 else E.Mul(a, E.const(c, dtype))

        if pos:
            out = term(*pos[0])
            for a, c in pos[1:]:
                out = E.Add(out, term(a, c))
            const = self.const
        else:
            out, const = E.const(self.const, dtype), 0
        for a, c in neg:
            out = E.Sub(out, term(a, c))
        if const > 0:
            out = E.Add(out, E.const(const, dtype))
        elif const < 0:
            out = E.Sub(out, E.const(-const, dtype))
        return out


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
