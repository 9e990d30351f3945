"""Tuning a kernel template on a fleet: `tune_on_fleet` (what `Tuned.build(fleet=...)` calls).

For every kind of device (Fingerprint) in the fleet, each config of the template is instantiated
and compiled here, once (vkir.fleet.jobs), and timed on that kind's devices with timestamp
queries. Timings are interleaved: in each round every candidate is timed once, the rounds assign
candidates to devices in rotation, and a candidate's score is the median of its rounds, so one
noisy node cannot pick the winner alone. The winner of each kind is recorded in this process's
autotune cache under that kind's device key (the key a device of that kind looks up).

Every candidate ends with a status in the report: "ok", "skipped" (the template refuses the
shape, or the device cannot run it), "timeout" (it hung its device: the actor was killed),
"crashed" (two actors died while running it: it is taken for the cause and not moved again), or
"lost" (its device died during the run and no device of that kind was left to run it on; a
device that died is left out of the rest of the job, and its candidates move to the others).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .dispatch import Job, run_jobs
from .jobs import entries_or_error

__all__ = ["tune_on_fleet", "CandidateResult", "FleetTuning", "ROUNDS", "CANDIDATE_TIMEOUT"]

ROUNDS = 2                 # times each candidate is timed, each time on the next device of its kind
CANDIDATE_TIMEOUT = 300.0  # seconds one timing job (build + runs) may take before its device counts as hung


@dataclass
class CandidateResult:
    """One config on one kind of device: its status, score (median device seconds of its
    rounds, None unless "ok"), every round's seconds, why it did not run (`reason`), and whether
    the devices ran the kernel built here (`prebuilt`) rather than compiling it themselves."""

    config: dict
    status: str = "ok"
    seconds: float | None = None
    rounds: list = field(default_factory=list)
    reason: str = ""
    prebuilt: bool = True   # every timed run used the kernel built where the job started


@dataclass
class FleetTuning:
    """The tuning of one kind of device: its Fingerprint, the candidates, the winner (None where
    none ran) and whether the result came from the cache (nothing was timed)."""

    device: object
    candidates: list
    best: CandidateResult | None
    cached: bool = False

    def table(self) -> str:
        """The candidates as text, one line each."""
        lines = [f"{self.device}:" + (" (cached)" if self.cached else "")]
        for c in self.candidates:
            what = f"{c.seconds * 1e3:9.3f} ms" if c.seconds is not None else f"{c.status}: {c.reason}"
            mark = " <- best" if c is self.best else ""
            lines.append(f"  {c.config}: {what}{mark}")
        return "\n".join(lines)


def _candidates(tuned, info, shape, configs) -> tuple:
    """([(CandidateResult, func, entries)] that can run, [CandidateResult] skipped)."""
    runnable, skipped = [], []
    for config in configs:
        result = CandidateResult(config)
        func, reason = tuned.instantiate(info, shape, config)
        entries = None
        if func is not None:
            entries, reason = entries_or_error(func, info)
        if entries is None:
            result.status, result.reason = "skipped", reason
            skipped.append(result)
            continue
        runnable.append((result, func, entries))
    return runnable, skipped


def tune_on_fleet(tuned, fleet, shape: dict, rounds: int = ROUNDS,
                  timeout: float = CANDIDATE_TIMEOUT) -> list:
    """Tune `tuned` (a vkir.autotuning.Tuned) for `shape` on every kind of device in `fleet`;
    [FleetTuning], one per Fingerprint. Winners are recorded in the autotune cache."""
    members = fleet.members()
    kinds: dict = {}
    for m in members:
        kinds.setdefault(m.fingerprint, []).append(m)
    reports, jobs = {}, []
    for fp, ms in kinds.items():
        info = ms[0].info
        cached = tuned.cached(fp, **shape)
        if cached is not None:
            reports[fp] = FleetTuning(fp, [CandidateResult(cached)], None, cached=True)
            continue
        runnable, skipped = _candidates(tuned, info, shape, tuned.configs_for(info))
        reports[fp] = FleetTuning(fp, [r for r, _, _ in runnable] + skipped, None)
        for rnd in range(rounds):
            for i, (result, func, entries) in enumerate(runnable):
                member = ms[(i + rnd) % len(ms)]
                jobs.append(Job(member, "time", (func, entries), timeout, tag=result,
                                group=(fp.key, i)))
    lost: dict = {}   # candidate -> the message of a round whose device was lost under it
    for out in run_jobs(jobs, fleet._members, fleet._replacement):
        result = out.job.tag
        if result.status != "ok" or out.status == "cancelled":
            continue   # a round already ended it (a cancelled round was never sent)
        if out.status == "lost":   # another job's device died: the rounds that ran still count
            lost.setdefault(id(result), out.message)
            continue
        if out.status != "done":   # it hung or crashed its device
            result.status, result.reason = out.status, out.message
            continue
        ok, error, seconds, prebuilt = out.value
        if not ok:
            result.status, result.reason = "skipped", error
            continue
        result.rounds.append(seconds)
        result.prebuilt = result.prebuilt and prebuilt
    for fp, report in reports.items():
        for c in report.candidates:
            if c.status == "ok" and id(c) in lost:
                if c.rounds:
                    c.reason = f"{rounds - len(c.rounds)} of {rounds} rounds lost: {lost[id(c)]}"
                else:
                    c.status, c.reason = "lost", lost[id(c)]
    for fp, report in reports.items():
        if report.cached:
            continue
        timed = [c for c in report.candidates if c.status == "ok" and c.rounds]
        for c in timed:
            c.seconds = statistics.median(c.rounds)
        if timed:
            report.best = min(timed, key=lambda c: c.seconds)
            tuned._record(fp, shape, report.best.config, report.best.seconds)
        tuned._note("fleet tuning\n" + report.table())
    return [reports[fp] for fp in kinds]
