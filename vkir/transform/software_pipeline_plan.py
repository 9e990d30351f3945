"""Reading and checking a software-pipeline annotation, and planning buffers and commit groups.

`plan_pipeline(loop, enclosing)` turns an annotated loop into a `PipelinePlan`: the statements with
their stages, orders and buffer accesses; the buffers that need multi-versioning (produced in one
stage and consumed in a later one, allocated inside the loop body or around the loop); and, for
async stages, the commit groups. Every way an annotation can be wrong raises `TransformError`
naming the loop and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import TransformError
from ..ir import AllocBuffer, Buffer, BufferLoad, BufferStore, DeclBuffer, For, SeqStmt, Stmt, Var
from ..ir.base import show
from ..ir.dtype import PointerType
from ..ir.traversal import walk

STAGE = "software_pipeline_stage"
ORDER = "software_pipeline_order"
ASYNC = "software_pipeline_async_stages"
KEYS = (STAGE, ORDER, ASYNC)


@dataclass(eq=False)
class PipeStmt:
    """One top-level statement of the pipelined loop body."""

    index: int  # position in the original body
    stmt: Stmt
    stage: int
    order: int  # position in the new body
    reads: frozenset  # data Vars of the buffers it loads from (buffers it declares excluded)
    writes: frozenset  # data Vars of the buffers it stores to
    is_async: bool = False
    group: int | None = None  # commit group id (async statements only)


@dataclass(eq=False)
class Group:
    """A commit group: adjacent (in the new order) async statements of one stage."""

    gid: int
    stage: int
    pos: int  # new-order position of its first statement
    members: list = field(default_factory=list)


@dataclass(eq=False)
class PipelinePlan:
    """What InjectSoftwarePipeline does to one loop: its statements by stage and order, hoisted
    allocations, multi-versioned buffers and async groups."""
    loop: For
    stmts: list  # PipeStmt in original order
    ordered: list  # PipeStmt in new order
    max_stage: int
    allocs: list  # Buffers allocated in the loop body (hoisted around the pipeline)
    versions: dict  # Buffer -> (new Buffer, version count) for multi-versioned buffers
    groups: list  # Group, in new order
    async_writes: dict  # stage -> frozenset of data Vars written by that async stage


def _where(loop: For) -> str:
    span = f" at {loop.span}" if loop.span is not None else ""
    return f"software pipeline of the loop over {loop.loop_var.name!r}{span}"


def _int_tuple(loop: For, key: str, value) -> tuple:
    if isinstance(value, int):
        value = (value,)
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool)
                                               for v in value):
        raise TransformError(f"{_where(loop)}: annotation {key!r} must be a tuple of ints, "
                             f"got {show(value)}")
    return value


def _accesses(stmt: Stmt):
    """(reads, writes, buffers) of `stmt` by data var; buffers maps data var -> Buffer objects."""
    local = {n.buffer.data for n in walk(stmt) if isinstance(n, AllocBuffer)}
    reads, writes, bufs = set(), set(), {}
    for n in walk(stmt):
        if isinstance(n, BufferLoad):
            reads.add(n.buffer.data)
        elif isinstance(n, BufferStore):
            writes.add(n.buffer.data)
        else:
            continue
        bufs.setdefault(n.buffer.data, set()).add(n.buffer)
    return frozenset(reads - local), frozenset(writes - local), bufs


def _split_body(loop: For):
    """(hoistable allocations, top-level statements) of the loop body."""
    allocs, body = [], loop.body
    while isinstance(body, AllocBuffer):
        allocs.append(body.buffer)
        body = body.body
    stmts = list(body.seq) if isinstance(body, SeqStmt) else [body]
    return allocs, stmts


def plan_pipeline(loop: For, enclosing: list) -> PipelinePlan:
    """Check the annotations of `loop` and plan its pipeline (see the module docstring).

    `enclosing` are the buffers allocated around the loop (candidates for multi-versioning).
    """
    where = _where(loop)
    ann = loop.annotations
    if STAGE not in ann:
        raise TransformError(f"{where}: {ORDER!r} given without {STAGE!r}")
    if ORDER not in ann:
        raise TransformError(f"{where}: missing annotation {ORDER!r} (one position per "
                             f"statement, next to {STAGE!r})")
    if loop.kind == "thread_binding":
        raise TransformError(f"{where}: a thread-bound loop cannot be pipelined")
    allocs, body = _split_body(loop)
    n = len(body)
    stages = _int_tuple(loop, STAGE, ann[STAGE])
    orders = _int_tuple(loop, ORDER, ann[ORDER])
    async_stages = _int_tuple(loop, ASYNC, ann.get(ASYNC, ()))
    for key, value in ((STAGE, stages), (ORDER, orders)):
        if len(value) != n:
            raise TransformError(f"{where}: {key!r} has {len(value)} entries but the loop body "
                                 f"has {n} statements")
    if any(s < 0 for s in stages):
        raise TransformError(f"{where}: {STAGE!r} {stages} has a negative stage")
    if sorted(orders) != list(range(n)):
        raise TransformError(f"{where}: {ORDER!r} {orders} is not a permutation of 0..{n - 1}")
    for s in async_stages:
        if s not in stages:
            raise TransformError(f"{where}: async stage {s} in {ASYNC!r} is not a stage of any "
                                 f"statement (stages {stages})")

    stmts, bufs = [], {}
    for i, (s, st, o) in enumerate(zip(body, stages, orders)):
        reads, writes, b = _accesses(s)
        for data, objs in b.items():
            bufs.setdefault(data, set()).update(objs)
        stmts.append(PipeStmt(i, s, st, o, reads, writes, st in async_stages))
    _check_dependencies(where, stmts)
    ordered = sorted(stmts, key=lambda p: p.order)
    versions = _plan_versions(where, loop, stmts, allocs + list(enclosing), bufs)
    groups, async_writes = _plan_groups(where, stmts, ordered)
    return PipelinePlan(loop, stmts, ordered, max(stages), allocs, versions, groups,
                        async_writes)


def _conflict(a: PipeStmt, b: PipeStmt):
    """A buffer through which `a` and `b` depend on each other (one of them writes it), or None."""
    common = (a.writes & (b.reads | b.writes)) | (a.reads & b.writes)
    return min(common, key=lambda v: v.name) if common else None


def _check_dependencies(where: str, stmts: list) -> None:
    """Within one iteration, a statement must not run before one it depends on."""
    for i, a in enumerate(stmts):
        for b in stmts[i + 1:]:
            buf = _conflict(a, b)
            if buf is None:
                continue
            if a.stage > b.stage:
                raise TransformError(
                    f"{where}: statement {b.index} (stage {b.stage}) depends on statement "
                    f"{a.index} (stage {a.stage}) through buffer {buf.name!r} but is put in an "
                    f"earlier stage")
            if a.stage == b.stage and a.order > b.order:
                raise TransformError(
                    f"{where}: {ORDER!r} puts statement {b.index} before statement {a.index} in "
                    f"stage {a.stage}, but it depends on it through buffer {buf.name!r}")


def _versioned(buf: Buffer, count: int) -> Buffer:
    data = Var(buf.name, PointerType(buf.dtype, buf.scope))
    return Buffer(buf.name, data, buf.dtype, (count,) + buf.shape, (), 0, buf.scope)


def _plan_versions(where: str, loop: For, stmts: list, candidates: list, bufs: dict) -> dict:
    """Buffers produced in one stage and consumed in a later one get `use - def + 1` versions."""
    versions = {}
    for buf in candidates:
        writers = [p for p in stmts if buf.data in p.writes]
        readers = [p for p in stmts if buf.data in p.reads]
        if not writers or not readers:
            continue
        count = max(p.stage for p in readers) - min(p.stage for p in writers) + 1
        if count <= 1:
            continue
        if bufs.get(buf.data, {buf}) != {buf}:
            raise TransformError(f"{where}: buffer {buf.name!r} needs {count} versions but is "
                                 f"also accessed through an alias of its data")
        if buf.strides:
            raise TransformError(f"{where}: buffer {buf.name!r} needs {count} versions but has "
                                 f"explicit strides")
        for r in readers:
            if not any(w.index < r.index for w in writers):
                raise TransformError(
                    f"{where}: statement {r.index} reads buffer {buf.name!r} before any statement "
                    f"of the iteration writes it (a value from the previous iteration), so the "
                    f"buffer cannot get {count} versions")
        for n in walk(loop.body):
            if isinstance(n, DeclBuffer) and n.buffer.data is buf.data:
                raise TransformError(f"{where}: buffer {buf.name!r} needs {count} versions but "
                                     f"is re-declared (aliased) in the loop")
        versions[buf] = (_versioned(buf, count), count)
    return versions


def _plan_groups(where: str, stmts: list, ordered: list):
    """Commit groups: runs of async statements of one stage adjacent in the new order; a new
    group starts where a statement reads what the open group writes."""
    async_writes = {}
    for p in stmts:
        if p.is_async:
            async_writes[p.stage] = async_writes.get(p.stage, frozenset()) | p.writes
    for p in stmts:
        for q, written in async_writes.items():
            buf = min(p.reads & written, key=lambda v: v.name, default=None)
            if buf is None:
                continue
            if p.is_async and p.stage == q and buf in p.writes:
                raise TransformError(f"{where}: async statement {p.index} reads buffer "
                                     f"{buf.name!r}, which it writes asynchronously itself")
            if q > p.stage:
                raise TransformError(
                    f"{where}: statement {p.index} (stage {p.stage}) reads buffer {buf.name!r} "
                    f"written asynchronously by the later stage {q}")
    groups, current = [], None
    for pos, p in enumerate(ordered):
        if not p.is_async:
            current = None
            continue
        opened = current is not None and current.stage == p.stage
        if opened:
            open_writes = frozenset().union(*(m.writes for m in current.members))
            opened = not (p.reads & open_writes)
        if not opened:
            current = Group(len(groups), p.stage, pos)
            groups.append(current)
        current.members.append(p)
        p.group = current.gid
    return groups, async_writes
