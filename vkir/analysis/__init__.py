"""Analyses: the explicit-cast checker and the well-formedness checker."""

from importlib import import_module

_LAZY = {
    "verify_types": "verify_types",
    "verify_well_formed": "verify_well_formed",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
