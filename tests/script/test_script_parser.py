"""The script parser builds the IR docs/language.md describes, construct by construct."""

import pytest

import vkir
from vkir import T, ir
from vkir.ir import walk
from vkir.ir.dtype import DataType, PointerType

N = 16


def nodes(node, cls):
    return [n for n in walk(node) if isinstance(n, cls)]


def test_vadd_symbolic_size_shared_by_buffers():
    @T.prim_func
    def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
             c: T.Buffer(("n",), "float32")):
        for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):  # noqa: F821
            for tx in T.thread_binding(64, "threadIdx.x"):
                i = bx * 64 + tx
                if i < n:  # noqa: F821
                    c[i] = a[i] + b[i]

    assert isinstance(vadd, ir.PrimFunc)
    assert vadd.name == "vadd" and vadd.attrs["global_symbol"] == "vadd"
    (n,) = vadd.size_vars
    assert n.name == "n" and n.dtype == DataType.parse("int32")
    bufs = [vadd.buffer_map[p] for p in vadd.params]
    assert all(b.shape[0] is n for b in bufs)
    assert [b.name for b in bufs] == ["a", "b", "c"]
    for p, b in zip(vadd.params, bufs):
        assert b.data is p and p.dtype == PointerType(DataType.parse("float32"), "global")
    outer = vadd.body
    assert isinstance(outer, ir.For) and outer.kind == "thread_binding"
    assert outer.thread == "blockIdx.x"
    assert isinstance(outer.extent, ir.FloorDiv) and isinstance(outer.extent.a, ir.Add)
    assert outer.extent.a.a is n
    inner = outer.body
    assert inner.thread == "threadIdx.x" and inner.extent == ir.IntImm("int32", 64)
    let = inner.body
    assert isinstance(let, ir.LetStmt) and let.var.name == "i"
    cond = let.body
    assert isinstance(cond, ir.IfThenElse) and cond.else_case is None
    assert isinstance(cond.condition, ir.LT) and cond.condition.b is n
    store = cond.then_case
    assert isinstance(store, ir.BufferStore) and store.buffer is bufs[2]
    assert store.indices == (let.var,)
    assert isinstance(store.value, ir.Add) and store.value.a.buffer is bufs[0]


def test_scalar_params_and_python_constants():
    @T.prim_func
    def f(A: T.Buffer((N, "m"), "int8"), n: T.int32, x: T.float16, flag: T.bool):
        A[0, 0] = T.cast(n, "int8")

    assert [str(p.dtype) for p in f.params[1:]] == ["int32", "float16", "bool"]
    assert f.buffer_map[f.params[0]].shape[0] == ir.IntImm("int32", 16)
    assert [v.name for v in f.size_vars] == ["m"]


def test_buffer_options():
    f = vkir.from_script('''
def f(A: T.Buffer(("n", "m"), "float32x4", strides=("m", 1), elem_offset=4, scope="global")):
    S = T.alloc_buffer((4, 8), "int32", scope="shared")
    S[0, 0] = 1
''')
    a = f.buffer_map[f.params[0]]
    n, m = f.size_vars
    assert a.shape == (n, m) and a.strides == (m, ir.IntImm("int32", 1))
    assert a.elem_offset == ir.IntImm("int32", 4) and a.dtype == DataType("float", 32, 4)
    alloc = f.body
    assert isinstance(alloc, ir.AllocBuffer) and alloc.buffer.scope == "shared"
    assert alloc.buffer.data.dtype == PointerType(DataType.parse("int32"), "shared")


def test_loop_kinds_ranges_and_annotations():
    f = vkir.from_script('''
def f(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, 1], "k": "v"}):
        for j in T.unroll(2, 10):
            for k in T.vectorized(4):
                for t in T.thread_binding(0, 64, thread="threadIdx.y"):
                    for s in T.serial(n, n + 8):
                        for r in T.serial(2, n):
                            A[i] = 0.0
''')
    loops = nodes(f, ir.For)
    assert [lp.kind for lp in loops] == ["serial", "unrolled", "vectorized", "thread_binding",
                                         "serial", "serial"]
    assert loops[0].annotations == {"software_pipeline_stage": (0, 1), "k": "v"}
    assert loops[1].min == ir.IntImm("int32", 2) and loops[1].extent == ir.IntImm("int32", 8)
    assert loops[3].thread == "threadIdx.y" and loops[3].extent == ir.IntImm("int32", 64)
    n = f.params[1]
    assert loops[4].min is n and loops[4].extent == ir.IntImm("int32", 8)
    assert loops[5].min == ir.IntImm("int32", 2)
    assert isinstance(loops[5].extent, ir.Sub) and loops[5].extent.a is n


