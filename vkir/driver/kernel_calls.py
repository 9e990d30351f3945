"""Calling a Kernel: check and bind the arguments, put numpy ones on the device (their own memory
in place where the backend can, `Allocator.in_place`; else staged copies), run (or record
inside `vkir.sequence()`, or time inside `vkir.profile()`), launch without waiting, profile, and
write results back; a repeated call on the same device arrays reuses its launch.

Arguments over one memory with a written one (vkir.aliasing, whatever each is: a numpy array, a
`vkir.asarray` import of it, a device array) are bound as one buffer: in the memory of the
device array that spans them (`aliasing.bind`: the others as views of it at their offsets, in
place), or, numpy arrays alone, staged together. Every device array is checked at every use
(`DeviceArray.check_source`: an import whose source was resized since is refused), the
repeated-call fast path included.
"""

from __future__ import annotations

import struct
import weakref

import numpy as np

from ..aliasing import Arg, bind, overlaps, plan
from ..errors import ArgumentError
from ..timing import Timing
from .arrays import DeviceArray
from .call_args import call_arguments, misaligned_error
from .same_device import check_same_device
from .dispatch import check_profile_counts, copy_back, run, stage, submit
from .profiling import ACTIVE_PROFILER
from .sequences import ACTIVE_SEQUENCE, LaunchHandle
from .tape_hook import ACTIVE_TAPE


def _scalar_key(value):
    """A cache key for a scalar argument that tells apart what == confuses: a float by its bit
    pattern (0.0 and -0.0 differ, a nan equals itself), everything else by type and value."""
    if isinstance(value, (float, np.floating)):
        return (float, struct.pack("<d", float(value)))
    return (type(value), value)


