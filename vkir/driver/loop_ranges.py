"""The loop ranges of one kernel call, checked on the host before the dispatch: a loop whose
bounds follow from the call's sizes and scalars and whose range does not fit its variable's
type raises ArgumentError, with the message the interpreter gives for the same call
(vkir.analysis.loop_ranges says why such a loop is an error)."""

from __future__ import annotations

from ..analysis.loop_ranges import check_known_loops
from .shape_eval import evaluate


def check_call(func, env: dict, name: str) -> None:
    """ArgumentError where a loop of `func` (the kernel's own function, not the lowered one:
    its variables are the ones `env` binds) runs past its variable's type for the sizes and
    scalars in `env` (Var -> number)."""
    check_known_loops(func, env, evaluate, f"kernel {name}")
