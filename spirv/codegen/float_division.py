"""Float floor division and modulo with the interpreter's (numpy's) semantics, built as vkir IR.

numpy derives both from the exact remainder: mod = fmod(a, b); div = (a - mod) / b; when mod is
nonzero and its sign differs from b's, mod += b and div -= 1; a zero mod takes b's sign; the
quotient is floor(div), snapped up when div - floor(div) > 0.5, and a zero quotient takes the sign
of a / b; b == 0 gives a / b and fmod's NaN. float16 is computed in float32 and rounded back.

SPIR-V's OpFRem is fmod only in name: drivers compute a - b * trunc(a / b), which loses every bit
once the quotient passes 2**24 (1e9 % 1.1 gives 0), and lavapipe's fma is not fused, so float
reduction steps are not exact either. The exact remainder is computed on the integer bits: with
|a| = ma * 2**ea and |b| = mb * 2**eb (integer mantissas), fmod is (ma * 2**(ea - eb) mod mb) *
2**eb, reduced a few exponent bits at a time ((r << s) mod mb fits the float's width: 8 bits per
step for float32, 11 for float64), and the result's bits are rebuilt from r (normal or
subnormal) without any float rounding. The remaining float operations ((a - mod) / b, floor)
are exact IEEE operations, which the emitter decorates NoContraction.

The reduction is a loop (`RemainderLoop`, emitted by the codegen as one SPIR-V loop) that runs
while the exponent difference left is nonzero: at most 186 iterations for float64, and few for
operands of similar magnitude. Unrolled for the largest difference (191 steps for float64), one
float64 `//` was 1,600 SPIR-V instructions: a float64x4 one took llvmpipe 40 s and more to
compile, and a kernel with 90 of them took minutes to generate and validate.

Each builder returns a `Staged` computation: let-bindings, then the loop, then the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vkir.ir import (Add, And, Call, Cast, DataType, Div, EQ, FloorMod, GE, GT, LT, Let, NE, Or,
                     PrimExpr, Select, Sub, Var, const)

# reduction steps per iteration of the emitted loop (its back edges count against llvmpipe's
# loop limit: float32 needs at most 4 iterations, float64 24)
REMAINDER_UNROLL = 8

# per float width: (stored mantissa bits, exponent bias)
_FORMAT = {32: (23, 127), 64: (52, 1023)}


@dataclass(frozen=True)
class RemainderLoop:
    """`result` = r * 2**d mod `divisor`, computed from r = `r` (< divisor) and d = `d` (unsigned,
    scalar or vector) as: while any lane of d is nonzero, s = min(d, `step`), r = (r << s) mod
    divisor, d = d - s. `step` is small enough that r << s never overflows; d never exceeds
    `max_d`, which bounds the iterations (see `iterations`)."""

    result: Var
    r: PrimExpr
    d: PrimExpr
    divisor: PrimExpr
    step: int
    max_d: int

    @property
    def iterations(self) -> int:
        """The most iterations the emitted loop runs (REMAINDER_UNROLL steps each)."""
        return _iterations(self.max_d, self.step)


def _reduction(width: int) -> tuple[int, int]:
    """(bits reduced per step, the largest exponent difference) of a `width`-bit float: r <
    2**(m+1), so r << step fits the width; the difference is at most the largest exponent
    field less the smallest."""
    m, _ = _FORMAT[width]
    return width - m - 1, (1 << (width - m - 1)) - 2


def _iterations(max_d: int, step: int) -> int:
    steps = -(-max_d // step)
    return -(-steps // REMAINDER_UNROLL)


def remainder_iterations(float_bits: int) -> int:
    """The most iterations of the loop a float `//`, `%` or fmod of `float_bits` emits (float16
    computes in float32): what it spends of a driver's loop budget."""
    step, max_d = _reduction(64 if float_bits == 64 else 32)
    return _iterations(max_d, step)


