"""Texel views of ordinary buffers: a VkBufferView of one format over the bytes of a storage
buffer (a DeviceArray's, a sub-allocation, an aliasing view or imported host memory), bound as a
uniform texel buffer.

Why: on llvmpipe a texel fetch reads memory with one vector load per SIMD lane where a storage
buffer load is a loop over the lanes (the "storage_loads_per_lane" quirk, vkir.quirks), so
kernels read their read-only buffers through such views there (spirv/codegen/texel_reads.py).

`texel_view(buffer, fmt)` is the view, or None where Vulkan does not allow one: the buffer was
made without the uniform texel buffer usage, its offset in its VkBuffer is not a multiple of
minTexelBufferOffsetAlignment, its size is not whole texels, it is empty or it holds more than
maxTexelBufferElements texels, or the format has no uniform texel buffer support. The caller
then binds the buffer as a storage buffer (with the kernel's storage-buffer variant).

A view refers to its buffer weakly (whoever binds it keeps the buffer alive for the dispatch,
as for the buffer itself; a cache of views keyed weakly by their buffers then drops a view with
its buffer). Its `serial` is a tuple, its own serial then the buffer's (as an
ImageSampler's is two), so launches cached by serial tell two views apart while sequences and
submissions order its reads against every other use of the buffer's memory. The VkBufferView is
destroyed when the view is collected (Device.track) or the device closes.
"""

from __future__ import annotations

import weakref

from ._vk import call, ffi, lib, vk
from .images import BUFFER_FEATURES, format_features

TEXEL_USAGE = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT


def texel_limits(device) -> tuple:
    """(minTexelBufferOffsetAlignment, maxTexelBufferElements) of `device` (queried once)."""
    got = device.format_properties.get("texel_view_limits")
    if got is None:
        limits = vk.vkGetPhysicalDeviceProperties(device.physical).limits
        got = device.format_properties["texel_view_limits"] = (
            max(1, int(limits.minTexelBufferOffsetAlignment)), int(limits.maxTexelBufferElements))
    return got


def _usage(buffer) -> int:
    """The VkBufferUsageFlags the VkBuffer under `buffer` was made with."""
    inner = getattr(buffer, "buffer", None)   # an aliasing BufferView: its buffer's
    return int(getattr(inner if inner is not None else buffer, "usage", 0))


def viewable(buffer, fmt) -> bool:
    """Whether `texel_view(buffer, fmt)` can make a view (see the module docstring)."""
    device = buffer.device
    align, cap = texel_limits(device)
    texel = fmt.texel_bytes
    n = buffer.nbytes
    return (bool(_usage(buffer) & TEXEL_USAGE) and buffer.offset % align == 0 and n > 0
            and n % texel == 0 and n // texel <= cap
            and bool(format_features(device, fmt)[1] & BUFFER_FEATURES["uniform_texel"]))


class _Token:
    """What Device.track follows for a view: its own serial (launches with it go with it)."""

    __slots__ = ("serial", "__weakref__")

    def __init__(self, serial: int):
        self.serial = serial


class TexelView:
    """A VkBufferView of ImageFormat `fmt` over all of `buffer`'s bytes (see the module
    docstring); `view` is the handle a texel-buffer descriptor takes."""

    __slots__ = ("source", "device", "format", "view", "serial", "handle", "offset", "nbytes",
                 "_token", "__weakref__")

    def __init__(self, buffer, fmt):
        device = buffer.device
        self.source, self.device, self.format = weakref.ref(buffer), device, fmt
        self.handle, self.offset, self.nbytes = buffer.handle, buffer.offset, buffer.nbytes
        info = vk.VkBufferViewCreateInfo(buffer=buffer.handle, format=fmt.vk_format,
                                         offset=buffer.offset, range=buffer.nbytes)
        with device.lifetime, device._lock:
            device.check_open()
            self.view = view = call("vkCreateBufferView", vk.vkCreateBufferView, device.handle,
                                    info, None)
            self._token = _Token(device.next_serial())
            dev = device.handle
            device.track(self._token, lambda: lib.vkDestroyBufferView(dev, view, ffi.NULL))
        inner = buffer.serial
        self.serial = (self._token.serial,) + (inner if isinstance(inner, tuple) else (inner,))

    def __repr__(self) -> str:
        return f"<TexelView {self.format.name} over {self.source()!r}>"


def texel_view(buffer, fmt):
    """A TexelView of `fmt` over `buffer`, or None where Vulkan allows none (`viewable`)."""
    if not viewable(buffer, fmt):
        return None
    return TexelView(buffer, fmt)
