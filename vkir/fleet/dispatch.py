"""Running jobs on a fleet's actors, with faults accounted for: `Member` (one actor and its
device), `Job` and `run_jobs`.

Jobs run concurrently on different actors; each actor has one job in flight at a time, the
others waiting here, so a timeout measures a job's own run. When an actor dies during a job
(killed, or its process crashed), the member is marked lost and the job moves to another live
member with the same fingerprint; where none is left, the job's result says which device was
lost. A job whose actor dies under it a second time is taken for the cause (it crashes devices)
and ends "crashed" rather than taking every device of its kind down in turn; jobs that were only
waiting for a dead actor move freely. A job that outlives its timeout has its actor killed (a
hung device cannot be trusted with more work) and is reported as timed out. Where the fleet can
start a fresh actor on the same device (`replace`), an actor that died or was killed here is
replaced, and jobs that were waiting for it or move from it may go to the fresh one. Nothing is
dropped silently: every job ends with exactly one `Outcome`.

A run cut short (a job's method raised a bug, or the caller was interrupted) leaves calls
running on their actors; each member keeps its call in flight, and the next run waits for it
(under its own timeout) before sending the actor anything, so no job's timeout counts another's.
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
    flight: tuple | None = None   # (ref, timeout, started) of a call a cut-short run left running
    origin: tuple | None = None   # (selector, env) of an actor this fleet started on this machine

    def __str__(self) -> str:
        return f"{self.fingerprint.name} (actor pid {self.pid})"


@dataclass(eq=False)
class Job:
    """One method call (`method`, `args`) meant for `member`; `moves` lists the members it left,
    `crashes` those that died while running it. Jobs of one `group` (the rounds of a tuning
    candidate) repeat one another: once one of them hangs, crashes or is lost, the others still
    waiting are not sent (they end "cancelled"), so a hanging kernel takes one device, not one
    per round."""

    member: Member
    method: str
    args: tuple
    timeout: float | None = None
    tag: object = None
    group: object = None
    moves: list = field(default_factory=list)
    crashes: list = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """How a job ended: `value` (the method's result) where `status` is "done"; "lost" where its
    device died and no matching device was left, "timeout" where it outlived its timeout,
    "crashed" where two actors died while running it, "cancelled" where a job of its group
    ended in one of these before it was sent.
    `member` ran it (or was running it when it ended); `moved_from` names the members it left."""

    job: Job
    status: str
    member: Member
    value: object = None
    message: str = ""
    moved_from: tuple = ()


def run_jobs(jobs: list, members: list, replace=None) -> list:
    """Run every job; the Outcomes in the jobs' order. Each actor has one job in flight at a
    time (the rest wait in its queue here), so a job's timeout counts its own run only. An
    exception a job's method raised (a bug, not a device fault) propagates; the calls still
    running then stay with their members for the next run to wait for.

    `replace(member)`: a new Member on the device of one whose actor died or was killed here
    because a job hung it (it joins `members`, so the jobs that were waiting for the dead actor
    can go to it), or None."""
    import ray

    died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
    outcomes: dict = {}
    queues: dict = {}    # Member -> jobs waiting for it
    running: dict = {}   # ObjectRef -> (job or None for a call left by an earlier run, member,
    #                      started, timeout)
    busy: set = set()    # members with a call in flight

    failed: set = set()  # groups with a job that hung, crashed or was lost

    def end(job, status, member, message):
        outcomes[id(job)] = Outcome(job, status, member, message=message,
                                    moved_from=tuple(job.moves))
        if job.group is not None:
            failed.add(job.group)

    def start(member):
        queue = queues.get(member)
        if member in busy or not member.alive:
            return
        while queue and queue[0].group is not None and queue[0].group in failed:
            job = queue.pop(0)
            outcomes[id(job)] = Outcome(job, "cancelled", member, message=(
                "not sent: another job of its group hung, crashed or was lost"),
                moved_from=tuple(job.moves))
        if not queue:
            return
        job = queue.pop(0)
        ref = getattr(member.handle, job.method).remote(*job.args)
        running[ref] = (job, member, time.monotonic(), job.timeout)
        busy.add(member)

    def load(m):
        return len(queues.get(m, ())) + (m in busy)

    def place(job, member):
        if member.alive:
            queues.setdefault(member, []).append(job)
            start(member)
            return
        job.moves.append(member)
        spare = [m for m in members if m.alive and m.fingerprint == member.fingerprint]
        if spare:
            place(job, min(spare, key=load))
            return
        end(job, "lost", member, f"device lost: {member} died before the job could finish; no "
            f"other device of fingerprint {member.fingerprint.key} is left")

    def lose(member):
        """`member` is dead: a fresh actor takes its place where the fleet can start one, and
        the jobs waiting for it go elsewhere."""
        fresh = replace(member) if replace is not None and member.alive else None
        if fresh is not None:
            members.append(fresh)
        member.alive = False
        busy.discard(member)
        for job in queues.pop(member, []):
            place(job, member)

    for m in members:   # calls an earlier, cut-short run left running: waited for first
        if m.flight is not None:
            ref, timeout, started = m.flight
            m.flight = None
            if m.alive:
                running[ref] = (None, m, started, timeout)
                busy.add(m)
    for job in jobs:
        place(job, job.member)
    try:
        while running:
            now = time.monotonic()
            waits = [timeout - (now - started) for _, _, started, timeout in running.values()
                     if timeout is not None]
            ready, _ = ray.wait(list(running), num_returns=1,
                                timeout=max(0.0, min(waits)) if waits else None)
            if not ready:   # a call outlived its timeout: its device is not trusted with more work
                now = time.monotonic()
                for ref, (job, member, started, timeout) in list(running.items()):
                    if timeout is not None and now - started >= timeout:
                        del running[ref]
                        ray.kill(member.handle, no_restart=True)
                        if job is not None:
                            end(job, "timeout", member,
                                f"{member}: no result after {timeout:g} s; the actor was killed")
                        lose(member)   # replaced where it can be: the hang was the job's
                continue
            ref = ready[0]
            job, member, _, _ = running.pop(ref)
            busy.discard(member)
            try:
                value = ray.get(ref)
            except died:
                lose(member)
                if job is None:
                    continue
                job.crashes.append(member)
                if len(job.crashes) >= 2:   # the job is the likely cause: it moves no further
                    end(job, "crashed", member, "the job crashed its device: the actors "
                        + " and ".join(str(m) for m in job.crashes) + " died while running it")
                    continue
                place(job, member)   # to a live member of its kind, or ended as lost
                continue
            except ray.exceptions.RayTaskError:
                if job is not None:
                    raise   # a bug in the job's method: the caller sees it
                value = None   # an abandoned call's bug was reported to its own run
            if job is not None:
                outcomes[id(job)] = Outcome(job, "done", member, value, moved_from=tuple(job.moves))
            start(member)
    finally:   # cut short: the calls still running stay with their members
        for ref, (job, member, started, timeout) in running.items():
            member.flight = (ref, timeout, started)
    assert len(outcomes) == len(jobs), "every job ends with one outcome"
    return [outcomes[id(job)] for job in jobs]
