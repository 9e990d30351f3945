"""Integer arithmetic analysis for passes: constant bounds, modular sets and the simplifier.

- `ModularSet(coeff, base)`, `modular_set(expr, var_sets={})`: every value is coeff*k + base.
- `const_int_bound(expr, var_ranges={}) -> (lo, hi)`: inclusive, None for an unbounded side;
  `var_ranges` maps Vars to inclusive (lo, hi) ranges as well. `value_range` is the same with
  finite sides (the type's limits where nothing better is known), `type_range(dtype)` the limits.
- `simplify_expr(expr, var_ranges={}, var_sets={})`: folding and canonical forms.
- `RangeScope`, `counted_loop_range`, `condition_ranges` (ranges.py): the ranges of the Vars in
  scope that a kernel's structure implies (loops, thread bindings, lets, branch conditions).
- `Linear`, `ScalarLinear`, `linear_of` (linear.py): the linear form of integer expressions.

vkir integers wrap at their width (the interpreter and the GPU compute modulo 2**bits), and every
result here is about the values programs actually compute, overflow included: bounds widen to
the whole type where an operation may wrap, modular sets keep only the factors of a coefficient
that divide 2**bits after +, -, *, and the simplifier divides or compares an expression as a
mathematical integer only where bounds prove that none of its terms wraps (see simplifier.py).
"""

from .bound import const_int_bound, dtype_bound, type_range, value_range
from .linear import Linear, ScalarLinear, linear_of
from .modular import ModularSet, modular_set
from .ranges import RangeScope, condition_ranges, counted_loop_range
from .simplifier import Simplifier, simplify_expr

__all__ = ["ModularSet", "modular_set", "const_int_bound", "dtype_bound", "simplify_expr",
           "Simplifier", "type_range", "value_range", "Linear", "ScalarLinear", "linear_of",
           "RangeScope", "condition_ranges", "counted_loop_range"]
