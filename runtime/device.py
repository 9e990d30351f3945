"""Device: a logical VkDevice with one compute queue and everything dispatch needs.

It enables only what kernels can use (shaderInt64/Int16/Float64, float16/int8 arithmetic, 8/16-bit
storage, variable pointers, int64 and float32 atomics with their extensions; robustness and the
rest stay off), owns the command pool, descriptor
pools, the VkPipelineCache, a fence, and the caches of pipelines and pre-recorded launches.
A plain dispatch is synchronous: its submit is waited for (in slices, with a timeout). Work left
in flight (asynchronous launches, sequences, a dispatch whose wait timed out) is a Submission in
`_inflight` (see submission.py); host copies of a buffer it uses, and re-submitting its command
buffer, wait for it first.

Lifetimes: a buffer's memory is freed as soon as its Python object is collected; a pipeline is
destroyed (with the launches recorded for it) once every holder released it; `close()` destroys
everything, is idempotent, and afterwards every use raises DeviceError ("device closed") instead of
reaching freed handles. Thread safety: one re-entrant lock guards the queue, the command and
descriptor pools, the staging buffer and the caches; a lifetime guard (lifetime.py) counts the
operations in flight, so that a close() from another thread waits for them before it destroys
anything (fence waits run outside the lock).
"""

from __future__ import annotations

import itertools
import struct
import threading
import time
import weakref
from collections import OrderedDict

from vkir.errors import DeviceError, UnsupportedError
from vkir.features import SHADER_EXTENSIONS

from . import pipeline_cache
from ._vk import call, check, cstr, ffi, lib, vk
from .lifetime import Lifetime
from .info import (COMPUTE_FULL_SUBGROUPS, CORE_FEATURES, EXTENSION_STRUCTS, FEATURE_STRUCTS,
                   SUBGROUP_SIZE_CONTROL, DeviceInfo)

UINT64_MAX = 0xFFFFFFFFFFFFFFFF
# `void main() {}` with local size 1x1x1: OpCapability Shader, OpMemoryModel Logical GLSL450,
# OpEntryPoint GLCompute "main", OpExecutionMode LocalSize 1 1 1, an empty function (SPIR-V 1.3)
EMPTY_COMPUTE_SHADER = struct.pack("<35I", *(
    0x07230203, 0x00010300, 0x00070000, 0x00000005, 0x00000000, 0x00020011, 0x00000001,
    0x0003000E, 0x00000000, 0x00000001, 0x0005000F, 0x00000005, 0x00000001, 0x6E69616D,
    0x00000000, 0x00060010, 0x00000001, 0x00000011, 0x00000001, 0x00000001, 0x00000001,
    0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00050036, 0x00000002,
    0x00000001, 0x00000000, 0x00000003, 0x000200F8, 0x00000004, 0x000100FD, 0x00010038))
SHUTDOWN_WAIT = 5.0   # seconds close() waits for work still in flight before giving it up
# extensions that carry feature structs on devices older than the version that made them core
FEATURE_EXTENSIONS = {
    "VkPhysicalDeviceShaderFloat16Int8Features": ("VK_KHR_shader_float16_int8", (1, 2)),
    "VkPhysicalDevice8BitStorageFeatures": ("VK_KHR_8bit_storage", (1, 2)),
    "VkPhysicalDeviceShaderAtomicInt64Features": ("VK_KHR_shader_atomic_int64", (1, 2)),
    "VkPhysicalDeviceVulkanMemoryModelFeatures": ("VK_KHR_vulkan_memory_model", (1, 2)),
    "VkPhysicalDeviceBufferDeviceAddressFeatures": ("VK_KHR_buffer_device_address", (1, 2)),
    "VkPhysicalDeviceShaderIntegerDotProductFeatures":
        ("VK_KHR_shader_integer_dot_product", (1, 3)),
    "VkPhysicalDeviceMaintenance4Features": ("VK_KHR_maintenance4", (1, 3)),
}

