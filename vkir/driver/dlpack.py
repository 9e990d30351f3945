"""DLPack export of device arrays (`DeviceArray.__dlpack__`), as Vulkan runtimes do it: the tensor's
device is kDLVulkan and its `data` an opaque handle, not an address. `array_of_handle` maps a
handle back to its array, so that a consumer (TVM's host code, through vkir.tvm) that passes the
handle on reaches vkir memory again.

A capsule owns a DLManagedTensor and a reference to the array until the consumer calls its
deleter; a capsule never consumed frees both when it is collected.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ..errors import ArgumentError

KDL_VULKAN = 7
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}   # DLDataTypeCode: int, uint, float, bool


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]

_CAPSULE_NAME = b"dltensor"
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


class _Exports:
    """The process's exported arrays: one opaque handle per array (the address of a one-byte
    token the array keeps alive), and the DLManagedTensors not yet deleted by their consumer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tokens = weakref.WeakKeyDictionary()    # array -> its token
        self.arrays = weakref.WeakValueDictionary()  # handle -> array
        self.live = {}                               # managed tensor address -> what it holds

    def handle(self, array) -> int:
        with self.lock:
            token = self.tokens.get(array)
            if token is None:
                token = self.tokens[array] = ctypes.create_string_buffer(1)
            handle = ctypes.addressof(token)
            self.arrays[handle] = array
            return handle

    def release(self, address: int) -> None:
        with self.lock:
            self.live.pop(address, None)


_EXPORTS = _Exports()


@_DELETER
def _delete(managed):
    _EXPORTS.release(ctypes.addressof(managed.contents))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_gone(capsule):
    """A capsule collected unconsumed (still named "dltensor") releases its tensor."""
    if _capsule_name(capsule) == _CAPSULE_NAME:
        _EXPORTS.release(_capsule_pointer(capsule, _CAPSULE_NAME))


def to_capsule(array) -> object:
    """A "dltensor" PyCapsule of device array `array` (kDLVulkan, opaque handle, compact)."""
    dt = np.dtype(array.dtype)
    if dt.kind not in _CODES:
        raise ArgumentError(f"DLPack has no type for {dt}")
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    managed = _Managed()
    managed.dl_tensor = _Tensor(_EXPORTS.handle(array), _Device(*device_of(array)), array.ndim,
                                _DataType(_CODES[dt.kind], dt.itemsize * 8, 1), shape, None, 0)
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    with _EXPORTS.lock:
        _EXPORTS.live[address] = (managed, shape, array)
    return _new_capsule(address, _CAPSULE_NAME, ctypes.cast(_capsule_gone, ctypes.c_void_p))


def device_of(array) -> tuple[int, int]:
    """`__dlpack_device__`: (kDLVulkan, the device's index)."""
    return KDL_VULKAN, getattr(getattr(array.device, "info", None), "index", 0)


def array_of_handle(handle: int):
    """The device array whose DLPack handle is `handle`, or None (collected, or never one)."""
    return _EXPORTS.arrays.get(int(handle))
