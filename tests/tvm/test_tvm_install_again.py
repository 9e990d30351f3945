"""`vkir.tvm.install()` after the device it was installed for was closed (what
`vkir.runtime.shutdown()` does to every device): the next install registers the builder again,
on the device given then, instead of being ignored; a closed device is refused at install."""

import numpy as np
import pytest

import vkir
from vkir import runtime
from vkir.errors import DeviceError

tvm = pytest.importorskip("tvm")
from tvm import te, topi  # noqa: E402


def _double(device):
    """Compile x + x through TVM with vkir's builder and run it on `device`."""
    X = te.placeholder((64,), "float32", name="X")
    func = te.create_prim_func([X, topi.add(X, X)])
    ex = tvm.compile(vkir.tvm.dlight(func, device=device), target=vkir.tvm.target(device))
    out = vkir.tvm.empty((64,), "float32", device=device)
    ex["main"](vkir.tvm.tensor(np.arange(64, dtype=np.float32), device=device), out)
    return vkir.tvm.numpy(out)


def test_install_after_the_device_closed_builds_on_the_new_device(device):
    inst = runtime.get_instance()
    first = runtime.Device(inst, device.info, inst.physical_devices[device.info.index])
    vkir.tvm.install(first)
    np.testing.assert_array_equal(_double(first), 2 * np.arange(64, dtype=np.float32))
    first.close()                        # as vkir.runtime.shutdown() closes every device
    with pytest.raises(DeviceError, match="device closed"):
        vkir.tvm.install(first)
    vkir.tvm.install(device)             # not ignored: builds go to `device` from now on
    np.testing.assert_array_equal(_double(device), 2 * np.arange(64, dtype=np.float32))
