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
    from vkir.spirv import assemble

    # BufferBlock is SPIR-V before 1.4: assembled for Vulkan 1.0 as such generators target it
    k = vkir.load_spirv(assemble(DECORATION_GROUPS, "vulkan1.0"))
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
    from vkir.spirv import assemble

    if "integer_dot_product" not in _features():
        with pytest.raises(UnsupportedError, match="DotProduct.*'integer_dot_product'"):
            vkir.load_spirv(assemble(DOT_PRODUCT, "vulkan1.1"))
        return
    k = vkir.load_spirv(assemble(DOT_PRODUCT, "vulkan1.1"))   # SPIR-V 1.3 with the extension
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (16, 4), dtype=np.uint8)
    b = rng.integers(0, 256, (16, 4), dtype=np.uint8)
    c = np.zeros(16, np.uint32)
    k(a.view(np.uint32).ravel(), b.view(np.uint32).ravel(), c, grid=(1,))
    np.testing.assert_array_equal(c, (a.astype(np.uint32) * b).sum(axis=1))


# a kernel that includes a header beside it, which includes one from an include folder (the
# layout of projects that keep shared headers in a common folder)
KERNEL_WITH_INCLUDES = """#version 450
#include "types.h"
layout(local_size_x = 16) in;
layout(binding = 0) buffer Data { data_t values[]; };
void main() { uint i = gl_GlobalInvocationID.x; values[i] = scale(values[i]); }
"""


def _include_tree(root):
    (root / "kernels").mkdir()
    (root / "common").mkdir()
    (root / "kernels" / "scale.comp").write_text(KERNEL_WITH_INCLUDES)
    (root / "kernels" / "types.h").write_text('#define data_t float\n#include "ops.h"\n')
    (root / "common" / "ops.h").write_text("data_t scale(data_t x) { return x * FACTOR; }\n")
    # a same-named header in the include folder loses to the one beside the including file
    (root / "common" / "types.h").write_text("#error the include folder was searched first\n")
    return root / "kernels" / "scale.comp"


@pytest.mark.device
def test_includes_search_the_including_folder_then_include_dirs(tmp_path):
    path = _include_tree(tmp_path)
    k = vkir.compile_glsl(path, defines={"FACTOR": 3.0}, include_dirs=[tmp_path / "common"])
    x = np.arange(16, dtype=np.float32)
    k(x, grid=(1,))
    np.testing.assert_array_equal(x, np.arange(16) * 3.0)
    # source text: its includes resolve against include_dirs
    (tmp_path / "common" / "types.h").write_text('#define data_t float\n#include "ops.h"\n')
    k2 = vkir.compile_glsl(KERNEL_WITH_INCLUDES, defines={"FACTOR": 2.0},
                           include_dirs=[str(tmp_path / "common")])
    k2(x, grid=(1,))
    np.testing.assert_array_equal(x, np.arange(16) * 6.0)
    with pytest.raises(vkir.ArgumentError, match="is not a folder"):
        vkir.compile_glsl(path, include_dirs=[tmp_path / "nowhere"])
    from vkir.runtime.glsl import GlslError

    with pytest.raises(GlslError, match="ops.h"):
        vkir.compile_glsl(path, defines={"FACTOR": 3.0})   # ops.h only in the include folder


