"""Lowering and building kernels: `lower` (the default pass pipeline), `build` (a Kernel on the
backend its `device` selects) and `check_layouts` (what a kernel's parameter buffers must be), and
`interpret` on device arrays.
"""

from __future__ import annotations

from ..errors import ArgumentError, TypeCheckError, UnsupportedError, WellFormedError
from ..ir import IntImm, PrimFunc
from .arrays import host_copies

__all__ = ["interpret", "lower", "build", "check_layouts", "runtime_kernel"]


def interpret(func: PrimFunc, *args, **kwargs) -> None:
    """vkir.interpreter.interpret (same arguments and options), also on vkir DeviceArrays and
    DeviceImages: each is copied to the host, and back when the kernel changed it, so one call
    site runs on the device and in the interpreter (device arrays over one buffer share one host
    copy; a texture of several mip levels is read back as the list of its levels:
    vkir.driver.interpreted_images)."""
    from ..interpreter import interpret as _interpret
    from .interpreted_images import image_host_copies

    if isinstance(func, PrimFunc):
        args, kwargs, images_back = image_host_copies(func, args, kwargs)
    else:   # (the interpreter says what it expects)
        images_back = None
    keys = tuple(kwargs)
    host, write_back = host_copies(list(args) + [kwargs[k] for k in keys])
    _interpret(func, *host[:len(args)], **dict(zip(keys, host[len(args):])))
    write_back()
    if images_back is not None:
        images_back()


def lower(func: PrimFunc, target=None, *, instruments=(), verify_each: bool = False,
          pointer_casts: bool = False) -> PrimFunc:
    """The default pass pipeline for `target` (a vkir.Target, a target name or a device; None is
    the Vulkan 1.1 baseline), see vkir.lowering: `instruments` are called around every pass,
    `verify_each` runs the explicit-cast checker after every pass, `pointer_casts` adds
    PointerCastVectorize."""
    from ..lowering import lower as _lower

    return _lower(func, target, instruments=instruments, verify_each=verify_each,
                  pointer_casts=pointer_casts)


def runtime_kernel(func: PrimFunc, rt, *, pointer_casts: bool = False, precise: bool = False,
                   check_bounds: bool = False):
    """The Kernel of `func` on the seam Runtime `rt`: T.parallel loops bound onto the grid,
    then compiled for `rt.target()`. What needs Vulkan's device arrays is refused: bounds checks,
    and loop-cut checks on a driver with a loop budget (vkir.driver.loop_cut)."""
    from ..transform.bind_parallel import BindParallel
    from .kernel import Kernel
    from .loop_cut import needs_checks

    if check_bounds:
        raise UnsupportedError(f"kernel {func.name}: check_bounds=True is not supported by the "
                               f"{rt.kind} backend (run it with device='interp', which always "
                               "checks bounds, or on Vulkan)")
    source, func = func, BindParallel(target=rt.target(precise))(func)   # onto the grid
    if needs_checks(func, rt.quirks):
        raise UnsupportedError(
            f"kernel {func.name}: a loop whose length depends on buffer data, on a driver "
            f"that cuts long loops ({rt.name!r}); the checks that catch a cut read a vkir "
            f"device array, which the {rt.kind} backend does not have: pass loop counts as "
            "scalar arguments, or run it on Vulkan")
    kernel = Kernel(func, rt, pointer_casts, precise)
    kernel.source = source   # as written: what vkir.Tape differentiates
    return kernel


def _build(func: PrimFunc, device, pointer_casts: bool, precise: bool, check_bounds: bool):
    """The Kernel `build` returns (see there): the backend a registered name selects ("interp",
    "vulkan", "wgpu", or one of another package: vkir.seam.registry), the backend of a seam
    Runtime on it, else Vulkan on the device `device` selects. A package may register its
    Runtime class itself instead of a backend: its kernels are `runtime_kernel`s."""
    from ..seam import Runtime
    from ..seam.registry import backend_class, has_backend

    options = dict(pointer_casts=pointer_casts, precise=precise, check_bounds=check_bounds)
    if isinstance(device, str) and has_backend(device):
        registered, device = backend_class(device), None
    elif isinstance(device, Runtime):   # a backend's runtime: that backend, on it
        registered = backend_class(device.kind)
    else:
        registered = backend_class("vulkan")
    if isinstance(registered, type) and issubclass(registered, Runtime):
        return runtime_kernel(func, device if device is not None else registered(), **options)
    return registered().kernel(func, device, **options)


def build(func: PrimFunc, *, device=None, pointer_casts: bool = False,
          precise: bool = False, explain: bool = False, check_bounds: bool = False) -> "Kernel":
    """Lower, generate SPIR-V for `device` (validated by codegen) and create the (cached)
    pipeline; `device="interp"` gives a Kernel run by the interpreter instead (same calls, same
    errors; see vkir.backends). `pointer_casts=True` vectorizes aligned accesses through explicit pointer casts
    (one VkBuffer bound to aliased descriptors) where the VectorTypeRewriter must scalarize.
    `precise=True` forbids the driver to fuse or reassociate float arithmetic (NoContraction),
    so float results equal vkir.interpret's bit for bit, at some cost in speed. `explain=True`
    prints `Kernel.report()` to stderr: which vector accesses stayed scalar, and why.
    `check_bounds=True` adds device-side bounds checks (vkir.driver.bounds_check): an out-of-bounds
    access is skipped and the call raises vkir.OutOfBoundsError naming the buffer, the index,
    the invocation and the source line (the interpreter always checks)."""
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"vkir.build expects a PrimFunc (a @T.prim_func), got {type(func).__name__}")
    try:
        kernel = _build(func, device, pointer_casts, precise, check_bounds)
    except (TypeCheckError, WellFormedError) as exc:
        # the message names the node, the rule and the source line: vkir's own frames only
        # hide it from a user reading the traceback
        raise exc.with_traceback(None) from None
    _warn_if_serial(func)
    if explain:
        import sys

        print(kernel.report(), file=sys.stderr)
    return kernel


def _warn_if_serial(func: PrimFunc) -> None:
    """PerformanceWarning when `func` runs as one invocation (no thread binding, and no outer
    T.parallel nest for the build to bind), naming the kernel and the fix."""
    from ..transform.bind_parallel import parallelism

    how = parallelism(func)
    if how in ("threads", "parallel"):
        return
    import warnings

    from ..errors import PerformanceWarning

    if how == "serial parallel":
        why = ("its T.parallel loops are not one outer loop nest making up the whole body (a "
               "statement beside the nest, or a loop around it), so they run as serial loops; "
               "make the parallel nest the whole body, or split the kernel")
    else:
        why = ("it has neither a T.parallel loop nor a thread binding; write its outer loop as "
               "`for i in T.parallel(n):` (vkir.build binds it to the device's workgroups), or "
               "bind threads with T.thread_binding")
    warnings.warn(f"kernel {func.name} runs as a single invocation: {why}", PerformanceWarning,
                  stacklevel=3)


def check_layouts(func: PrimFunc) -> None:
    """Kernel arguments are compact row-major arrays of the buffer's shape, bound as they are: a
    parameter buffer with explicit strides or an elem_offset would index past the array's end."""
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        offset = buf.elem_offset
        if buf.strides or not (isinstance(offset, IntImm) and offset.value == 0):
            raise UnsupportedError(
                f"kernel {func.name}: parameter buffer {buf.name!r} has explicit strides or an "
                "elem_offset; vkir.build binds compact row-major arrays, so declare the buffer "
                "with its full extent and index it (or alias it with T.decl_buffer) in the body")
