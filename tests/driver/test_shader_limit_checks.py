"""A ShaderKernel checks each device limit once: at load, one vkir.runtime.limits.check_shader
(local size, invocations, shared memory, push constants; before, the local size was checked a
second time by check_workgroup), and per call one check_groups and one check_binding_range per
buffer, with the messages shaders always had."""

import numpy as np
import pytest

import vkir
from vkir.runtime import limits

SOURCE = """#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(push_constant) uniform P { float k; };
void main() { a[gl_GlobalInvocationID.x] += b[gl_GlobalInvocationID.x] * k; }
"""


@pytest.fixture
def checks(monkeypatch) -> dict:
    """Calls of each limit check of vkir.runtime.limits from now on, by name."""
    counts = {}
    for name in ("check_shader", "check_workgroup", "check_push_constants", "check_groups",
                 "check_binding_range"):
        original = getattr(limits, name)

        def counting(*args, _name=name, _original=original, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(limits, name, counting)
    return counts


def test_each_limit_checked_once_per_load_and_per_call(vkir_device, checks):
    sk = vkir.compile_glsl(SOURCE, device=vkir_device)
    assert checks == {"check_shader": 1}
    a, b = np.zeros(16, np.float32), np.ones(16, np.float32)
    for calls in (1, 2):
        sk(a, b, grid=2, push={"k": 2.0})
        assert checks == {"check_shader": 1, "check_groups": calls, "check_binding_range": 2 * calls}
    np.testing.assert_array_equal(a, np.full(16, 4.0, np.float32))


def test_messages_name_the_shader_limit(vkir_device):
    info = vkir_device.info
    sk = vkir.compile_glsl(SOURCE, device=vkir_device)
    cap = info.limits.max_workgroup_count[1]
    with pytest.raises(vkir.UnsupportedError, match=rf"glsl: {cap + 1} workgroups on axis y exceed "
                                                    rf"maxComputeWorkGroupCount\[1\] = {cap} of"):
        sk(np.zeros(8, np.float32), np.zeros(8, np.float32), grid=(1, cap + 1), push={"k": 1.0})
    with pytest.raises(vkir.ArgumentError, match="glsl: negative workgroup count -1 on axis x"):
        sk(np.zeros(8, np.float32), np.zeros(8, np.float32), grid=-1, push={"k": 1.0})
    with pytest.raises(vkir.UnsupportedError, match="glsl: local_size_x = 0; it must be >= 1"):
        limits.check_shader(info, (0, 1, 1), 0, 0, "glsl")
    with pytest.raises(vkir.UnsupportedError, match=r"glsl: push constants of 4096 bytes exceed "
                                                    "maxPushConstantsSize"):
        limits.check_shader(info, (1, 1, 1), 0, 4096, "glsl")
    with pytest.raises(vkir.UnsupportedError, match="x has 65537 bytes, more than "
                                                    "maxUniformBufferRange = 65536"):
        limits.check_binding_range(_with_uniform_range(info, 65536), 65537, "uniform", "x")


def _with_uniform_range(info, cap):
    import dataclasses

    return dataclasses.replace(info, limits=dataclasses.replace(info.limits,
                                                                 max_uniform_buffer_range=cap))
