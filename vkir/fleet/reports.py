"""Fleet results as text: one table per kind of device (`format_results`)."""

from __future__ import annotations

__all__ = ["format_results"]


def format_results(results) -> str:
    """[FleetResult] as text: a heading per Fingerprint, then a line per device (actor pid,
    ok or the error, seconds, and where a job moved from)."""
    kinds: dict = {}
    for r in results:
        kinds.setdefault(r.device, []).append(r)
    lines = []
    for fp, runs in kinds.items():
        lines.append(f"{fp}: {sum(r.ok for r in runs)}/{len(runs)} ok")
        for r in runs:
            state = "ok" if r.ok else r.error.splitlines()[0] if r.error else "failed"
            note = f"  ({r.note})" if r.note else ""
            lines.append(f"  actor pid {r.pid:<8} {r.seconds:8.3f} s  {state}{note}")
    return "\n".join(lines)
