"""Kernels that report from the device: a Kernel built from an instrumented function that takes one
more buffer, a small int32 record the kernel writes when something went wrong, which the host
reads after every dispatch and turns into an error.

`CheckedKernel` is the common part of bounds-checked kernels (vkir.driver.bounds_check) and
loop-cut-checked ones (vkir.driver.loop_cut): a subclass names its record (`record_name`,
`record_words`), instruments the user's function (`instrument`) and raises for a filled record
(`verify`). Calls, launches and sequences all check: a call raises after its dispatch, a
launch's wait (or a `done()` that returns True), a sequence's wait after its last run. Wrappers
nest: each adds its own record.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np

from ..errors import ArgumentError


class CheckedKernel:
    """A Kernel built from `self.instrument(func)`: called like the user's function (the record
    buffer is added to every call), it raises `verify`'s error after a dispatch that filled the
    record. Everything else (`spirv`, `asm`, `ir`, ...) is the inner Kernel's."""

    record_name: str = ""
    record_words: int = 0
    label: str = "checked"

    def __init__(self, func, build_inner):
        self.func = func
        checked, self.sites = self.instrument(func)
        self.kernel = build_inner(checked)
        self._records = threading.local()   # each thread's record for plain calls, on the device

    def instrument(self, func) -> tuple:
        """(the function with the record parameter and its checks, the sites it reports)."""
        raise NotImplementedError

    def verify(self, record: np.ndarray) -> None:
        """Raise the error a filled `record` (read back after a run) describes, if any."""
        raise NotImplementedError

    def __getattr__(self, name):
        if name == "kernel":   # not built (yet): never recurse
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self) -> str:
        return f"<vkir Kernel {self.func.name} ({self.label}) on {self.kernel.device.info.name}>"

    def _empty(self) -> np.ndarray:
        return np.zeros(self.record_words, np.int32)

    def _own_arguments(self, kwargs) -> None:
        if self.record_name in kwargs:
            raise ArgumentError(f"kernel {self.func.name}: {self.record_name!r} is vkir's own "
                                "argument")

    def __call__(self, *args, **kwargs) -> None:
        from .sequences import current

        self._own_arguments(kwargs)
        if current() is not None:  # recorded with its check, which the sequence's wait runs
            current().add(self.dispatch_spec(*args, **kwargs))
            return
        record = self._device_record()
        if kwargs:
            self.kernel(*args, **kwargs, **{self.record_name: record})
        else:   # positional: the inner kernel's fast path for repeated device arrays
            self.kernel(*args, record)
        found = record.numpy()
        if found.any():
            record.buffer.write(self._empty())   # clean for the next call
            self.verify(found)

    def _device_record(self):
        """The calling thread's record on the kernel's device (zero between calls): a device
        array, so that repeated calls reuse one recorded launch."""
        record = getattr(self._records, "record", None)
        if record is None:
            from .arrays import array

            record = self._records.record = array(self._empty(), device=self.kernel.device)
        return record

    def profile(self, *args, **kwargs):
        """Device time per run of the checked kernel (see Kernel.profile); raises, as a call
        does, when any of the runs filled the record (each run's outputs are the same, and a
        report is not reset between them)."""
        self._own_arguments(kwargs)
        record = self._empty()
        result = self.kernel.profile(*args, **kwargs, **{self.record_name: record})
        if record.any():
            self.verify(record)
        return result

    def launch(self, *args, **kwargs) -> "CheckedLaunch":
        """Submit the checked kernel without waiting (see Kernel.launch); the handle's wait (or a
        done() that returns True) raises for a filled record."""
        self._own_arguments(kwargs)
        check = RecordCheck(self)
        handle = self.kernel.launch(*args, **kwargs, **{self.record_name: check.record})
        return CheckedLaunch(handle, check)

    def dispatch_spec(self, *args, **kwargs):
        """The vkir.runtime.Dispatch of a checked call, for sequences: the sequence's wait (or
        done) raises for a record its last run filled."""
        self._own_arguments(kwargs)
        check = RecordCheck(self)
        spec = self.kernel.dispatch_spec(*args, **kwargs, **{self.record_name: check.record})
        return replace(spec, checks=spec.checks + (check,))


class RecordCheck:
    """The record of one checked dispatch, on the device: zeroed before each run, read and
    verified after it."""

    def __init__(self, kernel: CheckedKernel):
        from .arrays import array

        self.record = array(kernel._empty(), device=kernel.kernel.device)
        self._kernel = kernel

    def reset(self) -> None:
        """Zero the record (before a run is submitted; the previous run has finished)."""
        self.record.buffer.write(self._kernel._empty())

    def verify(self) -> None:
        """Raise the error of the first report the last run recorded, if any."""
        self._kernel.verify(self.record.numpy())


class CheckedLaunch:
    """A launch of a checked kernel: the LaunchHandle's wait/done, then the check."""

    def __init__(self, handle, check: RecordCheck):
        self._handle = handle
        self._check = check
        self.name = handle.name

    def wait(self, timeout=None) -> None:
        """Block until the launch finished, then raise for a filled record."""
        self._handle.wait(timeout)
        self._verify()

    def done(self) -> bool:
        """True once finished (never blocks); raises for a filled record."""
        if not self._handle.done():
            return False
        self._verify()
        return True

    def _verify(self) -> None:
        check, self._check = self._check, None
        if check is not None:
            check.verify()

    def __repr__(self) -> str:
        return f"<vkir checked {self._handle!r}>"


def _register():
    from .kernel import Kernel

    Kernel.register(CheckedKernel)   # a vkir.Kernel, with the inner one's attributes


_register()
