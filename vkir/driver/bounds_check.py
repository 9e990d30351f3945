"""Device-side bounds checking: `vkir.build(f, check_bounds=True)`.

On a GPU an out-of-bounds access is undefined, as in GLSL. With `check_bounds=True` vkir
instruments the user's function before lowering (`instrument`): every buffer access with scalar
indices, and every storage image read, write and atomic, is preceded by a check, and the first
invocation that finds an index outside its buffer's shape (or its image's extent, the layer
first, as the interpreter indexes it) claims a small int32 record buffer (an atomic
compare-exchange on its first word) and writes the access site, its invocation ids and the index
into it. The access itself is never performed out of bounds: loads read a clamped index, stores
and atomics are skipped (an atomic whose value is used gives 0). After the dispatch
`BoundsCheckedKernel` reads the record back and raises `vkir.OutOfBoundsError` naming the buffer
or image, the index, the invocation and the source line, as the interpreter does. `T.sample`
is never out of bounds (its sampler's addressing defines every coordinate), as in the
interpreter.

Accesses with vector (Ramp/Broadcast) indices and accesses whose indices use a variable bound
inside the same expression are not checked; loads in a branch of `T.if_then_else` are checked
only when the branch is taken (the device evaluates only that side).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import OutOfBoundsError, describe_invocation
from ..ir import (
    And, BufferLoad, BufferStore, Call, Cast, DataType, DeclBuffer, EQ, Evaluate, For, GE,
    IfThenElse, LT, Let, LetStmt, Max, Min, Not, Or, PrimFunc, SeqStmt, Sub, Var, While,
)
from ..ir.buffer import decl_buffer
from ..ir.expr import const
from ..ir.functor import Mutator, children
from ..ir.image import ImageLoad, ImageStore
from ..ir.op import is_atomic
from ..ir.stmt import AllocBuffer
from .record_check import CheckedKernel

RECORD_NAME = "vkir_bounds_record"
MAX_DIMS = 8
# record layout (int32 words): claimed flag, site id, the six invocation ids, the indices
_FLAG, _SITE, _IDS, _INDICES = 0, 1, 2, 8
RECORD_WORDS = _INDICES + MAX_DIMS
THREADS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
INT32 = DataType.parse("int32")


@dataclass(frozen=True)
class Site:
    """One checked access: the buffer's (or image's) name and shape text, the thread ids bound
    around it, where it is in the user's source (None when the IR has no span) and what it
    accesses ("buffer" or "image")."""

    buffer: str
    shape: tuple
    threads: tuple
    location: str | None
    source_line: str
    kind: str = "buffer"


_IMAGE_ACCESSES = (ImageLoad, ImageStore)


def _target(access) -> tuple:
    """(name, extents its indices index, "buffer" or "image") of a load or store: an image's
    extents in numpy order, the layer first, as its indices are."""
    if isinstance(access, _IMAGE_ACCESSES):
        return access.image.name, access.image.dtype.shape, "image"
    return access.buffer.name, access.buffer.shape, "buffer"


def _shape(access) -> tuple:
    """The extents `access`'s indices index (see _target)."""
    return _target(access)[1]


def _checkable(access) -> bool:
    """Scalar indices only, at most MAX_DIMS of them (an image's are scalar int32 by rule 1)."""
    idx = access.indices
    return 0 < len(idx) <= MAX_DIMS and all(i.dtype.lanes == 1 for i in idx)


def _with_indices(access, indices):
    """`access` (a load or store) at `indices` instead."""
    return dataclasses.replace(access, indices=tuple(indices))


def _out_of_bounds(indices, shape):
    """The bool expression `some index < 0 or >= its extent`."""
    cond = None
    for i, ext in zip(indices, shape):
        ext = ext if ext.dtype == i.dtype else Cast(i.dtype, ext)
        term = Or(LT(i, const(0, i.dtype)), GE(i, ext))
        cond = term if cond is None else Or(cond, term)
    return cond


def _clamped(indices, shape):
    """Each index clamped into [0, extent - 1]."""
    out = []
    for i, ext in zip(indices, shape):
        ext = ext if ext.dtype == i.dtype else Cast(i.dtype, ext)
        out.append(Max(Min(i, Sub(ext, const(1, i.dtype))), const(0, i.dtype)))
    return tuple(out)


def _vars(expr) -> set:
    """Every Var under `expr`."""
    found, stack = set(), [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Var):
            found.add(node)
        stack.extend(children(node))
    return found


