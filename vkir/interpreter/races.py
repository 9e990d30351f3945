"""Data-race detection for the interpreter: the oracle must fail where a GPU could give wrong
results, although the lockstep execution itself always gives the race-free answer.

The rule (one dispatch = one `interpret` call): two accesses to the same element of a buffer by
different invocations, at least one a write, race unless a `T.barrier()` that both passed orders
them. Barriers order only the invocations of one workgroup; nothing orders different workgroups.
"shared" storage exists once per workgroup (accesses of different workgroups never meet there),
"global" storage once per dispatch, "local" storage once per invocation (never checked).

Invocations are identified as on the GPU, by the values of their thread indices: `key` packs the
threadIdx.x/y/z offsets (`BITS` bits each), so two sibling threadIdx loops run by the same
invocations, and a workgroup is the packed blockIdx values. Code outside a threadIdx (blockIdx)
loop of the kernel runs on the GPU in every invocation (workgroup) redundantly: its rows are
*multi* keys (`MULTI` set, plus one bit per unbound axis), standing for several invocations.

Ordering is tracked with epochs: every workgroup has a current token, a number that changes at
each barrier it passes (tokens are unique across workgroups). Each element of a checked storage
keeps its last write (token, site, writer key, writer workgroup) and its readers in the current
token (the first reader's key and site, and one reader that differs from it); global storage in
kernels with several workgroups also keeps two readers from distinct workgroups. Two accesses of
one workgroup are ordered exactly when their tokens differ. All of it is numpy gathers and
scatters per access, no per-element Python loops. Only storage that some store of the kernel
writes (by data var) is tracked: reads of read-only inputs cannot race. An element is a unit of
the smallest element size the storage is accessed with (pointer casts).

Same-value writes (e.g. every invocation storing the same constant) are races in the formal model
and are reported like any other: the test suite's kernels never rely on them, and the usual
idioms (`if tx == 0:` guards) avoid them.

Async copies: a write in an `AsyncScope` happens when the `AsyncWaitQueue` that retires its group
runs (or at the end of the kernel). The async queues synchronise the workgroup (LowerAsync lowers
each wait to a workgroup barrier where data crosses invocations, and before an overwrite of data
others read): a retired write is ordered with every access of its own workgroup, before the wait
and after it. It still races with accesses of other workgroups, and with other async writes of the
same element by another invocation retired at the same wait. So the output of
InjectSoftwarePipeline checks clean where LowerAsync can synchronise it, and LowerAsync's output,
where writes are synchronous and barriers explicit, is checked by the plain rule: a barrier it
failed to place is reported there. (A read between a commit and the wait retiring it sees the old
value here, by the model; a real asynchronous copy could land earlier. vkir has no such backend.)

The keys and record arrays are in race_records.py, the messages in race_messages.py.
"""

from __future__ import annotations

import numpy as np

from .race_messages import RaceMessages, Site
from .race_records import (ALL, ANY_UNBOUND, ATOMIC_FIELDS, BITS, COLLECTIVE, MASK, MULTI, NONE, Shadow,
                           UNBOUND, at, note_workgroups, shift)

__all__ = ["RaceChecker", "Site"]