def test_grid_is_nested_serial_loops():
    f = vkir.from_script('''
def f(A: T.Buffer((4, 8, 2), "float32")):
    for i, j, k in T.grid(4, 8, 2):
        A[i, j, k] = 1.0
''')
    loops = nodes(f, ir.For)
    assert [lp.loop_var.name for lp in loops] == ["i", "j", "k"]
    assert [lp.extent.value for lp in loops] == [4, 8, 2]
    assert all(lp.kind == "serial" and lp.min.value == 0 for lp in loops)


def test_int64_loop_takes_extent_dtype():
    f = vkir.from_script('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(T.int64(4)):
        A[i] = 1.0
''')
    assert f.body.loop_var.dtype == DataType.parse("int64")
    assert f.body.min == ir.IntImm("int64", 0)


def test_let_alloc_decl_scope_over_rest_of_block():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32")):
    A[0] = 1.0
    x = 3
    y: T.int64 = 5
    B = T.decl_buffer((4,), "float32x4", data=A.data)
    C = T.decl_buffer((4,), "int32")
    B[x] = B[1]
    C[0] = x
''')
    seq = f.body
    assert isinstance(seq, ir.SeqStmt) and len(seq.seq) == 2
    let_x = seq.seq[1]
    assert isinstance(let_x, ir.LetStmt) and let_x.value == ir.IntImm("int32", 3)
    let_y = let_x.body
    assert let_y.var.dtype == DataType.parse("int64") and let_y.value == ir.IntImm("int64", 5)
    decl_b = let_y.body
    a = f.buffer_map[f.params[0]]
    assert isinstance(decl_b, ir.DeclBuffer) and decl_b.buffer.data is a.data
    assert decl_b.buffer.dtype == DataType("float", 32, 4)
    decl_c = decl_b.body
    assert decl_c.buffer.data is not a.data
    assert decl_c.buffer.data.dtype == PointerType(DataType.parse("int32"), "global")
    body = decl_c.body
    assert [type(s) for s in body.seq] == [ir.BufferStore, ir.BufferStore]
    assert body.seq[0].indices == (let_x.var,)


def test_with_forms_close_the_scope():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "int32")):
    with T.let(A[0] + 1) as x:
        A[1] = x
    with T.alloc_buffer((4,), "int32", scope="local") as L:
        L[0] = 1
    with T.decl_buffer((4,), "int32", data=A.data) as D:
        D[0] = 2
    A[2] = 3
''')
    kinds = [type(s) for s in f.body.seq]
    assert kinds == [ir.LetStmt, ir.AllocBuffer, ir.DeclBuffer, ir.BufferStore]


def test_if_elif_else():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    if n < 1:
        A[0] = 1
    elif n < 2:
        A[0] = 2
    else:
        A[0] = 3
''')
    top = f.body
    assert isinstance(top.else_case, ir.IfThenElse)
    assert top.else_case.else_case.value == ir.IntImm("int32", 3)


def test_async_barrier_evaluate_pass():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    with T.async_commit_queue(0):
        with T.async_scope():
            A[0] = 1
    with T.async_wait_queue(0, n - 1):
        T.barrier()
    T.evaluate(n)
    if n > 0:
        pass
