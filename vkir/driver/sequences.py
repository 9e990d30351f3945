"""Sequences (many kernel calls, one submission) and asynchronous launch handles.

    with vkir.sequence(device=dev) as seq:   # kernel calls inside are recorded, not run
        k1(x, y)
        k2(y, z)                             # a barrier: k2 reads what k1 wrote
    seq.wait(timeout=10)                     # the block's end submitted the command buffer
    seq.run().wait()                         # replay without recording again

Anything with a `dispatch_spec(*args, **kwargs)` method returning a `vkir.runtime.Dispatch`
(pipeline, buffers with access modes, push-constant bytes, group counts) can be recorded: call it
inside the block after checking `vkir.driver.sequences.current()`, or use `seq.record(obj, *args)`.
Kernel calls inside a sequence take DeviceArrays only: a numpy argument would need a hidden copy
whose timing nobody controls, so it is an ArgumentError.

The active sequence is per thread (and per asyncio task): a `contextvars.ContextVar`.
"""

from __future__ import annotations

import contextvars

from ..errors import ArgumentError, DeviceError

ACTIVE_SEQUENCE: contextvars.ContextVar = contextvars.ContextVar("vkir_active_sequence", default=None)
_ACTIVE = ACTIVE_SEQUENCE  # the former private name


def current():
    """The sequence whose `with` block the calling thread is in, or None."""
    return ACTIVE_SEQUENCE.get()


def sequence(device=None) -> "Sequence":
    """A new, empty Sequence on `device` (a selector as for vkir.device, or an opened Device);
    use it as a context manager."""
    from .arrays import resolve_device

    return Sequence(resolve_device(device))


