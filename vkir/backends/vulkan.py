"""Vulkan as a backend: `vkir.build(f)` (or `device=` a Vulkan device selector, or "vulkan")
lowers for the device's Target, generates and validates SPIR-V and creates the pipeline; the
result is a vkir Kernel (vkir.driver.kernel), bounds-checked where asked.

`VulkanRuntime` is the device seam (vkir.seam) as a thin adapter over vkir.runtime: the
only backend module that imports it. Memory is vkir.runtime's suballocated buffers, a Program
is a cached runtime ComputePipeline, a Launch a cached RecordedLaunch (a recorded command
buffer)."""

from __future__ import annotations

import threading

from ..ir import PrimFunc
from ..seam import CAPABILITIES, Allocator, Program, ProgramSpec, Runtime, ShaderRuntime
from .base import DeviceBackend
from .vulkan_images import VulkanImages


def _get_pipeline(device, spec: ProgramSpec):
    """vkir.runtime.get_pipeline for `spec` (limits already checked by the caller)."""
    from ..runtime import get_pipeline

    return get_pipeline(device, spec.spirv, spec.entry_point, tuple(spec.bindings),
                        spec.push_constant_size, spec.descriptor_types,
                        tuple(spec.specialization), spec.subgroup, checked=True,
                        slots=spec.slots)


class VulkanAllocator(Allocator):
    """vkir.runtime buffers of one device (small ones share memory blocks)."""

    def __init__(self, device):
        self.device = device

    def allocate(self, nbytes: int):
        """A suballocated runtime buffer (vkir.runtime.suballoc)."""
        from ..runtime.suballoc import allocate

        return allocate(self.device, nbytes)

    def free(self, buffer) -> None:
        """Nothing to do now: a runtime buffer's memory goes back when it is collected."""

    def copy_in(self, buffer, array) -> None:
        """Write `array` into `buffer` (waiting for work that reads it)."""
        buffer.write(array)

    def copy_out(self, buffer, out) -> None:
        """Read `buffer` into `out` (waiting for work that writes it)."""
        buffer.read(out)

    def view(self, buffer, offset: int, nbytes: int):
        """A BufferView (vkir.driver.buffer_view): a descriptor range of `buffer`."""
        from ..driver.buffer_view import BufferView

        return BufferView(buffer, offset, nbytes)

    def address(self, buffer) -> int:
        """vkir.runtime.memory.device_address: vkGetBufferDeviceAddress plus the offset (the
        device's buffers have addresses where it has bufferDeviceAddress)."""
        from ..runtime.memory import device_address

        return device_address(buffer)

    def in_place(self, array, written: bool):
        """The imported memory of `array` (vkir.runtime.host_import, kept while the array
        lives) on a unified-memory device with VK_EXT_external_memory_host, where the array is
        C-contiguous, aligned as descriptors ask and writeable (or only read); else None."""
        if not self.device.host_visible_buffers or not array.flags.c_contiguous or \
                (written and not array.flags.writeable) or array.dtype.byteorder == ">":
            return None
        from ..runtime.host_import import call_imports

        with self.device.lifetime:   # a closed device raises DeviceError; close() waits for this
            return call_imports(self.device).get(array)


