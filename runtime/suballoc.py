"""A sub-allocator for small buffers: many arrays share one VkBuffer and one VkDeviceMemory.

Drivers limit the number of VkDeviceMemory allocations (often 4096) and each costs a driver call,
so buffers up to `MAX_SUBALLOC` bytes are carved out of `BLOCK_BYTES` blocks. An `Arena` per
device and memory kind (mapped host-visible, or device-local) owns the blocks; each block keeps a
list of free ranges (first fit, neighbours merged on free). Offsets are aligned to the device's
minStorageBufferOffsetAlignment and minUniformBufferOffsetAlignment (descriptors bind at the
offset) and to nonCoherentAtomSize (flushes of non-coherent memory cover whole atoms).

A `SubBuffer` gives its range back when the Python object is collected; nothing on the device can
still use it then, because everything in flight keeps its buffers alive. The finalizer only appends to the arena's `returned` list (it may
run in any thread, even inside an arena operation); ranges rejoin the free lists at the next
allocation. Blocks live until the device closes.

`allocate(device, nbytes)` is the one entry point: a SubBuffer when small, else a dedicated
memory.Buffer. `device.suballoc_max_bytes` overrides MAX_SUBALLOC (0 turns sub-allocation off).
"""

from __future__ import annotations

import bisect
import threading
import weakref

from ._vk import ffi, lib, vk
from .limits import check_allocation, check_storage_range
from .memory import HOST_COHERENT, HOST_VISIBLE, MIN_BYTES, Buffer, create_bound_buffer, map_memory

BLOCK_BYTES = 4 << 20      # one VkDeviceMemory per 4 MiB of small buffers
MAX_SUBALLOC = 256 << 10   # larger buffers get an allocation of their own


def allocate(device, nbytes: int):
    """A buffer of `nbytes` on `device`: sub-allocated when small, else dedicated."""
    limit = device.suballoc_max_bytes
    if limit is None:
        limit = MAX_SUBALLOC
    if nbytes <= limit:
        mapped = bool(device.host_visible_buffers)
        arena = device.arenas.get(mapped)
        if arena is None:
            with device.lifetime, device._lock:
                device.check_open()
                arena = device.arenas.get(mapped)
                if arena is None:
                    arena = device.arenas[mapped] = Arena(device, mapped)
        return SubBuffer(device, nbytes, arena)
    return Buffer(device, nbytes)


class Block:
    """One VkBuffer bound to one VkDeviceMemory, mapped when host-visible; `free` holds sorted,
    disjoint (offset, size) ranges."""

    __slots__ = ("handle", "memory", "size", "ptr", "coherent", "free")

    def __init__(self, device, size: int, mapped: bool):
        self.handle, self.memory, flags = create_bound_buffer(
            device, size, "mapped" if mapped else "device")
        self.size = size
        self.coherent = bool(flags & HOST_COHERENT)
        self.ptr = None
        if mapped and flags & HOST_VISIBLE:
            self.ptr = ffi.cast("char*", map_memory(device, self.memory))
        self.free = [(0, size)]

    def take(self, size: int, align: int):
        """The offset of a free range of `size` bytes at an `align` multiple, or None."""
        for i, (off, n) in enumerate(self.free):
            start = -(-off // align) * align
            if start + size > off + n:
                continue
            pieces = [(off, start - off), (start + size, off + n - start - size)]
            self.free[i:i + 1] = [p for p in pieces if p[1] > 0]
            return start
        return None

    def give(self, offset: int, size: int) -> None:
        """Return [offset, offset + size) to the free list, merged with its neighbours."""
        i = bisect.bisect_left(self.free, (offset, 0))
        if i < len(self.free) and offset + size == self.free[i][0]:
            size += self.free.pop(i)[1]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == offset:
            i -= 1
            offset, size = self.free[i][0], self.free[i][1] + size
            self.free.pop(i)
        self.free.insert(i, (offset, size))

    def destroy(self, dev) -> None:
        """Free the block's VkBuffer and memory on `dev`."""
        lib.vkDestroyBuffer(dev, self.handle, ffi.NULL)
        lib.vkFreeMemory(dev, self.memory, ffi.NULL)


class Arena:
    """The blocks of one device and memory kind, with a lock of their own (finalizers free
    ranges from whichever thread collects the array)."""

    def __init__(self, device, mapped: bool):
        self.device = device
        self.mapped = mapped
        self.blocks: list = []
        self.returned: list = []   # (block, offset, size) given back by finalizers
        self.lock = threading.Lock()
        limits = vk.vkGetPhysicalDeviceProperties(device.physical).limits
        self.align = max(MIN_BYTES, int(limits.minStorageBufferOffsetAlignment),
                         int(limits.minUniformBufferOffsetAlignment),
                         int(limits.nonCoherentAtomSize))
        self.atom = int(limits.nonCoherentAtomSize)

    def take(self, nbytes: int):
        """(block, offset, size) of a fresh range holding `nbytes` (size rounded to the alignment)."""
        size = max(MIN_BYTES, -(-nbytes // self.align) * self.align)
        with self.lock:
            self._take_back()
            for block in self.blocks:
                offset = block.take(size, self.align)
                if offset is not None:
                    return block, offset, size
        block = Block(self.device, max(BLOCK_BYTES, size), self.mapped)
        with self.lock:
            self.blocks.append(block)
            offset = block.take(size, self.align)
        assert offset is not None
        return block, offset, size

    def _take_back(self) -> None:
        """Merge the ranges finalizers returned into the free lists (the caller holds the lock)."""
        while self.returned:
            block, offset, size = self.returned.pop()
            block.give(offset, size)

    def used_bytes(self) -> int:
        """Bytes handed out and not yet given back (for tests and diagnostics)."""
        with self.lock:
            self._take_back()
            return sum(b.size - sum(n for _, n in b.free) for b in self.blocks)

    def destroy(self) -> None:
        """Free every block of the arena."""
        for block in self.blocks:
            block.destroy(self.device.handle)
        self.blocks.clear()


def _release(device, arena, block, offset, size, serial):
    """Finalizer of a SubBuffer: the range is free again; the device forgets launches using it
    at its next collect (both are appends: safe at any point, in any thread)."""
    arena.returned.append((block, offset, size))
    device._dead_serials.add(serial)


class SubBuffer(Buffer):
    """`nbytes` bytes at `offset` in a shared block: a Buffer in every use (copies, descriptors,
    host access), without an allocation of its own."""

    __slots__ = ("block",)

    def __init__(self, device, nbytes: int, arena: Arena):  # super().__init__ would allocate
        check_storage_range(device.info, nbytes)
        check_allocation(device.info, nbytes)
        self._ptr = None
        self.device = device
        self.nbytes = int(nbytes)
        with device.lifetime, device._lock:  # no close() in between
            device.check_open()
            device.collect()
            self.block, self.offset, self.alloc_bytes = arena.take(self.nbytes)
        self.handle = self.block.handle
        self.memory = self.block.memory
        self.serial = device.next_serial()
        self.coherent = self.block.coherent
        self.host_visible = self.block.ptr is not None
        self._ptr = self.block.ptr + self.offset if self.host_visible else None
        fin = weakref.finalize(self, _release, device, arena, self.block, self.offset,
                               self.alloc_bytes, self.serial)
        fin.atexit = False

    @property
    def range(self) -> int:
        """Descriptor range: the sub-allocation, never the neighbours."""
        return self.alloc_bytes

    def _range(self):
        return vk.VkMappedMemoryRange(memory=self.memory, offset=self.offset, size=self.alloc_bytes)
