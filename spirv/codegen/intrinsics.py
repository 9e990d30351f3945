"""Intrinsic calls to GLSL.std.450 and core instructions (mixed into the emitter): the table's
rows (vkir.ir.intrinsics) name their instruction, or a lowering of their own here.

`tanh` is guarded for large arguments (see `_tanh`). `erf` has no GLSL.std.450 instruction: it is emitted as the Abramowitz-Stegun 7.1.26 rational
approximation (absolute error below 1.5e-7). `sigmoid` is 1 / (1 + exp(-x)). Both are built as
vkir expressions over a bound temporary and emitted like any other expression.
"""

from __future__ import annotations

from vkir.errors import UnsupportedError
from vkir.ir.intrinsics import INTRINSICS, OWN, Glsl
from vkir.ir.op import is_atomic, is_subgroup
from vkir.ir import Add, Call, DataType, Div, LT, Let, Mul, Select, Sub, Var, const

from .bit_count import BitCountMixin
from .float_division import fmod

OWN_LOWERINGS = {
    "tanh": "_tanh", "fabs": "_fabs", "fmod": "_fmod", "sigmoid": "_sigmoid", "erf": "_erf",
    "shift_left": "_shift", "shift_right": "_shift", "popcount": "bit_count",
    "clz": "bit_count", "ctz": "bit_count", "reinterpret": "reinterpret",
    "if_then_else": "if_then_else",
}
"""The emitter method lowering each intrinsic whose table row says `spirv=OWN`."""

