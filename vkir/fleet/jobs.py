"""Kernels built where a fleet job starts: for each kind of device in the fleet, the SPIR-V and
dispatch description of exactly the function its actor's `vkir.build` will compile, as compile
cache entries (vkir.cache.compile.entry) that travel with the job. An actor builds from them
inside a `prebuilt` block, without lowering or code generation; only the runs happen there.

What the actor compiles depends on the device: device-side bounds checks (what `check` builds
with), then loop-cut checks where the driver cuts long loops, then the device's Target with the
schedule's subgroup size (vkir.driver.kernel.compile_target). The same pure functions run here.
"""

from __future__ import annotations

from ..errors import VkirError
from ..ir import PrimFunc

__all__ = ["kernel_entries", "compiled_function"]


def compiled_function(func: PrimFunc, quirks, check_bounds: bool) -> PrimFunc:
    """The function a Vulkan build of `func` hands to codegen on a device with `quirks`."""
    from ..driver import bounds_check, loop_cut

    if check_bounds:
        func = bounds_check.instrument(func)[0]
    if loop_cut.needs_checks(func, quirks):
        func = loop_cut.instrument(func)[0]
    return func


def kernel_entries(func: PrimFunc, info, check_bounds: bool = False) -> dict:
    """{key: entry} for `func` built on the device `info` describes (a DeviceInfo): one entry,
    or none where it cannot be written as one (the actor then compiles itself). A kernel the
    device cannot run raises the build's VkirError (UnsupportedError, ...) here, before any
    actor is asked."""
    from ..cache.compile import entry
    from ..driver.arrays import target_for
    from ..driver.kernel import compile_target

    target = target_for(info)
    inner = compiled_function(func, info.quirks, check_bounds)
    built = entry(inner, compile_target(inner, target))
    return {} if built is None else {built[0]: built[1]}


def entries_or_error(func: PrimFunc, info, check_bounds: bool = False) -> tuple:
    """(entries, None), or (None, "Type: message") where the device cannot run `func`."""
    try:
        return kernel_entries(func, info, check_bounds), None
    except VkirError as exc:
        return None, f"{type(exc).__name__}: {exc}"
