"""Existing shaders: run a SPIR-V or GLSL compute shader from Python as a `ShaderKernel`
(vkir.load_spirv and vkir.compile_glsl, in vkir.driver.shader_sources, make one).

    sk = vkir.compile_glsl("saxpy.comp", specialization={"local_size_x": 64})
    sk(x, y, grid=(n // 64 + 1,), push={"n": n, "alpha": 2.0})

The module is validated with SPIRV-Tools for the device's Vulkan version before anything else
looks at it; its bindings, push-constant members, local size and specialization constants come
from reflecting it (vkir.spirv.reflection). A call checks every argument before anything is copied
or recorded, with the same rules as `Kernel`: arrays are numpy arrays or DeviceArrays of the
binding's element dtype, C-contiguous, on the kernel's device, of a size that is a whole number of
elements and within the device's storage (or uniform) buffer range; numpy arrays are copied in,
and copied back unless the binding is read-only (NonWritable) or a uniform buffer. Arrays that
share memory with a written binding are bound as one buffer, each at its offset (vkir.aliasing).

A ShaderKernel reaches its device only through the device seam (vkir.seam): the
Vulkan backend's Runtime gives it the device's queries and limit checks, a Program for its
pipeline and the launches; it imports no vkir.runtime.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..aliasing import bind
from ..errors import ArgumentError, SpirvValidationError, UnsupportedError
from .shader_addresses import ShaderAddresses, pack_block
from .same_device import check_same_device
from .shader_images import ShaderImages
from .dispatch import ScratchBuffers, check_profile_counts, copy_back, run, stage, submit
from .shader_needs import check_shader_needs
from .shader_slots import check_slots
from .shader_values import dtype_of as _dtype
from .shader_values import pack_into as _pack_into
from .shader_values import scalar_bytes as _scalar_bytes
from .pointer_merges import check_pointer_merges

_AXES = "xyz"


def runtime_for(device):
    """The seam Runtime a shader runs on: `device` itself when it is one, else the Vulkan
    backend's runtime of `device` (a selector as for vkir.device, an opened Device, or None for
    the default one); UnsupportedError where it lacks the "shaders" capability."""
    from ..seam import Runtime, shaders_of
    from ..seam.registry import backend_class

    rt = device if isinstance(device, Runtime) else backend_class("vulkan")().runtime(device)
    return shaders_of(rt)


class ShaderKernel:
    """A compute shader ready to run on one device. `bindings` (every positional argument of a
    call, in (set, binding) order: reflected DescriptorBindings of buffers and ImageBindings of
    images and texel buffers; separate samplers are not arguments), `buffer_bindings` (the
    buffers alone, in the order they are passed), `push_constants` (ReflectedPushConstant members),
    `local_size` (with the specialization applied), `spec_constants`, `specialization`
    ({SpecId: value} as given), `spirv` (bytes), `asm` (disassembly), `info` (the whole
    reflected ShaderInfo), `device` (the backend's device object), `runtime` (the seam
    Runtime), `program` (the seam Program) and `pipeline` (its runtime ComputePipeline on
    Vulkan)."""

    def __init__(self, spirv: bytes, device=None, entry: str = "main", specialization=None,
                 name: str | None = None):
        from ..spirv import validate
        from ..spirv.reflection import module_words, reflect

        rt = self._rt = runtime_for(device)
        self.device = rt.device
        self.spirv = bytes(spirv)
        self.name = name or entry
        self.entry = entry
        if len(self.spirv) % 4 or len(self.spirv) < 20:
            raise SpirvValidationError(f"{self.name}: not a SPIR-V module ({len(self.spirv)} bytes; "
                                       "a module is a whole number of 32-bit words, 5 of them header)")
        self.env = rt.target().env
        validate(self.spirv, self.env)
        self.info = info = reflect(self.spirv, entry)
        if info.entry.execution_model != "GLCompute":
            raise UnsupportedError(f"{self.name}: entry point {entry!r} is a "
                                   f"{info.entry.execution_model} shader; vkir runs compute shaders")
        if info.other_descriptors:
            dset, binding, what, kind = info.other_descriptors[0]
            raise UnsupportedError(f"{self.name}: binding {binding} (set {dset}, {what!r}) is a "
                                   f"{kind}; vkir binds buffers, images, samplers and texel "
                                   "buffers only")
        # one descriptor kind per (set, binding): drivers crash on two (vkir.driver.shader_slots)
        check_slots(info.bindings, info.images, self.name)
        # images, samplers and texel buffers (vkir.driver.shader_images)
        self._images = ShaderImages(self.name, info.images, rt)
        # several views of one binding (a uint16[] and a uint32[] block on binding 0) are one
        # descriptor: the caller passes one buffer, bound once
        views: dict = {}
        for b in info.bindings:
            views.setdefault((b.set, b.binding), []).append(b)
        self._views = {key: tuple(group) for key, group in views.items()}
        # by binding number in set 0, by (set, binding) in the others
        self.binding_views = {(key[1] if key[0] == 0 else key): group
                              for key, group in self._views.items()}
        self.buffer_bindings = tuple(group[0] for group in views.values())
        # every positional argument of a call: buffers and images in (set, binding) order
        self.bindings = tuple(sorted(self.buffer_bindings + self._images.arguments,
                                     key=lambda b: (b.set, b.binding)))
        # one slot per descriptor: an array of `count` blocks takes `count` arrays
        self._slots = tuple((b, i) for b in self.buffer_bindings for i in range(b.count))
        self.push_constants = info.push_constants
        self.spec_constants = info.spec_constants
        check_shader_needs(info, rt, self.name)
        check_pointer_merges(module_words(self.spirv), info.capabilities, rt.quirks,
                             getattr(info._parsed, "names", {}), self.name, rt.name)
        if info.plain_inputs:
            raise UnsupportedError(f"{self.name}: input variable {info.plain_inputs[0]!r} has no "
                                   "BuiltIn decoration; a compute shader's only inputs are "
                                   "built-ins (nothing would feed it)")
        self.specialization, entries = self._specialize(specialization or {})
        self._entries = entries
        self.local_size = info.specialize(self.specialization)
        # sizes of shared arrays may follow specialization constants (the module is parsed once)
        self._shared_bytes = info.specialized_shared_memory_bytes(self.specialization)
        self._check_limits()
        self._dtypes = tuple(self._view_dtypes(self._views_of(b)) for b, _ in self._slots)
        self._writes = tuple(any(not v.readonly and v.kind == "storage"
                                 for v in self._views_of(b)) for b, _ in self._slots)
        self.program = rt.program(self._spec(self.spirv))
        # a dropped ShaderKernel gives its programs back (the last holder destroys a pipeline)
        self._release = weakref.finalize(self, self.program.release)
        self._release.atexit = False
        self._asm = None
        self._aliased = None    # the program with every buffer Aliased (made on first use)
        self._scratch = ScratchBuffers(rt)   # device copies of numpy arguments
        self._lock = threading.Lock()

    def _spec(self, words: bytes):
        """The ProgramSpec of SPIR-V `words` with this shader's entry point, bindings (and their
        kinds), push-constant block, local size and specialization."""
        from ..seam import ProgramSpec

        images = self._images.images
        return ProgramSpec(words, self.entry, tuple(b.binding for b in self.buffer_bindings)
                           + tuple(b.binding for b in images),
                           self.info.push_constant_size, tuple(self.local_size), None, self.name,
                           tuple(b.kind for b in self.buffer_bindings) + self._images.kinds,
                           self._entries,
                           tuple((b.set, b.count) for b in self.buffer_bindings + images))

    def _views_of(self, b) -> tuple:
        """The reflected views of descriptor binding `b` (several blocks on one binding)."""
        return self._views[(b.set, b.binding)]

    def _what(self, b, element=None) -> str:
        """How messages name binding `b` (and an element of an array of descriptors)."""
        where = f"binding {b.binding}" + (f" of set {b.set}" if b.set else "")
        index = f"[{element}]" if element is not None and b.count > 1 else ""
        return f"{self.name}: {where} ({b.name!r}){index}"

    # -- properties ----------------------------------------------------------------------------
    @property
    def runtime(self):
        """The seam Runtime (vkir.seam) the shader runs on."""
        return self._rt

    @property
    def pipeline(self):
        """The backend's compiled program of the shader (a vkir.runtime ComputePipeline on
        Vulkan)."""
        return self.program.handle

    @property
    def asm(self) -> str:
        """The SPIR-V disassembly (made on first use)."""
        if self._asm is None:
            from ..spirv import disassemble

            self._asm = disassemble(self.spirv)
        return self._asm

    def __repr__(self) -> str:
        return (f"<vkir ShaderKernel {self.name} local_size={self.local_size} "
                f"bindings={len(self.bindings)} on {self._rt.name}>")

    # -- checks at load time -------------------------------------------------------------------
    def _specialize(self, values: dict):
        """({SpecId: checked value}, ((SpecId, bytes), ...)) for the user's {id or name: value}."""
        from ..binding import scalar_value

        by_id = {s.id: s for s in self.spec_constants}
        names = {n: s.id for s in self.spec_constants for n in (s.name, *s.aliases) if n}
        for axis, spec_id in zip(_AXES, self.info.local_size_ids):
            if spec_id is not None:
                names.setdefault(f"local_size_{axis}", spec_id)
        if not isinstance(values, dict):
            raise ArgumentError(f"{self.name}: specialization must be a dict {{constant id or name: "
                                f"value}}, got {type(values).__name__}")
        known = ", ".join([f"{s.id} ({s.name or 'unnamed'}: {s.dtype})" for s in self.spec_constants]
                          + [n for n in names if n.startswith("local_size_")]) or "none"
        out = {}
        for key, value in values.items():
            spec_id = names.get(key) if isinstance(key, str) else key
            if isinstance(key, bool) or spec_id not in by_id:
                raise ArgumentError(f"{self.name}: no specialization constant {key!r} "
                                    f"(the shader has: {known})")
            if spec_id in out:
                raise ArgumentError(f"{self.name}: specialization constant {spec_id} is given twice")
            spec = by_id[spec_id]
            out[spec_id] = scalar_value(value, _dtype(spec.type),
                                        f"{self.name}: specialization constant {key!r}")
        entries = tuple((i, _scalar_bytes(by_id[i].type, v)) for i, v in sorted(out.items()))
        return out, entries

    def _check_limits(self) -> None:
        """The device limits of the pipeline (through the Runtime, once: local size, shared
        memory, push constants), then the descriptor limits of its buffers, images, samplers and
        texel buffers (named for the pipeline, as its creation named them: every descriptor of
        every set and array counts)."""
        rt = self._rt
        rt.check_shader(self.local_size, self._shared_bytes, self.info.push_constant_size,
                        self.name)
        sets = max((b.set + 1 for b in self.buffer_bindings + self._images.images), default=0)
        cap = getattr(rt.limits, "max_bound_descriptor_sets", None)
        if cap is not None and sets > cap:
            raise UnsupportedError(f"{self.name}: descriptor set {sets - 1} is used; "
                                   f"maxBoundDescriptorSets of {rt.name!r} is {cap} (sets 0 to "
                                   f"{cap - 1})")
        rt.check_bindings(len(self._slots), f"pipeline {self.entry!r}",
                          sum(b.kind == "uniform" for b, _ in self._slots),
                          tuple(b.binding for b in self.buffer_bindings + self._images.images),
                          tuple((b.kind, b.count) for b in self._images.images))

    @classmethod
    def _view_dtypes(cls, views) -> tuple | None:
        """The numpy dtypes an array bound to a binding may have (one per distinct view's
        elements), or None where some view's leaves differ (any dtype then)."""
        dtypes = [cls._binding_dtype(v) for v in views]
        if any(d is None for d in dtypes):
            return None
        return tuple(dict.fromkeys(dtypes))

    @staticmethod
    def _binding_dtype(b):
        """The numpy dtype an array bound to `b` must have, or None where leaves differ."""
        leaf = (b.element if b.element is not None else b.type).scalar
        if leaf is None or leaf.kind == "bool":
            return None
        return _dtype(leaf).numpy_dtype()

    # -- calls ---------------------------------------------------------------------------------
    def _groups(self, grid) -> tuple:
        if grid is None:
            raise ArgumentError(f"{self.name}: give the workgroup counts, e.g. grid=(gx, gy, gz)")
        dims = (grid,) if isinstance(grid, (int, np.integer)) else grid
        try:
            dims = tuple(dims)
        except TypeError:
            raise ArgumentError(f"{self.name}: grid must be an int or up to 3 ints, got {grid!r}") from None
        if not 1 <= len(dims) <= 3 or not all(
                isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in dims):
            raise ArgumentError(f"{self.name}: grid must be an int or up to 3 ints, got {grid!r}")
        dims = tuple(int(n) for n in dims) + (1,) * (3 - len(dims))
        self._rt.check_groups(dims, self.name)
        return dims

    def _push(self, push, addresses=None) -> bytes:
        members = self.push_constants
        if push is None:
            push = {}
        if not isinstance(push, dict):
            raise ArgumentError(f"{self.name}: push must be a dict {{member name: value}}, "
                                f"got {type(push).__name__}")
        names = {m.name for m in members}
        unknown = [k for k in push if k not in names]
        if unknown:
            have = ", ".join(f"{m.name}: {m.dtype}" for m in members) or "none"
            raise ArgumentError(f"{self.name}: no push constant named {unknown[0]!r} "
                                f"(the block has: {have})")
        missing = [m.name for m in members if m.name not in push]
        if missing:
            raise ArgumentError(f"{self.name}: missing push constant(s) "
                                f"{', '.join(map(repr, missing))}")
        out = bytearray(self.info.push_constant_size)
        for m in members:
            _pack_into(out, m.offset, m.type, push[m.name], f"{self.name}: push constant {m.name!r}",
                       addresses)
        return bytes(out)

    def _blocks(self, buffers, addresses) -> tuple:
        """The call's buffer arguments with each block given as a dict of its members packed
        into a numpy array (buffer_reference members through `addresses`:
        vkir.driver.shader_addresses), as the binding's dtype where it has one."""
        if not any(isinstance(a, dict) for a in buffers):
            return tuple(buffers)
        out = list(buffers)
        for i, ((b, element), a) in enumerate(zip(self._slots, buffers)):
            if not isinstance(a, dict):
                continue
            what = self._what(b, element)
            data = pack_block(b, a, lambda o, off, t, v, w: _pack_into(o, off, t, v, w, addresses),
                              what)
            want = self._dtypes[i]
            if want is not None and data.nbytes % want[0].itemsize == 0:
                data = data.view(want[0])
            out[i] = data
        return tuple(out)

    def _flatten(self, buffers) -> tuple:
        """One argument per descriptor: an array of `count` blocks takes a list or tuple of
        `count` arrays, which become `count` slots."""
        if len(buffers) != len(self.buffer_bindings):
            names = ", ".join(f"{b.binding}: {b.name}" if not b.set else
                              f"{b.set}.{b.binding}: {b.name}" for b in self.buffer_bindings)
            raise ArgumentError(f"{self.name} takes {len(self.buffer_bindings)} buffers "
                                f"(bindings {names}), got {len(buffers)}")
        if all(b.count == 1 for b in self.buffer_bindings):
            return tuple(buffers)
        out = []
        for b, a in zip(self.buffer_bindings, buffers):
            if b.count == 1:
                out.append(a)
                continue
            if not isinstance(a, (list, tuple)) or len(a) != b.count:
                raise ArgumentError(f"{self._what(b)} is an array of {b.count} descriptors: give "
                                    f"a list of {b.count} arrays, got "
                                    f"{len(a) if isinstance(a, (list, tuple)) else type(a).__name__}"
                                    f"{' arrays' if isinstance(a, (list, tuple)) else ''}")
            out.extend(a)
        return tuple(out)

    def _check_buffers(self, buffers) -> None:
        """Every check of the buffer arguments, one per descriptor (`_flatten`)."""
        from .arrays import DeviceArray

        for (b, element), a, want, written in zip(self._slots, buffers, self._dtypes,
                                                  self._writes):
            what = self._what(b, element)
            if isinstance(a, DeviceArray):
                check_same_device(what, a.device, self._rt)
                a.check_source(what)
            elif isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise ArgumentError(f"{what} is not C-contiguous (use np.ascontiguousarray)")
                if written and not a.flags.writeable:
                    raise ArgumentError(f"{what} is written by the shader, but its array is read-only")
            else:
                raise ArgumentError(f"{what} must be a vkir or numpy array, got {type(a).__name__}")
            if want is not None and a.dtype not in want:
                elems = " or ".join(dict.fromkeys(
                    (v.element if v.element is not None else v.type).dtype
                    for v in self._views_of(b)))
                expected = " or ".join(str(d) for d in want)
                raise ArgumentError(f"{what} has dtype {a.dtype}, expected {expected} "
                                    f"(the shader's elements are {elems})")
            nbytes = int(a.nbytes)
            need = max(v.fixed_size for v in self._views_of(b))
            if nbytes < need:
                raise ArgumentError(f"{what} has {nbytes} bytes; its block needs at least "
                                    f"{need}")
            if b.element is not None and b.array_stride and (nbytes - b.offset) % b.array_stride:
                raise ArgumentError(f"{what} has {nbytes} bytes, not a whole number of "
                                    f"{b.element.dtype} elements ({b.array_stride} bytes each"
                                    f"{f' after {b.offset} bytes' if b.offset else ''})")
            self._rt.check_binding_range(nbytes, b.kind, what)

    def _aliases(self, buffers) -> tuple:
        """(groups of arguments that share memory with a written binding, bound as one buffer
        (vkir.aliasing), the pipeline to run: the one whose buffers are declared Aliased where
        there is a group), or ArgumentError naming two bindings. The program to run is the
        plain one, or where there is a group the one whose buffers are declared Aliased."""
        from ..aliasing import Arg, plan

        args = [Arg(i, self._what(b, element)[len(self.name) + 2:], a, self._writes[i])
                for i, ((b, element), a) in enumerate(zip(self._slots, buffers))]
        groups = plan(args, self.name)
        if not groups:
            return groups, self.program
        if self._aliased is None:
            from .aliased_spirv import aliased

            program = self._rt.program(self._spec(aliased(self.spirv, self.env)))
            release = weakref.finalize(self, program.release)
            release.atexit = False
            self._aliased = program
        return groups, self._aliased

    def _bind(self, aliases, buffers) -> dict:
        """{position: buffer} of the aliases bound in device memory, in place (vkir.aliasing:
        a device array's, or an import of the union), numpy members included."""
        allocator = self._rt.allocator
        return bind(aliases, buffers, allocator.view, allocator.in_place, self.name)

    def _split(self, args) -> tuple:
        """(buffer arguments, image arguments) of a call's positional arguments, which are every
        binding but the separate samplers, in binding order."""
        images = self._images.arguments
        if not images:
            return self._flatten(args), ()
        order = sorted([(b.set, b.binding, False) for b in self.buffer_bindings]
                       + [(b.set, b.binding, True) for b in images])
        if len(args) != len(order):
            names = ", ".join(f"{b.binding}: {b.name}" if not b.set else
                              f"{b.set}.{b.binding}: {b.name}" for b in sorted(
                                  self.buffer_bindings + images,
                                  key=lambda b: (b.set, b.binding)))
            raise ArgumentError(f"{self.name} takes {len(order)} arguments (bindings {names}), "
                                f"got {len(args)}")
        return (self._flatten(tuple(a for a, key in zip(args, order) if not key[2])),
                tuple(a for a, key in zip(args, order) if key[2]))

    def _prepare(self, args, grid, push, samplers=None, formats=None, addresses=None):
        """Every check, then (device buffers and images, push bytes, groups, numpy copies to
        write back, program); pointer values go through `addresses` (a ShaderAddresses)."""
        from .arrays import DeviceArray

        buffers, image_args = self._split(args)
        buffers = self._blocks(buffers, addresses)
        self._check_buffers(buffers)
        images, image_copies = self._images.bind(image_args, samplers, formats)
        groups = self._groups(grid)
        data = self._push(push, addresses)
        aliases, pipeline = self._aliases(buffers)
        in_place = self._bind(aliases, buffers)   # aliases bound in device memory
        host = {i: a for i, a in enumerate(buffers)
                if not isinstance(a, DeviceArray) and i not in in_place}
        staged, copies = stage(host, self._writes.__getitem__,
                               [g for g in aliases if not g.on_device], self._scratch.copy_in,
                               self._scratch.view)
        staged.update(in_place)
        out = [staged[i] if i in staged else a.buffer for i, a in enumerate(buffers)]
        return out + images, data, groups, (copies, host, image_copies), pipeline

    def dispatch_spec(self, *args, grid=None, push=None, samplers=None, formats=None):
        """The recordable dispatch of `self(*args, grid=..., push=...)` (a vkir.runtime
        Dispatch on Vulkan), checked as a call is: what `vkir.sequence` records. Every buffer
        must be a DeviceArray, every image a DeviceImage."""
        from .arrays import DeviceArray

        buffers, image_args = self._split(args)
        addresses = ShaderAddresses(self.name, self._rt, device_only=True)
        for (b, element), a in zip(self._slots, buffers):
            if isinstance(a, dict):
                raise ArgumentError(f"{self._what(b, element)} is given as a dict of its "
                                    "members; inside a sequence buffers must be DeviceArrays "
                                    "(vkir.array), since a sequence makes no hidden copies")
        self._check_buffers(buffers)
        images, _ = self._images.bind(image_args, samplers, formats, device_only=True)
        for (b, element), a in zip(self._slots, buffers):
            if not isinstance(a, DeviceArray):
                raise ArgumentError(f"{self._what(b, element)} is a numpy array; inside a "
                                    "sequence buffers must be DeviceArrays (vkir.array), since "
                                    "a sequence makes no hidden copies")
        access = tuple(_access(self._views_of(b)) for b, _ in self._slots) + self._images.access
        aliases, program = self._aliases(buffers)
        in_place = self._bind(aliases, buffers)   # aliases bound in device memory
        data = self._push(push, addresses)
        return program.dispatch(tuple(in_place.get(i, a.buffer) for i, a in enumerate(buffers))
                                + tuple(images), access,
                                data, self._groups(grid), self.name,
                                (self, args, tuple(addresses.keep)), tuple(addresses.addressed))

    def __call__(self, *buffers, grid=None, push=None, samplers=None, formats=None) -> None:
        """Dispatch `grid` workgroups on `buffers` (one per binding, in binding order: buffers,
        images and texel buffers; separate samplers are not arguments) with the push-constant
        members in `push`, and wait; written numpy arrays are updated. `samplers` ({binding
        name: vkir.Sampler}) samples each texture (nearest/clamp by default); `formats`
        ({binding name: format}) reads numpy data of a binding that declares no format (see
        vkir.driver.shader_images). Inside `with vkir.sequence():` the dispatch is recorded
        instead (DeviceArrays and DeviceImages only), inside `with vkir.profile():` it is
        timed."""
        from .profiling import active_profiler
        from .sequences import current

        seq = current()
        if seq is not None:
            seq.add(self.dispatch_spec(*buffers, grid=grid, push=push, samplers=samplers,
                                       formats=formats))
            return
        with self._lock:
            addresses = ShaderAddresses(self.name, self._rt)
            bufs, data, groups, copies, program = self._prepare(buffers, grid, push, samplers,
                                                                formats, addresses)
            run(self._rt, program, bufs, data, groups, self.name,
                (buffers, bufs, addresses.keep), active_profiler())
            copy_back(copies[0], copies[1], self._scratch.copy_out)
            self._images.copy_back(copies[2])
            addresses.copy_back()

    def launch(self, *args, grid=None, push=None, samplers=None, formats=None):
        """Submit `self(*args, grid=..., push=...)` without waiting: a handle with
        `wait(timeout=None)` and `done()`. Numpy arrays (buffers, images and texel buffers) are
        copied in now (each launch has its own device copies) and the written ones back when
        the wait observes the end."""
        from .arrays import DeviceArray
        from .profiling import active_profiler
        from .sequences import LaunchHandle, current

        if current() is not None:
            raise ArgumentError(f"{self.name}: launch() inside a sequence; call the shader instead "
                                "(the sequence submits when its block ends)")
        if active_profiler() is not None:
            self(*args, grid=grid, push=push, samplers=samplers, formats=formats)
            return LaunchHandle(None, (), self.name)
        buffers, image_args = self._split(args)
        addresses = ShaderAddresses(self.name, self._rt)
        buffers = self._blocks(buffers, addresses)
        self._check_buffers(buffers)
        images, image_copies = self._images.bind(image_args, samplers, formats)
        groups, data = self._groups(grid), self._push(push, addresses)
        aliases, program = self._aliases(buffers)
        device_arrays = {i: a.buffer for i, a in enumerate(buffers) if isinstance(a, DeviceArray)}
        device_arrays.update(self._bind(aliases, buffers))
        device_arrays.update({len(buffers) + j: r for j, r in enumerate(images)})
        handle = submit(self._rt, program, device_arrays, data, groups, self.name,
                        (args, images, addresses.keep, tuple(device_arrays.values())),
                        {i: a for i, a in enumerate(buffers) if i not in device_arrays},
                        self._writes.__getitem__, [g for g in aliases if not g.on_device])
        handle._copies.extend(addresses.readbacks())   # numpy pointees, back at the end
        handle._copies.extend(self._images.readbacks(image_copies))   # and numpy images
        return handle

    def profile(self, *buffers, grid=None, push=None, repeat: int = 50, warmup: int = 1,
                samplers=None, formats=None):
        """Device seconds per run over `repeat` runs (a vkir Profile: median, min, max)."""
        check_profile_counts(self.name, repeat, warmup)
        with self._lock:
            addresses = ShaderAddresses(self.name, self._rt)
            bufs, data, groups, copies, program = self._prepare(buffers, grid, push, samplers,
                                                                formats, addresses)
            t = program.profile(bufs, data, groups, repeat, warmup)
            copy_back(copies[0], copies[1], self._scratch.copy_out)
            self._images.copy_back(copies[2])
            addresses.copy_back()
        return t


# -- access ---------------------------------------------------------------------------------
def _access(views) -> str:
    """"r", "w" or "rw": how the shader accesses a binding through all its views."""
    reads = any(not v.writeonly or v.kind == "uniform" for v in views)
    writes = any(not v.readonly and v.kind == "storage" for v in views)
    return ("r" if reads or not writes else "") + ("w" if writes else "")
