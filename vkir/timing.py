"""`Timing`: the one record of a measured run time, shared by the runtime (`vkir.runtime.profile`)
and the facade (`Kernel.profile`, where it is also named `vkir.api.Profile`).

A leaf module (standard library only), so that the runtime, which imports no IR, and the facade,
which must not import the runtime eagerly, can both name it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["Timing"]


@dataclass(frozen=True)
class Timing:
    """Seconds per run: `median`, `min`, `max` over `n` runs; `source` is "timestamp" (device
    timestamp queries) or "wall" (host clock around submit+wait, where timestamps are missing);
    `samples` holds every run's seconds."""

    median: float
    min: float
    max: float
    n: int
    source: str
    samples: tuple = field(default=(), repr=False)

    @staticmethod
    def of(samples, source: str) -> "Timing":
        """The record of these per-run seconds."""
        samples = tuple(samples)
        return Timing(statistics.median(samples), min(samples), max(samples), len(samples),
                      source, samples)
