"""The entry points that make a ShaderKernel (vkir.driver.shader) from what users have: a SPIR-V
binary or assembly (`vkir.load_spirv`) or GLSL compute source (`vkir.compile_glsl`, compiled by
glslang), from a path or in memory, bounds-checked where asked (vkir.driver.shader_bounds).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ArgumentError
from .shader import ShaderKernel, runtime_for

__all__ = ["load_spirv", "compile_glsl"]


def _read_source(value, what: str):
    """(text or bytes, file name or None) of a path or in-memory `value`."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), None
    # one line without GLSL punctuation is a path (a mistyped one is "no such file", not a
    # compile error); source text and assembly have several lines
    if isinstance(value, os.PathLike) or (isinstance(value, str) and "\n" not in value
                                          and not any(c in value for c in "{};")):
        path = Path(value)
        if path.exists() and not path.is_file():   # a FIFO or a device would block
            raise ArgumentError(f"{what}: {path} is not a regular file")
        if not path.is_file():
            raise ArgumentError(f"{what}: no such file: {path}")
        return path, path
    if isinstance(value, str):
        return value, None
    raise ArgumentError(f"{what} takes a path, bytes or source text, got {type(value).__name__}")


def load_spirv(path_or_bytes, entry: str = "main", specialization=None, device=None,
               check_bounds: bool = False) -> ShaderKernel:
    """A ShaderKernel from a SPIR-V binary (a .spv path or bytes) or SPIR-V assembly (a .spvasm
    path), validated for the device; `specialization` is {constant id or name: value};
    `check_bounds`: run it bounds-checked (vkir.driver.shader_bounds)."""
    from ..tools.validate import assemble_text

    src, path = _read_source(path_or_bytes, "vkir.load_spirv")
    name = path.name if path is not None else entry
    if isinstance(src, Path):
        data = src.read_bytes()
        if src.suffix == ".spvasm":
            data = assemble_text(data.decode(errors="replace"))
    elif isinstance(src, str):
        data = assemble_text(src)   # SPIR-V assembly text in memory
    else:
        data = src
    kind = _checked_kind(check_bounds)
    return kind(data, device, entry, specialization, name=name)


def _checked_kind(check_bounds):
    """ShaderKernel, or the bounds-checked wrapper for `check_bounds=True`."""
    if not isinstance(check_bounds, bool):
        raise ArgumentError(f"check_bounds must be True or False, got {check_bounds!r}")
    if not check_bounds:
        return ShaderKernel
    from .shader_bounds import BoundsCheckedShader

    return BoundsCheckedShader


def compile_glsl(source_or_path, defines=None, specialization=None, device=None,
                 check_bounds: bool = False) -> ShaderKernel:
    """A ShaderKernel from GLSL compute source (a path or the text) compiled by glslang for
    the device's Vulkan version; `defines` are -D macros, `specialization` {id or name: value};
    `check_bounds`: run it bounds-checked (vkir.driver.shader_bounds: an out-of-bounds index
    is dropped or reads 0 and raises OutOfBoundsError, instead of being undefined)."""
    from ..runtime.glsl import compile_glsl as glslang

    src, path = _read_source(source_or_path, "vkir.compile_glsl")
    if isinstance(src, bytes):
        src = src.decode(errors="replace")
    if defines is not None and not isinstance(defines, dict):
        raise ArgumentError(f"vkir.compile_glsl: defines must be a dict, got {type(defines).__name__}")
    rt = runtime_for(device)
    # at most Vulkan 1.2 (SPIR-V 1.5): for 1.3 glslang sets a specialized local size with
    # LocalSizeId, which needs the maintenance4 feature; 1.5 modules run on 1.3 devices
    env = min(rt.target().env, "vulkan1.2")
    kind = _checked_kind(check_bounds)
    words = glslang(src, defines=defines, target_env=env)
    return kind(words, rt, "main", specialization,
                name=path.name if path is not None else "glsl")
