"""Device limits, checked before the driver sees anything.

A driver handed a pipeline or a dispatch beyond its limits may do anything (lavapipe silently
aliases a 33rd storage buffer onto the first one and crashes on a 34th), so every limit a compute
kernel can hit is checked here, by the pipeline, the launch and the allocation code, and each
violation names the Vulkan limit, its value and the offending value. The descriptor limits cover
every descriptor kind vkir binds: storage and uniform buffers, storage images, sampled images
(uniform texel buffers, as a kernel's read-only parameters are on llvmpipe, count as sampled
images), samplers, and the resources of a stage. Kernels and shaders call
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
# the checks every backend's runtime shares (vkir.seam's defaults), kept with the Limits type
from vkir.limits import AXES, check_grid, check_push_constants, check_shared_memory, check_workgroup


# binding numbers vkir accepts: drivers size their descriptor tables by the largest number, and a
# huge one (65535 and above) has crashed lavapipe; real shaders number their buffers from 0
MAX_BINDING_NUMBER = 1024


# the image-like descriptor kinds (as vkir.spirv.ImageBinding and ProgramSpec name them) by the
# Vulkan limit classes they count against: storage images and storage texel buffers are "storage
# images"; sampled images, combined image samplers and uniform texel buffers "sampled images";
# samplers and combined image samplers "samplers" (a combined image sampler counts in both)
STORAGE_IMAGE_KINDS = ("storage_image", "storage_texel_buffer")
SAMPLED_IMAGE_KINDS = ("sampled_image", "combined_image_sampler", "uniform_texel_buffer")
SAMPLER_KINDS = ("sampler", "combined_image_sampler")
IMAGE_KINDS = tuple(dict.fromkeys(STORAGE_IMAGE_KINDS + SAMPLED_IMAGE_KINDS + SAMPLER_KINDS))
# each class: (what messages call it, its kinds, per-stage limit, its field, per-set limit, field)
_IMAGE_CLASSES = (
    ("storage images", STORAGE_IMAGE_KINDS,
     "maxPerStageDescriptorStorageImages", "max_per_stage_storage_images",
     "maxDescriptorSetStorageImages", "max_descriptor_set_storage_images"),
    ("sampled images", SAMPLED_IMAGE_KINDS,
     "maxPerStageDescriptorSampledImages", "max_per_stage_sampled_images",
     "maxDescriptorSetSampledImages", "max_descriptor_set_sampled_images"),
    ("samplers", SAMPLER_KINDS,
     "maxPerStageDescriptorSamplers", "max_per_stage_samplers",
     "maxDescriptorSetSamplers", "max_descriptor_set_samplers"),
)


def image_counts(images) -> dict:
    """{kind: descriptors} of `images`, (kind, descriptor count) pairs (an array of descriptors
    counts its element count). A kind that is no image-like descriptor is a caller's bug
    (ValueError)."""
    out: dict = {}
    for kind, n in images:
        if kind not in IMAGE_KINDS:
            raise ValueError(f"not an image-like descriptor kind: {kind!r}")
        out[kind] = out.get(kind, 0) + int(n)
    return out


def check_bindings(info, count: int, what: str = "a kernel", uniform: int = 0,
                   numbers: tuple = (), images: tuple = (), texel_storage: bool = False) -> None:
    """`count` buffer descriptors (`uniform` of them uniform buffers, the rest storage buffers)
    and `images`, the image-like descriptors as (kind, descriptor count) pairs (kinds as
    vkir.spirv.ImageBinding names them), of one pipeline layout used by one compute stage, with
    binding `numbers`. Per stage and per pipeline layout: storage buffers, uniform buffers,
    storage images (storage images and storage texel buffers), sampled images (sampled images,
    combined image samplers, uniform texel buffers) and samplers (samplers and combined image
    samplers), then maxPerStageResources: every descriptor but separate samplers (Vulkan does not
    count VK_DESCRIPTOR_TYPE_SAMPLER there), a combined image sampler once. `texel_storage`: the
    kernel also runs a variant binding each of its uniform texel buffers as a storage buffer
    (vkir.driver.texel_views), whose layout is checked too."""
    counts = image_counts(images)
    _check_layout(info, count, uniform, counts, what)
    texels = counts.pop("uniform_texel_buffer", 0)
    if texel_storage and texels:
        _check_layout(info, count + texels, uniform, counts,
                      f"{what} (its variant reading its {texels} texel-buffer parameters as "
                      "storage buffers)")
    for n in numbers:
        if not 0 <= n < MAX_BINDING_NUMBER:
            raise UnsupportedError(f"{what} uses binding number {n}; vkir accepts binding numbers "
                                   f"0 to {MAX_BINDING_NUMBER - 1}")


def _check_layout(info, count: int, uniform: int, counts: dict, what: str) -> None:
    """check_bindings of one layout: `count` buffers (`uniform` of them uniform), `counts`
    {image-like kind: descriptors}."""
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
    for label, kinds, stage_name, stage_field, set_name, set_field in _IMAGE_CLASSES:
        n = sum(counts.get(k, 0) for k in kinds)
        for name, field in ((stage_name, stage_field), (set_name, set_field)):
            cap = getattr(lim, field)
            if n > cap:
                raise UnsupportedError(f"{what} binds {n} {label[:-1] if n == 1 else label} "
                                       f"({_parts(counts, kinds)}); "
                                       f"{name} of {info.name!r} is {cap}")
    resources = count + sum(n for k, n in counts.items() if k != "sampler")
    if resources > lim.max_per_stage_resources:
        parts = _parts(dict(counts, buffer=count),
                       ("buffer",) + tuple(k for k in IMAGE_KINDS if k != "sampler"))
        what_binds = (f"{count} buffers" if resources == count else
                      f"{resources} resources ({parts})")
        raise UnsupportedError(f"{what} binds {what_binds}; maxPerStageResources of "
                               f"{info.name!r} is {lim.max_per_stage_resources}")


def _parts(counts: dict, kinds) -> str:
    """ "2 storage images, 1 storage texel buffer": the descriptors of `kinds` in `counts`."""
    return ", ".join(f"{counts[k]} {k.replace('_', ' ')}{'' if counts[k] == 1 else 's'}"
                     for k in kinds if counts.get(k))


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
    check_shared_memory(info, shared_bytes, what)
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
