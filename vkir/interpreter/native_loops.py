"""Long interpreter loops handed to compiled C (loop_to_c.py), so that they run without Python
overhead per iteration.

A loop starts in Python. Once it has done `TIER_UP` units of work in one interpretation (an
iteration counts 1 + K // 16 units for K invocations running it, every entry counted), or when
a single entry has at least that much left, the rest of the loop is
translated to C, compiled with the system's C compiler (`cc`, or $CC) into a shared library kept
in vkir's cache directory, and run there for each active invocation in turn, to the end of its
loop. That is what the lockstep interpreter computes when the invocations share nothing in the
loop, so C takes a loop only where that is certain or a difference is found: when races are
checked, C logs the
accesses the race checker tracks and hands them to it after the loop (or at a pause), so that
any two invocations that touch one element, one writing, are found whatever the order; when
races are not checked, C takes loops that write memory beyond the invocation's own only for a
single invocation. Such loops go to C for at most LOGGED_INVOCATIONS invocations at a time when
their accesses must be logged: more run together in Python about as fast, without a log to sort.
loop_to_c.py says which loops translate at all.

An out-of-bounds access in C restores the local memory the loop wrote and the loop goes on in
Python from where C took over, which reports the error exactly. Where the loop had written other
memory, or the race checker had seen its accesses (a race among them included), the whole
interpretation starts again in Python instead (NativeRestart), which reports the error as a run
without C does.

C pauses after STEPS units of work (an iteration of any loop level of the nest it runs weighs
the IR nodes of its body outside inner loops), and the next call resumes at the very iteration
where it stopped (loop_to_c.py), so that Ctrl-C is heard between calls, within milliseconds,
however the iterations are spread over the levels.

$VKIR_NATIVE_LOOPS: "0" keeps every loop in Python, "1" hands every translatable loop to C from its
first iteration (the tests use it to compare both), unset: the rule above, where a C compiler is
found.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil

import numpy as np

from .. import config
from .errors import DataRaceError, InterpreterError
from .loop_to_c import FIXED_POINTERS, NotTranslatable, translate
from .native_library import load_library

TIER_UP = 4096          # work units (see weight) of one loop in Python before the rest goes to C
CHUNK = 256             # Python iterations between two looks at that count
STEPS = 1 << 24         # work of one call into C: iterations of all levels, each weighing
                        # its body's IR nodes (then Python hears Ctrl-C)
LOG_ENTRIES = 1 << 18   # tracked accesses logged by one call into C before it pauses
LOGGED_INVOCATIONS = 256   # the most invocations run in C when their accesses are logged
_FLAGS = ("-O2", "-std=gnu11", "-shared", "-fPIC", "-fwrapv", "-fno-strict-aliasing",
          "-ffp-contract=off", "-fno-fast-math", "-fexcess-precision=standard")


def c_compiler() -> str | None:
    """The C compiler native loops use ($CC, else cc, gcc or clang on PATH), or None."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@functools.lru_cache(maxsize=256)
def load_loop(source: str):
    """The `vkir_loop` function of `source`, compiled once per source (the library is kept in
    vkir's cache, sealed, and loaded only once verified: native_library.py)."""
    compiler = c_compiler()
    if compiler is None:
        raise InterpreterError("no C compiler found for native loops (set CC, or "
                               "VKIR_NATIVE_LOOPS=0)")
    fn = load_library(source, compiler, _FLAGS).vkir_loop
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                   ctypes.c_void_p)
    return fn


def mode() -> str:
    """"never", "always" or "auto" (from $VKIR_NATIVE_LOOPS and whether a C compiler exists)."""
    setting = config.native_loops()
    if setting is False:
        return "never"
    if setting is True:
        return "always"
    return "auto" if c_compiler() is not None else "never"


def _words(values, k: int) -> np.ndarray:
    """K int64 entries holding the low 64 bits of each of `values` (one integer, or one per
    invocation, of any integer type: a uint64 loop value past 2**63 keeps its bits)."""
    if isinstance(values, np.ndarray):
        return np.array(np.broadcast_to(values.astype(np.int64), (k,)))
    value = int(values) & 0xFFFF_FFFF_FFFF_FFFF
    return np.full(k, value - (1 << 64) if value >> 63 else value, np.int64)


