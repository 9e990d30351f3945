"""The expression builders behind `T.<name>(...)`, shared by the parser and programmatic use.

Each builder takes IR expressions or Python literals and returns IR. Python literals (int, float,
bool) take the dtype of the other typed operand (broadcast next to a vector); with no typed operand
they default to int32 / float32 / bool. A float literal never silently becomes an integer, and a
typed value never converts silently: builders reject misuse with `BuildError`, which the parser
turns into a ScriptError at the offending argument.
"""

from __future__ import annotations

import sys

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.op import ATOMIC_BINARY, OPS, SUBGROUP_OPS, result_dtype


class BuildError(ValueError):
    """A builder rejects its arguments; `arg` is the index of the offending one (or None)."""

    def __init__(self, message: str, arg: int | None = None):
        super().__init__(message)
        self.arg = arg


LITERAL_TYPES = (bool, int, float)

# The widest integer the script folds (a float64 holds integers up to 2**1024; beyond this a
# constant fits no vkir type, and folding it could take hours).
MAX_LITERAL_BITS = 2048


def int_text(value: int) -> str:
    """`value` in decimal, or a short description when it is too wide to print usefully (Python
    refuses to print integers of more than 4300 digits)."""
    if abs(value).bit_length() <= MAX_LITERAL_BITS:
        return str(value)
    return f"{'-' if value < 0 else ''}<an integer of {abs(value).bit_length()} bits>"


def is_literal(value) -> bool:
    """True for a Python bool, int or float (a value the script may use untyped)."""
    return isinstance(value, LITERAL_TYPES)


def parse_dtype(value, arg: int | None = None) -> DataType:
    """A dtype from a string like "float32x4" (or a DataType)."""
    if isinstance(value, DataType):
        return value
    if not isinstance(value, str):
        raise BuildError(f"expected a dtype string such as \"float32\", got {_describe(value)}",
                         arg)
    try:
        return DataType.parse(value)
    except ValueError as exc:
        raise BuildError(str(exc), arg) from None


def default_dtype(value) -> DataType:
    """The type a literal takes with no typed operand beside it: bool, int32 or float32."""
    if isinstance(value, bool):
        return DataType("bool", 1)
    if isinstance(value, int):
        return DataType("int", 32)
    return DataType("float", 32)


def literal_as(value, dtype: DataType, arg: int | None = None) -> E.PrimExpr:
    """The Python literal `value` as a constant of `dtype` (a Broadcast for a vector dtype)."""
    if dtype.is_handle:
        raise BuildError(f"literal {_describe(value)} cannot be used with a handle operand", arg)
    elem = dtype.element_of()
    if isinstance(value, bool):
        if not elem.is_bool:
            raise BuildError(f"bool literal {value!r} used where a value of type {dtype} is "
                             f"expected; write T.cast({value!r}, \"{elem}\")", arg)
    elif isinstance(value, float):
        if not elem.is_float:
            raise BuildError(f"float literal {value!r} used where a value of type {dtype} is "
                             f"expected; use an integer literal or T.cast", arg)
    elif elem.is_integer:
        lo, hi = ((-(1 << (elem.bits - 1)), (1 << (elem.bits - 1)) - 1) if elem.is_int
                  else (0, (1 << elem.bits) - 1))
        if not lo <= value <= hi:
            raise BuildError(f"integer literal {int_text(value)} is out of range for {elem}", arg)
    elif elem.is_bool and value not in (0, 1):
        raise BuildError(f"integer literal {int_text(value)} used where a bool is expected", arg)
    elif elem.is_float and abs(value) > sys.float_info.max:  # float(value) would overflow
        raise BuildError(f"integer literal {int_text(value)} is out of range for {elem}", arg)
    return E.const(value, dtype)


def to_expr(value, arg: int | None = None, allow_pointer: bool = False) -> E.PrimExpr:
    """An IR expression from an expression or a literal (literals get their default dtype). A
    buffer's data pointer is a value only where `allow_pointer` (T.evaluate, T.call)."""
    if isinstance(value, E.PrimExpr):
        if getattr(value.dtype, "texel", None) is not None:
            raise BuildError(f"{value.dtype.kind} '{value.name}' is not a value: index it, "
                             f"sample it (T.sample) or measure it (T.image_size)", arg)
        if not allow_pointer and not isinstance(value.dtype, DataType):
            raise BuildError(f"a buffer's data pointer ({value.dtype}) cannot be used as a value "
                             f"here", arg)
        return value
    if is_literal(value):
        return literal_as(value, default_dtype(value), arg)
    raise BuildError(f"expected an expression, got {_describe(value)}", arg)


def unify(*values) -> list[E.PrimExpr]:
    """Convert literals among `values` to the dtype of the first typed value (see module doc)."""
    for i, v in enumerate(values):
        if isinstance(v, E.PrimExpr):
            to_expr(v, i)  # rejects pointers
    like = next((v.dtype for v in values if isinstance(v, E.PrimExpr)), None)
    if like is None:
        if any(isinstance(v, float) for v in values) and \
                not any(isinstance(v, bool) for v in values):
            like = DataType("float", 32)
        else:
            return [to_expr(v, i) for i, v in enumerate(values)]
    out = []
    for i, v in enumerate(values):
        if isinstance(v, E.PrimExpr):
            out.append(v)
        elif is_literal(v):
            out.append(literal_as(v, like, i))
        else:
            raise BuildError(f"expected an expression, got {_describe(v)}", i)
    return out


