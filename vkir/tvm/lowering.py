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
    except TVM_ERRORS as exc:   # TVM's own verdict on the schedule (e.g. unbound loops)
        raise UnsupportedError(f"from_tvm: TVM could not lower the module for Vulkan: "
                               f"{_last_line(exc)}") from None
    build = sys.modules[tvm.tirx.build.__module__]
    _, devices = build.split_host_device_mods(lowered)
    out = {}
    for device_mod in devices.values():
        device_mod = narrow(finalize_device()(device_mod), target)
        out.update({gv.name_hint: f for gv, f in device_mod.functions.items()})
    return out


# what TVM 0.27's FFI raises for an error inside a pass (its C++ errors arrive as
# tvm.error.InternalError, a RuntimeError, or as the Python error their kind names)
TVM_ERRORS = (RuntimeError, ValueError, TypeError, IndexError)


def _last_line(exc) -> str:
    """TVM's reason in an error from a pass: its last line, or, where the message goes on to
    print the function (NarrowDataType: "... has dtype T.int64. The function is ..."), the
    sentences before it."""
    text = str(exc).strip()
    if " The function is " in text:
        return text.split(" The function is ", 1)[0].strip().splitlines()[-1]
    lines = text.splitlines()
    return lines[-1].strip() if lines else type(exc).__name__


def narrow(device_mod, target):
    """`device_mod` with int64 indices narrowed to int32 where the device lacks int64, and as
    it is where the device has int64: there TVM's int64 index arithmetic runs natively
    (lavapipe's signed int64 compares through vkir's exact "int64_signed_compare" quirk
    lowering). Without int64, TVM's NarrowDataType(32) and ForceNarrowIndexToInt32 narrow each
    function (the latter refuses an index that does not fit); a function they cannot narrow
    (e.g. argmax's int64 index reduction) keeps its int64 arithmetic, which vkir's
    EmulateInt64 computes in pairs of 32-bit words."""
    import tvm

    if bool(target.attrs.get("supports_int64", False)):
        return device_mod
    transform = tvm.tirx.transform
    out = {}
    for gv, func in device_mod.functions.items():
        one = tvm.IRModule({gv: func})
        try:
            one = transform.ForceNarrowIndexToInt32()(transform.NarrowDataType(32)(one))
        except TVM_ERRORS:
            out[gv] = func   # int64 stays, emulated in 32-bit words (EmulateInt64)
            continue
        out[gv] = one[gv]
    return tvm.IRModule(out, attrs=device_mod.attrs)


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
