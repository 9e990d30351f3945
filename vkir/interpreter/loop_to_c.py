"""Translate one interpreter loop (a serial `For` or a `While`) into a C function with the same
semantics, so that long loops run without Python overhead per iteration (native_loops.py).

Only loops of scalar values (the integer, bool, float32 and float64 types) are translated; the arithmetic rules are those of numeric.py (integer
wrap-around, C-style `Div`/`Mod` and floor `FloorDiv`/`FloorMod` with 0 for a zero divisor, NaN
propagating min/max, saturating float-to-int casts, shift amounts modulo the width). Whether the
invocations of a frame may run it one after another, each to the end of its loop, is decided
when it runs (native_loops.py). Anything else (barriers, atomics, subgroup operations, vectors,
float16, transcendental functions whose last bit differs between libm and numpy) raises
`NotTranslatable`, and the loop stays in Python.

An out-of-bounds access in C sets a failure flag instead of touching memory; every loop checks it
on each iteration, and the caller then re-runs the loop in Python, which reports the error exactly.
The C function therefore only needs to evaluate at least every access the interpreter evaluates
(both sides of a `Select` and of `And`/`Or`, one side of `if_then_else`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DataType


class NotTranslatable(Exception):
    """The loop uses something the C translation does not cover (the loop stays in Python)."""


_C_TYPES = {("int", 8): "int8_t", ("int", 16): "int16_t", ("int", 32): "int32_t",
            ("int", 64): "int64_t", ("uint", 8): "uint8_t", ("uint", 16): "uint16_t",
            ("uint", 32): "uint32_t", ("uint", 64): "uint64_t", ("float", 32): "float",
            ("float", 64): "double", ("bool", 1): "uint8_t"}

_ARITH = {"Add": "+", "Sub": "-", "Mul": "*"}
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_FLOAT_MATH = {"fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
               "round": "rint", "sqrt": "sqrt", "fmod": "fmod"}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


def c_type(dt: DataType) -> str:
    """The C type of one scalar of `dt` (NotTranslatable for vectors, float16 and handles)."""
    if not isinstance(dt, DataType) or dt.lanes != 1:
        raise NotTranslatable(f"type {dt}")
    name = _C_TYPES.get((dt.code, dt.bits))
    if name is None:
        raise NotTranslatable(f"type {dt}")
    return name


@dataclass(frozen=True)
class TranslatedLoop:
    """The C source of one loop and what its caller passes in: `free_vars` (values defined
    outside the loop, one array of K entries each), `buffers` (their data and sizes) and
    `stored` (the buffers the loop writes)."""

    source: str
    free_vars: tuple
    buffers: tuple
    stored: tuple


# Layout of the pointer array P: tid, wgrow, lo, ext, then one per buffer, then one per free var.
# Layout of the int64 array M: per buffer, its dims' extents and strides, offset, element limit,
# row length (elements) and row source (0: one row, 1: the invocation's, 2: its workgroup's).
FIXED_POINTERS = 4


def translate(loop) -> TranslatedLoop:
    """The C function `int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R)`
    running `loop` (a serial For or a While) for invocations R[0] to K - 1, one after another.
    It returns 0 when done, 1 when an access was out of bounds (nothing it wrote must be kept
    then), and 2 when it ran R[1] iterations: then R[0] is the invocation to go on with and, for a
    For loop, its lo/ext entries (P[2], P[3]) say which iterations are left, so that the caller
    calls again (between calls Python can react to Ctrl-C)."""
    return _Translator().translate(loop)


class _Translator:
    def __init__(self):
        self.names = {}          # Var -> C name, for vars bound inside the loop
        self.free = {}           # Var -> C name, for vars defined outside
        self.buffers = {}        # Buffer -> index
        self.stored = {}         # Buffer -> None (ordered set)
        self.inner = {}          # Buffer allocated inside the loop -> (C array, layout)
        self.helpers = {}        # helper name -> C definition
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    # -- entry -----------------------------------------------------------------------------------

    def translate(self, loop) -> TranslatedLoop:
        if isinstance(loop, S.For):
            if loop.kind == "thread_binding":
                raise NotTranslatable("thread loop")
            ctype = c_type(loop.loop_var.dtype)
            if loop.loop_var.dtype.code not in ("int", "uint"):
                raise NotTranslatable("loop variable type")
            var = self.bind(loop.loop_var)
            body = self.stmt(loop.body, "    ")
            head = ("  const int64_t end = lo[k] + ext[k];\n"
                    "  for (int64_t it = lo[k]; it < end; ++it) {\n"
                    "    if (fail) return 1;\n"
                    "    if (++steps > budget) { lo[k] = it; ext[k] = end - it; R[0] = k; "
                    "return 2; }\n"
                    f"    {ctype} {var} = ({ctype})it;\n")
            main = head + body + "  }\n"
        elif isinstance(loop, S.While):
            main = ("  for (;;) {\n    if (fail) return 1;\n"
                    "    if (++steps > budget) { R[0] = k; return 2; }\n"
                    f"    if (!({self.expr(loop.condition)})) break;\n"
                    + self.stmt(loop.body, "    ") + "  }\n")
        else:
            raise NotTranslatable(type(loop).__name__)
        buffers = tuple(self.buffers)
        free = tuple(self.free)
        lines = ["#include <stdint.h>", "#include <math.h>", "",
                 "#define IN(i, n) ((i) >= 0 && (i) < (n))", ""]
        lines += list(self.helpers.values())
        lines.append("int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R) {")
        lines.append("  int fail = 0;")
        lines.append("  int64_t steps = 0;")
        lines.append("  const int64_t budget = R[1];")
        lines.append("  const int64_t *tid = (const int64_t *)P[0], *wgrow = (const int64_t *)"
                     "P[1];")
        lines.append("  int64_t *lo = (int64_t *)P[2], *ext = (int64_t *)P[3];")
        lines.append("  (void)lo; (void)ext;")
        m = 0
        for n, buffer in enumerate(buffers):
            ctype = c_type(buffer.dtype)
            nd = len(buffer.shape)
            lines.append(f"  {ctype} *data{n} = ({ctype} *)P[{FIXED_POINTERS + n}];")
            for d in range(nd):
                lines.append(f"  const int64_t sh{n}_{d} = M[{m + d}], st{n}_{d} = "
                             f"M[{m + nd + d}];")
            m += 2 * nd
            lines.append(f"  const int64_t off{n} = M[{m}], lim{n} = M[{m + 1}], "
                         f"rowlen{n} = M[{m + 2}], rowsrc{n} = M[{m + 3}];")
            m += 4
        for n, var in enumerate(free):
            ctype = c_type(var.dtype)
            lines.append(f"  const {ctype} *fv{n} = (const {ctype} *)"
                         f"P[{FIXED_POINTERS + len(buffers) + n}];")
        lines.append("  for (int64_t k = R[0]; k < K; ++k) {")
        for n, buffer in enumerate(buffers):
            ctype = c_type(buffer.dtype)
            lines.append(f"  {ctype} *b{n} = data{n} + (rowsrc{n} == 1 ? tid[k] * rowlen{n} : "
                         f"rowsrc{n} == 2 ? wgrow[k] * rowlen{n} : 0);")
        for n, var in enumerate(free):
            lines.append(f"  const {c_type(var.dtype)} {self.free[var]} = fv{n}[k];")
        lines.append(main.rstrip("\n"))
        lines.append("  if (fail) return 1;")
        lines.append("  }")
        lines.append("  return 0;")
        lines.append("}")
        return TranslatedLoop("\n".join(lines) + "\n", free, buffers, tuple(self.stored))

    # -- names -----------------------------------------------------------------------------------

    def bind(self, var: E.Var) -> str:
        c_type(var.dtype)
        name = self.fresh("v")
        self.names[var] = name
        return name

    def var(self, var: E.Var) -> str:
        name = self.names.get(var)
        if name is not None:
            return name
        name = self.free.get(var)
        if name is None:
            c_type(var.dtype)
            name = self.free[var] = self.fresh("f")
        return name

    def buffer(self, buffer, stored: bool = False) -> int:
        c_type(buffer.dtype)
        if stored:
            self.stored[buffer] = None
        n = self.buffers.get(buffer)
        if n is None:
            n = self.buffers[buffer] = len(self.buffers)
        return n

    # -- statements ------------------------------------------------------------------------------

    def stmt(self, s, ind: str) -> str:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise NotTranslatable(type(s).__name__)
        return method(s, ind)

    def s_SeqStmt(self, s, ind):
        return "".join(self.stmt(x, ind) for x in s.seq)

    def s_Evaluate(self, s, ind):
        return f"{ind}(void)({self.expr(s.value)});\n"

    def s_IfThenElse(self, s, ind):
        out = f"{ind}if ({self.expr(s.condition)}) {{\n" + self.stmt(s.then_case, ind + "  ")
        if s.else_case is not None:
            out += f"{ind}}} else {{\n" + self.stmt(s.else_case, ind + "  ")
        return out + f"{ind}}}\n"

    def s_LetStmt(self, s, ind):
        value = self.expr(s.value)
        ctype = c_type(s.var.dtype)
        outer = self.names.get(s.var)
        name = self.bind(s.var)
        body = self.stmt(s.body, ind + "  ")
        self._unbind(s.var, outer)
        return f"{ind}{{\n{ind}  const {ctype} {name} = {value};\n{body}{ind}}}\n"

    def s_For(self, s, ind):
        if s.kind == "thread_binding":
            raise NotTranslatable("thread loop")
        if s.loop_var.dtype.code not in ("int", "uint"):
            raise NotTranslatable("loop variable type")
        ctype = c_type(s.loop_var.dtype)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        base, count, it = self.fresh("lo"), self.fresh("n"), self.fresh("i")
        outer = self.names.get(s.loop_var)
        name = self.bind(s.loop_var)
        body = self.stmt(s.body, ind + "    ")
        self._unbind(s.loop_var, outer)
        return (f"{ind}{{\n{ind}  const int64_t {base} = (int64_t)({lo}), {count} = "
                f"(int64_t)({ext});\n"
                f"{ind}  for (int64_t {it} = {base}; {it} < {base} + {count}; ++{it}) {{\n"
                f"{ind}    if (fail) return 1;\n"
                f"{ind}    const {ctype} {name} = ({ctype}){it};\n{body}{ind}  }}\n{ind}}}\n")

    def s_While(self, s, ind):
        return (f"{ind}for (;;) {{\n{ind}  if (fail) return 1;\n"
                f"{ind}  if (!({self.expr(s.condition)})) break;\n"
                + self.stmt(s.body, ind + "  ") + f"{ind}}}\n")

    def s_BufferStore(self, s, ind):
        array, layout = self.layout(s.buffer, stored=True)
        ctype = c_type(s.buffer.dtype)
        value = self.expr(s.value)
        decls, pos, check = self.position(layout, s.indices)
        tmp = self.fresh("s")
        return (f"{ind}{{\n{ind}  const {ctype} {tmp} = {value};\n"
                f"{ind}  {decls} const int64_t p = {pos};\n"
                f"{ind}  if ({check}) {array}[p] = {tmp}; else fail = 1;\n{ind}}}\n")

    def s_AllocBuffer(self, s, ind):
        """A local allocation of constant size: a zeroed C array for the body (the interpreter
        zeroes every allocation)."""
        buffer = s.buffer
        ctype = c_type(buffer.dtype)
        if buffer.scope != "local" or buffer.strides or not all(
                isinstance(x, E.IntImm) and x.value > 0 for x in buffer.shape) or not (
                isinstance(buffer.elem_offset, E.IntImm) and buffer.elem_offset.value == 0):
            raise NotTranslatable("allocation")
        shape = [x.value for x in buffer.shape]
        count = int(np.prod(shape))
        if count > 4096:
            raise NotTranslatable("large allocation")
        strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
        name = self.fresh("a")
        self.inner[buffer] = (name, ([str(x) for x in shape], [str(x) for x in strides], "0",
                                     str(count)))
        body = self.stmt(s.body, ind + "  ")
        del self.inner[buffer]
        return f"{ind}{{\n{ind}  {ctype} {name}[{count}] = {{0}};\n{body}{ind}}}\n"

    def layout(self, buffer, stored: bool = False) -> tuple:
        """(C array, (extents, strides, offset, element limit)) of an access to `buffer`."""
        inner = self.inner.get(buffer)
        if inner is not None:
            return inner
        n = self.buffer(buffer, stored)
        nd = len(buffer.shape)
        return f"b{n}", ([f"sh{n}_{d}" for d in range(nd)], [f"st{n}_{d}" for d in range(nd)],
                         f"off{n}", f"lim{n}")

    def _unbind(self, var, outer):
        if outer is None:
            del self.names[var]
        else:
            self.names[var] = outer

    # -- expressions -----------------------------------------------------------------------------

    def expr(self, e) -> str:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.binary(e)
            raise NotTranslatable(type(e).__name__)
        return method(e)

    def e_Var(self, e):
        return self.var(e)

    def e_IntImm(self, e):
        return literal(e.value, e.dtype)

    def e_FloatImm(self, e):
        return literal(e.value, e.dtype)

    def e_Not(self, e):
        return f"((uint8_t)!({self.expr(e.a)}))"

    def e_Select(self, e):
        ctype = c_type(e.dtype)
        name = self.helper(f"select_{_tag(ctype)}",
                           f"static inline {ctype} select_{_tag(ctype)}(uint8_t c, {ctype} t, "
                           f"{ctype} f) {{ return c ? t : f; }}")
        return (f"{name}({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                f"{self.expr(e.false_value)})")

    def e_Cast(self, e):
        return self.cast(self.expr(e.value), e.value.dtype, e.dtype)

    def e_Let(self, e):
        value = self.expr(e.value)
        ctype = c_type(e.var.dtype)
        outer = self.names.get(e.var)
        name = self.bind(e.var)
        body = self.expr(e.body)
        self._unbind(e.var, outer)
        return f"({{ const {ctype} {name} = {value}; {body}; }})"

    def e_BufferLoad(self, e):
        if e.indices and e.indices[-1].dtype.lanes != 1:
            raise NotTranslatable("vector access")
        array, layout = self.layout(e.buffer)
        ctype = c_type(e.buffer.dtype)
        decls, pos, check = self.position(layout, e.indices)
        return (f"({{ {decls} const int64_t p = {pos}; "
                f"({check}) ? {array}[p] : (fail = 1, ({ctype})0); }})")

    def position(self, layout, indices) -> tuple:
        """(C declarations computing the indices once, the element position `p` depends on,
        the C condition that the access is in bounds). Index names are fresh: an index
        expression may load too, and its `p` lives in a block of its own."""
        extents, strides, offset, limit = layout
        if len(indices) != len(extents):
            raise NotTranslatable("index count")
        decls, terms, checks = [], [offset], []
        for d, i in enumerate(indices):
            if not (isinstance(i.dtype, DataType) and i.dtype.code in ("int", "uint")
                    and i.dtype.lanes == 1):
                raise NotTranslatable("index type")
            name = self.fresh("x")
            decls.append(f"const int64_t {name} = (int64_t)({self.expr(i)});")
            terms.append(f"{name} * {strides[d]}")
            checks.append(f"IN({name}, {extents[d]})")
        checks.append(f"IN(p, {limit})")
        return " ".join(decls), " + ".join(terms), " && ".join(checks)

    def e_Call(self, e):
        op = e.op
        args = e.args
        ctype = c_type(e.dtype)
        if op == "if_then_else" and len(args) == 3:
            c_type(args[0].dtype)
            return (f"(({self.expr(args[0])}) ? ({self.expr(args[1])}) : "
                    f"({self.expr(args[2])}))")
        if op in _FLOAT_MATH and all(a.dtype == e.dtype for a in args) and e.dtype.is_float \
                and len(args) == (2 if op == "fmod" else 1):
            fn = _FLOAT_MATH[op] + ("f" if ctype == "float" else "")
            return f"(({ctype}){fn}({', '.join(self.expr(a) for a in args)}))"
        if op in ("isnan", "isinf") and len(args) == 1 and args[0].dtype.is_float:
            return f"((uint8_t)({op}({self.expr(args[0])}) != 0))"
        if op == "fma" and len(args) == 3 and e.dtype.is_float and \
                all(a.dtype == e.dtype for a in args):
            a, b, c = (self.expr(x) for x in args)
            return f"(({ctype})((double)({a}) * (double)({b}) + (double)({c})))"
        if e.dtype.code in ("int", "uint") and all(a.dtype == e.dtype for a in args):
            if op in _BITWISE and len(args) == 2:
                a, b = (self.expr(x) for x in args)
                return f"(({ctype})(({a}) {_BITWISE[op]} ({b})))"
            if op == "bitwise_not" and len(args) == 1:
                return f"(({ctype})~({self.expr(args[0])}))"
            if op in ("shift_left", "shift_right") and len(args) == 2:
                a, b = (self.expr(x) for x in args)
                mask = e.dtype.bits - 1
                shift = "<<" if op == "shift_left" else ">>"
                if op == "shift_left":   # in the unsigned type: no signed overflow
                    utype = "u" + ctype if not ctype.startswith("u") else ctype
                    return (f"(({ctype})(({utype})({a}) << (({b}) & {mask})))")
                return f"(({ctype})(({a}) {shift} (({b}) & {mask})))"
        raise NotTranslatable(f"call {op}")

    # -- arithmetic ------------------------------------------------------------------------------

    def binary(self, e) -> str:
        op = type(e).__name__
        dt = e.a.dtype
        ctype = c_type(dt)
        if e.b.dtype != dt:
            raise NotTranslatable("mixed operand types")
        a, b = self.expr(e.a), self.expr(e.b)
        if op in _COMPARE:
            return f"((uint8_t)(({a}) {_COMPARE[op]} ({b})))"
        if op in ("And", "Or"):
            if not dt.is_bool:
                raise NotTranslatable("logical operator on non-bool")
            return f"((uint8_t)(({a}) {'&' if op == 'And' else '|'} ({b})))"
        if dt.is_bool:
            raise NotTranslatable(f"{op} on bool")
        if op in _ARITH:
            if dt.code in ("int", "uint") and dt.bits < 32:
                # C promotes to int: compute in 32-bit unsigned, then wrap to the type
                return f"(({ctype})((uint32_t)({a}) {_ARITH[op]} (uint32_t)({b})))"
            if dt.code == "int":
                utype = "u" + ctype
                return f"(({ctype})(({utype})({a}) {_ARITH[op]} ({utype})({b})))"
            return f"(({ctype})(({a}) {_ARITH[op]} ({b})))"
        name = f"{op.lower()}_{_tag(ctype)}"
        body = _ARITHMETIC_HELPERS.get((op, dt.code))
        if body is None:
            raise NotTranslatable(f"{op} on {dt}")
        utype = ctype if dt.code != "int" else "u" + ctype
        self.helper(name, f"static inline {ctype} {name}({ctype} a, {ctype} b) {{ "
                    + body.replace("T", ctype).replace("U", utype) + " }")
        return f"{name}({a}, {b})"

    def cast(self, value: str, src: DataType, dst: DataType) -> str:
        ctype, stype = c_type(dst), c_type(src)
        if src == dst:
            return value
        if dst.is_bool:
            return f"((uint8_t)(({value}) != 0))"
        if src.is_float and dst.code in ("int", "uint"):
            info = np.iinfo(dst.numpy_dtype())
            high = float(info.max) + 1.0
            name = f"sat_{_tag(stype)}_{_tag(ctype)}"
            self.helper(name, (
                f"static inline {ctype} {name}({stype} v) {{ const double w = (double)v; "
                f"if (w != w) return 0; if (w >= {high.hex()}) return ({ctype}){info.max}"
                f"{_suffix(dst)}; if (trunc(w) < {float(info.min).hex()}) return "
                f"({ctype})({_int_literal(int(info.min), dst)}); return ({ctype})w; }}"))
            return f"{name}({value})"
        return f"(({ctype})({value}))"

    def helper(self, name: str, definition: str) -> str:
        self.helpers.setdefault(name, definition)
        return name


# Integer division and remainder as numeric.py defines them (numpy's results, without C's
# undefined behaviour): a zero divisor gives 0, the most negative value divided by -1 wraps.
_ARITHMETIC_HELPERS = {
    ("Div", "int"): "if (b == 0) return 0; if (b == -1) return (T)(0 - (U)a); return a / b;",
    ("Div", "uint"): "return b == 0 ? 0 : a / b;",
    ("Mod", "int"): "if (b == 0 || b == -1) return 0; return a % b;",
    ("Mod", "uint"): "return b == 0 ? 0 : a % b;",
    ("FloorDiv", "int"): ("if (b == 0) return 0; if (b == -1) return (T)(0 - (U)a); "
                          "T q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; "
                          "return q;"),
    ("FloorDiv", "uint"): "return b == 0 ? 0 : a / b;",
    ("FloorMod", "int"): ("if (b == 0 || b == -1) return 0; T r = a % b; "
                          "if (r != 0 && ((r < 0) != (b < 0))) r += b; return r;"),
    ("FloorMod", "uint"): "return b == 0 ? 0 : a % b;",
    ("Div", "float"): "return a / b;",
    ("Mod", "float"): "return (T)fmod(a, b);",
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


def _int_literal(value: int, dt: DataType) -> str:
    if dt.code == "int" and dt.bits == 64 and value == -2 ** 63:
        return "(-9223372036854775807LL - 1)"
    return f"{value}{_suffix(dt)}"


def literal(value, dt: DataType) -> str:
    """A C constant of `dt` with exactly the value the interpreter's numpy scalar has."""
    ctype = c_type(dt)
    if dt.is_bool:
        return "((uint8_t)1)" if value else "((uint8_t)0)"
    if dt.code in ("int", "uint"):
        return f"(({ctype}){_int_literal(int(value), dt)})"
    with np.errstate(over="ignore"):
        v = float(dt.numpy_dtype().type(value))
    if v != v:
        return f"(({ctype})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({ctype})({'-' if v < 0 else ''}INFINITY))"
    return f"(({ctype}){v.hex()})"
