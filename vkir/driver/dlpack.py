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
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ..errors import ArgumentError

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


_CAPSULE_NAME = b"dltensor"
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


def to_capsule(array) -> object:
    """A "dltensor" PyCapsule of device array `array` (kDLVulkan, opaque handle, compact)."""
    dt = np.dtype(array.dtype)
    if dt.kind not in "iufb":
        raise ArgumentError(f"DLPack has no type for {dt}")
    keep = _Keep(dt.itemsize)
    keep.array = array
    view = np.ndarray(array.shape, dt, buffer=keep, strides=(0,) * array.ndim)
    try:
        capsule = view.__dlpack__()
    except (BufferError, TypeError) as exc:   # a numpy too old for this dtype
        raise ArgumentError(f"DLPack export of {dt} needs a newer numpy: {exc}") from None
    managed = _Managed.from_address(_capsule_pointer(capsule, _CAPSULE_NAME))
    tensor = managed.dl_tensor
    assert tensor.ndim == array.ndim and managed.manager_ctx == id(view)
    tensor.data = _EXPORTS.handle(array)
    tensor.device = _Device(*device_of(array))
    tensor.strides = None        # compact, row-major
    tensor.byte_offset = 0
    with _EXPORTS.lock:
        _EXPORTS.live.add(keep)
    return capsule


def device_of(array) -> tuple[int, int]:
    """`__dlpack_device__`: (kDLVulkan, the device's index)."""
    return KDL_VULKAN, getattr(getattr(array.device, "info", None), "index", 0)


def array_of_handle(handle: int):
    """The device array whose DLPack handle is `handle`, or None (collected, or never one)."""
    return _EXPORTS.arrays.get(int(handle))
