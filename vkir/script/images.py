"""Images in the script: `T.Image(shape, format, layers=None)`, `T.Texture(shape, format,
layers=None)` and `T.TextureCube((size, size), format)` parameters, and the builders of
`T.sample(tex, uv)` (a cube texture: `T.sample(cube, direction)`) and `T.image_size(img)`.

Reading `img[y, x]` and writing `img[y, x] = v` are parsed where buffer subscripts are
(exprs.py, parser.py); they become `ImageLoad`/`ImageStore` nodes (vkir.ir.image).
"""

from __future__ import annotations

import ast

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.image import ImageSample, ImageSize
from ..errors import UnsupportedError
from ..ir.image_type import ImageType, cube_problem, is_image, nonpositive_extent, \
    storage_refusal
from ..images.formats import FORMATS
from . import builtins as B

IMAGE_ANNOTATIONS = {"Image": False, "Texture": True, "TextureCube": True}
"""The T names of image parameter annotations -> whether the image is sampled."""


def _sig_image(shape, format, layers=None):  # noqa: A002 - the format, by its vkir name
    """T.Image(shape, format, layers=None)"""


def image_param(parser, a: ast.arg) -> E.Var:
    """The Var of parameter `a` annotated `T.Image(...)` or `T.Texture(...)`; shapes and layer
    counts take ints and size names, like buffer shapes."""
    kind = parser.t_call(a.annotation)
    args = parser.bind_call(a.annotation, _sig_image)
    fmt_node = args["format"]
    fmt = parser.value(fmt_node) if isinstance(fmt_node, ast.AST) else fmt_node
    if fmt not in FORMATS:
        raise parser.error(fmt_node if isinstance(fmt_node, ast.AST) else a.annotation,
                           f"{parser.t_name}.{kind}: unknown image format {fmt!r}; one of "
                           f"{', '.join(FORMATS)}")
    if not IMAGE_ANNOTATIONS[kind] and not FORMATS[fmt].storable:
        # UnsupportedError (what Vulkan lacks), located like a ScriptError
        raise UnsupportedError(str(parser.error(fmt_node if isinstance(fmt_node, ast.AST)
                                                else a.annotation,
                                                f"{parser.t_name}.{kind}: "
                                                f"{storage_refusal(fmt)}")))
    parser.in_shape = True
    try:
        shape = parser._shape(args["shape"])
        layers = args["layers"]
        layer_shape = () if layers is None else parser._shape(
            ast.Tuple(elts=[layers], ctx=ast.Load()) if isinstance(layers, ast.AST) else (layers,))
    finally:
        parser.in_shape = False
    if not 1 <= len(shape) <= 3:
        raise parser.error(a.annotation, f"{parser.t_name}.{kind}: an image has 1, 2 or 3 "
                                         f"dimensions, got a shape of {len(shape)}")
    for e in (*layer_shape, *shape):
        if not (isinstance(e.dtype, DataType) and str(e.dtype) == "int32"):
            raise parser.error(a.annotation, f"{parser.t_name}.{kind}: extents are int32, got "
                                             f"{e.dtype}")
    problem = nonpositive_extent((*layer_shape, *shape), layers is not None)
    if problem is not None:
        raise parser.error(a.annotation, f"{parser.t_name}.{kind}: {problem}")
    if kind == "TextureCube":
        if layers is not None or len(shape) != 2:
            raise parser.error(a.annotation, f"{parser.t_name}.TextureCube takes the (size, size) "
                                             "of one face and no layers (its six faces are them)")
        problem = cube_problem((6, *shape), True, True)
        if problem is not None:
            raise parser.error(a.annotation, f"{parser.t_name}.TextureCube: {problem}")
        return E.Var(a.arg, ImageType(fmt, (6, *shape), layered=True, sampled=True, cube=True),
                     span=parser.span(a))
    if layers is not None and len(shape) == 3:
        raise parser.error(a.annotation, f"{parser.t_name}.{kind}: a 3-D image has no layers "
                                         f"(Vulkan has no 3-D image arrays)")
    itype = ImageType(fmt, (*layer_shape, *shape), layered=layers is not None,
                      sampled=IMAGE_ANNOTATIONS[kind])
    return E.Var(a.arg, itype, span=parser.span(a))


def _image_arg(value, what: str, arg: int, sampled: bool | None):
    if not is_image(value):
        raise B.BuildError(f"the first argument must be {what}, got "
                           f"{B._describe(value)}", arg)
    if sampled is not None and value.dtype.sampled != sampled:
        raise B.BuildError(f"'{value.name}' is a {value.dtype.kind}; {what} is needed", arg)
    return value


def sample(texture, coords, lod=None, *, span=None):
    """`T.sample(tex, uv, lod=0.0)`: the texel of texture `tex` at float32 coordinates `uv` (x
    first, normalized by default; the layer last for a layered texture), filtered by the sampler
    the call gives for `tex`, at level of detail `lod` (a float32: 0 is the full image, 1 the
    first mip level, ...; clamped to the texture's levels). The result is the format's 4-lane
    type."""
    tex = _image_arg(texture, "a texture (a T.Texture parameter)", 0, True)
    uv = B.to_expr(coords, 1)
    if lod is not None:
        lod = B.literal_as(lod, DataType("float", 32)) if B.is_literal(lod) else \
            B.to_expr(lod, 2)
    return ImageSample(tex, uv, lod, span=span)


def image_size(image, *, span=None):
    """`T.image_size(img)`: the extent of an image or texture in Vulkan's order (width, height,
    depth, then layers): int32 for a 1-D image, int32xN otherwise."""
    return ImageSize(_image_arg(image, "an image or texture", 0, None), span=span)


IMAGE_BUILDERS = {"sample": sample, "image_size": image_size}
"""Expression builders of the image functions, by T name."""
