"""The intrinsic table: every pure math and bitwise intrinsic, declared once with what each layer
needs to handle it (its type rule, its interpreter function, its C translation for native loops,
its SPIR-V, its 8-bit emulation rule and its TVM names).

Every layer reads this table instead of keeping a list of its own: vkir.ir.op derives `OPS` (and
so the script's `T.<name>` and the printer) from it, the checker applies `type_rule`, the
interpreter `interp`, native loops `c`, codegen `spirv`, EmulateInt8 `emulation` and the TVM
importer `tvm`. Where a layer needs code of its own for an intrinsic, the row says `OWN` and the
layer registers that code under the intrinsic's name; tests/test_intrinsic_table.py fails when a
layer lacks an entry for a row (or keeps one for a name the table does not have).

Atomics and subgroup operations are Calls too, but they are impure and handled as families
(vkir.ir.op lists them); they are not rows here.
"""

from __future__ import annotations

from dataclasses import dataclass

OWN = "own"
"""A layer's spec for an intrinsic it implements with code of its own, registered by name."""

TYPE_RULES = {
    "float": "float operands of one type; the result has their type",
    "numeric": "one float or integer operand; the result has its type",
    "float_predicate": "one float operand; the result is bool with its lanes",
    "integer": "integer operands of one type; the result has their type",
    "shift": "as integer; a constant amount must lie in [0, bits)",
    "reinterpret": "the same total bit width, numeric types",
    "if_then_else": "a bool condition (scalar or of the branches' lanes), branches of one type",
}
"""The checker's rules for intrinsic calls (vkir.analysis.type_checker implements each)."""

EMULATION_RULES = {
    "float_only": "never has an 8-bit operand or result (float or bool types only)",
    "wrap": "computed in 32 bits on the held value, the result wrapped back to 8 bits",
    "in_range": "computed in 32 bits; in-range operands give an in-range result (no wrap)",
    "shift_wrap": "the amount taken modulo 8, then shifted and wrapped",
    "shift_in_range": "the amount taken modulo 8, then shifted (no wrap)",
    "count_bits": "counts the byte's bits: the operand masked to its low 8 bits",
    "count_leading": "counts from the byte's top: the byte moved to bits 24-31 over a stop bit "
                     "at bit 23",
    "count_trailing": "counts from the byte's bottom: the operand masked to its low 8 bits "
                      "under a stop bit at bit 8",
    "refused": "no emulation: UnsupportedError naming the intrinsic",
}
"""How EmulateInt8 computes an intrinsic whose 8-bit values it holds in 32 bits (an int8 value
sign-extended, a uint8 value zero-extended)."""


@dataclass(frozen=True, slots=True)
class Glsl:
    """A GLSL.std.450 instruction on float operands; `float64`: it also takes 64-bit floats."""

    name: str
    float64: bool = False


@dataclass(frozen=True, slots=True)
class CoreOp:
    """A core SPIR-V instruction taking the call's operands as they are."""

    name: str


@dataclass(frozen=True, slots=True)
class CExpr:
    """A C expression for one lane, on operands of `operands` ("float" or "integer") that all have
    the result's type (or, for a predicate, a float operand). `{0}`, `{1}`, ... are the operand
    lanes; `$T` is the result's C type, `$U` its unsigned twin, `$B` its bit width, `$W` the type
    floats compute in (float for float16/float32, double for float64) and `$f` the libm suffix
    of `$W` ("f" or "")."""

    template: str
    operands: str


@dataclass(frozen=True, slots=True)
class NotTranslated:
    """Native loops do not translate it (the loop stays in Python), for the reason given."""

    why: str


_LIBM_BITS = NotTranslated("libm's last bit differs from numpy's")


@dataclass(frozen=True, slots=True)
class Tvm:
    """The TVM intrinsics (`tir.<op>` without the prefix) and C extern functions
    (`call_pure_extern`) that import as this intrinsic; both empty when TVM has none."""

    ops: tuple[str, ...] = ()
    externs: tuple[str, ...] = ()


