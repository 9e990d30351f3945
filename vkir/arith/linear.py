"""Linear normal form of integer expressions, the canonical form the simplifier works in.

An integer expression with L lanes is viewed as

    Broadcast(sum(base) + c) + lane * (sum(stride) + sc) + sum(vec)

where `base` and `stride` map scalar atoms to integer coefficients, `lane` is the lane index
(0..L-1, so the first two parts together are a Ramp) and `vec` maps L-lane atoms to coefficients.
Atoms are the non-linear sub-expressions (vars, loads, divisions, products of two non-constants).

Integer +, -, * form a ring modulo 2**bits, so rebuilding an expression from its linear form (with
coefficients reduced modulo 2**bits) preserves the wrapped int semantics exactly: the expression
computes the linear form's mathematical value modulo 2**bits, whatever wrapped on the way. Only
where that value provably lies in the type's range (see `Simplifier.exact_form`) may it be
reasoned about as a mathematical integer (divided, compared).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dtype import DataType


def _merge(d1: dict, d2: dict, k: int) -> dict:
    out = dict(d1)
    for atom, v in d2.items():
        nv = out.get(atom, 0) + k * v
        if nv:
            out[atom] = nv
        else:
            out.pop(atom, None)
    return out


class Linear:
    """A linear form (see the module docstring); immutable by convention."""

    __slots__ = ("lanes", "base", "c", "stride", "sc", "vec")

    def __init__(self, lanes=1, base=None, c=0, stride=None, sc=0, vec=None):
        self.lanes = lanes
        self.base = base or {}
        self.c = c
        self.stride = stride or {}
        self.sc = sc
        self.vec = vec or {}

    def add(self, other: "Linear", k: int = 1) -> "Linear":
        """self + k * other."""
        assert self.lanes == other.lanes
        return Linear(self.lanes, _merge(self.base, other.base, k), self.c + k * other.c,
                      _merge(self.stride, other.stride, k), self.sc + k * other.sc,
                      _merge(self.vec, other.vec, k))

    def scale(self, k: int) -> "Linear":
        """k * self."""
        if k == 0:
            return Linear(self.lanes)
        return Linear(self.lanes, {a: v * k for a, v in self.base.items()}, self.c * k,
                      {a: v * k for a, v in self.stride.items()}, self.sc * k,
                      {a: v * k for a, v in self.vec.items()})

    @property
    def is_const(self) -> bool:
        """A plain constant (a broadcast constant for vectors)."""
        return not self.base and not self.stride and not self.sc and not self.vec

    @property
    def is_base_only(self) -> bool:
        """A broadcast scalar (or a scalar): no lane-dependent part."""
        return not self.stride and not self.sc and not self.vec

    def base_part(self) -> "Linear":
        """The scalar part common to every lane (sum(base) + c)."""
        return Linear(1, self.base, self.c)

    def stride_part(self) -> "Linear":
        """The per-lane step (sum(stride) + sc) as a scalar form."""
        return Linear(1, self.stride, self.sc)

    def atoms(self):
        """Every atom of the form: base, then stride, then vector atoms."""
        yield from self.base
        yield from self.stride
        yield from self.vec


def _const_of(e) -> int | None:
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Broadcast) and isinstance(e.value, E.IntImm):
        return e.value.value
    return None


def linear_of(e) -> Linear:
    """Decompose an (already simplified) integer expression; everything else is an atom."""
    lanes = e.dtype.lanes
    if isinstance(e, E.IntImm):
        return Linear(1, c=e.value)
    if isinstance(e, (E.Add, E.Sub)):
        return linear_of(e.a).add(linear_of(e.b), 1 if isinstance(e, E.Add) else -1)
    if isinstance(e, E.Mul):
        kb, ka = _const_of(e.b), _const_of(e.a)
        if kb is not None:
            return linear_of(e.a).scale(kb)
        if ka is not None:
            return linear_of(e.b).scale(ka)
    if isinstance(e, E.Broadcast) and e.value.dtype.lanes == 1:
        v = linear_of(e.value)
        return Linear(e.lanes, v.base, v.c)
    if isinstance(e, E.Ramp) and e.base.dtype.lanes == 1 and e.stride.dtype.lanes == 1:
        b, s = linear_of(e.base), linear_of(e.stride)
        return Linear(e.lanes, b.base, b.c, s.base, s.c)
    if lanes == 1:
        return Linear(1, {e: 1})
    return Linear(lanes, vec={e: 1})


class ScalarLinear(Linear):
    """A scalar linear form `sum(terms[atom] * atom) + const` with the arithmetic passes need to
    build and compare index expressions (the software pipeline's iteration indices, guards and
    in-flight counts): + and - with forms or ints, `scale`, `subst`, and `expr`, a readable
    rebuild (`a + b*2 - c + 3`: positive terms, then negative ones, then the constant).
    Coefficients are mathematical integers here (no reduction modulo 2**bits); immutable by
    convention; terms keep insertion order."""

    __slots__ = ()

    def __init__(self, terms=None, const: int = 0):
        super().__init__(1, {a: k for a, k in (terms or {}).items() if k}, int(const))

    @property
    def terms(self) -> dict:
        """atom -> nonzero coefficient."""
        return self.base

    @property
    def const(self) -> int:
        """The constant term."""
        return self.c

    @staticmethod
    def of(expr) -> "ScalarLinear":
        """The linear form of a scalar integer expression (Python ints allowed): sums,
        differences and products with a constant factor decompose, anything else is an atom."""
        if isinstance(expr, int):
            return ScalarLinear(const=expr)
        if isinstance(expr, ScalarLinear):
            return expr
        if isinstance(expr, E.IntImm) and not expr.dtype.is_bool:
            return ScalarLinear(const=expr.value)
        if isinstance(expr, E.Add):
            return ScalarLinear.of(expr.a) + ScalarLinear.of(expr.b)
        if isinstance(expr, E.Sub):
            return ScalarLinear.of(expr.a) - ScalarLinear.of(expr.b)
        if isinstance(expr, E.Mul):
            a, b = ScalarLinear.of(expr.a), ScalarLinear.of(expr.b)
            if a.is_const:
                return b.scale(a.const)
            if b.is_const:
                return a.scale(b.const)
        return ScalarLinear({expr: 1})

    def __add__(self, other) -> "ScalarLinear":
        other = ScalarLinear.of(other)
        return ScalarLinear(_merge(self.base, other.base, 1), self.c + other.c)

    def __sub__(self, other) -> "ScalarLinear":
        other = ScalarLinear.of(other)
        return ScalarLinear(_merge(self.base, other.base, -1), self.c - other.c)

    def scale(self, k: int) -> "ScalarLinear":
        """k * self."""
        return ScalarLinear({a: v * k for a, v in self.base.items()}, self.c * k)

    def __eq__(self, other) -> bool:
        return isinstance(other, ScalarLinear) and self.c == other.c and self.base == other.base

    def __hash__(self) -> int:
        return hash((frozenset(self.base.items()), self.c))

    def coeff(self, atom) -> int:
        """The coefficient of `atom` (0 when absent)."""
        return self.base.get(atom, 0)

    def without(self, atom) -> "ScalarLinear":
        """The form with `atom`'s term dropped."""
        return ScalarLinear({a: v for a, v in self.base.items() if a is not atom}, self.c)

    def subst(self, atom, value) -> "ScalarLinear":
        """Replace `atom` by the linear form (or expression, or int) `value`."""
        k = self.coeff(atom)
        return self.without(atom) + ScalarLinear.of(value).scale(k) if k else self

    def expr(self, dtype: DataType | str = "int32") -> E.PrimExpr:
        """Rebuild as `a + b*2 - c + 3`: positive terms, then negative ones, then the const."""
        pos = [(a, k) for a, k in self.base.items() if k > 0]
        neg = [(a, -k) for a, k in self.base.items() if k < 0]

        def term(a, k):
            return a if k == 1 else E.Mul(a, E.const(k, dtype))

        if pos:
            out = term(*pos[0])
            for a, k in pos[1:]:
                out = E.Add(out, term(a, k))
            const = self.c
        else:
            out, const = E.const(self.c, dtype), 0
        for a, k in neg:
            out = E.Sub(out, term(a, k))
        if const > 0:
            out = E.Add(out, E.const(const, dtype))
        elif const < 0:
            out = E.Sub(out, E.const(-const, dtype))
        return out


