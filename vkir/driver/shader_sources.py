"""The entry points that make a ShaderKernel (vkir.driver.shader) from what users have: a SPIR-V
binary or assembly (`vkir.load_spirv`) or GLSL compute source (`vkir.compile_glsl`, compiled by
glslang), from a path or in memory, bounds-checked where asked (vkir.driver.shader_bounds).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ArgumentError, SpirvValidationError
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


def _include_dirs(value) -> tuple:
    """The include folders given to compile_glsl, checked: a list of existing folders."""
    if value is None:
        return ()
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ArgumentError("vkir.compile_glsl: include_dirs must be a list of folders, got "
                            f"{type(value).__name__}")
    out = []
    for d in value:
        if not isinstance(d, (str, os.PathLike)) or not Path(d).is_dir():
            raise ArgumentError(f"vkir.compile_glsl: include folder {d!r} is not a folder")
        out.append(str(Path(d).resolve()))
    return tuple(out)


def load_spirv(path_or_bytes, entry: str = "main", specialization=None, device=None,
               check_bounds: bool = False, target_env: str | None = None) -> ShaderKernel:
    """A ShaderKernel from a SPIR-V binary (a .spv path or bytes) or SPIR-V assembly (a .spvasm
    path or the text), validated for the device; `specialization` is {constant id or name:
    value}; `check_bounds`: run it bounds-checked (vkir.driver.shader_bounds). Assembly is
    assembled for `target_env` (as spirv-as --target-env; by default the device's), never for
    the version a "; Version" comment names."""
    from ..spirv import assemble
    from ..target import TARGET_ENVS

    src, path = _read_source(path_or_bytes, "vkir.load_spirv")
    name = path.name if path is not None else entry
    kind = _checked_kind(check_bounds)
    rt = runtime_for(device)
    if target_env is not None and target_env not in TARGET_ENVS:
        raise ArgumentError(f"vkir.load_spirv: target_env must be one of {', '.join(TARGET_ENVS)}, "
                            f"got {target_env!r}")
    env = target_env or rt.target().env
    text = None
    if isinstance(src, Path):
        data = src.read_bytes()
        if src.suffix == ".spvasm":
            text = data.decode(errors="replace")
    elif isinstance(src, str):
        text = src   # SPIR-V assembly text in memory
    else:
        data = src
    if text is None:
        return kind(data, rt, entry, specialization, name=name)
    try:
        return kind(assemble(text, env), rt, entry, specialization, name=name)
    except SpirvValidationError as exc:
        if target_env is not None:
            raise
        raise SpirvValidationError(f"{exc}\n(the assembly was assembled for {env}, the device's "
                                   "environment; for an older module pass target_env, e.g. "
                                   "target_env=\"vulkan1.1\" for SPIR-V 1.3)") from None


def _checked_kind(check_bounds):
    """ShaderKernel, or the bounds-checked wrapper for `check_bounds=True`."""
    if not isinstance(check_bounds, bool):
        raise ArgumentError(f"check_bounds must be True or False, got {check_bounds!r}")
    if not check_bounds:
        return ShaderKernel
    from .shader_bounds import BoundsCheckedShader

    return BoundsCheckedShader


def compile_glsl(source_or_path, defines=None, specialization=None, include_dirs=None,
                 device=None, check_bounds: bool = False) -> ShaderKernel:
    """A ShaderKernel from GLSL compute source (a path or the text) compiled by glslang for
    the device's Vulkan version; `defines` are -D macros ({NAME: value or None}),
    `specialization` {id or name: value}; `#include "file"` searches the including file's
    folder first, then the folders `include_dirs` (as glslc does); the environment variable
    VKIR_GLSLANG names a glslangValidator to use instead of the bundled one; `check_bounds`:
    run it bounds-checked (vkir.driver.shader_bounds: an out-of-bounds index is dropped or
    reads 0 and raises OutOfBoundsError, instead of being undefined)."""
    from ..runtime.glsl import compile_glsl as glslang

    src, path = _read_source(source_or_path, "vkir.compile_glsl")
    if isinstance(src, bytes):
        src = src.decode(errors="replace")
    if defines is not None and not isinstance(defines, dict):
        raise ArgumentError(f"vkir.compile_glsl: defines must be a dict, got {type(defines).__name__}")
    dirs = _include_dirs(include_dirs)
    rt = runtime_for(device)
    # for Vulkan 1.3 glslang sets a specialized local size with LocalSizeId, which needs the
    # maintenance4 feature; without it at most Vulkan 1.2 (1.5 modules run on 1.3 devices)
    env = rt.target().env
    if "maintenance4" not in rt.features:
        env = min(env, "vulkan1.2")
    kind = _checked_kind(check_bounds)
    words = glslang(path if path is not None else src, defines=defines, target_env=env,
                    include_dirs=dirs)
    return kind(words, rt, "main", specialization,
                name=path.name if path is not None else "glsl")
