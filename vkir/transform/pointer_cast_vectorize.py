"""PointerCastVectorize: vector accesses through explicit pointer casts (the alternative to
the VectorTypeRewriter, for targets that allow aliasing).

`A[Ramp(b, 1, L)]` (load or store) on a scalar 1-d buffer, with `b` provably a multiple of L,
becomes `A_xL[b // L]`, where

    A_xL = T.decl_buffer((extent // L,), "float32xL", data=A.data)

is declared once per (buffer, width) at the top of A's scope (the function body for a parameter,
the body of A's DeclBuffer/AllocBuffer otherwise). That DeclBuffer is the one explicit form of
pointer cast (typing rule 2). Everything else stays on A: scalar accesses, unaligned or strided
ramps, multi-dimensional, strided or offset buffers, bool buffers. So unlike VectorTypeRewrite, a
buffer read both as float32 and as float32x4 keeps its scalar accesses *and* gets vector loads.

For a Vulkan target (a vkir.Target of kind "vulkan", or its name) only casts of kernel
parameters are allowed: the runtime binds the same VkBuffer to a second descriptor of the cast
element type (codegen gives the DeclBuffer its own binding with the parameter's `param_index`,
decorated Aliased). Vulkan has no pointer casts of
Workgroup or Function memory, nor of storage the kernel allocates itself, so such a cast raises
`UnsupportedError`; and only widths 2 and 4 are cast (a 3-lane vector has a 16-byte array stride
under std430, and shaders have no vectors over 4 lanes): other ramps stay scalar accesses.
Without a target (or for the interpreter) every width is cast. `allowed_lanes` overrides the
widths in both cases.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..arith import modular_set
from ..errors import ArgumentError, UnsupportedError
from ..ir import (
    Buffer, BufferLoad, BufferStore, DeclBuffer, FloorDiv, IntImm, PrimFunc,
    decl_buffer,
)
from ..target import Target
from .base import Pass
from .vector_type_rewrite import ContextMutator, divide_extent, is_unit_ramp

VULKAN_LANES = (2, 4)  # vec3 has a 16-byte array stride under std430; no vectors over 4 lanes


def _castable(buf: Buffer) -> bool:
    """A 1-d, compact, offset-free buffer of scalar ints or floats."""
    elem = buf.dtype
    return (len(buf.shape) == 1 and not buf.strides and isinstance(buf.elem_offset, IntImm)
            and buf.elem_offset.value == 0 and elem.lanes == 1
            and (elem.is_integer or elem.is_float))


def _cast_extent(extent, lanes: int):
    """The number of whole L-lane vectors in `extent` elements."""
    if modular_set(extent).is_multiple_of(lanes):
        return divide_extent(extent, lanes)
    if isinstance(extent, IntImm):
        return IntImm(extent.dtype, extent.value // lanes)
    return FloorDiv(extent, IntImm(extent.dtype, lanes))


class _Caster(ContextMutator):
    def __init__(self, func: PrimFunc, vulkan: bool, allowed_lanes, unprovable_only: bool = False):
        self._init_context(func)
        self.vulkan = vulkan
        self.unprovable_only = unprovable_only
        self.allowed_lanes = allowed_lanes
        self.params = {func.buffer_map[p].data for p in func.params if p in func.buffer_map}
        self.casts: dict[tuple, Buffer] = {}  # (buffer, lanes) -> cast buffer, in creation order
        self.declared: set = set()

    def visit_DeclBuffer(self, node):
        body = self._declare_casts(node.buffer, self.visit(node.body))
        return node if body is node.body else replace(node, body=body)

    visit_AllocBuffer = visit_DeclBuffer

    def _declare_casts(self, buf: Buffer, body):
        """Wrap `body` in the DeclBuffers of the casts made of `buf` inside it."""
        for key, cast in reversed(list(self.casts.items())):
            if key[0] is buf:
                body = DeclBuffer(cast, body)
                self.declared.add(key)
        return body

    def _cast_index(self, buf: Buffer, index):
        """The cast buffer and its index for an aligned unit ramp into `buf`, else None."""
        if not is_unit_ramp(index) or not _castable(buf):
            return None
        lanes = index.lanes
        if self.allowed_lanes is not None and lanes not in self.allowed_lanes:
            return None
        if not modular_set(index.base, self.var_sets).is_multiple_of(lanes):
            return None
        if self.unprovable_only and (modular_set(buf.shape[0]).is_multiple_of(lanes)
                                     or buf.scope != "global" or buf.data not in self.params):
            return None
        if self.vulkan and (buf.scope != "global" or buf.data not in self.params):
            raise UnsupportedError(
                f"PointerCastVectorize: the vector access {buf.name}[Ramp(..., 1, {lanes})] needs a "
                f"pointer cast of {buf.scope} buffer {buf.name!r} to {buf.dtype.with_lanes(lanes)}; "
                f"Vulkan can only alias kernel parameters (storage buffers), not "
                f"{'workgroup/function memory' if buf.scope != 'global' else 'allocated storage'}")
        cast = self.casts.get((buf, lanes))
        if cast is None:
            cast = decl_buffer((_cast_extent(buf.shape[0], lanes),), buf.dtype.with_lanes(lanes),
                               f"{buf.name}_x{lanes}", data=buf.data, scope=buf.scope)
            self.casts[(buf, lanes)] = cast
        q, k = self.split(index.base, lanes)
        assert k == 0
        return cast, self.visit(q)

    def visit_BufferLoad(self, node):
        hit = self._cast_index(node.buffer, node.indices[-1]) if len(node.indices) == 1 else None
        if hit is None:
            return self.generic_visit(node)
        return BufferLoad(hit[0], (hit[1],), span=node.span)

    def visit_BufferStore(self, node):
        hit = self._cast_index(node.buffer, node.indices[-1]) if len(node.indices) == 1 else None
        if hit is None:
            return self.generic_visit(node)
        return BufferStore(hit[0], self.visit(node.value), (hit[1],), span=node.span)


@dataclass(frozen=True)
class PointerCastVectorize(Pass):
    """Turn aligned stride-1 ramp accesses into accesses of explicit vector-typed DeclBuffer casts
    over the same data; a Vulkan `target` refuses (UnsupportedError) casts Vulkan cannot honor.

    With `unprovable_extents_only`, only kernel parameters whose extent is not a provable
    multiple of the width (a symbolic size such as `("n",)`, which VectorTypeRewrite must leave
    scalar) are cast, and everything else is left alone rather than refused: the default
    pipeline's way to give such parameters vector loads and stores. The cast's extent is
    `n // L` whole vectors, so every aligned ramp that is in bounds of the parameter is in bounds
    of the cast: no byte past the parameter's end is ever touched, whatever n is."""

    target: Target | None = None
    allowed_lanes: tuple | None = None
    unprovable_extents_only: bool = False

    def __post_init__(self):
        try:
            object.__setattr__(self, "target", Target.coerce(self.target))
        except ValueError as exc:
            raise ArgumentError(f"PointerCastVectorize: {exc}") from None

    def transform(self, func: PrimFunc) -> PrimFunc:
        """Turn aligned vector accesses into accesses of explicit vector-typed casts of the
        buffers."""
        vulkan = self.target is not None and self.target.is_vulkan
        lanes = self.allowed_lanes
        if lanes is None and vulkan:
            lanes = VULKAN_LANES
        caster = _Caster(func, vulkan, lanes, self.unprovable_extents_only)
        body = caster.visit(func.body)
        for p in reversed(func.params):
            if p in func.buffer_map:
                body = caster._declare_casts(func.buffer_map[p], body)
        assert caster.declared == set(caster.casts), "a cast of a buffer declared nowhere"
        return func if body is func.body else replace(func, body=body)

