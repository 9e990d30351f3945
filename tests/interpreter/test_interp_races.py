"""Data races: the interpreter runs a workgroup in lockstep, so a missing T.barrier() still gives
the right answer there; it must raise DataRaceError instead, naming the buffer, the element, both
invocations and both accesses (vkir/interpreter/races.py has the rule)."""

import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.interpreter import DataRaceError, InterpreterError, interpret

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the kernels live in benchmarks/
from benchmarks.bench_pipeline import matmul_kernels  # noqa: E402

rng = np.random.default_rng(7)


def _line(marker: str) -> int:
    """Line number of the (single) line of this file ending with the comment `# marker`."""
    lines = Path(__file__).read_text().splitlines()
    (n,) = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}")]
    return n


# ----------------------------------------------------------------------------------------------
# reduction through shared memory


@T.prim_func
def block_sum(a: T.Buffer((256,), "float32"), out: T.Buffer((4,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
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


@T.prim_func
def block_sum_racy(a: T.Buffer((256,), "float32"), out: T.Buffer((4,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            s[tx] = a[bx * 64 + tx]
            T.barrier()
            for k in T.serial(6):
                stride = 32 >> k
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]  # reduce
            if tx == 0:
                out[bx] = s[0]


def test_reduction_with_its_barriers_passes():
    a = rng.integers(-50, 50, 256).astype(np.float32)
    out = np.zeros(4, np.float32)
    interpret(block_sum, a, out)
    np.testing.assert_array_equal(out, a.reshape(4, 64).sum(axis=1))


def test_reduction_without_the_loop_barrier_raises():
    a = rng.integers(-50, 50, 256).astype(np.float32)
    out = np.zeros(4, np.float32)
    line = _line("reduce")
    # step k=1 (stride 16): thread 0 reads s[16], which thread 16 wrote in step k=0 with no
    # barrier between
    with pytest.raises(DataRaceError) as err:
        interpret(block_sum_racy, a, out)
    msg = str(err.value)
    assert msg.startswith("data race on shared buffer s[16]: written by thread (tx=16) of "
                          "workgroup (bx=0) at ")
    assert f"test_interp_races.py:{line}:21 and read by thread (tx=0) of workgroup (bx=0) at " \
        in msg
    assert msg.endswith(f"test_interp_races.py:{line}:37 with no T.barrier() between")


def test_check_races_false_restores_the_lockstep_result():
    a = rng.integers(-50, 50, 256).astype(np.float32)
    out = np.zeros(4, np.float32)
    interpret(block_sum_racy, a, out, check_races=False)
    np.testing.assert_array_equal(out, a.reshape(4, 64).sum(axis=1))  # lockstep hides the race
    out2 = np.zeros(4, np.float32)
    vkir.interpret(block_sum_racy, a, out2, check_races=False)  # the facade passes it on
    np.testing.assert_array_equal(out2, out)


def test_data_race_error_is_an_interpreter_error():
    assert issubclass(DataRaceError, InterpreterError)
    assert issubclass(DataRaceError, vkir.VkirError)


# ----------------------------------------------------------------------------------------------
# swaps, stencils, own elements


@T.prim_func
def swap(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((64,), "int32", scope="shared")
        s[tx] = a[tx]  # swap write
        T.barrier()
        v = s[(tx + 32) % 64]  # swap read
        s[tx] = v  # swap overwrite
        T.barrier()
        b[tx] = s[tx]


def test_swap_without_a_barrier_raises_write_after_read():
    a = np.arange(64, dtype=np.int32)
    with pytest.raises(DataRaceError) as err:
        interpret(swap, a, np.zeros(64, np.int32))
    # thread 32 reads s[0] and thread 0 then overwrites it: nothing orders the two
    read, write = _line("swap read"), _line("swap overwrite")
    assert re.search(rf"data race on shared buffer s\[0\]: read by thread \(tx=32\) at "
                     rf"\S+test_interp_races.py:{read}:\d+ and written by thread \(tx=0\) at "
                     rf"\S+test_interp_races.py:{write}:\d+ with no T.barrier\(\) between",
                     str(err.value))


@T.prim_func
def swap_synced(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((64,), "int32", scope="shared")
        s[tx] = a[tx]
        T.barrier()
        v = s[(tx + 32) % 64]
        T.barrier()
        s[tx] = v
        T.barrier()
        b[tx] = s[63 - tx]


def test_swap_with_barriers_passes():
    a = np.arange(64, dtype=np.int32)
    b = np.zeros(64, np.int32)
    interpret(swap_synced, a, b)
    np.testing.assert_array_equal(b, np.roll(a, -32)[::-1])


@T.prim_func
def own_elements(a: T.Buffer((8, 64), "float32"), b: T.Buffer((8, 64), "float32")):
    for bx in T.thread_binding(8, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            s = T.alloc_buffer((64,), "float32", scope="shared")
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for k in T.serial(4):
                s[tx] = a[bx, tx] * T.cast(k, "float32")
                acc[0] = acc[0] + s[tx]
                b[bx, tx] = b[bx, tx] + acc[0]


def test_each_invocation_on_its_own_elements_never_races():
    a = rng.random((8, 64), dtype=np.float32)
    b = np.zeros((8, 64), np.float32)
    interpret(own_elements, a, b)
    np.testing.assert_allclose(b, a * (0 + 1 + 3 + 6), rtol=1e-6)


@T.prim_func
def vector_own(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        b[T.ramp(tx * 4, 1, 4)] = a[T.ramp(tx * 4, 1, 4)] + T.broadcast(T.float32(1), 4)


@T.prim_func
def vector_overlap(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    for tx in T.thread_binding(63, "threadIdx.x"):
        b[T.ramp(tx * 2, 1, 4)] = a[T.ramp(tx * 4, 1, 4)]


def test_vector_accesses_check_every_lane():
    a = rng.random(256, dtype=np.float32)
    b = np.zeros(256, np.float32)
    interpret(vector_own, a, b)
    np.testing.assert_allclose(b, a + 1)
    with pytest.raises(DataRaceError, match=r"global buffer b\[2\]: written by thread \(tx=0\)"
                                            r" .* and written by thread \(tx=1\)"):
        interpret(vector_overlap, a, b)


# ----------------------------------------------------------------------------------------------
# workgroups


@T.prim_func
def cross_workgroup(a: T.Buffer((4, 16), "float32"), total: T.Buffer((4,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            a[bx, tx] = a[bx, tx] * T.float32(2)
            if tx == 0:
                total[bx] = a[(bx + 1) % 4, 0]  # neighbour


def test_global_write_and_read_in_different_workgroups_race_even_with_a_barrier():
    a = rng.random((4, 16), dtype=np.float32)
    with pytest.raises(DataRaceError) as err:
        interpret(cross_workgroup, a.copy(), np.zeros(4, np.float32))
    line = _line("neighbour")
    assert re.search(r"data race on global buffer a\[1, 0\]: read by thread \(tx=0\) of "
                     rf"workgroup \(bx=0\) at \S+:{line}:\d+ and written by thread \(tx=0\) of "
                     r"workgroup \(bx=1\) at \S+ in different workgroups", str(err.value))


@T.prim_func
def cross_workgroup_barrier(a: T.Buffer((4, 16), "float32"), b: T.Buffer((4, 16), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            a[bx, tx] = T.float32(1)
            T.barrier()
            b[bx, tx] = a[(bx + 3) % 4, tx]


def test_barriers_do_not_order_workgroups():
    with pytest.raises(DataRaceError, match=r"global buffer a\[0, 0\]: written by thread "
                                            r"\(tx=0\) of workgroup \(bx=0\) .* read by thread "
                                            r"\(tx=0\) of workgroup \(bx=1\) .*different"):
        interpret(cross_workgroup_barrier, np.zeros((4, 16), np.float32),
                  np.zeros((4, 16), np.float32))


@T.prim_func
def shared_per_workgroup(a: T.Buffer((4, 16), "float32"), b: T.Buffer((4, 16), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            s = T.alloc_buffer((16,), "float32", scope="shared")
            s[tx] = a[bx, tx]
            T.barrier()
            b[bx, tx] = s[15 - tx] + a[(bx + 1) % 4, tx]


def test_inputs_read_by_every_workgroup_and_shared_memory_per_workgroup_are_fine():
    a = rng.random((4, 16), dtype=np.float32)
    b = np.zeros((4, 16), np.float32)
    interpret(shared_per_workgroup, a, b)
    np.testing.assert_allclose(b, a[:, ::-1] + np.roll(a, -1, axis=0), rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# several invocations on one element: same-value writes, uniform code


@T.prim_func
def same_value(out: T.Buffer((4,), "int32")):
    for tx in T.thread_binding(32, "threadIdx.x"):
        out[0] = 1  # every thread


@T.prim_func
def guarded(out: T.Buffer((4,), "int32")):
    for tx in T.thread_binding(32, "threadIdx.x"):
        if tx == 0:
            out[0] = 1


def test_same_value_writes_by_several_invocations_are_reported():
    with pytest.raises(DataRaceError, match=r"global buffer out\[0\]: written by several "
                                            r"invocations \(threads \(tx=\*\)\) at \S+: each "
                                            r"stores to the same element"):
        interpret(same_value, np.zeros(4, np.int32))
    out = np.zeros(4, np.int32)
    interpret(guarded, out)
    assert out[0] == 1


@T.prim_func
def after_the_thread_loop(a: T.Buffer((16,), "float32"), out: T.Buffer((1,), "float32")):
    s = T.alloc_buffer((16,), "float32", scope="shared")
    for tx in T.thread_binding(16, "threadIdx.x"):
        s[tx] = a[tx]
    for tx in T.thread_binding(16, "threadIdx.x"):
        if tx == 0:
            out[0] = s[15]


def test_sibling_thread_loops_are_the_same_invocations_with_no_barrier_between():
    with pytest.raises(DataRaceError, match=r"s\[15\]: written by thread \(tx=15\) .* read by "
                                            r"thread \(tx=0\)"):
        interpret(after_the_thread_loop, np.ones(16, np.float32), np.zeros(1, np.float32))


def test_local_buffers_never_race():
    @T.prim_func
    def local(out: T.Buffer((8,), "int32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            loc = T.alloc_buffer((1,), "int32", scope="local")
            loc[0] = tx
            loc[0] = loc[0] * 2
            out[tx] = loc[0]

    out = np.zeros(8, np.int32)
    interpret(local, out)
    np.testing.assert_array_equal(out, np.arange(8) * 2)


def test_kernels_without_thread_loops_are_one_invocation():
    @T.prim_func
    def serial(a: T.Buffer((8,), "int32")):
        for i in T.serial(7):
            a[i + 1] = a[i + 1] + a[i]

    a = np.ones(8, np.int32)
    interpret(serial, a)
    np.testing.assert_array_equal(a, np.arange(1, 9))


# ----------------------------------------------------------------------------------------------
# async copies: a retired write is ordered with the whole workgroup


@T.prim_func
def async_tiles(a: T.Buffer((128,), "float32"), out: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            with T.async_commit_queue(0):
                with T.async_scope():
                    s[tx] = a[bx * 64 + tx]
            with T.async_wait_queue(0, 0):
                out[bx * 64 + tx] = s[63 - tx]


def test_async_writes_retired_by_a_wait_are_seen_by_the_workgroup():
    a = rng.random(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    interpret(async_tiles, a, out)
    np.testing.assert_array_equal(out, a.reshape(2, 64)[:, ::-1].ravel())


@T.prim_func
def async_collide(a: T.Buffer((64,), "float32"), out: T.Buffer((64,), "float32")):
    s = T.alloc_buffer((32,), "float32", scope="shared")
    for tx in T.thread_binding(64, "threadIdx.x"):
        with T.async_commit_queue(0):
            with T.async_scope():
                s[tx // 2] = a[tx]
        with T.async_wait_queue(0, 0):
            out[tx] = s[tx // 2]


def test_async_writes_of_one_element_by_two_invocations_race():
    with pytest.raises(DataRaceError, match=r"shared buffer s\[0\]: written by .*\(retired\)|"
                                            r"shared buffer s\[0\]: written by thread"):
        interpret(async_collide, np.ones(64, np.float32), np.zeros(64, np.float32))


# ----------------------------------------------------------------------------------------------
# the software-pipelined matmul


def _matmul_args():
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    return a, b, np.zeros((64, 64), "float32")


def test_pipelined_matmul_with_lower_async_barriers_passes():
    pipelined, plain = matmul_kernels(64, 16)
    for func in (vkir.lower(pipelined), vkir.lower(plain), plain):
        a, b, c = _matmul_args()
        interpret(func, a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.timing
def test_pipelined_matmul_with_lower_async_barriers_passes_within_a_second():
    pipelined, plain = matmul_kernels(64, 16)
    for func in (vkir.lower(pipelined), vkir.lower(plain), plain):
        a, b, c = _matmul_args()
        start = time.perf_counter()
        interpret(func, a, b, c)
        assert time.perf_counter() - start < 1.0


class _DropBarrier(ir.Mutator):
    """The IR with the `which`-th barrier (in walk order) removed."""

    def __init__(self, which: int):
        self.which = which
        self.seen = -1

    def visit_SeqStmt(self, node):
        out = []
        for s in node.seq:
            if isinstance(s, ir.Barrier):
                self.seen += 1
                if self.seen == self.which:
                    continue
            out.append(self.visit(s))
        return ir.seq(*out)


def test_pipelined_matmul_with_a_barrier_removed_raises():
    pipelined, _ = matmul_kernels(64, 16)
    lowered = vkir.lower(pipelined)
    count = sum(isinstance(n, ir.Barrier) for n in ir.walk(lowered.body))
    assert count == 2  # one per k-tile in the loop, one before the epilogue
    for which in range(count):
        racy = lowered.with_body(_DropBarrier(which).visit(lowered.body))
        assert sum(isinstance(n, ir.Barrier) for n in ir.walk(racy.body)) == count - 1
        with pytest.raises(DataRaceError, match=r"shared buffer [AB]_sh"):
            interpret(racy, *_matmul_args())


def test_pipelined_matmul_with_barriers_only_at_the_waits_raises():
    """tests/test_pipeline_e2e.py's `racy_lower`, which lavapipe gets wrong: the overwrite of a
    tile version others still read (write after read) is caught on the CPU."""
    from vkir import lowering
    from vkir.transform.lower_async import _Strip

    class _WaitBarriersOnly(_Strip):
        def visit_AsyncWaitQueue(self, node):
            return ir.seq(ir.Barrier(), self.visit(node.body))

    pipelined, _ = matmul_kernels(64, 16)
    func = pipelined
    for p in lowering.pipeline(None).passes:
        if p.name == "LowerAsync":   # barriers only at the waits instead
            func = func.with_body(_WaitBarriersOnly().visit(func.body))
        else:
            func = p(func)
    with pytest.raises(DataRaceError, match=r"shared buffer [AB]_sh\S*: read by thread .* and "
                                            r"written by thread .* with no T.barrier\(\)"):
        interpret(func, *_matmul_args())
    a, b, c = _matmul_args()
    interpret(func, a, b, c, check_races=False)  # the lockstep run hides it
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
