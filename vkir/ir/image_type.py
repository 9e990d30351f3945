"""The type of an image parameter: `ImageType`, carried as the dtype of the parameter's Var.

An image is not a buffer: it has a format (how texels are stored and converted), a dimensionality
and, for a layered image, a count of layers; a kernel reads and writes whole texels as the
format's 4-lane type (vkir.images.formats) and never takes its address. The declared shape lives
in the type, so a PrimFunc's parameters say all a call needs to check an argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError, UnsupportedError
from ..images.formats import ImageFormat, image_format
from .dtype import DataType


@dataclass(frozen=True, slots=True, eq=False)
class ImageType:
    """`format` (a vkir.images format name), `shape` (PrimExprs, the layer count first when
    `layered`; then depth, height, width as numpy orders them), `sampled` (a texture, read only
    through T.sample) or a storage image; `cube` a cube texture (`T.TextureCube`): layered, its
    six faces the layers (+x, -x, +y, -y, +z, -z, as Vulkan orders them), sampled by direction.

    Equality compares format, layering, kind and the shape's nodes (size Vars by identity, as
    the IR compares Vars); structural equality maps size Vars (vkir.ir.structural)."""

    format: str
    shape: tuple
    layered: bool = False
    sampled: bool = False
    cube: bool = False

    def __post_init__(self):
        from .expr import convert

        fmt = image_format(self.format)
        if not self.sampled and not fmt.storable:
            raise UnsupportedError(storage_refusal(fmt.name))
        object.__setattr__(self, "shape", tuple(convert(s) for s in self.shape))
        dims = len(self.shape) - self.layered
        if not 1 <= dims <= 3:
            raise ArgumentError(f"an image has 1, 2 or 3 dimensions, got shape of {dims}")
        problem = nonpositive_extent(self.shape, self.layered)
        if problem is not None:
            raise ArgumentError(problem)
        if self.cube:
            problem = cube_problem(self.shape, self.layered, self.sampled)
            if problem is not None:
                raise ArgumentError(problem)

    def __eq__(self, other):
        if not isinstance(other, ImageType):
            return NotImplemented
        return (self.format, self.layered, self.sampled, self.cube) == \
            (other.format, other.layered, other.sampled, other.cube) \
            and len(self.shape) == len(other.shape) \
            and all(a is b or a == b for a, b in zip(self.shape, other.shape))

    def __hash__(self):
        return hash((self.format, self.layered, self.sampled, self.cube, len(self.shape)))

    @property
    def fmt(self) -> ImageFormat:
        """The format's row in vkir.images.formats."""
        return image_format(self.format)

    @property
    def dims(self) -> int:
        """Spatial dimensions: 1, 2 or 3 (layers not counted)."""
        return len(self.shape) - self.layered

    @property
    def texel(self) -> DataType:
        """The 4-lane type a read (or a sample) yields and a write takes."""
        return DataType.parse(self.fmt.texel_dtype)

    @property
    def kind(self) -> str:
        """"texture", "cube texture" or "image" (for messages)."""
        return "cube texture" if self.cube else "texture" if self.sampled else "image"

    @property
    def spatial_shape(self) -> tuple:
        """The shape without the layer count."""
        return self.shape[1:] if self.layered else self.shape

    @property
    def is_handle(self) -> bool:
        """False: an image is not a scalar handle (code that asks dtypes this stays correct)."""
        return False

    @property
    def lanes(self) -> int:
        """1: the image itself is one opaque value."""
        return 1

    def __str__(self) -> str:
        if self.cube:
            return f"T.TextureCube(({', '.join(str(s) for s in self.spatial_shape)}), " \
                f"\"{self.format}\")"
        kind = "T.Texture" if self.sampled else "T.Image"
        shape = ", ".join(str(s) for s in self.spatial_shape)
        layers = f", layers={self.shape[0]}" if self.layered else ""
        return f"{kind}(({shape}{',' if self.dims == 1 else ''}), \"{self.format}\"{layers})"


_AXES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def nonpositive_extent(shape, layered: bool) -> str | None:
    """What is wrong with the first constant extent of image `shape` (numpy order, the layer
    count first when `layered`) below 1, else None: Vulkan has no empty images."""
    from .expr import IntImm

    spatial = shape[1:] if layered else shape
    named = ((("layer count", shape[0]),) if layered else ()) + tuple(
        zip(_AXES.get(len(spatial), ()), spatial))
    for what, extent in named:
        if isinstance(extent, IntImm) and extent.value < 1:
            shown = ", ".join(str(getattr(e, "value", e)) for e in spatial)
            return (f"image extents must be positive: the {what} is {extent.value} (shape "
                    f"({shown}{',' if len(spatial) == 1 else ''})"
                    f"{f', layers={shape[0]}' if layered else ''})")
    return None


def cube_problem(shape, layered: bool, sampled: bool) -> str | None:
    """What is wrong with a cube image of `shape` (6 faces first, then height and width: ints or
    PrimExprs), else None: a cube is a sampled, square 2-D image of six faces."""
    from .expr import IntImm

    if not (sampled and layered and len(shape) == 3):
        return "a cube image is a sampled 2-D image of six faces (T.TextureCube((size, size), fmt))"
    faces, h, w = (n.value if isinstance(n, IntImm) else n for n in shape)
    if isinstance(faces, int) and faces != 6:
        return f"a cube image has 6 faces, got {faces}"
    if isinstance(h, int) and isinstance(w, int) and h != w:
        return f"the faces of a cube image are square, got {h} x {w}"
    return None


def storage_refusal(fmt_name: str) -> str:
    """Why format `fmt_name` (an sRGB one) cannot be a storage image, and what to do instead."""
    return (f"format {fmt_name} is sRGB, and Vulkan has no sRGB storage format: it can only be "
            f"a texture (T.Texture, read with T.sample); store linear values in "
            f"{fmt_name.replace('_srgb', '')} instead")


def is_image(var) -> bool:
    """True when `var` (anything) is a Var whose dtype is an ImageType."""
    return isinstance(getattr(var, "dtype", None), ImageType)
