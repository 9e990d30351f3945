"""A border colour sampled from a texture whose format has fewer than four channels: Vulkan
replaces the texel with the border colour before the conversion to RGBA, so the channels the
format lacks read 0, 0 and 1 there as everywhere (white is (1, 0, 0, 1) for r16f). lavapipe and
SwiftShader both do so; the interpreter read the whole border colour before (found by
benchmarks/image_sweep.py)."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.images.filtering import sample
from vkir.images.formats import FORMATS
from vkir.script import from_script

WHITE = vkir.Sampler(address="border", border=(1, 1, 1, 1))
EDGE = """
@T.prim_func
def edge(tex: T.Texture((2, 3), fmt), out: T.Buffer((12,), "float32")):
    for i in T.thread_binding(3, "threadIdx.x"):
        uv = T.float32x2(T.cast(i, "float32") * 0.5 - 0.25, -0.5)
        out[T.ramp(i * 4, 1, 4)] = T.sample(tex, uv)
"""


@pytest.mark.parametrize("fmt, want", [("r16f", [1, 0, 0, 1]), ("rg8", [1, 1, 0, 1]),
                                       ("rgba32f", [1, 1, 1, 1])])
def test_interpreter_border_fills_missing_channels(fmt, want):
    row = FORMATS[fmt]
    raw = np.full((2, 3, row.channels), 0.5 if row.encoding == "float" else 9, row.storage_dtype)
    got = sample(row, raw, np.array([[-0.5, 0.5], [0.5, 1.5]], np.float32), WHITE)
    assert got.tolist() == [want, want]
    black = sample(row, raw, np.array([2.0, 0.5], np.float32), vkir.Sampler(address="border"))
    assert black.tolist() == [0, 0, 0, 1 if row.channels < 4 else 0]   # transparent black


@pytest.fixture(scope="module")
def edge_kernel(_vulkan_device):
    func = from_script(EDGE, {"T": T, "fmt": "rg16f"})
    return func, vkir.build(func, device=_vulkan_device)


@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_device_border_matches_interpreter_for_two_channels(device, edge_kernel, filt):
    func, kernel = edge_kernel
    tex = np.array([[[0.25, 0.5]] * 3] * 2, np.float16)
    samplers = {"tex": vkir.Sampler(filter=filt, address="border", border=(1, 1, 1, 1))}
    out, want = np.zeros(12, np.float32), np.zeros(12, np.float32)
    kernel(tex, out, samplers=samplers)
    bits = device.info.limits.sub_texel_precision_bits
    vkir.interpret(func, tex, want, samplers=samplers, sub_texel_precision_bits=bits)
    np.testing.assert_allclose(out, want, atol=2.0 ** -bits)
    assert out[:4].tolist() == [1, 1, 0, 1]    # fully outside: the border, blue 0
    assert out[3::4].tolist() == [1, 1, 1]     # alpha is 1 inside and outside
