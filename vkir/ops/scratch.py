"""Scratch arrays that an op's passes need (the radix sort's keys and counts, the scan's chunk
sums), kept for the next call on the same device as its kernels are.

Why: on CPU devices new device memory is new host memory, and the first pass that writes it
pays the page faults (lavapipe, one 2^20-element radix scatter: 2.0 ms of CPU into a reused
buffer, 4.7 ms into a fresh one), and a kernel call on new buffers records a new launch
(descriptor sets, texel views) where a call on the same buffers replays the one it has.

    with workspace(device) as ws:
        keys = ws.take((n,), "uint32")     # a free array of that shape and dtype, or a new one
        ...                                # every kernel call waits, so at the block's end
                                           # nothing in flight uses them: they are free again

Each device has one `Workspace` (made on first use, dropped with the device); an array is lent
to one block at a time, so threads sorting at once get distinct arrays. Inside a
`vkir.sequence()` recording nothing has run at the block's end, so `workspace` lends nothing
and `take` returns new arrays, kept alive by the sequence that uses them. At most `CAP_BYTES`
of free arrays are kept per device (the least recently given back go first).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

CAP_BYTES = 256 << 20

_LOCK = threading.Lock()
_BY_DEVICE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class Workspace:
    """The free scratch arrays of one device, by (shape, dtype), least recently returned
    first; thread-safe."""

    def __init__(self, device, cap_bytes: int = CAP_BYTES):
        self.device = device
        self.cap_bytes = cap_bytes
        self._lock = threading.Lock()
        self._free: OrderedDict = OrderedDict()   # (shape, dtype, serial) -> DeviceArray
        self._bytes = 0
        self._serial = 0

    def take(self, shape, dtype):
        """A DeviceArray of `shape` and `dtype` nobody else holds (its contents undefined)."""
        from ..api import empty

        shape, dtype = tuple(int(s) for s in shape), np.dtype(dtype).name
        with self._lock:
            for key in self._free:
                if key[:2] == (shape, dtype):
                    a = self._free.pop(key)
                    self._bytes -= a.nbytes
                    return a
        return empty(shape, dtype, self.device)

    def give(self, arrays) -> None:
        """Make `arrays` free again (nothing may use them any more), dropping the least
        recently returned ones past the cap."""
        with self._lock:
            for a in arrays:
                self._serial += 1
                self._free[(tuple(a.shape), a.dtype.name, self._serial)] = a
                self._bytes += a.nbytes
            while self._bytes > self.cap_bytes and self._free:
                _, old = self._free.popitem(last=False)
                self._bytes -= old.nbytes

    def __len__(self) -> int:
        return len(self._free)


class _Lending:
    """What a `workspace` block hands out: `take` records what it lent, to give it back."""

    def __init__(self, ws: Workspace | None, device):
        self._ws = ws
        self._device = device
        self.lent: list = []

    def take(self, shape, dtype):
        """A scratch DeviceArray for the block (see Workspace.take)."""
        if self._ws is None:
            from ..api import empty

            return empty(tuple(int(s) for s in shape), dtype, self._device)
        a = self._ws.take(shape, dtype)
        self.lent.append(a)
        return a


def for_device(device) -> Workspace:
    """The Workspace of `device` (an opened vkir device), made on first use."""
    with _LOCK:
        ws = _BY_DEVICE.get(device)
        if ws is None:
            ws = _BY_DEVICE[device] = Workspace(device)
        return ws


@contextmanager
def workspace(device):
    """A block lending scratch arrays of `device` (see the module docstring); they go back
    to the device's workspace when the block ends (not when it raised: a dispatch whose wait
    failed may still use them)."""
    from ..driver.sequences import current

    lending = _Lending(None if current() is not None else for_device(device), device)
    yield lending
    if lending.lent:
        lending._ws.give(lending.lent)
