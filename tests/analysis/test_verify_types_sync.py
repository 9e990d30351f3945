"""The explicit-cast checker on atomics and subgroup operations: a supported element dtype on a
global or shared buffer, values of exactly the element's dtype, bool predicates, uint32x4
ballots, int32 lanes."""

import pytest

from vkir import ir
from vkir.analysis import verify_types
from vkir.errors import TypeCheckError


def _func(value, buffers):
    """A kernel evaluating `value` inside one threadIdx loop (tx in scope as `TX`)."""
    params = [b.data for b in buffers]
    body = ir.For(TX, 0, 8, "thread_binding", ir.Evaluate(value), thread="threadIdx.x")
    return ir.PrimFunc(params, body, {b.data: b for b in buffers})


TX = ir.Var("tx", "int32")
A = {dt: ir.decl_buffer((8,), dt, f"a_{dt}") for dt in
     ("int32", "uint32", "int64", "uint64", "float32", "float16", "int16", "float64")}


def load(dt, index=TX):
    return ir.BufferLoad(A[dt], (index,))


def refusal(func):
    """The checker's message for `func`, or None where it accepts it."""
    try:
        verify_types(func)
    except TypeCheckError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", ["atomic_add", "atomic_sub", "atomic_min", "atomic_max",
                                "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange"])
def test_integer_atomics_check(op, dt):
    assert refusal(_func(ir.Call(dt, op, (load(dt), ir.const(1, dt))), [A[dt]])) is None
    # the same call with a value of another type is refused: the accepted one was checked
    other = "int32" if dt != "int32" else "int64"
    assert "must have the element's type" in refusal(
        _func(ir.Call(dt, op, (load(dt), ir.const(1, other))), [A[dt]]))


@pytest.mark.parametrize("op", ["atomic_add", "atomic_min", "atomic_max"])
def test_float32_add_min_max_check(op):
    assert refusal(_func(ir.Call("float32", op, (load("float32"), ir.const(1.0, "float32"))),
                         [A["float32"]])) is None
    assert "holds float16" in refusal(
        _func(ir.Call("float16", op, (load("float16"), ir.const(1.0, "float16"))), [A["float16"]]))


@pytest.mark.parametrize("value,message", [
    (ir.Call("float32", "atomic_sub", (load("float32"), ir.const(1.0, "float32"))),
     "atomic_sub needs a buffer element of type int32, uint32, int64, uint64; a_float32 holds"),
    (ir.Call("float16", "atomic_add", (load("float16"), ir.const(1.0, "float16"))),
     "holds float16"),
    (ir.Call("int16", "atomic_add", (load("int16"), ir.const(1, "int16"))), "holds int16"),
    (ir.Call("int32", "atomic_add", (load("int32"), ir.const(1, "int64"))),
     "must have the element's type"),
    (ir.Call("int64", "atomic_add", (load("int32"), ir.const(1))), "returns the element's old"),
    (ir.Call("int32", "atomic_add", (ir.const(3), ir.const(1))), "must be a buffer element"),
    (ir.Call("int32", "atomic_compare_exchange", (load("int32"), ir.const(1), ir.const(1.0, "float32"))),
     "must have the element's type"),
    (ir.Call("int32x4", "atomic_add", (load("int32", ir.Ramp(0, 1, 4)),
                                       ir.Broadcast(ir.const(1), 4))), "one scalar element"),
])
def test_atomic_errors(value, message):
    buffers = [b for b in A.values()]
    with pytest.raises(TypeCheckError, match=message):
        verify_types(_func(value, buffers))


def test_local_buffer_atomic_is_refused():
    loc = ir.decl_buffer((4,), "int32", "loc", scope="local")
    call = ir.Call("int32", "atomic_add", (ir.BufferLoad(loc, (ir.const(0),)), ir.const(1)))
    body = ir.AllocBuffer(loc, ir.For(TX, 0, 8, "thread_binding", ir.Evaluate(call),
                                      thread="threadIdx.x"))
    with pytest.raises(TypeCheckError, match="needs a \"global\" or \"shared\" buffer"):
        verify_types(ir.PrimFunc([], body, {}))


BOOL = ir.GT(TX, ir.const(2))


@pytest.mark.parametrize("value", [
    ir.Call("uint32x4", "subgroup_ballot", (BOOL,)),
    ir.Call("bool", "subgroup_all", (BOOL,)),
    ir.Call("int32", "subgroup_size", ()),
    ir.Call("bool", "subgroup_elect", ()),
    ir.Call("float32", "subgroup_exclusive_min", (load("float32"),)),
    ir.Call("bool", "subgroup_xor", (BOOL,)),
    ir.Call("float32", "subgroup_shuffle_xor", (load("float32"), ir.const(1, "uint32"))),
    ir.Call("int32x4", "subgroup_add", (ir.Broadcast(TX, 4),)),
])
def test_subgroup_ops_check(value):
    assert refusal(_func(value, list(A.values()))) is None


@pytest.mark.parametrize("value,message", [
    (ir.Call("uint32", "subgroup_ballot", (BOOL,)), "subgroup_ballot returns uint32x4"),
    (ir.Call("uint32x4", "subgroup_ballot", (TX,)), "predicate of subgroup_ballot must be"),
    (ir.Call("bool", "subgroup_any", (ir.Broadcast(BOOL, 2),)), "must be a scalar bool"),
    (ir.Call("float32", "subgroup_and", (load("float32"),)), "integer or bool operand"),
    (ir.Call("bool", "subgroup_add", (BOOL,)), "needs a numeric operand"),
    (ir.Call("int32", "subgroup_shuffle", (TX, ir.const(1.0, "float32"))), "must be a scalar int32"),
    (ir.Call("int64", "subgroup_size", ()), "subgroup_size returns int32"),
    (ir.Call("int32", "subgroup_add", (TX, TX)), "takes 1 arguments"),
])
def test_subgroup_errors(value, message):
    with pytest.raises(TypeCheckError, match=message):
        verify_types(_func(value, list(A.values())))
