"""The public contract (the API documented in README.md and docs/) and the promises made so far,
one compact test per item: names, field order, signatures and behaviours that code outside vkir relies on.
Each test asserts what the item does, not merely that a name exists."""

import dataclasses
import inspect
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.testing import buffer_reads
from vkir.tools.demo import VADD_SOURCE

ROOT = Path(__file__).resolve().parents[1]


def _walk_of(func, cls):
    return [n for n in ir.walk(func) if isinstance(n, cls)]


def _interp(func, *args):
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    vkir.interpret(func, *out)
    return out


def _same_interp(before, after, *args):
    for w, g in zip(_interp(before, *args), _interp(after, *args)):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-6)


@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
         c: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):   # "n" is a symbolic int32 size
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                c[i] = a[i] + b[i]


# ==============================================================================================
# 1. layout: one distribution, vkir.spirv / vkir.runtime from top-level folders


def test_layout_spirv_and_runtime_install_under_vkir_only(tmp_path):
    assert not (ROOT / "vkir" / "spirv").exists() and not (ROOT / "vkir" / "runtime").exists()
    assert (ROOT / "spirv" / "__init__.py").is_file() and (ROOT / "runtime" / "__init__.py").is_file()
    text = (ROOT / "pyproject.toml").read_text()
    assert '"vkir.spirv" = "spirv"' in text and '"vkir.runtime" = "runtime"' in text
    code = ("import importlib.util as u, pathlib\n"
            "print(u.find_spec('spirv') is None, u.find_spec('runtime') is None,\n"
            "      *(pathlib.Path(u.find_spec(m).origin).parent.name for m in ('vkir.spirv', 'vkir.runtime')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "True", "spirv", "runtime"]


NO_LOADER = textwrap.dedent('''
    import sys

    class NoLoader:  # what the `vulkan` package does where libvulkan is missing
        def find_spec(self, name, path=None, target=None):
            if name == "vulkan" or name.startswith("vulkan."):
                raise OSError("Cannot find Vulkan SDK version (libvulkan.so.1 hidden)")

    sys.meta_path.insert(0, NoLoader())
    import numpy as np
    import vkir
    from vkir import T

    f = vkir.from_script("""
    @T.prim_func
    def f(a: T.Buffer((4,), "float32")):
        for i in T.serial(4):
            a[i] = a[i] + 1.0
    """)
    x = np.zeros(4, "float32")
    vkir.interpret(f, x)
    import vkir.spirv
    words = vkir.spirv.codegen(vkir.lower(f)).words
    try:
        vkir.devices()
        print("no error")
    except vkir.DeviceError as exc:
        print("DeviceError", x.tolist(), words[:4] == b"\\x03\\x02\\x23\\x07", "vulkan" in sys.modules)
''')


def test_import_vkir_needs_no_vulkan_loader():
    proc = subprocess.run([sys.executable, "-c", NO_LOADER], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["DeviceError", "[1.0,", "1.0,", "1.0,", "1.0]", "True", "False"]


def test_readme_opens_with_make_demo_and_make_test():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.splitlines()][:2] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


# ==============================================================================================
# 2. the IR


def test_datatype_parse_print_lanes():
    for text in ("int32", "uint8", "float16", "float32x4", "bool", "handle", "int64x2"):
        assert str(ir.DataType.parse(text)) == text
    f4 = ir.DataType.parse("float32x4")
    assert (f4.code, f4.bits, f4.lanes) == ("float", 32, 4)
    assert f4.element_of() == ir.DataType("float", 32) == ir.DataType.parse("float32")
    assert ir.DataType.parse("int8").with_lanes(4) == ir.DataType(code="int", bits=8, lanes=4)
    assert f4 == "float32x4" and f4 != "float32" and {f4: 1}["float32x4"] == 1
    with pytest.raises(ValueError):
        ir.DataType.parse("float33")


def test_pointer_type():
    p = ir.PointerType(element=ir.DataType.parse("float32x4"), scope="shared")
    assert (str(p.element), p.scope) == ("float32x4", "shared")
    assert ir.PointerType(ir.DataType.parse("int32"), "local") == ir.PointerType("int32", "local")


def test_expression_nodes_by_keyword():
    i = ir.Var(name="i", dtype="int32")
    assert (i.name, str(i.dtype)) == ("i", "int32")
    assert ir.IntImm(dtype="int32", value=3).value == 3
    assert ir.FloatImm(dtype="float32", value=1.5).value == 1.5
    for cls in (ir.Add, ir.Sub, ir.Mul, ir.Div, ir.FloorDiv, ir.FloorMod, ir.Mod, ir.Min, ir.Max):
        node = cls(a=i, b=2)  # the literal takes the other operand's type
        assert node.a is i and node.b == ir.IntImm("int32", 2) and str(node.dtype) == "int32"
    for cls in (ir.EQ, ir.NE, ir.LT, ir.LE, ir.GT, ir.GE):
        assert str(cls(a=ir.Ramp(i, 1, 4), b=ir.Broadcast(i, 4)).dtype) == "boolx4"
    c = ir.LT(i, 4)
    assert str(ir.And(a=c, b=c).dtype) == str(ir.Or(a=c, b=c).dtype) == str(ir.Not(a=c).dtype) == "bool"
    assert str(ir.Select(condition=c, true_value=i, false_value=0).dtype) == "int32"
    assert str(ir.Cast(dtype="float32x4", value=ir.Ramp(i, 1, 4)).dtype) == "float32x4"
    ramp = ir.Ramp(base=i, stride=1, lanes=4)
    assert (str(ramp.dtype), ramp.lanes) == ("int32x4", 4)
    assert str(ir.Broadcast(value=ir.FloatImm("float32", 1.0), lanes=8).dtype) == "float32x8"
    x = ir.Var("x", "float32")
    let = ir.Let(var=x, value=ir.FloatImm("float32", 2.0), body=x * 3)
    assert str(let.dtype) == "float32" and let.body.b == ir.FloatImm("float32", 3.0)
    call = ir.Call(dtype="float32", op="exp", args=[x])
    assert call.op == "exp" and call.args == (x,)
    shuf = ir.Shuffle(vectors=[ramp, ramp], indices=[7, 0])
    assert str(shuf.dtype) == "int32x2" and shuf.indices == (7, 0)
    assert ir.const(3, "int32") == ir.IntImm("int32", 3)
    assert ir.const(1.5, "float16") == ir.FloatImm("float16", 1.5)
    assert ir.const(True, "bool") == ir.IntImm("bool", 1)


def test_statement_nodes_by_keyword():
    i = ir.Var("i")
    body = ir.Evaluate(value=0)
    loop = ir.For(loop_var=i, min=0, extent=8, kind="serial", body=body)
    assert loop.thread is None and loop.annotations == {}
    assert loop.min == ir.IntImm("int32", 0) and loop.extent == ir.IntImm("int32", 8)
    assert [f.name for f in dataclasses.fields(ir.For) if f.name != "span"] == \
        ["loop_var", "min", "extent", "kind", "body", "thread", "annotations"]
    for kind in ("unrolled", "vectorized"):
        assert ir.For(i, 0, 4, kind, body, annotations={"k": 1}).annotations["k"] == 1
    tb = ir.For(i, 0, 64, "thread_binding", body, thread="threadIdx.x")
    assert tb.thread == "threadIdx.x"
    assert ir.IfThenElse(condition=ir.LT(i, 1), then_case=body).else_case is None
    assert ir.SeqStmt(seq=[body, body]).seq == (body, body)
    wait = ir.AsyncWaitQueue(queue=0, in_flight=1, body=body)
    assert (wait.queue, wait.in_flight, wait.body) == (0, ir.IntImm("int32", 1), body)
    assert ir.AsyncCommitQueue(queue=1, body=ir.AsyncScope(body=body)).queue == 1
    assert ir.Barrier() == ir.Barrier()
    x = ir.Var("x")
    assert ir.LetStmt(var=x, value=1, body=body).value == ir.IntImm("int32", 1)
    buf = ir.decl_buffer((4,), "float32", "B")
    store = ir.BufferStore(buffer=buf, value=1.0, indices=[0])
    assert store.value == ir.FloatImm("float32", 1.0) and store.indices == (ir.IntImm("int32", 0),)
    assert ir.AllocBuffer(buffer=buf, body=store).buffer is buf
    assert ir.DeclBuffer(buffer=buf, body=store).body is store


def test_buffer_fields_and_helpers():
    assert [f.name for f in dataclasses.fields(ir.Buffer) if f.name != "span"] == \
        ["name", "data", "dtype", "shape", "strides", "elem_offset", "scope"]
    A = ir.decl_buffer((4, 8), "float32x4", "A")
    assert A.shape == (ir.IntImm("int32", 4), ir.IntImm("int32", 8))
    assert A.data.dtype == ir.PointerType("float32x4", "global") and A.scope == "global"
    S = ir.decl_buffer(shape=(8,), dtype="float32", name="S", data=None, scope="shared")
    assert S.data.dtype == ir.PointerType("float32", "shared")
    S4 = ir.decl_buffer((2,), "float32x4", "S4", data=S.data)  # explicit cast of shared memory
    assert S4.data is S.data and S4.scope == "shared"
    data = ir.Var("X", ir.PointerType("int32", "global"))
    X = ir.Buffer(name="X", data=data, dtype="int32", shape=[16], strides=[], elem_offset=0,
                  scope="global")
    assert X.shape == (ir.IntImm("int32", 16),) and X.elem_offset == ir.IntImm("int32", 0)


@pytest.mark.parametrize("elem,index_lanes,expected", [
    ("float32", 1, "float32"), ("float32", 4, "float32x4"),
    ("float32x4", 1, "float32x4"), ("float32x4", 2, "float32x8"),
])
def test_lane_rule_n_times_m(elem, index_lanes, expected):
    A = ir.decl_buffer((16,), elem, "A")
    index = ir.Ramp(0, 1, index_lanes) if index_lanes > 1 else 0
    assert str(ir.BufferLoad(buffer=A, indices=[index]).dtype) == expected
    good = ir.BufferStore(A, ir.BufferLoad(A, [index]), [index])
    bad = ir.BufferStore(A, ir.const(1.0, "float32x2"), [index])
    f_good = ir.PrimFunc([A.data], good, {A.data: A})
    verify_types(f_good)
    with pytest.raises(vkir.TypeCheckError, match="rule 1"):
        verify_types(ir.PrimFunc([A.data], bad, {A.data: A}))


def test_nodes_are_immutable_and_compare_structurally():
    i = ir.Var("i")
    assert ir.Add(i, 1) == ir.Add(i, 1) and ir.Add(i, 1) != ir.Add(ir.Var("i"), 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ir.Add(i, 1).a = i
    assert ir.decl_buffer((4,), "float32", "A") != ir.decl_buffer((4,), "float32", "A")


def test_primfunc_params_buffer_map_attrs():
    f = vadd
    assert [p.name for p in f.params] == ["a", "b", "c"]
    assert all(f.buffer_map[p].data is p for p in f.params)
    n, = f.size_vars
    assert (n.name, str(n.dtype)) == ("n", "int32")
    assert f.buffer_map[f.params[0]].shape == (n,) and f.name == "vadd"
    g = ir.PrimFunc(params=f.params, body=f.body, buffer_map=f.buffer_map,
                    attrs={"global_symbol": "g"})
    assert g.name == "g" and g.attrs["global_symbol"] == "g"


def test_walk_is_preorder_in_source_order():
    i = ir.Var("i")
    A = ir.decl_buffer((8,), "float32", "A")
    s = ir.For(i, 0, 8, "serial", ir.BufferStore(A, ir.Cast("float32", i + 1), [i]))
    assert [type(n).__name__ for n in ir.walk(s)] == [
        "For", "Var", "IntImm", "IntImm", "BufferStore", "Cast", "Add", "Var", "IntImm", "Var"]
    assert next(iter(ir.walk(vadd))) is vadd


def test_typing_rules_each_fail_with_type_check_error():
    head = '@T.prim_func\ndef g(A: T.Buffer((8, 8), "float32"), s: T.int32):\n    '
    bad = {
        "rule 1": 'A[T.ramp(0, 1, 4), 0] = T.broadcast(T.float32(1), 4)',  # vector index not last
        "rule 3": 'A[0, 0] = A[0, 1] + s',                                 # float32 + int32
        "rule 4": 'A[0, 0] = T.cast(T.ramp(0, 1, 4), "float32")',          # cast drops lanes
    }
    for rule, body in bad.items():
        with pytest.raises(vkir.TypeCheckError, match=rule):
            verify_types(vkir.from_script(head + body))
    # rule 2: the DeclBuffer cast is legal; the same buffer declared any other way is not
    verify_types(vkir.from_script(head + 'X = T.decl_buffer((16,), "float32x4", data=A.data)\n'
                                  '    X[0] = T.broadcast(T.float32(1), 4)'))
    A = ir.decl_buffer((8,), "float32", "A")
    alias = ir.Buffer("A4", A.data, "float32x4", (2,))
    implicit = ir.PrimFunc([A.data], ir.AllocBuffer(alias, ir.BufferStore(A, 1.0, [0])), {A.data: A})
    with pytest.raises(vkir.TypeCheckError, match="rule 2"):
        verify_types(implicit)


# ==============================================================================================
# 3. the script front end


def test_vadd_example_parses_to_the_design_ir():
    bx_loop, = [f for f in _walk_of(vadd, ir.For) if f.thread == "blockIdx.x"]
    tx_loop, = [f for f in _walk_of(vadd, ir.For) if f.thread == "threadIdx.x"]
    n, = vadd.size_vars
    assert bx_loop.kind == tx_loop.kind == "thread_binding"
    assert bx_loop.extent == ir.FloorDiv(ir.Add(n, 63), 64) and tx_loop.extent == ir.const(64)
    let, = _walk_of(vadd, ir.LetStmt)
    assert let.var.name == "i" and isinstance(let.body, ir.IfThenElse)


LOOPS = '''
@T.prim_func
def loops(A: T.Buffer((8, 8), "float32")):
    for i in T.serial(2, 6, annotations={"a": 1}):
        for j in T.unroll(8, annotations={"b": 2}):
            A[i, j] = 0.0
    for i, j in T.grid(8, 8, annotations={"c": 3}):
        A[i, j] = 1.0
    for i in T.serial(8):
        for v in T.vectorized(8, annotations={"d": 4}):
            A[i, v] = 2.0
    for bx in T.thread_binding(2, "blockIdx.y", annotations={"e": 5}):
        for tx in T.thread_binding(4, "threadIdx.z"):
            A[bx, tx] = 3.0
'''


def test_loops_kinds_ranges_annotations():
    f = vkir.from_script(LOOPS)
    got = [(l.kind, l.min.value, l.extent.value, l.thread, dict(l.annotations))
           for l in _walk_of(f, ir.For)]
    assert got == [
        ("serial", 2, 4, None, {"a": 1}), ("unrolled", 0, 8, None, {"b": 2}),
        ("serial", 0, 8, None, {"c": 3}), ("serial", 0, 8, None, {"c": 3}),
        ("serial", 0, 8, None, {}), ("vectorized", 0, 8, None, {"d": 4}),
        ("thread_binding", 0, 2, "blockIdx.y", {"e": 5}), ("thread_binding", 0, 4, "threadIdx.z", {}),
    ]
    vkir.assert_structural_equal(vkir.from_script(f.script()), f)


EXPRS = '''
@T.prim_func
def exprs(I: T.Buffer((16,), "int32"), F: T.Buffer((16,), "float32"), V: T.Buffer((4,), "float32x4"),
          s: T.int32, x: T.float32):
    I[0] = (I[1] & s) | (I[2] ^ 3) << 1 >> 2
    I[1] = ~I[3]
    I[2] = T.truncdiv(I[4], s) + T.truncmod(I[5], s) + I[6] // s + I[7] % s
    I[3] = T.reinterpret(x, "int32") + T.min(s, 3) + T.max(s, 4)
    F[0] = T.exp(x) + T.log(x) + T.sqrt(x) + T.rsqrt(x) + T.tanh(x) + T.pow(x, x) + T.fabs(x)
    F[1] = T.floor(x) + T.ceil(x) + T.sin(x) + T.cos(x) + T.fma(x, x, x) + T.erf(x)
    F[2] = T.select(s < 2 and not s == 1 or s > 9, x, T.float32(1.5)) + T.if_then_else(s > 0, x, 2.0)
    F[3] = T.cast(T.int32(3), "float32") / x
    V[0] = T.ramp(T.float32(0), T.float32(1), 4) + T.broadcast(x, 4) + 1
'''


def test_expressions_map_to_ir():
    f = vkir.from_script(EXPRS)
    ops = [c.op for c in _walk_of(f, ir.Call)]
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right",
               "bitwise_not", "reinterpret", "exp", "log", "sqrt", "rsqrt", "tanh", "pow", "fabs",
               "floor", "ceil", "sin", "cos", "fma", "erf", "if_then_else"):
        assert op in ops, op
    kinds = {type(n) for n in ir.walk(f)}
    assert {ir.Div, ir.Mod, ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max, ir.Select, ir.Cast, ir.Ramp,
            ir.Broadcast, ir.And, ir.Or, ir.Not} <= kinds
    v_store = f.body.seq[-1]
    assert str(v_store.value.dtype) == "float32x4"
    assert v_store.value.b == ir.Broadcast(ir.FloatImm("float32", 1.0), 4)  # literal broadcast
    assert T.float32(1.5) == ir.FloatImm("float32", 1.5) and T.int32(3) == ir.IntImm("int32", 3)
    verify_types(f)
    vkir.assert_structural_equal(vkir.from_script(f.script()), f)


def test_division_semantics_match_numpy():
    f = vkir.from_script('''
@T.prim_func
def d(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "int32"), q: T.Buffer((4, 4), "int32")):
    for i in T.serial(4):
        q[0, i] = a[i] // b[i]
        q[1, i] = a[i] % b[i]
        q[2, i] = T.truncdiv(a[i], b[i])
        q[3, i] = T.truncmod(a[i], b[i])
''')
    a = np.array([-7, 7, -7, 7], "int32")
    b = np.array([2, -2, -2, 2], "int32")
    _, _, q = _interp(f, a, b, np.zeros((4, 4), "int32"))
    np.testing.assert_array_equal(q, [a // b, a % b, np.trunc(a / b), np.fmod(a, b)])


STMTS = '''
@T.prim_func
def stmts(A: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        S = T.alloc_buffer((8,), "float32", scope="shared")
        L = T.alloc_buffer((2,), "float32", scope="local")
        G = T.alloc_buffer((2,), "float32", scope="global")
        S4 = T.decl_buffer((2,), "float32x4", data=S.data)
        with T.async_commit_queue(0):
            with T.async_scope():
                S[tx] = A[tx]
        with T.async_wait_queue(0, 0):
            T.barrier()
        if tx == 0:
            L[0] = S[0]
        else:
            L[0] = 0.0
        T.evaluate(0)
        G[0] = L[0]
        A[tx] = G[0]
        S4[1] = T.broadcast(A[tx], 4)
'''


def test_statements_and_scopes():
    f = vkir.from_script(STMTS)
    allocs = {a.buffer.name: a.buffer.scope for a in _walk_of(f, ir.AllocBuffer)}
    assert allocs == {"S": "shared", "L": "local", "G": "global"}
    decl, = _walk_of(f, ir.DeclBuffer)
    assert str(decl.buffer.dtype) == "float32x4" and decl.buffer.data is \
        [a.buffer for a in _walk_of(f, ir.AllocBuffer) if a.buffer.name == "S"][0].data
    kinds = {type(n) for n in ir.walk(f)}
    assert {ir.AsyncScope, ir.AsyncCommitQueue, ir.AsyncWaitQueue, ir.Barrier, ir.Evaluate,
            ir.IfThenElse} <= kinds
    verify_types(f)
    verify_well_formed(f)
    vkir.assert_structural_equal(vkir.from_script(f.script()), f)


def test_binding_a_loop_variable_or_parameter_again_is_a_script_error():
    """(A name of the kernel's own assigned again is a variable; see test_script_parser.)"""
    with pytest.raises(vkir.ScriptError, match="already bound"):
        vkir.from_script('@T.prim_func\ndef g(A: T.Buffer((1,), "int32"), n: T.int32):\n'
                         '    n = 2\n    A[0] = n\n')
    with pytest.raises(vkir.ScriptError, match="already bound"):
        vkir.from_script('@T.prim_func\ndef g(A: T.Buffer((1,), "int32")):\n'
                         '    for i in T.serial(1):\n        i = 2\n        A[0] = i\n')


def test_script_error_points_at_file_line_col_with_caret():
    line = inspect.currentframe().f_lineno + 5
    with pytest.raises(vkir.ScriptError) as info:
        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                A[i] = T.no_such_function(A[i])
    head, source, caret = str(info.value).splitlines()[-3:]
    m = re.match(rf"{re.escape(__file__)}:{line}:(\d+): ", head)
    assert m, head
    col = int(m.group(1))  # 1-based column in the file's line
    file_line = Path(__file__).read_text().splitlines()[line - 1]
    assert file_line[col - 1:].startswith("T.no_such_function")
    assert source.strip() == file_line.strip() and caret.strip() == "^"
    # the caret sits under the named column of the quoted source line
    assert source[caret.index("^"):].startswith("T.no_such_function")


def test_script_round_trip_of_a_lowered_function():
    low = vkir.lower(vkir.from_script(EXPRS))
    vkir.assert_structural_equal(vkir.from_script(low.script()), low)
    vkir.assert_structural_equal(vkir.from_script(vadd.script()), vadd)


def test_structural_equal_is_alpha_equivalence():
    f = vkir.from_script('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")):\n'
                         '    for i in T.serial(8):\n        x = A[i] * 2.0\n        A[i] = x\n')
    g = vkir.from_script('@T.prim_func\ndef f(B: T.Buffer((8,), "float32")):\n'
                         '    for j in T.serial(8):\n        y = B[j] * 2.0\n        B[j] = y\n')
    h = vkir.from_script('@T.prim_func\ndef f(B: T.Buffer((8,), "float32")):\n'
                         '    for j in T.serial(8):\n        y = B[j] * 3.0\n        B[j] = y\n')
    assert vkir.structural_equal(f, g) and not vkir.structural_equal(f, h)
    vkir.assert_structural_equal(f, g)
    with pytest.raises(AssertionError, match="3.0"):
        vkir.assert_structural_equal(f, h)


# ==============================================================================================
# 4. passes, checker, interpreter


@T.prim_func
def vadd4(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
          C: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        C[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] + B[T.ramp(i * 4, 1, 4)]


@T.prim_func
def vadd4_vector(A: T.Buffer((4,), "float32x4"), B: T.Buffer((4,), "float32x4"),
                 C: T.Buffer((4,), "float32x4")):
    for i in T.serial(4):
        C[i] = A[i] + B[i]


@T.prim_func
def two_d(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i in T.serial(4):
        for j in T.vectorized(8):
            B[i, j] = A[i, j] * 2.0


def test_every_pass_is_named_configurable_and_pure():
    from vkir import transform as tr

    passes = [tr.FlattenBuffer(), tr.VectorizeLoop(), tr.VectorTypeRewrite(),
              tr.PointerCastVectorize(), tr.BoolToInt8(),
              tr.CommonSubexprElim(identify_equiv_terms=False),
              tr.CommonSubexprElim(identify_equiv_terms=True), tr.InjectSoftwarePipeline(),
              tr.LowerAsync(), tr.Simplify()]
    before = two_d.script()
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 8)).astype("float32"), np.zeros((4, 8), "float32"))
    for p in passes:
        out = p(two_d)
        assert isinstance(out, ir.PrimFunc)
        verify_types(out)
        _same_interp(two_d, out, *args)
    assert two_d.script() == before


def test_flatten_vectorize_simplify():
    from vkir.transform import FlattenBuffer, Simplify, VectorizeLoop

    flat = FlattenBuffer()(two_d)
    assert flat.buffer_map == two_d.buffer_map  # signature unchanged
    decls = _walk_of(flat, ir.DeclBuffer)
    assert {len(d.buffer.shape) for d in decls} == {1} and {d.buffer.data for d in decls} == set(two_d.params)
    vec = Simplify()(VectorizeLoop()(flat))
    assert not [f for f in _walk_of(vec, ir.For) if f.kind == "vectorized"]
    store, = _walk_of(vec, ir.BufferStore)
    i = _walk_of(vec, ir.For)[0].loop_var
    assert store.indices == (ir.Ramp(i * 8, 1, 8),)
    folded = Simplify()(vkir.from_script('@T.prim_func\ndef f(A: T.Buffer((4,), "int32")):\n'
                                         '    A[(2 + 3) * 0 + 1] = 4 * 2 - 1\n'))
    assert folded.body.indices == (ir.IntImm("int32", 1),) and folded.body.value == ir.IntImm("int32", 7)


def test_vector_type_rewrite_and_its_refusal():
    from vkir.transform import VectorTypeRewrite

    vkir.assert_structural_equal(VectorTypeRewrite()(vadd4), vadd4_vector)
    unaligned = vkir.from_script(vadd4.script().replace("i * 4, 1, 4", "i * 4 + 1, 1, 4")
                                 .replace("T.serial(4)", "T.serial(3)"))
    assert VectorTypeRewrite()(unaligned).script() == unaligned.script()


def test_pointer_cast_vectorize_is_an_explicit_decl_buffer():
    from vkir.transform import PointerCastVectorize

    out = PointerCastVectorize()(vadd4)
    casts = _walk_of(out, ir.DeclBuffer)
    assert {str(d.buffer.dtype) for d in casts} == {"float32x4"}
    assert {d.buffer.data for d in casts} == set(vadd4.params)  # same data: the one cast form
    assert out.buffer_map == vadd4.buffer_map
    verify_types(out)
    args = [np.arange(16, dtype="float32")] * 2 + [np.zeros(16, "float32")]
    _same_interp(vadd4, out, *args)


def test_bool_to_int8():
    from vkir.transform import BoolToInt8

    f = vkir.from_script('@T.prim_func\ndef f(M: T.Buffer((4,), "bool"), A: T.Buffer((4,), "int32")):\n'
                         '    for i in T.serial(4):\n        M[i] = A[i] > 0\n'
                         '        if M[i]:\n            A[i] = 1\n')
    out = BoolToInt8()(f)
    assert str(out.buffer_map[out.params[0]].dtype) == "int8"
    assert {str(c.dtype) for c in _walk_of(out, ir.Cast)} == {"bool", "int8"}
    verify_types(out, target="vulkan")
    args = (np.zeros(4, bool), np.array([-1, 2, 0, 5], "int32"))  # the same arguments for both
    want, got = _interp(f, *args), _interp(out, *args)
    np.testing.assert_array_equal(got[0], [False, True, False, True])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


@T.prim_func
def seed_cse(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32, z3: T.int32):
    z1 = 1
    z2 = 2
    buffer[i1] = z1 + z2
    x = 1
    y = 1
    a = (x + y) + (z1 + z2)
    b = (x + y) + z3
    buffer[i2] = a + b


@T.prim_func
def seed_cse_expected(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32, z3: T.int32):
    z1 = 1
    z2 = 2
    cse_v1 = z1 + z2
    buffer[i1] = cse_v1
    x = 1
    y = 1
    cse_v2 = x + y
    a = cse_v2 + cse_v1
    b = cse_v2 + z3
    buffer[i2] = a + b


def test_common_subexpr_elim_seed_example_and_option():
    from vkir.transform import CommonSubexprElim

    vkir.assert_structural_equal(CommonSubexprElim()(seed_cse), seed_cse_expected)
    f = vkir.from_script('@T.prim_func\ndef f(A: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):\n'
                         '    A[0] = x * y + 1\n    A[1] = y * x + 1\n')
    assert CommonSubexprElim()(f).script() == f.script()
    equiv = CommonSubexprElim(identify_equiv_terms=True)(f)
    assert [n.var.name for n in _walk_of(equiv, ir.LetStmt)] == ["cse_v1"]


@T.prim_func
def two_stage_async(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1],
                                       "software_pipeline_order": [0, 1],
                                       "software_pipeline_async_stages": [0]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0] + T.float32(1)


@T.prim_func
def two_stage_async_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    with T.async_commit_queue(0):
        with T.async_scope():
            B[0, 0] = A[0] + T.float32(1)
    for i in T.serial(15):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[(i + 1) % 2, 0] = A[i + 1] + T.float32(1)
        with T.async_wait_queue(0, 1):
            C[i] = B[i % 2, 0] + T.float32(1)
    with T.async_wait_queue(0, 0):
        C[15] = B[1, 0] + T.float32(1)


def test_software_pipeline_async_and_lowering():
    from vkir.transform import InjectSoftwarePipeline, LowerAsync

    piped = InjectSoftwarePipeline()(two_stage_async)
    vkir.assert_structural_equal(piped, two_stage_async_expected)
    a = np.random.default_rng(1).standard_normal(16).astype("float32")
    _same_interp(two_stage_async, piped, a, np.zeros(16, "float32"))
    lowered = LowerAsync()(piped)
    assert not {ir.AsyncScope, ir.AsyncCommitQueue, ir.AsyncWaitQueue} & {type(n) for n in ir.walk(lowered)}
    _same_interp(two_stage_async, lowered, a, np.zeros(16, "float32"))

    class WaitCount(ir.Mutator):  # the interpreter's async model: a wrong count reads stale data
        def visit_AsyncWaitQueue(self, node):
            return ir.AsyncWaitQueue(node.queue, ir.const(2), self.visit(node.body))

    wrong = piped.with_body(WaitCount().visit(piped.body))
    assert not np.array_equal(_interp(wrong, a, np.zeros(16, "float32"))[1], a + 2)
    bad = vkir.from_script(two_stage_async.script().replace('"software_pipeline_order": [0, 1]',
                                                            '"software_pipeline_order": [0, 0]'))
    with pytest.raises(vkir.TransformError):
        InjectSoftwarePipeline()(bad)


CLIP = '''
@T.prim_func
def clip(A: T.Buffer((4, 3), "float32"), B: T.Buffer((3, 4), "float32"), D: T.Buffer((4, 4), "float32")):
    temp = T.alloc_buffer((4, 4), "float32")
    for i, j in T.grid(4, 4):
        temp[i, j] = T.float32(0)
        for k in T.serial(3):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(4, 4):
        D[i, j] = T.min(T.max(temp[i, j], T.float32(-1)), T.float32(1))
'''


def test_fuse_reduction_epilogue_is_exact_and_refuses():
    from vkir.schedule import fuse_reduction_epilogue

    f = vkir.from_script(CLIP)
    fused = fuse_reduction_epilogue(f, "temp")
    assert not [a for a in _walk_of(fused, ir.AllocBuffer) if a.buffer.name == "temp"]
    verify_types(fused)
    # partial sums 2, 0.5 → per-iteration clipping would give 0.5, the exact answer is 1
    a = np.array([[2.0, -1.5, 0.0]] * 4, "float32")
    b = np.ones((3, 4), "float32")
    d = _interp(fused, a, b, np.zeros((4, 4), "float32"))[2]
    np.testing.assert_allclose(d, np.clip(a @ b, -1, 1))
    np.testing.assert_allclose(d, 0.5)
    transposed = vkir.from_script(CLIP.replace("T.max(temp[i, j]", "T.max(temp[j, i]"))
    with pytest.raises(vkir.ScheduleError):
        fuse_reduction_epilogue(transposed, "temp")


def test_verify_well_formed_scoping_and_barriers():
    x = ir.Var("x")
    with pytest.raises(vkir.VkirError, match="x"):
        verify_well_formed(ir.PrimFunc([], ir.Evaluate(x), {}))
    with pytest.raises(vkir.VkirError, match="twice"):
        verify_well_formed(ir.PrimFunc([], ir.LetStmt(x, 1, ir.LetStmt(x, 2, ir.Evaluate(x))), {}))
    f = vkir.from_script('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")):\n'
                         '    for tx in T.thread_binding(8, "threadIdx.x"):\n'
                         '        if tx < 4:\n            T.barrier()\n        A[tx] = 1.0\n')
    with pytest.raises(vkir.VkirError, match="barrier"):
        verify_well_formed(f)


VECTOR_PARAM = '''
@T.prim_func
def g(A: T.Buffer((2, 4), "float32x4"), B: T.Buffer((2, 16), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            B[bx, T.ramp(tx * 4, 1, 4)] = A[bx, tx] * 2.0
'''


def test_interpret_vector_buffers_take_scalar_arrays():
    f = vkir.from_script(VECTOR_PARAM)
    verify_types(f)
    a = np.arange(32, dtype="float32").reshape(2, 16)  # S[:-1] + (S[-1] * lanes,)
    _, b = _interp(f, a, np.zeros((2, 16), "float32"))
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(vkir.ArgumentError):
        vkir.interpret(f, np.zeros((2, 5), "float32"), b)
    with pytest.raises(vkir.ArgumentError):
        vkir.interpret(f, a)


def test_interpret_workgroups_meet_at_barriers():
    f = vkir.from_script('''
@T.prim_func
def swap(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            S = T.alloc_buffer((32,), "float32", scope="shared")
            S[tx] = A[bx * 32 + tx]
            T.barrier()
            A[bx * 32 + tx] = S[31 - tx]
''')
    a = np.arange(64, dtype="float32")
    np.testing.assert_array_equal(_interp(f, a)[0], a.reshape(2, 32)[:, ::-1].ravel())


def test_lower_default_pipeline():
    from vkir.spirv import Target

    for target in (None, Target()):
        low = vkir.lower(two_d, target=target)
        verify_types(low, target="vulkan")
        assert {len(d.buffer.shape) for d in _walk_of(low, ir.DeclBuffer)} <= {1}
        assert not [f for f in _walk_of(low, ir.For) if f.kind == "vectorized"]
    # importing the analyses in any order leaves vkir.lower working
    code = ("from vkir.analysis import verify_well_formed\nimport vkir\nfrom vkir import T\n"
            "vkir.lower(vkir.from_script('@T.prim_func\\ndef f(A: T.Buffer((1,), \"int32\")):\\n"
            "    A[0] = 1\\n'))")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_error_classes():
    names = ["ScriptError", "TypeCheckError", "TransformError", "ScheduleError",
             "SpirvValidationError", "UnsupportedError", "DeviceError", "ArgumentError"]
    for name in names:
        cls = getattr(vkir, name)
        assert issubclass(cls, vkir.VkirError) and issubclass(vkir.VkirError, Exception)
    assert len({getattr(vkir, n) for n in names}) == len(names)
    with pytest.raises(vkir.SpirvValidationError):
        vkir.spirv.validate(b"\x03\x02\x23\x07" + bytes(16))


def test_unsupported_feature_names_it():
    from vkir.spirv import Target, codegen, disassemble

    f = vkir.from_script('@T.prim_func\ndef g(A: T.Buffer((4,), "int8")):\n'
                         '    for i in T.serial(4):\n        A[i] = A[i] + T.int8(1)\n')
    # lowered for a target that has int8, then generated for one that lacks it: named
    with pytest.raises(vkir.UnsupportedError, match="int8"):
        codegen(vkir.lower(f, Target.lavapipe()), Target())
    # lowered for the target itself, the 8-bit values are emulated in 32 bits (any device runs it)
    assert "OpCapability Int8" not in disassemble(codegen(vkir.lower(f, Target()), Target()).words)


# ==============================================================================================
# 6. runtime and facade (device tests: lavapipe in CI)


def test_devices_and_device_selection(device, monkeypatch):
    infos = vkir.devices()
    assert infos and [f.name for f in dataclasses.fields(type(infos[0]))][:6] == \
        ["name", "kind", "driver", "api_version", "limits", "features"]
    for d in infos:
        assert d.kind in ("discrete", "integrated", "virtual", "cpu", "other")
        assert re.match(r"\d+\.\d+", d.api_version) and isinstance(d.features, frozenset)
        assert d.limits.max_workgroup_invocations >= 128 and d.limits.max_push_constant_bytes >= 128
    cpu = [i for i, d in enumerate(infos) if d.kind == "cpu"]
    lavapipe = [i for i, d in enumerate(infos) if "llvmpipe" in d.name.lower()]
    selectors = ["0"] + (["cpu"] if cpu else []) + (["lavapipe"] if lavapipe else [])
    for sel in selectors:
        monkeypatch.setenv("VKIR_DEVICE", sel)
        want = infos[{"0": 0, "cpu": cpu[0] if cpu else 0,
                      "lavapipe": lavapipe[0] if lavapipe else 0}[sel]]
        assert vkir.device().info.name == want.name
    if not lavapipe:  # "lavapipe" means Mesa's driver only, never another CPU driver
        monkeypatch.setenv("VKIR_DEVICE", "lavapipe")
        with pytest.raises(vkir.DeviceError, match="no device matches"):
            vkir.device()
    monkeypatch.delenv("VKIR_DEVICE")
    ranks = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}
    assert ranks[vkir.device().info.kind] == min(ranks[d.kind] for d in infos)


