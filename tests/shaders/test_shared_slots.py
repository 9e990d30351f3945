"""Two descriptor kinds on one (set, binding): spirv-val accepts such a module, but no Vulkan
descriptor set layout fits it, and the drivers killed the process (lavapipe at pipeline creation,
SwiftShader at the dispatch). Loading is now refused by name (the set, the binding and both kinds)
before the driver sees the module. The loads run in a subprocess, so that a crash fails the test
instead of killing pytest. Our own small shaders (the texel-buffer pair follows the pattern of
SPIRV-Cross's temorary-access-terminator test, written anew here)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import vkir

pytestmark = pytest.mark.vkir_device

# a uniform and a storage texel buffer on set 0, binding 0
TEXELS = """#version 450
#extension GL_EXT_samplerless_texture_functions : require
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 0, r32ui) uniform writeonly uimageBuffer dst;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    imageStore(dst, i, uvec4(texelFetch(src, i).x + 1u));
}
"""

# the same pair in SPIR-V assembly, on set 1, binding 2 (the uniform texel buffer is read, the
# storage one written)
TEXELS_ASM = """
               OpCapability Shader
               OpCapability SampledBuffer
               OpCapability ImageBuffer
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 16 1 1
               OpName %texels "texels"
               OpName %out "out"
               OpDecorate %texels DescriptorSet 1
               OpDecorate %texels Binding 2
               OpDecorate %out DescriptorSet 1
               OpDecorate %out Binding 2
               OpDecorate %out NonReadable
               OpDecorate %gid BuiltIn GlobalInvocationId
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
     %v4uint = OpTypeVector %uint 4
     %v3uint = OpTypeVector %uint 3
    %uniform = OpTypeImage %uint Buffer 0 0 0 1 Unknown
    %storage = OpTypeImage %uint Buffer 0 0 0 2 R32ui
  %p_uniform = OpTypePointer UniformConstant %uniform
  %p_storage = OpTypePointer UniformConstant %storage
     %p_v3in = OpTypePointer Input %v3uint
     %texels = OpVariable %p_uniform UniformConstant
        %out = OpVariable %p_storage UniformConstant
        %gid = OpVariable %p_v3in Input
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %id = OpLoad %v3uint %gid
          %x = OpCompositeExtract %uint %id 0
          %i = OpBitcast %int %x
          %t = OpLoad %uniform %texels
          %v = OpImageFetch %v4uint %t %i
          %o = OpLoad %storage %out
               OpImageWrite %o %i %v
               OpReturn
               OpFunctionEnd
"""

# a storage and a uniform buffer block on set 0, binding 1
BUFFERS = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 1) buffer S { float s[]; };
layout(set = 0, binding = 1) uniform U { float u[4]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < 4) s[i] = u[i] * 2.0; }
"""

# a storage buffer and a storage image on set 1, binding 0
BUFFER_AND_IMAGE = """#version 450
layout(local_size_x = 16) in;
layout(set = 1, binding = 0) buffer S { float s[]; };
layout(set = 1, binding = 0, r32f) uniform writeonly image2D img;
void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy); imageStore(img, p, vec4(s[p.x])); }
"""

# two storage images of different formats on one binding
TWO_IMAGES = """#version 450
layout(local_size_x = 16) in;
layout(binding = 0, r32f) uniform readonly image2D a;
layout(binding = 0, rgba8) uniform writeonly image2D b;
void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy); imageStore(b, p, imageLoad(a, p)); }
"""

LOADS = r"""
import json, sys
import vkir
from vkir.errors import UnsupportedError
from vkir.spirv import assemble

cases = json.loads(sys.stdin.read())
out = {}
for name, (kind, text) in cases.items():
    try:
        if kind == "asm":
            vkir.load_spirv(assemble(text, "vulkan1.0"))
        else:
            vkir.compile_glsl(text)
        out[name] = None
    except UnsupportedError as err:
        out[name] = str(err)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def refusals(_vulkan_device):
    cases = {"texels": ("glsl", TEXELS), "texels asm": ("asm", TEXELS_ASM),
             "buffers": ("glsl", BUFFERS), "buffer and image": ("glsl", BUFFER_AND_IMAGE),
             "two images": ("glsl", TWO_IMAGES)}
    proc = subprocess.run([sys.executable, "-c", LOADS], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_uniform_and_a_storage_texel_buffer_on_one_binding_are_refused(refusals):
    assert "set 0, binding 0 is declared as a storage texel buffer ('dst') and as a uniform " \
           "texel buffer ('src'); a Vulkan binding has one descriptor type" in refusals["texels"]
    assert "set 1, binding 2 is declared as a uniform texel buffer ('texels') and as a storage " \
           "texel buffer ('out')" in refusals["texels asm"]


def test_a_storage_and_a_uniform_block_on_one_binding_are_refused(refusals):
    assert "set 0, binding 1 is declared as a storage buffer ('S') and as a uniform buffer " \
           "('U')" in refusals["buffers"]


def test_a_buffer_and_an_image_on_one_binding_are_refused(refusals):
    assert "set 1, binding 0 is declared as a storage buffer ('S') and as a storage image " \
           "('img')" in refusals["buffer and image"]


def test_two_images_on_one_binding_are_refused(refusals):
    message = refusals["two images"]
    assert "set 0, binding 0 is declared twice as a storage image" in message
    assert "'a'" in message and "'b'" in message


def test_two_views_of_one_storage_buffer_still_bind_as_one(vkir_device):
    sk = vkir.compile_glsl("""#version 450
layout(local_size_x = 8) in;
layout(binding = 0) readonly buffer In { float x[]; };
layout(binding = 0) readonly buffer InVec { vec2 v[]; };
layout(binding = 1) buffer Out { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; y[i] = x[i] + v[i / 2u].y; }
""")
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(8, np.float32)
    sk(x, y, grid=1)
    np.testing.assert_array_equal(y, x[:8] + x[1::2][np.arange(8) // 2])
