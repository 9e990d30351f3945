"""`tvm.compile(mod, target=vkir.tvm.target())` through vkir, and TVM tensors in vkir memory.

`install()` registers the global functions TVM looks up for the "vulkan" device and nothing
else: "device_api.vulkan" (TVM's device API on vkir memory, vkir.tvm.device_memory, where a C++
compiler exists or vkir's cache holds it), "target.build.vulkan", which imports each device
kernel into vkir, builds it, and returns a module with one function per kernel that calls the
vkir launcher (TVM's host code calls kernels by name through its imports), and
"__tvm_set_device", which accepts the Vulkan device type and defers to TVM's own function for
every other one. It also makes TVM's default Relax pipeline for a "vulkan" target schedule
kernels with vkir's own rules first (vkir.tvm.rules, for the installed device), TVM's after
them; every other target's pipeline is TVM's. Tensors on vulkan:0 (from TVM's device API, or vkir device arrays through
DLPack) hold an opaque handle as their data pointer, which the launcher maps back to the array
(vkir.driver.dlpack).
"""

from __future__ import annotations

import hashlib
import json
import warnings
import threading

import numpy as np

from ..driver.dlpack import KDL_VULKAN, array_of_handle, vulkan_device
from ..errors import ArgumentError
from . import require_tvm

_LAUNCHER = "vkir.tvm.device_api.launch"   # called by both kinds of kernel module
_LOCK = threading.Lock()
_INSTALLED: dict = {}   # "set_device": TVM's own __tvm_set_device; "device": install()'s device;
#                         "pipeline": TVM's own relax.get_default_pipeline
_KERNELS: dict = {}     # (kernel key, id of the device selector) -> its launcher


def install(device=None) -> None:
    """Make `tvm.compile(..., target=vkir.tvm.target())` build its device kernels with vkir
    (on `device`: an opened vkir device, or a selector resolved at each build, so that the
    default one (None) is the one open then). Each call registers the builder again, the last
    call's device wins: after `vkir.runtime.shutdown()`, `install()` builds on the new device;
    a closed device is a DeviceError here, never a silent no-op."""
    tvm = require_tvm()
    import tvm_ffi

    from .. import runtime

    if isinstance(device, runtime.Device):
        device.check_open()

    def build_vulkan(mod, target):
        return _build(tvm, tvm_ffi, mod, target, device)

    with _LOCK:
        _INSTALLED["device"] = device
        _KERNELS.clear()   # built for the device of an earlier call
        tvm_ffi.register_global_func("target.build.vulkan", build_vulkan, override=True)
        tvm_ffi.register_global_func(_LAUNCHER, _launch, override=True)
        _register_errors(tvm_ffi)
        _device_api(device)
        _schedule_rules(tvm)
        if "set_device" in _INSTALLED:
            return
        original = tvm.get_global_func("__tvm_set_device")

        def set_device(device_type, device_id):
            if int(device_type) != KDL_VULKAN:
                original(device_type, device_id)

        tvm_ffi.register_global_func("__tvm_set_device", set_device, override=True)
        _INSTALLED["set_device"] = original


def _schedule_rules(tvm) -> None:
    """`tvm.relax.get_default_pipeline` (what `tvm.compile` runs on a Relax module for a GPU
    target) gives, for a "vulkan" target, TVM's generic GPU pipeline scheduling kernels with
    vkir.tvm.rules.default_rules of the installed device (resolved at each compile, as the
    builder's device is); any other target gets TVM's own pipeline. Installed once; TVM's
    function is kept and deferred to."""
    if "pipeline" in _INSTALLED:
        return
    original = tvm.relax.get_default_pipeline

    def default_pipeline(target):
        if target.kind.name != "vulkan":
            return original(target)
        from .rules import default_rules, relax_pipeline

        return relax_pipeline(target, default_rules(_device_info()))

    _INSTALLED["pipeline"] = original
    tvm.relax.get_default_pipeline = default_pipeline


def _device_info():
    """The DeviceInfo of the installed device (an opened one, or the selector's now)."""
    from ..api import device as open_device

    return open_device(_INSTALLED.get("device")).info


def _register_errors(tvm_ffi) -> None:
    """vkir's error types by the kinds "vkir.<Name>" in tvm_ffi's error table, so that an error
    vkir raises inside TVM's build callback or a kernel launch comes out of `tvm.compile` or the
    call as the same vkir type, not a RuntimeError (the "vkir." prefix keeps TVM's own kinds,
    e.g. its ScheduleError, untouched)."""
    from .. import errors

    for name, cls in vars(errors).items():
        if isinstance(cls, type) and issubclass(cls, errors.VkirError):
            tvm_ffi.register_error(f"vkir.{name}", cls)


