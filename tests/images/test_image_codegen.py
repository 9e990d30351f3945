"""SPIR-V for image parameters (spirv/codegen/images.py): every module passes spirv-val (codegen
validates what it emits), and the disassembly holds the declared image types, the instructions
of each construct, the capabilities and the access decorations; the module's ImageParams
describe the descriptors for the runtime."""

import re

import pytest

import vkir
from vkir import T
from vkir.images.formats import FORMATS
from vkir.script import from_script
from vkir.spirv import codegen, disassemble
from vkir.target import Target


def _asm(func):
    module = codegen(vkir.lower(func), Target.lavapipe())
    return module, disassemble(module.words)


COPY = """
@T.prim_func
def copy(src: T.Image((4, 8), fmt), dst: T.Image((4, 8), fmt)):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            dst[ty, tx] = src[ty, tx]
"""


def _copy_kernel(fmt: str):
    return from_script(COPY, {"T": T, "fmt": fmt})


@pytest.mark.parametrize("fmt", sorted(f for f in FORMATS if FORMATS[f].spirv_format != "Unknown"))
def test_every_format_declares_its_image_type(fmt):
    """(bgra8 and the sRGB formats, which SPIR-V names no format for: test_srgb_bgra_formats)"""
    row = FORMATS[fmt]
    module, asm = _asm(_copy_kernel(fmt))
    sampled_type = {"float32": "%float", "uint32": "%uint", "int32": "%int"}[row.lane_dtype]
    assert re.search(rf"OpTypeImage {sampled_type} 2D 0 0 0 2 {row.spirv_format}\n", asm)
    assert ("OpCapability StorageImageExtendedFormats" in asm) == row.extended
    # src only read: NonWritable; dst only written: NonReadable
    assert "OpDecorate %src NonWritable" in asm and "OpDecorate %dst NonReadable" in asm
    assert "OpImageRead" in asm and "OpImageWrite" in asm
    assert [(b.name, b.kind, b.format, b.readonly, b.writeonly) for b in module.images] == \
        [("src", "storage_image", row.spirv_format, True, False),
         ("dst", "storage_image", row.spirv_format, False, True)]


@T.prim_func
def shade(img: T.Image(("h", "w"), "rgba8"), tex: T.Texture((4, 4), "rgba8"),
          hist: T.Image((256,), "r32ui"), size: T.Buffer((2,), "int32")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            if ty < h and tx < w:
                uv = T.float32x2((T.cast(tx, "float32") + 0.5) / T.cast(w, "float32"),
                                 (T.cast(ty, "float32") + 0.5) / T.cast(h, "float32"))
                c = T.sample(tex, uv)
                img[ty, tx] = c * 0.5 + img[ty, tx]
                T.atomic_add(hist[T.cast(c[0] * 255.0, "int32")], T.uint32(1))
                if ty == 0 and tx == 0:
                    s = T.image_size(tex)
                    size[0] = s[0]
                    size[1] = T.image_size(hist)


def test_sample_size_atomics_and_bindings():
    module, asm = _asm(shade)
    assert "OpTypeSampledImage" in asm and "OpTypeImage %float 2D 0 0 0 1 Unknown" in asm
    assert re.search(r"OpImageSampleExplicitLod %v4float %\w+ %\w+ Lod %float_0", asm)
    assert "OpImageQuerySizeLod %v2int" in asm and "OpImageQuerySize %int" in asm
    assert "OpCapability ImageQuery" in asm and "OpCapability Image1D" in asm
    assert "OpImageTexelPointer %_ptr_Image_uint %hist" in asm and "OpAtomicIAdd %uint" in asm
    # img is read and written: neither decoration; the buffer comes first, images after it
    assert "OpDecorate %img NonReadable" not in asm and "OpDecorate %img NonWritable" not in asm
    assert [b.binding for b in module.bindings] == [0]
    assert [(b.name, b.binding, b.kind, b.dim, b.param_index) for b in module.images] == \
        [("img", 1, "storage_image", "2d", 0), ("tex", 2, "combined_image_sampler", "2d", 1),
         ("hist", 3, "storage_image", "1d", 2)]


def test_coordinates_are_reversed_to_x_first():
    @T.prim_func
    def vol(v: T.Image((2, 3, 4), "r32f"), out: T.Buffer((1,), "float32")):
        for tx in T.thread_binding(1, "threadIdx.x"):
            out[0] = v[1, 2, 3][0]

    _, asm = _asm(vol)
    # the constant vector (x, y, z) = (3, 2, 1)
    assert re.search(r"OpCompositeConstruct %v3int %int_3 %int_2 %int_1", asm) or \
        re.search(r"OpConstantComposite %v3int %int_3 %int_2 %int_1", asm)
    assert "OpTypeImage %float 3D 0 0 0 2 R32f" in asm


def test_layered_and_1d_textures():
    @T.prim_func
    def lay(a: T.Image((4, 8), "rgba16f", layers=3), t: T.Texture((16,), "r32f", layers=2),
            out: T.Buffer((4,), "float32")):
        for tx in T.thread_binding(4, "threadIdx.x"):
            out[tx] = a[2, 1, tx][0] + T.sample(t, T.float32x2(0.5, 1.0))[0]

    module, asm = _asm(lay)
    assert "OpTypeImage %float 2D 0 1 0 2 Rgba16f" in asm
    assert "OpTypeImage %float 1D 0 1 0 1 Unknown" in asm and "OpCapability Sampled1D" in asm
    assert [(b.dim, b.arrayed) for b in module.images] == [("2d", True), ("1d", True)]


def test_image_atomics_need_r32():
    @T.prim_func
    def bad(a: T.Image((4,), "r32f")):
        for tx in T.thread_binding(4, "threadIdx.x"):
            T.atomic_add(a[tx], T.float32(1))

    with pytest.raises((vkir.UnsupportedError, vkir.TypeCheckError), match="r32ui|r32i"):
        vkir.lower(bad) if False else codegen(vkir.lower(bad), Target.lavapipe())