def test_arrays(device):
    x = vkir.array(np.arange(6, dtype="int32").reshape(2, 3), device=device)
    assert (x.shape, x.dtype, x.device) == ((2, 3), np.dtype("int32"), device)
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3))
    y = vkir.zeros((5,), "float32", device=device)
    assert (y.shape, y.dtype) == ((5,), np.dtype("float32")) and not y.numpy().any()
    e = vkir.empty((5,), "float32", device=device)   # uninitialized, as numpy.empty
    assert (e.shape, e.dtype) == ((5,), np.dtype("float32"))
    assert vkir.empty((4,), "float32x4", device=device).shape == (16,)


def test_build_call_profile(device):
    k = vkir.build(vadd, device=device)
    assert isinstance(k.spirv, bytes) and k.spirv[:4] == b"\x03\x02\x23\x07"
    assert "OpEntryPoint GLCompute" in k.asm and isinstance(k.ir, ir.PrimFunc)
    vkir.spirv.validate(k.spirv, vkir.api.target_for(device.info).env)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(1000).astype("float32") for _ in range(2))
    c = np.zeros(1000, "float32")
    k(a, b, c)                                              # numpy in, written buffers back
    np.testing.assert_array_equal(c, a + b)
    ref = _interp(vadd, a, b, np.zeros(1000, "float32"))[2]
    np.testing.assert_array_equal(c, ref)
    A, B, C = vkir.array(a, device=device), vkir.array(b, device=device), vkir.empty(1000, "float32", device=device)
    k(A, B, C)
    np.testing.assert_array_equal(C.numpy(), a + b)
    p = k.profile(A, B, C, repeat=5)
    assert 0 < p.min <= p.median <= p.max
    c2 = np.full(1000, 7, "float32")
    for args in ((a, b), (a.astype("float64"), b, c2), (a, b[:10], c2)):
        with pytest.raises(vkir.ArgumentError):
            k(*args)
    assert (c2 == 7).all()