''')
    commit, wait, ev, cond = f.body.seq
    assert isinstance(commit, ir.AsyncCommitQueue) and commit.queue == 0
    assert isinstance(commit.body, ir.AsyncScope)
    assert isinstance(wait, ir.AsyncWaitQueue) and isinstance(wait.in_flight, ir.Sub)
    assert isinstance(wait.body, ir.Barrier)
    assert isinstance(ev, ir.Evaluate) and ev.value is f.params[1]
    assert cond.then_case == ir.SeqStmt(())


def test_operators_map_to_nodes():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "int32"), n: T.int32, m: T.int32):
    T.evaluate(n + m)
    T.evaluate(n - m)
    T.evaluate(n * m)
    T.evaluate(n / m)
    T.evaluate(n // m)
    T.evaluate(n % m)
    T.evaluate(T.truncdiv(n, m))
    T.evaluate(T.truncmod(n, m))
    T.evaluate(T.floordiv(n, m))
    T.evaluate(T.floormod(n, m))
    T.evaluate(T.min(n, m))
    T.evaluate(T.max(n, m))
    T.evaluate(n & m)
    T.evaluate(n | m)
    T.evaluate(n ^ m)
    T.evaluate(n << m)
    T.evaluate(n >> m)
    T.evaluate(~n)
    T.evaluate(-n)
    T.evaluate(n == m and n != m or not n <= m)
    T.evaluate(n < m)
    T.evaluate(n > m)
    T.evaluate(n >= m)
''')
    vals = [s.value for s in f.body.seq]
    expect = [ir.Add, ir.Sub, ir.Mul, ir.Div, ir.FloorDiv, ir.FloorMod, ir.Div, ir.Mod,
              ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max, ir.Call, ir.Call, ir.Call, ir.Call,
              ir.Call, ir.Call, ir.Sub, ir.Or, ir.LT, ir.GT, ir.GE]
    assert [type(v) for v in vals] == expect
    assert [v.op for v in vals[12:18]] == ["bitwise_and", "bitwise_or", "bitwise_xor",
                                           "shift_left", "shift_right", "bitwise_not"]
    assert all(v.dtype == DataType.parse("int32") for v in vals[12:18])
    neg = vals[18]
    assert neg.a == ir.IntImm("int32", 0)
    assert isinstance(vals[19].a, ir.And) and isinstance(vals[19].b, ir.Not)
    assert vals[19].dtype == DataType.parse("bool")


def test_literals_take_the_other_operands_type():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float16"), B: T.Buffer((16,), "int64"), V: T.Buffer((4,), "float32x4")):
    A[0] = A[1] * 2 + 0.5
    B[0] = 3 - B[1]
    V[0] = V[1] + 1.0
    A[1] = 7
    V[1] = 0.0
    B[1] = -4
''')
    s0, s1, s2, s3, s4, s5 = f.body.seq
    assert s0.value.a.b == ir.FloatImm("float16", 2.0)
    assert s0.value.b == ir.FloatImm("float16", 0.5)
    assert s1.value.a == ir.IntImm("int64", 3)
    assert s2.value.b == ir.Broadcast(ir.FloatImm("float32", 1.0), 4)
    assert s3.value == ir.FloatImm("float16", 7.0)
    assert s4.value == ir.Broadcast(ir.FloatImm("float32", 0.0), 4)
    assert s5.value == ir.IntImm("int64", -4)


def test_literal_defaults_and_typed_constants():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32")):
    a = 1
    b = 1.5
    c = True
    d = T.float16(1.5)
    e = T.int64(3)
    g = T.bool(False)
    h = T.uint8(255)
    k = T.float32("inf")
    m = 2**40 + T.int64(0)
    T.evaluate(0)
''')
    lets = nodes(f, ir.LetStmt)
    vals = [lt.value for lt in lets]
    assert vals[:8] == [ir.IntImm("int32", 1), ir.FloatImm("float32", 1.5), ir.IntImm("bool", 1),
                        ir.FloatImm("float16", 1.5), ir.IntImm("int64", 3), ir.IntImm("bool", 0),
                        ir.IntImm("uint8", 255), ir.FloatImm("float32", float("inf"))]
    assert vals[8].a == ir.IntImm("int64", 2**40)
    assert [str(lt.var.dtype) for lt in lets] == ["int32", "float32", "bool", "float16", "int64",
                                                  "bool", "uint8", "float32", "int64"]


def test_vector_builtins():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32x4")):
    A[T.ramp(0, 1, 4)] = T.broadcast(1.0, 4)
    B[T.ramp(0, 1, 2)] = T.shuffle([B[0], B[1]], [4, 5, 6, 7, 0, 1, 2, 3])
    A[0] = T.select(A[1] > 0.0, A[1], 0.0) + T.if_then_else(A[2] > 0.0, A[2], 1.0)
    A[1] = T.reinterpret(T.cast(A[0], "int32"), "float32")
