"""Pipeline: an ordered, immutable sequence of passes, run with instruments around each pass.

A pipeline is data: `passes` is the tuple of pass objects (each with a `name`), so a caller can
read, filter or extend it before running it. `vkir.lowering.pipeline(target)` builds the default
one for a target.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import PrimFunc
from ..ir.structural import recursion_headroom


@dataclass(frozen=True)
class Pipeline:
    """Passes run in order. `pipeline(func, instruments=[...])` calls `inst.before(pass_, func)`
    before and `inst.after(pass_, result)` after every pass, for each instrument in order."""

    passes: tuple = ()

    def __post_init__(self):
        passes = tuple(self.passes)
        for p in passes:
            if not callable(p) or not isinstance(getattr(p, "name", None), str) \
                    or isinstance(p, PrimFunc):
                raise TypeError(f"Pipeline passes must be callable pass objects with a name, "
                                f"got {p!r}")
        object.__setattr__(self, "passes", passes)

    @property
    def names(self) -> tuple:
        """The pass names, in order."""
        return tuple(p.name for p in self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __iter__(self):
        return iter(self.passes)

    def __call__(self, func: PrimFunc, *, instruments=()) -> PrimFunc:
        if not isinstance(func, PrimFunc):
            raise TypeError(f"Pipeline expects a PrimFunc, got {type(func).__name__}")
        instruments = tuple(instruments)
        with recursion_headroom():  # deep expressions recurse once per level in every pass
            for p in self.passes:
                for inst in instruments:
                    inst.before(p, func)
                func = p(func)
                for inst in instruments:
                    inst.after(p, func)
        return func

    def without(self, *names: str) -> "Pipeline":
        """This pipeline minus the passes with these names."""
        return Pipeline(tuple(p for p in self.passes if p.name not in names))

    def __repr__(self) -> str:
        return f"Pipeline({', '.join(self.names)})"
