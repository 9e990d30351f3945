"""Device buffers: one VkBuffer + VkDeviceMemory each, freed when the Python object goes.

On unified-memory devices (lavapipe, integrated GPUs) buffers live in host-visible device-local
memory, persistently mapped, and host copies are plain memcpy. Elsewhere they are device-local and
host copies go through the device's staging buffer with vkCmdCopyBuffer. Non-coherent memory is
flushed after host writes and invalidated before host reads.

The memory is freed as soon as the Buffer is collected (a weakref finalizer; Device._release), not
at the next allocation. Every host access checks that the device is still open (DeviceError after
close or shutdown, never a touch of freed memory); copies through the shared staging buffer hold
the device lock from the first copy to the last.

Small buffers are sub-allocated instead (suballoc.py: many share one VkBuffer and VkDeviceMemory,
each at its own `offset`); `suballoc.allocate` picks the kind. Every copy and descriptor uses
`offset`. Host copies first wait for in-flight work (submission.py) that uses the buffer.
"""

from __future__ import annotations

import numpy as np

from vkir.errors import ArgumentError, DeviceError, UnsupportedError

from ._vk import WHOLE_SIZE, check, ffi, lib, vk
from .limits import check_allocation, check_storage_range

# uniform texel buffer usage: kernels may read a buffer through a VkBufferView of it
# (runtime.buffer_texels, the "storage_loads_per_lane" quirk)
USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
         | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
         | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT)
HOST_VISIBLE = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
HOST_COHERENT = vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
HOST_CACHED = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
DEVICE_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
MIN_BYTES = 16  # Vulkan forbids empty buffers; small sizes are rounded up to a 16-byte multiple
# device addresses (buffer_reference): the buffer usage and the memory allocation flag
ADDRESS_USAGE = ffi.integer_const("VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT")
ADDRESS_ALLOCATION = ffi.integer_const("VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT")


def has_addresses(device) -> bool:
    """Whether `device` was opened with bufferDeviceAddress (the buffers vkir makes on it then
    have device addresses: `device_address`)."""
    return "buffer_device_address" in device.info.features


def device_address(buffer) -> int:
    """The 64-bit device address of the first byte of `buffer` (a Buffer, SubBuffer or
    BufferView: its VkBuffer's address plus its offset), what a buffer_reference pointer holds.
    UnsupportedError where the device has no bufferDeviceAddress or the buffer is host memory
    used in place (imported without an address)."""
    root = getattr(buffer, "buffer", buffer)   # a BufferView binds part of its buffer
    device = buffer.device
    if not has_addresses(device):
        raise UnsupportedError(f"{device.info.name!r} has no bufferDeviceAddress: its buffers "
                               "have no device addresses (buffer_reference)")
    if getattr(root, "imported", False):
        raise UnsupportedError(f"{root!r} is host memory used in place, which has no device "
                               "address; copy it into a vkir.array first")
    check_alive(root)
    info = vk.VkBufferDeviceAddressInfo(buffer=buffer.handle)
    return int(lib.vkGetBufferDeviceAddress(device.handle, ffi.addressof(info))) + buffer.offset



