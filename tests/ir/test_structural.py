"""structural_equal / assert_structural_equal: alpha-equivalence, free vars, readable diffs."""

import pytest

import vkir
from vkir import ir
from vkir.ir import stmt as S
from vkir.ir.structural import assert_structural_equal, structural_equal


def parse(text):
    return vkir.from_script(text)


ADD_ONE = '''
def {name}(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for {i} in T.serial(n):
        {x} = A[{i}] + 1.0
        B[{i}] = {x}
'''


def test_alpha_equivalent_functions_are_equal():
    f = parse(ADD_ONE.format(name="f", i="i", x="x"))
    g = parse(ADD_ONE.format(name="g", i="k", x="y"))
    assert structural_equal(f, g)
    assert_structural_equal(f, g)
    assert vkir.structural_equal(f, g) and vkir.ir.structural_equal(f, g)


def test_global_symbol_ignored_other_attrs_compared():
    f = parse(ADD_ONE.format(name="f", i="i", x="x"))
    assert structural_equal(f, f.with_attr("global_symbol", "other"))
    assert not structural_equal(f, f.with_attr("tir.noalias", True))


def test_two_parses_share_no_objects_but_are_equal():
    text = ADD_ONE.format(name="f", i="i", x="x")
    f, g = parse(text), parse(text)
    assert f.params[0] is not g.params[0]
    assert structural_equal(f, g)


def test_parameter_order_matters():
    f = parse('''
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    A[0] = B[0]
''')
    g = parse('''
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    B[0] = A[0]
''')
    assert not structural_equal(f, g)
    with pytest.raises(AssertionError, match=r"body\.buffer"):
        assert_structural_equal(f, g)


def test_size_vars_matched_by_first_occurrence():
    f = parse('''
def f(A: T.Buffer(("n", "m"), "float32")):
    A[0, 0] = T.cast(n, "float32")
''')
    g = parse('''
def f(A: T.Buffer(("p", "q"), "float32")):
    A[0, 0] = T.cast(p, "float32")
''')
    h = parse('''
def f(A: T.Buffer(("n", "m"), "float32")):
    A[0, 0] = T.cast(m, "float32")
''')
    assert structural_equal(f, g)
    assert not structural_equal(f, h)


def test_buffer_fields_compared():
    base = '''
def f(A: T.Buffer((4, {w}), "{dt}"{extra})):
    A[0, 0] = A[1, 1]
'''
    f = parse(base.format(w=8, dt="float32", extra=""))
    assert structural_equal(f, parse(base.format(w=8, dt="float32", extra="")))
    assert not structural_equal(f, parse(base.format(w=9, dt="float32", extra="")))
    assert not structural_equal(f, parse(base.format(w=8, dt="float16", extra="")))
    assert not structural_equal(f, parse(base.format(w=8, dt="float32", extra=", strides=(8, 1)")))
    assert not structural_equal(f, parse(base.format(w=8, dt="float32", extra=', scope="shared"')))
    with pytest.raises(AssertionError, match=r"at params\[0\]: variable .A. has type float32\* global"):
        assert_structural_equal(f, parse(base.format(w=8, dt="float16", extra="")))


def test_bound_vars_must_correspond_bijectively():
    f = parse('''
def f(A: T.Buffer((4,), "int32")):
    for i in T.serial(4):
        for j in T.serial(4):
            A[i] = j
''')
    g = parse('''
def f(A: T.Buffer((4,), "int32")):
    for i in T.serial(4):
        for j in T.serial(4):
            A[j] = i
''')
    assert not structural_equal(f, g)


def test_alias_vs_fresh_decl_buffer():
    f = parse('''
def f(A: T.Buffer((4,), "float32")):
    B = T.decl_buffer((1,), "float32x4", data=A.data)
    B[0] = B[0]
''')
    g = parse('''
def f(A: T.Buffer((4,), "float32")):
    B = T.decl_buffer((1,), "float32x4")
    B[0] = B[0]
''')
    assert structural_equal(f, parse(f.script()))
    assert not structural_equal(f, g)


def test_free_vars_in_bare_expressions():
    x, y = ir.Var("x", "int32"), ir.Var("y", "int32")
    assert structural_equal(x + 1, x + 1)
    assert not structural_equal(x + 1, y + 1)
    assert structural_equal(x + 1, y + 1, map_free_vars=True)
    assert not structural_equal(x + y, y + y, map_free_vars=True)  # x->y then y->y: not bijective
    z = ir.Var("z", "float32")
    assert not structural_equal(x, z, map_free_vars=True)  # dtypes differ