class VulkanProgram(Program):
    """A runtime ComputePipeline held by one holder (released once by `release`). After
    `Device.reset_pipeline_cache` destroyed its pipeline, the next use creates it again from the
    same SPIR-V (a cold compile, which is what the reset is for), so kernels, ops and caches that
    hold programs keep working."""

    def __init__(self, device, pipeline, spec: ProgramSpec | None = None):
        self.device = device
        self.handle = pipeline
        self.spec = spec
        self._renew = threading.Lock()   # two threads finding it destroyed renew it once

    def live(self):
        """The pipeline, created again from `spec` where a pipeline-cache reset destroyed it (a
        closed device raises DeviceError here, as every other use of it does)."""
        pipeline = self.handle
        if pipeline.handle is not None or self.spec is None:
            return pipeline
        with self._renew:
            if self.handle.handle is None:
                self.device.check_open()
                self.handle = _get_pipeline(self.device, self.spec)
            return self.handle

    @property
    def create_seconds(self) -> float:
        """vkCreateShaderModule + vkCreateComputePipelines of the pipeline."""
        return self.handle.create_seconds

    @property
    def first_run_seconds(self) -> float | None:
        """Wall seconds of the pipeline's first waited dispatch (a lazy driver's compile)."""
        return self.handle.first_run_seconds

    @property
    def alive(self) -> bool:
        """False while a `Device.reset_pipeline_cache` has left the pipeline destroyed (its next
        use creates it again)."""
        return self.handle.handle is not None

    def launch(self, buffers, push: bytes, groups: tuple, timed: bool = False):
        """The cached runtime RecordedLaunch (vkir.runtime.get_launch), recorded on first use: its
        run, submit (an in-flight runtime Submission) and elapsed are the protocol's. The
        caller checked the group counts and buffer ranges (Runtime.check_grid, check_groups,
        check_binding_range; arrays at allocation), so recording does not check them again."""
        from ..runtime import get_launch

        return get_launch(self.device, self.live(), buffers, push, groups, timed=timed,
                          checked=True)

    def profile(self, buffers, push: bytes, groups: tuple, repeat: int, warmup: int):
        """vkir.runtime.profile: timestamp queries, or wall time where the queue has none."""
        from ..runtime import profile

        return profile(self.device, self.live(), buffers, push, groups, repeat=repeat,
                       warmup=warmup, checked=True)

    def dispatch(self, buffers, access: tuple, push: bytes, groups: tuple, name: str, keep,
                 addressed: tuple = ()):
        """A vkir.runtime.Dispatch for sequences (its limits checked by the caller, as for
        `launch`; `addressed` orders barriers for buffers reached through device addresses)."""
        from ..runtime import Dispatch

        return Dispatch(self.live(), tuple(buffers), access, push, groups, name, keep,
                        checked=True, addressed=tuple(addressed))

    def release(self) -> None:
        """vkir.runtime.release_pipeline (the last holder destroys it and its launches)."""
        from ..runtime import release_pipeline

        release_pipeline(self.device, self.handle)


