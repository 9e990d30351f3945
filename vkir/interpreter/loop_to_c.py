"""Translate one interpreter loop (a serial `For` or a `While`) into a C function with the same
semantics, so that long loops run without Python overhead per iteration (native_loops.py).

Only loops of the integer, bool and float types (scalars and vectors: a vector becomes one C
value per lane; float16 is C's _Float16, computed in float and rounded after each operation as
numpy does) are translated; the arithmetic rules are those of numeric.py (integer
wrap-around, C-style `Div`/`Mod` and floor `FloorDiv`/`FloorMod` with 0 for a zero divisor, NaN
propagating min/max, saturating float-to-int casts, shift amounts modulo the width, a bool byte
read from memory true when nonzero). Whether the invocations of a frame may run it one after
another, each to the end of its loop, is decided when it runs (native_loops.py). Anything else
(barriers, atomics, subgroup operations, bit casts, transcendental functions whose last bit
differs between libm and numpy) raises `NotTranslatable`, and the loop stays in Python. This
module translates the loop and its statements; c_exprs.py the expressions.

An out-of-bounds access, or an inner loop whose range does not fit its variable's type, sets a
failure flag instead of touching memory; every loop checks it on each iteration, and the caller
then has Python run the loop again (native_loops.py says how), which reports the error exactly.
The C function therefore only needs to evaluate at least every access the interpreter evaluates
(both sides of a `Select` and of `And`/`Or`, one side of `if_then_else`, every lane of a shuffled
vector).

Every iteration of every loop level counts against one budget of work; when it is spent the
function saves its state (the loop counters, the statement-level variables and local arrays in
scope) and returns, and the next call resumes at that very iteration, so a nest of any depth
hands control back to Python at a bounded cost. Each expression is translated once: a value used
more than once (a let, a broadcast, a shuffled lane) is bound to a C variable, so the C source
grows linearly with the loop's IR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import children
from ..ir.dtype import DataType
from .c_exprs import CExprMixin, NotTranslatable, int_literal, lane_type, scalar_type


@dataclass(frozen=True)
class TranslatedLoop:
    """The C source of one loop and what its caller passes in: `free_vars` (values defined
    outside the loop, one array of K entries each), `buffers` (their data and sizes),
    `stored` (the buffers the loop writes) and `state_bytes` (the size of the state a pause
    saves)."""

    source: str
    free_vars: tuple
    buffers: tuple
    stored: tuple
    accesses: tuple = ()  # ("read" | "write", node) of each logged access, by log site number
    state_bytes: int = 0


# Layout of the pointer array P: tid, wgrow, lo, ext (a For loop's first value, as the 64 bits
# of its variable's value, and its iteration count, unsigned, per invocation), the access log,
# the pause state, then one per buffer, then one per free var. Layout of the int64 array M: per
# buffer, its dims' extents and strides, offset, element limit, row length (elements), row
# source (0: one row, 1: the invocation's, 2: its workgroup's) and whether its accesses are
# logged (memory the race checker tracks). The log holds (access site, invocation, position in
# the storage) triples; R[2] counts them, R[3] is its capacity: a loop pauses at an iteration
# once it is half full, and fails (1) if the code between two iterations fills it.
FIXED_POINTERS = 6
_LOG_CHECK = "@log-check@"   # in each pause check: the log's size, where the loop logs


def translate(loop) -> TranslatedLoop:
    """The C function `int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R)`
    running `loop` (a serial For or a While) for invocations R[0] to K - 1, one after another.
    It returns 0 when done, 1 when an access was out of bounds or an inner loop's range does not
    fit its variable (nothing it wrote must be kept then), and 2 when it did R[1] units of work
    (iterations of all its loop levels, each weighing its body's nodes) or half filled its
    access log: then it saved where it stopped
    in the state P[5] (`state_bytes`) and R[0] and R[4], and the caller calls again, with the
    same arguments, to go on from that iteration (between calls Python can react to Ctrl-C and
    hand the logged accesses to the race checker). R[4] is 0 on the first call."""
    return _Translator().translate(loop)


__all__ = ["FIXED_POINTERS", "NotTranslatable", "TranslatedLoop", "lane_type", "scalar_type",
           "translate"]

_SIZES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "_Float16": 2, "int32_t": 4,
          "uint32_t": 4, "float": 4, "int64_t": 8, "uint64_t": 8, "double": 8}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Translator(CExprMixin):
    """Statements become C statements; an expression of L lanes becomes L C expressions, one
    per lane (lanes are independent in every vkir operation but shuffles, which pick them),
    after the C statements it appended to `pre` (the values it binds once)."""

    def __init__(self):
        self.names = {}          # Var -> C names (one per lane), for vars bound inside the loop
        self.free = {}           # Var -> C names (one per lane), for vars defined outside
        self.buffers = {}        # Buffer -> index
        self.stored = {}         # Buffer -> None (ordered set)
        self.inner = {}          # Buffer allocated inside the loop -> (C array, layout)
        self.helpers = {}        # helper name -> C definition
        self.accesses = []       # ("read" | "write", node) of each access to outer buffers
        self.kept = []           # (C type, name, array length or None): state a pause saves
        self.pre = []            # C statements the expression being translated needs first
        self.labels = 0          # pause points (loop iterations) so far, numbered from 1
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def keep(self, ctype: str, name: str, count: int | None = None) -> str:
        """A variable declared at function scope, saved by a pause and restored on resuming."""
        self.kept.append((ctype, name, count))
        return name

    def temp(self, ctype: str, value: str) -> str:
        """`value` bound to a C constant in `pre` (a plain name is returned as it is)."""
        if _NAME.fullmatch(value):
            return value
        name = self.fresh("t")
        self.pre.append(f"const {ctype} {name} = {value};")
        return name

    def apart(self, e) -> tuple:
        """(C statements, lanes) of `e` translated on its own: for an operand evaluated only
        sometimes, whose statements must stay with it."""
        outer, self.pre = self.pre, []
        try:
            lanes = self.expr(e)
            return self.pre, lanes
        finally:
            self.pre = outer

    def statement(self, translate_exprs) -> tuple:
        """(C statements, result) of `translate_exprs()` with a fresh `pre`."""
        outer, self.pre = self.pre, []
        try:
            result = translate_exprs()
            return self.pre, result
        finally:
            self.pre = outer

    # -- entry -----------------------------------------------------------------------------------

    def translate(self, loop) -> TranslatedLoop:
        if isinstance(loop, S.For):
            if loop.kind == "thread_binding":
                raise NotTranslatable("thread loop")
            scalar_type(loop.loop_var.dtype)
            if loop.loop_var.dtype.code not in ("int", "uint"):
                raise NotTranslatable("loop variable type")
            init = ("base{n} = (uint64_t)lo[k]; count{n} = (uint64_t)ext[k];", "")
            main = self.counted(loop, init, "  ")
        elif isinstance(loop, S.While):
            main = self.s_While(loop, "  ")
        else:
            raise NotTranslatable(type(loop).__name__)
        buffers = tuple(self.buffers)
        free = tuple(self.free)
        lines = ["#include <stdint.h>", "#include <string.h>", "#include <math.h>", "",
                 "#define IN(i, n) ((i) >= 0 && (i) < (n))", "",
                 "static inline int record(int64_t *log, int64_t *n, int64_t cap, int64_t site, "
                 "int64_t k, int64_t p) {",
                 "  if (*n >= cap) return 1;",
                 "  log[3 * *n] = site; log[3 * *n + 1] = k; log[3 * *n + 2] = p;",
                 "  *n += 1; return 0;", "}", ""]
        lines += list(self.helpers.values())
        lines.append("int vkir_loop(int64_t K, void **P, const int64_t *M, int64_t *R) {")
        lines.append("  int fail = 0;")
        lines.append("  int64_t k = R[0], at = R[4];")
        lines.append("  int resuming = at != 0;")
        lines.append("  int64_t steps = resuming ? INT64_MAX / 4 : 0;")
        lines.append("  const int64_t budget = R[1], cap = R[3], half = R[3] / 2;")
        lines.append("  int64_t nlog = R[2];   /* entries in the log (R[2] when returning) */")
        lines.append("  (void)cap; (void)half;")
        lines.append("  const int64_t *tid = (const int64_t *)P[0], *wgrow = (const int64_t *)"
                     "P[1];")
        lines.append("  const int64_t *lo = (const int64_t *)P[2], *ext = (const int64_t *)P[3];")
        lines.append("  int64_t *log = (int64_t *)P[4];")
        lines.append("  unsigned char *state = (unsigned char *)P[5];")
        lines.append("  (void)lo; (void)ext; (void)log;")
        save, restore, offset = [], [], 0
        # scalars widest first, then arrays: every one aligned in the (16-aligned) state; a
        # scalar is copied by assignment, so that its address is never taken (it stays in a
        # register in the loops)
        for ctype, name, count in sorted(self.kept, key=lambda x: (x[2] is not None,
                                                                    -_SIZES[x[0]])):
            size = _SIZES[ctype] * (count or 1)
            if count:
                lines.append(f"  {ctype} {name}[{count}];")
                save.append(f"memcpy(state + {offset}, {name}, {size});")
                restore.append(f"memcpy({name}, state + {offset}, {size});")
            else:
                lines.append(f"  {ctype} {name} = 0;")
                save.append(f"*({ctype} *)(state + {offset}) = {name};")
                restore.append(f"{name} = *({ctype} *)(state + {offset});")
            offset += size
        lines.append("  (void)state;")
        if restore:
            lines.append("  if (resuming) { " + " ".join(restore) + " }")
        lines.append("  R[4] = 0;")
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
        lines.append("  for (; k < K; ++k) {")
        for n, buffer in enumerate(buffers):
            ctype = lane_type(buffer.dtype)
            lines.append(f"  const int64_t row{n} = rowsrc{n} == 1 ? tid[k] * rowlen{n} : "
                         f"rowsrc{n} == 2 ? wgrow[k] * rowlen{n} : 0;")
            lines.append(f"  {ctype} *b{n} = data{n} + row{n}; (void)row{n};")
        for n, var in enumerate(free):
            lanes = var.dtype.lanes
            ctype = lane_type(var.dtype)
            for j, name in enumerate(self.free[var]):
                value = f"fv{n}[k * {lanes} + {j}]"
                if var.dtype.is_bool:   # a bool byte is true when nonzero, as in numpy
                    value = f"(uint8_t)({value} != 0)"
                lines.append(f"  const {ctype} {name} = {value};")
        lines.append(main.rstrip("\n"))
        lines.append("  if (fail) return 1;")
        lines.append("  }")
        lines.append("  R[2] = nlog;")
        lines.append("  return 0;")
        lines.append(" pause:")
        lines.append("  R[0] = k; R[2] = nlog; R[4] = at;" + "".join(" " + x for x in save)
                     + " return 2;")
        lines.append("}")
        # a loop that logs nothing never looks at the log's size
        source = "\n".join(lines).replace(_LOG_CHECK, " || nlog > half" if self.accesses else "")
        return TranslatedLoop(source + "\n", free, buffers, tuple(self.stored),
                              tuple(self.accesses), offset)

    # -- names -----------------------------------------------------------------------------------

    def bind(self, var: E.Var, kept: bool = False) -> list:
        ctype = lane_type(var.dtype)
        stem = self.fresh("v")
        names = [stem] if var.dtype.lanes == 1 else \
            [f"{stem}_{j}" for j in range(var.dtype.lanes)]
        self.names[var] = names
        if kept:
            for name in names:
                self.keep(ctype, name)
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
    # A statement that contains pause points (`labels` before and after it differ) may be
    # entered while resuming: it then skips what it did before the pause (its conditions, its
    # initialisations) and goes straight to the part that holds the pause point R[4].

    def stmt(self, s, ind: str) -> str:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise NotTranslatable(type(s).__name__)
        return method(s, ind)

    def with_pre(self, pre: list, ind: str) -> str:
        return "".join(f"{ind}{x}\n" for x in pre)

    def s_SeqStmt(self, s, ind):
        parts = []
        for x in s.seq:
            first = self.labels
            code = self.stmt(x, ind + "  ")
            parts.append((code, first, self.labels))
        labelled = [p for p in parts if p[1] != p[2]]
        out, waiting = [], []
        for code, first, last in parts:
            if first == last:
                # before a part holding a pause point, skipped while resuming
                if any(f >= first for _, f, _ in labelled):
                    waiting.append(code)
                else:
                    out.append(self._unwrap(code, ind))
                continue
            if waiting:
                out.append(f"{ind}if (!resuming) {{\n" + "".join(waiting) + f"{ind}}}\n")
                waiting = []
            if len(labelled) > 1:
                out.append(f"{ind}if (!resuming || (at >= {first + 1} && at <= {last})) {{\n"
                           + code + f"{ind}}}\n")
            else:
                out.append(self._unwrap(code, ind))
        return "".join(out)

    @staticmethod
    def _unwrap(code: str, ind: str) -> str:
        """`code` (indented by two more than `ind`) in a block of its own."""
        return f"{ind}{{\n{code}{ind}}}\n"

    def s_Evaluate(self, s, ind):
        pre, values = self.statement(lambda: self.expr(s.value))
        return self.with_pre(pre, ind) + "".join(f"{ind}(void)({x});\n" for x in values)

    def condition(self, e) -> str:
        """A scalar condition (the interpreter refuses a vector one)."""
        scalar_type(e.dtype)
        return self.expr(e)[0]

    def s_IfThenElse(self, s, ind):
        pre, cond = self.statement(lambda: self.condition(s.condition))
        first = self.labels
        then = self.stmt(s.then_case, ind + "  ")
        middle = self.labels
        other = self.stmt(s.else_case, ind + "  ") if s.else_case is not None else None
        if self.labels == first:
            out = self.with_pre(pre, ind) + f"{ind}if ({cond}) {{\n" + then
        else:   # resuming: the branch that holds the pause point, the condition not evaluated
            test = " ".join(pre + [f"{cond};"]) if pre else cond
            if pre:
                test = f"({{ {test} }})"
            out = (f"{ind}if (resuming ? (at > {first} && at <= {middle}) : ({test})) {{\n"
                   + then)
        if other is not None:
            out += f"{ind}}} else {{\n" + other
        return out + f"{ind}}}\n"

    def s_LetStmt(self, s, ind):
        pre, values = self.statement(lambda: self.expr(s.value))
        outer = self.names.get(s.var)
        names = self.bind(s.var, kept=True)
        first = self.labels
        body = self.stmt(s.body, ind)
        self._unbind(s.var, outer)
        lines = pre + [f"{n} = {v};" for n, v in zip(names, values)]
        if self.labels == first:
            return self.with_pre(lines, ind) + body
        # resuming inside the body: the value was saved with the pause
        return f"{ind}if (!resuming) {{\n" + self.with_pre(lines, ind + "  ") + f"{ind}}}\n" + body

    def pause_point(self, body, ind: str) -> str:
        """The check at the start of every iteration of a loop of `body`: stop on a failure;
        while resuming, go on from here if this is where the pause was; else count the
        iteration's work (its body's nodes outside inner loops) and pause once the budget is
        spent or the log half full."""
        self.labels += 1
        label = self.labels
        # while resuming, steps starts past the budget: one test per iteration either way
        return (f"{ind}if (__builtin_expect(fail, 0)) return 1;\n"
                f"{ind}if (__builtin_expect((steps += {_work(body)}) > budget{_LOG_CHECK}, 0)) "
                f"{{\n{ind}  if (!resuming) {{ at = {label}; goto pause; }}\n"
                f"{ind}  if (at == {label}) {{ resuming = 0; steps = 0; }}\n{ind}}}\n")

    def counted(self, s, init: tuple, ind: str, constant: tuple | None = None) -> str:
        """A For loop: `init` is (C statements setting base<n> and count<n>, their `pre`);
        it runs its variable through base, base + 1, ... for count iterations (64-bit
        unsigned: every range whose end fits the variable's type). `constant`: (base, count)
        as C literals instead, known to the C compiler."""
        ctype = scalar_type(s.loop_var.dtype)
        n = self.fresh("")
        it = self.keep("uint64_t", f"it{n}")
        if constant is None:
            base, count = self.keep("uint64_t", f"base{n}"), self.keep("uint64_t", f"count{n}")
        else:
            base, count = constant
        outer = self.names.get(s.loop_var)
        (name,) = self.bind(s.loop_var, kept=True)
        check = self.pause_point(s.body, ind + "  ")
        body = self.stmt(s.body, ind + "  ")
        self._unbind(s.loop_var, outer)
        setup, pre = init
        setup = setup.replace("{n}", n)
        return (f"{ind}if (!resuming) {{\n{pre}{ind}  {setup} {it} = 0;\n{ind}}}\n"
                f"{ind}for (; {it} < {count}; ++{it}) {{\n{check}"
                f"{ind}  {name} = ({ctype})({base} + {it});\n{body}{ind}}}\n")

    def s_For(self, s, ind):
        if s.kind == "thread_binding":
            raise NotTranslatable("thread loop")
        if s.loop_var.dtype.code not in ("int", "uint"):
            raise NotTranslatable("loop variable type")
        ctype = scalar_type(s.loop_var.dtype)
        high = int(np.iinfo(s.loop_var.dtype.numpy_dtype()).max)
        if isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm):
            lo, count = s.min.value, max(s.extent.value, 0)
            if count and lo + count > high:
                raise NotTranslatable("loop range")   # Python reports it
            u64 = DataType("uint", 64)
            return self.counted(s, ("", ""), ind, (f"(uint64_t){int_literal(lo, s.min.dtype)}",
                                                   int_literal(count, u64)))
        pre, (lo, ext) = self.statement(lambda: (self.temp(ctype, self.expr(s.min)[0]),
                                                 self.temp(ctype, self.expr(s.extent)[0])))
        top = int_literal(high, DataType("uint", 64))
        count = f"(uint64_t){ext}" if s.loop_var.dtype.code == "uint" else \
            f"({ext} > 0 ? (uint64_t){ext} : 0)"
        # an end (base + count) past the type's maximum: Python reports it (native_loops.py)
        setup = (f"base{{n}} = (uint64_t){lo}; count{{n}} = {count}; "
                 f"if (count{{n}} && count{{n}} > {top} - base{{n}}) {{ fail = 1; return 1; }}")
        return self.counted(s, (setup, self.with_pre(pre, ind + "  ")), ind)

    def s_While(self, s, ind):
        check = self.pause_point(s.body, ind + "  ")
        pre, cond = self.statement(lambda: self.condition(s.condition))
        test = self.with_pre(pre, ind + "    ") + f"{ind}    if (!({cond})) break;\n"
        return (f"{ind}for (;;) {{\n{check}{ind}  if (!resuming) {{\n{test}{ind}  }}\n"
                + self.stmt(s.body, ind + "  ") + f"{ind}}}\n")

    def s_BufferStore(self, s, ind):
        array, layout = self.layout(s.buffer, stored=True)
        ctype = lane_type(s.buffer.dtype)

        def parts():
            values = self.expr(s.value)
            # every lane's value and position first: a lane's value may read what another writes
            temps = [self.fresh("s") for _ in values]
            self.pre.extend(f"const {ctype} {t} = {v};" for t, v in zip(temps, values))
            positions, check = self.positions(layout, s.indices, s.buffer.dtype.lanes)
            if len(values) != len(positions):
                raise NotTranslatable("store lanes")
            return temps, positions, check

        pre, (temps, positions, check) = self.statement(parts)
        log = ""
        if s.buffer not in self.inner:   # a write the race checker tracks goes to the log
            n = self.buffers[s.buffer]
            site = len(self.accesses)
            self.accesses.append(("write", s))
            log = " ".join(f"if (trk{n} && record(log, &nlog, cap, {site}, k, row{n} + {p})) "
                           "fail = 1;"
                           for p in positions) + " "
        return (f"{ind}{{\n" + self.with_pre(pre, ind + "  ")
                + f"{ind}  if ({check}) {{ {log}"
                + " ".join(f"{array}[{p}] = {t};" for p, t in zip(positions, temps))
                + f" }} else fail = 1;\n{ind}}}\n")

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
        name = self.keep(ctype, self.fresh("a"), count)
        self.inner[buffer] = (name, ([str(x) for x in shape], [str(x) for x in strides], "0",
                                     str(count)))
        first = self.labels
        body = self.stmt(s.body, ind)
        del self.inner[buffer]
        zero = f"memset({name}, 0, sizeof {name});"
        if self.labels != first:
            zero = f"if (!resuming) {zero}"
        return f"{ind}{zero}\n{body}"

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
        """(one C position per lane of the access (index lanes x element lanes, as the
        interpreter orders them), the name of a C flag: every index and position is in bounds),
        their declarations appended to `pre`. Names are fresh: an index may load too."""
        extents, strides, offset, limit = layout
        if len(indices) != len(extents):
            raise NotTranslatable("index count")
        index_lanes = indices[-1].dtype.lanes if indices else 1
        checks, dims = [], []
        for d, i in enumerate(indices):
            if not (isinstance(i.dtype, DataType) and i.dtype.code in ("int", "uint")):
                raise NotTranslatable("index type")
            if i.dtype.lanes != 1 and d != len(indices) - 1:
                raise NotTranslatable("vector index before the last")
            names = []
            for value in self.expr(i):
                name = self.fresh("x")
                self.pre.append(f"const int64_t {name} = (int64_t)({value});")
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
                self.pre.append(f"const int64_t {name} = ({element}) * {element_lanes} + {m};")
                checks.append(f"IN({name}, {limit})")
                positions.append(name)
        ok = self.fresh("ok")
        self.pre.append(f"const int {ok} = {' && '.join(checks) or '1'};")
        return positions, ok

def _work(body) -> int:
    """The nodes of `body` outside the loops in it (at least 1): what one iteration costs
    besides its inner loops, which count their own iterations."""
    count, stack = 0, [body]
    while stack:
        node = stack.pop()
        count += 1
        if node is not body and isinstance(node, (S.For, S.While)):
            continue
        stack.extend(children(node))
    return max(count, 1)


