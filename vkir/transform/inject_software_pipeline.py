"""InjectSoftwarePipeline: a loop annotated with per-statement stages and orders becomes a
prologue, a pipelined body and an epilogue (the semantics of TVM's async software pipeline).

A statement of stage `s` runs, in the new loop's iteration for original index `j + s`, the work of
original iteration `j`: the body runs `extent - max_stage` iterations with every stage busy, the
prologue fills the pipeline and the epilogue drains it (both `max_stage` iterations: loops,
unrolled when short, with guards `min <= j < min + extent` where a stage has no iteration; one
iteration is emitted as straight-line code). Buffers produced in stage `d` and consumed in stage
`u > d` get `u - d + 1` versions, a new leading dimension indexed by `(j - min) % versions`.

Async stages: each statement of an async stage is wrapped in `AsyncScope`; runs of them adjacent
in the new order form one `AsyncCommitQueue(stage)` group (a run is split where a statement reads
what the open group writes). The grouping is the same in prologue, body and epilogue, so each
iteration commits the same sequence of groups. Every consumer of an async result is wrapped in
`AsyncWaitQueue(stage, in_flight)` with `in_flight = producer_head - consumer_head` summed over
the stage's commit groups (1 for stages [0, 1], 3 for [0, 3], 5 for the interleaved
producers). Where the producer of that stage is predicated in the same loop the count becomes
`if_then_else(predicate, count, 0)`; where the number of groups issued so far is unknown (a
predicated producer in an earlier loop) the count is 0, "wait for all". A wait implied by an
earlier one in the same iteration (same guard, no commit in between, smaller or equal count) is
dropped, and a smaller count moves to the earlier wait.

When the loop has fewer iterations than stages the body is empty and the epilogue guard of stage
`s` starts at `min + max_stage - s`, so that no iteration runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import (
    AllocBuffer, AsyncCommitQueue, AsyncScope, AsyncWaitQueue, Buffer, BufferLoad, BufferStore,
    Call, DeclBuffer, Evaluate, FloorMod, For, IfThenElse, IntImm, LetStmt, Mutator, PrimFunc, Var,
    seq,
)
from ..ir import expr as E
from ..ir.traversal import walk
from ..errors import TransformError
from .base import Pass
from .software_pipeline_linear import Lin, compare, const_diff
from .software_pipeline_plan import KEYS, PipelinePlan, plan_pipeline

UNROLL_LIMIT = 8  # prologues and epilogues of at most this many iterations are unrolled loops


@dataclass(frozen=True)
class InjectSoftwarePipeline(Pass):
    """Software-pipeline every loop annotated with `software_pipeline_stage` (innermost first)."""

    def transform(self, func: PrimFunc) -> PrimFunc:
        """Pipeline every loop annotated with stages and orders (see the module docstring)."""
        body = _Injector().visit(func.body)
        return func if body is func.body else func.with_body(body)


class _Injector(Mutator):
    """Finds annotated loops; rewrites the allocations around them whose buffers got versions."""

    def __init__(self):
        self.enclosing: list = []
        self.remap: dict = {}

    def visit_AllocBuffer(self, node: AllocBuffer):
        self.enclosing.append(node.buffer)
        body = self.visit(node.body)
        self.enclosing.pop()
        new = self.remap.get(node.buffer)
        if new is None:
            return node if body is node.body else AllocBuffer(node.buffer, body)
        old = node.buffer
        for n in walk(body):
            declared = isinstance(n, (BufferLoad, BufferStore, DeclBuffer))
            if (declared and n.buffer.data is old.data) or n is old.data:
                raise TransformError(
                    f"buffer {old.name!r} needs versions for a software pipeline but is also "
                    f"used outside the pipelined loop")
        return AllocBuffer(new, body)

    def visit_For(self, node: For):
        node = self.generic_visit(node)
        if not any(k in node.annotations for k in KEYS):
            return node
        plan = plan_pipeline(node, list(self.enclosing))
        enclosing = set(self.enclosing)
        for buf, (new, _count) in plan.versions.items():
            if buf in enclosing:
                if buf in self.remap:
                    raise TransformError(
                        f"buffer {buf.name!r} needs versions in two software-pipelined loops; "
                        f"allocate one buffer per loop")
                self.remap[buf] = new
        return _Emitter(plan).run()


@dataclass(eq=False)
class _Unit:
    """One statement emitted into one of the three loops."""

    p: object  # PipeStmt
    j: Lin  # the original iteration it works on
    guard: E.PrimExpr | None
    interval: tuple | None  # constant range of the loop var where the guard holds
    waits: dict = field(default_factory=dict)  # queue -> in-flight count expression


@dataclass(eq=False)
class _Pending:
    unit: _Unit
    total: Lin
    commits: int = 0


class _Emitter:
    """Builds prologue, body and epilogue for one PipelinePlan."""

    def __init__(self, plan: PipelinePlan):
        self.plan = plan
        loop = plan.loop
        self.var, self.dtype = loop.loop_var, loop.loop_var.dtype
        self.min, self.extent = Lin.of(loop.min), Lin.of(loop.extent)
        self.ms = plan.max_stage
        # global producer heads: the last original iteration each async stage has committed
        self.heads = {q: self.min - 1 for q in plan.async_writes}

    def run(self):
        plan, ms = self.plan, self.ms
        edge_kind = "unrolled" if ms <= UNROLL_LIMIT else "serial"
        annotations = plan.loop.annotations
        for k in KEYS:
            annotations = annotations.without(k)
        parts = [
            self.emit(Lin(), Lin(const=ms), edge_kind, {}, epilogue=False),
            self.emit(Lin(const=ms), self.extent - ms, plan.loop.kind, annotations,
                      epilogue=False),
            self.emit(self.extent, Lin(const=ms), edge_kind, {}, epilogue=True),
        ]
        parts = [p for p in parts if p is not None]
        stmt = seq(*parts) if parts else Evaluate(IntImm("int32", 0))
        for buf in reversed(plan.allocs):
            stmt = AllocBuffer(plan.versions.get(buf, (buf,))[0], stmt)
        return stmt

    # ------------------------------------------------------------------------------------------
    # guards

    @staticmethod
    def _decide(diff: Lin, strict: bool, v, vlo: Lin, vhi1: Lin):
        """Whether `diff > 0` (strict) / `diff >= 0` holds for all (True), none (False) of the
        loop range [vlo, vhi1], or is unknown (None)."""
        c = diff.coeff(v) if v is not None else 0
        lo_at, hi_at = (vlo, vhi1) if c >= 0 else (vhi1, vlo)
        dmin = diff.subst(v, lo_at) if v is not None else diff
        dmax = diff.subst(v, hi_at) if v is not None else diff
        if dmin.is_const and (dmin.const > 0 if strict else dmin.const >= 0):
            return True
        if dmax.is_const and (dmax.const <= 0 if strict else dmax.const < 0):
            return False
        return None

    @staticmethod
    def _interval(conds, v, vlo: Lin, vhi1: Lin):
        """The constant range [a, b) of the loop var where every condition holds, if known."""
        if v is None or not (vlo.is_const and vhi1.is_const):
            return None
        a, b = vlo.const, vhi1.const + 1
        for lhs, rhs, strict in conds:
            diff = rhs - lhs
            c, rest = diff.coeff(v), diff.without(v)
            if not rest.is_const or c not in (1, -1):
                return None
            r = rest.const
            if c == 1:  # v + r > 0  /  >= 0
                a = max(a, -r + 1 if strict else -r)
            else:  # r - v > 0  /  >= 0
                b = min(b, r if strict else r + 1)
        return a, b

    # ------------------------------------------------------------------------------------------

    def emit(self, delta: Lin, extent: Lin, kind: str, annotations, epilogue: bool):
        """One of the three loops: new loop var v over [min, min + extent), statement of stage s
        working on original iteration `v + delta - s`."""
        if extent.is_const and extent.const <= 0:
            return None
        unit_loop = extent.is_const and extent.const == 1
        if unit_loop:
            v, vval, vlo, vhi1 = None, self.min, self.min, self.min
        else:
            v = Var(self.var.name, self.dtype)
            vval, vlo, vhi1 = Lin({v: 1}), self.min, self.min + extent - 1
        hi = self.min + self.extent
        units = []
        for p in self.plan.ordered:
            j = vval + delta - p.stage
            lo = self.min + (self.ms - p.stage if epilogue else 0)
            keep, skip = [], False
            for lhs, rhs, strict in ((lo, j, False), (j, hi, True)):
                verdict = self._decide(rhs - lhs, strict, v, vlo, vhi1)
                if verdict is False:
                    skip = True
                elif verdict is None:
                    keep.append((lhs, rhs, strict))
            if skip:
                continue
            interval = self._interval(keep, v, vlo, vhi1)
            if interval is not None and interval[0] >= interval[1]:
                continue
            guard = None
            for lhs, rhs, strict in keep:
                cond = compare(lhs, rhs, strict, v, self.dtype)
                guard = cond if guard is None else E.And(guard, cond)
            units.append(_Unit(p, j, guard, interval))
        if not units:
            return None

        local = {}  # async stage -> the unit of one of its statements in this loop
        for u in units:
            if u.p.is_async:
                local.setdefault(u.p.stage, u)
        self._place_waits(units, local, v)
        body = self._build(units)

        for q, u in local.items():  # advance the global producer heads
            if u.guard is None and not (extent.is_const and extent.const >= 1):
                self.heads[q] = None  # the loop may not run at all
            elif u.guard is None:
                self.heads[q] = u.j.subst(v, vhi1) if v is not None else u.j
            elif u.interval is not None:
                self.heads[q] = u.j.subst(v, Lin(const=u.interval[1] - 1))
            else:
                self.heads[q] = None  # predicated: the number of issued groups is unknown
        if unit_loop:
            return body
        return For(v, self.min.expr(self.dtype), extent.expr(self.dtype), kind, body,
                   annotations=annotations)

    # ------------------------------------------------------------------------------------------
    # waits

    def _count(self, u: _Unit, q: int, local: dict, v):
        """(linear in-flight count, count expression) for consumer `u` of async stage `q`."""
        plan, c = self.plan, u.p
        prods = [p for p in plan.stmts
                 if p.is_async and p.stage == q and p is not c and p.writes & c.reads]
        # the latest (in commit order) group instance the consumer needs
        need = min(prods, key=lambda p: (0 if p.index < c.index else 1, -p.order))
        J = u.j - (0 if need.index < c.index else 1)
        P = plan.groups[need.group].pos
        groups = [g for g in plan.groups if g.stage == q]
        producer = local.get(q)
        if producer is not None:
            heads = [producer.j - (1 if g.pos >= c.order else 0) for g in groups]
        elif self.heads[q] is not None:
            heads = [self.heads[q]] * len(groups)
        else:
            return Lin(), E.const(0, self.dtype)  # unknown: wait for all
        total = Lin()
        for g, head in zip(groups, heads):
            total = total + head - J + (1 if g.pos > P else 0)
        if v is not None and u.interval is not None and u.interval[1] - u.interval[0] == 1:
            total = total.subst(v, Lin(const=u.interval[0]))  # the guard pins the iteration
        if total.is_const and total.const < 0:
            total = Lin()
        count = total.expr(self.dtype)
        if producer is not None and producer.guard is not None and not (
                total.is_const and total.const == 0):
            count = Call(self.dtype, "if_then_else",
                         (producer.guard, count, E.const(0, self.dtype)))
        return total, count

    def _place_waits(self, units: list, local: dict, v) -> None:
        plan = self.plan
        pending: dict = {}
        for k, u in enumerate(units):
            for q in sorted(plan.async_writes):
                if not any(p.is_async and p.stage == q and p is not u.p and p.writes & u.p.reads
                           for p in plan.stmts):
                    continue
                total, count = self._count(u, q, local, v)
                if not self._merge_wait(pending.setdefault(q, []), u, q, total, count):
                    u.waits[q] = count
                    pending[q].append(_Pending(u, total))
            ends_group = u.p.is_async and (k + 1 == len(units)
                                           or units[k + 1].p.group != u.p.group)
            if ends_group:
                for pw in pending.get(u.p.stage, ()):
                    pw.commits += 1

    @staticmethod
    def _merge_wait(pending: list, u: _Unit, q: int, total: Lin, count) -> bool:
        """Whether an earlier wait of this iteration makes the wait for `u` unnecessary (it
        executes whenever `u` does and leaves no more groups in flight), possibly after lowering
        that earlier wait's count to `u`'s (same guard, no commit in between)."""
        for pw in pending:
            if pw.unit.guard is None or pw.unit.guard == u.guard:
                slack = const_diff(total, pw.total + pw.commits)
                if slack is not None and slack >= 0:
                    return True
        for pw in pending:
            if pw.unit.guard == u.guard and pw.commits == 0:
                slack = const_diff(pw.total, total)
                if slack is not None and slack > 0:
                    pw.unit.waits[q] = count
                    pw.total = total
                    return True
        return False

    # ------------------------------------------------------------------------------------------

    def _core(self, u: _Unit):
        stmt = _Rewrite(self, u).visit(u.p.stmt)
        if u.p.is_async:
            stmt = AsyncScope(stmt)
        for q in sorted(u.waits, reverse=True):
            stmt = AsyncWaitQueue(q, u.waits[q], stmt)
        return stmt

    def _build(self, units: list):
        out, i = [], 0
        while i < len(units):
            u = units[i]
            if u.p.is_async:
                members = [u]
                while i + len(members) < len(units) and \
                        units[i + len(members)].p.group == u.p.group:
                    members.append(units[i + len(members)])
                body = AsyncCommitQueue(u.p.stage, seq(*[self._core(m) for m in members]))
                i += len(members)
            else:
                body = self._core(u)
                i += 1
            out.append(body if u.guard is None else IfThenElse(u.guard, body))
        return seq(*out)


class _Rewrite(Mutator):
    """A statement for iteration `j`: the loop var replaced, versioned buffers indexed, and every
    variable and buffer the statement binds renamed (each copy binds its own: the IR is SSA)."""

    def __init__(self, emitter: _Emitter, u: _Unit):
        self.vars = {emitter.var: u.j.expr(emitter.dtype)}
        self.bufs = {}
        self.versions = emitter.plan.versions
        self.k = u.j - emitter.min
        self.dtype = emitter.dtype

    def visit_Var(self, var):
        return self.vars.get(var, var)

    def _bind(self, var):
        new = Var(var.name, var.dtype)
        self.vars[var] = new
        return new

    def visit_For(self, node):
        var = self._bind(node.loop_var)
        return For(var, self.visit(node.min), self.visit(node.extent), node.kind,
                   self.visit(node.body), node.thread, node.annotations)

    def visit_LetStmt(self, node):
        value = self.visit(node.value)
        return LetStmt(self._bind(node.var), value, self.visit(node.body))

    def visit_Let(self, node):
        value = self.visit(node.value)
        return E.Let(self._bind(node.var), value, self.visit(node.body))

    def _declare(self, node, fresh_data: bool):
        buf = node.buffer
        data = self._bind(buf.data) if fresh_data else self.visit(buf.data)
        new = Buffer(buf.name, data, buf.dtype, tuple(self.visit(x) for x in buf.shape),
                     tuple(self.visit(x) for x in buf.strides), self.visit(buf.elem_offset),
                     buf.scope)
        self.bufs[buf] = new
        return type(node)(new, self.visit(node.body))

    def visit_AllocBuffer(self, node):
        return self._declare(node, fresh_data=True)

    def visit_DeclBuffer(self, node):
        return self._declare(node, fresh_data=False)

    def visit_buffer(self, buffer):
        return self.bufs.get(buffer, buffer)

    def _version(self, count: int):
        if self.k.is_const:
            return IntImm(self.dtype, self.k.const % count)
        return FloorMod(self.k.expr(self.dtype), E.const(count, self.dtype))

    def visit_BufferLoad(self, node):
        entry = self.versions.get(node.buffer)
        node = self.generic_visit(node)
        if entry is None:
            return node
        return BufferLoad(entry[0], (self._version(entry[1]),) + node.indices)

    def visit_BufferStore(self, node):
        entry = self.versions.get(node.buffer)
        node = self.generic_visit(node)
        if entry is None:
            return node
        return BufferStore(entry[0], node.value, (self._version(entry[1]),) + node.indices)
