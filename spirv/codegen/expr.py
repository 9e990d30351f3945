"""Expressions to SPIR-V values (mixed into the kernel emitter).

Float floor division and modulo are numpy's, computed exactly (float_division.py).
Integer division follows Vulkan's rules: OpSDiv (truncating) is defined for negative operands,
OpSRem/OpSMod are not, so truncated remainder and floor division/modulo are computed from OpSDiv
with a sign correction. Where the ranges in scope (vkir.arith.ranges) prove the operands non-negative,
the unsigned instructions are used instead; a floor division or modulo by a power of two is a
shift or a mask. Integer +, -, * carry NoSignedWrap/NoUnsignedWrap where the ranges prove it.
"""

from __future__ import annotations

import math
from contextlib import ExitStack

from vkir.arith.linear import wrap

from .wide_compare import is_split, split_compare
from .float_division import REMAINDER_UNROLL, RemainderLoop, floor_div, floor_mod, fmod
from vkir.errors import TypeCheckError, UnsupportedError
from vkir.ir import (Add, And, Broadcast, BufferLoad, Call, Cast, DataType, Div, EQ, FloatImm,
                     FloorDiv, FloorMod, GE, GT, IntImm, LE, LT, Let, Max, Min, Mod, Mul, NE,
                     Not, Or, PrimExpr, Ramp, Select, Shuffle, Sub, Var)

_ARITH = {Add: ("OpIAdd", "OpFAdd"), Sub: ("OpISub", "OpFSub"), Mul: ("OpIMul", "OpFMul")}
# comparison -> (signed int, unsigned int, float, bool)
_CMP = {
    EQ: ("OpIEqual", "OpIEqual", "OpFOrdEqual", "OpLogicalEqual"),
    NE: ("OpINotEqual", "OpINotEqual", "OpFUnordNotEqual", "OpLogicalNotEqual"),
    LT: ("OpSLessThan", "OpULessThan", "OpFOrdLessThan", None),
    LE: ("OpSLessThanEqual", "OpULessThanEqual", "OpFOrdLessThanEqual", None),
    GT: ("OpSGreaterThan", "OpUGreaterThan", "OpFOrdGreaterThan", None),
    GE: ("OpSGreaterThanEqual", "OpUGreaterThanEqual", "OpFOrdGreaterThanEqual", None),
}
_MINMAX = {Min: ("SMin", "UMin", "FMin", "OpLogicalAnd"),
           Max: ("SMax", "UMax", "FMax", "OpLogicalOr")}


def _int_const(e: PrimExpr) -> int | None:
    if isinstance(e, Broadcast):
        e = e.value
    return e.value if isinstance(e, IntImm) else None


def _fold_int(e) -> int | PrimExpr | None:
    """An integer Add/Sub/Mul of two constants as its (wrapped) value, or the operand that an
    identity (x + 0, 0 + x, x - 0, x * 1, 1 * x) leaves; None otherwise."""
    if not e.a.dtype == e.b.dtype == e.dtype:
        return None  # ill-typed: left to the rules that report it
    a, b = _int_const(e.a), _int_const(e.b)
    if a is not None and b is not None:
        return wrap(a + b if isinstance(e, Add) else a - b if isinstance(e, Sub) else a * b, e.dtype)
    unit = 1 if isinstance(e, Mul) else 0
    if b == unit:
        return e.a
    if a == unit and not isinstance(e, Sub):
        return e.b
    return None


def _log2_const(e: PrimExpr) -> int | None:
    """k when `e` is the integer constant 2**k (k >= 0; scalar or broadcast), else None."""
    if isinstance(e, Broadcast):
        e = e.value
    if isinstance(e, IntImm) and e.value >= 1 and e.value & (e.value - 1) == 0:
        k = e.value.bit_length() - 1
        return k if k < e.dtype.bits - 1 else None
    return None


def _kind(dt: DataType) -> int:
    return {"int": 0, "uint": 1, "float": 2, "bool": 3}[dt.code]


