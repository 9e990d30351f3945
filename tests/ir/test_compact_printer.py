"""`vkir.ir.printer.compact`: the one printer's one-line form for messages (depth-limited, head
lines of compound statements, safe on ill-typed IR)."""

from vkir import ir
from vkir.ir.printer import compact, script

n, i = ir.Var("n"), ir.Var("i")
A = ir.decl_buffer((n,), "float32", "A")


def test_expressions_print_as_script_up_to_the_depth_limit():
    e = A[i + 1] * ir.const(2.0, "float32") + A[i]
    assert compact(e) == script(e) == "A[i + 1] * 2.0 + A[i]"
    deep = i
    for k in range(10):
        deep = deep + k
    assert compact(deep, depth=3) == "... + 6 + 7 + 8 + 9"
    assert compact(deep, limit=12) == "... + 5 +..."
    assert compact(ir.const(3, "int64")) == "T.int64(3)"


def test_statements_print_their_head_line():
    store = ir.BufferStore(A, ir.const(0.0, "float32"), (i,))
    loop = ir.For(i, 0, n, "serial", store)
    assert compact(loop) == "for i in T.serial(n):"
    assert compact(ir.For(i, 2, n, "thread_binding", store, thread="threadIdx.x")) == \
        'for i in T.thread_binding(2, 2 + n, "threadIdx.x"):'
    assert compact(ir.SeqStmt((store,) * 4)) == "A[i] = 0.0; A[i] = 0.0; A[i] = 0.0; ..."
    assert compact(ir.LetStmt(i, n * 2, store)) == "i = n * 2"
    func = ir.PrimFunc((A.data,), loop, {A.data: A})
    assert compact(func) == f"def {func.name}(...)"


def test_ill_typed_ir_prints_without_computed_dtypes():
    """A Shuffle of no vectors has no dtype; a store of a pointer var is nonsense: both print."""
    shuffle = ir.Shuffle((), ())
    assert compact(ir.Evaluate(shuffle)) == "T.evaluate(T.shuffle([], []))"
    assert compact(ir.BufferStore(A, A.data, (i,))) == "A[i] = A.data"
