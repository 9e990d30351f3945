"""Texel conversions as the Vulkan specification defines them, on numpy arrays: what a read of
an image yields (`decode`) and what a write stores (`encode`), for every format of
vkir.images.formats. The interpreter uses them as the definition; tests and tools may too.

- unorm (b bits): read c / (2^b - 1); write clamp(f, 0, 1) * (2^b - 1) rounded to the nearest
  integer, ties to even (NaN stores 0).
- snorm: read max(c / (2^(b-1) - 1), -1); write clamp(f, -1, 1) * (2^(b-1) - 1), rounded the
  same way.
- float16: read exactly; write rounded to nearest even (overflow to infinity), as numpy does.
- integer formats: read zero- or sign-extended to 32 bits; a write keeps the low bits (Vulkan
  leaves a value the format cannot represent undefined: devices may differ there).
- Channels the format lacks read as 0, 0, 0 and 1; a write drops them.
- bgra formats store blue, green, red, alpha (the host array keeps that memory order); reads and
  writes are red first, as for every format.
- sRGB formats: a read converts red, green and blue from sRGB to linear as Vulkan's
  specification states (c <= 0.04045: c / 12.92, else ((c + 0.055) / 1.055) ^ 2.4, computed in
  float64 and rounded to float32); alpha is plain unorm. Kernels cannot write them (Vulkan has
  no sRGB storage images); `encode` converts linear to sRGB (12.92 c, or 1.055 c ^ (1 / 2.4) -
  0.055 above 0.0031308) for what a blit stores into a mip level.
"""

from __future__ import annotations

import numpy as np

from .formats import ImageFormat

_LANE = {"float32": np.float32, "uint32": np.uint32, "int32": np.int32}


def decode(fmt: ImageFormat, raw) -> np.ndarray:
    """The 4-lane texels (float32, uint32 or int32; shape `raw.shape[:-1] + (4,)`) of stored
    texels `raw` (shape `(..., channels)` of the format's storage dtype)."""
    raw = np.asarray(raw)
    lane = _LANE[fmt.lane_dtype]
    if fmt.order == "bgra":
        raw = raw[..., [2, 1, 0, 3]]
    if fmt.encoding == "unorm":
        top = float(np.iinfo(raw.dtype).max)
        values = raw.astype(np.float64) / top
        if fmt.srgb:
            color = values[..., :3]
            values = np.concatenate([np.where(color <= 0.04045, color / 12.92,
                                              ((color + 0.055) / 1.055) ** 2.4),
                                     values[..., 3:]], axis=-1)
        values = values.astype(np.float32)
    elif fmt.encoding == "snorm":
        top = float(np.iinfo(raw.dtype).max)
        values = np.maximum(raw.astype(np.float64) / top, -1.0).astype(np.float32)
    else:
        values = raw.astype(lane)   # float16 widens exactly; integers extend by their sign
    if fmt.channels == 4:
        return values
    out = np.zeros(raw.shape[:-1] + (4,), lane)
    out[..., 3] = 1
    out[..., :fmt.channels] = values
    return out


def encode(fmt: ImageFormat, texel) -> np.ndarray:
    """The stored texels (shape `(..., channels)`, the format's storage dtype) that writing the
    4-lane `texel` values (float32, uint32 or int32, shape `(..., 4)`) leaves."""
    texel = np.asarray(texel)[..., :fmt.channels]
    if fmt.srgb:   # (what a blit into an sRGB mip level stores; kernels never write sRGB)
        color = np.clip(np.nan_to_num(texel[..., :3].astype(np.float64), nan=0.0), 0.0, 1.0)
        color = np.where(color <= 0.0031308, color * 12.92,
                         1.055 * color ** (1 / 2.4) - 0.055)
        texel = np.concatenate([color, texel[..., 3:]], axis=-1)
    if fmt.order == "bgra":
        texel = texel[..., [2, 1, 0, 3]]
    storage = np.dtype(fmt.storage_dtype)
    if fmt.encoding in ("unorm", "snorm"):
        top = float(np.iinfo(storage).max)
        lo = 0.0 if fmt.encoding == "unorm" else -1.0
        f = np.nan_to_num(texel.astype(np.float64), nan=0.0)
        scaled = np.clip(f, lo, 1.0) * top
        return np.rint(scaled).astype(storage)   # rint: nearest, ties to even
    if fmt.encoding == "float":
        with np.errstate(over="ignore"):
            return texel.astype(np.float32).astype(storage)
    return texel.astype(storage)   # integers: the low bits (C-style wrap)
