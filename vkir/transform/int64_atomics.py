"""64-bit atomics as 32-bit word atomics, for EmulateInt64.

A buffer that a 64-bit atomic updates is held as uint32 words (two per element, the low word
first: the same bytes), so that each word can be updated by the device's 32-bit atomics:

- `atomic_and`, `atomic_or`, `atomic_xor` act on each word independently: one word atomic each.
- `atomic_add` adds the low words atomically; the old low word tells whether that addition
  carried, and the high words then get their sum plus the carry, atomically. `atomic_sub` is
  the same with a borrow. However many invocations update one element at once, every carry
  reaches the high word, so the final value is exactly the 64-bit sum (additions commute).

The element's old value is not available: its two words are updated by separate atomics, which
other invocations may interleave, so no single order of the updates need give the pair that
those atomics return. Such atomics are therefore emulated as statements only (the usual form:
accumulation, histograms, counters); one whose old value is used, and `atomic_min`,
`atomic_max`, `atomic_exchange` and `atomic_compare_exchange` (which need both words read and
written indivisibly, which a device without 64-bit atomics cannot do), are refused by the pass
with UnsupportedError naming them.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from . import int64_pairs as P

WORD = P.WORD
EMULATED = ("atomic_add", "atomic_sub", "atomic_and", "atomic_or", "atomic_xor")
"""The 64-bit atomics emulated (as statements) with word atomics."""


def word_index(indices: tuple, word: int) -> tuple:
    """The indices of word `word` (0 low, 1 high) of an element at `indices` of a buffer whose
    last dimension now counts words: the last index doubled, plus the word."""
    last = indices[-1]
    doubled = E.Add(E.Mul(last, E.IntImm(last.dtype, 2)), E.IntImm(last.dtype, word)) \
        if word else E.Mul(last, E.IntImm(last.dtype, 2))
    return (*indices[:-1], doubled)


def bind_stmt(value: E.PrimExpr, body) -> S.Stmt:
    """`body(v)` (a statement) with `v` a variable bound to `value` by a LetStmt (or `value`
    itself where it is a variable or a constant)."""
    if P._simple(value):
        return body(value)
    var = E.Var(f"w{next(P._names)}", value.dtype)
    return S.LetStmt(var, value, body(var))


def statement(op: str, words, indices: tuple, value: E.PrimExpr) -> S.Stmt:
    """The statement form of the 64-bit atomic `op` (one of EMULATED) of the pair `value` on the
    element at `indices` (already rewritten) of the word buffer `words`."""
    low = E.BufferLoad(words, word_index(indices, 0))
    high = E.BufferLoad(words, word_index(indices, 1))

    def atomic(at, v):
        return E.Call(WORD, op, (at, v))

    if op in ("atomic_and", "atomic_or", "atomic_xor"):
        return bind_stmt(value, lambda v: S.SeqStmt((S.Evaluate(atomic(low, P.lo(v))),
                                                     S.Evaluate(atomic(high, P.hi(v))))))
    if op not in ("atomic_add", "atomic_sub"):
        raise ValueError(f"{op} has no word-atomic form")

    def body(v):
        old = E.Var(f"w{next(P._names)}", WORD)
        if op == "atomic_add":   # the low words' sum wrapped: below the old low word
            carry = E.LT(E.Add(old, P.lo(v)), old)
        else:                    # the subtraction borrowed: the old low word was smaller
            carry = E.LT(old, P.lo(v))
        bit = E.Select(carry, P.word(1), P.word(0))
        return S.LetStmt(old, atomic(low, P.lo(v)),
                         S.Evaluate(atomic(high, E.Add(P.hi(v), bit))))
    return bind_stmt(value, body)
