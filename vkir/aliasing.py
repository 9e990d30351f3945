"""Aliased arguments: which buffer arguments of one call share memory, and how they are bound.

A call may pass one array, or overlapping views of one, for several buffer parameters. Where none
of them is written, nothing changes: each is bound on its own (a copy of data nobody writes is
the same data). Where one of them is written, every name must see the same memory, as numpy and
the interpreter do: the overlapping arrays form a `Group` over the union of their bytes, bound as
ONE device buffer with each member at its byte offset in it. A member's offset must be a multiple
of ALIAS_ALIGNMENT (256 bytes: the largest minStorageBufferOffsetAlignment Vulkan allows, so that
one rule holds on every device and in the interpreter), and a member must be compact (a strided
view has no place at an offset of one buffer) unless every member is the same view; otherwise
the call is an ArgumentError naming both parameters, raised before anything is copied.
Device kernels, shaders, launches and the interpreter all bind arguments through this module.

Overlap is decided by byte ranges, only for pairs with a written side: numpy's
`may_share_memory` (bounds, in C; never the exponential `shares_memory`) says whether the
[start, end) address ranges intersect, and only then are the ranges computed for the offsets.
Strided views are the same view when base pointer, shape, strides and dtype agree. Device arrays
share memory when they are views of one runtime buffer (always from its offset 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError

__all__ = ["ALIAS_ALIGNMENT", "Arg", "Member", "Group", "plan", "gather", "scatter"]

ALIAS_ALIGNMENT = 256


@dataclass(frozen=True, slots=True)
class Arg:
    """One buffer argument of a call: its position (parameter index or binding position), the
    name messages use, the array (numpy or DeviceArray) and whether the callee writes it."""

    position: int
    name: str
    array: object
    written: bool


@dataclass(frozen=True, slots=True)
class Member:
    """An argument of a group: bound `offset` bytes into the group's memory, `nbytes` long."""

    position: int
    offset: int
    nbytes: int
    written: bool


@dataclass(frozen=True, slots=True)
class Group:
    """Arguments over one memory with a writer among them: `nbytes` is the union's size;
    `on_device` tells device arrays (one runtime buffer, every offset 0) from numpy arrays."""

    members: tuple
    nbytes: int
    on_device: bool

    def covering(self):
        """The first member that spans the whole union (offset 0, every byte), or None."""
        for m in self.members:
            if m.offset == 0 and m.nbytes == self.nbytes:
                return m
        return None


def _extent(a):
    """(memory space, first byte, end byte, compact) of array `a`: host addresses for numpy
    arrays (numpy's byte bounds: a strided view spans from its lowest to its highest byte),
    the runtime buffer for a DeviceArray."""
    if isinstance(a, np.ndarray):
        lo, hi = np.lib.array_utils.byte_bounds(a)
        return (0,), lo, hi, a.flags.c_contiguous
    buffer = a.buffer
    return (1, id(buffer)), 0, a.size * a.dtype.itemsize, True


def _same_view(a, b) -> bool:
    """Exactly the same numpy view: base pointer, shape, strides and dtype."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _may_overlap(a, b) -> bool:
    """Whether arrays `a` and `b` may share memory: their byte bounds intersect (numpy's
    `may_share_memory`, in C), or they are device arrays over one runtime buffer."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
            and np.may_share_memory(a, b)
    return a.buffer is b.buffer and a.size > 0 and b.size > 0


def plan(args, where: str) -> tuple:
    """The Groups of `args` (Args): each set of arguments linked by overlaps that involve a
    written one, in the order of their first position. ArgumentError, naming two parameters,
    where a group cannot be one buffer."""
    args = list(args)
    root = list(range(len(args)))

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    linked = False
    for i, a in enumerate(args):
        for j in range(i + 1, len(args)):
            b = args[j]
            if (a.written or b.written) and _may_overlap(a.array, b.array):
                root[find(j)] = find(i)
                linked = True
    if not linked:          # the common case: no byte ranges computed at all
        return ()
    components = {}
    for i, arg in enumerate(args):
        components.setdefault(find(i), []).append(arg)
    groups = []
    for members in components.values():
        if len(members) > 1:
            spans = sorted(((*_extent(arg.array), arg) for arg in members),
                           key=lambda s: (s[1], s[2], s[4].position))
            groups.append(_group(spans, where))
    return tuple(groups)


def _group(spans: list, where: str) -> Group:
    lo = spans[0][1]
    hi = max(s[2] for s in spans)
    args = [s[4] for s in spans]
    identical = all(_same_view(args[0].array, a.array) for a in args[1:]) \
        if isinstance(args[0].array, np.ndarray) else True
    for space, start, _end, compact, arg in spans:
        if not compact and not identical:
            _refuse(where, arg, spans, f"{arg.name!r} is a strided view, which cannot be bound "
                                       "as part of one buffer")
        offset = start - lo
        if offset % ALIAS_ALIGNMENT:
            _refuse(where, arg, spans, f"{arg.name!r} starts {offset} bytes into their memory, "
                                       f"not a multiple of {ALIAS_ALIGNMENT} (the buffer offset "
                                       "every Vulkan device binds)")
    if identical and not all(s[3] for s in spans):
        # one strided view passed several times: its elements, compacted, are the memory
        nbytes = args[0].array.nbytes
        members = tuple(Member(a.position, 0, nbytes, a.written) for a in args)
        return Group(tuple(sorted(members, key=lambda m: m.position)), nbytes, False)
    members = tuple(sorted((Member(a.position, s[1] - lo, s[2] - s[1], a.written)
                            for s, a in zip(spans, args)), key=lambda m: m.position))
    return Group(members, hi - lo, spans[0][0] != (0,))


def _refuse(where: str, arg: Arg, spans: list, why: str):
    """ArgumentError for `arg` and the parameter it overlaps (a written one where possible)."""
    start, end = next((s[1], s[2]) for s in spans if s[4] is arg)
    others = [s[4] for s in spans if s[4] is not arg and s[1] < end and start < s[2]]
    others.sort(key=lambda a: (not a.written, a.position))
    other = others[0] if others else next(s[4] for s in spans if s[4] is not arg)
    first, second = sorted((arg, other), key=lambda a: a.position)
    writer = first if first.written else second
    raise ArgumentError(
        f"{where}: arguments {first.name!r} and {second.name!r} share memory and {writer.name!r} "
        f"is written, so both must be bound as one buffer, but {why}; pass separate arrays "
        "(copy one of them)")


def _bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of `a` in C order (a view where `a` is C-contiguous, else a copy)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def gather(group: Group, arrays) -> tuple:
    """(uint8 array of the group's `nbytes`, copied): the bytes of a numpy group, from
    `arrays` (indexable by position). No copy where one writable C-contiguous member spans
    them all (its bytes are the group's memory); else a fresh array to write back (`scatter`)."""
    whole = group.covering()
    if whole is not None:
        a = arrays[whole.position]
        if a.flags.c_contiguous and a.flags.writeable:
            return _bytes(a), False
    out = np.empty(group.nbytes, np.uint8)
    for m in group.members:
        out[m.offset:m.offset + m.nbytes] = _bytes(arrays[m.position])
    return out, True


def scatter(group: Group, arrays, data: np.ndarray) -> None:
    """Copy the group's bytes `data` (made by `gather` with a copy) back to its written members."""
    for m in group.members:
        if m.written:
            a = arrays[m.position]
            np.copyto(a, data[m.offset:m.offset + m.nbytes].view(a.dtype).reshape(a.shape))
