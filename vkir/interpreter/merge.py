"""Workgroups interpreted together: where a kernel has no subgroup operation, no async copy and
no global allocation, the innermost blockIdx loop runs its iterations as rows of one frame (in
chunks of at most CHUNK_INVOCATIONS invocations) instead of one after another. The numpy work then
spans many workgroups per statement, which is what makes grids of many small workgroups fast to
interpret.

Without barriers nothing distinguishes the workgroups of a chunk: every two accesses of distinct
invocations are unordered whether or not they share a workgroup, so the chunk is checked as one
workgroup whose invocations carry the workgroup's offset in a key field no threadIdx loop uses
(`free_axis`). With barriers (a kernel with a single blockIdx loop, its shared memory allocated
inside it) every workgroup of the chunk reaches each barrier together, or the barrier check fails;
shared storage then has one row per workgroup (`Frame.wgrow`), and the race checker gives every
access the workgroup its key's free field names (`RaceChecker.enter_merged`), so that accesses of
different workgroups are never ordered by a barrier.

Errors are reported as the one-workgroup-at-a-time execution reports them: the interpreter runs
the kernel again that way (on the arguments as they were) when the merged run raises.
"""

from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.op import is_subgroup
from ..ir.traversal import walk

CHUNK_INVOCATIONS = 1 << 16   # invocations of the workgroups one merged step runs at most
KEY_BITS = 19                 # bits of one axis in a race-checker key (races._BITS)
KEY_LIMIT = 1 << KEY_BITS     # workgroups one chunk may number in the free key field
KEY_MASK = KEY_LIMIT - 1


def merge_plan(func) -> tuple | None:
    """(free key axis, invocations per workgroup, whether it has barriers) when `func`'s
    workgroups may run together, else None: the body has a blockIdx loop, and no global
    allocation, subgroup operation or async statement; barriers and shared allocations only
    with a single blockIdx loop, the shared allocations inside it; a threadIdx axis is left free
    for the workgroup offset in race-checker keys; every threadIdx extent is a constant."""
    blocks, extents = [], {}
    synced = False
    for n in walk(func.body):
        if isinstance(n, (S.SubgroupBarrier, S.AsyncScope, S.AsyncCommitQueue,
                          S.AsyncWaitQueue)):
            return None
        if isinstance(n, S.Barrier) or (isinstance(n, S.AllocBuffer) and
                                        n.buffer.scope == "shared"):
            synced = True
        elif isinstance(n, S.AllocBuffer) and n.buffer.scope != "local":
            return None
        if isinstance(n, E.Call) and is_subgroup(n.op):
            return None
        if isinstance(n, S.For) and n.kind == "thread_binding":
            if n.thread.startswith("blockIdx"):
                blocks.append(n)
            elif n.thread.startswith("threadIdx"):
                if not isinstance(n.extent, E.IntImm):
                    return None
                axis = n.thread[-1]
                extents[axis] = max(extents.get(axis, 1), n.extent.value)
    if not blocks:
        return None
    if synced:
        if len(blocks) != 1:
            return None
        inside = {id(n) for n in walk(blocks[0].body)}
        if any(isinstance(n, S.AllocBuffer) and n.buffer.scope == "shared" and id(n) not in inside
               for n in walk(func.body)):
            return None
    free = [a for a in "zyx" if extents.get(a, 1) == 1 and a not in extents]
    if not free:
        return None
    invocations = 1
    for value in extents.values():
        invocations *= max(value, 1)
    return free[0], invocations, synced


def merged_block_loop(fmin, fext, slot, body, npdt, axis: str, plan: tuple, inner_extents: list,
                      sequential, frame_type):
    """A blockIdx loop whose workgroups run as rows of frames (see the module docstring): at the
    top, chunk by chunk, with the blockIdx loops inside it (`inner_extents`, their extent
    closures) forking each row further; inside such a frame, a fork of every row. `sequential`
    runs it one workgroup after another where it cannot merge (a non-uniform extent, or more
    workgroups inside each of its iterations than one chunk holds)."""
    free, invocations, synced = plan
    shift = "xyz".index(free) * KEY_BITS

    def top(fr, lo: int, n: int):
        if inner_extents is None:   # inner extents known only inside: they merge themselves
            return sequential(fr)
        inner = 1
        for f in inner_extents:
            value = f(fr)
            if np.ndim(value):
                return sequential(fr)
            inner *= max(int(value), 1)
        per_chunk = min(CHUNK_INVOCATIONS // max(invocations * inner, 1), KEY_LIMIT // inner)
        if per_chunk < 1:
            return sequential(fr)   # each iteration alone is a chunk: the inner loops merge
        state = fr.state
        races = state.races
        for chunk, start in enumerate(range(0, max(n, 0), per_chunk)):
            count = min(per_chunk, n - start)
            rows = np.arange(count)
            child = frame_type(list(fr.slots), rows, state, count)
            child.slots[slot] = (rows + (lo + start)).astype(npdt)
            if synced:
                child.wgrow = rows
            forked = [(st, st.fork_rows(np.zeros(count, np.intp), rows))
                      for st in state.local_storages]
            if races is not None:
                saved = races.enter_chunk(chunk)
                if synced:
                    races.enter_merged(axis, lo + start, shift)
                child.key = races.child_keys(fr.key, rows, free)
            body(child)
            if races is not None:
                races.leave_block(saved)
            for st, (data, old_rows) in forked:
                st.replace(data, old_rows)

    def fork(fr, lo: int, n: int):
        k = len(fr.tid)
        if n <= 0:
            return
        owner = np.repeat(np.arange(k), n)
        within = np.tile(np.arange(n), k)
        parent_rows = fr.tid[owner]
        child = fr.take(owner)
        child.tid = parent_rows * n + within
        child.group_size = fr.group_size * n
        child.slots[slot] = (within + lo).astype(npdt)
        state = fr.state
        if state.races is not None:
            keys = np.asarray(fr.key, np.int64)[owner]
            index = ((keys >> shift) & KEY_MASK) * n + within
            child.key = (keys & ~np.int64(KEY_MASK << shift)) | (index.astype(np.int64) << shift)
        forked = [(st, st.fork_rows(parent_rows, child.tid)) for st in state.local_storages]
        body(child)
        for st, (data, old_rows) in forked:
            st.replace(data, old_rows)

    def block_loop(fr):
        lo, ext = fmin(fr), fext(fr)
        if np.ndim(lo) or np.ndim(ext):
            return sequential(fr)
        if fr.tid is None:
            return top(fr, int(lo), int(ext))
        if synced:   # shared rows and barrier tokens are per chunk of top-level workgroups
            return sequential(fr)
        return fork(fr, int(lo), int(ext))
    return block_loop
