"""Typing rules of atomics and subgroup operations (part of the explicit-cast checker).

An atomic's first argument is the BufferLoad of one scalar element of a "global" or "shared"
buffer whose dtype is int32/uint32/int64/uint64, or float32 for add/min/max; its other
arguments and its result have exactly the element's dtype. Subgroup predicates are scalar bools,
a ballot is uint32x4, lanes/masks/deltas are scalar int32 or uint32, ids and sizes are int32.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.op import SUBGROUP_OPS

ATOMIC_INT_DTYPES = frozenset(DataType.parse(t) for t in ("int32", "uint32", "int64", "uint64"))
FLOAT_ATOMICS = frozenset({"atomic_add", "atomic_min", "atomic_max"})
_FLOAT32 = DataType("float", 32)
_INT32 = DataType("int", 32)
_BOOL = DataType("bool", 1)
_BALLOT = DataType("uint", 32, 4)


def check_atomic(checker, e, types) -> DataType:
    """The result type of the atomic call `e` (argument types `types`), or a TypeCheckError."""
    target = e.args[0]
    if not isinstance(target, E.BufferLoad):
        checker.fail(1, e, f"the first argument of {e.op} must be a buffer element such as A[i]")
    elem = types[0]
    if elem.lanes != 1:
        checker.fail(1, e, f"{e.op} updates one scalar element; the access has {elem.lanes} "
                     "lanes", elem, elem.element_of())
    scope = target.buffer.scope
    if scope not in ("global", "shared"):
        checker.fail(5, e, f"{e.op} needs a \"global\" or \"shared\" buffer; "
                     f"{target.buffer.name} is {scope!r}")
    if elem not in ATOMIC_INT_DTYPES and not (elem == _FLOAT32 and e.op in FLOAT_ATOMICS):
        allowed = "int32, uint32, int64, uint64" + (", float32" if e.op in FLOAT_ATOMICS else "")
        checker.fail(3, e, f"{e.op} needs a buffer element of type {allowed}; "
                     f"{target.buffer.name} holds {elem}")
    for t in types[1:]:
        if t != elem:
            checker.fail(3, e, f"the value of {e.op} must have the element's type (no implicit "
                         "cast)", t, elem)
    if e.dtype != elem:
        checker.fail(3, e, f"{e.op} returns the element's old value", elem, e.dtype)
    return elem


def check_subgroup(checker, e, types) -> DataType:
    """The result type of the subgroup call `e` (argument types `types`), or a
    TypeCheckError."""
    op = e.op
    if op in ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups"):
        want = _INT32
    elif op == "subgroup_elect":
        want = _BOOL
    elif op in ("subgroup_all", "subgroup_any", "subgroup_ballot"):
        if types[0] != _BOOL:
            checker.fail(3, e, f"the predicate of {op} must be a scalar bool", types[0], _BOOL)
        want = _BALLOT if op == "subgroup_ballot" else _BOOL
    else:
        want = types[0]
        if want.is_handle:
            checker.fail(5, e, f"{op} needs a value operand", want)
        if len(types) == 2 and (types[1].lanes != 1 or types[1] not in (
                _INT32, DataType("uint", 32))):
            checker.fail(3, e, f"the lane, mask or delta of {op} must be a scalar int32",
                         types[1], _INT32)
        arithmetic = SUBGROUP_OPS[op][1] == "arithmetic"
        kind = op.split("_")[-1]
        if arithmetic and kind in ("add", "mul", "min", "max") and want.is_bool:
            checker.fail(3, e, f"{op} needs a numeric operand", want, _INT32)
        if arithmetic and kind in ("and", "or", "xor") and want.is_float:
            checker.fail(3, e, f"{op} needs an integer or bool operand", want,
                         _INT32.with_lanes(want.lanes))
    if e.dtype != want:
        checker.fail(3, e, f"{op} returns {want}", want, e.dtype)
    return want
