"""What only some devices do: the optional capabilities a seam Runtime declares, the checks
every runtime gets from its Limits, and the refusal of a kernel that needs what a runtime lacks.

A runtime lists its capabilities in `Runtime.capabilities` (names of CAPABILITIES):

- "shaders": existing shaders (vkir.load_spirv, vkir.compile_glsl) run on it; the runtime is a
  `ShaderRuntime` too (their limit checks, and the device extensions and subgroup operations
  their code is checked against);
- "images": images, samplers and texel buffers (the runtime is a vkir.seam.images.ImageRuntime);
- "sequences": its Programs record dispatches for vkir.sequence (`Program.dispatch`);
- "timestamps": launches can be timed on the device;
- "aliasing": one memory may be bound to several buffers of a dispatch that writes one of them.

`require(runtime, capability, what)` is the refusal: UnsupportedError naming the capability and
the backend, raised before anything runs.
"""

from __future__ import annotations

import abc
import math

from ..errors import ArgumentError, UnsupportedError

__all__ = ["CAPABILITIES", "require", "ShaderRuntime", "shaders_of", "check_module",
           "check_grid"]

CAPABILITIES = ("shaders", "images", "sequences", "timestamps", "aliasing")
_AXES = "xyz"


def require(runtime, capability: str, what: str) -> None:
    """UnsupportedError unless `runtime` declares `capability` (a name of CAPABILITIES)."""
    if capability not in CAPABILITIES:
        raise ArgumentError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
    if capability not in runtime.capabilities:
        raise UnsupportedError(f"{what} needs the {capability!r} capability, which the "
                               f"{runtime.kind} backend ({runtime.name!r}) lacks")


class ShaderRuntime(abc.ABC):
    """A runtime that runs existing shaders (the "shaders" capability): the limit checks of a
    shader loaded as published, and what its code is checked against. `extensions` are the
    device extensions it offers (an OpExtension's), `subgroup_operations` the subgroup
    operation kinds ("vote", "ballot", ...), `features` the optional device features
    (vkir.features' names) a shader's capabilities are checked against."""

    extensions: frozenset = frozenset()
    features: frozenset = frozenset()
    subgroup_operations: frozenset = frozenset()

    @abc.abstractmethod
    def check_shader(self, local_size: tuple, shared_bytes: int, push_bytes: int,
                     what: str) -> None:
        """UnsupportedError naming the limit a shader's local size, shared memory or push
        constants exceed."""

    @abc.abstractmethod
    def check_bindings(self, count: int, what: str, uniform: int = 0, numbers: tuple = (),
                       images: tuple = ()) -> None:
        """UnsupportedError naming the limit a shader's `count` buffer bindings (`uniform` of
        them uniform buffers) and `images` ((kind, descriptor count) pairs) with binding
        `numbers` exceed."""

    @abc.abstractmethod
    def check_groups(self, groups: tuple, what: str) -> None:
        """ArgumentError or UnsupportedError for a shader's workgroup counts (x, y, z) the
        device cannot dispatch."""

    @abc.abstractmethod
    def check_binding_range(self, nbytes: int, kind: str, what: str) -> None:
        """UnsupportedError where `nbytes` exceed the range of a "storage" or "uniform" buffer
        binding on the device."""


def shaders_of(runtime) -> ShaderRuntime:
    """`runtime` as a ShaderRuntime, or UnsupportedError naming the capability and backend."""
    if "shaders" in runtime.capabilities and isinstance(runtime, ShaderRuntime):
        return runtime
    raise UnsupportedError(f"existing shaders (vkir.load_spirv, vkir.compile_glsl) run on Vulkan "
                           f"devices; {runtime.name!r} is a {runtime.kind} device (no 'shaders' "
                           "capability)")


def check_module(runtime, bindings: int, push_bytes: int, local_size: tuple, shared_bytes: int,
                 what: str, images: tuple = ()) -> None:
    """A compiled kernel's needs against `runtime.limits`: storage buffers per stage, push
    constants, workgroup size, invocations and shared memory (images need "images")."""
    if images:
        require(runtime, "images", f"{what} (images, samplers or texel buffers)")
    lim, name = runtime.limits, runtime.name
    if bindings > lim.max_per_stage_storage_buffers:
        raise UnsupportedError(f"{what} binds {bindings} storage buffers; "
                               f"maxPerStageDescriptorStorageBuffers of {name!r} is "
                               f"{lim.max_per_stage_storage_buffers}")
    if push_bytes > lim.max_push_constant_bytes:
        raise UnsupportedError(f"{what} needs {push_bytes} bytes of push constants; "
                               f"maxPushConstantsSize of {name!r} is {lim.max_push_constant_bytes}")
    for axis, (n, cap) in enumerate(zip(local_size, lim.max_workgroup_size)):
        if n > cap:
            raise UnsupportedError(f"{what}: workgroup size {n} on axis {_AXES[axis]} exceeds "
                                   f"maxComputeWorkGroupSize[{axis}] = {cap} of {name!r}")
    total = math.prod(local_size)
    if total > lim.max_workgroup_invocations:
        raise UnsupportedError(f"{what}: {total} invocations per workgroup exceed "
                               f"maxComputeWorkGroupInvocations = {lim.max_workgroup_invocations} "
                               f"of {name!r}")
    if shared_bytes > lim.max_shared_memory_bytes:
        raise UnsupportedError(f"{what}: {shared_bytes} bytes of shared memory exceed "
                               f"maxComputeSharedMemorySize = {lim.max_shared_memory_bytes} of "
                               f"{name!r}")


def check_grid(runtime, groups, what: str) -> None:
    """A kernel's workgroup counts (x, y, z) on blockIdx.x, .y, .z against
    maxComputeWorkGroupCount of `runtime.limits`."""
    for axis, (n, cap) in enumerate(zip(groups, runtime.limits.max_workgroup_count)):
        if n > cap:
            raise UnsupportedError(f"{what}: {n} workgroups on blockIdx.{_AXES[axis]} exceed "
                                   f"maxComputeWorkGroupCount = {cap} on {runtime.name!r}")
