"""Limits: the one description of what a device can take, shared by every layer.

The compilation target (vkir.target.Target.limits), the Vulkan runtime (DeviceInfo.limits) and
every backend's Runtime (`Runtime.limits`) use this one type, each filling in what its device
reports. Every field has a default, Vulkan's required minimum (or, for the limits a device must
not exceed, such as alignments, the largest value Vulkan allows), so a kernel within the defaults
runs on every conformant device and a backend that knows only some of its limits leaves the rest
at the defaults. It sits below both the target and the runtime (it imports only vkir.errors).

The checks a compiled kernel meets on every device are here too, once: each takes anything
with `limits` and `name` (a vkir.runtime DeviceInfo, or a seam Runtime) and raises
UnsupportedError naming the Vulkan limit, its value and the offending value. vkir.runtime.limits
adds the descriptor, allocation and existing-shader checks of Vulkan devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .errors import UnsupportedError

__all__ = ["Limits", "UNLIMITED", "check_push_constants", "check_workgroup",
           "check_shared_memory", "check_grid"]

AXES = "xyz"


@dataclass(frozen=True)
class Limits:
    """The device limits compilation and launches are checked against (Vulkan's names in the
    comments; the defaults are its required minimums)."""

    max_workgroup_size: tuple = (128, 128, 64)        # maxComputeWorkGroupSize (x, y, z)
    max_workgroup_invocations: int = 128              # maxComputeWorkGroupInvocations
    max_workgroup_count: tuple = (65535, 65535, 65535)  # maxComputeWorkGroupCount
    max_shared_memory_bytes: int = 16384              # maxComputeSharedMemorySize
    max_push_constant_bytes: int = 128                # maxPushConstantsSize
    max_storage_buffer_range: int = 1 << 27           # maxStorageBufferRange
    min_storage_buffer_offset_alignment: int = 256    # minStorageBufferOffsetAlignment (at most)
    non_coherent_atom_size: int = 256                 # nonCoherentAtomSize (at most)
    timestamp_period_ns: float = 1.0                  # nanoseconds per timestamp tick
    max_memory_allocation_count: int = 4096           # maxMemoryAllocationCount
    max_uniform_buffer_range: int = 16384             # maxUniformBufferRange
    # descriptor limits: a kernel binds one storage buffer per buffer argument, in one set
    max_per_stage_storage_buffers: int = 4            # maxPerStageDescriptorStorageBuffers
    max_per_stage_uniform_buffers: int = 12           # maxPerStageDescriptorUniformBuffers
    max_descriptor_set_uniform_buffers: int = 72      # maxDescriptorSetUniformBuffers
    max_descriptor_set_storage_buffers: int = 24      # maxDescriptorSetStorageBuffers
    max_per_stage_resources: int = 128                # maxPerStageResources
    # image-like descriptors (image parameters, texel reads, shaders' images and samplers)
    max_per_stage_storage_images: int = 4             # maxPerStageDescriptorStorageImages
    max_per_stage_sampled_images: int = 16            # maxPerStageDescriptorSampledImages
    max_per_stage_samplers: int = 16                  # maxPerStageDescriptorSamplers
    max_descriptor_set_storage_images: int = 24       # maxDescriptorSetStorageImages
    max_descriptor_set_sampled_images: int = 96       # maxDescriptorSetSampledImages
    max_descriptor_set_samplers: int = 96             # maxDescriptorSetSamplers
    max_bound_descriptor_sets: int = 4                # maxBoundDescriptorSets
    # the largest single allocation (VkPhysicalDeviceMaintenance3Properties, Vulkan 1.1)
    max_memory_allocation_size: int = 1 << 30         # maxMemoryAllocationSize
    # bits of the fraction linear filtering keeps of a texel coordinate (what
    # vkir.interpret(..., sub_texel_precision_bits=) takes to sample as the device does)
    sub_texel_precision_bits: int = 4                 # subTexelPrecisionBits

    def __post_init__(self):
        object.__setattr__(self, "max_workgroup_size",
                           tuple(int(v) for v in self.max_workgroup_size))
        object.__setattr__(self, "max_workgroup_count",
                           tuple(int(v) for v in self.max_workgroup_count))

    @staticmethod
    def of(limits) -> "Limits":
        """`limits` as a Limits: itself when it is one, else the fields read from any object
        with the same attribute names (those it lacks keep their defaults)."""
        if isinstance(limits, Limits):
            return limits
        return Limits(**{f.name: getattr(limits, f.name) for f in fields(Limits)
                         if hasattr(limits, f.name)})


# no device limit at all: the interpreter's
UNLIMITED = Limits(max_workgroup_size=(1 << 20,) * 3, max_workgroup_invocations=1 << 20,
                   max_workgroup_count=((1 << 31) - 1,) * 3, max_shared_memory_bytes=1 << 30,
                   max_push_constant_bytes=1 << 16, max_storage_buffer_range=(1 << 62))


def check_push_constants(info, nbytes: int, what: str = "a kernel") -> None:
    """A push-constant block of `nbytes` bytes."""
    cap = info.limits.max_push_constant_bytes
    if nbytes > cap:
        raise UnsupportedError(f"{what} needs {nbytes} bytes of push constants; maxPushConstantsSize "
                               f"of {info.name!r} is {cap}")


def check_workgroup(info, local_size, shared_bytes: int = 0, what: str = "a kernel") -> None:
    """A workgroup of `local_size` (x, y, z) invocations using `shared_bytes` of shared memory."""
    lim = info.limits
    for axis, (n, cap) in enumerate(zip(local_size, lim.max_workgroup_size)):
        if n > cap:
            raise UnsupportedError(f"{what}: workgroup size {n} on axis {AXES[axis]} exceeds "
                                   f"maxComputeWorkGroupSize[{axis}] = {cap} of {info.name!r}")
    total = math.prod(local_size)
    if total > lim.max_workgroup_invocations:
        raise UnsupportedError(f"{what}: {total} invocations per workgroup exceed "
                               f"maxComputeWorkGroupInvocations = {lim.max_workgroup_invocations} "
                               f"of {info.name!r}")
    check_shared_memory(info, shared_bytes, what)


def check_shared_memory(info, shared_bytes: int, what: str) -> None:
    """`shared_bytes` of workgroup (shared) memory (maxComputeSharedMemorySize)."""
    cap = info.limits.max_shared_memory_bytes
    if shared_bytes > cap:
        raise UnsupportedError(f"{what}: {shared_bytes} bytes of shared memory exceed "
                               f"maxComputeSharedMemorySize = {cap} of {info.name!r}")


def check_grid(info, groups, what: str) -> None:
    """A kernel's grid: workgroup counts (x, y, z) on blockIdx.x, .y, .z (non-negative, as the
    kernel computed them) within maxComputeWorkGroupCount."""
    for axis, (n, cap) in enumerate(zip(groups, info.limits.max_workgroup_count)):
        if n > cap:
            raise UnsupportedError(f"{what}: {n} workgroups on blockIdx.{AXES[axis]} exceed "
                                   f"maxComputeWorkGroupCount = {cap} on {info.name!r}")
