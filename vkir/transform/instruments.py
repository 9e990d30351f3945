"""Pass instruments: objects whose `before(pass_, func)` and `after(pass_, func)` a Pipeline
calls around every pass. Shipped: CheckTypes (the explicit-cast checker after each pass),
PrintAfter (the IR after chosen passes), TimePasses (seconds per pass)."""

from __future__ import annotations

import sys
import time

from ..errors import TypeCheckError


class Instrument:
    """Base of pass instruments: both hooks do nothing; override what you need."""

    def before(self, pass_, func) -> None:
        """Called with the pass about to run and its input."""

    def after(self, pass_, func) -> None:
        """Called with the pass that ran and its result."""


class CheckTypes(Instrument):
    """Runs vkir.analysis.verify_types after every pass. A pass that turns a well-typed function
    into an ill-typed one raises TypeCheckError naming the pass; an ill-typed result of an
    ill-typed input is let through (garbage in, garbage out: not the pass's fault)."""

    def __init__(self):
        self._input = None

    def before(self, pass_, func) -> None:
        """Remember the pass's input."""
        self._input = func

    def after(self, pass_, func) -> None:
        """Run the explicit-cast checker on the pass's output, naming the pass (and its input) on
        failure."""
        given, self._input = self._input, None
        self.check(pass_, given, func)

    @staticmethod
    def check(pass_, given, result) -> None:
        """Check `result` of `pass_` applied to `given` (None when unknown: then always blame)."""
        from ..analysis import verify_types

        try:
            verify_types(result)
        except TypeCheckError as exc:
            if given is not None:
                try:
                    verify_types(given)
                except TypeCheckError:
                    return  # ill-typed input: not this pass's fault
            name = getattr(given if given is not None else result, "name", None) or "<unnamed>"
            raise TypeCheckError(f"pass {pass_!r} turned well-typed function {name!r} into an "
                                 f"ill-typed one: {exc}") from exc


class PrintAfter(Instrument):
    """Prints the function's script text after the passes named in `passes` ("all" for every
    pass), each under a `# after PassName` header, to `file` (stdout by default)."""

    def __init__(self, passes="all", file=None):
        self.passes = passes if passes == "all" else frozenset(
            (passes,) if isinstance(passes, str) else passes)
        self.file = file

    def after(self, pass_, func) -> None:
        """Print the function after the selected passes."""
        if self.passes != "all" and pass_.name not in self.passes:
            return
        out = self.file if self.file is not None else sys.stdout
        text = func.script()
        print(f"# after {pass_.name}", file=out)
        print(text, end="" if text.endswith("\n") else "\n", file=out)


class TimePasses(Instrument):
    """Records the wall seconds of every pass run, in order: `records` is a list of
    (pass name, seconds); `report()` formats them with the total."""

    def __init__(self):
        self.records: list = []
        self._t0 = None

    def before(self, pass_, func) -> None:
        """Start the pass's clock."""
        self._t0 = time.perf_counter()

    def after(self, pass_, func) -> None:
        """Record (pass name, seconds)."""
        self.records.append((pass_.name, time.perf_counter() - self._t0))

    @property
    def total(self) -> float:
        """Seconds spent in all recorded passes."""
        return sum(s for _, s in self.records)

    def report(self) -> str:
        """One line per pass run ("   1.23 ms  FlattenBuffer"), then the total."""
        lines = [f"{s * 1e3:9.3f} ms  {name}" for name, s in self.records]
        lines.append(f"{self.total * 1e3:9.3f} ms  total ({len(self.records)} passes)")
        return "\n".join(lines)
