"""The intrinsics a `Call` may name, with arity and purity: the pure ones of the intrinsic table
(vkir.ir.intrinsics, where each is declared with every layer's handling), atomics and subgroup
operations.

Atomics and subgroup operations are Calls too, and impure (CSE never commons them, Simplify
never drops them, VectorizeLoop keeps their loop serial). An atomic's first argument is the
`BufferLoad` of the element it updates: it marks the address (passes that rewrite accesses,
such as FlattenBuffer, rewrite it like any load), but it is not a plain read: the interpreter,
the race checker and codegen treat it as the atomic's read-modify-write. The Call's dtype is the
element's, its value the element's old value; `Evaluate(atomic call)` is the statement form,
printed as a bare `T.atomic_add(A[i], v)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtype import DataType
from .intrinsics import INTRINSICS


@dataclass(frozen=True, slots=True)
class OpInfo:
    """`arity` args; `pure` calls have no side effects (CSE may common them); `kind` groups them."""

    name: str
    arity: int
    pure: bool
    kind: str  # "math_float" | "math_abs" | "math_pred" | "bitwise" | "special" | "atomic" | "subgroup"


_KINDS = {"float": "math_float", "numeric": "math_abs", "float_predicate": "math_pred",
          "integer": "bitwise", "shift": "bitwise", "reinterpret": "special",
          "if_then_else": "special"}
"""OpInfo.kind of each type rule of the intrinsic table."""


def _ops():
    ops = {name: OpInfo(name, row.arity, True, _KINDS[row.type_rule])
           for name, row in INTRINSICS.items()}
    # Atomics: the first argument is the BufferLoad of the element they update (it marks the
    # address; the element is not read as a plain load), the result is the element's old value.
    for name in ATOMIC_BINARY:
        ops[name] = OpInfo(name, 2, False, "atomic")
    ops["atomic_compare_exchange"] = OpInfo("atomic_compare_exchange", 3, False, "atomic")
    # Subgroup operations are impure: their value depends on which invocations are active, so
    # they may neither be commoned nor moved across control flow.
    for name, (arity, _) in SUBGROUP_OPS.items():
        ops[name] = OpInfo(name, arity, False, "subgroup")
    return ops


ATOMIC_BINARY = ("atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and",
                 "atomic_or", "atomic_xor", "atomic_exchange")
"""Atomics taking (element, value); `atomic_compare_exchange` takes (element, expected, desired)."""


def _subgroup_ops():
    ops = {}
    for name in ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups"):
        ops[name] = (0, "basic")
    ops["subgroup_elect"] = (0, "basic")
    for name in ("subgroup_all", "subgroup_any"):
        ops[name] = (1, "vote")
    for red in SUBGROUP_REDUCTIONS:
        ops[f"subgroup_{red}"] = (1, "arithmetic")
    for red in SUBGROUP_SCANS:
        ops[f"subgroup_inclusive_{red}"] = (1, "arithmetic")
        ops[f"subgroup_exclusive_{red}"] = (1, "arithmetic")
    ops["subgroup_broadcast"] = (2, "ballot")
    ops["subgroup_broadcast_first"] = (1, "ballot")
    ops["subgroup_ballot"] = (1, "ballot")
    ops["subgroup_shuffle"] = (2, "shuffle")
    ops["subgroup_shuffle_xor"] = (2, "shuffle")
    ops["subgroup_shuffle_up"] = (2, "shuffle_relative")
    ops["subgroup_shuffle_down"] = (2, "shuffle_relative")
    return ops


SUBGROUP_REDUCTIONS = ("add", "mul", "min", "max", "and", "or", "xor")
SUBGROUP_SCANS = ("add", "mul", "min", "max")

SUBGROUP_OPS: dict[str, tuple[int, str]] = _subgroup_ops()
"""Subgroup op -> (arity, the Vulkan subgroup operation class it needs: "basic", "vote",
"arithmetic", "ballot", "shuffle" or "shuffle_relative")."""


OPS: dict[str, OpInfo] = _ops()


def is_atomic(op: str) -> bool:
    """True for the atomics (`atomic_add`, ..., `atomic_compare_exchange`)."""
    info = OPS.get(op)
    return info is not None and info.kind == "atomic"


def is_subgroup(op: str) -> bool:
    """True for the subgroup operations (`subgroup_add`, `subgroup_ballot`, ...)."""
    return op in SUBGROUP_OPS


def is_pure(op: str) -> bool:
    """True for a known side-effect-free intrinsic; unknown ops are treated as impure."""
    info = OPS.get(op)
    return info is not None and info.pure


_SUBGROUP_RESULT = {
    "subgroup_size": DataType("int", 32), "subgroup_invocation_id": DataType("int", 32),
    "subgroup_id": DataType("int", 32), "num_subgroups": DataType("int", 32),
    "subgroup_elect": DataType("bool", 1), "subgroup_all": DataType("bool", 1),
    "subgroup_any": DataType("bool", 1), "subgroup_ballot": DataType("uint", 32, 4),
}


def result_dtype(op: str, args) -> DataType:
    """The dtype `T.<op>(*args)` has when it is not spelled out: the script parser gives calls
    this dtype, and the printer writes `T.call` with an explicit dtype wherever it differs."""
    if op in _SUBGROUP_RESULT:
        return _SUBGROUP_RESULT[op]
    if op in OPS and OPS[op].kind == "atomic" and args and type(args[0]).__name__ == "ImageLoad":
        return args[0].dtype.element_of()   # an image atomic updates one channel of the texel
    rule = INTRINSICS[op].type_rule if op in INTRINSICS else None
    if rule == "float_predicate":
        return DataType("bool", 1, args[0].dtype.lanes)
    if rule == "if_then_else":
        return args[1].dtype
    return args[0].dtype
