"""A lifetime guard: the operations in flight on a Vulkan object (a device, the instance) are
counted, so that closing it first waits for them and never destroys a handle one still uses.

Every entry point that touches a device's handles (submit, fence waits, allocation, mapping,
pipeline creation, recording, timestamp reads) runs inside `with guard:`. `close()` marks the
guard closing, from when on new operations are refused (the guard's `refuse` callback raises
DeviceError), and waits, a bounded time and in slices that Ctrl-C interrupts, until the operations
admitted before it have left; only then may the owner destroy its handles. An operation once
admitted always runs to its end: entries nested in it (its own thread) are admitted while closing.
"""

from __future__ import annotations

import threading
import time

SLICE_SECONDS = 0.05   # close() re-checks at least this often (Ctrl-C stays responsive)


class Lifetime:
    """Counts the threads inside operations on one object; `refuse()` raises the DeviceError an
    operation gets once the object is closing."""

    __slots__ = ("_cond", "_active", "_depth", "closing", "_refuse")

    def __init__(self, refuse):
        self._cond = threading.Condition(threading.Lock())
        self._active = 0                  # threads inside an operation
        self._depth = threading.local()   # this thread's nesting depth (`n`)
        self.closing = False
        self._refuse = refuse

    def __enter__(self) -> "Lifetime":
        local = self._depth
        depth = getattr(local, "n", 0)
        if depth:
            local.n = depth + 1
            return self
        with self._cond:
            if self.closing:
                refused = True
            else:
                refused = False
                self._active += 1
        if refused:
            self._refuse()
            raise AssertionError("the refuse callback of a closing Lifetime must raise")
        local.n = 1
        return self

    def try_enter(self) -> bool:
        """Enter as `with` does, or return False where the object is closing (for cleanups,
        which have nothing to do then: close() destroys what they would); leave with
        `__exit__()` after True."""
        local = self._depth
        depth = getattr(local, "n", 0)
        if not depth:
            with self._cond:
                if self.closing:
                    return False
                self._active += 1
        local.n = depth + 1
        return True

    def __exit__(self, *exc) -> None:
        local = self._depth
        depth = local.n - 1
        local.n = depth
        if depth:
            return
        with self._cond:
            self._active -= 1
            if not self._active:
                self._cond.notify_all()

    @property
    def active(self) -> int:
        """Threads inside an operation now (for tests and diagnostics)."""
        return self._active

    def close(self, timeout: float) -> bool:
        """Refuse new operations and wait up to `timeout` seconds for the admitted ones to leave
        (the caller's own, when it is inside one, excepted); whether they all did. Idempotent."""
        own = 1 if getattr(self._depth, "n", 0) else 0
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            self.closing = True
            while self._active > own:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, SLICE_SECONDS))
        return True
