"""Expressions of an interpreter loop as C (the loop and its statements: loop_to_c.py).

An expression of L lanes becomes L C expressions, one per lane, after the C statements it needs
first (`pre`). Integer arithmetic wraps at its width, division and min/max follow numeric.py
(helpers without C's undefined behaviour), float16 computes in float and rounds after each
operation, float-to-int casts saturate, and each intrinsic is its row's C template in the
intrinsic table (vkir.ir.intrinsics), filled in for the operand type: every one gives numpy's
result bit for bit. Anything else raises `NotTranslatable`.
"""

from __future__ import annotations

import re

import numpy as np

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.intrinsics import INTRINSICS, CExpr


class NotTranslatable(Exception):
    """The loop uses something the C translation does not cover (the loop stays in Python)."""


_C_TYPES = {("int", 8): "int8_t", ("int", 16): "int16_t", ("int", 32): "int32_t",
            ("int", 64): "int64_t", ("uint", 8): "uint8_t", ("uint", 16): "uint16_t",
            ("uint", 32): "uint32_t", ("uint", 64): "uint64_t", ("float", 16): "_Float16",
            ("float", 32): "float", ("float", 64): "double", ("bool", 1): "uint8_t"}


_ARITH = {"Add": "+", "Sub": "-", "Mul": "*"}
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
OWN_CALLS = frozenset({"if_then_else"})
"""The intrinsic table's rows whose C translation (`c=OWN`) is code of its own here."""
_OPERAND = re.compile(r"\{(\d)\}")


def _c_operands_fit(row, e) -> bool:
    """Whether the call's operand types are those its C template (`row.c`) is written for."""
    if row.c.operands == "float":
        same = row.type_rule == "float_predicate" or all(a.dtype == e.dtype for a in e.args)
        return same and all(a.dtype.is_float for a in e.args)
    return e.dtype.code in ("int", "uint") and all(a.dtype == e.dtype for a in e.args)


def _c_template(template: str, ctype: str, bits: int) -> str:
    """A CExpr template of the intrinsic table with the result's C type filled in."""
    unsigned = ctype if ctype.startswith("u") or not ctype.endswith("_t") else "u" + ctype
    wide, suffix = ("double", "") if ctype == "double" else ("float", "f")
    return (template.replace("$T", ctype).replace("$U", unsigned).replace("$B", str(bits))
            .replace("$W", wide).replace("$f", suffix))


def lane_type(dt: DataType) -> str:
    """The C type of one lane of `dt` (NotTranslatable for handles)."""
    if not isinstance(dt, DataType):
        raise NotTranslatable(f"type {dt}")
    name = _C_TYPES.get((dt.code, dt.bits))
    if name is None:
        raise NotTranslatable(f"type {dt}")
    return name


def scalar_type(dt: DataType) -> str:
    """The C type of a scalar `dt` (NotTranslatable for vectors too)."""
    if isinstance(dt, DataType) and dt.lanes != 1:
        raise NotTranslatable(f"vector {dt} where a scalar is needed")
    return lane_type(dt)


