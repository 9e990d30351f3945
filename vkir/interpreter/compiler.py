"""Compile IR to Python closures over a `Frame`, the state of the invocations executing in lockstep.

Workgroups run one after another (blockIdx loops are ordinary loops), or together as rows of one
frame where the program allows it (merge.py). The invocations of a workgroup
(threadIdx loops, nested x/y/z included) run as one SIMT frame: a value that differs between
invocations carries a leading axis with one entry per active invocation (uniform values stay numpy
scalars, or 1-d lane vectors), and each statement is executed by all active invocations before the
next one starts. Every invocation therefore reaches a `Barrier` together with the others and sees
all writes made before it: for race-free kernels this is the same result as stepping one coroutine
per invocation from barrier to barrier (a swap through shared memory works), while the work is
numpy-vectorized across invocations. For racy kernels it is not (lockstep hides a missing barrier),
so every load and store is also reported to the race checker (`RunState.races`, races.py), which
raises DataRaceError; blockIdx loops tell it which workgroup runs, barriers end an epoch, and each
frame row carries the invocation's `key`. Divergent control flow (an `if`, or a loop extent, that
differs between invocations) runs its body on the subset of invocations that take it; a barrier
reached by only part of the workgroup is an error (it would hang a GPU).

Atomics (atomics.py) apply one invocation at a time in row order; subgroup operations
(subgroups.py) group the rows by their linear local index, which each frame carries as threadIdx
coordinates (`Frame.coords`).

Storage scopes: "local" allocations have one row per invocation (rows are copied to the new
invocations when a threadIdx loop forks them, so a value set before the fork is seen by each),
"shared" ones exist once per workgroup execution, "global" ones once.

Async scopes: a store lexically inside an `AsyncScope` is recorded in the innermost enclosing
committed group instead of being written, so reads (even in the same scope) still see old data;
`AsyncWaitQueue(q, n)` retires the oldest groups of queue q until at most n are in flight; the rest
retire when the function ends (docs/semantics.md, "Async copies").
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..analysis.loop_ranges import range_error
from ..errors import ArgumentError
from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.dtype import DataType
from ..ir.op import is_atomic, is_subgroup
from ..ir.walk import walk
from . import numeric as N
from ..errors import describe_invocation
from .errors import InterpreterError, OutOfBoundsError
from .memory import (AllocationSite, AsyncGroup, Storage, extent_elements, load, local_positions,
                     make_bound, positions, store)
from .races import Site
from .atomics import compile_atomic
from .merge import merged_block_loop
from .native_loops import CHUNK, NativeLoop
from .subgroups import compile_subgroup


class RunState:
    """Mutable state of one interpretation: async queues, live per-invocation storages, and the
    race checker (`races`, a RaceChecker, or None when races are not checked)."""

    __slots__ = ("queues", "group", "local_storages", "value_ndims", "committed", "races",
                 "subgroup_size", "extents")

    def __init__(self, value_ndims: list, races=None, subgroup_size: int = 32):
        self.subgroup_size = subgroup_size
        self.extents = {"x": 1, "y": 1, "z": 1}  # largest threadIdx extents seen (linear ids)
        self.queues = defaultdict(list)
        self.group = None
        self.local_storages = []
        self.value_ndims = value_ndims
        self.committed = []
        self.races = races

    def finish(self):
        """Retire every group still in flight, oldest first."""
        for group in self.committed:
            group.retire(self.races)
        self.committed = []
        self.queues.clear()


class Frame:
    """Slot values of the active invocations: `tid` is None for a single uniform invocation, else
    the ids (rows of local storage) of the K active invocations. `key` identifies the
    invocations for the race checker (an int, or one per row: see races.py). `coords` holds the
    threadIdx (x, y, z) of each row (shape (K, 3)), for subgroup operations."""

    __slots__ = ("slots", "tid", "state", "group_size", "key", "coords", "wgrow")

    def __init__(self, slots: list, tid, state: RunState, group_size: int = 1, key=0,
                 coords=None, wgrow=None):
        self.slots = slots
        self.tid = tid
        self.state = state
        self.group_size = group_size  # invocations of the workgroup (active or not)
        self.key = key
        self.coords = coords
        self.wgrow = wgrow   # each row's workgroup where workgroups run together (merge.py)

    def subset(self, mask) -> "Frame":
        """The frame restricted to the invocations where `mask` holds."""
        mask = np.flatnonzero(mask)   # found once, then a gather per value
        nds = self.state.value_ndims
        slots = [v[mask] if nd >= 0 and v is not None and v.ndim > nd else v
                 for v, nd in zip(self.slots, nds)]
        key = self.key[mask] if self.key.__class__ is np.ndarray else self.key
        coords = self.coords[mask] if self.coords is not None else None
        wgrow = self.wgrow[mask] if self.wgrow is not None else None
        return Frame(slots, self.tid[mask], self.state, self.group_size, key, coords, wgrow)

    def take(self, owner) -> "Frame":
        """A frame of len(owner) invocations, invocation c copying the values of owner[c]."""
        nds = self.state.value_ndims
        slots = [v[owner] if nd >= 0 and v is not None and v.ndim > nd else v
                 for v, nd in zip(self.slots, nds)]
        coords = self.coords[owner] if self.coords is not None else None
        wgrow = self.wgrow[owner] if self.wgrow is not None else None
        return Frame(slots, None, self.state, len(owner), coords=coords, wgrow=wgrow)


_AXIS = {"x": 0, "y": 1, "z": 2}


def _uniform(value) -> bool:
    return np.ndim(value) == 0


def _need_uniform(value, what: str):
    if np.ndim(value) != 0:
        raise InterpreterError(f"{what} differs between invocations")
    return value


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


def _check_range(loop, npdt):
    """`check(lo, ext)`: ArgumentError where a start of serial `loop` with these bounds (one
    value, or one per invocation) ends past its variable's type: lo + ext > its maximum
    (vkir.analysis.loop_ranges)."""
    high = int(np.iinfo(npdt).max)

    def check(lo, ext):
        if _uniform(lo) and _uniform(ext):
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


class Compiler:
    """Turns expressions and statements into closures `f(frame)`; variables and buffers get
    slots."""

    def __init__(self, denormals: str = "preserve", merge=None, native: str = "never"):
        self.flush = denormals == "flush"  # float arithmetic flushes denormals (FTZ and DAZ)
        self.native = native         # native_loops.mode(): whether long loops may go to C
        self.merge = merge           # (free key axis, invocations) to run workgroups together
        self.block_extents = []      # extent closures of the blockIdx loops compiled so far
        self.slot_index = {}      # Var | Buffer -> slot
        self.value_ndims = []     # per slot: 0 scalar, 1 vector, -1 not a value
        self.bound = set()        # vars and buffers in scope while compiling
        self.in_async = False
        self.sites = []           # races.Site of every load and store, by site id
        self.stmt_span = None     # span of the statement being compiled (for loads)
        self.thread_loops = []    # (thread tag, extent expr, loop var name) of thread loops
        self.written = set()      # data vars of the buffers some store writes
        self.threads = ()         # (thread tag, slot) of the thread loops around the code

    # -- slots -------------------------------------------------------------------------------

    def slot(self, key) -> int:
        """The frame slot of `key` (a Var or Buffer), made on first use."""
        s = self.slot_index.get(key)
        if s is None:
            s = len(self.value_ndims)
            self.slot_index[key] = s
            if isinstance(key, E.Var) and isinstance(key.dtype, DataType) \
                    and not key.dtype.is_handle:
                self.value_ndims.append(0 if key.dtype.lanes == 1 else 1)
            else:
                self.value_ndims.append(-1)
        return s

    def bind(self, key) -> int:
        """Mark `key` as in scope and return its slot."""
        self.bound.add(key)
        return self.slot(key)

    # -- expressions -------------------------------------------------------------------------

    def expr(self, e):
        """A closure `fn(frame)` computing expression `e` (one `e_<Node>` method per node kind)."""
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.e_binary(e)
            raise InterpreterError(f"cannot interpret expression {type(e).__name__}")
        return method(e)

    def e_Var(self, e):
        """Read the var's slot (an error outside its scope)."""
        if e not in self.bound:
            raise InterpreterError(f"variable {e.name} is used outside its scope")
        s = self.slot(e)
        return lambda fr: fr.slots[s]

    def e_IntImm(self, e):
        """The constant as a numpy scalar of its type."""
        c = N.scalar(e.value, e.dtype)
        return lambda fr: c

    def e_FloatImm(self, e):
        """The constant as a numpy scalar of its type."""
        c = N.scalar(e.value, e.dtype)
        return lambda fr: c

    def e_binary(self, e):
        """A binary node, computed by vkir.interpreter.numeric's rule for its operand type."""
        fn = N.binary_op(type(e).__name__, e.a.dtype)
        fa, fb = self.expr(e.a), self.expr(e.b)
        if self.flush and e.a.dtype.is_float:
            out = N.flush_denormals if e.dtype.is_float else (lambda v: v)
            return lambda fr: out(fn(N.flush_denormals(fa(fr)), N.flush_denormals(fb(fr))))
        return lambda fr: fn(fa(fr), fb(fr))

    def e_Not(self, e):
        """Logical negation."""
        fa = self.expr(e.a)
        return lambda fr: np.logical_not(fa(fr))

    def e_Select(self, e):
        """Both sides evaluated, one chosen per lane (a scalar condition picks whole vectors)."""
        fc, ft, ff = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        widen = e.condition.dtype.lanes == 1 and e.true_value.dtype.lanes > 1

        def select(fr):
            c = fc(fr)
            t, f = ft(fr), ff(fr)
            if c.__class__ is not np.ndarray and t.__class__ is not np.ndarray \
                    and f.__class__ is not np.ndarray:
                return t if c else f
            if widen:
                c = N.expand_lanes(c)
            return N.as_value(np.where(c, t, f))
        return select

    def e_Cast(self, e):
        """Value conversion (vkir.interpreter.numeric.cast)."""
        fv = self.expr(e.value)
        npdt = N.np_dtype(e.dtype)
        return lambda fr: N.cast(fv(fr), npdt)

    def e_Ramp(self, e):
        """base + stride * [0, 1, ..., lanes - 1], wrapped to the type."""
        fb, fs = self.expr(e.base), self.expr(e.stride)
        offsets = np.arange(e.lanes).astype(N.np_dtype(e.base.dtype))
        return lambda fr: N.expand_lanes(fb(fr)) + N.expand_lanes(fs(fr)) * offsets

    def e_Broadcast(self, e):
        """The value repeated over the lanes."""
        fv = self.expr(e.value)
        lanes = e.lanes
        if e.value.dtype.lanes == 1:
            return lambda fr: np.repeat(N.expand_lanes(fv(fr)), lanes, axis=-1)
        return lambda fr: np.concatenate([fv(fr)] * lanes, axis=-1)

    def e_Let(self, e):
        """The body with the var's slot holding the value."""
        fv = self.expr(e.value)
        s = self.bind(e.var)
        fb = self.expr(e.body)
        self.bound.discard(e.var)

        def let(fr):
            fr.slots[s] = fv(fr)
            return fb(fr)
        return let

    def e_Shuffle(self, e):
        """Lanes picked from the concatenated vectors."""
        fvs = [(self.expr(v), v.dtype.lanes) for v in e.vectors]
        idx = np.array(e.indices, dtype=np.intp)
        single = len(e.indices) == 1

        def shuffle(fr):
            parts = [fv(fr) if lanes > 1 else N.expand_lanes(fv(fr)) for fv, lanes in fvs]
            lead = np.broadcast_shapes(*(np.shape(p)[:-1] for p in parts))
            parts = [np.broadcast_to(p, lead + np.shape(p)[-1:]) for p in parts]
            out = np.concatenate(parts, axis=-1)[..., idx]
            return N.as_value(out[..., 0]) if single else out
        return shuffle

    def e_Call(self, e):
        """An intrinsic: math, bitwise, if_then_else (one side only), atomics and subgroup
        operations."""
        if e.op == "if_then_else":
            return self._if_then_else(e)
        if is_atomic(e.op):
            return compile_atomic(self, e)
        if is_subgroup(e.op):
            return compile_subgroup(self, e)
        args = [self.expr(a) for a in e.args]
        npdt = N.np_dtype(e.dtype)
        if e.op == "reinterpret":
            if len(args) != 1:
                raise InterpreterError("reinterpret takes one argument")
            fa, src, dst = args[0], e.args[0].dtype, e.dtype
            return lambda fr: N.reinterpret(fa(fr), src, dst)
        fn = N.intrinsic(e.op)
        if fn is None:
            raise InterpreterError(f"cannot interpret call of unknown intrinsic {e.op!r}")
        if self.flush and e.dtype.is_float:
            exact = fn
            fn = lambda *xs: N.flush_denormals(exact(*(N.flush_denormals(x) for x in xs)))  # noqa: E731
        if len(args) == 1:
            fa = args[0]
            return lambda fr: fn(fa(fr)).astype(npdt)
        if len(args) == 2:
            fa, fb = args
            return lambda fr: fn(fa(fr), fb(fr)).astype(npdt)
        return lambda fr: fn(*[a(fr) for a in args]).astype(npdt)

    def _if_then_else(self, e):
        if len(e.args) != 3:
            raise InterpreterError("if_then_else takes three arguments")
        fc, ft, ff = (self.expr(a) for a in e.args)
        npdt = N.np_dtype(e.dtype)
        tail = () if e.dtype.lanes == 1 else (e.dtype.lanes,)
        vector_cond = e.args[0].dtype.lanes > 1

        def if_then_else(fr):
            c = fc(fr)
            if _uniform(c):
                return ft(fr) if c else ff(fr)
            if vector_cond:  # lane-wise choice: both sides are evaluated
                return N.as_value(np.where(c, ft(fr), ff(fr)))
            if c.all():
                return ft(fr)
            if not c.any():
                return ff(fr)
            out = np.empty((len(c),) + tail, npdt)
            out[c] = ft(fr.subset(c))
            nc = ~c
            out[nc] = ff(fr.subset(nc))
            return out
        return if_then_else

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

    # -- buffers -----------------------------------------------------------------------------

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
            shape = [int(_need_uniform(f(fr), f"shape of buffer {buffer.name}")) for f in fshape]
            strides = [int(_need_uniform(f(fr), f"stride of buffer {buffer.name}"))
                       for f in fstrides]
            offset = int(_need_uniform(foffset(fr), f"elem_offset of buffer {buffer.name}"))
            return make_bound(buffer, storage, shape, strides, offset)
        return bind

    # -- statements --------------------------------------------------------------------------

    def stmt(self, s):
        """A closure `fn(frame)` executing statement `s` (one `s_<Node>` method per node kind)."""
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"cannot interpret statement {type(s).__name__}")
        outer = self.stmt_span
        if s.span is not None:
            self.stmt_span = s.span
        try:
            return method(s)
        finally:
            self.stmt_span = outer

    def s_SeqStmt(self, s):
        """The statements in order."""
        body = tuple(self.stmt(x) for x in s.seq)

        def seq(fr):
            for f in body:
                f(fr)
        return seq

    def s_Evaluate(self, s):
        """Evaluate the value for its effect."""
        fv = self.expr(s.value)

        def evaluate(fr):
            fv(fr)
        return evaluate

    def s_SubgroupBarrier(self, s):
        """A subgroup barrier. Invocations run in lockstep, so nothing waits; the race checker
        does not count it as a workgroup barrier (accesses it separates across subgroups still
        race), which is conservative within a subgroup."""
        return lambda fr: None

    def s_Barrier(self, s):
        """A workgroup barrier: orders the accesses before it before those after it (for the race
        checker)."""
        # Invocations run in lockstep, so the active ones reach the barrier together; a barrier
        # that only some invocations of the workgroup reach would hang a GPU.
        span = s.span
        where = f" at {span}" if span is not None else ""
        line = getattr(span, "source_line", "") if span is not None else ""
        if line:
            where += f"\n    {line.strip()}"

        def barrier(fr):
            if fr.tid is not None and len(fr.tid) < fr.group_size:
                raise InterpreterError(f"barrier reached by only {len(fr.tid)} of the "
                                       f"{fr.group_size} invocations of the workgroup "
                                       f"(non-uniform control flow: every invocation of a "
                                       f"workgroup must reach each barrier){where}")
            races = fr.state.races
            if races is not None:
                races.barrier()
        return barrier

    def s_LetStmt(self, s):
        """The body with the var's slot holding the value."""
        fv = self.expr(s.value)
        slot = self.bind(s.var)
        fb = self.stmt(s.body)
        self.bound.discard(s.var)

        def let(fr):
            fr.slots[slot] = fv(fr)
            fb(fr)
        return let

    def s_IfThenElse(self, s):
        """Each invocation runs the branch its condition picks (divergent invocations are split).
        """
        fc = self.expr(s.condition)
        ft = self.stmt(s.then_case)
        fe = self.stmt(s.else_case) if s.else_case is not None else None

        def if_then_else(fr):
            c = fc(fr)
            if _uniform(c):
                if c:
                    ft(fr)
                elif fe is not None:
                    fe(fr)
                return
            if c.ndim > 1:
                raise InterpreterError("if condition must be a scalar bool")
            if c.all():
                ft(fr)
            elif not c.any():
                if fe is not None:
                    fe(fr)
            else:
                ft(fr.subset(c))
                if fe is not None:
                    fe(fr.subset(~c))
        return if_then_else

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
                if _uniform(c):
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
        serial = Compiler._serial_loop(fmin, fext, slot, body, npdt)

        def block_loop(fr):
            races = fr.state.races
            lo, ext = fmin(fr), fext(fr)
            if races is None or not (_uniform(lo) and _uniform(ext)):
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
            if _uniform(lo) and _uniform(ext):
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
                n = int(_need_uniform(ext, "thread extent"))
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
                lo_c = lo if _uniform(lo) else lo[owner]
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

    def s_AsyncScope(self, s):
        """The body with its stores recorded in the current async group."""
        outer = self.in_async
        self.in_async = True
        body = self.stmt(s.body)
        self.in_async = outer
        return body

    def s_AsyncCommitQueue(self, s):
        """The body's async stores committed as one group of the queue."""
        body = self.stmt(s.body)
        queue = s.queue

        def commit(fr):
            state = fr.state
            outer = state.group
            group = state.group = AsyncGroup()
            body(fr)
            state.group = outer
            state.queues[queue].append(group)
            state.committed.append(group)
        return commit

    def s_AsyncWaitQueue(self, s):
        """Retire the oldest groups of the queue until at most `in_flight` remain, then run the
        body."""
        site = self.site("wait", s)
        fn = self.expr(s.in_flight)
        body = self.stmt(s.body)
        queue = s.queue

        def wait(fr):
            n = int(_need_uniform(fn(fr), "async_wait_queue in-flight count"))
            state = fr.state
            pending = state.queues[queue]
            while len(pending) > max(n, 0):
                group = pending.pop(0)
                group.retire(state.races, site)
                state.committed.remove(group)
            body(fr)
        return wait

