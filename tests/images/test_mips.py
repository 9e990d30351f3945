"""Mip levels: `vkir.image(..., levels=)`, `DeviceImage.generate_mips()` against its definition
(vkir.images.mips), `T.sample(tex, uv, lod=)` selecting levels as Vulkan does
(vkir.images.filtering), `img.level(i)` bound as a storage image of one level, and a published
style GLSL mipmap generator (textureLod from the image, imageStore into one level) run as
written."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types
from vkir.errors import ArgumentError, TypeCheckError
from vkir.images import FORMATS
from vkir.images.filtering import sample
from vkir.images.mips import generate_mips, level_extent, max_levels
from vkir.images.sampling import Sampler

RGBA8 = FORMATS["rgba8"]


def test_level_extents_halve_down_to_one():
    assert [level_extent((13, 4), i) for i in range(4)] == [(13, 4), (6, 2), (3, 1), (1, 1)]
    assert max_levels((13, 4)) == 4 and max_levels((1,)) == 1


def test_generate_mips_averages_texel_quads_and_weights_odd_extents():
    a = np.random.default_rng(0).integers(0, 256, (4, 6, 4)).astype(np.uint8)
    chain = generate_mips(RGBA8, a, 3)
    assert [c.shape for c in chain] == [(4, 6, 4), (2, 3, 4), (1, 1, 4)]
    quads = a.reshape(2, 2, 3, 2, 4).astype(np.float64).mean(axis=(1, 3))
    assert np.abs(chain[1].astype(np.float64) - quads).max() <= 0.5   # rounded to nearest
    r = generate_mips(FORMATS["r32f"], np.arange(5, dtype=np.float32).reshape(5, 1), 3)
    # 5 -> 2: centres at 1.25 and 3.75 texels: 0.25 * t0 + 0.75 * t1, 0.75 * t3 + 0.25 * t4
    np.testing.assert_array_equal(r[1][:, 0], [0.75, 3.25])
    np.testing.assert_array_equal(r[2][:, 0], [2.0])


def _solid_levels():
    return [np.full((8 >> i, 8 >> i, 4), 40 * (i + 1), np.uint8) for i in range(3)]


@pytest.mark.parametrize("lod, level", [(-1.0, 0), (0.0, 0), (0.5, 0), (0.6, 1), (1.5, 1),
                                        (1.6, 2), (9.0, 2), (float("nan"), 0)])
def test_nearest_filtering_reads_the_nearest_level(lod, level):
    got = sample(RGBA8, _solid_levels(), np.array([[0.3, 0.6]], np.float32), Sampler(),
                 lod=np.array([lod], np.float32))
    np.testing.assert_allclose(got[0], 40 * (level + 1) / 255, rtol=1e-6)


def test_linear_filtering_blends_two_levels():
    got = sample(RGBA8, _solid_levels(), np.array([[0.3, 0.6]], np.float32),
                 Sampler(filter="linear"), lod=np.array([0.25], np.float32))
    np.testing.assert_allclose(got[0], (0.75 * 40 + 0.25 * 80) / 255, rtol=1e-6)


@T.prim_func
def fetch(tex: T.Texture((8, 8), "rgba8"), out: T.Buffer((3, 8, 8), "float32x4")):
    for y in T.thread_binding(8, "threadIdx.y"):
        for x in T.thread_binding(8, "threadIdx.x"):
            uv = T.float32x2((T.cast(x, "float32") + 0.5) / 8.0, (T.cast(y, "float32") + 0.5) / 8.0)
            for k in T.serial(3):
                out[k, y, x] = T.sample(tex, uv, lod=T.cast(k, "float32"))


def test_sample_lod_prints_parses_and_checks_its_type():
    assert "lod=T.cast(k, \"float32\")" in fetch.script()
    vkir.assert_structural_equal(vkir.from_script(fetch.script()), fetch)
    with pytest.raises(TypeCheckError, match="lod= of T.sample of tex is a float32"):
        verify_types(vkir.from_script(fetch.script().replace('lod=T.cast(k, "float32")',
                                                             "lod=k")))


def test_an_interpreter_texture_is_one_level():
    """A host array is one mip level: every lod reads it, as Vulkan clamps lod to the levels."""
    a = np.random.default_rng(1).integers(0, 256, (8, 8, 4)).astype(np.uint8)
    out = np.zeros((3, 8, 8, 4), np.float32)
    vkir.interpret(fetch, a, out)
    for k in range(3):
        np.testing.assert_array_equal(out[k], a / np.float32(255))


def _texture():
    return np.random.default_rng(2).integers(0, 256, (8, 8, 4)).astype(np.uint8)


def test_generate_mips_on_the_device_matches_its_definition(device):
    a = _texture()
    img = vkir.image(a, "rgba8", levels=4)
    assert img.levels == 4 and img.shape == (8, 8)
    img.generate_mips()
    got = [img.level(i).numpy() for i in range(4)]
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(img.numpy(), a)
    for i in range(1, 4):
        # each level from the device's level above it; a blit may round a unorm either way
        want = generate_mips(RGBA8, got[i - 1], 2)[1]
        assert got[i].shape == want.shape
        assert np.abs(got[i].astype(int) - want).max() <= 1, i


def test_sample_lod_reads_each_level_on_the_device(device):
    img = vkir.image(_texture(), "rgba8", levels=3)
    img.generate_mips()
    levels = [img.level(i).numpy() for i in range(3)]
    out = np.zeros((3, 8, 8, 4), np.float32)
    vkir.build(fetch)(img, out)
    for k in range(3):
        want = sample(RGBA8, levels, _centres(8), Sampler(), lod=np.full(64, k, np.float32))
        np.testing.assert_allclose(out[k].reshape(64, 4), want, atol=1e-6, err_msg=f"lod {k}")


def _centres(n):
    y, x = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([(x + 0.5) / n, (y + 0.5) / n], -1).reshape(-1, 2).astype(np.float32)


@T.prim_func
def fill(dst: T.Image((4, 4), "rgba8")):
    for y in T.thread_binding(4, "threadIdx.y"):
        for x in T.thread_binding(4, "threadIdx.x"):
            dst[y, x] = T.float32x4(T.cast(x, "float32") / 255.0, T.cast(y, "float32") / 255.0,
                                    0.5, 1.0)


def test_a_level_binds_as_a_storage_image_of_its_extent(device):
    img = vkir.empty_image((8, 8), "rgba8", levels=3)
    lvl = img.level(1)
    assert lvl.shape == (4, 4) and lvl.format == "rgba8"
    vkir.build(fill)(lvl)
    want = np.zeros((4, 4, 4), np.uint8)
    vkir.interpret(fill, want)
    np.testing.assert_array_equal(lvl.numpy(), want)
    assert not img.numpy().any() and not img.level(2).numpy().any()


DOWNSAMPLE = """
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0) uniform sampler2D src;                  // the whole chain
layout(binding = 1, rgba8) uniform writeonly image2D dst;   // one level, its own view
layout(push_constant) uniform P { float level; } p;         // the level above dst
void main() {
    ivec2 q = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(dst);
    if (q.x < size.x && q.y < size.y)
        imageStore(dst, q, textureLod(src, (vec2(q) + 0.5) / vec2(size), p.level));
}
"""


def test_a_glsl_mipmap_generator_runs_as_published(device):
    """Level i from level i - 1 of the same image: textureLod of the chain, imageStore into
    the level's own view, one dispatch per level."""
    a = _texture()
    img = vkir.image(a, "rgba8", levels=4)
    down = vkir.compile_glsl(DOWNSAMPLE)
    for i in range(1, 4):
        down(img, img.level(i), grid=(1, 1), push={"level": float(i - 1)},
             samplers={"src": vkir.Sampler(filter="linear")})
    for i in range(1, 4):
        want = generate_mips(RGBA8, img.level(i - 1).numpy(), 2)[1]
        assert np.abs(img.level(i).numpy().astype(int) - want).max() <= 1, i