class KernelCalls:
    """Kernel's calls, launches and profiles (a part of Kernel: it reads the kernel's
    signature, programs, scratch buffers and lock).

    `last_call_copies` is the number of bytes the last call, launch or profile copied between
    numpy arguments and device memory (copied in plus copied back): 0 when every argument was
    a DeviceArray or numpy memory used in place."""

    last_call_copies = 0

    def _prepare(self, args, kwargs=None, samplers=None):
        """All checks, then the runtime buffers (numpy arguments copied in), images and launch
        data."""
        bound = self._signature.bind(args, kwargs)
        args = bound.args
        push, groups, program = self._derive(bound.values)
        buffers, host = {}, {}
        for p in self._buffer_params():
            a = args[p.index]
            if isinstance(a, DeviceArray):
                buffers[p.index] = self._on_device(p, a)
            else:
                host[p.index] = a
        aliases = self._alias_groups(args)
        program = self._for_aliases(self._storage_if_aliased(program, aliases), aliases)
        self._bind_in_place(aliases, args, buffers, host)
        # every check passed: only now is anything imported or copied (aliased arrays into one
        # buffer)
        numpy_groups = [g for g in aliases if not g.on_device]
        staged_host = self._in_place(host, numpy_groups, buffers, args)
        copied = [0]

        def copy_in(position, data):
            copied[0] += data.nbytes
            return self._scratch.copy_in(position, data)

        staged, copies = stage(staged_host, self._writes.__contains__, numpy_groups, copy_in,
                               self._scratch.view)
        images, image_copies = self._bind_images(args, samplers)
        self.last_call_copies = copied[0] + sum(out.nbytes for _, out, _ in copies) + \
            sum(host.nbytes * 2 for _, _, host in image_copies)
        buffers.update(staged)
        program, buffers = self._texel_bind(program, buffers)
        return ([buffers[i] for i in self._binding_params] + images, push, groups,
                (copies, host, image_copies), program)

    def _buffer_params(self):
        """The signature's buffer parameters that are storage buffers (not images)."""
        return [p for p in self._signature.buffer_params if p.image is None]

    def _bind_images(self, args, samplers, device_only: bool = False) -> tuple:
        """(the backend's objects for the image parameters in binding order, copy-backs) through
        the image seam (vkir.driver.shader_images); `samplers` {texture name: vkir.Sampler}."""
        if not self._image_params:
            if samplers:
                raise ArgumentError(f"kernel {self.name}: samplers= given, but the kernel has no "
                                    "texture parameters")
            return [], []
        return self._images.bind([args[i] for i in self._image_params], samplers,
                                 device_only=device_only)

    def _in_place(self, host: dict, numpy_groups, buffers: dict, args) -> dict:
        """Put into `buffers` the numpy arguments of `host` ({position: array}) that the backend
        binds in place (never ones aliased with another argument: those share one staged
        buffer, nor ones over the memory of a DeviceArray argument made by `vkir.asarray`,
        which keep the copy semantics they had); the rest, which are staged, as a dict like
        `host`."""
        grouped = {m.position for g in numpy_groups for m in g.members}
        imported = [a for a in args if isinstance(a, DeviceArray) and a.is_view]
        allocator = self._rt.allocator
        rest = {}
        for position, a in host.items():
            shared = position in grouped or any(overlaps(a, v) for v in imported)
            buf = None if shared else allocator.in_place(a, position in self._writes)
            if buf is None:
                rest[position] = a
            else:
                buffers[position] = buf
        return rest

    def _bind_in_place(self, aliases, args, buffers: dict, host: dict) -> None:
        """Bind the members of the groups bound in device memory (`aliasing.bind`: a device
        array's, or an import of the union) into `buffers`, numpy members too (taken out of
        `host`: they are that memory)."""
        allocator = self._rt.allocator
        bound = bind(aliases, args, allocator.view, allocator.in_place, f"kernel {self.name}")
        buffers.update(bound)
        for position in bound:
            host.pop(position, None)

    def _alias_groups(self, args) -> tuple:
        """The groups of buffer arguments over one memory with a writer (vkir.aliasing);
        ArgumentError where one cannot be bound as one buffer."""
        return plan([Arg(p.index, p.name, args[p.index], p.index in self._alias_writes)
                     for p in self._buffer_params()], f"kernel {self.name}")

    def _on_device(self, p, a):
        """The device buffer of DeviceArray argument `a` for parameter `p`; ArgumentError where
        it lives on another device than the kernel (DeviceError when the kernel's was closed:
        an array made after a shutdown is on the new device, and the kernel is what is stale)."""
        check_same_device(f"kernel {self.name}: argument {p.name!r}", a.device, self._rt)
        a.check_source(f"kernel {self.name}: argument {p.name!r}")
        if getattr(a.buffer, "misaligned", False):   # in a sequence: no host staging
            raise misaligned_error(f"kernel {self.name}: argument {p.name!r}", a)
        return a.buffer

    def _copy_back(self, copies):
        copy_back(copies[0], copies[1], self._scratch.copy_out)
        self._images.copy_back(copies[2])

    def _memo_hit(self, args):
        """The launch of the previous call when `args` are the same device arrays and equal
        scalars (the per-call fast path: no re-checking, no lookups)."""
        memo = self._memo
        if memo is None or len(args) != len(memo[0]):
            return None
        for a, key in zip(args, memo[0]):
            if type(key) is weakref.ref:
                if key() is not a:
                    return None
            elif _scalar_key(a) != key:
                return None
        for i in memo[2]:   # imported arrays: their sources may have been resized since
            args[i].check_source(f"kernel {self.name}: argument {self._params[i].name!r}")
        return memo[1]

    def __call__(self, *args, samplers=None, **kwargs) -> None:
        """Dispatch on `args` (by position and/or by parameter name) and wait; numpy arrays are
        copied in and the written ones back. Image parameters take numpy arrays (shape + channels)
        or vkir.DeviceImages; `samplers={texture name: vkir.Sampler(...)}` (nearest/clamp by
        default)."""
        if kwargs:
            args = self._signature.arguments(args, kwargs)
        tape = ACTIVE_TAPE.get()
        if tape is not None:   # inside `with vkir.Tape()`: the tape runs and records the call
            tape.call(self, tuple(args), samplers)
            return
        in_sequence = ACTIVE_SEQUENCE.get() is not None
        # torch tensors (and views the device cannot bind at their offset) as numpy memory
        args = call_arguments(args, self._params, f"kernel {self.name}", not in_sequence,
                              self._writes, self.device)
        if in_sequence or ACTIVE_PROFILER.get() is not None:
            self._call_recorded(args, samplers)
            return
        if self._image_params:   # no launch memo: the images and samplers are bound per call
            with self._lock:
                buffers, push, groups, copies, program = self._prepare(args, None, samplers)
                program.launch(buffers, push, groups).run(keep=(args, buffers))
                self._copy_back(copies)
            return
        if samplers:
            self._bind_images(args, samplers)   # refused: no textures
        launch = self._memo_hit(args)
        if launch is not None and launch.run(True, args):  # an evicted launch is destroyed
            self.last_call_copies = 0
            return
        if any(isinstance(a, np.ndarray) for a in args):
            with self._lock:  # the scratch buffers are this kernel's: one call at a time
                buffers, push, groups, copies, program = self._prepare(args)
                # the arguments and the memory bound in place stay alive while it may run
                program.launch(buffers, push, groups).run(keep=(args, buffers))
                self._copy_back(copies)
            return
        buffers, push, groups, _, program = self._prepare(args)
        launch = program.launch(buffers, push, groups)
        launch.run(keep=args)
        self._memo = (tuple(weakref.ref(a) if isinstance(a, DeviceArray) else _scalar_key(a)
                            for a in args), launch,
                      tuple(i for i, a in enumerate(args)
                            if isinstance(a, DeviceArray) and a.is_view))

    # -- sequences, launches, profiles -------------------------------------------------------
    def _device_buffers(self, args, samplers=None, image_copies=None):
        """Check `args`; (push bytes, groups, {param index: runtime Buffer}, numpy arguments
        by param index, program, alias groups, the images' backend objects) with every
        DeviceArray on this kernel's device. Images must be DeviceImages unless
        `image_copies` is a list: then numpy ones are copied in and their copy-backs appended."""
        bound = self._signature.bind(args)
        push, groups, program = self._derive(bound.values)
        buffers, host = {}, {}
        for p in self._buffer_params():
            a = bound.args[p.index]
            if isinstance(a, DeviceArray):
                buffers[p.index] = self._on_device(p, a)
            else:
                host[p.index] = a
        aliases = self._alias_groups(bound.args)
        images, copies = self._bind_images(bound.args, samplers, image_copies is None)
        if copies:
            image_copies.extend(copies)
        program = self._for_aliases(self._storage_if_aliased(program, aliases), aliases)
        self._bind_in_place(aliases, bound.args, buffers, host)
        return push, groups, buffers, host, program, aliases, images

    def dispatch_spec(self, *args, samplers=None, **kwargs):
        """The recordable dispatch of `self(*args, **kwargs)` (checked as a call is; a
        vkir.runtime.Dispatch on Vulkan): what a sequence records. Every buffer argument must be
        a DeviceArray (every image a DeviceImage)."""
        from ..seam import require

        require(self._rt, "sequences", f"kernel {self.name}: vkir.sequence() records Vulkan "
                "command buffers; recording it")
        args = self._signature.arguments(args, kwargs)
        push, groups, buffers, host, program, _, images = self._device_buffers(args, samplers)
        host = [p.index for p in self._buffer_params() if isinstance(args[p.index], np.ndarray)]
        if host:   # (numpy memory bound in place with a device array's is refused too)
            p = self._params[min(host)]
            raise ArgumentError(f"kernel {self.name}: argument {p.name!r} is a numpy array; "
                                "inside a sequence buffers must be DeviceArrays (vkir.array), "
                                "since a sequence makes no hidden copies")
        program, buffers = self._texel_bind(program, buffers)
        access = tuple(("r" if b.readable or not b.writable else "") + ("w" if b.writable else "")
                       for b in self.module.bindings) + self._images.access
        return program.dispatch(tuple(buffers[i] for i in self._binding_params) + tuple(images),
                                access, push, groups, self.name, (self, tuple(args)))

    def _call_recorded(self, args, samplers=None) -> None:
        """A call inside `vkir.sequence()` (recorded) or `vkir.profile()` (timed)."""
        seq = ACTIVE_SEQUENCE.get()
        if seq is not None:
            seq.add(self.dispatch_spec(*args, samplers=samplers))
            return
        with self._lock:  # the scratch buffers of numpy arguments
            buffers, push, groups, copies, program = self._prepare(args, None, samplers)
            run(self._rt, program, buffers, push, groups, self.name, args,
                ACTIVE_PROFILER.get())
            self._copy_back(copies)

    def launch(self, *args, samplers=None, **kwargs) -> LaunchHandle:
        """Submit `self(*args, **kwargs)` without waiting: a handle with `wait(timeout=None)` and
        `done()`. Numpy arguments are copied in now (each launch has its own device copies) and
        the ones the kernel writes are copied back when the wait observes the end (numpy
        images too, as calls take them). Any number of launches may be in flight; each starts
        after the work submitted before it, as on one queue."""
        args = self._signature.arguments(args, kwargs)
        if ACTIVE_SEQUENCE.get() is not None:
            raise ArgumentError(f"kernel {self.name}: launch() inside a sequence; call the kernel "
                                "instead (the sequence submits when its block ends)")
        if ACTIVE_TAPE.get() is not None:
            raise ArgumentError(f"kernel {self.name}: launch() inside a vkir.Tape is not "
                                "recorded; call the kernel instead")
        args = call_arguments(args, self._params, f"kernel {self.name}", True, self._writes)
        if ACTIVE_PROFILER.get() is not None:
            self._call_recorded(args, samplers)
            return LaunchHandle(None, (), self.name)
        image_copies = []
        push, groups, buffers, host, program, aliases, images = \
            self._device_buffers(args, samplers, image_copies)
        numpy_groups = [g for g in aliases if not g.on_device]
        host = self._in_place(host, numpy_groups, buffers, args)
        in_place = tuple(buffers.values())   # imports and views of aliases: kept while it runs
        self.last_call_copies = sum(a.nbytes * (1 + (i in self._writes))
                                    for i, a in host.items()) + \
            sum(out.nbytes * 2 for _, _, out in image_copies)
        program, buffers = self._texel_bind(program, buffers, host)
        buffers.update({-1 - j: im for j, im in enumerate(images)})   # keys no argument has
        positions = self._binding_params + tuple(-1 - j for j in range(len(images)))
        handle = submit(self._rt, program, buffers, push, groups, self.name,
                        (args, in_place, images), host, self._writes.__contains__,
                        numpy_groups, positions)
        handle._copies.extend(self._images.readbacks(image_copies))   # numpy images, at the end
        return handle

    def profile(self, *args, repeat: int = 50, warmup: int = 1, samplers=None,
                **kwargs) -> Timing:
        """Run `repeat` times; device seconds per run from timestamp queries (wall time where
        the queue has none). Numpy arguments are copied in once and written ones back at the end."""
        check_profile_counts(f"kernel {self.name}", repeat, warmup)
        if kwargs:
            args, kwargs = self._signature.arguments(args, kwargs), None
        args = call_arguments(args, self._params, f"kernel {self.name}", True, self._writes)
        with self._lock:
            buffers, push, groups, copies, program = self._prepare(args, kwargs, samplers)
            t = program.profile(buffers, push, groups, repeat, warmup)
            self._copy_back(copies)
        return t
