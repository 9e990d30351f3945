"""PrimFunc: a kernel's parameters, body and the buffers bound to its pointer parameters."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .base import FrozenDict, Node, Stmt
from .expr import Var
from .image_type import ImageType


@dataclass(frozen=True, slots=True)
class PrimFunc(Node):
    """A kernel. `params` are Vars; a buffer parameter is its buffer's `data` var and
    `buffer_map` maps it to the Buffer. Symbolic sizes are the free Vars of buffer_map shapes.
    `attrs["global_symbol"]` is the kernel's name."""

    params: tuple
    body: Stmt
    buffer_map: FrozenDict = field(default_factory=FrozenDict)
    attrs: FrozenDict = field(default_factory=FrozenDict)

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.buffer_map, FrozenDict):
            object.__setattr__(self, "buffer_map", FrozenDict(self.buffer_map))
        if not isinstance(self.attrs, FrozenDict):
            object.__setattr__(self, "attrs", FrozenDict(self.attrs))

    @property
    def name(self) -> str:
        """The function's name: its `global_symbol` attribute, else "main"."""
        return self.attrs.get("global_symbol", "main")

    def with_body(self, body: Stmt) -> "PrimFunc":
        """A copy with another body."""
        return replace(self, body=body)

    def __call__(self, *args, **kwargs):
        """A PrimFunc is a program, not a function to call: say how to run it."""
        from ..errors import ArgumentError

        raise ArgumentError(f"{self.name} is a PrimFunc, which runs through vkir: "
                            f"vkir.build({self.name})(...) on the device, or "
                            f"vkir.interpret({self.name}, ...) in the interpreter")

    def with_attr(self, key, value) -> "PrimFunc":
        """A copy with attribute `key` set to `value`."""
        return replace(self, attrs=self.attrs.set(key, value))

    @property
    def size_vars(self) -> tuple:
        """Symbolic int sizes: Vars in buffer_map shapes/strides and image parameters' shapes
        that are not params, in order."""
        from .traversal import walk

        seen, out = set(self.params), []
        for p in self.params:
            buf = self.buffer_map.get(p)
            if buf is None:
                exprs = p.dtype.shape if isinstance(p.dtype, ImageType) else ()
            else:
                exprs = (*buf.shape, *buf.strides, buf.elem_offset)
            for e in exprs:
                for n in walk(e):
                    if isinstance(n, Var) and n not in seen:
                        seen.add(n)
                        out.append(n)
        return tuple(out)

    def script(self) -> str:
        """This function as T.prim_func source (parsable back by vkir.from_script)."""
        from .printer import script

        return script(self)

    def __str__(self) -> str:
        return self.script()
