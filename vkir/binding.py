"""Checking and binding call arguments against a PrimFunc's signature: the one set of rules that
the interpreter (`vkir.interpret`) and compiled kernels (`Kernel.__call__`) share.

A call gives arguments by position and/or by parameter name (`k(a, b, c=z)`). Buffer parameters
take arrays of the buffer's scalar element type: a vector-typed buffer (`float32x4`) of shape S
takes the array with the same bytes, of shape S[:-1] + (S[-1] * lanes,). Symbolic sizes are
inferred from the array shapes and must agree across buffers; a shape entry that is an expression
(`c * 2`) must equal its value. Scalar parameters take Python or numpy numbers of a fitting kind
that fit the type (an int for an int32, an int or a float for a float32; bool only for bool).
Every mismatch is an `ArgumentError` naming the parameter, raised before anything is copied.

Two conventions differ on purpose, chosen by `Signature(..., exact=...)`:

- `exact=True` (kernels, whose argument memory is bound to the device as it is): a numpy
  argument must be C-contiguous and have exactly the element dtype; a scalar parameter takes a
  number, not a 0-d array.
- `exact=False` (the interpreter, which may copy): a non-contiguous array is copied in and back;
  a vector-typed buffer also takes shape S + (lanes,); an int8 buffer also takes a bool array (a
  bool buffer after BoolToInt8); a 0-d array passes for a scalar.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError
from .ir.base import show
from .ir.dtype import DataType, PointerType, type_range
from .ir.expr import IntImm, Var
from .ir.function import PrimFunc
from .ir.image_type import ImageType

__all__ = ["Signature", "Bound", "written_params", "scalar_value"]

_PLAIN_INTS = (int, np.integer)
_PLAIN_FLOATS = (float, int, np.floating, np.integer)


@dataclass(frozen=True, slots=True)
class _Param:
    """How one parameter is checked: a buffer (element dtype, dims) or a scalar."""

    index: int
    name: str                 # the name messages use (the buffer's name for a buffer)
    var: Var
    dtype: DataType           # scalar dtype, or the buffer's element dtype
    np_dtype: np.dtype | None  # numpy dtype of one lane of an array argument (None: scalar)
    dims: tuple | None = None  # per dim (expr, lanes folded into it); None: a raw pointer
    lanes: int = 1
    written: bool = False
    is_buffer: bool = False
    image: ImageType | None = None   # an image parameter: its type (lanes are its channels)


@dataclass(slots=True)
class Bound:
    """A checked call: `values` (one per `Signature.env_vars`: symbolic sizes, then scalar
    parameters, as Python numbers), `args` (per parameter, in order: the array or the scalar
    as given) and `shapes` (per parameter: the buffer-shaped extents of an array, lanes folded
    away, or None for a scalar or a raw pointer)."""

    values: tuple
    args: tuple
    shapes: tuple

    def env(self, signature: "Signature") -> dict:
        """The values keyed by their Var."""
        return dict(zip(signature.env_vars, self.values))


def written_params(func: PrimFunc) -> frozenset:
    """Indices of the parameters whose data `func` stores to or updates atomically (through
    any buffer over them, pointer-cast aliases included)."""
    from .ir.expr import BufferLoad, Call
    from .ir.image import ImageLoad, ImageStore
    from .ir.op import is_atomic
    from .ir.stmt import BufferStore
    from .ir.traversal import walk

    stored = set()
    for n in walk(func.body):
        if isinstance(n, BufferStore):
            stored.add(n.buffer.data)
        elif isinstance(n, ImageStore):
            stored.add(n.image)
        elif isinstance(n, Call) and is_atomic(n.op) and n.args and isinstance(n.args[0], BufferLoad):
            stored.add(n.args[0].buffer.data)
        elif isinstance(n, Call) and is_atomic(n.op) and n.args and isinstance(n.args[0], ImageLoad):
            stored.add(n.args[0].image)
    return frozenset(i for i, p in enumerate(func.params) if p in stored)


class Signature:
    """The argument rules of one PrimFunc, derived once; `bind(args, kwargs)` checks a call.

    `where` starts every message ("kernel vadd"); `evaluate(expr, env)` computes a shape entry
    that is an expression of sizes and scalars; `written` holds the indices of the parameters
    the callee writes (a read-only array is refused for them; default: what the body stores
    to); `array_types` are the array classes buffer parameters take (described by
    `array_kinds` in messages); `exact` picks the convention (see the module docstring)."""

    def __init__(self, func: PrimFunc, evaluate, *, where: str | None = None,
                 written=None, array_types: tuple = (np.ndarray,),
                 array_kinds: str = "a numpy array", exact: bool = True):
        self.func = func
        self.where = where if where is not None else func.name
        self.exact = exact
        self.array_types = array_types
        self.array_kinds = array_kinds
        self._evaluate = evaluate
        written = written_params(func) if written is None else frozenset(written)
        self.params = tuple(_param(i, p, func, i in written) for i, p in enumerate(func.params))
        self._scalars = tuple(p for p in self.params if not p.is_buffer)
        self.buffer_params = tuple(p for p in self.params if p.is_buffer)
        self.size_vars = func.size_vars
        self.env_vars = self.size_vars + tuple(p.var for p in self.params if not p.is_buffer)
        self.names = tuple(p.var.name for p in self.params)
        index = {}
        for i, p in enumerate(self.params):
            index.setdefault(p.var.name, i)
        for i, p in enumerate(self.params):     # a buffer also answers to its buffer's name
            index.setdefault(p.name, i)
        self._index = index

    # -- the call ------------------------------------------------------------------------------
    def arguments(self, args: tuple, kwargs: dict | None = None) -> tuple:
        """`args` and `kwargs` as one positional tuple in parameter order, or ArgumentError
        (wrong count, an unknown or repeated name, a missing parameter)."""
        n = len(self.params)
        if not kwargs:
            if len(args) != n:
                raise ArgumentError(f"{self.where} takes {n} arguments, got {len(args)} "
                                    f"(parameters: {', '.join(self.names)})")
            return args
        if len(args) > n:
            raise ArgumentError(f"{self.where} takes {n} arguments, got {len(args)} by "
                                f"position (parameters: {', '.join(self.names)})")
        slots = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            i = self._index.get(key)
            if i is None:
                raise ArgumentError(f"{self.where} has no parameter named {key!r} "
                                    f"(parameters: {', '.join(self.names)})")
            if slots[i] is not _MISSING:
                raise ArgumentError(f"{self.where}: parameter {self.names[i]!r} is given twice "
                                    "(by position and by name, or by two names)")
            slots[i] = value
        missing = [self.names[i] for i, v in enumerate(slots) if v is _MISSING]
        if missing:
            raise ArgumentError(f"{self.where}: missing argument(s) for "
                                f"{', '.join(map(repr, missing))} "
                                f"(parameters: {', '.join(self.names)})")
        return tuple(slots)

    def bind(self, args: tuple, kwargs: dict | None = None) -> Bound:
        """Check a call; return its Bound values (raise ArgumentError on any mismatch)."""
        if kwargs or len(args) != len(self.params):
            args = self.arguments(args, kwargs)
        env = {}
        deferred = []
        shapes = [None] * len(args)
        for p in self._scalars:                   # scalars first: a shape may name one
            env[p.var] = self._scalar(p, args[p.index])
        for p in self.buffer_params:
            shapes[p.index] = self._bind_array(p, args[p.index], env, deferred)
        # every size is bound before a shape expression is checked: a size that appears only
        # inside expressions (a word buffer's (n + 3) // 4 after EmulateInt8) is an argument
        # error, not an expression evaluated with a variable missing
        try:
            values = tuple(env[v] for v in self.env_vars)
        except KeyError as exc:
            raise ArgumentError(f"{self.where}: symbolic size {exc.args[0].name} is not bound by "
                                "any argument shape") from None
        for p, k, expr, got in deferred:
            value = self._evaluate(expr, env)
            if int(value) != got:
                raise ArgumentError(f"{self.where}: argument {p.name!r} has size {got} in dim {k}, "
                                    f"expected {show(expr)} = {value}")
        return Bound(values, args, tuple(shapes))

    # -- buffers -------------------------------------------------------------------------------
    def _bind_array(self, p: _Param, a, env: dict, deferred: list):
        where = self.where
        if not isinstance(a, self.array_types):
            raise ArgumentError(f"{where}: argument {p.name!r} is a buffer and must be "
                                f"{self.array_kinds}, got {type(a).__name__}")
        if isinstance(a, np.ndarray):
            if self.exact and not a.flags.c_contiguous:
                raise ArgumentError(f"{where}: argument {p.name!r} is not C-contiguous "
                                    "(use np.ascontiguousarray)")
            if p.written and not a.flags.writeable:
                raise ArgumentError(f"{where}: argument {p.name!r} is written by "
                                    f"{self.func.name}, but its array is read-only")
        device_image = hasattr(a, "image_format")   # a vkir DeviceImage
        if p.image is not None and not (device_image or isinstance(a, np.ndarray)):
            raise ArgumentError(f"{where}: argument {p.name!r} is a {p.image.kind} of format "
                                f"{p.image.format}: pass a numpy array or a vkir.DeviceImage, "
                                f"got {type(a).__name__}")
        if p.image is None and device_image:
            raise ArgumentError(f"{where}: argument {p.name!r} is a buffer and must be "
                                f"{self.array_kinds}, got a DeviceImage")
        if device_image and a.format != p.image.format:
            raise ArgumentError(f"{where}: argument {p.name!r} is a {p.image.kind} of format "
                                f"{p.image.format}; the DeviceImage is {a.format}")
        if p.image is not None and a.dtype != p.np_dtype:
            raise ArgumentError(f"{where}: argument {p.name!r} has dtype {a.dtype}, expected "
                                f"{p.np_dtype} ({p.image.kind} of format {p.image.format})")
        if a.dtype != p.np_dtype and (self.exact or not (a.dtype == np.bool_
                                                         and p.np_dtype == np.int8)):
            raise ArgumentError(f"{where}: argument {p.name!r} has dtype {a.dtype}, "
                                f"expected {p.np_dtype} (buffer of {p.dtype})")
        if p.dims is None:
            return None
        shape = a.shape if device_image else self._logical_shape(p, a.shape)
        if device_image and (len(shape) != len(p.dims) or a.layered != p.image.layered):
            raise ArgumentError(f"{where}: argument {p.name!r} is {p.image}; got a DeviceImage "
                                f"of shape {a.shape}{' (layered)' if a.layered else ''}")
        for k, ((expr, _), n) in enumerate(zip(p.dims, shape)):
            if type(expr) is IntImm:
                if expr.value != n:
                    raise ArgumentError(f"{where}: argument {p.name!r} has shape {list(a.shape)}, "
                                        f"expected {expr.value * p.dims[k][1]} in dim {k}")
            elif type(expr) is Var:
                bound = env.get(expr)
                if bound is None:
                    env[expr] = n
                elif bound != n:
                    raise ArgumentError(f"{where}: argument {p.name!r} dim {k} = {n} but "
                                        f"{expr.name} = {bound} from an earlier argument")
            else:
                deferred.append((p, k, expr, n))
        return shape

    def _logical_shape(self, p: _Param, shape: tuple) -> tuple:
        """The buffer-shaped extents of an array of `shape` (lanes folded away)."""
        dims, lanes = p.dims, p.lanes
        if p.image is not None:   # an image: extent + (channels,), or the extent for 1 channel
            if len(shape) == len(dims) + 1 and shape[-1] == lanes:
                extent = shape[:-1]
            elif lanes == 1 and len(shape) == len(dims):
                extent = shape
            else:
                want = ", ".join(str(e) for e, _ in dims)
                raise ArgumentError(f"{self.where}: argument {p.name!r} ({p.image.kind} of "
                                    f"format {p.image.format}) needs an array of shape ({want}, "
                                    f"{lanes}), got {list(shape)}")
            if 0 in extent:   # Vulkan has no empty images (interpreter and device alike)
                raise ArgumentError(f"{self.where}: argument {p.name!r} ({p.image.kind} of "
                                    f"format {p.image.format}): image extents must be positive, "
                                    f"got an array of shape {list(shape)}")
            return extent
        if lanes > 1 and len(shape) == len(dims) + 1 and shape[-1] == lanes:
            return shape[:-1]
        if not dims and lanes > 1:
            raise ArgumentError(f"{self.where}: argument {p.name!r} is a 0-d buffer of "
                                f"{p.dtype} elements; no array shape holds its {lanes} lanes "
                                "(give the buffer shape (1,))")
        if len(shape) != len(dims):
            raise ArgumentError(f"{self.where}: argument {p.name!r} needs {len(dims)} dims, "
                                f"got an array of shape {list(shape)}")
        if lanes == 1:
            return shape
        last = shape[-1]
        if last % lanes:
            raise ArgumentError(f"{self.where}: argument {p.name!r} dim {len(dims) - 1} = {last} "
                                f"is not a multiple of the {lanes} vector lanes of {p.dtype}")
        return shape[:-1] + (last // lanes,)

    # -- scalars -------------------------------------------------------------------------------
    def _scalar(self, p: _Param, a):
        """The Python value of a scalar argument (a tuple of lanes for a vector scalar)."""
        if not self.exact and isinstance(a, np.ndarray) and a.ndim == 0:
            a = a[()]
        dt = p.dtype
        what = f"{self.where}: argument {p.name!r}"
        if dt.lanes > 1:
            lanes = a.tolist() if isinstance(a, np.ndarray) and a.shape == (dt.lanes,) else a
            if not isinstance(lanes, (tuple, list)) or len(lanes) != dt.lanes:
                raise ArgumentError(f"{what} ({dt}) needs {dt.lanes} lanes, got {a!r}")
            return tuple(scalar_value(v, dt.element_of(), what) for v in lanes)
        return scalar_value(a, dt, what)


def scalar_value(a, dt: DataType, what: str):
    """`a` as the Python number a scalar of `dt` holds, or ArgumentError starting with `what`:
    bool only for bool; ints (Python or numpy) in range for int/uint; ints or floats for float,
    finite values within the type's range (nan and infinities pass)."""
    if dt.is_bool:
        if not isinstance(a, (bool, np.bool_)):
            raise ArgumentError(f"{what} is bool, got {a!r}")
        return bool(a)
    if isinstance(a, (bool, np.bool_)):
        raise ArgumentError(f"{what} is {dt}, got {a!r}")
    if dt.is_float:
        if not isinstance(a, _PLAIN_FLOATS) and not isinstance(a, numbers.Real):
            raise ArgumentError(f"{what} is {dt}, got {a!r}")
        try:
            value = float(a)
        except OverflowError:   # an int beyond every float (10**400)
            raise ArgumentError(f"{what} = {a!r} is out of range for {dt} "
                                "(nan and inf are accepted)") from None
        if abs(value) > _float_max(dt) and value == value and abs(value) != float("inf"):
            raise ArgumentError(f"{what} = {a!r} is out of range for {dt} "
                                "(nan and inf are accepted)")
        return value
    if not isinstance(a, _PLAIN_INTS) and not isinstance(a, numbers.Integral):
        kind = "the non-integer " if isinstance(a, numbers.Real) else ""
        raise ArgumentError(f"{what} is {dt}, got {kind}{a!r}")
    value = int(a)
    lo, hi = type_range(dt)
    if not lo <= value <= hi:
        raise ArgumentError(f"{what} = {a} does not fit in {dt}")
    return value