class CExprMixin:
    """The expression half of the loop translator (mixed into loop_to_c's): `expr(e)` gives the
    C lanes of `e`; variables, buffer accesses and the statements it needs first go through the
    translator's state (`pre`, `temp`, `var`, `layout`, `positions`, `accesses`)."""

    def expr(self, e) -> list:
        """The C expressions of `e`, one per lane (statements it needs go to `pre` first)."""
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.binary(e)
            raise NotTranslatable(type(e).__name__)
        return method(e)

    def e_Var(self, e):
        """A variable's lanes: its C name, or the value bound outside the loop."""
        return self.var(e)

    def e_IntImm(self, e):
        """An integer literal of the constant's type."""
        return [literal(e.value, e.dtype)]

    def e_FloatImm(self, e):
        """A float literal, exact (hexadecimal) in the constant's type."""
        return [literal(e.value, e.dtype)]

    def e_Not(self, e):
        """Logical not of each bool lane (0 or 1)."""
        return [f"((uint8_t)!({a}))" for a in self.expr(e.a)]

    def e_Select(self, e):
        """Per lane the true or the false value, both evaluated as the interpreter does."""
        return self.select(lane_type(e.dtype), self.expr(e.condition),
                           self.expr(e.true_value), self.expr(e.false_value))

    def select(self, ctype: str, conds: list, t: list, f: list) -> list:
        """Per lane, `t` where the condition holds else `f`, both evaluated (a function call
        evaluates every argument); one condition serves every lane."""
        name = self.helper(f"select_{_tag(ctype)}",
                           f"static inline {ctype} select_{_tag(ctype)}(uint8_t c, {ctype} t, "
                           f"{ctype} f) {{ return c ? t : f; }}")
        if len(conds) == 1 and len(t) > 1:
            conds = [self.temp("uint8_t", conds[0])] * len(t)
        return [f"{name}({c}, {x}, {y})" for c, x, y in zip(conds, t, f)]

    def e_Cast(self, e):
        """A value conversion per lane, with the interpreter's saturating float-to-int rule."""
        if e.value.dtype.lanes != e.dtype.lanes:
            raise NotTranslatable("cast changing lanes")
        return [self.cast(v, e.value.dtype, e.dtype) for v in self.expr(e.value)]

    def e_Ramp(self, e):
        """base + k * stride for each lane k, in the type's wrapping arithmetic."""
        dt = e.base.dtype
        if dt.code not in ("int", "uint") or dt.lanes != 1:
            raise NotTranslatable("ramp type")
        ctype = lane_type(dt)
        utype = ctype if dt.code == "uint" else "u" + ctype
        wide = "uint32_t" if dt.bits < 32 else utype
        (base,), (stride,) = self.expr(e.base), self.expr(e.stride)
        base, stride = self.temp(ctype, base), self.temp(ctype, stride)
        return [f"(({ctype})(({wide})({base}) + ({wide})({stride}) * ({wide}){j}))"
                for j in range(e.lanes)]

    def e_Broadcast(self, e):
        """One value, bound once, repeated in every lane."""
        (value,) = self.expr(e.value)
        return [self.temp(lane_type(e.value.dtype), value)] * e.lanes

    def e_Shuffle(self, e):
        """The picked lanes of the concatenated vectors (every lane evaluated)."""
        # every lane is evaluated (the interpreter computes whole vectors), each once
        lanes = [self.temp(lane_type(v.dtype), x) for v in e.vectors for x in self.expr(v)]
        return [lanes[i] for i in e.indices]

    def e_Let(self, e):
        """The body with the value bound once to a C variable per lane."""
        values = self.expr(e.value)
        ctype = lane_type(e.var.dtype)
        outer = self.names.get(e.var)
        names = self.bind(e.var)
        self.pre.extend(f"const {ctype} {n} = {v};" for n, v in zip(names, values))
        body = self.expr(e.body)
        self._unbind(e.var, outer)
        return body

    def e_BufferLoad(self, e):
        """A bounds-checked read per lane (bools read as truth: nonzero is true)."""
        array, layout = self.layout(e.buffer)
        ctype = lane_type(e.buffer.dtype)
        positions, ok = self.positions(layout, e.indices, e.buffer.dtype.lanes)

        def read(p):   # a bool byte is true when nonzero, as numpy and the devices take it
            return f"((uint8_t)({array}[{p}] != 0))" if e.buffer.dtype.is_bool \
                else f"{array}[{p}]"
        if e.buffer in self.inner:
            return [f"({ok} ? {read(p)} : (fail = 1, ({ctype})0))" for p in positions]
        n = self.buffers[e.buffer]
        site = len(self.accesses)
        self.accesses.append(("read", e))
        # a read of memory the race checker tracks goes to the log (a full log fails the loop)
        return [f"({ok} ? ((trk{n} && record(log, &nlog, cap, {site}, k, row{n} + {p}) "
                f"? (fail = 1) : 0), {read(p)}) : (fail = 1, ({ctype})0))"
                for p in positions]

    def e_Call(self, e):
        """An intrinsic from its C template in the intrinsic table, or NotTranslatable."""
        op = e.op
        args = e.args
        ctype = lane_type(e.dtype)
        lanes = e.dtype.lanes
        if op in OWN_CALLS and len(args) == 3:   # if_then_else
            conds = self.expr(args[0])
            (tpre, t), (fpre, f) = self.apart(args[1]), self.apart(args[2])
            if len(conds) != 1:   # lane-wise: both sides, as the interpreter
                self.pre.extend(tpre + fpre)
                return self.select(ctype, conds, t, f)
            # one side per invocation, with the statements it needs
            cond = conds[0] if len(t) == 1 and not (tpre or fpre) else \
                self.temp("uint8_t", conds[0])
            if not (tpre or fpre):
                return [f"(({cond}) ? ({x}) : ({y}))" for x, y in zip(t, f)]
            names = [self.fresh("r") for _ in t]
            self.pre.append(f"{ctype} {', '.join(names)};")
            self.pre.append(
                f"if ({cond}) {{ " + " ".join(tpre + [f"{r} = {x};" for r, x in zip(names, t)])
                + " } else { " + " ".join(fpre + [f"{r} = {y};" for r, y in zip(names, f)])
                + " }")
            return names
        if any(a.dtype.lanes != lanes for a in args):
            raise NotTranslatable(f"call {op} lanes")
        row = INTRINSICS.get(op)
        spec = row.c if row is not None else None
        if not isinstance(spec, CExpr) or len(args) != row.arity or not _c_operands_fit(row, e):
            raise NotTranslatable(f"call {op}")
        columns = list(zip(*(self.expr(a) for a in args)))
        text = _c_template(spec.template, ctype, e.dtype.bits)
        shared = [k for k in range(len(args)) if text.count(f"{{{k}}}") > 1]
        out = []
        for column in columns:   # an operand used twice is evaluated once
            xs = [self.temp(lane_type(args[k].dtype), x) if k in shared else x
                  for k, x in enumerate(column)]
            out.append(_OPERAND.sub(lambda m: xs[int(m.group(1))], text))
        return out

    # -- arithmetic ------------------------------------------------------------------------------

    def binary(self, e) -> list:
        """A binary operator per lane with numeric.py's rules: wrapping integers, helpers for
        division and remainder, comparisons and logic on 0/1 bytes."""
        op = type(e).__name__
        dt = e.a.dtype
        if e.b.dtype != dt:
            raise NotTranslatable("mixed operand types")
        ctype = lane_type(dt)
        pairs = list(zip(self.expr(e.a), self.expr(e.b)))
        if op in _COMPARE:
            return [f"((uint8_t)(({a}) {_COMPARE[op]} ({b})))" for a, b in pairs]
        if op in ("And", "Or"):
            if not dt.is_bool:
                raise NotTranslatable("logical operator on non-bool")
            return [f"((uint8_t)(({a}) {'&' if op == 'And' else '|'} ({b})))" for a, b in pairs]
        if dt.is_bool:
            raise NotTranslatable(f"{op} on bool")
        if op in _ARITH:
            if dt.code in ("int", "uint") and dt.bits < 32:
                # C promotes to int: compute in 32-bit unsigned, then wrap to the type
                return [f"(({ctype})((uint32_t)({a}) {_ARITH[op]} (uint32_t)({b})))"
                        for a, b in pairs]
            if dt.code == "int":
                utype = "u" + ctype
                return [f"(({ctype})(({utype})({a}) {_ARITH[op]} ({utype})({b})))"
                        for a, b in pairs]
            return [f"(({ctype})(({a}) {_ARITH[op]} ({b})))" for a, b in pairs]
        name = f"{op.lower()}_{_tag(ctype)}"
        body = _ARITHMETIC_HELPERS.get((op, dt.code))
        if body is None:
            raise NotTranslatable(f"{op} on {dt}")
        utype = ctype if dt.code != "int" else "u" + ctype
        # floats compute in W: float for float16 and float32 (as numpy), double for float64
        wide, suffix = ("double", "") if ctype == "double" else ("float", "f")
        self.helper(name, f"static inline {ctype} {name}({ctype} a, {ctype} b) {{ "
                    + body.replace("$T", ctype).replace("$U", utype).replace("$W", wide)
                    .replace("$f", suffix) + " }")
        return [f"{name}({a}, {b})" for a, b in pairs]

    def cast(self, value: str, src: DataType, dst: DataType) -> str:
        """`value` of type `src` converted to `dst` as the interpreter converts it."""
        ctype, stype = lane_type(dst), lane_type(src)
        if src == dst:
            return value
        if dst.is_bool:
            return f"((uint8_t)(({value}) != 0))"
        if src.is_float and dst.code in ("int", "uint"):
            info = np.iinfo(dst.with_lanes(1).numpy_dtype())
            high = float(info.max) + 1.0
            name = f"sat_{_tag(stype)}_{_tag(ctype)}"
            self.helper(name, (
                f"static inline {ctype} {name}({stype} v) {{ const double w = (double)v; "
                f"if (w != w) return 0; if (w >= {high.hex()}) return ({ctype}){info.max}"
                f"{_suffix(dst)}; if (trunc(w) < {float(info.min).hex()}) return "
                f"({ctype})({int_literal(int(info.min), dst)}); return ({ctype})w; }}"))
            return f"{name}({value})"
        return f"(({ctype})({value}))"

    def helper(self, name: str, definition: str) -> str:
        """`name`, with its C `definition` added once to the helpers the source starts with."""
        self.helpers.setdefault(name, definition)
        return name