def test_levels_are_checked(device):
    with pytest.raises(ArgumentError, match="levels must be an int from 1 to 4"):
        vkir.image(_texture(), "rgba8", levels=5)
    img = vkir.empty_image((8, 8), "rgba8", levels=2)
    with pytest.raises(ArgumentError, match="mip levels 0 to 1"):
        img.level(2)


SPD_LIKE = """
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(binding = 0) uniform sampler2D src;
layout(binding = 1, rgba8) uniform writeonly image2D mips[2];   // levels 1 and 2, one view each
void main() {
    ivec2 q = ivec2(gl_GlobalInvocationID.xy);
    imageStore(mips[0], q, textureLod(src, (vec2(q) + 0.5) / 4.0, 0.0));
    if (q.x < 2 && q.y < 2)
        imageStore(mips[1], q, textureLod(src, (vec2(q) + 0.5) / 2.0, 0.0));
}
"""


def test_an_array_of_level_views_binds_as_fidelityfx_spd_binds_them(device):
    """One dispatch writes two levels through `image2D mips[2]` while it samples level 0 of the
    same image (the image stays in GENERAL)."""
    a = _texture()
    img = vkir.image(a, "rgba8", levels=3)
    vkir.compile_glsl(SPD_LIKE)(img, [img.level(1), img.level(2)], grid=(1, 1),
                                samplers={"src": vkir.Sampler(filter="linear")})
    level1 = generate_mips(RGBA8, a, 2)[1]
    assert np.abs(img.level(1).numpy().astype(int) - level1).max() <= 1
    centres = (np.stack(np.meshgrid(np.arange(2), np.arange(2), indexing="xy"), -1) + 0.5) / 2
    want = sample(RGBA8, a, centres.reshape(-1, 2).astype(np.float32), Sampler(filter="linear"))
    got = img.level(2).numpy().reshape(-1, 4) / 255.0
    assert np.abs(got - want).max() <= 1 / 255 + 1e-6
