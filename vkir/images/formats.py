"""The table of image formats vkir knows: one row per format, read by every layer.

A row says how texels are stored (channels, the numpy dtype of one channel: what an image
argument's array holds), what a kernel sees (the 4-lane type a read yields and a write takes:
float32x4 for unorm, snorm and float formats, uint32x4 or int32x4 for integer ones), and the
names the other layers need (the VkFormat value for the runtime, the SPIR-V ImageFormat for
codegen, and whether SPIR-V needs StorageImageExtendedFormats for it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError


@dataclass(frozen=True, slots=True)
class ImageFormat:
    """One image format.

    `encoding` is "unorm", "snorm", "float", "uint" or "sint"; `storage_dtype` the numpy dtype
    name of one stored channel; `lane_dtype` the dtype of one lane a kernel reads ("float32",
    "uint32" or "int32"); `vk_format` the VkFormat enumerant's value; `spirv_format` the SPIR-V
    ImageFormat enumerant's name; `extended` whether SPIR-V declares it only with the
    StorageImageExtendedFormats capability; `guaranteed` whether Vulkan requires storage-image
    support for it on every device; `order` the channels in memory order ("bgra": a stored
    texel holds blue, green, red, alpha, and the host array keeps that order, while a kernel
    reads and writes red first as for every format); `srgb` whether the color channels are
    sRGB-encoded (a read converts them to linear; such a format is sampled only: Vulkan has no
    sRGB storage images). A format SPIR-V has no ImageFormat for (bgra8) is declared "Unknown"
    in a kernel."""

    name: str
    vk_format: int
    channels: int
    storage_dtype: str
    lane_dtype: str
    spirv_format: str
    encoding: str
    extended: bool = False
    guaranteed: bool = False
    order: str = "rgba"
    srgb: bool = False

    @property
    def texel_dtype(self) -> str:
        """The 4-lane type a read yields and a write takes ("float32x4", "uint32x4", ...)."""
        return f"{self.lane_dtype}x4"

    @property
    def is_integer(self) -> bool:
        """True for the uint/sint formats (reads are integers, never normalized)."""
        return self.encoding in ("uint", "sint")

    @property
    def storable(self) -> bool:
        """Whether the format can be a storage image at all (sRGB formats cannot)."""
        return not self.srgb

    @property
    def texel_bytes(self) -> int:
        """Bytes of one texel as stored."""
        return self.channels * int(self.storage_dtype.lstrip("uintfloat")) // 8


def _rows():
    # name, VkFormat, channels, storage dtype, encoding, SPIR-V ImageFormat, extended, guaranteed
    table = [
        ("rgba8", 37, 4, "uint8", "unorm", "Rgba8", False, True),
        ("rgba8_snorm", 38, 4, "int8", "snorm", "Rgba8Snorm", False, True),
        ("rgba8ui", 41, 4, "uint8", "uint", "Rgba8ui", False, True),
        ("rgba8i", 42, 4, "int8", "sint", "Rgba8i", False, True),
        ("rgba16", 91, 4, "uint16", "unorm", "Rgba16", True, False),
        ("rgba16_snorm", 92, 4, "int16", "snorm", "Rgba16Snorm", True, False),
        ("rgba16f", 97, 4, "float16", "float", "Rgba16f", False, True),
        ("rgba16ui", 95, 4, "uint16", "uint", "Rgba16ui", False, True),
        ("rgba16i", 96, 4, "int16", "sint", "Rgba16i", False, True),
        ("rgba32f", 109, 4, "float32", "float", "Rgba32f", False, True),
        ("rgba32ui", 107, 4, "uint32", "uint", "Rgba32ui", False, True),
        ("rgba32i", 108, 4, "int32", "sint", "Rgba32i", False, True),
        ("rg8", 16, 2, "uint8", "unorm", "Rg8", True, False),
        ("rg8_snorm", 17, 2, "int8", "snorm", "Rg8Snorm", True, False),
        ("rg8ui", 20, 2, "uint8", "uint", "Rg8ui", True, False),
        ("rg8i", 21, 2, "int8", "sint", "Rg8i", True, False),
        ("rg16", 77, 2, "uint16", "unorm", "Rg16", True, False),
        ("rg16_snorm", 78, 2, "int16", "snorm", "Rg16Snorm", True, False),
        ("rg16f", 83, 2, "float16", "float", "Rg16f", True, False),
        ("rg16ui", 81, 2, "uint16", "uint", "Rg16ui", True, False),
        ("rg16i", 82, 2, "int16", "sint", "Rg16i", True, False),
        ("rg32f", 103, 2, "float32", "float", "Rg32f", True, True),
        ("rg32ui", 101, 2, "uint32", "uint", "Rg32ui", True, True),
        ("rg32i", 102, 2, "int32", "sint", "Rg32i", True, True),
        ("r8", 9, 1, "uint8", "unorm", "R8", True, False),
        ("r8_snorm", 10, 1, "int8", "snorm", "R8Snorm", True, False),
        ("r8ui", 13, 1, "uint8", "uint", "R8ui", True, False),
        ("r8i", 14, 1, "int8", "sint", "R8i", True, False),
        ("r16", 70, 1, "uint16", "unorm", "R16", True, False),
        ("r16_snorm", 71, 1, "int16", "snorm", "R16Snorm", True, False),
        ("r16f", 76, 1, "float16", "float", "R16f", True, False),
        ("r16ui", 74, 1, "uint16", "uint", "R16ui", True, False),
        ("r16i", 75, 1, "int16", "sint", "R16i", True, False),
        ("r32f", 100, 1, "float32", "float", "R32f", False, True),
        ("r32ui", 98, 1, "uint32", "uint", "R32ui", False, True),
        ("r32i", 99, 1, "int32", "sint", "R32i", False, True),
    ]
    lane = {"unorm": "float32", "snorm": "float32", "float": "float32", "uint": "uint32",
            "sint": "int32"}
    rows = {name: ImageFormat(name, vk, ch, dt, lane[enc], spv, enc, ext, guaranteed)
            for name, vk, ch, dt, enc, spv, ext, guaranteed in table}
    # the swapped and sRGB 8-bit formats renderers and window systems use (SPIR-V names none)
    for name, vk, order, srgb in (("bgra8", 44, "bgra", False), ("rgba8_srgb", 43, "rgba", True),
                                  ("bgra8_srgb", 50, "bgra", True)):
        rows[name] = ImageFormat(name, vk, 4, "uint8", "float32", "Unknown", "unorm",
                                 order=order, srgb=srgb)
    return rows


FORMATS: dict[str, ImageFormat] = _rows()
"""Every format by its vkir name ("rgba8", "r32ui", ...): the names the script, vkir.image and
vkir.empty_image take."""

ATOMIC_FORMATS = ("r32ui", "r32i")
"""The formats image atomics work on (Vulkan guarantees atomics on these two)."""


def image_format(name) -> ImageFormat:
    """The row of format `name` (an ImageFormat passes through); ArgumentError naming the known
    formats otherwise."""
    if isinstance(name, ImageFormat):
        return name
    row = FORMATS.get(name) if isinstance(name, str) else None
    if row is None:
        raise ArgumentError(f"unknown image format {name!r}; vkir knows "
                            f"{', '.join(FORMATS)}")
    return row