def binary(cls, a, b, *, span=None) -> E.PrimExpr:
    """`cls(a, b)` with literal operands typed after the other operand."""
    a, b = unify(a, b)
    return cls(a, b, span=span)


def _int_arg(value, what: str, arg: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BuildError(f"{what} must be a Python integer literal, got {_describe(value)}", arg)
    return value


def _describe(value) -> str:
    if isinstance(value, E.PrimExpr):
        return f"an expression of type {value.dtype}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, int) and not isinstance(value, bool):
        return int_text(value)
    return repr(value)


# ----------------------------------------------------------------------------------------------
# builders exposed as T.<name>


def cast(value, dtype, *, span=None):
    """T.cast(value, dtype): a value conversion."""
    return E.Cast(parse_dtype(dtype, 1), to_expr(value, 0), span=span)


def reinterpret(value, dtype, *, span=None):
    """T.reinterpret(value, dtype): the same bits read as another type."""
    return E.Call(parse_dtype(dtype, 1), "reinterpret", (to_expr(value, 0),), span=span)


def ramp(base, stride, lanes, *, span=None):
    """T.ramp(base, stride, lanes): [base, base + stride, ...]."""
    lanes = _int_arg(lanes, "lanes", 2)
    if lanes < 1:
        raise BuildError("lanes must be positive", 2)
    base, stride = unify(base, stride)
    return E.Ramp(base, stride, lanes, span=span)


def broadcast(value, lanes, *, span=None):
    """T.broadcast(value, lanes): the value repeated in every lane."""
    lanes = _int_arg(lanes, "lanes", 1)
    if lanes < 1:
        raise BuildError("lanes must be positive", 1)
    return E.Broadcast(to_expr(value, 0), lanes, span=span)


def select(condition, true_value, false_value, *, span=None):
    """T.select(condition, a, b): both sides evaluated, one chosen."""
    t, f = _unify_from(1, true_value, false_value)
    return E.Select(to_expr(condition, 0), t, f, span=span)


def if_then_else(condition, true_value, false_value, *, span=None):
    """T.if_then_else(condition, a, b): only the chosen side evaluated."""
    t, f = _unify_from(1, true_value, false_value)
    return E.Call(t.dtype, "if_then_else", (to_expr(condition, 0), t, f), span=span)


def _unify_from(first: int, *values):
    try:
        return unify(*values)
    except BuildError as exc:
        raise BuildError(str(exc), None if exc.arg is None else exc.arg + first) from None


def min(a, b, *, span=None):  # noqa: A001 - T.min
    """T.min(a, b)."""
    return binary(E.Min, a, b, span=span)


def max(a, b, *, span=None):  # noqa: A001 - T.max
    """T.max(a, b)."""
    return binary(E.Max, a, b, span=span)


def truncdiv(a, b, *, span=None):
    """T.truncdiv(a, b): division rounding toward zero."""
    return binary(E.Div, a, b, span=span)


def truncmod(a, b, *, span=None):
    """T.truncmod(a, b): the remainder of truncdiv (the sign of a)."""
    return binary(E.Mod, a, b, span=span)


def floordiv(a, b, *, span=None):
    """T.floordiv(a, b): `a // b`."""
    return binary(E.FloorDiv, a, b, span=span)


def floormod(a, b, *, span=None):
    """T.floormod(a, b): `a % b`."""
    return binary(E.FloorMod, a, b, span=span)


def shuffle(vectors, indices, *, span=None):
    """T.shuffle([vectors], [indices]): lanes picked from the concatenated vectors."""
    if not isinstance(vectors, (list, tuple)) or not vectors:
        raise BuildError("expected a non-empty list of vectors", 0)
    if not isinstance(indices, (list, tuple)) or not indices:
        raise BuildError("expected a non-empty list of lane indices", 1)
    vecs = tuple(to_expr(v, 0) for v in vectors)
    idx = tuple(_int_arg(i, "a shuffle index", 1) for i in indices)
    return E.Shuffle(vecs, idx, span=span)


def call(dtype, op, *args, span=None):
    """T.call(dtype, op, *args): any intrinsic call with an explicit result dtype."""
    if not isinstance(op, str):
        raise BuildError("the op name must be a string", 1)
    values = tuple(to_expr(a, i + 2, allow_pointer=True) for i, a in enumerate(args))
    return E.Call(parse_dtype(dtype, 0), op, values, span=span)


def intrinsic(op: str, *args, span=None) -> E.PrimExpr:
    """Call of a known op (T.exp, T.pow, T.bitwise_and, ...); dtype from the typed arguments."""
    info = OPS[op]
    if len(args) != info.arity:
        raise BuildError(f"takes {info.arity} argument{'s' * (info.arity != 1)}, "
                         f"got {len(args)}")
    values = unify(*args)
    return E.Call(result_dtype(op, values), op, tuple(values), span=span)


def typed_const(dtype: str, value, *, span=None) -> E.PrimExpr:
    """T.float32(1.5), T.int64(3), T.bool(True), T.float32("inf")."""
    dt = parse_dtype(dtype)
    if isinstance(value, str):
        if not dt.is_float or value not in ("inf", "-inf", "nan"):
            raise BuildError(f"expected a number, got {value!r}", 0)
        value = float(value)
    if not is_literal(value):
        raise BuildError(f"expected a literal; to convert an expression write "
                         f"T.cast(value, \"{dtype}\")", 0)
    if dt.is_float and isinstance(value, bool):
        raise BuildError(f"expected a number, got {value!r}", 0)
    if dt.is_integer and isinstance(value, float):
        if not value.is_integer():
            raise BuildError(f"expected an integer, got {value!r}", 0)
        value = int(value)
    if dt.is_bool and not isinstance(value, bool) and value not in (0, 1):
        raise BuildError(f"expected True or False, got {_describe(value)}", 0)
    if dt.is_bool:
        value = bool(value)
    if dt.is_integer and isinstance(value, bool):
        value = int(value)
    out = literal_as(value, dt, 0)
    return out if span is None else _with_span(out, span)


def _with_span(node, span):
    from dataclasses import replace

    return replace(node, span=span)


# ----------------------------------------------------------------------------------------------
# atomics and subgroup operations

_INT32 = DataType("int", 32)
_BOOL = DataType("bool", 1)
_SUBGROUP_LANE_ARG = ("subgroup_broadcast", "subgroup_shuffle", "subgroup_shuffle_xor",
                      "subgroup_shuffle_up", "subgroup_shuffle_down")


def atomic(op: str, element, *values, span=None) -> E.PrimExpr:
    """`T.atomic_<op>(A[i], v)` / `T.atomic_compare_exchange(A[i], expected, desired)`: a Call
    whose first argument is the BufferLoad of the updated element; literal values take the
    element's dtype. The result is the element's old value."""
    from ..ir.image import ImageLoad

    if not isinstance(element, (E.BufferLoad, ImageLoad)):
        raise BuildError(f"the first argument must be a buffer element such as A[i] (or a "
                         f"texel of an r32ui/r32i image), got {_describe(element)}", 0)
    want = 2 if op == "atomic_compare_exchange" else 1
    if len(values) != want:
        raise BuildError(f"takes {want + 1} arguments, got {len(values) + 1}")
    # an image atomic updates the texel's one channel: its type is the lane type
    dtype = element.dtype.element_of() if isinstance(element, ImageLoad) else element.dtype
    typed = []
    for i, v in enumerate(values):
        typed.append(literal_as(v, dtype, i + 1) if is_literal(v) else to_expr(v, i + 1))
    return E.Call(dtype, op, (element, *typed), span=span)


def subgroup(op: str, *args, span=None) -> E.PrimExpr:
    """`T.subgroup_<op>(...)`: predicates are bool, lanes/masks/deltas int32 (literals take those
    types), other operands keep their own dtype."""
    arity = SUBGROUP_OPS[op][0]
    if len(args) != arity:
        raise BuildError(f"takes {arity} argument{'s' * (arity != 1)}, got {len(args)}")
    values = []
    for i, a in enumerate(args):
        if op in ("subgroup_all", "subgroup_any", "subgroup_ballot"):
            values.append(literal_as(a, _BOOL, i) if is_literal(a) else to_expr(a, i))
        elif i == 1:  # the lane, mask or delta of a broadcast or shuffle
            values.append(literal_as(a, _INT32, i) if is_literal(a) else to_expr(a, i))
        else:
            values.append(to_expr(a, i))
    return E.Call(result_dtype(op, values), op, tuple(values), span=span)


def _atomic_builder(op: str):
    def build(element, *values, span=None):
        return atomic(op, element, *values, span=span)
    build.__name__ = op
    build.__doc__ = f"T.{op}: see `atomic`."
    return build


def _subgroup_builder(op: str):
    def build(*args, span=None):
        return subgroup(op, *args, span=span)
    build.__name__ = op
    build.__doc__ = f"T.{op}: see `subgroup`."
    return build


EXPR_BUILDERS = {
    "cast": cast, "reinterpret": reinterpret, "ramp": ramp, "broadcast": broadcast,
    "select": select, "if_then_else": if_then_else, "min": min, "max": max,
    "truncdiv": truncdiv, "truncmod": truncmod, "floordiv": floordiv, "floormod": floormod,
    "shuffle": shuffle, "call": call,
    **{op: _atomic_builder(op) for op in (*ATOMIC_BINARY, "atomic_compare_exchange")},
    **{op: _subgroup_builder(op) for op in SUBGROUP_OPS},
}
"""Builders by T name; every op of vkir.ir.op.OPS not listed here is `intrinsic(op, ...)`."""
