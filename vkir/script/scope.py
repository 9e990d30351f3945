"""Name scopes of the script parser: which Var or Buffer a name means at a point in the body."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


class Scope:
    """A stack of frames mapping names to Vars/Buffers. A name may be bound only once while it is
    visible (re-binding a visible name is a script error: bindings are immutable lets)."""

    def __init__(self):
        self._frames: list[dict[str, Any]] = [{}]
        self._lines: dict = {}

    def where(self, name: str):
        """The line where the visible binding of `name` was made (or None)."""
        for frame in reversed(self._frames):
            if name in frame:
                return self._lines.get((id(frame), name))
        return None

    def lookup(self, name: str):
        """The value bound to `name` in the innermost scope that has it (None if none)."""
        for frame in reversed(self._frames):
            if name in frame:
                return frame[name]
        return None

    def __contains__(self, name: str) -> bool:
        return any(name in frame for frame in self._frames)

    def bind(self, name: str, value, line: int | None = None) -> None:
        """Bind in the innermost frame; the caller checks `name not in self` first."""
        assert name not in self, f"{name} is already bound"
        self._frames[-1][name] = value
        self._lines[(id(self._frames[-1]), name)] = line

    @contextmanager
    def frame(self) -> Iterator[None]:
        """A nested frame: its bindings vanish when the block ends."""
        self._frames.append({})
        try:
            yield
        finally:
            self._frames.pop()
