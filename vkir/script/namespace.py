"""The `T` object of `from vkir import T`.

Inside a `@T.prim_func` nothing of `T` is ever called: the parser reads the source. Outside, the
expression builders work programmatically (`T.exp(x)`, `T.float32(1.5)`, `T.cast(v, "int8")`), and
`T.Buffer(...)` / `T.int32` evaluate to harmless descriptions because Python evaluates parameter
annotations when it defines the function.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScriptError
from ..ir.dtype import PointerType
from ..ir.op import OPS
from . import builtins as B
from .exprs import BUILDERS, STMT_NAMES, is_dtype_name
from .entry import prim_func
from .images import IMAGE_BUILDERS
from .device_functions import func


@dataclass(frozen=True)
class BufferType:
    """What `T.Buffer(shape, dtype, ...)` evaluates to in an annotation (never used otherwise)."""

    shape: object
    dtype: str = "float32"
    strides: object = ()
    elem_offset: object = 0
    scope: str = "global"


@dataclass(frozen=True)
class ImageAnnotation:
    """What `T.Image(...)` / `T.Texture(...)` evaluates to in an annotation (never used
    otherwise)."""

    shape: object
    format: str
    layers: object = None
    sampled: bool = False


class DType(str):
    """`T.float32` etc.: the dtype name; calling it makes a typed constant."""

    def __call__(self, value):
        return B.typed_const(str(self), value)


class _Namespace:
    prim_func = staticmethod(prim_func)
    func = staticmethod(func)

    @staticmethod
    def Buffer(shape, dtype="float32", strides=(), elem_offset=0, scope="global"):  # noqa: N802
        return BufferType(shape, dtype, strides, elem_offset, scope)

    @staticmethod
    def Image(shape, format, layers=None):  # noqa: N802,A002
        """What `T.Image(shape, format, layers=None)` evaluates to in an annotation: a storage
        image parameter (read `img[y, x]`, write `img[y, x] = v`)."""
        return ImageAnnotation(shape, format, layers, False)

    @staticmethod
    def Texture(shape, format, layers=None):  # noqa: N802,A002
        """What `T.Texture(shape, format, layers=None)` evaluates to in an annotation: a sampled
        image parameter (read only through `T.sample`)."""
        return ImageAnnotation(shape, format, layers, True)

    @staticmethod
    def TextureCube(shape, format):  # noqa: N802,A002
        """What `T.TextureCube((size, size), format)` evaluates to in an annotation: a cube
        texture parameter (six faces, read only through `T.sample(cube, direction)`)."""
        return ImageAnnotation(shape, format, 6, True)

    @staticmethod
    def Ptr(dtype, scope="global"):  # noqa: N802
        return PointerType(dtype, scope)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if is_dtype_name(name):
            return DType(name)
        if name in BUILDERS:
            return BUILDERS[name]
        if name in IMAGE_BUILDERS:
            return IMAGE_BUILDERS[name]
        if name in OPS:
            return lambda *args: B.intrinsic(name, *args)
        if name in STMT_NAMES or name == "let":
            def only_in_scripts(*_args, **_kwargs):
                raise ScriptError(f"T.{name} can only be used inside a @T.prim_func")
            return only_in_scripts
        raise AttributeError(f"T has no attribute {name!r}")

    def __dir__(self):
        return sorted({"prim_func", "func", "Buffer", "Ptr", "Image", "Texture", "TextureCube",
                       "let", *BUILDERS,
                       *IMAGE_BUILDERS, *OPS, *STMT_NAMES})

    def __repr__(self):
        return "<vkir script namespace T>"


T = _Namespace()
