"""What one set of size and scalar values of a Kernel call gives: the push-constant bytes, the
workgroup counts (folded into rows where a 1-D grid is wider than the device allows) and the
program to run, checked once per distinct set of values (index ranges, loop ranges, push-constant
ranges, and the grid through the Runtime's one limit check) and memoized.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import ArgumentError
from ..ir import DataType, IntImm
from ..ir.dtype import type_range
from .loop_ranges import check_call as check_loop_ranges


def _pack(dtype: DataType, value) -> bytes:
    """std430 bytes of one push-constant scalar of `dtype` (as codegen laid it out)."""
    if dtype.code == "float":
        return np.array(value, dtype=f"float{dtype.bits}").tobytes()
    if dtype.code == "bool":
        return struct.pack("<I", int(bool(value)))
    return np.array(int(value)).astype(f"{'u' if dtype.code == 'uint' else ''}int{dtype.bits}").tobytes()


def _values_key(values: tuple) -> tuple:
    """`values` (bound sizes and scalars) as a hashable key with floats by bit pattern."""
    return tuple(struct.pack("<d", v) if type(v) is float else v for v in values)


class CallValues:
    """Kernel's push bytes, grid and program per set of size/scalar values (a part of Kernel:
    it reads the kernel's module, signature, aliases and Runtime)."""

    def _check_index_range(self, env) -> None:
        """Each buffer argument's element count fits the integer type of its shape (the kernel
        computes flat indices in it): a larger product would wrap around on the device."""
        for p in self._signature.buffer_params:
            if not p.dims:
                continue
            count = 1
            for expr, _ in p.dims:
                count *= expr.value if isinstance(expr, IntImm) else int(self._evaluate(expr, env))
            hi = max(type_range(expr.dtype)[1] for expr, _ in p.dims)
            if count > hi:
                raise ArgumentError(f"kernel {self.name}: argument {p.name!r} has {count} elements, "
                                    f"more than its {p.dims[0][0].dtype} indices reach ({hi})")

    def _wide_scalar_words(self) -> dict:
        """Push-constant position -> (the user's int64/uint64 scalar parameter, 0 for its low
        word or 1 for its high word), where the kernel was lowered without int64: EmulateInt64
        gives such a parameter two uint32 parameters of its name (the low word in its place, the
        high word after the others, so in that order here). Memoized."""
        got = self.__dict__.get("_wide_words")
        if got is None:
            wide = {p.name: p for p in self.func.params if p not in self.func.buffer_map
                    and isinstance(p.dtype, DataType) and p.dtype.code in ("int", "uint")
                    and p.dtype.bits == 64}
            groups = {}
            for k, pc in enumerate(self.module.push_constants):
                user = self._aliases.get(pc.var, pc.var)
                user = wide.get(user.name) if user.name in wide else None
                if user is not None and pc.dtype.bits == 32:
                    groups.setdefault(user, []).append(k)
            got = {k: (user, word) for user, ks in groups.items() if len(ks) == 2
                   for word, k in enumerate(ks)}
            self.__dict__["_wide_words"] = got
        return got

    def _derive(self, values):
        """(push-constant bytes, group counts, program) for these size/scalar values
        (memoized)."""
        key = _values_key(values)
        got = self._derived.get(key)
        if got is not None:
            return got
        env = dict(zip(self._env_vars, values))
        self._check_index_range(env)
        check_loop_ranges(self.func, env, self.name)   # a loop never wraps (loop_ranges.py)
        for lowered, original in self._aliases.items():
            if original in env:
                env[lowered] = env[original]
        push = bytearray(self.module.push_constant_size)
        words = self._wide_scalar_words()
        for k, pc in enumerate(self.module.push_constants):
            if k in words:   # one 32-bit word of a 64-bit scalar (EmulateInt64)
                user, word = words[k]
                push[pc.offset:pc.offset + 4] = struct.pack(
                    "<I", (int(env[user]) >> (32 * word)) & 0xFFFFFFFF)
                continue
            if pc.var not in env:
                raise ArgumentError(f"kernel {self.name}: push constant {pc.var.name} has no value")
            value = env[pc.var]
            if pc.dtype.code in ("int", "uint"):
                lo, hi = type_range(pc.dtype)
                if not lo <= int(value) <= hi:
                    raise ArgumentError(f"kernel {self.name}: {pc.var.name} = {value} does not fit the "
                                        f"kernel's {pc.dtype} (the shapes are too large for it)")
            raw = _pack(pc.dtype, value)
            push[pc.offset:pc.offset + len(raw)] = raw
        groups = []
        caps = self._rt.limits.max_workgroup_count
        for axis, expr in enumerate(self.module.grid):
            n = int(self._evaluate(expr, env)) if not isinstance(expr, IntImm) else expr.value
            if n < 0:
                raise ArgumentError(f"kernel {self.name}: blockIdx.{'xyz'[axis]} extent {expr} = {n} "
                                    "is negative for these arguments")
            groups.append(n)
        if groups[0] > caps[0] and self.module.folds_grid:
            # blockIdx.x = WorkgroupId.x + WorkgroupId.y * width; workgroups past n do nothing
            width = caps[0]
            groups = [width, -(-groups[0] // width), 1]
        self._rt.check_grid(tuple(groups), f"kernel {self.name}")   # the call's one limit check
        got = (bytes(push), tuple(groups), self._program_for(env))
        if len(self._derived) > 1024:
            self._derived.clear()
        self._derived[key] = got
        return got
