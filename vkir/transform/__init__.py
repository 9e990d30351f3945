"""Passes: each a callable frozen dataclass `PassName(**options)(func) -> func`, one file each."""

from importlib import import_module

from .base import Pass
from .instruments import CheckTypes, Instrument, PrintAfter, TimePasses
from .pipeline import Pipeline

_PASSES = {
    "FlattenBuffer": "flatten_buffer",
    "VectorizeLoop": "vectorize_loop",
    "Simplify": "simplify",
    "VectorTypeRewrite": "vector_type_rewrite",
    "PointerCastVectorize": "pointer_cast_vectorize",
    "SymbolicVectorCast": "symbolic_vector_cast",
    "BoolToInt8": "bool_to_int8",
    "EmulateInt8": "emulate_int8",
    "EmulateInt64": "emulate_int64",
    "CommonSubexprElim": "common_subexpr_elim",
    "InjectSoftwarePipeline": "inject_software_pipeline",
    "LowerAsync": "lower_async",
    "SplitLongLoops": "split_long_loops",
    "BindParallel": "bind_parallel",
}


__all__ = ["Pass", "Pipeline", "Instrument", "CheckTypes", "PrintAfter", "TimePasses",
           *_PASSES]


def __getattr__(name):
    if name in _PASSES:
        value = getattr(import_module(f"{__name__}.{_PASSES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PASSES))
