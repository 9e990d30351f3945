"""The explicit-cast checker: each typing rule of docs/language.md, passing and failing cases."""

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.analysis import verify_types
from vkir.ir import (Add, And, Broadcast, BufferStore, Call, Cast, DataType, DeclBuffer, For,
                     IfThenElse, IntImm, FloatImm, Let, LetStmt, PointerType, PrimFunc, Ramp,
                     Select, Shuffle, Var, decl_buffer)

F32, I32 = DataType.parse("float32"), DataType.parse("int32")


def func_of(body, *buffers, params=()):
    """A PrimFunc whose params are the buffers' data vars then `params`."""
    return PrimFunc(tuple(b.data for b in buffers) + tuple(params), body,
                    {b.data: b for b in buffers})


def fails(func, rule, *fragments, target=None):
    with pytest.raises(vkir.TypeCheckError) as info:
        verify_types(func, target=target)
    msg = str(info.value)
    assert msg.startswith(f"rule {rule} ("), msg
    for frag in fragments:
        assert frag in msg, msg
    return msg


# --------------------------------------------------------------------------------------------
# rule 1: access lanes, the lane table row by row


LANE_TABLE = [
    # element type, index kind, access type
    ("float32", "scalar", "float32"),
    ("float32", "ramp", "float32x4"),
    ("float32", "other", "float32x4"),
    ("float32x4", "scalar", "float32x4"),
    ("float32x4", "ramp", "float32x16"),
    ("float32x4", "other", "float32x16"),
]


def _index(kind, i):
    if kind == "scalar":
        return i
    if kind == "ramp":
        return Ramp(i * 4, 1, 4)
    return Ramp(i, 3, 4)  # a vector index that is not a stride-1 ramp


@pytest.mark.parametrize("elem,kind,access", LANE_TABLE)
def test_lane_table_row(elem, kind, access):
    a = decl_buffer((64,), elem, "a")
    b = decl_buffer((64,), elem, "b")
    i = Var("i")
    idx = _index(kind, i)
    load = a[idx]
    assert str(load.dtype) == access
    ok = func_of(For(i, 0, 4, "serial", BufferStore(b, load, (idx,))), a, b)
    assert verify_types(ok) is None
    # the old CUDA-style reading (index lanes only, or the bare element type) is rejected
    dt = DataType.parse(access)
    wrong = DataType.parse(elem).with_lanes(4) if dt.lanes != 4 else DataType.parse("float32")
    bad_value = Broadcast(FloatImm("float32", 1.0), wrong.lanes) if wrong.lanes > 1 \
        else FloatImm("float32", 1.0)
    bad = func_of(For(i, 0, 4, "serial", BufferStore(b, bad_value, (idx,))), a, b)
    fails(bad, 1, "access lanes", access, str(wrong))


def test_only_last_index_may_be_vector():
    a = decl_buffer((4, 4), "float32", "a")
    ok = func_of(BufferStore(a, Broadcast(FloatImm("float32", 0.0), 4), (0, Ramp(0, 1, 4))), a)
    verify_types(ok)
    bad = func_of(BufferStore(a, Broadcast(FloatImm("float32", 0.0), 4), (Ramp(0, 1, 4), 0)), a)
    fails(bad, 1, "only the last index", "int32x4")


def test_indices_must_be_integers_and_match_rank():
    a = decl_buffer((4,), "float32", "a")
    fails(func_of(BufferStore(a, FloatImm("float32", 0.0), (FloatImm("float32", 1.0),)), a), 1,
          "integer")
    fails(func_of(BufferStore(a, FloatImm("float32", 0.0), (0, 0)), a), 1, "2 indices")
    verify_types(func_of(BufferStore(a, FloatImm("float32", 0.0), (IntImm("int64", 1),)), a))


def test_store_value_must_match_exactly():
    a = decl_buffer((4,), "float16", "a")
    fails(func_of(BufferStore(a, FloatImm("float32", 0.0), (0,)), a), 1, "float16 vs float32")


# --------------------------------------------------------------------------------------------
# rule 2: pointer casts only as DeclBuffer


def test_decl_buffer_is_the_explicit_pointer_cast():
    a = decl_buffer((16,), "float32", "a")
    a4 = decl_buffer((4,), "float32x4", "a4", data=a.data)
    ai = decl_buffer((16,), "int32", "ai", data=a.data)
    body = DeclBuffer(a4, DeclBuffer(ai, ir.seq(
        BufferStore(a4, a4[1], (0,)), BufferStore(ai, ai[2], (3,)))))
    assert verify_types(func_of(body, a)) is None
    # ai read without its DeclBuffer is the implicit pointer cast that rule 2 refuses
    fails(func_of(BufferStore(a, ai[2], (3,)), a), 2)


