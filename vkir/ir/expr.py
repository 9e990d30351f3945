"""Expression nodes. Each has a `dtype`; most derive it from their operands (TIR rules)."""

from __future__ import annotations

import struct

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError
from .base import PrimExpr
from .dtype import DataType, PointerType, bool_, int32
from .image_type import ImageType

if TYPE_CHECKING:
    from .buffer import Buffer


def _dt(value) -> DataType:
    return DataType.parse(value)


# ----------------------------------------------------------------------------------------------
# leaves


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A variable. Identity matters: two Vars with the same name are different variables.

    `dtype` is a DataType, a PointerType for a buffer's `data` var, or an ImageType for an image
    parameter.
    """

    name: str
    dtype: Any = int32

    def __post_init__(self):
        if not isinstance(self.dtype, (DataType, PointerType, ImageType)):
            object.__setattr__(self, "dtype", _dt(self.dtype))

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __repr__(self):
        return f"Var({self.name!r}, {str(self.dtype)!r})"


@dataclass(frozen=True, slots=True)
class IntImm(PrimExpr):
    """An integer or bool constant (bool uses values 0 and 1)."""

    dtype: DataType
    value: int

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dt(self.dtype))
        object.__setattr__(self, "value", int(self.value))


@dataclass(frozen=True, slots=True)
class FloatImm(PrimExpr):
    """A floating-point constant."""

    dtype: DataType
    value: float

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dt(self.dtype))
        object.__setattr__(self, "value", float(self.value))

    # equal by bit pattern: 0.0 and -0.0 are different constants (x * 0.0 and x * -0.0 differ;
    # with value equality, dict-based commoning merged them), and a NaN equals itself
    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.dtype == other.dtype and _float_bits(self.value) == _float_bits(other.value)

    def __hash__(self):
        return hash((FloatImm, self.dtype, _float_bits(self.value)))


def _float_bits(value: float) -> bytes:
    return struct.pack("<d", value)


def const(value, dtype="int32") -> PrimExpr:
    """A typed constant; a vector dtype gives a Broadcast of the scalar constant."""
    dt = _dt(dtype)
    if dt.lanes > 1:
        return Broadcast(const(value, dt.element_of()), dt.lanes)
    if dt.is_float:
        return FloatImm(dt, float(value))
    if dt.is_bool:
        return IntImm(dt, 1 if value else 0)
    if dt.is_handle:
        raise ArgumentError("handle constants do not exist")
    if isinstance(value, float) and not float(value).is_integer():
        raise ArgumentError(f"cannot make a {dt} constant from {value!r}")
    return IntImm(dt, int(value))


def convert(value, like: DataType | None = None) -> PrimExpr:
    """Turn a Python literal into an IR constant typed like `like` (int32/float32/bool by default).

    IR expressions pass through unchanged. A literal next to a vector operand is broadcast.
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        base = bool_ if like is None or not like.is_bool else like.element_of()
        return const(value, base if like is None else base.with_lanes(like.lanes))
    if isinstance(value, (int, float)):
        if not isinstance(like, DataType) or like.is_handle:
            return const(value, "int32" if isinstance(value, int) else "float32")
        if isinstance(value, float) and not like.is_float and not float(value).is_integer():
            raise ArgumentError(f"literal {value!r} cannot take type {like}")
        return const(value, like)
    raise ArgumentError(f"cannot convert {value!r} to an IR expression")


def convert_pair(a, b) -> tuple[PrimExpr, PrimExpr]:
    """Convert two operands where at most one is a Python literal: it takes the other's dtype."""
    if isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return a, convert(b, a.dtype)
    if isinstance(b, PrimExpr) and not isinstance(a, PrimExpr):
        return convert(a, b.dtype), b
    return convert(a), convert(b)


# ----------------------------------------------------------------------------------------------
# binary operators


@dataclass(frozen=True, slots=True)
class BinaryOp(PrimExpr):
    """Base of binary operators; operands should have identical dtypes (typing rule 3)."""

    a: PrimExpr
    b: PrimExpr

    def __post_init__(self):
        a, b = convert_pair(self.a, self.b)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def dtype(self) -> DataType:
        """The operands' type (both have it: typing rule 3)."""
        # Walk down the chain of operands `a` whose dtype is their own `a`'s in a loop: a deep
        # sum is asked for its dtype at every level, and a recursive property would cost a
        # Python call per level each time (and can exhaust the stack).
        e = self.a
        while type(e) in _DTYPE_OF_A:
            e = e.a
        return e.dtype


@dataclass(frozen=True, slots=True)
class Add(BinaryOp):
    """a + b"""


@dataclass(frozen=True, slots=True)
class Sub(BinaryOp):
    """a - b"""


@dataclass(frozen=True, slots=True)
class Mul(BinaryOp):
    """a * b"""


@dataclass(frozen=True, slots=True)
class Div(BinaryOp):
    """a / b: true division on floats, truncating division on integers."""


@dataclass(frozen=True, slots=True)
class Mod(BinaryOp):
    """Truncated remainder (sign of a), as C's %."""


@dataclass(frozen=True, slots=True)
class FloorDiv(BinaryOp):
    """Floor division, as Python's //."""


@dataclass(frozen=True, slots=True)
class FloorMod(BinaryOp):
    """Floor modulo (sign of b), as Python's %."""