def _accesses(expr, cond=None, bound=frozenset()):
    """(load, path condition) for every checkable buffer or image load evaluated by `expr` (the
    element of an atomic too); loads in a branch of if_then_else carry that branch's condition,
    loads using Let-bound variables are left out."""
    out, stack = [], [(expr, cond, bound)]
    while stack:
        node, c, b = stack.pop()
        if isinstance(node, (BufferLoad, ImageLoad)):
            if _checkable(node) and not (b and any(_vars(i) & b for i in node.indices)):
                out.append((node, c))
        if isinstance(node, Call) and node.op == "if_then_else":
            test, yes, no = node.args
            stack.append((test, c, b))
            if test.dtype.lanes == 1:  # a vector condition evaluates both sides lane-wise
                stack.append((yes, test if c is None else And(c, test), b))
                stack.append((no, Not(test) if c is None else And(c, Not(test)), b))
            continue
        if isinstance(node, Let):
            stack.append((node.value, c, b))
            stack.append((node.body, c, b | {node.var}))
            continue
        stack.extend((child, c, b) for child in children(node))
    out.reverse()
    return out


class _ClampLoads(Mutator):
    """Every checkable load reads a clamped index (so it never reads outside its buffer or
    image); an atomic on an element out of bounds is not performed and gives 0."""

    def visit_BufferLoad(self, e):
        e = self.generic_visit(e)
        if not _checkable(e):
            return e
        return _with_indices(e, _clamped(e.indices, _shape(e)))

    visit_ImageLoad = visit_BufferLoad

    def visit_Call(self, e):
        if not self.is_checked_atomic(e):
            return self.generic_visit(e)
        call, bad = self.atomic(e)
        return Call(e.dtype, "if_then_else", (Not(bad), call, const(0, e.dtype)), span=e.span)

    @staticmethod
    def is_checked_atomic(e) -> bool:
        """Whether `e` is an atomic Call on a checkable buffer element or image texel."""
        return isinstance(e, Call) and is_atomic(e.op) and bool(e.args) \
            and isinstance(e.args[0], (BufferLoad, ImageLoad)) and _checkable(e.args[0])

    def atomic(self, e) -> tuple:
        """(the atomic Call `e` on its clamped element, whether the element is out of bounds),
        the loads in its indices and operands clamped."""
        target = e.args[0]
        indices = tuple(self.visit(i) for i in target.indices)
        bad = _out_of_bounds(indices, _shape(target))
        element = _with_indices(target, _clamped(indices, _shape(target)))
        operands = tuple(self.visit(a) for a in e.args[1:])
        return Call(e.dtype, e.op, (element, *operands), span=e.span), bad


class _Instrumenter:
    """Rewrites statements: checks before each statement's own expressions, clamped loads,
    guarded stores. `sites` collects one Site per checked access."""

    def __init__(self, record):
        self.record = record
        self.sites = []

    def site(self, access, stmt, threads) -> int:
        span = access.span or stmt.span
        name, shape, kind = _target(access)
        self.sites.append(Site(name, tuple(str(s) for s in shape),
                               tuple(name for name in THREADS if name in threads),
                               str(span) if span is not None else None,
                               getattr(span, "source_line", "") if span is not None else "",
                               kind))
        return len(self.sites) - 1

    def report(self, site: int, indices, threads):
        """`if claim(record): record[...] = site, ids, indices`."""
        rec = self.record
        old = Var("vkir_bounds_old", INT32)
        claim = Call(INT32, "atomic_compare_exchange",
                     (BufferLoad(rec, (const(_FLAG),)), const(0), const(1)))
        writes = [BufferStore(rec, const(site), (const(_SITE),))]
        for k, name in enumerate(THREADS):
            if name in threads:
                v = threads[name]
                writes.append(BufferStore(rec, v if v.dtype == INT32 else Cast(INT32, v),
                                          (const(_IDS + k),)))
        for k, i in enumerate(indices):
            writes.append(BufferStore(rec, i if i.dtype == INT32 else Cast(INT32, i),
                                      (const(_INDICES + k),)))
        return LetStmt(old, claim, IfThenElse(EQ(old, const(0)), SeqStmt(tuple(writes))))

    def checks(self, exprs, stmt, threads) -> list:
        out = []
        for expr in exprs:
            for load, cond in _accesses(expr):
                bad = _out_of_bounds(load.indices, _shape(load))
                site = self.site(load, stmt, threads)
                out.append(IfThenElse(bad if cond is None else And(cond, bad),
                                      self.report(site, load.indices, threads)))
        return out

    def stmt(self, s, threads):
        clamp = _ClampLoads()
        if isinstance(s, SeqStmt):
            return SeqStmt(tuple(self.stmt(x, threads) for x in s.seq), span=s.span)
        if isinstance(s, For):
            pre = self.checks((s.min, s.extent), s, threads)
            inner = dict(threads)
            if s.kind == "thread_binding":
                inner[s.thread] = s.loop_var
            new = For(s.loop_var, clamp.visit(s.min), clamp.visit(s.extent), s.kind,
                      self.stmt(s.body, inner), s.thread, s.annotations, span=s.span)
            return _seq(pre, new)
        if isinstance(s, IfThenElse):
            pre = self.checks((s.condition,), s, threads)
            new = IfThenElse(clamp.visit(s.condition), self.stmt(s.then_case, threads),
                             None if s.else_case is None else self.stmt(s.else_case, threads),
                             span=s.span)
            return _seq(pre, new)
        if isinstance(s, While):
            # the condition is evaluated before the first iteration and after every one
            pre = self.checks((s.condition,), s, threads)
            again = self.checks((s.condition,), s, threads)
            body = self.stmt(s.body, threads)
            if again:
                body = SeqStmt((body, *again))
            # a clamped load could keep the loop going for ever: an out-of-bounds read in the
            # condition (reported above) ends the loop instead
            condition = clamp.visit(s.condition)
            stop = _violation(s.condition)
            if stop is not None:
                condition = And(Not(stop), condition)
            new = While(condition, body, span=s.span)
            return _seq(pre, new)
        if isinstance(s, LetStmt):
            pre = self.checks((s.value,), s, threads)
            return _seq(pre, LetStmt(s.var, clamp.visit(s.value), self.stmt(s.body, threads),
                                     span=s.span))
        if isinstance(s, (BufferStore, ImageStore)):
            pre = self.checks((s.value, *s.indices), s, threads)
            new = dataclasses.replace(s, value=clamp.visit(s.value),
                                      indices=tuple(clamp.visit(i) for i in s.indices))
            if _checkable(s):
                bad = _out_of_bounds(new.indices, _shape(s))
                site = self.site(s, s, threads)
                pre.append(IfThenElse(bad, self.report(site, new.indices, threads)))
                new = IfThenElse(Not(bad), new, span=s.span)
            return _seq(pre, new)
        if isinstance(s, Evaluate):
            value = s.value
            pre = self.checks((value,), s, threads)
            if clamp.is_checked_atomic(value):
                # an atomic statement: skip it when its element is out of bounds
                call, bad = clamp.atomic(value)
                return _seq(pre, IfThenElse(Not(bad), Evaluate(call, span=s.span)))
            return _seq(pre, Evaluate(clamp.visit(value), span=s.span))
        if isinstance(s, (AllocBuffer, DeclBuffer)):
            return type(s)(s.buffer, self.stmt(s.body, threads), span=s.span)
        if hasattr(s, "body"):  # async scopes and queues: rebuild around the new body
            return dataclasses.replace(s, body=self.stmt(s.body, threads))
        return s