def test_buffer_map_pointer_cast_is_implicit():
    data = Var("a", PointerType(F32))
    a = ir.Buffer("a", data, "float32x4", (4,))
    fails(PrimFunc((data,), ir.Evaluate(0), {data: a}), 2, "implicit pointer cast", "float32",
          "float32x4")


def test_alloc_buffer_pointer_cast_is_implicit():
    data = Var("s", PointerType(I32, "shared"))
    s = ir.Buffer("s", data, "float32", (4,), scope="shared")
    fails(func_of(ir.AllocBuffer(s, BufferStore(s, FloatImm("float32", 0.0), (0,)))), 2,
          "implicit pointer cast", "int32 vs float32")
    ok = decl_buffer((4,), "float32", "s", scope="shared")
    verify_types(func_of(ir.AllocBuffer(ok, BufferStore(ok, FloatImm("float32", 0.0), (0,)))))


def test_undeclared_buffer_casting_its_data_is_implicit():
    a = decl_buffer((16,), "float32", "a")
    alias = decl_buffer((16,), "int32", "alias", data=a.data)
    fails(func_of(BufferStore(a, Cast("float32", alias[0]), (0,)), a), 2, "implicit pointer cast")


def test_pointer_cast_cannot_change_scope():
    a = decl_buffer((16,), "float32", "a")
    s = ir.Buffer("s", a.data, "float32", (16,), scope="shared")
    fails(func_of(DeclBuffer(s, ir.Evaluate(0)), a), 2, "scope")


# --------------------------------------------------------------------------------------------
# rule 3: operands have identical types


x, y = Var("x"), Var("y")
fx, fy = Var("fx", "float32"), Var("fy", "float32")
p, q = Var("p", "bool"), Var("q", "bool")
v4 = Var("v4", "int32x4")
PARAMS = (x, y, fx, fy, p, q, v4)


def _expr_func(e):
    out = decl_buffer((1,), "int32", "out")
    return func_of(ir.Evaluate(e), out, params=PARAMS)


@pytest.mark.parametrize("good,bad,fragment", [
    (Add(x, y), Add(x, fx), "int32 vs float32"),
    (Add(v4, v4), Add(v4, x), "int32x4 vs int32"),
    (Add(x, y), Add(x, IntImm("int64", 1)), "int32 vs int64"),
    (And(p, q), And(x, y), "needs bool"),
    (ir.Or(p, q), ir.Or(p, x), "bool vs int32"),
    (ir.EQ(p, q), Add(p, q), "arithmetic"),
    (ir.Not(p), ir.Not(x), "bool"),
    (Call("int32", "bitwise_and", (x, y)), Call("float32", "bitwise_and", (fx, fy)), "integer"),
    (Call("int32", "shift_left", (x, y)), Call("int32", "shift_left", (x, IntImm("int8", 1))),
     "int32 vs int8"),
    (Select(p, x, y), Select(x, x, y), "condition"),
    (Select(ir.LT(v4, v4), v4, v4), Select(ir.LT(Ramp(0, 1, 2), Ramp(0, 1, 2)), v4, v4),
     "boolx2"),
    (Select(p, x, y), Select(p, x, fx), "int32 vs float32"),
    (Ramp(x, 1, 4), Ramp(x, IntImm("int64", 1), 4), "int32 vs int64"),
    (Ramp(x, 1, 4), Ramp(v4, Broadcast(1, 4), 2), "scalars"),
    (Let(Var("t"), x, Var("u")) if False else ir.Let(Var("t"), x, x), ir.Let(Var("t2"), fx, x),
     "int32 vs float32"),
    (Call("float32", "exp", (fx,)), Call("int32", "exp", (x,)), "float"),
    (Call("float32", "pow", (fx, fy)), Call("float32", "pow", (fx,)), "takes 2 arguments"),
    (Call("float32", "exp", (fx,)), Call("float64", "exp", (fx,)), "float32 vs float64"),
    (Call("bool", "isnan", (fx,)), Call("float32", "isnan", (fx,)), "bool vs float32"),
    (Call("int32", "if_then_else", (p, x, y)), Call("int32", "if_then_else", (x, x, y)), "bool"),
    (Shuffle((v4, v4), (0, 7)), Shuffle((v4, v4), (0, 8)), "out of range"),
    (Shuffle((v4, x), (0, 4)), Shuffle((v4, fx), (0, 4)), "element types"),
])
def test_operand_rule_pairs(good, bad, fragment):
    assert verify_types(_expr_func(good)) is None
    fails(_expr_func(bad), 3, "identical operand types", fragment)


def test_let_stmt_value_type():
    t = Var("t", "float32")
    verify_types(_expr_func(0).with_body(LetStmt(t, fx, ir.Evaluate(t))))
    fails(_expr_func(0).with_body(LetStmt(t, x, ir.Evaluate(t))), 3, "float32 vs int32")


