"""`tvm.compile(mod, target=vkir.tvm.target())` through vkir, and TVM tensors in vkir memory.

`install()` registers the global functions TVM looks up for the "vulkan" device and nothing
else: "device_api.vulkan" (TVM's device API on vkir memory, vkir.tvm.device_memory, where a C++
compiler exists), "target.build.vulkan", which imports each device kernel into vkir, builds it, and returns a
small LLVM module with one function per kernel that calls the vkir launcher (TVM's host code calls
kernels by name through its imports), and "__tvm_set_device", which accepts the Vulkan device type
and defers to TVM's own function for every other one. Tensors on vulkan:0 (from TVM's device API, or
vkir device arrays through DLPack) hold an opaque data pointer is an opaque handle that the launcher maps back to the
array (vkir.driver.dlpack).
"""

from __future__ import annotations

import itertools
import warnings
import threading

import numpy as np

from ..driver.dlpack import KDL_VULKAN, array_of_handle, vulkan_device
from ..errors import ArgumentError
from . import require_tvm

_LAUNCH_PREFIX = "vkir.tvm.launch."
_LOCK = threading.Lock()
_NAMES = itertools.count()   # kernels of different compiles may share a TVM name
_INSTALLED: dict = {}        # "set_device" -> TVM's own __tvm_set_device, once installed


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
        tvm_ffi.register_global_func("target.build.vulkan", build_vulkan, override=True)
        _device_api(device)
        if "set_device" in _INSTALLED:
            return
        original = tvm.get_global_func("__tvm_set_device")

        def set_device(device_type, device_id):
            if int(device_type) != KDL_VULKAN:
                original(device_type, device_id)

        tvm_ffi.register_global_func("__tvm_set_device", set_device, override=True)
        _INSTALLED["set_device"] = original


def _device_api(device) -> None:
    """TVM's "device_api.vulkan" on vkir memory (vkir.tvm.device_memory); without a C++ compiler
    kernels still build, and a warning says what tensors on tvm.vulkan(0) need."""
    from .device_memory import compiler, install_device_api

    if compiler() is None:
        warnings.warn("vkir.tvm.install: no C++ compiler (g++, clang++ or $CXX): kernels build "
                      "with vkir, but tvm.vulkan(0) tensors and relax.VirtualMachine need TVM's "
                      "device API, which vkir compiles once with one", stacklevel=3)
        return
    install_device_api(device)


def _build(tvm, tvm_ffi, mod, target, device):
    """The runtime module of TVM's device module `mod`: each kernel imported and built by vkir,
    reached from TVM's host code through an LLVM function of the kernel's name."""
    from .. import api
    from .importer import import_prim_func
    from .lowering import narrow

    mod = narrow(mod, target)
    shims = {}
    for gv, func in mod.functions.items():
        name = gv.name_hint
        kernel = api.build(import_prim_func(func, name), device=device)
        launcher = f"{_LAUNCH_PREFIX}{name}.{next(_NAMES)}"
        tvm_ffi.register_global_func(launcher, _launcher(kernel, func), override=True)
        shims[name] = _shim(tvm, name, func, launcher)
    return tvm.tirx.build(tvm.IRModule(shims), target="llvm")


def _shim(tvm, name: str, func, launcher: str):
    """A host function named like the kernel, taking TVM's kernel arguments (the parameters,
    then one value per launch parameter) and passing them to the launcher."""
    tirx = tvm.tirx
    params = [tirx.Var(str(p.name), p.ty) for p in func.params]
    launch = [tirx.Var(f"launch_{k}", "int32")
              for k in range(len(func.attrs["tirx.kernel_launch_params"]))]
    body = tirx.Evaluate(tirx.call_packed(launcher, *params, *launch))
    return tirx.PrimFunc(params + launch, body).with_attr("global_symbol", name)


def _launcher(kernel, func):
    """The Python function TVM's host code calls: handles become the device arrays they stand
    for, each viewed with the kernel buffer's dtype and exact size (TVM pools allocations and
    rounds them up; its scalar arguments give the symbolic sizes); scalars stay; launch extents
    are vkir's."""
    names = [str(p.name) for p in func.params]
    ir = kernel.ir

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
    return launch


def _view(array, buf, scalars: dict, kernel: str):
    """The 1-d view of `array` with `buf`'s dtype and size (the imported kernels index flat
    buffers), its symbolic dimensions read from TVM's scalar arguments `scalars`."""
    from ..api import DeviceArray
    from ..ir import expr as E

    size = 1
    for d in buf.shape:
        if isinstance(d, E.IntImm):
            size *= d.value
        elif isinstance(d, E.Var) and d.name in scalars:
            size *= int(scalars[d.name])
        else:
            size = None
            break
    dtype = buf.dtype.numpy_dtype()
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
