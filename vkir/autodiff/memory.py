"""Which memory a DeviceArray is, for `vkir.Tape`: arrays are known by their bytes, not by
their Python objects, so a fresh DeviceArray over recorded memory (a view of one buffer, a
second `vkir.asarray` of the same host memory) is the same array to the tape.

An array's extent is (memory space, first byte, end byte): host addresses where the host maps
its memory (one space for all such memory, however it arrived), else its runtime buffer from
byte 0 (a view at an offset, `a[16:48]`: its parent's buffer, from the view's first byte). A
tape's regions are disjoint: an array starting where a region starts is that region (which grows to cover it);
one that overlaps a region elsewhere is an ArgumentError (its adjoint could not be a view of
the region's).
"""

from __future__ import annotations

import bisect
import zlib

from ..errors import ArgumentError


def extent(array) -> tuple:
    """(memory space, first byte, end byte) of a DeviceArray."""
    found = array.host_range()
    if found is not None:
        return ("host", found[0], found[1])
    buffer = array.buffer
    start = getattr(buffer, "start", 0)   # a view at an offset of its parent (`a[16:48]`)
    root = getattr(buffer, "parent", None) or buffer
    return (id(root), start, start + array.size * array.dtype.itemsize)


def fingerprint(array) -> int:
    """A checksum of a DeviceArray's bytes (CRC-32; in place where the host maps the memory):
    what the tape compares at backward to find an input changed since a call read it."""
    view = array.host_view()
    data = array.numpy() if view is None else view
    return zlib.crc32(memoryview(data.reshape(-1)).cast("B"))


def overlap(a, b) -> bool:
    """Whether DeviceArrays a and b share a byte."""
    sa, sb = extent(a), extent(b)
    return sa[0] == sb[0] and sa[1] < sb[2] and sb[1] < sa[2]


class Memories:
    """The disjoint memory regions of one tape, each with a key (an int) and an array that keeps
    its memory alive while the tape knows it."""

    def __init__(self):
        self._starts: dict = {}    # space -> sorted first bytes
        self._regions: dict = {}   # (space, first byte) -> [key, end byte, keeper array]

    def key(self, array, add: bool = False):
        """The key of the region `array` is (None for unknown memory unless `add`, which makes
        one); ArgumentError for an array that overlaps a region without starting where it
        starts. An empty array is no memory: None."""
        space, start, end = extent(array)
        if start == end:
            return None
        starts = self._starts.setdefault(space, [])
        i = bisect.bisect_right(starts, start)
        if i and starts[i - 1] == start:
            region = self._regions[(space, start)]
            if end > region[1]:
                self._check_free(space, starts, i, end, array)
                if add:
                    region[1], region[2] = end, array
            return region[0]
        if i and self._regions[(space, starts[i - 1])][1] > start:
            raise self.overlap_error(array)
        self._check_free(space, starts, i, end, array)
        if not add:
            return None
        key = len(self._regions)
        starts.insert(i, start)
        self._regions[(space, start)] = [key, end, array]
        return key

    def _check_free(self, space, starts, i, end, array) -> None:
        if i < len(starts) and starts[i] < end:
            raise self.overlap_error(array)

    @staticmethod
    def overlap_error(array) -> ArgumentError:
        """The refusal of an array that overlaps known memory at another offset."""
        return ArgumentError(f"vkir.Tape: a {array.dtype}{list(array.shape)} array overlaps "
                             "memory the tape recorded without starting where it starts; "
                             "pass whole arrays, not views at an offset")

    def clear(self) -> None:
        """Forget every region."""
        self._starts.clear()
        self._regions.clear()
