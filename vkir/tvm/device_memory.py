"""TVM's Vulkan device API, served by vkir: `install_device_api(device)` builds (on first use)
and loads a small C++ `tvm::runtime::DeviceAPI` (device_api.cc, compiled against the installed
wheel's own tvm/include and tvm_ffi/include) and registers it as TVM's "device_api.vulkan".

Its methods call the Python functions registered here under "vkir.tvm.device_api.<name>": an
allocation is a vkir device array (whole 32-bit words) behind an opaque handle that
`vkir.driver.dlpack.array_of_handle` maps back, kept alive until TVM frees it; copies move bytes
between host addresses and arrays at byte offsets; attributes are the vkir device's limits. The
library is cached like the native loops (sealed in vkir's cache, `tvm-device-api/`), keyed by
TVM's and tvm_ffi's versions, the compiler and the source, and once more without the compiler,
which is the copy a machine without a C++ compiler loads.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np

from .. import store
from ..driver.dlpack import KDL_CPU, array_of_handle, handle_of
from ..errors import ArgumentError, UnsupportedError

CACHE = "tvm-device-api"
SOURCE = Path(__file__).with_name("device_api.cc")
_PREFIX = "vkir.tvm.device_api."
_LOCK = threading.Lock()
_STATE: dict = {}   # "library": the loaded CDLL, "device": the selector install() got


class _Allocations:
    """The device arrays TVM allocated, by handle, until TVM frees them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.arrays: dict = {}

    def add(self, array) -> int:
        handle = handle_of(array)
        with self.lock:
            self.arrays[handle] = array
        return handle

    def free(self, handle: int) -> None:
        with self.lock:
            self.arrays.pop(handle, None)


ALLOCATIONS = _Allocations()


