"""Cube textures: how a direction selects a face and a texel, as Vulkan's specification states
it (the interpreter's `T.sample(cube, direction)`).

The face is the direction's major axis (the component of largest magnitude) and its sign: faces
0-5 are +x, -x, +y, -y, +z, -z (the layers of the (6, h, w, channels) array). With rc that
component and sc, tc the two others as the specification's table assigns them

    +x: sc = -rz, tc = -ry    -x: sc = +rz, tc = -ry
    +y: sc = +rx, tc = +rz    -y: sc = +rx, tc = -rz
    +z: sc = +rx, tc = -ry    -z: sc = -rx, tc = -ry

the face is sampled at s = 0.5 * sc / |rc| + 0.5, t = 0.5 * tc / |rc| + 0.5 (float32) as a 2-D
texture, with clamp-to-edge addressing whatever the sampler says (Vulkan ignores a cube's address
modes). Where two components tie for the largest magnitude the interpreter picks z, then y, then
x; Vulkan leaves that choice to the device. Vulkan filters linearly across face edges (a texel
beyond an edge comes from the adjacent face); the interpreter clamps at the edge instead, so
linear filtering within half a texel of a face edge may differ (docs/semantics.md, "Images").
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .filtering import sample
from .formats import ImageFormat

__all__ = ["cube_coordinates", "sample_cube"]

# face -> (index of rc, (index, sign) of sc, (index, sign) of tc)
_FACES = ((0, (2, -1), (1, -1)), (0, (2, 1), (1, -1)), (1, (0, 1), (2, 1)),
          (1, (0, 1), (2, -1)), (2, (0, 1), (1, -1)), (2, (0, -1), (1, -1)))


def cube_coordinates(direction) -> np.ndarray:
    """(s, t, face) per direction (float32, shape `(..., 3)` -> `(..., 3)`): the face's
    normalized coordinates and its number."""
    d = np.asarray(direction, np.float32)
    a = np.abs(d)
    axis = np.where((a[..., 2] >= a[..., 0]) & (a[..., 2] >= a[..., 1]), 2,
                    np.where(a[..., 1] >= a[..., 0], 1, 0))
    major = np.take_along_axis(d, axis[..., None], -1)[..., 0]
    face = 2 * axis + (major < 0)
    out = np.zeros(d.shape, np.float32)
    half = np.float32(0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        for f, (rc, (si, ss), (ti, ts)) in enumerate(_FACES):
            mask = face == f
            mag = np.abs(d[..., rc])
            s = half * (np.float32(ss) * d[..., si]) / mag + half
            t = half * (np.float32(ts) * d[..., ti]) / mag + half
            out[..., 0] = np.where(mask, s, out[..., 0])
            out[..., 1] = np.where(mask, t, out[..., 1])
    out[..., 2] = face
    return out


def sample_cube(fmt: ImageFormat, raw, direction, sampler, *, sub_texel_bits: int = 8,
                lod=None) -> np.ndarray:
    """The texels `T.sample(cube, direction)` returns for cube texture `raw` (shape (6, h, w,
    channels), or a list of such arrays: its mip levels) at `direction` (float32, shape `(...,
    3)`)."""
    clamp = dataclasses.replace(sampler, address="clamp")
    coords = cube_coordinates(direction)
    return sample(fmt, raw, coords, clamp, layered=True, sub_texel_bits=sub_texel_bits, lod=lod)
