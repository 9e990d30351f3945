"""Mip levels of texture arguments in the interpreter.

A texture with mip levels is passed as a list or tuple of numpy arrays, level 0 first: level i
of a texture whose level 0 has extent ([layers,] spatial) has extent ([layers,]
vkir.images.mips.level_extent(spatial, i)) (layers are not halved), each array of shape
`extent + (channels,)` (or the extent alone for a 1-channel format) of the format's storage
dtype, at most vkir.images.mips.max_levels(spatial) of them. That is what `vkir.image(...,
levels=n)` holds on a device, and what `vkir.interpret` reads a mipmapped DeviceImage back as,
so `T.sample(tex, uv, lod=)` selects and blends the same levels in both (vkir.images.filtering).

Level 0 is checked and bound as every image argument is (vkir.binding); the other levels are
checked here and kept beside it (`BoundImage.levels`), read only. A storage image is one level
(as `img.level(i)` binds one): a list for one is an ArgumentError.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from ..images.host_layout import texel_shape
from ..images.mips import check_levels, level_extent

__all__ = ["split_levels", "level_arrays"]


def split_levels(sig, args: tuple) -> tuple:
    """(`args` with each texture's list of levels replaced by its level 0, {parameter index:
    the list's other levels}) for the positional arguments `args` of Signature `sig`."""
    out = list(args)
    rest = {}
    for p in sig.buffer_params:
        a = args[p.index]
        if p.image is None or not isinstance(a, (list, tuple)):
            continue   # anything else is vkir.binding's to check
        if not p.image.sampled:
            raise ArgumentError(f"{sig.where}: argument {p.name!r} is a storage image, which is "
                                f"one mip level; got a {type(a).__name__} of {len(a)} levels "
                                "(pass one level's array)")
        if not a:
            raise ArgumentError(f"{sig.where}: argument {p.name!r} ({p.image.kind} of format "
                                f"{p.image.format}) got an empty {type(a).__name__}; mip levels "
                                "are a list of arrays, level 0 first")
        out[p.index] = a[0]
        rest[p.index] = tuple(a[1:])
    return tuple(out), rest


def level_arrays(where: str, p, extent: tuple, levels: tuple) -> tuple:
    """Levels 1, 2, ... of texture parameter `p` (a vkir.binding parameter) whose level 0 has
    `extent` (numpy order, layers first), as arrays of shape `extent_i + (channels,)`;
    ArgumentError for too many levels, a non-array, a wrong dtype or a wrong shape."""
    itype = p.image
    fmt = itype.fmt
    layers = tuple(extent[:1]) if itype.layered else ()
    spatial = tuple(extent[len(layers):])
    what = f"{where}: argument {p.name!r} ({itype.kind} of format {fmt.name})"
    check_levels(1 + len(levels), spatial, what)
    dtype = np.dtype(fmt.storage_dtype)
    out = []
    for i, a in enumerate(levels, start=1):
        want = layers + level_extent(spatial, i)
        if not isinstance(a, np.ndarray):
            raise ArgumentError(f"{what}: mip level {i} must be a numpy array, got "
                                f"{type(a).__name__}")
        if a.dtype != dtype:
            raise ArgumentError(f"{what}: mip level {i} has dtype {a.dtype}, expected {dtype}")
        got = texel_shape(fmt, a.shape, f"{what}: mip level {i}")
        if got != want:
            raise ArgumentError(f"{what}: mip level {i} has extent {got}, expected {want} "
                                f"(level 0's {tuple(extent)} halved {i} times, down to 1)")
        out.append(np.ascontiguousarray(a).reshape(want + (fmt.channels,)))
    return tuple(out)