def compiler() -> str | None:
    """The C++ compiler the device API is built with ($CXX, else c++, g++ or clang++), or None."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _paths():
    """(include folders, library folders) of the installed tvm and tvm_ffi wheels."""
    import tvm
    import tvm_ffi

    tvm_root, ffi_root = Path(tvm.__file__).parent, Path(tvm_ffi.__file__).parent
    return [tvm_root / "include", ffi_root / "include"], [tvm_root / "lib", ffi_root / "lib"]


def _portable_name() -> str:
    """The cache name of the device API whatever compiler built it: keyed by TVM's and
    tvm_ffi's versions and the source only, so that a machine (or a container) without a C++
    compiler loads the library another process built with one."""
    import tvm
    import tvm_ffi

    key = hashlib.sha256("\0".join((tvm.__version__, tvm_ffi.__version__, SOURCE.read_text()))
                         .encode()).hexdigest()[:32]
    return f"device-api-any-{key}.so"


def _cached(name: str) -> bytes | None:
    folder = store.cache_folder(CACHE)
    if folder is None:
        return None
    return store.unseal(f"{CACHE}/{name}", store.read(folder / name))


def _keep(name: str, data: bytes) -> None:
    folder = store.cache_folder(CACHE)
    if folder is not None:
        store.write(folder / name, store.seal(f"{CACHE}/{name}", data))


def _library_bytes(cxx: str) -> bytes:
    """The shared library built from device_api.cc, from the cache or compiled now (and kept
    under the compiler's key and the portable one)."""
    import tvm
    import tvm_ffi

    source = SOURCE.read_text()
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256("\0".join((tvm.__version__, tvm_ffi.__version__, cxx,
                                    version.splitlines()[0] if version else "", source))
                         .encode()).hexdigest()[:32]
    name = f"device-api-{key}.so"
    data = _cached(name)
    if data is None:
        data = _compile(cxx)
        _keep(name, data)
    if _cached(_portable_name()) is None:
        _keep(_portable_name(), data)
    return data


def _compile(cxx: str) -> bytes:
    includes, libs = _paths()
    flags = ["-std=c++17", "-O2", "-shared", "-fPIC", *(f"-I{p}" for p in includes),
             *(f"-L{p}" for p in libs), *(f"-Wl,-rpath,{p}" for p in libs)]
    with store.private_temporary() as work:
        out = work / "device_api.so"
        done = subprocess.run([cxx, *flags, "-o", str(out), str(SOURCE), "-ltvm_runtime",
                               "-ltvm_ffi"], capture_output=True, text=True)
        if done.returncode != 0:
            raise UnsupportedError(f"vkir.tvm: {cxx} could not build TVM's Vulkan device API "
                                   f"against the installed apache-tvm:\n{done.stderr[-2000:]}")
        return out.read_bytes()


def _load(data: bytes) -> ctypes.CDLL:
    """Load the library's bytes from a private copy (see vkir.interpreter.native_library)."""
    with store.private_temporary() as folder:
        path = folder / "device_api.so"
        path.write_bytes(data)
        return ctypes.CDLL(str(path))


def install_device_api(device=None) -> None:
    """Register TVM's "device_api.vulkan" backed by vkir memory on `device` (a vkir device or
    selector; the last call's wins). Without a C++ compiler the cache's portable copy is
    loaded; UnsupportedError, saying what is needed, where there is none."""
    import tvm_ffi

    with _LOCK:
        _STATE["device"] = device
        for name, func in _CALLBACKS.items():
            tvm_ffi.register_global_func(_PREFIX + name, func, override=True)
        # what tvm.target.Target.from_device(tvm.vulkan(0)) asks TVM's Vulkan runtime
        tvm_ffi.register_global_func("device_api.vulkan.get_target_property",
                                     _target_property, override=True)
        if "library" in _STATE:
            return
        cxx = compiler()
        data = _library_bytes(cxx) if cxx is not None else _cached(_portable_name())
        if data is None:
            raise UnsupportedError(
                "vkir.tvm.install: TVM kernels build with vkir, but tvm.vulkan(0) tensors, "
                "relax.VirtualMachine and libraries from export_library need TVM's device API, "
                "a small C++ library vkir compiles once against the installed apache-tvm and "
                f"keeps in its cache ({store.cache_folder(CACHE) or 'disabled: VKIR_CACHE_DIR'}"
                "); this machine has no C++ compiler (g++, clang++ or $CXX) and the cache has "
                "no device API for this apache-tvm: install a compiler, or run "
                "vkir.tvm.install() once where one exists with the same cache")
        library = _load(data)
        if library.vkir_tvm_register_device_api() != 0:
            raise UnsupportedError("vkir.tvm: TVM refused vkir's Vulkan device API")
        _STATE["library"] = library


def _device():
    from ..api import device

    return device(_STATE.get("device"))


def _array(handle: int):
    array = array_of_handle(handle)
    if array is None:
        raise ArgumentError(f"vkir.tvm: TVM passed a Vulkan pointer ({handle:#x}) that is no "
                            "vkir allocation")
    return array


def _alloc(device_id: int, nbytes: int) -> int:
    from ..api import empty

    words = max(1, (int(nbytes) + 3) // 4)
    return ALLOCATIONS.add(empty((words,), "uint32", device=_device()))


def _free(handle: int) -> None:
    ALLOCATIONS.free(int(handle))


def _bytes(array) -> np.ndarray:
    return array.buffer.read()


def _write(array, offset: int, data: np.ndarray) -> None:
    buf = array.buffer
    if offset == 0 and data.nbytes == buf.nbytes:
        buf.write(data)
        return
    whole = buf.read()
    whole[offset:offset + data.nbytes] = data
    buf.write(whole)


def _copy(src: int, src_offset: int, src_type: int, dst: int, dst_offset: int, dst_type: int,
          nbytes: int) -> None:
    """Copy `nbytes` bytes between host addresses and vkir allocations (either side either)."""
    if nbytes == 0:
        return
    if src_type == KDL_CPU:
        data = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(src + src_offset),
                             np.uint8).copy()
    else:
        data = _bytes(_array(src))[src_offset:src_offset + nbytes]
    if dst_type == KDL_CPU:
        ctypes.memmove(dst + dst_offset, data.ctypes.data, nbytes)
    else:
        _write(_array(dst), dst_offset, np.ascontiguousarray(data))


def _sync(device_id: int) -> None:
    _device().wait_for()


def _set_device(device_id: int) -> None:
    if int(device_id) != 0:
        raise ArgumentError(f"vkir.tvm: vulkan({device_id}): vkir serves one device, "
                            "vulkan(0) (choose it with vkir.tvm.install(device))")


# TVM's DeviceAttrKind values
_EXIST, _THREADS, _WARP, _SHARED, _COMPUTE, _NAME, _DIMS, _API, _DRIVER = 0, 1, 2, 3, 4, 5, 8, 11, 12


def _get_attr(device_id: int, kind: int):
    if kind == _EXIST:
        return 1 if int(device_id) == 0 else 0
    info = _device().info
    limits = info.limits
    values = {_THREADS: limits.max_workgroup_invocations, _WARP: info.subgroup_size,
              _SHARED: limits.max_shared_memory_bytes, _COMPUTE: str(info.api_version),
              _NAME: str(info.name),
              _DIMS: "[" + ", ".join(str(d) for d in limits.max_workgroup_size) + "]",
              _API: str(info.api_version), _DRIVER: int(info.driver_version)}
    return values.get(int(kind))


# TVM's Vulkan target properties (Target.from_device) -> the vkir device feature each means
_PROPERTIES = {"supports_float16": "float16", "supports_int8": "int8", "supports_int16": "int16",
               "supports_int64": "int64", "supports_8bit_buffer": "storage_buffer_8bit",
               "supports_16bit_buffer": "storage_buffer_16bit"}


def _target_property(dev, name: str):
    """TVM's "device_api.vulkan.get_target_property": whether the vkir device has the feature
    a Vulkan target property names (every vkir device has storage buffers in their own storage
    class); ArgumentError for a property TVM's Vulkan runtime does not define."""
    name = str(name)
    if name == "supports_storage_buffer_storage_class":
        return True
    if name not in _PROPERTIES:
        raise ArgumentError(f"vkir.tvm: no Vulkan target property {name!r} (known: "
                            f"{', '.join(sorted(_PROPERTIES))}, "
                            "supports_storage_buffer_storage_class)")
    return _PROPERTIES[name] in _device().info.features


_CALLBACKS = {"alloc": _alloc, "free": _free, "copy": _copy, "sync": _sync,
              "set_device": _set_device, "get_attr": _get_attr}