def wrap(value: int, dt: DataType) -> int:
    """`value` reduced to the range of the integer type `dt` (two's complement)."""
    bits = dt.bits
    value &= (1 << bits) - 1
    if dt.is_int and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def signed(value: int, dt: DataType) -> int:
    """The coefficient `value` as a signed residue modulo 2**bits (used for uint too)."""
    bits = dt.bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def reduced(lin: Linear, dt: DataType) -> Linear:
    """`lin` with every coefficient and constant a signed residue modulo 2**bits of `dt`: the same
    value in the ring of `dt`, with the smallest coefficients (the tightest interval)."""

    def red(d):
        out = {}
        for atom, k in d.items():
            k = signed(k, dt)
            if k:
                out[atom] = k
        return out

    return Linear(lin.lanes, red(lin.base), signed(lin.c, dt), red(lin.stride),
                  signed(lin.sc, dt), red(lin.vec))


def _assemble(pairs, zero, const=None):
    """Sum of (expr, sign) pairs: positives in order, then negatives; `const` (expr, sign) goes
    last (`j - i*8 + 24`) unless only negatives precede it (`24 - i*8`); `zero` when empty."""
    pos = [x for x, s in pairs if s > 0]
    neg = [x for x, s in pairs if s < 0]
    tail = None
    if const is not None:
        if not pos and const[1] > 0:
            pos.append(const[0])
        else:
            tail = const
    out = None
    for x in pos:
        out = x if out is None else E.Add(out, x)
    for x in neg:
        out = E.Sub(zero if out is None else out, x)
    if tail is not None:
        if out is None:
            out = E.Sub(zero, tail[0])
        else:
            out = E.Add(out, tail[0]) if tail[1] > 0 else E.Sub(out, tail[0])
    return zero if out is None else out


