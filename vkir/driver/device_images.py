"""Images kept on a device: `vkir.image(array, format)`, `vkir.empty_image(shape, format)` and
`DeviceImage`, for kernels and shaders that chain without host copies in between.

A DeviceImage's `shape` is the image's own, as `T.Image(shape, format)` declares it: ([layers,]
[depth,] [height,] width); `.numpy()` returns `shape + (channels,)` of the format's storage dtype
(uint8 for rgba8, float16 for rgba16f, ...), origin top-left. Row pitch, alignment and layouts are
the backend's (vkir.seam.images); this module goes through that seam only.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from ..images import image_format
from ..images.host_layout import texel_shape
from ..images.mips import check_levels, level_extent
from ..ir.image_type import cube_problem

__all__ = ["DeviceImage", "image", "empty_image", "image_runtime"]


def image_runtime(device):
    """The ImageRuntime (vkir.seam.images) of `device`: a seam Runtime, an opened
    Device, a selector as for vkir.device, or None for the default device."""
    from ..seam import Runtime, images_of
    from ..seam.registry import backend_class

    if isinstance(device, Runtime):
        return images_of(device)
    return backend_class("vulkan")().runtime(device)


class DeviceImage:
    """An image on a device. `shape` ([layers,] [depth,] [height,] width), `format` (its name,
    e.g. "rgba8"), `image_format` (the vkir.images ImageFormat row), `dim` (1, 2 or 3 axes of
    space), `layered` (an array of `layers` images), `levels` (mip levels; `shape` is level
    0's), `runtime` (the backend's ImageRuntime), `device` (the backend's device object) and
    `handle` (the backend's image: a vkir.runtime Image on Vulkan; for `level(i)`, a view of
    that level)."""

    __slots__ = ("runtime", "device", "handle", "image_format", "shape", "dim", "layered",
                 "layers", "levels", "parent", "cube", "__weakref__")

    def __init__(self, shape, fmt, *, layered: bool = False, device=None, levels: int = 1,
                 cube: bool = False):
        fmt = image_format(fmt)
        shape = tuple(shape)
        if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1
                   for n in shape):
            raise ArgumentError(f"image shape must be positive ints, got {shape!r}")
        shape = tuple(int(n) for n in shape)
        dim = len(shape) - (1 if layered else 0)
        if not 1 <= dim <= 3 or (layered and dim == 3):
            raise ArgumentError(f"an image has 1, 2 or 3 axes (1 or 2 when layered), got shape "
                                f"{shape}{' (layered)' if layered else ''}")
        self.runtime = rt = image_runtime(device)
        self.device = rt.device
        self.image_format, self.shape, self.dim, self.layered = fmt, shape, dim, bool(layered)
        self.layers = shape[0] if layered else 1
        space = shape[1:] if layered else shape
        what = f"a {fmt.name} image of shape {shape}"
        self.levels = check_levels(levels, space, what)
        self.parent, self.cube = None, bool(cube)
        if cube:
            problem = cube_problem(shape, layered, True)
            if problem is not None:
                raise ArgumentError(f"{what}: {problem}")
        extent = tuple(reversed(space)) + (1,) * (3 - dim)   # (width, height, depth)
        self.handle = rt.create_image(fmt, extent, self.layers, dim, self.layered, what,
                                      levels=self.levels, **({"cube": True} if cube else {}))

    def generate_mips(self) -> "DeviceImage":
        """Fill mip levels 1 .. levels - 1 from level 0, each from the one above it (a blit
        with linear filtering; nearest for integer formats): what vkir.images.mips.
        generate_mips defines. Returns the image."""
        self.runtime.generate_mips(self.handle, f"{self!r}.generate_mips()")
        return self

    def level(self, index: int) -> "DeviceImage":
        """Mip level `index` as a DeviceImage of its own shape and one level: bound as a
        storage image (or a texture) it is that level alone, as mipmap generators and FidelityFX
        SPD bind each level they write; `.numpy()` / `.write()` copy that level."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or \
                not 0 <= index < self.levels:
            raise ArgumentError(f"{self!r} has mip levels 0 to {self.levels - 1}, got "
                                f"{index!r}")
        out = object.__new__(DeviceImage)
        out.runtime, out.device, out.image_format = self.runtime, self.device, self.image_format
        out.dim, out.layered, out.layers, out.levels = self.dim, self.layered, self.layers, 1
        out.cube = False   # one level of a cube binds as an array of its six faces
        space = self.shape[1:] if self.layered else self.shape
        out.shape = self.shape[:len(self.shape) - len(space)] + level_extent(space, int(index))
        out.handle = self.runtime.image_level(self.handle, int(index))
        out.parent = (self, int(index))
        return out

    @property
    def format(self) -> str:
        """The format's name ("rgba8", "r32ui", ...)."""
        return self.image_format.name

    @property
    def channels(self) -> int:
        """Channels per texel."""
        return self.image_format.channels

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one stored channel."""
        return np.dtype(self.image_format.storage_dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of the host array `.numpy()` returns."""
        return int(np.prod(self.shape)) * self.channels * self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        """A new host array of shape `shape + (channels,)` holding the image (waits for work
        that writes it)."""
        out = np.empty(self.shape + (self.channels,), self.dtype)
        self.runtime.image_copy_out(self.handle, out)
        return out

    def write(self, array) -> None:
        """Copy a host array (`shape + (channels,)`, or `shape` for 1 channel) in."""
        self.runtime.image_copy_in(self.handle, self._host(array, "DeviceImage.write"))

    def _host(self, array, what: str) -> np.ndarray:
        a = np.asarray(array)
        if a.dtype != self.dtype:
            raise ArgumentError(f"{what}: a {self.format} image holds {self.dtype} channels, got "
                                f"an array of {a.dtype}")
        if texel_shape(self.image_format, a.shape, what) != self.shape:
            raise ArgumentError(f"{what}: array of shape {a.shape} for an image of shape "
                                f"{self.shape} ({self.channels} channels)")
        return np.ascontiguousarray(a).reshape(self.shape + (self.channels,))

    def __repr__(self) -> str:
        lay = " layered" if self.layered else ""
        mips = f" {self.levels} levels" if self.levels > 1 else ""
        lay = " cube" if self.cube else lay
        of = f" (level {self.parent[1]})" if self.parent is not None else ""
        return (f"<vkir DeviceImage {self.format} {self.shape}{lay}{mips}{of} on "
                f"{self.runtime.name}>")


def image(array, format, *, layered: bool = False, levels: int = 1, cube: bool = False,
          device=None) -> DeviceImage:
    """A DeviceImage holding `array` (shape `shape + (channels,)`, or `shape` for a 1-channel
    format, of the format's storage dtype; `layered`: the first axis counts layers; `cube`: a
    (6, size, size, channels) array, the faces +x, -x, +y, -y, +z, -z of a cube texture) as level
    0 of `levels` mip levels (the others zero until `generate_mips()` or a kernel fills them)."""
    fmt = image_format(format)
    a = np.asarray(array)
    shape = texel_shape(fmt, a.shape, f"vkir.image(..., {fmt.name!r})")
    img = DeviceImage(shape, fmt, layered=layered or cube, device=device, levels=levels,
                      cube=cube)
    img.runtime.image_copy_in(img.handle, img._host(a, f"vkir.image(..., {fmt.name!r})"))
    return img


def empty_image(shape, format, *, layers: int | None = None, levels: int = 1,
                cube: bool = False, device=None) -> DeviceImage:
    """A new DeviceImage of `shape` ((width,), (height, width) or (depth, height, width)) and
    `format`, cleared to zero; `layers=n` makes an array of n images (shape (n,) + shape);
    `levels=n` gives it n mip levels; `cube=True` makes a cube texture of six `shape` faces
    (shape (6,) + shape)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if cube:
        if layers is not None:
            raise ArgumentError("a cube image has six faces and no layers= (Vulkan's cube "
                                "arrays are not supported)")
        return DeviceImage((6,) + shape, format, layered=True, device=device, levels=levels,
                           cube=True)
    if layers is not None:
        if isinstance(layers, bool) or not isinstance(layers, (int, np.integer)) or layers < 1:
            raise ArgumentError(f"layers must be a positive int, got {layers!r}")
        return DeviceImage((int(layers),) + shape, format, layered=True, device=device,
                           levels=levels)
    return DeviceImage(shape, format, device=device, levels=levels)
