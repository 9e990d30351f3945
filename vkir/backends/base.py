"""The backend interface: `Backend` (a host backend, whose kernels are BackendKernels) and
`DeviceBackend` (a backend that drives a device through the seam, whose kernels are vkir
Kernels)."""

from __future__ import annotations

import threading
import time

import numpy as np

from ..driver.arrays import DeviceArray, host_copies
from ..driver.dispatch import check_profile_counts
from ..driver.kernel import Kernel, Profile
from ..binding import Signature, written_params
from ..errors import UnsupportedError
from ..interpreter import evaluate
from ..ir import PrimFunc


class Executable:
    """A kernel compiled by a backend: `ir` is the lowered PrimFunc; `run(args)` executes it on
    checked arguments (numpy arrays in parameter order, modified in place, and Python scalars)."""

    def __init__(self, ir: PrimFunc):
        self.ir = ir

    def run(self, args: tuple) -> None:
        """Execute once on `args`."""
        raise NotImplementedError


class Backend:
    """One way to compile and run kernels; `vkir.build` asks a backend for the `kernel()` of a
    function. A backend that runs on the host sets `name`, gives its `target()` and implements
    `compile(func, target, pointer_casts=...) -> Executable`, and its kernels are
    BackendKernels; the Vulkan backend (vulkan.py) gives device kernels instead."""

    name = "?"

    def kernel(self, func: PrimFunc, device=None, *, pointer_casts: bool = False,
               precise: bool = False, check_bounds: bool = False):
        """The Kernel of `func` on this backend (`device` selects a device where the backend
        has several; `check_bounds` adds nothing here: host backends always check bounds)."""
        return BackendKernel(func, self, pointer_casts, precise)

    def target(self, precise: bool = False):
        """The vkir.Target this backend compiles for."""
        raise NotImplementedError

    def compile(self, func: PrimFunc, target, *, pointer_casts: bool = False) -> Executable:
        """Lower `func` for `target` and prepare it to run."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<vkir backend {self.name}>"


class DeviceBackend(Backend):
    """A backend that drives a device through the seam (vkir.seam): it gives the `runtime()` of
    a device, and its kernels are vkir Kernels compiled for that runtime's target. What a new
    device needs is its Runtime and this class's `name` and `runtime`; `kernel` binds
    T.parallel loops onto the grid and refuses what needs Vulkan's device arrays (bounds
    checks, and loop-cut checks on a driver with a loop budget)."""

    def runtime(self, device=None):
        """The seam Runtime of `device` (None: the default device); `device` itself when it is
        already one of this backend's runtimes."""
        raise NotImplementedError

    def target(self, precise: bool = False):
        """The Target of the default device."""
        return self.runtime().target(precise)

    def kernel(self, func: PrimFunc, device=None, *, pointer_casts: bool = False,
               precise: bool = False, check_bounds: bool = False):
        """The Kernel of `func` on `device` (vkir.driver.building.runtime_kernel)."""
        from ..driver.building import runtime_kernel

        return runtime_kernel(func, self.runtime(device), pointer_casts=pointer_casts,
                              precise=precise, check_bounds=check_bounds)