def test_bound_vs_free_variable():
    x, y = ir.Var("x", "int32"), ir.Var("y", "int32")
    a = ir.Let(x, 1, x + 1)
    b = ir.Let(y, 1, x + 1)  # body uses the free x, not the bound y
    assert structural_equal(a, ir.Let(y, 1, y + 1))
    assert not structural_equal(a, b)
    assert not structural_equal(ir.Let(x, 1, x), ir.Let(ir.Var("w", "int64"), 1, x))


def test_statements_and_seq_normalization():
    A = ir.decl_buffer((4,), "int32", "A")
    s1, s2, s3 = A.store(1, 0), A.store(2, 1), A.store(3, 2)
    assert structural_equal(ir.SeqStmt((s1, ir.SeqStmt((s2, s3)))), ir.SeqStmt((s1, s2, s3)))
    assert structural_equal(ir.SeqStmt((s1,)), s1)
    assert structural_equal(ir.SeqStmt((s1, ir.SeqStmt(()))), s1)
    assert not structural_equal(ir.SeqStmt((s1, s2)), ir.SeqStmt((s2, s1)))
    i, j = ir.Var("i", "int32"), ir.Var("j", "int32")
    assert structural_equal(ir.For(i, 0, 4, "serial", A.store(i, i)),
                            ir.For(j, 0, 4, "serial", A.store(j, j)))
    assert not structural_equal(ir.For(i, 0, 4, "serial", A.store(i, i)),
                                ir.For(j, 0, 4, "unrolled", A.store(j, j)))
    assert not structural_equal(ir.For(i, 0, 4, "serial", A.store(i, i), annotations={"a": 1}),
                                ir.For(j, 0, 4, "serial", A.store(j, j), annotations={"a": 2}))


def test_constants_exact():
    assert structural_equal(ir.FloatImm("float32", float("nan")), ir.FloatImm("float32", float("nan")))
    assert not structural_equal(ir.FloatImm("float32", 0.0), ir.FloatImm("float32", -0.0))
    assert not structural_equal(ir.FloatImm("float32", 1.0), ir.FloatImm("float16", 1.0))
    assert not structural_equal(ir.IntImm("int32", 1), ir.IntImm("int64", 1))
    assert not structural_equal(ir.IntImm("int32", 1), ir.FloatImm("float32", 1.0))
    assert not structural_equal(ir.Add(1, 2), ir.Sub(1, 2))


def test_alloc_buffers_alpha_equivalent():
    f = parse('''
def f(A: T.Buffer((4,), "float32")):
    S = T.alloc_buffer((4,), "float32", scope="shared")
    S[0] = A[0]
    A[1] = S[0]
''')
    g = parse(f.script().replace("S", "Shared"))
    assert structural_equal(f, g)
    h = parse(f.script().replace('scope="shared"', 'scope="local"'))
    assert not structural_equal(f, h)


def test_spans_ignored():
    a = ir.Add(ir.IntImm("int32", 1), 2, span=ir.Span("x.py", 1, 1))
    assert structural_equal(a, ir.Add(1, 2))


def test_assert_message_has_path_and_both_sides():
    f = parse('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        A[i] = A[i] * 2.0
''')
    g = parse('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        A[i] = A[i] * 3.0
''')
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(f, g)
    msg = str(info.value)
    assert "body.body.value.b.value" in msg
    assert "2.0 != 3.0" in msg
    assert "--- lhs ---\n2.0" in msg and "--- rhs ---\n3.0" in msg
    assert "-        A[i] = A[i] * 2.0\n+        A[i] = A[i] * 3.0" in msg  # whole-script diff


def test_assert_message_shows_statement_scripts():
    A = ir.decl_buffer((4,), "int32", "A")
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(S.seq(A.store(1, 0), A.store(2, 1)), S.seq(A.store(1, 0)))
    msg = str(info.value)
    assert "sequence of 2 statements != 1" in msg
    assert "A[0] = 1\nA[1] = 2" in msg


def test_pointer_cast_of_free_data_is_a_use_not_a_definition():
    A1 = ir.decl_buffer((16,), "float32", "A")
    A2 = ir.decl_buffer((16,), "float32", "A")
    V1 = ir.decl_buffer((4,), "float32x4", "V", data=A1.data)
    V2 = ir.decl_buffer((4,), "float32x4", "V", data=A2.data)
    s1 = ir.DeclBuffer(V1, V1.store(V1[1], 0))
    s2 = ir.DeclBuffer(V2, V2.store(V2[1], 0))
    assert not structural_equal(s1, s2)  # casts of two different free pointers
    assert structural_equal(s1, s2, map_free_vars=True)
    V3 = ir.decl_buffer((4,), "float32x4", "V", data=A1.data)
    assert structural_equal(s1, ir.DeclBuffer(V3, V3.store(V3[1], 0)))
