"""Existing GLSL compute shaders with images, samplers and texel buffers (vkir.compile_glsl),
and the runtime's images (vkir.image, vkir.empty_image, DeviceImage), checked against numpy."""

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, UnsupportedError

STORE = """
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0, rgba32f) uniform readonly image2D src;
layout(binding = 1, rgba8) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(dst, p, imageLoad(src, p) * 0.5);
}
"""

SAMPLE = """
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0) uniform sampler2D tex;
layout(binding = 1, std430) buffer Out { vec4 o[]; };
layout(push_constant) uniform P { vec2 offset; int width; } p;
void main() {
    ivec2 q = ivec2(gl_GlobalInvocationID.xy);
    vec2 uv = (vec2(q) + p.offset) / vec2(textureSize(tex, 0));
    o[q.y * p.width + q.x] = textureLod(tex, uv, 0.0);
}
"""

TEXEL = """
#version 450
layout(local_size_x = 16) in;
layout(binding = 0) uniform samplerBuffer values;
layout(binding = 1, r32f) uniform imageBuffer doubled;
layout(binding = 2, r32ui) uniform uimage1D hist;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    float v = texelFetch(values, i).x;
    imageStore(doubled, i, vec4(2.0 * v));
    imageAtomicAdd(hist, int(v) & 3, 1u);
}
"""

SEPARATE = """
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(binding = 0) uniform texture2D tex;
layout(binding = 1) uniform sampler smp;
layout(binding = 2, rgba32f) uniform writeonly image2D dst;
void main() {
    ivec2 q = ivec2(gl_GlobalInvocationID.xy);
    vec2 uv = (vec2(q) + 0.5) / vec2(imageSize(dst));
    imageStore(dst, q, textureLod(sampler2D(tex, smp), uv, 0.0));
}
"""


@pytest.fixture(scope="module")
def shaders(_vulkan_device):
    return {name: vkir.compile_glsl(src, device=_vulkan_device)
            for name, src in (("store", STORE), ("sample", SAMPLE), ("texel", TEXEL),
                              ("separate", SEPARATE))}


def _unorm8(x):
    return np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)


def test_reflection_reports_kind_dim_and_format(shaders):
    images = {b.name: b for b in shaders["texel"].info.images}
    assert (images["values"].kind, images["values"].dim) == ("uniform_texel_buffer", "buffer")
    assert (images["doubled"].kind, images["doubled"].format) == ("storage_texel_buffer", "R32f")
    assert (images["hist"].kind, images["hist"].dim, images["hist"].lane) == \
        ("storage_image", "1d", "uint32")
    sep = {b.name: b.kind for b in shaders["separate"].info.images}
    assert sep == {"tex": "sampled_image", "smp": "sampler", "dst": "storage_image"}


def test_image_load_store_numpy(shaders):
    rng = np.random.default_rng(0)
    src = rng.random((16, 16, 4), dtype=np.float32)
    dst = np.zeros((16, 16, 4), np.uint8)
    shaders["store"](src, dst, grid=(2, 2))
    # unorm8 writes round to nearest (the spec allows a 0.6 ulp error: compare within 1)
    assert np.abs(dst.astype(int) - _unorm8(src * 0.5).astype(int)).max() <= 1


def test_image_load_store_device_images_chain(shaders):
    src = np.linspace(0, 1, 16 * 16 * 4, dtype=np.float32).reshape(16, 16, 4)
    a = vkir.image(src, "rgba32f")
    out = vkir.empty_image((16, 16), "rgba8")
    assert out.shape == (16, 16) and out.format == "rgba8"
    assert (out.numpy() == 0).all()
    shaders["store"](a, out, grid=(2, 2))
    assert np.abs(out.numpy().astype(int) - _unorm8(src * 0.5).astype(int)).max() <= 1
    with pytest.raises(ArgumentError, match="declares format rgba32f; the DeviceImage is rgba8"):
        shaders["store"](out, out, grid=(2, 2))


