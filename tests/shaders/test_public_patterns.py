"""Shaders written the way public projects write them (our own small shaders in their patterns):
images and samplers are refused by name, never a crash; two views of one binding are one buffer;
the Vulkan memory model runs where the device has it; row-major push-constant matrices have their
real size."""

import numpy as np
import pytest

import vkir
from vkir.errors import UnsupportedError

STORAGE_IMAGE = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0, rgba8) uniform readonly image2D inputImage;
layout(binding = 1, rgba8) uniform image2D resultImage;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(resultImage, p, imageLoad(inputImage, p));
}
"""

SAMPLER = """#version 450
layout(local_size_x = 16) in;
layout(binding = 0) uniform sampler2D tex;
layout(binding = 1) buffer Out { vec4 result[]; };
void main() { result[gl_GlobalInvocationID.x] = texture(tex, vec2(0.5)); }
"""


@pytest.mark.parametrize("source, binding, name, kind, fmt", [
    (STORAGE_IMAGE, 0, "inputImage", "storage_image", "Rgba8"),
    (SAMPLER, 0, "tex", "combined_image_sampler", "Unknown"),
])
@pytest.mark.device
def test_images_and_samplers_load_and_reflect_by_kind(source, binding, name, kind, fmt):
    """Published image shaders load (they were refused by name before images were bound) and
    reflection reports each image binding's kind, dimensionality and format."""
    k = vkir.compile_glsl(source)
    [image] = [b for b in k.info.images if b.binding == binding]
    assert (image.set, image.name, image.kind, image.dim, image.format) == (0, name, kind, "2d", fmt)


ALIASED = """#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };
layout(binding = 0) readonly buffer A_PACKED32 { uint data_a_packed32[]; };
layout(binding = 1) writeonly buffer D { uint d[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    d[i] = data_a_packed32[i] + uint(data_a[2 * i]);
}
"""


@pytest.mark.device
def test_two_views_of_one_binding_are_one_buffer():
    from vkir.testing import missing_features

    if missing_features(vkir.device(), "storage_buffer_16bit", "int16"):
        with pytest.raises(UnsupportedError):
            vkir.compile_glsl(ALIASED)
        return
    k = vkir.compile_glsl(ALIASED)
    assert [b.binding for b in k.bindings] == [0, 1]
    assert sorted(v.name for v in k.binding_views[0]) == ["A", "A_PACKED32"]
    words = np.arange(64, dtype=np.uint32) * 0x10001
    out = np.zeros(64, np.uint32)
    k(words, out, grid=(1, 1, 1))                      # passed as uint32 ...
    halves = words.view(np.uint16)
    np.testing.assert_array_equal(out, words + halves[0::2])
    out2 = np.zeros(64, np.uint32)
    k(words.view(np.uint16), out2, grid=(1, 1, 1))     # ... or as uint16: one buffer either way
    np.testing.assert_array_equal(out2, out)
    with pytest.raises(vkir.ArgumentError, match="expected (uint16 or uint32|uint32 or uint16)"):
        k(words.astype(np.float32), out, grid=(1, 1, 1))


MEMORY_MODEL = """#version 450
#pragma use_vulkan_memory_model
layout(local_size_x = 64) in;
layout(binding = 0) buffer Data { uint data[]; };
void main() { data[gl_GlobalInvocationID.x] *= 3u; }
"""


@pytest.mark.device
def test_the_vulkan_memory_model_runs_where_the_device_has_it():
    if "vulkan_memory_model" not in vkir.device().info.features:
        with pytest.raises(UnsupportedError, match="vulkan_memory_model"):
            vkir.compile_glsl(MEMORY_MODEL)
        return
    k = vkir.compile_glsl(MEMORY_MODEL)
    assert "VulkanMemoryModel" in k.info.capabilities
    data = np.arange(64, dtype=np.uint32)
    k(data, grid=(1, 1, 1))
    np.testing.assert_array_equal(data, np.arange(64) * 3)


ROW_MAJOR = """#version 450
layout(local_size_x = 1) in;
layout(push_constant, row_major) uniform Push { mat3x4 m; float after; } pc;
layout(binding = 0) buffer Out { float result[]; };
void main() { result[0] = pc.m[2][3] + pc.after; }
"""


@pytest.mark.device
def test_a_row_major_matrix_in_push_constants_has_its_real_size():
    k = vkir.compile_glsl(ROW_MAJOR)
    m, after = k.push_constants
    # mat3x4 (3 columns of 4) row-major: 4 rows of 3 floats, each padded to 16 bytes
    assert (m.offset, m.size) == (0, 64) and after.offset == 64
    assert k.info.push_constant_size == 68


SPEC_EXPRESSIONS = """#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint N = 4;
const uint strideB = N;
layout(constant_id = 1) const int BS = 8;
shared float tmp[BS * 2];
layout(binding = 0) buffer Out { float result[]; };
void main() {
    tmp[BS * 2 - 1] = float(strideB);
    result[0] = tmp[BS * 2 - 1] + float(BS * 2);
}
"""


@pytest.mark.device
def test_arrays_sized_by_specialization_expressions_and_aliased_names():
    k = vkir.compile_glsl(SPEC_EXPRESSIONS)
    assert k.info.shared_memory_bytes == 16 * 4          # BS * 2 floats at the defaults
    out = np.zeros(1, np.float32)
    k(out, grid=(1, 1, 1))
    assert out[0] == 4 + 16
    k = vkir.compile_glsl(SPEC_EXPRESSIONS, specialization={"strideB": 9, "BS": 100})
    k(out, grid=(1, 1, 1))
    assert out[0] == 9 + 200
    k = vkir.compile_glsl(SPEC_EXPRESSIONS, specialization={"N": 5})   # the declared name too
    k(out, grid=(1, 1, 1))
    assert out[0] == 5 + 16
    limit = vkir.device().info.limits.max_shared_memory_bytes
    with pytest.raises(UnsupportedError, match="shared memory"):
        vkir.compile_glsl(SPEC_EXPRESSIONS, specialization={"BS": limit})


UNUSED_BUFFER = """#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer Used { float used[]; };
layout(binding = 1) buffer Unused { float unused[]; };
void main() { used[0] = 7.0; }
"""


@pytest.mark.device
@pytest.mark.parametrize("env", ["vulkan1.1", "vulkan1.2", "vulkan1.3"])
def test_the_buffers_a_call_takes_do_not_depend_on_the_spirv_version(env):
    from vkir.runtime.glsl import compile_glsl as glslang

    words = glslang(UNUSED_BUFFER, target_env=env)
    k = vkir.load_spirv(words)
    assert [b.binding for b in k.bindings] == [0]
    out = np.zeros(1, np.float32)
    k(out, grid=(1, 1, 1))
    assert out[0] == 7
