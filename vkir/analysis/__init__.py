"""Analyses: the explicit-cast checker and the well-formedness checker.

Imported eagerly: `verify_types` shares its name with its submodule, and a lazy `__getattr__` is
never consulted once importing that submodule has bound the name to the module object.
"""

from .verify_types import verify_types
from .well_formed import verify_well_formed

__all__ = ["verify_types", "verify_well_formed"]
