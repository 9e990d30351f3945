"""Loop-cut checks: on a driver that stops loops early (the "loop_trip_limit_65535" quirk of
llvmpipe), a loop the host cannot bound before the dispatch reports on the device when it was cut,
and the call raises `vkir.LoopLimitError` naming the loop instead of returning short results.

The loop budget (vkir.driver.loop_budget) bounds every loop whose trip count follows from the
call's sizes and scalars, and splits or refuses before the dispatch. A loop whose count is read
from a buffer, or a while loop that is not a counting loop, escapes it: it is split as far as it
goes, and past that the driver would cut it silently. A kernel with such a loop therefore gets one
more parameter, an int32 record, and every loop of it a check after it exits (any loop may be the
one that runs out of the shared budget):

- a `For` loop is annotated for codegen (vkir.spirv.codegen.loop_cut), which compares the loop
  variable with its end in the loop's merge block: a serial loop leaves only at its end;
- a `while` loop sets a local flag at the end of each iteration to its condition (a loop leaves
  only when it is false), and is followed by `if flag: claim`. A condition that could change
  between two evaluations or has effects (it reads shared or global memory, or has an atomic or
  subgroup operation) is evaluated once per iteration, into a flag the loop tests instead.

`claim` stores the loop's site number + 1 into the record unless one is there already: once the
budget is gone every later loop leaves too, so the first report names the loop that was cut.
Kernels whose loops are all bounded by the host are built as they are (no record, no check).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import LoopLimitError
from ..ir import (Add, AllocBuffer, BufferLoad, BufferStore, Call, DataType, Evaluate, FloorDiv,
                  FloorMod, For, IfThenElse, LetStmt, Mod, NE, PrimFunc, Select, SeqStmt, Var,
                  While)
from ..ir.buffer import decl_buffer
from ..ir.expr import const
from ..ir.functor import Mutator
from ..ir.op import is_atomic, is_subgroup
from ..ir.traversal import walk
from ..quirks import LOOP_TRIP_LIMIT
from ..spirv.codegen.loop_cut import RECORD, SITE, claim
from .loop_budget import LOOP_BUDGET, unbounded_loops
from .record_check import CheckedKernel

INT32 = DataType("int", 32)
PROBE = "budget"   # LoopSite.loop of the probe that finds a budget run out anywhere
_LOOP_KINDS = ("serial", "unrolled", "vectorized")   # For kinds codegen may emit as loops


@dataclass(frozen=True)
class LoopSite:
    """One checked loop: its variable's name ("while" for a while loop that counts nothing) and
    where it is in the user's source (None when the IR has no span)."""

    loop: str
    location: str | None
    source_line: str


def needs_checks(func: PrimFunc, quirks) -> bool:
    """Whether a kernel of `func` on a driver with `quirks` gets loop-cut checks: the driver cuts
    loops, and some loop's trip count cannot be bounded before a dispatch."""
    return LOOP_TRIP_LIMIT in quirks and bool(unbounded_loops(func))


def _while_name(s: While) -> str:
    """The loop variable of a while loop that a serial loop with `break` became (its body binds
    `v = counter[0]` first), else "while"."""
    body = s.body
    if isinstance(body, LetStmt) and isinstance(body.value, BufferLoad) and \
            body.value.buffer.scope == "local":
        return body.var.name
    return "while"


def _private(e) -> bool:
    """Whether `e` gives the same value when evaluated again with nothing stored in between: no
    atomic or subgroup operation, and no load of memory other invocations may write."""
    return not any((isinstance(n, Call) and (is_atomic(n.op) or is_subgroup(n.op))) or
                   (isinstance(n, BufferLoad) and n.buffer.scope != "local") for n in walk(e))


class _Instrumenter(Mutator):
    """Annotates loops and adds the while checks; `sites` collects one LoopSite per loop and
    `flags` the local buffers the while checks use (allocated around the whole body, so that no
    loop around a while loop gains an allocation, which would keep it from being split)."""

    def __init__(self, record):
        self.record = record
        self.sites: list[LoopSite] = []
        self.flags: list = []

    def site(self, name: str, node) -> int:
        span = node.span
        self.sites.append(LoopSite(name, str(span) if span is not None else None,
                                   getattr(span, "source_line", "") if span is not None else ""))
        return len(self.sites) - 1

    def probe_site(self) -> int:
        self.sites.append(LoopSite(PROBE, None, ""))
        return len(self.sites) - 1

    def flag(self, name: str):
        buf = decl_buffer((1,), "int32", f"vkir_loop_{name}{len(self.flags)}", scope="local")
        self.flags.append(buf)
        return buf

    def visit_For(self, s: For):
        if s.kind not in _LOOP_KINDS:
            return self.generic_visit(s)
        site = self.site(s.loop_var.name, s)
        s = self.generic_visit(s)
        return replace(s, annotations={**dict(s.annotations), SITE: site})

    def visit_SeqStmt(self, s: SeqStmt):
        # a while loop's check goes right after it, in the same sequence (the loop budget reads
        # a counting loop's start from the statements before it)
        out = []
        for child in s.seq:
            if isinstance(child, While):
                out.extend(self._checked_while(child))
            else:
                out.append(self.visit(child))
        return replace(s, seq=tuple(out))

    def visit_While(self, s: While):
        return SeqStmt(tuple(self._checked_while(s)))

    def _checked_while(self, s: While) -> list:
        """`more = 0; while c: body; more = c` then `if more: claim`: `more` says whether the
        last iteration that ran left the condition true. (Not `if c:` after the loop: llvmpipe's
        compiler may reuse the header's last evaluation of c, stale after a cut at the very last
        iteration.) A condition that must not be evaluated twice per iteration is kept in a
        flag `go` that the loop tests instead."""
        site = self.site(_while_name(s), s)
        s = self.generic_visit(s)
        zero, one = const(0, INT32), const(1, INT32)
        more = self.flag("more")
        before, condition = [BufferStore(more, zero, (zero,))], s.condition
        if not _private(condition):
            go = self.flag("go")
            before.append(BufferStore(go, Select(condition, one, zero), (zero,)))
            body = SeqStmt((s.body, BufferStore(go, Select(condition, one, zero), (zero,)),
                            BufferStore(more, BufferLoad(go, (zero,)), (zero,))))
            condition = NE(BufferLoad(go, (zero,)), zero)
        else:
            body = SeqStmt((s.body, BufferStore(more, Select(condition, one, zero), (zero,))))
        report = IfThenElse(NE(BufferLoad(more, (zero,)), zero), claim(self.record, site))
        return [*before, While(condition, body, span=s.span), report]


