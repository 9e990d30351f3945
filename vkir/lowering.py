"""The default pass pipeline that turns a scheduled PrimFunc into one SPIR-V codegen accepts."""

from __future__ import annotations

from . import transform
from .analysis import verify_types, verify_well_formed
from .errors import ArgumentError
from .ir import PrimFunc
from .ir.structural import recursion_headroom

__all__ = ["lower", "default_passes"]


def default_passes(target=None, pointer_casts: bool = False) -> tuple:
    """The Vulkan pipeline, in order. Async pipelining is resolved first (it needs the N-d
    buffers), then buffers are flattened, loops vectorized and vector types introduced; CSE runs
    last so that it sees the final index arithmetic. With `pointer_casts`, aligned vector accesses
    go through explicit DeclBuffer casts (aliased descriptors on Vulkan) before the
    VectorTypeRewriter, which then leaves the cast storages alone."""
    casts = (transform.PointerCastVectorize(target="vulkan"),) if pointer_casts else ()
    return (
        transform.InjectSoftwarePipeline(),
        transform.LowerAsync(),
        transform.FlattenBuffer(),
        transform.VectorizeLoop(),
        transform.Simplify(),
        *casts,
        transform.VectorTypeRewrite(),
        transform.BoolToInt8(),
        transform.CommonSubexprElim(),
    )


def lower(func: PrimFunc, target=None, verify_each: bool = False,
          pointer_casts: bool = False) -> PrimFunc:
    """Run the default pipeline for `target` and check the result with the explicit-cast and
    well-formedness checkers (after every pass when `verify_each`)."""
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"vkir.lower expects a PrimFunc, got {type(func).__name__}")
    with recursion_headroom():  # deep expressions recurse once per level in every pass
        verify_types(func)  # passes assume well-typed input: refuse ill-typed IR before any runs
        for p in default_passes(target, pointer_casts):
            func = p(func)
            if verify_each:
                verify_types(func)
        verify_types(func, target="vulkan")
        verify_well_formed(func)
    return func