@pytest.mark.device
def test_vkir_glslang_names_another_glslang(tmp_path, monkeypatch):
    from vkir.runtime.glsl import find_glslang

    marker = tmp_path / "used"
    wrapper = tmp_path / "my-glslang"
    wrapper.write_text(f'#!/bin/sh\necho "$@" > "{marker}"\nexec "{find_glslang()}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("VKIR_GLSLANG", str(wrapper))
    k = vkir.compile_glsl(_include_tree(tmp_path), defines={"FACTOR": 1.0},
                          include_dirs=[tmp_path / "common"])
    assert k.local_size == (16, 1, 1)
    assert "--target-env" in marker.read_text()
    monkeypatch.setenv("VKIR_GLSLANG", str(tmp_path / "missing"))
    from vkir.runtime.glsl import GlslError

    with pytest.raises(GlslError, match="VKIR_GLSLANG names .*missing"):
        vkir.compile_glsl(KERNEL_WITH_INCLUDES)


# shared memory sized by the specialized local size (gl_WorkGroupSize.x under local_size_x_id)
SHARED_BY_LOCAL_SIZE = """#version 450
layout(local_size_x_id = 0) in;
shared float tile[gl_WorkGroupSize.x * 2u];
layout(binding = 0) buffer Data { float values[]; };
void main() {
    uint l = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    uint base = gl_WorkGroupID.x * n;
    tile[l] = values[base + l];
    tile[l + n] = 1.0;
    barrier();
    values[base + l] = tile[n - 1u - l] + tile[l + n];
}
"""


@pytest.mark.device
@pytest.mark.parametrize("n", [8, 32])
def test_shared_array_sized_by_the_specialized_local_size(n):
    k = vkir.compile_glsl(SHARED_BY_LOCAL_SIZE, specialization={"local_size_x": n})
    assert k.local_size == (n, 1, 1) and k._shared_bytes == 4 * 2 * n
    x = np.arange(2 * n, dtype=np.float32)
    k(x, grid=(2,))
    want = np.concatenate([np.arange(n)[::-1], np.arange(n, 2 * n)[::-1]]) + 1.0
    np.testing.assert_array_equal(x, want)


# a linked list through buffer_reference: the node type holds a pointer to itself
LINKED_LIST = """#version 450
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 1) in;
layout(buffer_reference, std430) buffer Node;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Node { Node next; uint value; };
layout(binding = 0) buffer Out { uint total; };
layout(push_constant) uniform Push { Node head; } pc;
void main() {
    uint sum = 0u;
    for (Node n = pc.head; uint64_t(n) != 0ul; n = n.next) sum += n.value;
    total = sum;
}
"""


def test_a_recursive_buffer_reference_type_reflects():
    from vkir.runtime.glsl import compile_glsl
    from vkir.spirv.reflection import reflect

    src = LINKED_LIST.replace("#extension GL_EXT_buffer_reference : require",
                              "#extension GL_EXT_buffer_reference : require\n"
                              "#extension GL_ARB_gpu_shader_int64 : require")
    info = reflect(compile_glsl(src, target_env="vulkan1.2"))
    (head,) = info.push_constants
    assert head.name == "head" and head.size == 8 and head.type.kind == "pointer"
    node = head.type.element
    assert [m.name for m in node.members] == ["next", "value"]
    assert node.members[0].type.element.name == "Node"     # the stub where the type recurses


# an OpExtension no device here offers (Vulkan-Samples' relaxed_demo uses this one): refused by
# name before the driver sees it
RELAXED = """
               OpCapability Shader
               OpExtension "SPV_KHR_relaxed_extended_instruction"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
"""


@pytest.mark.device
def test_extensions_and_instruction_sets_the_device_lacks_are_refused_by_name():
    if "VK_KHR_shader_relaxed_extended_instruction" not in vkir.device().info.extensions:
        with pytest.raises(UnsupportedError, match="OpExtension 'SPV_KHR_relaxed_extended_"
                                                   "instruction'.*VK_KHR_shader_relaxed"):
            vkir.load_spirv(RELAXED)
    debug_info = RELAXED.replace('OpExtension "SPV_KHR_relaxed_extended_instruction"',
                                 '%dbg = OpExtInstImport "DebugInfo"')
    with pytest.raises(UnsupportedError, match="extended instruction set 'DebugInfo'"):
        vkir.load_spirv(debug_info)


@pytest.mark.device
def test_spvasm_is_assembled_for_the_target_environment_not_its_version_comment(tmp_path):
    from vkir.spirv.parsed_module import module_words
    from vkir.tools.validate import check_file

    text = "; SPIR-V\n; Version: 1.0\n" + RELAXED.replace(
        '               OpExtension "SPV_KHR_relaxed_extended_instruction"\n', "")
    k = vkir.load_spirv(text)
    want = {"vulkan1.1": 3, "vulkan1.2": 5, "vulkan1.3": 6}[k.env]
    assert (module_words(k.spirv)[1] >> 8) & 0xFF == want
    path = tmp_path / "empty.spvasm"
    path.write_text(DECORATION_GROUPS)   # BufferBlock: valid SPIR-V 1.3, not 1.4 and later
    assert check_file(path, "vulkan1.1").valid
    assert not check_file(path, "vulkan1.2").valid
    path.write_text("; Version: 1.0\n" + DECORATION_GROUPS)
    assert not check_file(path, "vulkan1.2").valid   # the comment does not make it 1.0