def _device_api(device) -> None:
    """TVM's "device_api.vulkan" on vkir memory (vkir.tvm.device_memory), compiled here or
    found in vkir's cache. Where neither can be, kernels still build, a warning says what
    tvm.vulkan(0) tensors need, and loading a library from export_library raises that reason
    instead of TVM's "a loader of that name is not registered"."""
    import tvm_ffi

    from ..errors import UnsupportedError
    from .device_memory import compiler, install_device_api

    try:
        install_device_api(device)
    except UnsupportedError as exc:
        if compiler() is not None:   # the compiler failed: an error, as any build's
            raise
        reason = str(exc)
        warnings.warn(reason, stacklevel=3)

        def cannot_load(data):
            raise UnsupportedError(f"vkir.tvm: cannot load a library's Vulkan kernels: {reason}")

        tvm_ffi.register_global_func("ffi.Module.load_from_bytes.vkir_vulkan", cannot_load,
                                     override=True)


def _build(tvm, tvm_ffi, mod, target, device):
    """The runtime module of TVM's device module `mod`: each kernel imported and built by vkir,
    reached from TVM's host code by name. The module is the device API library's "vkir_vulkan"
    kernel module, which keeps each kernel's TVM JSON and saves it, so that a library written by
    `export_library` runs in another process once `install()` ran there; without that library
    (no C++ compiler), an LLVM module with a function per kernel that calls the launcher."""
    from . import target as vkir_target
    from .lowering import narrow

    mod = narrow(mod, vkir_target(device))   # the device's types, whatever target TVM was given
    shims, kernels = {}, ([], [], [], [])
    for gv, func in mod.functions.items():
        name = gv.name_hint
        text = tvm.ir.save_json(func)
        key = f"{name}.{hashlib.sha256(text.encode()).hexdigest()[:24]}"
        launcher = _kernel_launcher(key, text, name, func=func)   # vkir's errors surface now
        built = _entries(launcher.source, launcher.kernel)
        shims[name] = _shim(tvm, name, func, key, text, built)
        for column, value in zip(kernels, (name, key, text, built)):
            column.append(value)
    module = tvm.get_global_func("vkir.tvm.kernel_module", allow_missing=True)
    if module is not None:   # the device API's library: a module export_library embeds
        return module(*kernels)
    return tvm.tirx.build(tvm.IRModule(shims), target="llvm")


def _entries(source, kernel) -> str:
    """The JSON of the SPIR-V and dispatch description of `kernel` (vkir.build of `source`) as
    vkir compile-cache entries ({key: entry}, as vkir.fleet.jobs.kernel_entries writes them),
    which a loaded library builds from without lowering or code generation. A plain kernel's
    entry is recorded from what its build compiled (vkir.cache.compile.recorded: nothing is
    lowered twice); a checked kernel's (loop-cut checks) is compiled for the entry."""
    from ..cache.compile import recorded
    from ..driver.kernel import Kernel
    from ..fleet.jobs import kernel_entries

    if type(kernel) is Kernel:
        built = recorded(kernel.func, kernel._compile_target, kernel._compiled)
        return json.dumps({} if built is None else {built[0]: built[1]})
    return json.dumps(kernel_entries(source, kernel.device.info))


def _kernel_launcher(key: str, text: str, name: str, built: str = "", func=None):
    """The launcher of the kernel `key` on the installed device: built from its TVM PrimFunc
    (`func`, else read back from its JSON `text`) on first use, its SPIR-V taken from `built`
    (the entries `_entries` wrote) where they fit the device (else compiled here)."""
    from .. import api
    from ..cache.compile import prebuilt
    from .importer import import_prim_func

    device = _INSTALLED.get("device")
    with _LOCK:
        got = _KERNELS.get((key, id(device)))
    if got is not None:
        return got
    if func is None:
        func = require_tvm().ir.load_json(text)
    source = import_prim_func(func, name)
    with prebuilt(json.loads(built) if built else {}):
        kernel = api.build(source, device=device)
    got = _launcher(kernel, func, source)
    got.source = source
    with _LOCK:
        _KERNELS[(key, id(device))] = got
    return got


def _launch(key, text, built, *args):
    """The launcher both kernel modules call: run kernel `key` (TVM's JSON `text`, vkir's
    compiled kernel `built`) with TVM's kernel arguments."""
    _kernel_launcher(str(key), str(text), str(key).rsplit(".", 1)[0], str(built))(*args)


