"""SplitLongLoops: serial loops that may run long become chunks of unrolled iterations, for drivers
that cut loops short (the "loop_trip_limit_65535" quirk of llvmpipe).

llvmpipe keeps one iteration budget of 65535 per shader invocation, shared by every loop of the
kernel: each loop back edge spends one, and when it is gone every loop exits silently. Nesting
loops does not help (the inner and outer back edges draw on the same budget); fewer back edges
do. So a loop whose trip count may exceed `threshold` becomes

    for v_o in serial(ceildiv(extent, factor)):
        for v_i in unrolled(factor):
            if v_o * factor + v_i < extent:      # omitted when factor divides a constant extent
                v = min + v_o * factor + v_i
                body

which codegen emits as `factor` copies of the body per back edge. `factor` is the smallest power
of two that brings the (largest possible) trip count under `threshold` back edges, at most
`max_factor` (codegen unrolls up to 64 copies); a loop whose extent is unbounded gets
`max_factor`. The budget is then 65535 * factor body executions per invocation; beyond that the
driver still stops. Symbolic extents are exact: the guard runs the last, partial chunk. A loop of
constant bounds and at most `factor` iterations just becomes unrolled (codegen copies it whole),
and so does, as one guarded chunk, a loop of `whole` (the caller knows it runs at most `factor`).
Loops whose bodies allocate or declare buffers are left alone (codegen does not copy those).

A while loop (whose trip count nothing bounds) runs `factor` iterations per back edge, at most
WHILE_MAX_FACTOR, each guarded by the condition:

    while c:
        for _ in unrolled(factor):
            if c: body

(once c fails, no later copy runs, so nothing changes it back; codegen emits the unrolled loop as
copies of its body, while the IR keeps a single one, so each variable is still bound once). A
condition with an atomic or subgroup operation is left alone: the copies would run it again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..arith.bound import value_range
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DataType
from ..ir.functor import Mutator
from ..ir.op import is_atomic, is_subgroup
from ..ir.traversal import walk
from .base import Pass

_SPLIT_KINDS = ("serial", "unrolled", "vectorized")  # what codegen emits as loops
_INT32 = DataType("int", 32)
WHILE_MAX_FACTOR = 16   # copies of a while loop's body per back edge: 65535 * 16 iterations


@dataclass(frozen=True)
class SplitLongLoops(Pass):
    """Split serial loops that may exceed `threshold` back edges (see the module docstring)."""

    threshold: int = 16384
    max_factor: int = 64
    # a variant chosen at call time (vkir.driver.loop_budget): split exactly the loops whose loop
    # variables are in `only`, each by `factor`, whatever their bounds; those also in `whole`
    # run at most `factor` iterations for the calls that use the variant: no loop is left of them
    factor: int = 0
    only: frozenset = frozenset()
    whole: frozenset = frozenset()

    def transform(self, func):
        """Split every loop whose trip count may exceed the threshold into a nest (see the module
        docstring), or with `factor`, exactly the loops of `only`."""
        splitter = _Splitter(self.threshold, self.max_factor, self.factor, self.only,
                             self.whole)
        body = splitter.visit(func.body)
        return func if body is func.body else replace(func, body=body)


def _factor(trips: int | None, threshold: int, max_factor: int) -> int:
    """The unroll factor for a loop of at most `trips` iterations (None: unbounded)."""
    if trips is None:
        return max_factor
    factor = 1
    while factor < max_factor and -(-trips // factor) > threshold:
        factor *= 2
    return factor


def splittable(s: S.For | S.While) -> bool:
    """Whether SplitLongLoops can split loop `s` (codegen emits it as a loop, and its body
    allocates or declares no buffer, which codegen could not copy; a while loop's condition has
    no atomic or subgroup operation, which each copy would run once more)."""
    if isinstance(s, S.While):
        if any(isinstance(n, E.Call) and (is_atomic(n.op) or is_subgroup(n.op))
               for n in walk(s.condition)):
            return False
    elif s.kind not in _SPLIT_KINDS:
        return False
    return not any(isinstance(n, (S.AllocBuffer, S.DeclBuffer)) for n in walk(s.body))


class _Splitter(Mutator):
    def __init__(self, threshold: int, max_factor: int, factor: int = 0, only=frozenset(),
                 whole=frozenset()):
        self.threshold = threshold
        self.max_factor = max_factor
        self.factor = factor
        self.only = only
        self.whole = whole

    def visit_While(self, s: S.While):
        chosen = s in self.only if self.factor else True
        new = self.generic_visit(s)
        if not chosen or not splittable(new):
            return new
        factor = min(self.factor or self.max_factor, WHILE_MAX_FACTOR)
        if factor <= 1:
            return new
        counter = E.Var("copy", _INT32)
        copies = S.For(counter, E.IntImm(_INT32, 0), E.IntImm(_INT32, factor), "unrolled",
                       S.IfThenElse(new.condition, new.body))
        return S.While(new.condition, copies, span=s.span)

    def visit_For(self, s: S.For):
        s = self.generic_visit(s)
        if not splittable(s):
            return s
        dt = s.loop_var.dtype
        if self.factor:
            if s.loop_var not in self.only:
                return s
            factor = self.factor
        else:
            _, hi = value_range(s.extent)
            if hi is None or hi <= self.threshold:
                return s
            bounded = hi < (1 << (dt.bits - 2)) if dt.is_int else hi < (1 << (dt.bits - 1))
            factor = _factor(hi if bounded else None, self.threshold, self.max_factor)
        if factor == 1:
            return s
        if isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm) and \
                s.extent.value <= factor:   # the chunk covers it: copies, no loop
            return replace(s, kind="unrolled")
        k = E.IntImm(dt, factor)
        inner = E.Var(s.loop_var.name + "_i", dt)
        if s.loop_var in self.whole:   # one guarded chunk: copies, no loop
            start = inner if isinstance(s.min, E.IntImm) and s.min.value == 0 else \
                E.Add(s.min, inner)
            body = S.IfThenElse(E.LT(inner, s.extent), S.LetStmt(s.loop_var, start, s.body))
            return S.For(inner, E.IntImm(dt, 0), k, "unrolled", body, span=s.span)
        outer = E.Var(s.loop_var.name + "_o", dt)
        offset = E.Add(E.Mul(outer, k), inner)
        start = offset if isinstance(s.min, E.IntImm) and s.min.value == 0 else E.Add(s.min, offset)
        body = S.LetStmt(s.loop_var, start, s.body)
        exact = isinstance(s.extent, E.IntImm) and s.extent.value % factor == 0
        if exact:
            trips = E.IntImm(dt, s.extent.value // factor)
        else:
            body = S.IfThenElse(E.LT(offset, s.extent), body)
            # ceildiv without overflow near the type's maximum; 0 for extents <= 0
            zero, one = E.IntImm(dt, 0), E.IntImm(dt, 1)
            trips = E.Select(E.GT(s.extent, zero),
                             E.Add(E.FloorDiv(E.Sub(s.extent, one), k), one), zero)
        unrolled = S.For(inner, E.IntImm(dt, 0), k, "unrolled", body)
        # the chunk loop keeps the loop's annotations (a loop-cut check among them)
        return S.For(outer, E.IntImm(dt, 0), trips, "serial", unrolled,
                     annotations=s.annotations, span=s.span)
