"""print -> parse round trip: `from_script(f.script())` is structurally equal to `f` for every
construct, and printing is deterministic (printing the re-parsed function gives the same text)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

import vkir
from vkir import ir
from vkir.tools.demo import VADD_SOURCE
from vkir.ir import stmt as S

SCRIPTS = {
    "vadd": VADD_SOURCE,
    "reduce_shared": '''
def reduce(A: T.Buffer((256,), "float32"), out: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        S = T.alloc_buffer((64,), "float32", scope="shared")
        S[tx] = A[tx] + A[tx + 64] + A[tx + 128] + A[tx + 192]
        T.barrier()
        for k in T.unroll(6):
            s = T.shift_right(32, k)
            if tx < s:
                S[tx] = S[tx] + S[tx + s]
            T.barrier()
        if tx == 0:
            out[0] = S[0]
''',
    "buffers": '''
def f(A: T.Buffer(("n", "m"), "float32x4", strides=("m", 1), elem_offset="off"),
      B: T.Buffer((8,), "int8"), k: T.int32, C: T.Buffer((k, 2), "float16", scope="shared")):
    L = T.alloc_buffer((4,), "int32", scope="local")
    G = T.alloc_buffer((n * 2,), "float32", strides=(1,), elem_offset=2)
    L[0] = n + m + off
    D = T.decl_buffer((n * m * 4,), "float32", data=A.data)
    E = T.decl_buffer((2,), "int32x4", data=L.data, scope="local")
    P = T.decl_buffer((3,), "uint8")
    D[0] = G[1]
''',
    "loops": '''
def f(A: T.Buffer((64, 64), "float32"), n: T.int32):
    for i, j in T.grid(8, n):
        A[i, j] = 0.0
    for i in T.serial(2, 10, annotations={"software_pipeline_stage": [0, 0, 1],
                                          "software_pipeline_order": [0, 1, 2],
                                          "software_pipeline_async_stages": [0], "x": 1.5,
                                          "nested": {"a": [1, [2, "s"]], "b": True}}):
        for j in T.vectorized(4):
            A[i, j] = 1.0
    for i in T.serial(n, n + 8):
        for j in T.serial(2, n):
            for k in T.unroll(n, 2 * n):
                A[i, j] = 2.0
    for t in T.thread_binding(4, 36, "threadIdx.z", annotations={"a": 1}):
        A[t, 0] = 3.0
    for i in T.serial(T.int64(4)):
        for j in T.serial(T.int64(1), T.int64(5)):
            A[i, j] = 4.0
    for i in T.serial(4):
        for j in T.serial(i):
            A[i, j] = 5.0
''',
    "control": '''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    if n < 1:
        A[0] = 1
    elif n < 2:
        if n == 1:
            pass
        else:
            A[0] = 2
    elif n > 5:
        T.evaluate(0)
    else:
        A[0] = 3
    with T.async_commit_queue(0):
        with T.async_scope():
            A[1] = 1
    with T.async_commit_queue(1):
        with T.async_scope():
            A[2] = 2
    with T.async_wait_queue(0, 1):
        with T.async_wait_queue(1, n - 1):
            T.barrier()
    T.evaluate(T.call("int32", "tvm_side_effect", n))
''',
    "lets": '''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    with T.let(n + 1) as x:
        A[x] = x
    with T.let(T.int64(2), dtype="int64") as w:
        A[0] = T.cast(w, "int32")
    with T.alloc_buffer((4,), "int32", scope="local") as L:
        L[0] = 1
    with T.decl_buffer((4,), "int16", data=A.data) as H:
        H[0] = T.int16(1)
    y: T.int64 = 5
    z = T.let(q := n * 2, q + T.let(r := q + 1, r * q))
    u = T.let(v := 2, v + 1, dtype="int64")
    A[1] = T.cast(y + u, "int32") + z
''',
    "expressions": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"), V: T.Buffer((4,), "float32x4"),
      H: T.Buffer((8,), "float16"), U: T.Buffer((8,), "uint8"), Q: T.Buffer((8,), "int64"),
      Bo: T.Buffer((8,), "bool"), n: T.int32, x: T.float32):
    A[0] = x * 2.0 + T.exp(x) - -1.5 / (x - 1.0) * (x + 2.5e-10)
    B[0] = n // 3 % 4 + T.truncdiv(n, -3) + T.truncmod(n, 3) + T.floordiv(n, 2) + T.floormod(-7, n)
    B[1] = (n & 3 | n ^ 1) << 2 >> (n & 1) + ~n + -n + -(n + 1) + (n - 1) * -(n // 2)
    B[2] = T.min(n, 1) + T.max(2, n) + T.min(1, 2) + T.max(T.int32(1), 2)
    Bo[0] = n < 1 and not n >= 2 or n == 3 and (n != 4 or n <= 5) or not (n > 6)
    Bo[1] = (n < 1) == (n > 2)
    Bo[2] = True
    Bo[3] = T.isnan(x) or T.isinf(x)
    A[1] = T.select(n > 0, x, 0.0) + T.if_then_else(n > 0, A[n], 1.0) + T.select(True, 1.0, 2.0)
    A[2] = T.cast(n, "float32") + T.reinterpret(n, "float32") + T.cast(T.cast(x, "float16"), "float32")
    V[0] = A[T.ramp(0, 1, 4)] + T.broadcast(1.0, 4) * T.broadcast(x, 4)
    V[1] = T.shuffle([V[0], V[n]], [0, 5, 2, 7])
    V[T.ramp(n, 1, 1)] = V[1]
    A[T.ramp(n * 4, 2, 4)] = T.broadcast(T.float32("inf"), 4) + T.broadcast(T.float32("-inf"), 4)
    A[3] = T.float32("nan") + T.pow(x, 2.0) + T.fma(x, 2.0, 1.0) + T.fabs(x) + T.sqrt(x)
    A[4] = T.rsqrt(x) + T.tanh(x) + T.log(x) + T.floor(x) + T.ceil(x) + T.sin(x) + T.cos(x)
    A[5] = T.erf(x) + T.exp2(x) + T.log2(x) + T.round(x) + T.trunc(x) + T.sigmoid(x) + T.atan2(x, 1.0)
    H[0] = H[1] * 2 + T.float16(0.1) + T.cast(x, "float16")
    U[0] = U[1] + 255 - T.uint8(3)
    Q[0] = Q[1] * 2 + 9007199254740993 + T.int64(-2**63)
    A[6] = 1e300 * 0.0 + -0.0 + 0.1 + 1 / 3
    B[3] = 1 + 2 * 3 - 4 // 2
    B[4] = B[B[0]] + B[T.cast(Q[0], "int32")]
    T.evaluate(T.call("float16", "my_extern", x, 1, True, 2.5))
    T.evaluate(A.data)
''',
    "names": '''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    for i in T.serial(4):
        A[i] = 0
    for i in T.serial(4):
        A[i] = 1
    i_1 = 3
    for i in T.serial(i_1):
        A[i] = i_1
''',
    "zero_dim": '''
def f(A: T.Buffer((), "float32")):
    A[()] = A[()] + 1.0
''',
    "func_attr": '''
def f(A: T.Buffer((4,), "float32")):
    T.func_attr({"tir.noalias": True, "target": "vulkan"})
    A[0] = 0.0
''',
}


def roundtrip(func, ssa=True):
    """Check the round trip; with `ssa` (each var bound once) the text is also a fixpoint. A var
    bound at two places prints twice under one name and parses back as two vars, so without
    `ssa` only the second print is a fixpoint."""
    text = func.script()
    again = vkir.from_script(text)
    vkir.assert_structural_equal(again, func)
    assert again.name == func.name
    if ssa:
        assert again.script() == text, "printing is not deterministic"
    else:
        text = again.script()
        vkir.assert_structural_equal(vkir.from_script(text), func)
        assert vkir.from_script(text).script() == text
    return again


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_roundtrip(name):
    func = vkir.from_script(SCRIPTS[name])
    roundtrip(func)


def test_str_is_script():
    func = vkir.from_script(SCRIPTS["vadd"])
    assert str(func) == func.script()
    assert func.script().startswith("@T.prim_func\ndef vadd(")


# ---------------------------------------------------------------------------------------------
# IR that the parser never produces from literal syntax must still print parsably


def _func(body, *params, buffer_map=None, name="f"):
    return ir.PrimFunc(params, body, buffer_map or {}, {"global_symbol": name})


def test_typed_constants_and_unusual_dtypes_roundtrip():
    n = ir.Var("n", "int64")
    h = ir.Var("h", "float16")
    u = ir.Var("u", "uint16")
    z = ir.Var("z", "float32")
    A = ir.decl_buffer((4,), "int64", "A")
    body = S.seq(
        ir.Evaluate(ir.Add(n, ir.IntImm("int64", 5))),
        ir.Evaluate(ir.Add(ir.IntImm("int64", 5), ir.IntImm("int64", 6))),
        ir.Evaluate(ir.Add(ir.IntImm("int32", 5), ir.IntImm("int64", 6))),
        ir.Evaluate(ir.Mul(h, ir.FloatImm("float16", 1.0))),
        ir.Evaluate(ir.FloatImm("float16", -2.5)),
        ir.Evaluate(ir.FloatImm("float64", 0.1)),
        ir.Evaluate(ir.IntImm("bool", 1)),
        ir.Evaluate(ir.Sub(u, ir.IntImm("uint16", 1))),
        ir.Evaluate(ir.Add(ir.FloatImm("float32", 1.0), ir.IntImm("int32", 1))),  # ill-typed
        ir.Evaluate(ir.Add(n, ir.IntImm("int32", 1))),  # ill-typed: mismatch must stay
        ir.Evaluate(ir.Sub(ir.IntImm("int32", 0), ir.IntImm("int32", 5))),
        ir.Evaluate(ir.Sub(ir.IntImm("int64", 0), n)),
        ir.Evaluate(ir.Sub(ir.FloatImm("float32", -0.0), z)),
        ir.Evaluate(ir.Sub(ir.FloatImm("float32", 0.0), z)),
        ir.BufferStore(A, ir.IntImm("int64", 1), (ir.IntImm("int64", 2),)),
        ir.BufferStore(A, ir.IntImm("int32", 1), (0,)),  # ill-typed store value
        ir.Evaluate(ir.Ramp(ir.IntImm("int64", 0), ir.IntImm("int64", 1), 4)),
        ir.Evaluate(ir.Broadcast(ir.IntImm("int8", 3), 4)),
        ir.Evaluate(ir.Call("float32", "exp", (h,))),  # dtype differs from the natural one
        ir.Evaluate(ir.Call("int32", "bitwise_and", (n, n))),
        ir.Evaluate(ir.Call("int64", "shift_left", (ir.IntImm("int64", 1), ir.IntImm("int64", 3)))),
        ir.Evaluate(ir.Call("int32", "bitwise_not", (ir.IntImm("int32", 7),))),
        ir.Evaluate(ir.Call("float32", "if_then_else", (ir.IntImm("bool", 1), h, h))),
        ir.Evaluate(ir.Call("float32", "no_args", ())),
        ir.Evaluate(ir.Select(ir.IntImm("int32", 1), ir.IntImm("int64", 1), ir.IntImm("int32", 2))),
        ir.Evaluate(ir.Cast("float32", ir.IntImm("int8", 3))),
        ir.Evaluate(ir.Not(ir.IntImm("bool", 0))),
    )
    f = _func(body, n, h, u, z, A.data, buffer_map={A.data: A})
    roundtrip(f)


def test_float_constants_exact():
    x = ir.Var("x", "float32")
    values = [0.1, 1 / 3, 1e-45, 3.4028234663852886e38, 1e300, -0.0, 5e-324, 123456789.123,
              float("inf"), float("-inf"), float("nan")]
    body = S.seq(*[ir.Evaluate(ir.Add(x, ir.FloatImm("float32", v))) for v in values],
                 *[ir.Evaluate(ir.FloatImm("float64", v)) for v in values])
    g = roundtrip(_func(body, x))
    got = [s.value.b.value for s in g.body.seq[:len(values)]]
    for a, b in zip(got, values):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                       math.copysign(1, b))


def test_nested_and_empty_seqstmt_and_scoped_bindings():
    A = ir.decl_buffer((8,), "int32", "A")
    x = ir.Var("x", "int32")
    L = ir.decl_buffer((2,), "int32", "L", scope="local")
    body = ir.SeqStmt((
        ir.LetStmt(x, 1, A.store(x, 0)),            # let not last: printed with `with`
        ir.SeqStmt((A.store(1, 1), ir.SeqStmt(()))),
        ir.AllocBuffer(L, ir.SeqStmt((L.store(1, 0),))),
        ir.IfThenElse(ir.LT(x, 1) if False else ir.LT(ir.Var("y", "int32"), 2), ir.SeqStmt(()),
                      ir.SeqStmt(())),
        ir.For(ir.Var("i", "int32"), 0, 4, "serial", ir.SeqStmt(())),
    ))
    y = body.seq[3].condition.a
    f = _func(body, y, A.data, buffer_map={A.data: A})
    roundtrip(f)


def test_same_names_are_deduplicated():
    A = ir.decl_buffer((8,), "int32", "A")
    i1, i2, i3 = ir.Var("i", "int32"), ir.Var("i", "int32"), ir.Var("i_1", "int32")
    inner = ir.For(i2, 0, 2, "serial", A.store(i1 + i2 + i3, i1))
    body = ir.For(i1, 0, 4, "serial", ir.LetStmt(i3, 1, inner))
    f = _func(body, A.data, buffer_map={A.data: A})
    text = f.script()
    assert "for i in" in text and "i_1 = 1" in text and "for i_2 in" in text
    roundtrip(f)
    # weird names still print as identifiers
    w = ir.Var("blockIdx.x", "int32")
    T_ = ir.Var("T", "int32")
    kw = ir.Var("for", "int32")
    body = ir.LetStmt(w, 1, ir.LetStmt(T_, 2, ir.LetStmt(kw, 3, A.store(w + T_ + kw, 0))))
    roundtrip(_func(body, A.data, buffer_map={A.data: A}))


def test_pointer_cast_chain_and_data_references():
    A = ir.decl_buffer((16,), "float32", "A")
    B = ir.decl_buffer((4,), "float32x4", "B", data=A.data)
    C = ir.decl_buffer((8,), "float32x2", "C", data=B.data)
    D = ir.decl_buffer((16,), "int32", "D")  # fresh data var
    E = ir.decl_buffer((4,), "int32x4", "E", data=D.data)
    body = ir.DeclBuffer(B, ir.DeclBuffer(C, ir.DeclBuffer(D, ir.DeclBuffer(E, S.seq(
        B.store(C[ir.Ramp(0, 1, 2)], 0), E.store(E[1], 0), ir.Evaluate(D.data))))))
    roundtrip(_func(body, A.data, buffer_map={A.data: A}))


def test_let_expression_with_other_dtype_and_shadowing_lets():
    v = ir.Var("v", "int64")
    w = ir.Var("v", "int64")
    e = ir.Let(v, ir.IntImm("int32", 1), ir.Let(w, v, ir.Add(v, w)))
    f = _func(ir.Evaluate(e))
    roundtrip(f)


def test_vector_comparisons_and_broadcast_literals():
    V = ir.decl_buffer((4,), "float32x4", "V")
    M = ir.decl_buffer((4,), "boolx4", "M")
    lhs = V[0]
    body = S.seq(
        M.store(ir.LT(lhs, ir.Broadcast(ir.FloatImm("float32", 0.0), 4)), 0),
        V.store(ir.Add(lhs, ir.FloatImm("float32", 1.0)), 1),  # ill-typed scalar next to vector
        V.store(ir.Sub(ir.Broadcast(ir.FloatImm("float32", 0.0), 4), lhs), 2),
        M.store(ir.And(M[0], ir.Broadcast(ir.IntImm("bool", 1), 4)), 3),
    )
    roundtrip(_func(body, V.data, M.data, buffer_map={V.data: V, M.data: M}))


# ---------------------------------------------------------------------------------------------
# random expressions (hypothesis)

_X = ir.Var("x", "int32")
_Y = ir.Var("y", "int32")
_F = ir.Var("f", "float32")
_BUF = ir.decl_buffer((64,), "int32", "A")


def _int_exprs():
    leaves = st.one_of(
        st.sampled_from([_X, _Y]),
        st.integers(-2**31, 2**31 - 1).map(lambda v: ir.IntImm("int32", v)),
        st.integers(-5, 5).map(lambda v: ir.IntImm("int64", v)),
    )

    def extend(children):
        binop = st.sampled_from([ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Mod, ir.FloorDiv, ir.FloorMod,
                                 ir.Min, ir.Max])
        bitop = st.sampled_from(["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                                 "shift_right"])
        cmp = st.sampled_from([ir.EQ, ir.NE, ir.LT, ir.LE, ir.GT, ir.GE])
        return st.one_of(
            st.builds(lambda c, a, b: c(a, b), binop, children, children),
            st.builds(lambda op, a, b: ir.Call(a.dtype, op, (a, b)), bitop, children, children),
            st.builds(lambda a: ir.Call(a.dtype, "bitwise_not", (a,)), children),
            st.builds(lambda c, a, b, t, f: ir.Select(c(a, b), t, f), cmp, children, children,
                      children, children),
            st.builds(lambda a: ir.BufferLoad(_BUF, (a,)), children),
            st.builds(lambda a: ir.Cast("int32", ir.Add(_F, ir.Cast("float32", a))), children),
            st.builds(lambda a, b: ir.Let(ir.Var("x", a.dtype), a, ir.Add(b, b)), children,
                      children),
            st.builds(lambda c, a, b, d: ir.Select(ir.And(c(a, b), ir.Not(c(b, d))), a, d), cmp,
                      children, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=50, deadline=None)
@given(_int_exprs())
def test_random_expressions_roundtrip(e):
    f = _func(ir.Evaluate(e), _X, _Y, _F, _BUF.data, buffer_map={_BUF.data: _BUF})
    roundtrip(f, ssa=False)  # the generator reuses subtrees, so a Let may appear twice


# random statement trees: every statement kind, nested/empty sequences, bindings that are not last
# in their block, and many variables sharing the names "x" and "i"

_A = ir.decl_buffer((64,), "int32", "A")


def _pick(env, k):
    return env[k % len(env)] if env else ir.IntImm("int32", k)


def _stmts():
    leaves = st.one_of(
        st.builds(lambda k, v: lambda env: _A.store(_pick(env, v) + k, _pick(env, k) % 64),
                  st.integers(-3, 3), st.integers(0, 5)),
        st.just(lambda env: ir.Barrier()),
        st.integers(0, 5).map(lambda k: lambda env: ir.Evaluate(_pick(env, k))),
        st.just(lambda env: ir.SeqStmt(())),
    )

    def let(child, k):
        def build(env):
            v = ir.Var("x", "int32")
            return ir.LetStmt(v, _pick(env, k) * 2, child(env + [v]))
        return build

    def loop(child, kind, k, ann):
        def build(env):
            i = ir.Var("i", "int32")
            thread = "threadIdx.x" if kind == "thread_binding" else None
            lo = ir.IntImm("int32", 0) if k % 2 else _pick(env, k)
            return ir.For(i, lo, ir.IntImm("int32", 4), kind, child(env + [i]), thread,
                          {"stage": [k, 1]} if ann else {})
        return build

    def seq(children):
        return lambda env: ir.SeqStmt(tuple(c(env) for c in children))

    def cond(k, then, other):
        return lambda env: ir.IfThenElse(ir.LT(_pick(env, k), 3), then(env),
                                         other(env) if other is not None else None)

    def alloc(child, scope, decl):
        def build(env):
            buf = ir.decl_buffer((4,), "int32", "S", scope=scope)
            body = ir.SeqStmt((buf.store(1, 0), child(env)))
            if decl:
                alias = ir.decl_buffer((1,), "int32x4", "V", data=buf.data, scope=scope)
                body = ir.DeclBuffer(alias, ir.SeqStmt((alias.store(alias[0], 0), body)))
            return ir.AllocBuffer(buf, body)
        return build

    def asyncs(child, which, k):
        if which == 0:
            return lambda env: ir.AsyncScope(child(env))
        if which == 1:
            return lambda env: ir.AsyncCommitQueue(k, child(env))
        return lambda env: ir.AsyncWaitQueue(k, _pick(env, k), child(env))

    def extend(children):
        return st.one_of(
            st.builds(let, children, st.integers(0, 5)),
            st.builds(loop, children, st.sampled_from(["serial", "unrolled", "vectorized",
                                                       "thread_binding"]),
                      st.integers(0, 5), st.booleans()),
            st.builds(seq, st.lists(children, min_size=0, max_size=4)),
            st.builds(cond, st.integers(0, 5), children, st.none() | children),
            st.builds(alloc, children, st.sampled_from(["shared", "local"]), st.booleans()),
            st.builds(asyncs, children, st.integers(0, 2), st.integers(0, 2)),
        )

    return st.recursive(leaves, extend, max_leaves=10)


@settings(max_examples=50, deadline=None)
@given(_stmts())
def test_random_statements_roundtrip(build):
    n = ir.Var("n", "int32")
    f = _func(build([n]), n, _A.data, buffer_map={_A.data: _A})
    roundtrip(f)


def test_loop_var_dtype_other_than_extent():
    A = ir.decl_buffer((8,), "int32", "A")
    n = ir.Var("n", "int32")
    loops = []
    for kind in ("serial", "thread_binding"):
        thread = "threadIdx.x" if kind == "thread_binding" else None
        for lo, ext in ((ir.IntImm("int64", 0), ir.IntImm("int32", 4)),
                        (ir.IntImm("int32", 0), n),
                        (ir.IntImm("int32", 2), ir.IntImm("int32", 4)),
                        (n, ir.IntImm("int64", 4))):
            i = ir.Var("i", "int64")
            loops.append(ir.For(i, lo, ext, kind, A.store(1, 0), thread))
    f = _func(S.seq(*loops), n, A.data, buffer_map={A.data: A})
    assert 'dtype="int64"' in f.script()
    roundtrip(f)
    g = vkir.from_script('''
def g(A: T.Buffer((8,), "int32")):
    for i in T.serial(2, 6, dtype="int64"):
        A[0] = 1
''')
    assert g.body.loop_var.dtype == ir.DataType.parse("int64")
    assert g.body.min == ir.IntImm("int64", 2) and g.body.extent == ir.IntImm("int64", 4)


def test_implicit_pointer_casts_print_faithfully():
    """Ill-typed buffers whose data pointer has another element type or scope (the checker
    rejects them) still print as what they are, via data_dtype= / data_scope=."""
    from vkir.ir.dtype import PointerType

    A = ir.Buffer("A", ir.Var("A", PointerType(ir.DataType.parse("float32"))), "float32x4", (4,))
    L = ir.Buffer("L", ir.Var("L", PointerType(ir.DataType.parse("int32"), "shared")), "int32",
                  (4,), scope="local")
    D = ir.Buffer("D", ir.Var("D", PointerType(ir.DataType.parse("int8"))), "bool", (4,))
    body = ir.AllocBuffer(L, ir.DeclBuffer(D, S.seq(L.store(1, 0), D.store(True, 0),
                                                    A.store(A[1], 0))))
    f = _func(body, A.data, buffer_map={A.data: A})
    text = f.script()
    assert 'data_dtype="float32"' in text and 'data_scope="shared"' in text
    assert 'data_dtype="int8"' in text
    roundtrip(f)


def test_pointer_and_handle_params_without_buffers():
    from vkir.ir.dtype import PointerType

    p = ir.Var("p", PointerType(ir.DataType.parse("float32"), "global"))
    h = ir.Var("h", "handle")
    V = ir.decl_buffer((4,), "float32x4", "V", data=p)
    f = _func(ir.DeclBuffer(V, V.store(V[1], 0)), p, h)
    text = f.script()
    assert 'p: T.Ptr("float32", scope="global"), h: T.handle' in text
    assert "data=p" in text
    roundtrip(f)


def test_int64_size_vars():
    f = vkir.from_script('''
def f(A: T.Buffer((T.int64("n"), 4), "float32"), B: T.Buffer((T.int64("n") * 4,), "float32")):
    for i in T.serial(n):
        A[i, 0] = B[i * 4]
''')
    (n,) = f.size_vars
    assert n.dtype == ir.DataType.parse("int64") and f.body.loop_var.dtype == n.dtype
    assert 'T.Buffer((T.int64("n"), 4), "float32")' in f.script()
    roundtrip(f)
    with pytest.raises(vkir.ScriptError, match="used as int32 and int64"):
        vkir.from_script('''
def f(A: T.Buffer(("n",), "float32"), B: T.Buffer((T.int64("n"),), "float32")):
    A[0] = B[0]
''')