# Abramowitz & Stegun 7.1.26
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class IntrinsicMixin(BitCountMixin):
    """`call(e)` for Call nodes."""

    def call(self, e: Call) -> int:
        """The result id of an intrinsic: a row of the intrinsic table (a GLSL.std.450 or core
        instruction, or a lowering of its own in OWN_LOWERINGS), an atomic or a subgroup op."""
        op = e.op
        if is_atomic(op):
            if e.args and type(e.args[0]).__name__ == "ImageLoad":
                return self.image_atomic(e)
            return self.atomic(e)
        if is_subgroup(op):
            return self.subgroup(e)
        row = INTRINSICS.get(op)
        if row is None:
            raise UnsupportedError(f"kernel {self.func.name!r}: no SPIR-V lowering for "
                                   f"intrinsic {op!r} in `{e}`")
        spec = row.spirv
        if spec == OWN:
            return getattr(self, OWN_LOWERINGS[op])(e)
        args = [self.expr(a) for a in e.args]
        if isinstance(spec, Glsl):
            self._check_float(e, spec.name, float64=spec.float64)
            return self.glsl(spec.name, self.ty(e.dtype), *args)
        if row.type_rule == "float_predicate":
            self._check_float(e, spec.name, e.args[0].dtype, float64=True)
        else:
            self._check_int(e)
        return self.op(spec.name, self.ty(e.dtype), *args)

    def _fabs(self, e: Call) -> int:
        arg = e.args[0]
        if arg.dtype.is_uint:
            return self.expr(arg)
        name = "FAbs" if arg.dtype.is_float else "SAbs"
        if name == "FAbs":
            self._check_float(e, name, float64=True)
        return self.glsl(name, self.ty(e.dtype), self.expr(arg))

    def _fmod(self, e: Call) -> int:
        self._check_float(e, "FRem", float64=True)
        return self._float_floor(e, fmod, e.args)  # exact, unlike drivers' OpFRem

    def _shift(self, e: Call) -> int:
        self._check_int(e)
        dt = e.dtype
        name = "OpShiftLeftLogical" if e.op == "shift_left" else \
            "OpShiftRightArithmetic" if dt.is_int else "OpShiftRightLogical"
        return self.op(name, self.ty(dt), self.expr(e.args[0]), self._shift_amount(e.args[1]))

    def _sigmoid(self, e: Call) -> int:
        self._check_float(e, "Exp")
        return self._via_ir(e, _sigmoid)

    def _erf(self, e: Call) -> int:
        self._check_float(e, "Exp")
        return self._via_ir(e, _erf)

    def _shift_amount(self, amount) -> int:
        """The shift amount modulo the bit width (vkir's definition; SPIR-V leaves amounts of
        the width or more undefined): an amount whose range is known to be inside [0, bits) as
        it is, anything else masked."""
        dt = amount.dtype
        v = self.expr(amount)
        known = self.ranges.of(amount)  # constants, loop vars, ... in range need no mask
        if known is not None and 0 <= known[0] and known[1] < dt.bits:
            return v
        return self.op("OpBitwiseAnd", self.ty(dt), v, self.const(dt, dt.bits - 1))

    def _check_float(self, e: Call, name: str, dt: DataType | None = None,
                     float64: bool = False) -> None:
        """A float operand (64-bit only where the instruction `name` takes it: `float64`)."""
        dt = dt or e.dtype
        if not dt.is_float:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} needs a float operand, "
                                   f"got {dt} in `{e}`")
        if dt.bits == 64 and not float64:
            raise UnsupportedError(
                f"kernel {self.func.name!r}: {e.op} on float64 has no Vulkan instruction "
                f"(GLSL.std.450 {name} takes 16/32-bit floats); cast to float32 explicitly")

    def _check_int(self, e: Call) -> None:
        if not e.dtype.is_integer:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} needs integer operands, "
                                   f"got {e.dtype}")

    def reinterpret(self, e: Call) -> int:
        """OpBitcast between types of the same total width."""
        src, dst = e.args[0].dtype, e.dtype
        v = self.expr(e.args[0])
        if src == dst:
            return v
        if src.is_bool or dst.is_bool or src.bits * src.lanes != dst.bits * dst.lanes:
            raise UnsupportedError(f"kernel {self.func.name!r}: cannot reinterpret {src} as "
                                   f"{dst} (bit sizes differ or bool)")
        return self.op("OpBitcast", self.ty(dst), v)

    def _tanh(self, e: Call) -> int:
        """tanh(x), but sign(x) where |x| > 10 (tanh(10) rounds to 1 in float16 and float32).
        Vulkan bounds tanh only by its sinh/cosh formula, whose exponentials overflow: SwiftShader
        returns e^x-sized garbage for tanh(89). NaN fails the comparison and stays NaN."""
        dt = e.dtype
        self._check_float(e, "Tanh")
        t = self.ty(dt)
        x = self.expr(e.args[0])
        big = self.op("OpFOrdGreaterThan", self.ty(DataType("bool", 1, dt.lanes)),
                      self.glsl("FAbs", t, x), self.const(dt, 10.0))
        return self.op("OpSelect", t, big, self.glsl("FSign", t, x), self.glsl("Tanh", t, x))

    def _via_ir(self, e: Call, build) -> int:
        """Emit build(x) where x is a temporary bound to the (single) evaluated argument."""
        x = Var("x", e.args[0].dtype)
        with self.bound(x, self.expr(e.args[0])):
            return self.expr(build(x))

    def if_then_else(self, e: Call) -> int:
        """Evaluate only the taken side (a scalar condition branches; a vector condition
        evaluates each side only when some lane takes it, then selects lane-wise)."""
        cond, a, b = e.args
        c = self.expr(cond)
        if cond.dtype.lanes == 1:
            return self.branch_value(c, a, b, e.dtype)
        bt = self.ty(DataType("bool", 1))
        any_true = self.op("OpAny", bt, c)
        all_true = self.op("OpAll", bt, c)
        tv = self.branch_value(any_true, a, None, e.dtype)
        fv = self.branch_value(all_true, None, b, e.dtype)
        return self.op("OpSelect", self.ty(e.dtype), c, tv, fv)


def _sigmoid(x: Var):
    dt = x.dtype
    one = const(1.0, dt)
    return Div(one, Add(one, Call(dt, "exp", (Sub(const(0.0, dt), x),))))


def _erf(x: Var):
    dt = x.dtype
    ax = Call(dt, "fabs", (x,))
    t = Var("t", dt)
    poly = const(_ERF_A[4], dt)
    for coeff in reversed(_ERF_A[:4]):
        poly = Add(Mul(poly, t), const(coeff, dt))
    poly = Mul(poly, t)
    y = Sub(const(1.0, dt), Mul(poly, Call(dt, "exp", (Sub(const(0.0, dt), Mul(ax, ax)),))))
    t_value = Div(const(1.0, dt), Add(const(1.0, dt), Mul(const(_ERF_P, dt), ax)))
    yv = Var("y", dt)
    return Let(t, t_value, Let(yv, y, Select(LT(x, const(0.0, dt)), Sub(const(0.0, dt), yv), yv)))
