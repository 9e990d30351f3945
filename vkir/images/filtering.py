"""Texture sampling as the Vulkan specification defines it, on numpy arrays: what `T.sample`
returns in the interpreter (the definition devices are compared with).

For coordinates (x first; the layer last for a layered texture), at one level:
- normalized coordinates are scaled by the extent (u' = u * width), unnormalized ones are used
  as they are; a layer coordinate is rounded to the nearest integer (ties to even) and clamped;
- "nearest" reads texel floor(u'); "linear" reads the 2, 4 or 8 texels around u' - 0.5 and
  weights them by the fraction of u' - 0.5, which Vulkan computes with the device's
  `subTexelPrecisionBits` (at least 4, 8 on lavapipe and SwiftShader): the fraction here is cut
  to that many bits (rounded down), so a device that keeps more bits or rounds differs by at
  most 2^-bits of the texel difference per axis (docs/semantics.md, "Images");
- each texel index is addressed per axis: "clamp" to the edge, "repeat" modulo the extent,
  "mirror" as mirrored repeat, "border" reads the sampler's border colour outside the image
  (Vulkan replaces the texel before its conversion to RGBA, so the channels a format lacks read
  0, 0 and 1 there too: white is (1, 0, 0, 1) for an "r" format);
- texels are converted as vkir.images.texels.decode says, then weighted in float32.

A texture with mip levels (a list of arrays, level 0 first) selects levels by the explicit level
of detail as `_sample_levels` says (the device's `mipmapPrecisionBits` bounds how exactly it
blends two levels: compare at whole levels, or within that precision).

Finite coordinates follow these formulas up to 2^62 texels from the origin (farther ones are
addressed as at 2^62: the same under "clamp" and "border"). Vulkan does not say what a NaN or
infinite coordinate reads, and devices differ there (lavapipe reads texel 0 at u = +inf under
"clamp"): the interpreter computes it as the largest finite value of its sign (NaN as 0), which
is a value, not a definition devices keep (docs/semantics.md, "Images").
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import ArgumentError
from .formats import ImageFormat
from .texels import decode


def _address(i: np.ndarray, n: int, mode: str):
    """(the texel index to read, whether it lies inside) for integer indices `i` on an axis of
    extent `n`."""
    if mode == "repeat":
        return np.mod(i, n), None
    if mode == "mirror":
        t = np.mod(i, 2 * n)
        return np.where(t >= n, 2 * n - 1 - t, t), None
    inside = (i >= 0) & (i < n) if mode == "border" else None
    return np.clip(i, 0, n - 1), inside


def sample(fmt: ImageFormat, raw, coords, sampler, *, layered: bool = False,
           sub_texel_bits: int = 8, lod=None) -> np.ndarray:
    """The texels `T.sample` returns for texture `raw` (shape `[layers,] [depth,] [height,]
    width, channels`, the format's storage dtype; or a list of such arrays, its mip levels from
    level 0) at `coords` (float32, shape `(..., n)`) and level of detail `lod` (float32, shape
    `(...)`, or None for 0), sampled with `sampler` (a vkir.Sampler): shape `(..., 4)`, the
    format's lane type."""
    if isinstance(raw, (list, tuple)):
        return _sample_levels(fmt, list(raw), coords, sampler, layered, sub_texel_bits, lod)
    raw = np.asarray(raw)
    coords = np.asarray(coords, np.float32)
    if coords.ndim == 0:
        coords = coords[None]
    dims = raw.ndim - 1 - int(layered)
    extent = raw.shape[int(layered):int(layered) + dims]      # numpy order
    sizes = extent[::-1]                                       # x first
    if fmt.is_integer and sampler.filter == "linear":
        raise ArgumentError(f"a texture of format {fmt.name} (integer) cannot be sampled with "
                            "linear filtering (Vulkan allows only nearest)")
    lane = np.dtype(fmt.lane_dtype)
    border = np.asarray(sampler.border, np.float64)
    if fmt.channels < 4:   # the border replaces the texel before conversion to RGBA
        border = np.concatenate([border[:fmt.channels], (0.0, 0.0, 1.0)[fmt.channels - 1:]])
    border = border.astype(lane)
    layer = None
    if layered:
        layer = np.clip(np.rint(np.nan_to_num(coords[..., dims], nan=0.0)), 0,
                        raw.shape[0] - 1).astype(np.int64)
    u = coords[..., :dims]
    if sampler.normalized:
        u = u * np.asarray(sizes, np.float32)
    if sampler.filter == "nearest":
        base = np.floor(u)
        fraction = None
    else:
        u = u - np.float32(0.5)
        base = np.floor(u)
        scale = np.float32(1 << sub_texel_bits)
        fraction = np.floor((u - base) * scale) / scale        # the device's weight precision
    # whole numbers in float32; limited to +-2^62 so that the int64 index and its neighbour are
    # exact (a float beyond int64 converted to -2^63: "clamp" read texel 0 at u = 1e30)
    limit = np.float32(2.0 ** 62)
    base = np.clip(np.nan_to_num(base, nan=0.0), -limit, limit).astype(np.int64)
    out = np.zeros(coords.shape[:-1] + (4,), np.float32 if not fmt.is_integer else lane)
    corners = [(0,) * dims] if fraction is None else itertools.product((0, 1), repeat=dims)
    for corner in corners:
        index, inside, weight = [], None, None
        for axis in range(dims):
            i, ok = _address(base[..., axis] + corner[axis], sizes[axis], sampler.address)
            index.append(i)
            if ok is not None:
                inside = ok if inside is None else inside & ok
            if fraction is not None:
                f = fraction[..., axis]
                w = f if corner[axis] else np.float32(1) - f
                weight = w if weight is None else weight * w
        where = tuple(reversed(index))                          # numpy order
        if layer is not None:
            where = (layer,) + where
        texel = decode(fmt, raw[where])
        if inside is not None:
            texel = np.where(inside[..., None], texel, border)
        if weight is None:
            out = texel.astype(out.dtype)
        else:
            out = out + weight[..., None].astype(np.float32) * texel
    return out


def _sample_levels(fmt, levels: list, coords, sampler, layered, bits, lod) -> np.ndarray:
    """Sampling with mip levels, as Vulkan selects them for an explicit level of detail: lod is
    clamped to [0, q] (q the last level; NaN reads as 0); nearest filtering reads level
    ceil(lod + 0.5) - 1, linear filtering blends levels floor(lod) and the next one (at most q)
    by the fraction of lod (the sampler's mipmap mode follows its filter)."""
    coords = np.asarray(coords, np.float32)
    q = len(levels) - 1
    shape = coords.shape[:-1] if coords.ndim else ()
    lam = np.zeros(shape, np.float32) if lod is None else np.broadcast_to(
        np.asarray(lod, np.float32), shape)
    lam = np.clip(np.nan_to_num(lam, nan=0.0), 0, q)
    texels = [sample(fmt, level, coords, sampler, layered=layered, sub_texel_bits=bits)
              for level in levels]
    if sampler.filter == "nearest":
        pick = np.clip(np.ceil(lam + np.float32(0.5)) - 1, 0, q).astype(np.int64)
        return np.choose(pick[..., None], texels)
    hi = np.floor(lam).astype(np.int64)
    lo = np.minimum(hi + 1, q)
    delta = (lam - hi).astype(np.float32)[..., None]
    return (np.float32(1) - delta) * np.choose(hi[..., None], texels) + \
        delta * np.choose(lo[..., None], texels)
