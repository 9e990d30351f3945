"""Kernels with image parameters on the device (vkir.build), checked against vkir.interpret:
storage images read and written in several formats, image atomics, textures sampled nearest and
linear (the interpreter given the device's subTexelPrecisionBits), T.image_size, 1-D, 3-D and
layered images, DeviceImages chained between kernels, the design example as written, and the
compile cache keeping image bindings."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.images.formats import FORMATS
from vkir.script import from_script

SCALE = """
@T.prim_func
def scale(src: T.Image((6, 10), fmt), dst: T.Image((6, 10), fmt)):
    for ty in T.thread_binding(6, "threadIdx.y"):
        for tx in T.thread_binding(10, "threadIdx.x"):
            v = src[ty, tx]
            dst[ty, tx] = v * 0.7071 + T.float32x4(T.cast(tx, "float32") * 0.01,
                                                           T.cast(ty, "float32") * 0.02, 0.0, 0.0)
"""


@pytest.fixture(scope="module")
def dev(_vulkan_device):
    return _vulkan_device


def _random(fmt, shape, rng):
    row = FORMATS[fmt]
    dtype = np.dtype(row.storage_dtype)
    if dtype.kind == "f":
        return rng.uniform(-2, 2, shape + (row.channels,)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape + (row.channels,), dtype=dtype, endpoint=True)


@pytest.mark.parametrize("fmt", ["rgba8", "rgba32f", "rgba16f", "rgba8_snorm"])
def test_storage_read_write_matches_interpreter(dev, fmt):
    k = from_script(SCALE, {"T": T, "fmt": fmt})
    rng = np.random.default_rng(3)
    src = _random(fmt, (6, 10), rng)
    got = np.zeros_like(src)
    vkir.build(k, device=dev, precise=True)(src, got)   # no fused multiply-add
    want = np.zeros_like(src)
    vkir.interpret(k, src, want)
    if src.dtype == np.float16:   # float16 writes may round toward zero (docs/semantics.md)
        np.testing.assert_allclose(got, want, rtol=2.0 ** -10, atol=2.0 ** -24)
    elif src.dtype.kind == "f":
        np.testing.assert_array_equal(got, want)
    else:   # unorm/snorm: Vulkan rounds to nearest, ties either way (docs/semantics.md)
        assert np.abs(got.astype(np.int32) - want).max() <= 1
        assert (got == want).mean() > 0.95


@T.prim_func
def histogram(values: T.Image((64,), "r32ui"), hist: T.Image((8,), "r32ui"),
              signed: T.Image((4,), "r32i")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        v = values[tx]
        T.atomic_add(hist[T.cast(v[0] % T.uint32(8), "int32")], T.uint32(1))
        T.atomic_min(signed[tx % 4], T.int32(0) - T.cast(v[0], "int32"))


def test_image_atomics(dev):
    values = np.random.default_rng(1).integers(0, 1000, 64, dtype=np.uint32)
    hist = np.zeros(8, np.uint32)
    signed = np.zeros((4, 1), np.int32)
    vkir.build(histogram, device=dev)(values, hist, signed)
    np.testing.assert_array_equal(hist, np.bincount(values % 8, minlength=8))
    np.testing.assert_array_equal(signed[:, 0], -values.reshape(16, 4).max(axis=0).astype(np.int32))


@T.prim_func
def sampled(tex: T.Texture((5, 7), "rgba8"), out: T.Buffer((12, 16, 4), "float32"),
            size: T.Buffer((2,), "int32")):
    for ty in T.thread_binding(12, "threadIdx.y"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            uv = T.float32x2(T.cast(tx, "float32") * 0.0731 - 0.1,
                             T.cast(ty, "float32") * 0.0977 - 0.05)
            c = T.sample(tex, uv)
            for i in T.serial(4):
                out[ty, tx, i] = c[i]
            if tx == 0 and ty == 0:
                s = T.image_size(tex)
                size[0] = s[0]
                size[1] = s[1]


@pytest.fixture(scope="module")
def sampled_kernel(dev):
    return vkir.build(sampled, device=dev)


@pytest.mark.parametrize("sampler", [
    vkir.Sampler(), vkir.Sampler(filter="linear"), vkir.Sampler(filter="linear", address="repeat"),
    vkir.Sampler(address="mirror"), vkir.Sampler(filter="linear", address="border",
                                                 border=(1, 1, 1, 1))],
    ids=["nearest-clamp", "linear-clamp", "linear-repeat", "nearest-mirror", "linear-border"])
def test_sampling_matches_interpreter(dev, sampled_kernel, sampler):
    tex = np.random.default_rng(2).integers(0, 256, (5, 7, 4), dtype=np.uint8)
    out = np.zeros((12, 16, 4), np.float32)
    size = np.zeros(2, np.int32)
    sampled_kernel(tex, out, size, samplers={"tex": sampler})
    want = np.zeros_like(out)
    bits = dev.info.limits.sub_texel_precision_bits
    vkir.interpret(sampled, tex, want, np.zeros(2, np.int32), samplers={"tex": sampler},
                   sub_texel_precision_bits=bits)
    assert size.tolist() == [7, 5]
    if sampler.filter == "nearest":
        # a coordinate on a texel edge may pick either texel: nearly all agree (to the ulp of
        # the device's c / 255)
        assert (np.abs(out - want).max(axis=-1) <= 1e-6).mean() > 0.97
    else:   # 2^-bits of neighbouring differences (at most 1) per axis, plus rounding
        np.testing.assert_allclose(out, want, atol=2 * 2.0 ** -bits + 1e-5)


def test_samplers_are_checked(sampled_kernel):
    args = (np.zeros((5, 7, 4), np.uint8), np.zeros((12, 16, 4), np.float32),
            np.zeros(2, np.int32))
    with pytest.raises(ArgumentError, match="nope"):
        sampled_kernel(*args, samplers={"nope": vkir.Sampler()})
    with pytest.raises(ArgumentError, match="vkir.Sampler"):
        sampled_kernel(*args, samplers={"tex": "linear"})


@T.prim_func
def dims(line: T.Image((16,), "r32f"), vol: T.Image((3, 4, 5), "rgba32f"),
         layers: T.Image((4, 6), "rg32f", layers=3), out: T.Buffer((6,), "int32")):
    for tz in T.thread_binding(3, "threadIdx.z"):
        for ty in T.thread_binding(4, "threadIdx.y"):
            for tx in T.thread_binding(5, "threadIdx.x"):
                v = vol[tz, ty, tx]
                vol[tz, ty, tx] = v + T.float32x4(T.cast(tx, "float32"), T.cast(ty, "float32"),
                                                  T.cast(tz, "float32"), 1.0)
                if ty < 4 and tx < 5:
                    layers[tz, ty, tx] = T.float32x4(T.cast(tz * 100 + ty * 10 + tx, "float32"),
                                                     -1.0, 0.0, 0.0)
                if tz == 0 and ty == 0:
                    line[tx * 3] = line[tx * 3] * 2.0
                if tz == 0 and ty == 0 and tx == 0:
                    out[0] = T.image_size(line)
                    s = T.image_size(vol)
                    out[1] = s[0] * 100 + s[1] * 10 + s[2]
                    t = T.image_size(layers)
                    out[2] = t[0] * 100 + t[1] * 10 + t[2]


def test_1d_3d_and_layered_images(dev):
    rng = np.random.default_rng(4)
    args = [rng.uniform(-1, 1, 16).astype(np.float32),
            rng.uniform(-1, 1, (3, 4, 5, 4)).astype(np.float32),
            np.zeros((3, 4, 6, 2), np.float32), np.zeros(6, np.int32)]
    want = [a.copy() for a in args]
    vkir.build(dims, device=dev)(*args)
    vkir.interpret(dims, *want)
    for got, expected in zip(args, want):
        np.testing.assert_array_equal(got, expected)
    assert args[3][:3].tolist() == [16, 543, 643]


@T.prim_func
def shade(img: T.Image(("h", "w"), "rgba8"),            # storage image, numpy (h, w, 4) uint8
          tex: T.Texture((256, 256), "rgba8"),           # sampled image; sampler chosen at call time
          hist: T.Image((256,), "r32ui")):               # 1-D storage image, image atomics
    for by in T.thread_binding((h + 7) // 8, "blockIdx.y"):
      for bx in T.thread_binding((w + 7) // 8, "blockIdx.x"):
        for ty in T.thread_binding(8, "threadIdx.y"):
          for tx in T.thread_binding(8, "threadIdx.x"):
            y = by * 8 + ty
            x = bx * 8 + tx
            if y < h and x < w:
                uv = T.float32x2(T.cast(x, "float32") / T.cast(w, "float32"),
                                 T.cast(y, "float32") / T.cast(h, "float32"))
                c = T.sample(tex, uv)                           # float32x4, explicit LOD 0
                img[y, x] = c * 0.5                              # OpImageWrite; read: img[y, x]
                T.atomic_add(hist[T.cast(c[0] * T.float32(255), "int32")], T.uint32(1))


def test_design_example_runs_as_written(dev):
    rng = np.random.default_rng(5)
    texture = rng.integers(0, 256, (256, 256, 4), dtype=np.uint8)
    frame = np.zeros((20, 30, 4), np.uint8)
    hist = np.zeros(256, np.uint32)
    k = vkir.build(shade, device=dev)
    sampler = vkir.Sampler(filter="linear", address="repeat")
    k(frame, texture, hist, samplers={"tex": sampler})
    want_frame, want_hist = np.zeros_like(frame), np.zeros_like(hist)
    vkir.interpret(shade, want_frame, texture, want_hist, samplers={"tex": sampler},
                   sub_texel_precision_bits=dev.info.limits.sub_texel_precision_bits)
    assert np.abs(frame.astype(int) - want_frame).max() <= 1
    assert hist.sum() == 600 and np.abs(np.cumsum(hist, dtype=np.int64) - np.cumsum(want_hist)).max() <= 6


@T.prim_func
def gradient(img: T.Image((8, 8), "rgba32f")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            img[ty, tx] = T.float32x4(T.cast(tx, "float32"), T.cast(ty, "float32"), 0.0, 1.0)


@T.prim_func
def double(src: T.Image((8, 8), "rgba32f"), dst: T.Image((8, 8), "rgba8")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            dst[ty, tx] = src[ty, tx] * 0.125


def test_device_images_chain_between_kernels(dev):
    a = vkir.empty_image((8, 8), "rgba32f", device=dev)
    b = vkir.empty_image((8, 8), "rgba8", device=dev)
    vkir.build(gradient, device=dev)(a)
    k = vkir.build(double, device=dev)
    k(a, b)
    ys, xs = np.mgrid[0:8, 0:8]
    want = np.stack([xs, ys, np.zeros_like(xs), np.ones_like(xs)], -1) / 8
    np.testing.assert_array_equal(b.numpy(), np.rint(want * 255).astype(np.uint8))
    with pytest.raises(ArgumentError, match="format rgba32f; the DeviceImage is rgba8"):
        k(b, b)
    with pytest.raises(ArgumentError, match="DeviceImage"):
        vkir.build(sampled, device=dev)(np.zeros((5, 7, 4), np.uint8), a,
                                        np.zeros(2, np.int32))
    for run in (lambda: k.launch(a, b).wait(), lambda: k.profile(a, b, repeat=2)):
        b.write(np.zeros((8, 8, 4), np.uint8))
        run()
        np.testing.assert_array_equal(b.numpy(), np.rint(want * 255).astype(np.uint8))
    b.write(np.zeros((8, 8, 4), np.uint8))
    with vkir.sequence():       # recorded with DeviceImages
        k(a, b)
    np.testing.assert_array_equal(b.numpy(), np.rint(want * 255).astype(np.uint8))
    with pytest.raises(ArgumentError, match="DeviceImages"), vkir.sequence():
        k(np.zeros((8, 8, 4), np.float32), b)


def test_compile_cache_keeps_image_bindings(dev, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    vkir.build(from_script(SCALE, {"T": T, "fmt": "rgba32f"}), device=dev)
    k = vkir.build(from_script(SCALE, {"T": T, "fmt": "rgba32f"}), device=dev)
    assert k._compiled.cached and [b.name for b in k.module.images] == ["src", "dst"]
    src = np.ones((6, 10, 4), np.float32)
    dst = np.zeros_like(src)
    k(src, dst)
    np.testing.assert_allclose(dst[0, 0], 0.7071, rtol=1e-6)
