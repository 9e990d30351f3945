"""Random well-typed kernels as script source: one FuzzProgram per (seed, index).

A program is a grid of workgroups whose invocation i computes a random expression of one dtype
over its elements of two input buffers and writes one output element, optionally with a serial
accumulation loop, a shared-memory stage behind a barrier, 4-lane vector accesses, an atomic
histogram and a subgroup operation (a reduction, scan, broadcast, shuffle, vote or elect).
Everything it computes is defined (integer division by a nonzero divisor, constant shift
amounts in range, shuffles from active lanes only, float-to-int conversions of values the
integer type holds: `convert` sends NaN, infinities and out-of-range values to 0 first), so the
interpreter's result is the answer the device must reproduce bit for bit (kernels are built with
precise=True).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ...ir.intrinsics import INTRINSICS

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_TYPES = ("float16", "float32", "float64")
DTYPES = INT_TYPES + FLOAT_TYPES
# the device feature each dtype needs (vkir.Target feature names)
NEEDS = {"int8": "int8", "uint8": "int8", "int16": "int16", "uint16": "int16", "int64": "int64",
         "uint64": "int64", "float16": "float16", "float64": "float64"}


NOT_FUZZED = {
    **{name: "its result is only as accurate as Vulkan requires, not bit-exact" for name in (
        "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "sigmoid", "pow",
        "atan2")},
    "fma": "a device may round the product before the add (Vulkan bounds Fma as OpFMul then "
           "OpFAdd)",
}
"""The intrinsics of vkir.ir.intrinsics that generated programs never call, with the reason: a
program's result must be exact on every device. Every other row of the table is fuzzed through
the form its type rule gives it (`_Expr.intrinsic`), so a new intrinsic is fuzzed unless it is
listed here (tests/tools/test_fuzz_campaign.py checks that the two cover the table)."""

# the type rules whose rows take a float operand, or an integer one (vkir.ir.intrinsics)
_FLOAT_RULES = ("float", "numeric", "float_predicate", "if_then_else", "reinterpret")
_INT_RULES = ("integer", "numeric", "shift", "if_then_else", "reinterpret")


def fuzzed_intrinsics(kind: str) -> tuple[str, ...]:
    """The intrinsics generated for operands of `kind` ("float" or "int"), in table order: every
    row of a type rule that takes such operands and is not in NOT_FUZZED."""
    rules = _FLOAT_RULES if kind == "float" else _INT_RULES
    return tuple(name for name, row in INTRINSICS.items()
                 if row.type_rule in rules and name not in NOT_FUZZED)


@dataclass(frozen=True)
class FuzzProgram:
    """A generated kernel: its `source`, the `features` it exercises (for the report), the
    dtypes of its buffers and its size `n`."""

    source: str
    features: frozenset
    dtype: str
    out_dtype: str
    n: int
    lanes: int = 1
    symbolic: bool = False
    extra: dict = field(default_factory=dict)


def _bits(dtype: str) -> int:
    return int("".join(c for c in dtype if c.isdigit()))


# the largest finite value of each float type
_FLOAT_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308}


def convert(value: str, src: str, dst: str, lanes: int, name: str) -> str:
    """`T.cast(value, dst)` (vectors of `lanes` lanes) for `value` of type `src`. A float
    converted to an integer type has no defined result where it is NaN, infinite or out of the
    type's range (docs/semantics.md), so such a value becomes 0 first, through a let-bound
    `name`: the bounds are exclusive powers of two, exact in every float type or rounded
    toward the range (never admitting an undefined value)."""
    vt = dst if lanes == 1 else f"{dst}x{lanes}"
    if not (src.startswith("float") and not dst.startswith("float")):
        return f'T.cast({value}, "{vt}")'
    bits = _bits(dst)
    lo, hi = (-(1 << (bits - 1)) - 1, 1 << (bits - 1)) if dst.startswith("int") else (-1, 1 << bits)
    top = _FLOAT_MAX[src]
    above = f"{name} > {float(lo)!r}" if -lo <= top else f"{name} >= {-top!r}"
    below = f"{name} < {float(hi)!r}" if hi <= top else f"{name} <= {top!r}"
    return (f'T.cast(T.let({name} := {value}, T.select({above} and {below}, {name}, 0.0)), '
            f'"{vt}")')


class _Expr:
    """Random expressions of one dtype (as script text)."""

    def __init__(self, rng: random.Random, dtype: str, lanes: int, leaves: list[str]):
        self.rng = rng
        self.dtype = dtype
        self.lanes = lanes
        self.leaves = leaves
        self.is_float = dtype.startswith("float")
        self.vt = dtype if lanes == 1 else f"{dtype}x{lanes}"
        self.names = 0   # let-bound names made so far (each program's names are distinct)

    def name(self) -> str:
        """A fresh name for a let binding."""
        self.names += 1
        return f"v{self.names}"

    def convert(self, value: str, src: str, dst: str) -> str:
        """`value` of type `src` converted to `dst`, defined for every value (`convert`)."""
        return convert(value, src, dst, self.lanes, self.name())

    def literal(self) -> str:
        r = self.rng
        if self.is_float:
            return repr(r.choice([0.0, -0.0, 1.0, -2.5, 0.1, 3.0, 1e3, -7.25, 0.5]))
        bits = _bits(self.dtype)
        hi = (1 << (bits - 1)) - 1 if self.dtype.startswith("int") else (1 << bits) - 1
        lo = -(1 << (bits - 1)) if self.dtype.startswith("int") else 0
        return str(r.choice([0, 1, 2, 3, 7, lo, hi, r.randint(lo, hi)]))

    def typed(self, depth: int) -> str:
        """An expression with a typed operand (never a bare literal)."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return r.choice(self.leaves)
        kind = r.random()
        a = self.typed(depth - 1)
        if kind < 0.45:
            op = r.choice(["+", "-", "*"] + (["/"] if self.is_float else ["&", "|", "^"]))
            b = self.literal() if r.random() < 0.3 else self.typed(depth - 1)
            return f"({a} {op} {b})"
        if kind < 0.6:
            b = self.typed(depth - 1)
            if self.is_float:
                return f"({a} {r.choice(['//', '%'])} {b})"
            divisor = f"(({b} & {self.literal_small()}) + {self.one()})"
            return f"({a} {r.choice(['//', '%'])} {divisor})"
        if kind < 0.7:
            fn = r.choice(["T.min", "T.max"])
            return f"{fn}({a}, {self.typed(depth - 1)})"
        if kind < 0.8:
            b, c, d = (self.typed(depth - 1) for _ in range(3))
            cmp = r.choice(["<", "<=", "==", "!=", ">"])
            return f"T.select({a} {cmp} {b}, {c}, {d})"
        if kind < 0.9:
            other = r.choice([t for t in DTYPES if t != self.dtype])
            return self.convert(self.convert(a, self.dtype, other), other, self.dtype)
        if self.is_float or r.random() < 0.5:
            return self.intrinsic(a, depth)
        op = r.choice(["<<", ">>"])
        if r.random() < 0.5:  # a run-time amount: taken modulo the width
            return f"({a} {op} {self.typed(depth - 1)})"
        return f"({a} {op} {r.randrange(_bits(self.dtype))})"

    def intrinsic(self, a: str, depth: int) -> str:
        """A call of an intrinsic of the table (`fuzzed_intrinsics`) on `a` (and further typed
        operands), in the form its type rule defines for every value."""
        r = self.rng
        name = r.choice(fuzzed_intrinsics("float" if self.is_float else "int"))
        row = INTRINSICS[name]
        more = [self.typed(depth - 1) for _ in range(row.arity - 1)]
        if row.type_rule == "float_predicate":   # a bool: it chooses between two operands
            return f"T.select(T.{name}({a}), {a}, {self.typed(depth - 1)})"
        if row.type_rule == "if_then_else":
            cmp = r.choice(["<", "<=", "==", "!=", ">"])
            return f"T.{name}({a} {cmp} {more[0]}, {more[0]}, {more[1]})"
        if row.type_rule == "shift":             # a constant amount in [0, bits)
            return f"T.{name}({a}, {r.randrange(_bits(self.dtype))})"
        if row.type_rule == "reinterpret":       # to the same-width (other-signed) integer and
            bits = _bits(self.dtype)             # back: no float is made of arbitrary bits
            twin = f"uint{bits}" if not self.dtype.startswith("uint") else f"int{bits}"
            twin += "" if self.lanes == 1 else f"x{self.lanes}"
            return f'T.{name}(T.{name}({a}, "{twin}"), "{self.vt}")'
        return f"T.{name}({', '.join([a, *more])})"

    def literal_small(self) -> str:
        return str(self.rng.choice([1, 3, 7, 15]))

    def one(self) -> str:
        return "1"


