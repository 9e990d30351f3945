"""Workgroups and barriers: shared memory is per workgroup, local per invocation, and the
invocations of a workgroup meet at every T.barrier()."""

import numpy as np
import pytest

from vkir import T
from vkir.interpreter import interpret

rng = np.random.default_rng(2)


@T.prim_func
def block_sum(a: T.Buffer((1024,), "float32"), out: T.Buffer((16,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            s[tx] = a[bx * 64 + tx]
            T.barrier()
            for k in T.serial(6):
                stride = 32 >> k
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.barrier()
            if tx == 0:
                out[bx] = s[0]


def test_reduction_through_shared_memory():
    a = rng.integers(-50, 50, 1024).astype(np.float32)
    out = np.zeros(16, np.float32)
    interpret(block_sum, a, out)
    np.testing.assert_array_equal(out, a.reshape(16, 64).sum(axis=1))


@T.prim_func
def swap_halves(a: T.Buffer((256,), "int32"), b: T.Buffer((256,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((64,), "int32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            s[tx] = a[bx * 64 + tx]
            T.barrier()
            v = s[(tx + 32) % 64]
            T.barrier()
            s[tx] = v
            T.barrier()
            b[bx * 64 + tx] = s[63 - tx]


def test_swap_through_shared_memory():
    a = np.arange(256, dtype=np.int32)
    b = np.zeros(256, np.int32)
    interpret(swap_halves, a, b)
    blocks = a.reshape(4, 64)
    rolled = np.roll(blocks, -32, axis=1)
    np.testing.assert_array_equal(b.reshape(4, 64), rolled[:, ::-1])


@T.prim_func
def transpose_tile(a: T.Buffer((32, 32), "float32"), b: T.Buffer((32, 32), "float32")):
    for by in T.thread_binding(4, "blockIdx.y"):
        for bx in T.thread_binding(4, "blockIdx.x"):
            tile = T.alloc_buffer((8, 8), "float32", scope="shared")
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    tile[ty, tx] = a[by * 8 + ty, bx * 8 + tx]
                    T.barrier()
                    b[bx * 8 + ty, by * 8 + tx] = tile[tx, ty]


def test_nested_thread_dims_transpose():
    a = rng.random((32, 32), dtype=np.float32)
    b = np.zeros((32, 32), np.float32)
    interpret(transpose_tile, a, b)
    np.testing.assert_array_equal(b, a.T)


@T.prim_func
def hoisted_local(a: T.Buffer((8, 16), "float32"), out: T.Buffer((8,), "float32")):
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            acc[0] = T.float32(0)
            for k in T.serial(16):
                acc[0] = acc[0] + a[bx * 4 + tx, k]
            out[bx * 4 + tx] = acc[0]


def test_local_buffer_is_per_invocation():
    a = rng.integers(0, 10, (8, 16)).astype(np.float32)
    out = np.zeros(8, np.float32)
    interpret(hoisted_local, a, out)
    np.testing.assert_array_equal(out, a.sum(axis=1))


@T.prim_func
def local_set_by_outer(out: T.Buffer((4, 8), "int32")):
    for ty in T.thread_binding(4, "threadIdx.y"):
        loc = T.alloc_buffer((1,), "int32", scope="local")
        loc[0] = ty * 10
        for tx in T.thread_binding(8, "threadIdx.x"):
            loc[0] = loc[0] + tx
            out[ty, tx] = loc[0]


def test_local_values_are_inherited_by_inner_invocations():
    out = np.zeros((4, 8), np.int32)
    interpret(local_set_by_outer, out)
    np.testing.assert_array_equal(out, np.arange(4)[:, None] * 10 + np.arange(8))


@T.prim_func
def triangle(out: T.Buffer((16,), "int32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        out[tx] = 0
        for k in T.serial(tx):
            out[tx] = out[tx] + k
        T.barrier()
        if tx % 2 == 1:
            out[tx] = -out[tx]
        else:
            out[tx] = out[tx] + 1000


def test_divergent_loop_and_branches():
    out = np.zeros(16, np.int32)
    interpret(triangle, out)
    t = np.arange(16)
    tri = t * (t - 1) // 2
    np.testing.assert_array_equal(out, np.where(t % 2 == 1, -tri, tri + 1000))


@T.prim_func
def neighbours(a: T.Buffer((128,), "float32"), b: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        s = T.alloc_buffer((66,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            s[tx + 1] = a[bx * 64 + tx]
            if tx == 0:
                s[0] = T.float32(0)
                s[65] = T.float32(0)
            T.barrier()
            b[bx * 64 + tx] = s[tx] + s[tx + 1] + s[tx + 2]


def test_stencil_with_halo():
    a = rng.random(128, dtype=np.float32)
    b = np.zeros(128, np.float32)
    interpret(neighbours, a, b)
    pad = np.pad(a.reshape(2, 64), ((0, 0), (1, 1)))
    want = pad[:, :-2] + pad[:, 1:-1] + pad[:, 2:]
    np.testing.assert_allclose(b.reshape(2, 64), want, rtol=1e-6)


@T.prim_func
def divergent_barrier(a: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx < 32:
            T.barrier()
            a[tx] = T.float32(1)


@T.prim_func
def uniform_barrier_under_if(a: T.Buffer((64,), "float32"), flag: T.int32):
    for tx in T.thread_binding(64, "threadIdx.x"):
        if flag > 0:
            a[tx] = T.float32(1)
            T.barrier()
        if tx < 64:
            T.barrier()


def test_barrier_reached_by_part_of_the_workgroup_is_an_error():
    from vkir.interpreter import InterpreterError

    with pytest.raises(InterpreterError, match="32 of the 64"):
        interpret(divergent_barrier, np.zeros(64, np.float32))
    a = np.zeros(64, np.float32)
    interpret(uniform_barrier_under_if, a, 1)
    assert (a == 1).all()


def test_a_barrier_in_a_branch_names_its_source_line():
    import numpy as np

    import vkir
    from vkir.interpreter import InterpreterError

    f = vkir.from_script('''
@T.prim_func
def f(a: T.Buffer((64,), "int32")):
    for t in T.thread_binding(64, "threadIdx.x"):
        if t < 32:
            T.barrier()
        a[t] = t
''')
    with pytest.raises(InterpreterError, match=r"reached by only 32 of the 64 invocations .* at "
                                               r"<script>:6:13\n    T.barrier\(\)"):
        vkir.interpret(f, np.zeros(64, np.int32))
