"""Mip levels: their extents, and what `DeviceImage.generate_mips()` computes (the definition
the device's blits are compared with).

Level i of an image of extent (w, h, d) has extent (max(1, w >> i), max(1, h >> i), max(1, d >>
i)) (layers are not halved); an image has at most 1 + floor(log2(max(w, h, d))) levels.
`generate_mips` fills level i from level i - 1 as vkCmdBlitImage does over the whole level:
level i - 1 sampled at the centre of each texel of level i (normalized coordinates, clamp to the
edge), with linear filtering (nearest for integer formats, which Vulkan does not filter), then
stored as a write to the format stores it (vkir.images.texels.encode: rounding to nearest, linear
to sRGB for the sRGB formats). Each layer of a layered image is its own chain.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .filtering import sample
from .formats import ImageFormat
from .sampling import Sampler
from .texels import encode

__all__ = ["level_extent", "max_levels", "check_levels", "generate_mips"]


def level_extent(extent: tuple, level: int) -> tuple:
    """The extent of mip level `level` of an image of `extent` (any axis order)."""
    return tuple(max(1, int(n) >> level) for n in extent)


def max_levels(extent: tuple) -> int:
    """How many mip levels an image of `extent` can have."""
    return max(int(n) for n in extent).bit_length()


def check_levels(levels, extent: tuple, what: str) -> int:
    """`levels` as an int in 1..max_levels(extent), else ArgumentError naming `what`."""
    top = max_levels(extent)
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or \
            not 1 <= levels <= top:
        raise ArgumentError(f"{what}: levels must be an int from 1 to {top} (an image of extent "
                            f"{tuple(extent)} has at most {top} mip levels), got {levels!r}")
    return int(levels)


def generate_mips(fmt: ImageFormat, level0: np.ndarray, levels: int, *,
                  layered: bool = False) -> list:
    """The `levels` mip levels (level 0 is `level0` itself: shape `[layers,] spatial +
    (channels,)`, the format's storage dtype) that generate_mips leaves in an image."""
    level0 = np.asarray(level0)
    out = [level0]
    spatial = level0.shape[int(layered):-1]
    dims = len(spatial)
    sampler = Sampler(filter="nearest" if fmt.is_integer else "linear", address="clamp")
    for i in range(1, levels):
        ext = level_extent(spatial, i)
        centres = [(np.arange(n, dtype=np.float32) + np.float32(0.5)) / np.float32(n)
                   for n in ext]
        grid = np.meshgrid(*centres, indexing="ij")            # numpy order
        coords = np.stack(grid[::-1], axis=-1)                  # x first
        prev = out[-1]
        if layered:
            texels = np.stack([sample(fmt, prev[k], coords, sampler) for k in range(len(prev))])
        else:
            texels = sample(fmt, prev, coords, sampler)
        out.append(encode(fmt, texels).reshape(prev.shape[:int(layered)] + ext + (fmt.channels,)))
    return out
