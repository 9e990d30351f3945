"""Compute pipelines: shader module, descriptor set layout, pipeline layout, VkPipeline.

A pipeline is described by the SPIR-V words, the entry point, the binding numbers of its buffers
(descriptor set 0; storage buffers unless `descriptor_types` names another kind for some:
"uniform", "storage_image", "sampled_image", "combined_image_sampler", "sampler",
"uniform_texel_buffer", "storage_texel_buffer"; existing shaders' bindings may also name their
descriptor set and an array count: `slots`, one (set, count) per binding), the size of
its push-constant block, its specialization-constant values ((SpecId, bytes) pairs) and, for kernels
built for one subgroup size, that required size (`SubgroupRequirement`). `get_pipeline` caches one per
device and description (the SPIR-V by its SHA-256), and every creation goes through the device's
VkPipelineCache. Cache entries are counted: each `get_pipeline` is paired with one
`release_pipeline` (a Kernel does it when collected), and the last release destroys the pipeline
and the launches recorded for it, so building many kernels does not grow the device's caches.
Every limit is checked (runtime.limits) before the driver sees the module: here, unless the
caller says with `checked=True` that it checked them itself (vkir's kernels do, once per build,
through the Vulkan backend's Runtime). A driver whose compiler fails on a module (lavapipe answers
VK_ERROR_UNKNOWN for a few valid ones) raises a DeviceError that says so, naming the driver and
the module's SHA-256.
"""

from __future__ import annotations

import hashlib
import time

from typing import NamedTuple

from vkir.errors import DeviceError, UnsupportedError

from ._vk import call, ffi, lib, vk
from .info import COMPUTE_FULL_SUBGROUPS, SUBGROUP_SIZE_CONTROL
from .limits import check_bindings, check_push_constants


# VkPipelineShaderStageCreateFlagBits (core in Vulkan 1.3, from VK_EXT_subgroup_size_control)
_REQUIRE_FULL_SUBGROUPS = 0x2


class SubgroupRequirement(NamedTuple):
    """A pipeline's pinned subgroup size: `size` invocations per subgroup, and with `full` every
    subgroup full (the workgroup's x size is then a multiple of `size`)."""
    size: int
    full: bool = False


def subgroup_requirement(info, size: int, workgroup_x: int, where: str) -> "SubgroupRequirement | None":
    """How a pipeline built for subgroup size `size` is created on the device `info` describes:
    with that size required (where the device offers subgroup size control), nothing to request
    (where its size is fixed at `size`), or UnsupportedError where it cannot run with `size`."""
    low, high = info.subgroup_size_range
    if not low <= size <= high:
        raise UnsupportedError(
            f"{where} is built for subgroup size {size}, but {info.name} runs subgroups of "
            f"{low if low == high else f'{low} to {high}'} invocations")
    control = getattr(info, "subgroup_size_control", frozenset())
    if SUBGROUP_SIZE_CONTROL not in control:
        if low != high:
            raise UnsupportedError(
                f"{where} is built for subgroup size {size}; {info.name} may run any size from "
                f"{low} to {high} and offers no subgroup size control to pin it")
        return None   # a fixed size: every pipeline gets it
    full = COMPUTE_FULL_SUBGROUPS in control and workgroup_x % size == 0
    return SubgroupRequirement(size, full)