def create_bound_buffer(device, size: int, kind: str, usage: int = USAGE) -> tuple:
    """A VkBuffer of `size` bytes bound to a VkDeviceMemory of its own: `(buffer, memory, the
    memory type's property flags)`. `kind` picks the memory type: "staging" (host-visible, cached
    and coherent preferred), "mapped" (host-visible, device-local preferred) or "device"
    (device-local). Nothing is left behind when the allocation fails."""
    dev = device.handle
    out = ffi.new("VkBuffer*")
    addressable = has_addresses(device)
    if addressable:   # buffer_reference pointers may point into any buffer (device_address)
        usage |= ADDRESS_USAGE
    info = vk.VkBufferCreateInfo(size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
    check(lib.vkCreateBuffer(dev, ffi.addressof(info), ffi.NULL, out), "vkCreateBuffer")
    handle = out[0]
    req = ffi.new("VkMemoryRequirements*")
    lib.vkGetBufferMemoryRequirements(dev, handle, req)
    if kind == "staging":
        type_index = device.memory_type(req.memoryTypeBits, HOST_VISIBLE, HOST_CACHED | HOST_COHERENT)
    elif kind == "mapped":
        type_index = device.memory_type(req.memoryTypeBits, HOST_VISIBLE,
                                        DEVICE_LOCAL | HOST_CACHED | HOST_COHERENT)
    else:
        assert kind == "device", kind
        type_index = device.memory_type(req.memoryTypeBits, DEVICE_LOCAL)
    flags = device.memory.memoryTypes[type_index].propertyFlags
    mem = ffi.new("VkDeviceMemory*")
    flags_info = vk.VkMemoryAllocateFlagsInfo(flags=ADDRESS_ALLOCATION) if addressable else ffi.NULL
    alloc = vk.VkMemoryAllocateInfo(pNext=flags_info, allocationSize=req.size,
                                    memoryTypeIndex=type_index)
    r = lib.vkAllocateMemory(dev, ffi.addressof(alloc), ffi.NULL, mem)
    if r:
        lib.vkDestroyBuffer(dev, handle, ffi.NULL)
        check(r, f"vkAllocateMemory({req.size} bytes)")
    check(lib.vkBindBufferMemory(dev, handle, mem[0], 0), "vkBindBufferMemory")
    return handle, mem[0], flags


def map_memory(device, memory):
    """The host address of the whole of `memory` (host-visible), mapped once for its lifetime."""
    pp = ffi.new("void**")
    check(lib.vkMapMemory(device.handle, memory, 0, WHOLE_SIZE, 0, pp), "vkMapMemory")
    return pp[0]

class Buffer:
    """`nbytes` bytes of device memory usable as a storage buffer."""

    __slots__ = ("device", "nbytes", "alloc_bytes", "handle", "memory", "serial", "host_visible",
                 "coherent", "_ptr", "offset", "__weakref__")
    range = WHOLE_SIZE  # descriptor range: the whole VkBuffer
    usage = USAGE       # VkBufferUsageFlags (texel buffers add theirs: runtime.images)

    def __init__(self, device, nbytes: int, staging: bool = False):
        if nbytes < 0:
            raise ArgumentError(f"a buffer of {nbytes} bytes")
        if not staging:  # every other buffer is bound as a storage buffer
            check_storage_range(device.info, nbytes)
        check_allocation(device.info, nbytes)
        self._ptr = None
        self.device = device
        self.nbytes = int(nbytes)
        self.alloc_bytes = max(MIN_BYTES, (self.nbytes + 15) // 16 * 16)
        with device.lifetime, device._lock:  # no close() in between
            device.check_open()
            device.collect()
            self._create(device, staging)

    def _create(self, device, staging: bool) -> None:
        self.serial = device.next_serial()
        self.offset = 0
        mapped = staging or device.host_visible_buffers
        self.handle, self.memory, flags = create_bound_buffer(
            device, self.alloc_bytes, "staging" if staging else "mapped" if mapped else "device",
            self.usage)
        self._track(device)
        self.host_visible = mapped and bool(flags & HOST_VISIBLE)
        self.coherent = bool(flags & HOST_COHERENT)
        if self.host_visible:
            self._ptr = map_memory(device, self.memory)

    def _track(self, device) -> None:
        """Have the device free the VkBuffer and its memory when this object is collected."""
        device._track(self, self.handle, self.memory)

    # -- host access ------------------------------------------------------------------------
    def host_view(self) -> np.ndarray:
        """A uint8 numpy view of the mapped memory (host-visible buffers only; valid while the
        device is open)."""
        check_alive(self)
        assert self._ptr is not None, "buffer is not host-visible"
        return np.frombuffer(ffi.buffer(self._ptr, self.nbytes), dtype=np.uint8)

    def write(self, data) -> None:
        """Copy `data` (a C-contiguous array or bytes of exactly nbytes) into the buffer."""
        if self.device.closed:
            check_alive(self)
        src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if src.nbytes != self.nbytes:
            raise ArgumentError(f"write of {src.nbytes} bytes into a buffer of {self.nbytes} bytes")
        if self.nbytes == 0:
            return
        if self.device._inflight:
            self.device.wait_for(serial=self.serial)
        with self.device._lock:
            check_alive(self)
            if self._ptr is not None:
                self.write_prefix(src)
                return
            stage = self.device.staging(self.nbytes)
            stage.write_prefix(src)
            self.device.one_shot(lambda cmd: _copy(cmd, stage.handle, self.handle, self.nbytes,
                                                   dst_offset=self.offset))

    def write_prefix(self, src: np.ndarray) -> None:
        """Copy the uint8 array `src` into the first src.nbytes bytes of the mapped memory."""
        ffi.memmove(self._ptr, src, src.nbytes)
        if not self.coherent:
            self._flush()

    def _read_prefix(self, dst: np.ndarray) -> None:
        """Copy the first dst.nbytes bytes of the mapped memory into the uint8 array `dst`."""
        if not self.coherent:
            self._invalidate()
        ffi.memmove(ffi.from_buffer(dst), self._ptr, dst.nbytes)

    def read(self, out: np.ndarray | None = None) -> np.ndarray:
        """Copy the buffer into `out` (C-contiguous, nbytes large) or a new uint8 array."""
        if self.device.closed:
            check_alive(self)
        if out is None:
            out = np.empty(self.nbytes, dtype=np.uint8)
        dst = out.reshape(-1).view(np.uint8)
        assert dst.nbytes == self.nbytes and out.flags.c_contiguous
        if self.nbytes == 0:
            return out
        if self.device._inflight:
            self.device.wait_for(serial=self.serial)
        with self.device._lock:
            check_alive(self)
            if self._ptr is not None:
                self._read_prefix(dst)
                return out
            stage = self.device.staging(self.nbytes)
            self.device.one_shot(lambda cmd: _copy(cmd, self.handle, stage.handle, self.nbytes,
                                                   to_host=True, src_offset=self.offset))
            stage._read_prefix(dst)
        return out

    def fill_zero(self) -> None:
        """Set every byte to zero."""
        if self.device._inflight:
            self.device.wait_for(serial=self.serial)
        with self.device._lock:
            if self._ptr is not None:
                self.host_view()[:] = 0
                if not self.coherent:
                    self._flush()
                return
            self.device.one_shot(lambda cmd: _fill_zero(cmd, self.handle, self.offset,
                                                        self.alloc_bytes))

    def _range(self):
        return vk.VkMappedMemoryRange(memory=self.memory, offset=0, size=WHOLE_SIZE)

    def _flush(self):
        whole = self._range()   # held while the call runs (addressof does not keep it alive)
        check(lib.vkFlushMappedMemoryRanges(self.device.handle, 1, ffi.addressof(whole)),
              "vkFlushMappedMemoryRanges")

    def _invalidate(self):
        whole = self._range()
        check(lib.vkInvalidateMappedMemoryRanges(self.device.handle, 1, ffi.addressof(whole)),
              "vkInvalidateMappedMemoryRanges")

    def __repr__(self):
        return f"<vkir Buffer #{self.serial} {self.nbytes} bytes on {self.device.info.name}>"


def _copy(cmd, src, dst, nbytes, to_host=False, src_offset=0, dst_offset=0):
    """vkCmdCopyBuffer between barriers that order it after earlier shader/transfer writes and
    make its result visible to later shaders (and to the host for a download)."""
    memory_barrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
             vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
             vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
             vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
    region = ffi.new("VkBufferCopy*", {"srcOffset": src_offset, "dstOffset": dst_offset, "size": nbytes})
    lib.vkCmdCopyBuffer(cmd, src, dst, 1, region)
    if to_host:
        memory_barrier(cmd, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                 vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)


def _fill_zero(cmd, buf, offset=0, size=WHOLE_SIZE):
    memory_barrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
             vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
             vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT)
    lib.vkCmdFillBuffer(cmd, buf, offset, size, 0)


def memory_barrier(cmd, src_stage, src_access, dst_stage, dst_access):
    """Record a global memory barrier from (stage, access) to (stage, access) into `cmd`."""
    mb = ffi.new("VkMemoryBarrier*", {"sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                      "srcAccessMask": src_access, "dstAccessMask": dst_access})
    lib.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, mb, 0, ffi.NULL, 0, ffi.NULL)


def check_alive(buf: Buffer) -> None:
    """DeviceError when `buf`'s device was closed (its memory is gone)."""
    if buf.device.closed:
        raise DeviceError(f"device closed: {buf!r} belongs to a device that was shut down")