def test_kernel_vector_params_take_scalar_arrays(device):
    k = vkir.build(vkir.from_script(VECTOR_PARAM), device=device)
    a = np.arange(32, dtype="float32").reshape(2, 16)
    b = np.zeros((2, 16), "float32")
    k(a, b)
    np.testing.assert_array_equal(b, a * 2)
    A = vkir.zeros((2, 4), "float32x4", device=device)  # the same scalar layout
    B = vkir.array(b, device=device)
    k(A, B)
    assert A.shape == (2, 16) and not B.numpy().any()


def test_vectorized_kernel_gets_vector_loads(device):
    f = vkir.from_script('''
@T.prim_func
def scale(a: T.Buffer((1024,), "float32"), b: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                b[bx * 256 + tx * 4 + v] = a[bx * 256 + tx * 4 + v] * T.float32(2)
''')
    k = vkir.build(f, device=device)
    assert buffer_reads(k.asm)[1] >= 1 and "OpTypeVector %float 4" in k.asm
    a = np.random.default_rng(0).standard_normal(1024).astype("float32")
    b = np.zeros(1024, "float32")
    k(a, b)
    np.testing.assert_array_equal(b, a * 2)


# ==============================================================================================
# 6-8. command line and benchmark JSON


CLI_KERNELS = "from vkir import T\n" + VADD_SOURCE