class VulkanRuntime(VulkanImages, ShaderRuntime, Runtime):
    """An opened vkir.runtime Device behind the device seam, with every capability (images:
    vulkan_images.py; timestamps where the compute queue has them)."""

    kind = "vulkan"

    def __init__(self, device):
        self.device = device
        self.allocator = VulkanAllocator(device)

    # the device's DeviceInfo is read at each use (a test may replace it)
    @property
    def info(self):
        """The device's vkir.runtime DeviceInfo."""
        return self.device.info

    @property
    def name(self) -> str:
        """The device's name."""
        return self.device.info.name

    @property
    def subgroup_size(self) -> int:
        """The device's default subgroup size."""
        return self.device.info.subgroup_size

    @property
    def quirks(self) -> frozenset:
        """The driver quirks of the device (vkir.quirks)."""
        return frozenset(getattr(self.device.info, "quirks", frozenset()))

    @property
    def features(self) -> frozenset:
        """The optional device features the device offers (DeviceInfo.features)."""
        return frozenset(self.device.info.features)

    @property
    def subgroup_operations(self) -> frozenset:
        """The subgroup operation kinds the device offers (DeviceInfo.subgroup_operations)."""
        return frozenset(self.device.info.subgroup_operations)

    @property
    def extensions(self) -> frozenset:
        """The device extensions the device offers (DeviceInfo.extensions)."""
        return frozenset(getattr(self.device.info, "extensions", frozenset()))

    @property
    def capabilities(self) -> frozenset:
        """Every capability of the seam; "timestamps" where the compute queue has timestamp
        queries."""
        timed = self.device.timestamp_bits > 0
        return frozenset(c for c in CAPABILITIES if timed or c != "timestamps")

    @property
    def limits(self):
        """The runtime Limits of the device."""
        return self.info.limits

    def target(self, precise: bool = False):
        """`Target.from_device` of the device (`precise`: no contraction or reassociation)."""
        from ..driver.arrays import target_for

        return target_for(self.info, precise)

    def check_limits(self, bindings: int, push_bytes: int, local_size: tuple, shared_bytes: int,
                     what: str, images: tuple = ()) -> None:
        """vkir.runtime.limits' descriptor (buffers, images, samplers, texel buffers and the
        storage-buffer variant of texel reads), push-constant and workgroup checks."""
        from ..runtime import limits

        limits.check_bindings(self.info, bindings, what, images=images, texel_storage=True)
        limits.check_push_constants(self.info, push_bytes, what)
        limits.check_workgroup(self.info, local_size, shared_bytes, what)

    def check_grid(self, groups: tuple, what: str) -> None:
        """vkir.runtime.limits.check_grid: maxComputeWorkGroupCount per blockIdx axis."""
        from ..runtime import limits

        limits.check_grid(self.info, groups, what)

    def check_shader(self, local_size: tuple, shared_bytes: int, push_bytes: int,
                     what: str) -> None:
        """vkir.runtime.limits.check_shader: local size, invocations, shared memory, push
        constants."""
        from ..runtime import limits

        limits.check_shader(self.info, local_size, shared_bytes, push_bytes, what)

    def check_bindings(self, count: int, what: str, uniform: int = 0, numbers: tuple = (),
                       images: tuple = ()) -> None:
        """vkir.runtime.limits.check_bindings: storage and uniform buffers, storage images,
        sampled images and samplers per stage and set, resources per stage, binding numbers."""
        from ..runtime import limits

        limits.check_bindings(self.info, count, what, uniform, numbers, images)

    def check_groups(self, groups: tuple, what: str) -> None:
        """vkir.runtime.limits.check_groups: three non-negative counts within
        maxComputeWorkGroupCount."""
        from ..runtime import limits

        limits.check_groups(self.info, groups, what)

    def check_binding_range(self, nbytes: int, kind: str, what: str) -> None:
        """vkir.runtime.limits.check_binding_range: maxStorageBufferRange or
        maxUniformBufferRange."""
        from ..runtime import limits

        limits.check_binding_range(self.info, nbytes, kind, what)

    def subgroup_requirement(self, size: int, workgroup_x: int, what: str):
        """vkir.runtime.subgroup_requirement: the pipeline's required subgroup size."""
        from ..runtime import subgroup_requirement

        return subgroup_requirement(self.info, size, workgroup_x, what)

    def program(self, spec: ProgramSpec) -> VulkanProgram:
        """The device's cached pipeline for `spec` (vkir.runtime.get_pipeline), held once more;
        its limits were checked by the caller (`check_limits` or `check_shader` and
        `check_bindings`), so the pipeline's creation does not check them again."""
        return VulkanProgram(self.device, _get_pipeline(self.device, spec), spec)

    def check_open(self) -> None:
        """DeviceError when the device was closed."""
        self.device.check_open()


class VulkanBackend(DeviceBackend):
    """Kernels on Vulkan devices."""

    name = "vulkan"

    def target(self, precise: bool = False):
        """The Target of the default Vulkan device."""
        from ..driver.arrays import resolve_device, target_for

        return target_for(resolve_device(None).info, precise)

    def runtime(self, device=None) -> VulkanRuntime:
        """The seam Runtime of `device` (a selector as for vkir.device, an opened Device, or
        None for the default one); a VulkanRuntime is itself."""
        if isinstance(device, VulkanRuntime):
            return device
        from ..driver.arrays import resolve_device

        return VulkanRuntime(resolve_device(device))

    def kernel(self, func: PrimFunc, device=None, *, pointer_casts: bool = False,
               precise: bool = False, check_bounds: bool = False):
        """The device Kernel of `func` on `device` (a selector as for vkir.device, an opened
        Device, or None for the default one); with `check_bounds`, a BoundsCheckedKernel; on a
        driver that cuts long loops, with loop-cut checks where the host cannot bound a loop
        (vkir.driver.loop_cut)."""
        from ..driver.kernel import Kernel
        from ..driver.loop_cut import with_loop_checks
        from ..transform.bind_parallel import BindParallel

        rt = self.runtime(device)
        source, func = func, BindParallel(target=rt.target(precise))(func)   # onto the grid

        def build(f):   # with loop-cut checks where the driver could cut a loop silently
            return with_loop_checks(f, rt.quirks, lambda g: Kernel(g, rt, pointer_casts, precise))

        if check_bounds:
            from ..driver.bounds_check import BoundsCheckedKernel

            kernel = BoundsCheckedKernel(func, build)
        else:
            kernel = build(func)
        kernel.source = source   # as written: what vkir.Tape differentiates
        return kernel
