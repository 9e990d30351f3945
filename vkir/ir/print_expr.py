"""Expression half of the printer: IR expressions -> script text the parser reads back exactly.

A constant is printed as a bare Python literal only where the parser would give that literal the
same dtype (see vkir.script.builtins: literals take the other operand's dtype, else int32 / float32
/ bool); everywhere else it is spelled typed, `T.int64(5)`, `T.float16(1.0)`.
"""

from __future__ import annotations

import json
import keyword
import math
import re

from . import expr as E
from .dtype import DataType, PointerType
from .op import OPS, result_dtype

# Python precedence levels (higher binds tighter)
OR, AND, NOT, CMP, BOR, BXOR, BAND, SHIFT, ADD, MUL, UNARY, ATOM = range(1, 13)

_INFIX = {E.Add: ("+", ADD), E.Sub: ("-", ADD), E.Mul: ("*", MUL), E.Div: ("/", MUL),
          E.FloorDiv: ("//", MUL), E.FloorMod: ("%", MUL), E.And: ("and", AND), E.Or: ("or", OR)}
_CMP = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}
_FUNC = {E.Min: "min", E.Max: "max", E.Mod: "truncmod"}
_BITWISE = {"bitwise_and": ("&", BAND), "bitwise_or": ("|", BOR), "bitwise_xor": ("^", BXOR),
            "shift_left": ("<<", SHIFT), "shift_right": (">>", SHIFT)}
_DEFAULT = (DataType("int", 32), DataType("float", 32), DataType("bool", 1))
_RESERVED = set(keyword.kwlist) | {"T", "True", "False", "None"}


def is_const(e) -> bool:
    """True for an integer or float constant."""
    return isinstance(e, (E.IntImm, E.FloatImm))


def _can_be_bare(c) -> bool:
    return not (isinstance(c, E.FloatImm) and not math.isfinite(c.value))


