"""Running jobs on a fleet's actors, with faults accounted for: `Member` (one actor and its
device), `Job` and `run_jobs`.

Jobs run concurrently, each on its member's actor (an actor runs its jobs one at a time). When
an actor dies during a job (killed, or its process crashed), the member is marked lost and the
job moves to another live member with the same fingerprint; where none is left, the job's result
says which device was lost. A job that outlives its timeout has its actor killed (a hung device
cannot be trusted with more work) and is reported as timed out. Nothing is dropped silently:
every job ends with exactly one `Outcome`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Member", "Job", "Outcome", "run_jobs"]


@dataclass(eq=False)
class Member:
    """One actor of the fleet: its Ray handle, its device's DeviceInfo and Fingerprint, its
    process id, and whether it is still alive."""

    handle: object
    info: object
    fingerprint: object
    pid: int
    alive: bool = True

    def __str__(self) -> str:
        return f"{self.fingerprint.name} (actor pid {self.pid})"


@dataclass(eq=False)
class Job:
    """One method call (`method`, `args`) meant for `member`; `moves` lists the members it left."""

    member: Member
    method: str
    args: tuple
    timeout: float | None = None
    tag: object = None
    moves: list = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """How a job ended: `value` (the method's result) where `status` is "done"; "lost" where its
    device died and no matching device was left, "timeout" where it outlived its timeout.
    `member` ran it (or was running it when it ended); `moved_from` names the members it left."""

    job: Job
    status: str
    member: Member
    value: object = None
    message: str = ""
    moved_from: tuple = ()


def run_jobs(jobs: list, members: list) -> list:
    """Run every job; the Outcomes in the jobs' order. An exception a job's method raised (a bug,
    not a device fault) propagates."""
    import ray

    died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
    outcomes: dict = {}
    pending: dict = {}   # ObjectRef -> (job, member, started)

    def submit(job, member):
        ref = getattr(member.handle, job.method).remote(*job.args)
        pending[ref] = (job, member, time.monotonic())

    def move(job, member, why):
        job.moves.append(member)
        spare = [m for m in members if m.alive and m.fingerprint == member.fingerprint]
        if spare:
            busy = {m: 0 for m in spare}
            for _, (_, m, _) in pending.items():
                if m in busy:
                    busy[m] += 1
            submit(job, min(spare, key=lambda m: busy[m]))
            return
        outcomes[id(job)] = Outcome(job, "lost", member, message=(
            f"device lost: {member} {why} during the job; no other device of fingerprint "
            f"{member.fingerprint.key} is left"), moved_from=tuple(job.moves))

    for job in jobs:
        if job.member.alive:
            submit(job, job.member)
        else:
            move(job, job.member, "was lost before")
    while pending:
        now = time.monotonic()
        waits = [job.timeout - (now - started) for job, _, started in pending.values()
                 if job.timeout is not None]
        ready, _ = ray.wait(list(pending), num_returns=1,
                            timeout=max(0.0, min(waits)) if waits else None)
        if not ready:   # a job outlived its timeout: its device is not trusted with more work
            now = time.monotonic()
            for ref, (job, member, started) in list(pending.items()):
                if job.timeout is not None and now - started >= job.timeout:
                    del pending[ref]
                    member.alive = False
                    ray.kill(member.handle, no_restart=True)
                    outcomes[id(job)] = Outcome(job, "timeout", member, message=(
                        f"{member}: no result after {job.timeout:g} s; the actor was killed"),
                        moved_from=tuple(job.moves))
            continue
        ref = ready[0]
        job, member, _ = pending.pop(ref)
        try:
            value = ray.get(ref)
        except died as exc:
            member.alive = False
            move(job, member, f"died ({type(exc).__name__})")
            continue
        outcomes[id(job)] = Outcome(job, "done", member, value, moved_from=tuple(job.moves))
    return [outcomes[id(job)] for job in jobs]
