"""Source mutations: small random edits of a generated kernel's text (numbers, dtypes, operators,
names, deleted or duplicated lines and characters). A mutant either is refused with a VkirError
(anything else is a crash) or is a valid kernel, which must then run like any other."""

from __future__ import annotations

import random
import re

_NUMBERS = ["0", "-1", "1", "65", "2**31", "2**63", "-(2**31)", "3.5", "1e308", "2**40", "9**9**9",
            "255", "-129", "64"]
_DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "float16", "float32",
           "float64", "bool", "float32x4", "int32x2", "handle", "float7"]
_OPERATORS = ["+", "-", "*", "/", "//", "%", "<<", ">>", "&", "|", "^", "<", "==", "and", "**",
              "@"]


def mutate(source: str, rng: random.Random, edits: int = 1) -> str:
    """`source` with `edits` random edits."""
    for _ in range(edits):
        source = rng.choice(_EDITS)(source, rng)
    return source


def _replace_match(pattern: str, choices: list[str]):
    def edit(source: str, rng: random.Random) -> str:
        found = list(re.finditer(pattern, source))
        if not found:
            return source
        m = rng.choice(found)
        return source[:m.start()] + rng.choice(choices) + source[m.end():]
    return edit


def _delete_line(source: str, rng: random.Random) -> str:
    lines = source.splitlines()
    if len(lines) > 3:
        del lines[rng.randrange(2, len(lines))]
    return "\n".join(lines) + "\n"


def _duplicate_line(source: str, rng: random.Random) -> str:
    lines = source.splitlines()
    k = rng.randrange(2, len(lines))
    lines.insert(k, lines[k])
    return "\n".join(lines) + "\n"


def _delete_char(source: str, rng: random.Random) -> str:
    k = rng.randrange(len(source))
    return source[:k] + source[k + 1:]


def _swap_names(source: str, rng: random.Random) -> str:
    names = ["A", "B", "C", "H", "i", "tx", "bx", "S", "acc", "k", "n", "T"]
    a, b = rng.sample(names, 2)
    return re.sub(rf"\b{a}\b", b, source, count=rng.randint(1, 3))


_EDITS = (
    _replace_match(r"(?<![\w.])\d+(\.\d+)?(?![\w.])", _NUMBERS),
    _replace_match(r"(?<=\")(u?int\d+|float\d+(x\d+)?)(?=\")", _DTYPES),
    _replace_match(r" (\+|-|\*|//|%|<<|>>|&|\||\^|<|==) ", [f" {o} " for o in _OPERATORS]),
    _delete_line, _duplicate_line, _delete_char, _swap_names,
)
