"""Source text of a script and the `ScriptError`s that point into it (file:line:col + caret)."""

from __future__ import annotations

import ast
import functools
import threading
from dataclasses import dataclass

from ..errors import ScriptError
from ..ir.base import Span


# CPython 3.11 keeps the depth of its C-to-Python AST conversion in state shared by all threads:
# two threads parsing at once can fail with "SystemError: AST constructor recursion depth
# mismatch". Scripts parsed from several threads (concurrent vkir.build calls) take turns.
_PARSE_LOCK = threading.Lock()


def parse_python(text: str, filename: str = "<script>", mode: str = "exec"):
    """`ast.parse(text, filename, mode)`, one thread at a time (see _PARSE_LOCK)."""
    with _PARSE_LOCK:
        return ast.parse(text, filename=filename, mode=mode)


@dataclass(frozen=True)
class Source:
    """The text being parsed and where it sits in its file.

    `text` is what `ast.parse` saw (dedented); `line_offset` and `col_offset` map its positions back
    to the original file so that messages and spans point at the user's real source.
    """

    text: str
    file: str = "<script>"
    line_offset: int = 0
    col_offset: int = 0

    @functools.cached_property
    def lines(self) -> tuple:
        """The lines of `text`, split once (every span looks its line up here: splitting per
        span made parsing quadratic in the source size)."""
        return tuple(self.text.splitlines())

    def line(self, lineno: int) -> str:
        """Line `lineno` (1-based, in `text` numbering) as it appears in the original file."""
        lines = self.lines
        if 1 <= lineno <= len(lines):
            return " " * self.col_offset + lines[lineno - 1]
        return ""

    def span(self, node: ast.AST | None) -> Span | None:
        """The IR Span of an AST node in the user's file (None without a position)."""
        if node is None or not hasattr(node, "lineno"):
            return None
        col = node.col_offset + self.col_offset + 1
        return Span(self.file, node.lineno + self.line_offset, col, self.line(node.lineno))

    def error(self, node: ast.AST | None, message: str) -> ScriptError:
        """A ScriptError at `node`: 'file:line:col: message', the source line, a caret."""
        if node is None or not hasattr(node, "lineno"):
            return ScriptError(f"{self.file}: {message}")
        line = node.lineno + self.line_offset
        col0 = _char_col(self.line(node.lineno), node.col_offset + self.col_offset)
        src = self.line(node.lineno)
        err = ScriptError(f"{self.file}:{line}:{col0 + 1}: {message}\n    {src}\n    {' ' * col0}^")
        err.file, err.line, err.col, err.reason = self.file, line, col0 + 1, message
        return err


def _char_col(line: str, byte_col: int) -> int:
    """ast column offsets count UTF-8 bytes; convert to characters for the caret."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