''')
    s0, s1, s2, s3 = f.body.seq
    assert s0.indices[0] == ir.Ramp(ir.IntImm("int32", 0), ir.IntImm("int32", 1), 4)
    assert s0.value.dtype == DataType("float", 32, 4)
    assert s1.value.dtype == DataType("float", 32, 8)
    assert s1.value.indices == (4, 5, 6, 7, 0, 1, 2, 3)
    assert isinstance(s2.value.a, ir.Select) and s2.value.b.op == "if_then_else"
    assert s3.value.op == "reinterpret" and s3.value.dtype == DataType.parse("float32")
    assert isinstance(s3.value.args[0], ir.Cast)


def test_math_ops_and_generic_call():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32")):
    A[0] = T.exp(A[0]) + T.log(A[0]) + T.sqrt(A[0]) + T.rsqrt(A[0]) + T.tanh(A[0])
    A[1] = T.pow(A[0], 2.0) + T.fabs(A[0]) + T.floor(A[0]) + T.ceil(A[0]) + T.sin(A[0])
    A[2] = T.cos(A[0]) + T.fma(A[0], 2.0, A[1]) + T.erf(A[0]) + T.atan2(A[0], 1.0)
    A[3] = T.call("float32", "my_extern", A[0], 1)
    T.evaluate(T.isnan(A[0]))
''')
    ops = [c.op for c in nodes(f, ir.Call)]
    assert ops == ["exp", "log", "sqrt", "rsqrt", "tanh", "pow", "fabs", "floor", "ceil", "sin",
                   "cos", "fma", "erf", "atan2", "my_extern", "isnan"]
    calls = nodes(f, ir.Call)
    assert calls[5].args[1] == ir.FloatImm("float32", 2.0)
    assert calls[14].args[1] == ir.IntImm("int32", 1)
    assert calls[15].dtype == DataType.parse("bool")


def test_let_expression():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    A[0] = T.let(x := n * 2, x + x)
''')
    let = f.body.value
    assert isinstance(let, ir.Let) and let.var.name == "x"
    assert let.body.a is let.var and let.body.b is let.var


def test_aug_assign_updates_buffer():
    f = vkir.from_script('''
def f(A: T.Buffer((16,), "float32")):
    A[0] += 2
''')
    s = f.body
    assert isinstance(s.value, ir.Add) and isinstance(s.value.a, ir.BufferLoad)
    assert s.value.b == ir.FloatImm("float32", 2.0)


def test_spans_point_at_source():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in T.serial(4):
            A[i] = 1.0

    import inspect

    first = inspect.getsourcelines(test_spans_point_at_source)[1]
    loop = f.body
    assert loop.span is not None and loop.span.file == __file__
    assert loop.span.line == first + 3
    assert loop.span.col == 9 and loop.span.source_line.strip() == "for i in T.serial(4):"
    assert loop.body.span.line == first + 4


def test_closure_values_and_env():
    width = 8

    @T.prim_func
    def f(A: T.Buffer((width,), "float32")):
        for i in T.serial(width):
            A[i] = 0.0

    assert f.body.extent == ir.IntImm("int32", 8)
    g = vkir.from_script('''
def g(A: T.Buffer((W,), "float32")):
    A[0] = 0.0
''', env={"W": 3})
    assert g.buffer_map[g.params[0]].shape == (ir.IntImm("int32", 3),)


def test_func_attr():
    f = vkir.from_script('''
def f(A: T.Buffer((4,), "float32")):
    T.func_attr({"tir.noalias": True})
    A[0] = 0.0
''')
    assert f.attrs == {"global_symbol": "f", "tir.noalias": True}


def test_namespace_alias_from_decorator():
    f = vkir.from_script('''
@S.prim_func
def f(A: S.Buffer((4,), "float32")):
    A[0] = S.exp(A[1])
''')
    assert f.body.value.op == "exp"


def test_t_builders_work_programmatically():
    x = ir.Var("x", "float32")
    assert T.exp(x) == ir.Call("float32", "exp", (x,))
    assert T.float16(1.5) == ir.FloatImm("float16", 1.5)
    assert T.max(x, 1) == ir.Max(x, ir.FloatImm("float32", 1.0))
    assert T.cast(x, "int8") == ir.Cast("int8", x)
    assert str(T.float32) == "float32"
    with pytest.raises(vkir.ScriptError):
        T.serial(4)


def test_pointer_and_handle_params_in_decorated_functions():
    @T.prim_func
    def f(p: T.Ptr("float32", scope="shared"), h: T.handle, n: "int32"):
        V = T.decl_buffer((4,), "float32x4", data=p)
        V[0] = V[1]

    p, h, n = f.params
    assert p.dtype == PointerType(DataType.parse("float32"), "shared")
    assert h.dtype == DataType.parse("handle") and n.dtype == DataType.parse("int32")
    assert f.body.buffer.data is p and f.body.buffer.scope == "shared"
    assert not f.buffer_map


@pytest.mark.device
def test_a_name_assigned_again_is_a_variable():
    """`acc = T.float32(0)` then `acc = acc + ...` (or `acc += ...`) in a loop: a variable, kept
    in a one-element local buffer; the same program written with that buffer is the same IR."""
    import numpy as np

    import vkir

    f = vkir.from_script('''
