"""The interpreter's closures that touch memory: bounds-checked buffer loads and stores (reported to
the race checker, recorded in the async group inside an async scope), buffer bindings, and the
storage of AllocBuffer and DeclBuffer."""

from __future__ import annotations

import numpy as np

from ..errors import describe_invocation
from ..ir.buffer import Buffer
from .errors import InterpreterError, OutOfBoundsError
from .frames import need_uniform
from .memory import (AllocationSite, Storage, extent_elements, load, local_positions, make_bound,
                     positions, store)
from .races import Site


def _scalar_access(fidx):
    """Closure `(frame, bound buffer) -> (index values, flat position or None)` computing, with
    Python ints, the position of a one-lane access whose 1 or 2 indices are uniform scalars and in
    bounds; otherwise the position is None and the general path (with its diagnostics) runs."""
    ndarray = np.ndarray
    if len(fidx) == 1:
        (f0,) = fidx

        def access1(fr, bb):
            i = f0(fr)
            if i.__class__ is ndarray or len(bb.shape) != 1 or (
                    fr.tid is not None and bb.storage.per_invocation) or \
                    bb.storage.per_workgroup:
                return [i], None
            k = int(i)
            if not 0 <= k < bb.shape[0]:
                return [i], None
            p = bb.offset_int + k * bb.strides_int[0]
            return [i], (p if 0 <= p < bb.storage.data.size // bb.npdt.itemsize else None)
        return access1
    f0, f1 = fidx

    def access2(fr, bb):
        i, j = f0(fr), f1(fr)
        if i.__class__ is ndarray or j.__class__ is ndarray or len(bb.shape) != 2 or (
                fr.tid is not None and bb.storage.per_invocation) or bb.storage.per_workgroup:
            return [i, j], None
        a, b = int(i), int(j)
        shape = bb.shape
        if not (0 <= a < shape[0] and 0 <= b < shape[1]):
            return [i, j], None
        st = bb.strides_int
        p = bb.offset_int + a * st[0] + b * st[1]
        return [i, j], (p if 0 <= p < bb.storage.data.size // bb.npdt.itemsize else None)
    return access2


def _truth(load):
    """`load` with the bool bytes it reads taken as numpy takes them, nonzero = True (an array
    element keeps its byte, 2 say, where a scalar is made True), as every device reads them."""
    def bool_load(fr):
        value = load(fr)
        if value.__class__ is np.ndarray:
            return value.view(np.uint8) != 0
        return value
    return bool_load


def _locate(err: OutOfBoundsError, fr, threads, span) -> OutOfBoundsError:
    """A copy of `err` naming the invocation that made the access (from the thread loop vars in
    `fr`, the offending row when the index varied across invocations) and the source span."""
    row = getattr(err, "row", None)
    invocation = {}
    for thread, slot in threads:
        value = fr.slots[slot]
        if isinstance(value, np.ndarray) and value.ndim:
            if row is None or row >= len(value):
                continue  # which invocation is not known: leave this id out
            value = value[row]
        invocation[thread] = int(value)
    message = str(err)
    if invocation:
        message += f", in invocation {describe_invocation(invocation)}"
    location = str(span) if span is not None else None
    if location is not None:
        message += f" at {location}"
        line = getattr(span, "source_line", "")
        if line:
            message += f"\n    {line.strip()}"
    return OutOfBoundsError(message, err.buffer, err.index, invocation, location)



class MemoryClosures:
    """Compiler methods for buffer accesses and declarations (mixed into Compiler)."""

    def site(self, kind: str, node) -> int:
        """Id of a new load/store site (for race reports)."""
        self.sites.append(Site(kind, node, self.stmt_span))
        return len(self.sites) - 1

    def e_BufferLoad(self, e):
        """A bounds-checked read (race-checked where invocations run in parallel)."""
        get = self.buffer_getter(e.buffer)
        fidx = [self.expr(i) for i in e.indices]
        lanes = e.indices[-1].dtype.lanes if e.indices else 1
        site = self.site("read", e)
        locate = self.locator(site)
        total = lanes * e.buffer.dtype.lanes

        if lanes == 1 and e.buffer.dtype.lanes == 1 and len(fidx) in (1, 2):
            fast = _scalar_access(fidx)

            def buffer_load(fr):  # fast path: scalar indices, uniform across invocations
                bb = get(fr)
                idx, p = fast(fr, bb)
                if p is not None:
                    value = bb.storage.view(bb.npdt)[p]
                elif (p := local_positions(bb, idx, fr.tid)) is not None:
                    value = bb.storage.view(bb.npdt)[p]
                else:
                    try:
                        p = positions(bb, idx, lanes, fr.tid, fr.wgrow)
                        value = load(bb, p)
                    except OutOfBoundsError as err:
                        raise locate(err, fr) from None
                races = fr.state.races
                if races is not None:
                    races.read(bb, p, fr, site, total)
                return value
        else:
            def buffer_load(fr):
                bb = get(fr)
                try:
                    p = positions(bb, [f(fr) for f in fidx], lanes, fr.tid, fr.wgrow)
                    value = load(bb, p)
                except OutOfBoundsError as err:
                    raise locate(err, fr) from None
                races = fr.state.races
                if races is not None:
                    races.read(bb, p, fr, site, total)
                return value
        if e.buffer.dtype.is_bool:
            return _truth(buffer_load)
        return buffer_load

    def buffer_getter(self, buffer: Buffer):
        """Closure giving the BoundBuffer of `buffer`; a buffer used without a declaration is bound
        lazily over its data var's storage (lenient, for IR that is not well formed)."""
        s = self.slot(buffer)
        if buffer in self.bound:
            return lambda fr: fr.slots[s]
        if buffer.data not in self.bound:
            raise InterpreterError(f"buffer {buffer.name} is used outside its scope")
        binder = self.binder(buffer)
        ds = self.slot(buffer.data)

        def lazy(fr):
            bb = fr.slots[s]
            if bb is None:
                bb = binder(fr, fr.slots[ds])
            return bb
        return lazy

    def binder(self, buffer: Buffer):
        """Closure `(frame, storage) -> BoundBuffer` evaluating the buffer's sizes."""
        fshape = [self.expr(x) for x in buffer.shape]
        fstrides = [self.expr(x) for x in buffer.strides]
        foffset = self.expr(buffer.elem_offset)

        def bind(fr, storage):
            if not isinstance(storage, Storage):
                raise InterpreterError(f"buffer {buffer.name}: its data {buffer.data.name} is "
                                       "unbound")
            shape = [int(need_uniform(f(fr), f"shape of buffer {buffer.name}")) for f in fshape]
            strides = [int(need_uniform(f(fr), f"stride of buffer {buffer.name}"))
                       for f in fstrides]
            offset = int(need_uniform(foffset(fr), f"elem_offset of buffer {buffer.name}"))
            return make_bound(buffer, storage, shape, strides, offset)
        return bind

    def s_BufferStore(self, s):
        """A bounds-checked write (recorded in the async group inside an async scope)."""
        get = self.buffer_getter(s.buffer)
        fidx = [self.expr(i) for i in s.indices]
        fv = self.expr(s.value)
        lanes = s.indices[-1].dtype.lanes if s.indices else 1
        is_async = self.in_async
        site = self.site("write", s)
        locate = self.locator(site)
        total = lanes * s.buffer.dtype.lanes
        self.written.add(s.buffer.data)

        fast = _scalar_access(fidx) if lanes == 1 and s.buffer.dtype.lanes == 1 \
            and len(fidx) in (1, 2) and not is_async else None

        def buffer_store(fr):
            bb = get(fr)
            value = fv(fr)
            races = fr.state.races
            if fast is not None:  # fast path: scalar indices and value, uniform
                idx, p = fast(fr, bb)
                if p is not None and value.__class__ is not np.ndarray:
                    bb.storage.view(bb.npdt)[p] = value
                    if races is not None:
                        races.write(bb, p, fr, site, total)
                    return
                if p is None and (p := local_positions(bb, idx, fr.tid)) is not None:
                    bb.storage.view(bb.npdt)[p] = value   # one row each: no race to check
                    return
            else:
                idx = [f(fr) for f in fidx]
            try:
                pos = positions(bb, idx, lanes, fr.tid, fr.wgrow)
                group = fr.state.group if is_async else None
                if group is None:
                    store(bb, pos, value)
                elif races is None:
                    group.record(bb, pos, value)
                    return
            except OutOfBoundsError as err:
                raise locate(err, fr) from None
            if group is None:
                if races is not None:
                    if np.ndim(value) > np.ndim(pos):  # one element, a value per invocation
                        pos = np.broadcast_to(pos, np.shape(value))
                    races.write(bb, pos, fr, site, total)
            else:
                if np.ndim(value) > np.ndim(pos):
                    pos = np.broadcast_to(pos, np.shape(value))
                try:
                    group.record(bb, pos, value, (bb, races.async_keys(bb, pos, fr, total), site))
                except OutOfBoundsError as err:
                    raise locate(err, fr) from None
        return buffer_store

    def locator(self, site: int):
        """`(error, frame) -> error`: the OutOfBoundsError of access `site` completed by the
        invocation (the ids of the enclosing thread loops) and the access's source location."""
        threads = self.threads
        span = self.sites[site].span
        return lambda err, fr: _locate(err, fr, threads, span)

    def s_AllocBuffer(self, s):
        """Allocate zeroed storage (one row per invocation for local buffers) for the body."""
        buffer = s.buffer
        binder = self.binder(buffer)
        dslot, bslot = self.bind(buffer.data), self.bind(buffer)
        body = self.stmt(s.body)
        self.bound.discard(buffer.data)
        self.bound.discard(buffer)
        per_invocation = buffer.scope == "local"
        itemsize = buffer.dtype.bytes
        site = AllocationSite(buffer, s.span)   # a too large one is an error naming both

        def alloc(fr):
            probe = binder(fr, Storage.allocate(0))
            count = extent_elements(probe.shape, [int(x) for x in probe.strides], probe.offset)
            rows = int(fr.tid.max()) + 1 if per_invocation and fr.tid is not None else 1
            per_workgroup = buffer.scope == "shared" and fr.wgrow is not None
            if per_workgroup:
                rows = int(fr.wgrow.max()) + 1 if len(fr.wgrow) else 1
            storage = Storage.allocate(count * itemsize, rows, per_invocation, buffer.scope,
                                       per_workgroup, site)
            probe.storage = storage
            fr.slots[dslot] = storage
            fr.slots[bslot] = probe
            if per_invocation:
                fr.state.local_storages.append(storage)
                body(fr)
                fr.state.local_storages.remove(storage)
            else:
                body(fr)
        return alloc

    def s_DeclBuffer(self, s):
        """A new typed view (an explicit pointer cast) of an existing storage for the body."""
        buffer = s.buffer
        if buffer.data not in self.bound:
            raise InterpreterError(f"DeclBuffer {buffer.name}: data {buffer.data.name} is not in "
                                   "scope")
        binder = self.binder(buffer)
        dslot = self.slot(buffer.data)
        bslot = self.bind(buffer)
        body = self.stmt(s.body)
        self.bound.discard(buffer)

        def decl(fr):
            fr.slots[bslot] = binder(fr, fr.slots[dslot])
            body(fr)
        return decl