class NativeRestart(Exception):
    """A loop in C ended in an error after it changed memory beyond the invocations' own or the
    race checker's records: the interpretation starts again with every loop in Python, which
    reports the error exactly (vkir.interpreter.interpret)."""


class NativeLoop:
    """The C form of one loop node, made when the loop first runs long; `count` is the work
    units it ran in Python so far in this interpretation."""

    __slots__ = ("loop", "slot_index", "written", "mode", "count", "translated", "fn", "sites",
                 "first_site", "site_ids")

    def __init__(self, loop, slot_index: dict, written: set, native_mode: str,
                 sites: list = (), first_site: int = 0):
        self.loop = loop
        self.slot_index = slot_index   # the compiler's Var/Buffer -> frame slot
        self.written = written         # data vars some store writes (complete once running)
        self.mode = native_mode
        self.count = 0
        self.translated = None         # TranslatedLoop, False when not translatable
        self.fn = None
        self.sites = sites             # the compiler's access sites; the loop's from first_site
        self.first_site = first_site
        self.site_ids = ()             # the race checker's site of each logged load

    @staticmethod
    def weight(fr) -> int:
        """Work units of one iteration for the invocations of `fr` (Python's cost per
        iteration grows with them, slowly: numpy runs them together)."""
        return 1 if fr.tid is None else 1 + len(fr.tid) // 16

    def wants(self, remaining: int | None) -> bool:
        """Whether the next iterations should run in C (`remaining`: the work units left in
        this entry, None when unknown)."""
        if self.translated is False:
            return False
        if self.mode == "always":
            return True
        return self.count >= TIER_UP or (remaining is not None and remaining >= TIER_UP)

    def _prepare(self) -> bool:
        if self.translated is None:
            try:
                self.translated = translate(self.loop)
            except NotTranslatable:
                self.translated = False
                return False
            try:
                self.fn = load_loop(self.translated.source)
            except InterpreterError:
                if self.mode == "always":
                    raise
                self.translated = False
                return False
            self.site_ids = tuple(self._site_of(kind, node)
                                  for kind, node in self.translated.accesses)
        return self.translated is not False

    def _site_of(self, kind: str, node) -> int:
        for i in range(self.first_site, len(self.sites)):
            if self.sites[i].node is node and self.sites[i].kind == kind:
                return i
        raise AssertionError(f"no {kind} site for {node}")

    def run(self, fr, lo=None, ext=None) -> bool:
        """Run the loop in C for every invocation of `fr` (for a For loop from `lo` for `ext`
        iterations, uniform or one per invocation). False, with nothing changed, when C cannot
        run it here, an access is out of bounds or a read races (the caller goes on in
        Python)."""
        if not self._prepare():
            return False
        k = 1 if fr.tid is None else len(fr.tid)
        buffers = self._buffers(fr, k)
        if buffers is None:
            return False
        buffer_pointers, meta, logged, outside = buffers
        values = self._values(fr, k)
        if values is None:
            return False
        rows = [np.zeros(k, np.int64) if fr.tid is None else
                np.ascontiguousarray(fr.tid, np.int64),
                np.zeros(k, np.int64) if fr.wgrow is None else
                np.ascontiguousarray(fr.wgrow, np.int64),
                _words(0 if lo is None else lo, k), _words(0 if ext is None else ext, k),
                np.empty(3 * LOG_ENTRIES if logged else 3, np.int64),
                np.zeros(self.translated.state_bytes // 8 + 1, np.int64)]   # 8-aligned
        assert len(rows) == FIXED_POINTERS
        # C saves where it paused in the state (rows[5]); the arrays live until the end of this
        # call
        pointers = [a.ctypes.data for a in rows] + buffer_pointers + [a.ctypes.data
                                                                      for a in values]
        log = rows[4]
        slots = fr.slots
        stored = {id(st): st for st in (slots[self.slot_index[b]].storage
                                         for b in self.translated.stored)
                  if st.per_invocation}
        saved = [(st, st.data.copy()) for st in stored.values()]
        meta = np.array(meta or [0], np.int64)
        resume = np.array([0, STEPS, 0, LOG_ENTRIES if logged else 0, 0], np.int64)
        args = (k, (ctypes.c_void_p * len(pointers))(*pointers), meta.ctypes.data,
                resume.ctypes.data)
        handed = False
        while True:
            status = self.fn(*args)   # 2: a pause (Ctrl-C lands here, the log is emptied)
            if status != 1 and resume[2]:
                handed = True
                try:
                    self._hand_over(fr, log[:3 * int(resume[2])].reshape(-1, 3))
                except DataRaceError:
                    raise NativeRestart() from None   # Python reports it exactly
                resume[2] = 0
            if status != 2:
                break
        if status:
            if outside or handed:
                # memory beyond the invocations' own, or the race checker, has changed: only a
                # run from the start can report this error as Python would
                raise NativeRestart()
            for st, data in saved:
                st.data[...] = data
            return False
        return True

    def _buffers(self, fr, k: int):
        """(data pointers, sizes for M, whether accesses are logged, whether the loop writes
        beyond the invocations' own memory) of the loop's buffers in `fr`, or None when C must
        not run the loop here."""
        slots = fr.slots
        races = fr.state.races
        t = self.translated
        pointers, meta, logged, outside = [], [], False, False
        for buffer in t.buffers:
            bb = slots[self.slot_index[buffer]]
            if bb is None:
                return None
            storage = bb.storage
            if buffer in t.stored and not storage.per_invocation:
                if k > 1 and races is None:
                    return None   # a race would go unseen, and its result differ from lockstep
                outside = True
            # accesses the race checker tracks are logged, and handed to it afterwards
            tracked = races is not None and not storage.per_invocation and \
                buffer.data in self.written
            logged |= tracked
            item = bb.npdt.itemsize
            rowlen = storage.row_bytes // item
            source = 1 if storage.per_invocation else 2 if storage.per_workgroup else 0
            limit = rowlen if source else len(storage.data) // item
            meta += list(bb.shape) + list(bb.strides_int) + [bb.offset_int, limit, rowlen,
                                                              source, int(tracked)]
            pointers.append(storage.data.ctypes.data)
        if logged and k > LOGGED_INVOCATIONS and self.mode != "always":
            return None   # Python runs these together as fast, with no log to hand over
        return pointers, meta, logged, outside

    def _values(self, fr, k: int):
        """One array of K values (K x lanes for vectors) per free variable, or None."""
        out = []
        for var in self.translated.free_vars:
            value = fr.slots[self.slot_index[var]] if var in self.slot_index else None
            if value is None:
                return None
            lanes = var.dtype.lanes
            out.append(np.ascontiguousarray(np.broadcast_to(
                np.asarray(value, var.dtype.numpy_dtype()), (k, lanes) if lanes > 1 else (k,))))
        return out

    def _hand_over(self, fr, entries: np.ndarray) -> None:
        """Give the race checker the logged accesses, per access site: the positions each
        invocation read or wrote. Within one loop their order does not matter: no barrier is in
        it, so any two accesses of different invocations to one element, one a write, race
        whatever their order, and without a race C computed what lockstep computes."""
        races = fr.state.races
        t = self.translated
        sites = entries[:, 0]
        for number, (kind, node) in enumerate(t.accesses):
            picked = entries[sites == number]   # C logs invocation after invocation: k ascending
            if not len(picked):
                continue
            bb = fr.slots[self.slot_index[node.buffer]]
            site = self.site_ids[number]
            record = races.read if kind == "read" else races.write
            if fr.tid is None:
                record(bb, picked[:, 2], fr, site, 1)
                continue
            invocation, positions = picked[:, 1], picked[:, 2]
            starts = np.concatenate(([0], np.flatnonzero(np.diff(invocation)) + 1))
            counts = np.diff(np.append(starts, len(invocation)))
            width = int(counts.max())
            # each invocation's positions, the last repeated to the common width
            table = positions[starts[:, None] + np.minimum(np.arange(width)[None, :],
                                                           counts[:, None] - 1)]
            mask = np.zeros(len(fr.tid), bool)
            mask[invocation[starts]] = True
            sub = fr.subset(mask)
            if width == 1:
                record(bb, table[:, 0], sub, site, 1)
            else:
                record(bb, table, sub, site, width)
