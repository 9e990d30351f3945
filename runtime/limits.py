"""Device limits, checked before the driver sees anything.

A driver handed a pipeline or a dispatch beyond its limits may do anything (lavapipe silently
aliases a 33rd storage buffer onto the first one and crashes on a 34th), so every limit a compute
kernel can hit is checked here, by the pipeline, the launch and the allocation code, and each
violation names the Vulkan limit, its value and the offending value. Kernels and shaders call
these functions through the Vulkan backend's Runtime (no limit check is written anywhere else):
a Kernel once when it is built (`check_bindings`, `check_push_constants`, `check_workgroup`) and
once per call (`check_grid`), a ShaderKernel once when it is loaded (`check_shader`,
`check_bindings`) and once per call (`check_groups`, `check_binding_range`). Pipelines and
launches they create are not checked again (vkir.runtime's `checked=True`); those that
vkir.runtime's users create directly are.
"""

from __future__ import annotations

import math

from vkir.errors import ArgumentError, UnsupportedError

AXES = "xyz"


# binding numbers vkir accepts: drivers size their descriptor tables by the largest number, and a
# huge one (65535 and above) has crashed lavapipe; real shaders number their buffers from 0
MAX_BINDING_NUMBER = 1024


def check_bindings(info, count: int, what: str = "a kernel", uniform: int = 0,
                   numbers: tuple = ()) -> None:
    """`count` buffer bindings (`uniform` of them uniform buffers, the rest storage buffers) in
    one descriptor set used by one compute stage, with binding `numbers`."""
    lim = info.limits
    storage = count - uniform
    for name, cap in (("maxPerStageDescriptorStorageBuffers", lim.max_per_stage_storage_buffers),
                      ("maxDescriptorSetStorageBuffers", lim.max_descriptor_set_storage_buffers)):
        if storage > cap:
            raise UnsupportedError(f"{what} binds {storage} storage buffers; {name} of "
                                   f"{info.name!r} is {cap}")
    for name, cap in (("maxPerStageDescriptorUniformBuffers", lim.max_per_stage_uniform_buffers),
                      ("maxDescriptorSetUniformBuffers", lim.max_descriptor_set_uniform_buffers)):
        if uniform > cap:
            raise UnsupportedError(f"{what} binds {uniform} uniform buffers; {name} of "
                                   f"{info.name!r} is {cap}")
    if count > lim.max_per_stage_resources:
        raise UnsupportedError(f"{what} binds {count} buffers; maxPerStageResources of "
                               f"{info.name!r} is {lim.max_per_stage_resources}")
    for n in numbers:
        if not 0 <= n < MAX_BINDING_NUMBER:
            raise UnsupportedError(f"{what} uses binding number {n}; vkir accepts binding numbers "
                                   f"0 to {MAX_BINDING_NUMBER - 1}")


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
    _check_shared_memory(info, shared_bytes, what)


def _check_shared_memory(info, shared_bytes: int, what: str) -> None:
    cap = info.limits.max_shared_memory_bytes
    if shared_bytes > cap:
        raise UnsupportedError(f"{what}: {shared_bytes} bytes of shared memory exceed "
                               f"maxComputeSharedMemorySize = {cap} of {info.name!r}")


def check_shader(info, local_size, shared_bytes: int, push_bytes: int, what: str) -> None:
    """What a shader's pipeline asks of the device, checked once when it is loaded: each axis
    of its local size (named local_size_x, ... as in its source) at least 1 and within
    maxComputeWorkGroupSize, its invocations, `shared_bytes` of shared memory and `push_bytes`
    of push constants."""
    lim = info.limits
    for axis, (n, cap) in enumerate(zip(local_size, lim.max_workgroup_size)):
        if n < 1:
            raise UnsupportedError(f"{what}: local_size_{AXES[axis]} = {n}; it must be >= 1")
        if n > cap:
            raise UnsupportedError(f"{what}: local_size_{AXES[axis]} = {n} exceeds "
                                   f"maxComputeWorkGroupSize[{axis}] = {cap} of {info.name!r}")
    total = math.prod(local_size)
    if total > lim.max_workgroup_invocations:
        raise UnsupportedError(f"{what}: local size {tuple(local_size)} is {total} invocations, "
                               f"more than maxComputeWorkGroupInvocations = "
                               f"{lim.max_workgroup_invocations} of {info.name!r}")
    _check_shared_memory(info, shared_bytes, what)
    if push_bytes > lim.max_push_constant_bytes:
        raise UnsupportedError(f"{what}: push constants of {push_bytes} bytes exceed "
                               f"maxPushConstantsSize = {lim.max_push_constant_bytes} of "
                               f"{info.name!r}")


