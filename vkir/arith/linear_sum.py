"""An integer +, -, * chain under simplification, kept as a linear form until its root.

The simplifier turns each integer `a + b`, `a - b`, `a * c` into `rebuild(form, dtype)` (see
linear.py), and its parent reads that expression back with `linear_of`. Doing both at every
level of a chain of n terms costs O(n) per level, O(n**2) in all. A `Sum` stands for that
expression without building it: the parent takes its linear form directly (`form()`, equal to
`linear_of(rebuild(...))`, dict order included, since the order of atoms decides the order of
terms in the result), and only the root of the chain calls `expr()`.

A scalar form is kept normalized as `linear_of(rebuild(form))` would give it: coefficients as
signed residues modulo 2**bits, those that rebuild adds (positive ones and the type's minimum,
which rebuild keeps as `atom * MIN`) in `pos`, the subtracted ones in `neg`, each in the order
rebuild emits them. Adding a short operand to a long scalar chain (`... + x*4 + 3`) then updates
`pos`/`neg` in place (`add_into`), O(short operand) per level; a long chain on the right
(`x - (y + (z + ...))`) is copied dict-wise with the short operand's atoms put first
(`add_onto`). Anything else (an atom's term changing side, a product with a constant) reads the
form back in one pass over it, as before but without building and walking an expression.
Vector forms stay as the plain form and are read back through the expression (rare, and exact
by construction).
"""

from __future__ import annotations

from ..ir.dtype import DataType
from .linear import Linear, signed, linear_of, rebuild, wrap


class Sum:
    """The expression `rebuild(form, dtype)` of an integer chain, not built yet: scalar ones as
    their normalized read-back form (`pos`, `neg`, `c`), vector ones as the form (`lin`)."""

    __slots__ = ("dtype", "pos", "neg", "c", "lin")

    def __init__(self, dtype: DataType, pos=None, neg=None, c=0, lin=None):
        self.dtype = dtype
        self.pos, self.neg, self.c = pos, neg, c
        self.lin = lin

    @property
    def is_scalar(self) -> bool:
        """True for a scalar chain (kept as its read-back form)."""
        return self.lin is None

    def form(self) -> Linear:
        """`linear_of(self.expr())`, without building the expression where it is scalar."""
        if self.is_scalar:
            return Linear(1, {**self.pos, **self.neg}, self.c)
        return linear_of(rebuild(self.lin, self.dtype))

    def expr(self):
        """Build the chain's canonical expression (done once, at its root)."""
        return rebuild(self.lin if not self.is_scalar else self.form(), self.dtype)


def _minimum(dt: DataType) -> int:
    return -(1 << (dt.bits - 1))


def _canon(k: int, dt: DataType):
    """(coefficient, side) of `k * atom` in the read-back form: side 1 for an added term, -1 for
    a subtracted one, 0 when the coefficient vanishes modulo 2**bits."""
    ks = signed(k, dt)
    if ks == 0:
        return 0, 0
    if ks == _minimum(dt):
        return wrap(ks, dt), 1  # rebuilt as `atom * MIN`, read back as the literal's value
    return ks, (1 if ks > 0 else -1)


def _canon_const(c: int, dt: DataType) -> int:
    cs = signed(c, dt)
    return wrap(cs, dt) if cs == _minimum(dt) else cs


def sum_of(lin: Linear, dt: DataType) -> Sum:
    """The Sum whose expression is `rebuild(lin, dt)`."""
    if dt.lanes != 1:
        return Sum(dt, lin=lin)
    pos, neg = {}, {}
    for atom, k in lin.base.items():
        v, side = _canon(k, dt)
        if side > 0:
            pos[atom] = v
        elif side < 0:
            neg[atom] = v
    return Sum(dt, pos, neg, _canon_const(lin.c, dt))


def add_into(a, b, k: int):
    """`a + k*b` (k = 1 or -1) as the updated Sum `a`, where `a` is a scalar Sum, `b` has no
    more atoms than `a`, and no atom moves between the added and subtracted terms; else None.

    `a` is consumed (updated in place): the caller's chain owns it. Without a move the order
    of the rebuilt terms is `a`'s, with `b`'s new atoms after them on their side, which is
    what rebuilding `a.form() + k*b.form()` and reading it back gives."""
    if not isinstance(a, Sum) or not a.is_scalar:
        return None
    lb = b.form() if isinstance(b, Sum) else linear_of(b)
    pos, neg, dt = a.pos, a.neg, a.dtype
    if len(lb.base) > len(pos) + len(neg):
        return None
    changes = []
    for atom, kb in lb.base.items():
        if atom in pos:
            side = 1
            old = pos[atom]
        elif atom in neg:
            side = -1
            old = neg[atom]
        else:
            side, old = 0, 0
        v, new_side = _canon(old + k * kb, dt)
        if side and new_side and new_side != side:
            return None  # the atom's term changes place in the rebuilt order
        changes.append((atom, side, v, new_side))
    for atom, side, v, new_side in changes:
        if side:
            table = pos if side > 0 else neg
            if new_side:
                table[atom] = v
            else:
                del table[atom]
        elif new_side:
            (pos if new_side > 0 else neg)[atom] = v
    a.c = _canon_const(a.c + k * lb.c, dt)
    return a


def add_onto(a, b, k: int):
    """`a + k*b` (k = 1 or -1) as a new Sum, where `b` is a scalar Sum (a long chain on the
    right: `x - (y + (z + ...))`), or None.

    Rebuilding `a`'s form plus `k` times `b`'s and reading it back puts `a`'s atoms first on
    their side (in `a`'s order), then `b`'s other atoms, each on its side after the sign `k`:
    `b`'s tables are copied whole (a dict copy, not a loop per atom) with `a`'s atoms fixed up
    afterwards. A subtraction moves every atom of `b` to the other side, except those with the
    type's minimum as coefficient: with any of those present this gives None."""
    if not isinstance(b, Sum) or not b.is_scalar:
        return None
    dt = b.dtype
    if k < 0 and wrap(_minimum(dt), dt) in b.pos.values():
        return None
    la = a.form() if isinstance(a, Sum) else linear_of(a)
    pos, neg = {}, {}
    final = []
    for atom, ka in la.base.items():
        kb = b.pos.get(atom)
        if kb is None:
            kb = b.neg.get(atom, 0)
        v, side = _canon(ka + k * kb, dt)
        final.append((atom, v, side))
        if side > 0:
            pos[atom] = v
        elif side < 0:
            neg[atom] = v
    if k > 0:
        pos.update(b.pos)
        neg.update(b.neg)
    else:
        pos.update({atom: -v for atom, v in b.neg.items()})
        neg.update({atom: -v for atom, v in b.pos.items()})
    for atom, v, side in final:  # `a`'s atoms: their own value, on their own side only
        if side > 0:
            pos[atom] = v
            neg.pop(atom, None)
        elif side < 0:
            neg[atom] = v
            pos.pop(atom, None)
        else:
            pos.pop(atom, None)
            neg.pop(atom, None)
    return Sum(dt, pos, neg, _canon_const(la.c + k * b.c, dt))