class ExprMixin:
    """`expr(e)` emits `e` at the current point and returns its result id."""

    def expr(self, e: PrimExpr) -> int:
        """The result id of expression `e` (one `e_*` method per node kind)."""
        method = self._expr_methods.get(type(e))
        if method is None:
            raise UnsupportedError(f"kernel {self.func.name!r}: codegen has no rule for "
                                   f"{type(e).__name__} (`{e}`)")
        return method(self, e)

    # -- leaves --------------------------------------------------------------------------------

    def e_const(self, e) -> int:
        """A constant."""
        return self.const(e.dtype, e.value)

    def e_var(self, e: Var) -> int:
        """A var's value: a parameter, loop var, let value or builtin."""
        vid = self.values.get(e)
        if vid is None:
            from vkir.errors import WellFormedError

            raise WellFormedError(f"kernel {self.func.name!r}: variable {e.name!r} is used "
                                  "where it is not defined")
        return vid

    # -- arithmetic ----------------------------------------------------------------------------

    def e_arith(self, e) -> int:
        """+, -, *, with NoSignedWrap/NoUnsignedWrap where the ranges prove them."""
        if e.dtype.is_integer:
            folded = _fold_int(e)
            if folded is not None:  # constants (e.g. in an unrolled copy) and x + 0, x * 1
                return self.const(e.dtype, folded) if isinstance(folded, int) \
                    else self.expr(folded)
        a, b = self.expr(e.a), self.expr(e.b)
        int_op, float_op = _ARITH[type(e)]
        if e.dtype.is_float:
            return self.op(float_op, self.ty(e.dtype), a, b)
        return self.int_op(int_op, e, self.ty(e.dtype), a, b)

    # -- integer division ----------------------------------------------------------------------
    # A signed division or remainder costs a sign correction, and a division by a variable is
    # a real division on most devices. Where the ranges in scope prove the dividend
    # non-negative and the divisor positive, floor and truncating division agree with the
    # unsigned one, so the plain unsigned instruction (or a shift/mask for a power of two) is
    # exact. A floor division or modulo by a positive power of two is a shift or mask for any
    # dividend (two's complement).

    def e_div(self, e: Div) -> int:
        """Truncating division (OpSDiv/OpUDiv/OpFDiv)."""
        dt = e.dtype
        if dt.is_int and self._unsigned_ok(e):
            return self._udiv(e, "OpUDiv")
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float:
            return self._float_div(dt, a, b)
        name = "OpUDiv" if dt.is_uint else "OpSDiv"
        return self.op(name, self.ty(dt), a, b)

    def _float_div(self, dt: DataType, a: int, b: int) -> int:
        """IEEE a / b: Vulkan leaves division by zero undefined (lavapipe gives 0), so a zero
        divisor gives NaN (a zero or NaN) or an infinity signed by the operands' signs."""
        t, bt = self.ty(dt), self.types.bool_of(dt.lanes)
        ut = self.ty(DataType("uint", dt.bits, dt.lanes))
        udt = DataType("uint", dt.bits, dt.lanes)
        q = self.op("OpFDiv", t, a, b)
        zero = self.const(dt, 0.0)
        by_zero = self.op("OpFOrdEqual", bt, b, zero)
        sign = self.op("OpBitwiseAnd", ut,
                       self.op("OpBitwiseXor", ut, self.op("OpBitcast", ut, a),
                               self.op("OpBitcast", ut, b)),
                       self.const(udt, 1 << (dt.bits - 1)))
        inf = self.op("OpBitcast", t, self.op("OpBitwiseOr", ut, sign,
                                               self.op("OpBitcast", ut, self.const(dt, math.inf))))
        undefined = self.op("OpLogicalOr", bt, self.op("OpFOrdEqual", bt, a, zero),
                            self.op("OpIsNan", bt, a))
        special = self.op("OpSelect", t, undefined, self.const(dt, math.nan), inf)
        return self.op("OpSelect", t, by_zero, special, q)

    def e_mod(self, e: Mod) -> int:
        """Truncating modulo (OpSRem/OpUMod/OpFRem)."""
        dt = e.dtype
        if dt.is_int and self._unsigned_ok(e):
            return self._udiv(e, "OpUMod")
        if dt.is_float:
            return self._float_floor(e, fmod)
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_uint:
            return self.op("OpUMod", self.ty(dt), a, b)
        return self._trunc_rem(dt, a, b, self.op("OpSDiv", self.ty(dt), a, b))

    def e_floordiv(self, e: FloorDiv) -> int:
        """Floor division: unsigned or shift instructions where the ranges allow, else a sign
        correction."""
        dt, t = e.dtype, self.ty(e.dtype)
        if dt.is_int:
            k = _log2_const(e.b)
            if k is not None:
                a = self.expr(e.a)
                return a if k == 0 else self.op("OpShiftRightArithmetic", t, a, self.const(dt, k))
            if self._unsigned_ok(e):
                return self._udiv(e, "OpUDiv")
        if dt.is_float:
            return self._float_floor(e, floor_div)
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_uint:
            return self.op("OpUDiv", t, a, b)
        q = self.op("OpSDiv", t, a, b)
        fix = self._needs_floor_fix(e.b, self._trunc_rem(dt, a, b, q), b)
        return self.op("OpSelect", t, fix, self.op("OpISub", t, q, self.const(dt, 1)), q)

    def e_floormod(self, e: FloorMod) -> int:
        """Floor modulo: unsigned or mask instructions where the ranges allow, else a sign
        correction."""
        dt, t = e.dtype, self.ty(e.dtype)
        if dt.is_int:
            k = _log2_const(e.b)
            if k is not None:
                return self.op("OpBitwiseAnd", t, self.expr(e.a), self.const(dt, (1 << k) - 1))
            if self._unsigned_ok(e):
                return self._udiv(e, "OpUMod")
        if dt.is_float:
            return self._float_floor(e, floor_mod)
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_uint:
            return self.op("OpUMod", t, a, b)
        r = self._trunc_rem(dt, a, b, self.op("OpSDiv", t, a, b))
        fix = self._needs_floor_fix(e.b, r, b)
        return self.op("OpSelect", t, fix, self.op("OpIAdd", t, r, b), r)

    def _float_floor(self, e, build, args=None) -> int:
        """Float `//`, `%` or fmod as the interpreter defines it (float_division.py), its exact
        sequence decorated NoContraction whatever the kernel's `precise`: the bindings, the
        remainder loop, then the result."""
        x, y = args or (e.a, e.b)
        a, b = Var("a", e.dtype), Var("b", e.dtype)
        a_id, b_id = self.expr(x), self.expr(y)
        precise, self.precise = self.precise, True
        try:
            with ExitStack() as scope:
                scope.enter_context(self.bound(a, a_id))
                scope.enter_context(self.bound(b, b_id))
                plan = build(a, b)
                for var, value in plan.binds:
                    scope.enter_context(self.bound(var, self.expr(value)))
                    scope.enter_context(self.ranges.bound_to(var, value))
                loop = plan.loop
                scope.enter_context(self.bound(loop.result, self._remainder_loop(loop)))
                return self.expr(plan.value)
        finally:
            self.precise = precise

    def _remainder_loop(self, loop: RemainderLoop) -> int:
        """The result of a RemainderLoop, as one structured loop whose r and d are OpPhis:
        header (phis, OpLoopMerge) -> check (any lane of d nonzero?) -> body -> continue ->
        header; the result is r in the header, which dominates the merge block. The body reduces
        REMAINDER_UNROLL steps per back edge (a step with d = 0 shifts by 0 and keeps r < divisor,
        so the extra steps need no guard): drivers that count back edges against a loop limit
        (llvmpipe) spend that many times fewer of them. A counter also stops the loop after the
        most iterations d allows, so that no miscompiled step can make it run on (an NVIDIA H200
        lost the device in a float64 // of this loop without one, with min() as GLSL's UMin)."""
        dt = loop.r.dtype
        t = self.ty(dt)
        bt = self.types.bool_of(dt.lanes)
        u32 = DataType("uint", 32, 1)
        r0, d0, divisor = self.expr(loop.r), self.expr(loop.d), self.expr(loop.divisor)
        step = self.const(dt, loop.step)
        entry = self.label
        header, check, body, cont, merge = (self.b.new_id() for _ in range(5))
        r, d, n, r_next, d_next, n_next = (self.b.new_id() for _ in range(6))
        self.do("OpBranch", header)
        self.start_block(header)
        self.b.encode(self.code, "OpPhi", t, r, r0, entry, r_next, cont)
        self.b.encode(self.code, "OpPhi", t, d, d0, entry, d_next, cont)
        self.b.encode(self.code, "OpPhi", self.ty(u32), n, self.const(u32, 0), entry, n_next, cont)
        self.do("OpLoopMerge", merge, cont, self.b.enum("LoopControl", "None"))
        self.do("OpBranch", check)
        self.start_block(check)
        more = self.op("OpINotEqual", bt, d, self.const(dt, 0))
        if dt.lanes > 1:
            more = self.op("OpAny", self.types.bool_of(1), more)
        within = self.op("OpULessThan", self.types.bool_of(1), n,
                         self.const(u32, loop.iterations))
        more = self.op("OpLogicalAnd", self.types.bool_of(1), more, within)
        self.do("OpBranchConditional", more, body, merge)
        self.start_block(body)

        def step_of(d_k):   # min(d_k, step), as a comparison (no extended instruction)
            return self.op("OpSelect", t, self.op("OpULessThan", bt, d_k, step), d_k, step)

        r_k, d_k = r, d
        for _ in range(REMAINDER_UNROLL - 1):
            s = step_of(d_k)
            r_k = self.op("OpUMod", t, self.op("OpShiftLeftLogical", t, r_k, s), divisor)
            d_k = self.op("OpISub", t, d_k, s)
        s = step_of(d_k)
        self.b.encode(self.code, "OpUMod", t, r_next,
                      self.op("OpShiftLeftLogical", t, r_k, s), divisor)
        self.b.encode(self.code, "OpISub", t, d_next, d_k, s)
        self.b.encode(self.code, "OpIAdd", self.ty(u32), n_next, n, self.const(u32, 1))
        self.do("OpBranch", cont)
        self.start_block(cont)
        self.do("OpBranch", header)
        self.start_block(merge)
        return r

    def _unsigned_ok(self, e) -> bool:
        """Dividend >= 0 and divisor >= 1 in every lane: floor, truncating and unsigned
        division (and remainder) agree."""
        return self.ranges.nonnegative(e.a) and self.ranges.positive(e.b)

    def _udiv(self, e, opname: str) -> int:
        """OpUDiv/OpUMod of two int operands proven non-negative (as their uint bit patterns,
        which hold the same values), or a shift/mask for a power-of-two constant divisor."""
        dt = e.dtype
        t = self.ty(dt)
        a = self.expr(e.a)
        k = _log2_const(e.b)
        if k is not None:
            if opname == "OpUMod":
                return self.op("OpBitwiseAnd", t, a, self.const(dt, (1 << k) - 1))
            return a if k == 0 else self.op("OpShiftRightLogical", t, a, self.const(dt, k))
        udt = DataType("uint", dt.bits, dt.lanes)
        ut = self.ty(udt)
        ua = self.op("OpBitcast", ut, a)
        ub = self.op("OpBitcast", ut, self.expr(e.b))
        return self.op("OpBitcast", t, self.op(opname, ut, ua, ub))

    def _trunc_rem(self, dt, a, b, q) -> int:
        """a - b * q: the truncated remainder from the truncated quotient q."""
        t = self.ty(dt)
        return self.op("OpISub", t, a, self.op("OpIMul", t, b, q))

    def _needs_floor_fix(self, divisor: PrimExpr, r, b) -> int:
        """r != 0 and sign(r) != sign(b): the truncated result must move one step down. With
        the divisor's sign known from its range this is a single comparison of r."""
        dt = divisor.dtype
        bt = self.types.bool_of(dt.lanes)
        zero = self.const(dt, 0)
        if self.ranges.positive(divisor):
            return self.op("OpSLessThan", bt, r, zero)
        if self.ranges.negative(divisor):
            return self.op("OpSGreaterThan", bt, r, zero)
        nonzero = self.op("OpINotEqual", bt, r, zero)
        r_neg = self.op("OpSLessThan", bt, r, zero)
        b_neg = self.op("OpSLessThan", bt, b, zero)
        differ = self.op("OpLogicalNotEqual", bt, r_neg, b_neg)
        return self.op("OpLogicalAnd", bt, nonzero, differ)

    def e_minmax(self, e) -> int:
        """min/max (GLSL.std.450 SMin/UMin/FMin and the like)."""
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return self.float_minmax(isinstance(e, Min), e.dtype, a, b)
        name = _MINMAX[type(e)][_kind(e.dtype)]
        if e.dtype.is_bool:
            return self.op(name, self.ty(e.dtype), a, b)
        return self.glsl(name, self.ty(e.dtype), a, b)

    def float_minmax(self, is_min: bool, dtype, a: int, b: int) -> int:
        """T.min/T.max of float ids `a`, `b` as the interpreter computes them: (a < b or a is
        NaN) ? a : b (GLSL's FMin leaves NaN and -0.0 vs 0.0 undefined)."""
        bt = self.types.bool_of(dtype.lanes)
        cmp = "OpFOrdLessThan" if is_min else "OpFOrdGreaterThan"
        first = self.op("OpLogicalOr", bt, self.op(cmp, bt, a, b), self.op("OpIsNan", bt, a))
        return self.op("OpSelect", self.ty(dtype), first, a, b)

    def e_cmp(self, e) -> int:
        """A comparison, signed, unsigned or ordered float by type (signed 64-bit orderings on
        32-bit words where the driver has the "int64_signed_compare" quirk)."""
        a, b = self.expr(e.a), self.expr(e.b)
        if is_split(type(e), e.a.dtype, self.target.quirks):
            return split_compare(self, type(e), a, b, e.a.dtype)
        name = _CMP[type(e)][_kind(e.a.dtype)]
        if name is None:  # ordering of bools: compare as integers
            it = self.ty(DataType("int", 32, e.a.dtype.lanes))
            one, zero = self.const(DataType("int", 32, e.a.dtype.lanes), 1), \
                self.const(DataType("int", 32, e.a.dtype.lanes), 0)
            a = self.op("OpSelect", it, a, one, zero)
            b = self.op("OpSelect", it, b, one, zero)
            name = _CMP[type(e)][0]
        return self.op(name, self.types.bool_of(e.a.dtype.lanes), a, b)

    def e_logic(self, e) -> int:
        """`and`/`or` on bools."""
        a, b = self.expr(e.a), self.expr(e.b)
        name = "OpLogicalAnd" if isinstance(e, And) else "OpLogicalOr"
        return self.op(name, self.ty(e.dtype), a, b)

    def e_not(self, e: Not) -> int:
        """`not` on bools."""
        return self.op("OpLogicalNot", self.ty(e.dtype), self.expr(e.a))

    # -- selection, casts, vectors -------------------------------------------------------------

    def e_select(self, e: Select) -> int:
        """OpSelect (a scalar condition broadcast over vector values)."""
        c = self.expr(e.condition)
        t, f = self.expr(e.true_value), self.expr(e.false_value)
        lanes = e.dtype.lanes
        if e.condition.dtype.lanes == 1 and lanes > 1:
            c = self.splat(c, e.condition.dtype, lanes)
        return self.op("OpSelect", self.ty(e.dtype), c, t, f)

    def e_cast(self, e: Cast) -> int:
        """A value conversion."""
        return self.convert(self.expr(e.value), e.value.dtype, e.dtype)

    def _uint32_to_float_rounded(self, v: int, src: DataType, dst: DataType) -> int:
        """uint32 -> float32 rounded to nearest even on a driver that truncates values of 2^31
        and above (the "uint_to_float_rtz" quirk): both 16-bit halves convert exactly, so
        hi * 65536 + lo rounds once, in the add."""
        t, ut = self.ty(dst), self.ty(src)
        hi = self.op("OpConvertUToF", t, self.op("OpShiftRightLogical", ut, v, self.const(src, 16)))
        lo = self.op("OpConvertUToF", t, self.op("OpBitwiseAnd", ut, v, self.const(src, 0xFFFF)))
        return self.op("OpFAdd", t, self.op("OpFMul", t, hi, self.const(dst, 65536.0)), lo)

    def convert(self, v: int, src: DataType, dst: DataType) -> int:
        """Value conversion between any int/uint/float widths and bool (lane count kept)."""
        if src == dst:
            return v
        if src.lanes != dst.lanes:
            raise TypeCheckError(f"kernel {self.func.name!r}: cast from {src} to {dst} changes "
                                 "the lane count")
        t = self.ty(dst)
        if dst.is_bool:
            zero = self.const(src, 0)
            return self.op("OpFUnordNotEqual" if src.is_float else "OpINotEqual", t, v, zero)
        if src.is_bool:
            return self.op("OpSelect", t, v, self.const(dst, 1), self.const(dst, 0))
        if src.is_float and dst.is_float:
            return self.op("OpFConvert", t, v)
        if src.is_float:
            return self._float_to_int(v, src, dst)
        if dst.is_float:
            if src.is_uint and src.bits == 32 and dst.bits == 32 and \
                    "uint_to_float_rtz" in self.target.quirks:
                return self._uint32_to_float_rounded(v, src, dst)
            return self.op("OpConvertSToF" if src.is_int else "OpConvertUToF", t, v)
        if src.bits == dst.bits:
            return self.op("OpBitcast", t, v)
        if src.bits == 64 and dst.bits < 64:
            return self._narrow_from_64(v, src, dst)
        # width change: extend by the source's signedness, into a same-signedness type
        mid = DataType(src.code, dst.bits, dst.lanes)
        v = self.op("OpSConvert" if src.is_int else "OpUConvert", self.ty(mid), v)
        return v if mid == dst else self.op("OpBitcast", t, v)

    def _narrow_from_64(self, v: int, src: DataType, dst: DataType) -> int:
        """A 64-bit integer truncated to a narrower one through its low 32-bit word (a bit cast
        to two words, component 0 being the low one), not OpUConvert: NVIDIA's compiler turned
        OpUConvert of a saturating float -> uint64 conversion into a saturating float -> uint32
        one (2^32 narrowed to uint32 gave 4294967295, not 0)."""
        word, pair = DataType("uint", 32, 1), DataType("uint", 32, 2)
        lanes = []
        for lane in range(src.lanes):
            x = v if src.lanes == 1 else self.op("OpCompositeExtract", self.ty(src.element_of()),
                                                 v, lane)
            bits = self.op("OpBitcast", self.ty(pair), x)
            lanes.append(self.op("OpCompositeExtract", self.ty(word), bits, 0))
        low_t = DataType("uint", 32, src.lanes)
        low = lanes[0] if src.lanes == 1 else \
            self.op("OpCompositeConstruct", self.ty(low_t), *lanes)
        if dst.bits == 32:
            return low if dst == low_t else self.op("OpBitcast", self.ty(dst), low)
        narrow = DataType("uint", dst.bits, dst.lanes)
        r = self.op("OpUConvert", self.ty(narrow), low)
        return r if narrow == dst else self.op("OpBitcast", self.ty(dst), r)

    def _float_to_int(self, v: int, src: DataType, dst: DataType) -> int:
        """Saturating conversion, the interpreter's: truncation toward zero, NaN -> 0, values
        beyond dst's range -> its minimum or maximum (SPIR-V leaves those undefined, so the
        converted value is replaced where a comparison in src says it is out of range)."""
        t = self.ty(dst)
        bt = self.types.bool_of(dst.lanes)
        converted = self.op("OpConvertFToS" if dst.is_int else "OpConvertFToU", t, v)
        fmax = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}[src.bits]
        top = 2.0 ** (dst.bits - 1 if dst.is_int else dst.bits)  # the first value too large
        lo_int = -(1 << (dst.bits - 1)) if dst.is_int else 0
        if top <= fmax:
            high = self.op("OpFOrdGreaterThanEqual", bt, v, self.const(src, top))
        else:  # every finite src value fits: only +inf is too large
            high = self.op("OpFOrdGreaterThan", bt, v, self.const(src, fmax))
        if dst.is_uint:  # truncation gives a negative value from -1 down
            low = self.op("OpFOrdLessThanEqual", bt, v, self.const(src, -1.0))
        elif -lo_int <= fmax:
            low = self.op("OpFOrdLessThan", bt, v, self.const(src, float(lo_int)))
        else:
            low = self.op("OpFOrdLessThan", bt, v, self.const(src, -fmax))
        nan = self.op("OpIsNan", bt, v)
        hi_int = (1 << (dst.bits - 1)) - 1 if dst.is_int else (1 << dst.bits) - 1
        r = self.op("OpSelect", t, high, self.const(dst, hi_int), converted)
        r = self.op("OpSelect", t, low, self.const(dst, lo_int), r)
        return self.op("OpSelect", t, nan, self.const(dst, 0), r)

    def splat(self, v: int, dt: DataType, lanes: int) -> int:
        """A `lanes`-wide vector of the scalar value `v` of type `dt`."""
        return self.op("OpCompositeConstruct", self.ty(dt.with_lanes(lanes)), *([v] * lanes))

    def e_ramp(self, e: Ramp) -> int:
        """base + stride * [0, 1, ...] as a vector."""
        base, stride, lanes = e.base, e.stride, e.lanes
        sdt = base.dtype
        if sdt.lanes != 1:
            raise UnsupportedError(f"kernel {self.func.name!r}: Ramp of a vector base in `{e}`")
        if lanes == 1:
            return self.expr(base)
        if isinstance(base, (IntImm, FloatImm)) and isinstance(stride, (IntImm, FloatImm)):
            vals = [base.value + k * stride.value for k in range(lanes)]
            return self.const_vector(sdt, vals)
        vdt = sdt.with_lanes(lanes)
        b = self.splat(self.expr(base), sdt, lanes)
        iota = self.const_vector(sdt, list(range(lanes)))
        if isinstance(stride, (IntImm, FloatImm)):
            steps = self.const_vector(sdt, [k * stride.value for k in range(lanes)])
        else:
            s = self.splat(self.expr(stride), sdt, lanes)
            steps = self.op("OpFMul" if sdt.is_float else "OpIMul", self.ty(vdt), s, iota)
        return self.op("OpFAdd" if sdt.is_float else "OpIAdd", self.ty(vdt), b, steps)

    def e_broadcast(self, e: Broadcast) -> int:
        """A vector of one value."""
        if e.lanes == 1:
            return self.expr(e.value)
        if isinstance(e.value, (IntImm, FloatImm)):
            return self.const(e.dtype, e.value.value)
        v = self.expr(e.value)
        return self.op("OpCompositeConstruct", self.ty(e.dtype), *([v] * e.lanes))

    def e_shuffle(self, e: Shuffle) -> int:
        """OpVectorShuffle (or composite extracts for one lane)."""
        ids = [self.expr(v) for v in e.vectors]
        lanes = [v.dtype.lanes for v in e.vectors]
        edt = e.dtype.element_of()
        if all(n > 1 for n in lanes) and len(ids) <= 2 and len(e.indices) > 1:
            first, second = ids[0], ids[-1]
            return self.op("OpVectorShuffle", self.ty(e.dtype), first, second, *e.indices)
        parts = []
        for index in e.indices:
            for vid, n in zip(ids, lanes):
                if index < n:
                    parts.append(vid if n == 1 else
                                 self.op("OpCompositeExtract", self.ty(edt), vid, index))
                    break
                index -= n
            else:
                raise TypeCheckError(f"kernel {self.func.name!r}: shuffle index out of range "
                                     f"in `{e}`")
        if len(parts) == 1:
            return parts[0]
        return self.op("OpCompositeConstruct", self.ty(e.dtype), *parts)

    def e_let(self, e: Let) -> int:
        """The body with the var bound to the value's id."""
        v = self.expr(e.value)
        with self.bound(e.var, v), self.ranges.bound_to(e.var, e.value):
            return self.expr(e.body)

    def e_load(self, e: BufferLoad) -> int:
        """A buffer read."""
        return self.load(e.buffer, e.indices)

    def e_call(self, e: Call) -> int:
        """An intrinsic call."""
        return self.call(e)

    _expr_methods = {
        IntImm: e_const, FloatImm: e_const, Var: e_var,
        Add: e_arith, Sub: e_arith, Mul: e_arith, Div: e_div, Mod: e_mod,
        FloorDiv: e_floordiv, FloorMod: e_floormod, Min: e_minmax, Max: e_minmax,
        EQ: e_cmp, NE: e_cmp, LT: e_cmp, LE: e_cmp, GT: e_cmp, GE: e_cmp,
        And: e_logic, Or: e_logic, Not: e_not, Select: e_select, Cast: e_cast,
        Ramp: e_ramp, Broadcast: e_broadcast, Shuffle: e_shuffle, Let: e_let,
        BufferLoad: e_load, Call: e_call,
    }
