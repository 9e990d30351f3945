"""A binding of part of a device buffer: how aliased arguments (vkir.aliasing) are bound
as one buffer, each at its offset. A BufferView is what launches take for a buffer (a handle, an
offset, a descriptor range, a serial) and holds its buffer alive."""

from __future__ import annotations

import weakref


def _dead(device, serial: int) -> None:
    """Finalizer: launches recorded with the view are dropped at the device's next collect."""
    device._dead_serials.add(serial)


class BufferView:
    """`nbytes` bytes at `offset` bytes into runtime buffer `buffer`, as a descriptor binds
    them. `offset` is a multiple of the device's minStorageBufferOffsetAlignment (the caller
    sees to it: vkir.aliasing). Its serial is its own (launches
    are cached by serial, and two views of one buffer are different bindings)."""

    __slots__ = ("buffer", "device", "handle", "offset", "nbytes", "range", "serial",
                 "__weakref__")

    def __init__(self, buffer, offset: int, nbytes: int):
        align = int(buffer.device.info.limits.min_storage_buffer_offset_alignment)
        assert offset % align == 0 and 0 < nbytes and offset + nbytes <= buffer.nbytes, \
            (offset, nbytes, buffer.nbytes, align)
        self.buffer = buffer
        self.device = buffer.device
        self.handle = buffer.handle
        self.offset = buffer.offset + offset
        self.nbytes = nbytes
        self.range = nbytes
        self.serial = buffer.device.next_serial()
        fin = weakref.finalize(self, _dead, buffer.device, self.serial)
        fin.atexit = False

    def __repr__(self) -> str:
        return f"<BufferView {self.nbytes} bytes at {self.offset - self.buffer.offset} of {self.buffer!r}>"