class RaceChecker(RaceMessages):
    """Race detection state of one interpretation (see the module docstring)."""

    def __init__(self, sites: list, names: dict, thread_extents: dict, block_extents: dict,
                 written: set):
        self.sites = sites
        self.written = written                 # data vars some store writes: only those race
        self.names = names                     # "threadIdx.x" -> loop var name
        # an axis counts as several invocations when its extent is not known to be 1
        self.thread_multi = {t[-1]: e != 1 for t, e in thread_extents.items()}
        self.block_multi = {t[-1]: e != 1 for t, e in block_extents.items()}
        self.multi_wg = any(self.block_multi.values())
        self.tokens = {}
        self.next_token = 0
        self.blocks = {}                       # bound blockIdx axis -> value
        self.wg = self._wg_key()
        self.token = self._token_of(self.wg)
        # workgroups run together with barriers (merge.py): (blockIdx axis, its first value, the
        # bit offset of the key field holding each row's workgroup offset), else None
        self.merged = None

    # -- invocations and epochs ------------------------------------------------------------------

    def _wg_key(self):
        if any(m and a not in self.blocks for a, m in self.block_multi.items()):
            return ALL
        key = 0
        for axis, value in self.blocks.items():
            key |= int(value) << shift(axis)
        return key

    def _token_of(self, wg) -> int:
        t = self.tokens.get(wg)
        if t is None:
            t = self.tokens[wg] = self._new_token()
        return t

    def _new_token(self) -> int:
        self.next_token += 1
        return self.next_token

    def enter_block(self, axis: str, value):
        """A blockIdx loop iteration starts: returns what `leave_block` restores."""
        saved = (self.wg, self.token, dict(self.blocks))
        self.blocks[axis] = value
        self.wg = self._wg_key()
        self.token = self._token_of(self.wg)
        return saved

    def enter_chunk(self, chunk: int):
        """Workgroups run together (interpreter/merge.py) start: the chunk is checked as one
        workgroup, every blockIdx axis not bound outside it set to the chunk's number; returns
        what `leave_block` restores."""
        saved = (self.wg, self.token, dict(self.blocks))
        for axis in self.block_multi:
            self.blocks.setdefault(axis, chunk)
        self.wg = self._wg_key()
        self.token = self._token_of(self.wg)
        return saved

    def enter_merged(self, axis: str, first: int, free_shift: int):
        """Inside the chunk just entered, the workgroups of blockIdx `axis` from `first` run
        together and pass barriers together: one token orders each workgroup's own accesses,
        and each access belongs to the workgroup named by its key's field at `free_shift`
        (`leave_block` ends this)."""
        self.merged = (axis, int(first), free_shift)

    def _wg_of(self, keys):
        """The workgroup of the accesses of `keys`: the current one, or where workgroups run
        together, one per key (ALL for a row that stands for several workgroups)."""
        if self.merged is None:
            return self.wg
        axis, first, free_shift = self.merged
        base = 0
        for a, value in self.blocks.items():
            if a != axis:
                base |= int(value) << shift(a)
        offset = (keys >> free_shift) & MASK
        wg = base | ((first + offset) << shift(axis))
        several = (keys & UNBOUND["xyz"[free_shift // BITS]]) != 0
        return np.where(several, ALL, wg)

    def leave_block(self, saved):
        """Restore the state saved when a workgroup's block was entered."""
        self.tokens[self.wg] = self.token
        self.wg, self.token, self.blocks = saved
        self.merged = None

    def barrier(self):
        """A barrier of the current workgroup: later accesses are ordered after earlier ones."""
        self.token = self.tokens[self.wg] = self._new_token()

    def top_key(self) -> int:
        """Key of code outside every threadIdx loop."""
        key = 0
        for axis, multi in self.thread_multi.items():
            if multi:
                key |= MULTI | UNBOUND[axis]
        return key

    def child_keys(self, parent, within: np.ndarray, axis: str):
        """Keys of the invocations a threadIdx loop forks: the parent key of each child (an int
        or an array), with `within`, the offset along `axis`, filled in."""
        keys = (np.asarray(parent, np.int64) & ~np.int64(UNBOUND[axis])) \
            | (within.astype(np.int64) << shift(axis))
        keys = np.broadcast_to(keys, within.shape).copy()
        if keys.size and not int(keys[0]) & ANY_UNBOUND:
            keys &= ~np.int64(MULTI)
        return keys

    # -- shadows ---------------------------------------------------------------------------------

    def _shadow(self, bb):
        storage = bb.storage
        if storage.per_invocation or bb.buffer.data not in self.written:
            return None, 1
        item = bb.npdt.itemsize
        sh = storage.shadow
        if sh is None:
            scope = storage.scope
            sh = storage.shadow = Shadow(len(storage.data) // item, item, scope,
                                         scope != "shared" and self.multi_wg)
        elif item < sh.unit:
            sh.regrain(item)
        return sh, item // sh.unit

    def _keys(self, fr, pos, lanes: int):
        """(flat element positions of an access, the key of the invocation of each, whether some
        key stands for several invocations)."""
        p = pos if pos.__class__ is np.ndarray and pos.dtype == np.int64 else \
            np.asarray(pos, np.int64)
        if fr.tid is None:
            key = fr.key
            return p.reshape(-1), np.full(p.size, key, np.int64), key >= MULTI
        k = len(fr.tid)
        if p.ndim == (2 if lanes > 1 else 1):  # a position (or lane positions) per invocation
            keys = fr.key if p.ndim == 1 else np.repeat(fr.key, p.shape[1])
            return p.reshape(-1), keys, k > 0 and int(fr.key[0]) >= MULTI
        if k == 1:
            key = int(fr.key[0])
            return p.reshape(-1), np.full(p.size, key, np.int64), key >= MULTI
        # the same elements for every active invocation: several invocations access them
        first = int(fr.key[0])
        diff = int(np.bitwise_or.reduce(fr.key ^ first))
        key = first | MULTI
        for axis in "xyz":
            field = MASK << shift(axis)
            if diff & field:
                key = (key & ~field) | UNBOUND[axis]
        return p.reshape(-1), np.full(p.size, key, np.int64), True

    @staticmethod
    def _units(p, keys, ratio):
        if ratio == 1:
            return p, keys
        p = (p[:, None] * ratio + np.arange(ratio)).reshape(-1)
        return p, np.repeat(keys, ratio)

    # -- accesses --------------------------------------------------------------------------------

    def _accessed(self, bb, pos, fr, lanes: int):
        """(shadow, ratio, shadow positions, invocation keys, multi) of one access, or None
        when the buffer is not tracked or nothing is accessed."""
        sh, ratio = self._shadow(bb)
        if sh is None:
            return None
        p, keys, multi = self._keys(fr, pos, lanes)
        p, keys = self._units(p, keys, ratio)
        if not p.size:
            return None
        return sh, ratio, p, keys, multi

    def read(self, bb, pos, fr, site: int, lanes: int):
        """Record a read at `pos`; raise DataRaceError if an unordered write by another invocation
        touched it."""
        accessed = self._accessed(bb, pos, fr, lanes)
        if accessed is None:
            return
        sh, ratio, p, keys, multi = accessed
        t = self.token
        wg = self._wg_of(keys)
        if sh.a_tok is not None:
            self._check_atomics(bb, sh, ratio, p, keys, multi, ("read", wg, site))
        same = sh.w_tok[p] == t
        if same.any():
            wk = sh.w_key[p]
            bad = same & (wk != COLLECTIVE)
            if not multi:
                bad &= wk != keys
            if bad.any():
                j = int(np.argmax(bad))
                self._report(bb, sh, p[j], ratio, self._last_write(sh, p[j]),
                             ("read", int(keys[j]), at(wg, j), site))
        if sh.cross:
            ww = sh.w_wg[p]
            bad = (ww != NONE) & ((ww != wg) | (wg == ALL))
            if bad.any():
                j = int(np.argmax(bad))
                self._report(bb, sh, p[j], ratio, self._last_write(sh, p[j]),
                             ("read", int(keys[j]), at(wg, j), site))
        # record the readers of this epoch: the first, and one that differs from it
        fresh = sh.r_tok[p] != t
        if fresh.all():
            sh.r_tok[p] = t
            sh.r_site[p] = site
            sh.r_key[p] = keys
            sh.r_key2[p] = NONE
        elif fresh.any():
            q = p[fresh]
            sh.r_tok[q] = t
            sh.r_site[q] = site
            sh.r_key[q] = keys[fresh]
            sh.r_key2[q] = NONE
        other = sh.r_key[p] != keys
        if multi:
            other[:] = True
        if other.any():
            q = p[other]
            sh.r_key2[q] = keys[other]
            sh.r_site2[q] = site
        if sh.cross:
            note_workgroups(sh, "x_", p, wg, keys, site)

    @staticmethod
    def _last_write(sh, q):
        return ("write", int(sh.w_key[q]), int(sh.w_wg[q]), int(sh.w_site[q]))

    def write(self, bb, pos, fr, site: int, lanes: int):
        """Record a write at `pos`; raise DataRaceError if an unordered access by another
        invocation touched it."""
        accessed = self._accessed(bb, pos, fr, lanes)
        if accessed is None:
            return
        sh, ratio, p, keys, multi = accessed
        wg = self._wg_of(keys)
        if sh.a_tok is not None:
            self._check_atomics(bb, sh, ratio, p, keys, multi, ("write", wg, site))
        self._check_write(bb, sh, ratio, p, keys, wg, site)
        self._record_write(sh, p, keys, wg, self.token, site)

    # -- atomics ---------------------------------------------------------------------------------

    def atomic(self, bb, pos, fr, site: int, lanes: int):
        """An atomic update: it races with plain reads and writes of the element by other
        invocations in the same epoch (or by other workgroups), never with other atomics."""
        accessed = self._accessed(bb, pos, fr, lanes)
        if accessed is None:
            return
        sh, ratio, p, keys, multi = accessed
        t, wg = self.token, self._wg_of(keys)
        if sh.a_tok is None:
            for name in ATOMIC_FIELDS:
                setattr(sh, name, np.full(sh.size, NONE, np.int64))
        # plain writes
        wk = sh.w_key[p]
        bad = (sh.w_tok[p] == t) & (wk != COLLECTIVE)
        if not multi:
            bad &= wk != keys
        if sh.cross:
            ww = sh.w_wg[p]
            bad |= (ww != NONE) & ((ww != wg) | (wg == ALL))
        if bad.any():
            j = int(np.argmax(bad))
            self._report(bb, sh, p[j], ratio, self._last_write(sh, p[j]),
                         ("atomic", int(keys[j]), at(wg, j), site))
        # plain reads
        me = ("atomic", wg, site)
        self._check_in_group(bb, sh, ratio, p, keys, multi, "r_", "read", me)
        if sh.cross:
            self._check_across(bb, sh, ratio, p, keys, "x_", "read", me)
        # record, like reads
        fresh = sh.a_tok[p] != t
        if fresh.any():
            q = p[fresh]
            sh.a_tok[q] = t
            sh.a_site[q] = site
            sh.a_key[q] = keys[fresh]
            sh.a_key2[q] = NONE
        other = (sh.a_key[p] != keys) | multi
        if other.any():
            q = p[other]
            sh.a_key2[q] = keys[other]
            sh.a_site2[q] = site
        if sh.cross:
            note_workgroups(sh, "ax_", p, wg, keys, site)

    def _check_atomics(self, bb, sh, ratio, p, keys, multi, access):
        """A plain access (kind, workgroup, site) against the atomics recorded on `p`."""
        self._check_in_group(bb, sh, ratio, p, keys, multi, "a_", "atomic", access)
        if sh.cross:
            self._check_across(bb, sh, ratio, p, keys, "ax_", "atomic", access)

    def _check_in_group(self, bb, sh, ratio, p, keys, multi, prefix, recorded, access):
        """An access (kind, workgroup, site) by `keys` against the `recorded` accesses ("read" or
        "atomic", fields `prefix`tok/key/key2/site/site2) of this barrier interval on `p`: a
        conflict when another invocation made one, or any did when `multi` (a bool: the access
        is made by several invocations at once)."""
        if not sh.made(prefix + "tok"):
            return   # nothing recorded yet
        kind, wg, site = access
        k1, k2 = getattr(sh, prefix + "key")[p], getattr(sh, prefix + "key2")[p]
        bad = (getattr(sh, prefix + "tok")[p] == self.token) & ((k1 != keys) | (k2 != NONE) | multi)
        if bad.any():
            j = int(np.argmax(bad))
            q = p[j]
            wg_j = at(wg, j)
            if k1[j] != keys[j] or multi:
                other = (recorded, int(k1[j]), wg_j, int(getattr(sh, prefix + "site")[q]))
            else:
                other = (recorded, int(k2[j]), wg_j, int(getattr(sh, prefix + "site2")[q]))
            self._report(bb, sh, q, ratio, other, (kind, int(keys[j]), wg_j, site))

    def _check_across(self, bb, sh, ratio, p, keys, prefix, recorded, access):
        """An access (kind, workgroup, site) against the `recorded` accesses other workgroups
        made on `p` (fields `prefix`wg/wg2/key/key2/site/site2, see note_workgroups)."""
        if not sh.made(prefix + "wg"):
            return   # nothing recorded yet
        kind, wg, site = access
        w1, w2 = getattr(sh, prefix + "wg")[p], getattr(sh, prefix + "wg2")[p]
        bad = (w1 != NONE) & ((w1 != wg) | (w2 != NONE) | (wg == ALL))
        if bad.any():
            j = int(np.argmax(bad))
            q = p[j]
            wg_j = at(wg, j)
            if w1[j] != wg_j or wg_j == ALL:
                other = (recorded, int(getattr(sh, prefix + "key")[q]), int(w1[j]),
                         int(getattr(sh, prefix + "site")[q]))
            else:
                other = (recorded, int(getattr(sh, prefix + "key2")[q]), int(w2[j]),
                         int(getattr(sh, prefix + "site2")[q]))
            self._report(bb, sh, q, ratio, other, (kind, int(keys[j]), wg_j, site))

    def _check_write(self, bb, sh, ratio, p, keys, wg, site, ordered_in_group=False):
        t = self.token
        multi = keys >= MULTI
        if multi.any() or (sh.cross and np.any(wg == ALL)):  # every invocation (workgroup)
            j = int(np.argmax(multi | (wg == ALL))) if sh.cross else int(np.argmax(multi))
            me = ("write", int(keys[j]), at(wg, j), site)
            self._report(bb, sh, p[j], ratio, me, me, several=True)
        if len(p) > 1:  # one statement, several invocations writing one element
            sh.scratch[p] = keys
            back = sh.scratch[p]
            dup = back != keys
            if dup.any():
                j = int(np.argmax(dup))
                first, second = sorted((int(back[j]), int(keys[j])))
                self._report(bb, sh, p[j], ratio, ("write", first, at(wg, j), site),
                             ("write", second, at(wg, j), site))
        if not ordered_in_group:
            wk = sh.w_key[p]
            bad = (sh.w_tok[p] == t) & (wk != keys) & (wk != COLLECTIVE)
            if bad.any():
                j = int(np.argmax(bad))
                self._report(bb, sh, p[j], ratio, self._last_write(sh, p[j]),
                             ("write", int(keys[j]), at(wg, j), site))
            self._check_in_group(bb, sh, ratio, p, keys, False, "r_", "read",
                                 ("write", wg, site))
        if sh.cross:
            ww = sh.w_wg[p]
            bad = (ww != NONE) & ((ww != wg) | (wg == ALL))
            if bad.any():
                j = int(np.argmax(bad))
                self._report(bb, sh, p[j], ratio, self._last_write(sh, p[j]),
                             ("write", int(keys[j]), at(wg, j), site))
            self._check_across(bb, sh, ratio, p, keys, "x_", "read", ("write", wg, site))

    @staticmethod
    def _record_write(sh, p, keys, wg, token, site):
        sh.w_tok[p] = token
        sh.w_site[p] = site
        sh.w_key[p] = keys
        sh.w_wg[p] = wg

    # -- async copies ----------------------------------------------------------------------------

    def async_keys(self, bb, pos, fr, lanes: int):
        """(positions, keys) of an async write when it is issued, or None when unchecked."""
        if bb.storage.per_invocation:
            return None
        p, keys, _ = self._keys(fr, pos, lanes)
        return p, keys, self.wg

    def retire(self, writes, site: int):
        """Writes of a group retired by the wait at `site` (-1: at the kernel's end): ordered with
        their whole workgroup; checked against each other and against other workgroups."""
        parts = {}
        for bb, issued, write_site in writes:
            if issued is None:
                continue
            sh, ratio = self._shadow(bb)
            p, keys, wg = issued
            p, keys = self._units(p, keys, ratio)
            parts.setdefault((id(sh), wg), (bb, sh, ratio, wg, write_site, []))[5].append(
                (p, keys))
        for bb, sh, ratio, wg, write_site, chunks in parts.values():
            p = np.concatenate([c[0] for c in chunks])
            keys = np.concatenate([c[1] for c in chunks])
            self._check_write(bb, sh, ratio, p, keys, wg, write_site, ordered_in_group=True)
            self._record_write(sh, p, np.full(p.size, COLLECTIVE, np.int64), wg,
                               self.tokens.get(wg, self.token), write_site)
