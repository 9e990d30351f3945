"""Buffer views at an offset, for DeviceArray views: `a[16:48]`, `a[3]` of an n-d array. A view's memory is the
parent's bytes from a byte offset (`SliceBuffer`), so a kernel writing the view writes the parent.

A SliceBuffer is a runtime Buffer in every use (host reads and writes, descriptors) without an
allocation of its own: the parent's VkBuffer and memory, at the parent's offset plus the view's.
A descriptor can bind it there only where that offset is a multiple of the device's
minStorageBufferOffsetAlignment (16 bytes on lavapipe, 256 on SwiftShader); where it is not
(`misaligned`), kernel calls bind the view's bytes through the host instead (its host view, staged
as a numpy argument is: one copy each way, counted in `last_call_copies`), and refuse it where the
memory is not host-visible. Its serial is its own (launches are cached by serial, and a view is
another binding than its parent), and host access waits for the parent's work in flight too.
"""

from __future__ import annotations

import weakref

from vkir.errors import ArgumentError
from .memory import Buffer

__all__ = ["SliceBuffer", "slice_buffer"]


def _dead(device, serial: int) -> None:
    """Finalizer: launches recorded with the view are dropped at the device's next collect."""
    device._dead_serials.add(serial)


class SliceBuffer(Buffer):
    """`nbytes` bytes at `start` bytes into runtime buffer `parent` (never itself a
    SliceBuffer: a view of a view is a view of the root at the summed offset)."""

    __slots__ = ("parent", "start", "misaligned")

    def __init__(self, parent, start: int, nbytes: int):  # super().__init__ would allocate
        self.parent = parent
        self.start = int(start)
        self.device = parent.device
        self.nbytes = self.alloc_bytes = int(nbytes)
        self.handle = parent.handle
        self.memory = parent.memory
        self.offset = parent.offset + self.start
        self.host_visible = parent.host_visible
        self.coherent = parent.coherent
        ptr = getattr(parent, "_ptr", None)
        self._ptr = None if ptr is None else ptr + self.start
        align = int(self.device.info.limits.min_storage_buffer_offset_alignment)
        self.misaligned = self.offset % align != 0
        self.serial = self.device.next_serial()
        fin = weakref.finalize(self, _dead, self.device, self.serial)
        fin.atexit = False

    @property
    def range(self) -> int:
        """Descriptor range: the view's bytes, never the rest of the parent."""
        return self.nbytes

    @property
    def imported(self) -> bool:
        """Whether the parent is host memory used in place (vkir.asarray)."""
        return bool(getattr(self.parent, "imported", False))

    def stale(self) -> str | None:
        """The parent's answer (an import whose source was resized), None for the others."""
        probe = getattr(self.parent, "stale", None)
        return None if probe is None else probe()

    def _wait_parent(self) -> None:
        if self.device._inflight:
            self.device.wait_for(serial=self.parent.serial)

    def read(self, out=None):
        """The view's bytes (after the parent's and the view's work in flight)."""
        self._wait_parent()
        return super().read(out)

    def write(self, data) -> None:
        """Overwrite the view's bytes (after the work in flight that uses the parent)."""
        self._wait_parent()
        super().write(data)

    def fill_zero(self) -> None:
        """Zero the view's bytes, and only those."""
        self._wait_parent()
        import numpy as np

        super().write(np.zeros(self.nbytes, np.uint8))

    def _range(self):
        return self.parent._range()

    def __repr__(self) -> str:
        return f"<vkir view {self.nbytes} bytes at {self.start} of {self.parent!r}>"


def slice_buffer(buffer, start: int, nbytes: int):
    """The buffer of a view `nbytes` long at byte `start` of `buffer`'s bytes: `buffer` itself
    for the whole of it, else a SliceBuffer of its root."""
    if start == 0 and nbytes == buffer.nbytes:
        return buffer
    if start < 0 or start + nbytes > buffer.nbytes:
        raise ArgumentError(f"a view of {nbytes} bytes at {start} of {buffer.nbytes}")
    if isinstance(buffer, SliceBuffer):
        start, buffer = buffer.start + start, buffer.parent
    return SliceBuffer(buffer, start, nbytes)