def _libm(name: str, *extra: str) -> tuple[str, ...]:
    """The float and double spellings of a C math library function, and `extra` spellings."""
    return (name, name + "f", *extra)


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """One row of the table: every field but `commutative` is required, so a row states each
    layer's handling."""

    name: str
    arity: int
    type_rule: str      # a key of TYPE_RULES
    interp: str         # numpy function name (np.<interp>), or OWN (vkir.interpreter)
    c: object           # CExpr, NotTranslated, or OWN (vkir.interpreter.loop_to_c)
    spirv: object       # Glsl, CoreOp, or OWN (spirv.codegen.intrinsics)
    emulation: str      # a key of EMULATION_RULES
    tvm: Tvm
    doc: str
    commutative: bool = False   # its operands may be swapped (CSE keys sort them)

    def __post_init__(self):
        assert self.type_rule in TYPE_RULES, self
        assert self.emulation in EMULATION_RULES, self
        assert self.interp == OWN or self.interp.isidentifier(), self
        assert self.c == OWN or isinstance(self.c, (CExpr, NotTranslated)), self
        assert self.spirv == OWN or isinstance(self.spirv, (Glsl, CoreOp)), self


def _float(name, glsl, *, interp=None, float64=False, c=_LIBM_BITS, arity=1, extra=(),
           tvm=None, doc=""):
    """A float math row whose SPIR-V is the GLSL.std.450 instruction `glsl` (OWN if None)."""
    return Intrinsic(name, arity, "float", interp or name, c,
                     OWN if glsl is None else Glsl(glsl, float64), "float_only",
                     tvm or Tvm((name,), _libm(name, *extra)), doc or f"{name}(x)")


def _libm_c(fn: str, arity: int = 1) -> CExpr:
    """A libm function computed in $W and rounded to the result type, as numpy computes it."""
    args = ", ".join(f"($W)({{{k}}})" for k in range(arity))
    return CExpr(f"(($T){fn}$f({args}))", "float")


def _bitwise(name, op, spirv, emulation, tvm=None):
    return Intrinsic(name, 2 if op != "~" else 1, "integer", interp=name if op != "~" else "invert",
                     c=CExpr(f"(($T)(({{0}}) {op} ({{1}})))" if op != "~" else "(($T)~({0}))",
                             "integer"),
                     spirv=CoreOp(spirv), emulation=emulation, tvm=tvm or Tvm((name,)),
                     doc=f"bitwise {name.removeprefix('bitwise_')}", commutative=op != "~")


