"""Shaders as projects publish them, second round (our own small shaders in their patterns):
decoration groups, spec-sized shared arrays, recursive buffer_reference types, extensions and
extended instruction sets the device lacks, .spvasm assembled for the target environment."""

import numpy as np
import pytest

import vkir
from vkir.errors import UnsupportedError

# two BufferBlock storage buffers whose block decoration, member offsets and descriptor set come
# through decoration groups (the form older SPIR-V generators and hand-written tests use)
DECORATION_GROUPS = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 16 1 1
               OpName %In "In"
               OpName %Out "Out"
               OpName %src "src"
               OpName %dst "dst"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %rta ArrayStride 4
               OpDecorate %blocks BufferBlock
               OpDecorate %sets DescriptorSet 0
               OpDecorate %offsets Offset 0
               OpDecorate %readonly NonWritable
     %blocks = OpDecorationGroup
       %sets = OpDecorationGroup
    %offsets = OpDecorationGroup
   %readonly = OpDecorationGroup
               OpGroupDecorate %blocks %In %Out
               OpGroupDecorate %sets %src %dst
               OpGroupMemberDecorate %offsets %In 0 %Out 0
               OpGroupDecorate %readonly %src
               OpDecorate %src Binding 0
               OpDecorate %dst Binding 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
      %float = OpTypeFloat 32
     %v3uint = OpTypeVector %uint 3
      %ptr_i = OpTypePointer Input %v3uint
        %gid = OpVariable %ptr_i Input
     %uint_0 = OpConstant %uint 0
      %int_0 = OpConstant %int 0
    %float_2 = OpConstant %float 2
    %float_1 = OpConstant %float 1
   %ptr_in_u = OpTypePointer Input %uint
        %rta = OpTypeRuntimeArray %float
         %In = OpTypeStruct %rta
        %Out = OpTypeStruct %rta
     %ptr_In = OpTypePointer Uniform %In
    %ptr_Out = OpTypePointer Uniform %Out
        %src = OpVariable %ptr_In Uniform
        %dst = OpVariable %ptr_Out Uniform
      %ptr_f = OpTypePointer Uniform %float
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %gp = OpAccessChain %ptr_in_u %gid %uint_0
          %i = OpLoad %uint %gp
         %sp = OpAccessChain %ptr_f %src %int_0 %i
          %x = OpLoad %float %sp
          %y = OpFMul %float %x %float_2
          %z = OpFAdd %float %y %float_1
         %dp = OpAccessChain %ptr_f %dst %int_0 %i
               OpStore %dp %z
               OpReturn
               OpFunctionEnd
