"""TVM's Vulkan path, from pip: TVM kernels in, vkir kernels out (the `vkir[tvm]` extra).

apache-tvm's wheel is built without Vulkan. This package closes the gap from Python:

- `from_tvm(obj)` lowers a scheduled TVM PrimFunc or IRModule with TVM's own pipeline for
  `target()` down to its device kernels and imports them into vkir IR (vkir.tvm.importer);
- `target(device=None)` is the `tvm.target.Target` of kind "vulkan" with the vkir device's limits;
- `install()` makes `tvm.compile(mod, target=target())` build its device kernels with vkir, and
  `tensor`/`empty`/`numpy` give TVM tensors on vulkan:0 that live in vkir memory
  (vkir.tvm.bridge).

Without apache-tvm installed every entry point raises UnsupportedError saying what to install.
"""

from __future__ import annotations

from ..errors import UnsupportedError

TVM_RANGE = ">=0.27,<0.28"


def require_tvm():
    """The `tvm` module, or UnsupportedError saying how to install the supported version."""
    try:
        import tvm
    except ImportError:
        raise UnsupportedError(f"the TVM bridge needs apache-tvm{TVM_RANGE}: "
                               "pip install 'vkir[tvm]'") from None
    version = tuple(int(p) for p in tvm.__version__.split(".")[:2])
    if version != (0, 27):
        raise UnsupportedError(f"the TVM bridge supports apache-tvm{TVM_RANGE}; this is "
                               f"{tvm.__version__} (pip install 'vkir[tvm]')")
    return tvm


def target(device=None):
    """`tvm.target.Target` of kind "vulkan" whose limits are those of the vkir `device` (the
    default device when None): thread counts, shared memory, and the types it supports.
    `thread_warp_size` is 1, so TVM's reductions use shared memory and barriers."""
    tvm = require_tvm()
    from ..api import device as open_device

    dev = open_device(device)
    info = dev.info
    features = info.features
    limits = info.limits
    return tvm.target.Target({
        "kind": "vulkan",
        "max_num_threads": limits.max_workgroup_invocations,
        "max_threads_per_block": limits.max_workgroup_invocations,
        "max_shared_memory_per_block": limits.max_shared_memory_bytes,
        "thread_warp_size": 1,
        "supports_float16": "float16" in features,
        "supports_float64": "float64" in features,
        "supports_int8": "int8" in features,
        "supports_int16": "int16" in features,
        "supports_int64": "int64" in features,
        "supports_16bit_buffer": "storage_buffer_16bit" in features,
        "supports_8bit_buffer": "storage_buffer_8bit" in features,
    })


def dlight(obj, device=None):
    """An IRModule with TVM's dlight default GPU schedules (matmul, GEMV, reductions, general
    reductions, else the fallback) applied for `target(device)`; `obj` is a TVM PrimFunc (e.g.
    `te.create_prim_func(...)`) or IRModule. A function whose schedule would need more shared
    memory than the device has gets the first later rule whose schedule fits."""
    tvm = require_tvm()
    from tvm.s_tir import dlight as dl

    from .lowering import shared_bytes

    mod = tvm.IRModule({"main": obj}) if isinstance(obj, tvm.tirx.PrimFunc) else obj
    rules = (dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(),
             dl.gpu.Fallback())
    tgt = target(device)
    limit = int(tgt.attrs["max_shared_memory_per_block"])
    # the functions as written (ApplyDefaultSchedule may update `mod` in place)
    written = {gv: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}
    with tgt:
        out = dl.ApplyDefaultSchedule(*rules)(mod)
        for gv, func in written.items():
            # a rule whose schedule needs more shared memory than the device has (dlight's
            # GEMV stages whole rows of A[i, k] * x[k]): the next rules, down to the fallback
            for first in range(1, len(rules)):
                if shared_bytes(tvm.IRModule({gv: out[gv]}), tgt) <= limit:
                    break
                out[gv] = dl.ApplyDefaultSchedule(*rules[first:])(tvm.IRModule({gv: func}))[gv]
    return out


def from_tvm(obj, *, device=None, lower: bool = True):
    """vkir IR of a TVM kernel: `obj` is a TVM PrimFunc or IRModule, from a thread-bound schedule
    (TVMScript, TE + s_tir.Schedule, dlight) to the finalized device module. It is lowered with
    TVM's own pipeline for `target(device)` up to the device kernels, which are imported node by
    node. One device kernel gives a PrimFunc, several a dict name -> PrimFunc. With
    `lower=False` each PrimFunc is imported as it is (TVM's pass tests compare such functions).
    """
    tvm = require_tvm()
    from .importer import import_prim_func, signature
    from .lowering import device_functions

    if isinstance(obj, tvm.tirx.PrimFunc):
        name = "main"
        if obj.attrs is not None and "global_symbol" in obj.attrs:
            name = str(obj.attrs["global_symbol"])
        obj = tvm.IRModule({name: obj})
    if not isinstance(obj, tvm.IRModule):
        raise UnsupportedError(f"from_tvm takes a TVM PrimFunc or IRModule, got "
                               f"{type(obj).__name__}")
    written = [f for f in obj.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    user = signature(written[0]) if len(written) == 1 else ()
    if lower:
        funcs = device_functions(obj, target(device))
    else:
        funcs = {gv.name_hint: f for gv, f in obj.functions.items()
                 if isinstance(f, tvm.tirx.PrimFunc)}
    try:
        out = {name: import_prim_func(f, name, user) for name, f in funcs.items()}
    except UnsupportedError as exc:
        raise exc.with_traceback(None) from None   # the message names the construct
    if not out:
        raise UnsupportedError("from_tvm: the module has no device kernel: bind its loops to "
                               "threads (blockIdx/threadIdx) in a schedule, or schedule it with "
                               "vkir.tvm.dlight(obj)")
    return next(iter(out.values())) if len(out) == 1 else out


def __getattr__(name):
    if name == "tuning":   # MetaSchedule's builder and runner for vkir (vkir.tvm.tuning)
        import importlib

        return importlib.import_module(".tuning", __name__)
    if name in ("install", "tensor", "empty", "numpy"):
        from . import bridge

        return getattr(bridge, name)
    raise AttributeError(f"module 'vkir.tvm' has no attribute {name!r}")
