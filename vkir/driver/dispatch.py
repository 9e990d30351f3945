"""What every kind of kernel does the same way once its arguments are checked: keep device copies
of numpy arguments between calls (bounded), run a dispatch now, time it inside `vkir.profile()`,
submit one without waiting, and validate `profile()`'s counts. `Kernel` (vkir.build),
`ShaderKernel` (existing shaders) and the backends' kernels call these, so the behaviour a call
has does not depend on where the kernel came from."""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError

SCRATCH_BUFFERS = 32  # per kernel: device copies of numpy arguments kept for the next call


class ScratchBuffers:
    """Device copies of a kernel's numpy arguments, by (argument index, size), reused by the
    next call with the same sizes; at most SCRATCH_BUFFERS, all given back when the cap is
    reached (bounded memory for calls of many sizes)."""

    def __init__(self, device):
        self.device = device
        self.buffers = {}

    def copy_in(self, index: int, array: np.ndarray):
        """A device buffer holding `array`, the argument at `index`."""
        from ..runtime.suballoc import allocate

        key = (index, array.nbytes)
        buf = self.buffers.get(key)
        if buf is None:
            if len(self.buffers) >= SCRATCH_BUFFERS:
                self.buffers.clear()
            buf = self.buffers[key] = allocate(self.device, array.nbytes)
        buf.write(array)
        return buf

    def __len__(self) -> int:
        return len(self.buffers)


def run(device, pipeline, buffers, push, groups, name: str, keep, profiler=None) -> None:
    """Dispatch and wait; inside `vkir.profile()` (`profiler`), timed and recorded under `name`
    where the queue has timestamps."""
    from ..runtime import get_launch

    timed = profiler is not None and device.timestamp_bits > 0
    launch = get_launch(device, pipeline, buffers, push, groups, timed=timed)
    if timed:
        profiler.add_launch(name, launch, keep)
    else:
        launch.run(keep=keep)


def submit(device, pipeline, buffers: list, push, groups, name: str, keep, numpy_args: dict,
           written):
    """Submit without waiting: `buffers` has None where `numpy_args` (by position) gives a numpy
    array, which is copied into a fresh device buffer of this launch alone; the written ones
    (`written(position)`) are copied back when the handle's wait sees the end."""
    from ..runtime import get_launch
    from ..runtime.suballoc import allocate
    from .sequences import LaunchHandle

    buffers = list(buffers)
    copies, scratch = [], []
    for position, a in numpy_args.items():
        buf = allocate(device, a.nbytes)
        buf.write(a)
        buffers[position] = buf
        scratch.append(buf)
        if written(position):
            copies.append((buf, a))
    launch = get_launch(device, pipeline, buffers, push, groups)
    submission = launch.submit(keep=(keep, tuple(scratch)), what=f"launch of {name}")
    return LaunchHandle(submission, copies, name)


def check_profile_counts(name: str, repeat, warmup) -> None:
    """ArgumentError unless `repeat` >= 1 and `warmup` >= 0 are ints."""
    for what, n, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < least:
            raise ArgumentError(f"{name}: profile {what} must be an int >= {least}, got {n!r}")
