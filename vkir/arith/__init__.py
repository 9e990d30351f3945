"""Integer arithmetic analysis for passes: constant bounds, modular sets and the simplifier.

- `ModularSet(coeff, base)`, `modular_set(expr, var_sets={})`: every value is coeff*k + base.
- `const_int_bound(expr, var_ranges={}) -> (lo, hi)`: inclusive, None for an unbounded side;
  `var_ranges` maps Vars to inclusive (lo, hi) ranges as well.
- `simplify_expr(expr, var_ranges={}, var_sets={})`: folding and canonical forms.

Index arithmetic is assumed not to overflow when reasoning about bounds and divisibility.
"""

from .bound import const_int_bound, dtype_bound
from .modular_set import ModularSet, modular_set
from .simplify_expr import Simplifier, simplify_expr

__all__ = ["ModularSet", "modular_set", "const_int_bound", "dtype_bound", "simplify_expr",
           "Simplifier"]
