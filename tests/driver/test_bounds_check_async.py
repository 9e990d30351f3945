"""Bounds-checked kernels launch, give a dispatch spec and record into sequences like any kernel;
a violation raises OutOfBoundsError when the work is waited for."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import OutOfBoundsError


@T.prim_func
def shifted(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"), s: T.int32):
    for i in T.thread_binding(64, "threadIdx.x"):
        b[i] = a[i + s]


def arrays():
    return vkir.array(np.arange(64, dtype=np.float32)), vkir.array(np.zeros(64, np.float32))


@pytest.mark.device
def test_launch_checks_when_waited_for():
    k = vkir.build(shifted, check_bounds=True)
    a, b = arrays()
    k.launch(a, b, 0).wait(timeout=30)
    np.testing.assert_array_equal(b.numpy(), np.arange(64, dtype=np.float32))
    handle = k.launch(a, b, 1)
    with pytest.raises(OutOfBoundsError, match=r"buffer a: index 64 is out of bounds"):
        handle.wait(timeout=30)
    handle.wait()   # reported once


@pytest.mark.device
def test_dispatch_spec_and_sequences_check_each_run():
    k = vkir.build(shifted, check_bounds=True)
    a, b = arrays()
    spec = k.dispatch_spec(a, b, 0)
    assert len(spec.checks) == 1 and len(spec.buffers) == 3
    with vkir.sequence() as good:
        k(a, b, 0)
    good.wait(timeout=30)
    np.testing.assert_array_equal(b.numpy(), np.arange(64, dtype=np.float32))
    with vkir.sequence() as bad:
        k(a, b, 0)
        k(a, b, 2)
    with pytest.raises(OutOfBoundsError, match=r"index 64 is out of bounds"):
        bad.wait(timeout=30)
    good.run().wait(timeout=30)   # a replay starts from a clean record
    assert good.done()
