"""Codegen: a lowered PrimFunc to a validated SPIR-V compute module (`codegen(func, target)`)."""

from __future__ import annotations

from vkir.errors import ArgumentError, SpirvValidationError
from vkir.ir import PrimFunc
from vkir.ir.structural import recursion_headroom

from ..module import SpirvModule
from ..target import Target
from ..tools import validate
from .emitter import KernelEmitter

__all__ = ["codegen"]


def codegen(func: PrimFunc, target: Target | None = None) -> SpirvModule:
    """Emit one GLCompute entry point for `func` (buffers already flattened to 1-d) and validate
    it with SPIRV-Tools for `target.env`.

    Raises UnsupportedError when the kernel needs a device feature or limit the target lacks,
    SpirvValidationError if the emitted module is invalid (a codegen bug).
    """
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"codegen expects a lowered PrimFunc, got {type(func).__name__}")
    if target is not None and not isinstance(target, Target):
        raise ArgumentError(f"codegen expects a vkir.spirv.Target (which is vkir.Target), got "
                            f"{type(target).__name__}")
    target = target or Target()
    if not target.is_vulkan:
        raise ArgumentError(f"codegen emits SPIR-V for Vulkan targets, not for a {target.kind!r} "
                            "target")
    with recursion_headroom():  # the emitter recurses once per level of deep expressions
        emitter = KernelEmitter(func, target)
        words = emitter.run()
    try:
        validate(words, target.env)
    except SpirvValidationError as err:
        raise SpirvValidationError(
            f"codegen emitted an invalid module for kernel {func.name!r} (a vkir bug; please "
            f"report it with the kernel):\n{err}") from None
    return SpirvModule(
        words=words,
        entry_point=func.name,
        local_size=emitter.local_size(),
        grid=emitter.grid(),
        bindings=emitter.bindings(),
        push_constants=tuple(emitter.iface.push_constants),
        push_constant_size=emitter.iface.push_constant_size,
        shared_memory_bytes=emitter.shared_bytes,
        required_features=frozenset(emitter.types.required),
        folds_grid=emitter.folds_grid,
        images=emitter.image_bindings(),
    )
