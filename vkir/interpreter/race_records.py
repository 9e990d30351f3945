"""Access records of the interpreter's race checker (vkir.interpreter.races): how invocations
and workgroups are packed into keys, and the per-element record arrays of one checked storage."""

from __future__ import annotations

import numpy as np

NONE = -1          # no access recorded
ALL = -2           # workgroup of code outside the blockIdx loops: every workgroup runs it
COLLECTIVE = -3    # writer of a retired async write: ordered with its whole workgroup
BITS = 19
MASK = (1 << BITS) - 1
MULTI = 1 << 62    # key bit: the row stands for several invocations
UNBOUND = {axis: 1 << (3 * BITS + i) for i, axis in enumerate("xyz")}
ANY_UNBOUND = sum(UNBOUND.values())
AXES = ("z", "y", "x")  # message order: outer to inner


# records of atomic accesses, made on the first atomic of a storage (like the reads': the first
# atomic of the current epoch and one by another invocation; across workgroups, the first
# workgroup and one other)
ATOMIC_FIELDS = ("a_tok", "a_key", "a_site", "a_key2", "a_site2",
                 "ax_wg", "ax_key", "ax_site", "ax_wg2", "ax_key2", "ax_site2")


def shift(axis: str) -> int:
    """The bit offset of a thread axis ('x', 'y', 'z') in an invocation key."""
    return "xyz".index(axis) * BITS


# a Shadow's record arrays (made on first use): writes, reads, and for storages several
# workgroups touch, the reads of other workgroups
_RECORDS = ("w_tok", "w_site", "w_key", "w_wg", "r_tok", "r_site", "r_key", "r_key2", "r_site2",
            "scratch")
_CROSS = ("x_wg", "x_key", "x_site", "x_wg2", "x_key2", "x_site2")


class Shadow:
    """Access records of one checked storage, one entry per element of `unit` bytes. Each record
    array is made (filled with NONE) on first use: a buffer only written never pays for the
    reader records, which for a large output are most of the cost of checking it."""

    __slots__ = ("unit", "scope", "cross", "size", *_RECORDS, *_CROSS, *ATOMIC_FIELDS)

    def __init__(self, n: int, unit: int, scope: str, cross: bool):
        self.unit = unit
        self.scope = scope
        self.cross = cross  # global storage of a kernel with several workgroups
        self.size = n
        for name in ATOMIC_FIELDS + (() if cross else _CROSS):
            setattr(self, name, None)

    def __getattr__(self, name: str):
        # only called for a record array not made yet
        if name not in _RECORDS and name not in _CROSS:
            raise AttributeError(name)
        array = np.full(self.size, NONE, np.int64)
        setattr(self, name, array)
        return array

    def made(self, name: str) -> bool:
        """Whether record array `name` exists (an array never made holds no access)."""
        try:
            return object.__getattribute__(self, name) is not None
        except AttributeError:
            return False

    def _made(self) -> list:
        """(name, array) of every record array made so far."""
        out = []
        for name in self.__slots__[4:]:
            try:
                array = object.__getattribute__(self, name)
            except AttributeError:
                continue
            if array is not None:
                out.append((name, array))
        return out

    def regrain(self, unit: int):
        """Finer entries (an alias with smaller elements appeared): repeat each entry."""
        k = self.unit // unit
        for name, array in self._made():
            setattr(self, name, np.repeat(array, k))
        self.size *= k
        self.unit = unit


def note_workgroups(sh, prefix: str, p, wg, keys, site: int) -> None:
    """Remember, for each element in `p`, the first two workgroups that accessed it this way
    (`prefix` "x_" for reads, "ax_" for atomics): each one's invocation key and source site,
    what a later conflicting access from a third workgroup is reported against."""
    first, second = getattr(sh, prefix + "wg"), getattr(sh, prefix + "wg2")
    many = isinstance(wg, np.ndarray)
    empty = first[p] == NONE
    if empty.any():
        q = p[empty]
        first[q] = wg[empty] if many else wg
        getattr(sh, prefix + "key")[q] = keys[empty]
        getattr(sh, prefix + "site")[q] = site
    other = (first[p] != wg) & (second[p] == NONE)
    if other.any():
        q = p[other]
        second[q] = wg[other] if many else wg
        getattr(sh, prefix + "key2")[q] = keys[other]
        getattr(sh, prefix + "site2")[q] = site


def at(wg, j: int) -> int:
    """The workgroup of access `j`: `wg` itself, or its j-th entry (one per access)."""
    return int(wg[j]) if isinstance(wg, np.ndarray) else wg