def test_loop_bounds_have_the_loop_var_type():
    i = Var("i")
    verify_types(_expr_func(0).with_body(For(i, 0, x, "serial", ir.Evaluate(i))))
    i64 = Var("j", "int64")
    bad = For(i64, IntImm("int64", 0), IntImm("int64", 4), "serial", ir.Evaluate(0))
    verify_types(_expr_func(0).with_body(bad))
    bad = For(i64, IntImm("int64", 0), x, "serial", ir.Evaluate(0))
    fails(_expr_func(0).with_body(bad), 3, "extent", "int64 vs int32")
    fi = Var("fi", "float32")
    fails(_expr_func(0).with_body(For(fi, fx, fy, "serial", ir.Evaluate(0))), 3, "integer scalar")


def test_if_condition_is_a_bool_scalar():
    verify_types(_expr_func(0).with_body(IfThenElse(p, ir.Evaluate(0))))
    fails(_expr_func(0).with_body(IfThenElse(x, ir.Evaluate(0))), 3, "int32 vs bool")
    fails(_expr_func(0).with_body(IfThenElse(ir.LT(v4, v4), ir.Evaluate(0))), 3, "boolx4 vs bool")


# --------------------------------------------------------------------------------------------
# rule 4: casts keep lanes; bool storage on Vulkan


def test_cast_keeps_lanes():
    verify_types(_expr_func(Cast("float32x4", v4)))
    fails(_expr_func(Cast("float32", v4)), 4, "lane count", "int32x4 vs float32")


def test_reinterpret_keeps_bit_width():
    verify_types(_expr_func(Call("float32", "reinterpret", (x,))))
    verify_types(_expr_func(Call("int64x2", "reinterpret", (v4,))))
    fails(_expr_func(Call("int64", "reinterpret", (x,))), 4, "bit width")


@T.prim_func
def bool_mask(a: T.Buffer((8,), "float32"), m: T.Buffer((8,), "bool")):
    for i in T.serial(8):
        m[i] = a[i] > T.float32(0)


@T.prim_func
def int8_mask(a: T.Buffer((8,), "float32"), m: T.Buffer((8,), "int8")):
    s = T.alloc_buffer((8,), "bool", scope="shared")
    for i in T.serial(8):
        s[i] = a[i] > T.float32(0)
        m[i] = T.cast(s[i], "int8")


def test_bool_buffers_on_vulkan():
    verify_types(bool_mask)
    msg = fails(bool_mask, 4, "bool buffer m", "bool vs int8", target="vulkan")
    assert "BoolToInt8" in msg
    verify_types(int8_mask, target="vulkan")  # bool in shared memory and int8 storage are fine


# --------------------------------------------------------------------------------------------
# rule 5: nothing else implicit


def test_constants_fit_their_type():
    verify_types(_expr_func(IntImm("int8", 127)))
    fails(_expr_func(IntImm("int8", 300)), 5, "does not fit")
    fails(_expr_func(IntImm("float32", 1)), 5, "integer constant")


def test_pointers_are_not_values():
    a = decl_buffer((4,), "int32", "a")
    fails(func_of(BufferStore(a, Add(a.data, ir.const(1)), (0,)), a), 5,
          "pointer a used as a value")


def test_async_in_flight_count_is_an_integer():
    ok = ir.AsyncWaitQueue(0, 1, ir.Evaluate(0))
    verify_types(_expr_func(0).with_body(ok))
    bad = ir.AsyncWaitQueue(0, fx, ir.Evaluate(0))
    fails(_expr_func(0).with_body(bad), 5, "in-flight")


# --------------------------------------------------------------------------------------------
# messages


SCRIPT = '''
@T.prim_func
def k(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "int32")):
    for i in T.serial(8):
        b[i] = a[i] * T.float32(2)
'''


def test_message_names_rule_node_types_and_span():
    f = vkir.from_script(SCRIPT)
    msg = fails(f, 1, "access lanes", "int32 vs float32", "in `b[i] = a[i] * 2.0` at", ":5:")
    assert "b[i] = a[i] * T.float32(2)" in msg  # the source line


def test_well_typed_scripts_pass():
    from vkir.analysis import verify_well_formed

    for f in (bool_mask, int8_mask):
        assert verify_types(f) is None
        assert verify_well_formed(f) is None


def test_interpreter_agrees_on_checked_cast_kernel():
    a = np.array([1.0, -1.0, 0.0, 2.0, -3.0, 5.0, -0.5, 0.5], np.float32)
    m = np.zeros(8, np.int8)
    vkir.interpret(int8_mask, a, m)
    np.testing.assert_array_equal(m, (a > 0).astype(np.int8))
