"""What every kind of kernel does the same way once its arguments are checked: keep device copies
of numpy arguments between calls (bounded), run a dispatch now, time it inside `vkir.profile()`,
submit one without waiting, validate `profile()`'s counts, and put numpy arguments on the device
with aliased ones in one buffer (`stage`, see vkir.aliasing). `Kernel` (vkir.build),
`ShaderKernel` (existing shaders) and the backends' kernels call these, so the behaviour a call
has does not depend on where the kernel came from.

Everything here goes through the device seam (vkir.seam): a `Runtime`'s allocator
and a `Program`'s launches. A bare vkir.runtime Device is taken as the Vulkan backend's
(`as_runtime`).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from ..aliasing import gather, scatter

SCRATCH_BUFFERS = 32  # per kernel: device copies of numpy arguments kept for the next call


def as_runtime(device):
    """`device` as a seam Runtime (vkir.seam): itself when it is one, else the Vulkan
    backend's runtime of an opened vkir.runtime Device."""
    from ..seam import Runtime
    from ..seam.registry import backend_class

    if isinstance(device, Runtime):
        return device
    return backend_class("vulkan")().runtime(device)


class ScratchBuffers:
    """Device copies of a kernel's numpy arguments, by (argument index, size), reused by the
    next call with the same sizes; at most SCRATCH_BUFFERS, all given back when the cap is
    reached (bounded memory for calls of many sizes)."""

    def __init__(self, device):
        self.device = device
        self.allocator = as_runtime(device).allocator
        self.buffers = {}
        self.views = {}     # (id of the buffer, offset, nbytes) -> (view, buffer)

    def copy_in(self, index: int, array: np.ndarray):
        """A device buffer holding `array`, the argument at `index`."""
        key = (index, array.nbytes)
        buf = self.buffers.get(key)
        if buf is None:
            if len(self.buffers) >= SCRATCH_BUFFERS:
                self.buffers.clear()
                self.views.clear()
            buf = self.buffers[key] = self.allocator.allocate(array.nbytes)
        self.allocator.copy_in(buf, array)
        return buf

    def copy_out(self, buffer, out: np.ndarray) -> None:
        """Read scratch buffer `buffer` into `out`."""
        self.allocator.copy_out(buffer, out)

    def view(self, buffer, offset: int, nbytes: int):
        """A view of `nbytes` at `offset` in scratch buffer `buffer`, kept with it (so a call
        again with the same aliases finds its recorded launch)."""
        key = (id(buffer), offset, nbytes)
        got = self.views.get(key)
        if got is None or got[1] is not buffer:
            got = self.views[key] = (self.allocator.view(buffer, offset, nbytes), buffer)
        return got[0]

    def __len__(self) -> int:
        return len(self.buffers)


def stage(host: dict, written, groups, copy_in, view) -> tuple:
    """Device buffers for the numpy arguments `host` ({position: array}): one per group of
    aliased arrays (`groups`, numpy Groups from aliasing.plan), each member bound as a view at its
    offset (or the buffer itself where it spans it), and one per other array. `copy_in(position,
    bytes or array)` makes a device buffer holding the data, `view(buffer, offset, nbytes)` binds
    part of one, `written(position)` says what the callee writes. Returns ({position: buffer},
    copy-backs for `copy_back`)."""
    buffers, copies, grouped = {}, [], set()
    for group in groups:
        data, copied = gather(group, host)
        root = copy_in(group.members[0].position, data)
        for m in group.members:
            whole = m.offset == 0 and m.nbytes == group.nbytes
            buffers[m.position] = root if whole else view(root, m.offset, m.nbytes)
            grouped.add(m.position)
        copies.append((root, data, group if copied else None))
    for position, a in host.items():
        if position in grouped:
            continue
        buffers[position] = buf = copy_in(position, a)
        if written(position):
            copies.append((buf, a, None))
    return buffers, copies


def copy_back(copies: list, host: dict, copy_out=None) -> None:
    """After the dispatch: read each written buffer back into its host array with
    `copy_out(buffer, out)` (an allocator's; None: the buffer's own `read`), then a group's copy
    of its bytes goes to its written members."""
    for buf, out, group in copies:
        if copy_out is None:
            buf.read(out)
        else:
            copy_out(buf, out)
        if group is not None:
            scatter(group, host, out)


def run(rt, program, buffers, push, groups, name: str, keep, profiler=None) -> None:
    """Dispatch and wait; inside `vkir.profile()` (`profiler`), timed and recorded under `name`
    where the device has timestamps. `rt` is a seam Runtime, `program` its Program."""
    timed = profiler is not None and "timestamps" in rt.capabilities
    launch = program.launch(buffers, push, groups, timed=timed)
    if timed:
        profiler.add_launch(name, launch, keep)
    else:
        launch.run(keep=keep)


def submit(rt, program, buffers: dict, push, groups, name: str, keep, numpy_args: dict,
           written, aliases=(), order=None):
    """Submit without waiting: `buffers` ({argument position: device buffer}) and `numpy_args`
    ({position: numpy array}) give every buffer argument; each numpy one is copied into a fresh
    device buffer of this launch alone (one per group of `aliases`, see `stage`), and the written
    ones (`written(position)`) are copied back when the handle's wait sees the end. `order` gives
    the argument position of each binding (None: one binding per position, in order). `rt` and
    `program` as for `run`."""
    from .sequences import LaunchHandle

    allocator = rt.allocator

    def copy_in(position, data):
        buf = allocator.allocate(data.nbytes)
        allocator.copy_in(buf, data)
        return buf

    staged, copies = stage(numpy_args, written, aliases, copy_in, allocator.view)
    buffers = {**buffers, **staged}
    order = range(len(buffers)) if order is None else order
    launch = program.launch([buffers[i] for i in order], push, groups)
    submission = launch.submit(keep=(keep, tuple(staged.values())), what=f"launch of {name}")
    return LaunchHandle(submission, [(_Readback(buf, group, numpy_args, allocator.copy_out), out)
                                     for buf, out, group in copies], name)


def check_profile_counts(name: str, repeat, warmup) -> None:
    """ArgumentError unless `repeat` >= 1 and `warmup` >= 0 are ints."""
    for what, n, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < least:
            raise ArgumentError(f"{name}: profile {what} must be an int >= {least}, got {n!r}")


class _Readback:
    """A copy-back of a launch as LaunchHandle makes it at the end (`read(out)`): the device
    buffer into `out`, then, for a group of aliases copied in, to its written members."""

    __slots__ = ("buf", "group", "host", "copy_out")

    def __init__(self, buf, group, host: dict, copy_out):
        self.buf, self.group, self.host, self.copy_out = buf, group, host, copy_out

    def read(self, out) -> None:
        copy_back([(self.buf, out, self.group)], self.host, self.copy_out)
