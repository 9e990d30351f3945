"""Analyses: the explicit-cast checker (type_checker.py) and the well-formedness checker."""

from .type_checker import verify_types
from .well_formed import verify_well_formed

__all__ = ["verify_types", "verify_well_formed"]
