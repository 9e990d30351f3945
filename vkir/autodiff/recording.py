"""`vkir.Tape`: record kernel calls on DeviceArrays, then run their adjoints backwards.

    with vkir.Tape() as tape:         # kernel calls inside run as usual and are recorded
        layer(x, w, y)
        loss(y, out)
    tape.backward({out: np.ones(1, "float32")})   # seeds: d(result) / d(out)
    tape.grad(w)                                  # a DeviceArray shaped like w

Each recorded call's adjoint is `vkir.grad`'s adjoint of the kernel's PrimFunc with respect to
every float buffer the kernel reads (and does not write), in its staged form (vkir.autodiff.staged:
gather kernels instead of contended atomics where the index maps invert), built once per kernel and
kept while the kernel lives. `backward` adds the seeds into the adjoints, then runs the calls'
adjoint kernels in reverse order: each gets the call's own arguments, the adjoints of the arrays
the call wrote (the seeds) and the adjoints of the float arrays it read (accumulated, +=). A call
none of whose outputs has an adjoint contributes nothing and is skipped.

Backward reads the arrays as they are when it runs, so the tape refuses (ArgumentError, at the
call) a recorded call that writes an array an earlier recorded call read, or that stores into
an array an earlier recorded call wrote (a kernel that only `T.atomic_add`s into an array that
no earlier call read accumulates, which is allowed: zero a buffer, then add a loss into it).
Writes the tape does not see (host writes, calls outside the block, writes through a torch
tensor over the same memory) are found at `backward`: each call keeps a checksum of the float
arrays it read (vkir.autodiff.memory.fingerprint), and a changed one is an ArgumentError naming
the call and the argument, never a different gradient. Inside the block every buffer argument must be a DeviceArray,
and a call may not write an array that another of its arguments shares memory with.

The tape knows arrays by their memory, not by Python object (vkir.autodiff.memory): DeviceArrays
over the same bytes (views of one buffer, a fresh object for the same memory) are one array to
it and share one adjoint (each array's adjoint is its view of the region's). `vkir.ops`
calls inside the block are recorded as one step each where the op is differentiable (sum, mean,
cumsum, softmax, layer_norm, matmul, conv2d, sort's values: vkir.autodiff.op_tape) and refused
by name otherwise (histogram, argsort, argmax, min, max: UnsupportedError at the call).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..driver.tape_hook import ACTIVE_TAPE
from ..errors import ArgumentError, UnsupportedError
from ..ir import BufferLoad, BufferStore, Call, walk
from .staged import BuiltAdjoint, adjoint_kernels
from .memory import Memories, extent, fingerprint, overlap

# forward Kernel -> (wrt names, adjoint Kernel or None when nothing is read): a cache, so that a
# training loop with a fresh tape per step builds each adjoint once
_ADJOINTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_ADJOINTS_LOCK = threading.Lock()


def accesses(func) -> tuple[set, dict]:
    """(the names of the global buffers `func` reads, {name: True when every write of it is an
    atomic_add statement, False when it is also stored to}); atomic targets are not reads."""
    reads, writes, targets = set(), {}, set()
    for node in walk(func.body):
        if isinstance(node, Call) and node.op.startswith("atomic_") and node.args and \
                isinstance(node.args[0], BufferLoad) and node.args[0].buffer.scope == "global":
            targets.add(id(node.args[0]))
            name = node.args[0].buffer.name
            writes[name] = writes.get(name, True) and node.op == "atomic_add"
        elif isinstance(node, BufferStore) and node.buffer.scope == "global":
            writes[node.buffer.name] = False
    for node in walk(func.body):
        if isinstance(node, BufferLoad) and node.buffer.scope == "global" and \
                id(node) not in targets:
            reads.add(node.buffer.name)
    return reads, writes


class _Call:
    """One recorded call: the kernel, its arguments, and per buffer parameter (index, name,
    read, written, accumulate-only)."""

    def __init__(self, kernel, args, params):
        self.kernel, self.args, self.params = kernel, args, params
        # (argument index, name, checksum) of the float arrays the adjoint reads
        self.read_sums = tuple((i, name, fingerprint(args[i])) for i, name, r, w, _ in params
                               if r and not w and args[i].size)

    def check_unchanged(self, index: int) -> None:
        """ArgumentError where an array this call read changed since (a host write, a call
        outside the tape): backward would compute another function's gradient."""
        for i, name, total in self.read_sums:
            if fingerprint(self.args[i]) != total:
                raise ArgumentError(
                    f"vkir.Tape.backward: argument {name!r} of recorded call {index} (kernel "
                    f"{self.kernel.name}) changed after the call read it (written outside the "
                    "tape or by the host); backward needs the values the call saw: record the "
                    "calls again")

    def arrays(self, which):
        return [(self.args[i], name) for i, name, r, w, _ in self.params
                if (r if which == "read" else w)]