def _violation(expr):
    """Whether some checkable load of `expr` is out of bounds (None when it has none)."""
    out = None
    for load, cond in _accesses(expr):
        bad = _out_of_bounds(load.indices, _shape(load))
        bad = bad if cond is None else And(cond, bad)
        out = bad if out is None else Or(out, bad)
    return out


def _seq(pre: list, stmt):
    return SeqStmt((*pre, stmt)) if pre else stmt


def instrument(func: PrimFunc):
    """`(checked function, sites)`: `func` with one more buffer parameter, the int32 record named
    RECORD_NAME, and a check before every access (see the module docstring)."""
    record = decl_buffer((RECORD_WORDS,), "int32", RECORD_NAME)
    inst = _Instrumenter(record)
    body = inst.stmt(func.body, {})
    params = (*func.params, record.data)
    buffer_map = {**dict(func.buffer_map), record.data: record}
    checked = PrimFunc(params, body, buffer_map, func.attrs)
    return checked, tuple(inst.sites)


def raise_if_recorded(record: np.ndarray, sites: tuple, kernel: str) -> None:
    """Raise OutOfBoundsError for the access the record names, if any invocation claimed it."""
    if record[_FLAG] == 0:
        return
    site = sites[int(record[_SITE])]
    invocation = {name: int(record[_IDS + THREADS.index(name)]) for name in site.threads}
    index = tuple(int(v) for v in record[_INDICES:_INDICES + len(site.shape)])
    shown = index[0] if len(index) == 1 else index
    message = (f"kernel {kernel}: {site.kind} {site.buffer}: index {shown} is out of bounds for "
               f"shape ({', '.join(site.shape)}{',' if len(site.shape) == 1 else ''})")
    if invocation:
        message += f", in invocation {describe_invocation(invocation)}"
    if site.location is not None:
        message += f" at {site.location}"
        if site.source_line:
            message += f"\n    {site.source_line.strip()}"
    raise OutOfBoundsError(message, site.buffer, shown, invocation, site.location)


class BoundsCheckedKernel(CheckedKernel):
    """A Kernel built from the instrumented function: called like the user's function (the record
    buffer is added to every call), it raises OutOfBoundsError after a dispatch in which some
    access was out of bounds (calls, launches and sequences alike: vkir.driver.record_check).
    Everything else (`spirv`, `asm`, `ir`, ...) is the inner Kernel's."""

    record_name = RECORD_NAME
    record_words = RECORD_WORDS
    label = "bounds-checked"

    def instrument(self, func: PrimFunc) -> tuple:
        """`instrument(func)`: the function with its checks, and their sites."""
        return instrument(func)

    def verify(self, record: np.ndarray) -> None:
        """OutOfBoundsError for the first violation the record holds."""
        raise_if_recorded(record, self.sites, self.func.name)