@T.prim_func
def rowsum(a: T.Buffer((4, 8), "float32"), out: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, "threadIdx.x"):
        acc = T.float32(0)
        for j in T.serial(8):
            acc = acc + a[i, j]
            if a[i, j] > T.float32(0.5):
                acc += T.float32(1)
        out[i] = acc
''')
    explicit = vkir.from_script('''
@T.prim_func
def rowsum(a: T.Buffer((4, 8), "float32"), out: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, "threadIdx.x"):
        acc = T.alloc_buffer((1,), "float32", scope="local")
        acc[0] = T.float32(0)
        for j in T.serial(8):
            acc[0] = acc[0] + a[i, j]
            if a[i, j] > T.float32(0.5):
                acc[0] = acc[0] + T.float32(1)
        out[i] = acc[0]
''')
    vkir.assert_structural_equal(f, explicit)
    a = np.random.default_rng(0).random((4, 8)).astype(np.float32)
    want = a.sum(1) + (a > 0.5).sum(1)
    for run in (lambda *x: vkir.interpret(f, *x), vkir.build(f)):
        out = np.zeros(4, np.float32)
        run(a, out)
        np.testing.assert_allclose(out, want, rtol=1e-6)


def test_names_bound_once_per_scope_stay_bindings():
    import vkir
    from vkir.ir import stmt as S
    from vkir.ir.traversal import walk

    f = vkir.from_script('''
@T.prim_func
def two(a: T.Buffer((4,), "int32")):
    for i in T.serial(2):
        x = i + 1
        a[i] = x
    for j in T.serial(2):
        x = j * 2
        a[j + 2] = x
''')
    assert not any(isinstance(n, S.AllocBuffer) for n in walk(f.body))
    assert sum(isinstance(n, S.LetStmt) for n in walk(f.body)) == 2


LANES = '''
@T.prim_func
def lanes(a: T.Buffer((4,), "float32x4"), b: T.Buffer((4,), "float32x4"),
          s: T.Buffer((4,), "float32"), k: T.int32):
    for i in T.thread_binding(4, "threadIdx.x"):
        v = a[i]
        b[i] = T.float32x4(v[3], v[0:2], T.float32(9))
        s[i] = v[k] + v[-1]
'''


@pytest.mark.device
def test_lanes_slices_and_vector_constructors():
    import numpy as np

    import vkir

    f = vkir.from_script(LANES)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    for run in (lambda *x: vkir.interpret(f, *x), vkir.build(f)):
        for k in range(4):
            b, s = np.zeros((4, 4), np.float32), np.zeros(4, np.float32)
            run(a, b, s, k)
            np.testing.assert_array_equal(b, np.stack([a[:, 3], a[:, 0], a[:, 1],
                                                       np.full(4, 9, np.float32)], axis=1))
            np.testing.assert_array_equal(s, a[:, k] + a[:, 3])


@pytest.mark.parametrize("body, message", [
    ("b[i] = T.float32x4(v[0], v[1])", "the parts have 2 lanes, not 4"),
    ("b[i] = T.float32x4(v[0:2], T.int32(1), v[3])", "each part must be a float32"),
    ("s[i] = v[4]", "lane 4 of a 4-lane value"),
    ("s[i] = v[k:3]", "a lane slice takes constant bounds"),
])
def test_lane_mistakes_say_what_is_wrong(body, message):
    import vkir
    from vkir.errors import ScriptError

    text = LANES.replace('''        b[i] = T.float32x4(v[3], v[0:2], T.float32(9))
        s[i] = v[k] + v[-1]''', "        " + body)
    with pytest.raises(ScriptError, match=message):
        vkir.from_script(text)

