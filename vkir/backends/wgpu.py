"""WebGPU as a backend, through wgpu-py (the extra `vkir[wgpu]`): `vkir.build(f, device="wgpu")`
lowers `f` for the adapter's Target (kind "wgpu": Vulkan SPIR-V 1.3 with no optional feature),
and wgpu's translator (naga) takes the SPIR-V; push constants are WebGPU's immediates, storage
buffers one bind group. The Kernel is vkir's own (vkir.driver.kernel): same call signature,
argument checks, write-back, launches and profiles as on Vulkan.

This module is the whole backend: the device seam (protocol.py) over wgpu-py. What WebGPU lacks
is refused by name before anything is dispatched: optional SPIR-V features (float64, int64,
8/16-bit storage, atomics on floats: codegen names the feature; int8 and bool buffers are
emulated in 32-bit words as on Vulkan without them), subgroup operations (WebGPU cannot pin a
subgroup size), push constants without the adapter's "immediates" feature, sequences, written
arguments that share memory with another (naga drops SPIR-V's Aliased decoration), and the
adapter's limits on buffers, workgroups and shared memory; a module naga refuses is an
UnsupportedError quoting naga. Kernels take numpy arrays and Python scalars (vkir DeviceArrays
live on Vulkan devices). wgpu-py offers no non-blocking wait on its queue, so a launch runs to
its end when submitted (its handle is done at once).
"""

from __future__ import annotations

import functools
import os
import tempfile
import time

import numpy as np

from ..errors import ArgumentError, UnsupportedError
from ..limits import Limits
from .base import DeviceBackend
from ..seam import Allocator, Launch, Program, ProgramSpec, Runtime

INSTALL = "pip install 'vkir[wgpu]'"
_STORAGE_ALIGN = 4   # WebGPU copies move multiples of 4 bytes


def _wgpu():
    """The wgpu module (UnsupportedError naming the extra where it is not installed)."""
    # wgpu-native's loader warns where XDG_RUNTIME_DIR is unset (headless machines)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    try:
        import wgpu
    except ImportError:
        raise UnsupportedError(f"device='wgpu' needs wgpu-py: {INSTALL}") from None
    return wgpu