class ComputePipeline:
    """A ready compute pipeline. `bindings` are buffer binding numbers, in the order launches
    pass their buffers; `descriptor_types` the VkDescriptorType of each (storage by default);
    `slots` the (descriptor set, descriptor count) of each (None: set 0, one each): a launch
    passes `count` resources for a binding, one per array element, and every set from 0 to the
    highest one has a layout (empty where the shader binds nothing in it).
    `checked`: the caller checked the binding and push-constant limits already."""

    def __init__(self, device, spirv: bytes, entry_point: str, bindings: tuple, push_constant_size: int,
                 descriptor_types: tuple | None = None, specialization: tuple = (),
                 subgroup: SubgroupRequirement | None = None, checked: bool = False,
                 slots: tuple | None = None):
        if len(spirv) % 4 or len(spirv) == 0:
            raise UnsupportedError(f"SPIR-V size {len(spirv)} is not a positive multiple of 4")
        if not checked:
            kinds = descriptor_types or ("storage",) * len(bindings)
            counts = tuple(n for _, n in slots) if slots is not None else (1,) * len(kinds)
            buffers = [(t, n) for t, n in zip(kinds, counts) if t in ("storage", "uniform")]
            check_bindings(device.info, sum(n for _, n in buffers), f"pipeline {entry_point!r}",
                           sum(n for t, n in buffers if t == "uniform"), tuple(bindings),
                           tuple((t, n) for t, n in zip(kinds, counts)
                                 if t not in ("storage", "uniform")))
            check_push_constants(device.info, push_constant_size, f"pipeline {entry_point!r}")
        device.check_open()
        self.device = device
        self.key = None   # its key in device.pipelines (set by get_pipeline)
        self.refs = 0     # holders that have not released it (see get_pipeline)
        self.entry_point = entry_point
        self.bindings = tuple(bindings)
        self.descriptor_types = tuple(_DESCRIPTOR_TYPES[t] for t in descriptor_types) \
            if descriptor_types is not None else (vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,) * len(self.bindings)
        self.slots = tuple(slots) if slots is not None else ((0, 1),) * len(self.bindings)
        # resources a launch passes: one per descriptor (an array binding takes `count`)
        self.descriptor_count = sum(n for _, n in self.slots)
        self.resource_types = tuple(t for t, (_, n) in zip(self.descriptor_types, self.slots)
                                    for _ in range(n))
        self.set_count = max((dset + 1 for dset, _ in self.slots), default=1)
        self.push_constant_size = (push_constant_size + 3) // 4 * 4
        self.create_seconds = 0.0        # vkCreateShaderModule + vkCreateComputePipelines
        self.handle = self.layout = self.set_layout = None
        self.set_layouts = []   # one per set 0 .. set_count - 1 (set_layout: set 0's)
        self.first_run_seconds = None    # wall time of the first synchronous dispatch (launch.py)
        self.running_launches = 0        # destroyed launches whose work still runs (launch.py)
        self.destroy_pending = False     # destroy() waits for them: the last one destroys it
        dev = device.handle
        started = time.perf_counter()
        module = call("vkCreateShaderModule", vk.vkCreateShaderModule, dev,
                      vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)
        try:
            for dset in range(self.set_count):
                layout_bindings = [vk.VkDescriptorSetLayoutBinding(
                    binding=b, descriptorType=t, descriptorCount=n,
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                    for b, t, (bset, n) in zip(self.bindings, self.descriptor_types, self.slots)
                    if bset == dset]
                self.set_layouts.append(call(
                    "vkCreateDescriptorSetLayout", vk.vkCreateDescriptorSetLayout, dev,
                    vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(layout_bindings),
                                                       pBindings=layout_bindings or ffi.NULL),
                    None))
            self.set_layout = self.set_layouts[0]
            ranges = []
            if self.push_constant_size:
                ranges.append(vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                                     size=self.push_constant_size))
            self.layout = call("vkCreatePipelineLayout", vk.vkCreatePipelineLayout, dev,
                               vk.VkPipelineLayoutCreateInfo(
                                   setLayoutCount=len(self.set_layouts),
                                   pSetLayouts=self.set_layouts,
                                   pushConstantRangeCount=len(ranges),
                                   pPushConstantRanges=ranges or ffi.NULL), None)
            spec = _specialization_info(specialization)
            required = ffi.NULL
            flags = 0
            if subgroup is not None:
                required = vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(
                    requiredSubgroupSize=subgroup.size)
                flags = _REQUIRE_FULL_SUBGROUPS if subgroup.full else 0
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                                                       pNext=required, flags=flags,
                                                       module=module, pName=entry_point,
                                                       pSpecializationInfo=spec or ffi.NULL)
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
            self.handle = _create_pipeline(device, info, spirv, entry_point)
            # the driver's compile of the module: what a first call waits for beyond vkir's own
            self.create_seconds = time.perf_counter() - started
        except BaseException:
            # a failed creation leaves nothing behind: the layouts made so far are destroyed
            if self.layout is not None:
                lib.vkDestroyPipelineLayout(dev, self.layout, ffi.NULL)
            for layout in self.set_layouts:
                lib.vkDestroyDescriptorSetLayout(dev, layout, ffi.NULL)
            self.layout = self.set_layout = None
            self.set_layouts = []
            raise
        finally:
            lib.vkDestroyShaderModule(dev, module, ffi.NULL)

    def destroy(self) -> None:
        """Destroy the Vulkan objects (the caller holds the device lock; launches using it are
        destroyed first). While a destroyed launch's work still runs it is only marked: that
        launch destroys it when the work ends (RecordedLaunch.destroy)."""
        if self.handle is None:
            return
        if self.running_launches:
            self.destroy_pending = True
            return
        dev = self.device.handle
        lib.vkDestroyPipeline(dev, self.handle, ffi.NULL)
        self.handle = None
        lib.vkDestroyPipelineLayout(dev, self.layout, ffi.NULL)
        for layout in self.set_layouts:
            lib.vkDestroyDescriptorSetLayout(dev, layout, ffi.NULL)