@pytest.mark.parametrize("address", ["clamp", "repeat", "mirror"])
def test_texture_nearest_addressing(shaders, address):
    tex = np.arange(8 * 8 * 4, dtype=np.float32).reshape(8, 8, 4)
    out = np.zeros((8 * 8, 4), np.float32)
    # texel centres shifted by 4 texels: clamp, repeat and mirror differ past the edge
    shaders["sample"](tex, out, grid=(1, 1), push={"offset": [4.5, 0.5], "width": 8},
                      samplers={"tex": vkir.Sampler(address=address)})
    x = np.arange(8) + 4
    col = {"clamp": np.minimum(x, 7), "repeat": x % 8,
           "mirror": np.where(x < 8, x, 15 - x)}[address]
    assert np.array_equal(out.reshape(8, 8, 4), tex[:, col])


def test_texture_linear_filter(shaders):
    tex = np.random.default_rng(1).random((8, 8, 4), dtype=np.float32)
    out = np.zeros((64, 4), np.float32)
    # halfway between texel centres along x: the mean of two neighbours
    shaders["sample"](tex, out, grid=(1, 1), push={"offset": [1.0, 0.5], "width": 8},
                      samplers={"tex": vkir.Sampler(filter="linear")})
    right = tex[:, np.minimum(np.arange(8) + 1, 7)]
    assert np.allclose(out.reshape(8, 8, 4), (tex + right) / 2, atol=1 / 256)


def test_texture_from_rgba8_reads_unorm(shaders):
    tex = np.random.default_rng(2).integers(0, 256, (8, 8, 4), dtype=np.uint8)
    out = np.zeros((64, 4), np.float32)
    shaders["sample"](tex, out, grid=(1, 1), push={"offset": [0.5, 0.5], "width": 8})
    assert np.allclose(out.reshape(8, 8, 4), tex / 255.0, atol=1e-6)


def test_texel_buffers_and_image_atomics(shaders):
    values = np.arange(16, dtype=np.float32)
    doubled = np.zeros(16, np.float32)
    hist = np.zeros(4, np.uint32)
    shaders["texel"](values, doubled, hist, grid=(1,))
    assert np.array_equal(doubled, 2 * values)
    assert np.array_equal(hist, np.bincount(values.astype(int) & 3, minlength=4))


def test_launch_takes_numpy_images_and_texel_buffers(shaders):
    """A shader's launch copies numpy images and texel buffers in at the launch and the written
    ones back at the wait, as a call does (it said "inside a sequence images must be
    DeviceImages" outside any sequence)."""
    values = np.arange(16, dtype=np.float32)
    doubled, hist = np.zeros(16, np.float32), np.zeros(4, np.uint32)
    h = shaders["texel"].launch(values, doubled, hist, grid=(1,))
    values[:] = 0     # copied at the launch
    h.wait()
    assert np.array_equal(doubled, 2 * np.arange(16, dtype=np.float32))
    assert np.array_equal(hist, [4, 4, 4, 4])
    src = np.linspace(0, 1, 16 * 16 * 4, dtype=np.float32).reshape(16, 16, 4)
    dst = np.zeros((16, 16, 4), np.uint8)
    shaders["store"].launch(src, dst, grid=(2, 2)).wait()
    assert np.abs(dst.astype(int) - _unorm8(src * 0.5).astype(int)).max() <= 1
    with pytest.raises(ArgumentError, match="texel buffer, which takes numpy data only; inside "
                                            "a sequence"), vkir.sequence():
        shaders["texel"](values, doubled, vkir.image(hist, "r32ui"), grid=(1,))


def test_bindings_list_every_positional_argument_in_order(shaders):
    # images and texel buffers are arguments too (they were missing from `bindings`); the
    # separate sampler is not one
    assert [(b.binding, b.kind, b.name) for b in shaders["sample"].bindings] == [
        (0, "combined_image_sampler", "tex"), (1, "storage", "Out")]
    assert [(b.binding, b.kind, b.name) for b in shaders["separate"].bindings] == [
        (0, "sampled_image", "tex"), (2, "storage_image", "dst")]
    assert [b.name for b in shaders["sample"].buffer_bindings] == ["Out"]
    assert list(shaders["sample"].binding_views) == [1]


