"""Known driver classes: mismatches a driver bug explains that vkir does not work around, each
matched by a rule on the program and its results (never by program id), so that a campaign
fails only on new findings and counts the known ones by class.

A class holds for a mismatch when the device's results equal, bit for bit, what the interpreter
computes for the program as the driver is known to treat it; the rule reruns the interpreter
that way. The classes (docs/semantics.md describes the bugs):

- "llvmpipe-zero-fold": llvmpipe (Mesa 22.3.6) folds float `x * 0.0` and `0.0 / x` to 0.0,
  `x + 0.0`, `x - 0.0` to x and `0.0 - x` to -x in some expression shapes, even where
  SignedZeroInfNanPreserve is declared (so an infinite or NaN x times 0.0 gives 0, -0.0 + 0.0
  gives -0.0 and 0.0 - 0.0 gives -0.0). Rule: on
  llvmpipe, every element of the device's results is the interpreter's for some choice of the
  program's float multiplies, divisions, adds and subtracts with a constant zero operand
  folded so (the zeros the driver knows included: `T.cast(tx, "float32")` in a workgroup of
  one invocation, a constant through a let, a select on `x < x`, `T.ceil` of 0.0).
- "llvmpipe-float64-to-float16-twice": llvmpipe converts float64 to float16 through float32,
  rounding twice (1304.50005 becomes 1304.5, then 1304 by ties-to-even, not 1305). Rule: on
  llvmpipe, the interpreter with each such conversion made in those two steps gives the
  device's results.
- "swiftshader-denormal-flush": SwiftShader flushes some float32 denormal operands to zero
  (quirk flushes_denormals, docs/semantics.md). Rule: on SwiftShader, the interpreter with
  denormals flushed (`vkir.interpret(..., denormals="flush")`) gives the device's results.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ...arith.folding import has_side_effects
from ...errors import VkirError
from ...ir import expr as E
from ...ir.functor import Mutator
from ...ir.structural import structural_equal
from .bits import equal, same_results


@dataclass(frozen=True)
class Case:
    """One mismatch: the program `func`, its `inputs` (the arguments before the call), the
    device's results `got` (the arguments after it) and the subgroup size it ran with."""

    func: object
    inputs: list
    got: list
    subgroup_size: int


@dataclass(frozen=True)
class KnownClass:
    """A known driver bug: its `name`, the `driver` it belongs to (a lowercase part of the device
    name or driver description) and the rule `explains(case)`."""

    name: str
    driver: str
    explains: Callable[[Case], bool]


def explain(case: Case, device_info) -> str | None:
    """The name of the first known class of the device that explains `case`, or None (a new
    finding)."""
    text = f"{device_info.name} {device_info.driver}".lower()
    for known in KNOWN:
        if known.driver in text and known.explains(case):
            return known.name
    return None


def _interpreted(func, case: Case, **options) -> list | None:
    """The interpreter's results of `func` on the case's inputs (None where it refuses it)."""
    import vkir

    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.inputs]
    try:
        vkir.interpret(func, *args, subgroup_size=case.subgroup_size, **options)
    except VkirError:
        return None
    return args


def _is_zero(e) -> bool:
    """A float constant 0.0 or -0.0 (a scalar, or broadcast to lanes)."""
    if isinstance(e, E.Broadcast):
        e = e.value
    return isinstance(e, E.FloatImm) and e.value == 0.0


def _is_plus_zero(e) -> bool:
    """The float constant 0.0 (not -0.0), a scalar or broadcast."""
    if isinstance(e, E.Broadcast):
        e = e.value
    return _is_zero(e) and math.copysign(1.0, e.value) > 0


def _minus_zero(e):
    """The constant -0.0 in the type and form (scalar or broadcast) of the zero `e`."""
    if isinstance(e, E.Broadcast):
        return replace(e, value=_minus_zero(e.value))
    return E.FloatImm(e.dtype, -0.0)


class _ZeroFold(Mutator):
    """Folds the float multiplies, divisions, adds and subtracts with a constant zero operand
    whose numbers (in visiting order) are in `chosen` as llvmpipe does: x * 0.0 and 0.0 / x ->
    0.0 (the constant), x + 0.0 and x - 0.0 -> x, 0.0 - x -> -x, and those that become such an
    operation by a fold inside them (0.0 + y, once x * 0.0 is 0.0). `sites` counts the
    operations of the program as written."""

    def __init__(self, chosen=frozenset()):
        self.chosen = chosen
        self.sites = 0

    def _site(self, node, folded):
        if not node.dtype.is_float:
            return self.generic_visit(node)
        site = None
        if folded(node) is not None:   # numbered in the program as written
            site, self.sites = self.sites, self.sites + 1
        node = self.generic_visit(node)
        result = folded(node)
        if result is None or (site is not None and site not in self.chosen):
            return node
        return result   # (one that a fold below made, 0.0 + x, folds as the compiler goes on)

    def visit_Mul(self, e):
        return self._site(e, lambda n: n.b if _is_zero(n.b) else n.a if _is_zero(n.a) else None)

    def visit_Add(self, e):
        return self._site(e, lambda n: n.a if _is_zero(n.b) else n.b if _is_zero(n.a) else None)

    def visit_Sub(self, e):   # (0.0 - x becomes -x: -0.0 - x, which negates exactly)
        return self._site(e, lambda n: n.a if _is_zero(n.b) else
                          replace(n, a=_minus_zero(n.a)) if _is_plus_zero(n.a) else None)

    def visit_Div(self, e):   # 0.0 / x is 0.0 * (1 / x) to llvmpipe
        return self._site(e, lambda n: n.a if _is_zero(n.a) else None)

    visit_FloorDiv = visit_Div   # (codegen's floor division divides too)


