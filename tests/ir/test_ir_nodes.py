"""Basic IR unit tests: DataType parse/print, the N*M lane rule (the table row by row),
walk order, and the Visitor/Mutator functors."""

import pytest

import vkir
from vkir import ir
from vkir.ir import DataType, PointerType, walk


# ---------------------------------------------------------------------------------------------
# DataType

@pytest.mark.parametrize("text, code, bits, lanes", [
    ("int8", "int", 8, 1), ("int16", "int", 16, 1), ("int32", "int", 32, 1), ("int64", "int", 64, 1),
    ("uint8", "uint", 8, 1), ("uint32", "uint", 32, 1), ("float16", "float", 16, 1),
    ("float32", "float", 32, 1), ("float64", "float", 64, 1), ("bool", "bool", 1, 1),
    ("handle", "handle", 64, 1), ("float32x4", "float", 32, 4), ("int8x16", "int", 8, 16),
    ("boolx4", "bool", 1, 4), ("float16x2", "float", 16, 2),
])
def test_dtype_parse_and_print(text, code, bits, lanes):
    dt = DataType.parse(text)
    assert (dt.code, dt.bits, dt.lanes) == (code, bits, lanes)
    assert str(dt) == text
    assert DataType.parse(str(dt)) == dt


@pytest.mark.parametrize("bad", ["float31", "int", "int7", "float8", "bool8", "x4", "float32x0",
                                 "complex64", "", "float32x", "Float32"])
def test_dtype_rejects_invalid(bad):
    with pytest.raises(ValueError):
        DataType.parse(bad)


def test_dtype_helpers():
    f4 = DataType.parse("float32x4")
    assert f4.element_of() == DataType.parse("float32")
    assert f4.with_lanes(8) == DataType.parse("float32x8")
    assert f4.is_vector and f4.is_float and not f4.is_scalar
    assert DataType.parse("uint8").is_integer and DataType.parse("uint8").is_uint
    assert DataType.parse("bool").bytes == 1 and f4.bytes == 16
    assert str(PointerType(DataType.parse("float32x4"), "shared")) == "float32x4* shared"


# ---------------------------------------------------------------------------------------------
# the N*M lane rule (RFC "Proposed semantics" table): element lanes M x index lanes N


def _buffer(elem):
    return ir.decl_buffer((64,), elem, "A")


@pytest.mark.parametrize("elem, index, expect", [
    # scalar elements
    ("float32", lambda: ir.IntImm("int32", 3), "float32"),                      # scalar index
    ("float32", lambda: ir.Ramp(0, 1, 4), "float32x4"),                          # ramp stride 1
    ("float32", lambda: ir.Ramp(0, 2, 4), "float32x4"),                          # other vector
    ("float32", lambda: ir.Broadcast(ir.IntImm("int32", 1), 4), "float32x4"),   # other vector
    # vector elements (M = 4)
    ("float32x4", lambda: ir.IntImm("int32", 3), "float32x4"),                  # M lanes
    ("float32x4", lambda: ir.Ramp(0, 1, 2), "float32x8"),                        # N*M lanes
    ("float32x4", lambda: ir.Ramp(0, 3, 4), "float32x16"),                       # N*M lanes
    ("float32x4", lambda: ir.Var("v", "int32x2"), "float32x8"),                  # N*M lanes
    ("int8x4", lambda: ir.Ramp(0, 1, 4), "int8x16"),
    ("float16x2", lambda: ir.IntImm("int32", 0), "float16x2"),
])
def test_lane_table_row(elem, index, expect):
    A = _buffer(elem)
    load = ir.BufferLoad(A, (index(),))
    assert load.dtype == DataType.parse(expect)
    store = ir.BufferStore(A, 0, (index(),))  # a literal value takes the access dtype
    assert store.value.dtype == DataType.parse(expect)


def test_lane_rule_only_last_index_counts_and_scripts_agree():
    A = ir.decl_buffer((4, 16), "float32x2", "A")
    assert ir.BufferLoad(A, (1, ir.Ramp(0, 1, 4))).dtype == DataType.parse("float32x8")
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32x4")):
    A[T.ramp(0, 1, 4)] = A[T.ramp(4, 1, 4)]
    B[T.ramp(0, 1, 2)] = B[T.ramp(2, 1, 2)]
    B[0] = B[1]
    A[0] = A[1]
