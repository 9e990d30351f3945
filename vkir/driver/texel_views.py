"""A Kernel's texel-buffer reads: which program a call runs and what it binds, where codegen read
some read-only parameters through uniform texel buffers (the "storage_loads_per_lane" quirk of
llvmpipe; spirv/codegen/texel_reads.py, vkir.abi.Binding.texel).

Such a kernel's programs (the plain one and its loop-split variants) take, at each texel
binding, a texel view of the argument's buffer (`buffer_texel_view` of the image seam; cached
per buffer while it lives). A call runs the kernel's storage-buffer variant instead, made from
the same lowered function without the quirk on first use, where:

- an argument cannot be viewed (its size is not whole texels: an odd float count for a 4-lane
  format, as a parameter of symbolic size read through 4-lane casts has; its offset in its VkBuffer is not a multiple of
  minTexelBufferOffsetAlignment, it holds more than maxTexelBufferElements texels, it is empty);
- a written argument shares memory with another one (vkir.aliasing): one memory read through a
  texel buffer and written through a storage buffer is not coherent within a dispatch, and
  aliasing calls run the Aliased variant of the storage-buffer program;
- a launch stages a numpy argument of a texel binding (its buffer exists only at submission).

Both variants compute the same values (a texel fetch of a 32-bit format returns the element's
bits), so the choice changes speed only.
"""

from __future__ import annotations

import dataclasses
import time
import weakref

from ..images import image_format
from ..quirks import STORAGE_LOADS_PER_LANE


class TexelBinding:
    """Kernel's texel-buffer bindings (a part of Kernel: it reads the kernel's module, programs,
    lowered function and Runtime)."""

    def _setup_texels(self) -> None:
        """Note the module's texel bindings; every program compiled so far reads through them."""
        self._texel_bindings = tuple(b for b in self.module.bindings if b.texel)
        self._texel_programs = {self.program} if self._texel_bindings else set()
        self._storage_programs = {}     # texel program -> its storage-buffer variant
        self._storage_modules = {}      # storage-buffer variant -> its SpirvModule
        self._texel_cache = weakref.WeakKeyDictionary()   # runtime buffer -> {format: view}
        self._texel_formats = {b.texel: image_format(b.texel) for b in self._texel_bindings}

    @property
    def texel_params(self) -> tuple:
        """The names of the parameters this kernel reads through uniform texel buffers (empty
        on a device without the quirk), each once (a parameter with casts has several texel
        bindings, all of one format: one view serves them)."""
        return tuple(dict.fromkeys(self._params[b.param_index].name
                                   for b in self._texel_bindings))

    def _texel_view(self, buffer, fmt: str):
        """A cached texel view of format `fmt` over runtime buffer `buffer`, or None."""
        try:
            views = self._texel_cache.setdefault(buffer, {})
        except TypeError:   # not weakly referenceable: view it for this call only
            views = {}
        view = views.get(fmt)
        if view is None:
            view = self._rt.buffer_texel_view(buffer, self._texel_formats[fmt])
            if view is None:
                return None
            views[fmt] = view
        return view

    def _storage_if_aliased(self, program, aliases):
        """`program`, or its storage-buffer variant where written arguments share memory."""
        if aliases and program in self._texel_programs:
            return self._storage_for(program)
        return program

    def _texel_bind(self, program, buffers: dict, staged=()) -> tuple:
        """(program, {param index: what its binding takes}): texel views of the texel
        bindings' buffers for a texel program, or its storage-buffer variant and `buffers`
        unchanged where one cannot be viewed (or is among `staged`, numpy arguments a launch
        copies in at submission)."""
        if program not in self._texel_programs:
            return program, buffers
        out = dict(buffers)
        for b in self._texel_bindings:
            i = b.param_index
            view = None if i in staged or i not in buffers else self._texel_view(buffers[i], b.texel)
            if view is None:
                return self._storage_for(program), buffers
            out[i] = view
        return program, out

    def _storage_for(self, program):
        """The storage-buffer variant of texel program `program` (the same lowered function,
        loop splits included, compiled without the quirk; made on first use)."""
        got = self._storage_programs.get(program)
        if got is not None:
            return got
        from ..spirv import codegen
        from ..transform import SplitLongLoops

        t0 = time.perf_counter()
        target = self._compile_target
        target = dataclasses.replace(target, quirks=target.quirks - {STORAGE_LOADS_PER_LANE})
        split = self._splits.get(program)
        ir = self.ir if split is None else SplitLongLoops(
            factor=split.factor, only=split.loops, whole=split.whole)(self.ir)
        module = codegen(ir, target)
        assert [(b.binding, b.param_index) for b in module.bindings] == \
            [(b.binding, b.param_index) for b in self.module.bindings]
        assert not any(b.texel for b in module.bindings)
        got = self._rt.program(self._spec(module.words, module))
        self._held.append(got)
        self._words[got] = module.words
        self._storage_programs[program] = got
        self._storage_modules[got] = module
        self.compile_seconds += time.perf_counter() - t0
        return got
