"""After a dispatch times out, its work keeps running on the queue: an unrelated new call either
waits for it and runs, or is refused (not submitted) with an error naming that work, never a
timeout of its own; and dropping the timed-out kernel never blocks on the work nor prints a
traceback (its pipeline and launch are freed once the work ends)."""

import gc
import sys
import time

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import DeviceError

TIMEOUT = 0.2
LONG_RUN = 1.5   # seconds the timed-out work should last: well past the few 0.2 s waits below


@T.prim_func
def spin(out: T.Buffer(("m",), "float32"), iters: T.Buffer((1,), "int32")):
    # every invocation iterates iters[0] times (a count the compiler cannot see; below llvmpipe's
    # 65535-iteration loop limit): the work grows with m
    for bx in T.thread_binding((m + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for j in T.serial(iters[0]):
                acc[0] = acc[0] * T.float32(0.5) + T.float32(1)
            if i < m:
                out[i] = acc[0]


@T.prim_func
def plus_one(x: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                x[i] = x[i] + T.float32(1)


@pytest.fixture(scope="module")
def spin_size(_vulkan_device):
    """The `m` for which `spin` with 60000 iterations runs about LONG_RUN seconds on this
    device, found by timing smaller runs (the device's speed decides, not a constant)."""
    device = _vulkan_device
    k = vkir.build(spin, device=device)
    iters = vkir.array(np.array([60000], np.int32), device=device)
    k(vkir.zeros(64, device=device), iters)            # a lazy driver compiles here
    m = 4096
    while True:
        out = vkir.zeros(m, device=device)
        started = time.perf_counter()
        k(out, iters)
        took = time.perf_counter() - started
        if took >= 0.1:
            return int(m * LONG_RUN / took) // 64 * 64
        m *= 4


def _long_spin(device, m):
    """(kernel, out, iters): `kernel(out, iters)` runs about LONG_RUN seconds."""
    k = vkir.build(spin, device=device)
    iters = vkir.array(np.array([60000], np.int32), device=device)
    return k, vkir.zeros(m, device=device), iters


def _running(device):
    """The device's submitted work that has not finished."""
    return [s for s in list(device._inflight) if not s.done()]


@pytest.fixture
def unraisable(monkeypatch):
    """Exceptions that reached sys.unraisablehook (e.g. raised in a finalizer) during the test."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_a_call_after_a_timeout_is_refused_naming_the_work_then_runs(device, monkeypatch,
                                                                      spin_size):
    k, out, iters = _long_spin(device, spin_size)
    add = vkir.build(plus_one, device=device)
    monkeypatch.setenv("VKIR_TIMEOUT", str(TIMEOUT))
    with pytest.raises(DeviceError, match="dispatch of 'spin' did not finish within 0.2 s"):
        k(out, iters)
    x = np.zeros(100, np.float32)
    with pytest.raises(DeviceError, match="dispatch of 'plus_one' was not submitted: device .* "
                       "is still busy with dispatch of 'spin', which timed out earlier"):
        add(x)
    np.testing.assert_array_equal(x, 0)                 # nothing ran
    monkeypatch.delenv("VKIR_TIMEOUT")
    add(x)                                              # no limit: it waits, then runs
    np.testing.assert_array_equal(x, 1)
    assert not _running(device)
    np.testing.assert_allclose(out.numpy(), 2.0, rtol=1e-6)


def test_a_launch_behind_timed_out_work_names_it_when_its_wait_times_out(device, monkeypatch,
                                                                          spin_size):
    k, out, iters = _long_spin(device, spin_size)
    add = vkir.build(plus_one, device=device)
    monkeypatch.setenv("VKIR_TIMEOUT", str(TIMEOUT))
    with pytest.raises(DeviceError, match="did not finish"):
        k(out, iters)
    monkeypatch.delenv("VKIR_TIMEOUT")
    x = np.zeros(100, np.float32)
    h = add.launch(x)
    with pytest.raises(DeviceError, match="launch of plus_one did not finish within 0.2 s .* "
                       "queued behind earlier work still running: dispatch of 'spin'"):
        h.wait(timeout=TIMEOUT)
    h.wait()
    np.testing.assert_array_equal(x, 1)


def test_dropping_a_timed_out_kernel_neither_blocks_nor_prints(device, monkeypatch, unraisable,
                                                              spin_size):
    k, out, iters = _long_spin(device, spin_size)
    monkeypatch.setenv("VKIR_TIMEOUT", str(TIMEOUT))
    with pytest.raises(DeviceError, match="did not finish"):
        k(out, iters)
    [work] = _running(device)
    pipeline = work.owner.pipeline                      # the launch's (a variant's) pipeline
    del k, work
    gc.collect()                                        # releases the pipeline and its launch
    assert not unraisable, [u.exc_value for u in unraisable]
    assert _running(device), "the release waited for the work"
    assert pipeline.handle is not None                  # destroyed only once the work ends
    monkeypatch.delenv("VKIR_TIMEOUT")
    np.testing.assert_allclose(out.numpy(), 2.0, rtol=1e-6)   # waits for the work
    assert pipeline.handle is None and not pipeline.running_launches
    assert pipeline not in device.pipelines.values()
