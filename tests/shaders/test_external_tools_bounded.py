"""External tools run with time and memory bounds, and inputs that would block are refused."""

import os
import time

import pytest

import vkir
from vkir.errors import ArgumentError, VkirError
from vkir.runtime import glsl


def macro_bomb(levels=30):
    lines = ["#version 450", "layout(local_size_x = 1) in;", "#define A0 x x"]
    lines += [f"#define A{i} A{i - 1} A{i - 1}" for i in range(1, levels + 1)]
    lines += ["layout(binding = 0) buffer B { float x; };", f"void main() {{ x = A{levels}; }}"]
    return "\n".join(lines) + "\n"


@pytest.mark.device
def test_a_macro_bomb_stops_at_the_bounds(monkeypatch):
    monkeypatch.setattr(glsl, "GLSLANG_SECONDS", 10)
    monkeypatch.setattr(glsl, "GLSLANG_MEMORY_BYTES", 512 << 20)
    start = time.monotonic()
    with pytest.raises(glsl.GlslError, match="did not finish|memory bound|failed"):
        vkir.compile_glsl(macro_bomb())
    assert time.monotonic() - start < 30


@pytest.mark.device
def test_non_utf8_glsl_is_a_glsl_error_not_a_decode_error(tmp_path):
    path = tmp_path / "bad.comp"
    path.write_bytes(b"#version 450\nlayout(local_size_x = 1) in;\nvoid main() { \xff\xfe }\n")
    with pytest.raises(VkirError):
        vkir.compile_glsl(path)
    with pytest.raises(VkirError):
        vkir.compile_glsl(path.read_bytes())


def test_a_fifo_is_refused_not_read(tmp_path):
    fifo = tmp_path / "pipe.comp"
    os.mkfifo(fifo)
    with pytest.raises(ArgumentError, match="not a regular file"):
        vkir.compile_glsl(str(fifo))
    with pytest.raises(ArgumentError, match="not a regular file"):
        vkir.load_spirv(str(fifo))
    from vkir.tools.validate import expand
    with pytest.raises(ArgumentError, match="not a regular file"):
        expand([fifo])


def test_vkir_validate_on_a_fifo_exits_with_a_usage_error(tmp_path):
    import subprocess
    import sys

    fifo = tmp_path / "pipe.spv"
    os.mkfifo(fifo)
    run = subprocess.run([sys.executable, "-m", "vkir", "validate", str(fifo)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and "not a regular file" in run.stderr
