"""The device seam: the small runtime protocol a device backend implements, and the only thing
`vkir.Kernel` (vkir.driver.kernel) talks to.

A backend gives one `Runtime` per device, and its core is what every device has: an
`allocator` (allocate, free, copy in, copy out), `program(spec)` turning SPIR-V plus a dispatch
description (`ProgramSpec`) into a `Program` whose `launch(buffers, push, groups)` runs and
waits (`Launch.run`) or is submitted (`Launch.submit`, a `Waitable`), the device's `limits`
(vkir.limits.Limits) and the `target` kernels are compiled for; a `name` and a `kind` say which
it is in messages. Everything else has a default made from those (limit checks from `limits`,
wall-clock profiles from `run`). What only some devices do is a capability the runtime
declares in `capabilities` (vkir.seam.capabilities: existing shaders, images, sequences,
timestamps, aliasing); a kernel that needs one the runtime lacks is refused by name before
anything runs. Vulkan (vkir.backends.vulkan) and WebGPU (vkir.backends.wgpu) implement it; the
interpreter is a host backend (vkir.backends.base) and needs none of it.

The classes are abstract bases rather than typing protocols so that `isinstance(x, Runtime)`
tells a backend's runtime from a bare Vulkan device (vkir.driver.dispatch adapts the latter).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

__all__ = ["ProgramSpec", "Allocator", "Waitable", "Done", "Launch", "Program", "Runtime"]


@dataclass(frozen=True)
class ProgramSpec:
    """What a Program is made from: the SPIR-V module (`spirv`, validated bytes), its
    `entry_point`, the binding number of each storage buffer in launch order (`bindings`), the
    push-constant block's size in bytes, the module's workgroup size (`local_size`), a
    pinned subgroup size as `Runtime.subgroup_requirement` returned it (None: the device's),
    what to call it in messages (`name`), and for existing shaders the kind of each binding
    (`descriptor_types`: "storage" or "uniform"; None: all storage) and the specialization
    constants' values (`specialization`: (SpecId, bytes) pairs), and the (descriptor set,
    descriptor count) of each binding (`slots`; None: set 0, one descriptor each): a launch then
    passes one buffer or image per descriptor, array elements in order."""

    spirv: bytes
    entry_point: str
    bindings: tuple
    push_constant_size: int
    local_size: tuple = (1, 1, 1)
    subgroup: object = None
    name: str = "a kernel"
    descriptor_types: tuple | None = None
    specialization: tuple = ()
    slots: tuple | None = None


class Allocator(abc.ABC):
    """Device memory of one runtime. A buffer is the allocator's own object with at least
    `nbytes`; launches take buffers (or views) in binding order."""

    @abc.abstractmethod
    def allocate(self, nbytes: int):
        """A new buffer of `nbytes` bytes (contents undefined)."""

    @abc.abstractmethod
    def free(self, buffer) -> None:
        """Give `buffer` back now (a collected buffer is given back anyway)."""

    @abc.abstractmethod
    def copy_in(self, buffer, array) -> None:
        """Write the bytes of the numpy array `array` at the start of `buffer`."""

    @abc.abstractmethod
    def copy_out(self, buffer, out) -> None:
        """Read the start of `buffer` into the numpy array `out` (waiting for work that writes
        it)."""

    def view(self, buffer, offset: int, nbytes: int):
        """A binding of `nbytes` bytes at `offset` in `buffer` (offset aligned as the device's
        storage-buffer offset alignment asks), which launches take like a buffer; by default
        the buffer itself when the view is all of it, else UnsupportedError."""
        if offset == 0 and nbytes == getattr(buffer, "nbytes", None):
            return buffer
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{type(self).__name__}: buffers cannot be bound in part here")

    def address(self, buffer) -> int:
        """The device address of `buffer`'s first byte (what a SPIR-V PhysicalStorageBuffer
        pointer holds); UnsupportedError where the backend's buffers have none (the default)."""
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{type(self).__name__}: buffers have no device addresses here")

    def in_place(self, array, written: bool):
        """A buffer over the numpy array `array`'s own memory, which a launch reads and
        (`written`) writes in place, or None where it must be copied in and out (the default:
        backends without host memory used in place)."""
        return None


class Waitable(abc.ABC):
    """Work submitted without waiting."""

    @abc.abstractmethod
    def wait(self, timeout=None) -> None:
        """Block until the work finished (DeviceError after `timeout` seconds)."""

    @abc.abstractmethod
    def done(self) -> bool:
        """Whether the work finished (never blocks)."""


class Done(Waitable):
    """Work that ended when it was submitted (what a runtime without a queue of its own gives)."""

    def wait(self, timeout=None) -> None:
        """Nothing to wait for."""

    def done(self) -> bool:
        """Always True."""
        return True


class Launch(abc.ABC):
    """One dispatch of a Program on fixed buffers, push bytes and group counts."""

    @abc.abstractmethod
    def run(self, if_recorded: bool = False, keep=None) -> bool:
        """Run and wait; True when it ran. A launch the runtime dropped meanwhile returns False
        with `if_recorded` (the caller looks it up again) and raises DeviceError otherwise.
        `keep` stays alive while the work may run."""

    def submit(self, keep=None, what: str = "launch") -> Waitable:
        """Submit without waiting; `keep` stays alive until the work finished. By default: run
        now and give a `Done`."""
        self.run(keep=keep)
        return Done()

    def elapsed(self) -> float:
        """Device seconds of the last run of a timed launch."""
        raise NotImplementedError


