"""popcount, clz and ctz in SPIR-V (mixed into the emitter).

Vulkan takes OpBitCount, FindUMsb and FindILsb on 32-bit integers only. A 32-bit operand uses
them directly (clz is 31 - FindUMsb, whose -1 for zero gives 32; ctz is FindILsb with its -1 for
zero, read unsigned, clamped to 32). A narrower operand is zero-extended to 32 bits (its own bits,
whatever its sign: int8 -1 counts 8 ones, not 32) and the count corrected for the zeros added; a
64-bit operand is counted in its two 32-bit halves. Those two are built as vkir expressions over
32-bit counts and emitted like any other expression.
"""

from __future__ import annotations

from vkir.ir import Add, Call, Cast, DataType, EQ, Min, Select, Sub, Var, const


class BitCountMixin:
    """`bit_count(e)` for popcount, clz and ctz calls."""

    def bit_count(self, e: Call) -> int:
        """The result id of popcount/clz/ctz of any integer width."""
        self._check_int(e)
        dt = e.dtype
        if dt.bits != 32:
            return self._via_ir(e, lambda x: _widened(e.op, x, dt))
        t = self.ty(dt)
        v = self.expr(e.args[0])
        if e.op == "popcount":
            return self.op("OpBitCount", t, v)
        if e.op == "clz":
            return self.op("OpISub", t, self.const(dt, 31), self.glsl("FindUMsb", t, v))
        assert e.op == "ctz", e.op
        u32 = DataType("uint", 32, dt.lanes)
        lsb = self.glsl("FindILsb", self.ty(u32), v)
        count = self.glsl("UMin", self.ty(u32), lsb, self.const(u32, 32))
        return count if dt == u32 else self.op("OpBitcast", t, count)


def _widened(op: str, x: Var, result: DataType):
    """`op(x)` for an 8-, 16- or 64-bit `x`, as an expression over 32-bit counts."""
    dt = x.dtype
    lanes, bits = dt.lanes, dt.bits
    word = DataType("uint", 32, lanes)
    pattern = x if dt.is_uint else Call(DataType("uint", bits, lanes), "reinterpret", (x,))

    def count(v):
        return Call(word, op, (v,))

    if bits < 32:
        z = Cast(word, pattern)  # zero-extended
        n = count(z)
        if op == "clz":
            n = Sub(n, const(32 - bits, word))
        elif op == "ctz":
            n = Min(n, const(bits, word))  # ctz32 of zero is 32
    else:
        assert bits == 64, dt
        lo = Cast(word, pattern)
        hi = Cast(word, Call(pattern.dtype, "shift_right", (pattern, const(32, pattern.dtype))))
        thirty_two = const(32, word)
        if op == "popcount":
            n = Add(count(lo), count(hi))
        elif op == "clz":
            n = Select(EQ(hi, const(0, word)), Add(count(lo), thirty_two), count(hi))
        else:
            n = Select(EQ(lo, const(0, word)), Add(count(hi), thirty_two), count(lo))
    return Cast(result, n)