@dataclass(frozen=True, slots=True)
class Min(BinaryOp):
    """min(a, b)"""


@dataclass(frozen=True, slots=True)
class Max(BinaryOp):
    """max(a, b)"""


@dataclass(frozen=True, slots=True)
class CmpOp(BinaryOp):
    """Base of comparisons: a bool with the operands' lane count."""

    @property
    def dtype(self) -> DataType:
        """bool with the operands' lane count."""
        return bool_.with_lanes(self.a.dtype.lanes)


@dataclass(frozen=True, slots=True)
class EQ(CmpOp):
    """a == b"""


@dataclass(frozen=True, slots=True)
class NE(CmpOp):
    """a != b"""


@dataclass(frozen=True, slots=True)
class LT(CmpOp):
    """a < b"""


@dataclass(frozen=True, slots=True)
class LE(CmpOp):
    """a <= b"""


@dataclass(frozen=True, slots=True)
class GT(CmpOp):
    """a > b"""


@dataclass(frozen=True, slots=True)
class GE(CmpOp):
    """a >= b"""


@dataclass(frozen=True, slots=True)
class And(BinaryOp):
    """Logical and of bools."""


@dataclass(frozen=True, slots=True)
class Or(BinaryOp):
    """Logical or of bools."""


# the binary operators whose dtype is their operand a's (BinaryOp.dtype walks through them)
_DTYPE_OF_A = frozenset({Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, And, Or})


@dataclass(frozen=True, slots=True)
class Not(PrimExpr):
    """Logical not of a bool."""

    a: PrimExpr

    @property
    def dtype(self) -> DataType:
        """The operand's type (bool)."""
        return self.a.dtype


# ----------------------------------------------------------------------------------------------
# other expressions


@dataclass(frozen=True, slots=True)
class Select(PrimExpr):
    """Evaluates both sides and picks one (lane-wise for a vector condition)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __post_init__(self):
        t, f = convert_pair(self.true_value, self.false_value)
        object.__setattr__(self, "condition", convert(self.condition))
        object.__setattr__(self, "true_value", t)
        object.__setattr__(self, "false_value", f)

    @property
    def dtype(self) -> DataType:
        """The type of the two values."""
        return self.true_value.dtype


@dataclass(frozen=True, slots=True)
class Cast(PrimExpr):
    """Value conversion to `dtype`; keeps the lane count (typing rule 4)."""

    dtype: DataType
    value: PrimExpr

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dt(self.dtype))
        object.__setattr__(self, "value", convert(self.value))


@dataclass(frozen=True, slots=True)
class Ramp(PrimExpr):
    """The vector [base, base + stride, ..., base + (lanes-1)*stride]."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    def __post_init__(self):
        base, stride = convert_pair(self.base, self.stride)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "lanes", int(self.lanes))

    @property
    def dtype(self) -> DataType:
        """The base's type with `lanes` times its lanes."""
        return self.base.dtype.with_lanes(self.base.dtype.lanes * self.lanes)


@dataclass(frozen=True, slots=True)
class Broadcast(PrimExpr):
    """`value` repeated `lanes` times."""

    value: PrimExpr
    lanes: int

    def __post_init__(self):
        object.__setattr__(self, "value", convert(self.value))
        object.__setattr__(self, "lanes", int(self.lanes))

    @property
    def dtype(self) -> DataType:
        """The value's type with `lanes` times its lanes."""
        return self.value.dtype.with_lanes(self.value.dtype.lanes * self.lanes)


@dataclass(frozen=True, slots=True)
class Let(PrimExpr):
    """`body` with `var` bound to `value`."""

    var: Var
    value: PrimExpr
    body: PrimExpr

    def __post_init__(self):
        object.__setattr__(self, "value", convert(self.value, self.var.dtype))
        object.__setattr__(self, "body", convert(self.body))

    @property
    def dtype(self) -> DataType:
        """The body's type."""
        return self.body.dtype


@dataclass(frozen=True, slots=True)
class Call(PrimExpr):
    """A call of a named intrinsic (see vkir.ir.op for the known ones)."""

    dtype: DataType
    op: str
    args: tuple

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dt(self.dtype))
        object.__setattr__(self, "args", tuple(convert(a) for a in self.args))


@dataclass(frozen=True, slots=True)
class Shuffle(PrimExpr):
    """Lanes picked by `indices` from the concatenation of `vectors`."""

    vectors: tuple
    indices: tuple

    def __post_init__(self):
        object.__setattr__(self, "vectors", tuple(convert(v) for v in self.vectors))
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))

    @property
    def dtype(self) -> DataType:
        """The vectors' element type with one lane per index."""
        return self.vectors[0].dtype.element_of().with_lanes(len(self.indices))


@dataclass(frozen=True, slots=True)
class BufferLoad(PrimExpr):
    """Read of `buffer` at `indices`. With L lanes in the last index on an M-lane element type the
    result has M*L lanes (typing rule 1)."""

    buffer: "Buffer"
    indices: tuple

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))

    @property
    def dtype(self) -> DataType:
        """The buffer's element type with its lanes times the last index's (typing rule 1)."""
        elem = self.buffer.dtype
        index_lanes = self.indices[-1].dtype.lanes if self.indices else 1
        return elem.with_lanes(elem.lanes * index_lanes)


BINARY_OPS = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, EQ, NE, LT, LE, GT, GE, And, Or)
