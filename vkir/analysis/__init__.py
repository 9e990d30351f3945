"""Analyses: the explicit-cast checker and the well-formedness checker.

Imported eagerly: each function shares its name with its submodule, and a lazy `__getattr__` is
never consulted once importing one submodule (verify_well_formed imports verify_types) has bound
the other's name to the module object.
"""

from .verify_types import verify_types
from .verify_well_formed import verify_well_formed

__all__ = ["verify_types", "verify_well_formed"]