def _has_hidden_loops(func: PrimFunc) -> bool:
    """Whether codegen makes loops of `func`'s expressions (float //, % and fmod)."""
    return any(isinstance(n, (FloorDiv, FloorMod, Mod)) and n.dtype.is_float or
               isinstance(n, Call) and n.op == "fmod" for n in walk(func.body))


def _probe(record, site: int):
    """A loop of two iterations at the end of the kernel, checked like the others: where the
    budget ran out anywhere (in a loop codegen makes for a float //, say, which has no check of
    its own), the driver cuts this one too. Its count is read from the record, so that no
    compiler unrolls it, and its body allocates, so that no split makes it one chunk."""
    spare = decl_buffer((1,), "int32", "vkir_loop_probe_body", scope="local")
    p = Var("vkir_probe", INT32)
    extent = Add(BufferLoad(record, (const(0, INT32),)), const(2, INT32))
    return For(p, const(0, INT32), extent, "serial", AllocBuffer(spare, Evaluate(const(0, INT32))),
               annotations={SITE: site})


def instrument(func: PrimFunc) -> tuple:
    """`(checked function, sites)`: `func` with one more buffer parameter, the int32 record named
    RECORD, and a cut check after every loop (see the module docstring)."""
    record = decl_buffer((1,), "int32", RECORD)
    inst = _Instrumenter(record)
    body = inst.visit(func.body)
    if _has_hidden_loops(func):
        body = SeqStmt((body, _probe(record, inst.probe_site())))
    for buf in reversed(inst.flags):
        body = AllocBuffer(buf, body)
    params = (*func.params, record.data)
    buffer_map = {**dict(func.buffer_map), record.data: record}
    return PrimFunc(params, body, buffer_map, func.attrs), tuple(inst.sites)


def raise_if_cut(record: np.ndarray, sites: tuple, kernel: str, device: str) -> None:
    """Raise LoopLimitError for the loop the record names, if some invocation claimed it."""
    if record[0] == 0:
        return
    site = sites[int(record[0]) - 1]
    if site.loop == PROBE:
        raise LoopLimitError(
            f"kernel {kernel}: a loop was cut short on {device}: the driver stops every loop of "
            f"an invocation after {LOOP_BUDGET} iterations in all (quirk {LOOP_TRIP_LIMIT}), and "
            "this call's ran out, in a loop vkir makes for a float //, % or fmod or in one that "
            "ended on the budget's last iteration (a loop of the kernel's own cut short would "
            "have been named). The results of this call may be incomplete. Pass loop counts as "
            "scalar arguments (each call is then split to fit, or refused before it runs), split "
            "the work over more invocations (a larger grid), or run it in several calls.",
            None, None)
    what = "a while loop" if site.loop == "while" else f"the loop over {site.loop}"
    message = f"kernel {kernel}: {what}"
    if site.location is not None:
        message += f" at {site.location}"
    message += (f" was cut short on {device}: the driver stops every loop of an invocation after "
                f"{LOOP_BUDGET} iterations in all (quirk {LOOP_TRIP_LIMIT}), and the loops of "
                "this call needed more; their length depends on buffer data, so vkir could not fit "
                "them to that budget before the dispatch. The results of this call are incomplete.")
    if site.source_line:
        message += f"\n    {site.source_line.strip()}\n"
    else:
        message += " "
    message += ("Pass the loop counts as scalar arguments (each call is then split to fit, or "
                "refused before it runs), split the work over more invocations (a larger grid), "
                "or run it in several calls.")
    raise LoopLimitError(message, site.loop, site.location)


class LoopCheckedKernel(CheckedKernel):
    """A Kernel whose loops report a cut (see the module docstring): called like the user's
    function, it raises LoopLimitError after a dispatch in which the driver cut a loop (calls,
    launches and sequences alike: vkir.driver.record_check)."""

    record_name = RECORD
    record_words = 1
    label = "loop-checked"

    def instrument(self, func: PrimFunc) -> tuple:
        """`instrument(func)`: the function with its checks, and the loops' sites."""
        return instrument(func)

    def verify(self, record: np.ndarray) -> None:
        """LoopLimitError for the first cut the record holds."""
        raise_if_cut(record, self.sites, self.func.name, repr(self.kernel.device.info.name))


def with_loop_checks(func: PrimFunc, quirks, build):
    """`build(func)`, or where a driver with `quirks` could cut a loop of `func` silently, a
    LoopCheckedKernel around `build` of the instrumented function."""
    if needs_checks(func, quirks):
        return LoopCheckedKernel(func, build)
    return build(func)
