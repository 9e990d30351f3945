"""The base of every pass: a small frozen dataclass, called on a PrimFunc, returning a new one."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError, TransformError
from ..ir import PrimFunc
from ..ir.structural import recursion_headroom


@dataclass(frozen=True)
class Pass:
    """A pure function-to-function transformation; options are dataclass fields.

    Subclasses implement `transform(func)`. Calling the pass checks its argument and result are
    PrimFuncs; it never mutates its input (IR nodes are immutable anyway).
    """

    def __call__(self, func: PrimFunc) -> PrimFunc:
        if not isinstance(func, PrimFunc):
            raise ArgumentError(f"{type(self).__name__} expects a PrimFunc, got {type(func).__name__}")
        with recursion_headroom():  # passes recurse once per level of deep expressions
            result = self.transform(func)
        if not isinstance(result, PrimFunc):
            raise TransformError(f"{type(self).__name__} returned a {type(result).__name__}, "
                                 "not a PrimFunc")
        return result

    def transform(self, func: PrimFunc) -> PrimFunc:
        raise NotImplementedError


@dataclass(frozen=True)
class Sequential(Pass):
    """Runs passes in order; with `verify=True` the explicit-cast checker runs after each."""

    passes: tuple = ()
    verify: bool = False

    def transform(self, func: PrimFunc) -> PrimFunc:
        from ..analysis import verify_types

        for p in self.passes:
            func = p(func)
            if self.verify:
                verify_types(func)
        return func