''')
    dts = [str(s.value.dtype) for s in f.body.seq]
    assert dts == ["float32x4", "float32x8", "float32x4", "float32"]


# ---------------------------------------------------------------------------------------------
# node basics

def test_binary_ops_and_comparisons_dtypes():
    x = ir.Var("x", "float16x4")
    assert ir.Add(x, x).dtype == DataType.parse("float16x4")
    assert ir.LT(x, x).dtype == DataType.parse("boolx4")
    assert (x + 1.0).b == ir.Broadcast(ir.FloatImm("float16", 1.0), 4)
    assert ir.Cast("int32x4", x).dtype == DataType.parse("int32x4")
    assert ir.Ramp(0, 1, 8).dtype == DataType.parse("int32x8")
    assert ir.Broadcast(ir.Var("y", "float32x2"), 2).dtype == DataType.parse("float32x4")
    assert ir.Shuffle((x, x), (0, 5, 7)).dtype == DataType.parse("float16x3")


def test_vars_and_buffers_compare_by_identity_others_by_value():
    a, b = ir.Var("x"), ir.Var("x")
    assert a != b and a == a
    assert ir.Add(a, 1) == ir.Add(a, 1) and ir.Add(a, 1) != ir.Add(b, 1)
    assert hash(ir.IntImm("int32", 3)) == hash(ir.IntImm("int32", 3))


def test_nodes_are_immutable():
    e = ir.Add(ir.Var("x"), 1)
    with pytest.raises(AttributeError):
        e.a = ir.Var("y")


# ---------------------------------------------------------------------------------------------
# walk, Visitor, Mutator

def _sample():
    return vkir.from_script('''
def f(A: T.Buffer((8,), "int32"), n: T.int32):
    for i in T.serial(n):
        A[i] = A[i] + i * 2
    x = n - 1
    A[0] = x
''')


def test_walk_preorder_source_order():
    f = _sample()
    kinds = [type(node).__name__ for node in walk(f.body)]
    assert kinds == ["SeqStmt", "For", "Var", "IntImm", "Var", "BufferStore", "Add", "BufferLoad",
                     "Var", "Mul", "Var", "IntImm", "Var", "LetStmt", "Var", "Sub", "Var",
                     "IntImm", "BufferStore", "Var", "IntImm"]
    assert next(iter(walk(f))) is f


def test_visitor_counts_and_sees_buffers():
    class Count(ir.Visitor):
        def __init__(self):
            self.loads, self.buffers = 0, []

        def visit_BufferLoad(self, node):
            self.loads += 1
            self.generic_visit(node)

        def visit_buffer(self, buffer):
            self.buffers.append(buffer.name)

    c = Count()
    c.visit(_sample().body)
    assert c.loads == 1 and c.buffers == ["A", "A", "A"]


def test_mutator_rebuilds_only_changed_parts():
    f = _sample()

    class Double(ir.Mutator):
        def visit_IntImm(self, node):
            return ir.IntImm(node.dtype, node.value * 2) if node.value == 2 else node

    out = Double().visit(f.body)
    assert out is not f.body
    loop = out.seq[0]
    assert loop.body.value.b.b == ir.IntImm("int32", 4)
    assert out.seq[1] is f.body.seq[1]  # untouched subtree is shared
    assert ir.Mutator().visit(f.body) is f.body
    g = f.with_body(out)
    assert not vkir.structural_equal(g, f)
    assert vkir.structural_equal(vkir.from_script(g.script()), g)


def test_mutator_substitutes_buffers():
    f = _sample()
    a = f.buffer_map[f.params[0]]
    b = ir.decl_buffer((8,), "int32", "B")

    class Swap(ir.Mutator):
        def visit_buffer(self, buffer):
            return b if buffer is a else buffer

    out = Swap().visit(f.body)
    assert all(n.buffer is b for n in walk(out) if isinstance(n, (ir.BufferLoad, ir.BufferStore)))
