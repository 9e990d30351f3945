"""Bounds-checked shaders: `vkir.compile_glsl(..., check_bounds=True)` (or `load_spirv`) runs the
user's module rewritten by vkir.spirv.bounds, so that an out-of-bounds index into a shared,
private, function-local or buffer array can neither crash the driver nor touch other memory: the
store is dropped, the load gives 0, and the call (or the launch's wait, or the sequence's wait)
raises OutOfBoundsError naming the array, the dimension and the index.

The rewritten module takes one more buffer, a small uint record at the binding after the shader's
last; this wrapper passes it (the calling thread's device array for plain calls, one per
launch or recorded dispatch), writes into it the element count of each buffer's runtime array
before the run, and checks it after the run, as bounds-checked vkir kernels do
(vkir.driver.record_check).
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np

from ..errors import ArgumentError, OutOfBoundsError, SpirvValidationError

_STORAGE_WORDS = {"Workgroup": "shared", "Private": "private", "Function": "function-local",
                  "StorageBuffer": "storage buffer", "Uniform": "uniform buffer"}
_OUTCOME = {"store": "the store was dropped", "load": "the load gave 0",
            "atomic": "the atomic operation was skipped (it gave 0)"}


class BoundsCheckedShader:
    """A ShaderKernel of the bounds-checked rewrite of `spirv` (see the module docstring):
    called, launched, recorded and profiled like the shader itself, with the same buffers.
    `bindings` and `binding_views` are the user's; `spirv`, `asm` and `info` the rewrite's;
    `sites` the checked accesses (vkir.spirv.bounds.BoundsSite)."""

    def __init__(self, spirv: bytes, device=None, entry: str = "main", specialization=None,
                 name: str | None = None):
        from ..spirv import validate
        from ..spirv.bounds import instrument
        from ..spirv.reflection import reflect
        from .shader import ShaderKernel, runtime_for

        rt = runtime_for(device)
        spirv = bytes(spirv)
        if len(spirv) % 4 or len(spirv) < 20:   # as ShaderKernel says it
            raise SpirvValidationError(f"{name or entry}: not a SPIR-V module ({len(spirv)} "
                                       "bytes; a module is a whole number of 32-bit words, 5 of "
                                       "them header)")
        validate(spirv, rt.target().env)   # the user's module, as given
        info = reflect(spirv, entry)
        used = [b.binding for b in info.bindings + info.images] + \
            [d[1] for d in info.other_descriptors]
        done = instrument(spirv, max(used, default=-1) + 1)
        self.sites = done.sites
        self.record_words = done.record_size
        self._runtime_arrays = done.runtime_arrays
        self.kernel = ShaderKernel(done.words, rt, entry, specialization, name)
        self.name = self.kernel.name
        record = done.record_binding
        self.bindings = tuple(b for b in self.kernel.bindings
                              if (b.set, b.binding) != (0, record))
        # where the record goes among a call's arguments ((set, binding) order: before sets > 0)
        self._record_at = sum((b.set, b.binding) < (0, record) for b in self.bindings)
        self.binding_views = {k: v for k, v in self.kernel.binding_views.items() if k != record}
        self._records = threading.local()   # each thread's record for plain calls

    def __getattr__(self, name):
        if name == "kernel":   # not built (yet): never recurse
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self) -> str:
        return (f"<vkir ShaderKernel {self.name} (bounds-checked) local_size="
                f"{self.kernel.local_size} bindings={len(self.bindings)} on "
                f"{self.kernel.runtime.name}>")

    # -- the record ----------------------------------------------------------------------------
    def _empty(self) -> np.ndarray:
        return np.zeros(self.record_words, np.uint32)

    def _initial(self, buffers) -> np.ndarray:
        """The record before a run on `buffers`: no report, and each runtime array's element
        count (what the buffer passed holds, not the descriptor's possibly larger range)."""
        from ..spirv.bounds import RECORD_WORDS

        out = self._empty()
        where = {b.binding: i for i, b in enumerate(self.bindings)
                 if b.kind in ("storage", "uniform")}
        for word, (binding, offset, stride) in enumerate(self._runtime_arrays, RECORD_WORDS):
            nbytes = int(buffers[where[binding]].nbytes) if binding in where else 0
            out[word] = min(max(nbytes - offset, 0) // stride, 0xFFFFFFFF) if stride else 0
        return out

    def _count(self, buffers) -> None:
        if len(buffers) != len(self.bindings):
            names = ", ".join(f"{b.binding}: {b.name}" for b in self.bindings)
            raise ArgumentError(f"{self.name} takes {len(self.bindings)} buffers (bindings "
                                f"{names}), got {len(buffers)}")

    def _with_record(self, args, record) -> tuple:
        """The kernel's arguments: the user's `args` with `record` at its binding's place."""
        return (*args[:self._record_at], record, *args[self._record_at:])

    def _device_record(self):
        record = getattr(self._records, "record", None)
        if record is None:
            from .arrays import array

            record = self._records.record = array(self._empty(), device=self.kernel.device)
        return record

    def verify(self, record: np.ndarray) -> None:
        """Raise OutOfBoundsError for a record that reports an access (read back after a
        run)."""
        if not record[0]:
            return
        site = self.sites[int(record[0]) - 1]
        dim, raw = int(record[1]), int(record[2])
        index = raw - (1 << 32) if site.signed[dim] and raw >> 31 else raw
        length = site.lengths[dim]
        bound = f"[0, {length})" if length is not None else "the array"
        where = f"index {index}" + (f" of dimension {dim}" if len(site.lengths) > 1 else "")
        raise OutOfBoundsError(f"{self.name}: out-of-bounds {site.access} of the "
                               f"{_STORAGE_WORDS[site.storage]} array {site.variable}: {where} "
                               f"is outside {bound}; {_OUTCOME[site.access]} (check_bounds)",
                               site.variable, index)

    # -- running -------------------------------------------------------------------------------
    def __call__(self, *buffers, grid=None, push=None) -> None:
        """Run the checked shader (see ShaderKernel.__call__); OutOfBoundsError after a run
        that made an out-of-bounds access."""
        from .sequences import current

        self._count(buffers)
        if current() is not None:   # recorded with its check, which the sequence's wait runs
            current().add(self.dispatch_spec(*buffers, grid=grid, push=push))
            return
        record = self._device_record()
        record.write(self._initial(buffers))
        self.kernel(*self._with_record(buffers, record), grid=grid, push=push)
        self.verify(record.numpy())

    def launch(self, *buffers, grid=None, push=None):
        """Submit without waiting (see ShaderKernel.launch); the handle's wait (or a done()
        that returns True) raises for an out-of-bounds access."""
        from .record_check import CheckedLaunch

        self._count(buffers)
        check = _Check(self, self._initial(buffers))
        return CheckedLaunch(self.kernel.launch(*self._with_record(buffers, check.record),
                                                grid=grid, push=push), check)

    def dispatch_spec(self, *buffers, grid=None, push=None):
        """The vkir.runtime.Dispatch of a checked call, for sequences (whose wait checks)."""
        self._count(buffers)
        check = _Check(self, self._initial(buffers))
        spec = self.kernel.dispatch_spec(*self._with_record(buffers, check.record), grid=grid,
                                         push=push)
        return replace(spec, checks=spec.checks + (check,))

    def profile(self, *buffers, grid=None, push=None, repeat: int = 50, warmup: int = 1):
        """Device seconds per run of the checked shader (see ShaderKernel.profile)."""
        self._count(buffers)
        return self.kernel.profile(*self._with_record(buffers, self._initial(buffers)),
                                   grid=grid, push=push, repeat=repeat, warmup=warmup)


class _Check:
    """The record of one launch or recorded dispatch: set to `initial` before each run, read
    and verified after it."""

    def __init__(self, shader: BoundsCheckedShader, initial: np.ndarray):
        from .arrays import array

        self.record = array(initial, device=shader.kernel.device)
        self._initial = initial
        self._shader = shader

    def reset(self) -> None:
        """Rewrite the record (before a run is submitted; the previous run has finished)."""
        self.record.write(self._initial)

    def verify(self) -> None:
        """Raise OutOfBoundsError if the last run reported an access."""
        self._shader.verify(self.record.numpy())
