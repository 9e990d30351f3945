"""The interpreter's closures of loops: serial and while loops (handed to C once they run long,
native_loops.py), threadIdx loops that fork the invocations of a workgroup, and blockIdx loops
that run workgroups one after another or together (merge.py)."""

from __future__ import annotations

import numpy as np

from ..analysis.loop_ranges import range_error
from ..errors import ArgumentError
from ..ir import expr as E
from ..ir.traversal import walk
from . import numeric as N
from .errors import InterpreterError
from .frames import Frame, is_uniform, need_uniform
from .merge import merged_block_loop
from .native_loops import CHUNK, NativeLoop


_AXIS = {"x": 0, "y": 1, "z": 2}


def _check_range(loop, npdt):
    """`check(lo, ext)`: ArgumentError where a start of serial `loop` with these bounds (one
    value, or one per invocation) ends past its variable's type: lo + ext > its maximum
    (vkir.analysis.loop_ranges)."""
    high = int(np.iinfo(npdt).max)

    def check(lo, ext):
        if is_uniform(lo) and is_uniform(ext):
            if int(ext) > 0 and int(lo) + int(ext) > high:
                raise ArgumentError(range_error(loop, int(lo), int(ext)))
            return
        k = max(np.size(lo), np.size(ext))
        lo, ext = np.broadcast_to(lo, (k,)), np.broadcast_to(ext, (k,))
        # high - lo, exact in uint64 for every lo of the type
        room = np.uint64(high) - lo.astype(np.int64).astype(np.uint64)
        bad = (ext > 0) & (ext.astype(np.uint64) > room)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ArgumentError(range_error(loop, int(lo[i]), int(ext[i])))
    return check



