"""The process that owns one Vulkan device of a fleet: `DeviceWorker`, run as a Ray actor.

It opens its device once (the device the actor's environment selects: `VKIR_DEVICE`, and
`VK_ICD_FILENAMES` where a driver is outside the loader's folders), and runs what a job sends:
a check against the interpreter with this device's own parameters (subgroup size, float
behaviour), a plain run, or a timing of a tuning candidate. Kernels come from the entries the
job built where it started (vkir.fleet.jobs); arrays arrive and leave as numpy arrays, never as
Vulkan objects. Results are plain tuples; the fleet wraps them with the device's Fingerprint.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict

__all__ = ["DeviceWorker"]

# timing kernels kept per actor (a tuning run times each candidate several times, interleaved)
KEPT_KERNELS = 32


class DeviceWorker:
    """One device's worker. Methods return (ok, error, seconds, payload) tuples."""

    def __init__(self, selector=None):
        from ..driver.arrays import device
        from ..errors import VkirError

        self._kernels: OrderedDict = OrderedDict()
        self._device, self._error = None, ""
        try:
            self._device = device(selector)
        except VkirError as exc:   # kept for `describe`: the fleet names the selector
            self._error = f"{type(exc).__name__}: {exc}"

    def describe(self):
        """The device's DeviceInfo, or the text of the error that kept it from opening."""
        return self._device.info if self._device is not None else self._error

    def pid(self) -> int:
        """This actor's process id."""
        return os.getpid()

    def check(self, func, args, entries, rtol=None, atol=None):
        """vkir.device_check.check of `func` on copies of `args`: (ok, error, seconds, the
        device's arrays or None)."""
        from ..cache.compile import prebuilt
        from ..device_check import check
        from ..errors import VkirError

        t0 = time.perf_counter()
        try:
            with prebuilt(entries):
                arrays = check(func, *args, device=self._device, rtol=rtol, atol=atol)
        except (AssertionError, VkirError) as exc:
            return False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0, None
        return True, "", time.perf_counter() - t0, arrays

    def run(self, func, args, entries):
        """One call of `func` on `args` (numpy arrays and scalars): (ok, error, seconds, the
        arrays after the call)."""
        from ..api import build
        from ..cache.compile import prebuilt
        from ..errors import VkirError

        import numpy as np

        t0 = time.perf_counter()
        args = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]  # arrive read-only
        try:
            with prebuilt(entries):
                kernel = build(func, device=self._device)
            kernel(*args)
        except VkirError as exc:
            return False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0, None
        return True, "", time.perf_counter() - t0, list(args)

    def apply(self, fn, args):
        """`fn(device, *args)` on this actor's device (a picklable function, such as the
        benchmark suite's): (ok, error, seconds, its value)."""
        from ..errors import VkirError

        t0 = time.perf_counter()
        try:
            value = fn(self._device, *args)
        except VkirError as exc:
            return False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0, None
        return True, "", time.perf_counter() - t0, value

    def time(self, func, entries, repeat: int = 3):
        """Device seconds of one run of a tuning candidate (median of `repeat`, after a warm-up
        run), on arrays of random data: (ok, error, seconds, was the kernel prebuilt). Kernels
        are kept by what they compute (`func`'s script), so a later job's candidate is never
        served a kernel an earlier job timed."""
        from ..api import build
        from ..autotuning import timing_arguments
        from ..cache.compile import prebuilt
        from ..errors import VkirError

        t0 = time.perf_counter()
        key = hashlib.sha256(func.script().encode()).hexdigest()
        try:
            held = self._kernels.get(key)
            if held is None:
                with prebuilt(entries):
                    kernel = build(func, device=self._device)
                held = self._kernels[key] = (kernel, timing_arguments(kernel))
                while len(self._kernels) > KEPT_KERNELS:
                    self._kernels.popitem(last=False)
            kernel, arguments = held
            seconds = kernel.profile(*arguments, repeat=repeat, warmup=1).median
        except VkirError as exc:
            return False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0, False
        return True, "", seconds, bool(kernel._compiled.prebuilt)
