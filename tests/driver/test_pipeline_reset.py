"""`Device.reset_pipeline_cache` (how cold compiles are timed: `vkir bench`, `vkir demo`) destroys
every pipeline; kernels, their launches and profiles, vkir.map, vkir.ops and vkir.grad's
adjoints built before it keep working afterwards (their programs are created again from the same
SPIR-V on next use), and a sequence recorded before it is never replayed with a destroyed
pipeline."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError, DeviceError

from test_sequences import scale  # noqa: E402  (y = s * x; tests/driver is on sys.path)


@T.func
def axpy(a: T.float32, x: T.float32, y: T.float32) -> T.float32:
    return a * x + y


@T.prim_func
def square(x: T.Buffer((8,), "float32"), out: T.Buffer((8,), "float32")):
    for i in T.thread_binding(8, "threadIdx.x"):
        out[i] = x[i] * x[i]


@pytest.mark.device
def test_kernels_built_before_a_reset_run_after_it(device):
    k = vkir.build(scale, device=device)
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    k(x, y, 2.0)
    before = k.program.handle
    X, Y = vkir.array(x, device=device), vkir.empty(100, "float32", device)
    k.launch(X, Y, 3.0).wait()
    device.reset_pipeline_cache()
    assert not before.handle      # the reset did destroy it
    y[:] = 0
    k(x, y, 2.0)
    np.testing.assert_array_equal(y, 2 * x)
    assert k.program.handle is not before and k.program.alive
    k.launch(X, Y, 3.0).wait()
    np.testing.assert_array_equal(Y.numpy(), 3 * x)
    assert k.profile(X, Y, 4.0, repeat=2).n == 2
    np.testing.assert_array_equal(Y.numpy(), 4 * x)


@pytest.mark.device
def test_map_ops_and_adjoints_survive_a_reset(device):
    mapped = vkir.map(axpy, device=device)
    x, y = np.linspace(-1, 1, 50, dtype=np.float32), np.ones(50, np.float32)
    np.testing.assert_allclose(mapped(np.float32(2), x, y), 2 * x + y, rtol=1e-6)
    assert float(np.asarray(vkir.ops.sum(x, device=device))) == pytest.approx(float(x.sum()),
                                                                               abs=1e-5)
    grad = vkir.build(vkir.grad(square, ("x",)), device=device)
    v = np.arange(8, dtype=np.float32)
    d_x = np.zeros(8, np.float32)
    grad(v, np.zeros(8, np.float32), np.ones(8, np.float32), d_x)
    np.testing.assert_allclose(d_x, 2 * v)
    device.reset_pipeline_cache()
    np.testing.assert_allclose(mapped(np.float32(-3), x, y), -3 * x + y, rtol=1e-6)
    assert float(np.asarray(vkir.ops.sum(x, device=device))) == pytest.approx(float(x.sum()),
                                                                               abs=1e-5)
    d_x[:] = 0
    grad(v, np.zeros(8, np.float32), np.ones(8, np.float32), d_x)
    np.testing.assert_allclose(d_x, 2 * v)


@pytest.mark.device
def test_a_sequence_recorded_before_a_reset_is_refused_not_replayed(device):
    k = vkir.build(scale, device=device)
    X = vkir.array(np.ones(64, np.float32), device=device)
    Y = vkir.empty(64, "float32", device)
    with vkir.sequence(device=device) as seq:
        k(X, Y, 5.0)
    seq.wait(timeout=30)
    device.reset_pipeline_cache()
    with pytest.raises((ArgumentError, DeviceError), match="pipeline"):
        seq.run()
    k(X, Y, 6.0)      # the kernel itself is fine
    np.testing.assert_array_equal(Y.numpy(), np.full(64, 6, np.float32))