class ExprPrinter:
    """Prints expressions; subclasses provide statement printing. Names are unique per print."""

    def __init__(self):
        self.names: dict = {}  # Var/Buffer -> name
        self.used: set[str] = set()
        self.data_owner: dict = {}  # data Var -> Buffer whose `.data` it is
        self.size_vars: set = set()
        self.in_annotation = False  # size vars print as "n" strings in parameter annotations

    # -- names ---------------------------------------------------------------------------------

    def fresh(self, obj, hint: str) -> str:
        """Give `obj` (being bound) a valid Python name based on `hint` that no visible binding
        uses (deterministic: `i`, `i_1`, ...). `release` frees it when the scope ends."""
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit():
            base = "v_" + base
        name, k = base, 0
        while name in self.used or name in _RESERVED:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.names[obj] = name
        return name

    def release(self, obj) -> None:
        """`obj`'s scope ended: a sibling scope may reuse its name."""
        self.used.discard(self.names.get(obj))

    def var_name(self, var: E.Var) -> str:
        """The printed name of `var`, given on first use."""
        return self.names.get(var) or self.fresh(var, var.name)

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, e, like: DataType | None = None) -> str:
        """Text of `e`. A constant prints bare when its dtype is `like` (or, with like None, the
        default dtype of its literal kind)."""
        return self.prec(e, like)[0]

    def prec(self, e, like=None) -> tuple[str, int]:
        """(text, precedence) of expression `e`; a constant prints bare when its dtype is `like`.
        """
        if is_const(e):
            return self.const(e, bare=_can_be_bare(e) and (e.dtype == like if like is not None
                                                            else e.dtype in _DEFAULT))
        method = getattr(self, "_e_" + type(e).__name__)
        return method(e)

    def const(self, c, bare: bool) -> tuple[str, int]:
        """(text, precedence) of a constant: a bare literal, or typed as `T.int64(3)`."""
        dt = c.dtype
        if dt.is_bool:
            text = "True" if c.value else "False"
        elif isinstance(c, E.FloatImm):
            text = repr(c.value) if math.isfinite(c.value) else f'"{c.value!r}"'
        else:
            text = str(c.value)
        if bare:
            return text, (UNARY if text.startswith("-") else ATOM)
        return f"T.{dt}({text})", ATOM

    def args(self, *values) -> list[str]:
        """Texts of values that the parser unifies (builtins.unify)."""
        return [text for text, _ in self.arg_pairs(*values)]

    def arg_pairs(self, *values) -> list[tuple[str, int]]:
        """(text, precedence) of values that the parser unifies (builtins.unify): literals take
        the first typed value's dtype; with no typed value, all-default literals stay bare."""
        typed = [v for v in values if not is_const(v)]
        if typed:
            like = typed[0].dtype
            return [self.prec(v, like) for v in values]
        first = values[0]
        if all(v.dtype == first.dtype and _can_be_bare(v) for v in values) \
                and first.dtype in _DEFAULT:
            return [self.prec(v) for v in values]
        return [self.const(first, False)] + [self.prec(v, first.dtype) for v in values[1:]]

    def _paren(self, pair, need: int) -> str:
        text, p = pair
        return text if p >= need else f"({text})"

    def _operands(self, e):
        """(text, precedence) of a binary node's operands under the unify rule."""
        return self.arg_pairs(e.a, e.b)

    def _binary(self, e):
        op, p = _INFIX[type(e)]
        a, b = self._operands(e)
        if isinstance(e, E.Sub) and _is_zero_like(e.a, e.b) and not is_const(e.b):
            return f"-{self._paren(b, UNARY)}", UNARY
        return f"{self._paren(a, p)} {op} {self._paren(b, p + 1)}", p

    _e_Add = _e_Sub = _e_Mul = _e_Div = _e_FloorDiv = _e_FloorMod = _e_And = _e_Or = _binary

    def _compare(self, e):
        a, b = self._operands(e)
        return f"{self._paren(a, CMP + 1)} {_CMP[type(e)]} {self._paren(b, CMP + 1)}", CMP

    _e_EQ = _e_NE = _e_LT = _e_LE = _e_GT = _e_GE = _compare

    def _func2(self, e):
        return f"T.{_FUNC[type(e)]}({', '.join(self.args(e.a, e.b))})", ATOM

    _e_Min = _e_Max = _e_Mod = _func2

    def _e_Not(self, e):
        return f"not {self._paren(self.prec(e.a), NOT)}", NOT

    def _e_Var(self, e):
        if isinstance(e.dtype, PointerType) and e in self.data_owner:
            return f"{self.names[self.data_owner[e]]}.data", ATOM
        if self.in_annotation and e in self.size_vars:
            if str(e.dtype) == "int32":
                return f'"{self.var_name(e)}"', ATOM
            return f'T.{e.dtype}("{self.var_name(e)}")', ATOM
        return self.var_name(e), ATOM

    def _e_Select(self, e):
        t, f = self.args(e.true_value, e.false_value)
        return f"T.select({self.expr(e.condition)}, {t}, {f})", ATOM

    def _e_Cast(self, e):
        return f'T.cast({self.expr(e.value)}, "{e.dtype}")', ATOM

    def _e_Ramp(self, e):
        base, stride = self.args(e.base, e.stride)
        return f"T.ramp({base}, {stride}, {e.lanes})", ATOM

    def _e_Broadcast(self, e):
        return f"T.broadcast({self.expr(e.value)}, {e.lanes})", ATOM

    def _e_Let(self, e):
        if e.var.dtype == e.value.dtype:
            value, extra = self.expr(e.value), ""
        else:
            value, extra = self.expr(e.value, e.var.dtype), f', dtype="{e.var.dtype}"'
        name = self.fresh(e.var, e.var.name)
        body = self.expr(e.body)
        self.release(e.var)
        return f"T.let({name} := {value}, {body}{extra})", ATOM

    def _e_Shuffle(self, e):
        vecs = ", ".join(self.expr(v) for v in e.vectors)
        return f"T.shuffle([{vecs}], [{', '.join(map(str, e.indices))}])", ATOM

    def _e_BufferLoad(self, e):
        return f"{self.names.get(e.buffer) or self.fresh(e.buffer, e.buffer.name)}" \
               f"[{self.indices(e.indices)}]", ATOM

    def _e_ImageLoad(self, e):
        return f"{self.var_name(e.image)}[{self.indices(e.indices)}]", ATOM

    def _e_ImageSample(self, e):
        lod = "" if e.lod is None else f", lod={self.expr(e.lod)}"
        return f"T.sample({self.var_name(e.texture)}, {self.expr(e.coords)}{lod})", ATOM

    def _e_ImageSize(self, e):
        return f"T.image_size({self.var_name(e.image)})", ATOM

    def indices(self, indices) -> str:
        """The text of a buffer access's indices (`()` for none)."""
        if not indices:
            return "()"
        return ", ".join(self.expr(i) for i in indices)

    def _sync_args(self, e) -> list[str]:
        """Arguments of an atomic or subgroup call, literals bare where the builder types them
        (an atomic's values after its element, lanes as int32, predicates as bool)."""
        return [self.expr(a, _sync_like(e, k)) for k, a in enumerate(e.args)]

    def _e_Call(self, e):
        info = OPS.get(e.op)
        if info is not None and len(e.args) == info.arity and (e.args or info.kind == "subgroup"):
            natural = result_dtype(e.op, e.args) if e.op != "reinterpret" else e.dtype
            if natural == e.dtype:
                if e.op == "reinterpret":
                    return f'T.reinterpret({self.expr(e.args[0])}, "{e.dtype}")', ATOM
                if e.op == "if_then_else":
                    t, f = self.args(e.args[1], e.args[2])
                    return f"T.if_then_else({self.expr(e.args[0])}, {t}, {f})", ATOM
                if info.kind in ("atomic", "subgroup"):  # builders type each argument
                    return f"T.{e.op}({', '.join(self._sync_args(e))})", ATOM
                if e.op == "bitwise_not" and not is_const(e.args[0]):
                    return f"~{self._paren(self.prec(e.args[0]), UNARY)}", UNARY
                pairs = self.arg_pairs(*e.args)
                if e.op in _BITWISE:
                    op, p = _BITWISE[e.op]
                    return f"{self._paren(pairs[0], p)} {op} {self._paren(pairs[1], p + 1)}", p
                return f"T.{e.op}({', '.join(t for t, _ in pairs)})", ATOM
        args = "".join(", " + self.expr(a) for a in e.args)
        return f'T.call("{e.dtype}", {quote(e.op)}{args})', ATOM


def _sync_like(e, k: int):
    """The dtype a literal argument `k` of atomic/subgroup call `e` takes in the script."""
    if OPS[e.op].kind == "atomic":
        return e.dtype if k else None
    if e.op in ("subgroup_all", "subgroup_any", "subgroup_ballot"):
        return DataType("bool", 1)
    return DataType("int", 32) if k == 1 else None


def quote(text: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(text)


def _is_zero_like(zero, other) -> bool:
    """Is `zero` the constant the parser makes for unary minus of `other` (0 of its dtype)?"""
    dt = other.dtype
    if dt.lanes > 1:
        if not (isinstance(zero, E.Broadcast) and zero.lanes == dt.lanes):
            return False
        zero = zero.value
        dt = dt.element_of()
    return is_const(zero) and zero.dtype == dt and zero.value == 0 and \
        math.copysign(1.0, zero.value) > 0
