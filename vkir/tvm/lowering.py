"""TVM's own lowering of a scheduled module down to its device kernels (no code generation):
bind the target, run TVM's default TIR pipeline for it, split host from device, finalize the
device functions. Functions that are already device kernels pass through unchanged."""

from __future__ import annotations

import sys

from ..errors import UnsupportedError

# TVM's calling convention of a device kernel launched by the host (kDeviceKernelLaunch)
DEVICE_KERNEL_LAUNCH = 2


def is_device_kernel(func) -> bool:
    """Whether a TVM PrimFunc is already a finalized device kernel."""
    attrs = func.attrs
    return attrs is not None and "calling_conv" in attrs and \
        int(attrs["calling_conv"]) == DEVICE_KERNEL_LAUNCH


def device_functions(mod, target) -> dict:
    """name -> TVM PrimFunc of every device kernel of `mod` lowered for `target`."""
    import tvm

    funcs = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}
    if funcs and all(is_device_kernel(f) for f in funcs.values()):
        return funcs
    host = tvm.target.Target("llvm" if tvm.runtime.enabled("llvm") else "c")
    bound = tvm.tirx.transform.BindTarget(target.with_host(host))(mod)
    pipeline, _, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
    try:
        lowered = pipeline(bound)
    except tvm.error.TVMError as exc:   # TVM's own verdict on the schedule (e.g. unbound loops)
        raise UnsupportedError(f"from_tvm: TVM could not lower the module for Vulkan: "
                               f"{str(exc).strip().splitlines()[-1]}") from None
    build = sys.modules[tvm.tirx.build.__module__]
    _, devices = build.split_host_device_mods(lowered)
    out = {}
    for device_mod in devices.values():
        device_mod = narrow(finalize_device()(device_mod), target)
        out.update({gv.name_hint: f for gv, f in device_mod.functions.items()})
    return out


def narrow(device_mod, target):
    """`device_mod` with int64 indices narrowed to int32 where TVM proves it safe (its
    NarrowDataType pass), and on a device without int64 everywhere (ForceNarrowIndexToInt32, which
    refuses an index that does not fit): Relax and dlight index even small extents with int64,
    which SwiftShader lacks and lavapipe compares slowly (the "int64_signed_compare" quirk)."""
    import tvm

    transform = tvm.tirx.transform
    try:
        device_mod = transform.NarrowDataType(32)(device_mod)
        if not bool(target.attrs.get("supports_int64", False)):
            device_mod = transform.ForceNarrowIndexToInt32()(device_mod)
    except tvm.error.TVMError as exc:
        raise UnsupportedError(f"this device has no int64 and TVM could not narrow the kernel's "
                               f"indices to int32: {str(exc).strip().splitlines()[-1]}") from None
    return device_mod


def shared_bytes(mod, target) -> int:
    """The most shared memory (bytes) one device kernel of scheduled `mod` allocates once TVM
    lowered it for `target`."""
    from tvm.s_tir.analysis import calculate_allocated_bytes

    most = 0
    for func in device_functions(mod, target).values():
        for sizes in calculate_allocated_bytes(func).values():
            most = max(most, sum(int(n) for scope, n in sizes.items()
                                 if str(scope) in ("shared", "shared.dyn")))
    return most
