"""The bgra8 and sRGB formats: blue-first storage (the host array keeps memory order, kernels see
red first), sRGB-to-linear conversion on sampling as Vulkan's specification states it (the
interpreter exactly; devices within the documented bound), sRGB storage images refused with
UnsupportedError naming the format, and bgra8 storage images written (never read) on the
device."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.images import FORMATS
from vkir.images.texels import decode, encode

SRGB_DEVICE_BOUND = 2e-3   # docs/semantics.md, Images: sRGB decoding may differ by this much


def _srgb_to_linear(c8):
    c = np.asarray(c8, np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)


def test_srgb_decoding_is_the_specification_formula():
    raw = np.stack([np.arange(256, dtype=np.uint8)] * 4, axis=-1)
    got = decode(FORMATS["rgba8_srgb"], raw)
    want = _srgb_to_linear(np.arange(256))
    for lane in range(3):
        np.testing.assert_array_equal(got[:, lane], want)
    np.testing.assert_array_equal(got[:, 3], (np.arange(256) / 255.0).astype(np.float32))
    assert got[0, 0] == 0 and got[255, 0] == 1


def test_srgb_encoding_inverts_the_decoding():
    """What a blit stores into an sRGB mip level: every 8-bit code survives decode, encode."""
    raw = np.stack([np.arange(256, dtype=np.uint8)] * 4, axis=-1)
    for fmt in ("rgba8_srgb", "bgra8_srgb"):
        np.testing.assert_array_equal(encode(FORMATS[fmt], decode(FORMATS[fmt], raw)), raw)


def test_bgra_keeps_memory_order_and_reads_red_first():
    raw = np.array([[10, 20, 30, 40]], np.uint8)            # blue, green, red, alpha
    np.testing.assert_array_equal(decode(FORMATS["bgra8"], raw) * 255, [[30, 20, 10, 40]])
    np.testing.assert_array_equal(encode(FORMATS["bgra8"], np.array([[1.0, 0.5, 0.0, 0.25]])),
                                  [[0, 128, 255, 64]])
    bgra_srgb = decode(FORMATS["bgra8_srgb"], raw)
    np.testing.assert_array_equal(bgra_srgb[0, :3], _srgb_to_linear([30, 20, 10]))


@pytest.mark.parametrize("fmt", ["rgba8_srgb", "bgra8_srgb"])
def test_srgb_storage_images_are_refused_by_name(fmt):
    with pytest.raises(UnsupportedError, match=f"format {fmt} is sRGB, and Vulkan has no sRGB "
                                               "storage format"):
        vkir.from_script(f'''
@T.prim_func
def f(img: T.Image((4, 4), "{fmt}")):
    for x in T.thread_binding(4, "threadIdx.x"):
        img[0, x] = T.float32x4(0.0, 0.0, 0.0, 1.0)
''')


@T.prim_func
def convert(src: T.Texture((4, 8), "bgra8_srgb"), srgb: T.Texture((4, 8), "rgba8_srgb"),
            dst: T.Image((4, 8), "bgra8"), lin: T.Buffer((4, 8), "float32x4"),
            mixed: T.Buffer((4, 8), "float32x4")):
    for y in T.thread_binding(4, "threadIdx.y"):
        for x in T.thread_binding(8, "threadIdx.x"):
            fx = T.cast(x, "float32")
            fy = (T.cast(y, "float32") + 0.5) / 4.0
            c = T.sample(src, T.float32x2((fx + 0.5) / 8.0, fy))
            lin[y, x] = c
            dst[y, x] = c
            # linear filtering, a quarter of the way to the next texel: converted, then weighted
            mixed[y, x] = T.sample(srgb, T.float32x2((fx + 0.75) / 8.0, fy))


def _texels(seed):
    return np.random.default_rng(seed).integers(0, 256, (4, 8, 4)).astype(np.uint8)


def test_sampling_srgb_and_writing_bgra8_in_the_interpreter():
    src, srgb = _texels(0), _texels(1)
    dst = np.zeros((4, 8, 4), np.uint8)
    lin, mixed = np.zeros((4, 8, 4), np.float32), np.zeros((4, 8, 4), np.float32)
    vkir.interpret(convert, src, srgb, dst, lin, mixed,
                   samplers={"srgb": vkir.Sampler(filter="linear")})
    rgba = src[..., [2, 1, 0, 3]]
    np.testing.assert_array_equal(lin[..., :3], _srgb_to_linear(rgba[..., :3]))
    np.testing.assert_array_equal(dst, encode(FORMATS["bgra8"], lin))
    a = decode(FORMATS["rgba8_srgb"], srgb)
    b = decode(FORMATS["rgba8_srgb"], srgb[:, np.minimum(np.arange(8) + 1, 7)])
    np.testing.assert_allclose(mixed, np.float32(0.75) * a + np.float32(0.25) * b, atol=1e-6)


def test_srgb_textures_and_bgra8_images_on_the_device(device):
    src, srgb = _texels(0), _texels(1)
    samplers = {"srgb": vkir.Sampler(filter="linear")}
    got, want = [], []
    for run, out in ((lambda *a, **k: vkir.interpret(convert, *a, **k), want),
                     (vkir.build(convert), got)):
        dst = np.zeros((4, 8, 4), np.uint8)
        lin, mixed = np.zeros((4, 8, 4), np.float32), np.zeros((4, 8, 4), np.float32)
        run(src, vkir.image(srgb, "rgba8_srgb") if out is got else srgb, dst, lin, mixed,
            samplers=samplers)
        out.extend([dst, lin, mixed])
    np.testing.assert_allclose(got[1], want[1], atol=SRGB_DEVICE_BOUND, rtol=0)
    np.testing.assert_allclose(got[2], want[2], atol=SRGB_DEVICE_BOUND, rtol=0)
    assert np.abs(got[0].astype(int) - want[0]).max() <= 1


def test_srgb_device_image_round_trips_its_bytes(device):
    data = _texels(2)
    img = vkir.image(data, "bgra8_srgb")
    assert img.format == "bgra8_srgb"
    np.testing.assert_array_equal(img.numpy(), data)


def test_reading_a_bgra8_storage_image_is_refused(device):
    @T.prim_func
    def darken(img: T.Image((4, 4), "bgra8")):
        for x in T.thread_binding(4, "threadIdx.x"):
            img[0, x] = img[0, x] * 0.5

    with pytest.raises(UnsupportedError, match="storage image 'img' of format bgra8 is read"):
        vkir.build(darken)