class _ConstantIds(Mutator):
    """The program with every thread-binding variable of extent 1 replaced by 0, every let
    binding of a constant inlined, `x < x` and `x > x` made false and the rounding functions of
    a constant folded (the same program: the driver sees those constants too, T.cast(tx,
    "float32") in a workgroup of one invocation); Simplify then folds what they make constant,
    exactly (`constants`)."""

    def __init__(self):
        self.known = {}

    def visit_For(self, s):
        if s.kind == "thread_binding" and isinstance(s.extent, E.IntImm) and s.extent.value == 1:
            self.known[s.loop_var] = E.IntImm(s.loop_var.dtype, 0)
            body = self.visit(s.body)
            return s if body is s.body else replace(s, body=body)
        return self.generic_visit(s)

    def visit_Var(self, v):
        return self.known.get(v, v)

    def visit_Let(self, e):
        value = self.visit(e.value)
        if isinstance(value, (E.IntImm, E.FloatImm)):
            self.known[e.var] = value
            return self.visit(e.body)
        return self.generic_visit(e)

    def _strict(self, e):   # x < x and x > x are false for every x, NaN included
        e = self.generic_visit(e)
        if e.dtype.lanes == 1 and structural_equal(e.a, e.b) and not has_side_effects(e.a):
            return E.IntImm(e.dtype, 0)
        return e

    visit_LT = visit_GT = _strict

    def visit_Call(self, e):   # the rounding functions of a float constant
        e = self.generic_visit(e)
        if e.op in _ROUNDING and isinstance(e.args[0], E.FloatImm):
            x = e.args[0].value
            if e.op == "fabs":
                return E.FloatImm(e.dtype, abs(x))
            # (the sign stays the argument's: ceil(-0.5) is -0.0)
            return E.FloatImm(e.dtype, math.copysign(_ROUNDING[e.op](x), x)
                              if math.isfinite(x) else x)
        return e


_ROUNDING = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "fabs": abs,
             "round": round}   # (Python's round is to even, as T.round)


def constants(func):
    """`func` with the constants of `_ConstantIds` folded by Simplify (which folds exactly, as
    the device computes, and which lowering applies anyway)."""
    from ...transform import Simplify

    for _ in range(3):   # (a folded let may make another let's value constant)
        folded = Simplify()(func.with_body(_ConstantIds().visit(func.body)))
        if folded is func:
            break
        func = folded
    return func


_MAX_SITES = 6   # the most fold sites whose every combination is tried (else all, or one)


def _fold_choices(sites: int):
    """The sets of sites to fold: all of them first, then each alone, then the rest."""
    yield frozenset(range(sites))
    if sites > 1:
        yield from (frozenset({k}) for k in range(sites))
    if sites <= _MAX_SITES:
        for size in range(2, sites):
            for chosen in itertools.combinations(range(sites), size):
                yield frozenset(chosen)


def _zero_fold(case: Case) -> bool:
    body = constants(case.func).body
    counter = _ZeroFold()
    counter.visit(body)
    if not counter.sites:
        return False
    unexplained = None   # per array: the elements no choice tried so far gives
    for chosen in (frozenset(), *_fold_choices(counter.sites)):
        want = _interpreted(case.func.with_body(_ZeroFold(chosen).visit(body)), case)
        if want is None:
            continue
        same = [equal(w, h) for w, h in zip(want, case.got) if isinstance(w, np.ndarray)]
        unexplained = [~s for s in same] if unexplained is None else \
            [u & ~s for u, s in zip(unexplained, same)]
        if not any(u.any() for u in unexplained):
            return True
    return False


class _ViaFloat32(Mutator):
    """Every float64 -> float16 conversion made in two steps, through float32, as llvmpipe
    converts (rounding twice: 1304.50005 becomes 1304.5, then 1304, not 1305)."""

    def visit_Cast(self, e):
        e = self.generic_visit(e)
        if e.dtype.is_float and e.dtype.bits == 16 and e.value.dtype.is_float and \
                e.value.dtype.bits == 64:
            return replace(e, value=E.Cast(_float32(e.value.dtype), e.value))
        return e


def _float32(dt):
    """The float32 type of `dt`'s lanes."""
    return "float32" if dt.lanes == 1 else f"float32x{dt.lanes}"


def _double_rounding(case: Case) -> bool:
    func = case.func.with_body(_ViaFloat32().visit(case.func.body))
    if func.body is case.func.body:
        return False
    want = _interpreted(func, case)
    return want is not None and same_results(want, case.got)


def _denormal_flush(case: Case) -> bool:
    want = _interpreted(case.func, case, denormals="flush")
    return want is not None and same_results(want, case.got)


KNOWN = (
    KnownClass("llvmpipe-zero-fold", "llvmpipe", _zero_fold),
    KnownClass("llvmpipe-float64-to-float16-twice", "llvmpipe", _double_rounding),
    KnownClass("swiftshader-denormal-flush", "swiftshader", _denormal_flush),
)
