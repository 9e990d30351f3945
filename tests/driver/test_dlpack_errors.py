"""DLPack export of the opaque kDLVulkan handle (what TVM asks for with `dl_device`) when the consumer
refuses or never consumes: `np.from_dlpack` of such a producer raises numpy's clean error (it
cannot read kDLVulkan memory), not a SystemError, and every capsule releases its array exactly
once, whether a consumer's deleter runs, the capsule is dropped unconsumed, or it is dropped
while the consumer's exception is pending."""

import ctypes
import gc
import sys
import weakref

import numpy as np
import pytest

import vkir
from vkir.driver import dlpack

_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.fixture
def unraisable(monkeypatch):
    """What a capsule destructor reported as "Exception ignored" during the test."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


class _VulkanOnly:
    """A producer that hands out its array's kDLVulkan capsule whatever the consumer asks."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **_kwargs):
        return self.a.__dlpack__(dl_device=dlpack.vulkan_device(self.a))

    def __dlpack_device__(self):
        return dlpack.vulkan_device(self.a)


def _released(ref, live_before):
    gc.collect()
    return ref() is None and len(dlpack._EXPORTS.live) == live_before


def test_numpy_refuses_cleanly_and_nothing_leaks(device, unraisable):
    live = len(dlpack._EXPORTS.live)
    a = vkir.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    ref = weakref.ref(a)
    with pytest.raises((BufferError, TypeError, RuntimeError)) as info:
        np.from_dlpack(_VulkanOnly(a))
    assert not isinstance(info.value, SystemError)
    assert "device" in str(info.value).lower()
    assert not unraisable, [u.exc_value for u in unraisable]
    np.testing.assert_array_equal(np.asarray(a), np.arange(6).reshape(2, 3))   # still usable
    del a, info
    assert _released(ref, live)


def test_an_unconsumed_capsule_releases_its_array(device, unraisable):
    live = len(dlpack._EXPORTS.live)
    a = vkir.array(np.ones(4, np.int32), device=device)
    ref = weakref.ref(a)
    capsule = a.__dlpack__(dl_device=dlpack.vulkan_device(a))
    assert len(dlpack._EXPORTS.live) == live + 1
    del a
    gc.collect()
    assert ref() is not None                  # the capsule keeps the array
    del capsule
    assert _released(ref, live) and not unraisable


def test_a_consumers_deleter_releases_once(device, unraisable):
    live = len(dlpack._EXPORTS.live)
    a = vkir.array(np.arange(3, dtype=np.uint8), device=device)
    ref = weakref.ref(a)
    capsule = a.__dlpack__(dl_device=(dlpack.KDL_VULKAN, device.info.index))
    managed = dlpack._Managed.from_address(_get_pointer(capsule, b"dltensor"))
    tensor = managed.dl_tensor
    assert (tensor.device.device_type, tensor.ndim, tensor.shape[0]) == (dlpack.KDL_VULKAN, 1, 3)
    assert not tensor.strides and dlpack.array_of_handle(tensor.data) is a
    # a consumer takes it (renames the capsule) and later calls the tensor's deleter
    assert _set_name(capsule, b"used_dltensor") == 0
    deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)
    address = ctypes.addressof(managed)
    del a, managed, tensor
    deleter(address)
    assert _released(ref, live)
    del capsule                                # its destructor leaves a consumed tensor alone
    gc.collect()
    assert len(dlpack._EXPORTS.live) == live and not unraisable
