"""Typing rules of image accesses (part of the explicit-cast checker, vkir.analysis.type_checker).

- An image is a parameter: its Var (dtype ImageType) is never a value; it is indexed, sampled or
  measured.
- `img[i, ...]` (ImageLoad) and `img[i, ...] = v` (ImageStore) take one scalar int32 index per
  dimension, plus one for the layer of a layered image (rule 1); a read yields the format's
  4-lane type (float32x4 for unorm/snorm/float formats, uint32x4/int32x4 for integer ones) and a
  write takes exactly that type (rule 3: no implicit conversion, use T.cast); a texture is never
  indexed or written (rule 5): it is read only through `T.sample`.
- `T.sample(tex, uv)` needs a texture and float32 coordinates with one lane per coordinate (the
  layer last for a layered texture) (rule 3); an integer-format texture cannot be sampled with
  normalized results, but nearest sampling returns its integer texels, so it is allowed.
- `T.image_size(img)` is int32 with one lane per coordinate.
- Image atomics: the texel of an `r32ui`/`r32i` storage image; the values and the result have
  the lane type (uint32/int32) (rule 3).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.image_type import ImageType
from ..images.formats import ATOMIC_FORMATS

_INT32 = DataType("int", 32)


def image_of(checker, node, var, *, sampled: bool | None, what: str) -> ImageType:
    """The ImageType of `var` (the image a node names), or a TypeCheckError (rule 5) when it is
    not an image, or not of the kind (`sampled`) the node needs."""
    itype = getattr(var, "dtype", None)
    if not isinstance(var, E.Var) or not isinstance(itype, ImageType):
        checker.fail(5, node, f"{what} needs an image parameter, got {getattr(var, 'name', var)}")
    if sampled is True and not itype.sampled:
        checker.fail(5, node, f"{what} needs a texture (T.Texture); {var.name} is a storage image")
    if sampled is False and itype.sampled:
        checker.fail(5, node, f"{what}: texture {var.name} is read only through T.sample "
                     f"(T.Texture parameters are sampled, never indexed or written)")
    return itype


def check_indices(checker, node, var, indices) -> ImageType:
    """Rule 1 for an ImageLoad/ImageStore: one scalar int32 index per coordinate."""
    itype = image_of(checker, node, var, sampled=False,
                     what="an image read" if isinstance(node, E.PrimExpr) else "an image write")
    if not isinstance(indices, tuple):
        checker.fail(1, node, "indices must be a tuple")
    want = len(itype.shape)
    if len(indices) != want:
        layers = " plus the layer" if itype.layered else ""
        checker.fail(1, node, f"image {var.name} has {itype.dims} dimension"
                     f"{'s' * (itype.dims != 1)}{layers}: it takes {want} indices, got "
                     f"{len(indices)}")
    for k, i in enumerate(indices):
        t = checker.expr(i)
        if t != _INT32:
            checker.fail(1, i, f"index {k} of image {var.name} must be a scalar int32 (vector "
                         f"indices and other integer types are not image coordinates)", t, _INT32)
        extent = itype.shape[k]
        if isinstance(extent, E.IntImm) and isinstance(i, E.IntImm) \
                and not 0 <= i.value < extent.value:
            checker.fail(6, node, f"constant index {i.value} is outside dim {k} of image "
                         f"{var.name} (extent {extent.value})")
    return itype


def check_load(checker, e) -> DataType:
    """The type of `img[...]`: the format's 4-lane type."""
    return check_indices(checker, e, e.image, e.indices).texel


def check_store(checker, s) -> None:
    """`img[...] = v`: v has exactly the format's 4-lane type."""
    itype = check_indices(checker, s, s.image, s.indices)
    got = checker.expr(s.value)
    if got != itype.texel:
        checker.fail(3, s, f"a write to image {s.image.name} ({itype.format}) takes the format's "
                     f"4-lane type exactly (use T.cast)", itype.texel, got)


def check_sample(checker, e) -> DataType:
    """`T.sample(tex, uv, lod=)`: float32 coordinates, one lane per coordinate; a float32
    level of detail."""
    itype = image_of(checker, e, e.texture, sampled=True, what="T.sample")
    got = checker.expr(e.coords)
    want = DataType("float", 32, len(itype.shape))
    if got != want:
        layer = " (x first, the layer last)" if itype.layered else " (x first)"
        checker.fail(3, e, f"T.sample of {e.texture.name} takes float32 coordinates, one per "
                     f"coordinate{layer}", want, got)
    if e.lod is not None:
        lod = checker.expr(e.lod)
        if lod != DataType("float", 32):
            checker.fail(3, e, f"the lod= of T.sample of {e.texture.name} is a float32 level of "
                         "detail", DataType("float", 32), lod)
    return itype.texel


def check_size(checker, e) -> DataType:
    """`T.image_size(img)`: int32 with one lane per coordinate (a cube: a face's two)."""
    image_of(checker, e, e.image, sampled=None, what="T.image_size")
    return e.dtype


def check_atomic(checker, e, types) -> DataType:
    """An atomic on an image texel: an r32ui/r32i storage image; values and the result have the
    lane type (`types[0]` is the texel's 4-lane type)."""
    target = e.args[0]
    itype = target.image.dtype
    if itype.format not in ATOMIC_FORMATS:
        checker.fail(3, e, f"{e.op} on image {target.image.name}: image atomics need format "
                     f"r32ui or r32i, not {itype.format}")
    lane = types[0].element_of()
    for t in types[1:]:
        if t != lane:
            checker.fail(3, e, f"the value of {e.op} must have the texel's type (no implicit "
                         "cast)", t, lane)
    if e.dtype != lane:
        checker.fail(3, e, f"{e.op} returns the texel's old value", lane, e.dtype)
    return lane
