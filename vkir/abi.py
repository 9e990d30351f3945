"""What a backend hands to the runtime: the validated binary plus its dispatch description
(storage-buffer bindings, push constants, workgroup size and grid). It lives below the SPIR-V
backend so that a kernel loaded from the compile cache needs no code generator."""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Buffer, DataType, PrimExpr, Var


@dataclass(frozen=True)
class Binding:
    """One storage buffer at descriptor set 0, `binding`, bound to argument `param_index`.

    Several bindings share a `param_index` when the kernel casts that parameter's data to another
    element type (an explicit DeclBuffer pointer cast): bind the same VkBuffer to each.
    """

    binding: int
    param_index: int
    buffer: Buffer
    readable: bool
    writable: bool


@dataclass(frozen=True)
class PushConstant:
    """A scalar parameter or symbolic size stored at byte `offset` of the push-constant block as
    `dtype` (std430). Types narrower than 32 bits, and bool, travel widened to 32 bits."""

    var: Var
    offset: int
    dtype: DataType


@dataclass(frozen=True)
class SpirvModule:
    """A validated compute kernel and how to dispatch it."""

    words: bytes
    entry_point: str
    local_size: tuple[int, int, int]
    grid: tuple[PrimExpr, PrimExpr, PrimExpr]
    bindings: tuple[Binding, ...]
    push_constants: tuple[PushConstant, ...]
    push_constant_size: int
    shared_memory_bytes: int
    required_features: frozenset