def _shim(tvm, name: str, func, key: str, text: str, built: str):
    """A host function named like the kernel, taking TVM's kernel arguments (the parameters,
    then one value per launch parameter) and passing them, after the kernel's key, JSON and
    compiled kernel, to the launcher."""
    tirx = tvm.tirx
    params = [tirx.Var(str(p.name), p.ty) for p in func.params]
    launch = [tirx.Var(f"launch_{k}", "int32")
              for k in range(len(func.attrs["tirx.kernel_launch_params"]))]
    body = tirx.Evaluate(tirx.call_packed(_LAUNCHER, tvm.ir.StringImm(key), tvm.ir.StringImm(text),
                                          tvm.ir.StringImm(built), *params, *launch))
    return tirx.PrimFunc(params + launch, body).with_attr("global_symbol", name)


def _launcher(kernel, func, source):
    """The Python function TVM's host code calls: handles become the device arrays they stand
    for, each viewed with the dtype and exact size of its buffer in `source`, the kernel as
    imported, whose signature the kernel checks (a bool or uint8 buffer keeps its dtype there,
    one byte per element as TVM stores it, whatever the lowering made of it on the device;
    TVM pools allocations and rounds them up, and its scalar arguments give the symbolic
    sizes); scalars stay; launch extents are vkir's."""
    names = [str(p.name) for p in func.params]
    ir = source

    def launch(*args):
        by_name = dict(zip(names, args))
        call = []
        for p in ir.params:
            value = by_name[p.name]
            buf = ir.buffer_map.get(p)
            if buf is None:
                call.append(value)
                continue
            handle = getattr(value, "value", value)
            array = array_of_handle(handle or 0)
            if array is None:
                raise ArgumentError(f"kernel {kernel.name}: argument {p.name!r} is not vkir "
                                    "memory (a tensor on tvm.vulkan(0) after vkir.tvm.install(), "
                                    "or one made by vkir.tvm.tensor/empty)")
            call.append(_view(array, buf, by_name, kernel.name))
        kernel(*call)
    launch.kernel = kernel
    return launch


def _view(array, buf, scalars: dict, kernel: str):
    """The 1-d view of `array` with `buf`'s dtype and size (the imported kernels index flat
    buffers): the size is `buf`'s shape evaluated with TVM's scalar arguments `scalars` (by
    name), so that a pooled allocation, which TVM's memory planner rounds up, is bound with the
    size the kernel's shape needs; only a size no argument gives is the whole allocation."""
    from ..api import DeviceArray
    from ..driver.shape_eval import evaluate
    from ..ir import expr as E
    from ..ir.traversal import walk

    dtype = buf.dtype.numpy_dtype()
    size = 1
    for d in buf.shape:
        free = {v for v in walk(d) if isinstance(v, E.Var)}
        if any(v.name not in scalars for v in free):
            size = None
            break
        size *= int(evaluate(d, {v: int(getattr(scalars[v.name], "value", scalars[v.name]))
                                 for v in free}))
    if size is None:   # a size vkir infers: the whole allocation in the buffer's dtype
        size = array.buffer.nbytes // dtype.itemsize
    if size * dtype.itemsize > array.buffer.nbytes:
        raise ArgumentError(f"kernel {kernel}: buffer {buf.name!r} needs {size} {dtype} values, "
                            f"its tensor holds {array.buffer.nbytes} bytes")
    if array.ndim == 1 and array.size == size and array.dtype == dtype:
        return array
    return DeviceArray(array.buffer, (size,), dtype, array.device)


def tensor(values, device=None):
    """A TVM tensor on vulkan:0 holding a copy of `values`, in vkir memory."""
    tvm = require_tvm()
    from ..api import array

    return _vulkan_tensor(tvm, array(np.asarray(values), device=device))


def empty(shape, dtype="float32", device=None):
    """An uninitialized TVM tensor on vulkan:0 in vkir memory."""
    tvm = require_tvm()
    from ..api import empty as vkir_empty

    return _vulkan_tensor(tvm, vkir_empty(shape, dtype, device=device))


def _vulkan_tensor(tvm, a):
    """The TVM tensor on vulkan:i of vkir array `a`: its kDLVulkan capsule (an opaque handle to
    vkir memory; the default export of host-visible memory is kDLCPU, which TVM's Vulkan
    kernels cannot take)."""
    return tvm.runtime.from_dlpack(a.__dlpack__(dl_device=vulkan_device(a)))


def numpy(t) -> np.ndarray:
    """The values of a TVM tensor made by `tensor`/`empty` (a numpy copy)."""
    array = array_of_handle(t.data_ptr())
    if array is None:
        raise ArgumentError("vkir.tvm.numpy takes tensors made by vkir.tvm.tensor/empty; use "
                            ".numpy() on other TVM tensors")
    return array.numpy().reshape(tuple(int(s) for s in t.shape))