# subgroup operations whose result is exact on every device (no float sum or product, which
# a device may combine in another order), by operand kind
_REDUCTIONS = {"int": ("add", "mul", "min", "max", "and", "or", "xor"), "float": ("min", "max")}
_SCANS = {"int": ("add", "mul", "min", "max"), "float": ("min", "max")}


def _subgroup_expr(rng: random.Random, dtype: str, width: int, symbolic: bool) -> str:
    """A subgroup operation on A[i] (and B[i]) whose result the interpreter defines on every
    device: shuffles read lanes inside the subgroup and the workgroup (`m` = the smaller of the
    subgroup and workgroup sizes), shuffles up and down keep their own value where the source
    lane is out of range, and they are used only where every lane is active (no symbolic guard,
    a workgroup of at least 8 invocations)."""
    kind = "float" if dtype.startswith("float") else "int"
    forms = ["reduce", "scan", "first", "vote", "elect"]
    if not symbolic and width >= 8:
        forms += ["broadcast", "shuffle", "xor", "up", "down"]
    form = rng.choice(forms)
    x = "A[i]"
    m = f"T.min(T.subgroup_size(), {width})"
    lane = "T.subgroup_invocation_id()"
    d = rng.choice([1, 2, 3, 5])
    if form == "reduce":
        return f"T.subgroup_{rng.choice(_REDUCTIONS[kind])}({x})"
    if form == "scan":
        return f"T.subgroup_{rng.choice(['inclusive', 'exclusive'])}_{rng.choice(_SCANS[kind])}({x})"
    if form == "first":
        return f"T.subgroup_broadcast_first({x} * B[i])"
    if form == "vote":
        return f"T.select(T.subgroup_{rng.choice(['any', 'all'])}(A[i] < B[i]), A[i], B[i])"
    if form == "elect":
        return "T.select(T.subgroup_elect(), A[i], B[i])"
    if form == "broadcast":
        return f"T.subgroup_broadcast({x}, {rng.choice([0, 1, 3])} % {m})"
    if form == "shuffle":
        return f"T.subgroup_shuffle({x}, ({lane} + {d}) % {m})"
    if form == "xor":
        return f"T.subgroup_shuffle_xor({x}, {d} & ({m} - 1))"
    if form == "up":
        return f"T.select({lane} >= {d}, T.subgroup_shuffle_up({x}, {d}), {x})"
    return f"T.select({lane} + {d} < {m}, T.subgroup_shuffle_down({x}, {d}), {x})"