def _imm(value: int, dt: DataType, lanes: int):
    imm = E.IntImm(dt, wrap(value, dt))
    return imm if lanes == 1 else E.Broadcast(imm, lanes)


def _terms(d: dict, c: int, dt: DataType):
    """(expr, sign) pairs for `sum(k * atom) + c`; a coefficient whose negation overflows (the
    type's minimum) stays a positive term."""
    minimum = -(1 << (dt.bits - 1))
    pairs = []
    for atom, k in d.items():
        k = signed(k, dt)
        if k == 0:
            continue
        lanes = atom.dtype.lanes
        if k == minimum:
            pairs.append((E.Mul(atom, _imm(k, dt, lanes)), 1))
            continue
        term = atom if abs(k) == 1 else E.Mul(atom, _imm(abs(k), dt, lanes))
        pairs.append((term, 1 if k > 0 else -1))
    c = signed(c, dt)
    if c == minimum:
        const = (_imm(c, dt, 1), 1)
    elif c:
        const = (_imm(abs(c), dt, 1), 1 if c > 0 else -1)
    else:
        const = None
    return pairs, const


def rebuild_scalar(d: dict, c: int, dt: DataType):
    """The canonical expression of `sum(d[atom] * atom) + c` of scalar type `dt`."""
    pairs, const = _terms(d, c, dt)
    return _assemble(pairs, E.IntImm(dt, 0), const)


def rebuild(lin: Linear, dt: DataType):
    """The canonical expression of a linear form of type `dt`."""
    elem = dt.element_of()
    if lin.lanes == 1:
        return rebuild_scalar(lin.base, lin.c, elem)
    L = lin.lanes
    has_core = lin.base or signed(lin.c, elem) or lin.stride or signed(lin.sc, elem)
    pairs, _ = _terms(lin.vec, 0, elem)
    if has_core or not pairs:
        base = rebuild_scalar(lin.base, lin.c, elem)
        if lin.stride or signed(lin.sc, elem):
            core = E.Ramp(base, rebuild_scalar(lin.stride, lin.sc, elem), L)
        else:
            core = E.Broadcast(base, L)
        pairs.append((core, 1))
    return _assemble(pairs, E.Broadcast(E.IntImm(elem, 0), L))
