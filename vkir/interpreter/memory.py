"""Memory of an interpreted kernel: byte storages, typed buffer views over them, element access,
and the pending writes of asynchronous groups.

Every allocation (and every buffer argument) is a `Storage` of raw bytes, so that explicit pointer
casts (a `DeclBuffer` over another buffer's data with another dtype or shape) are plain numpy views
over the same bytes. A "local" storage holds one row of bytes per invocation of the workgroup
(indexed by the invocation id `tid`); "shared" and "global" storages have a single row, because
workgroups run one after another, except where workgroups run together (merge.py): there a
"shared" storage has one row per workgroup of the frame (`per_workgroup`, indexed by each
invocation's workgroup row `wgrow`).

An allocation larger than the machine can hold (its physical memory, or the process's address
space limit when lower) is refused before numpy is asked for it, and one numpy cannot make is
reported the same way: an UnsupportedError naming the buffer, its size in bytes and its source
line, never a bare MemoryError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import UnsupportedError
from ..ir.buffer import Buffer
from .errors import InterpreterError, OutOfBoundsError


def host_memory_bytes() -> int | None:
    """The most bytes one allocation of this process can get: the machine's physical memory, or
    the address-space limit (RLIMIT_AS) when lower; None when neither is known."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass   # not a POSIX system that says
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except ImportError:
        pass
    return min(limits) if limits else None


@dataclass(frozen=True, slots=True)
class AllocationSite:
    """What an allocation is for, for its error message: the buffer and the statement's span."""

    buffer: Buffer
    span: object = None

    def describe(self, nbytes: int, rows: int, row_bytes: int) -> str:
        """"buffer NAME (scope, shape dtype): N bytes[ (R rows of B)]" for a message."""
        b = self.buffer
        shape = ", ".join(str(x) for x in b.shape)
        text = f"buffer {b.name} ({b.scope}, ({shape}) {b.dtype}): {nbytes} bytes"
        if rows != 1:
            text += f" ({rows} rows of {row_bytes}, one per " + \
                    ("invocation)" if b.scope == "local" else "workgroup)")
        return text

    def where(self) -> str:
        """" at FILE:LINE:COL" and the source line, or "" without a span."""
        if self.span is None:
            return ""
        out = f" at {self.span}"
        line = getattr(self.span, "source_line", "")
        return out + (f"\n    {line.strip()}" if line else "")


def zeroed(nbytes: int, rows: int, row_bytes: int, site: "AllocationSite | None") -> np.ndarray:
    """`nbytes` zero bytes; UnsupportedError (naming `site`'s buffer, the size and the source
    line) when that is more than the machine can hold, checked before allocating, or when numpy
    cannot allocate it."""
    limit = host_memory_bytes()
    what = site.describe(nbytes, rows, row_bytes) if site is not None else f"{nbytes} bytes"
    where = site.where() if site is not None else ""
    if limit is not None and nbytes > limit:
        raise UnsupportedError(f"the interpreter cannot allocate {what}: more than this "
                               f"machine's memory ({limit} bytes){where}")
    try:
        return np.zeros(nbytes, np.uint8)
    except (MemoryError, ValueError, OverflowError) as exc:   # over numpy's largest size
        raise UnsupportedError(f"the interpreter cannot allocate {what}: {exc}{where}") from None


class Storage:
    """Raw bytes behind a data var: `rows` rows of `row_bytes` bytes (one per invocation when
    `per_invocation`, else one). `scope` is the buffer scope ("global" for arguments), `shadow`
    the access records of the race checker (vkir.interpreter.races), made on first access."""

    __slots__ = ("data", "rows", "row_bytes", "per_invocation", "per_workgroup", "_views",
                 "scope", "shadow", "site")

    def __init__(self, data: np.ndarray, rows: int, row_bytes: int, per_invocation: bool,
                 scope: str = "global", per_workgroup: bool = False,
                 site: AllocationSite | None = None):
        assert data.dtype == np.uint8 and data.ndim == 1
        self.data = data
        self.rows = rows
        self.row_bytes = row_bytes
        self.per_invocation = per_invocation
        self.per_workgroup = per_workgroup   # one row per workgroup of a merged frame
        self._views = {}
        self.scope = scope
        self.shadow = None
        self.site = site   # the buffer allocated here and where (for messages), if known

    @staticmethod
    def allocate(nbytes: int, rows: int = 1, per_invocation: bool = False,
                 scope: str = "global", per_workgroup: bool = False,
                 site: AllocationSite | None = None) -> "Storage":
        """A zeroed storage of `rows` rows of `nbytes` bytes; UnsupportedError naming `site`
        when the machine cannot hold it (see `zeroed`)."""
        return Storage(zeroed(rows * nbytes, rows, nbytes, site), rows, nbytes, per_invocation,
                       scope, per_workgroup, site)

    def view(self, npdt: np.dtype) -> np.ndarray:
        """The bytes as a flat array of `npdt` (a trailing partial element is dropped)."""
        v = self._views.get(npdt)
        if v is None:
            n = len(self.data) // npdt.itemsize * npdt.itemsize
            v = self.data[:n].view(npdt)
            self._views[npdt] = v
        return v

    def replace(self, data: np.ndarray, rows: int):
        """Swap in new bytes (used when invocations fork and each takes a copy of its row)."""
        self.data = data
        self.rows = rows
        self._views = {}

    def fork_rows(self, parent_rows: np.ndarray, child_rows: np.ndarray):
        """Give invocation child_rows[c] a copy of row parent_rows[c]; return the old state."""
        old = (self.data, self.rows)
        n = int(child_rows.max()) + 1
        table = self.data.reshape(self.rows, self.row_bytes)
        new = zeroed(n * self.row_bytes, n, self.row_bytes, self.site).reshape(n, self.row_bytes)
        new[child_rows] = table[np.minimum(parent_rows, self.rows - 1)]
        self.replace(new.reshape(-1), n)
        return old


