"""Property tests of the whole pipeline: random well-typed kernels lower, pass
the checkers, validate in SPIRV-Tools, run on the Vulkan device (lavapipe in CI) and compute what
the interpreter computes on the unlowered function; lowering alone preserves the interpreter's
results exactly.

The kernels are generated as script text (so the parser is exercised too, and a failing example
prints as a readable kernel): elementwise kernels over 1-3 input buffers (float32, int32, bool, and
float32x4/int32x4 vector-typed buffers), random typed expression trees (arithmetic, min/max,
select/if_then_else, casts, comparisons and logic, math functions on safe domains, floor/trunc
division and modulo by nonzero divisors, bitwise ops and shifts, let bindings), blockIdx/threadIdx
loops (1-d or 2-d launches) with guards for symbolic or ragged sizes, optionally an inner
`T.vectorized(4)` loop (with lane-dependent conditions sometimes), if/else around stores, a serial
reduction into a local accumulator, or a shared-memory stage with a barrier.

Undefined behaviour is avoided by construction: no integer division by zero (divisors are nonzero
constants other than -1, or `(b & 7) + 1`-style runtime values), shifts by 0..31 only, float->int
casts only of clamped values, math functions only on their safe domains. Integer overflow is *not*
avoided: in "wide" examples int inputs span all of int32, and the lowered function and the device
must wrap exactly like the interpreter. (In "narrow" examples the generator tracks value ranges so
that no int subexpression ever overflows.)

Float comparison: a float value is "exact" when every device computes it bit for bit: loads,
constants, int->float casts, min, max, abs, negation, select, floor/ceil/trunc/round of exact
values -- no float arithmetic at all. Even `(x + x) + 0.5` is not exact: vkir emits no
NoContraction decorations, and lavapipe's compiler (NIR) then reassociates it into
`x + (x + 0.5)`, one ulp off (and it may contract a*b + c into an fma). Discontinuous operations
(comparisons, float->int casts, floor...) only ever see exact values, so ints and bools always
match exactly, exact float outputs match exactly, and the others are compared with a tolerance
scaled to the output's magnitude.

Examples are derandomized (the same examples on every run); set VKIR_PROPERTY_RANDOM=1 to explore
new ones and VKIR_PROPERTY_EXAMPLES=N for more of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir.testing import interpret_lowered
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import DataType
from vkir.ir.intrinsics import INTRINSICS

SETTINGS = settings(max_examples=int(os.environ.get("VKIR_PROPERTY_EXAMPLES", 30)), deadline=None,
                    derandomize=not os.environ.get("VKIR_PROPERTY_RANDOM"),
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])

FLOAT_CONSTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.25, -1.0, -2.5)
INT_CONSTS = (0, 1, 2, 3, 5, 7, -1, -3, 100, -1000, 65535)
DIVISORS = (1, 2, 3, 4, 5, 7, 8, 16, -2, -3, -4, -7)  # never 0, never -1 (INT_MIN // -1 overflows)
NARROW = (-200, 199)  # int inputs of narrow kernels; wide ones span all of int32

# How the generator calls each intrinsic of the table (vkir.ir.intrinsics): a float math function
# on the domain where every device computes it within the comparison's tolerance ({a}, {b}: float
# operands; {k:VALUE}: a float constant), the discontinuous ones on exact values only, the rest
# by the ops named. The op lists below are derived from the table: a row in none of these fails
# test_every_intrinsic_is_generated_or_excluded until it gets a form or a reason.
MATH_DOMAINS = {
    "exp": "T.exp(T.min({a}, {k:4.0}))",
    "exp2": "T.exp2(T.min({a}, {k:4.0}))",
    "log": "T.log(T.fabs({a}) + {k:1.0})",
    "log2": "T.log2(T.fabs({a}) + {k:1.0})",
    "sqrt": "T.sqrt(T.fabs({a}))",
    "rsqrt": "T.rsqrt(T.fabs({a}) + {k:1.0})",
    "tanh": "T.tanh({a})",
    "sin": "T.sin(T.max(T.min({a}, {k:3.0}), {k:-3.0}))",
    "cos": "T.cos(T.max(T.min({a}, {k:3.0}), {k:-3.0}))",
    "tan": "T.tan(T.max(T.min({a}, {k:1.0}), {k:-1.0}))",
    "asin": "T.asin(T.max(T.min({a}, {k:0.5}), {k:-0.5}))",
    "acos": "T.acos(T.max(T.min({a}, {k:0.5}), {k:-0.5}))",
    "atan": "T.atan({a})",
    "sinh": "T.sinh(T.max(T.min({a}, {k:3.0}), {k:-3.0}))",
    "cosh": "T.cosh(T.max(T.min({a}, {k:3.0}), {k:-3.0}))",
    "asinh": "T.asinh({a})",
    "acosh": "T.acosh(T.fabs({a}) + {k:2.0})",
    "atanh": "T.atanh(T.max(T.min({a}, {k:0.5}), {k:-0.5}))",
    "sigmoid": "T.sigmoid(T.max({a}, {k:-30.0}))",
    "erf": "T.erf({a})",
    "pow": "T.pow(T.fabs({a}) + {k:1.0}, {k:1.5})",
    "atan2": "T.atan2({a}, T.fabs({b}) + {k:1.0})",
}
ROUNDING = ("floor", "ceil", "trunc", "round")   # discontinuous: on exact values ("round" op)
EXACT_MATH = {"fmod": "T.fmod({a}, {k:1.5})"}   # on exact values, by a constant: exact
PREDICATES = ("isnan", "isinf")                 # bool ops on exact values
INT_UNARY = ("popcount", "clz", "ctz")          # the "bits" int op, in [0, 32]
OTHER_OPS = {"fma": "fma", "fabs": "abs", "if_then_else": "select", "bitwise_and": "bitwise",
             "bitwise_or": "bitwise", "bitwise_xor": "bitwise", "bitwise_not": "not",
             "shift_left": "shift", "shift_right": "shift"}
NOT_GENERATED = {
    "reinterpret": "the kernels' one int type is int32: its bits read as float32 may be a "
                   "denormal or NaN a device flushes or quiets (the fuzzer covers bit casts)",
}
MATH = tuple(n for n, row in INTRINSICS.items()
             if row.type_rule == "float" and n in MATH_DOMAINS)


# ---------------------------------------------------------------------------------------------
# random typed expressions, as script text


INT32 = (-2**31, 2**31 - 1)


@dataclass(frozen=True)
class Val:
    """A generated expression: script text; for floats whether it is bit-reproducible, for ints
    the range of its mathematical (unwrapped) value."""

    text: str
    exact: bool = True
    lo: int = INT32[0]
    hi: int = INT32[1]

    def ranged(self, lo: int, hi: int) -> "Val":
        return Val(self.text, self.exact, lo, hi)


def _interval(sym: str, a: Val, b: Val) -> tuple[int, int]:
    """The range of `a sym b` over the operands' ranges."""
    if sym == "+":
        return a.lo + b.lo, a.hi + b.hi
    if sym == "-":
        return a.lo - b.hi, a.hi - b.lo
    ends = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return min(ends), max(ends)


