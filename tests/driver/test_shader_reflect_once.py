"""A ShaderKernel reflects its module once: a specialization that sizes shared memory is applied
to the module as parsed then (ShaderInfo.specialized_shared_memory_bytes), not to a second parse."""

import numpy as np
import pytest

import vkir
from vkir.spirv import reflection

SOURCE = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int WORDS = 4;
layout(std430, binding = 0) buffer A { float a[]; };
shared float scratch[WORDS * 2];
void main() {
    uint i = gl_LocalInvocationID.x;
    scratch[i] = a[i];
    barrier();
    a[i] = scratch[gl_WorkGroupSize.x - 1 - i] + float(WORDS);
}
"""


@pytest.fixture
def parses(monkeypatch) -> list:
    """One entry per parse of a module by reflection from now on."""
    calls = []
    parsed = reflection.ParsedModule

    class Counting(parsed):
        def __init__(self, *args, **kwargs):
            calls.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(reflection, "ParsedModule", Counting)
    return calls


def test_specialized_shader_is_reflected_once(vkir_device, parses):
    words = vkir.compile_glsl(SOURCE, device=vkir_device).spirv
    parses.clear()
    sk = vkir.load_spirv(words, specialization={"local_size_x": 16, "WORDS": 8},
                         device=vkir_device)
    assert len(parses) == 1
    assert sk.local_size == (16, 1, 1)
    assert sk.info.shared_memory_bytes == 4 * 2 * 4              # the defaults
    assert sk._shared_bytes == 8 * 2 * 4                         # as specialized
    a = np.arange(16, dtype=np.float32)
    sk(a, grid=1)
    np.testing.assert_array_equal(a, np.arange(16)[::-1] + 8)


def test_shared_memory_limit_follows_the_specialization(vkir_device):
    words = vkir.compile_glsl(SOURCE, device=vkir_device).spirv
    too_many = vkir_device.info.limits.max_shared_memory_bytes // 8 + 1
    with pytest.raises(vkir.UnsupportedError, match=f"{too_many * 8} bytes of shared memory "
                                                    "exceed maxComputeSharedMemorySize"):
        vkir.load_spirv(words, specialization={"WORDS": too_many}, device=vkir_device)
