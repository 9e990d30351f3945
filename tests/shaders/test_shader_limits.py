"""Every limit an existing shader can reach is checked before the driver sees it: binding numbers,
the number of uniform buffers, shared memory sized by a specialization constant, and compute
inputs that no built-in feeds."""

from dataclasses import replace

import pytest

import vkir
from vkir.errors import UnsupportedError
from vkir.runtime.limits import MAX_BINDING_NUMBER
from vkir.spirv import assemble


def uniform_shader(count):
    blocks = "\n".join(f"layout(binding = {i}) uniform U{i} {{ float v{i}; }};" for i in range(count))
    total = " + ".join(f"v{i}" for i in range(count))
    return f"""#version 450
layout(local_size_x = 1) in;
{blocks}
layout(binding = {count}) buffer Out {{ float result[]; }};
void main() {{ result[0] = {total}; }}
"""


@pytest.mark.device
def test_more_uniform_buffers_than_the_device_allows_are_refused(monkeypatch):
    dev = vkir.device()
    limit = dev.info.limits.max_per_stage_uniform_buffers
    if limit + 1 >= MAX_BINDING_NUMBER:
        # more than binding numbers can name (Mesa 25's lavapipe allows 1000000): the check is
        # the same against a lower limit
        limit = 15
        monkeypatch.setattr(dev, "info", replace(dev.info, limits=replace(
            dev.info.limits, max_per_stage_uniform_buffers=limit)))
    vkir.compile_glsl(uniform_shader(limit))    # at the limit: fine
    with pytest.raises(UnsupportedError, match=rf"binds {limit + 1} uniform buffers; "
                                               r"maxPerStageDescriptorUniformBuffers"):
        vkir.compile_glsl(uniform_shader(limit + 1))


SHARED = """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const int N = 64;
shared float cache[N];
layout(binding = 0) buffer Data { float data[]; };
void main() {
    cache[gl_LocalInvocationID.x] = data[gl_LocalInvocationID.x];
    barrier();
    data[gl_LocalInvocationID.x] = cache[(gl_LocalInvocationID.x + 1) % 64];
}
"""


@pytest.mark.device
def test_shared_memory_sized_by_a_specialization_constant_is_checked_as_specialized():
    limit = vkir.device().info.limits.max_shared_memory_bytes
    vkir.compile_glsl(SHARED, specialization={0: 128})
    with pytest.raises(UnsupportedError, match="shared memory"):
        vkir.compile_glsl(SHARED, specialization={0: 4 * 1024 * 1024})   # 16 MB
    with pytest.raises(UnsupportedError, match="shared memory"):
        vkir.compile_glsl(SHARED, specialization={"N": limit // 4 + 1})


def module(binding=0, plain_input=False):
    extra_decor = "" if plain_input else "OpDecorate %gid BuiltIn GlobalInvocationId\n"
    return assemble(f"""
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 1 1 1
OpName %gid "gid"
{extra_decor}OpDecorate %Block Block
OpMemberDecorate %Block 0 Offset 0
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding {binding}
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%v3 = OpTypeVector %uint 3
%pin = OpTypePointer Input %v3
%gid = OpVariable %pin Input
%Block = OpTypeStruct %uint
%pblock = OpTypePointer StorageBuffer %Block
%buf = OpVariable %pblock StorageBuffer
%puint = OpTypePointer StorageBuffer %uint
%zero = OpConstant %uint 0
%main = OpFunction %void None %fn
%l = OpLabel
%id = OpLoad %v3 %gid
%x = OpCompositeExtract %uint %id 0
%p = OpAccessChain %puint %buf %zero
OpStore %p %x
OpReturn
OpFunctionEnd
""", env="vulkan1.1")


@pytest.mark.device
@pytest.mark.parametrize("binding", [65535, 0xFFFFFFFF, 1024])
def test_huge_binding_numbers_are_refused(binding):
    with pytest.raises(UnsupportedError, match=f"binding number {binding}; vkir accepts binding "
                                               "numbers 0 to 1023"):
        vkir.load_spirv(module(binding))


@pytest.mark.device
def test_a_valid_binding_number_runs():
    import numpy as np

    k = vkir.load_spirv(module(7))
    out = np.full(1, 99, np.uint32)
    k(out, grid=(1, 1, 1))
    assert out[0] == 0


@pytest.mark.device
def test_an_input_without_builtin_is_refused():
    with pytest.raises(UnsupportedError, match="input variable 'gid' has no BuiltIn decoration"):
        vkir.load_spirv(module(0, plain_input=True))