@dataclass(frozen=True)
class Staged:
    """A computation in three stages: the let-bindings `binds` ((var, value) in order, each
    value over the vars before it), then `loop` (which binds its result var), then `value`."""

    binds: tuple
    loop: RemainderLoop
    value: PrimExpr


class _Lets:
    """Let-bindings collected in order: those before the remainder loop, then those after."""

    def __init__(self):
        self.binds: list[tuple[Var, PrimExpr]] = []
        self.before: tuple = ()
        self.loop: RemainderLoop | None = None

    def let(self, name: str, value: PrimExpr) -> Var:
        var = Var(name, value.dtype)
        self.binds.append((var, value))
        return var

    def remainder_loop(self, r: PrimExpr, d: PrimExpr, divisor: PrimExpr, step: int,
                       max_d: int) -> Var:
        """The var of a RemainderLoop's result; the bindings so far come before the loop."""
        assert self.loop is None, "one remainder loop per computation"
        result = Var("r", r.dtype)
        self.before, self.binds = tuple(self.binds), []
        self.loop = RemainderLoop(result, r, d, divisor, step, max_d)
        return result

    def staged(self, value: PrimExpr) -> Staged:
        """The bindings, the loop and `value` (the bindings after the loop wrap it in Lets)."""
        for var, bound in reversed(self.binds):
            value = Let(var, bound, value)
        return Staged(self.before, self.loop, value)


def _call(dt: DataType, op: str, *args) -> Call:
    return Call(dt, op, tuple(args))


def _bits(dt: DataType) -> DataType:
    return DataType("uint", dt.bits, dt.lanes)


def _bool(dt: DataType) -> DataType:
    return DataType("bool", 1, dt.lanes)


def _sign_of(v: PrimExpr) -> PrimExpr:
    """The sign bit of the float `v` (as an unsigned integer of its width)."""
    ut = _bits(v.dtype)
    return _call(ut, "bitwise_and", _call(ut, "reinterpret", v), const(1 << (v.dtype.bits - 1), ut))


def _with_sign(magnitude: PrimExpr, sign: PrimExpr) -> PrimExpr:
    """copysign for a `magnitude` whose sign bit is clear (`sign` from _sign_of)."""
    dt, ut = magnitude.dtype, _bits(magnitude.dtype)
    return _call(dt, "reinterpret",
                 _call(ut, "bitwise_or", _call(ut, "reinterpret", magnitude), sign))


def _zero_like(v: PrimExpr) -> PrimExpr:
    """copysign(0, v)."""
    return _call(v.dtype, "reinterpret", _sign_of(v))


def _u(value: int, ut: DataType) -> PrimExpr:
    return const(value, ut)


