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
