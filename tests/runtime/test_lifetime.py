"""The lifetime guard (runtime/lifetime.py) that devices and the instance close through: close()
refuses new operations at once, waits for the admitted ones, and lets an admitted operation
finish its nested steps."""

import threading

import pytest

from vkir.errors import DeviceError
from vkir.runtime.lifetime import Lifetime


def _refuse():
    raise DeviceError("device closed")


def test_close_waits_for_operations_in_flight_and_refuses_new_ones():
    guard = Lifetime(_refuse)
    inside, release, nested = threading.Event(), threading.Event(), []

    def operation():
        with guard:
            inside.set()
            release.wait(10)
            with guard:            # a nested step of an admitted operation: never refused
                nested.append(guard.active)

    worker = threading.Thread(target=operation)
    worker.start()
    assert inside.wait(10)
    assert guard.close(0.05) is False          # still inside: not drained, but closing now
    with pytest.raises(DeviceError, match="device closed"):
        with guard:
            pass
    assert guard.try_enter() is False
    release.set()
    assert guard.close(10) is True             # idempotent; returns once the worker left
    worker.join(10)
    assert nested == [1] and guard.active == 0


def test_close_from_inside_an_operation_does_not_wait_for_itself():
    guard = Lifetime(_refuse)
    with guard:
        assert guard.close(5) is True
    assert guard.active == 0


def test_a_closed_kernel_called_with_a_new_array_says_device_closed(device):
    """After a shutdown new arrays land on the new device; calling a kernel of the closed one
    with them names the closed device, not a device mismatch."""
    import numpy as np

    import vkir
    from vkir import T, runtime

    @T.prim_func
    def inc(a: T.Buffer((64,), "float32")):
        for i in T.thread_binding(64, "threadIdx.x"):
            a[i] = a[i] + T.float32(1)

    inst = runtime.get_instance()
    old = runtime.Device(inst, device.info, inst.physical_devices[device.info.index])
    k = vkir.build(inc, device=old)
    old.close()
    with pytest.raises(DeviceError, match="device closed"):
        k(vkir.zeros(64, device=device))
