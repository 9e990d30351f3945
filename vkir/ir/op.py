"""The intrinsics a `Call` may name, with arity and purity. The single table everyone consults."""

from __future__ import annotations

from dataclasses import dataclass

from .dtype import DataType


@dataclass(frozen=True, slots=True)
class OpInfo:
    """`arity` args; `pure` calls have no side effects (CSE may common them); `kind` groups them."""

    name: str
    arity: int
    pure: bool
    kind: str  # "math_float" | "bitwise" | "special"


def _ops():
    ops = {}
    for name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sin", "cos", "tan",
                 "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor",
                 "ceil", "round", "trunc", "erf", "sigmoid"):
        ops[name] = OpInfo(name, 1, True, "math_float")
    ops["fabs"] = OpInfo("fabs", 1, True, "math_abs")  # float or int absolute value
    ops["isnan"] = OpInfo("isnan", 1, True, "math_pred")
    ops["isinf"] = OpInfo("isinf", 1, True, "math_pred")
    for name in ("pow", "atan2", "fmod"):
        ops[name] = OpInfo(name, 2, True, "math_float")
    ops["fma"] = OpInfo("fma", 3, True, "math_float")
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
        ops[name] = OpInfo(name, 2, True, "bitwise")
    ops["bitwise_not"] = OpInfo("bitwise_not", 1, True, "bitwise")
    ops["reinterpret"] = OpInfo("reinterpret", 1, True, "special")
    # if_then_else evaluates only the taken side (unlike Select)
    ops["if_then_else"] = OpInfo("if_then_else", 3, True, "special")
    return ops


OPS: dict[str, OpInfo] = _ops()


def is_pure(op: str) -> bool:
    """True for a known side-effect-free intrinsic; unknown ops are treated as impure."""
    info = OPS.get(op)
    return info is not None and info.pure


def result_dtype(op: str, args) -> DataType:
    """The dtype `T.<op>(*args)` has when it is not spelled out: the script parser gives calls
    this dtype, and the printer writes `T.call` with an explicit dtype wherever it differs."""
    if op in ("isnan", "isinf"):
        return DataType("bool", 1, args[0].dtype.lanes)
    if op == "if_then_else":
        return args[1].dtype
    return args[0].dtype
