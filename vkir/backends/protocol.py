"""The device seam: the small runtime protocol a device backend implements, and the only thing
`vkir.Kernel` (vkir.driver.kernel) talks to.

A backend gives one `Runtime` per device. Its `allocator` makes and fills buffers; its
`program(spec)` turns SPIR-V plus a dispatch description (`ProgramSpec`) into a `Program`;
`Program.launch(buffers, push, groups)` gives a `Launch` that runs and waits (`run`) or is
submitted without waiting (`submit`, a `Waitable`); the runtime's queries (`name`, `target`,
`limits`, `subgroup_size`, `timestamps`, `check_limits`, `subgroup_requirement`) are what
compilation and argument checking need to know of the device. Vulkan (vulkan.py) and WebGPU
(wgpu.py) implement it; the interpreter is a host backend (base.py) and needs none of it.

The classes are abstract bases rather than typing protocols so that `isinstance(x, Runtime)`
tells a backend's runtime from a bare Vulkan device (vkir.driver.dispatch adapts the latter).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

__all__ = ["ProgramSpec", "Allocator", "Waitable", "Launch", "Program", "Runtime"]


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

    @abc.abstractmethod
    def view(self, buffer, offset: int, nbytes: int):
        """A binding of `nbytes` bytes at `offset` in `buffer` (offset aligned as the device's
        storage-buffer offset alignment asks), which launches take like a buffer."""

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


class Launch(abc.ABC):
    """One dispatch of a Program on fixed buffers, push bytes and group counts."""

    @abc.abstractmethod
    def run(self, if_recorded: bool = False, keep=None) -> bool:
        """Run and wait; True when it ran. A launch the runtime dropped meanwhile returns False
        with `if_recorded` (the caller looks it up again) and raises DeviceError otherwise.
        `keep` stays alive while the work may run."""

    @abc.abstractmethod
    def submit(self, keep=None, what: str = "launch") -> Waitable:
        """Submit without waiting; `keep` stays alive until the work finished."""

    def elapsed(self) -> float:
        """Device seconds of the last run of a timed launch."""
        raise NotImplementedError


class Program(abc.ABC):
    """A compiled compute program on one runtime. `handle` is the backend's own object (a
    vkir.runtime Pipeline on Vulkan), `create_seconds` the driver's time to create it,
    `first_run_seconds` the wall time of its first waited dispatch (None before)."""

    handle: object = None
    create_seconds: float = 0.0

    @property
    def first_run_seconds(self) -> float | None:
        """The wall time of the first waited dispatch (where the driver may compile lazily),
        or None before it or where the backend does not measure it."""
        return None

    @abc.abstractmethod
    def launch(self, buffers, push: bytes, groups: tuple, timed: bool = False) -> Launch:
        """The Launch of this program on `buffers` (in binding order) with `push` bytes and
        `groups` (x, y, z) workgroups; `timed` (only where `Runtime.timestamps`) records device
        time for `Launch.elapsed`."""

    @abc.abstractmethod
    def profile(self, buffers, push: bytes, groups: tuple, repeat: int, warmup: int):
        """A vkir.timing.Timing of `repeat` runs after `warmup` untimed ones."""

    def dispatch(self, buffers, access: tuple, push: bytes, groups: tuple, name: str, keep,
                 addressed: tuple = ()):
        """The recordable dispatch of a sequence (vkir.sequence), where the backend has them;
        `addressed`: (buffer, access) of the buffers the program reaches through device
        addresses. UnsupportedError by default."""
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{name}: vkir.sequence() records Vulkan command buffers; this "
                               "kernel runs on another backend (call it instead)")

    @abc.abstractmethod
    def release(self) -> None:
        """Give the program back (a kernel that is collected releases its programs)."""


class Runtime(abc.ABC):
    """One device as a backend drives it: memory, programs and the queries compilation needs.
    `device` is what `Kernel.device` shows (the backend's device object), `name` the device's
    name in messages, `allocator` its memory, `timestamps` whether launches can be timed on it,
    `limits` an object with vkir.target.Limits' fields (at least `max_workgroup_count` and
    `min_storage_buffer_offset_alignment`), `subgroup_size` the device's default subgroup size,
    `quirks` the driver quirks (vkir.quirks) it has, `aliasing` whether one memory may be bound
    to several buffers of a dispatch that writes one of them (SPIR-V's Aliased decoration),
    `features` and `subgroup_operations` the optional device features and subgroup operation
    kinds it offers (named as vkir.features and DeviceInfo name them), `extensions` the Vulkan
    device extensions it offers (what an existing shader's OpExtensions are checked against).

    Device limits are checked through the runtime, once when a kernel is built
    (`check_limits`; an existing shader: `check_shader`, `check_bindings`) and once per call
    (`check_grid`; an existing shader: `check_groups`, `check_binding_range`); `program` and
    `Program.launch` trust their callers to have done so."""

    kind: str = "?"
    aliasing: bool = True
    device: object = None
    name: str = "?"
    allocator: Allocator = None
    timestamps: bool = False
    subgroup_size: int | None = None
    quirks: frozenset = frozenset()
    features: frozenset = frozenset()
    subgroup_operations: frozenset = frozenset()
    extensions: frozenset = frozenset()

    @property
    @abc.abstractmethod
    def limits(self):
        """The device limits (see the class docstring)."""

    @abc.abstractmethod
    def target(self, precise: bool = False):
        """The vkir.Target kernels are compiled for on this device."""

    @abc.abstractmethod
    def check_limits(self, bindings: int, push_bytes: int, local_size: tuple, shared_bytes: int,
                     what: str, images: tuple = ()) -> None:
        """UnsupportedError naming the limit a module with `bindings` storage buffers, a
        `push_bytes` push-constant block, `local_size` and `shared_bytes` of shared memory
        exceeds on this device; `images`: its image-like descriptors as (kind, descriptor count)
        pairs (image parameters, and the uniform texel buffers of texel reads, whose kernel also
        has a variant binding them as storage buffers: vkir.driver.texel_views)."""

    @abc.abstractmethod
    def check_grid(self, groups: tuple, what: str) -> None:
        """UnsupportedError naming the limit the workgroup counts (x, y, z) of a kernel's
        grid (blockIdx) exceed on this device."""

    def check_shader(self, local_size: tuple, shared_bytes: int, push_bytes: int,
                     what: str) -> None:
        """UnsupportedError naming the limit an existing shader's local size, shared memory or
        push constants exceed (or, by default, that this backend runs no existing shaders)."""
        self._no_shaders(what)

    def check_bindings(self, count: int, what: str, uniform: int = 0, numbers: tuple = (),
                       images: tuple = ()) -> None:
        """UnsupportedError naming the limit an existing shader's `count` buffer bindings
        (`uniform` of them uniform buffers) and `images` (its images, samplers and texel buffers
        as (kind, descriptor count) pairs) with binding `numbers` exceed."""
        self._no_shaders(what)

    def check_groups(self, groups: tuple, what: str) -> None:
        """ArgumentError or UnsupportedError for an existing shader's workgroup counts
        (x, y, z) this device cannot dispatch."""
        self._no_shaders(what)

    def check_binding_range(self, nbytes: int, kind: str, what: str) -> None:
        """UnsupportedError where `nbytes` exceed the range of a "storage" or "uniform" buffer
        binding on this device."""
        self._no_shaders(what)

    def _no_shaders(self, what: str):
        from ..errors import UnsupportedError

        raise UnsupportedError(f"{what}: existing shaders (vkir.load_spirv, vkir.compile_glsl) "
                               f"run on Vulkan devices; {self.name!r} is a {self.kind} device")

    @abc.abstractmethod
    def subgroup_requirement(self, size: int, workgroup_x: int, what: str):
        """What a ProgramSpec carries to run with `size` invocations per subgroup (None: nothing
        to ask), or UnsupportedError where the device cannot."""

    @abc.abstractmethod
    def program(self, spec: ProgramSpec) -> Program:
        """The Program of `spec` (backends may share one between equal specs), whose limits
        the caller checked."""

    def check_open(self) -> None:
        """DeviceError when the device was closed."""

    def __repr__(self) -> str:
        return f"<vkir {self.kind} runtime on {self.name}>"
