"""The interpreter as a backend: `vkir.build(f, device="interp")` lowers `f` for
`Target.interp()` and runs the lowered function in vkir.interpret (the reference semantics,
with its out-of-bounds and data-race checks)."""

from __future__ import annotations

from dataclasses import replace

from ..interpreter import interpret
from ..ir import PrimFunc
from ..lowering import lower
from ..target import Target
from .base import Backend, Executable


class InterpExecutable(Executable):
    """A function lowered for the interpreter, run by vkir.interpret."""

    def run(self, args: tuple) -> None:
        interpret(self.ir, *args)


class InterpBackend(Backend):
    """Compiles with the interpreter's pipeline (no SPIR-V) and runs in vkir.interpret."""

    name = "interp"

    def target(self, precise: bool = False) -> Target:
        t = Target.interp()
        return replace(t, precise=True) if precise else t

    def compile(self, func: PrimFunc, target, *, pointer_casts: bool = False) -> InterpExecutable:
        return InterpExecutable(lower(func, target, pointer_casts=pointer_casts))