def _padded(nbytes: int) -> int:
    return max(_STORAGE_ALIGN, -(-nbytes // _STORAGE_ALIGN) * _STORAGE_ALIGN)


class WgpuBuffer:
    """`nbytes` bytes at `offset` in a wgpu GPUBuffer (`gpu`): an allocation or a view of one."""

    __slots__ = ("gpu", "offset", "nbytes", "__weakref__")

    def __init__(self, gpu, offset: int, nbytes: int):
        self.gpu, self.offset, self.nbytes = gpu, offset, nbytes

    def __repr__(self) -> str:
        return f"<wgpu buffer of {self.nbytes} bytes at {self.offset}>"


class WgpuAllocator(Allocator):
    """Storage buffers of one wgpu device (`runtime`'s); copies through its queue."""

    def __init__(self, device, runtime: "WgpuRuntime"):
        self.device, self.runtime = device, runtime

    def allocate(self, nbytes: int) -> WgpuBuffer:
        """A storage buffer (size rounded up to 4 bytes, as WebGPU binds and copies);
        UnsupportedError where it exceeds the adapter's maxStorageBufferBindingSize (every
        buffer is bound whole), before wgpu's own validation error."""
        cap = self.runtime.limits.max_storage_buffer_range
        if _padded(nbytes) > cap:
            raise UnsupportedError(f"a buffer of {nbytes} bytes exceeds WebGPU's "
                                   f"maxStorageBufferBindingSize = {cap} of "
                                   f"{self.runtime.name!r}")
        usage = _wgpu().BufferUsage
        gpu = self.device.create_buffer(size=_padded(nbytes),
                                        usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        return WgpuBuffer(gpu, 0, nbytes)

    def free(self, buffer: WgpuBuffer) -> None:
        """Destroy the GPUBuffer now."""
        buffer.gpu.destroy()

    def copy_in(self, buffer: WgpuBuffer, array) -> None:
        """queue.write_buffer of the array's bytes (padded to 4)."""
        data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        if data.nbytes % _STORAGE_ALIGN:
            data = np.concatenate([data, np.zeros(_padded(data.nbytes) - data.nbytes, np.uint8)])
        if data.nbytes:
            self.device.queue.write_buffer(buffer.gpu, buffer.offset, data)

    def copy_out(self, buffer: WgpuBuffer, out) -> None:
        """queue.read_buffer (which waits for the work submitted before it) into `out`."""
        nbytes = out.nbytes
        if not nbytes:
            return
        raw = self.device.queue.read_buffer(buffer.gpu, buffer.offset, _padded(nbytes))
        flat = out.reshape(-1).view(np.uint8) if out.flags.c_contiguous else None
        got = np.frombuffer(raw, np.uint8, nbytes)
        if flat is not None:
            flat[:] = got
        else:
            out[...] = got.view(out.dtype).reshape(out.shape)

    def view(self, buffer: WgpuBuffer, offset: int, nbytes: int) -> WgpuBuffer:
        """`nbytes` at `offset` of `buffer`, bound as its own range."""
        return WgpuBuffer(buffer.gpu, buffer.offset + offset, nbytes)


class WgpuLaunch(Launch):
    """A program bound to buffers, immediates and group counts (one bind group)."""

    def __init__(self, program: "WgpuProgram", buffers, push: bytes, groups: tuple):
        self.program, self.push, self.groups = program, bytes(push), tuple(groups)
        self.buffers = tuple(buffers)   # held: the bind group refers to them
        rt = program.runtime
        entries = [{"binding": number, "resource": {"buffer": b.gpu, "offset": b.offset,
                                                   "size": _padded(b.nbytes)}}
                   for number, b in zip(program.spec.bindings, self.buffers)]
        self.bind_group = rt.device.create_bind_group(layout=program.bind_layout, entries=entries)

    def _encode_and_submit(self) -> None:
        rt = self.program.runtime
        encoder = rt.device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.program.handle)
        compute.set_bind_group(0, self.bind_group)
        size = self.program.immediate_size
        if size:
            data = self.push.ljust(size, b"\0")
            compute.set_immediates(0, data, 0, size)
        compute.dispatch_workgroups(*self.groups)
        compute.end()
        rt.device.queue.submit([encoder.finish()])

    def run(self, if_recorded: bool = False, keep=None) -> bool:
        """Submit and wait for the end."""
        program = self.program
        started = time.perf_counter()
        self._encode_and_submit()
        program.runtime.wait_idle()
        if program.first_run is None:
            program.first_run = time.perf_counter() - started
        return True


class WgpuProgram(Program):
    """A compute pipeline from vkir's SPIR-V (naga translates it), its bind group layout (every
    binding a read-write storage buffer) and its immediates."""

    def __init__(self, runtime: "WgpuRuntime", spec: ProgramSpec):
        wgpu = _wgpu()
        self.runtime, self.spec = runtime, spec
        self.first_run = None
        device = runtime.device
        self.immediate_size = -(-spec.push_constant_size // 4) * 4
        started = time.perf_counter()
        try:
            module = device.create_shader_module(code=spec.spirv)
            entries = [{"binding": n, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": wgpu.BufferBindingType.storage}} for n in spec.bindings]
            self.bind_layout = device.create_bind_group_layout(entries=entries)
            layout = device.create_pipeline_layout(bind_group_layouts=[self.bind_layout],
                                                   immediate_size=self.immediate_size)
            self.handle = device.create_compute_pipeline(
                layout=layout, compute={"module": module, "entry_point": spec.entry_point})
        except wgpu.GPUError as exc:
            raise UnsupportedError(f"{spec.name}: WebGPU's shader translator (naga) refused "
                                   f"vkir's SPIR-V on {runtime.name!r}: {_naga_message(exc)}") \
                from None
        self.create_seconds = time.perf_counter() - started

    @property
    def first_run_seconds(self) -> float | None:
        """Wall seconds of the first waited dispatch."""
        return self.first_run

    def launch(self, buffers, push: bytes, groups: tuple, timed: bool = False) -> WgpuLaunch:
        """A WgpuLaunch (never timed: no timestamps through this backend)."""
        assert not timed, "the wgpu runtime has no timestamps"
        if len(buffers) != len(self.spec.bindings):
            raise ArgumentError(f"program has {len(self.spec.bindings)} bindings, got "
                                f"{len(buffers)} buffers")
        return WgpuLaunch(self, buffers, push, groups)


def _naga_message(exc) -> str:
    """What wgpu's error says naga refused (its reason lines, without the frame and the
    source-map drawing), on one line."""
    out = []
    for line in str(exc).splitlines():
        line = line.strip().lstrip("=").strip()
        if not line or line in ("Validation Error", "Caused by:") or line.startswith("In wgpu") \
                or line[0] in "┌│" or "│" in line or line.startswith("naga::"):
            continue
        if line not in out:
            out.append(line)
    return "; ".join(out[:4]) or type(exc).__name__


def wgpu_limits(adapter_limits: dict, immediates: bool) -> Limits:
    """vkir's Limits of a wgpu adapter's `limits` mapping (what WebGPU does not report keeps
    Vulkan's minimum)."""
    lim = adapter_limits
    count = lim["max-compute-workgroups-per-dimension"]
    return Limits(
        max_workgroup_size=(lim["max-compute-workgroup-size-x"],
                            lim["max-compute-workgroup-size-y"],
                            lim["max-compute-workgroup-size-z"]),
        max_workgroup_invocations=lim["max-compute-invocations-per-workgroup"],
        max_workgroup_count=(count, count, count),
        max_shared_memory_bytes=lim["max-compute-workgroup-storage-size"],
        max_push_constant_bytes=lim.get("max-immediate-size", 0) if immediates else 0,
        max_storage_buffer_range=lim["max-storage-buffer-binding-size"],
        max_per_stage_storage_buffers=lim["max-storage-buffers-per-shader-stage"],
        min_storage_buffer_offset_alignment=lim["min-storage-buffer-offset-alignment"])


class WgpuRuntime(Runtime):
    """A wgpu adapter and device behind the device seam. `adapter` is wgpu's (None: the default
    one wgpu picks, high performance first)."""

    kind = "wgpu"   # no capability: naga ignores SPIR-V's Aliased decoration, wgpu-py times
                    # nothing and records no sequences

    def __init__(self, adapter=None):
        wgpu = _wgpu()
        if adapter is None:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise UnsupportedError("device='wgpu': wgpu-py found no WebGPU adapter")
        self.adapter = adapter
        info = adapter.info
        self.name = f"{info.get('device') or info.get('vendor') or 'adapter'} (WebGPU, " \
                    f"{info.get('backend_type', '?')})"
        self.immediates = "immediates" in adapter.features
        self._limits = wgpu_limits(dict(adapter.limits), self.immediates)
        wanted = {"max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
                  "max-compute-workgroup-size-z", "max-compute-invocations-per-workgroup",
                  "max-compute-workgroup-storage-size", "max-storage-buffers-per-shader-stage",
                  "max-storage-buffer-binding-size", "max-buffer-size",
                  "max-compute-workgroups-per-dimension"}
        if self.immediates:
            wanted.add("max-immediate-size")
        self.device = adapter.request_device_sync(
            required_features=["immediates"] if self.immediates else [],
            required_limits={k: v for k, v in adapter.limits.items() if k in wanted})
        self.allocator = WgpuAllocator(self.device, self)
        # the driver under WebGPU keeps its quirks (a loop budget on llvmpipe before Mesa 25.0);
        # the adapter's description is the driver's info ("Mesa 25.0.7 ...") that dates them
        from ..quirks import LAVAPIPE, quirks_of

        self.quirks = LAVAPIPE & quirks_of(str(info.get("device", "")),
                                           str(info.get("description", "")))
        self._fence = self.device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)

    @property
    def limits(self) -> Limits:
        """The adapter's limits."""
        return self._limits

    def wait_idle(self) -> None:
        """Wait for every submitted dispatch: a read through the queue ends after them."""
        self.device.queue.read_buffer(self._fence, 0, 4)

    def target(self, precise: bool = False):
        """Vulkan SPIR-V 1.3 (what naga reads) with no optional feature, the adapter's limits
        and its driver's quirks; `precise` as on Vulkan."""
        from ..target import Target

        return Target(kind="wgpu", env="vulkan1.1", spirv_version=(1, 3), precise=precise,
                      quirks=self.quirks, limits=self._limits)

    def check_limits(self, bindings: int, push_bytes: int, local_size: tuple, shared_bytes: int,
                     what: str, images: tuple = ()) -> None:
        """The adapter's storage buffers per stage, immediates, workgroup size and workgroup
        storage (`images` is always empty here: the image seam refuses image parameters on
        WebGPU, and codegen emits texel reads for Vulkan targets only)."""
        if images:
            raise UnsupportedError(f"{what} binds images, samplers or texel buffers; vkir binds "
                                   f"none on WebGPU devices such as {self.name!r}")
        lim = self._limits
        if bindings > lim.max_per_stage_storage_buffers:
            raise UnsupportedError(f"{what} binds {bindings} storage buffers; WebGPU's "
                                   f"maxStorageBuffersPerShaderStage on {self.name!r} is "
                                   f"{lim.max_per_stage_storage_buffers}")
        if push_bytes and not self.immediates:
            raise UnsupportedError(f"{what} takes {push_bytes} bytes of push constants; "
                                   f"{self.name!r} lacks WebGPU's 'immediates' feature")
        if push_bytes > lim.max_push_constant_bytes:
            raise UnsupportedError(f"{what} takes {push_bytes} bytes of push constants; WebGPU's "
                                   f"maxImmediateSize on {self.name!r} is "
                                   f"{lim.max_push_constant_bytes}")
        for axis, (n, cap) in enumerate(zip(local_size, lim.max_workgroup_size)):
            if n > cap:
                raise UnsupportedError(f"{what}: workgroup size {n} on axis {'xyz'[axis]} exceeds "
                                       f"WebGPU's maxComputeWorkgroupSize{'XYZ'[axis]} = {cap}")
        total = int(np.prod(local_size))
        if total > lim.max_workgroup_invocations:
            raise UnsupportedError(f"{what}: {total} invocations per workgroup exceed WebGPU's "
                                   f"maxComputeInvocationsPerWorkgroup = "
                                   f"{lim.max_workgroup_invocations}")
        if shared_bytes > lim.max_shared_memory_bytes:
            raise UnsupportedError(f"{what}: {shared_bytes} bytes of shared memory exceed "
                                   f"WebGPU's maxComputeWorkgroupStorageSize = "
                                   f"{lim.max_shared_memory_bytes}")

    def program(self, spec: ProgramSpec) -> WgpuProgram:
        """A new WgpuProgram of `spec`."""
        return WgpuProgram(self, spec)


@functools.lru_cache(maxsize=1)
def default_runtime() -> WgpuRuntime:
    """The process's runtime on wgpu's default adapter (made on first use, then shared: an
    adapter and device per build would cost more than the build)."""
    return WgpuRuntime()


class WgpuBackend(DeviceBackend):
    """Kernels on WebGPU through wgpu-py (`device="wgpu"`)."""

    name = "wgpu"

    def runtime(self, device=None) -> WgpuRuntime:
        """`device` when it is a WgpuRuntime, else the default one."""
        return device if isinstance(device, WgpuRuntime) else default_runtime()