def generate(rng: random.Random, dtypes=DTYPES, atomics: bool = True,
             subgroups: bool = True) -> FuzzProgram:
    """One random program over the dtypes in `dtypes`."""
    dtype = rng.choice(dtypes)
    out = rng.choice([dtype, dtype, rng.choice(dtypes)])
    lanes = 4 if rng.random() < 0.2 else 1
    width = rng.choice([1, 8, 32, 64])
    groups = rng.choice([1, 2, 3])
    n = width * groups
    symbolic = rng.random() < 0.3
    # (under a symbolic guard, neighbours past n would leave their shared slot unwritten)
    shared = rng.random() < 0.3 and lanes == 1 and not symbolic
    loop = rng.random() < 0.3
    use_atomic = atomics and rng.random() < 0.2
    use_subgroup = subgroups and rng.random() < 0.5 and lanes == 1 and dtype in (
        "int32", "uint32", "float32")
    vt = dtype if lanes == 1 else f"{dtype}x{lanes}"
    size = '"n"' if symbolic else str(n * lanes)
    idx = "i" if lanes == 1 else "T.ramp(i * 4, 1, 4)"
    leaves = [f"A[{idx}]", f"B[{idx}]"]
    if lanes == 1:
        leaves.append(f'T.cast(tx, "{dtype}")')
    ex = _Expr(rng, dtype, lanes, list(leaves))  # the shared store reads no shared memory
    shared_value = ex.typed(2)
    if shared:
        ex.leaves.append("S[(tx + 1) % {w}]".format(w=width))
    lines = [
        "@T.prim_func",
        f'def fuzz(A: T.Buffer(({size},), "{dtype}"), B: T.Buffer(({size},), "{dtype}"),',
        f'         C: T.Buffer(({size},), "{out}"), H: T.Buffer((16,), "int32")):',
        f'    for bx in T.thread_binding({groups}, thread="blockIdx.x"):',
        f'        for tx in T.thread_binding({width}, thread="threadIdx.x"):',
    ]
    pad = " " * 12
    if shared:
        lines.append(f'{pad}S = T.alloc_buffer(({width},), "{dtype}", scope="shared")')
    lines.append(f"{pad}i = bx * {width} + tx")
    body = []
    if shared:
        body += [f"S[tx] = {shared_value}", "T.barrier()"]
    if loop:
        body.append(f"acc = T.alloc_buffer((1,), \"{vt}\", scope=\"local\")")
        body.append(f"acc[0] = {ex.typed(1)}")
        body.append(f"for k in T.serial({rng.choice([1, 5, 17])}):")
        body.append(f"    acc[0] = acc[0] * {ex.literal()} + {ex.typed(2)}")
        value = "acc[0]"
    else:
        value = ex.typed(3)
    conv = value if out == dtype else ex.convert(value, dtype, out)
    body.append(f"C[{idx}] = {conv}")
    if use_atomic:
        body.append("T.atomic_add(H[i % 16], 1)")
    if use_subgroup:   # (drawn last: programs without one stay as they were)
        group_value = _subgroup_expr(rng, dtype, width, symbolic)
        body.append(f"C[i] = C[i] + {ex.convert(group_value, dtype, out)}")
    if symbolic:
        lines.append(f"{pad}if {'i' if lanes == 1 else 'i * 4 + 3'} < n:")
        lines += [pad + "    " + b for b in body]
    else:
        lines += [pad + b for b in body]
    features = {dtype, f"out:{out}"}
    features |= {name for name, on in (("vector", lanes > 1), ("shared", shared),
                                        ("loop", loop), ("atomic", use_atomic),
                                        ("subgroup", use_subgroup), ("symbolic", symbolic)) if on}
    return FuzzProgram("\n".join(lines) + "\n", frozenset(features), dtype, out, n, lanes, symbolic)
