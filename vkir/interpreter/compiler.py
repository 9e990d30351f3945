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

from ..ir import expr as E
from ..ir.dtype import DataType
from .expr_closures import ExprClosures
from .image_closures import ImageClosures
from .loop_closures import LoopClosures
from .memory_closures import MemoryClosures
from .stmt_closures import StmtClosures


class Compiler(ExprClosures, MemoryClosures, ImageClosures, StmtClosures, LoopClosures):
    """Turns expressions and statements into closures `f(frame)`; variables and buffers get
    slots. The closures of each kind of node come from the mixins: expressions
    (expr_closures.py), memory accesses (memory_closures.py), statements (stmt_closures.py) and
    loops (loop_closures.py)."""

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
