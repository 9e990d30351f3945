"""Async queues (docs/semantics.md): a committed group's writes land only when a wait retires it
(or when the function ends), so a wrong in-flight count reads stale data."""

import numpy as np

from vkir import T
from vkir.interpreter import interpret


def _pipeline(in_flight):
    @T.prim_func
    def pipe(a: T.Buffer((16,), "float32"), c: T.Buffer((16,), "float32")):
        b = T.alloc_buffer((2,), "float32", scope="shared")
        with T.async_commit_queue(0):
            with T.async_scope():
                b[0] = a[0]
        for i in T.serial(15):
            with T.async_commit_queue(0):
                with T.async_scope():
                    b[(i + 1) % 2] = a[i + 1]
            with T.async_wait_queue(0, in_flight):
                c[i] = b[i % 2] + T.float32(1)
        with T.async_wait_queue(0, 0):
            c[15] = b[1] + T.float32(1)
    return pipe


def test_correct_in_flight_count_reads_fresh_data():
    a = np.arange(16, dtype=np.float32) + 10
    c = np.zeros(16, np.float32)
    interpret(_pipeline(1), a, c)
    np.testing.assert_array_equal(c, a + 1)


def test_wrong_in_flight_count_reads_stale_data():
    a = np.arange(16, dtype=np.float32) + 10
    c = np.zeros(16, np.float32)
    interpret(_pipeline(2), a, c)
    # with two groups allowed in flight, iteration i sees the copy of iteration i - 2
    np.testing.assert_array_equal(c[2:15], a[:13] + 1)
    assert not np.array_equal(c[:2], a[:2] + 1)
    assert c[15] == a[15] + 1


@T.prim_func
def three_stages(a: T.Buffer((16,), "float32"), d: T.Buffer((16,), "float32")):
    b = T.alloc_buffer((2,), "float32", scope="shared")
    c = T.alloc_buffer((2,), "float32", scope="shared")
    for i in T.serial(2):
        with T.async_commit_queue(0):
            with T.async_scope():
                b[i % 2] = a[i] + T.float32(1)
        if 1 <= i:
            with T.async_commit_queue(1):
                with T.async_wait_queue(0, 1):
                    with T.async_scope():
                        c[(i - 1) % 2] = b[(i - 1) % 2] + T.float32(1)
    for i in T.serial(14):
        with T.async_commit_queue(0):
            with T.async_scope():
                b[(i + 2) % 2] = a[i + 2] + T.float32(1)
        with T.async_commit_queue(1):
            with T.async_wait_queue(0, 1):
                with T.async_scope():
                    c[(i + 1) % 2] = b[(i + 1) % 2] + T.float32(1)
        with T.async_wait_queue(1, 1):
            d[i] = c[i % 2] + T.float32(1)
    for i in T.serial(2):
        if i < 1:
            with T.async_commit_queue(1):
                with T.async_wait_queue(0, 0):
                    with T.async_scope():
                        c[(i + 15) % 2] = b[(i + 15) % 2] + T.float32(1)
        if i < 1:
            with T.async_wait_queue(1, 1):
                d[i + 14] = c[(i + 14) % 2] + T.float32(1)
        else:
            with T.async_wait_queue(1, 0):
                d[i + 14] = c[(i + 14) % 2] + T.float32(1)


def test_rfc_three_stage_two_queue_pipeline():
    a = np.arange(16, dtype=np.float32) * 2
    d = np.zeros(16, np.float32)
    interpret(three_stages, a, d)
    np.testing.assert_array_equal(d, a + 3)


@T.prim_func
def read_inside_scope(a: T.Buffer((4,), "float32"), out: T.Buffer((4,), "float32")):
    with T.async_commit_queue(0):
        with T.async_scope():
            a[0] = T.float32(100)
            out[0] = a[0]
    out[1] = a[0]
    with T.async_wait_queue(0, 0):
        out[2] = a[0]
    with T.async_commit_queue(0):
        with T.async_scope():
            a[1] = T.float32(200)


def test_async_writes_are_deferred_until_retired_or_function_end():
    a = np.zeros(4, np.float32)
    out = np.zeros(4, np.float32)
    interpret(read_inside_scope, a, out)
    assert out[0] == 0      # the scope still sees old data
    assert out[1] == 0      # committed but not retired
    assert out[2] == 100    # retired by the wait
    assert a[1] == 200      # still in flight at the end: lands when the function ends


@T.prim_func
def async_in_workgroup(a: T.Buffer((128,), "float32"), out: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        for tx in T.thread_binding(64, "threadIdx.x"):
            with T.async_commit_queue(0):
                with T.async_scope():
                    s[tx] = a[bx * 64 + tx]
            with T.async_wait_queue(0, 0):
                T.barrier()
                out[bx * 64 + tx] = s[63 - tx]


def test_async_copy_to_shared_memory_across_invocations():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    interpret(async_in_workgroup, a, out)
    np.testing.assert_array_equal(out, a.reshape(2, 64)[:, ::-1].ravel())
