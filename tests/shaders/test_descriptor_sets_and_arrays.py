"""Descriptor sets other than 0 and arrays of descriptors in existing shaders: every set the
shader declares is bound (arguments ordered by (set, binding)), an array of blocks takes a list
of arrays, an array of images a list of images (a mip chain written in one dispatch, as mipmap
generators do), texel buffers in sets > 0; reflection reports set, binding and count. Our own
small GLSL shaders, on lavapipe and SwiftShader."""

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, UnsupportedError

pytestmark = pytest.mark.device

# sets 0, 1 and 3 (set 2 declared by nothing: an empty layout), binding numbers out of order
SETS = """#version 450
layout(local_size_x = 16) in;
layout(set = 1, binding = 0) readonly buffer B { float b[]; };
layout(set = 0, binding = 3) readonly buffer A { float a[]; };
layout(set = 3, binding = 1) buffer C { float c[]; };
layout(set = 1, binding = 2) uniform U { float scale; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < c.length()) c[i] = a[i] + scale * b[i];
}
"""

# arrays of blocks: four inputs, two outputs (constant indices, as published shaders use them)
BUFFER_ARRAYS = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) readonly buffer In { float v[]; } ins[4];
layout(set = 1, binding = 0) writeonly buffer Out { float v[]; } outs[2];
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= outs[0].v.length()) return;
    outs[0].v[i] = ins[0].v[i] + 2.0 * ins[1].v[i] + 3.0 * ins[2].v[i] + 4.0 * ins[3].v[i];
    outs[1].v[i] = ins[3].v[i] - ins[0].v[i];
}
"""

# a mip chain: one dispatch writes three levels through an array of storage images
MIPS = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 1, binding = 0, r32f) uniform writeonly image2D mips[3];
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(mips[0], p, texelFetch(src, p, 0));
    if (p.x < 4 && p.y < 4) {
        float s = 0.0;
        for (int dy = 0; dy < 2; dy++) for (int dx = 0; dx < 2; dx++)
            s += texelFetch(src, 2 * p + ivec2(dx, dy), 0).x;
        imageStore(mips[1], p, vec4(s * 0.25));
    }
    if (p.x < 2 && p.y < 2) {
        float s = 0.0;
        for (int dy = 0; dy < 4; dy++) for (int dx = 0; dx < 4; dx++)
            s += texelFetch(src, 4 * p + ivec2(dx, dy), 0).x;
        imageStore(mips[2], p, vec4(s / 16.0));
    }
}
"""

# texel buffers in sets other than 0
TEXELS = """#version 450
layout(local_size_x = 16) in;
layout(set = 2, binding = 0) uniform samplerBuffer src;
layout(set = 1, binding = 1, r32f) uniform writeonly imageBuffer dst;
layout(set = 0, binding = 0) readonly buffer K { float k; };
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i < imageSize(dst)) imageStore(dst, i, vec4(texelFetch(src, i).x * k));
}
"""

RUNTIME_ARRAY = """#version 450
#extension GL_EXT_nonuniform_qualifier : require
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float v[]; } bufs[];
layout(push_constant) uniform P { uint which; };
void main() { bufs[nonuniformEXT(which)].v[0] = 1.0; }
"""


@pytest.fixture(scope="module")
def kernels(_vulkan_device):
    return {name: vkir.compile_glsl(src) for name, src in
            (("sets", SETS), ("arrays", BUFFER_ARRAYS), ("mips", MIPS), ("texels", TEXELS))}


def test_reflection_reports_set_binding_and_count(kernels):
    assert [(b.set, b.binding, b.kind, b.count) for b in kernels["sets"].bindings] == [
        (0, 3, "storage", 1), (1, 0, "storage", 1), (1, 2, "uniform", 1), (3, 1, "storage", 1)]
    assert [(b.set, b.binding, b.count) for b in kernels["arrays"].bindings] == [
        (0, 0, 4), (1, 0, 2)]
    assert [(b.set, b.binding, b.kind, b.count) for b in kernels["mips"].info.images] == [
        (0, 0, "combined_image_sampler", 1), (1, 0, "storage_image", 3)]


