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

from ..errors import ArgumentError, UnsupportedError
from ..limits import check_grid, check_push_constants, check_workgroup

__all__ = ["CAPABILITIES", "require", "ShaderRuntime", "shaders_of", "check_module"]

CAPABILITIES = ("shaders", "images", "sequences", "timestamps", "aliasing")


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
    constants, workgroup size, invocations and shared memory (vkir.limits' checks; images need
    "images"). `check_grid` (vkir.limits) is the per-call check."""
    if images:
        require(runtime, "images", f"{what} (images, samplers or texel buffers)")
    lim = runtime.limits
    if bindings > lim.max_per_stage_storage_buffers:
        raise UnsupportedError(f"{what} binds {bindings} storage buffers; "
                               f"maxPerStageDescriptorStorageBuffers of {runtime.name!r} is "
                               f"{lim.max_per_stage_storage_buffers}")
    check_push_constants(runtime, push_bytes, what)
    check_workgroup(runtime, local_size, shared_bytes, what)