def _fmod(lets: _Lets, a: Var, b: Var) -> Var:
    """The exact C fmod(a, b) (see the module docstring), in integer arithmetic."""
    dt = a.dtype
    w = dt.bits
    m, bias = _FORMAT[w]
    ut, it, bt = _bits(dt), DataType("int", w, dt.lanes), _bool(dt)
    step, max_d = _reduction(w)
    frac_mask, implicit = (1 << m) - 1, 1 << m
    bx = lets.let("bx", _call(ut, "bitwise_and", _call(ut, "reinterpret", a),
                              _u((1 << (w - 1)) - 1, ut)))
    by = lets.let("by", _call(ut, "bitwise_and", _call(ut, "reinterpret", b),
                              _u((1 << (w - 1)) - 1, ut)))

    def split(v, name):  # v's magnitude is mant * 2**(exp - bias - m)
        field = lets.let(name + "e", _call(ut, "shift_right", v, _u(m, ut)))
        frac = _call(ut, "bitwise_and", v, _u(frac_mask, ut))
        subnormal = EQ(field, _u(0, ut))
        mant = lets.let(name + "m", Select(subnormal, frac,
                                           _call(ut, "bitwise_or", frac, _u(implicit, ut))))
        exp = lets.let(name + "x", Select(subnormal, _u(1, ut), field))
        return mant, exp

    mx, ex = split(bx, "x")
    my, ey = split(by, "y")
    divisor = lets.let("my", Select(EQ(my, _u(0, ut)), _u(1, ut), my))
    # needed where |a| >= |b| (then ex >= ey); elsewhere fmod is a and the loop need not run
    d = lets.let("d", Select(GE(ex, ey), Sub(ex, ey), _u(0, ut)))
    r0 = lets.let("r0", FloorMod(mx, divisor))
    r = lets.remainder_loop(r0, d, divisor, step, max_d)  # r = mx * 2**d mod my
    # the bits of r * 2**(ey - bias - m), normal or subnormal (r < my, so it is a float)
    top = Sub(_call(ut, "shift_right", _call(ut, "reinterpret", Cast(dt, r)), _u(m, ut)),
              _u(bias, ut))                                     # floor(log2(r))
    top = lets.let("top", top)
    biased = lets.let("biased", Sub(Add(Cast(it, top), Cast(it, ey)), const(m, it)))
    normal = _call(ut, "bitwise_or",
                   _call(ut, "shift_left", Cast(ut, biased), _u(m, ut)),
                   _call(ut, "bitwise_and",
                         _call(ut, "shift_left", r, Sub(_u(m, ut), top)), _u(frac_mask, ut)))
    subnormal = _call(ut, "shift_left", r, Sub(ey, _u(1, ut)))
    bits = Select(EQ(r, _u(0, ut)), _u(0, ut),
                  Select(GE(biased, const(1, it)), normal, subnormal))
    bits = Select(LT(bx, by), bx, bits)  # |a| < |b| (b may be inf): fmod is a
    nan = Or(Or(_call(bt, "isnan", a), _call(bt, "isnan", b)),
             Or(_call(bt, "isinf", a), EQ(b, const(0.0, dt))))
    magnitude = Select(nan, const(math.nan, dt), _call(dt, "reinterpret", bits))
    return lets.let("fmod", _with_sign(magnitude, _sign_of(a)))


def _divmod(a: Var, b: Var, want: str) -> Staged:
    """numpy's floor_divide ("div"), remainder ("mod") or C's fmod ("fmod") of the float vars a
    and b."""
    dt = a.dtype
    if dt.bits == 16:  # numpy computes float16 in float32
        wide = DataType("float", 32, dt.lanes)
        a32, b32 = Var("a", wide), Var("b", wide)
        inner = _divmod(a32, b32, want)
        return Staged(((a32, Cast(wide, a)), (b32, Cast(wide, b))) + inner.binds, inner.loop,
                      Cast(dt, inner.value))
    lets = _Lets()
    zero, one = const(0.0, dt), const(1.0, dt)
    mod = _fmod(lets, a, b)
    if want == "fmod":
        return lets.staged(mod)
    fix = lets.let("fix", And(NE(mod, zero), NE(LT(b, zero), LT(mod, zero))))
    if want == "mod":
        return lets.staged(Select(fix, Add(mod, b), Select(EQ(mod, zero), _zero_like(b), mod)))
    div = lets.let("div", Div(Sub(a, mod), b))
    div = lets.let("div", Select(fix, Sub(div, one), div))
    floor = lets.let("floor", _call(dt, "floor", div))
    snapped = Select(GT(Sub(div, floor), const(0.5, dt)), Add(floor, one), floor)
    quotient = lets.let("quotient", Div(a, b))
    result = Select(NE(div, zero), snapped, _zero_like(quotient))
    return lets.staged(Select(EQ(b, zero), quotient, result))


def floor_div(a: Var, b: Var) -> Staged:
    """`a // b` on floats, as numpy computes it, from operations that are exact."""
    return _divmod(a, b, "div")


def floor_mod(a: Var, b: Var) -> Staged:
    """`a % b` on floats, as numpy computes it, from operations that are exact."""
    return _divmod(a, b, "mod")


def fmod(a: Var, b: Var) -> Staged:
    """C's fmod (the truncated remainder, `Mod` on floats and T.fmod), exactly."""
    return _divmod(a, b, "fmod")
