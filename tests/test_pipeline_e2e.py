"""Software pipelining end to end on a Vulkan device (lavapipe in CI): a tiled matmul whose
shared-memory tile copies are pipelined with stages [0, 0, 1] (double buffered, async stage 0)
lowers through InjectSoftwarePipeline and LowerAsync, builds, validates, runs, and matches numpy,
the interpreter, and the unpipelined kernel; the lowered loop synchronises once per k-tile."""

import numpy as np
import pytest

import vkir
from vkir import ir
from benchmarks.bench_pipeline import matmul_kernels

pytestmark = pytest.mark.device


def _barriers(stmt):
    return sum(isinstance(n, ir.Barrier) for n in ir.walk(stmt))


def _serial_loops(func):
    return [n for n in ir.walk(func.body) if isinstance(n, ir.For) and n.kind == "serial"
            and n.loop_var.name == "ko"]


def test_pipelined_matmul_runs_and_matches_numpy(device):
    pipelined, plain = matmul_kernels(64, 16)
    k = vkir.build(pipelined, device=device)
    assert not any(isinstance(n, (ir.AsyncScope, ir.AsyncCommitQueue, ir.AsyncWaitQueue))
                   for n in ir.walk(k.ir.body))
    (body,) = _serial_loops(k.ir)
    assert _barriers(body) == 1  # one barrier per k-tile
    assert body.extent == ir.const(3)  # 4 k-tiles: one in the prologue
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    k(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

    c_interp = np.zeros_like(c)
    vkir.interpret(k.ir, a, b, c_interp)
    np.testing.assert_allclose(c, c_interp, rtol=1e-5, atol=1e-5)

    k_plain = vkir.build(plain, device=device)
    c_plain = np.zeros_like(c)
    k_plain(a, b, c_plain)
    np.testing.assert_allclose(c, c_plain, rtol=1e-5, atol=1e-5)
    (plain_loop,) = _serial_loops(k_plain.ir)
    assert _barriers(plain_loop) == 2


def test_pipelined_matmul_device_arrays(device):
    """Repeated dispatches on device-resident arrays give the same result (no stale tile)."""
    pipelined, _ = matmul_kernels(32, 8)
    k = vkir.build(pipelined, device=device)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 32, 32)).astype("float32")
    A, B = vkir.array(a, device=device), vkir.array(b, device=device)
    C = vkir.empty((32, 32), "float32", device=device)
    for _ in range(3):
        k(A, B, C)
        np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-4, atol=1e-4)
