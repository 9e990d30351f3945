"""Signed 64-bit ordering compares as two 32-bit compares, for drivers that get the 64-bit
instruction wrong (the "int64_signed_compare" quirk of llvmpipe: `x < c` on an int64 sign-extended
from the invocation id is false where it must be true, also in hand-written GLSL).

a < b holds exactly when the high words compare so (signed), or they are equal and the low words
compare so (unsigned); <=, > and >= likewise. The words come from the same bit cast the 64-bit
narrowing uses (component 0 of two uint32 words is the low one), so no 64-bit compare is left for
the driver to fold."""

from __future__ import annotations

from vkir.ir import GE, GT, LE, LT, DataType

# comparison -> (signed compare of the high words, unsigned compare of the low words)
_HALVES = {LT: ("OpSLessThan", "OpULessThan"), LE: ("OpSLessThan", "OpULessThanEqual"),
           GT: ("OpSGreaterThan", "OpUGreaterThan"),
           GE: ("OpSGreaterThan", "OpUGreaterThanEqual")}
QUIRK = "int64_signed_compare"   # vkir.quirks.INT64_SIGNED_COMPARE (codegen imports no vkir.quirks)


def is_split(cmp_type, dtype: DataType, quirks) -> bool:
    """Whether a comparison of `dtype` operands is lowered on 32-bit halves on a driver with
    `quirks`."""
    return QUIRK in quirks and dtype.is_int and dtype.bits == 64 and \
        cmp_type in _HALVES


def _words(em, v: int, dtype: DataType) -> tuple[int, int]:
    """(high word as int32, low word as uint32) of a 64-bit integer value, lane by lane."""
    lanes = dtype.lanes
    word, pair = DataType("uint", 32, 1), DataType("uint", 32, 2)
    highs, lows = [], []
    for lane in range(lanes):
        x = v if lanes == 1 else em.op("OpCompositeExtract", em.ty(dtype.element_of()), v, lane)
        bits = em.op("OpBitcast", em.ty(pair), x)
        lows.append(em.op("OpCompositeExtract", em.ty(word), bits, 0))
        highs.append(em.op("OpCompositeExtract", em.ty(word), bits, 1))
    hi_t, lo_t = DataType("int", 32, lanes), DataType("uint", 32, lanes)
    if lanes == 1:
        return em.op("OpBitcast", em.ty(hi_t), highs[0]), lows[0]
    hi = em.op("OpCompositeConstruct", em.ty(DataType("uint", 32, lanes)), *highs)
    return em.op("OpBitcast", em.ty(hi_t), hi), \
        em.op("OpCompositeConstruct", em.ty(lo_t), *lows)


def split_compare(em, cmp_type, a: int, b: int, dtype: DataType) -> int:
    """The bool (vector) of `a <cmp> b` for signed 64-bit `a`, `b`, from their 32-bit words."""
    bt = em.types.bool_of(dtype.lanes)
    high_op, low_op = _HALVES[cmp_type]
    ha, la = _words(em, a, dtype)
    hb, lb = _words(em, b, dtype)
    high = em.op(high_op, bt, ha, hb)
    tie = em.op("OpLogicalAnd", bt, em.op("OpIEqual", bt, ha, hb), em.op(low_op, bt, la, lb))
    return em.op("OpLogicalOr", bt, high, tie)