def _rows():
    rows = [
        _float("exp", "Exp", extra=("__expf",)),
        _float("exp2", "Exp2"),
        _float("log", "Log"),
        _float("log2", "Log2"),
        _float("sqrt", "Sqrt", float64=True, c=_libm_c("sqrt")),
        _float("rsqrt", "InverseSqrt", interp=OWN, float64=True,
               tvm=Tvm(("rsqrt",), ("rsqrtf",)), doc="1 / sqrt(x)"),
        _float("tanh", None, doc="tanh(x); sign(x) where |x| > 10 (drivers' tanh overflows)"),
        _float("sin", "Sin"), _float("cos", "Cos"), _float("tan", "Tan"),
        _float("asin", "Asin", interp="arcsin"), _float("acos", "Acos", interp="arccos"),
        _float("atan", "Atan", interp="arctan"), _float("sinh", "Sinh"), _float("cosh", "Cosh"),
        _float("asinh", "Asinh", interp="arcsinh"), _float("acosh", "Acosh", interp="arccosh"),
        _float("atanh", "Atanh", interp="arctanh"),
        _float("floor", "Floor", float64=True, c=_libm_c("floor")),
        _float("ceil", "Ceil", float64=True, c=_libm_c("ceil")),
        _float("round", "RoundEven", interp="rint", float64=True, c=_libm_c("rint"),
               tvm=Tvm(("round", "nearbyint"), _libm("round", "nearbyint", "nearbyintf")),
               doc="round half to even"),
        _float("trunc", "Trunc", float64=True, c=_libm_c("trunc")),
        _float("erf", None, interp=OWN, doc="erf(x) (Abramowitz-Stegun 7.1.26 on devices)"),
        _float("sigmoid", None, interp=OWN, tvm=Tvm(("sigmoid",)), doc="1 / (1 + exp(-x))"),
        _float("pow", "Pow", interp="power", arity=2, tvm=Tvm(("pow", "power"), _libm("pow"))),
        _float("atan2", "Atan2", interp="arctan2", arity=2),
        _float("fmod", None, arity=2, c=_libm_c("fmod", 2),
               doc="C's fmod (exact on devices, not OpFRem)"),
        _float("fma", "Fma", interp=OWN, float64=True, arity=3,
               c=CExpr("(($T)((double)({0}) * (double)({1}) + (double)({2})))", "float"),
               doc="a * b + c rounded once"),
        Intrinsic("fabs", 1, "numeric", "abs", CExpr("(($T)fabs$f(($W)({0})))", "float"), OWN,
                  "wrap", Tvm(("fabs", "abs"), _libm("fabs")),
                  "absolute value (integers wrap: fabs(int8 -128) is -128)"),
        Intrinsic("isnan", 1, "float_predicate", "isnan",
                  CExpr("((uint8_t)(isnan((double)({0})) != 0))", "float"), CoreOp("OpIsNan"),
                  "float_only", Tvm(("isnan",)), "x is NaN"),
        Intrinsic("isinf", 1, "float_predicate", "isinf",
                  CExpr("((uint8_t)(isinf((double)({0})) != 0))", "float"), CoreOp("OpIsInf"),
                  "float_only", Tvm(("isinf",)), "x is infinite"),
        _bitwise("bitwise_and", "&", "OpBitwiseAnd", "in_range"),
        _bitwise("bitwise_or", "|", "OpBitwiseOr", "in_range"),
        _bitwise("bitwise_xor", "^", "OpBitwiseXor", "in_range"),
        _bitwise("bitwise_not", "~", "OpNot", "in_range"),
        Intrinsic("shift_left", 2, "shift", OWN,
                  CExpr("(($T)(($U)({0}) << (({1}) & ($B - 1))))", "integer"), OWN, "shift_wrap",
                  Tvm(("shift_left",)), "x << (s mod bits)"),
        Intrinsic("shift_right", 2, "shift", OWN,
                  CExpr("(($T)(({0}) >> (({1}) & ($B - 1))))", "integer"), OWN,
                  "shift_in_range", Tvm(("shift_right",)),
                  "x >> (s mod bits), arithmetic on signed types"),
        Intrinsic("popcount", 1, "integer", OWN,
                  CExpr("(($T)__builtin_popcountll((uint64_t)($U)({0})))", "integer"), OWN,
                  "count_bits", Tvm(("popcount",)), "the number of 1 bits of x in its width"),
        Intrinsic("clz", 1, "integer", OWN,
                  CExpr("(($T)(($U)({0}) == 0 ? $B : "
                        "__builtin_clzll((uint64_t)($U)({0})) - (64 - $B)))", "integer"),
                  OWN, "count_leading", Tvm(("clz",)),
                  "the number of leading 0 bits of x in its width (the width for 0)"),
        Intrinsic("ctz", 1, "integer", OWN,
                  CExpr("(($T)(($U)({0}) == 0 ? $B : __builtin_ctzll((uint64_t)($U)({0}))))",
                        "integer"),
                  OWN, "count_trailing", Tvm(),
                  "the number of trailing 0 bits of x (the width for 0)"),
        Intrinsic("reinterpret", 1, "reinterpret", OWN, NotTranslated("bit casts"), OWN,
                  "refused", Tvm(("reinterpret",)), "the same bits read as another type"),
        Intrinsic("if_then_else", 3, "if_then_else", OWN, OWN, OWN, "in_range",
                  Tvm(("if_then_else",)), "c ? a : b, evaluating only the taken side"),
    ]
    table = {row.name: row for row in rows}
    assert len(table) == len(rows), "an intrinsic is declared twice"
    return table


INTRINSICS: dict[str, Intrinsic] = _rows()
"""The pure intrinsics by name, in the order above."""

BIT_COUNTS = ("popcount", "clz", "ctz")
"""The bit-counting intrinsics: counted in the operand's own width, whatever its sign."""
assert set(BIT_COUNTS) <= set(INTRINSICS)