_DESCRIPTOR_TYPES = {"storage": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                     "uniform": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                     "storage_image": vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                     "sampled_image": vk.VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
                     "combined_image_sampler": vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
                     "sampler": vk.VK_DESCRIPTOR_TYPE_SAMPLER,
                     "uniform_texel_buffer": vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                     "storage_texel_buffer": vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER}
DESCRIPTOR_KINDS = tuple(_DESCRIPTOR_TYPES)   # the kinds a ProgramSpec's descriptor_types name


# what vkCreateComputePipelines answers when the driver's compiler fails on a module (not a
# lack of memory): lavapipe gives VK_ERROR_UNKNOWN
_COMPILE_FAILURES = {vk.VkErrorUnknown: "VK_ERROR_UNKNOWN",
                     vk.VkErrorInitializationFailed: "VK_ERROR_INITIALIZATION_FAILED",
                     vk.VkErrorInvalidShaderNv: "VK_ERROR_INVALID_SHADER_NV"}


def _create_pipeline(device, info, spirv: bytes, entry_point: str):
    """The VkPipeline of VkComputePipelineCreateInfo `info`; a failure of the driver's compiler
    is a DeviceError saying what happened and what to report, other failures as `call` says."""
    def create():
        try:
            return vk.vkCreateComputePipelines(device.handle, device.pipeline_cache, 1, [info],
                                               None)[0]
        except tuple(_COMPILE_FAILURES) as exc:
            raise DeviceError(compile_failure(_COMPILE_FAILURES[type(exc)], device.info, spirv,
                                              entry_point)) from None
    return call("vkCreateComputePipelines", create)


def compile_failure(result: str, info, spirv: bytes, entry_point: str) -> str:
    """The message of a driver (DeviceInfo `info`) that answered `result` when compiling entry
    point `entry_point` of module `spirv`: a driver bug, since vkir hands drivers only modules
    SPIRV-Tools validated, to be reported with the module (named by its SHA-256)."""
    digest = hashlib.sha256(spirv).hexdigest()
    return (f"vkCreateComputePipelines failed: {result}: the driver {info.driver!r} of "
            f"{info.name!r} failed to compile entry point {entry_point!r} of a SPIR-V module "
            f"that spirv-val accepts ({len(spirv)} bytes, sha256 {digest}). This is a driver "
            "bug, not an error of the module: please report it to the driver's maintainers "
            "with the module (a kernel's or shader's `.spirv` bytes, saved as a .spv file; "
            "`vkir dis` prints it), and meanwhile rewrite the code it trips on or run on "
            "another device (VKIR_DEVICE)")


def _specialization_info(entries: tuple):
    """A VkSpecializationInfo for ((SpecId, value bytes), ...), or None when there are none."""
    if not entries:
        return None
    data, maps, offset = b"", [], 0
    for constant_id, raw in entries:
        maps.append(vk.VkSpecializationMapEntry(constantID=constant_id, offset=offset, size=len(raw)))
        data += raw
        offset += len(raw)
    return vk.VkSpecializationInfo(mapEntryCount=len(maps), pMapEntries=maps, dataSize=len(data),
                                   pData=ffi.from_buffer(data))


def get_pipeline(device, spirv: bytes, entry_point: str = "main", bindings: tuple = (),
                 push_constant_size: int = 0, descriptor_types: tuple | None = None,
                 specialization: tuple = (), subgroup: SubgroupRequirement | None = None,
                 checked: bool = False, slots: tuple | None = None) -> ComputePipeline:
    """The cached pipeline for this device and description, created on first use. The caller holds
    it until `release_pipeline(device, pipeline)`; one never released stays cached until the device
    closes. `checked=True`: the caller checked the device limits of the description already
    (vkir's kernels, through their Runtime), so its creation does not check them again.
    `slots`: (descriptor set, count) per binding (see ComputePipeline)."""
    key = (hashlib.sha256(spirv).digest(), entry_point, tuple(bindings), push_constant_size)
    if descriptor_types is not None or specialization or subgroup is not None:
        key += (tuple(descriptor_types or ()), tuple(specialization), subgroup)
    if slots is not None and any(s != (0, 1) for s in slots):
        key += (tuple(slots),)
    with device.lifetime, device._lock:
        device.check_open()
        device.collect()
        pipeline = device.pipelines.get(key)
        if pipeline is None:
            pipeline = ComputePipeline(device, spirv, entry_point, bindings, push_constant_size,
                                descriptor_types, specialization, subgroup, checked, slots)
            pipeline.key = key
            device.pipelines[key] = pipeline
        pipeline.refs += 1
    return pipeline


def release_pipeline(device, pipeline) -> None:
    """Give back the hold one `get_pipeline` call took; the last one destroys the pipeline and its
    launches (at the device's next collect: safe to call from a finalizer, in any thread)."""
    device.release_pipeline(pipeline)
