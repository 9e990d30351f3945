"""The base of every pass: a small frozen dataclass, called on a PrimFunc, returning a new one."""

from __future__ import annotations

from dataclasses import dataclass

from .. import config
from ..errors import ArgumentError, TransformError
from ..ir import PrimFunc
from ..ir.structural import recursion_headroom

VERIFY_ENV = "VKIR_VERIFY_PASSES"  # "1": the explicit-cast checker runs after every pass call


def verify_every_pass() -> bool:
    """Whether $VKIR_VERIFY_PASSES asks for the checker after every pass call (the test suite
    sets it; see vkir.transform.instruments.CheckTypes)."""
    return config.verify_passes()


@dataclass(frozen=True)
class Pass:
    """A pure function-to-function transformation; options are dataclass fields.

    Subclasses implement `transform(func)`. Calling the pass checks its argument and result are
    PrimFuncs; it never mutates its input (IR nodes are immutable anyway). With
    $VKIR_VERIFY_PASSES=1 every call also runs the explicit-cast checker on the result (blaming
    the pass only when its input was well typed).
    """

    @property
    def name(self) -> str:
        """The pass's name in pipelines, instruments and `--print-after`: its class name."""
        return type(self).__name__

    def __call__(self, func: PrimFunc) -> PrimFunc:
        if not isinstance(func, PrimFunc):
            raise ArgumentError(f"{type(self).__name__} expects a PrimFunc, got {type(func).__name__}")
        with recursion_headroom():  # passes recurse once per level of deep expressions
            result = self.transform(func)
        if not isinstance(result, PrimFunc):
            raise TransformError(f"{type(self).__name__} returned a {type(result).__name__}, "
                                 "not a PrimFunc")
        if verify_every_pass():
            from .instruments import CheckTypes

            CheckTypes.check(self, func, result)
        return result

    def transform(self, func: PrimFunc) -> PrimFunc:
        """The pass itself: a new PrimFunc computed from `func` (subclasses implement it)."""
        raise NotImplementedError