class Tape:
    """Records kernel calls made on DeviceArrays inside its `with` block and runs their adjoint
    kernels backwards (reverse-mode automatic differentiation across calls).

    `backward(seeds)` takes {array: seed} (numpy arrays or DeviceArrays shaped like the array;
    a bare DeviceArray means a seed of ones) and adds d(sum(seed * array)) / d(input) into the
    adjoint of every float DeviceArray the recorded calls read. `grad(array)` returns that
    adjoint as a DeviceArray (the tape's own, which the next `backward` adds to; zeros for an
    array the tape recorded but no gradient reached). `zero()` sets every adjoint to zero and
    keeps the recorded calls; `reset()` forgets both. Adjoint kernels come from `vkir.grad`, so
    what it refuses (barriers, subgroup operations, integer outputs that carry a gradient) is
    refused here by name, and shared reads need float atomics on the device."""

    def __init__(self):
        self._calls: list[_Call] = []
        self._memories = Memories()  # the regions of memory the recorded calls used
        self._adjoints: dict = {}   # region key -> adjoint DeviceArray (flat, the region's size)
        self._seen: dict = {}       # region key -> (array, [(call, name, read/write/add)])
        self._tokens: list = []

    # -- recording ------------------------------------------------------------------------------
    def __enter__(self) -> "Tape":
        self._tokens.append(ACTIVE_TAPE.set(self))
        return self

    def __exit__(self, *exc) -> None:
        ACTIVE_TAPE.reset(self._tokens.pop())

    def call(self, kernel, args: tuple, samplers=None) -> None:
        """Run `kernel(*args)` (positional, in parameter order) and record it: what a Kernel
        call inside the block does. ArgumentError for a numpy buffer argument, or for a call
        that would overwrite what an earlier recorded call read (see the module's docstring)."""
        func = kernel.func
        if len(args) != len(func.params):
            self._run(kernel, args, samplers)   # the kernel names the wrong count
            return
        from ..driver.arrays import DeviceArray

        reads, writes = accesses(func)
        params = []
        for i, var in enumerate(func.params):
            buf = func.buffer_map.get(var)
            if buf is None:
                continue
            if not isinstance(args[i], DeviceArray):
                raise ArgumentError(f"vkir.Tape: kernel {kernel.name} argument {buf.name!r} is "
                                    f"a {type(args[i]).__name__}; inside a tape buffers must be "
                                    "DeviceArrays (vkir.array), which the tape keeps for "
                                    "backward")
            params.append((i, buf.name, buf.name in reads, buf.name in writes,
                           writes.get(buf.name, False)))
        call = _Call(kernel, args, tuple(params))
        self._check_shared_memory(call)
        self._check_overwrites(call)
        self._run(kernel, args, samplers)
        self._append(call)

    def record_op(self, call, run):
        """Run `run()` (a vkir.ops call, with the tape set aside) and record it as `call` (a
        vkir.autodiff.op_tape.OpCall, whose result is its last argument); an `out=` array is
        checked as a kernel call's output is, before the op runs. Returns the op's result."""
        if call.args[-1] is not None:
            self._check_shared_memory(call)
            self._check_overwrites(call)
        token = ACTIVE_TAPE.set(None)
        try:
            result = run()
        finally:
            ACTIVE_TAPE.reset(token)
        call.seal(result)
        self._append(call)
        return result

    def _append(self, call) -> None:
        index = len(self._calls)
        args = call.args
        self._calls.append(call)
        for i, name, r, w, add in call.params:
            a = args[i]
            key = self._memories.key(a, add=True)
            if key is None:
                continue   # an empty array
            uses = self._seen.setdefault(key, (a, []))[1]
            if r:
                uses.append((index, name, "read"))
            if w:
                uses.append((index, name, "add" if add else "write"))

    def _check_shared_memory(self, call) -> None:
        """ArgumentError for a call that writes an array another of its arguments shares
        memory with (`k(x, x)`): backward would read the written values as the inputs; and
        (from vkir.autodiff.memory) for arguments that overlap recorded memory, or each other,
        without starting where it starts. Checked before the call runs."""
        for i, *_ in call.params:
            self._memories.key(call.args[i])
        params = call.params
        for n, (i, name, _, w, _) in enumerate(params):
            for j, other, _, w_other, _ in params[n + 1:]:
                a, b = call.args[i], call.args[j]
                if not overlap(a, b):
                    continue
                if extent(a)[1] != extent(b)[1]:
                    raise Memories.overlap_error(b)
                if w or w_other:
                    writer, user = (name, other) if w else (other, name)
                    raise ArgumentError(
                        f"vkir.Tape: call {len(self._calls)} (kernel {call.kernel.name}) writes "
                        f"argument {writer!r}, whose memory argument {user!r} of the same call "
                        "also uses; backward needs the values the call read, so a recorded "
                        "call may not write into its own inputs: write into a new array")

    def _check_overwrites(self, call) -> None:
        index = len(self._calls)
        for i, name, _, w, add in call.params:
            if not w:
                continue
            key = self._memories.key(call.args[i])
            uses = self._seen[key][1] if key is not None else ()
            for earlier, earlier_name, use in uses:
                if use == "read" or not add:
                    prior = self._calls[earlier].kernel.name
                    what = "read" if use == "read" else "wrote"
                    raise ArgumentError(
                        f"vkir.Tape: call {index} (kernel {call.kernel.name}) "
                        f"{'adds into' if add else 'writes'} argument {name!r}, an array that "
                        f"recorded call {earlier} (kernel {prior}) {what} as {earlier_name!r}; "
                        "backward needs the values the earlier call saw, so a recorded array "
                        "may not be overwritten after a recorded call read it (or stored "
                        "into twice): write into a new array")

    @staticmethod
    def _run(kernel, args, samplers) -> None:
        token = ACTIVE_TAPE.set(None)
        try:
            kernel(*args, samplers=samplers)
        finally:
            ACTIVE_TAPE.reset(token)

    # -- gradients ------------------------------------------------------------------------------
    def backward(self, seeds) -> None:
        """Add `seeds` ({array: seed of the array's shape}; a bare DeviceArray: ones) into the
        adjoints, then run every recorded call's adjoint kernel in reverse order."""
        from ..driver.arrays import DeviceArray

        if isinstance(seeds, DeviceArray):
            seeds = {seeds: np.ones(seeds.shape, seeds.dtype)}
        if not isinstance(seeds, dict):
            raise ArgumentError("Tape.backward: seeds must be a dict {array: seed} or a "
                                f"DeviceArray, got {type(seeds).__name__}")
        for index, call in enumerate(self._calls):
            call.check_unchanged(index)
        pending = []
        for array, seed in seeds.items():
            if not isinstance(array, DeviceArray) or self._memories.key(array) is None:
                raise ArgumentError("Tape.backward: a seed's key must be a DeviceArray that a "
                                    "recorded call used")
            if not np.dtype(array.dtype).kind == "f":
                raise ArgumentError(f"Tape.backward: cannot seed a {array.dtype} array; "
                                    "gradients flow through float arrays")
            value = np.asarray(seed.numpy() if isinstance(seed, DeviceArray) else seed)
            if value.shape != tuple(array.shape):
                raise ArgumentError(f"Tape.backward: seed of shape {list(value.shape)} for an "
                                    f"array of shape {list(array.shape)}")
            value = value.astype(array.dtype)
            pending.append((array, value))
        # this pass propagates its own seeds alone (fresh adjoints), then adds what it found
        # into the tape's adjoints: two passes give the sum of their gradients
        saved, self._adjoints = self._adjoints, {}
        token = ACTIVE_TAPE.set(None)   # the adjoint kernels are not recorded
        try:
            for array, value in pending:
                self._add(array, value)
            for index in range(len(self._calls) - 1, -1, -1):
                call = self._calls[index]
                if hasattr(call, "backward"):   # a vkir.ops call: its adjoint
                    call.backward(self)
                else:
                    self._backward_call(index, call)
        finally:
            ACTIVE_TAPE.reset(token)
            found, self._adjoints = self._adjoints, saved
        for key, adj in found.items():
            total = saved.get(key)
            if total is None:
                saved[key] = adj
                continue
            a, b = total.numpy(), adj.numpy()
            if a.size < b.size:   # the region grew during this pass: the longer one keeps the sum
                a, b, total = b, a, adj
            a[:b.size] += b
            total.write(a)
            saved[key] = total

    def _backward_call(self, index, call) -> None:
        written = [(a, n) for a, n in call.arrays("written")]
        if not any(self._memories.key(a) in self._adjoints for a, _ in written):
            return   # no gradient reaches this call's outputs
        kernel = call.kernel
        adjoint, wrt = _adjoint_kernel(kernel, call, index)
        if adjoint is None:
            return
        by_name = {name: call.args[i] for i, name, *_ in call.params}
        extra, repeats = [], []
        taken = set()
        for a, _ in written:
            extra.append(self._adjoint(a))
            taken.add(self._memories.key(a))
        for name in wrt:
            a = by_name[name]
            if self._memories.key(a) in taken:   # one memory under two parameters: a buffer of its own
                tmp = _zeros_like(a)
                repeats.append((a, tmp))
                extra.append(tmp)
            else:
                extra.append(self._adjoint(a))
                taken.add(self._memories.key(a))
        adjoint(*call.args, *extra)
        for a, tmp in repeats:
            self._add(a, tmp.numpy())

    def _adjoint(self, array):
        """The adjoint of `array` (of recorded memory): its view of its region's adjoint, made
        on first use (zeros) and grown, keeping its values, for a longer array over the region."""
        from ..driver.arrays import DeviceArray, zeros

        key = self._memories.key(array)
        if key is None:   # an empty array: nothing to keep
            assert array.size == 0, "an adjoint of memory no recorded call used"
            return _zeros_like(array)
        adj = self._adjoints.get(key)
        if adj is None or adj.size < array.size:
            grown = zeros((array.size,), array.dtype, device=array.device)
            if adj is not None:
                values = np.zeros(array.size, adj.dtype)
                values[:adj.size] = adj.numpy()
                grown.write(values)
            adj = self._adjoints[key] = grown
        if adj.dtype != array.dtype:
            raise ArgumentError(f"Tape: a {array.dtype} array over memory whose adjoint the tape "
                                f"keeps as {adj.dtype}: gradients need one float dtype per array")
        return DeviceArray(adj.buffer, array.shape, array.dtype, array.device)

    def adjoint_if_reached(self, array):
        """The adjoint of `array` where this backward pass reached it, else None."""
        key = self._memories.key(array)
        return self._adjoint(array) if key is not None and key in self._adjoints else None

    def add_gradient(self, array, value) -> None:
        """Add numpy `value` into the adjoint of `array` (an op's adjoint's result)."""
        self._add(array, value)

    def _add(self, array, value) -> None:
        adj = self._adjoint(array)
        adj.write(adj.numpy() + value)

    def grad(self, array):
        """The adjoint accumulated for `array` (a DeviceArray of its shape and dtype, the
        tape's own); zeros for an array the recorded calls used that no gradient reached.
        ArgumentError for an array no recorded call used."""
        if self._memories.key(array) is None:
            raise ArgumentError("Tape.grad: the array is not an argument of any recorded call")
        if np.dtype(array.dtype).kind != "f":
            raise ArgumentError(f"Tape.grad: a {array.dtype} array has no gradient")
        return self._adjoint(array)

    def zero(self) -> None:
        """Set every adjoint to zero; the recorded calls stay (backward can run again)."""
        for adj in self._adjoints.values():
            adj.write(np.zeros(adj.shape, adj.dtype))

    def reset(self) -> None:
        """Forget the recorded calls and the adjoints (the adjoint kernels stay built)."""
        self._calls.clear()
        self._adjoints.clear()
        self._seen.clear()
        self._memories.clear()

    def __len__(self) -> int:
        """The number of recorded calls."""
        return len(self._calls)


