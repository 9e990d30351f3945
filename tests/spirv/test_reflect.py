"""Reflection of real shaders compiled by glslang: entry points, local size (LocalSize, the
WorkgroupSize builtin with a specialization constant, LocalSizeId), bindings, push constants and
specialization constants; and hand-written assembly for what glslang does not emit."""

from pathlib import Path

import pytest

from vkir.errors import ArgumentError, SpirvValidationError
from vkir.runtime.glsl import compile_glsl
from vkir.spirv import assemble, validate
from vkir.spirv.reflection import (DescriptorBinding, ReflectedPushConstant, SpecConstant,
                                   SpirvType, reflect)

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
F32, I32, U32 = SpirvType("float", 32), SpirvType("int", 32, True), SpirvType("int", 32, False)


def _compiled(name, env):
    words = compile_glsl(SHADERS / name, target_env=env)
    validate(words, env)
    return words


@pytest.mark.parametrize("env", ["vulkan1.1", "vulkan1.2", "vulkan1.3"])
def test_affine_shader(env):
    info = reflect(_compiled("affine.comp", env))
    assert info.entry.name == "main" and info.entry.execution_model == "GLCompute"
    assert info.local_size == (1, 1, 1) and info.local_size_ids == (0, None, None)
    assert info.specialize({0: 128}) == (128, 1, 1)
    assert info.uses_local_size_id == (env == "vulkan1.3")  # glslang's choice for SPIR-V 1.6
    b = info.bindings
    assert [(x.set, x.binding, x.kind, x.name, x.readonly, x.writeonly) for x in b] == [
        (0, 0, "storage", "X", True, False), (0, 1, "storage", "V", True, False),
        (0, 2, "storage", "Y", False, True), (0, 3, "uniform", "coeffs", False, False)]
    assert [(x.element, x.array_stride, x.offset) for x in b[:3]] == [
        (F32, 4, 0), (SpirvType("vector", element=F32, count=4), 16, 0), (F32, 4, 0)]
    assert b[1].element.dtype == "float32x4"
    coeffs = b[3].type
    assert b[3].element is None and b[3].fixed_size == 24 and coeffs.name == "Coeffs"
    assert [(m.name, m.type.dtype, m.offset) for m in coeffs.members] == [
        ("weights", "float32x4", 0), ("offset", "float32", 16), ("mode", "int32", 20)]
    assert info.push_constants == (
        ReflectedPushConstant("n", I32, 0, 4), ReflectedPushConstant("alpha", F32, 4, 4),
        ReflectedPushConstant("bias", SpirvType("vector", element=F32, count=4), 16, 16))
    assert info.push_constant_size == 32 and info.push_block == "p"
    assert info.spec_constants == (SpecConstant(0, "", U32, 1), SpecConstant(1, "SCALE", F32, 1.0),
                                   SpecConstant(2, "USE_BIAS", SpirvType("bool", 32), True))
    assert "Shader" in info.capabilities


def test_counts_shader_fixed_local_size_and_header_before_the_runtime_array():
    info = reflect(_compiled("counts.comp", "vulkan1.1"))
    assert info.local_size == (64, 1, 1) and info.local_size_ids == (None, None, None)
    counter = info.bindings[2]
    assert counter == DescriptorBinding(0, 2, "storage", "Counter", counter.type, False, False, U32, 4, 4)
    assert counter.fixed_size == 4
    assert [(m.name, m.dtype, m.offset) for m in info.push_constants] == [
        ("n", "uint32", 0), ("k", "int32", 4), ("target", "int32", 8)]
    assert info.spec_constants == () and info.shared_memory_bytes == 0
    assert reflect(_compiled("../../shaders/sum.comp", "vulkan1.1")).shared_memory_bytes == 256 * 4


ASM = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %first "first" %gid
               OpEntryPoint GLCompute %second "second" %gid
               OpExecutionMode %first LocalSize 8 4 2
               OpExecutionMode %second LocalSize 16 1 1
               OpName %buf_a "a"
               OpName %buf_b "b"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %rt ArrayStride 8
               OpMemberDecorate %Block 0 Offset 0
               OpDecorate %Block BufferBlock
               OpDecorate %buf_a DescriptorSet 0
               OpDecorate %buf_a Binding 5
               OpDecorate %buf_b DescriptorSet 1
               OpDecorate %buf_b Binding 0
               OpDecorate %buf_b NonWritable
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
       %vec2 = OpTypeVector %uint 2
      %uvec3 = OpTypeVector %uint 3
   %in_uvec3 = OpTypePointer Input %uvec3
        %gid = OpVariable %in_uvec3 Input
         %rt = OpTypeRuntimeArray %vec2
      %Block = OpTypeStruct %rt
      %Ptr = OpTypePointer Uniform %Block
      %buf_a = OpVariable %Ptr Uniform
      %buf_b = OpVariable %Ptr Uniform
     %uint_0 = OpConstant %uint 0
      %pelem = OpTypePointer Uniform %vec2
      %first = OpFunction %void None %fn
         %l1 = OpLabel
         %p1 = OpAccessChain %pelem %buf_a %uint_0 %uint_0
               OpReturn
               OpFunctionEnd
     %second = OpFunction %void None %fn
         %l2 = OpLabel
         %p2 = OpAccessChain %pelem %buf_b %uint_0 %uint_0
               OpReturn
               OpFunctionEnd
"""


def test_entry_points_see_their_own_bindings_and_buffer_block_is_a_storage_buffer():
    words = assemble(ASM, "vulkan1.1")
    validate(words, "vulkan1.1")
    first, second = reflect(words, "first"), reflect(words, "second")
    assert [e.name for e in first.entry_points] == ["first", "second"]
    assert first.local_size == (8, 4, 2) and second.local_size == (16, 1, 1)
    assert [(b.set, b.binding, b.kind, b.name, b.readonly) for b in first.bindings] == [
        (0, 5, "storage", "a", False)]
    assert [(b.set, b.binding, b.kind, b.name, b.readonly) for b in second.bindings] == [
        (1, 0, "storage", "b", True)]
    assert first.bindings[0].element.dtype == "uint32x2" and first.bindings[0].array_stride == 8
    with pytest.raises(ArgumentError, match=r"no entry point named 'main' \(found: 'first'"):
        reflect(words)


def test_not_a_module():
    with pytest.raises(SpirvValidationError, match="whole number of 32-bit words"):
        reflect(b"\x03\x02\x23\x07" * 5 + b"\x00")
    with pytest.raises(SpirvValidationError, match="magic number 0xdeadbeef"):
        reflect(b"\xef\xbe\xad\xde" + b"\0" * 16)
