"""The interpreter as a backend: `vkir.build(f, device="interp")` lowers `f` for
`Target.interp()` and runs the lowered function in vkir.interpret (the reference semantics,
with its out-of-bounds and data-race checks). It checks and compiles once, at build
(vkir.interpreter.Prepared): a call only binds the arguments and runs."""

from __future__ import annotations

from dataclasses import replace

from ..interpreter import Prepared
from ..ir import PrimFunc
from ..lowering import lower
from ..target import Target
from .base import Backend, Executable


class InterpExecutable(Executable):
    """A function lowered for the interpreter, checked and compiled once
    (vkir.interpreter.Prepared), run as vkir.interpret runs it with the target's subgroup size
    (the interpreter's default, 32, where the target names none)."""

    def __init__(self, ir: PrimFunc, subgroup_size: int | None = None, denormals: str = "preserve"):
        super().__init__(ir)
        self.subgroup_size = subgroup_size or ir.attrs.get("subgroup_size", 32)
        self.denormals = denormals
        self.prepared = Prepared(ir, self.subgroup_size, denormals)
        self.prepared.warm()

    runs_images = True   # takes samplers= (vkir.interpret's)

    def run(self, args: tuple, samplers: dict | None = None) -> None:
        """Run the lowered function on `args` (compiled at build; another way of running it,
        one workgroup at a time after an error, on its first use); `samplers` as
        vkir.interpret takes them."""
        self.prepared(*args, samplers=samplers)


class InterpBackend(Backend):
    """Compiles with the interpreter's pipeline (no SPIR-V) and runs in vkir.interpret."""

    name = "interp"

    def target(self, precise: bool = False) -> Target:
        """The interpreter's Target."""
        t = Target.interp()
        return replace(t, precise=True) if precise else t

    def compile(self, func: PrimFunc, target, *, pointer_casts: bool = False) -> InterpExecutable:
        """Lower `func` for the interpreter."""
        return InterpExecutable(lower(func, target, pointer_casts=pointer_casts),
                                getattr(target, "subgroup_size", None),
                                getattr(target, "denormals", "preserve"))
