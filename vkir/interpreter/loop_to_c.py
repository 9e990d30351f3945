"""Translate one interpreter loop (a serial `For` or a `While`) into a C function with the same
semantics, so that long loops run without Python overhead per iteration (native_loops.py).

Only loops of the integer, bool and float types (scalars and vectors: a vector becomes one C
value per lane; float16 is C's _Float16, computed in float and rounded after each operation as
numpy does) are translated; the arithmetic rules are those of numeric.py (integer
wrap-around, C-style `Div`/`Mod` and floor `FloorDiv`/`FloorMod` with 0 for a zero divisor, NaN
propagating min/max, saturating float-to-int casts, shift amounts modulo the width). Whether the
invocations of a frame may run it one after another, each to the end of its loop, is decided
when it runs (native_loops.py). Anything else (barriers, atomics, subgroup operations, bit casts,
transcendental functions whose last bit differs between libm and numpy) raises
`NotTranslatable`, and the loop stays in Python.

An out-of-bounds access in C sets a failure flag instead of touching memory; every loop checks it
on each iteration, and the caller then has Python run the loop again (native_loops.py says how),
which reports the error exactly.
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
            ("uint", 32): "uint32_t", ("uint", 64): "uint64_t", ("float", 16): "_Float16",
            ("float", 32): "float", ("float", 64): "double", ("bool", 1): "uint8_t"}

_ARITH = {"Add": "+", "Sub": "-", "Mul": "*"}
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_FLOAT_MATH = {"fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
               "round": "rint", "sqrt": "sqrt", "fmod": "fmod"}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


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


@dataclass(frozen=True)
class TranslatedLoop:
    """The C source of one loop and what its caller passes in: `free_vars` (values defined
    outside the loop, one array of K entries each), `buffers` (their data and sizes) and
    `stored` (the buffers the loop writes)."""

    source: str
    free_vars: tuple
    buffers: tuple
    stored: tuple
    accesses: tuple = ()  # ("read" | "write", node) of each logged access, by log site number


# Layout of the pointer array P: tid, wgrow, lo, ext, the access log, then one per buffer, then
# one per free var. Layout of the int64 array M: per buffer, its dims' extents and strides,
# offset, element limit, row length (elements), row source (0: one row, 1: the invocation's, 2:
# its workgroup's) and whether its accesses are logged (memory the race checker tracks). The
# log holds (access site, invocation, position in the storage) triples; R[2] counts them, R[3] is
# its capacity: a loop pauses (returns 2) at an iteration once it is half full, and fails (1)
# if a single iteration fills it.
FIXED_POINTERS = 5


def translate(loop) -> TranslatedLoop:
    """The C function `int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R)`
    running `loop` (a serial For or a While) for invocations R[0] to K - 1, one after another.
    It returns 0 when done, 1 when an access was out of bounds (nothing it wrote must be kept
    then), 2 when it ran R[1] iterations or half filled its access log: then R[0] is the
    invocation to go on with and, for a For loop, its lo/ext entries (P[2], P[3]) say which
    iterations are left, so that the caller calls again (between calls Python can react to
    Ctrl-C and hand the logged accesses to the race checker), and 3 when one iteration ran more
    than R[4] iterations of inner loops (it cannot pause inside an iteration: the caller runs
    the loop in Python, where Ctrl-C works, instead)."""
    return _Translator().translate(loop)


class _Translator:
    """Statements become C statements; an expression of L lanes becomes L C expressions, one
    per lane (lanes are independent in every vkir operation but shuffles, which pick them)."""

    def __init__(self):
        self.names = {}          # Var -> C names (one per lane), for vars bound inside the loop
        self.free = {}           # Var -> C names (one per lane), for vars defined outside
        self.buffers = {}        # Buffer -> index
        self.stored = {}         # Buffer -> None (ordered set)
        self.inner = {}          # Buffer allocated inside the loop -> (C array, layout)
        self.helpers = {}        # helper name -> C definition
        self.accesses = []       # ("read" | "write", node) of each access to outer buffers
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    # -- entry -----------------------------------------------------------------------------------

    def translate(self, loop) -> TranslatedLoop:
        if isinstance(loop, S.For):
            if loop.kind == "thread_binding":
                raise NotTranslatable("thread loop")
            ctype = scalar_type(loop.loop_var.dtype)
            if loop.loop_var.dtype.code not in ("int", "uint"):
                raise NotTranslatable("loop variable type")
            (var,) = self.bind(loop.loop_var)
            body = self.stmt(loop.body, "    ")
            head = ("  const int64_t end = lo[k] + ext[k];\n"
                    "  for (int64_t it = lo[k]; it < end; ++it) {\n"
                    "    if (fail) return 1;\n"
                    "    if (++steps > budget || R[2] > R[3] / 2) { lo[k] = it; "
                    "ext[k] = end - it; R[0] = k; return 2; }\n"
                    "    inner = 0;\n"
                    f"    {ctype} {var} = ({ctype})it;\n")
            main = head + body + "  }\n"
        elif isinstance(loop, S.While):
            main = ("  for (;;) {\n    if (fail) return 1;\n"
                    "    if (++steps > budget || R[2] > R[3] / 2) { R[0] = k; return 2; }\n"
                    "    inner = 0;\n"
                    f"    if (!({self.condition(loop.condition)})) break;\n"
                    + self.stmt(loop.body, "    ") + "  }\n")
        else:
            raise NotTranslatable(type(loop).__name__)
        buffers = tuple(self.buffers)
        free = tuple(self.free)
        lines = ["#include <stdint.h>", "#include <math.h>", "",
                 "#define IN(i, n) ((i) >= 0 && (i) < (n))", "",
                 "static inline int record(int64_t *log, int64_t *R, int64_t site, int64_t k, "
                 "int64_t p) {",
                 "  if (R[2] >= R[3]) return 1;",
                 "  log[3 * R[2]] = site; log[3 * R[2] + 1] = k; log[3 * R[2] + 2] = p;",
                 "  R[2] += 1; return 0;", "}", ""]
        lines += list(self.helpers.values())
        lines.append("int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R) {")
        lines.append("  int fail = 0;")
        lines.append("  int64_t steps = 0, inner = 0;")
        lines.append("  const int64_t budget = R[1], inner_budget = R[4];")
        lines.append("  const int64_t *tid = (const int64_t *)P[0], *wgrow = (const int64_t *)"
                     "P[1];")
        lines.append("  int64_t *lo = (int64_t *)P[2], *ext = (int64_t *)P[3], "
                     "*log = (int64_t *)P[4];")
        lines.append("  (void)lo; (void)ext; (void)log;")
        m = 0
        for n, buffer in enumerate(buffers):
            ctype = lane_type(buffer.dtype)
            nd = len(buffer.shape)
            lines.append(f"  {ctype} *data{n} = ({ctype} *)P[{FIXED_POINTERS + n}];")
            for d in range(nd):
                lines.append(f"  const int64_t sh{n}_{d} = M[{m + d}], st{n}_{d} = "
                             f"M[{m + nd + d}];")
            m += 2 * nd
            lines.append(f"  const int64_t off{n} = M[{m}], lim{n} = M[{m + 1}], "
                         f"rowlen{n} = M[{m + 2}], rowsrc{n} = M[{m + 3}], "
                         f"trk{n} = M[{m + 4}];")
            lines.append(f"  (void)trk{n};")
            m += 5
        for n, var in enumerate(free):
            ctype = lane_type(var.dtype)
            lines.append(f"  const {ctype} *fv{n} = (const {ctype} *)"
                         f"P[{FIXED_POINTERS + len(buffers) + n}];")
        lines.append("  for (int64_t k = R[0]; k < K; ++k) {")
        for n, buffer in enumerate(buffers):
            ctype = lane_type(buffer.dtype)
            lines.append(f"  const int64_t row{n} = rowsrc{n} == 1 ? tid[k] * rowlen{n} : "
                         f"rowsrc{n} == 2 ? wgrow[k] * rowlen{n} : 0;")
            lines.append(f"  {ctype} *b{n} = data{n} + row{n}; (void)row{n};")
        for n, var in enumerate(free):
            lanes = var.dtype.lanes
            for j, name in enumerate(self.free[var]):
                lines.append(f"  const {lane_type(var.dtype)} {name} = fv{n}[k * {lanes} + {j}];")
        lines.append(main.rstrip("\n"))
        lines.append("  if (fail) return 1;")
        lines.append("  }")
        lines.append("  return 0;")
        lines.append("}")
        return TranslatedLoop("\n".join(lines) + "\n", free, buffers, tuple(self.stored),
                              tuple(self.accesses))

    # -- names -----------------------------------------------------------------------------------

    def bind(self, var: E.Var) -> list:
        lane_type(var.dtype)
        stem = self.fresh("v")
        names = [stem] if var.dtype.lanes == 1 else \
            [f"{stem}_{j}" for j in range(var.dtype.lanes)]
        self.names[var] = names
        return names

    def var(self, var: E.Var) -> list:
        names = self.names.get(var)
        if names is not None:
            return names
        names = self.free.get(var)
        if names is None:
            lane_type(var.dtype)
            stem = self.fresh("f")
            names = self.free[var] = [stem] if var.dtype.lanes == 1 else \
                [f"{stem}_{j}" for j in range(var.dtype.lanes)]
        return names

    def buffer(self, buffer, stored: bool = False) -> int:
        lane_type(buffer.dtype)
        if stored:
            self.stored[buffer] = None
        n = self.buffers.get(buffer)
        if n is None:
            n = self.buffers[buffer] = len(self.buffers)
        return n

    def _unbind(self, var, outer):
        if outer is None:
            del self.names[var]
        else:
            self.names[var] = outer

    # -- statements ------------------------------------------------------------------------------

    def stmt(self, s, ind: str) -> str:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise NotTranslatable(type(s).__name__)
        return method(s, ind)

    def s_SeqStmt(self, s, ind):
        return "".join(self.stmt(x, ind) for x in s.seq)

    def s_Evaluate(self, s, ind):
        return "".join(f"{ind}(void)({x});\n" for x in self.expr(s.value))

    def condition(self, e) -> str:
        """A scalar condition (the interpreter refuses a vector one)."""
        scalar_type(e.dtype)
        return self.expr(e)[0]

    def s_IfThenElse(self, s, ind):
        out = f"{ind}if ({self.condition(s.condition)}) {{\n" + \
            self.stmt(s.then_case, ind + "  ")
        if s.else_case is not None:
            out += f"{ind}}} else {{\n" + self.stmt(s.else_case, ind + "  ")
        return out + f"{ind}}}\n"

    def s_LetStmt(self, s, ind):
        values = self.expr(s.value)
        ctype = lane_type(s.var.dtype)
        outer = self.names.get(s.var)
        names = self.bind(s.var)
        body = self.stmt(s.body, ind + "  ")
        self._unbind(s.var, outer)
        decls = "".join(f"{ind}  const {ctype} {n} = {v};\n" for n, v in zip(names, values))
        return f"{ind}{{\n{decls}{body}{ind}}}\n"

    def s_For(self, s, ind):
        if s.kind == "thread_binding":
            raise NotTranslatable("thread loop")
        if s.loop_var.dtype.code not in ("int", "uint"):
            raise NotTranslatable("loop variable type")
        ctype = scalar_type(s.loop_var.dtype)
        (lo,), (ext,) = self.expr(s.min), self.expr(s.extent)
        base, count, it = self.fresh("lo"), self.fresh("n"), self.fresh("i")
        outer = self.names.get(s.loop_var)
        (name,) = self.bind(s.loop_var)
        body = self.stmt(s.body, ind + "    ")
        self._unbind(s.loop_var, outer)
        return (f"{ind}{{\n{ind}  const int64_t {base} = (int64_t)({lo}), {count} = "
                f"(int64_t)({ext});\n"
                f"{ind}  for (int64_t {it} = {base}; {it} < {base} + {count}; ++{it}) {{\n"
                f"{ind}    if (fail) return 1;\n"
                f"{ind}    if (++inner > inner_budget) return 3;\n"
                f"{ind}    const {ctype} {name} = ({ctype}){it};\n{body}{ind}  }}\n{ind}}}\n")

    def s_While(self, s, ind):
        return (f"{ind}for (;;) {{\n{ind}  if (fail) return 1;\n"
                f"{ind}  if (++inner > inner_budget) return 3;\n"
                f"{ind}  if (!({self.condition(s.condition)})) break;\n"
                + self.stmt(s.body, ind + "  ") + f"{ind}}}\n")

    def s_BufferStore(self, s, ind):
        array, layout = self.layout(s.buffer, stored=True)
        ctype = lane_type(s.buffer.dtype)
        values = self.expr(s.value)
        decls, positions, check = self.positions(layout, s.indices, s.buffer.dtype.lanes)
        if len(values) != len(positions):
            raise NotTranslatable("store lanes")
        # every lane's value and position first: a lane's value may read what another writes
        temps = [self.fresh("s") for _ in values]
        out = [f"{ind}{{\n"]
        out += [f"{ind}  const {ctype} {t} = {v};\n" for t, v in zip(temps, values)]
        out.append(f"{ind}  {decls}\n")
        log = ""
        if s.buffer not in self.inner:   # a write the race checker tracks goes to the log
            n = self.buffers[s.buffer]
            site = len(self.accesses)
            self.accesses.append(("write", s))
            log = " ".join(f"if (trk{n} && record(log, R, {site}, k, row{n} + {p})) fail = 1;"
                           for p in positions) + " "
        out.append(f"{ind}  if ({check}) {{ {log}"
                   + " ".join(f"{array}[{p}] = {t};" for p, t in zip(positions, temps))
                   + f" }} else fail = 1;\n{ind}}}\n")
        return "".join(out)

    def s_AllocBuffer(self, s, ind):
        """A local allocation of constant size: a zeroed C array for the body (the interpreter
        zeroes every allocation)."""
        buffer = s.buffer
        ctype = lane_type(buffer.dtype)
        if buffer.scope != "local" or buffer.strides or not all(
                isinstance(x, E.IntImm) and x.value > 0 for x in buffer.shape) or not (
                isinstance(buffer.elem_offset, E.IntImm) and buffer.elem_offset.value == 0):
            raise NotTranslatable("allocation")
        shape = [x.value for x in buffer.shape]
        count = int(np.prod(shape)) * buffer.dtype.lanes
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
        """(C array, (extents, strides, offset, limit)) of an access to `buffer`; the limit
        counts lanes of its element type, the rest its (vector) elements."""
        inner = self.inner.get(buffer)
        if inner is not None:
            return inner
        n = self.buffer(buffer, stored)
        nd = len(buffer.shape)
        return f"b{n}", ([f"sh{n}_{d}" for d in range(nd)], [f"st{n}_{d}" for d in range(nd)],
                         f"off{n}", f"lim{n}")

    def positions(self, layout, indices, element_lanes: int) -> tuple:
        """(C declarations of the index lanes and the lane positions, one C position per lane
        of the access (index lanes x element lanes, as the interpreter orders them), the C
        condition that every index and position is in bounds). Names are fresh: an index may
        load too."""
        extents, strides, offset, limit = layout
        if len(indices) != len(extents):
            raise NotTranslatable("index count")
        index_lanes = indices[-1].dtype.lanes if indices else 1
        decls, checks, dims = [], [], []
        for d, i in enumerate(indices):
            if not (isinstance(i.dtype, DataType) and i.dtype.code in ("int", "uint")):
                raise NotTranslatable("index type")
            if i.dtype.lanes != 1 and d != len(indices) - 1:
                raise NotTranslatable("vector index before the last")
            names = []
            for value in self.expr(i):
                name = self.fresh("x")
                decls.append(f"const int64_t {name} = (int64_t)({value});")
                checks.append(f"IN({name}, {extents[d]})")
                names.append(name)
            dims.append(names)
        positions = []
        for lane in range(index_lanes):
            terms = [offset] + [f"{names[lane if len(names) > 1 else 0]} * {strides[d]}"
                                for d, names in enumerate(dims)]
            element = " + ".join(terms)
            for m in range(element_lanes):
                name = self.fresh("p")
                decls.append(f"const int64_t {name} = ({element}) * {element_lanes} + {m};")
                checks.append(f"IN({name}, {limit})")
                positions.append(name)
        return " ".join(decls), positions, " && ".join(checks) or "1"

    # -- expressions -----------------------------------------------------------------------------

    def expr(self, e) -> list:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.binary(e)
            raise NotTranslatable(type(e).__name__)
        return method(e)

    def e_Var(self, e):
        return self.var(e)

    def e_IntImm(self, e):
        return [literal(e.value, e.dtype)]

    def e_FloatImm(self, e):
        return [literal(e.value, e.dtype)]

    def e_Not(self, e):
        return [f"((uint8_t)!({a}))" for a in self.expr(e.a)]

    def e_Select(self, e):
        return self.select(lane_type(e.dtype), self.expr(e.condition),
                           self.expr(e.true_value), self.expr(e.false_value))

    def select(self, ctype: str, conds: list, t: list, f: list) -> list:
        """Per lane, `t` where the condition holds else `f`, both evaluated (a function call
        evaluates every argument); one condition serves every lane."""
        name = self.helper(f"select_{_tag(ctype)}",
                           f"static inline {ctype} select_{_tag(ctype)}(uint8_t c, {ctype} t, "
                           f"{ctype} f) {{ return c ? t : f; }}")
        if len(conds) == 1:
            conds = conds * len(t)
        return [f"{name}({c}, {x}, {y})" for c, x, y in zip(conds, t, f)]

    def e_Cast(self, e):
        if e.value.dtype.lanes != e.dtype.lanes:
            raise NotTranslatable("cast changing lanes")
        return [self.cast(v, e.value.dtype, e.dtype) for v in self.expr(e.value)]

    def e_Ramp(self, e):
        dt = e.base.dtype
        if dt.code not in ("int", "uint") or dt.lanes != 1:
            raise NotTranslatable("ramp type")
        ctype = lane_type(dt)
        utype = ctype if dt.code == "uint" else "u" + ctype
        wide = "uint32_t" if dt.bits < 32 else utype
        (base,), (stride,) = self.expr(e.base), self.expr(e.stride)
        return [f"(({ctype})(({wide})({base}) + ({wide})({stride}) * ({wide}){j}))"
                for j in range(e.lanes)]

    def e_Broadcast(self, e):
        values = self.expr(e.value)
        return values * e.lanes

    def e_Shuffle(self, e):
        lanes = [x for v in e.vectors for x in self.expr(v)]
        return [lanes[i] for i in e.indices]

    def e_Let(self, e):
        values = self.expr(e.value)
        ctype = lane_type(e.var.dtype)
        outer = self.names.get(e.var)
        names = self.bind(e.var)
        body = self.expr(e.body)
        self._unbind(e.var, outer)
        decls = " ".join(f"const {ctype} {n} = {v};" for n, v in zip(names, values))
        return [f"({{ {decls} {b}; }})" for b in body]

    def e_BufferLoad(self, e):
        array, layout = self.layout(e.buffer)
        ctype = lane_type(e.buffer.dtype)
        decls, positions, check = self.positions(layout, e.indices, e.buffer.dtype.lanes)
        if e.buffer in self.inner:
            return [f"({{ {decls} ({check}) ? {array}[{p}] : (fail = 1, ({ctype})0); }})"
                    for p in positions]
        n = self.buffers[e.buffer]
        site = len(self.accesses)
        self.accesses.append(("read", e))
        # a read of memory the race checker tracks goes to the log (a full log fails the loop)
        return [f"({{ {decls} ({check}) ? ((trk{n} && record(log, R, {site}, k, row{n} + {p}) "
                f"? (fail = 1) : 0), {array}[{p}]) : (fail = 1, ({ctype})0); }})"
                for p in positions]

    def e_Call(self, e):
        op = e.op
        args = e.args
        ctype = lane_type(e.dtype)
        lanes = e.dtype.lanes
        if op == "if_then_else" and len(args) == 3:
            conds = self.expr(args[0])
            t, f = self.expr(args[1]), self.expr(args[2])
            if len(conds) == 1:   # one side per invocation
                return [f"(({conds[0]}) ? ({x}) : ({y}))" for x, y in zip(t, f)]
            return self.select(ctype, conds, t, f)   # lane-wise: both sides, as the interpreter
        if any(a.dtype.lanes != lanes for a in args):
            raise NotTranslatable(f"call {op} lanes")
        columns = list(zip(*(self.expr(a) for a in args)))
        if op in _FLOAT_MATH and all(a.dtype == e.dtype for a in args) and e.dtype.is_float \
                and len(args) == (2 if op == "fmod" else 1):
            # float16 computes in float and rounds once, as numpy does (exact for these)
            fn = _FLOAT_MATH[op] + ("" if ctype == "double" else "f")
            arg = "" if ctype == "double" else "(float)"
            return [f"(({ctype}){fn}({', '.join(arg + x for x in c)}))" for c in columns]
        if op in ("isnan", "isinf") and len(args) == 1 and args[0].dtype.is_float:
            return [f"((uint8_t)({op}((double)({a})) != 0))" for (a,) in columns]
        if op == "fma" and len(args) == 3 and e.dtype.is_float and \
                all(a.dtype == e.dtype for a in args):
            return [f"(({ctype})((double)({a}) * (double)({b}) + (double)({c})))"
                    for a, b, c in columns]
        if e.dtype.code in ("int", "uint") and all(a.dtype == e.dtype for a in args):
            if op in _BITWISE and len(args) == 2:
                return [f"(({ctype})(({a}) {_BITWISE[op]} ({b})))" for a, b in columns]
            if op == "bitwise_not" and len(args) == 1:
                return [f"(({ctype})~({a}))" for (a,) in columns]
            if op in ("shift_left", "shift_right") and len(args) == 2:
                mask = e.dtype.bits - 1
                if op == "shift_left":   # in the unsigned type: no signed overflow
                    utype = "u" + ctype if not ctype.startswith("u") else ctype
                    return [f"(({ctype})(({utype})({a}) << (({b}) & {mask})))"
                            for a, b in columns]
                return [f"(({ctype})(({a}) >> (({b}) & {mask})))" for a, b in columns]
        raise NotTranslatable(f"call {op}")

    # -- arithmetic ------------------------------------------------------------------------------

    def binary(self, e) -> list:
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
                f"({ctype})({_int_literal(int(info.min), dst)}); return ({ctype})w; }}"))
            return f"{name}({value})"
        return f"(({ctype})({value}))"

    def helper(self, name: str, definition: str) -> str:
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


def _int_literal(value: int, dt: DataType) -> str:
    if dt.code == "int" and dt.bits == 64 and value == -2 ** 63:
        return "(-9223372036854775807LL - 1)"
    return f"{value}{_suffix(dt)}"


def literal(value, dt: DataType) -> str:
    """A C constant of `dt` with exactly the value the interpreter's numpy scalar has."""
    ctype = scalar_type(dt)
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
