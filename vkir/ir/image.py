"""Image accesses: `ImageLoad` (img[y, x]), `ImageStore` (img[y, x] = v), `ImageSample`
(T.sample(tex, uv)) and `ImageSize` (T.image_size(img)).

Each refers to the image by its parameter Var (whose dtype is an ImageType), so every pass that
walks expressions sees the image as an ordinary free variable and no pass mistakes an image for a
buffer. Indices follow numpy's order, as buffers do: `img[y, x]`, `img[z, y, x]`, and for a
layered image the layer first (`img[layer, y, x]`); sample coordinates and sizes follow Vulkan's
(x first, then y, z, and the layer last).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import PrimExpr, Stmt
from .dtype import DataType
from .expr import Var, convert


def _texel(image) -> DataType:
    return image.dtype.texel


@dataclass(frozen=True, slots=True)
class ImageLoad(PrimExpr):
    """The texel of storage image `image` at `indices` (numpy order), converted to the format's
    4-lane type; as the first argument of an atomic, the texel the atomic updates."""

    image: Var
    indices: tuple

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))

    @property
    def dtype(self) -> DataType:
        """The format's 4-lane type (float32x4, uint32x4 or int32x4)."""
        return _texel(self.image)


@dataclass(frozen=True, slots=True)
class ImageStore(Stmt):
    """Write `value` (exactly the format's 4-lane type) to the texel of `image` at `indices`;
    channels the format lacks are dropped, unorm/snorm values converted as Vulkan says."""

    image: Var
    value: PrimExpr
    indices: tuple

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))
        if not isinstance(self.value, PrimExpr):
            object.__setattr__(self, "value", convert(self.value, _texel(self.image)))


@dataclass(frozen=True, slots=True)
class ImageSample(PrimExpr):
    """`T.sample(texture, coords, lod=...)`: the filtered texel at float32 coordinates `coords`
    (x first; the layer index last for a layered texture) at the float32 level of detail `lod`
    (None: level 0), with the sampler the call binds to the texture."""

    texture: Var
    coords: PrimExpr
    lod: PrimExpr | None = None

    @property
    def dtype(self) -> DataType:
        """The format's 4-lane type."""
        return _texel(self.texture)


@dataclass(frozen=True, slots=True)
class ImageSize(PrimExpr):
    """`T.image_size(img)`: the extent in Vulkan's order (width, height, depth, then layers): an
    int32 for a 1-D image, an int32xN vector otherwise (a cube texture: a face's int32x2)."""

    image: Var

    @property
    def dtype(self) -> DataType:
        """int32 with one lane per coordinate (a cube: width and height of a face)."""
        itype = self.image.dtype
        return DataType("int", 32, 2 if itype.cube else len(itype.shape))


IMAGE_NODES = (ImageLoad, ImageStore, ImageSample, ImageSize)
"""The node classes that access an image."""