# Integer division and remainder as numeric.py defines them (numpy's results, without C's
# undefined behaviour): a zero divisor gives 0, the most negative value divided by -1 wraps.
# $T is the type, $U its unsigned twin, $W the type floats compute in and $f its suffix.
_ARITHMETIC_HELPERS = {
    ("Div", "int"): "if (b == 0) return 0; if (b == -1) return ($T)(0 - ($U)a); return a / b;",
    ("Div", "uint"): "return b == 0 ? 0 : a / b;",
    ("Mod", "int"): "if (b == 0 || b == -1) return 0; return a % b;",
    ("Mod", "uint"): "return b == 0 ? 0 : a % b;",
    ("FloorDiv", "int"): ("if (b == 0) return 0; if (b == -1) return ($T)(0 - ($U)a); "
                          "$T q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; "
                          "return q;"),
    ("FloorDiv", "uint"): "return b == 0 ? 0 : a / b;",
    ("FloorMod", "int"): ("if (b == 0 || b == -1) return 0; $T r = a % b; "
                          "if (r != 0 && ((r < 0) != (b < 0))) r += b; return r;"),
    ("FloorMod", "uint"): "return b == 0 ? 0 : a % b;",
    ("Div", "float"): "return a / b;",
    # numpy's floor division and remainder of floats (its divmod: fmod, then the sign rules)
    ("FloorDiv", "float"): ("$W x = a, y = b; if (y == 0) return ($T)(x / y); "
                            "$W m = fmod$f(x, y), d = (x - m) / y; "
                            "if (m != 0) { if ((y < 0) != (m < 0)) d -= 1; } "
                            "if (d == 0) return ($T)copysign$f(0, x / y); "
                            "$W q = floor$f(d); if (d - q > 0.5) q += 1; return ($T)q;"),
    ("FloorMod", "float"): ("$W x = a, y = b; $W m = fmod$f(x, y); if (y == 0) return ($T)m; "
                            "if (m != 0) { if ((y < 0) != (m < 0)) m += y; } "
                            "else m = copysign$f(0, y); return ($T)m;"),
    ("Mod", "float"): "return ($T)fmod(a, b);",
    ("Min", "int"): "return a < b ? a : b;",
    ("Min", "uint"): "return a < b ? a : b;",
    ("Max", "int"): "return a > b ? a : b;",
    ("Max", "uint"): "return a > b ? a : b;",
    ("Min", "float"): "return (a < b || a != a) ? a : b;",
    ("Max", "float"): "return (a > b || a != a) ? a : b;",
}


def _tag(ctype: str) -> str:
    return ctype.replace("_t", "")


def _suffix(dt: DataType) -> str:
    return "ULL" if dt.code == "uint" else "LL"


def int_literal(value: int, dt: DataType) -> str:
    """A C integer literal of `dt` (the most negative int64 spelled so that C takes it)."""
    if dt.code == "int" and dt.bits == 64 and value == -2 ** 63:
        return "(-9223372036854775807LL - 1)"
    return f"{value}{_suffix(dt)}"


def literal(value, dt: DataType) -> str:
    """A C constant of `dt` with exactly the value the interpreter's numpy scalar has."""
    ctype = scalar_type(dt)
    if dt.is_bool:
        return "((uint8_t)1)" if value else "((uint8_t)0)"
    if dt.code in ("int", "uint"):
        return f"(({ctype}){int_literal(int(value), dt)})"
    with np.errstate(over="ignore"):
        v = float(dt.numpy_dtype().type(value))
    if v != v:
        return f"(({ctype})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({ctype})({'-' if v < 0 else ''}INFINITY))"
    return f"(({ctype}){v.hex()})"
