"""The interpreter as the definition of images: texel conversions (vkir.images.texels, the
Vulkan rules), sampling (vkir.images.filtering), reads and writes of every dimensionality,
image atomics, bounds errors and races like buffers', and argument checks."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.images.filtering import sample
from vkir.images.formats import FORMATS
from vkir.images.texels import decode, encode
from vkir.interpreter import DataRaceError, OutOfBoundsError


def test_unorm_snorm_float16_conversions():
    f = np.array([[0.5 / 255 * 3, 1.5, -1.0, np.nan]], np.float32)
    assert encode(FORMATS["rgba8"], f).tolist() == [[2, 255, 0, 0]]     # 1.5 -> 2: ties to even
    assert decode(FORMATS["rgba8"], np.array([[255, 0, 128, 1]], np.uint8))[0].tolist() == \
        pytest.approx([1.0, 0.0, 128 / 255, 1 / 255])
    assert encode(FORMATS["rgba8_snorm"], np.array([[-2, 0.5, 1, 0]], np.float32)).tolist() == \
        [[-127, 64, 127, 0]]
    assert decode(FORMATS["r8_snorm"], np.array([[-128]], np.int8)).tolist() == [[-1, 0, 0, 1]]
    assert encode(FORMATS["rg16f"], np.array([1 / 3, 70000, 9, 9], np.float32)).tolist() == \
        [np.float16(1 / 3), np.inf]
    assert decode(FORMATS["r32ui"], np.array([[7]], np.uint32)).tolist() == [[7, 0, 0, 1]]


def test_sampling_rules():
    raw = (np.arange(64, dtype=np.uint8) * 3).reshape(4, 4, 4)
    fmt, S = FORMATS["rgba8"], vkir.Sampler
    near = sample(fmt, raw, np.array([[0.5, 0.5], [1.1, 0.0]], np.float32), S())
    assert (np.rint(near * 255) == raw[[2, 0], [2, 3]]).all()
    lin = sample(fmt, raw, np.array([0.5, 0.5], np.float32), S(filter="linear"))
    assert np.allclose(lin * 255, raw[1:3, 1:3].mean(axis=(0, 1)))
    rep = sample(fmt, raw, np.array([1.125, 0.125], np.float32), S(address="repeat"))
    assert (np.rint(rep * 255) == raw[0, 0]).all()
    mir = sample(fmt, raw, np.array([1.125, 0.125], np.float32), S(address="mirror"))
    assert (np.rint(mir * 255) == raw[0, 3]).all()
    border = sample(fmt, raw, np.array([-0.1, 0.5], np.float32), S(address="border",
                                                                    border=(1, 1, 1, 1)))
    assert border.tolist() == [1, 1, 1, 1]
    # the weight keeps sub_texel_bits bits, rounded down: 0.6 -> 153/256 or 9/16
    one = np.array([[[0], [255]]], np.uint8).reshape(1, 2, 1)
    at = np.array([0.55, 0.5], np.float32)     # u' - 0.5 = 0.6: weight 0.6 of texel 1
    w8 = sample(FORMATS["r8"], one, at, S(filter="linear"), sub_texel_bits=8)[0]
    w4 = sample(FORMATS["r8"], one, at, S(filter="linear"), sub_texel_bits=4)[0]
    assert w8 == pytest.approx(153 / 256) and w4 == pytest.approx(9 / 16)


@pytest.mark.parametrize("scaled, address, texel", [
    (1e30, "clamp", 2), (-1e30, "clamp", 0), (2.0 ** 41, "repeat", 2), (-(2.0 ** 41), "repeat", 1),
    (2.0 ** 41, "mirror", 2), (2.0 ** 62, "repeat", 1),
])
def test_sampling_far_from_the_image_follows_the_formulas(scaled, address, texel):
    """Finite coordinates of any magnitude are addressed as Vulkan's formulas say: texel
    floor(u * width) clamped, or modulo the width (2^41 = 2 mod 3). Before, u * width = 1e30 read
    texel 0 under "clamp" (its index overflowed int64)."""
    row = np.array([[10, 20, 30]], np.float32)
    u = np.float32(scaled) / np.float32(3)
    index = int(np.floor(np.float64(u * np.float32(3))))
    assert index == scaled or abs(scaled) > 2 ** 62   # the scaled coordinate survives float32
    got = sample(FORMATS["r32f"], row[..., None], np.array([u, 0.5], np.float32),
                 vkir.Sampler(address=address))
    assert got[0] == row[0, texel]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_coordinates_give_a_value_not_an_error(bad):
    """A NaN or infinite coordinate has no defined result (devices differ): the interpreter
    reads as for the largest finite value of its sign, NaN as 0. A NaN layer raised IndexError
    (its index converted to -2^63)."""
    raw = np.array([10, 20, 30, 40], np.float32).reshape(2, 1, 2, 1)
    got = sample(FORMATS["r32f"], raw, np.array([0.2, 0.5, bad], np.float32), vkir.Sampler(),
                 layered=True)
    assert got[0] == (30 if bad == np.inf else 10)
    got = sample(FORMATS["r32f"], raw[0], np.array([bad, 0.5], np.float32), vkir.Sampler())
    assert got[0] == (20 if bad == np.inf else 10)


@T.prim_func
def shade(img: T.Image(("h", "w"), "rgba8"), tex: T.Texture((4, 4), "rgba8"),
          hist: T.Image((256,), "r32ui")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            if ty < h and tx < w:
                uv = T.float32x2((T.cast(tx, "float32") + 0.5) / T.cast(w, "float32"),
                                 (T.cast(ty, "float32") + 0.5) / T.cast(h, "float32"))
                c = T.sample(tex, uv)
                img[ty, tx] = c * 0.5 + img[ty, tx]
                T.atomic_add(hist[T.cast(c[0] * 255.0, "int32")], T.uint32(1))


@pytest.mark.parametrize("sampler", [vkir.Sampler(), vkir.Sampler(filter="linear",
                                                                  address="repeat")])
def test_shade_matches_numpy(sampler):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (6, 5, 4), dtype=np.uint8)
    tex = rng.integers(0, 256, (4, 4, 4), dtype=np.uint8)
    hist = np.zeros(256, np.uint32)
    before = img.copy()
    vkir.interpret(shade, img, tex, hist, samplers={"tex": sampler})
    ys, xs = np.mgrid[0:6, 0:5]
    uv = np.stack([(xs + np.float32(0.5)) / np.float32(5), (ys + np.float32(0.5)) / np.float32(6)],
                  -1).astype(np.float32)
    c = sample(FORMATS["rgba8"], tex, uv, sampler)
    want = encode(FORMATS["rgba8"], c * np.float32(0.5) + decode(FORMATS["rgba8"], before))
    assert (img == want).all()
    assert (hist == np.bincount((c[..., 0] * 255).astype(np.int32).ravel(),
                                minlength=256)).all()


@T.prim_func
def layered_1d_3d(arr: T.Image((2, 3), "rgba32f", layers=2), line: T.Image((5,), "r32i"),
                  vol: T.Image((2, 2, 2), "rg16ui"), size: T.Image((1,), "rgba32i")):
    arr[1, 1, 2] = arr[0, 0, 0] + T.float32x4(1, 2, 3, 4)
    line[4] = line[0] * 2
    vol[1, 0, 1] = vol[0, 1, 0] + T.uint32x4(70000, 1, 1, 1)
    s = T.image_size(arr)
    size[0] = T.int32x4(s[0], s[1], s[2], T.image_size(line))


def test_dimensionalities_missing_channels_and_sizes():
    arr = np.zeros((2, 2, 3, 4), np.float32)
    arr[0, 0, 0] = [1, 1, 1, 1]
    line = np.array([3, 0, 0, 0, 0], np.int32)
    vol = np.zeros((2, 2, 2, 2), np.uint16)
    vol[0, 1, 0] = [5, 6]
    size = np.zeros((1, 4), np.int32)
    vkir.interpret(layered_1d_3d, arr, line, vol, size)
    assert arr[1, 1, 2].tolist() == [2, 3, 4, 5]
    assert line[4] == 6                      # r32i reads (3, 0, 0, 1): *2 keeps lane 0
    assert vol[1, 0, 1].tolist() == [(5 + 70000) % 65536, 7]   # integer writes keep the low bits
    assert size.tolist() == [[3, 2, 2, 5]]   # x first, the layer count last


@T.prim_func
def oob(img: T.Image((4, 4), "rgba8")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        img[0, tx] = T.float32x4(1, 1, 1, 1)


@T.prim_func
def racy(img: T.Image((4,), "r32f")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        img[0] = img[tx] + T.float32x4(1, 0, 0, 0)


def test_bounds_and_races_like_buffers():
    with pytest.raises(OutOfBoundsError, match="img: index 4"):
        vkir.interpret(oob, np.zeros((4, 4, 4), np.uint8))
    with pytest.raises(DataRaceError):
        vkir.interpret(racy, np.zeros(4, np.float32))


def test_argument_checks():
    with pytest.raises(ArgumentError, match="needs an array of shape"):
        vkir.interpret(oob, np.zeros((4, 4), np.uint8))
    with pytest.raises(ArgumentError, match="expected uint8"):
        vkir.interpret(oob, np.zeros((4, 4, 4), np.float32))
    hist = np.zeros(256, np.uint32)
    args = (np.zeros((2, 2, 4), np.uint8), np.zeros((4, 4, 4), np.uint8), hist)
    with pytest.raises(ArgumentError, match="not a texture parameter"):
        vkir.interpret(shade, *args, samplers={"img": vkir.Sampler()})
    # an empty image (a size name bound to 0) is refused as vkir.build's calls refuse it; the
    # interpreter ran the kernel and reported an index out of "dim 0 of extent 0"
    empty = (np.zeros((0, 2, 4), np.uint8),) + args[1:]
    with pytest.raises(ArgumentError, match=r"argument 'img' \(image of format rgba8\): image "
                                            r"extents must be positive, got an array of shape "
                                            r"\[0, 2, 4\]"):
        vkir.interpret(shade, *empty)


@T.prim_func
def long_loop(img: T.Image((2, 4), "r32f"), out: T.Buffer((1,), "float32")):
    acc = T.float32(0)
    for i in T.serial(4000):
        acc = acc + img[i % 2, i % 4][0]
    out[0] = acc


def test_long_loops_with_images_stay_in_python(monkeypatch):
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "1")
    img = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = np.zeros(1, np.float32)
    vkir.interpret(long_loop, img, out)
    assert out[0] == sum(img[i % 2, i % 4] for i in range(4000))


def test_interp_backend_runs_images_with_samplers():
    img = np.zeros((6, 5, 4), np.uint8)
    tex = np.full((4, 4, 4), 255, np.uint8)
    hist = np.zeros(256, np.uint32)
    k = vkir.build(shade, device="interp")
    k(img, tex, hist)
    assert (img == 128).all() and hist[255] == 30
    # samplers= reaches the interpreter: linear filtering as vkir.interpret does it
    tex = np.random.default_rng(1).integers(0, 256, (4, 4, 4), dtype=np.uint8)
    linear = vkir.Sampler(filter="linear")
    runs = []
    for sampler in (linear, None):
        img, hist = np.zeros((6, 5, 4), np.uint8), np.zeros(256, np.uint32)
        k(img, tex, hist, samplers=None if sampler is None else {"tex": sampler})
        runs.append(img)
    want = np.zeros((6, 5, 4), np.uint8)
    vkir.interpret(shade, want, tex, np.zeros(256, np.uint32), samplers={"tex": linear})
    assert np.array_equal(runs[0], want) and not np.array_equal(runs[0], runs[1])
