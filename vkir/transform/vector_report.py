"""Which vector accesses of a lowered kernel stayed scalar, and why (`vkir.build(f, explain=True)`,
`Kernel.report()`).

A vectorized loop becomes `Ramp` accesses; on a buffer of vector elements (after
VectorTypeRewrite or a pointer cast) each is one vector load or store, but on a buffer of scalar
elements codegen emits one scalar access per lane. This module finds the latter in the lowered
function and names the rule that kept each one scalar.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith import modular_set
from ..ir import BufferLoad, BufferStore, PrimFunc, Ramp, Visitor
from ..ir.printer import script
from .pointer_cast_vectorize import VULKAN_LANES
from .vector_type_rewrite import ContextMixin, const_stride, plan


@dataclass(frozen=True)
class ScalarAccess:
    """One vector access done lane by lane: `kind` is "load" or "store"."""

    buffer: str
    kind: str
    index: str
    lanes: int
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.buffer}[{self.index}] ({self.lanes} lanes): {self.reason}"


class _Finder(ContextMixin, Visitor):
    def __init__(self, func: PrimFunc):
        self._init_context(func)
        self.storages = plan(func)
        self.params = {func.buffer_map[p].data for p in func.params if p in func.buffer_map}
        self.found: list = []

    def visit_LetStmt(self, node):
        self.visit(node.value)
        self._bind(node.var, node.value)
        self.visit(node.body)

    visit_Let = visit_LetStmt

    def visit_BufferLoad(self, node):
        self._check(node.buffer, node.indices, "load")
        self.generic_visit(node)

    def visit_BufferStore(self, node):
        self._check(node.buffer, node.indices, "store")
        self.generic_visit(node)

    def _check(self, buf, indices, kind):
        if not indices or indices[-1].dtype.lanes == 1 or buf.dtype.lanes != 1:
            return
        index = indices[-1]
        self.found.append(ScalarAccess(buf.name, kind, script(index), index.dtype.lanes,
                                       self._reason(buf, indices)))

    def _reason(self, buf, indices) -> str:
        index, lanes = indices[-1], indices[-1].dtype.lanes
        if len(indices) != 1:
            return f"a {len(indices)}-d access (buffers are flattened first; this one was not)"
        if not isinstance(index, Ramp):
            return "a gather: the lanes' indices are not a ramp"
        stride = const_stride(index)
        if stride != 1:
            what = f"stride {stride}" if stride is not None else "a non-constant stride"
            return f"the lanes are not contiguous ({what})"
        if lanes not in VULKAN_LANES:
            return (f"{lanes} lanes: Vulkan vectors of {' or '.join(map(str, VULKAN_LANES))} "
                    "lanes cover the same bytes as their scalars")
        if not modular_set(index.base, self.var_sets).is_multiple_of(lanes):
            return (f"the first lane's index {script(index.base)} is not a provable multiple of "
                    f"{lanes} (an unaligned vector would need a pointer cast to a misaligned "
                    "address)")
        st = self.storages.get(buf.data)
        why = st.refusal if st is not None and st.refusal else "no vector view was made"
        if buf.data not in self.params:
            return (f"{buf.scope} storage {buf.name!r} cannot be aliased on Vulkan, and "
                    f"VectorTypeRewrite left it scalar: {why}")
        return f"VectorTypeRewrite left {buf.name!r} scalar: {why}"


def scalar_accesses(lowered: PrimFunc) -> tuple:
    """The vector accesses of the lowered function done lane by lane, each with its reason."""
    finder = _Finder(lowered)
    finder.visit(lowered.body)
    return tuple(finder.found)


def report(lowered: PrimFunc) -> str:
    """A readable account of `scalar_accesses(lowered)`."""
    found = scalar_accesses(lowered)
    if not found:
        return f"kernel {lowered.name}: every vector access is a vector load or store"
    lines = [f"kernel {lowered.name}: {len(found)} vector access(es) done lane by lane:"]
    lines += [f"  {a}" for a in found]
    return "\n".join(lines)
