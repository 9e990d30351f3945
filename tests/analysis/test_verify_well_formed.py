"""Scoping, SSA and barrier-uniformity checks."""

import pytest

import vkir
from vkir import T, ir
from vkir.analysis import verify_well_formed
from vkir.ir import (AllocBuffer, Barrier, BufferStore, DeclBuffer, Evaluate, For, IfThenElse,
                     LetStmt, PrimFunc, Var, decl_buffer, seq)


def func_of(body, *buffers, params=()):
    return PrimFunc(tuple(b.data for b in buffers) + tuple(params), body,
                    {b.data: b for b in buffers})


def fails(func, *fragments):
    with pytest.raises(vkir.WellFormedError) as info:
        verify_well_formed(func)
    for frag in fragments:
        assert frag in str(info.value), str(info.value)


@T.prim_func
def reduce(a: T.Buffer(("n",), "float32"), out: T.Buffer((4,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            s[tx] = T.if_then_else(bx * 64 + tx < n, a[bx * 64 + tx], T.float32(0))
            T.barrier()
            for k in T.serial(6):
                stride = 32 >> k
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.barrier()
            if tx == 0:
                out[bx] = s[0]
            if bx < 2:
                T.barrier()


def test_well_formed_kernel_passes():
    assert verify_well_formed(reduce) is None


def test_undefined_variable():
    a = decl_buffer((4,), "int32", "a")
    x = Var("x")
    fails(func_of(BufferStore(a, x, (0,)), a), "variable x", "undefined")


def test_loop_var_used_after_its_loop():
    a = decl_buffer((4,), "int32", "a")
    i = Var("i")
    body = seq(For(i, 0, 4, "serial", BufferStore(a, i, (i,))), BufferStore(a, i, (0,)))
    fails(func_of(body, a), "variable i")


def test_var_bound_twice():
    a = decl_buffer((4,), "int32", "a")
    i = Var("i")
    loop = For(i, 0, 4, "serial", BufferStore(a, i, (i,)))
    fails(func_of(seq(loop, loop), a), "bound twice")
    x = Var("x")
    fails(func_of(LetStmt(x, 1, LetStmt(x, 2, Evaluate(x))), a), "x is bound twice")
    n = Var("n")
    fails(func_of(For(n, 0, 4, "serial", Evaluate(n)), a, params=(n,)), "n is bound twice")


def test_let_expression_scope():
    a = decl_buffer((4,), "int32", "a")
    x = Var("x")
    verify_well_formed(func_of(BufferStore(a, ir.Let(x, 1, x + 1), (0,)), a))
    fails(func_of(BufferStore(a, ir.Let(x, 1, x) + x, (0,)), a), "variable x")


def test_size_vars_are_defined():
    n = Var("n")
    a = decl_buffer((n,), "int32", "a")
    i = Var("i")
    func = func_of(For(i, 0, n, "serial", BufferStore(a, i, (i,))), a)
    assert n in func.size_vars    # n is defined by the buffer's shape, not a parameter
    assert verify_well_formed(func) is None
    # without the buffer that declares it, n is an undefined variable
    m = Var("m")
    fails(func_of(For(i, 0, m, "serial", BufferStore(a, i, (i,))), a), "variable m")


def test_buffer_used_outside_its_allocation():
    a = decl_buffer((4,), "int32", "a")
    s = decl_buffer((4,), "int32", "s", scope="shared")
    body = seq(AllocBuffer(s, BufferStore(s, 1, (0,))), BufferStore(a, s[0], (0,)))
    fails(func_of(body, a), "buffer s", "outside")


def test_buffer_declared_twice():
    a = decl_buffer((4,), "int32", "a")
    s = decl_buffer((4,), "int32", "s", scope="shared")
    alloc = AllocBuffer(s, BufferStore(s, 1, (0,)))
    fails(func_of(seq(alloc, alloc), a), "twice")


def test_undeclared_buffer():
    a = decl_buffer((4,), "int32", "a")
    other = decl_buffer((4,), "int32", "other")
    fails(func_of(BufferStore(a, other[0], (0,)), a), "buffer other")


def test_decl_buffer_data_must_be_in_scope():
    a = decl_buffer((16,), "float32", "a")
    ok = decl_buffer((4,), "float32x4", "a4", data=a.data)
    verify_well_formed(func_of(DeclBuffer(ok, BufferStore(ok, ok[1], (0,))), a))
    stray = decl_buffer((4,), "float32x4", "stray")
    fails(func_of(DeclBuffer(stray, Evaluate(0)), a), "DeclBuffer stray", "not in scope")
    s = decl_buffer((4,), "float32", "s", scope="shared")
    alias = decl_buffer((1,), "float32x4", "alias", data=s.data, scope="shared")
    body = seq(AllocBuffer(s, Evaluate(0)), DeclBuffer(alias, Evaluate(0)))
    fails(func_of(body, a), "not in scope")


def test_buffer_sizes_must_be_defined():
    a = decl_buffer((4,), "int32", "a")
    m = Var("m")
    s = decl_buffer((m,), "int32", "s", scope="shared")
    fails(func_of(AllocBuffer(s, Evaluate(0)), a), "variable m")


def _threads(body, tx):
    return For(tx, 0, 64, "thread_binding", body, thread="threadIdx.x")


def test_barrier_under_thread_dependent_if():
    a = decl_buffer((64,), "int32", "a")
    tx = Var("tx")
    bad = _threads(IfThenElse(ir.LT(tx, 32), Barrier()), tx)
    fails(func_of(bad, a), "barrier in non-uniform control flow", "tx < 32")
    # through a let and through a load at a thread-dependent index
    t2, v = Var("t2"), Var("v")
    bad = _threads(LetStmt(t2, tx * 2, IfThenElse(ir.GT(t2, 3), seq(Evaluate(0), Barrier()))), tx)
    fails(func_of(bad, a), "non-uniform")
    bad = _threads(LetStmt(v, a[tx], IfThenElse(ir.EQ(v, 0), Evaluate(0), Barrier())), tx)
    fails(func_of(bad, a), "non-uniform")
    # a uniform condition is fine, even inside the thread loop
    ok = _threads(IfThenElse(ir.EQ(a[0], 0), Barrier()), tx)
    verify_well_formed(func_of(ok, a))


def test_barrier_in_thread_dependent_loop():
    a = decl_buffer((64,), "int32", "a")
    tx, k = Var("tx"), Var("k")
    fails(func_of(_threads(For(k, 0, tx, "serial", Barrier()), tx), a), "non-uniform")
    verify_well_formed(func_of(_threads(For(k, 0, 8, "serial", Barrier()), tx), a))


def test_block_dependent_condition_is_uniform():
    a = decl_buffer((64,), "int32", "a")
    bx, tx = Var("bx"), Var("tx")
    body = For(bx, 0, 4, "thread_binding", _threads(IfThenElse(ir.LT(bx, 2), Barrier()), tx),
               thread="blockIdx.x")
    assert verify_well_formed(func_of(body, a)) is None
    # the same barrier under a condition on the thread index is refused
    fails(func_of(_threads(IfThenElse(ir.LT(tx, 2), Barrier()), tx), a), "non-uniform")


def test_message_has_span():
    src = '''
@T.prim_func
def k(a: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx < 10:
            T.barrier()
'''
    f = vkir.from_script(src)
    fails(f, "non-uniform", ":6:")
