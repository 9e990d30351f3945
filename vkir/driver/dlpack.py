"""DLPack export of device arrays (`DeviceArray.__dlpack__`), as Vulkan runtimes do it: the tensor's
device is kDLVulkan and its `data` an opaque handle, not an address. `array_of_handle` maps a
handle back to its array, so that a consumer (TVM's host code, through vkir.tvm) that passes the
handle on reaches vkir memory again.

A capsule's destructor may run while its consumer has an exception pending (numpy's
`from_dlpack` refuses a kDLVulkan tensor, sets BufferError, then drops the capsule), and no Python
code can run then: a ctypes or cffi callback turns that into a SystemError and loses the release.
So the capsule, its DLManagedTensor and their destructors are numpy's (C code that keeps the
pending exception): numpy exports a placeholder view spanning one byte of a `_Keep` that holds
the device array, and the tensor is then pointed at the array's handle and device. The consumer's
deleter, or the capsule's destructor when it was never consumed, frees the tensor and drops the
view, hence the `_Keep` and the array: once, in C.

DLPack 1.x (`__dlpack__(stream, max_version, dl_device, copy)`, as numpy 2 and torch call it):
`export` offers an array whose memory the host can address (host-visible and coherent: lavapipe,
SwiftShader, integrated GPUs) as kDLCPU, a pointer into the mapping, after the device work in
flight that uses it finished; the capsule is then numpy's own capsule of a numpy view whose base
is the device array (so the array, and its memory, outlive every consumer's view). A consumer
that asks for `dl_device=(kDLVulkan, i)`, or an array the host cannot address, gets the opaque
handle. `max_version` >= (1, 0) gives a "dltensor_versioned" capsule, else a legacy "dltensor".
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ..errors import ArgumentError

KDL_CPU = 1
KDL_VULKAN = 7


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _Tensor)]


_CAPSULE_NAME = b"dltensor"
_VERSIONED_NAME = b"dltensor_versioned"
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _Keep(bytearray):
    """The byte a capsule's placeholder numpy view spans; it holds the exported array until
    numpy's deleter drops the view."""

    __slots__ = ("array", "__weakref__")
    __hash__ = object.__hash__   # one per capsule: identity, not the byte's value
    __eq__ = object.__eq__


class _Exports:
    """The process's exported arrays: one opaque handle per array (the address of a one-byte
    token the array keeps alive), and the `_Keep`s of the capsules not yet released (weakly:
    `live` shrinks when a consumer's deleter or an unconsumed capsule's destructor runs)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tokens = weakref.WeakKeyDictionary()    # array -> its token
        self.arrays = weakref.WeakValueDictionary()  # handle -> array
        self.live = weakref.WeakSet()                # _Keep of each capsule not yet released

    def handle(self, array) -> int:
        with self.lock:
            token = self.tokens.get(array)
            if token is None:
                token = self.tokens[array] = ctypes.create_string_buffer(1)
            handle = ctypes.addressof(token)
            self.arrays[handle] = array
            return handle


_EXPORTS = _Exports()


def _versioned(max_version) -> bool:
    """Whether a consumer that passed `max_version` takes a versioned capsule."""
    if max_version is None:
        return False
    try:
        major = int(max_version[0])
    except (TypeError, ValueError, IndexError):
        raise ArgumentError(f"__dlpack__: max_version must be a (major, minor) tuple, "
                            f"got {max_version!r}") from None
    return major >= 1


def export(array, stream=None, max_version=None, dl_device=None, copy=None) -> object:
    """`DeviceArray.__dlpack__`: a capsule of `array` as the module docstring says. BufferError
    where the consumer asks for what cannot be given (another device type, a view of memory the
    host cannot address with `copy=False`, a stream for host memory)."""
    want = None
    if dl_device is not None:
        try:
            want = (int(dl_device[0]), int(dl_device[1]))
        except (TypeError, ValueError, IndexError):
            raise BufferError(f"__dlpack__: dl_device must be a (device_type, device_id) tuple, "
                              f"got {dl_device!r}") from None
        if want[0] not in (KDL_CPU, KDL_VULKAN):
            raise BufferError(f"__dlpack__: a vkir array is exported to kDLCPU ({KDL_CPU}) or "
                              f"kDLVulkan ({KDL_VULKAN}), not device type {want[0]}")
    versioned = _versioned(max_version)
    if want is not None and want[0] == KDL_VULKAN:
        if copy:
            from .arrays import array as copy_of

            array = copy_of(array, device=array.device)
        return to_capsule(array, versioned)
    view = None if copy else array.host_view()
    if view is None:
        if want is None and not copy:
            return to_capsule(array, versioned)   # not host memory: the opaque handle
        if copy is False:
            raise BufferError("__dlpack__: this array's memory is not host-visible here: a "
                              "kDLCPU tensor of it needs a copy (copy=None or copy=True)")
        view = array.numpy()
    if stream is not None and stream != -1:
        raise BufferError(f"__dlpack__: kDLCPU memory has no stream, got stream={stream!r}")
    return view.__dlpack__(max_version=(1, 0) if versioned else None)


def to_capsule(array, versioned: bool = False) -> object:
    """A PyCapsule of device array `array` (kDLVulkan, opaque handle, compact): "dltensor", or
    "dltensor_versioned" with `versioned`."""
    dt = np.dtype(array.dtype)
    if dt.kind not in "iufb":
        raise ArgumentError(f"DLPack has no type for {dt}")
    keep = _Keep(dt.itemsize)
    keep.array = array
    view = np.ndarray(array.shape, dt, buffer=keep, strides=(0,) * array.ndim)
    try:
        capsule = view.__dlpack__(max_version=(1, 0) if versioned else None)
    except (BufferError, TypeError) as exc:   # a numpy too old for this dtype
        raise ArgumentError(f"DLPack export of {dt} needs a newer numpy: {exc}") from None
    if versioned:
        managed = _ManagedVersioned.from_address(_capsule_pointer(capsule, _VERSIONED_NAME))
    else:
        managed = _Managed.from_address(_capsule_pointer(capsule, _CAPSULE_NAME))
    tensor = managed.dl_tensor
    assert tensor.ndim == array.ndim and managed.manager_ctx == id(view)
    tensor.data = _EXPORTS.handle(array)
    tensor.device = _Device(*vulkan_device(array))
    tensor.strides = None        # compact, row-major
    tensor.byte_offset = 0
    with _EXPORTS.lock:
        _EXPORTS.live.add(keep)
    return capsule


def device_of(array) -> tuple[int, int]:
    """`__dlpack_device__`: (kDLCPU, 0) where the host addresses the array's memory in place,
    else (kDLVulkan, the device's index)."""
    buf = array.buffer
    if getattr(buf, "host_visible", False) and getattr(buf, "coherent", False):
        return KDL_CPU, 0
    return vulkan_device(array)


def vulkan_device(array) -> tuple[int, int]:
    """(kDLVulkan, the index of `array`'s device): what TVM's consumers ask for."""
    return KDL_VULKAN, getattr(getattr(array.device, "info", None), "index", 0)


def array_of_handle(handle: int):
    """The device array whose DLPack handle is `handle`, or None (collected, or never one)."""
    return _EXPORTS.arrays.get(int(handle))


def handle_of(array) -> int:
    """The opaque handle of device array `array` (the one its DLPack tensors carry), which
    `array_of_handle` maps back while the array lives."""
    return _EXPORTS.handle(array)
