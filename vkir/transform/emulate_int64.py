"""EmulateInt64: int64/uint64 values and buffers on devices without 64-bit integers.

A device without `shaderInt64` (SwiftShader) cannot declare a 64-bit integer type at all; TVM's
kernels use int64 for token ids and indices, and vkir's own kernels may declare int64 buffers.
This pass removes every 64-bit integer from the function while keeping its meaning exactly (the
interpreter's: two's complement wrap-around at 64 bits):

- Values: an int64 or uint64 scalar becomes a uint32x2 value, lane 0 its low word and lane 1 its
  high word (vkir.transform.int64_pairs computes on such pairs): + - * with carries and 16-bit
  partial products, comparisons (signed or unsigned by the operands' type), min/max/select,
  bitwise operations word by word, shifts by any amount modulo 64, casts to and from every
  integer type, bool and float32 (int -> float32 rounds correctly, float32 -> int saturates).
- Buffers (parameters, workgroup and local) of int64/uint64 elements become buffers of uint32x2
  elements: the same bytes, so the host still passes its int64 array. A view of other memory
  (a pointer cast: `T.decl_buffer` of another dtype on a buffer's data) stays a view of the
  same bytes, either way round.
- Indices, sizes and loops: an int64 buffer index is narrowed to its low word (a buffer holds
  fewer than 2**31 elements on any device), and an int64 loop variable or symbolic size becomes
  an int32 one (of the same name: a call binds it as before) whose value is sign-extended where
  the body uses it as a 64-bit number (a loop runs fewer than 2**31 iterations). A scalar
  int64 (uint64) parameter becomes two uint32 parameters of the same name, its low word in its
  place and its high word after every other parameter: a call passes the whole 64-bit value.

Floor division and modulo by a constant power of two (TVM's index arithmetic) are a shift and a
mask; every other 64-bit division and modulo (truncating or flooring, signed or unsigned, by a
run-time divisor) is straight-line code on 32-bit words (vkir.transform.int64_divide), with the
interpreter's results for a zero divisor (0 and 0) and for -2**63 / -1. `popcount`, `clz`,
`ctz` and `fabs` come from the words' own; `T.reinterpret` among int64, uint64 and vectors of
64 bits (uint32x2, float32x2...) keeps the bits; a reinterpret that changes the lane count of a
64-bit vector (uint64x2 as float32x4) is taken lane by lane from the words.

Atomics: a buffer that a 64-bit atomic updates is held as uint32 words instead (two an element,
the same bytes); `atomic_add`/`atomic_sub` (with a carry into the high word), `atomic_and`,
`atomic_or` and `atomic_xor` are word atomics there, exact under contention, as statements
(vkir.transform.int64_atomics says why their old value cannot be given).

Vectors: int64/uint64 vectors (vectorized loops, int64x2/int64x4 element buffers) are first
taken apart lane by lane (vkir.transform.int64_lanes), so that each lane is a pair.

Refused with UnsupportedError naming the operation: the few 64-bit vector forms that
int64_lanes names (an impure call giving a vector, a nested vector index), the old value of a
64-bit atomic, `atomic_min`/`atomic_max`/`atomic_exchange`/`atomic_compare_exchange` on 64-bit
elements, `T.reinterpret` between a 64-bit integer and another type (float64), and any other
intrinsic on 64-bit integers. float64 needs the device's `shaderFloat64` as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir import walk
from ..ir.dtype import DataType, PointerType
from ..ir.functor import Mutator
from ..ir.op import is_atomic
from . import int64_atomics as A
from . import int64_divide as D
from . import int64_lanes as L
from . import int64_pairs as P
from .base import Pass

_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")


def is_wide(dt) -> bool:
    """True for int64/uint64 types (any lanes)."""
    return isinstance(dt, DataType) and dt.code in ("int", "uint") and dt.bits == 64


def _wide_pointer(dt) -> bool:
    return isinstance(dt, PointerType) and is_wide(dt.element)


class _Rewriter(Mutator):
    """Rewrites 64-bit integers into word pairs (see the module docstring)."""

    def __init__(self, func_name: str, words=frozenset()):
        self.func_name = func_name
        self.words = words  # data vars of 64-bit buffers held as uint32 words (64-bit atomics)
        self.vars = {}      # 64-bit Var (or pointer Var) -> its replacement
        self.loops = {}     # int64 loop or size Var -> the pair of its int32 replacement
        self.sizes = {}     # int64 size Var -> its int32 replacement (sizes are < 2**31)
        self.buffers = {}   # 64-bit element Buffer -> its uint32x2 element Buffer
        self.lets = {}      # id of a Let node -> (the node, its rewritten form)

    def refuse(self, what: str):
        raise UnsupportedError(f"kernel {self.func_name!r}: {what} on a device without int64 "
                               "(shaderInt64) is not emulated")

    def scalar(self, dt: DataType) -> None:
        """Refuse a 64-bit vector that int64_lanes left (it takes apart every other one)."""
        if dt.lanes != 1:
            self.refuse(f"the {dt} vector")

    # -- variables and buffers ---------------------------------------------------------------
    def visit_Var(self, op):
        if op in self.loops:
            return self.loops[op]
        if is_wide(op.dtype) or _wide_pointer(op.dtype):
            new = self.vars.get(op)
            if new is None:
                if is_wide(op.dtype):
                    self.scalar(op.dtype)
                    new = E.Var(op.name, P.PAIR)
                else:
                    self.scalar(op.dtype.element)
                    element = P.WORD if op in self.words else P.PAIR
                    new = E.Var(op.name, PointerType(element, op.dtype.scope))
                self.vars[op] = new
            return new
        return op

    def visit_buffer(self, buf):
        new = self.buffers.get(buf)
        if new is not None:
            return new
        dims = dict(shape=tuple(self.dim(d) for d in buf.shape),
                    strides=tuple(self.dim(d) for d in buf.strides),
                    elem_offset=self.dim(buf.elem_offset))
        if not is_wide(buf.dtype):
            if _wide_pointer(buf.data.dtype):   # a view of 64-bit memory, now of pairs (or words)
                dims.update(data=self.visit_Var(buf.data))
        else:
            self.scalar(buf.dtype)
            # a 64-bit view of other memory (a pointer cast of a float32 buffer) stays one,
            # of pairs: the same bytes
            dims.update(data=self.visit_Var(buf.data), dtype=P.PAIR)
            if buf.data in self.words:   # two uint32 words an element, in the last dimension
                if buf.strides or not buf.shape:
                    self.refuse(f"a 64-bit atomic on the strided or 0-d buffer {buf.name!r}")
                dims.update(dtype=P.WORD, shape=(*dims["shape"][:-1], _doubled(dims["shape"][-1])),
                            elem_offset=_doubled(dims["elem_offset"]))
        same = all(_identical(getattr(buf, k), v) for k, v in dims.items())
        new = self.buffers[buf] = buf if same else replace(buf, **dims)
        return new

    def dim(self, old: E.PrimExpr) -> E.PrimExpr:
        """A buffer's shape, stride or offset in 32 bits: an int64 size variable becomes its
        int32 replacement (which the call binds by name), another int64 expression the int32 of
        its low word."""
        if not is_wide(old.dtype):
            return self.visit(old)
        if isinstance(old, E.IntImm):
            return E.IntImm(P.INT32, old.value)
        if old in self.sizes:
            return self.sizes[old]
        return E.Cast(P.INT32, P.lo(self.visit(old)))

    def index(self, old: E.PrimExpr) -> E.PrimExpr:
        """A buffer index: a 64-bit one narrowed to the int32 of its low word."""
        new = self.visit(old)
        if is_wide(old.dtype):
            return E.Cast(P.INT32, P.lo(new))
        return new

    def visit_BufferLoad(self, op):
        buf, indices = self.visit_buffer(op.buffer), tuple(self.index(i) for i in op.indices)
        if op.buffer.data in self.words:
            return P.pair(*(E.BufferLoad(buf, A.word_index(indices, w)) for w in (0, 1)))
        return E.BufferLoad(buf, indices)

    def visit_BufferStore(self, op):
        buf, indices = self.visit_buffer(op.buffer), tuple(self.index(i) for i in op.indices)
        value = self.visit(op.value)
        if op.buffer.data in self.words:
            return A.bind_stmt(value, lambda v: S.SeqStmt(tuple(
                S.BufferStore(buf, P.lo(v) if w == 0 else P.hi(v), A.word_index(indices, w))
                for w in (0, 1))))
        return S.BufferStore(buf, value, indices)

    def visit_Evaluate(self, op):
        call = op.value
        if isinstance(call, E.Call) and is_atomic(call.op) and is_wide(call.dtype):
            self.scalar(call.dtype)
            if call.op not in A.EMULATED:
                self.refuse(f"T.{call.op} on the {call.dtype} buffer {call.args[0].buffer.name!r} "
                            "(64-bit atomics are emulated for add, sub, and, or and xor only: "
                            "the others need both words updated indivisibly)")
            at = call.args[0]
            return A.statement(call.op, self.visit_buffer(at.buffer),
                               tuple(self.index(i) for i in at.indices), self.visit(call.args[1]))
        return self.generic_visit(op)

    def visit_For(self, op):
        if not is_wide(op.loop_var.dtype):
            return self.generic_visit(op)
        bounds = (op.min, op.extent)
        if all(isinstance(b, E.IntImm) for b in bounds) and not (
                -2**31 <= op.min.value and op.min.value + op.extent.value <= 2**31):
            self.refuse(f"the {op.loop_var.dtype} loop {op.loop_var.name!r} over "
                        f"[{op.min.value}, {op.min.value + op.extent.value}), beyond int32,")
        var = E.Var(op.loop_var.name, P.INT32)
        self.loops[op.loop_var] = P.from_int32(var, True)
        body = self.visit(op.body)
        return replace(op, loop_var=var, min=self.index(op.min), extent=self.index(op.extent),
                       body=body)

    # -- expressions -------------------------------------------------------------------------
    def visit_IntImm(self, op):
        return P.constant(op.value) if is_wide(op.dtype) else op

    def arith(self, op, fn):
        if not is_wide(op.dtype):
            return self.generic_visit(op)
        self.scalar(op.dtype)
        return fn(self.visit(op.a), self.visit(op.b))

    def visit_Add(self, op): return self.arith(op, P.add)
    def visit_Sub(self, op): return self.arith(op, P.sub)
    def visit_Mul(self, op): return self.arith(op, P.mul)

    def division(self, op):
        if not is_wide(op.dtype):
            return self.generic_visit(op)
        self.scalar(op.dtype)
        signed = op.dtype.code == "int"
        floor = isinstance(op, (E.FloorDiv, E.FloorMod)) or not signed
        quotient = isinstance(op, (E.FloorDiv, E.Div))
        k = _power_of_two(op.b)
        if k is not None and floor:
            a = self.visit(op.a)
            if quotient:   # floor(a / 2**k): the shift that fills signs
                return P.shift_right(a, P.constant(k), signed)
            return P.bitwise("bitwise_and", a, P.constant(2 ** k - 1))   # in [0, 2**k)
        known = op.b.value if isinstance(op.b, E.IntImm) else None
        return D.divide(self.visit(op.a), self.visit(op.b), signed, floor, not quotient, known)

    visit_Div = visit_Mod = visit_FloorDiv = visit_FloorMod = division

    def extreme(self, op, smaller: bool):
        signed = op.dtype.code == "int"
        def pick(a, b):
            return P.bind_all((a, b), lambda a, b: E.Select(
                P.less(a, b, signed) if smaller else P.less(b, a, signed), a, b))
        return self.arith(op, pick)

    def visit_Min(self, op): return self.extreme(op, True)
    def visit_Max(self, op): return self.extreme(op, False)

    def compare(self, op):
        if not is_wide(op.a.dtype):
            return self.generic_visit(op)
        self.scalar(op.a.dtype)
        a, b = self.visit(op.a), self.visit(op.b)
        signed = op.a.dtype.code == "int"
        if isinstance(op, E.EQ):
            return P.equal(a, b)
        if isinstance(op, E.NE):
            return E.Not(P.equal(a, b))
        if isinstance(op, E.LT):
            return P.less(a, b, signed)
        if isinstance(op, E.LE):
            return P.less(a, b, signed, or_equal=True)
        if isinstance(op, E.GT):
            return P.less(b, a, signed)
        return P.less(b, a, signed, or_equal=True)

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = compare

    def visit_Ramp(self, op):
        if is_wide(op.dtype):
            self.refuse(f"the {op.dtype} ramp")
        return self.generic_visit(op)

    def visit_Broadcast(self, op):
        if is_wide(op.dtype):
            self.refuse(f"the {op.dtype} broadcast")
        return self.generic_visit(op)

    def visit_Shuffle(self, op):
        if is_wide(op.dtype) or any(is_wide(v.dtype) for v in op.vectors):
            self.refuse(f"a shuffle of {op.vectors[0].dtype} lanes")
        return self.generic_visit(op)

    def visit_Cast(self, op):
        src, dst = op.value.dtype, op.dtype
        if not (is_wide(src) or is_wide(dst)):
            return self.generic_visit(op)
        self.scalar(src)
        value = self.visit(op.value)
        if is_wide(src) and is_wide(dst):
            return value
        if is_wide(dst):
            return self.to_pair(value, src, dst.code == "int")
        return self.from_pair(value, src.code == "int", dst)

    def to_pair(self, value, src: DataType, signed_dst: bool):
        """A pair from a value of another type `src`."""
        if src.code == "float":
            if src.bits == 16:
                value = E.Cast(P.FLOAT32, value)  # exactly (float64, where the device has it, as is)
            return P.from_float(value, signed_dst)
        if src.code == "bool":
            return P.pair(E.Cast(P.WORD, value), P.word(0))
        signed = src.code == "int"
        if src.bits != 32:
            value = E.Cast(P.INT32 if signed else P.WORD, value)
        return P.from_int32(value, signed)

    def from_pair(self, value, signed: bool, dst: DataType):
        """A value of the other type `dst` from a pair."""
        if dst.code == "bool":
            return E.Not(P.equal(value, P.constant(0)))
        if dst.code == "float":
            if dst.bits == 64:   # (where the device has float64)
                return P.to_float64(value, signed)
            f = P.to_float32(value, signed)
            return f if dst.bits == 32 else E.Cast(dst, f)
        low = P.lo(value)
        return low if dst == P.WORD else E.Cast(dst, low)  # integer casts keep the low bits

    def visit_Select(self, op):
        if not is_wide(op.dtype):
            return self.generic_visit(op)
        self.scalar(op.dtype)
        return E.Select(self.visit(op.condition), self.visit(op.true_value),
                        self.visit(op.false_value))

    def visit_Call(self, op):
        wide = is_wide(op.dtype) or any(is_wide(a.dtype) for a in op.args)
        if not wide:
            return self.generic_visit(op)
        name = op.op
        if is_atomic(name) and is_wide(op.dtype):
            self.refuse(f"the old value of T.{name} on the {op.dtype} buffer "
                        f"{op.args[0].buffer.name!r} (a 64-bit atomic is emulated as a statement "
                        "only: its two words are updated separately, so no old value is exact)")
        if name in _BITWISE and is_wide(op.dtype):
            self.scalar(op.dtype)
            return P.bitwise(name, *(self.visit(a) for a in op.args))
        if name in ("shift_left", "shift_right") and is_wide(op.dtype):
            self.scalar(op.dtype)
            a, s = op.args
            value, amount = self.visit(a), self.visit(s)
            if not is_wide(s.dtype):
                amount = self.to_pair(amount, s.dtype, s.dtype.code == "int")
            if name == "shift_left":
                return P.shift_left(value, amount)
            return P.shift_right(value, amount, op.dtype.code == "int")
        if name in ("popcount", "clz", "ctz", "fabs") and is_wide(op.dtype):
            self.scalar(op.dtype)
            return P.bit_count(name, self.visit(op.args[0])) if name != "fabs" else \
                P.absolute(self.visit(op.args[0]), op.dtype.code == "int")
        if name == "reinterpret":
            src = op.args[0].dtype
            if _pair_bits(src) and _pair_bits(op.dtype):   # the same 64 bits
                value = self.visit(op.args[0])
                if is_wide(src) and is_wide(op.dtype):
                    return value
                if is_wide(src):   # the bits of its words as a vector (float32x2, int16x4...)
                    return value if op.dtype == P.PAIR else E.Call(op.dtype, name, (value,))
                return value if src == P.PAIR else E.Call(P.PAIR, name, (value,))
        if name == "if_then_else" and is_wide(op.dtype):
            self.scalar(op.dtype)
            return E.Call(P.PAIR, name, tuple(self.visit(a) for a in op.args))
        self.refuse(f"T.{name} on {', '.join(str(a.dtype) for a in op.args) or op.dtype} "
                    f"giving {op.dtype}")
        return op  # unreachable: refuse raises

    def visit_Let(self, op):
        """The same rewritten let for every occurrence of one let node: the input may share a
        let between several places (one binding, by identity), and so must the output."""
        if is_wide(op.var.dtype):
            self.scalar(op.var.dtype)
        done = self.lets.get(id(op))
        if done is None:
            done = self.lets[id(op)] = (op, self.generic_visit(op))
        return done[1]


@dataclass(frozen=True)
class EmulateInt64(Pass):
    """Remove every 64-bit integer for devices without int64 (see the module docstring)."""

    def transform(self, func):
        """Rewrite 64-bit integer values into word pairs and 64-bit buffers into uint32x2 ones."""
        if not _mentions_wide(func):
            return func
        func = L.scalarize(func)   # 64-bit vectors: lane by lane, in int64 scalars
        rw = _Rewriter(func.name, _atomic_targets(func))
        for v in func.size_vars:
            if is_wide(v.dtype):
                rw.sizes[v] = E.Var(v.name, P.INT32)
                rw.loops[v] = P.from_int32(rw.sizes[v], True)
        params, buffer_map, high_words = [], {}, []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is None:
                if is_wide(p.dtype):   # two words: the low one here, the high one at the end
                    high_words.append(self.scalar_param(rw, p))
                params.append(rw.vars[p] if p in rw.vars else rw.visit_Var(p))
                continue
            new_buf = rw.visit_buffer(buf)
            data = new_buf.data if p is buf.data else rw.visit_Var(p)
            params.append(data)
            buffer_map[data] = new_buf
        body = rw.visit(func.body)
        return replace(func, params=(*params, *high_words), body=body, buffer_map=buffer_map)

    @staticmethod
    def scalar_param(rw: _Rewriter, p: E.Var) -> E.Var:
        """A scalar int64 (uint64) parameter becomes two uint32 parameters of its name: its low
        word in its place, and its high word, returned, which goes after all the others (a
        call binds the user's parameters by position; the launcher fills both push-constant
        words from the one value, vkir.driver.kernel_values)."""
        rw.scalar(p.dtype)
        low, high = E.Var(p.name, P.WORD), E.Var(p.name, P.WORD)
        rw.vars[p] = low
        rw.loops[p] = P.pair(low, high)
        return high


def _identical(old, new) -> bool:
    """Whether `new` is `old` (element by element for tuples)."""
    if isinstance(old, tuple):
        return len(old) == len(new) and all(a is b for a, b in zip(old, new))
    return old is new


def _power_of_two(value) -> int | None:
    """k where `value` is the constant 2**k (k < 63), else None."""
    if isinstance(value, E.IntImm) and value.value > 0 and value.value & (value.value - 1) == 0 \
            and value.value < 2 ** 63:
        return value.value.bit_length() - 1
    return None


def _pair_bits(dt) -> bool:
    """Whether `dt` is a 64-bit integer scalar or a vector of 64 bits in all (int32x2,
    float32x2, float16x4...): the types whose bits a pair holds, or reinterprets, as they are."""
    if not isinstance(dt, DataType):
        return False
    if dt.lanes == 1:
        return dt.code in ("int", "uint") and dt.bits == 64
    return dt.code in ("int", "uint", "float") and dt.bits * dt.lanes == 64


def _doubled(e: E.PrimExpr) -> E.PrimExpr:
    """2 * e (folded for a constant)."""
    if isinstance(e, E.IntImm):
        return E.IntImm(e.dtype, 2 * e.value)
    return E.Mul(e, E.IntImm(e.dtype, 2))


def _atomic_targets(func) -> frozenset:
    """Data vars of the buffers that a 64-bit atomic updates (held as uint32 words)."""
    return frozenset(node.args[0].buffer.data for node in walk(func.body)
                     if isinstance(node, E.Call) and is_atomic(node.op) and is_wide(node.dtype))


def _mentions_wide(func) -> bool:
    """Whether any expression, variable or buffer of `func` has a 64-bit integer type."""
    for node in walk(func.body):
        dt = getattr(node, "dtype", None)
        if is_wide(dt) or _wide_pointer(dt):
            return True
        if isinstance(node, (S.AllocBuffer, S.DeclBuffer)) and is_wide(node.buffer.dtype):
            return True
        if isinstance(node, S.For) and is_wide(node.loop_var.dtype):
            return True
    return any(is_wide(p.dtype) or is_wide(getattr(func.buffer_map.get(p), "dtype", None))
               for p in func.params) or any(is_wide(v.dtype) for v in func.size_vars)