@dataclass(slots=True)
class BoundBuffer:
    """A Buffer with its sizes evaluated, over a Storage."""

    buffer: Buffer
    storage: Storage
    shape: tuple          # ints
    strides: tuple        # np.int64, in (vector) elements
    offset: np.int64      # elem_offset, in (vector) elements
    npdt: np.dtype        # numpy type of one lane
    lanes: int            # lanes of the element type (M)
    lane_offsets: np.ndarray = field(default=None)
    strides_int: tuple = ()
    offset_int: int = 0

    @property
    def name(self) -> str:
        """The buffer's name (for messages)."""
        return self.buffer.name


def compact_strides(shape) -> tuple:
    """Row-major strides of `shape`, in elements."""
    strides, acc = [], 1
    for ext in reversed(shape):
        strides.append(acc)
        acc *= ext
    return tuple(reversed(strides))


def extent_elements(shape, strides, offset) -> int:
    """Number of (vector) elements a buffer spans from element 0."""
    if any(s <= 0 for s in shape):
        return int(offset)
    return int(offset) + sum((s - 1) * st for s, st in zip(shape, strides)) + 1


def make_bound(buffer: Buffer, storage: Storage, shape, strides, offset) -> BoundBuffer:
    """A BoundBuffer of `buffer` over `storage` with evaluated shape, strides and offset."""
    dt = buffer.dtype
    npdt = dt.numpy_dtype()
    shape = tuple(int(s) for s in shape)
    strides = tuple(np.int64(s) for s in (strides or compact_strides(shape)))
    if len(strides) != len(shape):
        raise InterpreterError(f"buffer {buffer.name}: {len(strides)} strides for "
                               f"{len(shape)} dims")
    return BoundBuffer(buffer, storage, shape, strides, np.int64(offset), npdt, dt.lanes,
                       np.arange(dt.lanes, dtype=np.int64), tuple(int(s) for s in strides),
                       int(offset))


def positions(bb: BoundBuffer, idx: list, index_lanes: int, tid, wgrow=None) -> np.ndarray:
    """Flat lane positions (into storage.view(bb.npdt)) of an access with index values `idx`
    (`tid` the invocation rows, `wgrow` their workgroup rows where workgroups run together).

    The result has the access's lanes (index lanes x element lanes) on its last axis when it has
    more than one, and a leading invocation axis when any index varies across invocations.
    """
    if index_lanes == 1 and bb.lanes == 1 and (tid is None or not bb.storage.per_invocation) \
            and not bb.storage.per_workgroup:
        flat = _scalar_position(bb, idx)
        if flat is not None:
            return flat
    nd = len(idx)
    if nd != len(bb.shape):
        raise InterpreterError(f"buffer {bb.name} has {len(bb.shape)} dims, accessed with "
                               f"{nd} indices")
    e = bb.offset
    for d in range(nd):
        i = idx[d]
        ext = bb.shape[d]
        if np.ndim(i) == 0:
            if i < 0 or i >= ext:
                raise _out_of_bounds(bb, int(i), f"dim {d} of extent {ext}")
        elif i.size and (i.min() < 0 or i.max() >= ext):
            first = np.argwhere((i < 0) | (i >= ext))[0]
            # a leading invocation axis: 2-d (invocations x lanes), or 1-d for a scalar index
            per_invocation = i.ndim == 2 or (i.ndim == 1 and (index_lanes == 1 or d < nd - 1))
            raise _out_of_bounds(bb, int(i[tuple(first)]), f"dim {d} of extent {ext}",
                                 int(first[0]) if per_invocation else None)
        if getattr(i, "dtype", None) == np.uint64:
            i = i.astype(np.int64)
        if index_lanes > 1 and d < nd - 1:
            i = np.asarray(i)[..., None]
        e = e + i * bb.strides[d]
    lanes = bb.lanes
    if lanes > 1:
        e = np.asarray(e)[..., None] * lanes + bb.lane_offsets
        if index_lanes > 1:
            e = e.reshape(e.shape[:-2] + (index_lanes * lanes,))
    storage = bb.storage
    rows = tid if storage.per_invocation else wgrow if storage.per_workgroup else None
    if rows is not None:
        row = storage.row_bytes // bb.npdt.itemsize
        t = rows if index_lanes * lanes == 1 else rows[:, None]
        e = e + t * row
    return e


