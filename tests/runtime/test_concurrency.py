"""Threads sharing one device: a submission's fence is never reset while a thread still waits on
it (that hung `launch().wait()` beside a thread allocating arrays, or gave false timeouts)."""

import threading

import numpy as np
import pytest

import vkir
from vkir import T


def run_to_the_end(targets, errors):
    """Run each target in a daemon thread; fail when one hangs (2 minutes) or any reported an
    error in `errors`."""
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors


@T.prim_func
def add_one(a: T.Buffer((256,), "float32")):
    for i in T.thread_binding(256, "threadIdx.x"):
        a[i] = a[i] + T.float32(1)


@T.prim_func
def slow_add_one(a: T.Buffer((256,), "float32")):
    for i in T.thread_binding(256, "threadIdx.x"):
        for j in T.serial(2048):
            a[i] = a[i] + T.float32(0.00048828125)


@pytest.mark.device
def test_waiting_beside_a_polling_thread_never_hangs():
    """The work finishes while one thread is blocked on its fence and another polls it: the
    poller retires it, and the fence must not be reset under the waiter."""
    k = vkir.build(slow_add_one)
    a = vkir.array(np.zeros(256, np.float32))
    dev = k.device
    stop = threading.Event()
    errors = []

    def launcher():
        try:
            for _ in range(60):
                k.launch(a).wait(timeout=20)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            stop.set()

    def poller():
        while not stop.is_set():
            dev.retire_finished()   # what every allocation does first

    run_to_the_end([launcher, poller, poller], errors)
    np.testing.assert_array_equal(a.numpy(), np.full(256, 60, np.float32))


@pytest.mark.device
def test_waiting_beside_an_allocating_thread_never_hangs():
    k = vkir.build(add_one)
    a = vkir.array(np.zeros(256, np.float32))
    stop = threading.Event()
    errors = []

    def launcher():
        try:
            for _ in range(300):
                handle = k.launch(a)
                handle.wait(timeout=20)
                assert handle.done()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            stop.set()

    def allocator():
        try:
            while not stop.is_set():   # each allocation polls (and retires) finished work
                vkir.array(np.ones(1024, np.float32))
        except BaseException as exc:
            errors.append(exc)

    run_to_the_end([launcher, allocator, allocator], errors)
    np.testing.assert_array_equal(a.numpy(), np.full(256, 300, np.float32))


@pytest.mark.device
def test_many_threads_wait_for_one_launch():
    k = vkir.build(add_one)
    a = vkir.array(np.zeros(256, np.float32))
    for _ in range(20):
        handle = k.launch(a)
        waiters = [threading.Thread(target=handle.wait, kwargs={"timeout": 20}, daemon=True)
                   for _ in range(4)]
        for t in waiters:
            t.start()
        handle.done()
        for t in waiters:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in waiters)
    np.testing.assert_array_equal(a.numpy(), np.full(256, 20, np.float32))
