"""The programs a Kernel holds: the plain one, on a driver that cuts long loops the variants
with split loops a call's sizes need (vkir.driver.loop_budget), and the variants whose buffers
are declared Aliased for calls with a written argument sharing memory (vkir.aliasing); each made
on first use through the Runtime and given back together when the kernel is dropped.
"""

from __future__ import annotations

import time

from ..errors import UnsupportedError


def release_programs(programs: list) -> None:
    """Give back every program a dropped Kernel held (its plain one and its loop variants)."""
    for program in programs:
        program.release()


class ProgramVariants:
    """Kernel's programs (a part of Kernel: it reads the kernel's module, lowered function,
    target and Runtime)."""

    def _spec(self, words: bytes, module=None):
        """The ProgramSpec of SPIR-V `words` with this kernel's bindings, push-constant block,
        workgroup size and subgroup requirement (every variant has the same; `module`, the
        variant's SpirvModule where its descriptor kinds differ: the storage-buffer variant of
        a kernel with texel bindings, vkir.driver.texel_views)."""
        from ..seam import ProgramSpec

        module = module or self.module
        kinds = None
        if module.images or any(b.texel for b in module.bindings):
            # storage (or texel) buffers, then the image parameters' descriptors
            kinds = tuple(b.kind for b in module.bindings) + tuple(b.kind for b in module.images)
        return ProgramSpec(words, module.entry_point,
                           tuple(b.binding for b in module.bindings + module.images),
                           module.push_constant_size, tuple(module.local_size), self._subgroup,
                           f"kernel {self.func.name}", kinds)

    def _program_for(self, env) -> object:
        """The program a call with these size/scalar values runs: the plain one, or on a driver
        that cuts long loops the variant whose split loops fit its budget (UnsupportedError
        where none does: a loop is never cut short)."""
        if not self._loop_limited:
            return self.program
        from .loop_budget import choose_split, loops_for_call

        split = choose_split(loops_for_call(self.ir, env), self.name, repr(self._rt.name))
        if split.factor == 1 or not split.loops:
            return self.program
        key = (split.factor, split.loops, split.whole)
        program = self._variants.get(key)
        if program is None:
            program = self._variants[key] = self._compile_variant(split)
        return program

    def _compile_variant(self, split):
        """The program of the lowered function with `split`'s loops split (SplitLongLoops)."""
        from ..spirv import codegen
        from ..transform import SplitLongLoops

        t0 = time.perf_counter()
        module = codegen(SplitLongLoops(factor=split.factor, only=split.loops,
                                        whole=split.whole)(self.ir),
                         self._compile_target)
        layout = [(pc.var.name, pc.offset, pc.dtype) for pc in module.push_constants]
        assert layout == [(pc.var.name, pc.offset, pc.dtype) for pc in self.module.push_constants]
        assert [b.binding for b in module.bindings] == [b.binding for b in self.module.bindings]
        assert [b.texel for b in module.bindings] == [b.texel for b in self.module.bindings]
        program = self._rt.program(self._spec(module.words))
        self._held.append(program)
        self._words[program] = module.words
        self._splits[program] = split
        if self._texel_bindings:
            self._texel_programs.add(program)
        self.compile_seconds += time.perf_counter() - t0
        return program

    def _for_aliases(self, program, aliases):
        """`program`, or where a written argument shares memory with another (`aliases`, see
        vkir.aliasing) its variant whose buffers are declared Aliased (vkir.driver.aliased_spirv;
        made on first use)."""
        if not aliases:
            return program
        if "aliasing" not in self._rt.capabilities:
            names = [self._params[m.position].name for m in aliases[0].members]
            raise UnsupportedError(f"kernel {self.name}: arguments {', '.join(map(repr, names))} "
                                   f"share memory and one is written; {self._rt.name!r} cannot "
                                   "bind one memory to several buffers of a dispatch (pass copies; "
                                   f"the {self._rt.kind} backend lacks the 'aliasing' capability)")
        variant = self._aliased.get(program.handle)
        if variant is None:
            from .aliased_spirv import aliased

            words = aliased(self._words[program], self.target.env)
            # (a kernel with texel reads aliases its storage-buffer variant: texel_views.py)
            variant = self._rt.program(self._spec(words, self._storage_modules.get(program)))
            self._held.append(variant)
            self._words[variant] = words
            self._aliased[program.handle] = variant
        return variant