class Sequence:
    """Kernel dispatches recorded into one command buffer, submitted as a whole.

    Inside `with seq:` calls of kernels on this sequence's device are recorded; leaving the block
    submits. A block that raised leaves the sequence failed: what it had recorded is dropped
    (with the arrays and kernels it held) and `run()`/`profile()` raise ArgumentError naming the
    error, since replaying part of a program is never what was meant. `run()` submits again (the recorded command buffer is replayed;
    a run still in flight is waited for first), `wait(timeout)` and `done()` follow the last run,
    `profile()` runs once with timestamps and returns a per-kernel table. Dispatches are ordered
    by barriers only where one reads or writes what an earlier one wrote, or writes what an
    earlier one read (`barriers` counts them)."""

    def __init__(self, device):
        self.device = device
        self._dispatches: list = []
        self._recording = None
        self._timed = None
        self._submission = None
        self._token = None
        self._open = False
        self._verified = True
        self._failed = None   # "ExcType: message" of the error that ended the recording block
        self._imports = None  # the recorded imports to check before each run (arrays.py)

    # -- recording ---------------------------------------------------------------------------
    def __enter__(self) -> "Sequence":
        if self._open:
            raise ArgumentError("this sequence is already recording")
        self._check_recorded()
        if self._dispatches:
            raise ArgumentError("this sequence was recorded already: replay it with seq.run(), or "
                                "record a new one with vkir.sequence()")
        self._open = True
        self._token = ACTIVE_SEQUENCE.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        ACTIVE_SEQUENCE.reset(self._token)
        self._token = None
        self._open = False
        if exc_type is None:
            self.run()
            return
        # half a program must never run: forget what was recorded (and what it kept alive)
        self._failed = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
        self._dispatches = []

    def _check_recorded(self) -> None:
        """ArgumentError when the recording block raised (nothing usable was recorded)."""
        if self._failed is not None:
            raise ArgumentError(f"this sequence's recording failed ({self._failed}); its "
                                "dispatches were dropped and it cannot be replayed: record a new "
                                "one with vkir.sequence()")

    def record(self, kernel, *args, **kwargs) -> None:
        """Record `kernel(*args, **kwargs)` (a Kernel, or anything with `dispatch_spec`)."""
        spec = getattr(kernel, "dispatch_spec", None)
        if spec is None:
            raise ArgumentError(f"{type(kernel).__name__} cannot be recorded in a sequence "
                                "(it has no dispatch_spec method)")
        self.add(spec(*args, **kwargs))

    def add(self, dispatch) -> None:
        """Append one vkir.runtime.Dispatch (the sequence must be open: inside its `with`)."""
        from ..runtime import Dispatch

        if not self._open:
            raise ArgumentError("dispatches are recorded inside `with vkir.sequence() as seq:`; "
                                "this sequence is not open")
        if not isinstance(dispatch, Dispatch):
            raise ArgumentError(f"a sequence records vkir.runtime.Dispatch objects, got "
                                f"{type(dispatch).__name__}")
        if dispatch.pipeline.device is not self.device:
            if dispatch.pipeline.device.closed or self.device.closed:   # a shutdown between
                raise DeviceError(f"{dispatch.name}: device closed")    # the two (same name)
            raise ArgumentError(f"{dispatch.name} runs on {dispatch.pipeline.device.info.name!r}, "
                                f"this sequence on {self.device.info.name!r}")
        self._dispatches.append(dispatch)

    # -- running -----------------------------------------------------------------------------
    def _recorded(self, timed: bool):
        from ..runtime import Recording

        if timed:
            if self._timed is None:
                self._timed = Recording(self.device, self._dispatches, timed=True)
            return self._timed
        if self._recording is None:
            self._recording = Recording(self.device, self._dispatches)
        return self._recording

    def run(self) -> "Sequence":
        """Submit the recorded dispatches (again) without waiting; returns the sequence."""
        from .profiling import active_profiler

        if self._open:
            raise ArgumentError("a sequence runs when its `with` block ends, not inside it")
        self._check_recorded()
        profiler = active_profiler()
        if profiler is not None:
            profiler.add_sequence(self)
            return self
        self._check_imports()
        for check in self._checks():
            check.reset()
        self._verified = False
        self._submission = self._recorded(False).submit("sequence")
        return self

    def _check_imports(self) -> None:
        """ArgumentError where the source of an imported array a dispatch binds was resized
        since it was recorded (vkir.driver.arrays.check_recorded): its memory may be freed."""
        from .arrays import check_recorded, recorded_imports

        if self._imports is None:
            self._imports = recorded_imports(self._dispatches)
        check_recorded(self._imports)

    def _checks(self) -> list:
        return [c for d in self._dispatches for c in d.checks]

    def _verify(self) -> None:
        """Run the dispatches' checks once the last run finished (each at most once per run)."""
        if self._verified:
            return
        self._verified = True
        for check in self._checks():
            check.verify()

    def wait(self, timeout=None) -> None:
        """Block until the last run finished. DeviceError after `timeout` seconds (None:
        $VKIR_TIMEOUT, else no limit), the work still running; Ctrl-C interrupts the wait."""
        from ..runtime.submission import resolve_timeout

        if timeout is not None:
            resolve_timeout(timeout)
        if self._submission is not None:
            self._submission.wait(timeout)
            self._verify()

    def done(self) -> bool:
        """Whether the last run finished (True when nothing was submitted)."""
        if self._submission is None:
            return True
        if not self._submission.done():
            return False
        self._verify()
        return True

    def profile(self, timeout=None):
        """Run once with a timestamp around every dispatch, wait, and return the
        vkir.driver.profiling.ProfileReport (calls, total, mean, share per kernel)."""
        from .profiling import ProfileReport

        report = ProfileReport()
        self._profile_into(report, timeout)
        return report

    def _profile_into(self, report, timeout=None) -> None:
        if self._open:
            raise ArgumentError("a sequence runs when its `with` block ends, not inside it")
        self._check_recorded()
        self._check_imports()
        rec = self._recorded(True)
        if not rec.timed:
            raise DeviceError(f"{self.device.info.name!r} has no timestamp queries on its "
                              "compute queue: nothing to profile")
        for check in self._checks():
            check.reset()
        self._verified = False
        self._submission = rec.submit("profiled sequence")
        self._submission.wait(timeout)
        self._verify()
        for d, seconds in zip(rec.dispatches, rec.elapsed()):
            report.add(d.name, seconds)

    # -- inspection --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._dispatches)

    @property
    def barriers(self) -> int:
        """Barriers between dispatches in the recorded command buffer."""
        from ..runtime.recording import needs_barrier

        return sum(needs_barrier(self._dispatches))

    def __repr__(self) -> str:
        return (f"<vkir Sequence of {len(self)} dispatches, {self.barriers} barriers, on "
                f"{self.device.info.name}>")


class LaunchHandle:
    """A kernel launch in flight (from `Kernel.launch`): `wait(timeout)`, `done()`. Numpy
    arguments the kernel writes receive their results when the wait (or a `done()` that returns
    True) observes the end of the work."""

    __slots__ = ("_submission", "_copies", "name")

    def __init__(self, submission, copies, name: str):
        self._submission = submission
        self._copies = copies
        self.name = name

    def done(self) -> bool:
        """True once the submitted work has finished (never blocks)."""
        if self._submission is None:
            return True
        if not self._submission.done():
            return False
        self._finish()
        return True

    def wait(self, timeout=None) -> None:
        """Block until the launch finished. DeviceError after `timeout` seconds (None:
        $VKIR_TIMEOUT, else no limit), the work still running; Ctrl-C interrupts the wait."""
        from ..runtime.submission import resolve_timeout

        if timeout is not None:
            resolve_timeout(timeout)
        if self._submission is None:
            return
        self._submission.wait(timeout)
        self._finish()

    def _finish(self) -> None:
        copies, self._copies = self._copies, ()
        self._submission = None
        for buf, host in copies:
            buf.read(host)

    def __repr__(self) -> str:
        return f"<vkir launch of {self.name} ({'done' if self._submission is None else 'submitted'})>"
