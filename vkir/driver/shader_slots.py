"""One descriptor per (set, binding) in an existing shader (vkir.driver.shader.ShaderKernel).

A Vulkan descriptor set layout gives each binding one descriptor type, but SPIR-V lets several
variables share a (set, binding), and spirv-val accepts modules whose variables on one slot are
of different kinds (a uniform and a storage texel buffer, a storage and a uniform buffer). No
layout fits both, and the drivers crash the process on such a pipeline (lavapipe at creation,
SwiftShader at the dispatch), so `check_slots` refuses them by name before the driver sees the
module. Several blocks of one buffer kind on a slot are views of one buffer and bind as one.
"""

from __future__ import annotations

from ..errors import UnsupportedError

__all__ = ["check_slots"]

_BUFFER_KINDS = {"storage": "storage buffer", "uniform": "uniform buffer"}


def check_slots(buffers, images, name: str) -> None:
    """UnsupportedError naming the set, the binding and both kinds where two of the reflected
    `buffers` (DescriptorBindings) and `images` (ImageBindings) share a (set, binding) with
    different descriptor kinds, or two image-like variables share one (vkir binds one image,
    sampler or texel buffer per binding); `name` names the shader."""
    seen = {}
    for b in (*buffers, *images):
        first = seen.setdefault((b.set, b.binding), b)
        if first is b:
            continue
        where = f"{name}: set {b.set}, binding {b.binding}"
        if first.kind != b.kind:
            raise UnsupportedError(
                f"{where} is declared as a {_noun(first)} ({first.name!r}) and as a {_noun(b)} "
                f"({b.name!r}); a Vulkan binding has one descriptor type, so no pipeline can "
                "bind both (give each its own binding)")
        if b.kind not in _BUFFER_KINDS:
            raise UnsupportedError(
                f"{where} is declared twice as a {_noun(b)} ({first.name!r} and {b.name!r}); "
                "vkir binds one image, sampler or texel buffer variable per binding")


def _noun(b) -> str:
    """How a message names the descriptor kind of binding `b`."""
    return _BUFFER_KINDS.get(b.kind) or b.kind.replace("_", " ")
