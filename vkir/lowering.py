"""The default pass pipeline that turns a scheduled PrimFunc into one the target's backend
accepts: `pipeline(target)` is the data, `lower(func, target)` runs it and checks the result."""

from __future__ import annotations

from . import transform
from .analysis import verify_types, verify_well_formed
from .errors import ArgumentError
from .ir import PrimFunc
from .ir.structural import recursion_headroom
from .quirks import LOOP_TRIP_LIMIT   # the quirk SplitLongLoops works around
from .target import Target
from .transform.base import verify_every_pass
from .transform.instruments import CheckTypes
from .transform.pipeline import Pipeline

__all__ = ["lower", "default_passes"]


def as_target(target) -> Target:
    """`target` (a Target, a target name, a device, or None for the Vulkan 1.1 baseline) as a
    Target; ArgumentError for anything else."""
    return Target.coerce(target) or Target()


def pipeline(target=None, *, pointer_casts: bool = False) -> Pipeline:
    """The default pipeline for `target`, in order. `T.parallel` loops are bound to the grid
    first (BindParallel: the workgroup size comes from the target). Async pipelining is resolved
    (it needs the N-d buffers), then buffers are flattened, loops vectorized and vector types introduced;
    CSE runs last so that it sees the final index arithmetic. With `pointer_casts`, aligned vector
    accesses go through explicit DeclBuffer casts (aliased descriptors on Vulkan) before the
    VectorTypeRewriter, which then leaves the cast storages alone; without it, for Vulkan, the
    parameters the VectorTypeRewriter must leave scalar because their size is symbolic get such
    casts after it (SymbolicVectorCast). Bool buffers become int8 only for Vulkan (the
    interpreter stores bools as they are); without int64, EmulateInt64 then holds int64/uint64
    values and buffer elements as pairs of 32-bit words; without 8-bit support, EmulateInt8 widens
    8-bit values and reads and writes 8-bit buffers as bytes of 32-bit words. On targets with the "loop_trip_limit_65535" quirk, SplitLongLoops runs last (see
    vkir.quirks)."""
    target = as_target(target)
    casts = (transform.PointerCastVectorize(target=target),) if pointer_casts else ()
    # parameters of symbolic size get vector accesses through casts (VectorTypeRewrite cannot
    # change their type without knowing the size is a multiple of the width)
    symbolic = () if pointer_casts or not target.is_vulkan else \
        (transform.SymbolicVectorCast(target=target),)
    bools = (transform.BoolToInt8(),) if target.is_vulkan else ()
    # without 64-bit integers, int64/uint64 live in pairs of 32-bit words (first: it narrows the
    # int64 indices of 8-bit buffers, whose byte addressing is 32-bit)
    if target.is_vulkan and not target.has("int64"):
        bools += (transform.EmulateInt64(),)
    # without 8-bit integers or 8-bit storage, bytes live in 32-bit values and words
    if target.is_vulkan and not (target.has("int8") and target.has("storage_buffer_8bit")):
        bools += (transform.EmulateInt8(),)
    # llvmpipe stops loops after 65535 back edges per invocation: fewer, longer iterations
    long_loops = (transform.SplitLongLoops(),) if LOOP_TRIP_LIMIT in target.quirks else ()
    return Pipeline((
        transform.BindParallel(target=target),
        transform.InjectSoftwarePipeline(),
        transform.LowerAsync(),
        transform.FlattenBuffer(),
        transform.VectorizeLoop(),
        transform.Simplify(),
        *casts,
        transform.VectorTypeRewrite(),
        *symbolic,
        *bools,
        transform.CommonSubexprElim(),
        *long_loops,
    ))


def default_passes(target=None, pointer_casts: bool = False) -> tuple:
    """The passes of `pipeline(target, pointer_casts=...)` as a tuple."""
    return pipeline(target, pointer_casts=pointer_casts).passes


def lower(func: PrimFunc, target=None, *, instruments=(), verify_each: bool = False,
          pointer_casts: bool = False) -> PrimFunc:
    """Run `pipeline(target)` on `func` with `instruments` around every pass, and check the
    result with the explicit-cast checker (for `target`) and the well-formedness checker.
    `verify_each` adds the CheckTypes instrument (the checker after every pass)."""
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"vkir.lower expects a PrimFunc (a @T.prim_func), got "
                            f"{type(func).__name__}")
    target = as_target(target)
    instruments = tuple(instruments)
    if verify_each and not verify_every_pass():  # else every pass call checks already
        instruments = (CheckTypes(), *instruments)
    with recursion_headroom():  # deep expressions recurse once per level in every pass
        verify_types(func)  # passes assume well-typed input: refuse ill-typed IR before any runs
        func = pipeline(target, pointer_casts=pointer_casts)(func, instruments=instruments)
        verify_types(func, target)
        verify_well_formed(func)
    return func