def _zeros_like(array):
    from ..driver.arrays import zeros

    return zeros(array.shape, array.dtype, device=array.device)


def _adjoint_kernel(kernel, call, index):
    """(the adjoint Kernel of `kernel`, its wrt names) built once per kernel; (None, ()) when
    the kernel reads no float buffer it does not write."""
    with _ADJOINTS_LOCK:
        found = _ADJOINTS.get(kernel)
    if found is not None:
        return found[1], found[0]
    # the function as written: the grid binding of its T.parallel loops (i = linear // m)
    # hides the index maps the gathered adjoint inverts
    func = getattr(kernel, "source", kernel.func)
    written = {name for _, name, _, w, _ in call.params if w}
    wrt = tuple(name for i, name, r, w, _ in call.params
                if r and not w and np.dtype(call.args[i].dtype).kind == "f")
    if not wrt:
        adjoint = None
    else:
        try:
            plan = adjoint_kernels(func, wrt)
            adjoint = BuiltAdjoint(plan, [_build(k, kernel.device) for k in plan.kernels])
        except UnsupportedError as exc:
            raise UnsupportedError(f"vkir.Tape: the adjoint of recorded call {index} (kernel "
                                   f"{kernel.name}, outputs {sorted(written)}): {exc}") from exc
    with _ADJOINTS_LOCK:
        _ADJOINTS[kernel] = (wrt, adjoint)
    return adjoint, wrt


def _build(func, device):
    from ..api import build

    return build(func, device=device)