class Program(abc.ABC):
    """A compiled compute program on one runtime. `handle` is the backend's own object (a
    vkir.runtime ComputePipeline on Vulkan), `create_seconds` the driver's time to create it,
    `first_run_seconds` the wall time of its first waited dispatch (None before)."""

    handle: object = None
    create_seconds: float = 0.0

    @property
    def first_run_seconds(self) -> float | None:
        """The wall time of the first waited dispatch (where the driver may compile lazily),
        or None before it or where the backend does not measure it."""
        return None

    @property
    def alive(self) -> bool:
        """False once the backend destroyed the program under its holders (the device's pipeline
        cache was reset): a cache of kernels builds such a kernel again instead of handing it out."""
        return True

    @abc.abstractmethod
    def launch(self, buffers, push: bytes, groups: tuple, timed: bool = False) -> Launch:
        """The Launch of this program on `buffers` (in binding order) with `push` bytes and
        `groups` (x, y, z) workgroups; `timed` (only where `Runtime.timestamps`) records device
        time for `Launch.elapsed`."""

    def profile(self, buffers, push: bytes, groups: tuple, repeat: int, warmup: int):
        """A vkir.timing.Timing of `repeat` runs after `warmup` untimed ones; by default the
        wall seconds of each waited run."""
        import time

        from ..timing import Timing

        launch = self.launch(buffers, push, groups)
        for _ in range(warmup):
            launch.run()
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            launch.run()
            samples.append(time.perf_counter() - t0)
        return Timing.of(samples, "wall")

    def dispatch(self, buffers, access: tuple, push: bytes, groups: tuple, name: str, keep,
                 addressed: tuple = ()):
        """The recordable dispatch of a sequence (vkir.sequence), where the runtime has the
        "sequences" capability; `addressed`: (buffer, access) of the buffers the program
        reaches through device addresses. UnsupportedError by default."""
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{name}: vkir.sequence() records Vulkan command buffers; this "
                               "kernel runs on a backend without the 'sequences' capability "
                               "(call it instead)")

    def release(self) -> None:
        """Give the program back (a kernel that is collected releases its programs); nothing
        to do by default."""


class Runtime(abc.ABC):
    """One device as a backend drives it. The core a backend implements: `kind` (its name, the
    Target kind), `name` (the device's, in messages), `allocator`, `program`, `limits` and
    `target`. `device` is what `Kernel.device` shows (the backend's device object),
    `capabilities` the optional ones it has (vkir.seam.capabilities), `quirks` the driver quirks
    (vkir.quirks) compilation works around and `subgroup_size` its default subgroup size (None:
    unknown); the target carries the features kernels may use.

    Device limits are checked through the runtime, once when a kernel is built
    (`check_limits`) and once per call (`check_grid`); the defaults compare with `limits`, and
    `program` and `Program.launch` trust their callers to have checked."""

    kind: str = "?"
    name: str = "?"
    device: object = None
    allocator: Allocator = None
    capabilities: frozenset = frozenset()
    quirks: frozenset = frozenset()
    subgroup_size: int | None = None

    @property
    @abc.abstractmethod
    def limits(self):
        """The device's vkir.limits.Limits (what it does not know stays at the defaults)."""

    @abc.abstractmethod
    def target(self, precise: bool = False):
        """The vkir.Target kernels are compiled for on this device (kind `kind`)."""

    @abc.abstractmethod
    def program(self, spec: ProgramSpec) -> Program:
        """The Program of `spec` (backends may share one between equal specs), whose limits
        the caller checked."""

    # -- limits, from `limits` -------------------------------------------------------------
    def check_limits(self, bindings: int, push_bytes: int, local_size: tuple, shared_bytes: int,
                     what: str, images: tuple = ()) -> None:
        """UnsupportedError naming the limit a module with `bindings` storage buffers, a
        `push_bytes` push-constant block, `local_size` and `shared_bytes` of shared memory
        exceeds on this device; `images`: its image-like descriptors as (kind, descriptor count)
        pairs (image parameters, and the uniform texel buffers of texel reads), which need the
        "images" capability."""
        from .capabilities import check_module

        check_module(self, bindings, push_bytes, local_size, shared_bytes, what, images)

    def check_grid(self, groups: tuple, what: str) -> None:
        """UnsupportedError naming the limit the workgroup counts (x, y, z) of a kernel's
        grid (blockIdx) exceed on this device."""
        from ..limits import check_grid

        check_grid(self, groups, what)

    def subgroup_requirement(self, size: int, workgroup_x: int, what: str):
        """What a ProgramSpec carries to run with `size` invocations per subgroup (None:
        nothing to ask), or UnsupportedError where the device cannot; by default None when
        `size` is the device's own subgroup size."""
        if size == self.subgroup_size:
            return None
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{what} uses subgroup operations built for subgroup size {size}; "
                               f"the {self.kind} backend cannot pin a subgroup size on "
                               f"{self.name!r}")

    def check_open(self) -> None:
        """DeviceError when the device was closed."""

    def __repr__(self) -> str:
        return f"<vkir {self.kind} runtime on {self.name}>"