@dataclass
class Leaves:
    """What expressions may read, by kind ("float", "int", "bool"), all of the context's lanes."""

    float: list = field(default_factory=list)
    int: list = field(default_factory=list)
    bool: list = field(default_factory=list)

    def of(self, kind: str) -> list:
        return getattr(self, kind)


class ExprGen:
    """Draws random well-typed expressions of `lanes` lanes (1 or 4) over `leaves`."""

    def __init__(self, draw, lanes: int, leaves: Leaves, wide: bool):
        self.draw = draw
        self.lanes = lanes
        self.leaves = leaves
        self.wide = wide

    def dtype(self, kind: str) -> str:
        base = {"float": "float32", "int": "int32", "bool": "bool"}[kind]
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def const(self, kind: str, value) -> str:
        text = f"T.{self.dtype(kind).split('x')[0]}({value!r})"
        return text if self.lanes == 1 else f"T.broadcast({text}, {self.lanes})"

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def leaf(self, kind: str, exact_only: bool = False) -> Val:
        """Mostly a load (or loop variable, let, parameter), sometimes a constant."""
        options = [v for v in self.leaves.of(kind) if v.exact or not exact_only]
        if kind == "bool":
            return self.pick(options) if options else self.compare(0)
        if options and self.draw(st.integers(0, 6)) > 0:
            return self.pick(options)
        if kind == "float" and self.draw(st.booleans()):
            return Val(f"T.cast({self.leaf('int').text}, \"{self.dtype('float')}\")")
        if kind == "float":
            return Val(self.const(kind, self.pick(FLOAT_CONSTS)))
        c = self.pick(INT_CONSTS)
        return Val(self.const(kind, c), lo=c, hi=c)

    def gen(self, kind: str, depth: int, exact_only: bool = False, top: bool = False) -> Val:
        """An expression of `kind` at most `depth` operators deep (`top`: at least one)."""
        if depth <= 0 or not top and self.draw(st.integers(0, 4)) == 0:
            return self.leaf(kind, exact_only)
        return {"float": self.float_op, "int": self.int_op, "bool": self.bool_op}[kind](
            depth - 1, exact_only)

    # -- floats ----------------------------------------------------------------------------------
    def float_op(self, d: int, exact_only: bool) -> Val:
        exact_ops = ["min", "max", "neg", "abs", "select", "cast", "round"]
        ops = exact_ops if exact_only else exact_ops + [
            "add", "sub", "literal", "add", "mul", "div", "fma", "math", "math", "math", "math",
            "if_then_else", "mul"]
        op = self.pick(ops)
        g = lambda: self.gen("float", d, exact_only)  # noqa: E731
        if op in ("add", "sub", "mul"):
            a, b = g(), g()
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            return Val(f"({a.text} {sym} {b.text})", False)
        if op == "literal":  # a bare Python literal takes the other operand's type (broadcast)
            a = g()
            return Val(f"({a.text} {self.pick(['+', '-'])} {self.pick(FLOAT_CONSTS)!r})", False)
        if op in ("min", "max"):
            a, b = g(), g()
            return Val(f"T.{op}({a.text}, {b.text})", a.exact and b.exact)
        if op == "neg":
            a = g()
            return Val(f"(-{a.text})", a.exact)
        if op == "abs":
            a = g()
            return Val(f"T.fabs({a.text})", a.exact)
        if op in ("select", "if_then_else"):
            c, a, b = self.gen("bool", d), g(), g()
            return Val(f"T.{op}({c.text}, {a.text}, {b.text})", a.exact and b.exact)
        if op == "cast":
            src = self.pick(["int", "int", "bool"])
            a = self.gen(src, d)
            return Val(f"T.cast({a.text}, \"{self.dtype('float')}\")")
        if op == "round":  # discontinuous: only on exact values
            a = self.gen("float", d, exact_only=True)
            name = self.pick(list(ROUNDING) + list(EXACT_MATH))
            if name in EXACT_MATH:
                return Val(self.form(EXACT_MATH[name], a))
            return Val(f"T.{name}({a.text})")
        a = g()
        one = self.const("float", 1.0)
        if op == "div":
            b = g()
            return Val(f"({a.text} / (T.fabs({b.text}) + {one}))", False)
        if op == "fma":
            b, c = g(), g()
            return Val(f"T.fma({a.text}, {b.text}, {c.text})", False)
        name = self.pick(MATH)
        template = MATH_DOMAINS[name]
        return Val(self.form(template, a, g() if "{b}" in template else None), False)

    def form(self, template: str, a: Val, b: Val | None = None) -> str:
        """`template` (MATH_DOMAINS) with its operands and float constants filled in."""
        text = template.replace("{a}", a.text).replace("{b}", b.text if b else "")
        return re.sub(r"\{k:([-0-9.]+)\}", lambda m: self.const("float", float(m.group(1))),
                      text)

    # -- ints ------------------------------------------------------------------------------------
    def int_op(self, d: int, exact_only: bool) -> Val:
        """An int operation; its value range is tracked so that a narrow (non-wide) kernel never
        overflows anywhere (an operation that could is replaced by a leaf)."""
        val = self._int_op(d)
        if not self.wide and not (INT32[0] <= val.lo and val.hi <= INT32[1]):
            return self.leaf("int")
        return val

    def _int_op(self, d: int) -> Val:
        op = self.pick(["add", "sub", "mul", "min", "max", "neg", "select", "floordiv", "floormod",
                        "truncdiv", "truncmod", "rtdiv", "bitwise", "not", "shift", "from_float",
                        "from_bool", "literal", "bits", "abs"])
        g = lambda: self.gen("int", d)  # noqa: E731
        if op in ("add", "sub", "mul", "literal"):
            a = g()
            sym = (self.pick(["+", "-", "*"]) if op == "literal"
                   else dict(add="+", sub="-", mul="*")[op])
            if op == "literal":
                c = self.pick(INT_CONSTS + DIVISORS)
                b, text = Val(str(c), lo=c, hi=c), f"({a.text} {sym} {c})"
            else:
                b = g()
                text = f"({a.text} {sym} {b.text})"
            return Val(text, lo=0, hi=0).ranged(*_interval(sym, a, b))
        if op in ("min", "max"):
            a, b = g(), g()
            fn = min if op == "min" else max
            return Val(f"T.{op}({a.text}, {b.text})", lo=fn(a.lo, b.lo), hi=fn(a.hi, b.hi))
        if op == "neg":
            a = g()
            return Val(f"(-{a.text})", lo=-a.hi, hi=-a.lo)
        if op == "select":
            a, b = g(), g()
            return Val(f"T.{self.pick(['select', 'if_then_else'])}({self.gen('bool', d).text}, "
                       f"{a.text}, {b.text})", lo=min(a.lo, b.lo), hi=max(a.hi, b.hi))
        if op in ("floordiv", "floormod", "truncdiv", "truncmod"):
            a, c = g(), self.pick(DIVISORS)
            if op.startswith("floor"):
                text = f"({a.text} {'//' if op == 'floordiv' else '%'} {c})"
            else:
                text = f"T.{op}({a.text}, {self.const('int', c)})"
            if op.endswith("div"):
                ends = sorted((a.lo // c, a.hi // c, -(-a.lo // c), -(-a.hi // c)))
                return Val(text, lo=ends[0], hi=ends[-1])
            return Val(text, lo=-abs(c) + 1, hi=abs(c) - 1)
        if op == "rtdiv":  # a runtime divisor, nonzero by construction, of either sign
            a, b = g(), g()
            divisor = self.pick([f"(({b.text} & 7) + 1)", f"(-2 - ({b.text} & 7))"])
            form = self.pick(["({a} // {b})", "T.truncdiv({a}, {b})", "({a} % {b})",
                              "T.truncmod({a}, {b})"])
            m = max(abs(a.lo), abs(a.hi)) + 1 if "%" not in form and "mod" not in form else 9
            return Val(form.format(a=a.text, b=divisor), lo=-m, hi=m)
        if op in ("bitwise", "not"):
            a, b = g(), g()
            k = max(abs(a.lo), abs(a.hi), abs(b.lo), abs(b.hi)).bit_length()
            if op == "not":
                return Val(f"(~{a.text})", lo=-a.hi - 1, hi=-a.lo - 1)
            return Val(f"({a.text} {self.pick(['&', '|', '^'])} {b.text})", lo=-2**k, hi=2**k - 1)
        if op == "bits":
            return Val(f"T.{self.pick(INT_UNARY)}({g().text})", lo=0, hi=32)
        if op == "abs":   # wraps at INT_MIN, which only a wide kernel reaches
            a = g()
            top = max(abs(a.lo), abs(a.hi))
            low = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            return Val(f"T.fabs({a.text})", lo=low, hi=top)
        if op == "shift":
            a, c = g(), self.draw(st.integers(0, 31))
            if self.draw(st.booleans()):
                return Val(f"({a.text} << {c})", lo=a.lo * 2**c, hi=a.hi * 2**c)
            return Val(f"({a.text} >> {c})", lo=a.lo >> c, hi=a.hi >> c)
        if op == "from_float":  # clamped, and exact: the cast truncates the same everywhere
            a = self.gen("float", d, exact_only=True)
            return Val(f"T.cast(T.max(T.min({a.text}, {self.const('float', 1.0e6)}), "
                       f"{self.const('float', -1.0e6)}), \"{self.dtype('int')}\")",
                       lo=-10**6, hi=10**6)
        return Val(f"T.cast({self.gen('bool', d).text}, \"{self.dtype('int')}\")", lo=0, hi=1)

    # -- bools -----------------------------------------------------------------------------------
    def compare(self, d: int) -> Val:
        kind = self.pick(["int", "float"])
        a, b = self.gen(kind, d, exact_only=True), self.gen(kind, d, exact_only=True)
        return Val(f"({a.text} {self.pick(['<', '<=', '>', '>=', '==', '!='])} {b.text})")

    def bool_op(self, d: int, exact_only: bool) -> Val:
        op = self.pick(["cmp", "cmp", "and", "or", "not", "predicate"])
        if op == "cmp":
            return self.compare(d)
        if op == "predicate":   # on exact values (never NaN nor infinite, but compiled alike)
            a = self.gen("float", d, exact_only=True)
            return Val(f"T.{self.pick(PREDICATES)}({a.text})")
        if op == "not":
            return Val(f"(not {self.gen('bool', d).text})")
        return Val(f"({self.gen('bool', d).text} {op} {self.gen('bool', d).text})")


# ---------------------------------------------------------------------------------------------
# random kernels


@dataclass
class Param:
    """One kernel parameter: a buffer (`dtype` of its numpy array, `shape` of that array) or a
    scalar (`value`)."""

    name: str
    kind: str          # "float" | "int" | "bool"
    dtype: str         # the vkir dtype in the signature
    shape: tuple = ()  # numpy array shape for a buffer; () for a scalar
    output: bool = False
    exact: bool = True  # for float outputs: bit-reproducible
    value: object = None

    @property
    def is_buffer(self) -> bool:
        return self.value is None


@dataclass
class Kernel:
    text: str
    params: list
    seed: int
    wide: bool  # int inputs span all of int32

    def func(self):
        return vkir.from_script(self.text)

    def arguments(self) -> list:
        """Fresh inputs (deterministic in `seed`) and zeroed outputs."""
        rng = np.random.default_rng(self.seed)
        out = []
        for p in self.params:
            if not p.is_buffer:
                out.append(p.value)
                continue
            dtype = DataType.parse(p.dtype).element_of()
            npdt = dtype.numpy_dtype()
            if p.output:
                out.append(np.zeros(p.shape, npdt))
            elif p.kind == "float":
                if rng.integers(2):
                    out.append(rng.uniform(-4, 4, p.shape).astype(npdt))
                else:  # coarse values: ties and equalities happen
                    out.append((rng.integers(-12, 12, p.shape) / 4).astype(npdt))
            elif p.kind == "int":
                lo, hi = _storage_range(str(dtype), self.wide)
                if dtype.is_uint and dtype.bits == 32 and self.wide:
                    lo, hi = 0, 2**32 - 1
                out.append(rng.integers(lo, hi + 1, p.shape, dtype=np.int64).astype(npdt))
            else:
                out.append(rng.integers(0, 2, p.shape).astype(bool))
        return out


_DTYPE = {"float": "float32", "int": "int32", "bool": "bool"}
STORAGE = {"float": ("float32",) * 3 + ("float16",),
           "int": ("int32",) * 4 + ("int8", "uint8", "int16", "uint32"),
           "bool": ("bool",)}


_NEEDS = {"float16": {"float16", "storage_buffer_16bit"}, "int16": {"int16", "storage_buffer_16bit"}}


def _storable(storage: str, features) -> bool:
    """Whether a device with `features` (None: any device) holds buffers of `storage`."""
    return features is None or _NEEDS.get(storage, set()) <= set(features)


def _storage_range(storage: str, wide: bool) -> tuple[int, int]:
    """Values an int input stored as `storage` takes, as seen after its cast to int32 (uint32
    inputs wrap to negative int32 values in wide kernels; narrow ones stay below 200)."""
    if storage in ("int32", "uint32"):
        return INT32 if wide else ((0, NARROW[1]) if storage == "uint32" else NARROW)
    dt = DataType.parse(storage) if storage != "bool" else None
    if dt is None or not dt.is_integer:
        return INT32
    return (0, 2**dt.bits - 1) if dt.is_uint else (-2**(dt.bits - 1), 2**(dt.bits - 1) - 1)


@st.composite
def kernels(draw, modes=("flat", "vector_typed", "vectorized", "shared"), kinds=("float", "int"),
            wide=None, features=None):
    """A random well-typed kernel (see the module docstring). A `wide` kernel reads int inputs
    spanning all of int32 and overflows; a narrow one never overflows, in any subexpression
    (`wide=None`: either, one in four wide). With `features` (a device's), only storage types
    the device can hold: 16-bit ones need 16-bit storage (8-bit ones are emulated anywhere)."""
    storage_of = {kind: tuple(t for t in types if _storable(t, features))
                  for kind, types in STORAGE.items()}
    if wide is None:
        wide = draw(st.integers(0, 3)) == 0
    mode = draw(st.sampled_from(modes))
    symbolic = draw(st.booleans())
    block = draw(st.sampled_from([1, 8, 32, 64] if mode != "shared" else [4, 16, 32, 64]))
    n = draw(st.integers(1, 150))
    if not symbolic and draw(st.booleans()):
        n = block * draw(st.integers(1, 3))  # an exact grid: no guard needed
    size = "n" if symbolic else str(n)
    shape_text = "\"n\"" if symbolic else size
    guard = symbolic or n % block or draw(st.booleans())
    lanes = 4 if mode == "vector_typed" else 1

    params: list[Param] = []
    sig: list[str] = []
    leaves = Leaves()
    loop_leaves = {"vectorized": ["i", "v"], "shared": ["i", "tx"]}.get(mode, ["i"])

    def lane_text(scalar_text: str) -> str:
        return scalar_text if lanes == 1 else f"T.broadcast({scalar_text}, 4)"

    for name in loop_leaves:
        leaves.int.append(Val(lane_text(name), lo=0, hi=max(n, block) * 4))
    lo, hi = INT32 if wide else NARROW

    def load(text: str) -> Val:
        return Val(text, lo=lo, hi=hi)

    # inputs (int and float ones sometimes stored in a narrower or unsigned type, read via a cast)
    n_inputs = draw(st.integers(1, 3))
    input_kinds = kinds + (("bool",) if mode in ("flat", "shared") else ())
    for k in range(n_inputs):
        kind = draw(st.sampled_from(input_kinds))
        storage = draw(st.sampled_from(storage_of[kind]))
        name = f"A{k}"
        slo, shi = _storage_range(storage, wide)

        def read(text: str, vector: bool = False) -> Val:
            if storage != _DTYPE[kind]:
                text = f"T.cast({text}, \"{_DTYPE[kind]}{'x4' if vector else ''}\")"
            return Val(text, lo=slo, hi=shi)

        def add(shape: str, dtype: str, np_shape: tuple) -> None:
            sig.append(f"{name}: T.Buffer(({shape}), \"{dtype}\")")
            params.append(Param(name, kind, dtype, np_shape))

        if mode == "vector_typed":
            form = draw(st.sampled_from(["vector", "vector", "scalar", "rows"] if kind != "bool"
                                        else ["scalar"]))
            if form == "vector":  # a float32x4 / int32x4 (int8x4, float16x4...) buffer
                add(f"{shape_text},", f"{storage}x4", (n * 4,))
                leaves.of(kind).append(read(f"{name}[i]", vector=True))
            elif form == "rows":  # a scalar buffer read through vector (ramp) indices
                width = draw(st.sampled_from([4, 5, 8]))
                add(f"{shape_text}, {width}", storage, (n, width))
                ramps = {4: ["T.ramp(0, 1, 4)"],  # aligned
                         5: ["T.ramp(1, 1, 4)", "T.ramp(0, 1, 4)"],  # unaligned rows
                         8: ["T.ramp(0, 1, 4)", "T.ramp(4, 1, 4)", "T.ramp(0, 2, 4)",
                             "T.ramp(7, -2, 4)"]}[width]  # two aligned halves, strided
                for ramp in draw(st.lists(st.sampled_from(ramps), min_size=1, max_size=2)):
                    leaves.of(kind).append(read(f"{name}[i, {ramp}]", vector=True))
                if draw(st.booleans()):  # and a scalar read of the same buffer
                    lane = draw(st.integers(0, width - 1))
                    leaves.of(kind).append(read(f"T.broadcast({name}[i, {lane}], 4)",
                                                vector=True))
            else:
                add(f"{shape_text},", storage, (n,))
                leaves.of(kind).append(read(f"T.broadcast({name}[i], 4)", vector=True))
        elif mode == "vectorized":
            if draw(st.integers(0, 3)) == 0:  # uniform across the vector lanes
                add(f"{shape_text},", storage, (n,))
                leaves.of(kind).append(read(f"{name}[i]"))
            else:
                add(f"{shape_text}, 4", storage, (n, 4))
                leaves.of(kind).append(read(f"{name}[i, v]"))
                leaves.of(kind).append(read(f"{name}[i, 3 - v]"))
                if draw(st.booleans()):  # a uniform scalar read next to the vector ones
                    leaves.of(kind).append(read(f"{name}[i, {draw(st.integers(0, 3))}]"))
        else:
            add(f"{shape_text},", storage, (n,))
            leaves.of(kind).append(read(f"{name}[i]"))
            if mode == "flat" and draw(st.booleans()):  # a gather with a clamped index
                leaves.of(kind).append(read(f"{name}[T.min(i + 1, {size} - 1)]"))
                leaves.of(kind).append(read(f"{name}[{size} - 1 - i]"))

    # outputs (int ones sometimes stored in a narrower or unsigned type, through a wrapping cast)
    outputs = []
    for k in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(kinds + (("bool",) if mode != "vector_typed" else ())))
        storage = draw(st.sampled_from(storage_of[kind])) if kind == "int" else _DTYPE[kind]
        name = f"Out{k}"
        vector = False
        if mode == "vector_typed":
            vector = True
            if draw(st.booleans()):
                dt = f"{storage}x4"
                sig.append(f"{name}: T.Buffer(({shape_text},), \"{dt}\")")
                params.append(Param(name, kind, dt, (n * 4,), output=True))
                target = f"{name}[i]"
            else:
                sig.append(f"{name}: T.Buffer(({shape_text}, 4), \"{storage}\")")
                params.append(Param(name, kind, storage, (n, 4), output=True))
                target = f"{name}[i, T.ramp(0, 1, 4)]"
        elif mode == "vectorized":
            sig.append(f"{name}: T.Buffer(({shape_text}, 4), \"{storage}\")")
            params.append(Param(name, kind, storage, (n, 4), output=True))
            target = f"{name}[i, v]"
        else:
            sig.append(f"{name}: T.Buffer(({shape_text},), \"{storage}\")")
            params.append(Param(name, kind, storage, (n,), output=True))
            target = f"{name}[i]"
        cast = None if storage == _DTYPE[kind] else storage + ("x4" if vector else "")
        outputs.append((params[-1], target, cast))

    # scalar parameters (push constants)
    if draw(st.booleans()):
        sig.append("s: T.int32")
        value = draw(st.sampled_from([-7, 0, 3, 1000]))
        params.append(Param("s", "int", "int32", value=value))
        leaves.int.append(Val(lane_text("s"), lo=value, hi=value))
    if draw(st.booleans()):
        sig.append("f: T.float32")
        value = draw(st.sampled_from([-1.5, 0.25, 2.0]))
        params.append(Param("f", "float", "float32", value=value))
        leaves.float.append(Val(lane_text("f")))

    gen = ExprGen(draw, lanes, leaves, wide)
    depth = draw(st.integers(1, 4))
    lines = [f"@T.prim_func", f"def kernel({', '.join(sig)}):"]
    ind = " " * 8
    if mode != "shared" and draw(st.integers(0, 3)) == 0:
        # a 2-d launch: 2 x gx workgroups of by_ x bx_ invocations over the 1-d index
        by_, bx_ = draw(st.sampled_from([(2, 4), (4, 8), (1, 16), (8, 1)]))
        per = 2 * by_ * bx_
        gx = f"(({size} + {per - 1}) // {per})" if symbolic else str(-(-n // per))
        lines += [f"    for by in T.thread_binding(2, \"blockIdx.y\"):",
                  f"        for bx in T.thread_binding({gx}, \"blockIdx.x\"):",
                  f"            for ty in T.thread_binding({by_}, \"threadIdx.y\"):",
                  f"                for tx in T.thread_binding({bx_}, \"threadIdx.x\"):"]
        ind = " " * 20
        index = f"((by * {gx} + bx) * {by_} + ty) * {bx_} + tx"
        guard = True
    else:
        grid = f"({size} + {block - 1}) // {block}" if symbolic else str(-(-n // block))
        lines.append(f"    for bx in T.thread_binding({grid}, \"blockIdx.x\"):")
        lines.append(f"        for tx in T.thread_binding({block}, \"threadIdx.x\"):")
        ind = " " * 12
        index = f"bx * {block} + tx"
    if mode == "shared":
        kind = draw(st.sampled_from(kinds))
        zero = {"float": "T.float32(0)", "int": "T.int32(0)"}[kind]
        lines.append(f"{ind}S = T.alloc_buffer(({block},), \"{_DTYPE[kind]}\", scope=\"shared\")")
        lines.append(f"{ind}i = bx * {block} + tx")
        staged = gen.gen(kind, depth, top=True)
        lines += [f"{ind}if i < {size}:", f"{ind}    S[tx] = {staged.text}",
                  f"{ind}else:", f"{ind}    S[tx] = {zero}", f"{ind}T.barrier()"]
        for index in ("tx", f"{block - 1} - tx", f"(tx + 1) % {block}"):
            leaves.of(kind).append(Val(f"S[{index}]", staged.exact, min(staged.lo, 0),
                                       max(staged.hi, 0)))
        guard = True
    else:
        lines.append(f"{ind}i = {index}")
    if guard:
        lines.append(f"{ind}if i < {size}:")
        ind += "    "
    if mode == "flat" and draw(st.integers(0, 2)) == 0:
        # a serial reduction into a local accumulator over a clamped window A[i .. i + K - 1]
        kind = draw(st.sampled_from(kinds))
        steps = draw(st.integers(1, 4))
        window = Leaves(int=[Val("k", lo=0, hi=steps - 1)] + [
            Val(v.text.replace("[i]", f"[T.min(i + k, {size} - 1)]"), v.exact, v.lo, v.hi)
            for v in leaves.int if "[i]" in v.text])
        window.float = [Val(v.text.replace("[i]", f"[T.min(i + k, {size} - 1)]"), v.exact)
                        for v in leaves.float if "[i]" in v.text]
        window.bool = [Val(v.text.replace("[i]", f"[T.min(i + k, {size} - 1)]"))
                       for v in leaves.bool if "[i]" in v.text]
        sub = ExprGen(draw, lanes, window, wide)
        init, term = gen.gen(kind, depth), sub.gen(kind, depth, top=True)
        op = draw(st.sampled_from(["+", "min", "max"]))
        update = f"acc[0] + {term.text}" if op == "+" else f"T.{op}(acc[0], {term.text})"
        lines += [f"{ind}acc = T.alloc_buffer((1,), \"{_DTYPE[kind]}\", scope=\"local\")",
                  f"{ind}acc[0] = {init.text}",
                  f"{ind}for k in T.serial({steps}):",
                  f"{ind}    acc[0] = {update}"]
        if op == "+":
            lo_, hi_ = init.lo + steps * min(term.lo, 0), init.hi + steps * max(term.hi, 0)
        else:
            lo_, hi_ = min(init.lo, term.lo), max(init.hi, term.hi)
        if kind == "int" and not wide and not (INT32[0] <= lo_ and hi_ <= INT32[1]):
            lines[-1] = f"{ind}    acc[0] = T.max(acc[0], {term.text})"
            lo_, hi_ = min(init.lo, term.lo), max(init.hi, term.hi)
        leaves.of(kind).append(Val("acc[0]", init.exact and term.exact, lo_, hi_))
    if mode == "vectorized":
        lines.append(f"{ind}for v in T.vectorized(4):")
        ind += "    "
        if draw(st.integers(0, 3)) == 0:  # a lane-dependent condition (scalarized)
            cmp, lane = draw(st.sampled_from(['<', '!=', '>='])), draw(st.integers(0, 3))
            lines.append(f"{ind}if v {cmp} {lane}:")
            ind += "    "
    for k in range(draw(st.integers(0, 2))):  # let bindings
        kind = draw(st.sampled_from(("float", "int", "bool")))
        value = gen.gen(kind, depth, top=True)
        lines.append(f"{ind}t{k} = {value.text}")
        leaves.of(kind).append(Val(f"t{k}", value.exact, value.lo, value.hi))
    def stored(value: Val, cast) -> str:
        return value.text if cast is None else f"T.cast({value.text}, \"{cast}\")"

    for param, target, cast in outputs:
        value = gen.gen(param.kind, depth, top=True)
        param.exact = value.exact
        if lanes == 1 and draw(st.integers(0, 3)) == 0:  # if/else (lane-dependent when vectorized)
            other = gen.gen(param.kind, depth, top=True)
            param.exact = value.exact and other.exact
            lines += [f"{ind}if {gen.gen('bool', depth).text}:",
                      f"{ind}    {target} = {stored(value, cast)}",
                      f"{ind}else:", f"{ind}    {target} = {stored(other, cast)}"]
        else:
            lines.append(f"{ind}{target} = {stored(value, cast)}")
    return Kernel("\n".join(lines) + "\n", params, draw(st.integers(0, 2**32 - 1)), wide)


# ---------------------------------------------------------------------------------------------
# checks


def run_interpreter(func, kernel: Kernel, original=None) -> list:
    """Fresh arguments after `interpret(func, ...)`; bool arrays are passed as int8 views where
    the (lowered) function stores bools as int8 (BoolToInt8 changes the signature), 8-bit ones
    as words where EmulateInt8 ran; a lowered `func` takes the symbolic sizes that only its word
    buffers had from the signature of `original` (vkir.testing.interpret_lowered)."""
    args = kernel.arguments()
    assert len(args) == len(func.params)
    interpret_lowered(func, *args, original=original)
    return args


def assert_outputs_match(kernel: Kernel, got: list, want: list, approx: bool) -> None:
    """Outputs agree: ints and bools and exact floats bit for bit; other floats (when `approx`)
    within a tolerance scaled to the output's magnitude."""
    for p, g, w in zip(kernel.params, got, want):
        if not (p.is_buffer and p.output):
            continue
        msg = f"output {p.name} of\n{kernel.text}"
        if p.kind != "float" or p.exact or not approx:
            np.testing.assert_array_equal(g, w, err_msg=msg)
        else:
            finite = np.abs(w[np.isfinite(w)])
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3 * scale, err_msg=msg)


def test_every_intrinsic_is_generated_or_excluded():
    """The generator's op lists come from the intrinsic table: each row has a form (a math
    domain, a rounding or exact op, a predicate, a bit count, or an op of its own) or a reason it
    is not generated, and no form names an intrinsic the table lacks."""
    forms = [set(MATH_DOMAINS), set(ROUNDING), set(EXACT_MATH), set(PREDICATES), set(INT_UNARY),
             set(OTHER_OPS), set(NOT_GENERATED)]
    assert sum(map(len, forms)) == len(set().union(*forms)), "an intrinsic has two forms"
    assert set().union(*forms) == set(INTRINSICS), set().union(*forms) ^ set(INTRINSICS)
    assert set(MATH) == set(MATH_DOMAINS) and all(NOT_GENERATED.values())
    assert all(INTRINSICS[n].type_rule == "float" for n in MATH_DOMAINS)
    assert all(template.startswith(f"T.{n}(") for n, template in MATH_DOMAINS.items())


def _show(kernel):
    return f"\n--- kernel (seed {kernel.seed}, wide ints {kernel.wide}) ---\n{kernel.text}"


MODES = ("flat", "vector_typed", "vectorized", "shared")


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(data=st.data())
def test_lowering_preserves_interpreter_results(mode, data):
    """interpret(lower(f)) == interpret(f), bit for bit; the lowered function is well typed
    (for Vulkan) and well formed."""
    kernel = data.draw(kernels(modes=(mode,)), label="kernel")
    func = kernel.func()
    verify_types(func)
    lowered = vkir.lower(func)
    verify_types(lowered, target="vulkan")
    verify_well_formed(lowered)
    want = run_interpreter(func, kernel)
    got = run_interpreter(lowered, kernel, original=func)
    assert_outputs_match(kernel, got, want, approx=False)


@pytest.mark.device
@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(data=st.data())
def test_random_kernels_run_on_device_like_the_interpreter(device, mode, data):
    """build (lower, codegen, SPIRV-Tools validation, pipeline) and dispatch; the results equal the
    interpreter's on the unlowered function."""
    from vkir import spirv

    kernel = data.draw(kernels(modes=(mode,), features=device.info.features), label="kernel")
    func = kernel.func()
    k = vkir.build(func, device=device)
    verify_types(k.ir, target="vulkan")
    spirv.validate(k.spirv, k.target.env)
    args = kernel.arguments()
    k(*args)
    assert_outputs_match(kernel, args, run_interpreter(func, kernel), approx=True)


@pytest.mark.device
@SETTINGS
@given(data=st.data())
def test_int32_overflow_wraps_like_the_interpreter(device, data):
    """Integer kernels on inputs spanning all of int32: sums, products and shifts overflow, and
    the device wraps exactly like the interpreter (two's complement), through division, modulo,
    comparisons and casts of wrapped values -- the interpreter on the unlowered function and on
    the lowered one the device runs (lowering must not assume that int arithmetic never
    overflows)."""
    kernel = data.draw(kernels(modes=MODES, kinds=("int",), wide=True,
                               features=device.info.features), label="kernel")
    func = kernel.func()
    k = vkir.build(func, device=device)
    args = kernel.arguments()
    k(*args)
    assert_outputs_match(kernel, args, run_interpreter(k.ir, kernel, original=func),
                         approx=False)
    assert_outputs_match(kernel, args, run_interpreter(func, kernel), approx=False)


_WRAPPING = {
    "(x*4 + 1) // 4 -> x": "B[i] = (A[i] * 4 + 1) // 4",
    "x + 1 > x -> True": "B[i] = T.cast(A[i] + 1 > A[i], \"int32\")",
    "(x + 2**31 - 1) // 2 -> (x + 1) // 2 + 2**30 - 1": "B[i] = (A[i] + 2147483647) // 2",
}


@pytest.mark.parametrize("rule", list(_WRAPPING))
def test_simplify_keeps_wrapping_semantics(rule):
    """Regression: rewrites that hold only without overflow are not applied to values that may
    wrap (found by the wide property examples; Simplify once assumed no overflow)."""
    func = vkir.from_script(
        "@T.prim_func\n"
        "def wrap(A: T.Buffer((4,), \"int32\"), B: T.Buffer((4,), \"int32\")):\n"
        "    for i in T.serial(4):\n"
        f"        {_WRAPPING[rule]}\n")
    a = np.array([2**30, 2**31 - 1, -2**31, 5], np.int32)
    want, got = np.zeros(4, np.int32), np.zeros(4, np.int32)
    vkir.interpret(func, a, want)
    vkir.interpret(vkir.lower(func), a, got)
    np.testing.assert_array_equal(got, want)


_ADDS = vkir.from_script(
    "@T.prim_func\n"
    "def adds(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
    "    for i in T.thread_binding(4, \"threadIdx.x\"):\n"
    "        B[i] = (A[i] + A[i]) + T.float32(0.5)\n")


@pytest.mark.device
def test_precise_float_adds_are_bit_exact_on_device(device):
    """With `precise=True` every float operation is decorated NoContraction, so the device
    computes `(x + x) + 0.5` in source order, bit for bit like the interpreter. (Without it
    lavapipe's NIR reassociates to x + (x + 0.5): x = 0.20283458f gives 0.9056692f instead of
    IEEE's 0.90566915f, which is why the property tests compare float arithmetic with a
    tolerance.)"""
    k = vkir.build(_ADDS, device=device, precise=True)
    assert k.asm.count("NoContraction") == 2
    a = np.array([0.20283458, 1.0, -0.3, 3.1], np.float32)
    got, want = np.zeros(4, np.float32), np.zeros(4, np.float32)
    k(a, got)
    vkir.interpret(_ADDS, a, want)
    np.testing.assert_array_equal(got, want)


def test_default_float_arithmetic_is_not_decorated():
    from vkir.spirv import Target, codegen, disassemble

    assert "NoContraction" not in disassemble(codegen(vkir.lower(_ADDS), Target()).words)
    precise = disassemble(codegen(vkir.lower(_ADDS), Target(precise=True)).words)
    assert precise.count("NoContraction") == 2


def test_overflowing_products_wrap_in_the_interpreter():
    """The oracle itself wraps: (2**31 - 1) * 2 == -2, INT_MIN - 1 == INT_MAX, and floors."""
    func = vkir.from_script(
        "@T.prim_func\n"
        "def wrap(A: T.Buffer((3,), \"int32\"), B: T.Buffer((3,), \"int32\")):\n"
        "    for i in T.serial(3):\n"
        "        B[i] = A[i] * 2 + (A[i] - 1) // 3\n")
    a = np.array([2**31 - 1, -2**31, -5], np.int32)
    b = np.zeros(3, np.int32)
    vkir.interpret(func, a, b)
    wrapped = ((a.astype(np.int64) * 2 + ((a.astype(np.int64) - 1 + 2**31) % 2**32 - 2**31) // 3)
               + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(b, wrapped.astype(np.int32))


def test_the_checker_runs_after_every_pass_in_this_session():
    """tests/checker_plugin.py is active: every pass call runs the checker (VKIR_VERIFY_PASSES)."""
    from vkir.transform.base import verify_every_pass

    assert verify_every_pass()
