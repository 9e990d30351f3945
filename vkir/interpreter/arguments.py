"""The memory of an interpreted call's arguments: vkir.binding checks and binds them (with the
interpreter's convention, `exact=False`); this module lays the arrays out as the buffers' strides
and offsets say, copying where needed and writing copies back after the run. Arguments that
share memory with a written one see one memory, as on the device (vkir.aliasing: one
buffer, each at its offset, or the same ArgumentError). Device arrays reach the interpreter as
their host memory itself where the host maps it (vkir.driver.arrays.host_copies), so an import
(`vkir.asarray(x)`) and `x` passed beside it are one memory here too. A texture's mip levels
(a list of arrays, level 0 first) are vkir.interpreter.image_levels'.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..binding import Signature
from ..aliasing import Arg, gather, plan, scatter
from ..errors import ArgumentError
from ..ir.function import PrimFunc
from .image_closures import bind_image
from .image_levels import level_arrays, split_levels
from .memory import Storage, compact_strides, extent_elements, make_bound


class Bindings:
    """Values of params and size vars, bound buffers, and write-backs for copied arguments."""

    def __init__(self):
        self.values = {}      # Var -> numpy value | Storage
        self.buffers = {}     # Buffer -> BoundBuffer
        self.writebacks = []  # callables run after the kernel

    def finish(self):
        """Copy the results of arguments that were copied in back to the caller's arrays."""
        for wb in self.writebacks:
            wb()


def bind_arguments(func: PrimFunc, args: tuple, evaluate, kwargs: dict | None = None) -> Bindings:
    """Check `args`/`kwargs` against `func`'s params (vkir.binding's rules, the interpreter's
    convention); `evaluate(expr, env)` computes size expressions. Returns storages over the
    arrays (copies where strides, offsets or non-contiguous arrays need them)."""
    sig = Signature(func, evaluate, exact=False)
    args, levels = split_levels(sig, sig.arguments(args, kwargs))   # a texture's mip levels
    bound = sig.bind(args)
    out = Bindings()
    for v, value in zip(sig.env_vars, bound.values):
        npdt = v.dtype.numpy_dtype()
        out.values[v] = npdt.type(value) if v.dtype.lanes == 1 else np.array(value, npdt)
    env = dict(zip(sig.env_vars, bound.values))
    shared = _shared_storages(func, sig, bound.args, out)
    for p, a, shape in zip(sig.params, bound.args, bound.shapes):
        if not p.is_buffer:
            continue
        buffer = func.buffer_map.get(p.var)
        if buffer is None:
            out.values[p.var] = shared[p.index] if p.index in shared else _raw_storage(a, out)
            if p.image is not None:   # an image: its texels over the array's bytes
                out.values[p.var] = bind_image(p.var, out.values[p.var], shape)
                if levels.get(p.index):
                    out.values[p.var].levels = level_arrays(sig.where, p, shape,
                                                            levels[p.index])
            continue
        strides = [_size(s, env, evaluate, buffer.name) for s in buffer.strides]
        offset = _size(buffer.elem_offset, env, evaluate, buffer.name)
        storage = (shared[p.index] if p.index in shared
                   else _storage(buffer, a, list(shape), strides, offset, out))
        out.values[p.var] = storage
        out.buffers[buffer] = make_bound(buffer, storage, list(shape), strides, offset)
    return out


def _shared_storages(func: PrimFunc, sig: Signature, args: tuple, out: Bindings) -> dict:
    """{param index: Storage} for the arguments that share memory with a written one: each
    group's bytes (the caller's memory where one array spans them, else a copy written back
    after the run) with every member at its offset, as the device binds them."""
    groups = plan([Arg(p.index, p.name, a, p.written) for p, a in zip(sig.params, args)
                   if p.is_buffer], sig.where)
    shared = {}
    for group in groups:
        for m in group.members:
            buffer = func.buffer_map.get(sig.params[m.position].var)
            if buffer is not None and (buffer.strides or not _is_zero(buffer.elem_offset)):
                raise ArgumentError(f"{sig.where}: argument {buffer.name!r} shares memory with "
                                    "a written argument, but its buffer declares strides or an "
                                    "elem_offset, so it is laid out in a copy; pass separate "
                                    "arrays")
        data, copied = gather(group, args)
        for m in group.members:
            shared[m.position] = Storage(data[m.offset:m.offset + m.nbytes], 1, m.nbytes, False)
        if copied:
            out.writebacks.append(lambda group=group, data=data: scatter(group, args, data))
    return shared


def _is_zero(expr) -> bool:
    return getattr(expr, "value", None) == 0


def _size(expr, env, evaluate, name) -> int:
    from .errors import InterpreterError

    try:
        value = evaluate(expr, env)
    except InterpreterError as err:
        raise ArgumentError(f"buffer {name}: cannot compute a size from the arguments "
                            f"({err})") from None
    return int(value)


def _raw_storage(a: np.ndarray, out: Bindings) -> Storage:
    if a.flags.c_contiguous and a.flags.writeable:
        return Storage(a.reshape(-1).view(np.uint8), 1, a.nbytes, False)
    copy = np.ascontiguousarray(a).copy()
    if a.flags.writeable:
        out.writebacks.append(lambda: np.copyto(a, copy))
    return Storage(copy.reshape(-1).view(np.uint8), 1, copy.nbytes, False)


def _storage(buffer, a, shape, strides, offset, out: Bindings) -> Storage:
    """Bytes for a buffer argument: the array itself when compact, else a copy laid out with the
    buffer's strides and offset (written back after the kernel)."""
    if not strides and offset == 0:
        return _raw_storage(a, out)
    lanes = buffer.dtype.lanes
    npdt = buffer.dtype.numpy_dtype()
    strides = strides or list(compact_strides(shape))
    count = extent_elements(shape, strides, offset)
    storage = Storage.allocate(count * npdt.itemsize * lanes)
    flat = storage.view(npdt)
    item = npdt.itemsize
    view = as_strided(flat[offset * lanes:], shape=tuple(shape) + (lanes,),
                      strides=tuple(s * lanes * item for s in strides) + (item,))
    logical = tuple(shape) + (lanes,)
    view[...] = a.reshape(logical)
    if a.flags.writeable:
        out.writebacks.append(lambda: np.copyto(a, view.reshape(a.shape)))
    return storage
