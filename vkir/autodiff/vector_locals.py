"""Vector-valued locals as scalars, so that `vkir.grad` differentiates them like scalar ones.

The script keeps a vector variable (`acc = T.float32x4(0)`, then `acc += v`, `acc[1] = s`) in a
one-element local buffer of a vector dtype, and a vector let (`v = T.float32x4(a, b, c, d)`) as a
LetStmt of a vector Var. The adjoint rules (vkir.autodiff.derivatives) are scalar, so before
differentiating, `scalarize` rewrites each such buffer into a local buffer of one scalar per lane
and each vector let into one let per lane, and computes every vector expression that reads them
lane by lane (arithmetic, comparisons, selects, casts, broadcasts, ramps, shuffles, elementwise
math). The result computes the same values: vector operations are lane-wise by definition.

An expression it cannot split (a call that is not elementwise, a vector read of a global buffer
of vector elements) stays a vector and is read lane by lane through a one-lane shuffle; the
adjoint then names it as not differentiable, as it would have before.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from ..ir.functor import Mutator
from ..ir.intrinsics import INTRINSICS

_ZERO = E.IntImm(DataType("int", 32), 0)


def _is_vector(e) -> bool:
    return isinstance(e.dtype, DataType) and e.dtype.lanes > 1


def _reads_other_lane(value, buf: Buffer, lane: int) -> bool:
    """Whether value reads an element of buf other than `lane`."""
    from ..ir import walk

    return any(isinstance(n, E.BufferLoad) and n.buffer is buf
               and n.indices[0] != E.IntImm(DataType("int", 32), lane) for n in walk(value))


def _vector_local(buf: Buffer) -> bool:
    """Whether buf is a variable of the script: a one-element local buffer of a vector dtype."""
    return buf.scope == "local" and buf.dtype.lanes > 1 and len(buf.shape) == 1 \
        and isinstance(buf.shape[0], E.IntImm) and buf.shape[0].value == 1


def _elementwise(op: str) -> bool:
    """Whether the intrinsic `op` computes each lane of its result from the same lane of its
    arguments (the math functions: T.exp, T.sqrt, T.fma, ...)."""
    entry = INTRINSICS.get(op)
    return entry is not None and entry.type_rule != "reinterpret"


class _Scalarize(Mutator):
    """Rewrites vector locals and vector lets into one scalar per lane (see the module doc)."""

    def __init__(self):
        self.buffers: dict = {}   # vector local buffer -> its buffer of one scalar per lane
        self.vars: dict = {}      # vector let var -> tuple of lane vars

    # -- statements --------------------------------------------------------------------------

    def visit_AllocBuffer(self, s):
        if not _vector_local(s.buffer):
            return self.generic_visit(s)
        old = s.buffer
        elem = old.dtype.element_of()
        data = E.Var(old.name, PointerType(elem, "local"), span=old.data.span)
        new = Buffer(old.name, data, elem, (E.IntImm(DataType("int", 32), old.dtype.lanes),),
                     scope="local", span=old.span)
        self.buffers[old] = new
        return S.AllocBuffer(new, self.visit(s.body), span=s.span)

    def visit_BufferStore(self, s):
        new = self.buffers.get(s.buffer)
        if new is None:
            return self.generic_visit(s)
        lanes = self.lanes(s.value)
        changed = [(k, v) for k, v in enumerate(lanes)
                   if not (isinstance(v, E.BufferLoad) and v.buffer is new
                           and v.indices[0] == E.IntImm(DataType("int", 32), k))]
        index = lambda k: (E.IntImm(DataType("int", 32), k),)  # noqa: E731
        if not any(_reads_other_lane(v, new, k) for k, v in changed):
            # each lane reads only its own old value (acc += v, a lane store): store in place
            return S.seq(*[S.BufferStore(new, v, index(k), span=s.span) for k, v in changed]) \
                if changed else S.SeqStmt((), span=s.span)
        # a lane reads another (a swizzle): every lane is computed into a temporary first
        data = E.Var(f"{new.name}_next", PointerType(new.dtype, "local"))
        temp = Buffer(data.name, data, new.dtype, new.shape, scope="local")
        return S.AllocBuffer(temp, S.seq(
            *[S.BufferStore(temp, v, index(k), span=s.span) for k, v in changed],
            *[S.BufferStore(new, E.BufferLoad(temp, index(k)), index(k), span=s.span)
              for k, _ in changed]), span=s.span)

    def visit_LetStmt(self, s):
        if not (_is_vector(s.var) and s.var.dtype.is_float):
            return self.generic_visit(s)
        lanes = self.lanes(s.value)
        names = tuple(E.Var(f"{s.var.name}_{k}", v.dtype, span=s.var.span)
                      for k, v in enumerate(lanes))
        self.vars[s.var] = names
        body = self.visit(s.body)
        for var, value in reversed(list(zip(names, lanes))):
            body = S.LetStmt(var, value, body, span=s.span)
        return body

    # -- expressions ---------------------------------------------------------------------------

    def visit_BufferLoad(self, e):
        if e.buffer in self.buffers:
            return self._pack(self.lanes(e))
        return self.generic_visit(e)

    def visit_Var(self, e):
        if e in self.vars:
            return self._pack(self.lanes(e))
        return e

    def visit_Shuffle(self, e):
        picked = self._picked(e)
        return picked[0] if len(picked) == 1 else self._pack(picked)

    @staticmethod
    def _pack(lanes):
        return E.Shuffle(tuple(lanes), tuple(range(len(lanes))))

    def _picked(self, e: E.Shuffle) -> list:
        pool = []
        for v in e.vectors:
            pool.extend(self.lanes(v) if _is_vector(v) else [self.visit(v)])
        return [pool[i] for i in e.indices]

    def lanes(self, e) -> list:
        """The scalar expressions of each lane of the vector expression e."""
        n = e.dtype.lanes
        if isinstance(e, E.BufferLoad) and e.buffer in self.buffers:
            new = self.buffers[e.buffer]
            return [E.BufferLoad(new, (E.IntImm(DataType("int", 32), k),), span=e.span)
                    for k in range(n)]
        if isinstance(e, E.Var) and e in self.vars:
            return list(self.vars[e])
        if isinstance(e, E.Broadcast) and not _is_vector(e.value):
            return [self.visit(e.value)] * n
        if isinstance(e, E.Ramp) and not _is_vector(e.base):
            base, stride = self.visit(e.base), self.visit(e.stride)
            return [base + stride * E.const(k, stride.dtype) if k else base for k in range(n)]
        if isinstance(e, E.Shuffle):
            return self._picked(e)
        if isinstance(e, E.BINARY_OPS):
            return [type(e)(a, b, span=e.span)
                    for a, b in zip(self._spread(e.a, n), self._spread(e.b, n))]
        if isinstance(e, E.Not):
            return [E.Not(a, span=e.span) for a in self.lanes(e.a)]
        if isinstance(e, E.Select):
            return [E.Select(c, t, f, span=e.span) for c, t, f in
                    zip(self._spread(e.condition, n), self.lanes(e.true_value),
                        self.lanes(e.false_value))]
        if isinstance(e, E.Cast) and e.value.dtype.lanes == n:
            return [E.Cast(e.dtype.element_of(), v, span=e.span) for v in self.lanes(e.value)]
        if isinstance(e, E.Call) and _elementwise(e.op) and \
                all(a.dtype.lanes in (1, n) for a in e.args):
            args = [self._spread(a, n) for a in e.args]
            return [E.Call(e.dtype.element_of(), e.op, tuple(a[k] for a in args), span=e.span)
                    for k in range(n)]
        whole = self.visit(e)
        return [E.Shuffle((whole,), (k,)) for k in range(n)]

    def _spread(self, e, n: int) -> list:
        """e's lanes, or e itself n times when it is a scalar (a select's scalar condition)."""
        return self.lanes(e) if _is_vector(e) else [self.visit(e)] * n


def _has_vector_locals(func) -> bool:
    from ..ir import walk

    return any((isinstance(n, S.AllocBuffer) and _vector_local(n.buffer))
               or (isinstance(n, S.LetStmt) and _is_vector(n.var)) for n in walk(func.body))


def scalarize(func):
    """func with its vector locals and vector lets rewritten into one scalar per lane (func
    itself when it has none)."""
    from dataclasses import replace

    if not _has_vector_locals(func):
        return func
    return replace(func, body=_Scalarize().visit(func.body))


__all__ = ["scalarize"]
