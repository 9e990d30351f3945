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
    if fmt.encoding == "unorm":
        top = float(np.iinfo(raw.dtype).max)
        values = (raw.astype(np.float64) / top).astype(np.float32)
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
