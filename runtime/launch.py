"""Launches: a pipeline bound to buffers, push constants and a group count, pre-recorded.

A RecordedLaunch owns a descriptor set and a command buffer recorded once:

    barrier (earlier shader/transfer writes -> this shader), [timestamp], bind, push constants,
    vkCmdDispatch, [timestamp], barrier (shader writes -> host reads, later transfers)

so running it again is one vkQueueSubmit + fence wait. `dispatch` looks launches up in the device's
LRU cache keyed by (pipeline, buffer serials, push-constant bytes, groups, timed): calling a kernel
again on the same device buffers re-records nothing.
"""

from __future__ import annotations

import time

from vkir.errors import ArgumentError, DeviceError
from vkir.timing import Timing

from ._vk import check, ffi, lib, vk
from .device import LAUNCH_CACHE_SIZE, submit_info
from .images import GENERAL, READ_ONLY, read_only_barriers
from .limits import check_groups, check_storage_range
from .memory import memory_barrier

SHADER = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT


class RecordedLaunch:
    """One recorded dispatch; `run()` submits it and waits."""

    __slots__ = ("device", "pipeline", "serials", "sets", "cmd", "submit_info", "_keep",
                 "query_pool")

    def __init__(self, device, pipeline, buffers, push: bytes, groups: tuple, timed: bool):
        self.device = device
        self.pipeline = pipeline
        self.serials = serials_of(buffers)
        dev = device.handle
        self.query_pool = None
        self.cmd = None
        self.sets = []
        self.sets = descriptor_sets(device, pipeline, buffers)
        if timed:
            self.query_pool = vk.vkCreateQueryPool(dev, vk.VkQueryPoolCreateInfo(
                queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2), None)
        self.cmd = cmd = device.allocate_command_buffer()
        begin = vk.VkCommandBufferBeginInfo()
        check(lib.vkBeginCommandBuffer(cmd, ffi.addressof(begin)), "vkBeginCommandBuffer")
        memory_barrier(cmd, SHADER | TRANSFER, vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                 SHADER, vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
        if timed:
            lib.vkCmdResetQueryPool(cmd, self.query_pool, 0, 2)
            lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 0)
        sampled = sampled_images(pipeline, buffers)
        read_only_barriers(cmd, sampled, before=True)
        lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        bind_sets(cmd, pipeline, self.sets)
        if pipeline.push_constant_size:
            data = bytes(push).ljust(pipeline.push_constant_size, b"\0")
            lib.vkCmdPushConstants(cmd, pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(data),
                                   ffi.from_buffer(data))
        lib.vkCmdDispatch(cmd, *groups)
        if timed:
            lib.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query_pool, 1)
        read_only_barriers(cmd, sampled, before=False)
        memory_barrier(cmd, SHADER, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT | TRANSFER,
                 vk.VK_ACCESS_HOST_READ_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT)
        check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
        self.submit_info, self._keep = submit_info(cmd)

    def run(self, if_recorded: bool = False, keep=None, timeout=None) -> bool:
        """Submit the recorded commands and wait; True when it ran. A destroyed launch (evicted,
        or its pipeline or a buffer released) raises DeviceError, or returns False with
        `if_recorded` (callers that hold a launch across calls then look it up again). The wait
        gives up after `timeout` seconds (see submission.py); `keep` is what must stay alive
        should it give up while the dispatch still runs (the arguments)."""
        device = self.device
        with device.lifetime, device._lock:
            if self.cmd is None:
                device.check_open()
                if if_recorded:
                    return False
                raise DeviceError("this launch was destroyed (evicted, or its pipeline or one of "
                                  "its buffers was released); look it up again with get_launch")
            pipeline = self.pipeline
            what = f"dispatch of {pipeline.entry_point!r}"
            if pipeline.first_run_seconds is None:
                # drivers may compile lazily (llvmpipe does at the first dispatch): time it
                started = time.perf_counter()
                device.submit(self.submit_info, self, keep, self.serials, timeout, what)
                pipeline.first_run_seconds = time.perf_counter() - started
            else:
                device.submit(self.submit_info, self, keep, self.serials, timeout, what)
        return True

    def submit(self, keep=None, what: str = "launch"):
        """Submit without waiting: the in-flight Submission (keeping `keep` alive)."""
        from .submission import submit_async

        with self.device.lifetime, self.device._lock:
            if self.cmd is None:
                self.device.check_open()
                raise DeviceError("this launch was destroyed; look it up again with get_launch")
            return submit_async(self.device, self.submit_info, self, self.serials, keep, what)

    def elapsed(self) -> float:
        """Device seconds between the two timestamps of the last run (timed launches only)."""
        out = ffi.new("uint64_t[2]")
        with self.device.lifetime, self.device._lock:
            if self.query_pool is None:
                self.device.check_open()
                raise DeviceError("this launch was destroyed; its timestamps are gone")
            check(lib.vkGetQueryPoolResults(self.device.handle, self.query_pool, 0, 2, 16, out, 8,
                                            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults")
        bits = self.device.timestamp_bits
        mask = (1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF
        ticks = ((out[1] & mask) - (out[0] & mask)) & mask
        return ticks * self.device.info.limits.timestamp_period_ns * 1e-9

    def destroy(self) -> None:
        """Free the command buffer, descriptor sets and query pool (the caller holds the lock).
        The launch counts as destroyed at once; where a submission of it still runs (its wait
        timed out), its objects, and its pipeline's should the pipeline be destroyed meanwhile,
        are freed when that work ends, so a release never blocks on it."""
        from .submission import after_work

        device = self.device
        objects = (self.cmd, self.sets, self.query_pool)
        self.cmd, self.sets, self.query_pool = None, [], None
        pipeline = self.pipeline

        def free():
            pipeline.running_launches -= 1
            free_launch(device, *objects)
            if pipeline.destroy_pending and not pipeline.running_launches:
                pipeline.destroy()

        pipeline.running_launches += 1
        if not after_work(device, lambda s: s.owner is self, free):
            free()


def free_launch(device, cmd, sets, query_pool) -> None:
    """Free a launch's command buffer, descriptor sets and query pool (any may be None or
    empty; the caller holds the lock and none of them is in use)."""
    dev = device.handle
    if cmd is not None:
        lib.vkFreeCommandBuffers(dev, device.command_pool, 1, ffi.new("VkCommandBuffer[]", [cmd]))
    for _, pool, dset in sets:
        lib.vkFreeDescriptorSets(dev, pool, 1, ffi.new("VkDescriptorSet[]", [dset]))
    if query_pool is not None:
        lib.vkDestroyQueryPool(dev, query_pool, ffi.NULL)


def bind_sets(cmd, pipeline, sets) -> None:
    """Record the binding of `sets` ((set index, pool, set) from `descriptor_sets`)."""
    for index, _, dset in sets:
        lib.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout,
                                    index, 1, ffi.new("VkDescriptorSet[]", [dset]), 0, ffi.NULL)


def descriptor_sets(device, pipeline, buffers, read_only: bool = True) -> list:
    """[(set index, pool, set)]: new descriptor sets of `pipeline`'s layouts (every set that
    holds a binding) pointing at `buffers` (one per descriptor, array elements in order; each
    buffer at its offset and range; images, samplers and texel buffers by their views and
    handles), in the order of pipeline.bindings (the caller holds the lock). Sampled images are
    bound in SHADER_READ_ONLY_OPTIMAL where `read_only` (a launch moves them there,
    `sampled_images`), else in GENERAL, their resting layout (an image also bound as storage
    stays in GENERAL)."""
    used = sorted({dset for dset, _ in pipeline.slots}) or [0]
    sets = []
    try:
        for index in used:
            pool, dset = device.allocate_descriptor_set(pipeline.set_layouts[index])
            sets.append((index, pool, dset))
    except BaseException:
        for _, pool, dset in sets:
            lib.vkFreeDescriptorSets(device.handle, pool, 1, ffi.new("VkDescriptorSet[]", [dset]))
        raise
    handles = {index: dset for index, _, dset in sets}
    if pipeline.bindings:
        general = {id(getattr(r, "parent", r))   # a mip level (runtime.mips): its image
                   for r, kind in zip(buffers, pipeline.resource_types)
                   if kind == vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE}
        writes, keep = [], []
        resources = iter(buffers)
        elements = [(binding, kind, dset, i, next(resources))
                    for binding, kind, (dset, n) in zip(pipeline.bindings,
                                                         pipeline.descriptor_types, pipeline.slots)
                    for i in range(n)]
        for binding, kind, index, element, r in elements:
            write = {"dstSet": handles[index], "dstBinding": binding, "dstArrayElement": element,
                     "descriptorCount": 1, "descriptorType": kind}
            if kind in _BUFFER_KINDS:
                write["pBufferInfo"] = [vk.VkDescriptorBufferInfo(buffer=r.handle, offset=r.offset,
                                                                   range=r.range)]
            elif kind in _TEXEL_KINDS:
                views = ffi.new("VkBufferView[]", [r.view])
                keep.append(views)
                write["pTexelBufferView"] = views
            else:
                image = r.image if kind == _COMBINED else r
                layout = GENERAL if kind == vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE or \
                    not read_only or id(image) in general else READ_ONLY
                info = {"imageLayout": layout}
                if kind != vk.VK_DESCRIPTOR_TYPE_SAMPLER:
                    info["imageView"] = image.view
                if kind in (_COMBINED, vk.VK_DESCRIPTOR_TYPE_SAMPLER):
                    info["sampler"] = (r.sampler if kind == _COMBINED else r).handle
                write["pImageInfo"] = [vk.VkDescriptorImageInfo(**info)]
            writes.append(vk.VkWriteDescriptorSet(**write))
        vk.vkUpdateDescriptorSets(device.handle, len(writes), writes, 0, None)
    return sets


_BUFFER_KINDS = (vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER)
_TEXEL_KINDS = (vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER)
_COMBINED = vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER


def serials_of(resources) -> frozenset:
    """Every buffer and image serial `resources` use (an ImageSampler has two)."""
    out = set()
    for r in resources:
        s = r.serial
        out.update(s if isinstance(s, tuple) else (s,))
    return frozenset(out)


def sampled_images(pipeline, resources) -> list:
    """The distinct images a dispatch samples and does not also bind as storage images: the
    ones moved to SHADER_READ_ONLY_OPTIMAL around it."""
    storage, out = set(), {}
    for kind, r in zip(pipeline.resource_types, resources):
        if kind == vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE:
            storage.add(id(getattr(r, "parent", r)))   # a mip level (runtime.mips): its image
        elif kind == _COMBINED:
            out[id(r.image)] = r.image
        elif kind == vk.VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE:
            out[id(r)] = r
    return [img for key, img in out.items() if key not in storage]


def get_launch(device, pipeline, buffers, push: bytes = b"", groups=(1, 1, 1), timed: bool = False,
               checked: bool = False) -> RecordedLaunch:
    """The cached RecordedLaunch for these exact arguments, recorded on first use. `checked=True`: the
    caller checked the group counts and buffer ranges against the device limits already (vkir's
    kernels do, once per call), so recording does not check them again."""
    key = (pipeline, tuple(b.serial for b in buffers), push, groups, timed)
    launches = device.launches
    with device.lifetime, device._lock:
        device.check_open()
        launch = launches.get(key)
        if launch is not None:
            launches.move_to_end(key)
            return launch
        device.collect()
        if pipeline.handle is None:
            raise DeviceError("this pipeline was destroyed (device closed or pipeline cache reset); "
                              "build the kernel again")
        check_dispatch(device, pipeline, buffers, push, groups, limits=not checked)
        launch = RecordedLaunch(device, pipeline, buffers, push, groups, timed)
        launches[key] = launch
        while len(launches) > LAUNCH_CACHE_SIZE:
            launches.popitem(last=False)[1].destroy()
    return launch


def check_dispatch(device, pipeline, buffers, push, groups, limits: bool = True):
    """Refuse a dispatch the pipeline or the device cannot take (buffer count, push-constant
    size, buffers' device; with `limits`, buffer ranges and group counts) before anything is
    recorded."""
    if len(buffers) != pipeline.descriptor_count:
        raise ArgumentError(f"pipeline has {pipeline.descriptor_count} bindings (descriptors), "
                            f"got {len(buffers)} buffers")
    if len(push) > pipeline.push_constant_size:
        raise ArgumentError(f"{len(push)} push-constant bytes for a block of {pipeline.push_constant_size}")
    for b, kind in zip(buffers, pipeline.resource_types):
        if b.device is not device:
            raise ArgumentError(f"{b!r} lives on another device than {device!r}")
        if limits and kind in _BUFFER_KINDS:
            check_storage_range(device.info, b.nbytes, f"binding {b!r}")
    if limits:
        check_groups(device.info, groups)


def dispatch(device, pipeline, buffers, push: bytes = b"", groups=(1, 1, 1)) -> None:
    """Run `pipeline` once on `buffers` and wait for it."""
    get_launch(device, pipeline, buffers, push, groups).run()


def profile(device, pipeline, buffers, push: bytes = b"", groups=(1, 1, 1), repeat: int = 50,
            warmup: int = 1, checked: bool = False) -> Timing:
    """Time `repeat` runs (after `warmup` untimed ones) with timestamp queries, or wall time
    (`checked` as for `get_launch`)."""
    if repeat < 1:
        raise ArgumentError(f"repeat must be >= 1, got {repeat}")
    timed = device.timestamp_bits > 0
    launch = get_launch(device, pipeline, buffers, push, groups, timed=timed, checked=checked)
    for _ in range(warmup):
        launch.run()
    samples = []
    for _ in range(repeat):
        if timed:
            launch.run()
            samples.append(launch.elapsed())
        else:
            t0 = time.perf_counter()
            launch.run()
            samples.append(time.perf_counter() - t0)
    return Timing.of(samples, "timestamp" if timed else "wall")