_FLOAT_MAX = {}


def _float_max(dt: DataType) -> float:
    got = _FLOAT_MAX.get(dt.bits)
    if got is None:
        got = _FLOAT_MAX[dt.bits] = float(np.finfo(f"float{dt.bits}").max)
    return got


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _param(index: int, var: Var, func: PrimFunc, written: bool) -> _Param:
    buf = func.buffer_map.get(var)
    if isinstance(var.dtype, ImageType):   # an array of shape + (channels,) of storage dtype
        itype = var.dtype
        fmt = itype.fmt
        return _Param(index, var.name, var, DataType.parse(fmt.lane_dtype),
                      np.dtype(fmt.storage_dtype), tuple((e, 1) for e in itype.shape),
                      fmt.channels, written, True, itype)
    if buf is not None:
        lanes = buf.dtype.lanes
        last = len(buf.shape) - 1
        dims = tuple((e, lanes if k == last else 1) for k, e in enumerate(buf.shape))
        return _Param(index, buf.name, var, buf.dtype, buf.dtype.element_of().numpy_dtype(),
                      dims, lanes, written, True)
    if isinstance(var.dtype, PointerType):   # a raw pointer parameter: any shape of its element
        element = var.dtype.element
        return _Param(index, var.name, var, element, element.element_of().numpy_dtype(), None,
                      element.lanes, written, True)
    return _Param(index, var.name, var, var.dtype, None)
