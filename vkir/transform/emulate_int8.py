"""EmulateInt8: int8/uint8 values and buffers on devices without 8-bit support.

A device without `shaderInt8` cannot declare an 8-bit integer type at all, and one without
`storageBuffer8BitAccess` cannot load or store single bytes of a storage buffer. Bool buffers are
int8 on Vulkan (BoolToInt8), so without this pass such a device could not run a kernel with a bool
mask. The pass removes every 8-bit integer from the function while keeping its meaning exactly (the
interpreter's meaning, where int8 arithmetic wraps at 8 bits):

- Values: an int8xL expression becomes int32xL (uint8xL becomes uint32xL) holding the same number.
  After each operation that can leave the 8-bit range (+ - * / % //, shift left, a cast to int8)
  the result is wrapped back: sign-extended from bit 7 for int8, masked with 0xff for uint8. Shift
  amounts are taken modulo 8, and float -> int8 conversions saturate at the int8 bounds, as the
  interpreter defines them. Each intrinsic follows its row's emulation rule in the intrinsic table
  (vkir.ir.intrinsics): a bit count (popcount, clz, ctz) counts the byte's own 8 bits, never the
  sign extension's.
- Storage buffers (parameters) keep their bytes: the host still passes its int8/uint8/bool array.
  The kernel reads them as 32-bit words through a uint32 view of the same binding and extracts
  bytes with shifts and masks. A store that fills whole words (an int8x4 element) is a plain word
  store; a store of single bytes updates its byte with two word atomics (and then or), so that
  invocations writing neighbouring bytes of one word never lose each other's writes, and the
  words of such a buffer are read atomically too (an atomic or with 0), so that no read races
  with a neighbour's update.
- Workgroup and private buffers are not visible to the host: their elements simply become 32-bit.

The lowered function takes those parameters as uint32 word arrays (the bytes padded to whole
words), which is what the device sees; a word buffer of symbolic size ((n + 3) // 4 words) does
not name n on its own, so a Kernel binds n on the user's signature (and
vkir.testing.interpret_lowered, given the original function, does the same).

`T.reinterpret` to or from an 8-bit type, and atomics on 8-bit elements, have no such lowering
and raise UnsupportedError.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import walk
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from ..ir.functor import Mutator
from ..ir.intrinsics import INTRINSICS
from ..ir.op import is_atomic
from .base import Pass

WORD = DataType("uint", 32)
INT32 = DataType("int", 32)

# operations whose exact result may leave the 8-bit range (wrapped afterwards)
_WRAPPED = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod)


def is_narrow(dt) -> bool:
    """True for int8/uint8 types (any lanes)."""
    return isinstance(dt, DataType) and dt.code in ("int", "uint") and dt.bits == 8


def widened(dt: DataType) -> DataType:
    """The 32-bit type that holds the values of an 8-bit integer type (others unchanged)."""
    return DataType(dt.code, 32, dt.lanes) if is_narrow(dt) else dt


def _const(value: int, dt: DataType) -> E.PrimExpr:
    """`value` of `dt` (a broadcast for vector types)."""
    scalar = E.IntImm(dt.element_of(), value)
    return scalar if dt.lanes == 1 else E.Broadcast(scalar, dt.lanes)


def _call(dt: DataType, op: str, *args) -> E.Call:
    return E.Call(dt, op, tuple(args))


def wrap(value: E.PrimExpr, narrow: DataType) -> E.PrimExpr:
    """`value` (the widened type of `narrow`) reduced to `narrow`'s range, as 8-bit arithmetic
    wraps: sign extension from bit 7 (int8) or the low byte (uint8)."""
    dt = value.dtype
    if narrow.code == "uint":
        return _call(dt, "bitwise_and", value, _const(0xFF, dt))
    return _call(dt, "shift_right", _call(dt, "shift_left", value, _const(24, dt)), _const(24, dt))


def _low_byte(value: E.PrimExpr, narrow: DataType) -> E.PrimExpr:
    """The held 32-bit `value` of an 8-bit type reduced to its 8 bits, zero-extended (a uint8
    value already is)."""
    if narrow.code == "uint":
        return value
    return _call(value.dtype, "bitwise_and", value, _const(0xFF, value.dtype))


def _byte_at_top(value: E.PrimExpr, narrow: DataType) -> E.PrimExpr:
    """The byte in bits 24-31 over a stop bit at bit 23: its leading zeros are the byte's (8 for
    a zero byte)."""
    dt = value.dtype
    top = _call(dt, "shift_left", value, _const(24, dt))
    return _call(dt, "bitwise_or", top, _const(1 << 23, dt))


def _byte_over_stop(value: E.PrimExpr, narrow: DataType) -> E.PrimExpr:
    """The byte zero-extended under a stop bit at bit 8: its trailing zeros are the byte's (8
    for a zero byte)."""
    dt = value.dtype
    return _call(dt, "bitwise_or", _low_byte(value, narrow), _const(1 << 8, dt))


_COUNT_OPERAND = {"count_bits": _low_byte, "count_leading": _byte_at_top,
                  "count_trailing": _byte_over_stop}
"""The operand a bit count takes in 32 bits, by the emulation rule of vkir.ir.intrinsics: the
count of the 32-bit value is then the count of the byte (0 to 8, in range)."""


def lane(value: E.PrimExpr, k: int) -> E.PrimExpr:
    """Lane `k` of a vector expression as a scalar expression (cheaply for ramps/broadcasts)."""
    if value.dtype.lanes == 1:
        return value
    if isinstance(value, E.Ramp):
        return E.Add(value.base, E.Mul(value.stride, E.IntImm(value.stride.dtype, k)))
    if isinstance(value, E.Broadcast):
        return value.value
    return E.Shuffle((value,), (k,))


def _concat(scalars: list) -> E.PrimExpr:
    return scalars[0] if len(scalars) == 1 else E.Shuffle(tuple(scalars), tuple(range(len(scalars))))


def _product(extents) -> E.PrimExpr:
    """The product of `extents` (int32 expressions), folded where they are constants."""
    const, terms = 1, []
    for extent in extents:
        if isinstance(extent, E.IntImm):
            const *= extent.value
        else:
            terms.append(extent)
    out = None if const == 1 and terms else E.IntImm(INT32, const)
    for term in terms:
        out = term if out is None else E.Mul(out, term)
    return out


def _scaled(index: E.PrimExpr, factor: E.PrimExpr) -> E.PrimExpr:
    if isinstance(factor, E.IntImm) and factor.value == 1:
        return index
    lanes = index.dtype.lanes
    return E.Mul(index, factor if lanes == 1 else E.Broadcast(factor, lanes))


def _plus(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    lanes = max(a.dtype.lanes, b.dtype.lanes)
    a = a if a.dtype.lanes == lanes else E.Broadcast(a, lanes)
    b = b if b.dtype.lanes == lanes else E.Broadcast(b, lanes)
    return E.Add(a, b)


def _flat_index(buf: Buffer, indices: tuple) -> E.PrimExpr:
    """The row-major element index of `indices` in `buf`, plus its elem_offset."""
    flat = None
    for axis, index in enumerate(indices):
        term = _scaled(index, _product(buf.shape[axis + 1:]))
        flat = term if flat is None else _plus(flat, term)
    offset = buf.elem_offset
    if not (isinstance(offset, E.IntImm) and offset.value == 0):
        flat = _plus(flat, offset)
    return flat


class _Rewriter(Mutator):
    """Widens 8-bit values and rewrites accesses of 8-bit buffers (see the module docstring)."""

    def __init__(self, func_name: str, byte_stored: frozenset = frozenset()):
        self.func_name = func_name
        self.byte_stored = byte_stored  # data vars written byte by byte: read atomically too
        self.vars = {}       # 8-bit Var -> its 32-bit replacement
        self.words = {}      # global data var with 8-bit views -> the uint32 word Buffer
        self.wide = {}       # 8-bit workgroup/private buffer -> its 32-bit element buffer
        self.counter = 0

    # -- names and variables -----------------------------------------------------------------
    def fresh(self, name: str, dtype) -> E.Var:
        self.counter += 1
        return E.Var(f"{name}_{self.counter}", dtype)

    def visit_Var(self, op):
        if is_narrow(op.dtype):
            new = self.vars.get(op)
            if new is None:
                new = self.vars[op] = E.Var(op.name, widened(op.dtype))
            return new
        return op

    # -- buffers -----------------------------------------------------------------------------
    def is_word_storage(self, buf: Buffer) -> bool:
        """An 8-bit view of global memory: accessed as bytes of 32-bit words."""
        return is_narrow(buf.dtype) and buf.scope == "global" and buf not in self.wide

    def widened_buffer(self, buf: Buffer) -> Buffer:
        """The 32-bit element version of an 8-bit workgroup/private buffer."""
        new = self.wide.get(buf)
        if new is None:
            data = self.wide_data(buf.data)
            new = self.wide[buf] = replace(buf, data=data, dtype=widened(buf.dtype))
        return new

    def wide_data(self, var: E.Var) -> E.Var:
        ptr = var.dtype
        new = self.vars.get(var)
        if new is None:
            if not (isinstance(ptr, PointerType) and is_narrow(ptr.element)):
                raise UnsupportedError(
                    f"kernel {self.func_name!r}: the 8-bit view of {var.name!r} in {ptr.scope} memory "
                    "aliases another type; without 8-bit device support vkir cannot emulate it")
            new = self.vars[var] = E.Var(var.name, PointerType(widened(ptr.element), ptr.scope))
        return new

    def visit_buffer(self, buf):
        if is_narrow(buf.dtype) and buf.scope != "global":
            return self.widened_buffer(buf)
        words = self.words.get(buf.data)
        if words is not None and words.data is not buf.data:
            return replace(buf, data=words.data)  # another view of an 8-bit parameter
        return buf

    # -- expressions -------------------------------------------------------------------------
    def generic_narrow(self, op):
        """`op` with widened children, wrapped when the operation can overflow 8 bits."""
        new = self.generic_visit(op)
        if is_narrow(op.dtype) and isinstance(op, _WRAPPED):
            return wrap(new, op.dtype)
        return new

    def visit_Add(self, op): return self.generic_narrow(op)
    def visit_Sub(self, op): return self.generic_narrow(op)
    def visit_Mul(self, op): return self.generic_narrow(op)
    def visit_Div(self, op): return self.generic_narrow(op)
    def visit_Mod(self, op): return self.generic_narrow(op)
    def visit_FloorDiv(self, op): return self.generic_narrow(op)
    def visit_FloorMod(self, op): return self.generic_narrow(op)

    def visit_IntImm(self, op):
        return E.IntImm(widened(op.dtype), op.value) if is_narrow(op.dtype) else op

    def visit_Cast(self, op):
        value = self.visit(op.value)
        if not is_narrow(op.dtype):
            if value is op.value:
                return op
            return value if value.dtype == op.dtype else E.Cast(op.dtype, value)
        wide = widened(op.dtype)
        if value.dtype.code == "float":  # saturates at the 8-bit bounds, as the interpreter does
            lo, hi = (-128, 127) if op.dtype.code == "int" else (0, 255)
            as_int = E.Cast(INT32.with_lanes(value.dtype.lanes), value)
            clamped = E.Min(E.Max(as_int, _const(lo, as_int.dtype)), _const(hi, as_int.dtype))
            return clamped if wide == clamped.dtype else E.Cast(wide, clamped)
        if value.dtype.code == "bool":
            return E.Cast(wide, value)  # 0 or 1: in range
        moved = value if value.dtype == wide else E.Cast(wide, value)
        return wrap(moved, op.dtype)

    def visit_Call(self, op):
        if is_atomic(op.op) and is_narrow(op.dtype):
            raise UnsupportedError(f"kernel {self.func_name!r}: {op.op} on an {op.dtype} element")
        row = INTRINSICS.get(op.op)
        rule = row.emulation if row is not None else "wrap"
        narrow = is_narrow(op.dtype)
        if rule == "refused" and (narrow or any(is_narrow(a.dtype) for a in op.args)):
            raise UnsupportedError(
                f"kernel {self.func_name!r}: T.{op.op} between {op.args[0].dtype} and "
                f"{op.dtype} needs 8-bit integer support, which the device lacks")
        args = tuple(self.visit(a) for a in op.args)
        if not narrow:
            if all(a is b for a, b in zip(args, op.args)):
                return op
            return E.Call(op.dtype, op.op, args)
        wide = widened(op.dtype)
        if rule in ("shift_wrap", "shift_in_range"):
            a, b = args
            args = (a, _call(b.dtype, "bitwise_and", b, _const(7, b.dtype)))
        elif rule in _COUNT_OPERAND:
            args = (_COUNT_OPERAND[rule](args[0], op.dtype),)
        new = E.Call(wide, op.op, args)
        if rule not in ("in_range", "shift_in_range", *_COUNT_OPERAND) and op.args:
            return wrap(new, op.dtype)  # e.g. fabs(-128) is 128 in 32 bits, -128 in 8
        return new

    def visit_BufferLoad(self, op):
        if not self.is_word_storage(op.buffer):
            return self.generic_visit(op)
        indices = tuple(self.visit(i) for i in op.indices)
        words = self.words[op.buffer.data]
        m = op.buffer.dtype.lanes
        flat = _flat_index(op.buffer, indices)
        wide = widened(op.buffer.dtype.element_of())
        atomic = op.buffer.data in self.byte_stored
        lanes = []
        for k in range(flat.dtype.lanes):
            element = lane(flat, k)
            if m % 4 == 0:  # whole words: one load per word, four bytes out of each
                for w in range(m // 4):
                    word = self.read(words, E.Add(E.Mul(element, E.IntImm(INT32, m // 4)),
                                                  E.IntImm(INT32, w)), atomic)
                    lanes.extend(self.byte_of(word, E.IntImm(WORD, 8 * b), wide) for b in range(4))
                continue
            for b in range(m):
                address = element if m == 1 else E.Add(E.Mul(element, E.IntImm(INT32, m)),
                                                         E.IntImm(INT32, b))
                # the address is used twice: bound once where it holds a let (SSA: one binding)
                named = self.fresh(f"{op.buffer.name}_byte", address.dtype) \
                    if any(isinstance(n, E.Let) for n in walk(address)) else address
                word = self.read(words, E.FloorDiv(named, E.IntImm(INT32, 4)), atomic)
                shift = E.Cast(WORD, E.Mul(E.FloorMod(named, E.IntImm(INT32, 4)),
                                           E.IntImm(INT32, 8)))
                byte = self.byte_of(word, shift, wide)
                lanes.append(byte if named is address else E.Let(named, address, byte))
        return _concat(lanes)

    @staticmethod
    def read(words: Buffer, index: E.PrimExpr, atomic: bool) -> E.PrimExpr:
        """Word `index`; an atomic read (or with 0) where other invocations may be updating
        neighbouring bytes of the same word with atomics, which a plain read would race with."""
        load = E.BufferLoad(words, (index,))
        return _call(WORD, "atomic_or", load, E.IntImm(WORD, 0)) if atomic else load

    @staticmethod
    def byte_of(word: E.PrimExpr, shift: E.PrimExpr, wide: DataType) -> E.PrimExpr:
        """The byte of `word` at bit `shift` as a value of `wide` (int32 sign-extended)."""
        byte = _call(WORD, "bitwise_and", _call(WORD, "shift_right", word, shift), E.IntImm(WORD, 0xFF))
        if wide.code == "uint":
            return byte
        return wrap(E.Cast(INT32, byte), DataType("int", 8))

    # -- statements --------------------------------------------------------------------------
    def visit_BufferStore(self, op):
        if not self.is_word_storage(op.buffer):
            return self.generic_visit(op)
        value = self.visit(op.value)
        indices = tuple(self.visit(i) for i in op.indices)
        words = self.words[op.buffer.data]
        m = op.buffer.dtype.lanes
        flat = _flat_index(op.buffer, indices)
        value_var = self.fresh(f"{op.buffer.name}_bytes", value.dtype)
        index_var = self.fresh(f"{op.buffer.name}_index", flat.dtype)
        byte = []
        for k in range(value.dtype.lanes):
            v = lane(value_var, k)
            byte.append(_call(WORD, "bitwise_and", v if v.dtype == WORD else E.Cast(WORD, v),
                              E.IntImm(WORD, 0xFF)))
        stores = []
        for k in range(flat.dtype.lanes):
            element = lane(index_var, k)
            if m % 4 == 0:  # whole words belong to this element: plain stores
                for w in range(m // 4):
                    packed = byte[k * m + 4 * w]
                    for b in range(1, 4):
                        packed = _call(WORD, "bitwise_or", packed, _call(
                            WORD, "shift_left", byte[k * m + 4 * w + b], E.IntImm(WORD, 8 * b)))
                    address = E.Add(E.Mul(element, E.IntImm(INT32, m // 4)), E.IntImm(INT32, w))
                    stores.append(S.BufferStore(words, packed, (address,)))
                continue
            for b in range(m):
                address = element if m == 1 else E.Add(E.Mul(element, E.IntImm(INT32, m)),
                                                         E.IntImm(INT32, b))
                at = E.BufferLoad(words, (E.FloorDiv(address, E.IntImm(INT32, 4)),))
                shift = E.Cast(WORD, E.Mul(E.FloorMod(address, E.IntImm(INT32, 4)), E.IntImm(INT32, 8)))
                clear = _call(WORD, "bitwise_not", _call(WORD, "shift_left", E.IntImm(WORD, 0xFF), shift))
                stores.append(S.Evaluate(_call(WORD, "atomic_and", at, clear)))
                stores.append(S.Evaluate(_call(WORD, "atomic_or", at,
                                               _call(WORD, "shift_left", byte[k * m + b], shift))))
        body = stores[0] if len(stores) == 1 else S.SeqStmt(tuple(stores))
        return S.LetStmt(value_var, value, S.LetStmt(index_var, flat, body))

    def visit_DeclBuffer(self, op):
        buf = op.buffer
        if not self.is_word_storage(buf):
            return self.generic_visit(op)
        if buf.data in self.words:
            return self.visit(op.body)  # its accesses go to the word view
        # an 8-bit view of wider global memory: a uint32 view of the same data (an explicit cast)
        words = self.words[buf.data] = Buffer(
            name=f"{buf.name}_words", data=buf.data, dtype=WORD, shape=(E.IntImm(INT32, 1),),
            strides=(), elem_offset=E.IntImm(INT32, 0), scope="global")
        body = self.visit(op.body)
        del self.words[buf.data]
        return S.DeclBuffer(words, body)


def _word_view(buf: Buffer, data: E.Var) -> Buffer:
    """A 1-d uint32 buffer over `data` covering the bytes of the 8-bit parameter `buf`."""
    nbytes = _product((*buf.shape, E.IntImm(INT32, buf.dtype.lanes)))
    if isinstance(nbytes, E.IntImm):
        words = E.IntImm(INT32, max(1, -(-nbytes.value // 4)))
    else:
        words = E.FloorDiv(E.Add(nbytes, E.IntImm(INT32, 3)), E.IntImm(INT32, 4))
    return Buffer(name=f"{buf.name}_words", data=data, dtype=WORD, shape=(words,), strides=(),
                  elem_offset=E.IntImm(INT32, 0), scope="global")


@dataclass(frozen=True)
class EmulateInt8(Pass):
    """Remove every 8-bit integer for devices without 8-bit support (see the module docstring)."""

    def transform(self, func):
        """Widen 8-bit values; access 8-bit parameter buffers as bytes of uint32 words."""
        byte_stored = frozenset(
            n.buffer.data for n in walk(func.body) if isinstance(n, S.BufferStore)
            and is_narrow(n.buffer.dtype) and n.buffer.scope == "global" and n.buffer.dtype.lanes % 4)
        rw = _Rewriter(func.name, byte_stored)
        params, buffer_map = [], {}
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is None:
                params.append(rw.visit_Var(p))
                continue
            if is_narrow(buf.dtype) and p is buf.data:
                data = E.Var(p.name, PointerType(WORD, "global"))
                words = rw.words[p] = _word_view(buf, data)
                params.append(data)
                buffer_map[data] = words
                continue
            params.append(p)
            buffer_map[p] = buf
        if not rw.words and not _mentions_narrow(func):
            return func
        body = rw.visit(func.body)
        return replace(func, params=tuple(params), body=body, buffer_map=buffer_map)


def _mentions_narrow(func) -> bool:
    """Whether any expression or buffer of `func` has an 8-bit integer type."""
    for node in walk(func.body):
        dt = getattr(node, "dtype", None)
        if is_narrow(dt) or (isinstance(dt, PointerType) and is_narrow(dt.element)):
            return True
        if isinstance(node, (S.AllocBuffer, S.DeclBuffer)) and is_narrow(node.buffer.dtype):
            return True
    return any(is_narrow(p.dtype) for p in func.params)