def check_binding_range(info, nbytes: int, kind: str, what: str) -> None:
    """An array of `nbytes` bound to a "storage" or "uniform" buffer binding (maxStorageBufferRange
    or maxUniformBufferRange), as a shader's call names it."""
    lim = info.limits
    cap, name = ((lim.max_uniform_buffer_range, "maxUniformBufferRange") if kind == "uniform"
                 else (lim.max_storage_buffer_range, "maxStorageBufferRange"))
    if nbytes > cap:
        raise UnsupportedError(f"{what} has {nbytes} bytes, more than {name} = {cap} of "
                               f"{info.name!r}")


def check_groups(info, groups, what: str = "a dispatch") -> None:
    """Workgroup counts (x, y, z): three non-negative ints within maxComputeWorkGroupCount."""
    if len(groups) != 3:
        raise ArgumentError(f"{what}: group counts must be (x, y, z), got {groups!r}")
    for axis, (n, cap) in enumerate(zip(groups, info.limits.max_workgroup_count)):
        if n < 0:
            raise ArgumentError(f"{what}: negative workgroup count {n} on axis {AXES[axis]}")
        if n > cap:
            raise UnsupportedError(f"{what}: {n} workgroups on axis {AXES[axis]} exceed "
                                   f"maxComputeWorkGroupCount[{axis}] = {cap} of {info.name!r}")


def check_grid(info, groups, what: str) -> None:
    """A kernel's grid: workgroup counts (x, y, z) on blockIdx.x, .y, .z (non-negative, as the
    kernel computed them) within maxComputeWorkGroupCount."""
    for axis, (n, cap) in enumerate(zip(groups, info.limits.max_workgroup_count)):
        if n > cap:
            raise UnsupportedError(f"{what}: {n} workgroups on blockIdx.{AXES[axis]} exceed "
                                   f"maxComputeWorkGroupCount = {cap} on {info.name!r}")


def check_allocation(info, nbytes: int, what: str = "a buffer") -> None:
    """One device allocation of `nbytes` bytes (maxMemoryAllocationSize)."""
    cap = info.limits.max_memory_allocation_size
    if nbytes > cap:
        raise UnsupportedError(f"{what} of {nbytes} bytes exceeds maxMemoryAllocationSize = {cap} "
                               f"of {info.name!r}")


def check_storage_range(info, nbytes: int, what: str = "a buffer") -> None:
    """A storage-buffer binding of `nbytes` bytes (maxStorageBufferRange)."""
    cap = info.limits.max_storage_buffer_range
    if nbytes > cap:
        raise UnsupportedError(f"{what} of {nbytes} bytes exceeds maxStorageBufferRange = {cap} "
                               f"of {info.name!r}")


def shape_bytes(shape, itemsize: int, what: str = "an array") -> int:
    """Bytes of a compact array of `shape` (Python ints, no wrap-around); ArgumentError when the
    size cannot be represented in a 64-bit byte count at all."""
    nbytes = math.prod(int(s) for s in shape) * int(itemsize)
    if nbytes >= 1 << 63:
        raise ArgumentError(f"{what} of shape {tuple(shape)} would need {nbytes} bytes: the size "
                            "overflows a 64-bit byte count")
    return nbytes
