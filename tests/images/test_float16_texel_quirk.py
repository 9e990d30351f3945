"""A float32 well beyond float16's range (70000, 1e5, an infinity) written to a float16 image
format stores infinity on every driver: SwiftShader stores NaN there (the "float16_texel_overflow_nan"
quirk), so codegen clamps such lanes to +-65536, which still round to infinity, before the
write; other devices write the value as it is."""

from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.quirks import FLOAT16_TEXEL_OVERFLOW_NAN, quirks_of
from vkir.spirv import Target, codegen
from vkir.spirv.tools import disassemble


@T.prim_func
def put(img: T.Image((3,), "rgba16f"), inp: T.Buffer((12,), "float32")):
    for i in T.thread_binding(3, "threadIdx.x"):
        img[i] = inp[T.ramp(i * 4, 1, 4)]


def _asm(target) -> str:
    return disassemble(codegen(vkir.lower(put), target).words)   # validated by SPIRV-Tools


def test_swiftshader_has_the_quirk_that_codegen_works_around():
    from vkir.spirv.codegen import images

    assert FLOAT16_TEXEL_OVERFLOW_NAN in quirks_of("SwiftShader Device (Subzero)", "")
    assert FLOAT16_TEXEL_OVERFLOW_NAN not in quirks_of("llvmpipe (LLVM 15.0.6, 256 bits)", "")
    assert images.FLOAT16_TEXEL_QUIRK == FLOAT16_TEXEL_OVERFLOW_NAN
    base = replace(Target.lavapipe(), quirks=frozenset())
    quirky = _asm(replace(base, quirks=frozenset({FLOAT16_TEXEL_OVERFLOW_NAN})))
    assert "FClamp" in quirky and "OpSelect" in quirky
    assert "FClamp" not in _asm(base)


def test_float16_texel_overflow_is_infinity(device):
    # the NaN in lane 1: SwiftShader garbles lane 1 or 3 after a NaN in lane 0 or 2 (vkir.quirks)
    vals = np.array([65519, 65520, 65536, 1e5, np.inf, -np.inf, -2.0 ** 17, 3e38,
                     -1e5, np.nan, 1.5, 2.0 ** -24], np.float32)
    got, want = np.zeros((3, 4), np.float16), np.zeros((3, 4), np.float16)
    vkir.build(put, device=device)(got, vals)
    vkir.interpret(put, want, vals)
    assert np.isnan(got.ravel()[9])
    keep = np.arange(12) != 9
    # Vulkan also allows rounding toward zero (lavapipe's choice): finite overflow gives 65504
    rtz = np.where(np.isfinite(vals), np.clip(want.ravel(), -65504, 65504), want.ravel())
    ok = (got.ravel() == want.ravel()) | (got.ravel() == rtz)
    assert ok[keep].all(), (got.ravel(), want.ravel())
    assert np.isinf(got.ravel()[[4, 5]]).all()   # infinities stay infinite everywhere
