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

Which memory an argument covers has one answer for every kind of argument (`host_range`): a
numpy array its byte bounds in the process's address space; a DeviceArray whose memory the host
maps (a host-visible buffer, or host memory `vkir.asarray` uses in place: a numpy array, a torch
tensor, a DLPack or buffer-protocol view) the host addresses of its bytes, in the same space; a
DeviceArray in device-local memory its runtime buffer (from its offset 0), a space of its own.
So `x` and `vkir.asarray(x)`, two imports of one tensor, or a device array and a numpy view of
its mapping are one memory here, however each arrived. Numpy pairs are tested with numpy's
`may_share_memory` (bounds, in C; never the exponential `shares_memory`) before their ranges
are computed. Strided views are the same view when base pointer, shape, strides and dtype agree.

A group with a DeviceArray among its members is bound in device memory, in place, with no copy
(`bind`): the buffer of the DeviceArray member that spans the union (`Group.root`), every other
member (a numpy array over the same host bytes, another import of them) a view of it at its
offset; where none spans the union (imports of overlapping parts of one memory), an import of
the union's host bytes, each member a view of it; where those cannot be imported, an
ArgumentError naming two parameters. Groups of numpy arrays alone are staged in one device
buffer (`gather`, `scatter`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError

__all__ = ["ALIAS_ALIGNMENT", "Arg", "Member", "Group", "host_range", "overlaps", "plan", "bind",
           "gather", "scatter"]

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
    """An argument of a group: bound `offset` bytes into the group's memory, `nbytes` long;
    `name` is the one messages use."""

    position: int
    offset: int
    nbytes: int
    written: bool
    name: str = ""


@dataclass(frozen=True, slots=True)
class Group:
    """Arguments over one memory with a writer among them: `nbytes` is the union's size.
    `on_device`: a DeviceArray is among them, so they are bound in device memory, in place
    (`bind`), never staged: in the memory of the DeviceArray member that spans the union
    (`root`, its position) or, where none does, in an import of the union's host bytes, which
    start at host address `start`. A group of numpy arrays alone is staged (`gather`)."""

    members: tuple
    nbytes: int
    on_device: bool = False
    root: int | None = None
    start: int | None = None

    def covering(self):
        """The first member that spans the whole union (offset 0, every byte), or None."""
        for m in self.members:
            if m.offset == 0 and m.nbytes == self.nbytes:
                return m
        return None


_HOST = (0,)   # the space of host addresses; device-local memory: (1, id of its buffer)


def host_range(a) -> tuple[int, int] | None:
    """(first byte, end byte) of the host memory array `a` covers: a numpy array's byte bounds
    (a strided view spans from its lowest to its highest byte), a DeviceArray's mapped or
    imported bytes (`DeviceArray.host_range`); None for device-local memory."""
    if isinstance(a, np.ndarray):
        lo, hi = np.lib.array_utils.byte_bounds(a)
        return lo, hi
    return a.host_range()


def _extent(a) -> tuple:
    """(memory space, first byte, end byte, compact) of array `a`: host addresses where it is
    host memory (`host_range`), else its runtime buffer from offset 0."""
    if isinstance(a, np.ndarray):
        lo, hi = np.lib.array_utils.byte_bounds(a)
        return _HOST, lo, hi, a.flags.c_contiguous
    span = a.host_range()
    if span is not None:
        return _HOST, span[0], span[1], True
    start = getattr(a.buffer, "start", 0)   # a view at an offset of its parent's buffer
    return (1, id(_root(a.buffer))), start, start + a.size * a.dtype.itemsize, True


def _root(buffer):
    """The runtime buffer that owns `buffer`'s memory: its parent for a DeviceArray view at an
    offset (vkir.runtime.slices), else itself."""
    return getattr(buffer, "parent", None) or buffer


def _same_view(a, b) -> bool:
    """Exactly the same numpy view: base pointer, shape, strides and dtype."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def overlaps(a, b, extents=None) -> bool:
    """Whether arrays `a` and `b` (numpy arrays or DeviceArrays, any mix) may share memory:
    numpy's `may_share_memory` for two numpy arrays; for two DeviceArrays one buffer, and
    distinct buffers never unless one is an import (host memory); else their extents
    (`_extent`: the same space, intersecting non-empty ranges). `extents(array)` gives an
    array's extent where the caller keeps them."""
    host_a, host_b = isinstance(a, np.ndarray), isinstance(b, np.ndarray)
    if host_a and host_b:
        return np.may_share_memory(a, b)
    if not (host_a or host_b):
        if a.buffer is b.buffer:
            return a.size > 0 and b.size > 0
        # distinct buffers of the device's own memory never share bytes (views of one parent
        # aside): only an import can
        if _root(a.buffer) is not _root(b.buffer) and not (
                getattr(a.buffer, "imported", False) or getattr(b.buffer, "imported", False)):
            return False
    ea, eb = (extents or _extent)(a), (extents or _extent)(b)
    return ea[0] == eb[0] and ea[1] < ea[2] and eb[1] < eb[2] and ea[1] < eb[2] and eb[1] < ea[2]


def plan(args, where: str) -> tuple:
    """The Groups of `args` (Args): each set of arguments linked by overlaps that involve a
    written one, in the order of their first position. ArgumentError, naming two parameters,
    where a group cannot be one buffer."""
    args = list(args)
    root = list(range(len(args)))
    cache = {}

    def extent(a):
        got = cache.get(id(a))
        if got is None:
            got = cache[id(a)] = _extent(a)
        return got

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    linked = False
    for i, a in enumerate(args):
        for j in range(i + 1, len(args)):
            b = args[j]
            if (a.written or b.written) and overlaps(a.array, b.array, extent):
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
            spans = sorted(((*extent(arg.array), arg) for arg in members),
                           key=lambda s: (s[1], s[2], s[4].position))
            groups.append(_group(spans, where))
    return tuple(groups)


def _group(spans: list, where: str) -> Group:
    lo = spans[0][1]
    hi = max(s[2] for s in spans)
    args = [s[4] for s in spans]
    on_host = [isinstance(a.array, np.ndarray) for a in args]
    identical = all(on_host) and all(_same_view(args[0].array, a.array) for a in args[1:])
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
        members = tuple(Member(a.position, 0, nbytes, a.written, a.name) for a in args)
        return Group(tuple(sorted(members, key=lambda m: m.position)), nbytes)
    members = tuple(sorted((Member(a.position, s[1] - lo, s[2] - s[1], a.written, a.name)
                            for s, a in zip(spans, args)), key=lambda m: m.position))
    if all(on_host):
        return Group(members, hi - lo)
    # a device array among them: bound in the memory of one that spans them all, else in an
    # import of the union (host memory: its first byte is `lo`)
    spanning = [s[4].position for s in spans if not isinstance(s[4].array, np.ndarray)
                and s[1] == lo and s[2] == hi]
    if spanning:
        return Group(members, hi - lo, True, min(spanning))
    return Group(members, hi - lo, True, None, lo)


def union_array(group: Group, arrays) -> np.ndarray:
    """A uint8 numpy array over the host bytes of `group` (an on-device group without a
    `root`), which holds the members' arrays (and so their memory) for as long as it lives."""
    keeper = (ctypes.c_char * group.nbytes).from_address(group.start)
    keeper.members = tuple(arrays[m.position] for m in group.members)
    return np.frombuffer(keeper, np.uint8)


def bind(groups, arrays, view, in_place, where: str) -> dict:
    """{position: what to bind} for the members of the on-device `groups`, every one in place:
    in the memory of the group's `root` (that array's buffer for a member over the same buffer
    or spanning all of it, else `view(buffer, offset, nbytes)`: a numpy array over those host
    bytes, another import of them), or in `in_place(union_array(...), True)`, an import of the
    union's host bytes (a buffer, or None where they cannot be imported: then ArgumentError
    naming two members). `arrays` are indexable by position."""
    out = {}
    for group in groups:
        if not group.on_device:
            continue
        if group.root is not None:
            buffer = arrays[group.root].buffer
        else:
            buffer = in_place(union_array(group, arrays), True)
            if buffer is None:
                writer = next(m for m in group.members if m.written)
                other = next(m for m in group.members if m is not writer)
                first, second = sorted((writer, other), key=lambda m: m.position)
                raise ArgumentError(
                    f"{where}: arguments {first.name!r} and {second.name!r} share memory and "
                    f"{writer.name!r} is written, so both must be bound as one buffer, but no "
                    f"device array among them spans all of that memory ({group.nbytes} bytes) "
                    "and the device cannot use it in place as one; pass the array that spans "
                    "it for each (or separate arrays)")
        for m in group.members:
            a = arrays[m.position]
            whole = m.offset == 0 and m.nbytes == buffer.nbytes
            same = getattr(a, "buffer", None) is buffer
            out[m.position] = buffer if same or whole else view(buffer, m.offset, m.nbytes)
    return out


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