class BackendKernel:
    """A Kernel run by a `Backend` instead of a Vulkan device: same call signature, argument
    errors, write-back and `profile()` as a device kernel. `device` is the backend, `ir` the
    function lowered for its target; there is no SPIR-V (`spirv` and `asm` raise
    UnsupportedError) and no pipeline (`pipeline_seconds` is 0). A registered vkir.Kernel."""

    last_call_copies = 0   # as Kernel's: the host runs on numpy arguments' own memory

    def __init__(self, func: PrimFunc, backend: Backend, pointer_casts: bool = False,
                 precise: bool = False):
        from ..driver.kernel import check_layouts

        t0 = time.perf_counter()
        check_layouts(func)
        self.func = func
        self.device = backend
        self.target = backend.target(precise)
        self.executable = backend.compile(func, self.target, pointer_casts=pointer_casts)
        self.module = None
        self.compile_seconds = time.perf_counter() - t0
        self._writes = tuple(sorted(written_params(func)))
        self._signature = Signature(func, evaluate, where=f"kernel {func.name}",
                                    written=self._writes, array_types=(DeviceArray, np.ndarray),
                                    array_kinds="a vkir or numpy array", exact=True)
        self._params = self._signature.params
        self._lock = threading.Lock()

    @property
    def ir(self) -> PrimFunc:
        """The function lowered for the backend's target."""
        return self.executable.ir

    @property
    def name(self) -> str:
        """The kernel's name: its PrimFunc's."""
        return self.func.name

    pipeline_seconds = 0.0      # no driver pipeline
    first_run_seconds = None    # nothing compiles on the first run

    def report(self) -> str:
        """Which vector accesses of the lowered kernel are done lane by lane, and why, then
        vkir's compile time (there is no driver compile)."""
        from ..transform.vector_report import report

        return report(self.ir) + f"\ncompile: {self.compile_seconds * 1e3:.1f} ms in vkir"

    @property
    def spirv(self) -> bytes:
        """Not available: this kernel has no SPIR-V (UnsupportedError)."""
        raise UnsupportedError(f"kernel {self.name} runs on the {self.device.name} backend, "
                               "which emits no SPIR-V")

    @property
    def asm(self) -> str:
        """Not available: this kernel has no SPIR-V (UnsupportedError)."""
        return self.spirv

    def __repr__(self) -> str:
        return f"<vkir Kernel {self.name} on {self.device.name}>"

    def _host_args(self, args, kwargs):
        """Checked arguments as the backend runs them (device arrays read into numpy, one host
        copy per device buffer so that views of one stay one memory), and the write-back."""
        bound = self._signature.bind(args, kwargs)
        out, write_back = host_copies(bound.args)
        return tuple(out), write_back

    def __call__(self, *args, samplers=None, **kwargs) -> None:
        """Run on `args` (by position and/or by parameter name); numpy arrays are modified in
        place, written device arrays updated; `samplers={texture name: vkir.Sampler}` for a
        backend that runs images (the interpreter)."""
        self._no_sequence("a call")
        host, write_back = self._host_args(args, kwargs)
        if samplers is None:
            self.executable.run(host)
        elif not getattr(self.executable, "runs_images", False):
            raise UnsupportedError(f"kernel {self.name}: samplers= given, but the "
                                   f"{self.device.name} backend runs no images")
        else:
            self.executable.run(host, samplers=samplers)
        write_back()

    def _no_sequence(self, what: str) -> None:
        from ..driver.sequences import ACTIVE_SEQUENCE

        if ACTIVE_SEQUENCE.get() is not None:
            raise UnsupportedError(f"kernel {self.name}: {what} inside vkir.sequence(); a sequence "
                                   f"records device dispatches, and this kernel runs on the "
                                   f"{self.device.name} backend")

    def launch(self, *args, **kwargs):
        """Run now (the backend has no queue) and return a handle that is already done."""
        from ..driver.sequences import LaunchHandle

        self._no_sequence("launch()")
        self(*args, **kwargs)
        return LaunchHandle(None, (), self.name)

    def dispatch_spec(self, *args, **kwargs):
        """Refused: only device kernels have a dispatch to record."""
        raise UnsupportedError(f"kernel {self.name} runs on the {self.device.name} backend: it has "
                               "no device dispatch to record")

    def profile(self, *args, repeat: int = 50, warmup: int = 1, **kwargs) -> Profile:
        """Run `warmup` + `repeat` times; wall seconds per run (source "wall")."""
        check_profile_counts(f"kernel {self.name}", repeat, warmup)
        host, write_back = self._host_args(args, kwargs)
        samples = []
        with self._lock:
            for i in range(warmup + repeat):
                t0 = time.perf_counter()
                self.executable.run(host)
                if i >= warmup:
                    samples.append(time.perf_counter() - t0)
        write_back()
        return Profile(float(np.median(samples)), min(samples), max(samples), len(samples), "wall",
                       tuple(samples))


Kernel.register(BackendKernel)
