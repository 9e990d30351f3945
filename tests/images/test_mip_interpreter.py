"""Mip levels in the interpreter: a texture passed as a list of level arrays (or a mipmapped
DeviceImage, read back level by level) is sampled at `T.sample(tex, uv, lod=)` as
vkir.images.filtering defines it, and the device agrees with the interpreter on lavapipe and
SwiftShader: exactly with nearest filtering, within 8-bit filtering's steps with linear
filtering (docs/semantics.md, "Images"); `img.level(i)` is a storage image there too."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.images import FORMATS
from vkir.images.filtering import sample
from vkir.images.mips import generate_mips
from vkir.images.sampling import Sampler

RGBA8 = FORMATS["rgba8"]
# lod 0, fractions, halves, whole levels, past the last level (3) and below 0
LODS = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.3, 1.6, 2.0, 2.4, 2.75, 3.0, 3.6, 7.0, -1.5],
                np.float32)


@T.prim_func
def at_lods(tex: T.Texture((8, 8), "rgba8"), lods: T.Buffer((14,), "float32"),
            out: T.Buffer((14, 8, 8), "float32x4")):
    for y in T.thread_binding(8, "threadIdx.y"):
        for x in T.thread_binding(8, "threadIdx.x"):
            # off texel edges at every level: (i + 0.3) / 8 falls inside a texel of each
            uv = T.float32x2((T.cast(x, "float32") + 0.3) / 8.0,
                             (T.cast(y, "float32") + 0.3) / 8.0)
            for k in T.serial(14):
                out[k, y, x] = T.sample(tex, uv, lod=lods[k])


def _coords():
    y, x = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    return np.stack([(x + np.float32(0.3)) / np.float32(8), (y + np.float32(0.3)) / np.float32(8)],
                    -1).astype(np.float32)


def _chain(levels=4, seed=3):
    a = np.random.default_rng(seed).integers(0, 256, (8, 8, 4)).astype(np.uint8)
    return generate_mips(RGBA8, a, levels)


@pytest.mark.parametrize("filter", ["nearest", "linear"])
def test_a_list_of_levels_is_sampled_as_filtering_defines(filter):
    chain = _chain()
    sampler = Sampler(filter=filter)
    out = np.zeros((14, 8, 8, 4), np.float32)
    vkir.interpret(at_lods, chain, LODS, out, samplers={"tex": sampler})
    for k, lod in enumerate(LODS):
        want = sample(RGBA8, chain, _coords(), sampler, lod=np.full((8, 8), lod, np.float32))
        np.testing.assert_array_equal(out[k], want, err_msg=f"lod {lod}")
    # nearest: lod 0.5 rounds down to level 0, 0.75 up to 1; past the last level reads it
    if filter == "nearest":
        np.testing.assert_array_equal(out[2], out[0])
        np.testing.assert_array_equal(out[3], out[4])
        np.testing.assert_array_equal(out[12], out[10])
        np.testing.assert_array_equal(out[13], out[0])
        np.testing.assert_array_equal(out[10], np.broadcast_to(chain[3][0, 0] / np.float32(255),
                                                               (8, 8, 4)))


def test_a_tuple_and_fewer_levels_than_the_image_can_have():
    """Any count from 1 to max_levels: lod clamps to the levels given."""
    chain = _chain(levels=2)
    out = np.zeros((14, 8, 8, 4), np.float32)
    vkir.interpret(at_lods, tuple(chain), LODS, out)
    np.testing.assert_array_equal(out[12], out[4])      # lod 7 reads level 1, the last
    np.testing.assert_array_equal(out[4][0, 0], chain[1][0, 0] / np.float32(255))
    single = np.zeros_like(out)
    vkir.interpret(at_lods, [chain[0]], LODS, single)   # one level: every lod reads it
    np.testing.assert_array_equal(single[12], single[0])


@T.prim_func
def fill(dst: T.Image((4, 4), "rgba8")):
    for y in T.thread_binding(4, "threadIdx.y"):
        for x in T.thread_binding(4, "threadIdx.x"):
            dst[y, x] = T.float32x4(T.cast(x, "float32") / 255.0, T.cast(y, "float32") / 255.0,
                                    0.5, 1.0)


def test_levels_are_checked():
    chain = _chain()
    out = np.zeros((14, 8, 8, 4), np.float32)
    with pytest.raises(ArgumentError, match=r"mip level 2 has extent \(4, 4\), expected \(2, 2\)"):
        vkir.interpret(at_lods, [chain[0], chain[1], chain[1]], LODS, out)
    with pytest.raises(ArgumentError, match="mip level 1 has dtype float32, expected uint8"):
        vkir.interpret(at_lods, [chain[0], chain[1].astype(np.float32)], LODS, out)
    with pytest.raises(ArgumentError, match="levels must be an int from 1 to 4"):
        vkir.interpret(at_lods, chain + [chain[3]], LODS, out)
    with pytest.raises(ArgumentError, match="empty list"):
        vkir.interpret(at_lods, [], LODS, out)
    with pytest.raises(ArgumentError, match="storage image, which is one mip level"):
        vkir.interpret(fill, [np.zeros((4, 4, 4), np.uint8), np.zeros((2, 2, 4), np.uint8)])


@pytest.mark.parametrize("filter", ["nearest", "linear"])
def test_the_device_samples_lods_as_the_interpreter(device, filter):
    """One call site, both runs: the DeviceImage goes to the interpreter as its levels. Nearest
    filtering reads the same level and texel (lavapipe's unorm texels: 1 ulp off); linear
    filtering within a level differs by the weights' 2^-bits per axis and the 8-bit rounding
    (docs/semantics.md, "Images"), and the blend of two levels by at most 2^-8 of their
    difference on lavapipe and SwiftShader (Vulkan's mipmapPrecisionBits may be as low as 4)."""
    img = vkir.image(_chain()[0], "rgba8", levels=4)
    img.generate_mips()
    sampler = Sampler(filter=filter)
    bits = vkir.device().info.limits.sub_texel_precision_bits
    got = np.zeros((14, 8, 8, 4), np.float32)
    vkir.build(at_lods)(img, LODS, got, samplers={"tex": sampler})
    want = np.zeros_like(got)
    vkir.interpret(at_lods, img, LODS, want, samplers={"tex": sampler},
                   sub_texel_precision_bits=bits)
    levels = [img.level(i).numpy() for i in range(4)]
    each = [sample(RGBA8, level, _coords(), sampler, sub_texel_bits=bits) for level in levels]
    np.testing.assert_array_equal(want[0], each[0])     # the device's own levels were read
    for k, lod in enumerate(LODS):
        if filter == "nearest":
            np.testing.assert_allclose(got[k], want[k], atol=1e-6, rtol=0, err_msg=f"lod {lod}")
            continue
        lo = int(np.clip(np.floor(lod), 0, 3))
        blend = np.abs(each[lo] - each[min(lo + 1, 3)]) / 2 ** 8
        tol = 2 * 2.0 ** -bits + 1 / 510 + 1e-6 + blend
        assert (np.abs(got[k] - want[k]) <= tol).all(), (lod, np.abs(got[k] - want[k]).max())


def test_a_level_view_is_a_storage_image_in_the_interpreter(device):
    img = vkir.empty_image((8, 8), "rgba8", levels=3)
    vkir.interpret(fill, img.level(1))
    ran = vkir.empty_image((8, 8), "rgba8", levels=3)
    vkir.build(fill)(ran.level(1))
    np.testing.assert_array_equal(img.level(1).numpy(), ran.level(1).numpy())
    assert img.level(1).numpy().any()
    assert not img.numpy().any() and not img.level(2).numpy().any()