def test_cli_compile_run_devices_demo(device, tmp_path, capsys):
    from vkir.tools.cli import main

    path = tmp_path / "k.py"
    path.write_text(CLI_KERNELS)
    assert main(["compile", f"{path}:vadd", "--emit", "ir"]) == 0
    vkir.assert_structural_equal(vkir.from_script(capsys.readouterr().out), vadd)
    assert main(["compile", str(path), "--emit", "lowered"]) == 0
    assert "def vadd" in capsys.readouterr().out
    assert main(["compile", f"{path}:vadd"]) == 0 and "OpEntryPoint" in capsys.readouterr().out
    out = tmp_path / "k.spv"
    assert main(["compile", f"{path}:vadd", "--emit", "spv", "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x03\x02\x23\x07"
    assert main(["compile", f"{path}:vadd", "--emit", "asm", "-o", str(tmp_path / "k.s")]) == 0
    assert "OpEntryPoint" in (tmp_path / "k.s").read_text()
    assert main(["run", f"{path}:vadd"]) == 0
    assert "matches" in capsys.readouterr().out
    assert main(["devices"]) == 0 and device.info.name in capsys.readouterr().out
    assert main(["demo"]) == 0


def test_cli_entry_points_and_bench_json(device, tmp_path):
    out = tmp_path / "bench.jsonl"
    proc = subprocess.run([sys.executable, "-m", "vkir", "bench", "--quick", "--workload", "vadd",
                           "--repeat", "3", "--json", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows
    for row in rows:
        assert list(row) == ["workload", "impl", "device", "metric", "median", "min", "max", "n",
                             "gflops", "gbps", "size", "quick", "cpu_s", "gflops_cpu",
                             "gbps_cpu"]
        assert row["impl"] in ("vkir", "vkir_mirror", "glsl", "numpy", "iree")
        assert row["metric"] in ("device_s", "wall_s", "compile_s", "latency_s")
        assert row["min"] <= row["median"] <= row["max"] and row["n"] == 3
        assert row["size"] == [1 << 16] and row["quick"] is True
    assert {r["impl"] for r in rows} - {"iree"} == {"vkir", "vkir_mirror", "glsl", "numpy"}
    script = Path(sys.executable).with_name("vkir")
    if script.exists():  # the console script of the installed distribution
        assert subprocess.run([str(script), "devices"], capture_output=True).returncode == 0