LAUNCH_CACHE_SIZE = 256
DESCRIPTOR_POOL_SETS = 256
DESCRIPTOR_POOL_BUFFERS = 256 * 8
DESCRIPTOR_POOL_UNIFORMS = 256  # uniform buffers (shaders loaded with vkir.load_spirv use them)
# images, samplers and texel buffers (DESCRIPTOR_POOL_UNIFORMS of each per pool)
IMAGE_DESCRIPTORS = (vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, vk.VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
                     vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, vk.VK_DESCRIPTOR_TYPE_SAMPLER,
                     vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                     vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER)


def _cache_file(physical):
    """Where this device's pipeline cache persists: in vkir's cache root (vkir.config), one
    file per pipelineCacheUUID; None when there is no disk cache."""
    return pipeline_cache.cache_file(vk.vkGetPhysicalDeviceProperties(physical))


def submit_info(cmd):
    """(VkSubmitInfo*, the command-buffer array it points to) that submits the command buffer
    `cmd` alone; keep both alive while the submit info is in use."""
    cmds = ffi.new("VkCommandBuffer[]", [cmd])
    info = ffi.new("VkSubmitInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                     "commandBufferCount": 1, "pCommandBuffers": cmds})
    return info, cmds


class Device:
    """An opened device. Use `vkir.runtime.open_device` (cached), not the constructor."""

    def __init__(self, instance, info: DeviceInfo, physical):
        with instance.lifetime:   # the VkInstance stays until the device is made and registered
            self._open(instance, info, physical)
            instance.on_close(self.close)

    def _open(self, instance, info: DeviceInfo, physical) -> None:
        self.instance = instance
        self.info = info
        self.physical = physical
        self._lock = threading.RLock()
        # operations in flight (lifetime.py): close() waits for them before destroying anything
        self.lifetime = Lifetime(self.check_open)
        self.queue_family, self.timestamp_bits = self._pick_queue_family()
        self.handle = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.handle, self.queue_family, 0)
        self.memory = vk.vkGetPhysicalDeviceMemoryProperties(physical)
        self.command_pool = vk.vkCreateCommandPool(self.handle, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self.queue_family), None)
        self._cache_file = _cache_file(physical)
        self.pipeline_cache = self._create_pipeline_cache(self._cache_file)
        from .submission import create_fence

        self._fence_ptr = create_fence(self.handle)
        self.fence = self._fence_ptr[0]
        self._descriptor_pools: list = []
        self.pipelines: dict = {}                      # key -> ComputePipeline
        self.launches: OrderedDict = OrderedDict()     # key -> RecordedLaunch (LRU)
        self._live_buffers: dict = {}                  # serial -> (finalize, destroy())
        self.format_properties: dict = {}              # VkFormat -> features (runtime.images)
        self.samplers: dict = {}                       # description -> VkSampler (runtime.samplers)
        self._dead_serials: set = set()                # freed buffers whose launches are still cached
        self._released: list = []                      # pipelines a holder released (see collect)
        self._serials = itertools.count(1)
        self._staging = None
        self._transfer_cmd = None
        self._inflight: list = []                      # Submissions not yet waited for
        self._free_fences: list = []                   # retired VkFence* ready for reuse
        self._all_fences: list = []                    # every VkFence* created for submissions
        self.arenas: dict = {}                         # sub-allocator arenas (suballoc.py)
        self.suballoc_max_bytes = None                 # None: suballoc.MAX_SUBALLOC; 0: off
        self.recordings: dict = {}                     # id -> live recording's resources
        self._deferred: list = []                      # resources of dropped recordings
        # host-visible (mapped) buffers on unified memory, device-local + staging elsewhere;
        # tests flip it to exercise the staging path on lavapipe
        self.host_visible_buffers = info.unified_memory
        self.closed = False
        self.forked = False     # set in a forked child (abandon_after_fork)
        self.abandoned = False  # closed with work still running (close could not destroy it)

    # -- creation ---------------------------------------------------------------------------
    def _pick_queue_family(self):
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [(i, f) for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise UnsupportedError(f"device {self.info.name!r} has no compute queue")
        # prefer a family with timestamps, then the first one
        compute.sort(key=lambda x: (x[1].timestampValidBits == 0, x[0]))
        index, family = compute[0]
        return index, family.timestampValidBits

    def _create_device(self):
        available = {cstr(e.extensionName) for e in
                     vk.vkEnumerateDeviceExtensionProperties(self.physical, None)}
        version = tuple(int(x) for x in self.info.api_version.split(".")[:2])
        extensions = [e for e in SHADER_EXTENSIONS if e in available]
        if "VK_KHR_portability_subset" in available:
            extensions.append("VK_KHR_portability_subset")
        # enable exactly the members kernels use that the device supports (DeviceInfo.features
        # holds what the device reported for each of them)
        supported = self.info.features
        enabled = ffi.new("VkPhysicalDeviceFeatures2*")
        enabled.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        for member, name in CORE_FEATURES.items():
            setattr(enabled.features, member, int(name in supported))
        prev, keep = enabled, []
        for cname, stype, members in FEATURE_STRUCTS:
            ext, core = FEATURE_EXTENSIONS.get(cname, (None, (1, 0)))
            if ext is not None and version < core:
                if ext not in available:
                    continue
                extensions.append(ext)
            ext = EXTENSION_STRUCTS.get(cname)
            if ext is not None:  # never core: enabled where the device has a feature of it
                if ext not in available or not any(n in supported for n in members.values()):
                    continue
                extensions.append(ext)
            e = ffi.new(cname + "*")
            e.sType = stype
            for member, name in members.items():
                setattr(e, member, int(name in supported))
            prev.pNext = e
            prev = e
            keep.append(e)
        control_caps = self.info.subgroup_size_control
        if SUBGROUP_SIZE_CONTROL in control_caps:  # pipelines may then pin their subgroup size
            control = ffi.new("VkPhysicalDeviceSubgroupSizeControlFeatures*")
            control.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES
            control.subgroupSizeControl = 1
            control.computeFullSubgroups = int(COMPUTE_FULL_SUBGROUPS in control_caps)
            prev.pNext = control
            prev = control
            keep.append(control)
            core13 = tuple(int(x) for x in self.info.api_version.split(".")[:2]) >= (1, 3)
            if not core13:
                extensions.append("VK_EXT_subgroup_size_control")
        if "VK_EXT_external_memory_host" in available:   # host memory used in place (host_import.py)
            extensions.append("VK_EXT_external_memory_host")
        if "VK_EXT_shader_atomic_float2" in extensions and \
                "VK_EXT_shader_atomic_float" not in extensions:  # float2 requires it
            extensions.append("VK_EXT_shader_atomic_float")
        priorities = ffi.new("float[]", [1.0])
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                               pQueuePriorities=priorities)
        info = vk.VkDeviceCreateInfo(pNext=enabled, queueCreateInfoCount=1,
                                     pQueueCreateInfos=[queue_info],
                                     enabledExtensionCount=len(extensions),
                                     ppEnabledExtensionNames=extensions)
        self.enabled_extensions = frozenset(extensions)
        return call("vkCreateDevice", vk.vkCreateDevice, self.physical, info, None)

    # -- pipeline cache (persisted across processes) -----------------------------------------
    def _create_pipeline_cache(self, path):
        """A VkPipelineCache, seeded from `path` when it holds data that vkir sealed for this
        device (pipeline_cache.load: anything else is ignored, never handed to the driver)."""
        data = pipeline_cache.load(path, vk.vkGetPhysicalDeviceProperties(self.physical))
        keep = ffi.from_buffer(data) if data else ffi.NULL
        info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(data), pInitialData=keep)
        return call("vkCreatePipelineCache", vk.vkCreatePipelineCache, self.handle, info, None)

    def _save_pipeline_cache(self) -> None:
        path = self._cache_file
        if path is None:
            return
        size = ffi.new("size_t*")
        if lib.vkGetPipelineCacheData(self.handle, self.pipeline_cache, size, ffi.NULL) or not size[0]:
            return
        buf = ffi.new("char[]", size[0])
        if lib.vkGetPipelineCacheData(self.handle, self.pipeline_cache, size, buf):
            return
        # a read-only, unsafe or missing cache folder only costs compile time next run
        pipeline_cache.save(path, ffi.buffer(buf, size[0])[:])

    # -- memory types -----------------------------------------------------------------------
    def memory_type(self, type_bits: int, want: int, prefer: int = 0) -> int:
        """Index of a memory type allowed by `type_bits` with all `want` flags (best: + `prefer`)."""
        best, best_score = None, -1
        for i in range(self.memory.memoryTypeCount):
            flags = self.memory.memoryTypes[i].propertyFlags
            if not (type_bits >> i) & 1 or (flags & want) != want:
                continue
            score = bin(flags & prefer).count("1")
            if score > best_score:
                best, best_score = i, score
        if best is None:
            raise DeviceError(f"no memory type with flags {want:#x} on {self.info.name!r}")
        return best

    def next_serial(self) -> int:
        """A process-unique buffer number (thread-safe; never reused, so launch keys stay unique)."""
        return next(self._serials)

    def check_open(self) -> None:
        """Raise DeviceError when the device was closed (by close() or vkir.runtime.shutdown())
        or belongs to the parent of this forked process."""
        if self.forked:
            raise DeviceError(f"device {self.info.name!r} was opened before this process forked; "
                              "Vulkan objects do not survive fork: vkir.device() opens a new one "
                              "here, rebuild kernels and arrays on it")
        if self.closed or self.lifetime.closing:
            raise DeviceError(f"device closed: {self.info.name!r} was shut down; open it again with "
                              "vkir.device() and rebuild kernels and arrays on it")

    def abandon_after_fork(self) -> None:
        """In a forked child: the Vulkan objects belong to the parent (the driver's threads did not
        follow), so the device is closed without touching them, and its lock, which a parent
        thread may have held at the fork, is replaced."""
        self._lock = threading.RLock()
        self.forked = True
        self.closed = True
        self._inflight = []
        self.lifetime = Lifetime(self.check_open)
        self.lifetime.close(0)

    # -- buffers: freed when collected --------------------------------------------------------
    def _track(self, buf, handle, memory):
        dev = self.handle

        def destroy():
            lib.vkDestroyBuffer(dev, handle, ffi.NULL)
            lib.vkFreeMemory(dev, memory, ffi.NULL)

        self.track(buf, destroy)

    def track(self, obj, destroy) -> None:
        """Call `destroy()` (which frees `obj`'s Vulkan objects) once `obj` is collected or the
        device closes, whichever comes first; `obj.serial` names it (its launches go with it)."""
        fin = weakref.finalize(obj, self._release, obj.serial)
        fin.atexit = False
        self._live_buffers[obj.serial] = (fin, destroy)

    def _release(self, serial):
        """Free a collected buffer's memory now (a weakref finalizer: it may run in any thread and
        at any point, so it touches no container that is iterated; its launches go at collect()).
        Memory that work whose wait gave up still uses is freed when that work ends."""
        from .submission import after_work

        with self._lock:
            entry = self._live_buffers.pop(serial, None)
            if entry is None or self.closed:
                return
            self._dead_serials.add(serial)
            if not self._inflight or not after_work(self, lambda s: serial in s.serials, entry[1]):
                entry[1]()

    def release_pipeline(self, pipeline) -> None:
        """Give back one hold on `pipeline` (from get_pipeline), destroying it with its launches
        when it was the last. Safe from a finalizer: when this thread is already inside a device
        operation (the finalizer interrupted it), the work waits for the next collect(). Once
        the device is closed there is nothing left to destroy (close() did it)."""
        if self.closed:
            return
        self._released.append(pipeline)
        if not self._lock._is_owned():
            self.collect()

    def collect(self) -> None:
        """Destroy the launches that used freed buffers, and the pipelines nobody holds any more
        (with their launches: descriptor sets and command buffers)."""
        with self._lock:
            if self.closed or self.lifetime.closing:   # close() destroys it all
                return
            if self._inflight:
                self.retire_finished()
            while self._deferred:
                self._deferred.pop().free(self)
            while self._released:
                pipeline = self._released.pop()
                pipeline.refs -= 1
                if pipeline.refs > 0 or pipeline.handle is None:
                    continue
                if self.pipelines.get(pipeline.key) is pipeline:
                    del self.pipelines[pipeline.key]
                for key in [k for k in self.launches if k[0] is pipeline]:
                    self.launches.pop(key).destroy()
                pipeline.destroy()
            if self._dead_serials:
                dead, self._dead_serials = self._dead_serials, set()
                for key in [k for k, launch in self.launches.items() if dead & launch.serials]:
                    self.launches.pop(key).destroy()

    # -- descriptor sets --------------------------------------------------------------------
    def allocate_descriptor_set(self, layout):
        """A descriptor set for `layout`, from the first pool with room (a new pool when full)."""
        layouts = ffi.new("VkDescriptorSetLayout[]", [layout])
        out = ffi.new("VkDescriptorSet*")

        def allocate(pool):
            info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                                  pSetLayouts=layouts)
            return lib.vkAllocateDescriptorSets(self.handle, ffi.addressof(info), out)

        for pool in reversed(self._descriptor_pools):
            if allocate(pool) == vk.VK_SUCCESS:
                return pool, out[0]
        sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                         descriptorCount=DESCRIPTOR_POOL_BUFFERS),
                 vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                                         descriptorCount=DESCRIPTOR_POOL_UNIFORMS)] + [
                     vk.VkDescriptorPoolSize(type=t, descriptorCount=DESCRIPTOR_POOL_UNIFORMS)
                     for t in IMAGE_DESCRIPTORS]
        pool = call("vkCreateDescriptorPool", vk.vkCreateDescriptorPool, self.handle,
                    vk.VkDescriptorPoolCreateInfo(
                        flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                        maxSets=DESCRIPTOR_POOL_SETS, poolSizeCount=len(sizes), pPoolSizes=sizes), None)
        self._descriptor_pools.append(pool)
        check(allocate(pool), "vkAllocateDescriptorSets")
        return pool, out[0]

    def allocate_command_buffer(self):
        """A primary command buffer from the device's pool (the caller holds the lock)."""
        out = ffi.new("VkCommandBuffer*")
        info = vk.VkCommandBufferAllocateInfo(commandPool=self.command_pool,
                                              level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                              commandBufferCount=1)
        check(lib.vkAllocateCommandBuffers(self.handle, ffi.addressof(info), out), "vkAllocateCommandBuffers")
        return out[0]

    # -- submission -------------------------------------------------------------------------
    def submit(self, submit_info, owner=None, keep=None, serials=frozenset(), timeout=None,
               what: str = "dispatch") -> None:
        """Submit one prepared VkSubmitInfo* and wait for it (the hot path: raw C calls), in
        slices so Ctrl-C works; DeviceError after `timeout` s (None: $VKIR_TIMEOUT, else none).
        A wait that times out or is interrupted leaves the work registered as in flight, keeping
        `keep` alive and `owner` (the launch submitted) busy until it finishes; later submits wait
        for such work first, and are refused naming it when their timeout passes (wait_ahead)."""
        from .submission import wait_ahead, wait_fence

        with self.lifetime:
            if self._inflight:   # work whose wait gave up is waited for first (submission.py)
                timeout = wait_ahead(self, owner, timeout, what)
            with self._lock:
                if self.closed:
                    self.check_open()
                r = lib.vkQueueSubmit(self.queue, 1, submit_info, self.fence)
                if r:
                    check(r, "vkQueueSubmit")
                try:
                    wait_fence(self, self._fence_ptr, timeout, what)
                except BaseException:
                    self._abandon_fence(owner, keep, serials, what)
                    raise
                lib.vkResetFences(self.handle, 1, self._fence_ptr)

    def _abandon_fence(self, owner, keep, serials, what) -> None:
        """The synchronous wait gave up: the work keeps running, so its fence becomes an
        in-flight Submission and the device takes a new fence for later dispatches."""
        from .submission import Submission, create_fence

        self._all_fences.append(self._fence_ptr)
        sub = Submission(self, self._fence_ptr, owner, serials, keep, what)
        sub.given_up = True
        self._inflight.append(sub)
        self._fence_ptr = create_fence(self.handle)
        self.fence = self._fence_ptr[0]

    def wait_for(self, owner=None, serial=None, timeout=None) -> None:
        """Wait for the in-flight submissions of `owner` (a launch, a sequence), or using the
        buffer `serial`, or all of them when both are None."""
        for sub in list(self._inflight):
            if (owner is None and serial is None) or (owner is not None and sub.owner is owner) \
                    or (serial is not None and serial in sub.serials):
                sub.wait(timeout)

    def retire_finished(self) -> None:
        """Release what finished submissions kept alive (polls their fences)."""
        for sub in list(self._inflight):
            sub.done()

    def one_shot(self, record) -> None:
        """Record commands with `record(cmd)` into the transfer command buffer, submit and wait."""
        with self.lifetime, self._lock:
            self.check_open()
            if self._transfer_cmd is None:
                self._transfer_cmd = self.allocate_command_buffer()
                self._transfer_submit, self._transfer_ptr = submit_info(self._transfer_cmd)
            cmd = self._transfer_cmd
            begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            check(lib.vkBeginCommandBuffer(cmd, ffi.addressof(begin)), "vkBeginCommandBuffer")
            record(cmd)
            check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
            self.submit(self._transfer_submit, owner=self._transfer_ptr, what="buffer copy")

    def staging(self, nbytes: int):
        """A host-visible staging buffer of at least `nbytes` (kept and grown as needed). It is
        shared: the caller holds the lock from filling it to reading it back."""
        from .memory import Buffer

        if self._inflight and self._transfer_cmd is not None:
            self.wait_for(owner=self._transfer_ptr)  # a timed-out copy may still use it
        if self._staging is None or self._staging.nbytes < nbytes:
            self._staging = None  # freed right away (its finalizer runs now)
            self._staging = Buffer(self, max(nbytes, 1 << 20), staging=True)
        return self._staging

    def _destroy_pipelines(self) -> None:
        """Destroy every cached launch and pipeline (the caller holds the lock, device idle)."""
        for launch in self.launches.values():
            launch.destroy()
        self.launches.clear()
        for pipeline in self.pipelines.values():
            pipeline.destroy()
        self.pipelines.clear()

    def reset_pipeline_cache(self) -> None:
        """Forget every pipeline (and the launches using them) and start a new VkPipelineCache,
        so the next build compiles from scratch: used to measure cold compile times."""
        with self._lock:
            self.check_open()
            lib.vkDeviceWaitIdle(self.handle)
            self._destroy_pipelines()
            lib.vkDestroyPipelineCache(self.handle, self.pipeline_cache, ffi.NULL)
            self.pipeline_cache = self._create_pipeline_cache(None)

    # -- teardown ---------------------------------------------------------------------------
    def close(self, wait_seconds: float = SHUTDOWN_WAIT) -> None:
        """Destroy everything this device created. Idempotent; arrays, kernels and launches still
        referenced stay as Python objects whose every use raises DeviceError.

        Work still in flight (a launch nobody waited for, a dispatch whose wait timed out or was
        interrupted) is waited for at most `wait_seconds`, in slices that Ctrl-C interrupts. Work
        that does not finish by then cannot be cancelled and its objects cannot be destroyed
        safely: the device is then closed without destroying them (the process's exit reclaims
        them), so that a hung kernel never keeps the process from exiting.

        Other threads may be calling into the device meanwhile: from the start of close() their
        new operations raise DeviceError, and the ones already running (a dispatch, a wait,
        an allocation) are waited for within the same `wait_seconds` before anything is
        destroyed; one still running then leaves the device abandoned in the same way."""
        deadline = time.monotonic() + wait_seconds
        if self.closed:
            return
        idle = self.lifetime.close(wait_seconds)   # without the lock: they may be waiting for it
        with self._lock:
            if self.closed:
                return
            drained = False
            try:
                drained = idle and self._drain(max(0.0, deadline - time.monotonic()))
            finally:
                if not drained:
                    self.closed = self.abandoned = True
                    self.instance.abandoned = True
            if not drained:
                return
            if getattr(self, "host_views", None):   # numpy/torch views of mapped memory live:
                self.closed = self.abandoned = True  # nothing is freed under them (host_import.py)
                self.instance.abandoned = True
                return
            lib.vkDeviceWaitIdle(self.handle)
            for sub in list(self._inflight):
                sub._retire()
            self._staging = None
            for res in list(self.recordings.values()) + self._deferred:
                res.free(self)
            self.recordings.clear()
            self._deferred.clear()
            self._destroy_pipelines()
            self._released.clear()
            # free still-referenced buffers directly (their finalizers are detached: at
            # interpreter exit they would no longer run, and later they must not touch the device)
            while self._live_buffers:
                _, (fin, destroy) = self._live_buffers.popitem()
                fin.detach()
                destroy()
            for sampler in self.samplers.values():
                lib.vkDestroySampler(self.handle, sampler.handle, ffi.NULL)
            self.samplers.clear()
            self._dead_serials.clear()
            for arena in self.arenas.values():
                arena.destroy()
            self.arenas.clear()
            for ptr in self._all_fences:
                lib.vkDestroyFence(self.handle, ptr[0], ffi.NULL)
            for pool in self._descriptor_pools:
                lib.vkDestroyDescriptorPool(self.handle, pool, ffi.NULL)
            lib.vkDestroyFence(self.handle, self.fence, ffi.NULL)
            self._save_pipeline_cache()
            lib.vkDestroyPipelineCache(self.handle, self.pipeline_cache, ffi.NULL)
            lib.vkDestroyCommandPool(self.handle, self.command_pool, ffi.NULL)
            lib.vkDestroyDevice(self.handle, ffi.NULL)
            self.closed = True

    def probe(self, timeout: float, why: str) -> None:
        """Dispatch an empty compute shader and wait `timeout` seconds for it: DeviceError (and
        the device closed) where the driver runs no work at all, e.g. in a forked child of a
        process whose driver kept its worker threads (`why` says when this is checked)."""
        from .launch import get_launch
        from .pipeline import get_pipeline, release_pipeline

        pipeline = get_pipeline(self, EMPTY_COMPUTE_SHADER, "main")
        try:
            get_launch(self, pipeline, []).run(timeout=timeout)
        except DeviceError:
            self.close(wait_seconds=0)
            raise DeviceError(f"device {self.info.name!r} runs no work {why}: its driver did not "
                              f"finish an empty dispatch within {timeout:g} s. Start worker "
                              "processes with multiprocessing's 'spawn' or 'forkserver' method, or "
                              "use vkir only after forking") from None
        release_pipeline(self, pipeline)

    def _drain(self, wait_seconds: float) -> bool:
        """Wait up to `wait_seconds` in total for every in-flight submission; whether all ended."""
        from .submission import wait_fence

        deadline = time.monotonic() + wait_seconds
        for sub in list(self._inflight):
            if sub.finished:
                continue
            try:
                wait_fence(self, sub.fence_ptr, max(0.0, deadline - time.monotonic()), sub.what)
            except DeviceError:
                return False
        return True

    def __repr__(self) -> str:
        return f"<vkir Device {self.info.index}: {self.info.name}>"