def test_separate_texture_and_sampler(shaders):
    tex = np.random.default_rng(3).random((4, 4, 4), dtype=np.float32)
    dst = np.zeros((4, 4, 4), np.float32)
    shaders["separate"](tex, dst, grid=(1, 1), samplers={"smp": vkir.Sampler()})
    assert np.array_equal(dst, tex)


def test_call_errors_name_the_binding(shaders):
    sk = shaders["sample"]
    out = np.zeros((64, 4), np.float32)
    tex = np.zeros((8, 8, 4), np.float32)
    with pytest.raises(ArgumentError, match="samplers names 'nope'"):
        sk(tex, out, grid=(1, 1), push={"offset": [0, 0], "width": 8},
           samplers={"nope": vkir.Sampler()})
    with pytest.raises(ArgumentError, match="no single image format"):
        sk(np.zeros((8, 8, 3), np.float32), out, grid=(1, 1), push={"offset": [0, 0], "width": 8})
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        sk(tex, grid=(1, 1), push={"offset": [0, 0], "width": 8})


def test_sampler_arguments_are_validated():
    with pytest.raises(ArgumentError, match="filter"):
        vkir.Sampler(filter="cubic")
    with pytest.raises(ArgumentError, match="border"):
        vkir.Sampler(address="border", border=(0.5, 0, 0, 1))
    with pytest.raises(ArgumentError, match="unnormalized"):
        vkir.Sampler(address="repeat", normalized=False)
    assert vkir.Sampler(border=(0, 0, 0, 1)).border == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("fmt", ["rgba8", "rgba8_snorm", "rgba8ui", "rgba8i", "rgba16f",
                                 "rgba16ui", "rgba16i", "rgba32f", "rgba32ui", "rgba32i", "rg32f",
                                 "rg32ui", "r32f", "r32ui", "r32i"])
def test_device_image_round_trip(vkir_device, fmt):
    from vkir.images import image_format

    f = image_format(fmt)
    dt = np.dtype(f.storage_dtype)
    rng = np.random.default_rng(4)
    lo, hi = (np.iinfo(dt).min, np.iinfo(dt).max) if dt.kind in "iu" else (-4, 4)
    data = rng.uniform(lo, hi, (5, 13, f.channels)).astype(dt)   # rows padded to the pitch
    img = vkir.image(data, fmt, device=vkir_device)
    assert img.shape == (5, 13) and np.array_equal(img.numpy(), data)


def test_device_image_dims_and_layers(vkir_device):
    data = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)   # 3-D r32f, channel dropped
    img = vkir.image(data, "r32f", device=vkir_device)
    assert img.dim == 3 and np.array_equal(img.numpy()[..., 0], data)
    layered = vkir.empty_image((6,), "rgba8ui", layers=2, device=vkir_device)
    assert layered.shape == (2, 6) and layered.numpy().shape == (2, 6, 4)
    with pytest.raises(ArgumentError, match="unknown image format"):
        vkir.empty_image((4, 4), "bgra4", device=vkir_device)


def test_unsupported_format_is_refused_by_name(vkir_device):
    from vkir.images import image_format

    fmt = image_format("rgba8")
    rt = vkir.driver.device_images.image_runtime(vkir_device)
    rt.device.format_properties[fmt.vk_format] = (0, 0)   # as if the device had no support
    try:
        with pytest.raises(UnsupportedError, match=r"rgba8 \(VK_FORMAT_R8G8B8A8_UNORM\).*"
                                                  "sampled images on"):
            vkir.empty_image((4, 4), "rgba8", device=vkir_device)
    finally:
        del rt.device.format_properties[fmt.vk_format]