def test_every_set_is_bound_and_arguments_follow_set_then_binding(kernels):
    k = kernels["sets"]
    a = np.arange(40, dtype=np.float32)
    b = np.linspace(-1, 1, 40, dtype=np.float32)
    c = np.zeros(40, np.float32)
    k(a, b, np.array([3.0], np.float32), c, grid=(3,))
    np.testing.assert_array_equal(c, a + np.float32(3) * b)
    # DeviceArrays in a sequence: the recording binds every set too
    da, db, dc = vkir.array(a), vkir.array(b), vkir.zeros(40, "float32")
    scale = vkir.array(np.array([0.5], np.float32))
    with vkir.sequence():
        k(da, db, scale, dc, grid=(3,))
        k(dc, db, scale, da, grid=(3,))   # reads what the first wrote
    np.testing.assert_array_equal(dc.numpy(), a + np.float32(0.5) * b)
    np.testing.assert_array_equal(da.numpy(), dc.numpy() + np.float32(0.5) * b)
    h = k.launch(a, b, np.array([2.0], np.float32), c, grid=(3,))
    h.wait()
    np.testing.assert_array_equal(c, a + np.float32(2) * b)


def test_an_array_of_blocks_takes_a_list_of_arrays(kernels):
    k = kernels["arrays"]
    rng = np.random.default_rng(1)
    ins = [rng.standard_normal(24).astype(np.float32) for _ in range(4)]
    outs = [np.zeros(24, np.float32), vkir.zeros(24, "float32")]
    mixed = [ins[0], vkir.array(ins[1]), ins[2], vkir.array(ins[3])]
    k(mixed, outs, grid=(2,))
    want = ins[0] + 2 * ins[1] + 3 * ins[2] + 4 * ins[3]
    np.testing.assert_allclose(outs[0], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(outs[1].numpy(), ins[3] - ins[0])
    # one array passed for two elements: aliasing rules apply element by element
    same = vkir.array(ins[0])
    got = np.zeros(24, np.float32)
    k([same, same, same, same], (got, np.zeros(24, np.float32)), grid=(2,))
    np.testing.assert_allclose(got, 10 * ins[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(ArgumentError, match=r"binding 0 \('ins'\) is an array of 4 descriptors: "
                                            r"give a list of 4 arrays, got 3"):
        k(ins[:3], outs, grid=(2,))
    with pytest.raises(ArgumentError, match=r"binding 0 of set 1 \('outs'\)\[1\] has dtype int32"):
        k(ins, [outs[0], np.zeros(24, np.int32)], grid=(2,))


def test_an_array_of_images_takes_a_list_of_images_as_a_mip_chain(kernels):
    k = kernels["mips"]
    src = np.arange(64, dtype=np.float32).reshape(8, 8, 1) / 7
    levels = [np.zeros((n, n, 1), np.float32) for n in (8, 4, 2)]
    k(src, levels, grid=(1, 1))
    np.testing.assert_array_equal(levels[0], src)
    np.testing.assert_allclose(levels[1][..., 0], src[..., 0].reshape(4, 2, 4, 2).mean((1, 3)),
                               rtol=1e-6)
    np.testing.assert_allclose(levels[2][..., 0], src[..., 0].reshape(2, 4, 2, 4).mean((1, 3)),
                               rtol=1e-6)
    with pytest.raises(ArgumentError, match=r"'mips'\) is an array of 3 descriptors: give a "
                                            r"list of 3 images, got 2"):
        k(src, levels[:2], grid=(1, 1))


def test_texel_buffers_in_sets_other_than_0(kernels):
    k = kernels["texels"]
    assert [(b.set, b.binding, b.kind) for b in k.info.images] == [
        (1, 1, "storage_texel_buffer"), (2, 0, "uniform_texel_buffer")]
    src = np.arange(20, dtype=np.float32)
    dst = np.zeros(20, np.float32)
    k(np.array([1.5], np.float32), dst, src, grid=(2,))
    np.testing.assert_array_equal(dst, src * np.float32(1.5))


def test_a_set_past_max_bound_descriptor_sets_is_refused_before_the_driver(_vulkan_device):
    src = SETS.replace("set = 3,", "set = 8,")
    with pytest.raises(UnsupportedError, match="descriptor set 8 is used; maxBoundDescriptorSets"):
        vkir.compile_glsl(src)


def test_a_runtime_sized_array_of_descriptors_is_refused_by_name(_vulkan_device):
    with pytest.raises(UnsupportedError, match="'bufs' is a runtime-sized array of descriptors"):
        vkir.compile_glsl(RUNTIME_ARRAY)
