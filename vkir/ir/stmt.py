"""Statement nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ArgumentError
from .base import FrozenDict, PrimExpr, Stmt
from .expr import Var, convert

if TYPE_CHECKING:
    from .buffer import Buffer

FOR_KINDS = ("serial", "unrolled", "vectorized", "thread_binding", "parallel")
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True, slots=True)
class BufferStore(Stmt):
    """Write `value` to `buffer` at `indices`; value's dtype must equal the access dtype."""

    buffer: "Buffer"
    value: PrimExpr
    indices: tuple

    def __post_init__(self):
        indices = tuple(convert(i) for i in self.indices)
        object.__setattr__(self, "indices", indices)
        if not isinstance(self.value, PrimExpr):
            lanes = indices[-1].dtype.lanes if indices else 1
            elem = self.buffer.dtype
            object.__setattr__(self, "value",
                               convert(self.value, elem.with_lanes(elem.lanes * lanes)))


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    """`body` with `var` bound to `value`."""

    var: Var
    value: PrimExpr
    body: Stmt

    def __post_init__(self):
        object.__setattr__(self, "value", convert(self.value, self.var.dtype))


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """A loop over [min, min + extent). `kind` is one of FOR_KINDS; thread_binding needs `thread`."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    thread: str | None = None
    annotations: FrozenDict = field(default_factory=FrozenDict)

    def __post_init__(self):
        if self.kind not in FOR_KINDS:
            raise ArgumentError(f"unknown loop kind {self.kind!r} (one of {', '.join(FOR_KINDS)})")
        if (self.kind == "thread_binding") != (self.thread is not None):
            raise ArgumentError("thread_binding loops, and only they, name a thread "
                                f"(kind {self.kind!r}, thread {self.thread!r})")
        object.__setattr__(self, "min", convert(self.min, self.loop_var.dtype))
        object.__setattr__(self, "extent", convert(self.extent, self.loop_var.dtype))
        if not isinstance(self.annotations, FrozenDict):
            object.__setattr__(self, "annotations", FrozenDict(self.annotations))


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    """if condition: then_case else: else_case (else_case may be None)."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True)
class While(Stmt):
    """while condition: body. The condition (a scalar bool) is evaluated before every iteration;
    the script's `break` and `continue` become flag variables around it, so this is the one
    unbounded loop of the IR."""

    condition: PrimExpr
    body: Stmt

    def __post_init__(self):
        object.__setattr__(self, "condition", convert(self.condition))


@dataclass(frozen=True, slots=True)
class SeqStmt(Stmt):
    """Statements in order."""

    seq: tuple

    def __post_init__(self):
        object.__setattr__(self, "seq", tuple(self.seq))


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (e.g. an impure call)."""

    value: PrimExpr

    def __post_init__(self):
        object.__setattr__(self, "value", convert(self.value))


@dataclass(frozen=True, slots=True)
class AllocBuffer(Stmt):
    """Allocate `buffer` (scope shared/local/global) for the duration of `body`."""

    buffer: "Buffer"
    body: Stmt


@dataclass(frozen=True, slots=True)
class DeclBuffer(Stmt):
    """Declare `buffer` over existing data; with another dtype or shape this is the one explicit
    form of pointer cast (typing rule 2)."""

    buffer: "Buffer"
    body: Stmt


@dataclass(frozen=True, slots=True)
class AsyncScope(Stmt):
    """`body` runs asynchronously (a producer of an async pipeline stage)."""

    body: Stmt


@dataclass(frozen=True, slots=True)
class AsyncCommitQueue(Stmt):
    """The async scopes in `body` form one group committed to queue `queue`."""

    queue: int
    body: Stmt


@dataclass(frozen=True, slots=True)
class AsyncWaitQueue(Stmt):
    """Before `body`, wait until at most `in_flight` groups of `queue` are outstanding."""

    queue: int
    in_flight: PrimExpr
    body: Stmt

    def __post_init__(self):
        object.__setattr__(self, "in_flight", convert(self.in_flight))


@dataclass(frozen=True, slots=True)
class Barrier(Stmt):
    """Workgroup execution and memory barrier."""


@dataclass(frozen=True, slots=True)
class SubgroupBarrier(Stmt):
    """Subgroup execution and memory barrier (TVM's warp-level `tvm_storage_sync("warp")`): the
    invocations of a subgroup wait for each other and see each other's shared-memory writes."""


def flatten(stmt: Stmt) -> list:
    """The statements of a block: `stmt` itself, or the items of a sequence with nested
    sequences flattened."""
    if isinstance(stmt, SeqStmt):
        out = []
        for s in stmt.seq:
            out.extend(flatten(s))
        return out
    return [stmt]


def seq(*stmts) -> Stmt:
    """A SeqStmt of the statements, flattening nested sequences; a single statement stays as is."""
    flat = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        elif s is not None:
            flat.append(s)
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))
