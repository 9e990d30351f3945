"""LowerAsync: async pipeline constructs lowered for Vulkan, which has no asynchronous copy.

Producers run synchronously (`AsyncScope` becomes its body) and commits become their bodies, so
every write has landed by the time a wait is reached. What remains is synchronisation between the
invocations of a workgroup through shared memory, which the async queues implied and which a
workgroup `Barrier()` now provides. The buffers concerned are the shared buffers that async scopes
write; between a write to one of them and a read of the same version by another invocation there
must be a barrier (the wait's barrier, read after write), and so must there be between a read and
the next write of that version (write after read: with `d + 1` versions for a stage distance `d`
the producer overwrites, one iteration later, the version that consumers of the previous
iteration read).

Barriers are placed by a small dataflow over the statement tree: it tracks, per tracked buffer and
per version (the leading index `(j - min) % V` or a constant, when it is the same in every
invocation), which versions were written and read since the last barrier, around loops until a
fixed point (shifting the loop var by one on the back edge). A barrier goes before a statement
that reads a version written since the last barrier, or writes a version read or written since
then: before the wait's consumer when the data crosses invocations, nothing when it does not. For a
double-buffered pipeline this gives one barrier per iteration, where the unpipelined loop needs two.
A kernel without threadIdx loops is a single invocation and gets no barrier. Existing barriers
are respected. A pipeline inside control flow that differs between invocations is refused
(`TransformError`): no barrier may go there.

Only shared buffers written by async scopes are tracked: shared memory written synchronously is,
as everywhere in vkir, synchronised by the program's own `T.barrier()`. In a software-pipelined
loop over a workgroup, make the stages that fill shared memory async.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import (
    AllocBuffer, AsyncCommitQueue, AsyncScope, AsyncWaitQueue, Barrier, BufferLoad, BufferStore,
    DeclBuffer, FloorMod, For, IfThenElse, IntImm, LetStmt, Mutator, PrimFunc, SeqStmt, Var, seq,
)
from ..arith.linear import ScalarLinear as Lin
from ..errors import TransformError
from ..ir.traversal import walk
from .base import Pass

_ASYNC = (AsyncScope, AsyncCommitQueue, AsyncWaitQueue)
_UNKNOWN = ("?",)


@dataclass(frozen=True)
class LowerAsync(Pass):
    """Lower AsyncScope/AsyncCommitQueue/AsyncWaitQueue to synchronous code plus barriers."""

    def transform(self, func: PrimFunc) -> PrimFunc:
        """Lower async scopes and queues to synchronous stores and barriers (see the module
        docstring)."""
        if not any(isinstance(n, _ASYNC) for n in walk(func.body)):
            return func
        nodes = list(walk(func.body))
        threaded = any(isinstance(n, For) and n.kind == "thread_binding"
                       and n.thread.startswith("threadIdx") for n in nodes)
        tracked = set()
        for n in nodes:
            if isinstance(n, AsyncScope):
                tracked |= {s.buffer.data for s in walk(n.body)
                            if isinstance(s, BufferStore) and s.buffer.scope == "shared"}
        if not threaded or not tracked:
            return func.with_body(_Strip().visit(func.body))
        uniform = set(func.params) | set(func.size_vars)
        body, _ = _Sync(tracked, uniform).stmt(func.body, frozenset())
        return func.with_body(body)


class _Strip(Mutator):
    """Async constructs replaced by their bodies."""

    def visit_AsyncScope(self, node):
        return self.visit(node.body)

    def visit_AsyncCommitQueue(self, node):
        return self.visit(node.body)

    def visit_AsyncWaitQueue(self, node):
        return self.visit(node.body)


def _has_sync(stmt) -> bool:
    return any(isinstance(n, _ASYNC + (Barrier,)) for n in walk(stmt))


class _Sync:
    """The barrier-placing dataflow. A state is a frozenset of (kind, data var, version) with kind
    "r" or "w"; version is ("c", k), ("m", V, Lin) or _UNKNOWN."""

    def __init__(self, tracked: set, uniform: set):
        self.tracked = tracked
        self.uniform = set(uniform)

    # -- versions --------------------------------------------------------------------------------

    def _is_uniform(self, expr) -> bool:
        for n in walk(expr):
            if isinstance(n, BufferLoad) or (isinstance(n, Var) and n not in self.uniform):
                return False
        return True

    def _version(self, index):
        if isinstance(index, IntImm):
            return ("c", index.value)
        if isinstance(index, FloorMod) and isinstance(index.b, IntImm) and index.b.value > 0 \
                and self._is_uniform(index.a):
            v = index.b.value
            lin = Lin.of(index.a)
            return ("m", v, Lin(lin.terms, lin.const % v))
        return _UNKNOWN

    @staticmethod
    def _disjoint(a, b) -> bool:
        if a[0] == "c" and b[0] == "c":
            return a[1] != b[1]
        if a[0] == "m" and b[0] == "m" and a[1] == b[1]:
            d = a[2] - b[2]
            return d.is_const and d.const % a[1] != 0
        return False

    def _conflicts(self, state, kind_set, data, version) -> bool:
        return any(k in kind_set and d is data and not self._disjoint(ver, version)
                   for k, d, ver in state)

    def _accesses(self, stmt):
        out = set()
        for n in walk(stmt):
            if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.data in self.tracked:
                kind = "r" if isinstance(n, BufferLoad) else "w"
                version = self._version(n.indices[0]) if n.indices else _UNKNOWN
                out.add((kind, n.buffer.data, version))
        return frozenset(out)

    # -- statements ------------------------------------------------------------------------------

    def leaf(self, stmt, state):
        """A statement with no async construct or barrier inside, or a divergent one."""
        acc = self._accesses(stmt)
        need = any(self._conflicts(state, ("w",), d, ver) if k == "r"
                   else self._conflicts(state, ("r", "w"), d, ver) for k, d, ver in acc)
        if need:
            return seq(Barrier(), stmt), acc
        return stmt, state | acc

    def divergent(self, s, state):
        """A statement whose control flow differs between invocations: no barrier may go inside,
        so it must not both produce and consume shared data of the pipeline."""
        acc = self._accesses(s)
        both = {d for k, d, _ in acc if k == "w"} & {d for k, d, _ in acc if k == "r"}
        if both and any(isinstance(n, AsyncWaitQueue) for n in walk(s)):
            name = min(v.name for v in both)
            raise TransformError(
                f"LowerAsync: the async pipeline over shared buffer {name!r} is inside control "
                f"flow that differs between invocations; the workgroup barrier it needs cannot "
                f"be placed there")
        return self.leaf(_Strip().visit(s), state)

    def stmt(self, s, state):
        """(lowered statement, state after it)."""
        if not _has_sync(s):
            return self.leaf(s, state)
        if isinstance(s, Barrier):
            return s, frozenset()
        if isinstance(s, SeqStmt):
            out = []
            for c in s.seq:
                c2, state = self.stmt(c, state)
                out.append(c2)
            return seq(*out), state
        if isinstance(s, _ASYNC):
            return self.stmt(s.body, state)
        if isinstance(s, (AllocBuffer, DeclBuffer)):
            body, state = self.stmt(s.body, state)
            return type(s)(s.buffer, body), state
        if isinstance(s, LetStmt):
            if self._is_uniform(s.value):
                self.uniform.add(s.var)
            body, state = self.stmt(s.body, state)
            return LetStmt(s.var, s.value, body), state
        if isinstance(s, IfThenElse):
            if not self._is_uniform(s.condition):
                return self.divergent(s, state)
            then, st1 = self.stmt(s.then_case, state)
            if s.else_case is None:
                return IfThenElse(s.condition, then), st1 | state
            other, st2 = self.stmt(s.else_case, state)
            return IfThenElse(s.condition, then, other), st1 | st2
        if isinstance(s, For):
            return self.loop(s, state)
        return self.leaf(_Strip().visit(s), state)

    def loop(self, s: For, state):
        if s.kind == "thread_binding":
            if not s.thread.startswith("threadIdx"):
                self.uniform.add(s.loop_var)
            body, state = self.stmt(s.body, state)
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread, s.annotations), state
        if not (self._is_uniform(s.min) and self._is_uniform(s.extent)):
            return self.divergent(s, state)
        v = s.loop_var
        self.uniform.add(v)
        entry = state
        while True:
            body, end = self.stmt(s.body, entry)
            new_entry = entry | self._shift(end, v)
            if new_entry == entry:
                break
            entry = new_entry
        after = self._forget(entry | end, v)
        return For(v, s.min, s.extent, s.kind, body, s.thread, s.annotations), after

    @staticmethod
    def _shift(state, v):
        """The state seen from the next iteration: v becomes v - 1."""
        out = set()
        for k, d, ver in state:
            if ver[0] == "m" and ver[2].coeff(v):
                lin = ver[2] - ver[2].coeff(v)
                ver = ("m", ver[1], Lin(lin.terms, lin.const % ver[1]))
            out.add((k, d, ver))
        return frozenset(out)

    @staticmethod
    def _forget(state, v):
        """Leaving the loop: versions that depend on its var are unknown."""
        return frozenset((k, d, _UNKNOWN if ver[0] == "m" and ver[2].coeff(v) else ver)
                         for k, d, ver in state)
