"""A fleet of Vulkan devices on Ray: `connect`, `Fleet`, `FleetResult`.

`connect(address=None, local=None)` joins the Ray cluster at `address` and finds the device actors
`vkir fleet serve` started there, or, with `local=("lavapipe", "swiftshader")`, starts one actor
per device selector on this machine (a local Ray instance when none is running). Each actor
owns one device (vkir.fleet.worker); the fleet knows each one's Fingerprint.

Jobs are built here, where they start: a kernel's SPIR-V is compiled once per kind of device
(vkir.fleet.jobs) and travels with the job; arrays travel as numpy arrays through Ray's object
store. See vkir.fleet.dispatch for what happens when an actor dies or hangs.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from ..errors import ArgumentError, DeviceError, UnsupportedError
from .dispatch import Job, Member, run_jobs
from .fingerprint import Fingerprint
from .jobs import entries_or_error
from .ray_instance import CONNECT_TIMEOUT, join, start_local

__all__ = ["connect", "Fleet", "FleetResult", "NAMESPACE", "ACTOR_PREFIX", "require_ray", "local_env",
           "served_actor_names"]

NAMESPACE = "vkir"                # the Ray namespace of served device actors
ACTOR_PREFIX = "vkir-device/"     # served actors are named ACTOR_PREFIX + fingerprint key + "/" + id
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
CHECK_TIMEOUT = 600.0             # seconds a check or run may take on one device

# The open fleets of this process that run on a Ray instance `connect` started (Ray is one per
# process, so fleets share it): the last of them to close shuts it down. Empty where vkir started
# none: a Ray instance the user started is never shut down by a fleet.
_SHARING_LOCAL_RAY: set = set()


@dataclass(frozen=True)
class FleetResult:
    """One device's result of a fleet job: `device` (its Fingerprint), `ok`, `error` (empty when
    ok), `seconds` (wall time on the device's actor), `pid` (the actor that ran it), `arrays`
    (the device's arrays after the run, where the job returns them) and `note` (where the job
    moved from a lost actor); `value` is what `Fleet.apply`'s function returned."""

    device: Fingerprint
    ok: bool
    error: str
    seconds: float
    pid: int = 0
    arrays: tuple = ()
    note: str = ""
    value: object = None


def require_ray():
    """The ray module, or UnsupportedError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise UnsupportedError("vkir.fleet runs on Ray, which is not installed: "
                               "pip install 'vkir[fleet]'") from exc
    return ray


def local_env(selector: str, env: dict | None = None) -> dict:
    """The environment of a local actor for `selector` (VKIR_DEVICE syntax): the driver it
    names made visible to the Vulkan loader on its own, and `env` on top."""
    from ..runtime.selection import SWIFTSHADER_ICD

    env = {**(env or {}), "VKIR_DEVICE": str(selector)}
    text = str(selector).lower()
    if text == "swiftshader":
        env["VK_ICD_FILENAMES"] = SWIFTSHADER_ICD
    elif text in ("lavapipe", "llvmpipe") and os.path.exists(LAVAPIPE_ICD):
        env["VK_ICD_FILENAMES"] = LAVAPIPE_ICD
    return env


def served_actor_names(ray) -> list:
    """The names of the device actors `vkir fleet serve` started on the cluster, sorted."""
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == NAMESPACE and a["name"].startswith(ACTOR_PREFIX))


def _own(arrays) -> tuple:
    """The arrays a job returned, as the caller's own: Ray hands numpy results back as read-only
    views of its object store (shared by every reader of the object), so each is copied."""
    import numpy as np

    return tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in arrays or ())


def _travelling(value):
    """`value` as it travels to an actor: device arrays as numpy arrays (never Vulkan objects)."""
    from ..driver.arrays import DeviceArray

    return value.numpy() if isinstance(value, DeviceArray) else value


def connect(address: str | None = None, local=None, env: dict | None = None,
            timeout: float = CONNECT_TIMEOUT) -> "Fleet":
    """A Fleet. `address`: a Ray cluster to join (its served device actors are the fleet); an
    address where nothing accepts a connection within `timeout` seconds is a DeviceError naming
    it. `local`: device selectors (VKIR_DEVICE syntax) to start one actor each for on this
    machine, in a local Ray instance (listening on loopback: vkir.fleet.ray_instance) when
    `address` is None and no Ray is running. With neither, one local actor per device this
    machine's Vulkan loader reports. `address` "local:SEL,SEL" is `local=(SEL, SEL)` (how
    command-line options name a local fleet). `env`: environment variables for the local actors
    (VKIR_VALIDATION, VKIR_CACHE_DIR, ...)."""
    if address is not None and address.startswith("local:"):
        local = tuple(s for s in address[len("local:"):].split(",") if s) or None
        address = None
    if isinstance(local, str):   # one text: "lavapipe" or "lavapipe,swiftshader"
        local = tuple(s for s in local.split(",") if s)
    if local is not None and not local:
        raise ArgumentError("connect(local=...) needs at least one device selector")
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        if address is None:
            start_local(ray, max(2, len(local) if local else 1), NAMESPACE)
        else:
            join(ray, address, NAMESPACE, timeout)
        started = True
        _SHARING_LOCAL_RAY.clear()   # fleets of an earlier instance (shut down under them)
    fleet = Fleet(started or bool(_SHARING_LOCAL_RAY))
    try:
        if local is None and address is None:
            from ..runtime import devices

            local = [str(info.index) for info in devices()]
        if local:
            fleet._start_local(list(local), env)
        if address is not None:
            fleet._join_served()
        if not fleet._members:
            raise DeviceError(f"the fleet at {address!r} has no vkir device actors "
                              "(start them with `vkir fleet serve` on each node)")
    except BaseException:
        fleet.close()
        raise
    return fleet


class Fleet:
    """The device actors of one connection (see `connect`)."""

    def __init__(self, shares_local_ray: bool):
        self._members: list[Member] = []
        self._owned: list = []   # actors this fleet started (killed by close)
        self.closed = False
        self._shares_local_ray = shares_local_ray   # runs on a Ray instance `connect` started
        if shares_local_ray:
            _SHARING_LOCAL_RAY.add(self)

    def tune(self, tuned, shape: dict) -> list:
        """Tune the template `tuned` (a vkir.autotuning.Tuned) for `shape` on every kind of
        device here (vkir.fleet.tuning.tune_on_fleet): what `Tuned.build(fleet=self)` calls, so
        that autotuning, below the fleet, imports none of it."""
        from .tuning import tune_on_fleet

        return tune_on_fleet(tuned, self, shape)

    # -- members ---------------------------------------------------------------------------
    def add_local(self, *selectors, env: dict | None = None) -> list:
        """Start one more actor per device selector on this machine (VKIR_DEVICE syntax), as
        `connect(local=...)` does; their Fingerprints."""
        before = len(self._members)
        self._live()   # not on a closed fleet
        self._start_local(list(selectors), env)
        return [m.fingerprint for m in self._members[before:]]

    def _start_local(self, selectors: list, env: dict | None = None) -> None:
        from .worker import DeviceWorker

        ray = require_ray()
        remote = ray.remote(DeviceWorker)
        handles = []
        for sel in selectors:
            handle = remote.options(num_cpus=0, max_restarts=0, max_concurrency=1,
                                    runtime_env={"env_vars": local_env(sel, env)}).remote(sel)
            handles.append(handle)
            self._owned.append(handle)
        try:
            self._add(handles, [f"local device {str(sel)!r}" for sel in selectors],
                      [(sel, env) for sel in selectors])
        except BaseException:   # none of them joins the fleet: none is left running
            for handle in handles:
                ray.kill(handle, no_restart=True)
                self._owned.remove(handle)
            raise

    def _join_served(self) -> None:
        ray = require_ray()
        names = served_actor_names(ray)
        self._add([ray.get_actor(n, namespace=NAMESPACE) for n in names],
                  [f"served actor {n}" for n in names])

    def _add(self, handles: list, labels: list, origins=None) -> None:
        ray = require_ray()
        described = ray.get([h.describe.remote() for h in handles])
        failed = [f"{label}: {info}" for label, info in zip(labels, described) if isinstance(info, str)]
        if failed:   # the caller kills what was started
            raise DeviceError("the fleet could not open " + "; ".join(failed))
        pids = ray.get([h.pid.remote() for h in handles])
        origins = origins or [None] * len(handles)
        for handle, info, pid, origin in zip(handles, described, pids, origins):
            self._members.append(Member(handle, info, Fingerprint.of(info), pid, origin=origin))

    def _replacement(self, member: Member):
        """A fresh local actor on the device of `member` (its actor died, or was killed because
        a job hung it), or None where this fleet did not start it (a served actor is its node's
        to restart) or the device no longer opens."""
        if member.origin is None or self.closed:
            return None
        selector, env = member.origin
        before = len(self._members)
        try:
            self._start_local([selector], env)
        except DeviceError:   # the device no longer opens: `member` stays lost
            return None
        return self._members.pop(before)   # run_jobs adds it to the members it runs on

    def _live(self) -> list:
        if self.closed:
            raise DeviceError("the fleet is closed")
        if not require_ray().is_initialized():   # a job now would start a new, empty Ray
            raise DeviceError("Ray was shut down under the fleet (ray.shutdown()): its device "
                              "actors are gone; connect again")
        return [m for m in self._members if m.alive]

    def devices(self) -> list:
        """The Fingerprint of every live device actor, in the fleet's order."""
        return [m.fingerprint for m in self._live()]

    def fingerprints(self) -> list:
        """Each distinct Fingerprint once, in the fleet's order."""
        return list(dict.fromkeys(self.devices()))

    def actor_pids(self) -> list:
        """Process ids of the live device actors, in the fleet's order."""
        return [m.pid for m in self._live()]

    def members(self, devices=None) -> list:
        """The live members `devices` selects, in the fleet's order: None (all), a Fingerprint,
        a text found in the device's name or driver ("llvmpipe", "swiftshader"), an actor's
        process id (`actor_pids()`), a predicate on a Fingerprint, or a list, tuple or set of
        these (the devices any of them selects)."""
        live = self._live()
        if not live:   # every actor died: a job now would pass with no device having run it
            raise DeviceError("the fleet has no live device: every actor died and none could be "
                              "replaced (fleet.add_local, or connect again)")
        if devices is None:
            return live
        if isinstance(devices, (list, tuple, set, frozenset)):
            wanted = set()
            for one in devices:
                wanted.update(id(m) for m in self._matching(live, one))
            chosen = [m for m in live if id(m) in wanted]
        else:
            chosen = self._matching(live, devices)
        if not chosen:
            have = ", ".join(str(f) for f in self.fingerprints()) or "no live device"
            raise ArgumentError(f"no device of the fleet matches {devices!r}; the fleet has: {have}")
        return chosen

    @staticmethod
    def _matching(live: list, one) -> list:
        """The members of `live` one selector (not a list of them) picks."""
        if isinstance(one, int) and not isinstance(one, bool):
            return [m for m in live if m.pid == one]
        if isinstance(one, Fingerprint):
            return [m for m in live if m.fingerprint == one]
        if isinstance(one, str):
            from ..runtime.selection import DRIVER_SELECTORS

            needle = DRIVER_SELECTORS.get(one.lower(), one.lower())
            return [m for m in live if needle in f"{m.fingerprint.name} {m.fingerprint.driver}".lower()]
        if callable(one):
            return [m for m in live if one(m.fingerprint)]
        raise ArgumentError(f"devices={one!r}: a fleet selects devices by Fingerprint, text in "
                            "the device's name or driver, actor process id, predicate on a "
                            "Fingerprint, or a list of these")

    # -- jobs ------------------------------------------------------------------------------
    def _run(self, method, func, plan, check_bounds, extra=(), timeout=CHECK_TIMEOUT) -> list:
        """Run `method` on `func` (built here once per kind of device) for each (member, args)
        of `plan`: FleetResults in plan order. A job whose actor died moves to a matching
        device (`note` says so) or ends with the lost device named."""
        from ..ir import PrimFunc

        if not isinstance(func, PrimFunc):
            raise ArgumentError(f"a fleet runs PrimFuncs (@T.prim_func), got {type(func).__name__}")
        built: dict = {}
        jobs, results = [], {}
        for i, (m, args) in enumerate(plan):
            args = [_travelling(a) for a in args]
            if m.fingerprint not in built:
                built[m.fingerprint] = entries_or_error(func, m.info, check_bounds)
            entries, error = built[m.fingerprint]
            if error is not None:   # the device cannot run it: known before any actor is asked
                results[i] = FleetResult(m.fingerprint, False, error, 0.0, m.pid)
                continue
            jobs.append(Job(m, method, (func, tuple(args), entries) + tuple(extra),
                            timeout, tag=i))
        for out in run_jobs(jobs, self._members, self._replacement):
            i, origin = out.job.tag, out.job.member
            moved = ", ".join(str(m) for m in out.moved_from)
            note = f"moved from lost {moved}" if moved and out.status == "done" else ""
            if out.status != "done":
                results[i] = FleetResult(origin.fingerprint, False, self._why(out), 0.0, out.member.pid)
                continue
            ok, error, seconds, arrays = out.value
            results[i] = FleetResult(out.member.fingerprint, ok, error, seconds, out.member.pid,
                                     _own(arrays), note)
        return [results[i] for i in range(len(plan))]

    def _why(self, out) -> str:
        """Why a job gave no result; a fleet closed while it ran (from another thread) says so
        rather than blaming the devices its close killed."""
        if self.closed:
            return f"the fleet was closed before the job finished ({out.message})"
        return out.message

    def check(self, func, *args, devices=None, rtol=None, atol=None,
              timeout=CHECK_TIMEOUT) -> list:
        """vkir_check on every selected device: `func` built here per kind of device, run on
        each device and in the interpreter with that device's parameters (subgroup size, float
        behaviour), on copies of `args`. [FleetResult], one per device; `arrays` are the
        device's arrays where it agreed. A device that gives no result within `timeout`
        seconds is taken as hung (see `apply`). A fleet with no live device is a DeviceError."""
        plan = [(m, args) for m in self.members(devices)]
        return self._run("check", func, plan, True, (rtol, atol), timeout)

    def run(self, func, *args, devices=None, timeout=CHECK_TIMEOUT) -> list:
        """One call of `func` on `args` on every selected device: [FleetResult] whose `arrays`
        are the arguments after the call (written buffers updated); `timeout` as in `check`."""
        return self._run("run", func, [(m, args) for m in self.members(devices)], False,
                         timeout=timeout)

    def map(self, func, arg_sets, devices=None, timeout=CHECK_TIMEOUT) -> list:
        """One call of `func` per argument tuple in `arg_sets`, spread over the selected
        devices (round robin): [FleetResult] in `arg_sets` order; `timeout` (per call) as in
        `check`."""
        members = self.members(devices)
        plan = [(members[i % len(members)], args) for i, args in enumerate(arg_sets)]
        return self._run("run", func, plan, False, timeout=timeout)

    def apply(self, fn, *args, devices=None, timeout=None) -> list:
        """`fn(device, *args)` in every selected device's actor (`fn` must be picklable: a
        module-level function): [FleetResult] whose `value` is what it returned. Used for jobs
        that are not one kernel, such as `vkir bench --fleet`. A device that gives no result
        within `timeout` seconds is taken as hung: its actor is killed and its result says so.
        `fn` is any code: whoever can reach the fleet's Ray instance can run it on the actors."""
        members = self.members(devices)
        jobs = [Job(m, "apply", (fn, args), timeout, tag=m) for m in members]
        results = []
        for out in run_jobs(jobs, self._members, self._replacement):
            origin = out.job.tag
            if out.status != "done":
                results.append(FleetResult(origin.fingerprint, False, self._why(out), 0.0,
                                           out.member.pid))
                continue
            ok, error, seconds, value = out.value
            moved = ", ".join(str(m) for m in out.moved_from)
            results.append(FleetResult(out.member.fingerprint, ok, error, seconds, out.member.pid,
                                       value=value, note=f"moved from lost {moved}" if moved else ""))
        return results

    # -- end -------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill the actors this fleet started (served actors stay for other connections) and,
        when no other open fleet uses it, shut down the local Ray instance `connect` started
        (never one the user started). Closing twice is harmless."""
        if self.closed:
            return
        self.closed = True
        ray = require_ray()
        if ray.is_initialized():   # else the actors went with Ray (ray.kill would start a new one)
            for handle in self._owned:
                try:
                    ray.kill(handle, no_restart=True)
                except ray.exceptions.ActorHandleNotFoundError:
                    pass   # a handle of an earlier Ray instance: that actor is gone
        self._owned.clear()
        _SHARING_LOCAL_RAY.discard(self)
        if self._shares_local_ray and not _SHARING_LOCAL_RAY and ray.is_initialized():
            ray.shutdown()   # the last fleet on the Ray instance `connect` started

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._live())} device(s)"
        return f"<vkir Fleet {state}>"


def new_actor_id() -> str:
    """A unique suffix for a served actor's name."""
    return uuid.uuid4().hex[:8]