class LoopClosures:
    """Compiler methods for loops (mixed into Compiler)."""

    def s_For(self, s):
        """A loop: serial ones iterate, thread-binding ones fork the invocations or workgroups."""
        first_site = len(self.sites)
        fmin, fext = self.expr(s.min), self.expr(s.extent)
        slot = self.bind(s.loop_var)
        outer = self.threads
        if s.kind == "thread_binding" and isinstance(s.thread, str):
            self.threads = outer + ((s.thread, slot),)
        block = s.kind == "thread_binding" and s.thread.startswith("blockIdx")
        outer_blocks = self.block_extents
        known = frozenset(self.bound) - {s.loop_var}   # what an inner extent may name here
        if block:
            self.block_extents = []   # the extents of the blockIdx loops inside this one
        try:
            body = self.stmt(s.body)
        finally:
            self.threads = outer
            inner_blocks, self.block_extents = self.block_extents, outer_blocks
        if block:
            # every blockIdx loop inside counts for the loops around this one too
            self.block_extents += [(fext, s.extent)] + inner_blocks
            # the inner extents this loop can evaluate before running its body (None: some
            # names a variable bound inside it)
            inner_blocks = [f for f, e in inner_blocks] if all(
                v in known for _, e in inner_blocks for v in walk(e)
                if isinstance(v, E.Var)) else None
        self.bound.discard(s.loop_var)
        npdt = N.np_dtype(s.loop_var.dtype)
        if s.kind == "thread_binding":
            self.thread_loops.append((s.thread, s.extent, s.loop_var.name))
            if s.thread.startswith("threadIdx"):
                return self._thread_loop(fmin, fext, slot, body, npdt, s.thread[-1])
            if s.thread.startswith("blockIdx"):
                sequential = self._block_loop(fmin, fext, slot, body, npdt, s.thread[-1])
                if self.merge is not None:
                    return merged_block_loop(fmin, fext, slot, body, npdt, s.thread[-1],
                                             self.merge, inner_blocks, sequential, Frame)
                return sequential
        return self._serial_loop(fmin, fext, slot, body, npdt, self.native_loop(s, first_site),
                                 _check_range(s, npdt))

    def native_loop(self, loop, first_site: int):
        """The NativeLoop of a serial or while loop whose accesses are the sites from
        `first_site` on, where loops may go to C (None if not)."""
        if self.native == "never" or self.flush or self.in_async:
            return None
        return NativeLoop(loop, self.slot_index, self.written, self.native,
                          self.sites, first_site)

    @staticmethod
    def _block_loop(fmin, fext, slot, body, npdt, axis):
        """A blockIdx loop: a serial loop whose iterations are workgroups (for the race
        checker)."""
        serial = LoopClosures._serial_loop(fmin, fext, slot, body, npdt)

        def block_loop(fr):
            races = fr.state.races
            lo, ext = fmin(fr), fext(fr)
            if races is None or not (is_uniform(lo) and is_uniform(ext)):
                return serial(fr)
            slots = fr.slots
            for i, v in enumerate(np.arange(int(lo), int(lo) + int(ext),
                                            dtype=np.int64).astype(npdt)):
                saved = races.enter_block(axis, i)
                slots[slot] = v
                body(fr)
                races.leave_block(saved)
        return block_loop

    @staticmethod
    def _serial_loop(fmin, fext, slot, body, npdt, native=None, check=None):
        """A serial loop; `native` (a NativeLoop, or None) takes over the iterations left once
        the loop runs long (native_loops.py); `check(lo, ext)` refuses a range its variable's
        type cannot hold (_check_range)."""
        def serial(fr):
            lo, ext = fmin(fr), fext(fr)
            if check is not None:
                check(lo, ext)
            if is_uniform(lo) and is_uniform(ext):
                slots = fr.slots
                make = npdt.type
                v, stop = int(lo), int(lo) + int(ext)
                if native is None:
                    for v in range(v, stop):   # lazily: 2**31 - 1 iterations
                        slots[slot] = make(v)  # must not build the whole range
                        body(fr)
                    return
                look = True   # until C declines this entry
                weight = native.weight(fr)
                while v < stop:
                    if look and native.wants((stop - v) * weight):
                        if native.run(fr, v, stop - v):
                            return
                        look = False
                    end = min(stop, v + CHUNK)
                    for w in range(v, end):
                        slots[slot] = make(w)
                        body(fr)
                    native.count += (end - v) * weight
                    v = end
                return
            k = len(fr.tid)
            lo = np.broadcast_to(lo, (k,))
            ext = np.broadcast_to(ext, (k,))
            count = int(ext.max(initial=0))
            look = native is not None
            weight = native.weight(fr) if look else 0
            for it in range(count):
                if look and it % CHUNK == 0 and native.wants((count - it) * weight):
                    # the values from iteration `it` on and the counts left (their bits:
                    # uint64 ones past 2**63 included)
                    if native.run(fr, lo.astype(np.int64) + it,
                                  np.where(ext > it, ext - npdt.type(it), 0)):
                        return
                    look = False
                active = it < ext
                sub = fr if active.all() else fr.subset(active)
                sub.slots[slot] = (lo[active] + it).astype(npdt)
                body(sub)
                if native is not None:
                    native.count += weight
        return serial

    @staticmethod
    def _thread_loop(fmin, fext, slot, body, npdt, axis):
        def thread_loop(fr):
            lo, ext = fmin(fr), fext(fr)
            state = fr.state
            if fr.tid is None:
                n = int(need_uniform(ext, "thread extent"))
                if n <= 0:
                    return
                child = Frame(list(fr.slots), np.arange(n), state, n)
                child.slots[slot] = (np.arange(n, dtype=np.int64) + int(lo)).astype(npdt)
                parent_rows = np.zeros(n, np.intp)
                within = np.arange(n)
                coords = np.zeros((n, 3), np.int64) if fr.coords is None else \
                    np.repeat(fr.coords, n, axis=0)
                if state.races is not None:
                    child.key = state.races.child_keys(fr.key, np.arange(n), axis)
            else:
                k = len(fr.tid)
                counts = np.maximum(np.broadcast_to(ext, (k,)), 0).astype(np.intp)
                total = int(counts.sum())
                if total == 0:
                    return
                owner = np.repeat(np.arange(k), counts)
                within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
                parent_rows = fr.tid[owner]
                child = fr.take(owner)
                child.tid = parent_rows * int(counts.max()) + within
                child.group_size = fr.group_size * int(counts.max())
                coords = np.zeros((total, 3), np.int64) if child.coords is None else \
                    child.coords.copy()
                lo_c = lo if is_uniform(lo) else lo[owner]
                child.slots[slot] = (within + lo_c).astype(npdt)
                if state.races is not None:
                    child.key = state.races.child_keys(fr.key[owner], within, axis)
            coords[:, _AXIS[axis]] = within
            child.coords = coords
            state.extents[axis] = max(state.extents[axis], int(within.max()) + 1)
            saved = [(st, st.fork_rows(parent_rows, child.tid)) for st in state.local_storages]
            body(child)
            for st, (data, rows) in saved:
                st.replace(data, rows)
        return thread_loop

    def s_While(self, s):
        """A while loop: the invocations whose condition holds run the body, again and again;
        those whose condition fails leave the loop for good (divergent ones are split off)."""
        first_site = len(self.sites)
        fc = self.expr(s.condition)
        fb = self.stmt(s.body)
        native = self.native_loop(s, first_site)

        def while_loop(fr):
            active = fr
            n = 0
            look = native is not None   # until C declines this entry
            weight = native.weight(fr) if look else 0
            while True:
                if look:
                    if n % CHUNK == 0 and native.wants(None):
                        if native.run(active):
                            return
                        look = False
                    native.count += weight
                    n += 1
                c = fc(active)
                if is_uniform(c):
                    if not c:
                        return
                elif c.ndim > 1:
                    raise InterpreterError("while condition must be a scalar bool")
                elif not c.all():
                    if not c.any():
                        return
                    active = active.subset(c)
                fb(active)
        return while_loop
