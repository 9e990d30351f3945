"""Checking and binding the arguments of an interpreted call.

Buffer parameters take numpy arrays of the buffer's scalar element type (a vector-typed buffer of
shape S takes shape S[:-1] + (S[-1] * lanes,) or S + (lanes,); an int8 buffer also takes a bool
array, as a bool buffer after BoolToInt8 does); symbolic sizes are inferred from
the array shapes and must agree across buffers; scalar parameters take Python or numpy numbers.
Every mismatch is an `ArgumentError`.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ArgumentError
from ..ir.dtype import DataType, PointerType
from ..ir.expr import Var
from ..ir.function import PrimFunc
from .memory import Storage, compact_strides, extent_elements, make_bound


def logical_shape(buffer, arr: np.ndarray) -> tuple:
    """The buffer-shaped dims of `arr` (element lanes folded away), or raise ArgumentError."""
    rank, lanes = len(buffer.shape), buffer.dtype.lanes
    shape = arr.shape
    if lanes == 1:
        if len(shape) != rank:
            raise ArgumentError(f"buffer {buffer.name} has {rank} dims, got an array of "
                                f"shape {shape}")
        return shape
    if len(shape) == rank + 1 and shape[-1] == lanes:
        return shape[:-1]
    if len(shape) == rank and rank > 0 and shape[-1] % lanes == 0:
        return shape[:-1] + (shape[-1] // lanes,)
    raise ArgumentError(f"buffer {buffer.name} of {buffer.dtype} elements and {rank} dims cannot "
                        f"take an array of shape {shape} (the last dim must be a multiple of "
                        f"{lanes})")


def convert_scalar(value, dt: DataType, name: str):
    """A numpy value of `dt` for a scalar parameter, or ArgumentError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if dt.lanes > 1:
        arr = np.asarray(value)
        if arr.shape != (dt.lanes,):
            raise ArgumentError(f"parameter {name} ({dt}) needs {dt.lanes} lanes, got {value!r}")
        return np.array([convert_scalar(v, dt.element_of(), name) for v in arr], dt.numpy_dtype())
    is_bool = isinstance(value, (bool, np.bool_))
    if dt.is_bool:
        if not is_bool:
            raise ArgumentError(f"parameter {name} is bool, got {value!r}")
        return np.bool_(value)
    if is_bool or not isinstance(value, numbers.Number) or isinstance(value, numbers.Complex) \
            and not isinstance(value, numbers.Real):
        raise ArgumentError(f"parameter {name} is {dt}, got {value!r}")
    if dt.is_float:
        return dt.numpy_dtype().type(value)
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    elif float(value).is_integer():
        ivalue = int(value)
    else:
        raise ArgumentError(f"parameter {name} is {dt}, got the non-integer {value!r}")
    info = np.iinfo(dt.numpy_dtype())
    if not info.min <= ivalue <= info.max:
        raise ArgumentError(f"parameter {name}: {ivalue} does not fit in {dt}")
    return dt.numpy_dtype().type(ivalue)


class Bindings:
    """Values of params and size vars, bound buffers, and write-backs for copied arguments."""

    def __init__(self):
        self.values = {}      # Var -> numpy value | Storage
        self.buffers = {}     # Buffer -> BoundBuffer
        self.writebacks = []  # callables run after the kernel

    def finish(self):
        for wb in self.writebacks:
            wb()


def bind_arguments(func: PrimFunc, args: tuple, evaluate) -> Bindings:
    """Check `args` against `func`'s params; `evaluate(expr, env)` computes size expressions."""
    params = func.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise ArgumentError(f"{func.name}({names}) takes {len(params)} arguments, got {len(args)}")
    out = Bindings()
    arrays = {}
    written = _written_data(func)
    for p, a in zip(params, args):
        buffer = func.buffer_map.get(p)
        if buffer is not None or isinstance(p.dtype, PointerType):
            if not isinstance(a, np.ndarray):
                raise ArgumentError(f"parameter {p.name} is a buffer and needs a numpy array, "
                                    f"got {type(a).__name__}")
            want = (buffer.dtype if buffer is not None else p.dtype.element).numpy_dtype()
            # a numpy bool array (bytes 0/1) also backs an int8 buffer: BoolToInt8 stores bool
            # buffers as int8, and the lowered function takes the same arguments as the original
            if a.dtype != want and not (a.dtype == np.bool_ and want == np.int8):
                raise ArgumentError(f"parameter {p.name} holds {want} elements, got an array "
                                    f"of {a.dtype}")
            if p in written and not a.flags.writeable:
                raise ArgumentError(f"parameter {p.name} is written by {func.name}, but its array "
                                    "is read-only")
            arrays[p] = a
        else:
            out.values[p] = convert_scalar(a, p.dtype, p.name)
    # first pass: a shape entry that is a bare size var takes the argument's extent
    shapes = {}
    for p, a in arrays.items():
        buffer = func.buffer_map.get(p)
        if buffer is None:
            continue
        shapes[p] = logical_shape(buffer, a)
        for expr, ext in zip(buffer.shape, shapes[p]):
            if isinstance(expr, Var) and expr not in out.values:
                out.values[expr] = expr.dtype.numpy_dtype().type(ext)
    env = {v: x for v, x in out.values.items()}
    # second pass: every shape entry must evaluate to the argument's extent
    for p, a in arrays.items():
        buffer = func.buffer_map.get(p)
        if buffer is None:
            out.values[p] = _raw_storage(a, out)
            continue
        shape = []
        for d, (expr, ext) in enumerate(zip(buffer.shape, shapes[p])):
            want = _size(expr, env, evaluate, buffer.name)
            if want != ext:
                raise ArgumentError(f"buffer {buffer.name} dim {d}: expected extent {want} "
                                    f"({_describe(expr)}), got {ext} (array shape {a.shape})")
            shape.append(want)
        strides = [_size(s, env, evaluate, buffer.name) for s in buffer.strides]
        offset = _size(buffer.elem_offset, env, evaluate, buffer.name)
        storage = _storage(buffer, a, shape, strides, offset, out)
        out.values[p] = storage
        out.buffers[buffer] = make_bound(buffer, storage, shape, strides, offset)
    for v in func.size_vars:
        if v not in out.values:
            raise ArgumentError(f"cannot infer size {v.name} of {func.name} from the "
                                "argument shapes")
    return out


def _describe(expr) -> str:
    return expr.name if isinstance(expr, Var) else type(expr).__name__


def _size(expr, env, evaluate, name) -> int:
    from .errors import InterpreterError

    try:
        value = evaluate(expr, env)
    except InterpreterError as err:
        raise ArgumentError(f"buffer {name}: cannot compute a size from the arguments "
                            f"({err})") from None
    return int(value)


def _written_data(func: PrimFunc) -> set:
    """The data vars the function stores to (through any buffer over them, aliases included)."""
    from ..ir.stmt import BufferStore
    from ..ir.walk import walk

    return {n.buffer.data for n in walk(func.body) if isinstance(n, BufferStore)}


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
