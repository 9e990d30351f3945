"""Per-kernel device-time profiles: `vkir.profile()` and `Sequence.profile()`.

    with vkir.profile() as prof:      # prints the table when the block ends
        with vkir.sequence() as seq:
            ...
        k(x, y)
    prof.report.rows                  # [(name, calls, total_s, mean_s, share), ...]

Inside the block every sequence run and every kernel call or launch on a device with timestamp
queries is run with a timestamp before and after each dispatch, and waited for at once (so a
profiled program runs synchronously). Dispatches a sequence does not order by a barrier may
overlap on the device; each is timed on its own, so the shares are of summed dispatch time.
"""

from __future__ import annotations

import contextvars
import sys
from dataclasses import dataclass, field

ACTIVE_PROFILER: contextvars.ContextVar = contextvars.ContextVar("vkir_active_profiler", default=None)
_PROFILER = ACTIVE_PROFILER  # the former private name


def active_profiler():
    """The Profiler of the enclosing `vkir.profile()` block on this thread, or None."""
    return ACTIVE_PROFILER.get()


@dataclass
class ProfileReport:
    """Device seconds per dispatch, grouped by kernel name."""

    samples: dict = field(default_factory=dict)   # name -> [seconds, ...]

    def add(self, name: str, seconds: float) -> None:
        """Record `seconds` for the entry `name`."""
        self.samples.setdefault(name, []).append(float(seconds))

    @property
    def total(self) -> float:
        """The sum of every recorded time, in seconds."""
        return sum(sum(v) for v in self.samples.values())

    @property
    def rows(self) -> list:
        """(name, calls, total seconds, mean seconds, share of the total), slowest first."""
        total = self.total
        out = [(name, len(v), sum(v), sum(v) / len(v), sum(v) / total if total else 0.0)
               for name, v in self.samples.items()]
        return sorted(out, key=lambda r: -r[2])

    def table(self) -> str:
        """The rows as an aligned text table, times in microseconds."""
        rows = self.rows
        width = max([len("kernel")] + [len(r[0]) for r in rows])
        lines = [f"{'kernel':<{width}}  {'calls':>6}  {'total us':>11}  {'mean us':>10}  {'share':>6}"]
        for name, calls, total, mean, share in rows:
            lines.append(f"{name:<{width}}  {calls:>6}  {total * 1e6:>11.1f}  {mean * 1e6:>10.2f}  "
                         f"{share * 100:>5.1f}%")
        lines.append(f"{'total':<{width}}  {sum(r[1] for r in rows):>6}  {self.total * 1e6:>11.1f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


class Profiler:
    """The state of one `vkir.profile()` block: its report and where the table goes."""

    def __init__(self, file=None, show: bool = True):
        self.report = ProfileReport()
        self.file = file
        self.show = show
        self._token = None

    def __enter__(self) -> "Profiler":
        self._token = ACTIVE_PROFILER.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        ACTIVE_PROFILER.reset(self._token)
        if exc_type is None and self.show:
            print(self.report.table(), file=self.file if self.file is not None else sys.stdout)

    def add_sequence(self, seq) -> None:
        """Add the timings of a finished sequence's dispatches to the report."""
        seq._profile_into(self.report)

    def add_launch(self, name: str, launch, keep) -> None:
        """Run a timed runtime RecordedLaunch once, wait, and record its device time."""
        launch.run(keep=keep)
        self.report.add(name, launch.elapsed())


def profile(file=None, show: bool = True) -> Profiler:
    """A context manager timing every dispatch inside it (see the module docstring); prints the
    per-kernel table (calls, total, mean, share) to `file` (default stdout) at the end unless
    `show` is False. The Profiler's `report` holds the numbers."""
    return Profiler(file, show)
