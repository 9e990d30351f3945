"""An array made on a device that was closed since (by vkir.runtime.shutdown() or close()) and
passed to a kernel on an open device of the same name: the error says the array's device was
closed (DeviceError), not that the array "lives on 'llvmpipe', the kernel on 'llvmpipe'"."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError, DeviceError


@T.prim_func
def bump(a: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        a[tx] = a[tx] + T.float32(1)


def _closed_twin(device):
    """A second logical device on `device`'s GPU (same name), closed."""
    from vkir import runtime as rt

    inst = rt.get_instance()
    return rt.Device(inst, device.info, inst.physical_devices[device.info.index])


def test_an_array_of_a_closed_device_is_refused_as_closed(device):
    twin = _closed_twin(device)
    stale = vkir.array(np.zeros(64, np.float32), twin)
    twin.close()
    k = vkir.build(bump, device=device)
    shader = vkir.load_spirv(k.spirv, entry="bump", device=device)
    closed = "argument 'a': device closed: .* was shut down"
    for use in (lambda: k(stale), lambda: k.launch(stale), lambda: k.profile(stale, repeat=1)):
        with pytest.raises(DeviceError, match=f"kernel bump: {closed}"):
            use()
    with pytest.raises(DeviceError, match=closed):
        with vkir.sequence(device=device):
            k(stale)
    with pytest.raises(DeviceError, match="bump: binding 0 .*device closed"):
        shader(stale, grid=(1, 1, 1))
    del stale
    gc.collect()


def test_an_array_of_another_open_device_still_names_both(device):
    twin = _closed_twin(device)
    try:
        other = vkir.array(np.zeros(64, np.float32), twin)
        k = vkir.build(bump, device=device)
        with pytest.raises(ArgumentError, match="argument 'a' lives on .*, the kernel on "):
            k(other)
        del other, k
        gc.collect()
    finally:
        twin.close()


def test_an_array_from_before_a_shutdown_is_refused_as_closed(device):
    """The campaign's case, in a fresh process (shutdown tears down the process-wide instance):
    an array made before vkir.runtime.shutdown(), a kernel built after it."""
    script = textwrap.dedent("""
        import numpy as np
        import vkir
        from vkir.tools.demo import vadd
        from vkir.errors import DeviceError

        A = vkir.array(np.ones(100, np.float32))
        vkir.runtime.shutdown()
        k = vkir.build(vadd)
        try:
            k(A, A, np.zeros(100, np.float32))
        except DeviceError as exc:
            print(exc)
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "kernel vadd: argument 'a': device closed:" in proc.stdout, proc.stdout + proc.stderr
