"""Many dispatches in one command buffer, with a barrier only where one depends on another.

`Dispatch` is the recording interface: everything needed to record one compute dispatch (the
pipeline, the buffers in binding order with how the shader accesses each, push-constant bytes,
group counts) plus a name for profiles. vkir's Kernel produces one with `dispatch_spec(*args)`;
anything else that owns a runtime ComputePipeline (a kernel loaded from existing SPIR-V) can do
the same.

`Recording` records a list of them once and can be submitted any number of times. Between two
dispatches it inserts a compute->compute memory barrier only when the later one reads a buffer an
earlier one (since the last barrier) wrote, or writes a buffer an earlier one read or wrote; a
barrier orders everything before it, so the tracking starts afresh after each. The whole command
buffer is framed like a single launch: earlier shader/transfer writes are made visible at the
start, shader writes are made visible to the host and to transfers at the end. With `timed`, a
timestamp is written before and after every dispatch.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from vkir.errors import ArgumentError, DeviceError

from ._vk import check, ffi, lib, vk
from .device import submit_info
from .launch import SHADER, TRANSFER, bind_sets, check_dispatch, descriptor_sets, serials_of
from .memory import memory_barrier

ACCESS_MODES = ("r", "w", "rw")


@dataclass(frozen=True, eq=False)
class Dispatch:
    """One compute dispatch to record.

    `pipeline`: a runtime ComputePipeline; `buffers`: runtime Buffers in the order of
    pipeline.bindings; `access`: per buffer "r" (read only), "w" (written only) or "rw";
    `push`: push-constant bytes; `groups`: (x, y, z) workgroup counts; `name`: shown in
    profiles; `keep`: objects that must stay alive as long as the dispatch may run or be
    replayed: the arrays, and whatever holds the pipeline (the kernel: a dropped kernel
    releases its pipeline); `checks`: what must run around each run, e.g. the violation
    record of a bounds-checked kernel (`reset()` before a run is submitted, `verify()` once it
    has finished, which may raise); `checked`: whoever made it checked its group counts and
    buffer ranges against the device limits already (vkir's kernels do), so recording does not
    check them again; `addressed`: (buffer, access mode) pairs of the buffers the shader reaches
    through device addresses (buffer_reference pointers in its push constants or buffers), which
    order barriers and host waits as bound buffers do."""

    pipeline: object
    buffers: tuple
    access: tuple
    push: bytes
    groups: tuple
    name: str = "dispatch"
    keep: tuple = ()
    checks: tuple = ()   # objects with reset() (before each run) and verify() (after it ended)
    checked: bool = False
    addressed: tuple = ()   # ((buffer, "r" | "w" | "rw"), ...) reached through device addresses

    def __post_init__(self):
        if len(self.access) != len(self.buffers):
            raise ArgumentError(f"dispatch {self.name}: {len(self.buffers)} buffers but "
                                f"{len(self.access)} access modes")
        for mode in self.access:
            if mode not in ACCESS_MODES:
                raise ArgumentError(f"dispatch {self.name}: access mode {mode!r} is not one of "
                                    f"{ACCESS_MODES}")


def needs_barrier(dispatches) -> list:
    """For each dispatch, whether a barrier must precede it (read-after-write, write-after-read
    or write-after-write on one buffer since the last barrier)."""
    out = []
    written, read = set(), set()
    for d in dispatches:
        need = False
        pairs = list(zip(d.buffers, d.access)) + list(d.addressed)
        uses = [(s, mode) for b, mode in pairs for s in serials_of((b,))]
        for s, mode in uses:
            if ("r" in mode and s in written) or ("w" in mode and (s in written or s in read)):
                need = True
                break
        if need:
            written.clear()
            read.clear()
        for s, mode in uses:
            if "w" in mode:
                written.add(s)
            if "r" in mode:
                read.add(s)
        out.append(need)
    return out


class Recording:
    """A recorded command buffer of `dispatches` on `device`; `submit()` runs it once more."""

    def __init__(self, device, dispatches, timed: bool = False):
        self.device = device
        self.dispatches = tuple(dispatches)
        self.timed = bool(timed) and device.timestamp_bits > 0
        self.serials = serials_of([b for d in self.dispatches for b in d.buffers]
                                  + [b for d in self.dispatches for b, _ in d.addressed])
        self.keep = tuple(d.keep for d in self.dispatches) + tuple(
            (d.buffers, d.addressed) for d in self.dispatches)
        self.cmd = None
        self.query_pool = None
        self._res = res = _Resources()
        barriers = needs_barrier(self.dispatches)
        self.barriers = sum(barriers)
        with device.lifetime, device._lock:
            device.check_open()
            device.collect()
            for d in self.dispatches:
                if d.pipeline.handle is None:
                    raise DeviceError(f"the pipeline of {d.name} was destroyed; build it again")
                if d.pipeline.device is not device:
                    raise ArgumentError(f"dispatch {d.name} was built for another device than "
                                        f"{device!r}")
                check_dispatch(device, d.pipeline, d.buffers, d.push, d.groups,
                               limits=not d.checked)
            device.recordings[id(res)] = res
            fin = weakref.finalize(self, _defer_free, device, res)
            fin.atexit = False
            try:
                self._record(barriers)
            except BaseException:
                self.destroy()
                raise

    def _record(self, barriers) -> None:
        device = self.device
        n = len(self.dispatches)
        if self.timed and n:
            self.query_pool = self._res.query_pool = vk.vkCreateQueryPool(
                device.handle, vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                                                        queryCount=2 * n), None)
        self.cmd = self._res.cmd = cmd = device.allocate_command_buffer()
        begin = vk.VkCommandBufferBeginInfo()
        check(lib.vkBeginCommandBuffer(cmd, ffi.addressof(begin)), "vkBeginCommandBuffer")
        memory_barrier(cmd, SHADER | TRANSFER, vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                 SHADER, vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
        if self.query_pool is not None:
            lib.vkCmdResetQueryPool(cmd, self.query_pool, 0, 2 * n)
        bound, bound_set, pushed = None, None, None
        sets = {}   # (pipeline, buffer serials) -> descriptor set: one per distinct binding
        for i, (d, barrier) in enumerate(zip(self.dispatches, barriers)):
            if barrier:
                memory_barrier(cmd, SHADER, vk.VK_ACCESS_SHADER_WRITE_BIT, SHADER,
                         vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
            pipeline = d.pipeline
            if pipeline is not bound:
                lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
                bound, bound_set, pushed = pipeline, None, None
            key = (pipeline, tuple(b.serial for b in d.buffers))
            dsets = sets.get(key)
            if dsets is None:
                dsets = descriptor_sets(device, pipeline, d.buffers, read_only=False)
                self._res.sets.extend((pool, dset) for _, pool, dset in dsets)
                sets[key] = dsets
            if dsets is not bound_set:
                bind_sets(cmd, pipeline, dsets)
                bound_set = dsets
            if pipeline.push_constant_size and d.push != pushed:
                data = bytes(d.push).ljust(pipeline.push_constant_size, b"\0")
                lib.vkCmdPushConstants(cmd, pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       len(data), ffi.from_buffer(data))
                pushed = d.push
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 2 * i)
            lib.vkCmdDispatch(cmd, *d.groups)
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query_pool,
                                        2 * i + 1)
        memory_barrier(cmd, SHADER, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT | TRANSFER,
                 vk.VK_ACCESS_HOST_READ_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT)
        check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
        self.submit_info, self._keep_info = submit_info(cmd)

    def submit(self, what: str = "sequence"):
        """Submit without waiting; the in-flight Submission (waits first for a previous
        submission of this recording that is still running)."""
        from .submission import submit_async

        with self.device.lifetime, self.device._lock:
            self.device.check_open()
            for d in self.dispatches:
                if d.pipeline.handle is None:
                    raise DeviceError(f"{what}: the pipeline of {d.name} was destroyed; record again")
            return submit_async(self.device, self.submit_info, self, self.serials, self.keep, what)

    def elapsed(self) -> list:
        """Device seconds of each dispatch in the last finished run (timed recordings only)."""
        n = len(self.dispatches)
        if self.query_pool is None or not n:
            return [0.0] * n
        out = ffi.new("uint64_t[]", 2 * n)
        with self.device.lifetime, self.device._lock:
            self.device.check_open()
            check(lib.vkGetQueryPoolResults(self.device.handle, self.query_pool, 0, 2 * n, 16 * n,
                                            out, 8,
                                            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults")
        bits = self.device.timestamp_bits
        mask = (1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF
        period = self.device.info.limits.timestamp_period_ns * 1e-9
        return [(((out[2 * i + 1] & mask) - (out[2 * i] & mask)) & mask) * period for i in range(n)]

    def destroy(self) -> None:
        """Free the command buffer, descriptor sets and query pool (waits if still running).
        Once the device is closing, close() frees them instead."""
        device = self.device
        if device.lifetime.try_enter():
            try:
                if device._inflight:
                    device.wait_for(owner=self)
                with device._lock:
                    if not device.closed and device.recordings.pop(id(self._res), None) is not None:
                        self._res.free(device)
            finally:
                device.lifetime.__exit__()
        self.cmd = self.query_pool = None


class _Resources:
    """What a Recording owns on the device, apart from the Recording (so a finalizer can free
    it): the command buffer, its descriptor sets, the timestamp query pool."""

    __slots__ = ("cmd", "sets", "query_pool")

    def __init__(self):
        self.cmd = None
        self.sets = []
        self.query_pool = None

    def free(self, device) -> None:
        """Destroy everything (the caller holds the device lock; nothing of it is in flight)."""
        if self.cmd is not None:
            lib.vkFreeCommandBuffers(device.handle, device.command_pool, 1,
                                     ffi.new("VkCommandBuffer[]", [self.cmd]))
            self.cmd = None
        for pool, dset in self.sets:
            lib.vkFreeDescriptorSets(device.handle, pool, 1, ffi.new("VkDescriptorSet[]", [dset]))
        self.sets = []
        if self.query_pool is not None:
            lib.vkDestroyQueryPool(device.handle, self.query_pool, ffi.NULL)
            self.query_pool = None


def _defer_free(device, res) -> None:
    """Finalizer of a Recording: free its resources at the device's next collect (finalizers
    run on any thread, at any point; Vulkan calls wait for the device lock there)."""
    if device.recordings.pop(id(res), None) is not None:
        device._deferred.append(res)
