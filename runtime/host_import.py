"""Host memory used in place as device memory (VK_EXT_external_memory_host): numpy, torch and
buffer-protocol memory bound as a storage buffer without a copy.

The extension imports whole pages: the pointer given to vkAllocateMemory must be a multiple of
`minImportedHostPointerAlignment` and the allocation size too. So a `HostBuffer` imports the
aligned span of pages around the host bytes, binds its VkBuffer to the start of that span and
binds the host bytes themselves through the descriptor offset (`Buffer.offset`), which the device
wants a multiple of `minStorageBufferOffsetAlignment`; where it is not, the memory cannot be used
in place (`importable` says why not) and callers copy instead. Only host-coherent memory types
are used, so host and device see each other's writes after a waited submission without flushes.

A HostBuffer holds `owner` (the source of the memory) until its VkDeviceMemory is freed: the
memory is freed by the Buffer finalizer, which runs before the owner is released. Holding the
source does not pin its memory everywhere: a torch tensor's `resize_` (or its storage's) frees
the bytes under a live tensor, a numpy `resize(refcheck=False)` moves them. So a HostBuffer
made with a `probe` (a callable: None while the source still holds the imported bytes at the
imported address, else why not) answers `stale()`, which the driver asks before every use of
the memory (calls, launches, sequences, host reads); mmap truncation cannot be probed (SIGBUS).
`HostImports` keeps the imports of the numpy arguments of kernel calls, one per array object,
weakly: an entry goes when its array is collected (before numpy frees the memory).

The other way, `host_memory` hands numpy and torch the mapped bytes of a buffer as a ctypes
array that holds the DeviceArray; the device counts those alive (`Device.host_views`), and a
close() while one lives leaves the device's memory in place rather than free it under a view.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

from vkir.errors import ArgumentError

from ._vk import check, ffi, lib, result_name, vk
from .limits import check_allocation, check_storage_range
from .memory import HOST_COHERENT, HOST_VISIBLE, USAGE, Buffer

EXTENSION = "VK_EXT_external_memory_host"
HANDLE_TYPE = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
CACHE_ENTRIES = 64   # imports of call arguments kept per device (the oldest go first)


def host_pointer_alignment(device) -> int | None:
    """`minImportedHostPointerAlignment` of `device`, or None where the extension is not
    enabled on it (read once per device)."""
    if EXTENSION not in getattr(device, "enabled_extensions", ()):
        return None
    cached = getattr(device, "_host_pointer_alignment", None)
    if cached is None:
        props = ffi.new("VkPhysicalDeviceExternalMemoryHostPropertiesEXT*")
        props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT
        both = ffi.new("VkPhysicalDeviceProperties2*")
        both.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        both.pNext = props
        lib.vkGetPhysicalDeviceProperties2(device.physical, both)
        cached = device._host_pointer_alignment = int(props.minImportedHostPointerAlignment)
    return cached


def importable(device, address: int, nbytes: int) -> str | None:
    """None when the `nbytes` host bytes at `address` can be imported on `device`, else why
    not (a phrase for messages)."""
    align = host_pointer_alignment(device)
    if align is None:
        return f"{device.info.name!r} lacks {EXTENSION}"
    if nbytes <= 0:
        return "an empty array has no memory to import"
    offset_align = max(4, int(device.info.limits.min_storage_buffer_offset_alignment))
    if address % offset_align:
        return (f"its address is not a multiple of {offset_align} bytes "
                f"(minStorageBufferOffsetAlignment of {device.info.name!r})")
    return None


def _memory_type_bits(device, base: int) -> int:
    """vkGetMemoryHostPointerPropertiesEXT: the memory types the pages at `base` import as."""
    fn = getattr(device, "_host_pointer_properties", None)
    if fn is None:
        raw = lib.vkGetDeviceProcAddr(device.handle, b"vkGetMemoryHostPointerPropertiesEXT")
        fn = device._host_pointer_properties = ffi.cast(
            "PFN_vkGetMemoryHostPointerPropertiesEXT", raw)
    props = ffi.new("VkMemoryHostPointerPropertiesEXT*")
    props.sType = vk.VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT
    r = fn(device.handle, HANDLE_TYPE, ffi.cast("void*", base), props)
    if r:   # pages the driver cannot import (a file mapping, ...): the caller copies
        raise ArgumentError(f"cannot use host memory in place: {device.info.name!r} refuses "
                            f"these pages (vkGetMemoryHostPointerPropertiesEXT: {result_name(r)})")
    return int(props.memoryTypeBits)


class HostBuffer(Buffer):
    """`nbytes` host bytes at `address`, imported as device memory (see the module docstring);
    `owner` (the memory's source) stays alive as long as the device memory. A Buffer in every
    use: host reads and writes go straight to the host bytes."""

    __slots__ = ("owner", "probe")
    imported = True

    def __init__(self, device, address: int, nbytes: int, owner, probe=None):
        why = importable(device, address, nbytes)
        if why is not None:
            raise ArgumentError(f"cannot use host memory in place: {why}")
        check_storage_range(device.info, nbytes)
        check_allocation(device.info, nbytes)
        self._ptr = None
        self.owner = owner
        self.probe = probe
        self.device = device
        self.nbytes = self.alloc_bytes = int(nbytes)
        with device.lifetime, device._lock:   # no close() in between
            device.check_open()
            device.collect()
            self._import(device, int(address))

    @property
    def range(self) -> int:
        """Descriptor range: the host bytes, never the rest of their pages."""
        return self.nbytes

    def _import(self, device, address: int) -> None:
        align = host_pointer_alignment(device)
        base = address - address % align
        size = -(-(address + self.nbytes - base) // align) * align
        dev = device.handle
        external = ffi.new("VkExternalMemoryBufferCreateInfo*")
        external.sType = vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO
        external.handleTypes = HANDLE_TYPE
        info = ffi.new("VkBufferCreateInfo*")
        info.sType = vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.pNext = external
        info.size = size
        info.usage = USAGE
        info.sharingMode = vk.VK_SHARING_MODE_EXCLUSIVE
        out = ffi.new("VkBuffer*")
        check(lib.vkCreateBuffer(dev, info, ffi.NULL, out), "vkCreateBuffer")
        handle = out[0]
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(dev, handle, req)
        try:
            bits = req.memoryTypeBits & _memory_type_bits(device, base)
            coherent = [i for i in range(device.memory.memoryTypeCount) if (bits >> i) & 1 and
                        device.memory.memoryTypes[i].propertyFlags & (HOST_VISIBLE | HOST_COHERENT)
                        == HOST_VISIBLE | HOST_COHERENT]
            if not coherent or req.size > size:
                raise ArgumentError(f"cannot use host memory in place: {device.info.name!r} "
                                    "imports it as no host-coherent memory type")
            host = ffi.new("VkImportMemoryHostPointerInfoEXT*")
            host.sType = vk.VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT
            host.handleType = HANDLE_TYPE
            host.pHostPointer = ffi.cast("void*", base)
            alloc = ffi.new("VkMemoryAllocateInfo*")
            alloc.sType = vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
            alloc.pNext = host
            alloc.allocationSize = size
            alloc.memoryTypeIndex = coherent[0]
            mem = ffi.new("VkDeviceMemory*")
            r = lib.vkAllocateMemory(dev, alloc, ffi.NULL, mem)
            if r:
                raise ArgumentError(f"cannot use host memory in place: the import of {size} "
                                    f"host bytes failed ({result_name(r)})")
        except BaseException:
            lib.vkDestroyBuffer(dev, handle, ffi.NULL)
            raise
        r = lib.vkBindBufferMemory(dev, handle, mem[0], 0)
        if r:
            lib.vkDestroyBuffer(dev, handle, ffi.NULL)
            lib.vkFreeMemory(dev, mem[0], ffi.NULL)
            check(r, "vkBindBufferMemory")
        self.serial = device.next_serial()
        self.handle, self.memory = handle, mem[0]
        self.offset = address - base
        device._track(self, handle, self.memory)
        self.host_visible = self.coherent = True
        self._ptr = ffi.cast("char*", address)

    def stale(self) -> str | None:
        """None while the source still holds the imported bytes where they were imported (or
        nothing can tell: no probe), else why not (a phrase for messages): the memory may be
        freed, and no kernel or host copy may touch it."""
        return None if self.probe is None else self.probe()

    def __repr__(self):
        return (f"<vkir HostBuffer #{self.serial} {self.nbytes} host bytes on "
                f"{self.device.info.name}>")


class HostImports:
    """The imports of kernel-call arguments on one device: `get(array)` gives the HostBuffer
    of numpy array `array` (C-contiguous, writeable), made on first use and kept while the
    array lives (at most CACHE_ENTRIES), or None where its memory cannot be imported."""

    def __init__(self, device):
        self.device = device
        self.lock = threading.RLock()   # a collected array's callback may run inside get()
        self.entries: dict = {}    # id(array) -> (weakref, address, nbytes, HostBuffer)

    def get(self, array):
        """The HostBuffer of `array` (see the class docstring), or None."""
        address, nbytes = array.ctypes.data, array.nbytes
        key = id(array)
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None and entry[0]() is array and entry[1:3] == (address, nbytes):
                return entry[3]
        if importable(self.device, address, nbytes) is not None:
            return None
        try:
            buf = HostBuffer(self.device, address, nbytes, None)
        except ArgumentError:      # no host-coherent memory type for these pages
            return None
        ref = weakref.ref(array, lambda _, key=key, b=buf: self._drop(key, b))
        with self.lock:
            self.entries[key] = (ref, address, nbytes, buf)
            while len(self.entries) > CACHE_ENTRIES:
                self.entries.pop(next(iter(self.entries)))
        return buf

    def _drop(self, key, buf) -> None:
        """Weakref callback: `buf`'s array is being collected (its memory is still there)."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None and entry[3] is buf:
                del self.entries[key]

    def __len__(self) -> int:
        return len(self.entries)


def call_imports(device) -> HostImports:
    """The device's HostImports (made on first use)."""
    imports = getattr(device, "host_imports", None)
    if imports is None:
        with device._lock:
            imports = getattr(device, "host_imports", None)
            if imports is None:
                imports = device.host_imports = HostImports(device)
    return imports


def host_memory(buffer, owner):
    """A writable buffer-protocol object over `buffer`'s bytes, for views that numpy or torch
    read and write in place, made after the device work in flight that uses the buffer
    finished; it holds `owner` (the DeviceArray) for as long as a view of it lives. None where
    the memory is not host-visible and coherent (the caller copies then). While such an
    object of driver-owned memory lives, closing the device leaves the memory (and the
    device) in place until the process exits instead of freeing memory under a view."""
    device = buffer.device
    with device.lifetime:
        device.check_open()
        if not (buffer.host_visible and buffer.coherent) or buffer._ptr is None:
            return None
        if device._inflight:
            device.wait_for(serial=buffer.serial)
        keeper = (ctypes.c_char * buffer.nbytes).from_address(
            int(ffi.cast("uintptr_t", buffer._ptr)))
        keeper.owner = owner
        if owner is not None and not getattr(buffer, "imported", False):
            with device._lock:
                views = getattr(device, "host_views", None)
                if views is None:   # id -> keeper, weakly (ctypes arrays are unhashable)
                    views = device.host_views = weakref.WeakValueDictionary()
                views[id(keeper)] = keeper
        return keeper


def buffer_address(buffer) -> int | None:
    """The host address of `buffer`'s bytes where the host maps them (a mapped or imported
    buffer; a BufferView: its buffer's plus the view's place in it), else None. Nothing is
    waited for and no view is made: what aliasing compares (vkir.aliasing)."""
    inner = getattr(buffer, "buffer", None)
    if inner is not None:      # a BufferView
        base = buffer_address(inner)
        return None if base is None else base + buffer.offset - inner.offset
    ptr = getattr(buffer, "_ptr", None)
    return None if ptr is None else int(ffi.cast("uintptr_t", ptr))


def host_address(buffer) -> int | None:
    """The host address of `buffer`'s bytes after the device work in flight that uses it
    finished, or None where its memory is not host-visible and coherent (no view is made:
    see `host_memory` for one)."""
    keeper = host_memory(buffer, None)
    return None if keeper is None else ctypes.addressof(keeper)
