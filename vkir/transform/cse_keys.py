"""Hash-consed identities of expressions for common subexpression elimination.

`KeyTable` gives every expression node two small integers, built bottom-up from its children's:

- its *syntactic* id: equal ids mean structurally equal expressions (variables and buffers by
  identity, float constants by their exact bits, so `x * 0.0` and `x * -0.0` differ);
- its *equivalence* id, used when CSE runs with `identify_equiv_terms=True`: equal ids mean the
  expressions compute the same value by the laws vkir accepts for that type:
    * integer `+ - *` (signed or unsigned, scalar or vector) form a commutative ring modulo
      2**bits (two's-complement wraparound), so they are put in a polynomial normal form: a sum
      of monomials (multisets of atoms) with coefficients reduced modulo 2**bits. This identifies
      terms up to commutativity, associativity and distributivity (`x*(y+z)` == `x*y + x*z`);
      a sum or product of more than MAX_POLY_TERMS terms is an atom (of its operands' ids);
    * other commutative operators (integer min/max/bitwise and/or/xor, == and !=, logical
      and/or) sort their operands;
    * on floats only commutativity is used (`a+b` == `b+a`, `a*b` == `b*a`): float addition is
      not associative and never gets normalized beyond operand order.
  Everything else (division, casts, calls, loads, ...) is an atom whose operands are normalized.

Ids are only compared, never printed, so they can be assigned in any deterministic order.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from ..ir import (
    Add, And, BufferLoad, Call, EQ, FloatImm, IntImm, Let, Max, Min, Mul, NE, Or, PrimExpr, Sub,
    Var,
)
from ..ir.dtype import DataType
from ..ir.intrinsics import INTRINSICS

# a sum or product with more terms than this stays an atom: expanding products is exponential,
# and every prefix of a long sum normalized would make the sum's keys quadratic in its length
MAX_POLY_TERMS = 64

_INT_COMMUTATIVE = (Min, Max)
_FLOAT_COMMUTATIVE = (Add, Mul, EQ, NE)
_COMMUTATIVE_CALLS = frozenset(name for name, row in INTRINSICS.items() if row.commutative)


def attributes(expr) -> tuple:
    """The non-child data of `expr` that takes part in its identity: dtype, constant value, op
    name, lanes, shuffle indices, and (by identity) variables, Let vars and buffers.

    A DataType enters as its (code, bits, lanes): equal exactly when the DataTypes are, and
    cheaper to hash (a DataType hashes its spelling). Operators whose only fields are operands
    (`a + b`, `a < b`, `!a`) have none, without a look at their fields."""
    cls = type(expr)
    if _operands_only(cls):
        return ()
    if cls is IntImm:
        dtype = expr.dtype
        return (dtype.code, dtype.bits, dtype.lanes, expr.value)
    if cls is FloatImm:
        dtype = expr.dtype
        return (dtype.code, dtype.bits, dtype.lanes, expr.value.hex())
    if cls is Var:
        return (expr,)
    if cls is Let:
        return (expr.var,)
    if cls is BufferLoad:
        return (expr.buffer,)
    out = []
    for f in _fields(cls):
        value = getattr(expr, f)
        if isinstance(value, PrimExpr):
            continue
        if isinstance(value, tuple) and any(isinstance(v, PrimExpr) for v in value):
            continue
        if isinstance(value, DataType):
            value = (value.code, value.bits, value.lanes)
        out.append(value)
    return tuple(out)


@lru_cache(maxsize=None)
def _operands_only(cls) -> bool:
    """Whether the fields of `cls` are only operands (binary, comparison and unary operators),
    which are always expressions."""
    return _fields(cls) in (("a", "b"), ("a",))


@lru_cache(maxsize=None)
def _fields(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")


class KeyTable:
    """Interns expression keys to ints; one table per scan of a function."""

    def __init__(self, equivalence: bool):
        self.equivalence = equivalence
        self._ids: dict = {}
        self._poly: dict[int, dict] = {}  # equivalence id of an integer ring term -> polynomial

    def _intern(self, key) -> int:
        ids = self._ids
        return ids.setdefault(key, len(ids))

    def variable(self, var, binder) -> int:
        """Syntactic id of the variable `var` under the binding instance `binder` (what
        `syntactic(var, (binder,))` gives, without dispatching on the node's class)."""
        ids = self._ids
        return ids.setdefault((Var, (var,), (binder,)), len(ids))

    def syntactic(self, expr, child_ids: tuple) -> int:
        """Id of `expr` given the syntactic ids of its children (in traversal order); for a Var,
        `child_ids` holds what distinguishes its binding instance."""
        ids = self._ids
        return ids.setdefault((type(expr), attributes(expr), child_ids), len(ids))

    def equivalent(self, expr, child_eids: tuple, syntactic_id: int) -> int:
        """Id of `expr` up to the laws above, given its children's equivalence ids."""
        if not self.equivalence:
            return syntactic_id
        dtype = expr.dtype
        is_int = getattr(dtype, "code", None) in ("int", "uint")
        if is_int and isinstance(expr, IntImm):
            return self._from_poly(dtype, {(): expr.value})
        if is_int and isinstance(expr, (Add, Sub, Mul)):
            return self._ring(expr, dtype, child_eids)
        code = getattr(dtype, "code", None)
        commutative = (
            isinstance(expr, (EQ, NE))
            or (is_int and isinstance(expr, _INT_COMMUTATIVE))
            or (code == "float" and isinstance(expr, _FLOAT_COMMUTATIVE))
            or (code == "bool" and isinstance(expr, (And, Or)))
            or (isinstance(expr, Call) and expr.op in _COMMUTATIVE_CALLS)
        )
        if commutative:
            child_eids = tuple(sorted(child_eids))
        return self._intern(("equiv", type(expr), attributes(expr), child_eids))

    # -- integer polynomial normal form ---------------------------------------------------------

    def _poly_of(self, eid: int) -> dict:
        poly = self._poly.get(eid)
        return {(eid,): 1} if poly is None else poly

    def _from_poly(self, dtype, poly: dict) -> int:
        modulus = 1 << dtype.bits
        terms = {m: c % modulus for m, c in poly.items()}
        terms = {m: c for m, c in terms.items() if c}
        canonical = tuple(sorted(terms.items()))
        if len(canonical) == 1 and canonical[0][1] == 1 and len(canonical[0][0]) == 1:
            return canonical[0][0][0]  # a single atom: x + 0, x * 1 are x
        eid = self._intern(("poly", dtype, canonical))
        self._poly.setdefault(eid, terms)
        return eid

    def _ring(self, expr, dtype, child_eids: tuple) -> int:
        pa, pb = self._poly_of(child_eids[0]), self._poly_of(child_eids[1])
        if isinstance(expr, (Add, Sub)):
            if len(pa) + len(pb) > MAX_POLY_TERMS:
                return self._intern(("equiv", type(expr), (dtype,), child_eids))
            return self._from_poly(dtype, _add(pa, pb, 1 if isinstance(expr, Add) else -1))
        if len(pa) * len(pb) > MAX_POLY_TERMS:
            return self._intern(("equiv", Mul, (dtype,), tuple(sorted(child_eids))))
        product: dict = {}
        for ma, ca in pa.items():
            for mb, cb in pb.items():
                m = tuple(sorted(ma + mb))
                product[m] = product.get(m, 0) + ca * cb
        return self._from_poly(dtype, product)


def _add(pa: dict, pb: dict, sign: int) -> dict:
    out = dict(pa)
    for m, c in pb.items():
        out[m] = out.get(m, 0) + sign * c
    return out