"""


@pytest.mark.device
def test_decoration_groups_give_storage_buffers_and_the_output_comes_back():
    k = vkir.load_spirv(DECORATION_GROUPS)
    assert [(b.binding, b.kind, b.readonly) for b in k.bindings] == [
        (0, "storage", True), (1, "storage", False)]
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    k(x, y, grid=(2,))
    np.testing.assert_array_equal(y, x * 2 + 1)


def _features():
    return vkir.device().info.features


VOTE = """#version 450
#extension GL_ARB_shader_group_vote : require
layout(local_size_x = 4) in;
layout(binding = 0) buffer Data { uint flags[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    bool any_set = anyInvocationARB(flags[i] != 0u);
    bool all_set = allInvocationsARB(flags[i] != 0u);
    flags[i] = (any_set ? 1u : 0u) + (all_set ? 2u : 0u);
}
"""


@pytest.mark.device
def test_arb_subgroup_vote_runs_where_the_device_has_the_extension():
    if "subgroup_vote_khr" not in _features():
        with pytest.raises(UnsupportedError, match="SubgroupVoteKHR.*'subgroup_vote_khr'"):
            vkir.compile_glsl(VOTE)
        return
    k = vkir.compile_glsl(VOTE)
    flags = np.array([0, 0, 0, 0, 0, 3, 0, 0, 5, 6, 7, 8], np.uint32)
    k(flags, grid=(3,))   # one workgroup of 4 is within one subgroup on every device here
    np.testing.assert_array_equal(flags, [0] * 4 + [1] * 4 + [3] * 4)


UNIFORM_16_8 = """#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(binding = 0) uniform Table { u16vec4 halves[2]; u8vec4 bytes[2]; };
layout(binding = 1) writeonly buffer Out { uint result[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    result[i] = uint(halves[i / 4u][i % 4u]) + uint(bytes[i / 4u][i % 4u]);
}
"""


@pytest.mark.device
def test_8_and_16_bit_members_of_a_uniform_buffer():
    if {"uniform_buffer_16bit", "uniform_buffer_8bit"} - _features():
        with pytest.raises(UnsupportedError, match="UniformAndStorageBuffer(16|8)BitAccess"):
            vkir.compile_glsl(UNIFORM_16_8)
        return
    k = vkir.compile_glsl(UNIFORM_16_8)
    table = np.zeros(64, np.uint8)   # std140: u16vec4[2] at 0 (stride 16), u8vec4[2] at 32
    halves = np.arange(8, dtype=np.uint16) * 1000
    for n in range(8):
        table[16 * (n // 4) + 2 * (n % 4):][:2] = halves[n:n + 1].view(np.uint8)
        table[32 + 16 * (n // 4) + n % 4] = n + 1
    out = np.zeros(8, np.uint32)
    k(table, out, grid=(1,))
    np.testing.assert_array_equal(out, halves.astype(np.uint32) + np.arange(1, 9))


# an integer dot product of packed 4x8-bit vectors (what GL_EXT_integer_dot_product's
# dotPacked4x8EXT compiles to), written as assembly: the bundled glslang predates that extension
DOT_PRODUCT = """
               OpCapability Shader
               OpCapability DotProduct
               OpCapability DotProductInput4x8BitPacked
               OpExtension "SPV_KHR_integer_dot_product"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 16 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %rta ArrayStride 4
               OpDecorate %Buf Block
               OpMemberDecorate %Buf 0 Offset 0
               OpDecorate %a DescriptorSet 0
               OpDecorate %a Binding 0
               OpDecorate %a NonWritable
               OpDecorate %b DescriptorSet 0
               OpDecorate %b Binding 1
               OpDecorate %b NonWritable
               OpDecorate %c DescriptorSet 0
               OpDecorate %c Binding 2
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
     %v3uint = OpTypeVector %uint 3
      %ptr_i = OpTypePointer Input %v3uint
        %gid = OpVariable %ptr_i Input
     %uint_0 = OpConstant %uint 0
      %int_0 = OpConstant %int 0
   %ptr_in_u = OpTypePointer Input %uint
        %rta = OpTypeRuntimeArray %uint
        %Buf = OpTypeStruct %rta
    %ptr_Buf = OpTypePointer StorageBuffer %Buf
          %a = OpVariable %ptr_Buf StorageBuffer
          %b = OpVariable %ptr_Buf StorageBuffer
          %c = OpVariable %ptr_Buf StorageBuffer
      %ptr_u = OpTypePointer StorageBuffer %uint
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %gp = OpAccessChain %ptr_in_u %gid %uint_0
          %i = OpLoad %uint %gp
         %ap = OpAccessChain %ptr_u %a %int_0 %i
         %av = OpLoad %uint %ap
         %bp = OpAccessChain %ptr_u %b %int_0 %i
         %bv = OpLoad %uint %bp
          %d = OpUDot %uint %av %bv PackedVectorFormat4x8Bit
         %cp = OpAccessChain %ptr_u %c %int_0 %i
               OpStore %cp %d
               OpReturn
               OpFunctionEnd
"""


@pytest.mark.device
def test_integer_dot_product_of_packed_bytes():
    if "integer_dot_product" not in _features():
        with pytest.raises(UnsupportedError, match="DotProduct.*'integer_dot_product'"):
            vkir.load_spirv(DOT_PRODUCT)
        return
    k = vkir.load_spirv(DOT_PRODUCT)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (16, 4), dtype=np.uint8)
    b = rng.integers(0, 256, (16, 4), dtype=np.uint8)
    c = np.zeros(16, np.uint32)
    k(a.view(np.uint32).ravel(), b.view(np.uint32).ravel(), c, grid=(1,))
    np.testing.assert_array_equal(c, (a.astype(np.uint32) * b).sum(axis=1))