def local_positions(bb: BoundBuffer, idx: list, tid):
    """Fast path for per-invocation (local) storage: the flat positions of a one-lane access
    with uniform, in-bounds indices, one per invocation row (always inside the storage: every
    row exists); None where the general path must run."""
    storage = bb.storage
    if tid is None or not storage.per_invocation or bb.lanes != 1:
        return None
    try:
        flat = _scalar_position(bb, idx)
    except OutOfBoundsError:
        return None   # the general path reports it, naming the invocation
    if flat is None:
        return None
    row = storage.row_bytes // bb.npdt.itemsize
    if row == 1:
        return tid + flat if flat else tid
    return tid * row + flat


def _scalar_position(bb: BoundBuffer, idx: list):
    """Fast path: the flat position (a Python int) of a one-lane access with uniform indices,
    or None when some index varies across invocations."""
    if len(idx) != len(bb.shape):
        return None
    e = bb.offset_int
    for d, (i, ext, st) in enumerate(zip(idx, bb.shape, bb.strides_int)):
        if i.__class__ is np.ndarray:
            return None
        i = int(i)
        if not 0 <= i < ext:
            raise _out_of_bounds(bb, i, f"dim {d} of extent {ext}")
        e += i * st
    return e


def _out_of_bounds(bb: BoundBuffer, index: int, where: str, row: int | None = None):
    """The error for `index` outside `where`; `row` is the offending invocation's row in the
    frame (None when the index is uniform), from which the compiler names the invocation."""
    err = OutOfBoundsError(f"buffer {bb.name}: index {index} is out of bounds for {where}",
                           bb.name, index)
    err.row = row
    return err


def _check_flat(bb: BoundBuffer, view: np.ndarray, pos):
    lo, hi = (pos, pos) if np.ndim(pos) == 0 else (pos.min(), pos.max())
    if lo < 0 or hi >= len(view):
        bad = hi if hi >= len(view) else lo
        row = None
        if np.ndim(pos) > 0:
            first = np.argwhere(pos == bad)[0]
            row = int(first[0]) if pos.ndim > 1 else None
        raise _out_of_bounds(bb, int(bad), f"the {len(view)} elements of its data "
                             "(an element position)", row)


def load(bb: BoundBuffer, pos):
    """Read the element(s) at flat position(s) `pos` of a bound buffer."""
    view = bb.storage.view(bb.npdt)
    if type(pos) is int:
        if not 0 <= pos < len(view):
            _check_flat(bb, view, pos)
        return view[pos]
    if np.ndim(pos) == 0 or pos.size:
        _check_flat(bb, view, pos)
    return view[pos]


def store(bb: BoundBuffer, pos, value):
    """Write `value` at flat position(s) `pos` of a bound buffer."""
    view = bb.storage.view(bb.npdt)
    if type(pos) is int and np.ndim(value) == 0:
        if not 0 <= pos < len(view):
            _check_flat(bb, view, pos)
        view[pos] = value
        return
    if np.ndim(value) > np.ndim(pos):
        pos = np.broadcast_to(pos, np.shape(value))
    if np.ndim(pos) == 0 or pos.size:
        _check_flat(bb, view, pos)
    view[pos] = value


# ---------------------------------------------------------------------------------------------
# async groups


class AsyncGroup:
    """The writes of one committed group: buffered until a wait retires the group. With race
    checking, each write also keeps who issued it (`RaceChecker.async_keys`) and its site."""

    __slots__ = ("writes", "issued")

    def __init__(self):
        self.writes = []
        self.issued = []

    def record(self, bb: BoundBuffer, pos, value, issued=None):
        """Remember a store of the group (applied when the group retires)."""
        if np.ndim(value) > np.ndim(pos):
            pos = np.broadcast_to(pos, np.shape(value))
        view = bb.storage.view(bb.npdt)
        if np.ndim(pos) == 0 or pos.size:
            _check_flat(bb, view, pos)
        self.writes.append((bb.storage, bb.npdt, np.array(pos), np.array(value)))
        if issued is not None:
            self.issued.append(issued)

    def retire(self, races=None, site: int = -1):
        """Land the writes; `races` (a RaceChecker) checks them as retired at `site`."""
        if races is not None and self.issued:
            races.retire(self.issued, site)
        for storage, npdt, pos, value in self.writes:
            storage.view(npdt)[pos] = value
        self.writes = []
        self.issued = []
